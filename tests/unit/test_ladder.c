/* test_ladder.c - sp_alloc's fallback ladder 1G -> 2M -> THP -> 4K against the fake kernel. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define M1 (1ull << 20)
#define M2 (2ull << 20)
#define M4 (4ull << 20)
#define G1 (1ull << 30)
#define S_1G SP_BACKING_1G
#define S_2M SP_BACKING_2M
#define S_THP SP_BACKING_THP
#define S_4K SP_BACKING_4K
#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"

static struct sp_stats st;
static uint64_t live0;

/* Re-reads the machine, then zeroes the fake's counters so only the test's calls count. */
static void refresh(void)
{
	sp_refresh();
	(void)sp_view_get();
	fk_counters_reset();
}

static void setup(long pool_2m, long pool_1g)
{
	fk_reset();
	fk_machine_default();
	fk_pool(M2, pool_2m, pool_2m);
	fk_pool(G1, pool_1g, pool_1g);
	fk_install();
	refresh();
	sp_stats_reset();
	sp_stats_get(&st);
	live0 = st.live_blocks;
}

static struct sp_stats *stats(void)
{
	sp_stats_get(&st);
	return &st;
}

static enum sp_backing backing_of(const void *p)
{
	struct sp_block b;
	if (sp_block_info(p, &b) != 0)
		return SP_BACKING_COUNT;
	return b.backing;
}

static uint64_t falls_total(int rung)
{
	uint64_t n = 0;
	sp_stats_get(&st);
	for (int f = 0; f < SP_FALL_COUNT; f++)
		n += st.falls[rung][f];
	return n;
}

/* Memory handed out must never be hugetlb without a reservation. */
static void no_noreserve(void)
{
	CHECK_EQ(fk_noreserve_hugetlb(), 0);
}

static void test_bad_args(void)
{
	setup(4, 0);
	errno = 0;
	CHECK(sp_alloc(0, 0) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(sp_alloc(4096, SP_2M | SP_THP) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(sp_alloc(4096, SP_4K | SP_1G | SP_STRICT) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(sp_alloc(4096, 0x10) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(sp_alloc(4096, SP_4K | 0x10000) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(fk_mmap_calls(), 0);
	CHECK_EQ(stats()->live_blocks, live0);
}

static void test_auto_1g_no_pool(void)
{
	setup(1024, 0);
	errno = 12345;
	char *p = sp_alloc(G1, SP_AUTO);
	CHECK(p != NULL);
	CHECK_EQ(errno, 12345);
	struct sp_block b;
	CHECK_EQ(sp_block_info(p, &b), 0);
	CHECK(b.addr == p);
	CHECK_EQ(b.backing, S_2M);
	CHECK_EQ(b.size, G1);
	CHECK_EQ(b.mapped, G1);
	CHECK_EQ(b.flags, SP_AUTO);
	CHECK_EQ((uintptr_t)p % M2, 0);
	CHECK_EQ(stats()->falls[S_1G][SP_FALL_NO_POOL], 1);
	CHECK_EQ(fk_mmap_huge_calls(G1), 1);
	CHECK_EQ(fk_pool_free(M2), 512);
	CHECK_EQ(stats()->blocks[S_2M], 1);
	CHECK_EQ(st.bytes[S_2M], G1);
	CHECK_EQ(st.live_blocks, live0 + 1);
	char *q = sp_alloc(G1, SP_AUTO); /* 1G just failed: skipped, not asked */
	CHECK_EQ(backing_of(q), S_2M);
	CHECK_EQ(stats()->falls[S_1G][SP_FALL_SKIPPED], 1);
	CHECK_EQ(fk_mmap_huge_calls(G1), 1);
	CHECK_EQ(sp_free(q, G1), 0);
	errno = 12345;
	CHECK_EQ(sp_free(p, G1), 0);
	CHECK_EQ(errno, 12345);
	CHECK_EQ(fk_pool_free(M2), 1024);
	CHECK_EQ(stats()->live_blocks, live0);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
	no_noreserve();
}

static void test_auto_1g_pool(void)
{
	setup(0, 1);
	char *p = sp_alloc(G1, 0);
	CHECK(p != NULL);
	CHECK_EQ(backing_of(p), S_1G);
	CHECK_EQ((uintptr_t)p % G1, 0);
	CHECK_EQ(fk_pool_free(G1), 0);
	CHECK_EQ(fk_mmap_huge_calls(M2), 0);
	CHECK_EQ(falls_total(S_1G), 0);
	int fl = fk_last_mmap_flags();
	CHECK(fl & MAP_HUGETLB);
	CHECK_EQ((fl >> MAP_HUGE_SHIFT) & 0x3f, 30);
	CHECK(fl & MAP_PRIVATE);
	CHECK(fl & MAP_ANONYMOUS);
	CHECK(!(fl & MAP_NORESERVE));
	CHECK_EQ(stats()->blocks[S_1G], 1);
	CHECK_EQ(st.bytes[S_1G], G1);
	CHECK_EQ(sp_free(p, G1), 0);
	CHECK_EQ(fk_pool_free(G1), 1);
	no_noreserve();
}

/* Auto takes 1G only when rounding up wastes at most size/8. */
static void test_auto_1g_waste(void)
{
	struct { uint64_t size; enum sp_backing want; } cases[] = {
		{ G1 + 1, S_2M },          /* nearly a whole page wasted */
		{ G1 + 64 * M1, S_2M },
		{ 1820 * M1, S_2M },       /* waste 228M > 227.5M */
		{ 1821 * M1, S_1G },       /* waste 227M <= 227.6M */
		{ 2 * G1 - 128 * M1, S_1G },
		{ 512 * M1, S_2M },        /* below 1 GiB */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		setup(1024, 2);
		char *p = sp_alloc(cases[i].size, 0);
		CHECK(p != NULL);
		enum sp_backing got = backing_of(p);
		if (got != cases[i].want)
			printf("  size %llu: backing %s, want %s\n", (unsigned long long)cases[i].size,
			       sp_backing_name(got), sp_backing_name(cases[i].want));
		CHECK_EQ(got, cases[i].want);
		if (cases[i].want == S_2M) {
			CHECK_EQ(fk_mmap_huge_calls(G1), 0); /* 1G not even tried */
			CHECK_EQ(falls_total(S_1G), 0);
		} else {
			CHECK_EQ((uintptr_t)p % G1, 0);
			CHECK_EQ(fk_pool_free(G1), 0);
		}
		CHECK_EQ(sp_free(p, cases[i].size), 0);
		CHECK_EQ(fk_pool_free(G1), 2);
		CHECK_EQ(fk_pool_free(M2), 1024);
	}
	/* no 1 GiB page size at all: auto starts at 2M and says nothing about 1G */
	setup(1024, 0);
	fk_pool_remove(G1);
	refresh();
	char *p = sp_alloc(2 * G1 - 128 * M1, 0);
	CHECK_EQ(backing_of(p), S_2M);
	CHECK_EQ(falls_total(S_1G), 0);
	CHECK_EQ(fk_mmap_huge_calls(G1), 0);
	sp_free(p, 2 * G1 - 128 * M1);
	no_noreserve();
}

static void test_2m_pool_short(void)
{
	setup(4, 0);
	errno = 12345;
	char *p = sp_alloc(5 * M2, 0);
	CHECK(p != NULL);
	CHECK_EQ(errno, 12345);
	CHECK_EQ(backing_of(p), S_THP);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_POOL_EMPTY], 1);
	CHECK_EQ(fk_pool_free(M2), 4);
	CHECK_EQ((uintptr_t)p % M2, 0);
	struct fk_map_info m;
	CHECK_EQ(fk_map_find(p, &m), 0);
	CHECK_EQ(m.advice, 1); /* MADV_HUGEPAGE */
	CHECK_EQ(m.hpage, 0);
	memset(p, 0xab, 5 * M2); /* usable, no SIGBUS */
	CHECK_EQ(fk_map_bytes_min(M1), 5 * M2); /* the head and tail of the over-map are gone */
	CHECK_EQ(sp_free(p, 5 * M2), 0);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
	no_noreserve();
}

static void test_pool_runs_dry(void)
{
	setup(2, 0);
	char *a = sp_alloc(M4, 0);
	CHECK_EQ(backing_of(a), S_2M);
	CHECK_EQ(fk_pool_free(M2), 0);
	CHECK_EQ(fk_mmap_huge_calls(M2), 1);

	char *b = sp_alloc(M4, 0);
	CHECK_EQ(backing_of(b), S_THP);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_POOL_EMPTY], 1);
	CHECK_EQ(fk_mmap_huge_calls(M2), 2);

	char *c = sp_alloc(M4, 0); /* within 1 s: not asked again */
	CHECK_EQ(backing_of(c), S_THP);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_SKIPPED], 1);
	CHECK_EQ(st.falls[S_2M][SP_FALL_POOL_EMPTY], 1);
	CHECK_EQ(fk_mmap_huge_calls(M2), 2);
	char *c2 = sp_alloc(2 * M4, 0); /* larger: skipped too */
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_SKIPPED], 2);
	CHECK_EQ(fk_mmap_huge_calls(M2), 2);

	fk_clock_advance(500000000ull);
	char *c3 = sp_alloc(M4, 0); /* half a second later: still skipped */
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_SKIPPED], 3);
	CHECK_EQ(fk_mmap_huge_calls(M2), 2);
	fk_clock_advance(1500000000ull);
	char *d = sp_alloc(M4, 0); /* 2 s after the failure: asked again */
	CHECK_EQ(fk_mmap_huge_calls(M2), 3);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_POOL_EMPTY], 2);
	CHECK_EQ(backing_of(d), S_THP);

	CHECK_EQ(sp_free(a, M4), 0); /* a 2M block freed: the pool has pages again */
	CHECK_EQ(fk_pool_free(M2), 2);
	char *e = sp_alloc(M4, 0);
	CHECK_EQ(fk_mmap_huge_calls(M2), 4);
	CHECK_EQ(backing_of(e), S_2M);
	CHECK_EQ(fk_pool_free(M2), 0);

	CHECK_EQ(sp_free(b, M4), 0);
	CHECK_EQ(sp_free(c, M4), 0);
	CHECK_EQ(sp_free(c2, 2 * M4), 0);
	CHECK_EQ(sp_free(c3, M4), 0);
	CHECK_EQ(sp_free(d, M4), 0);
	CHECK_EQ(sp_free(e, M4), 0);
	CHECK_EQ(fk_pool_free(M2), 2);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
	CHECK_EQ(stats()->live_blocks, live0);
	no_noreserve();
}

/* The skip is for requests of at least the failed size; STRICT and sp_refresh ask again. */
static void test_skip_rules(void)
{
	setup(1, 0);
	char *big = sp_alloc(M4, 0); /* needs 2 pages, 1 free */
	CHECK_EQ(backing_of(big), S_THP);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_POOL_EMPTY], 1);
	CHECK_EQ(fk_mmap_huge_calls(M2), 1);

	errno = 0;
	CHECK(sp_alloc(M4, SP_2M | SP_STRICT) == NULL); /* strict always asks */
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(fk_mmap_huge_calls(M2), 2);

	char *again = sp_alloc(M4, 0);
	CHECK_EQ(fk_mmap_huge_calls(M2), 2);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_SKIPPED], 1);

	char *small = sp_alloc(M2, 0); /* smaller than what failed: asked */
	CHECK_EQ(fk_mmap_huge_calls(M2), 3);
	CHECK_EQ(backing_of(small), S_2M);
	CHECK_EQ(fk_pool_free(M2), 0);

	char *x = sp_alloc(M2, 0); /* the pool is empty now */
	CHECK_EQ(backing_of(x), S_THP);
	CHECK_EQ(fk_mmap_huge_calls(M2), 4);
	char *y = sp_alloc(M2, 0);
	CHECK_EQ(fk_mmap_huge_calls(M2), 4);
	refresh(); /* zeroes the fake's counters */
	char *z = sp_alloc(M2, 0);
	CHECK_EQ(fk_mmap_huge_calls(M2), 1);
	CHECK_EQ(backing_of(z), S_THP);

	sp_free(big, M4);
	sp_free(again, M4);
	sp_free(small, M2);
	sp_free(x, M2);
	sp_free(y, M2);
	sp_free(z, M2);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
	CHECK_EQ(fk_pool_free(M2), 1);
	no_noreserve();
}

static void strict_fails(size_t size, unsigned flags)
{
	int maps = fk_map_count();
	size_t bytes = fk_map_bytes();
	errno = 0;
	void *p = sp_alloc(size, flags | SP_STRICT);
	CHECK(p == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(fk_map_count(), maps);
	CHECK_EQ(fk_map_bytes(), bytes);
	CHECK_EQ(stats()->live_blocks, live0);
}

static void test_strict(void)
{
	setup(0, 0);
	strict_fails(M4, SP_2M);
	strict_fails(G1, SP_1G);
	fk_pool(M2, 3, 1);
	refresh();
	strict_fails(M4, SP_2M);
	CHECK_EQ(fk_pool_free(M2), 1);
	fk_file(THP_ENABLED, "always madvise [never]\n");
	refresh();
	strict_fails(M4, SP_THP);

	/* the same without STRICT falls down the ladder and says why */
	setup(0, 0);
	char *p = sp_alloc(M4, SP_2M);
	CHECK_EQ(backing_of(p), S_THP);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_NO_POOL], 1);
	sp_free(p, M4);
	fk_pool(M2, 3, 0);
	refresh();
	p = sp_alloc(M4, SP_2M);
	CHECK_EQ(backing_of(p), S_THP);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_POOL_EMPTY], 1);
	sp_free(p, M4);
	no_noreserve();
}

static void test_hugetlb_flags(void)
{
	setup(4, 1);
	char *p = sp_alloc(M2, SP_2M | SP_POPULATE);
	CHECK(p != NULL);
	int fl = fk_last_mmap_flags();
	CHECK(fl & MAP_HUGETLB);
	CHECK_EQ((fl >> MAP_HUGE_SHIFT) & 0x3f, 21);
	CHECK(fl & MAP_POPULATE);
	CHECK(fl & MAP_PRIVATE);
	CHECK(fl & MAP_ANONYMOUS);
	CHECK(!(fl & MAP_NORESERVE));
	CHECK(!(fl & MAP_SHARED));
	struct sp_block b;
	CHECK_EQ(sp_block_info(p, &b), 0);
	CHECK_EQ(b.backing, S_2M);
	CHECK_EQ(b.flags, SP_2M | SP_POPULATE);
	CHECK_EQ(b.mapped, M2);
	struct sp_verify v;
	CHECK_EQ(sp_verify_range(p, M2, &v), 0);
	CHECK_EQ(v.backing, S_2M);
	CHECK_EQ(v.page_size, M2);
	CHECK_EQ(v.rss_bytes, M2);
	CHECK_EQ(v.huge_bytes, M2);
	CHECK_EQ(fk_pool_free(M2), 3);
	CHECK_EQ(sp_free(p, M2), 0);

	p = sp_alloc(G1, SP_1G);
	CHECK_EQ(backing_of(p), S_1G);
	fl = fk_last_mmap_flags();
	CHECK_EQ((fl >> MAP_HUGE_SHIFT) & 0x3f, 30);
	CHECK(!(fl & MAP_POPULATE));
	CHECK(!(fl & MAP_NORESERVE));
	CHECK_EQ(sp_free(p, G1), 0);
	CHECK_EQ(fk_pool_free(G1), 1);
	no_noreserve();
}

static void test_unsupported(void)
{
	setup(512, 0);
	fk_pool_remove(G1);
	refresh();
	char *p = sp_alloc(G1, SP_1G);
	CHECK_EQ(stats()->falls[S_1G][SP_FALL_UNSUPPORTED], 1);
	CHECK_EQ(fk_mmap_huge_calls(G1), 0); /* not asked: sysfs has no such size */
	CHECK_EQ(backing_of(p), S_2M);
	sp_free(p, G1);

	setup(4, 0);
	fk_mmap_fail_huge(M2, EINVAL);
	p = sp_alloc(M4, SP_2M);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_UNSUPPORTED], 1);
	CHECK_EQ(backing_of(p), S_THP);
	sp_free(p, M4);

	setup(4, 0);
	fk_mmap_fail_huge(M2, EPERM);
	p = sp_alloc(M4, SP_2M);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_MMAP], 1);
	CHECK_EQ(backing_of(p), S_THP);
	CHECK_EQ(fk_pool_free(M2), 4);
	sp_free(p, M4);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
	no_noreserve();
}

static void test_madvise_fails(void)
{
	setup(0, 0);
	fk_madvise_fail(MADV_HUGEPAGE, EINVAL);
	errno = 12345;
	char *p = sp_alloc(M4, SP_THP);
	CHECK(p != NULL);
	CHECK_EQ(errno, 12345);
	struct sp_block b;
	CHECK_EQ(sp_block_info(p, &b), 0);
	CHECK_EQ(b.backing, S_4K);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_MADVISE], 1);
	CHECK_EQ(fk_madvise_calls(MADV_HUGEPAGE), 1);
	CHECK_EQ(fk_map_bytes_min(M1), b.mapped); /* the THP try was unmapped */
	CHECK(fk_madvise_calls(MADV_NOHUGEPAGE) >= 1);
	CHECK_EQ(stats()->blocks[S_4K], 1);
	CHECK_EQ(st.blocks[S_THP], 0);
	CHECK_EQ(sp_free(p, M4), 0);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
}

static void test_collapse_fails(void)
{
	setup(0, 0);
	fk_thp_on_fault(false); /* populate leaves small pages */
	fk_collapse(EAGAIN);
	char *p = sp_alloc(M4, SP_THP | SP_POPULATE);
	CHECK(p != NULL);
	CHECK(fk_madvise_calls(MADV_POPULATE_WRITE) >= 1);
	CHECK(fk_madvise_calls(MADV_COLLAPSE) >= 1);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_NOT_HUGE], 1);
	CHECK_EQ(st.collapses, 0);
	CHECK_EQ(backing_of(p), S_4K);
	struct fk_map_info m;
	CHECK_EQ(fk_map_find(p, &m), 0);
	CHECK(m.resident);
	CHECK(!m.huge);
	CHECK_EQ(sp_free(p, M4), 0);

	strict_fails(M4, SP_THP | SP_POPULATE);

	/* auto: no pool, THP not huge: the block stays, counted as 4K */
	setup(0, 0);
	fk_thp_on_fault(false);
	fk_collapse(EAGAIN);
	p = sp_alloc(M4, SP_POPULATE);
	CHECK(p != NULL);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_NO_POOL], 1);
	CHECK_EQ(st.falls[S_THP][SP_FALL_NOT_HUGE], 1);
	CHECK_EQ(backing_of(p), S_4K);
	CHECK_EQ(st.blocks[S_4K], 1);
	sp_free(p, M4);

	/* some of it huge: still a THP block, and the shortfall is counted */
	setup(0, 0);
	fk_thp_fault_limit(M2);
	fk_collapse(EAGAIN);
	p = sp_alloc(M4, SP_THP | SP_POPULATE);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_NOT_HUGE], 1);
	CHECK_EQ(backing_of(p), S_THP);
	sp_free(p, M4);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
}

static void test_collapse_succeeds(void)
{
	setup(0, 0);
	fk_thp_on_fault(false);
	fk_collapse(0);
	char *p = sp_alloc(M4, SP_THP | SP_POPULATE);
	CHECK(p != NULL);
	CHECK_EQ(backing_of(p), S_THP);
	CHECK_EQ(stats()->collapses, 1);
	CHECK_EQ(st.falls[S_THP][SP_FALL_NOT_HUGE], 0);
	struct sp_verify v;
	CHECK_EQ(sp_verify_range(p, M4, &v), 0);
	CHECK_EQ(v.backing, S_THP);
	CHECK_EQ(v.huge_bytes, M4);
	sp_free(p, M4);

	/* huge at fault: no collapse needed */
	setup(0, 0);
	p = sp_alloc(M4, SP_THP | SP_POPULATE);
	CHECK_EQ(backing_of(p), S_THP);
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), 0);
	CHECK_EQ(stats()->collapses, 0);
	CHECK_EQ(falls_total(S_THP), 0);
	sp_free(p, M4);

	/* a kernel without MADV_COLLAPSE: not asked */
	setup(0, 0);
	fk_thp_on_fault(false);
	fk_collapse(EINVAL);
	refresh();
	p = sp_alloc(M4, SP_THP | SP_POPULATE);
	/* one call: the lazy probe on its own trial block, none on the block */
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), 1);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_NOT_HUGE], 1);
	CHECK_EQ(backing_of(p), S_4K);
	sp_free(p, M4);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
}

static void test_mmap_fails_everywhere(void)
{
	setup(4, 0);
	fk_mmap_fail_next(1000, ENOMEM);
	errno = 0;
	CHECK(sp_alloc(M4, 0) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(stats()->falls[S_2M][SP_FALL_POOL_EMPTY], 1);
	CHECK_EQ(st.falls[S_THP][SP_FALL_MMAP], 1);
	CHECK_EQ(st.live_blocks, live0);
	errno = 0;
	CHECK(sp_alloc(4096, SP_4K) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
	CHECK_EQ(fk_pool_free(M2), 4);
	fk_mmap_fail_next(0, 0);
}

static void test_thp_never(void)
{
	setup(0, 0);
	fk_file(THP_ENABLED, "always madvise [never]\n");
	refresh();
	char *p = sp_alloc(M4, SP_THP);
	CHECK_EQ(backing_of(p), S_4K);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_THP_OFF], 1);
	CHECK_EQ(fk_madvise_calls(MADV_HUGEPAGE), 0);
	sp_free(p, M4);

	/* populate + a working MADV_COLLAPSE still gets huge pages under "never" */
	p = sp_alloc(M4, SP_THP | SP_POPULATE);
	CHECK_EQ(backing_of(p), S_THP);
	CHECK_EQ(stats()->collapses, 1);
	CHECK_EQ(st.falls[S_THP][SP_FALL_THP_OFF], 1);
	CHECK_EQ((uintptr_t)p % M2, 0);
	sp_free(p, M4);

	fk_collapse(EINVAL);
	refresh();
	sp_stats_reset();
	p = sp_alloc(M4, SP_THP | SP_POPULATE);
	CHECK_EQ(backing_of(p), S_4K);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_THP_OFF], 1);
	sp_free(p, M4);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
}

/* What governs 2 MiB THP is the 2 MiB mTHP mode, unless it says "inherit". */
static void test_thp_pmd_mode(void)
{
	setup(0, 0);
	fk_file("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
		"always inherit madvise [never]\n");
	refresh();
	char *p = sp_alloc(M4, SP_THP);
	CHECK_EQ(backing_of(p), S_4K);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_THP_OFF], 1);
	sp_free(p, M4);

	setup(0, 0);
	fk_file(THP_ENABLED, "always madvise [never]\n");
	fk_file("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
		"always inherit [madvise] never\n");
	refresh();
	p = sp_alloc(M4, SP_THP | SP_POPULATE);
	CHECK_EQ(backing_of(p), S_THP);
	CHECK_EQ(falls_total(S_THP), 0);
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), 0); /* huge at fault */
	sp_free(p, M4);
}

static void test_thp_disabled_by_prctl(void)
{
	setup(0, 0);
	fk_prctl_thp(1);
	refresh();
	char *p = sp_alloc(M4, SP_THP);
	CHECK_EQ(backing_of(p), S_4K);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_THP_OFF], 1);
	sp_free(p, M4);
	p = sp_alloc(M4, SP_THP | SP_POPULATE);
	CHECK_EQ(backing_of(p), S_4K);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_THP_OFF], 2);
	sp_free(p, M4);
}

static void test_thp_absent(void)
{
	setup(0, 0);
	fk_file_remove_tree("/sys/kernel/mm/transparent_hugepage");
	refresh();
	char *p = sp_alloc(M4, SP_THP);
	CHECK_EQ(backing_of(p), S_4K);
	CHECK_EQ(stats()->falls[S_THP][SP_FALL_UNSUPPORTED], 1);
	sp_free(p, M4);
}

static void test_4k(void)
{
	setup(4, 1);
	errno = 12345;
	char *p = sp_alloc(10000, SP_4K);
	CHECK(p != NULL);
	CHECK_EQ(errno, 12345);
	struct sp_block b;
	CHECK_EQ(sp_block_info(p, &b), 0);
	CHECK_EQ(b.backing, S_4K);
	CHECK_EQ(b.size, 10000);
	CHECK_EQ(b.mapped, 12288);
	CHECK_EQ(b.flags, SP_4K);
	CHECK_EQ((uintptr_t)p % 4096, 0);
	CHECK(fk_madvise_calls(MADV_NOHUGEPAGE) >= 1);
	struct fk_map_info m;
	CHECK_EQ(fk_map_find(p, &m), 0);
	CHECK_EQ(m.advice, -1);
	CHECK_EQ(fk_mmap_huge_calls(M2) + fk_mmap_huge_calls(G1), 0);
	for (int r = 0; r < SP_BACKING_COUNT; r++)
		CHECK_EQ(falls_total(r), 0);
	memset(p, 1, 10000);
	CHECK_EQ(stats()->blocks[S_4K], 1);
	CHECK_EQ(st.bytes[S_4K], 12288);
	CHECK_EQ(sp_free(p, 10000), 0);
	CHECK_EQ(fk_map_find(p, &m), -1);
}

static void test_free_errors(void)
{
	setup(0, 0);
	char *p = sp_alloc(5000, SP_4K);
	int local;
	CHECK(p != NULL);
	CHECK_EQ(sp_free(p + 4096, 4096), -EINVAL);
	CHECK_EQ(sp_free(p, 8193), -EINVAL); /* more than mapped */
	CHECK_EQ(sp_free(NULL, 1), -EINVAL);
	CHECK_EQ(sp_free(&local, sizeof local), -EINVAL);
	struct sp_block b;
	CHECK_EQ(sp_block_info(p, &b), 0); /* still live */
	CHECK_EQ(sp_block_info(p + 4096, &b), -EINVAL);
	CHECK_EQ(stats()->live_blocks, live0 + 1);
	struct fk_map_info m;
	CHECK_EQ(fk_map_find(p, &m), 0);
	errno = 12345;
	CHECK_EQ(sp_free(p, 5000), 0);
	CHECK_EQ(errno, 12345);
	CHECK_EQ(sp_free(p, 5000), -EINVAL); /* twice */
	CHECK_EQ(sp_block_info(p, &b), -EINVAL);
	CHECK_EQ(stats()->live_blocks, live0);
	CHECK_EQ(fk_map_find(p, &m), -1);
}

/* The size given to sp_free may be anything up to what was mapped. */
/* sp_free takes the size asked for or less; a larger one (even within what was
 * mapped) is a caller's mistake and the block stays live. */
static void test_free_size_as_asked(void)
{
	setup(0, 0);
	struct sp_block b;
	char *p = sp_alloc(5000, SP_4K);
	CHECK(p != NULL);
	CHECK_EQ(sp_free(p, 8192), -EINVAL);
	CHECK_EQ(sp_block_info(p, &b), 0);
	CHECK_EQ(sp_free(p, 4000), 0);
	CHECK_EQ(sp_block_info(p, &b), -EINVAL);
	char *q = sp_alloc(3 * M1, SP_THP);
	CHECK(q != NULL);
	CHECK_EQ(sp_free(q, 4 * M1), -EINVAL);
	CHECK_EQ(sp_block_info(q, &b), 0);
	CHECK_EQ(sp_free(q, 3 * M1), 0);
	CHECK_EQ(sp_block_info(q, &b), -EINVAL);
	if (p && sp_block_info(p, &b) == 0) /* tidy up after a failure */
		sp_free(p, 5000);
	if (q && sp_block_info(q, &b) == 0)
		sp_free(q, 3 * M1);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
}

static void test_info_and_stats(void)
{
	setup(8, 0);
	char *a = sp_alloc(3 * M1, SP_2M);
	char *b = sp_alloc(M1, SP_THP);
	char *c = sp_alloc(4096, SP_4K);
	struct sp_block i;
	CHECK_EQ(sp_block_info(a, &i), 0);
	CHECK(i.addr == a);
	CHECK_EQ(i.size, 3 * M1);
	CHECK_EQ(i.mapped, M4);
	CHECK_EQ(i.flags, SP_2M);
	CHECK_EQ(i.backing, S_2M);
	CHECK_EQ(sp_block_info(b, &i), 0);
	CHECK_EQ(i.size, M1);
	CHECK_EQ(i.mapped, M2);
	CHECK_EQ(i.backing, S_THP);
	CHECK_EQ((uintptr_t)b % M2, 0);
	CHECK_EQ(fk_pool_free(M2), 6);
	stats();
	CHECK_EQ(st.blocks[S_2M], 1);
	CHECK_EQ(st.bytes[S_2M], M4);
	CHECK_EQ(st.blocks[S_THP], 1);
	CHECK_EQ(st.bytes[S_THP], M2);
	CHECK_EQ(st.blocks[S_4K], 1);
	CHECK_EQ(st.bytes[S_4K], 4096);
	CHECK_EQ(st.blocks[S_1G], 0);
	CHECK_EQ(st.live_blocks, live0 + 3);
	CHECK_EQ(sp_free(a, 3 * M1), 0);
	CHECK_EQ(sp_free(b, M1), 0);
	CHECK_EQ(sp_free(c, 4096), 0);
	CHECK_EQ(stats()->live_blocks, live0);
	CHECK_EQ(st.blocks[S_2M], 1); /* served, not live */
	CHECK_EQ(fk_pool_free(M2), 8);
	sp_stats_reset();
	CHECK_EQ(stats()->blocks[S_2M], 0);
	CHECK_EQ(st.falls[S_2M][SP_FALL_NO_POOL], 0);
	CHECK_EQ(fk_map_bytes_min(M1), 0);
	struct fk_map_info m;
	CHECK_EQ(fk_map_find(c, &m), -1);
}

static int thread_errors;
static pthread_mutex_t thread_lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg)
{
	int errors = 0, seed = (int)(intptr_t)arg;
	for (int i = 0; i < 1000; i++) {
		size_t size = 4096 * (1 + (i + seed) % 16) - (i % 3) * 100;
		char *p = sp_alloc(size, SP_4K);
		if (!p) {
			errors++;
			continue;
		}
		p[0] = p[size - 1] = (char)i;
		struct sp_block b;
		if (sp_block_info(p, &b) || b.size != size || b.backing != S_4K)
			errors++;
		if (sp_free(p, size))
			errors++;
	}
	pthread_mutex_lock(&thread_lock);
	thread_errors += errors;
	pthread_mutex_unlock(&thread_lock);
	return NULL;
}

static void test_threads(void)
{
	pthread_t t[2];
	setup(0, 0);
	thread_errors = 0;
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i * 7)), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(thread_errors, 0);
	CHECK_EQ(stats()->live_blocks, live0);
	CHECK_EQ(st.blocks[S_4K], 2000);
	CHECK(fk_map_count() <= 1); /* at most the registry's own table */
	CHECK(fk_mmap_calls() >= 2000);
}

int main(void)
{
	RUN(test_bad_args);
	RUN(test_auto_1g_no_pool);
	RUN(test_auto_1g_pool);
	RUN(test_auto_1g_waste);
	RUN(test_2m_pool_short);
	RUN(test_pool_runs_dry);
	RUN(test_skip_rules);
	RUN(test_strict);
	RUN(test_hugetlb_flags);
	RUN(test_unsupported);
	RUN(test_madvise_fails);
	RUN(test_collapse_fails);
	RUN(test_collapse_succeeds);
	RUN(test_mmap_fails_everywhere);
	RUN(test_thp_never);
	RUN(test_thp_pmd_mode);
	RUN(test_thp_disabled_by_prctl);
	RUN(test_thp_absent);
	RUN(test_4k);
	RUN(test_free_errors);
	RUN(test_free_size_as_asked);
	RUN(test_info_and_stats);
	RUN(test_threads);
	fk_reset();
	fk_uninstall();
	return CHECK_DONE();
}
