/* libc_syscall.c - libc's syscall() as the program calls it: the mapping calls it makes
 * through it (SBCL maps its heap with syscall(SYS_mmap, ...)) go to the runtime's
 * mmap, munmap, mprotect, madvise and mremap, as if it had called those, so that
 * memory of the heap's range is never unmapped or changed behind the runtime's back;
 * unshare and setns go to userns.c's; every other call goes to the kernel as libc's
 * would. The runtime's own calls never
 * come here (internal.h names sp_syscall; the program room's go through kern.c). With
 * kern.c, the one file of the room that makes a system call. */
#include <sched.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "internal.h"
#include "mmap.h"

#ifdef SP_HAVE_RAW_SYSCALL
#undef syscall

static long map_result(void *p)
{
	return p == MAP_FAILED ? -1 : (long)p;
}

EXPORT long syscall(long n, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, n);
	sp_syscall_args(ap, a);
	va_end(ap);
	switch (n) {
	case SYS_mmap:
		return map_result(mmap((void *)a[0], (size_t)a[1], (int)a[2], (int)a[3], (int)a[4],
				       (off_t)a[5]));
	case SYS_munmap:
		return munmap((void *)a[0], (size_t)a[1]);
	case SYS_mprotect:
		return mprotect((void *)a[0], (size_t)a[1], (int)a[2]);
	case SYS_madvise:
		return madvise((void *)a[0], (size_t)a[1], (int)a[2]);
	case SYS_mremap:
		return map_result(mremap((void *)a[0], (size_t)a[1], (size_t)a[2], (int)a[3],
					 (void *)a[4]));
	case SYS_unshare: /* (userns.c: the runtime's thread ended first) */
		return unshare((int)a[0]);
	case SYS_setns:
		return setns((int)a[0], (int)a[1]);
	default:
		return sp_syscall_a(n, a); /* (-1 and errno, as libc's) */
	}
}
#endif
