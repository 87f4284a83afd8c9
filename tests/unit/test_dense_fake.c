/* test_dense_fake.c - auto's heap on the fake kernel (its memory is real: mincore says
 * what is resident), below the 64 MiB at which auto puts any heap on THP: a heap of
 * DENSE_UNITS or more whose pages were mostly never touched stays on base pages; once
 * they are resident but for an eighth, it goes on THP at auto's next look (units.h).
 * The fake kernel is in place before the runtime starts: a constructor of a higher
 * priority than the runtime's. */
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

#define MB ((size_t)1 << 20)
#define NBLK 10
#define BLK (7 * MB / 4) /* a run of pages across units: 1.75 MiB, 10 of them 8.75 units */

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

/* Time passes, and auto looks whether the heap is dense (as it does after the page
 * heap places a run), looks times. */
static void time_passes(int looks)
{
	for (int i = 0; i < looks; i++) {
		fk_clock_advance(2 * DENSE_NS);
		maybe_promote();
	}
}

static void test_dense_heap_promoted(void)
{
	static unsigned char *b[NBLK];
	CHECK(rt_init());
	/* (The fake's memory is the real kernel's: on base pages, whatever THP mode the
	 * machine is in, or a test that sets "always" for a while makes it resident.) */
	uintptr_t lo, hi;
	pages_range(&lo, &hi);
	CHECK(madvise((void *)lo, hi - lo, MADV_NOHUGEPAGE) == 0);
	b[0] = rt_malloc(BLK);
	CHECK(b[0] != NULL);
	if (!b[0])
		return;
	memset(b[0], 1, BLK);
	for (int i = 1; i < NBLK; i++) {
		b[i] = rt_malloc(BLK);
		CHECK(b[i] != NULL);
		if (!b[i])
			return;
		b[i][0] = (unsigned char)(i + 1); /* one page of each touched */
	}
	uint64_t base = units_on(SP_BACKING_4K);
	CHECK(base >= DENSE_UNITS && base < PROMOTE_UNITS);
	time_passes(2);
	/* Mostly never touched: THP would make every unit resident whole. */
	CHECK_EQ(units_on(SP_BACKING_THP), 0);
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), 0);
	/* Four fifths of each block touched: a fifth of the units' pages or so still
	 * not resident (with the unit of the heap's few small objects), on base pages. */
	for (int i = 1; i < NBLK; i++)
		memset(b[i] + 1, i + 1, BLK / 5 * 4);
	time_passes(2);
	CHECK_EQ(units_on(SP_BACKING_THP), 0);
	/* All but resident: on THP at the next look, the units collapsed, every byte
	 * kept. */
	for (int i = 1; i < NBLK; i++)
		memset(b[i] + 1, i + 1, BLK - 1);
	time_passes(1);
	CHECK_EQ(units_on(SP_BACKING_4K), 0);
	CHECK(units_on(SP_BACKING_THP) >= base);
	CHECK(fk_madvise_calls(MADV_COLLAPSE) >= (int)base);
	size_t wrong = 0;
	for (int i = 0; i < NBLK; i++) {
		for (size_t k = 0; k < BLK; k += 4096)
			wrong += b[i][k] != (unsigned char)(i + 1);
		rt_free(b[i]);
	}
	CHECK_EQ(wrong, 0);
}

int main(void)
{
	RUN(test_dense_heap_promoted);
	fk_uninstall();
	return CHECK_DONE();
}
