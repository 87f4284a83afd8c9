/* say.c - what the runtime says on stderr: one-line messages, each fall once, and the
 * abort on a broken heap. It runs inside other programs, perhaps inside malloc: no
 * malloc, no stdio (out.c into a stack buffer, then one write), errno left as it was. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "out.h"
#include "runtime.h"

#define MSG_MAX 512      /* one message line */

/* "superpage: [pid N: ]MESSAGE\n" on stderr in one write. */
static void say(bool with_pid, const char *fmt, va_list ap)
{
	char buf[MSG_MAX];
	struct out o = { buf, 0, sizeof buf - 1, false };
	size_t from;

	put_str(&o, "superpage: ");
	if (with_pid)
		put_fmt(&o, "pid %d: ", (int)getpid());
	from = o.len;
	put_vfmt(&o, fmt, ap);
	one_line(&o, from);
	if (o.cut)
		memcpy(buf + o.len - 3, "...", 3);
	buf[o.len++] = '\n';
	write_all(2, buf, o.len);
}

void rt_say(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	say(false, fmt, ap);
	va_end(ap);
	errno = e;
}

void rt_verbose(int level, const char *fmt, ...)
{
	int e = errno;
	const struct sp_options *opt = rt_options();
	va_list ap;

	if (opt && opt->verbose >= level) {
		va_start(ap, fmt);
		say(false, fmt, ap);
		va_end(ap);
	}
	errno = e;
}

_Static_assert(SP_BACKING_COUNT * SP_FALL_COUNT <= 64, "one bit per (rung, reason)");

/* The (rung, reason) pairs said already, and the process they were said in: a
 * forked child starts afresh. */
static struct rt_said falls_said;

/* The rung below on the ladder 1G -> 2M -> THP -> base pages. */
static const char *rung_below(enum sp_backing rung)
{
	switch (rung) {
	case SP_BACKING_1G:
		return "2m";
	case SP_BACKING_2M:
		return "thp";
	case SP_BACKING_THP:
		return "4k";
	default:
		return NULL;
	}
}

static void say_pid(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_pid(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(true, fmt, ap);
	va_end(ap);
}

/* This thread's last fall, which a split that follows it stands for. */
static __thread enum sp_fall last_fall = SP_FALL_COUNT;

void rt_fall(enum sp_backing rung, enum sp_fall why)
{
	int e = errno;
	const struct sp_options *opt = rt_options();
	uint64_t bit;
	int me;

	/* Counted for the tree, for superpage run to say once without --verbose. */
	rt_run_fall(rung, why);
	last_fall = why;
	if (!opt || opt->verbose < 1 || (unsigned)rung >= SP_BACKING_COUNT ||
	    (unsigned)why >= SP_FALL_COUNT)
		goto out;
	me = (int)getpid();
	if (atomic_load_explicit(&falls_said.pid, memory_order_acquire) != me) {
		atomic_store(&falls_said.bits, 0);
		atomic_store_explicit(&falls_said.pid, me, memory_order_release);
	}
	bit = 1ull << ((unsigned)rung * SP_FALL_COUNT + (unsigned)why);
	if (atomic_fetch_or(&falls_said.bits, bit) & bit)
		goto out;
	if (rung_below(rung))
		say_pid("%s unavailable (%s), falling back to %s", sp_backing_name(rung),
			sp_fall_name(why), rung_below(rung));
	else
		say_pid("%s unavailable (%s), no rung below it", sp_backing_name(rung),
			sp_fall_name(why));
out:
	errno = e;
}

void rt_fall_split(size_t wanted, size_t had, enum sp_backing rest)
{
	int e = errno;
	static _Atomic int said;

	rt_run_split(wanted, had, rest, last_fall);
	last_fall = SP_FALL_COUNT;
	/* (Unasked, superpage run says it once the program has ended: a program's
	 * stderr is its own while it runs, and programs check it: CPython's test_json
	 * does.) */
	if (rt_options()->verbose >= 1 && !atomic_exchange(&said, 1))
		rt_say("2m: %zu MiB wanted %zu pages of 2 MiB and the pool had %zu free: %zu on "
		       "hugetlb pages, the other %zu on %s (said once)", wanted * 2, wanted, had, had,
		       wanted - had, sp_backing_name(rest));
	errno = e;
}

void rt_abort(const char *fmt, ...)
{
	struct sigaction sa;
	sigset_t set;
	va_list ap;

	va_start(ap, fmt);
	say(true, fmt, ap);
	va_end(ap);
	/* A program's SIGABRT handler must not run on a broken heap, nor a mask hide it. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGABRT);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	abort();
}

