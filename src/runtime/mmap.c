/* mmap.c - the program's private anonymous mappings: large ones aligned to 2 MiB and
 * advised per policy (the seed's vm_align), or on hugetlb units of the heap's range
 * under 2m and 1g; small ones (arenas of other allocators, such as CPython's) served
 * from the heap's huge units; large ranges the program reserves and commits itself
 * (JVM, V8 heaps) advised for THP; munmap, mprotect, madvise and mremap on them, and
 * on the emulated program break, kept as the kernel would have them. */
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

/* Read-write mappings from PACK_MIN up to SUPERPAGE_ARENA_MIN are a program's own heap
 * pages (Ruby's are 16 KiB, each mapped 32 KiB and trimmed to its alignment): packed
 * (pack.c), top-down as the kernel would place them, so that the part one trims is
 * the next one's. In the heap's units the trimmed parts would be holes the next page
 * cannot use (Ruby: 1.65x its memory). Smaller ones are left to the kernel. */
#define PACK_MIN ((size_t)16 << 10)

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

/* Where [addr, addr+len) meets the range of the emulated program break. */
static bool in_brk(const void *addr, size_t len)
{
	uintptr_t lo, hi, a = (uintptr_t)addr;
	return brk_range(&lo, &hi) && a < hi && a + len > lo;
}

/* Before a fixed mapping of the program's lands on [addr, addr+len) (page-aligned,
 * and allowed: fixed_into_heap_refused): see before_change, and the pages of its
 * mappings' units that it had unmapped are its own again. */
static int before_fixed(const void *addr, size_t len)
{
	int r = 0;
	if (!rt_init() || len == 0)
		return 0;
	if (in_heap(addr, len))
		r = pages_fixed_into((uintptr_t)addr, len);
	if (r == 0 && in_brk(addr, len))
		r = brk_demote((uintptr_t)addr, len);
	return r;
}

/* Before the program changes [addr, addr+len) (a page-aligned address): hugetlb
 * memory of the runtime's there (units of its large mappings, steps of the break) is
 * copied to THP memory in place, since the kernel cannot change part of a hugetlb
 * page's mapping. 0 or -errno (ENOMEM: nothing changed). */
static int before_change(const void *addr, size_t len)
{
	int r = 0;
	if (!rt_init() || len == 0)
		return 0;
	if (in_heap(addr, len))
		r = pages_demote((uintptr_t)addr, len);
	if (r == 0 && in_brk(addr, len))
		r = brk_demote((uintptr_t)addr, len);
	return r;
}

static void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *out;
	int r = sp_os->mmap(addr, len, prot, flags, fd, off, &out);
	return r < 0 ? fail(-r) : out;
}

/* ---------- ranges the program reserves and commits itself ---------- */

/* Private anonymous memory with no access (a reservation) or read-write access (a
 * commit), placed by the program (a hint, MAP_FIXED) or reserved: what a runtime that
 * manages its own heap (a JVM, V8, Go) maps. Stacks, locked, 32-bit, hugetlb, shared
 * and file mappings are not. */
static bool managed(int prot, int flags)
{
	const int plain = MAP_PRIVATE | MAP_ANONYMOUS;
	const int allowed = plain | MAP_NORESERVE | MAP_POPULATE | MAP_FIXED | MAP_FIXED_NOREPLACE;
	return (prot == PROT_NONE || prot == (PROT_READ | PROT_WRITE)) &&
	       (flags & ~allowed) == 0 && (flags & plain) == plain;
}

/* Whether a managed mapping of len bytes is to be advised: from SUPERPAGE_MIN up, or
 * of any size inside a reservation that was (in_reserved), unless the backing is 4k
 * (THP is off for the program then). */
static bool managed_wanted(size_t len, bool in_reserved)
{
	const struct sp_options *o = rt_options();
	return o->min && (len >= o->min || in_reserved) && o->backing != SP_BACKING_4K;
}

/* The heap's range and the break's have their own code. */
static bool managed_place(const void *addr, size_t len)
{
	return !in_heap(addr, len) && !in_brk(addr, len);
}

/* Reservations advised here, as first page << 28 | pages: a piece of one that the
 * program maps again with MAP_FIXED (commits, uncommits), of any size, is advised as
 * the rest was, since the kernel's new mapping does not keep the flag and a piece
 * without it would keep the unit it lies in off huge pages. Lock-free, so that no
 * lock is ever held across a fork; full: the next ones are not remembered. An entry
 * goes when the program unmaps all of it; a stale one only has a later private
 * anonymous mapping there advised as large ones are. */
#define N_RESERVED 64
#define RESERVED_PAGE_BITS 28
static _Atomic uint64_t reserved[N_RESERVED];

static void reserved_add(uintptr_t a, size_t len)
{
	uint64_t first = a >> PAGE_SHIFT, pages = page_up(len) >> PAGE_SHIFT, z = 0;
	if (first >> (64 - RESERVED_PAGE_BITS) || pages >> RESERVED_PAGE_BITS)
		return;
	for (int i = 0; i < N_RESERVED; i++, z = 0)
		if (atomic_compare_exchange_strong(&reserved[i], &z, first << RESERVED_PAGE_BITS | pages))
			return;
}

static void reserved_span(uint64_t v, uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)(v >> RESERVED_PAGE_BITS) << PAGE_SHIFT;
	*hi = *lo + ((uintptr_t)(v & ((1ull << RESERVED_PAGE_BITS) - 1)) << PAGE_SHIFT);
}

/* Whether [a, a+len) lies in a reservation advised here. */
static bool reserved_holds(uintptr_t a, size_t len)
{
	uintptr_t lo, hi;
	for (int i = 0; i < N_RESERVED; i++) {
		uint64_t v = atomic_load_explicit(&reserved[i], memory_order_relaxed);
		reserved_span(v, &lo, &hi);
		if (v && a >= lo && a + len <= hi)
			return true;
	}
	return false;
}

/* The program unmaps [a, a+len): the reservations it holds whole are forgotten. */
static void reserved_forget(uintptr_t a, size_t len)
{
	uintptr_t lo, hi;
	for (int i = 0; i < N_RESERVED; i++) {
		uint64_t v = atomic_load_explicit(&reserved[i], memory_order_relaxed);
		reserved_span(v, &lo, &hi);
		if (v && lo >= a && hi <= a + len)
			atomic_compare_exchange_strong(&reserved[i], &v, 0);
	}
}

/* THP for [addr, addr+len) (all of it, not only its 2 MiB-aligned interior: pieces
 * committed one after another merge into one kernel mapping only when their flags
 * match, and the kernel gives a huge page only to a 2 MiB unit inside one mapping, so
 * nothing smaller than a whole committed unit is ever huge). The kernel keeps the
 * advice on the parts of a reservation that mprotect makes writable later, and a
 * program's own MADV_NOHUGEPAGE after this wins. Under 2m and 1g the program changes
 * the range at 4 KiB, which a hugetlb page cannot follow: THP, as a counted fall. */
static void managed_advise(void *addr, size_t len)
{
	const struct sp_options *o = rt_options();
	int e = errno;
	if (o->backing == SP_BACKING_1G)
		pages_note_fall(SP_BACKING_1G, SP_FALL_PROGRAM_PAGES);
	if (o->backing == SP_BACKING_1G || o->backing == SP_BACKING_2M)
		pages_note_fall(SP_BACKING_2M, SP_FALL_PROGRAM_PAGES);
	sp_os->madvise(addr, page_up(len), MADV_HUGEPAGE);
	errno = e;
}

/* A managed mapping not at a fixed place (MAP_FIXED is mmap's own): a reservation the
 * runtime places is 2 MiB-aligned, so that its interior's units are whole; one at the
 * program's hint stays where the kernel puts it. */
static void *managed_map(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *p;
	if (!managed_wanted(len, false))
		return real_mmap(addr, len, prot, flags, fd, off);
	/* (PROT_NONE: nothing to populate.) */
	if (addr || prot != PROT_NONE || len > SIZE_MAX - 2 * UNIT_SIZE ||
	    sp_map_aligned(page_up(len), UNIT_SIZE, prot, flags, &p) < 0)
		p = real_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && managed_place(p, len)) {
		managed_advise(p, len);
		if (prot == PROT_NONE)
			reserved_add((uintptr_t)p, len);
	}
	return p;
}

static void *pack_on_thp(void *p);

/* A small reservation of the program's (pack.c): packed into the runtime's chunks,
 * from SUPERPAGE_ARENA_MIN up to SUPERPAGE_MIN (and below 2 MiB), unless THP is off
 * for the program (4k) or the heap is; MAP_FIXED_NOREPLACE at free pages of a chunk
 * is mapped there. Under 2m and 1g the program changes such memory at 4 KiB: THP, a
 * counted fall. NULL: not packed. */
static void *packed(void *addr, size_t len, int prot, int flags)
{
	const struct sp_options *o = rt_options();
	if (flags & MAP_FIXED_NOREPLACE)
		return pack_holds((uintptr_t)addr, len) ? pack_take((uintptr_t)addr, len, prot, flags)
							: NULL;
	if (prot != PROT_NONE || !o->heap || !o->arena_min || len < o->arena_min ||
	    len >= o->min || len >= UNIT_SIZE || o->backing == SP_BACKING_4K)
		return NULL;
	return pack_on_thp(pack_map(len, PROT_NONE, flags));
}

/* A packed mapping p under 2m or 1g: THP, a counted fall. */
static void *pack_on_thp(void *p)
{
	const struct sp_options *o = rt_options();
	if (p && o->backing == SP_BACKING_1G)
		pages_note_fall(SP_BACKING_1G, SP_FALL_PROGRAM_PAGES);
	if (p && (o->backing == SP_BACKING_2M || o->backing == SP_BACKING_1G))
		pages_note_fall(SP_BACKING_2M, SP_FALL_PROGRAM_PAGES);
	return p;
}

/* A fixed mapping into the heap's range: allowed where the program owns every page
 * (mappings it had from us), or had them and unmapped them (pages of its large
 * mappings' units, free units), which then go back to plain memory when it unmaps
 * them; anywhere else it would destroy the heap under the program's feet. */
static bool fixed_into_heap_refused(void *addr, size_t len)
{
	if (!rt_init() || !in_heap(addr, len))
		return false;
	if (pages_fixed_allowed((uintptr_t)addr, len))
		return false;
	rt_verbose(1, "refused a fixed mapping at %p over the heap's memory", addr);
	return true;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (flags & MAP_FIXED) {
		if (fixed_into_heap_refused(addr, len))
			return fail(EINVAL);
		int e = ((uintptr_t)addr & (PAGE_SIZE - 1)) ? 0 : before_fixed(addr, len);
		if (e < 0)
			return fail(-e);
		void *r = real_mmap(addr, len, prot, flags, fd, off);
		if (r != MAP_FAILED && rt_init() && pack_holds((uintptr_t)r, len)) {
			bool mine = managed(prot, flags);
			if (mine) /* (merged with its neighbours, as reservations are advised) */
				sp_os->madvise(r, page_up(len), MADV_HUGEPAGE);
			pack_fixed((uintptr_t)r, len, mine && prot != PROT_NONE, flags);
			return r;
		}
		if (r != MAP_FAILED && in_heap(addr, len))
			pages_note_foreign((uintptr_t)addr, len);
		else if (r != MAP_FAILED && managed(prot, flags) && rt_init() &&
			 managed_wanted(len, reserved_holds((uintptr_t)r, len)) &&
			 managed_place(r, len))
			managed_advise(r, len);
		return r;
	}
	if (!addr && (flags & (MAP_TYPE | MAP_ANONYMOUS)) == (MAP_SHARED | MAP_ANONYMOUS)) {
		void *shared = shm_map(len, prot, flags); /* --shm: on hugetlb, or NULL */
		if (shared)
			return shared;
	}
	if (len && managed(prot, flags) && (addr || !ours(prot, flags)) && rt_init()) {
		void *p = packed(addr, len, prot, flags);
		return p ? p : managed_map(addr, len, prot, flags, fd, off);
	}
	if (addr || len == 0 || !ours(prot, flags) || !rt_init())
		return real_mmap(addr, len, prot, flags, fd, off);
	const struct sp_options *o = rt_options();
	if (len >= o->min && o->min) {
		/* 2m, 1g: on hugetlb units, from 2 MiB up (a smaller one would take a
		 * whole hugetlb page, where THP takes only what is touched). */
		int err = 0;
		void *p = len >= UNIT_SIZE ? pages_map_program(len, flags, true, &err) : NULL;
		if (p) {
			pages_note_mmap(true);
			return p;
		}
		return err ? fail(err) : large_map(len, flags);
	}
	/* Not from hugetlb units (2m, 1g): the kernel cannot split those at 4 KiB, so a
	 * program's mprotect or MAP_FIXED on part of its mapping would fail. */
	bool hugetlb = o->backing == SP_BACKING_2M || o->backing == SP_BACKING_1G;
	if (o->heap && !hugetlb && len >= o->arena_min && o->arena_min && len <= UNIT_SIZE) {
		void *p = small_map(len);
		if (p)
			return p;
	}
	/* Under 2m and 1g, and below SUPERPAGE_ARENA_MIN from PACK_MIN up, packed side by
	 * side instead (pack.c), so that whole units of them are THP (the populating is
	 * left to the program's touches). */
	size_t pack_min = o->arena_min < PACK_MIN ? o->arena_min : PACK_MIN;
	if (o->heap && o->arena_min && o->backing != SP_BACKING_4K && len >= pack_min &&
	    len < UNIT_SIZE && (hugetlb || len < o->arena_min)) {
		void *p = pack_on_thp(pack_map(len, prot, flags & ~MAP_POPULATE));
		if (p)
			return p;
	}
	return real_mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

/* munmap of a page-aligned range that meets no chunk of pack.c's. 0 or -errno. */
static int unmap_range(uintptr_t a, size_t len)
{
	void *addr = (void *)a;
	if (rt_init() && in_heap(addr, len)) {
		/* Only what the program mapped from us goes; the heap's own pages stay
		 * (the kernel would have unmapped them, and the program would then crash
		 * on its next malloc: we do not help it do that). What lies outside the
		 * heap's range goes as the kernel would have it. */
		uintptr_t lo, hi, end = a + len;
		pages_range(&lo, &hi);
		uintptr_t in0 = a > lo ? a : lo, in1 = end < hi ? end : hi;
		pages_unmap(in0, in1 - in0);
		if (a < lo)
			sp_os->munmap(addr, lo - a);
		if (end > hi)
			sp_os->munmap((void *)hi, end - hi);
		return 0;
	}
	int r = in_brk(addr, len) ? brk_demote(a, len) : 0;
	shm_whole(a, &len);
	if (r == 0)
		r = sp_os->munmap(addr, len);
	if (r == 0) {
		reserved_forget(a, len);
		shm_unmapped(a, len);
	}
	return r;
}

EXPORT int munmap(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr;
	if ((a & (PAGE_SIZE - 1)) || len == 0) {
		errno = EINVAL;
		return -1;
	}
	int r = rt_init() && pack_holds(a, len) ? pack_unmap(a, len, unmap_range)
						: unmap_range(a, len);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

EXPORT int mprotect(void *addr, size_t len, int prot)
{
	/* Read-write is what the runtime's memory is: asking for it changes nothing, and
	 * the kernel has nothing to split. */
	int r = 0;
	if (prot != (PROT_READ | PROT_WRITE) && !((uintptr_t)addr & (PAGE_SIZE - 1)))
		r = before_change(addr, len);
	if (!((uintptr_t)addr & (PAGE_SIZE - 1)))
		shm_whole((uintptr_t)addr, &len);
	if (r == 0)
		r = sp_os->mprotect(addr, len, prot);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	if (rt_init() && in_heap(addr, len))
		pages_note_foreign((uintptr_t)addr, len);
	if (!((uintptr_t)addr & (PAGE_SIZE - 1)))
		pack_changed((uintptr_t)addr, len, prot == (PROT_READ | PROT_WRITE));
	return 0;
}

/* madvise over [a, end) (page-aligned), in pieces: the heap's range and the break's
 * answer for their hugetlb memory (pages_advise, brk_advise), the kernel for the
 * rest. The first error is returned, after every piece was advised, as the kernel
 * does with a range that has holes. */
static int advise_pieces(uintptr_t a, uintptr_t end, int advice)
{
	uintptr_t lo, hi, blo = 0, bhi = 0;
	int ret = 0;
	pages_range(&lo, &hi);
	brk_range(&blo, &bhi);
	while (a < end) {
		uintptr_t to;
		int r;
		if (a >= lo && a < hi) {
			to = end < hi ? end : hi;
			r = pages_advise(a, to - a, advice);
		} else if (a >= blo && a < bhi) {
			to = end < bhi ? end : bhi;
			r = brk_advise(a, to - a, advice);
		} else {
			to = end;
			if (lo > a && lo < to)
				to = lo;
			if (blo > a && blo < to)
				to = blo;
			r = sp_os->madvise((void *)a, to - a, advice);
		}
		if (r < 0 && !ret)
			ret = r;
		a = to;
	}
	return ret;
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	uintptr_t a = (uintptr_t)addr, end = a + page_up(len);
	int r;
	/* (A bad address or length is the kernel's to refuse.) */
	bool ranged = !(a & (PAGE_SIZE - 1)) && len && end > a && rt_init();
	if (ranged && (in_heap(addr, len) || in_brk(addr, len)))
		r = advise_pieces(a, end, advice);
	else if (ranged)
		r = pack_advise(a, len, advice);
	else
		r = sp_os->madvise(addr, len, advice);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

/* One kernel move of [x, x+len) to to, leaving x mapped (and empty): a hole in the
 * range, even for a moment, could be taken by another thread's new mapping, which
 * the range's memory put back there would then destroy. (A mapping the kernel will
 * not leave, not private anonymous, moves as it would.) */
static int move_one(uintptr_t x, size_t len, uintptr_t to)
{
	void *out;
	int r = sp_os->mremap((void *)x, len, len,
			      MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, (void *)to, &out);
	if (r == -EINVAL)
		r = sp_os->mremap((void *)x, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)to, &out);
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
			if (n < o)
				pages_unmap(a + n, o - n);
			return old;
		}
		if (pages_grow_mapping(a + o, n - o))
			return old;
		if (!(flags & MREMAP_MAYMOVE))
			return fail(ENOMEM);
	}
	void *to;
	/* Pages the program re-protected or mapped over: only the kernel knows what they
	 * are, and moves them, protection and all. */
	if (pages_has_foreign(a, o) && pages_program_owns(a, o)) {
		int r = pages_demote(a, o);
		if (r == 0 && fixed)
			r = before_fixed(new_addr, n);
		if (r < 0)
			return fail(-r);
		/* Under 2m and 1g, into units of plain memory: a later mremap of it moves
		 * it again, here, where the kernel's would refuse its several mappings. */
		int err = 0;
		to = fixed ? NULL : pages_map_program(n, MAP_NORESERVE, false, &err);
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
					 old);
			if (!fixed)
				munmap(to, n);
			return fail(-r);
		}
		if (!keep) {
			/* What the pages left (empty, as they were protected): plain memory
			 * goes back there before the pages are the heap's again. */
			pages_note_foreign(a, o);
			pages_unmap(a, o);
		}
		return to;
	}
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
		pages_unmap(a, o);
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
	int r = sp_os->mremap(old, old_len, new_len, flags, new_addr, &out);
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
	if (r == 0 && (flags & MREMAP_FIXED) && (flags & MREMAP_MAYMOVE) &&
	    !((uintptr_t)new_addr & (PAGE_SIZE - 1)))
		r = before_fixed(new_addr, new_len);
	if (r == 0)
		r = sp_os->mremap(old, old_len, new_len, flags, new_addr, &out);
	if (r == 0 && (flags & MREMAP_FIXED) && in_heap(new_addr, new_len))
		pages_note_foreign((uintptr_t)new_addr, new_len);
	if (r == 0)
		shm_moved((uintptr_t)old, old_len, (uintptr_t)out, new_len);
	return r < 0 ? fail(-r) : out;
}
