/* runs.c - runs of pages: spans of objects and blocks up to the long-run limit, each
 * kind in units of its tier (units.h): a block's in the shortest stretch of free pages
 * that holds it, a span's in the fullest unit that holds it, or across units; taken
 * and given back here.
 *
 * A block or a span of objects whose run no unit's free pages hold is placed across
 * units: in the free tail of a HEAP unit, whole FREE units, and the free head of the
 * next HEAP unit, so that blocks of any size pack against their neighbours and only
 * the last unit of a stretch is partly used (a unit touched once is resident whole
 * on THP: blocks of 300 KB in units of their own left 12% of each unit unused,
 * blocks of 1 MiB + 1 B half of it). */
#include <errno.h>
#include <string.h>

#include "bits.h"
#include "internal.h"
#include "malloc/malloc.h"
#include "pageheap/unit_os.h"
#include "units.h"

/* Whether FREE unit u is room for the block before it to grow into: it follows a
 * large block's units or a HEAP unit of blocks. */
static bool growth_room(size_t u)
{
	if (u == 0)
		return false;
	const struct unit *x = &pg.units[u - 1];
	return x->state == U_LARGE || (x->state == U_HEAP && x->tier == TIER_BLOCKS);
}

/* The lowest FREE unit below the frontier (the frontier if none) that is no block's
 * room to grow, or SIZE_MAX if every one is. */
static size_t lowest_roomless(void)
{
	for (size_t g = bits_next(pg.freebits, 0, pg.frontier, true); g < pg.frontier;
	     g = bits_next(pg.freebits, g + 1, pg.frontier, true))
		if (!growth_room(g))
			return g;
	return growth_room(pg.frontier) ? SIZE_MAX : pg.frontier;
}

/* The newest empty unit kept resident that is no block's room to grow (where spare)
 * and was not another thread's than me (unit_foreign), else the newest that is no
 * room; NO_UNIT if none. */
static int32_t cache_pick(bool spare, unsigned me)
{
	int32_t any = NO_UNIT;
	for (int32_t u = pg.cache_head; u != NO_UNIT; u = pg.units[u].next) {
		if (spare && growth_room((size_t)u))
			continue;
		if (!unit_foreign((size_t)u, me))
			return u;
		if (any == NO_UNIT)
			any = u;
	}
	return any;
}

/* Whether an empty unit is kept resident that was not another thread's than me's. */
static bool own_kept(unsigned me)
{
	int32_t u = cache_pick(false, me);
	return u != NO_UNIT && !unit_foreign((size_t)u, me);
}

/* A FREE unit for the page heap's runs of tier t: a resident empty one first (no new
 * memory; this thread's first), else the lowest free one; for objects, one that is no
 * block's room to grow where there is one (spans of objects placed in the units after
 * large blocks made realloc copy 6 times as many of them, bench/kernels/malloc
 * realloc). Returns its index or NO_UNIT. */
static int32_t take_unit(enum tier t)
{
	unsigned me = malloc_thread_slot();
	bool spare = t != TIER_BLOCKS && !pg.tight; /* (tight: no range grown for it) */
	int32_t u = cache_pick(spare, me);
	size_t f = SIZE_MAX;
	if (spare && u == NO_UNIT) {
		f = lowest_roomless();
		if (f == pg.frontier && range_grow(pg.frontier + 1) < 0)
			f = SIZE_MAX;
		if (f == SIZE_MAX)
			u = cache_pick(false, me);
	}
	bool kept = u != NO_UNIT;
	if (kept) {
		cache_remove(u);
		pg.st.reused++;
	} else {
		if (f == SIZE_MAX)
			f = bits_next(pg.freebits, 0, pg.frontier, true);
		if (f == pg.frontier) {
			if (range_grow(pg.frontier + 1) < 0)
				return NO_UNIT;
			f = bits_next(pg.freebits, f, pg.frontier, true);
			if (f == pg.frontier)
				return NO_UNIT;
		}
		u = (int32_t)f;
	}
	bits_set(pg.freebits, (size_t)u, 1, false);
	struct unit *x = &pg.units[u];
	/* (An empty unit kept on a hugetlb page stays on it, and one auto made huge on
	 * its huge page.) */
	heap_unit_init((size_t)u, kept && (is_hugetlb(x->backing) || x->huge)
					   ? (enum sp_backing)x->backing : back_units((size_t)u, 1), t);
	return u;
}

/* A HEAP unit whose free pages a run of tier t may take: the heap's, not a program's
 * mapping, and of that tier. */
static bool joinable(size_t u, enum tier t)
{
	return pg.units[u].state == U_HEAP && !pg.units[u].mapping && pg.units[u].tier == t;
}

/* The free pages at the end and at the start of a HEAP unit. */
static size_t unit_tail(size_t u)
{
	size_t used = bits_prev(pg.units[u].free, PAGES_PER_UNIT, false);
	return used == SIZE_MAX ? PAGES_PER_UNIT : PAGES_PER_UNIT - 1 - used;
}

static size_t unit_head(size_t u)
{
	return bits_next(pg.units[u].free, 0, PAGES_PER_UNIT, false);
}

/* The part of pages [p, p+n) that lies in unit u, as pages [*from, *to) of it. */
static void unit_part(size_t p, size_t n, size_t u, size_t *from, size_t *to)
{
	size_t first = u * PAGES_PER_UNIT;
	*from = p > first ? p - first : 0;
	*to = p + n < first + PAGES_PER_UNIT ? p + n - first : PAGES_PER_UNIT;
}

/* FREE units [u, u+n) (some may be past the frontier) that a run would claim and
 * that hold no memory yet: what the run costs. */
size_t fresh_units(size_t u, size_t n)
{
	size_t k = 0;
	for (size_t i = u; i < u + n; i++)
		k += i >= pg.frontier || !pg.units[i].resident;
	return k;
}

struct place {
	size_t page;  /* the run's first page in the range, SIZE_MAX for none */
	size_t cost;  /* units it makes resident */
	size_t used;  /* free pages of HEAP units it takes */
	size_t room;  /* free pages of the stretch it lies in */
};

/* A stretch: t free pages of a HEAP unit ending at a unit boundary (from page at),
 * then m FREE units, then h free pages at the start of a HEAP unit. Keeps in *best
 * the run's place there if it is better: fewer new units, then a shorter stretch
 * (best fit: the mixed heap of the sweep left 15.5 MiB free inside units, against
 * 17.5), then more pages of HEAP units put to use, then lower. */
static void place_in(struct place *best, size_t np, size_t at, size_t t, size_t m, size_t h)
{
	if (np > t + m * PAGES_PER_UNIT + h)
		return;
	size_t f = (at + t) / PAGES_PER_UNIT; /* the first FREE unit */
	/* From the tail on ... */
	size_t rest = np > t ? np - t : 0, n = (rest + PAGES_PER_UNIT - 1) / PAGES_PER_UNIT;
	size_t room = t + m * PAGES_PER_UNIT + h;
	struct place p = { at, 0, t < np ? t : np, room };
	if (n > m) {
		n = m;
		p.used = np - m * PAGES_PER_UNIT;
	}
	p.cost = fresh_units(f, n);
	/* ... or up to the head's end. */
	rest = np > h ? np - h : 0;
	n = (rest + PAGES_PER_UNIT - 1) / PAGES_PER_UNIT;
	if (h && n <= m) {
		struct place q = { at + t + m * PAGES_PER_UNIT + h - np, 0, h < np ? h : np, room };
		q.cost = fresh_units(f + m - n, n);
		if (q.cost < p.cost || (q.cost == p.cost && q.used > p.used))
			p = q;
	}
	if (p.cost < best->cost || (p.cost == best->cost && (p.room < best->room ||
				(p.room == best->room && p.used > best->used))))
		*best = p;
}

/* Whether a stretch that would begin with FREE unit u (no tail before it, no FREE
 * unit yet) is to begin after it instead, sparing (spare) a block its room to grow
 * (growth_room). */
static bool keep_room(bool spare, size_t u, size_t tail, size_t m)
{
	return spare && !tail && !m && growth_room(u);
}

/* The best place for a run of np pages of tier t across units, or SIZE_MAX if the
 * range cannot hold it; spare: no stretch begins in a block's room to grow. Under the
 * lock. */
static size_t find_place_spare(size_t np, enum tier t, bool spare)
{
	struct place best = { SIZE_MAX, SIZE_MAX, 0, SIZE_MAX };
	size_t at = 0, tail = 0, m = 0; /* the open stretch: its tail, its FREE units */
	for (size_t u = 0; u < pg.frontier; u++) {
		if (bit(pg.freebits, u)) {
			size_t e = bits_next(pg.freebits, u, pg.frontier, false);
			if (keep_room(spare, u, tail, m))
				at += PAGES_PER_UNIT, u++;
			m += e - u;
			u = e - 1;
			continue;
		}
		bool join = joinable(u, t);
		place_in(&best, np, at, tail, m, join ? unit_head(u) : 0);
		if (best.cost == 0 && best.used == np)
			return best.page;
		tail = join ? unit_tail(u) : 0;
		at = (u + 1) * PAGES_PER_UNIT - tail;
		m = 0;
	}
	/* The last stretch runs on past the frontier, to the end of the range. */
	size_t past = pg.max_units - pg.frontier;
	if (past && keep_room(spare, pg.frontier, tail, m))
		at += PAGES_PER_UNIT, past--;
	place_in(&best, np, at, tail, m + past, 0);
	return best.page;
}

/* Whether ROOMS_MAX units or more below the frontier are FREE: a run is not grown in
 * place past the frontier then (pages_resize_run). A fitted chunk placed in the last
 * unit's tail and grown there moved the frontier on at every chunk two threads made
 * by turns, the freed units below never used again: a mapping a unit, until the
 * kernel's limit on mappings refused one. Under the lock. */
#define ROOMS_MAX 64
static bool many_free_below(void)
{
	size_t n = 0;
	for (size_t g = bits_next(pg.freebits, 0, pg.frontier, true); g < pg.frontier && n < ROOMS_MAX;
	     g = bits_next(pg.freebits, g + 1, pg.frontier, true))
		n++;
	return n >= ROOMS_MAX;
}

/* find_place_spare; spans of objects spare blocks their room to grow where the range
 * has another place. */
static size_t find_place(size_t np, enum tier t)
{
	bool spare = t == TIER_OBJECTS;
	size_t p = find_place_spare(np, t, spare);
	return p == SIZE_MAX && spare ? find_place_spare(np, t, false) : p;
}

/* Whether page p of the range is a free page of a HEAP unit of tier t. */
static bool free_in_tier(size_t p, enum tier t)
{
	size_t u = p / PAGES_PER_UNIT;
	return u < pg.frontier && joinable(u, t) && bit(pg.units[u].free, p % PAGES_PER_UNIT);
}

/* The length of the stretch of free pages of tier t's units from page p on, across
 * unit boundaries (HEAP units are never wholly free: it ends in the next one). */
static size_t stretch_from(size_t p, enum tier t)
{
	size_t u = p / PAGES_PER_UNIT, a = p % PAGES_PER_UNIT, len = 0;
	for (;;) {
		size_t e = bits_next(pg.units[u].free, a, PAGES_PER_UNIT, false);
		len += e - a;
		if (e < PAGES_PER_UNIT || !free_in_tier((u + 1) * PAGES_PER_UNIT, t))
			return len;
		u++;
		a = 0;
	}
}

/* Best fit among the free pages of tier t's units: the first page of the shortest
 * stretch of them (across unit boundaries) that holds np pages, or SIZE_MAX. Walks
 * the units with free pages only. The best of all stretches, not the first free tail or
 * head that holds it (find_place): it leaves fewer units partly used, so less memory
 * resident. Under the lock. */
static size_t best_hole(size_t np, enum tier t, bool *foreign_out)
{
	size_t best = SIZE_MAX, best_len = SIZE_MAX;
	unsigned me = malloc_thread_slot();
	bool best_foreign = true; /* (another thread's unit only where none of this one's fits) */
	for (unsigned b = 0; b < NBUCKET; b++) {
		for (int32_t c = pg.bucket_head[t][b]; c != NO_UNIT; c = pg.units[c].next) {
			const uint64_t *f = pg.units[c].free;
			size_t base = (size_t)c * PAGES_PER_UNIT;
			bool foreign = unit_foreign((size_t)c, me);
			for (size_t a = bits_next(f, 0, PAGES_PER_UNIT, true); a < PAGES_PER_UNIT;) {
				size_t e = bits_next(f, a, PAGES_PER_UNIT, false);
				/* (a stretch that began in the unit before is had from there) */
				if (a > 0 || base == 0 || !free_in_tier(base - 1, t)) {
					size_t len = e < PAGES_PER_UNIT ? e - a : stretch_from(base + a, t);
					if (len >= np && (foreign != best_foreign ? !foreign :
							  len < best_len || (len == best_len && base + a < best))) {
						best = base + a;
						best_len = len;
						best_foreign = foreign;
					}
				}
				a = bits_next(f, e, PAGES_PER_UNIT, true);
			}
		}
	}
	*foreign_out = best_foreign;
	return best;
}

/* Units [u, u+n) that a run takes and the kernel would fault in new (FREE, not
 * resident) get the kept empty units' pages instead, oldest first: each moved whole by
 * mremap, which moves a huge page as one and copies and zeroes nothing; the kept
 * unit's place stays mapped, empty (MREMAP_DONTUNMAP). Under 2m and 1g nothing is
 * done: the kept units on 2 MiB pages are in chunks (backing.c), and one given back
 * from the middle of a chunk would cut its mapping in two. A unit no kept one could
 * take makes
 * a kept unit go back: kept, they would spare the next block a fault, but once blocks
 * fault new units in beside them they spare nothing, and the program pays for both
 * (the sweep's mixed heap ended with 9 kept units, 18 MiB of its 310). Under
 * bench/kernels/malloc realloc with 2 threads, giving them back made the blocks of
 * 2-6 MiB fault in 23 units in 0.5 s, and zeroing their huge pages took 12% of its
 * time. This thread's kept units go first (unit_foreign); a unit moved in is resident.
 * Under the lock. */
void take_kept(size_t u, size_t n)
{
	static bool refused; /* (a kernel without MREMAP_DONTUNMAP: before 5.7) */
	bool hugetlb = pg.policy == SP_BACKING_2M || pg.policy == SP_BACKING_1G;
	unsigned me = malloc_thread_slot();
	if (hugetlb)
		return;
	for (size_t i = u; i < u + n; i++) {
		int32_t c = pg.cache_tail;
		while (c != NO_UNIT && unit_foreign((size_t)c, me))
			c = pg.units[c].prev;
		if (c == NO_UNIT)
			c = pg.cache_tail;
		void *out;
		if (pg.units[i].resident || c == NO_UNIT)
			continue;
		bool movable = !refused && !is_hugetlb(pg.units[c].backing);
		int r = !movable ? -EINVAL :
			unit_move((void *)unit_addr((size_t)c), UNIT_SIZE,
				  (void *)unit_addr(i), true, &out);
		cache_remove(c);
		if (r < 0) {
			if (movable) {
				refused = r == -EINVAL;
				plain_units(i, 1); /* (a refused move may have unmapped it) */
			}
			pg.units[c].state = U_RELEASING;
			struct release rel = { .u = (size_t)c, .n = 1, .extra = NO_EXTRA };
			release_units_locked(&rel);
			continue;
		}
		pg.units[c].resident = 0;
		pg.units[c].backing = 0;
		pg.units[i].resident = 1;
		pg.units[i].huge = pg.units[c].huge; /* (the move takes its advice along) */
		pg.st.reused++;
	}
}

/* Units [u0, u1) that a run of tier t at pages [p, p+np) covers: the FREE ones join
 * the page heap in that tier (growing the range where they lie past its frontier), and
 * the run's pages are taken. Returns what of the run is memory not given out since
 * the kernel gave it (unit_take), as a span's clean (pageheap.h): SPAN_CLEAN (all of
 * it), SPAN_CLEAN_INNER with the ends that may not be, or 0; -1 if the range cannot
 * grow. Under the lock. */
static int take_pages(size_t p, size_t np, enum tier t)
{
	size_t u0 = p / PAGES_PER_UNIT, u1 = (p + np - 1) / PAGES_PER_UNIT + 1;
	if (u1 > pg.frontier && range_grow(u1) < 0)
		return -1;
	for (size_t i = u0; i < u1;) {
		if (!bit(pg.freebits, i)) { /* a HEAP unit's free pages */
			i++;
			continue;
		}
		if (pg.units[i].in_cache) {
			cache_remove((int32_t)i);
			pg.st.reused++;
			bits_set(pg.freebits, i, 1, false);
			heap_unit_init(i, is_hugetlb(pg.units[i].backing) || pg.units[i].huge
						  ? (enum sp_backing)pg.units[i].backing : back_units(i, 1), t);
			i++;
			continue;
		}
		size_t e = i;
		while (e < u1 && bit(pg.freebits, e) && !pg.units[e].in_cache)
			e++;
		bits_set(pg.freebits, i, e - i, false);
		take_kept(i, e - i); /* (a unit moved in is resident: not clean) */
		enum sp_backing got;
		size_t h = back_units_most(i, e - i, &got);
		for (size_t k = i; k < e; k++)
			heap_unit_init(k, k < i + h ? SP_BACKING_2M : got, t);
		i = e;
	}
	int clean = SPAN_CLEAN_INNER;
	for (size_t i = u0; i < u1; i++) {
		size_t from, to;
		unit_part(p, np, i, &from, &to);
		if (!unit_take(i, from, to - from)) /* (unit i's part may hold what it held) */
			clean = i == u0 ? clean | SPAN_DIRTY_HEAD : i == u1 - 1 ? clean | SPAN_DIRTY_TAIL
									: clean & ~SPAN_CLEAN_INNER;
	}
	return clean == SPAN_CLEAN_INNER ? SPAN_CLEAN : clean & SPAN_CLEAN_INNER ? clean : 0;
}

struct span *pages_alloc_run(size_t npages, size_t align, enum span_kind kind)
{
	/* Blocks and spans of objects may lie across units (long blocks must: 18 spans
	 * of 27 pages in a unit left 5% of it unused); the program's small mappings stay
	 * inside one. */
	bool across = (kind == SPAN_MEDIUM || kind == SPAN_SMALL || kind == SPAN_FIT) && align <= 1;
	enum tier t = tier_of(kind);
	if (npages == 0 || (npages > PAGES_PER_UNIT && !across) || align > PAGES_PER_UNIT ||
	    npages > (pg.max_units << (UNIT_SHIFT - PAGE_SHIFT)))
		return NULL;
	pthread_mutex_lock(&pg.lock);
	struct span *s = span_new();
	struct dense d = { 0 };
	int32_t u = NO_UNIT;
	size_t at = PAGES_PER_UNIT, p = SIZE_MAX;
	int clean = 0;
	if (!s)
		goto fail;
	unsigned me = malloc_thread_slot();
	bool foreign, kept = false;
	if (t == TIER_BLOCKS && across && (p = best_hole(npages, t, &foreign)) != SIZE_MAX) {
		/* (another thread's hole: an empty unit of this one's kept is as good) */
		kept = foreign && npages <= PAGES_PER_UNIT && own_kept(me);
		if (!kept) {
			if ((clean = take_pages(p, npages, t)) < 0)
				goto fail;
			goto placed;
		}
	}
	/* Best fit by longest free run: the smallest bucket that can hold the run; in it,
	 * a unit of this thread's first (unit_foreign). */
	for (unsigned b = npages <= PAGES_PER_UNIT && !kept ? bucket_of((unsigned)npages) : NBUCKET;
	     b < NBUCKET && u == NO_UNIT; b++) {
		size_t other_at = PAGES_PER_UNIT;
		int32_t other = NO_UNIT;
		for (int32_t c = pg.bucket_head[t][b]; c != NO_UNIT; c = pg.units[c].next) {
			if (pg.units[c].longest < npages)
				continue;
			at = bits_find_run_phase(pg.units[c].free, PAGES_PER_UNIT, npages, align, 0);
			if (at < PAGES_PER_UNIT && !unit_foreign((size_t)c, me)) {
				u = c;
				break;
			}
			if (at < PAGES_PER_UNIT && other == NO_UNIT) {
				other = c;
				other_at = at;
			}
		}
		if (u == NO_UNIT && other != NO_UNIT) {
			u = other;
			at = other_at;
		}
	}
	if (u != NO_UNIT) {
		clean = unit_take((size_t)u, at, npages) ? SPAN_CLEAN : 0;
		p = (size_t)u * PAGES_PER_UNIT + at;
	} else if (across && (npages > PAGES_PER_UNIT || pg.cache_head == NO_UNIT)) {
		/* (An empty unit kept resident holds a run of a unit or less at no cost,
		 * and without a walk over the units.) */
		p = find_place(npages, t);
		if (p == SIZE_MAX || (clean = take_pages(p, npages, t)) < 0)
			goto fail;
	} else {
		u = take_unit(t);
		if (u == NO_UNIT)
			goto fail;
		clean = unit_take((size_t)u, 0, npages) ? SPAN_CLEAN : 0;
		p = (size_t)u * PAGES_PER_UNIT;
	}
placed:
	s->kind = (uint8_t)kind;
	s->start = pg.base + (p << PAGE_SHIFT);
	s->npages = npages;
	s->clean = (uint8_t)clean;
	if (kind == SPAN_MMAP)
		pg.st.small_mmap_pages += npages;
	if (span_maps_all(kind))
		pages_map_all(s);
	else
		map_set(p, s);
	units_settle(p, npages, clean == SPAN_CLEAN, &d);
	pthread_mutex_unlock(&pg.lock);
	dense_collapse(&d);
	maybe_promote();
	rt_live_tick();
	return s;
fail:
	if (s)
		span_delete(s);
	pthread_mutex_unlock(&pg.lock);
	return NULL;
}

/* Pages [p0, p0+n) of one unit are free again; true (with rel filled) if the unit
 * emptied and is to be given back. Under the lock. */
bool free_pages(size_t p0, size_t n, struct release *rel)
{
	size_t u = p0 / PAGES_PER_UNIT;
	size_t nfree = unit_give(u, p0 % PAGES_PER_UNIT, n);
	if (pg.units[u].mapping)
		return mapping_unit_freed(u, rel);
	return nfree == PAGES_PER_UNIT && retire_units(u, 1, rel);
}

/* Pages [p, p+n) are free again, across units if need be; true (with rel filled) if
 * units emptied and are to be given back after the lock. Units of a run emptied
 * together are retired together; of them, a stretch on hugetlb pages apart from one
 * that is not (their memory goes back differently). Under the lock. */
static bool free_run(size_t p, size_t n, struct release *rel)
{
	size_t u0 = p / PAGES_PER_UNIT, u1 = (p + n - 1) / PAGES_PER_UNIT + 1;
	if (u1 - u0 == 1)
		return free_pages(p, n, rel);
	size_t e0 = SIZE_MAX, e1 = 0; /* the emptied units: the run covered those between */
	for (size_t u = u0; u < u1; u++) {
		size_t from, to;
		unit_part(p, n, u, &from, &to);
		sp_assert(!pg.units[u].mapping); /* (a program's mapping lies in one unit) */
		if (unit_give(u, from, to - from) < PAGES_PER_UNIT)
			continue;
		if (e0 == SIZE_MAX)
			e0 = u;
		e1 = u + 1;
	}
	bool out = false;
	for (size_t a = e0; a < e1;) {
		size_t b = a + 1;
		while (b < e1 && is_hugetlb(pg.units[b].backing) == is_hugetlb(pg.units[a].backing))
			b++;
		struct release r;
		if (retire_units(a, b - a, &r)) {
			if (!out)
				*rel = r;
			else
				release_units_locked(&r);
			out = true;
		}
		a = b;
	}
	return out;
}

void pages_free(struct span *s)
{
	struct release rel;
	bool give_back = false;
	if (s->kind == SPAN_OUTSIDE) {
		outside_free(s);
		return;
	}
	/* Near a memory limit, the run's pages go back to the kernel as they are freed:
	 * before the lock, while they are still the caller's (near_limit.c). */
	if (s->kind != SPAN_LARGE && atomic_load_explicit(&pg.near, memory_order_relaxed))
		limits_give_back(s->start, s->npages);
	pthread_mutex_lock(&pg.lock);
	size_t p0 = page_of(s->start);
	if (s->kind == SPAN_LARGE) {
		map_set(p0, NULL);
		pg.st.large_blocks--;
		pg.st.large_bytes -= s->npages << PAGE_SHIFT;
		give_back = retire_units(p0 / PAGES_PER_UNIT, s->npages / PAGES_PER_UNIT, &rel);
	} else {
		size_t n = span_maps_all(s->kind) ? s->npages : 1;
		for (size_t i = 0; i < n; i++)
			map_set(p0 + i, NULL);
		give_back = free_run(p0, s->npages, &rel);
	}
	span_delete(s);
	pthread_mutex_unlock(&pg.lock);
	if (give_back)
		release_units(&rel);
	rt_live_tick();
}

/* Pages [p, p+n) are free for a run of tier t to grow into: free pages of HEAP units
 * it may join, or FREE units (past the frontier too). Under the lock. */
static bool pages_free_for_run(size_t p, size_t n, enum tier t)
{
	if (p + n > pg.max_units * PAGES_PER_UNIT)
		return false;
	for (size_t u = p / PAGES_PER_UNIT; u <= (p + n - 1) / PAGES_PER_UNIT; u++) {
		if (u >= pg.frontier || bit(pg.freebits, u))
			continue;
		size_t from, to;
		unit_part(p, n, u, &from, &to);
		if (!joinable(u, t) || bits_next(pg.units[u].free, from, to, false) != to)
			return false;
	}
	return true;
}

bool pages_resize_run(struct span *s, size_t npages)
{
	size_t p0 = page_of(s->start);
	struct release rel;
	struct dense d = { 0 };
	bool give_back = false;
	int clean;
	/* (Past 1 MiB a block realloc grows moves to whole units, malloc.c: grown in
	 * place across units instead, strings grown by realloc in 2 threads had 10
	 * times as many units given back and refaulted.) */
	size_t most = s->kind == SPAN_FIT ? FIT_CHUNK_PAGES : MEDIUM_MAX >> PAGE_SHIFT;
	if (npages == 0 || (npages > s->npages && (npages > most ||
						   (s->kind != SPAN_MEDIUM && s->kind != SPAN_FIT))))
		return false;
	if (npages < s->npages && atomic_load_explicit(&pg.near, memory_order_relaxed))
		limits_give_back(s->start + (npages << PAGE_SHIFT), s->npages - npages);
	pthread_mutex_lock(&pg.lock);
	if (npages < s->npages) {
		if (span_maps_all(s->kind))
			for (size_t i = npages; i < s->npages; i++)
				map_set(p0 + i, NULL);
		give_back = free_run(p0 + npages, s->npages - npages, &rel);
	} else if (npages > s->npages) {
		size_t p = p0 + s->npages, n = npages - s->npages;
		enum tier t = tier_of((enum span_kind)s->kind);
		if ((p + n > pg.frontier * PAGES_PER_UNIT && many_free_below()) ||
		    !pages_free_for_run(p, n, t) || (clean = take_pages(p, n, t)) < 0) {
			pthread_mutex_unlock(&pg.lock);
			return false;
		}
		if (span_maps_all(s->kind))
			for (size_t i = 0; i < n; i++)
				map_set(p + i, s);
		units_settle(p, n, clean == SPAN_CLEAN, &d);
		s->clean = (uint8_t)clean; /* (of the pages it got last) */
	}
	s->npages = npages;
	pthread_mutex_unlock(&pg.lock);
	dense_collapse(&d);
	if (give_back)
		release_units(&rel);
	return true;
}
