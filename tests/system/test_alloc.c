/* test_alloc.c - sp_alloc on the real kernel: each backing lands where it claims,
 * falls are clean, strict fails cleanly, fork and threads behave. Needs root for pools. */
#include <errno.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "pools.h"

#define MB (1ull << 20)
#define GB (1ull << 30)

static bool is_root;

static void fill(unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (unsigned char)(seed + i / 4096);
	p[len - 1] = (unsigned char)seed;
}

static bool same(const unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i += 4096)
		if (p[i] != (unsigned char)(seed + i / 4096))
			return false;
	return p[len - 1] == (unsigned char)seed;
}

static long pool_free(uint64_t size)
{
	struct sp_pool p;
	return sp_pool_get(size, -1, &p) == 0 ? p.free : -1;
}

/* Asks for one backing strictly, populated, and checks smaps agrees. */
static void check_lands(unsigned flag, enum sp_backing want, size_t size, uint64_t page)
{
	void *p = sp_alloc(size, flag | SP_STRICT | SP_POPULATE);
	CHECK(p != NULL);
	if (!p)
		return;
	struct sp_block b;
	CHECK_EQ(sp_block_info(p, &b), 0);
	CHECK_EQ(b.backing, want);
	CHECK_EQ((uintptr_t)p % (page > 4096 ? page : 4096), 0);
	fill(p, size, 7);
	CHECK(same(p, size, 7));
	struct sp_verify v;
	CHECK_EQ(sp_verify_range(p, size, &v), 0);
	CHECK_EQ(v.backing, want);
	CHECK_EQ(v.page_size, want == SP_BACKING_THP ? 4096 : page);
	if (want == SP_BACKING_4K)
		CHECK_EQ(v.huge_bytes, 0);
	else
		CHECK(v.huge_bytes >= size);
	CHECK_EQ(sp_free(p, size), 0);
}

static void test_lands_4k(void)
{
	check_lands(SP_4K, SP_BACKING_4K, 8 * MB, 4096);
}

static void test_lands_thp(void)
{
	struct sp_system sys;
	sp_probe(&sys);
	if (!sys.thp.present || (!strcmp(sys.thp.enabled, "never") && !sys.features.madv_collapse))
		SKIP("THP is not available here (enabled: %s)", sys.thp.enabled);
	check_lands(SP_THP, SP_BACKING_THP, 8 * MB, 2 * MB);
}

static void test_lands_2m(void)
{
	if (!is_root)
		SKIP("needs root to set up a 2 MiB pool");
	if (pools_want_free(2 * MB, 4) < 0)
		SKIP("the kernel did not give 4 free 2 MiB pages");
	sp_refresh();
	long before = pool_free(2 * MB);
	check_lands(SP_2M, SP_BACKING_2M, 8 * MB, 2 * MB);
	CHECK_EQ(pool_free(2 * MB), before); /* given back on sp_free */
}

static void test_lands_1g(void)
{
	if (!is_root)
		SKIP("needs root to set up a 1 GiB pool");
	if (pools_want_free(GB, 1) < 0)
		SKIP("the kernel did not give a free 1 GiB page (memory fragmented?)");
	sp_refresh();
	check_lands(SP_1G, SP_BACKING_1G, GB, GB);
	/* auto picks 1G for a 1 GiB block when a page is free */
	void *p = sp_alloc(GB, SP_AUTO);
	struct sp_block b;
	CHECK(p && sp_block_info(p, &b) == 0 && b.backing == SP_BACKING_1G);
	if (p)
		sp_free(p, GB);
	pools_exact_free(GB, 0);
}

/* A pool of 4 pages and a request for 5: falls down the ladder, no signal. */
static void test_pool_short_falls(void)
{
	if (!is_root)
		SKIP("needs root to set up a 2 MiB pool");
	if (pools_exact_free(2 * MB, 4) < 0)
		SKIP("could not make the 2 MiB pool hold exactly 4 free pages");
	sp_refresh();
	sp_stats_reset();
	void *p = sp_alloc(10 * MB, SP_2M);
	CHECK(p != NULL);
	if (!p)
		return;
	struct sp_block b;
	CHECK_EQ(sp_block_info(p, &b), 0);
	CHECK(b.backing == SP_BACKING_THP || b.backing == SP_BACKING_4K);
	struct sp_stats st;
	sp_stats_get(&st);
	CHECK_EQ(st.falls[SP_BACKING_2M][SP_FALL_POOL_EMPTY], 1);
	fill(p, 10 * MB, 3); /* every byte page is writable: no SIGBUS */
	CHECK(same(p, 10 * MB, 3));
	CHECK_EQ(pool_free(2 * MB), 4);
	/* 4 pages still fit: the rung is remembered as failed only for >= 10 MiB */
	void *q = sp_alloc(8 * MB, SP_2M);
	CHECK(q && sp_block_info(q, &b) == 0 && b.backing == SP_BACKING_2M);
	if (q)
		sp_free(q, 8 * MB);
	sp_free(p, 10 * MB);
}

static void test_strict_fails_cleanly(void)
{
	if (!is_root)
		SKIP("needs root to set up a 2 MiB pool");
	if (pools_exact_free(2 * MB, 4) < 0)
		SKIP("could not make the 2 MiB pool hold exactly 4 free pages");
	sp_refresh();
	struct sp_pool before, after;
	sp_pool_get(2 * MB, -1, &before);
	errno = 0;
	void *p = sp_alloc(10 * MB, SP_2M | SP_STRICT);
	CHECK(p == NULL);
	CHECK_EQ(errno, ENOMEM);
	sp_pool_get(2 * MB, -1, &after);
	CHECK_EQ(after.free, before.free);
	CHECK_EQ(after.reserved, before.reserved);
	/* and 1G strict without a 1G page */
	pools_exact_free(GB, 0);
	sp_refresh();
	errno = 0;
	CHECK(sp_alloc(GB, SP_1G | SP_STRICT) == NULL);
	CHECK_EQ(errno, ENOMEM);
}

/* A forked child writes into its parent's private hugetlb memory: it sees the parent's
 * data, its writes are its own (copy on write, from a free pool page). */
static void test_fork_hugetlb(void)
{
	if (!is_root)
		SKIP("needs root to set up a 2 MiB pool");
	if (pools_want_free(2 * MB, 4) < 0)
		SKIP("the kernel did not give 4 free 2 MiB pages");
	sp_refresh();
	size_t len = 2 * MB;
	unsigned char *p = sp_alloc(len, SP_2M | SP_STRICT | SP_POPULATE);
	CHECK(p != NULL);
	if (!p)
		return;
	fill(p, len, 11);
	pid_t pid = fork();
	if (pid == 0) {
		int ok = same(p, len, 11);
		fill(p, len, 99);
		ok = ok && same(p, len, 99);
		_exit(ok ? 0 : 1);
	}
	int status = 0;
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK(same(p, len, 11));
	CHECK_EQ(sp_free(p, len), 0);
}

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	static const unsigned kinds[] = { SP_4K, SP_THP, SP_2M, SP_AUTO };
	long bad = 0;
	for (int i = 0; i < 200; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t size = 4096 + (seed >> 8) % (6 * MB);
		unsigned char *p = sp_alloc(size, kinds[(seed >> 4) % 4]);
		if (!p) {
			bad++;
			continue;
		}
		p[0] = (unsigned char)i;
		p[size - 1] = (unsigned char)i;
		if (p[0] != (unsigned char)i || sp_free(p, size) != 0)
			bad++;
	}
	return (void *)bad;
}

static void test_threads(void)
{
	if (is_root)
		pools_want_free(2 * MB, 8);
	sp_refresh();
	struct sp_stats st;
	sp_stats_get(&st);
	uint64_t live = st.live_blocks;
	long free_before = pool_free(2 * MB);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, churn, (void *)(uintptr_t)(i + 1)), 0);
	for (int i = 0; i < 2; i++) {
		void *bad;
		pthread_join(t[i], &bad);
		CHECK_EQ((long)bad, 0);
	}
	sp_stats_get(&st);
	CHECK_EQ(st.live_blocks, live);
	CHECK_EQ(pool_free(2 * MB), free_before);
}

static void test_pool_set_readback(void)
{
	if (!is_root)
		SKIP("needs root to set a pool");
	struct sp_pool p;
	long got = -1;
	CHECK_EQ(sp_pool_get(2 * MB, -1, &p), 0);
	long old = p.total;
	CHECK_EQ(sp_pool_set(2 * MB, -1, old + 3, &got), 0);
	CHECK_EQ(got, old + 3);
	CHECK_EQ(sp_pool_get(2 * MB, -1, &p), 0);
	CHECK_EQ(p.total, old + 3);
	CHECK_EQ(sp_pool_set(2 * MB, -1, old, &got), 0);
	CHECK_EQ(got, old);
	/* per node */
	struct sp_pool n;
	if (sp_pool_get(2 * MB, 0, &n) == 0) {
		CHECK_EQ(sp_pool_set(2 * MB, 0, n.total + 2, &got), 0);
		CHECK_EQ(got, n.total + 2);
		CHECK_EQ(sp_pool_get(2 * MB, -1, &p), 0);
		CHECK_EQ(p.total, old + 2);
		CHECK_EQ(sp_pool_set(2 * MB, 0, n.total, &got), 0);
	}
	/* a shortfall is said as such: more 1 GiB pages than the machine has memory */
	struct sp_pool g;
	if (sp_pool_get(GB, -1, &g) == 0) {
		CHECK_EQ(sp_pool_set(GB, -1, g.total + 100000, &got), -ENOMEM);
		CHECK(got < g.total + 100000);
		sp_pool_set(GB, -1, g.total, NULL);
	}
	CHECK_EQ(sp_pool_set(3 * MB, -1, 1, &got), -ENOENT);
}

static void test_coverage_self(void)
{
	if (!is_root)
		SKIP("needs root to set up a 2 MiB pool");
	if (pools_want_free(2 * MB, 8) < 0)
		SKIP("the kernel did not give 8 free 2 MiB pages");
	sp_refresh();
	struct sp_coverage before, after;
	CHECK_EQ(sp_coverage(0, &before), 0);
	void *p = sp_alloc(16 * MB, SP_2M | SP_STRICT | SP_POPULATE);
	CHECK(p != NULL);
	CHECK_EQ(sp_coverage(getpid(), &after), 0);
	CHECK(after.huge_bytes >= before.huge_bytes + 16 * MB);
	CHECK(after.hugetlb_bytes >= before.hugetlb_bytes + 16 * MB);
	CHECK(after.region[SP_REGION_ANON].huge_bytes >= 16 * MB);
	CHECK(after.region[SP_REGION_TEXT].bytes > 0);
	CHECK(after.region[SP_REGION_STACK].bytes > 0);
	CHECK(after.rss_bytes >= after.huge_bytes);
	if (p)
		sp_free(p, 16 * MB);
	struct sp_coverage none;
	CHECK_EQ(sp_coverage(999999999, &none), -ESRCH);
}

static void test_probe_real(void)
{
	struct sp_system sys;
	CHECK_EQ(sp_probe(&sys), 0);
	char buf[256];
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f && fgets(buf, sizeof buf, f)) {
		char *a = strchr(buf, '['), *b = a ? strchr(a, ']') : NULL;
		if (a && b) {
			*b = 0;
			CHECK(strcmp(sys.thp.enabled, a + 1) == 0);
		}
	}
	if (f)
		fclose(f);
	bool has2m = false;
	for (int i = 0; i < sys.n_sizes; i++)
		has2m |= sys.page_sizes[i] == 2 * MB;
	CHECK(has2m == (access("/sys/kernel/mm/hugepages/hugepages-2048kB", F_OK) == 0));
	CHECK(sys.base_page_size == (uint64_t)sysconf(_SC_PAGESIZE));
}

int main(void)
{
	is_root = geteuid() == 0;
	pools_save();
	RUN(test_probe_real);
	RUN(test_lands_4k);
	RUN(test_lands_thp);
	RUN(test_lands_2m);
	RUN(test_lands_1g);
	RUN(test_pool_short_falls);
	RUN(test_strict_fails_cleanly);
	RUN(test_fork_hugetlb);
	RUN(test_threads);
	RUN(test_pool_set_readback);
	RUN(test_coverage_self);
	return CHECK_DONE();
}
