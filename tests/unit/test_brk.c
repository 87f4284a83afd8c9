/* test_brk.c - the emulated program break (brk.c) on the fake kernel, under 2m with a
 * pool of 8 pages: sbrk and brk as the program calls them, the break's 2 MiB steps on
 * hugetlb pages from the pool and back to it when the break comes down, THP when the
 * pool refuses, and the program's MADV_DONTNEED on a hugetlb step. The fake kernel is
 * in place before the runtime starts (a constructor of a higher priority than its). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "life.h"
#include "program/program.h"
#include "runtime.h"

#define MB ((uintptr_t)1 << 20)
#define POOL 8

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_setup(POOL, 0);
	setenv("SUPERPAGE_BACKING", "2m", 1);
}

static uintptr_t lo; /* where the break started */

/* The break's own account (rt_brk_stats), its falls as they are counted for it. */
static void brk_stats(struct rt_stats *st)
{
	memset(st, 0, sizeof *st);
	rt_brk_stats(st);
}

static uint64_t brk_falls(void)
{
	struct rt_stats st;
	uint64_t n = 0;
	brk_stats(&st);
	for (int f = 0; f < SP_FALL_COUNT; f++)
		n += st.falls[SP_BACKING_2M][f];
	return n;
}

/* Growing: whole 2 MiB steps on hugetlb pages, taken from the pool; the kernel's own
 * break is never asked. */
static void test_grow_on_hugetlb(void)
{
	struct fk_map_info m;
	struct rt_stats st;
	CHECK(rt_init());
	lo = (uintptr_t)sbrk(0);
	CHECK(lo != (uintptr_t)-1);
	CHECK_EQ(lo % (2 * MB), 0);
	CHECK_EQ((uintptr_t)sbrk(3 * MB), lo);
	CHECK_EQ((uintptr_t)sbrk(0), lo + 3 * MB);
	memset((void *)lo, 0xab, 3 * MB);
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 2);
	CHECK(fk_map_find((void *)lo, &m) == 0 && m.hpage == 2 * MB);
	CHECK(fk_map_find((void *)(lo + 2 * MB), &m) == 0 && m.hpage == 2 * MB);
	CHECK_EQ(fk_brk_calls(), 0);
	brk_stats(&st);
	CHECK(st.brk_used && st.brk_emulated);
	CHECK_EQ(st.brk_bytes, 3 * MB);
	uintptr_t lo2;
	CHECK(brk_range(&lo2, &(uintptr_t){ 0 }) && lo2 == lo);
}

/* Lowering the break: the step above it goes back to the pool; the step it is in stays
 * (a hugetlb page cannot be cut) with what lies above the break zeroed, the bytes
 * below it kept. */
static void test_shrink_gives_back(void)
{
	CHECK_EQ(brk((void *)(lo + 100)), 0);
	CHECK_EQ((uintptr_t)sbrk(0), lo + 100);
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 1);
	CHECK_EQ(((unsigned char *)lo)[99], 0xab);
	CHECK_EQ(((unsigned char *)lo)[8192], 0);
	CHECK_EQ(((unsigned char *)lo)[2 * MB - 1], 0);
	/* Below the start nothing moves, and that is no error (as the kernel's). */
	CHECK_EQ(brk((void *)(lo - 4096)), 0);
	CHECK_EQ((uintptr_t)sbrk(0), lo + 100);
}

/* The program's MADV_DONTNEED on a hugetlb step: the runtime zeroes it, the kernel is
 * not asked (it would drop the whole huge page). */
static void test_dontneed_on_hugetlb_step(void)
{
	((unsigned char *)lo)[50] = 7;
	int before = fk_madvise_calls(MADV_DONTNEED);
	CHECK_EQ(brk_advise(lo, 4096, MADV_DONTNEED), 0);
	CHECK_EQ(((unsigned char *)lo)[50], 0);
	CHECK_EQ(fk_madvise_calls(MADV_DONTNEED), before);
}

/* The pool refuses: the break still grows, on THP (advised huge), and the fall is
 * counted. */
static void test_pool_refuses(void)
{
	struct fk_map_info m;
	uint64_t falls = brk_falls();
	fk_mmap_fail_huge(2 * MB, ENOMEM);
	CHECK_EQ((uintptr_t)sbrk(4 * MB), lo + 100);
	memset((void *)(lo + 2 * MB), 1, 2 * MB);
	CHECK(fk_map_find((void *)(lo + 2 * MB), &m) == 0);
	CHECK_EQ(m.hpage, 0);
	CHECK_EQ(m.advice, 1);
	CHECK(m.prot & PROT_WRITE);
	CHECK(brk_falls() > falls);
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 1);
	fk_mmap_fail_huge(2 * MB, 0);
}

/* Past the range, or below address 0: ENOMEM, the break unchanged. */
static void test_too_far(void)
{
	uintptr_t now = (uintptr_t)sbrk(0);
	errno = 0;
	CHECK(sbrk((intptr_t)1 << 62) == (void *)-1);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(sbrk(-(intptr_t)now - 1) == (void *)-1);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ((uintptr_t)sbrk(0), now);
}

int main(void)
{
	RUN(test_grow_on_hugetlb);
	RUN(test_shrink_gives_back);
	RUN(test_dontneed_on_hugetlb_step);
	RUN(test_pool_refuses);
	RUN(test_too_far);
	fk_uninstall();
	return CHECK_DONE();
}
