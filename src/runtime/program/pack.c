/* pack.c - the program's small reservations, packed so that what it commits of them
 * can be huge.
 *
 * A runtime with a heap of its own (V8's, in node) reserves each heap page of 256 KiB
 * with mmap(hint, 2 x 256 KiB, PROT_NONE), unmaps what lies outside its alignment and
 * makes the rest read-write with mprotect. Left to the kernel, each page is a
 * mapping of its own at a random address, and no 2 MiB unit ever lies in one
 * read-write mapping: none can be huge. Here such reservations (private anonymous,
 * PROT_NONE, from SUPERPAGE_ARENA_MIN up to SUPERPAGE_MIN, not at a fixed address)
 * are placed side by side, aligned, in chunks of address space the runtime holds
 * (PROT_NONE, advised for THP), lowest address first, so that a page unmapped for
 * alignment is the next one's start. Small read-write mappings packed here (Ruby's
 * heap pages; under 2m and 1g, other allocators' arenas) go from the top down. The
 * program's view is what the kernel would give it (its protection, its flags; only
 * the address differs, which a hint allows).
 * When the program's commits make a whole 2 MiB unit read-write, the unit is
 * collapsed into a huge page (MADV_COLLAPSE): its pages were touched at 4 KiB while
 * the unit was still partly reserved. The kernel collapses a unit only inside one of
 * its mappings, and joins two neighbours into one only when they share their
 * anonymous memory's reverse map (anon_vma), which each mapping touched on its own
 * gets anew: so a chunk has one from its start, which every part split from it
 * keeps and every new mapping in it takes from its neighbours; and MADV_DONTFORK,
 * which sets pages apart from their neighbours, is kept here and given to the kernel
 * only across fork. A unit is never collapsed before all of it is
 * the program's committed memory, so no huge page costs memory the program did not
 * ask for. What the program unmaps goes back to the chunk, reserved again at once
 * (no hole another thread's mapping could take). */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "life.h"
#include "pageheap/bits.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"

#define CHUNK_SHIFT 28                                  /* 256 MiB of address space */
#define CHUNK_SIZE ((uintptr_t)1 << CHUNK_SHIFT)
#define CHUNK_PAGES (CHUNK_SIZE >> PAGE_SHIFT)
#define CHUNK_WORDS (CHUNK_PAGES / 64)
#define N_CHUNKS 64                                     /* 16 GiB at most */

#define N_BITMAPS 4
struct chunk {
	uintptr_t base;
	uint64_t *free;      /* pages that are the runtime's (reserved, or left resident) */
	uint64_t *rw;        /* pages mapped read-write: the program's, or left resident */
	uint64_t *noreserve; /* the program's pages mapped MAP_NORESERVE */
	uint64_t *dontfork;  /* the program's pages it advised MADV_DONTFORK */
	size_t top;          /* pages below it were handed out bottom-up at some time */
	size_t low;          /* pages from it up were handed out top-down at some time */
};

static struct chunk chunks[N_CHUNKS];
static _Atomic unsigned n_chunks;                 /* published after the chunk is set */
static _Atomic uintptr_t lo_all = UINTPTR_MAX, hi_all; /* bounds of all chunks */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
SP_LOCK_RANK(lock, RANK_PACK, NULL);
static _Atomic uint64_t st_packed, st_collapsed, st_collapse_failed;

static const int reserve_flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

static bool overlaps_any(uintptr_t a, size_t len)
{
	return a < atomic_load_explicit(&hi_all, memory_order_acquire) &&
	       a + len > atomic_load_explicit(&lo_all, memory_order_acquire);
}

/* The chunk holding address a, or NULL. */
static struct chunk *chunk_of(uintptr_t a)
{
	unsigned n = atomic_load_explicit(&n_chunks, memory_order_acquire);
	for (unsigned i = 0; i < n; i++)
		if (a - chunks[i].base < CHUNK_SIZE)
			return &chunks[i];
	return NULL;
}

/* A new chunk, reserved and advised. Under lock. */
static struct chunk *chunk_new(void)
{
	unsigned n = atomic_load_explicit(&n_chunks, memory_order_relaxed);
	void *m, *bits;
	if (n == N_CHUNKS)
		return NULL;
	if (kern_map(NULL, N_BITMAPS * CHUNK_WORDS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &bits) < 0)
		return NULL;
	if (sp_map_aligned(CHUNK_SIZE, UNIT_SIZE, PROT_NONE, reserve_flags, &m) < 0) {
		kern_unmap(bits, N_BITMAPS * CHUNK_WORDS * sizeof(uint64_t));
		return NULL;
	}
	kern_want_huge(m, CHUNK_SIZE, true);
	/* Its anon_vma: one page touched and dropped (a mapping gets one at its first
	 * fault; made PROT_NONE again, the page joins the rest, which shares it). */
	if (kern_protect(m, PAGE_SIZE, PROT_READ | PROT_WRITE) == 0) {
		*(volatile char *)m = 0;
		kern_drop(m, PAGE_SIZE);
		kern_protect(m, PAGE_SIZE, PROT_NONE);
	}
	struct chunk *c = &chunks[n];
	c->base = (uintptr_t)m;
	c->free = bits;
	c->rw = c->free + CHUNK_WORDS;
	c->noreserve = c->rw + CHUNK_WORDS;
	c->dontfork = c->noreserve + CHUNK_WORDS;
	c->top = 0;
	c->low = CHUNK_PAGES;
	bits_set(c->free, 0, CHUNK_PAGES, true);
	if (c->base < atomic_load(&lo_all))
		atomic_store_explicit(&lo_all, c->base, memory_order_release);
	if (c->base + CHUNK_SIZE > atomic_load(&hi_all))
		atomic_store_explicit(&hi_all, c->base + CHUNK_SIZE, memory_order_release);
	atomic_store_explicit(&n_chunks, n + 1, memory_order_release);
	return c;
}

/* The alignment a reservation gets, in pages: the largest power of two in half its
 * length (rounded up), at most a unit. A program that over-reserves to align keeps
 * an aligned part and unmaps the rest (V8: 2 x 256 KiB - 4 KiB, for a 256 KiB page);
 * placed at that alignment it unmaps only the tail, which the next one starts on. */
static size_t align_of(size_t npages)
{
	size_t half = (npages + 1) / 2, a = 1;
	while (a * 2 <= half && a * 2 <= PAGES_PER_UNIT)
		a *= 2;
	return a;
}

#define MAX_WHOLE 16
/* Units to collapse once the lock is released (more are left to khugepaged: they
 * are advised). */
struct change {
	bool rw;
	unsigned n;
	uintptr_t whole[MAX_WHOLE];
};

static void to_collapse(struct change *ch, struct chunk *c, size_t u)
{
	if (ch->n < MAX_WHOLE)
		ch->whole[ch->n++] = c->base + (u << PAGE_SHIFT);
}

static bool whole(const struct chunk *c, size_t u)
{
	return bits_next(c->rw, u, u + PAGES_PER_UNIT, false) == u + PAGES_PER_UNIT;
}

/* Collapses the unit at a, which the program has just made wholly read-write (after
 * the lock: a collapse copies up to 2 MiB; if the program changes the unit meanwhile,
 * the kernel refuses, or collapses what is still the program's committed memory). */
static void collapse(uintptr_t a)
{
	int r = kern_collapse((void *)a, UNIT_SIZE);
	/* (A page the kernel holds for a moment, one another thread has just touched:
	 * twice more, letting that thread run first.) */
	for (int again = 0; again < 2 && r == -EAGAIN; again++) {
		sched_yield();
		r = kern_collapse((void *)a, UNIT_SIZE);
	}
	if (r == 0) {
		atomic_fetch_add_explicit(&st_collapsed, 1, memory_order_relaxed);
	} else {
		rt_verbose(2, "collapse of the reserved unit at %p: %s", (void *)a,
			   strerror(-r));
		atomic_fetch_add_explicit(&st_collapse_failed, 1, memory_order_relaxed);
		pages_note_fall(SP_BACKING_THP, SP_FALL_NOT_HUGE);
	}
}

static void collapse_all(const struct change *ch)
{
	int e = errno;
	if (rt_options()->backing != SP_BACKING_4K)
		for (unsigned i = 0; i < ch->n; i++)
			collapse(ch->whole[i]);
	errno = e;
}

/* Pages [p, p+n) whose mapping a failed MAP_FIXED may have removed (the kernel
 * unmaps first): never handed out again, since another mapping may now lie there.
 * Under lock. */
static void lost(struct chunk *c, size_t p, size_t n)
{
	bits_set(c->free, p, n, false);
	bits_set(c->rw, p, n, false);
	bits_set(c->dontfork, p, n, false);
}

/* Pages [p, p+n) are a new mapping of the program's with flags: what fill must match
 * in them, and the top (or, handed out top-down, the low mark). Under lock. */
static void mapped_with(struct chunk *c, size_t p, size_t n, int flags, bool down)
{
	bits_set(c->noreserve, p, n, flags & MAP_NORESERVE);
	bits_set(c->dontfork, p, n, false);
	if (down && p < c->low)
		c->low = p;
	else if (!down && p + n > c->top)
		c->top = p + n;
}

/* Pages [p, p+n) are the program's new mapping with flags (no access). Under lock. */
static void hand_out(struct chunk *c, size_t p, size_t n, int flags, bool down)
{
	bits_set(c->free, p, n, false);
	bits_set(c->rw, p, n, false);
	mapped_with(c, p, n, flags, down);
}

/* Where a mapping of np pages at align goes in c: reservations from the bottom up,
 * read-write mappings from the top down (see pack_map); CHUNK_PAGES if nowhere. */
static size_t place(const struct chunk *c, size_t np, size_t align, bool down)
{
	return down ? bits_find_run_last(c->free, CHUNK_PAGES, np, align)
		    : bits_find_run_phase(c->free, CHUNK_PAGES, np, align, 0);
}

/* A reservation goes at the lowest free place, a read-write mapping at the highest.
 * Either way a program that maps more than it needs to align it and unmaps the rest
 * leaves what it unmapped where the next one starts: V8 keeps the low part of its
 * reservation (its start is aligned here), Ruby the high part of its read-write
 * mapping (its first aligned page above the start), as each does under the kernel,
 * which maps them top-down. */
void *pack_map(size_t len, int prot, int flags)
{
	size_t np = page_up(len) >> PAGE_SHIFT, align = align_of(np), at = CHUNK_PAGES;
	bool down = prot != PROT_NONE;
	struct chunk *c = NULL;
	struct change ch = { .rw = true, .n = 0 };
	void *out;
	pthread_mutex_lock(&lock);
	unsigned n = atomic_load_explicit(&n_chunks, memory_order_relaxed);
	for (unsigned i = 0; i < n && at == CHUNK_PAGES; i++) {
		c = &chunks[i];
		at = place(c, np, align, down);
	}
	if (at == CHUNK_PAGES && (c = chunk_new()))
		at = place(c, np, align, down);
	if (at == CHUNK_PAGES) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	uintptr_t a = c->base + (at << PAGE_SHIFT);
	/* The program's own mapping over the runtime's reservation: its flags (its
	 * accounting: MAP_NORESERVE or not), and the chunk's advice. */
	if (kern_map((void *)a, np << PAGE_SHIFT, prot, flags | MAP_FIXED, -1, 0, &out) < 0) {
		lost(c, at, np);
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	kern_want_huge(out, np << PAGE_SHIFT, true);
	hand_out(c, at, np, flags, down);
	if (prot != PROT_NONE) {
		bits_set(c->rw, at, np, true);
		for (size_t u = at & ~(size_t)(PAGES_PER_UNIT - 1); u < at + np; u += PAGES_PER_UNIT)
			if (whole(c, u))
				to_collapse(&ch, c, u);
	}
	pthread_mutex_unlock(&lock);
	collapse_all(&ch);
	atomic_fetch_add_explicit(&st_packed, 1, memory_order_relaxed);
	return out;
}

bool pack_holds(uintptr_t a, size_t len)
{
	return len && overlaps_any(a, len);
}

/* Calls fn on each part of [a, a+len) that lies in a chunk, with the chunk and the
 * part's first page and page count; returns the first error of fn, after all. */
static int each_part(uintptr_t a, size_t len,
		     int (*fn)(struct chunk *c, size_t p, size_t n, void *arg), void *arg)
{
	uintptr_t end = a + page_up(len);
	int ret = 0;
	a &= ~(uintptr_t)(PAGE_SIZE - 1);
	unsigned n = atomic_load_explicit(&n_chunks, memory_order_acquire);
	for (unsigned i = 0; i < n; i++) {
		struct chunk *c = &chunks[i];
		uintptr_t lo = a > c->base ? a : c->base;
		uintptr_t hi = end < c->base + CHUNK_SIZE ? end : c->base + CHUNK_SIZE;
		if (lo >= hi)
			continue;
		int r = fn(c, (lo - c->base) >> PAGE_SHIFT, (hi - lo) >> PAGE_SHIFT, arg);
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

/* Pages [p, p+n), just reserved again (the chunk's flags), are advised as the chunk
 * is and free. Under lock. */
static void reserved(struct chunk *c, size_t p, size_t n)
{
	kern_want_huge((void *)(c->base + (p << PAGE_SHIFT)), n << PAGE_SHIFT, true);
	bits_set(c->free, p, n, true);
	bits_set(c->rw, p, n, false);
	bits_set(c->noreserve, p, n, true);
	bits_set(c->dontfork, p, n, false);
}

/* Pages [p, p+n) go back to the chunk: reserved again in place (which drops their
 * memory), then free. If the kernel cannot (out of mappings), they are unmapped and
 * never handed out again. */
static int reserve_again(struct chunk *c, size_t p, size_t n)
{
	void *at = (void *)(c->base + (p << PAGE_SHIFT));
	if (kern_reserve_at(at, n << PAGE_SHIFT, true) < 0) {
		lost(c, p, n);
		return kern_unmap(at, n << PAGE_SHIFT);
	}
	reserved(c, p, n);
	return 0;
}

/* At most this many pages of a unit are filled (FILL_MAX x 4 KiB: 512 KiB of memory
 * at most that the program did not commit, per unit). */
#define FILL_MAX (PAGES_PER_UNIT / 4)

/* Unit u (a page index) holds only read-write pages (the program's, or left resident)
 * and, below the chunk's top or from its low mark up (where the program unmapped
 * pages: holes, not pages the next mappings will take), at most FILL_MAX reserved
 * ones; its read-write pages are all MAP_NORESERVE and alike in MADV_DONTFORK (so
 * that fork does not split it). The holes are mapped read-write with those flags (so
 * that the kernel merges the unit into one mapping), as pages left resident, and the
 * unit can be collapsed: true. Under lock. */
static bool fill(struct chunk *c, size_t u)
{
	size_t end = u + PAGES_PER_UNIT, holes = 0;
	int df = -1;
	if (end > c->top && u < c->low)
		return false;
	for (size_t i = u; i < end; i++) {
		bool f = bit(c->free, i), w = bit(c->rw, i);
		if (!w && (!f || ++holes > FILL_MAX))
			return false;
		if (w && !bit(c->noreserve, i))
			return false;
		if (w && df < 0)
			df = bit(c->dontfork, i);
		else if (w && df != (int)bit(c->dontfork, i))
			return false;
	}
	if (holes == 0 || df < 0)
		return false;
	for (size_t i = bits_next(c->rw, u, end, false); i < end;
	     i = bits_next(c->rw, i, end, false)) {
		size_t j = bits_next(c->rw, i, end, true);
		void *at = (void *)(c->base + (i << PAGE_SHIFT));
		if (kern_fresh_at(at, (j - i) << PAGE_SHIFT) < 0) {
			lost(c, i, j - i);
			return false;
		}
		kern_want_huge(at, (j - i) << PAGE_SHIFT, true);
		bits_set(c->rw, i, j - i, true);
		bits_set(c->dontfork, i, j - i, df);
		i = j;
	}
	return true;
}

/* The free pages of unit u (a page index). */
static size_t free_in(const struct chunk *c, size_t u)
{
	size_t k = 0;
	for (size_t w = u / 64; w < (u + PAGES_PER_UNIT) / 64; w++)
		k += (size_t)__builtin_popcountll(c->free[w]);
	return k;
}

/* The free pages of unit u, left resident, are reserved again (their memory dropped,
 * the huge page split). Under lock. */
static int drop_free(struct chunk *c, size_t u)
{
	size_t end = u + PAGES_PER_UNIT;
	int ret = 0;
	for (size_t i = bits_next(c->free, u, end, true); i < end;) {
		size_t j = bits_next(c->free, i, end, false);
		int r = reserve_again(c, i, j - i);
		if (r < 0 && !ret)
			ret = r;
		i = bits_next(c->free, j, end, true);
	}
	return ret;
}

/* The program unmaps pages [p, p+n) of the chunk. In a unit that is wholly its
 * read-write memory (a huge page), while other pages of the unit stay the program's,
 * they are left as they are, free but resident: reserving them again would split the
 * huge page for good, and a program that unmaps a page (V8 after a collection) maps
 * one again soon, which then gets them (mapped afresh, so reading as zero; the unit
 * collapses again once it is whole). That holds as long as such pages are at most
 * FILL_MAX, as many as fill would map to make a unit whole; past that, they are
 * reserved again (a program that keeps one page of 32 KiB in sixteen would pay ten
 * times its memory). Once the unit has no page of the program's, all of it is
 * reserved again and its memory dropped. */
static int unmap_part(struct chunk *c, size_t p, size_t n, void *arg)
{
	int ret = 0;
	for (size_t u = p & ~(size_t)(PAGES_PER_UNIT - 1); u < p + n; u += PAGES_PER_UNIT) {
		size_t end = u + PAGES_PER_UNIT, from = p > u ? p : u, to = p + n < end ? p + n : end;
		bool was_whole = whole(c, u);
		bits_set(c->free, from, to - from, true);
		bool empty = bits_next(c->free, u, end, false) == end;
		int r = 0;
		if (empty) /* (with the pages left resident before) */
			r = reserve_again(c, u, PAGES_PER_UNIT);
		else if (was_whole && free_in(c, u) > FILL_MAX)
			r = drop_free(c, u);
		else if (!was_whole && (r = reserve_again(c, from, to - from)) == 0 && fill(c, u))
			to_collapse(arg, c, u);
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

/* Calls fn on each part of [a, a+len) outside every chunk; the first error of fn. */
static int each_outside(uintptr_t a, size_t len, int (*fn)(uintptr_t a, size_t len, void *arg),
			void *arg)
{
	uintptr_t end = a + page_up(len);
	int ret = 0;
	while (a < end) {
		struct chunk *c = chunk_of(a);
		if (c) {
			a = c->base + CHUNK_SIZE;
			continue;
		}
		uintptr_t to = end;
		unsigned n = atomic_load_explicit(&n_chunks, memory_order_acquire);
		for (unsigned i = 0; i < n; i++)
			if (chunks[i].base > a && chunks[i].base < to)
				to = chunks[i].base;
		int r = fn(a, to - a, arg);
		if (r < 0 && !ret)
			ret = r;
		a = to;
	}
	return ret;
}

struct outside { int (*unmap)(uintptr_t a, size_t len); };

static int unmap_outside(uintptr_t a, size_t len, void *arg)
{
	return ((const struct outside *)arg)->unmap(a, len);
}

int pack_unmap(uintptr_t a, size_t len, int (*outside)(uintptr_t a, size_t len))
{
	struct change ch = { .rw = false, .n = 0 };
	pthread_mutex_lock(&lock);
	int ret = each_part(a, len, unmap_part, &ch);
	pthread_mutex_unlock(&lock);
	collapse_all(&ch);
	/* What lies outside every chunk is the caller's. */
	struct outside o = { outside };
	int r = each_outside(a, len, unmap_outside, &o);
	return ret ? ret : r;
}

static int advice_outside(uintptr_t a, size_t len, void *arg)
{
	return kern_advise((void *)a, len, *(const int *)arg);
}

/* A fixed mapping the program asks for at [a, a+len) (MAP_FIXED_NOREPLACE) where the
 * chunk's pages are free: the kernel would refuse it (they are reserved), plain it
 * would not. Mapped there if every page is free; NULL if not. */
void *pack_take(uintptr_t a, size_t len, int prot, int flags)
{
	struct chunk *c = chunk_of(a);
	size_t np = page_up(len) >> PAGE_SHIFT, p;
	void *out = NULL;
	if (!c || (a & (PAGE_SIZE - 1)) || !np || np > CHUNK_PAGES ||
	    a - c->base > CHUNK_SIZE - (np << PAGE_SHIFT))
		return NULL;
	p = (a - c->base) >> PAGE_SHIFT;
	pthread_mutex_lock(&lock);
	if (bits_next(c->free, p, p + np, false) == p + np) {
		if (kern_map((void *)a, np << PAGE_SHIFT, prot,
			     (flags & ~MAP_FIXED_NOREPLACE) | MAP_FIXED, -1, 0, &out) == 0) {
			kern_want_huge(out, np << PAGE_SHIFT, true);
			hand_out(c, p, np, flags, false);
			bits_set(c->rw, p, np, prot == (PROT_READ | PROT_WRITE));
		} else {
			lost(c, p, np);
			out = NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	return out;
}

/* After the kernel moved a mapping away from [a, a+len) in a chunk: the hole is
 * reserved again unless another mapping took it meanwhile (then it is never handed
 * out again). */
static int vacated_part(struct chunk *c, size_t p, size_t n, void *arg)
{
	(void)arg;
	if (kern_reserve_at((void *)(c->base + (p << PAGE_SHIFT)), n << PAGE_SHIFT, false) == 0)
		reserved(c, p, n);
	return 0;
}

void pack_vacated(uintptr_t a, size_t len)
{
	pthread_mutex_lock(&lock);
	each_part(a, len, vacated_part, NULL);
	pthread_mutex_unlock(&lock);
}

/* The program's protection (or a fixed mapping of its) on the part: it is the
 * program's now, read-write or not; units it makes wholly read-write are noted. */
static int change_part(struct chunk *c, size_t p, size_t n, void *arg)
{
	struct change *ch = arg;
	bits_set(c->free, p, n, false);
	for (size_t u = p & ~(size_t)(PAGES_PER_UNIT - 1); u < p + n; u += PAGES_PER_UNIT) {
		size_t end = u + PAGES_PER_UNIT, from = p > u ? p : u, to = p + n < end ? p + n : end;
		bool was_whole = whole(c, u);
		bits_set(c->rw, from, to - from, ch->rw);
		if (ch->rw && !was_whole && (whole(c, u) || fill(c, u)))
			to_collapse(ch, c, u);
	}
	return 0;
}

void pack_changed(uintptr_t a, size_t len, bool rw)
{
	struct change ch = { .rw = rw, .n = 0 };
	if (!pack_holds(a, len))
		return;
	pthread_mutex_lock(&lock);
	each_part(a, len, change_part, &ch);
	pthread_mutex_unlock(&lock);
	collapse_all(&ch);
}

struct fixed { struct change ch; int flags; };

static int fixed_part(struct chunk *c, size_t p, size_t n, void *arg)
{
	struct fixed *f = arg;
	mapped_with(c, p, n, f->flags, false);
	return change_part(c, p, n, &f->ch);
}

void pack_fixed(uintptr_t a, size_t len, bool rw, int flags)
{
	struct fixed f = { .ch = { .rw = rw, .n = 0 }, .flags = flags };
	if (!pack_holds(a, len))
		return;
	pthread_mutex_lock(&lock);
	each_part(a, len, fixed_part, &f);
	pthread_mutex_unlock(&lock);
	collapse_all(&f.ch);
}

static int advised_part(struct chunk *c, size_t p, size_t n, void *arg)
{
	bits_set(c->dontfork, p, n, *(const int *)arg == MADV_DONTFORK);
	return 0;
}

int pack_advise(uintptr_t a, size_t len, int advice)
{
	if ((advice != MADV_DONTFORK && advice != MADV_DOFORK) || !pack_holds(a, len))
		return kern_advise((void *)a, len, advice);
	pthread_mutex_lock(&lock);
	each_part(a, len, advised_part, &advice);
	pthread_mutex_unlock(&lock);
	return each_outside(a, len, advice_outside, &advice);
}

/* Calls fn on each run of pages the program advised MADV_DONTFORK. Under lock. */
static void each_dontfork(void (*fn)(struct chunk *c, size_t p, size_t n, int advice), int advice)
{
	unsigned n = atomic_load_explicit(&n_chunks, memory_order_acquire);
	for (unsigned i = 0; i < n; i++) {
		struct chunk *c = &chunks[i];
		for (size_t p = bits_next(c->dontfork, 0, CHUNK_PAGES, true); p < CHUNK_PAGES;) {
			size_t q = bits_next(c->dontfork, p, CHUNK_PAGES, false);
			fn(c, p, q - p, advice);
			p = bits_next(c->dontfork, q, CHUNK_PAGES, true);
		}
	}
}

/* The kernel's MADV_DONTFORK before fork, MADV_DOFORK after it, on such a run. */
static void fork_advise(struct chunk *c, size_t p, size_t n, int advice)
{
	kern_advise((void *)(c->base + (p << PAGE_SHIFT)), n << PAGE_SHIFT, advice);
}

/* In the child such a run is not there: never handed out or advised again (the
 * kernel may put another mapping there). */
static void fork_gone(struct chunk *c, size_t p, size_t n, int advice)
{
	(void)advice;
	lost(c, p, n);
}

void pack_fork_prepare(void)
{
	pthread_mutex_lock(&lock);
	each_dontfork(fork_advise, MADV_DONTFORK);
}

void pack_fork_parent(void)
{
	each_dontfork(fork_advise, MADV_DOFORK);
	pthread_mutex_unlock(&lock);
}

void pack_fork_child(void)
{
	each_dontfork(fork_gone, 0);
	pthread_mutex_unlock(&lock);
}

void pack_stats(uint64_t *packed, uint64_t *collapsed, uint64_t *failed)
{
	*packed = atomic_load(&st_packed);
	*collapsed = atomic_load(&st_collapsed);
	*failed = atomic_load(&st_collapse_failed);
}
