/* clone.c - clone without CLONE_VM is a fork that runs no fork handlers: the
 * runtime's are run around it, the child's first, on a stack of the runtime's, before
 * the function it was given runs on the stack it was given. (CLONE_VFORK without
 * CLONE_VM is left alone: the parent waits, and a vfork-style child execs.) */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "internal.h"
#include "life.h"
#include "life_os.h"

#define EXPORT __attribute__((visibility("default")))

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
	life_unmap(child_call.first, FIRST_STACK);
	life_exit_thread(child_call.fn(child_call.arg));
}

/* The child's first steps, on a stack of the runtime's: the caller's stack may lie in
 * hugetlb memory, which the child shares with its parent until the child handler has
 * copied it (a write to it before then takes a page from the pool, which may have
 * none), and glibc's clone puts fn and arg on the stack it is given. Then on to the
 * caller's stack. */
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
	    life_map(FIRST_STACK, &first) < 0)
		return f(fn, stack, flags, arg, ptid, tls, ctid);
	struct clone_call c = { fn, arg, stack, first };
	rt_fork_prepare();
	int r = f(clone_start, (char *)first + FIRST_STACK, flags, &c, ptid, tls, ctid);
	int e = errno;
	errno = r < 0 ? e : 0; /* as fork's parent handler finds it: 0 if there is a child */
	rt_fork_parent();
	life_unmap(first, FIRST_STACK);
	errno = e;
	return r;
}
