/* test_rung.c - the rung service against the fake kernel: refusals classified, a
 * refused rung skipped for requests as large and for a second, and every fall in
 * one table by site, rung and reason. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define M2 (2ull << 20)
#define OVERCOMMIT "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_overcommit_hugepages"

static int calls, answer;

/* The mapping the service asks for: counts the calls, answers as told. */
static int map_stub(void *arg)
{
	(void)arg;
	calls++;
	return answer;
}

static void setup(long total, long free_pages)
{
	fk_reset();
	fk_machine_default();
	fk_pool(M2, total, free_pages);
	fk_install();
	for (int s = 0; s < SP_SITE_COUNT; s++)
		sp_falls_reset((enum sp_site)s);
	calls = 0;
	answer = 0;
}

static uint64_t falls_of(enum sp_site site, enum sp_backing rung, enum sp_fall why)
{
	uint64_t t[SP_BACKING_COUNT][SP_FALL_COUNT];
	sp_falls_get(site, t);
	return t[rung][why];
}

static void test_refusals_classified(void)
{
	setup(4, 0);
	CHECK_EQ(sp_rung_refusal(SP_BACKING_2M, -EINVAL), SP_FALL_UNSUPPORTED);
	CHECK_EQ(sp_rung_refusal(SP_BACKING_2M, -EIO), SP_FALL_MMAP);
	CHECK_EQ(sp_rung_refusal(SP_BACKING_2M, -ENOMEM), SP_FALL_POOL_EMPTY);
	setup(0, 0);
	CHECK_EQ(sp_rung_refusal(SP_BACKING_2M, -ENOMEM), SP_FALL_NO_POOL);
	/* A pool of no pages that may overcommit is set up: it ran out. */
	fk_file(OVERCOMMIT, "8\n");
	CHECK_EQ(sp_rung_refusal(SP_BACKING_2M, -ENOMEM), SP_FALL_POOL_EMPTY);
	/* No pool of that size at all. */
	fk_pool_remove(M2);
	CHECK_EQ(sp_rung_refusal(SP_BACKING_2M, -ENOMEM), SP_FALL_NO_POOL);
}

static void test_room(void)
{
	setup(10, 6);
	CHECK_EQ(sp_rung_room(SP_BACKING_2M, false), 6);
	fk_file(OVERCOMMIT, "3\n");
	CHECK_EQ(sp_rung_room(SP_BACKING_2M, false), 6);
	CHECK_EQ(sp_rung_room(SP_BACKING_2M, true), 9);
	fk_pool_remove(M2);
	CHECK_EQ(sp_rung_room(SP_BACKING_2M, true), 0);
}

static void test_skip_as_large(void)
{
	struct sp_rung_skip k;
	struct sp_rung_ask a = { .site = SP_SITE_HEAP, .rung = SP_BACKING_2M, .skip = &k };
	memset(&k, 0, sizeof k);
	setup(4, 0);
	answer = -ENOMEM;
	a.size = 8 * M2;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_POOL_EMPTY);
	CHECK_EQ(calls, 1);
	/* As large or larger: not asked, counted as skipped. */
	a.size = 16 * M2;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_SKIPPED);
	CHECK_EQ(calls, 1);
	/* Smaller: asked. A strict request: asked whatever was refused. */
	a.size = 2 * M2;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_POOL_EMPTY);
	CHECK_EQ(calls, 2);
	a.size = 16 * M2;
	a.strict = true;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_POOL_EMPTY);
	CHECK_EQ(calls, 3);
	a.strict = false;
	/* The smallest refused while the time runs is what stays skipped. */
	a.size = 2 * M2;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_SKIPPED);
	CHECK_EQ(calls, 3);
	/* A second later the pool is asked again; and at once after pages went back. */
	fk_clock_advance(1000000001ull);
	answer = 0;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), -1);
	CHECK_EQ(calls, 4);
	answer = -ENOMEM;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_POOL_EMPTY);
	sp_rung_forget(&k);
	CHECK(!sp_rung_skipping(&k, 64 * M2));
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_POOL_EMPTY);
	CHECK_EQ(calls, 6);
	/* Size 0 refused: every request is skipped. */
	sp_rung_forget(&k);
	a.size = 0;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_POOL_EMPTY);
	CHECK(sp_rung_skipping(&k, 0));
	CHECK(sp_rung_skipping(&k, 1));
}

static void test_no_memory_no_skip(void)
{
	struct sp_rung_ask a = { .site = SP_SITE_TEXT, .rung = SP_BACKING_2M, .size = M2 };
	setup(0, 0);
	answer = -ENOMEM;
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_NO_POOL);
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_NO_POOL);
	CHECK_EQ(calls, 2);
}

static void test_one_table(void)
{
	struct sp_rung_ask a = { .site = SP_SITE_BRK, .rung = SP_BACKING_2M };
	setup(4, 0);
	answer = -EIO; /* a refused move: a hole */
	CHECK_EQ(sp_rung_try(&a, map_stub, NULL), SP_FALL_MMAP);
	sp_fall(SP_SITE_STACKS, SP_BACKING_THP, SP_FALL_THP_OFF);
	sp_fall(SP_SITE_STACKS, SP_BACKING_THP, SP_FALL_THP_OFF);
	CHECK_EQ(falls_of(SP_SITE_BRK, SP_BACKING_2M, SP_FALL_MMAP), 1);
	CHECK_EQ(falls_of(SP_SITE_STACKS, SP_BACKING_THP, SP_FALL_THP_OFF), 2);
	CHECK_EQ(falls_of(SP_SITE_HEAP, SP_BACKING_2M, SP_FALL_MMAP), 0);
	/* Out of range: nothing counted, nothing written past the table. */
	sp_fall(SP_SITE_COUNT, SP_BACKING_THP, SP_FALL_MMAP);
	sp_fall(SP_SITE_HEAP, SP_BACKING_COUNT, SP_FALL_MMAP);
	sp_fall(SP_SITE_HEAP, SP_BACKING_THP, SP_FALL_COUNT);
	CHECK_EQ(falls_of(SP_SITE_HEAP, SP_BACKING_THP, SP_FALL_MMAP), 0);
	/* sp_stats shows sp_alloc's site only, and its reset clears only that. */
	sp_fall(SP_SITE_ALLOC, SP_BACKING_2M, SP_FALL_NO_POOL);
	struct sp_stats st;
	sp_stats_get(&st);
	CHECK_EQ(st.falls[SP_BACKING_2M][SP_FALL_NO_POOL], 1);
	CHECK_EQ(st.falls[SP_BACKING_2M][SP_FALL_MMAP], 0);
	sp_stats_reset();
	sp_stats_get(&st);
	CHECK_EQ(st.falls[SP_BACKING_2M][SP_FALL_NO_POOL], 0);
	CHECK_EQ(falls_of(SP_SITE_STACKS, SP_BACKING_THP, SP_FALL_THP_OFF), 2);
}

int main(void)
{
	RUN(test_refusals_classified);
	RUN(test_room);
	RUN(test_skip_as_large);
	RUN(test_no_memory_no_skip);
	RUN(test_one_table);
	fk_reset();
	fk_uninstall();
	return CHECK_DONE();
}
