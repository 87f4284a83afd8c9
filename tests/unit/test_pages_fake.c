/* test_pages_fake.c - the page heap on the fake kernel (fake_kernel.c), under 2m with a
 * pool of 40 pages: a random sequence of mallocs, reallocs and frees with
 * pages_check() after every step, while the fake pool runs out, refuses every map for
 * a while (units fall to THP) and gives MADV_DONTNEED errors (units given back stay
 * marked resident). The fake kernel is in place before the runtime starts: a
 * constructor of a higher priority than the runtime's. At the end every page of the
 * fake's pool is back in it, or in a unit the heap uses or keeps. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "fake_kernel.h"
#include "heapseq.h"
#include "life.h"
#include "runtime.h"

#define NSLOT 48
#define STEPS 3000
#define MB ((size_t)1 << 20)
#define POOL 40

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_reset();
	fk_machine_default();
	fk_pool(2 * MB, POOL, POOL);
	fk_install();
	setenv("SUPERPAGE_BACKING", "2m", 1);
}

static void test_random_on_fake_pool(void)
{
	static struct blk slot[NSLOT];
	struct heapseq q = { slot, NSLOT, 0x2545f4914f6cdd1dull, 7 * MB, 0, 0 };
	bool ok = true;
	size_t fell = 0;
	CHECK(rt_init());
	for (unsigned step = 0; step < STEPS && ok; step++) {
		/* The pool refuses every map for a while; then madvise fails for a while. */
		if (step == STEPS / 3)
			fk_mmap_fail_huge(2 * MB, ENOMEM);
		if (step == STEPS / 2) {
			fk_mmap_fail_huge(2 * MB, 0);
			fk_madvise_fail(MADV_DONTNEED, EAGAIN);
		}
		if (step == 2 * STEPS / 3)
			fk_madvise_fail(MADV_DONTNEED, 0);
		seq_step(&q);
		ok = seq_consistent(step);
	}
	struct rt_stats st;
	rt_stats_get(&st);
	for (int f = 0; f < SP_FALL_COUNT; f++)
		fell += st.falls[SP_BACKING_2M][f];
	seq_free_all(&q);
	CHECK(ok && seq_consistent(STEPS));
	CHECK_EQ(q.bad_bytes, 0);
	CHECK_EQ(q.failed, 0);
	/* Units were had from the pool, and the pool ran out or refused. */
	CHECK(st.units_peak > 0);
	CHECK(fell > 0);
	/* Every pool page is back, or in a unit of the heap's: in use or kept. */
	rt_stats_get(&st);
	long out = POOL - fk_pool_free(2 * MB);
	uint64_t held = st.units[SP_BACKING_2M] + st.kept_units;
	if (out < 0 || (uint64_t)out > held)
		fprintf(stderr, "  pool: %ld pages out, %llu 2m units, %llu kept\n", out,
			(unsigned long long)st.units[SP_BACKING_2M], (unsigned long long)st.kept_units);
	CHECK(out >= 0 && (uint64_t)out <= held);
}

int main(void)
{
	RUN(test_random_on_fake_pool);
	fk_uninstall();
	return CHECK_DONE();
}
