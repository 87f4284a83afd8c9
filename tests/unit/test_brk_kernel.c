/* test_brk_kernel.c - the program break left to the kernel (brk.c under --backing 4k):
 * sbrk and brk pass the kernel's break on through the seam (the fake kernel's break
 * here, an address with no memory behind it), with glibc's results and errno, and
 * the account counts what the break grew. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "life.h"
#include "program/program.h"
#include "runtime.h"

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_setup(0, 0);
	setenv("SUPERPAGE_BACKING", "4k", 1);
}

static void test_kernel_break(void)
{
	struct rt_stats st;
	uintptr_t lo, hi;
	CHECK(rt_init());
	uintptr_t start = fk_brk_now();
	CHECK_EQ((uintptr_t)sbrk(0), start);
	CHECK(!brk_range(&lo, &hi));
	CHECK_EQ((uintptr_t)sbrk(8192), start);
	CHECK_EQ(fk_brk_now(), start + 8192);
	CHECK_EQ((uintptr_t)sbrk(0), start + 8192);
	CHECK_EQ(brk((void *)(start + 4096)), 0);
	CHECK_EQ(fk_brk_now(), start + 4096);
	/* The kernel refuses (past its limit): ENOMEM, nothing moved. */
	fk_brk_max(1 << 20);
	errno = 0;
	CHECK(sbrk(2 << 20) == (void *)-1);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK_EQ(brk((void *)(start + (2 << 20))), -1);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(fk_brk_now(), start + 4096);
	memset(&st, 0, sizeof st);
	rt_brk_stats(&st);
	CHECK(st.brk_used && !st.brk_emulated);
	CHECK_EQ(st.brk_bytes, 4096);
	CHECK_EQ(st.brk_peak, 8192);
}

int main(void)
{
	RUN(test_kernel_break);
	fk_uninstall();
	return CHECK_DONE();
}
