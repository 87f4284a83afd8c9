/* test_dense_grow.c - auto's heap on the fake kernel, whose clock stands still: a heap
 * that grows dense goes on THP as it grows, with no timed look (auto also looks
 * whenever the heap has more units than when it last looked, backing.c), its dense
 * units only, and the last one once three quarters of it are given out; and a unit
 * whose collapse the kernel answers EAGAIN is tried three times, its bytes kept.
 * (test_dense_fake.c has the timed looks and the sparse heap that stays on base
 * pages.) The fake kernel is in place before the runtime starts. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"
#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/units.h"

#define KB ((size_t)1 << 10)
#define BLK (512 * KB) /* a run of pages: four to a unit */
#define NBLK (4 * (PROMOTE_UNITS - 2))

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_reset();
	fk_machine_default();
	fk_install();
	setenv("SUPERPAGE_BACKING", "auto", 1);
}

static uint64_t units_on(enum sp_backing b)
{
	struct rt_stats st;
	rt_stats_get(&st);
	return st.units[b];
}

static void test_grown_dense_heap_promoted(void)
{
	static unsigned char *b[NBLK];
	CHECK(rt_init());
	uintptr_t lo, hi;
	pages_range(&lo, &hi);
	CHECK(madvise((void *)lo, hi - lo, MADV_NOHUGEPAGE) == 0);
	fk_collapse(EAGAIN);
	/* Every block written whole as soon as it is had: the heap is dense at each
	 * look but for the newest block. */
	int n = 0;
	while (n < NBLK && units_on(SP_BACKING_THP) == 0) {
		b[n] = rt_malloc(BLK);
		CHECK(b[n] != NULL);
		if (!b[n])
			return;
		memset(b[n], n + 1, BLK);
		n++;
	}
	uint64_t thp = units_on(SP_BACKING_THP);
	CHECK(thp > 0);
	CHECK(thp < PROMOTE_UNITS);
	/* Dense units only: the last one, with fewer than three of its four blocks
	 * (DENSE_PAGES), stays on base pages. */
	int last = n % 4;
	CHECK_EQ(thp, (uint64_t)(n / 4 + (last >= 3)));
	CHECK_EQ(units_on(SP_BACKING_4K), (uint64_t)(last && last < 3));
	/* each unit in use tried three times, and left on base pages by the kernel */
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), 3 * (int)thp);
	/* The last unit filled to three blocks goes on THP then, collapsed (it holds
	 * pages). */
	while (last && last < 3 && n < NBLK) {
		b[n] = rt_malloc(BLK);
		CHECK(b[n] != NULL);
		if (!b[n])
			return;
		memset(b[n], n + 1, BLK);
		n++;
		last++;
		CHECK_EQ(units_on(SP_BACKING_4K), (uint64_t)(last < 3));
		if (last == 3)
			CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), 3 * (int)thp + 3);
	}
	size_t wrong = 0;
	for (int i = 0; i < n; i++) {
		for (size_t k = 0; k < BLK; k += 4096)
			wrong += b[i][k] != (unsigned char)(i + 1);
		rt_free(b[i]);
	}
	CHECK_EQ(wrong, 0);
	printf("on THP after %d blocks of 512 KiB (%llu units)\n", n, (unsigned long long)thp);
}

int main(void)
{
	RUN(test_grown_dense_heap_promoted);
	fk_uninstall();
	return CHECK_DONE();
}
