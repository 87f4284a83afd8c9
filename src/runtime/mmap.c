/* mmap.c - the program's private anonymous mappings: large ones aligned to 2 MiB and
 * advised per policy (the seed's vm_align), small ones (arenas of other allocators,
 * such as CPython's) served from the heap's huge units, with munmap, mprotect,
 * madvise and mremap on them kept as the kernel would have them. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>

#include "heap.h"
#include "internal.h"
#include "shm.h"

#define EXPORT __attribute__((visibility("default")))

static void *fail(int err)
{
	errno = err;
	return MAP_FAILED;
}

static bool in_heap(const void *addr, size_t len)
{
	uintptr_t lo, hi, a = (uintptr_t)addr;
	pages_range(&lo, &hi);
	return a < hi && a + len > lo;
}

/* Flags we take: a private anonymous read-write mapping the program lets us place.
 * Stacks, fixed addresses, PROT_NONE reservations, executable memory, hugetlb,
 * locked and 32-bit mappings are left exactly as asked. */
static bool ours(int prot, int flags)
{
	const int plain = MAP_PRIVATE | MAP_ANONYMOUS;
	const int allowed = plain | MAP_NORESERVE | MAP_POPULATE;
	return prot == (PROT_READ | PROT_WRITE) && (flags & ~allowed) == 0 &&
	       (flags & plain) == plain;
}

static void *small_map(size_t len)
{
	size_t np = (len + PAGE_SIZE - 1) >> PAGE_SHIFT;
	struct span *s = pages_alloc_run(np, 1, SPAN_MMAP);
	if (!s)
		return NULL;
	/* The kernel's anonymous memory reads as zero; recycled pages must too. */
	memset((void *)s->start, 0, np << PAGE_SHIFT);
	pages_note_mmap(false);
	return (void *)s->start;
}

static void *large_map(size_t len, int flags)
{
	const struct sp_options *o = rt_options();
	size_t rounded = (len + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	void *m;
	int r = sp_map_aligned(rounded, UNIT_SIZE, PROT_READ | PROT_WRITE, flags & ~MAP_POPULATE, &m);
	if (r < 0)
		return fail(-r);
	uintptr_t a = (uintptr_t)m;
	sp_os->madvise((void *)a, rounded,
		       o->backing == SP_BACKING_4K ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
	if (flags & MAP_POPULATE)
		sp_os->madvise((void *)a, rounded, MADV_POPULATE_WRITE);
	pages_note_mmap(true);
	return (void *)a;
}

static void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *out;
	int r = sp_os->mmap(addr, len, prot, flags, fd, off, &out);
	return r < 0 ? fail(-r) : out;
}

/* A fixed mapping into the heap's range: allowed where the program owns every page
 * (mappings it had from us), which then go back to plain memory when it unmaps them;
 * anywhere else it would destroy the heap under the program's feet. */
static bool fixed_into_heap_refused(void *addr, size_t len)
{
	if (!rt_init() || !in_heap(addr, len))
		return false;
	if (pages_program_owns((uintptr_t)addr, len))
		return false;
	rt_verbose(1, "refused a fixed mapping at %p over the heap's memory", addr);
	return true;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (flags & MAP_FIXED) {
		if (fixed_into_heap_refused(addr, len))
			return fail(EINVAL);
		void *r = real_mmap(addr, len, prot, flags, fd, off);
		if (r != MAP_FAILED && in_heap(addr, len))
			pages_note_foreign((uintptr_t)addr, len);
		return r;
	}
	if (!addr && (flags & (MAP_TYPE | MAP_ANONYMOUS)) == (MAP_SHARED | MAP_ANONYMOUS)) {
		void *shared = shm_map(len, prot, flags); /* --shm: on hugetlb, or NULL */
		if (shared)
			return shared;
	}
	if (addr || len == 0 || !ours(prot, flags) || !rt_init())
		return real_mmap(addr, len, prot, flags, fd, off);
	const struct sp_options *o = rt_options();
	if (len >= o->min && o->min)
		return large_map(len, flags);
	/* Not from hugetlb units (2m, 1g): the kernel cannot split those at 4 KiB, so a
	 * program's mprotect or MAP_FIXED on part of its mapping would fail. */
	bool hugetlb = o->backing == SP_BACKING_2M || o->backing == SP_BACKING_1G;
	if (o->heap && !hugetlb && len >= o->arena_min && o->arena_min && len <= UNIT_SIZE) {
		void *p = small_map(len);
		if (p)
			return p;
	}
	return real_mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

EXPORT int munmap(void *addr, size_t len)
{
	if ((uintptr_t)addr & (PAGE_SIZE - 1) || len == 0) {
		errno = EINVAL;
		return -1;
	}
	if (rt_init() && in_heap(addr, len)) {
		/* Only what the program mapped from us goes; the heap's own pages stay
		 * (the kernel would have unmapped them, and the program would then crash
		 * on its next malloc: we do not help it do that). What lies outside the
		 * heap's range goes as the kernel would have it. */
		uintptr_t lo, hi, a = (uintptr_t)addr, end = a + len;
		pages_range(&lo, &hi);
		uintptr_t in0 = a > lo ? a : lo, in1 = end < hi ? end : hi;
		pages_unmap(in0, in1 - in0);
		if (a < lo)
			sp_os->munmap(addr, lo - a);
		if (end > hi)
			sp_os->munmap((void *)hi, end - hi);
		return 0;
	}
	int r = sp_os->munmap(addr, len);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

EXPORT int mprotect(void *addr, size_t len, int prot)
{
	int r = sp_os->mprotect(addr, len, prot);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	if (rt_init() && in_heap(addr, len))
		pages_note_foreign((uintptr_t)addr, len);
	return 0;
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	if (rt_init() && in_heap(addr, len) &&
	    (advice == MADV_DONTNEED || advice == MADV_FREE || advice == MADV_REMOVE)) {
		/* On a hugetlb unit a partial DONTNEED is refused by the kernel; what the
		 * program may rely on is that the pages read as zero afterwards. */
		size_t l = (len + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
		enum sp_backing b = rt_options()->backing;
		bool hugetlb = b == SP_BACKING_2M || b == SP_BACKING_1G;
		if (advice == MADV_DONTNEED && hugetlb) {
			memset(addr, 0, l);
			return 0;
		}
		if (advice == MADV_FREE && hugetlb)
			return 0;
	}
	int r = sp_os->madvise(addr, len, advice);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	void *new_addr = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if ((flags & MREMAP_FIXED) && fixed_into_heap_refused(new_addr, new_len))
		return fail(EINVAL);
	if (!rt_init() || !in_heap(old, old_len ? old_len : 1)) {
		void *out;
		int r = sp_os->mremap(old, old_len, new_len, flags, new_addr, &out);
		if (r == 0 && (flags & MREMAP_FIXED) && in_heap(new_addr, new_len))
			pages_note_foreign((uintptr_t)new_addr, new_len);
		return r < 0 ? fail(-r) : out;
	}
	/* A mapping the heap serves: resized by hand, as the kernel would. */
	if ((uintptr_t)old & (PAGE_SIZE - 1) || new_len == 0)
		return fail(EINVAL);
	size_t o = (old_len + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	size_t n = (new_len + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	if (n <= o && !(flags & MREMAP_FIXED)) {
		if (n < o)
			pages_unmap((uintptr_t)old + n, o - n);
		return old;
	}
	if (!(flags & MREMAP_MAYMOVE))
		return fail(ENOMEM);
	void *to;
	if (flags & MREMAP_FIXED) {
		to = real_mmap(new_addr, n, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (to != MAP_FAILED && in_heap(to, n))
			pages_note_foreign((uintptr_t)to, n);
	} else {
		to = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (to == MAP_FAILED)
		return to;
	memcpy(to, old, o < n ? o : n);
	pages_unmap((uintptr_t)old, o);
	return to;
}
