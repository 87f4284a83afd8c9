/* test_limits_heap.c - the page heap near a memory cgroup's limit, on the fake kernel
 * (a v1 cgroup of 512 MiB whose usage the test sets): far from it the heap keeps
 * empty units and puts units on THP; once the room is below the margin it gives the
 * kept units and the free pages of its units back, advises its range NOHUGEPAGE,
 * backs new units with base pages and gives back the pages runs free; far again, THP
 * advice again. --stats says so. The fake kernel is in place before the runtime
 * starts (a constructor of a higher priority than the runtime's). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"
#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/units.h"

#define MB ((size_t)1 << 20)
#define CG "/sys/fs/cgroup/memory/job"

static void usage_mib(size_t mib)
{
	char text[64];
	snprintf(text, sizeof text, "%zu\n", mib << 20);
	fk_file(CG "/memory.usage_in_bytes", text);
}

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_reset();
	fk_machine_default();
	fk_file("/proc/self/mountinfo",
		"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
	fk_file("/proc/self/cgroup", "4:memory:/job\n");
	fk_file(CG "/memory.limit_in_bytes", "536870912\n");
	fk_file(CG "/memory.stat", "total_inactive_file 0\ntotal_active_file 0\n");
	usage_mib(10);
	fk_install();
	setenv("SUPERPAGE_BACKING", "thp", 1);
}

static struct rt_stats stats(void)
{
	struct rt_stats st;
	rt_stats_get(&st);
	return st;
}

/* The advice the fake kernel holds for the memory at p: 1 HUGEPAGE, -1 NOHUGEPAGE. */
static int advice_at(const void *p)
{
	struct fk_map_info m;
	return fk_map_find(p, &m) == 0 ? m.advice : 0;
}

static void check_heap(void)
{
	size_t u;
	const char *bad = pages_check(&u);
	if (bad)
		printf("  pages_check: %s (unit %zu)\n", bad, u);
	CHECK(bad == NULL);
}

/* A look at the limit, as after the page heap places a run, time later. */
static void look_after(uint64_t ns)
{
	fk_clock_advance(ns);
	maybe_promote();
}

static void test_near_limit(void)
{
	enum { NBIG = 8, NMED = 6 };
	static char *big[NBIG], *med[NMED];
	CHECK(rt_init());
	CHECK(limits_on());
	CHECK_EQ(stats().limit_bytes, 512 * MB);
	CHECK(!pages_near_limit());
	/* Far from the limit: units on THP, with the range's HUGEPAGE advice; blocks of
	 * a unit each, and runs of 1.25 MiB that leave free pages in their units. */
	for (int i = 0; i < NBIG; i++) {
		big[i] = rt_malloc(2 * MB);
		CHECK(big[i] != NULL);
		if (!big[i])
			return;
		memset(big[i], i + 1, 2 * MB);
	}
	for (int i = 0; i < NMED; i++) {
		med[i] = rt_malloc(5 * MB / 4);
		CHECK(med[i] != NULL);
		if (!med[i])
			return;
		memset(med[i], 0x40 + i, 5 * MB / 4);
	}
	uint64_t thp = stats().units[SP_BACKING_THP];
	CHECK(thp >= NBIG + 4);
	CHECK_EQ(advice_at(big[0]), 1);
	/* Four blocks freed: their units are kept resident. */
	for (int i = 0; i < 4; i++)
		rt_free(big[i]);
	CHECK_EQ(stats().kept_units, 4);
	check_heap();

	/* Near: 12 MiB of room, under the margin of 32 MiB. */
	int dontneed = fk_madvise_calls(MADV_DONTNEED), lazy = fk_madvise_calls(MADV_FREE);
	usage_mib(500);
	look_after(2000000000ull);
	CHECK(pages_near_limit());
	struct rt_stats st = stats();
	CHECK_EQ(st.limit_nears, 1);
	CHECK_EQ(st.limit_least_room, 12 * MB);
	CHECK_EQ(st.kept_units, 0);
	CHECK_EQ(st.limit_kept_given, 4);
	CHECK(st.limit_free_given > 0);
	/* The free pages of the units on THP: split (MADV_FREE) and freed. */
	CHECK(fk_madvise_calls(MADV_DONTNEED) >= dontneed + 4 + 1);
	CHECK(fk_madvise_calls(MADV_FREE) > lazy);
	CHECK_EQ(advice_at(big[5]), -1);
	check_heap();

	/* New units on base pages; what runs free goes back at once; no unit kept. */
	char *b = rt_malloc(6 * MB);
	CHECK(b != NULL);
	if (b)
		memset(b, 7, 6 * MB);
	CHECK(stats().limit_base_units >= 3);
	CHECK(stats().units[SP_BACKING_4K] >= 3);
	dontneed = fk_madvise_calls(MADV_DONTNEED);
	uint64_t given = stats().limit_free_given;
	rt_free(med[0]);
	CHECK(fk_madvise_calls(MADV_DONTNEED) > dontneed);
	CHECK(stats().limit_free_given >= given + 5 * MB / 4);
	rt_free(big[4]);
	CHECK_EQ(stats().kept_units, 0);
	/* Promotion waits while near (thp has none to wait for; the look does not
	 * end near before its time: 0.1 s). */
	usage_mib(100);
	look_after(1000000);
	CHECK(pages_near_limit());
	check_heap();

	/* Far again (room at least twice the margin): the range's advice back to THP. */
	look_after(200000000ull);
	CHECK(!pages_near_limit());
	CHECK_EQ(advice_at(big[5]), 1);
	CHECK(stats().limit_near_ns >= 200000000ull);
	for (int i = 5; i < NBIG; i++)
		CHECK(big[i][0] == i + 1 && big[i][2 * MB - 1] == i + 1);
	for (int i = 1; i < NMED; i++)
		CHECK(med[i][0] == 0x40 + i && med[i][5 * MB / 4 - 1] == 0x40 + i);
	for (int i = 5; i < NBIG; i++)
		rt_free(big[i]);
	for (int i = 1; i < NMED; i++)
		rt_free(med[i]);
	rt_free(b);
	check_heap();
}

/* --stats: a line of text and a JSON object that say the limit and what was done. */
static void test_report(void)
{
	char path[] = "/tmp/sp-limits-report-XXXXXX", buf[8192];
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	unlink(path);
	rt_report(fd, false);
	rt_report(fd, true);
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	CHECK(strstr(buf, "limits: memory cgroup v1 512.0 MiB, least room 12.0 MiB; near it 1 time") != NULL);
	CHECK(strstr(buf, "4 empty units and ") != NULL);
	CHECK(strstr(buf, "\"limits\":{\"memory_cgroup\":1,\"memory_limit\":536870912,"
			  "\"least_room\":12582912,\"looks\":") != NULL);
	CHECK(strstr(buf, "\"near\":1,") != NULL);
	CHECK(strstr(buf, "\"kept_units_given_back\":4,") != NULL);
	CHECK(strstr(buf, "\"hugetlb_2m_limit\":0,\"hugetlb_1g_limit\":0,\"rlimit_as\":0,"
			  "\"rlimit_data\":0}") != NULL);
	if (check_fails_)
		printf("%s", buf);
}

int main(void)
{
	RUN(test_near_limit);
	RUN(test_report);
	fk_uninstall();
	return CHECK_DONE();
}
