/* userns.c - the calls the kernel refuses to a process with more than one thread:
 * unshare(CLONE_NEWUSER) (and CLONE_THREAD, CLONE_SIGHAND, CLONE_VM) and setns into
 * a user namespace. Under auto, dense by touch, the runtime may run a thread of its
 * own (the looks', pageheap/touched.c); a program that is single-threaded for such a
 * call must not find it there. So each call ends that thread first, waits until the
 * kernel has let it go, starts none while it runs, and is then the program's. */
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>

#include "internal.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"

#define EXPORT __attribute__((visibility("default")))
#define GONE_TRIES 100000 /* looks at the thread's id, each one system call */

typedef int (*unshare_fn)(int);
typedef int (*setns_fn)(int, int);

/* The looks' thread ended, and gone from the kernel's thread group: pthread_join
 * returns when the thread cleared its id, a little before the kernel unlinks it. */
static void looks_pause(void)
{
	pid_t tid = pages_looks_pause();
	for (int i = 0; tid > 0 && i < GONE_TRIES && !kern_thread_gone(tid); i++)
		;
}

EXPORT int unshare(int flags)
{
	static unshare_fn real;
	if (!real && !(real = (unshare_fn)dlsym(RTLD_NEXT, "unshare"))) {
		errno = ENOSYS;
		return -1;
	}
	if (!(flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)))
		return real(flags);
	looks_pause();
	int r = real(flags), e = errno;
	pages_looks_resume();
	errno = e;
	return r;
}

/* (Any setns: whether fd is a user namespace's is not known without a call.) */
EXPORT int setns(int fd, int nstype)
{
	static setns_fn real;
	if (!real && !(real = (setns_fn)dlsym(RTLD_NEXT, "setns"))) {
		errno = ENOSYS;
		return -1;
	}
	looks_pause();
	int r = real(fd, nstype), e = errno;
	pages_looks_resume();
	errno = e;
	return r;
}
