/* test_outside.c - large blocks the heap's range cannot hold: mapped on their own
 * outside it (SPAN_OUTSIDE), found again by free, realloc and malloc_usable_size.
 * The range is filled with untouched blocks first (it is only address space), so
 * this runs alone, on the real kernel, and under ASan/UBSan too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/pageheap.h"
#include "runtime.h"

#define MB (1ul << 20)
#define GB (1ul << 30)
#define FILL_BLOCK (4 * GB)
#define NSMALL 1500

static uintptr_t lo, hi;
static void *fillers[(256 * GB) / FILL_BLOCK + 64];
static size_t nfill;

static bool outside(const void *p)
{
	return (uintptr_t)p < lo || (uintptr_t)p >= hi;
}

/* Fills the range with blocks of FILL_BLOCK, then what is left of it in blocks of
 * halving sizes down to one unit, which is given back: blocks above 2 MiB are
 * outside after that, medium ones still in the range. False if it could not be. */
static bool fill_range(void)
{
	if (nfill)
		return true;
	pages_range(&lo, &hi);
	size_t size = FILL_BLOCK;
	while (size >= 2 * MB && nfill < sizeof fillers / sizeof *fillers) {
		void *p = rt_malloc(size);
		if (p && !outside(p)) {
			fillers[nfill++] = p;
			continue;
		}
		rt_free(p);
		size /= 2;
	}
	if (!nfill)
		return false;
	/* The last block goes, and blocks of halving sizes down to one unit refill
	 * its place: one unit stays free. */
	size = rt_usable_size(fillers[nfill - 1]);
	rt_free(fillers[--nfill]);
	for (size /= 2; size >= 2 * MB; size /= 2) {
		void *p = rt_malloc(size);
		if (!p || outside(p) || nfill == sizeof fillers / sizeof *fillers) {
			rt_free(p);
			return false;
		}
		fillers[nfill++] = p;
	}
	return true;
}

static void test_blocks_outside(void)
{
	CHECK(rt_init());
	if (!fill_range())
		SKIP("the range could not be filled");
	size_t size = 3 * MB + 1;
	uint64_t *p = rt_malloc(size);
	if (!p)
		SKIP("the kernel refuses a block of %zu bytes here", size);
	CHECK(outside(p));
	CHECK_EQ((uintptr_t)p % 16, 0);
	CHECK_EQ(rt_usable_size(p), 3 * MB + 4096);
	memset(p, 0x5a, size);
	/* Grown, shrunk (mremap), the bytes kept. */
	uint64_t *q = rt_realloc(p, 40 * MB);
	CHECK(q != NULL);
	if (!q)
		return;
	CHECK_EQ(rt_usable_size(q), 40 * MB);
	for (size_t i = 0; i < size / 8; i++)
		if (q[i] != 0x5a5a5a5a5a5a5a5aull) {
			CHECK(!"a byte changed when the block grew");
			break;
		}
	memset(q, 0x33, 40 * MB);
	p = rt_realloc(q, 5 * MB + 3);
	CHECK(p != NULL && outside(p));
	CHECK_EQ(rt_usable_size(p), 5 * MB + 4096);
	CHECK(p && ((unsigned char *)p)[5 * MB + 2] == 0x33 && p[0] == 0x3333333333333333ull);
	/* Down to a medium block: copied into the range (it has a unit left). */
	q = rt_realloc(p, 100000);
	CHECK(q != NULL && !outside(q));
	CHECK(q && ((unsigned char *)q)[99999] == 0x33);
	rt_free(q);
	/* calloc'd: zero; aligned: aligned. */
	unsigned char *c = rt_calloc(1, 9 * MB + 100);
	CHECK(c != NULL && outside(c));
	for (size_t i = 0; c && i < 9 * MB + 100; i += 4093)
		if (c[i]) {
			CHECK(!"calloc gave a byte that is not zero");
			break;
		}
	void *a = rt_memalign(8 * MB, 3 * MB);
	CHECK(a != NULL && outside(a) && (uintptr_t)a % (8 * MB) == 0);
	CHECK_EQ(rt_usable_size(a), 3 * MB);
	rt_free(c);
	rt_free(a);
	/* Freed: malloc_usable_size no longer knows it (a pointer not ours). */
	CHECK_EQ(rt_usable_size(c), 0);
}

static void test_many_outside(void)
{
	static unsigned char *ps[NSMALL];
	if (!fill_range())
		SKIP("the range could not be filled");
	/* Enough to grow the table a few times; freed in another order, tombs and all. */
	for (size_t k = 0; k < NSMALL; k++) {
		size_t size = 2 * MB + k % 64 * 4096 + 7;
		ps[k] = rt_malloc(size);
		CHECK(ps[k] != NULL && outside(ps[k]));
		if (!ps[k])
			return;
		/* (Above the first 2 MiB: base pages, not a huge page each.) */
		ps[k][2 * MB] = (unsigned char)k;
		ps[k][size - 1] = (unsigned char)(k >> 3);
	}
	for (size_t round = 0; round < 3; round++)
		for (size_t k = round; k < NSMALL; k += 3) {
			size_t size = 2 * MB + k % 64 * 4096 + 7;
			CHECK_EQ(rt_usable_size(ps[k]), (size + 4095) & ~4095ul);
			CHECK(ps[k][2 * MB] == (unsigned char)k &&
			      ps[k][size - 1] == (unsigned char)(k >> 3));
			if (round < 2) {
				rt_free(ps[k]);
				ps[k] = NULL;
			}
		}
	/* A forked child sees the blocks and frees its own copies. */
	pid_t pid = fork();
	if (pid == 0) {
		int bad = 0;
		for (size_t k = 2; k < NSMALL; k += 3) {
			bad += ps[k][2 * MB] != (unsigned char)k;
			rt_free(ps[k]);
		}
		_exit(bad != 0);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (size_t k = 2; k < NSMALL; k += 3) {
		CHECK(ps[k][2 * MB] == (unsigned char)k);
		rt_free(ps[k]);
	}
	struct rt_stats s;
	rt_stats_get(&s);
	CHECK_EQ(s.large_blocks, nfill);
}

static void test_range_again(void)
{
	if (!fill_range())
		SKIP("the range could not be filled");
	/* Room again in the range: a large block goes there, not outside. */
	rt_free(fillers[0]);
	void *p = rt_malloc(FILL_BLOCK / 2);
	CHECK(p != NULL && !outside(p));
	rt_free(p);
	for (size_t k = 1; k < nfill; k++)
		rt_free(fillers[k]);
	nfill = 0;
}

int main(void)
{
	RUN(test_blocks_outside);
	RUN(test_many_outside);
	RUN(test_range_again);
	return CHECK_DONE();
}
