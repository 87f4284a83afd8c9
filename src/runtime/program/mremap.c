/* mremap.c - mremap of the program's mappings: in the heap's range resized or moved
 * by hand (the kernel's moves, piece by piece, for pages the program re-protected),
 * in pack.c's chunks, on --shm's hugetlb, and the kernel's own with the runtime's
 * hugetlb memory it leaves or lands on made plain first. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "life.h"
#include "mmap.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"
#include "shm.h"

/* One kernel move of [x, x+len) to to, leaving x mapped (and empty): a hole in the
 * range, even for a moment, could be taken by another thread's new mapping, which
 * the range's memory put back there would then destroy. (A mapping the kernel will
 * not leave, not private anonymous, moves as it would.) */
static int move_one(uintptr_t x, size_t len, uintptr_t to)
{
	void *out;
	int r = kern_remap((void *)x, len, len, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
			   (void *)to, &out);
	if (r == -EINVAL)
		r = kern_remap((void *)x, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)to, &out);
	return r;
}

/* Moves the pages of [a, a+len) to [to, to+len) with the kernel, which keeps their
 * protection: 2 MiB at a time, or a page at a time where 2 MiB hold several of the
 * kernel's mappings (the kernel's own mremap would refuse a range of several, with
 * EFAULT: here the demoted units of one mapping are several). [a, a+len) stays
 * mapped, empty. 0 or -errno, with *done the bytes moved. */
static int move_pieces(uintptr_t a, uintptr_t to, size_t len, size_t *done)
{
	*done = 0;
	for (uintptr_t x = a, end = a + len; x < end;) {
		uintptr_t y = (x | (UNIT_SIZE - 1)) + 1;
		if (y > end)
			y = end;
		int r = move_one(x, y - x, to + (x - a));
		if (r == -EFAULT) {
			for (uintptr_t p = x; p < y; p += PAGE_SIZE) {
				r = move_one(p, PAGE_SIZE, to + (p - a));
				if (r < 0)
					break;
				*done = p + PAGE_SIZE - a;
			}
		}
		if (r < 0)
			return r;
		x = y;
		*done = x - a;
	}
	return 0;
}

/* mremap of the program's mapping [a, a+o) in the heap's range, with pages it
 * re-protected or mapped over, to n bytes (MREMAP_MAYMOVE given: flags as checked by
 * heap_mremap): its pieces moved by the kernel, each with its protection. */
static void *move_foreign(uintptr_t a, size_t o, size_t n, int flags, void *new_addr)
{
	bool fixed = flags & MREMAP_FIXED, keep = flags & MREMAP_DONTUNMAP;
	int r = pages_demote(a, o);
	if (r == 0 && fixed)
		r = before_fixed(new_addr, n);
	if (r < 0)
		return fail(-r);
	/* Under 2m and 1g, into units of plain memory: a later mremap of it moves
	 * it again, here, where the kernel's would refuse its several mappings. */
	int err = 0;
	void *to = fixed ? NULL : pages_map_program(n, MAP_NORESERVE, false, &err);
	if (!to)
		to = err ? fail(err)
			 : real_mmap(new_addr, n, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | (fixed ? MAP_FIXED : 0), -1, 0);
	if (to == MAP_FAILED)
		return to;
	size_t done, back;
	r = move_pieces(a, (uintptr_t)to, o < n ? o : n, &done);
	if (in_heap(to, n))
		pages_note_foreign((uintptr_t)to, n);
	if (r < 0) {
		/* (Out of mappings, vm.max_map_count.) What moved goes back, and the
		 * program is told, as of the kernel's own failure. */
		if (move_pieces((uintptr_t)to, a, done, &back) < 0)
			rt_abort("mremap of %p could neither move its memory nor put it back",
				 (void *)a);
		if (!fixed)
			munmap(to, n);
		return fail(-r);
	}
	if (!keep) {
		/* What the pages left (empty, as they were protected): plain memory
		 * goes back there before the pages are the heap's again. */
		pages_note_foreign(a, o);
		(void)pages_unmap(a, o); /* (refused, they stay a span: never reused) */
	}
	return to;
}

/* A mapping in the heap's range (the program's from us, or the heap's own memory,
 * which stays where it is): resized or moved by hand, with the kernel's answers. */
static void *heap_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr)
{
	uintptr_t a = (uintptr_t)old, to_a = (uintptr_t)new_addr;
	size_t o = page_up(old_len), n = page_up(new_len);
	bool fixed = flags & MREMAP_FIXED, keep = flags & MREMAP_DONTUNMAP;
	/* (A private mapping cannot be duplicated with an old length of 0.) */
	if ((flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) ||
	    ((fixed || keep) && !(flags & MREMAP_MAYMOVE)) || (keep && old_len != new_len) ||
	    (a & (PAGE_SIZE - 1)) || n == 0 || o == 0)
		return fail(EINVAL);
	if (fixed && ((to_a & (PAGE_SIZE - 1)) || (to_a < a + o && a < to_a + n)))
		return fail(EINVAL);
	if (!fixed && !keep) {
		if (n <= o) {
			int r = n < o ? pages_unmap(a + n, o - n) : 0;
			return r < 0 ? fail(-r) : old;
		}
		if (pages_grow_mapping(a + o, n - o))
			return old;
		if (!(flags & MREMAP_MAYMOVE))
			return fail(ENOMEM);
	}
	void *to;
	/* Pages the program re-protected or mapped over: only the kernel knows what they
	 * are, and moves them, protection and all. */
	if (pages_has_foreign(a, o) && pages_program_owns(a, o))
		return move_foreign(a, o, n, flags, new_addr);
	if (fixed) {
		int r = before_fixed(new_addr, n);
		if (r < 0)
			return fail(-r);
		to = real_mmap(new_addr, n, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (to != MAP_FAILED && in_heap(to, n))
			pages_note_foreign((uintptr_t)to, n);
	} else {
		/* Ours: a large one on hugetlb units under 2m and 1g. */
		to = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (to == MAP_FAILED)
		return to;
	memcpy(to, old, o < n ? o : n);
	if (keep)
		advise_pieces(a, a + o, MADV_DONTNEED); /* stays mapped, reads as zero */
	else
		(void)pages_unmap(a, o); /* (refused, they stay a span: never reused) */
	return to;
}

/* A mapping in a chunk of pack.c's: a shrink unmaps the tail as munmap does (the
 * chunk keeps it reserved); a move is the kernel's, and the chunk takes back what it
 * left. It cannot grow in place: the chunk's next pages are never unmapped. */
static void *packed_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr)
{
	uintptr_t a = (uintptr_t)old;
	size_t o = page_up(old_len), n = page_up(new_len);
	void *out;
	if (!(flags & ~MREMAP_MAYMOVE) && n && n <= o && old_len) {
		int r = n < o ? pack_unmap(a + n, o - n, unmap_range) : 0;
		return r < 0 ? fail(-r) : old;
	}
	int r = kern_remap(old, old_len, new_len, flags, new_addr, &out);
	if (r < 0)
		return fail(-r);
	if (out != old && !(flags & MREMAP_DONTUNMAP) && old_len)
		pack_vacated(a, o);
	pack_changed((uintptr_t)out, new_len, false);
	return out;
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
	if (rt_init() && in_heap(old, old_len ? old_len : 1))
		return heap_mremap(old, old_len, new_len, flags, new_addr);
	if (rt_init() && !((uintptr_t)old & (PAGE_SIZE - 1)) && pack_holds((uintptr_t)old, old_len))
		return packed_mremap(old, old_len, new_len, flags, new_addr);
	/* --shm's hugetlb mappings, which the kernel will not grow */
	void *out;
	int h = shm_mremap(old, old_len, new_len, flags, new_addr, &out);
	if (h)
		return h < 0 ? fail(-h) : out;
	/* The kernel's mapping, moved by the kernel; hugetlb memory of the runtime's
	 * that it leaves or lands on is made plain memory first. */
	int r = 0;
	if (!((uintptr_t)old & (PAGE_SIZE - 1)) && in_brk(old, old_len ? old_len : 1))
		r = brk_demote((uintptr_t)old, old_len ? old_len : 1);
	if (r == 0 && !((uintptr_t)old & (PAGE_SIZE - 1)))
		r = segs_demote((uintptr_t)old, old_len ? old_len : 1);
	if (r == 0 && (flags & MREMAP_FIXED) && (flags & MREMAP_MAYMOVE) &&
	    !((uintptr_t)new_addr & (PAGE_SIZE - 1)))
		r = before_fixed(new_addr, new_len);
	if (r == 0)
		r = kern_remap(old, old_len, new_len, flags, new_addr, &out);
	if (r == 0 && (flags & MREMAP_FIXED) && in_heap(new_addr, new_len))
		pages_note_foreign((uintptr_t)new_addr, new_len);
	if (r == 0)
		shm_moved((uintptr_t)old, old_len, (uintptr_t)out, new_len);
	return r < 0 ? fail(-r) : out;
}
