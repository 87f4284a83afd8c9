/* mmap.c - the program's private anonymous mappings: large ones aligned to 2 MiB and
 * advised per policy (the seed's vm_align), or on hugetlb units of the heap's range
 * under 2m and 1g; small ones (arenas of other allocators, such as CPython's) served
 * from the heap's huge units; large ranges the program reserves and commits itself
 * (JVM, V8 heaps) advised for THP; munmap, mprotect and madvise on them, and on the
 * emulated program break, kept as the kernel would have them (mremap: mremap.c). */
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

bool in_heap(const void *addr, size_t len)
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
 * cannot use, each one memory resident for nothing. Smaller ones are left to the
 * kernel. */
#define PACK_MIN ((size_t)16 << 10)

/* The ends of the last mappings the runtime aligned: above each, the kernel would
 * have put the next mapping flush against it, where an aligned one leaves up to
 * 2 MiB free. A hint there is one the kernel would not have honoured: libgc asks
 * for each 64 KiB piece at the end of the last thing it got, and its pieces ran into
 * those gaps, a whole unit never filled. Lock-free; the oldest is forgotten. */
#define N_SLACK 16
static _Atomic uintptr_t slack_end[N_SLACK];
static _Atomic unsigned slack_next;

static void slack_note(const void *p, size_t len)
{
	unsigned i = atomic_fetch_add_explicit(&slack_next, 1, memory_order_relaxed) % N_SLACK;
	atomic_store_explicit(&slack_end[i], (uintptr_t)p + page_up(len), memory_order_relaxed);
}

static bool slack_at(const void *addr)
{
	for (int i = 0; i < N_SLACK; i++)
		if (atomic_load_explicit(&slack_end[i], memory_order_relaxed) == (uintptr_t)addr)
			return true;
	return false;
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
	slack_note(m, rounded);
	uintptr_t a = (uintptr_t)m;
	/* (Near a memory limit, no THP for it: as the heap's units, pages_near_limit.
	 * auto, dense by touch: huge unit by unit as it is touched.) */
	if (!pages_watch_map(m, rounded))
		kern_want_huge((void *)a, rounded, o->backing != SP_BACKING_4K && !pages_near_limit());
	if (flags & MAP_POPULATE)
		kern_populate((void *)a, rounded);
	pages_note_mmap(true);
	return (void *)a;
}

bool in_brk(const void *addr, size_t len)
{
	uintptr_t lo, hi, a = (uintptr_t)addr;
	return brk_range(&lo, &hi) && a < hi && a + len > lo;
}

int before_fixed(const void *addr, size_t len)
{
	int r = 0;
	if (!rt_init() || len == 0)
		return 0;
	if (in_heap(addr, len))
		r = pages_fixed_into((uintptr_t)addr, len);
	if (r == 0 && in_brk(addr, len))
		r = brk_demote((uintptr_t)addr, len);
	if (r == 0)
		r = segs_demote((uintptr_t)addr, len);
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
	if (r == 0)
		r = segs_demote((uintptr_t)addr, len);
	return r;
}

void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	void *out;
	int r = kern_map(addr, len, prot, flags, fd, off, &out);
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
	/* (auto, dense by touch: huge unit by unit as it is touched, pages_watch_map.) */
	if (!pages_watch_map(addr, page_up(len)))
		kern_want_huge(addr, page_up(len), true);
	errno = e;
}

/* A managed mapping of the program's at p, placed: advised (and remembered, a
 * reservation), outside the heap's and the break's ranges. */
static void managed_placed(void *p, size_t len, int prot)
{
	if (managed_place(p, len)) {
		/* (auto, dense by touch: a reservation is watched in the parts the program
		 * makes writable, mprotect.) */
		if (prot != PROT_NONE || !pages_touched())
			managed_advise(p, len);
		if (prot == PROT_NONE)
			reserved_add((uintptr_t)p, len);
	}
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
	else
		slack_note(p, len);
	if (p != MAP_FAILED)
		managed_placed(p, len, prot);
	return p;
}

static void *pack_on_thp(void *p);

/* ---------- executable heaps ---------- */

#define PROT_RWX (PROT_READ | PROT_WRITE | PROT_EXEC)

/* Private anonymous memory that is writable and executable: a Lisp's or a Smalltalk's
 * image heap (SBCL's dynamic space), a JIT's code cache. Flags as managed()'s. */
static bool exec_heap(int prot, int flags)
{
	const int plain = MAP_PRIVATE | MAP_ANONYMOUS;
	const int allowed = plain | MAP_NORESERVE | MAP_POPULATE | MAP_FIXED | MAP_FIXED_NOREPLACE;
	return prot == PROT_RWX && (flags & ~allowed) == 0 && (flags & plain) == plain;
}

/* An executable heap of the program's at p, where it was placed (by the runtime, at
 * its hint or at its fixed address): THP for all of it, with its protection as asked.
 * Never on hugetlb units: a JIT flips pieces of such memory between read-write and
 * read-execute at 4 KiB (W^X), which a hugetlb page cannot follow, and the heap's
 * units are read-write memory the heap reuses. Under 2m and 1g: a counted fall
 * (program_managed_pages), as for other memory the program manages itself. */
static void exec_advise(void *p, size_t len)
{
	managed_advise(p, len);
	map_note_exec(page_up(len));
}

/* An executable heap the runtime places (no hint, or one the kernel would not
 * honour): from SUPERPAGE_MIN up, 2 MiB-aligned so that its units are whole, and
 * advised; smaller ones, and all under 4k, as the kernel places them. */
static void *exec_map(size_t len, int prot, int flags)
{
	void *p;
	if (!managed_wanted(len, false) || len > SIZE_MAX - 2 * UNIT_SIZE ||
	    sp_map_aligned(page_up(len), UNIT_SIZE, prot, flags & ~MAP_POPULATE, &p) < 0)
		return real_mmap(NULL, len, prot, flags, -1, 0);
	slack_note(p, len);
	exec_advise(p, len);
	if (flags & MAP_POPULATE)
		kern_populate(p, page_up(len));
	return p;
}

/* ---------- hints ---------- */

/* A hint is tried first as the kernel would take it: at the hint if all of
 * [addr, addr+len) is free there (MAP_FIXED_NOREPLACE makes exactly that test), else
 * the kernel would put the mapping where it likes, which is where the runtime puts it
 * too: on a 2 MiB boundary, or packed (libgc asks for each heap chunk at the end of
 * the last one, always taken, and its chunks landed off 2 MiB boundaries). 1: mapped
 * at the hint (*p); 0: the hint cannot be had; -1: the kernel is to decide (an
 * unaligned hint, another refusal). */
static int hint_try(void *addr, size_t len, int prot, int flags, void **p)
{
	if ((uintptr_t)addr & (PAGE_SIZE - 1))
		return -1;
	if (slack_at(addr))
		return 0;
	int r = kern_map(addr, len, prot, flags | MAP_FIXED_NOREPLACE, -1, 0, p);
	if (r == -EEXIST)
		return 0;
	if (r < 0)
		return -1;
	if (*p != addr) {
		/* (A kernel that takes the flag for a hint put it elsewhere: not had.) */
		kern_unmap(*p, len);
		return 0;
	}
	return 1;
}

/* Whether a hinted mapping is one the runtime would place otherwise than the kernel:
 * read-write or an executable heap from the smallest size packed up, a reservation
 * from SUPERPAGE_MIN up (smaller ones are packed, hint or not), unless THP is off for
 * the program (4k). */
static bool hint_matters(size_t len, int prot, int flags)
{
	const struct sp_options *o = rt_options();
	return (managed(prot, flags) || exec_heap(prot, flags)) && len >= PACK_MIN &&
	       o->backing != SP_BACKING_4K && !(flags & MAP_FIXED_NOREPLACE) &&
	       (prot != PROT_NONE || len >= o->min);
}

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

bool fixed_into_heap_refused(void *addr, size_t len)
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
				kern_want_huge(r, page_up(len), true);
			pack_fixed((uintptr_t)r, len, mine && prot != PROT_NONE, flags);
			return r;
		}
		if (r != MAP_FAILED && in_heap(addr, len))
			pages_note_foreign((uintptr_t)addr, len);
		else if (r != MAP_FAILED && managed(prot, flags) && rt_init() &&
			 managed_wanted(len, reserved_holds((uintptr_t)r, len)) &&
			 managed_place(r, len))
			managed_advise(r, len);
		else if (r != MAP_FAILED && exec_heap(prot, flags) && rt_init() &&
			 managed_wanted(len, false) && managed_place(r, len))
			exec_advise(r, len);
		return r;
	}
	if (!addr && (flags & (MAP_TYPE | MAP_ANONYMOUS)) == (MAP_SHARED | MAP_ANONYMOUS)) {
		void *shared = shm_map(len, prot, flags); /* --shm: on hugetlb, or NULL */
		if (shared)
			return shared;
	}
	if (addr && len && rt_init() && hint_matters(len, prot, flags)) {
		void *p;
		int h = hint_try(addr, len, prot, flags, &p);
		if (h > 0) {
			/* (Where the kernel would have put it: advised, as placed ones are.) */
			if (exec_heap(prot, flags) && managed_wanted(len, false) && managed_place(p, len))
				exec_advise(p, len);
			else if (managed(prot, flags) && managed_wanted(len, false))
				managed_placed(p, len, prot);
			return p;
		}
		if (h == 0) {
			map_note_hint_moved();
			addr = NULL;
		}
	}
	if (!addr && len && exec_heap(prot, flags) && rt_init())
		return exec_map(len, prot, flags);
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

int unmap_range(uintptr_t a, size_t len)
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
		int r = pages_unmap(in0, in1 - in0);
		if (r < 0)
			return r;
		if (a < lo)
			kern_unmap(addr, lo - a);
		if (end > hi)
			kern_unmap((void *)hi, end - hi);
		return 0;
	}
	int r = in_brk(addr, len) ? brk_demote(a, len) : 0;
	if (r == 0)
		r = segs_demote(a, len);
	shm_whole(a, &len);
	if (r == 0)
		r = kern_unmap(addr, len);
	if (r == 0) {
		reserved_forget(a, len);
		shm_unmapped(a, len);
		pages_watch_forget(a, len);
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
		r = kern_protect(addr, len, prot);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	if (rt_init() && in_heap(addr, len))
		pages_note_foreign((uintptr_t)addr, len);
	else if (prot == (PROT_READ | PROT_WRITE) && len >= UNIT_SIZE && rt_init() && pages_touched())
		pages_watch_map(addr, len); /* (a reservation's part made writable) */
	if (!((uintptr_t)addr & (PAGE_SIZE - 1)))
		pack_changed((uintptr_t)addr, len, prot == (PROT_READ | PROT_WRITE));
	return 0;
}

int advise_pieces(uintptr_t a, uintptr_t end, int advice)
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
			r = kern_advise((void *)a, to - a, advice);
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
		r = kern_advise(addr, len, advice);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}
