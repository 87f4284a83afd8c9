/* interpose.c - the malloc API as the program sees it, served by the runtime's heap;
 * and dlopen, so that no library the program loads reaches glibc's malloc instead. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/pageheap.h"
#include "runtime.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t size)
{
	return rt_malloc(size);
}

EXPORT void free(void *p)
{
	rt_free(p);
}

EXPORT void cfree(void *p)
{
	rt_free(p);
}

EXPORT void *calloc(size_t n, size_t size)
{
	return rt_calloc(n, size);
}

EXPORT void *realloc(void *p, size_t size)
{
	return rt_realloc(p, size);
}

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return rt_realloc(p, total);
}

EXPORT void *memalign(size_t align, size_t size)
{
	/* glibc rounds an alignment that is not a power of two up to one. */
	if (align & (align - 1)) {
		size_t a = 1;
		while (a < align && a)
			a <<= 1;
		if (!a) {
			errno = EINVAL;
			return NULL;
		}
		align = a;
	}
	return rt_memalign(align, size);
}

/* glibc before 2.38 answers aligned_alloc as memalign, whatever the alignment (an odd
 * one rounded up to a power of two, 0 taken as none): programs built against it rely
 * on that, and this runtime runs on such a glibc. */
EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return memalign(align, size);
}

/* The error is returned, as POSIX has it; out of memory, errno is ENOMEM as well, as
 * glibc leaves it (programs read either). */
EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	int saved = errno;
	void *p = rt_memalign(align, size);
	if (!p) {
		errno = ENOMEM;
		return ENOMEM;
	}
	errno = saved;
	*out = p;
	return 0;
}

EXPORT void *valloc(size_t size)
{
	return rt_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

EXPORT void *pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t rounded;
	if (__builtin_add_overflow(size, page - 1, &rounded)) {
		errno = ENOMEM;
		return NULL;
	}
	rounded &= ~(page - 1);
	return rt_memalign(page, rounded ? rounded : page);
}

EXPORT size_t malloc_usable_size(void *p)
{
	return rt_usable_size(p);
}

/* Benign answers: nothing to tune, nothing held back that trim could return (empty
 * units go back whole as they empty). */
EXPORT int mallopt(int param, int value)
{
	(void)param;
	(void)value;
	return 1;
}

EXPORT int malloc_trim(size_t pad)
{
	(void)pad;
	return 0;
}

EXPORT struct mallinfo2 mallinfo2(void)
{
	struct mallinfo2 mi;
	struct rt_stats st;
	memset(&mi, 0, sizeof mi);
	rt_stats_get(&st);
	uint64_t mapped = 0;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		mapped += st.units[b];
	mi.arena = (size_t)(mapped * UNIT_SIZE);
	mi.hblks = (size_t)st.large_blocks;
	mi.hblkhd = (size_t)st.large_bytes;
	mi.uordblks = (size_t)st.in_use;
	mi.fordblks = mi.arena > mi.uordblks ? mi.arena - mi.uordblks : 0;
	return mi;
}

EXPORT struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo mi;
	memset(&mi, 0, sizeof mi);
	mi.arena = (int)m2.arena;
	mi.hblks = (int)m2.hblks;
	mi.hblkhd = (int)m2.hblkhd;
	mi.uordblks = (int)m2.uordblks;
	mi.fordblks = (int)m2.fordblks;
	return mi;
}

EXPORT void malloc_stats(void)
{
	rt_report_asked(2);
}

EXPORT int malloc_info(int options, FILE *f)
{
	(void)f;
	if (options != 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* glibc's internal names, used by some programs and libraries to reach malloc. */
EXPORT void *__libc_malloc(size_t size) { return rt_malloc(size); }
EXPORT void __libc_free(void *p) { rt_free(p); }
EXPORT void *__libc_calloc(size_t n, size_t size) { return rt_calloc(n, size); }
EXPORT void *__libc_realloc(void *p, size_t size) { return rt_realloc(p, size); }
EXPORT void *__libc_memalign(size_t align, size_t size) { return memalign(align, size); }

/* ---------- dlopen without RTLD_DEEPBIND ----------
 * A library opened with RTLD_DEEPBIND looks up symbols in itself and its own
 * dependencies first: libc's malloc family before ours, which are found only in the
 * global scope. Such a library (PHP's extensions, for one) would hand glibc's free a
 * block of ours, or ours one of glibc's, and the program would crash. The flag is
 * dropped: the library then binds like any other, to the program's malloc, and to the
 * first definition in the global scope of any symbol it shares with another library
 * (what deep binding was asked for to avoid; said once under --verbose). A new link
 * namespace (dlmopen's LM_ID_NEWLM) has a libc of its own and its own malloc, ours
 * not among them: its libraries keep the flag. */
static struct rt_said said_deepbind;

static int shallow(const char *file, int flags)
{
	if (!(flags & RTLD_DEEPBIND))
		return flags;
	if (rt_say_now(&said_deepbind, rt_options()->verbose, 0))
		rt_say("%s asked for RTLD_DEEPBIND, opened without it: its malloc calls must "
		       "reach the runtime's heap, not glibc's", file ? file : "(main program)");
	return flags & ~RTLD_DEEPBIND;
}

/* glibc's dlopen finds its caller by its return address: the object whose RUNPATH and
 * $ORIGIN the search uses, and the namespace the library goes into. So the real one
 * must be reached by a jump, with the program's return address on the stack, not by a
 * call from here: on x86-64 the entry points are a few instructions that take the
 * flags from sp_dl_flags and jump; elsewhere a C tail call, which the compiler makes
 * one at -O2 (tests/runtime/interplay/test_interplay.sh's deepbind_runpath sees if it did not). */
__attribute__((used)) void *sp_real_dlopen, *sp_real_dlmopen;

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

__attribute__((used)) int sp_dl_flags(const char *file, int flags)
{
	if (!__atomic_load_n(&sp_real_dlopen, __ATOMIC_ACQUIRE))
		__atomic_store_n(&sp_real_dlopen, next("dlopen"), __ATOMIC_RELEASE);
	return shallow(file, flags);
}

__attribute__((used)) int sp_dlm_flags(Lmid_t lmid, const char *file, int flags)
{
	if (!__atomic_load_n(&sp_real_dlmopen, __ATOMIC_ACQUIRE))
		__atomic_store_n(&sp_real_dlmopen, next("dlmopen"), __ATOMIC_RELEASE);
	return lmid == LM_ID_BASE ? shallow(file, flags) : flags;
}

#if defined(__x86_64__)
/* dlopen(rdi file, esi flags); dlmopen(rdi lmid, rsi file, edx flags). The arguments
 * are kept across the call (three pushes: the stack 16-byte aligned at it). */
__asm__(".text\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	"dlopen:\n"
	"	endbr64\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	sub $8, %rsp\n"
	"	call sp_dl_flags\n"
	"	add $8, %rsp\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	mov %eax, %esi\n"
	"	jmp *sp_real_dlopen(%rip)\n"
	".size dlopen, .-dlopen\n"
	".globl dlmopen\n"
	".type dlmopen, @function\n"
	"dlmopen:\n"
	"	endbr64\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	push %rdx\n"
	"	call sp_dlm_flags\n"
	"	pop %rdx\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	mov %eax, %edx\n"
	"	jmp *sp_real_dlmopen(%rip)\n"
	".size dlmopen, .-dlmopen\n");
#else
EXPORT void *dlopen(const char *file, int flags)
{
	flags = sp_dl_flags(file, flags);
	return ((void *(*)(const char *, int))sp_real_dlopen)(file, flags);
}

EXPORT void *dlmopen(Lmid_t lmid, const char *file, int flags)
{
	flags = sp_dlm_flags(lmid, file, flags);
	return ((void *(*)(Lmid_t, const char *, int))sp_real_dlmopen)(lmid, file, flags);
}
#endif

/* pthread_atfork (a stub of libc_nonshared.a in the caller) and glibc's own callers
 * register here: the runtime's fork handlers go first, so they run around the fork
 * itself (life.c). */
EXPORT int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			     void *dso)
{
	return life_register_atfork(prepare, parent, child, dso);
}
