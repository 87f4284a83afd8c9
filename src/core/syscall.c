/* syscall.c - the kernel's system calls without libc's syscall(), which the runtime
 * interposes (src/runtime/program/libc_syscall.c: a program that maps its memory with
 * syscall(SYS_mmap, ...), as SBCL does, gets the runtime's mmap): the core's and the
 * runtime's own calls must not come back into it. internal.h names this syscall. */
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "internal.h"

#if defined(__x86_64__)
static long raw6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
static long raw6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}
#endif

long sp_syscall_raw(long n, long a, long b, long c, long d, long e, long f)
{
#ifdef SP_HAVE_RAW_SYSCALL
	return raw6(n, a, b, c, d, e, f);
#else
#undef syscall
	long r = syscall(n, a, b, c, d, e, f);
	return r == -1 ? -errno : r;
#endif
}

void sp_syscall_args(va_list ap, long a[6])
{
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
}

long sp_syscall(long n, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, n);
	sp_syscall_args(ap, a);
	va_end(ap);
	return sp_syscall_a(n, a);
}

long sp_syscall_a(long n, const long a[6])
{
	long r = sp_syscall_raw(n, a[0], a[1], a[2], a[3], a[4], a[5]);
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return r;
}
