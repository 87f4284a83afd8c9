/* fork.c - the guard that keeps a forked child alive until the runtime's fork
 * handlers (life.c) have run, and clone without CLONE_VM run between those handlers.
 *
 * Under 2m and 1g, private hugetlb memory (the heap's units, the program's large
 * mappings on them, the break's steps) is never shared with a child: it is staged
 * and marked MADV_DONTFORK before fork, and the child copies it into THP memory of
 * its own (staging.c, brk.c). Until that copy is made the child has holes where that
 * memory was, and code runs in the child before the runtime's child handler: glibc's
 * own (the stdio list's locks, the name service's state, in a threaded program),
 * other libraries' child handlers registered before ours (jemalloc's, in redis), the
 * thread cache of a malloc made by one of them. So while hugetlb memory is staged, a
 * SIGSEGV handler stands guard: in the child, the first touch of a hole makes the
 * copy there and then (mmap, mremap, memcpy: all safe in a signal handler; the
 * runtime's locks are held by this very thread since prepare, and nothing else runs
 * in the child), and the touch is made again, now on memory. Any other SIGSEGV, and
 * any in the parent, goes to the handler the program had, as if the guard were not
 * there. The guard stands only across fork and only under 2m and 1g.
 *
 * clone without CLONE_VM is a fork that runs no handlers: the runtime's are run
 * around it, the child's first, on a stack of the runtime's, before the function it
 * was given runs on the stack it was given. (CLONE_VFORK without CLONE_VM is left
 * alone: the parent waits, and a vfork-style child execs.) */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "heap.h"
#include "internal.h"
#include "life.h"

#define EXPORT __attribute__((visibility("default")))

/* The guard's state, set by the forking thread under the runtime's locks. */
static struct {
	struct sigaction prior;         /* the program's SIGSEGV action while it stands */
	volatile sig_atomic_t guarding;
	pid_t forker;                   /* the process that armed it */
	volatile sig_atomic_t copied;   /* in the child: the hugetlb memory is its own */
} watch;

static bool in_range(uintptr_t a, bool (*range)(uintptr_t *, uintptr_t *))
{
	uintptr_t lo = 0, hi = 0;
	return range(&lo, &hi) && a >= lo && a < hi;
}

static bool heap_range(uintptr_t *lo, uintptr_t *hi)
{
	pages_range(lo, hi);
	return *hi > *lo;
}

/* The child's copy of its hugetlb memory, once (from the guard or the handler). */
void fork_guard_copy(void)
{
	if (watch.copied)
		return;
	watch.copied = 1;
	pages_fork_fixup();
	brk_fork_fixup();
	segs_fork_fixup();
}

static void guard(int sig, siginfo_t *si, void *ctx)
{
	int e = errno;
	uintptr_t a = (uintptr_t)si->si_addr;
	if (!watch.copied && getpid() != watch.forker &&
	    (in_range(a, heap_range) || in_range(a, brk_range) || segs_hold(a))) {
		fork_guard_copy();
		errno = e;
		return; /* the touch is made again, on memory now */
	}
	errno = e;
	if (watch.prior.sa_flags & SA_SIGINFO) {
		watch.prior.sa_sigaction(sig, si, ctx);
	} else if (watch.prior.sa_handler != SIG_DFL && watch.prior.sa_handler != SIG_IGN) {
		watch.prior.sa_handler(sig);
	} else {
		/* The program's action is the default: it is put back, and the fault,
		 * made again, ends the process as it would have. */
		sigaction(SIGSEGV, &watch.prior, NULL);
	}
}

void fork_guard_arm(void)
{
	struct sigaction sa;
	sa.sa_sigaction = guard;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	watch.forker = getpid();
	watch.copied = 0;
	if (sigaction(SIGSEGV, &sa, &watch.prior) == 0)
		watch.guarding = 1;
}

/* The program's action back, unless it set another meanwhile. */
void fork_guard_disarm(void)
{
	struct sigaction now;
	if (!watch.guarding)
		return;
	watch.guarding = 0;
	if (sigaction(SIGSEGV, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
	    now.sa_sigaction == guard)
		sigaction(SIGSEGV, &watch.prior, NULL);
}

/* ---------- clone without CLONE_VM ---------- */

struct clone_call {
	int (*fn)(void *);
	void *arg;
	void *stack;        /* the caller's stack for the child */
	char *first;        /* the runtime's stack for the child's first steps */
};

#define FIRST_STACK (64u << 10)
static struct clone_call child_call; /* the child's own copy, set by clone_start */

/* On the caller's stack, now the child's own memory: the first stack goes, and the
 * function runs; its value is the child's exit status, as clone has it. */
static void clone_run(void)
{
	sp_os->munmap(child_call.first, FIRST_STACK);
	syscall(SYS_exit, child_call.fn(child_call.arg));
}

/* The child's first steps, on a stack of the runtime's: the caller's stack may lie in
 * hugetlb memory that is a hole in the child until the handlers have run, and glibc's
 * clone puts fn and arg on the stack it is given. Then on to the caller's stack. */
static int clone_start(void *p)
{
	ucontext_t uc;
	child_call = *(struct clone_call *)p;
	rt_fork_child();
	if (getcontext(&uc) < 0)
		return 127;
	/* makecontext starts at ss_sp + ss_size: the top of the caller's stack. */
	uc.uc_stack.ss_sp = (char *)child_call.stack - 256;
	uc.uc_stack.ss_size = 256;
	uc.uc_link = NULL;
	makecontext(&uc, clone_run, 0);
	setcontext(&uc);
	return 127;
}

EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	static int (*real)(int (*)(void *), void *, int, void *, ...);
	int (*f)(int (*)(void *), void *, int, void *, ...) =
		__atomic_load_n(&real, __ATOMIC_RELAXED);
	va_list ap;
	void *first;
	/* As glibc's clone, the three optional arguments are passed on whatever the
	 * flags: the kernel reads only those they name. */
	va_start(ap, arg);
	pid_t *ptid = va_arg(ap, pid_t *);
	void *tls = va_arg(ap, void *);
	pid_t *ctid = va_arg(ap, pid_t *);
	va_end(ap);
	if (!f) {
		f = (int (*)(int (*)(void *), void *, int, void *, ...))dlsym(RTLD_NEXT, "clone");
		if (!f) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&real, f, __ATOMIC_RELAXED);
	}
	if ((flags & (CLONE_VM | CLONE_VFORK)) || !fn || !stack ||
	    sp_os->mmap(NULL, FIRST_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0, &first) < 0)
		return f(fn, stack, flags, arg, ptid, tls, ctid);
	struct clone_call c = { fn, arg, stack, first };
	rt_fork_prepare();
	int r = f(clone_start, (char *)first + FIRST_STACK, flags, &c, ptid, tls, ctid);
	int e = errno;
	rt_fork_parent();
	sp_os->munmap(first, FIRST_STACK);
	errno = e;
	return r;
}
