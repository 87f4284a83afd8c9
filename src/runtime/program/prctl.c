/* prctl.c - a program that turns THP off for itself (PR_SET_THP_DISABLE; Ruby does at
 * start).
 *
 * The user ran the program under superpage to have huge pages. By default the
 * program's wish holds for its own memory and not for the runtime's: the switch is set
 * with PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18), which leaves THP to memory advised
 * MADV_HUGEPAGE (the runtime's units and mappings) and takes it from the rest; the
 * program reads back the 1 it set. With SUPERPAGE_HONOUR_THP_DISABLE=yes (--honour-thp-
 * disable), or on a kernel without that flag, the switch is set as asked, and the
 * runtime's THP memory stays on base pages from then on: a fall counted (thp_off),
 * never a silent one. Said once under --verbose. A switch the process inherited turned
 * off for all (set outside superpage, or by --backing 4k for its baseline) is left as
 * it is, and the program's own call does not loosen it; the pages' probe counts that
 * fall at start (thp_off). One turned the superpage way is inherited that way. */
#include <errno.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "life.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"
#include "runtime.h"

#define EXPORT __attribute__((visibility("default")))

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1ul << 1)
#endif

static struct rt_said said;
static int asked = -1; /* what the program set, when the kernel holds something else */

/* The kernel's prctl as libc's: -1 and errno for an error. */
static long raw_prctl(int op, unsigned long a2, unsigned long a3, unsigned long a4,
		      unsigned long a5)
{
	long r = kern_prctl(op, a2, a3, a4, a5);
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* THP off for the whole process, as asked: the runtime's THP memory falls with it. */
static void thp_off_for_all(const char *why)
{
	pages_note_fall(SP_BACKING_THP, SP_FALL_THP_OFF);
	if (rt_say_now(&said, rt_options()->verbose, 0))
		rt_say("pid %d: %s: the heap's THP memory stays on base pages from now on",
		       (int)getpid(), why);
}

/* Off for the program's memory, on for the runtime's: 0, or -1 where the kernel has
 * no PR_THP_DISABLE_EXCEPT_ADVISED (errno EINVAL). */
static int thp_off_but_ours(const char *why)
{
	if (kern_prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) < 0)
		return -1;
	if (rt_say_now(&said, rt_options()->verbose, 0))
		rt_say("pid %d: %s: THP stays off for its own memory, on for the heap's "
		       "(SUPERPAGE_HONOUR_THP_DISABLE=yes to turn it off for all)",
		       (int)getpid(), why);
	return 0;
}

EXPORT int prctl(int op, ...)
{
	va_list ap;
	va_start(ap, op);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (op == PR_GET_THP_DISABLE && asked >= 0 && !a2 && !a3 && !a4 && !a5) {
		long now = raw_prctl(op, 0, 0, 0, 0);
		if (now == (long)(1 | PR_THP_DISABLE_EXCEPT_ADVISED))
			return asked;
		return (int)now;
	}
	if (op != PR_SET_THP_DISABLE || !rt_init())
		return (int)raw_prctl(op, a2, a3, a4, a5);
	if (a2 == 1 && a3 == 0 && !a4 && !a5 && !rt_options()->honour_thp_disable &&
	    rt_options()->backing != SP_BACKING_4K && raw_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 1 &&
	    thp_off_but_ours("the program turned THP off (PR_SET_THP_DISABLE)") == 0) {
		asked = 1;
		return 0;
	}
	long r = raw_prctl(op, a2, a3, a4, a5);
	if (r == 0) {
		asked = -1;
		if (a2 == 1 && !(a3 & PR_THP_DISABLE_EXCEPT_ADVISED))
			thp_off_for_all("the program turned THP off (PR_SET_THP_DISABLE)");
	}
	return (int)r;
}
