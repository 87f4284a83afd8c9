/* large.c - large blocks as runs of whole units: found, grown in place, moved by
 * mremap, and on 1 GiB pages under 1g. */
#include <errno.h>
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "malloc/malloc.h"
#include "pageheap/unit_os.h"
#include "units.h"

#define MOVE_MIN_UNITS 8    /* realloc moves blocks of 16 MiB or more by mremap */
#define LONG_MAX_BYTES ((size_t)128 << 20) /* the longest runs of pages */
#define GAP_MIN_UNITS 16    /* runs this long start a unit past the frontier's tail */

/* What FREE units [u, u+n) cost a run that claims them: each that holds no memory yet
 * (fresh_units) more than all the rest, then each kept resident by another thread
 * (unit_foreign). */
static size_t run_cost(size_t u, size_t n, unsigned me)
{
	size_t foreign = 0;
	for (size_t i = u; i < u + n && i < pg.frontier; i++)
		foreign += pg.units[i].resident && unit_foreign(i, me);
	return fresh_units(u, n) * (pg.max_units + 1) + foreign;
}

/* n FREE units whose address is aligned to align units (the range itself is aligned
 * to 1 GiB only): their index, growing the range if needed. */
size_t find_units(size_t n, size_t align)
{
	size_t phase = (pg.base >> UNIT_SHIFT) & (align - 1);
	unsigned me = malloc_thread_slot();
	/* The free run that makes the fewest new units resident (empty units kept
	 * resident first: a block that needs new units beside them takes their pages
	 * by mremap, take_kept, which costs a call a unit), then the fewest another
	 * thread's, then the lowest. */
	size_t best = SIZE_MAX, best_cost = SIZE_MAX;
	for (size_t u = bits_next(pg.freebits, 0, pg.frontier, true); u < pg.frontier && best_cost;) {
		size_t e = bits_next(pg.freebits, u, pg.frontier, false);
		size_t at = ((u + phase + align - 1) & ~(align - 1)) - phase;
		size_t cost = at + n <= e ? run_cost(at, n, me) : 0;
		for (; at + n <= e; cost += at + align + n <= e
			? run_cost(at + n, align, me) - run_cost(at, align, me) : 0, at += align) {
			if (cost < best_cost) {
				best = at;
				best_cost = cost;
				if (!cost)
					break;
			}
		}
		u = e < pg.frontier ? bits_next(pg.freebits, e, pg.frontier, true) : pg.frontier;
	}
	if (best != SIZE_MAX)
		return best;
	/* Past the frontier, starting in the free tail below it if there is one. A long
	 * run leaves one unit free before it: runs of one size made one after another
	 * would otherwise lie exactly their size apart, and arrays a power of two apart
	 * (2^28 bytes and more) share the sets of the cache structures that CPUs index by
	 * the low bits of the address, so a loop over several of them runs at a fraction
	 * of its speed (glibc's mmap'd blocks lie a page further apart: their header).
	 * The unit left costs address space only; smaller runs fill it. */
	size_t tail = pg.frontier;
	while (tail > 0 && bit(pg.freebits, tail - 1))
		tail--;
	if (n >= GAP_MIN_UNITS && tail > 0)
		tail++;
	size_t at = ((tail + phase + align - 1) & ~(align - 1)) - phase;
	if (at + n > pg.max_units || range_grow(at + n) < 0)
		return SIZE_MAX;
	return at;
}

void claim_units(size_t at, size_t n)
{
	unsigned me = malloc_thread_slot();
	for (size_t i = at; i < at + n; i++) {
		pg.units[i].owner = (uint16_t)me;
		if (!pg.units[i].in_cache)
			continue;
		cache_remove((int32_t)i);
		/* A unit kept on a hugetlb page goes back to the pool first: the run is
		 * backed whole, and where that falls to THP, no hugetlb page must stay
		 * behind in a unit taken for THP (fork would share it with a child). One
		 * in a chunk stays there, its page reserved: the run's backing keeps it
		 * or makes it plain memory (chunk_leave). */
		if (pg.units[i].chunk) {
			pg.units[i].backing = 0;
		} else if (is_hugetlb(pg.units[i].backing)) {
			unback_hugetlb(i, 1);
			pg.units[i].backing = 0;
			pg.units[i].resident = 0;
		} else {
			pg.st.reused++;
		}
	}
	bits_set(pg.freebits, at, n, false);
}

static struct span *range_alloc_large(size_t size, size_t align)
{
	if (size > (pg.max_units << UNIT_SHIFT))
		return NULL;
	size_t n = (size + UNIT_SIZE - 1) >> UNIT_SHIFT;
	size_t a = align > UNIT_SIZE ? align >> UNIT_SHIFT : 1;
	/* Under 1g, a block of 1 GiB or more starts on a 1 GiB boundary: its whole GiBs
	 * go on 1 GiB pages, the rest on 2 MiB ones. */
	bool giga = pg.policy == SP_BACKING_1G && n >= GIGA_UNITS;
	if (giga && a < GIGA_UNITS)
		a = GIGA_UNITS;
	pthread_mutex_lock(&pg.lock);
	struct span *s = span_new();
	size_t at = s ? find_units(n, a) : SIZE_MAX;
	if (at == SIZE_MAX) {
		if (s)
			span_delete(s);
		pthread_mutex_unlock(&pg.lock);
		return NULL;
	}
	claim_units(at, n);
	take_kept(at, n);
	/* (Clean: every unit holds no memory, or gets hugetlb memory mapped anew; a
	 * unit of a chunk keeps the page it had, what a block before wrote in it.) */
	bool clean = true, kept = false;
	for (size_t i = at; i < at + n; i++) {
		clean = clean && !pg.units[i].resident;
		kept = kept || (pg.units[i].chunk && pg.units[i].resident);
	}
	size_t g = n / GIGA_UNITS * GIGA_UNITS;
	if (!giga || !back_hugetlb(at, g, SP_BACKING_1G))
		g = 0;
	/* The rest on 2 MiB pages, as many as the pool holds, then plain memory. */
	enum sp_backing got = SP_BACKING_1G;
	size_t h = g < n ? back_units_most(at + g, n - g, &got) : 0;
	for (size_t i = at; i < at + n; i++) {
		pg.units[i].state = U_LARGE;
		pg.units[i].backing = (uint8_t)(i < at + g ? SP_BACKING_1G
						  : i < at + g + h ? SP_BACKING_2M : got);
		pg.units[i].resident = 1;
	}
	count_units(SP_BACKING_1G, (long)g);
	count_units(SP_BACKING_2M, (long)h);
	count_units(got, (long)(n - g - h));
	units_settle_large(at, n);
	s->kind = SPAN_LARGE;
	s->start = unit_addr(at);
	s->npages = n * PAGES_PER_UNIT;
	s->clean = clean || (!kept && (g + h == n || is_hugetlb((uint8_t)got))) ? SPAN_CLEAN : 0;
	map_set(page_of(s->start), s);
	pg.st.large_blocks++;
	pg.st.large_bytes += n << UNIT_SHIFT;
	pthread_mutex_unlock(&pg.lock);
	maybe_promote();
	rt_live_tick();
	return s;
}

/* Blocks up to LONG_MAX that whole units would round up by more than 1/64 are runs
 * of pages (across units), as medium ones are: as whole units, a block of 2.2 MB
 * was resident as 4 MiB, one of 9 MB as 10 MiB. Past LONG_MAX a unit's worth of
 * rounding is under 1/64; and runs of whole units are what realloc moves by mremap
 * and 1 GiB pages hold. Under a limit (tight) large blocks go as they did. */
bool pages_is_run(size_t size, size_t align)
{
	if (size <= MEDIUM_MAX)
		return align <= UNIT_SIZE;
	if (pg.tight || align > PAGE_SIZE || size > LONG_MAX_BYTES)
		return false;
	size_t len, more = unit_rounding(size, &len);
	return more * 64 > len;
}

struct span *pages_alloc_large(size_t size, size_t align)
{
	struct span *s = NULL;
	bool badly = rounds_badly(size);
	/* Under a limit, to the page first; the range may still have free units. */
	if (badly && (s = outside_alloc(size, align, OUT_ROUND)))
		return s;
	if ((s = range_alloc_large(size, align)) || badly)
		return s;
	return outside_alloc(size, align, pg.tight ? OUT_LIMIT : OUT_FULL);
}

/* Units [at, at+n) belong to a large block, on backing b. */
static void large_units(size_t at, size_t n, uint8_t b)
{
	for (size_t i = at; i < at + n; i++) {
		pg.units[i].state = U_LARGE;
		pg.units[i].backing = b;
		pg.units[i].resident = 1;
	}
}

/* The backing of the units a large block whose first unit is on backing first grows
 * by: under auto base pages, as a new block's (units_settle_large makes them huge
 * where they should be; the block's own units may have been made huge one by one,
 * when touched); else the block's. */
static uint8_t growth_backing(uint8_t first)
{
	return pg.small_first ? SP_BACKING_4K : first;
}

/* Large block s, n units at u, grows to want units in place, where the units after
 * it are free (growing the range if need be). Under the lock. */
static bool grow_in_place(struct span *s, size_t u, size_t n, size_t want, uint8_t backing)
{
	if (u + want > pg.max_units || (u + want > pg.frontier && range_grow(u + want) < 0) ||
	    bits_next(pg.freebits, u + n, u + want, false) != u + want)
		return false;
	claim_units(u + n, want - n);
	chunk_leave(u + n, want - n); /* (a block not on hugetlb pages: plain memory) */
	backing = growth_backing(backing);
	large_units(u + n, want - n, backing);
	count_units((enum sp_backing)backing, (long)(want - n));
	units_settle_large(u + n, want - n);
	s->npages = want * PAGES_PER_UNIT;
	pg.st.large_bytes += (want - n) << UNIT_SHIFT;
	return true;
}

/* Moves large block s, n units at u, to a free run of want units, leaving the old
 * units mapped and empty (MREMAP_DONTUNMAP): no copy, and no hole in the range.
 * Under the lock. */
static bool move_units(struct span *s, size_t u, size_t n, size_t want, uint8_t backing)
{
	size_t at = find_units(want, 1);
	void *out;
	if (at == SIZE_MAX)
		return false;
	claim_units(at, want);
	if (unit_move((void *)s->start, n << UNIT_SHIFT, (void *)unit_addr(at), true, &out) < 0) {
		plain_units(at, n); /* a refused move may have unmapped them */
		bits_set(pg.freebits, at, want, true);
		return false;
	}
	chunk_forget(at, n);
	chunk_leave(at + n, want - n);
	backing = growth_backing(backing);
	large_units(at, want, backing);
	/* (The move takes each unit's advice and backing along, counted where it was.) */
	for (size_t i = 0; i < n; i++) {
		pg.units[at + i].huge = pg.units[u + i].huge;
		pg.units[at + i].backing = pg.units[u + i].backing;
	}
	for (size_t i = u; i < u + n; i++) {
		pg.units[i].state = U_FREE;
		pg.units[i].resident = 0;
		pg.units[i].backing = 0;
	}
	bits_set(pg.freebits, u, n, true);
	count_units((enum sp_backing)backing, (long)(want - n));
	units_settle_large(at, want);
	map_set(page_of(s->start), NULL);
	s->start = unit_addr(at);
	s->npages = want * PAGES_PER_UNIT;
	map_set(page_of(s->start), s);
	pg.st.large_bytes += (want - n) << UNIT_SHIFT;
	pg.st.mremaps++;
	range_trim_top();
	return true;
}

bool pages_resize_large(struct span *s, size_t new_size)
{
	size_t n = s->npages / PAGES_PER_UNIT;
	if (s->kind == SPAN_OUTSIDE)
		return outside_resize(s, new_size);
	if (new_size > (pg.max_units << UNIT_SHIFT))
		return false;
	size_t want = (new_size + UNIT_SIZE - 1) >> UNIT_SHIFT;
	size_t u = (s->start - pg.base) >> UNIT_SHIFT;
	struct release rel;
	if (want == n)
		return true;
	if (want > n && rounds_badly(new_size))
		return false; /* (the caller copies it to a block to the page) */
	/* A block on 1 GiB pages keeps its size: its mapping cannot be cut. */
	if (want < n && pg.units[u].backing == SP_BACKING_1G)
		return true;
	pthread_mutex_lock(&pg.lock);
	if (want < n) {
		bool give_back = retire_units(u + want, n - want, &rel);
		s->npages = want * PAGES_PER_UNIT;
		pg.st.large_bytes -= (n - want) << UNIT_SHIFT;
		pthread_mutex_unlock(&pg.lock);
		if (give_back)
			release_units(&rel);
		return true;
	}
	uint8_t backing = pg.units[u].backing; /* the unit's: a forked child's are THP */
	bool hugetlb = is_hugetlb(backing);
	/* In place when the units after the block are free; else moved, but a block
	 * below MOVE_MIN_UNITS is copied by the caller: the units it leaves stay
	 * resident for the next block, where moved-from units would be faulted in again
	 * (a copy of 2 MiB costs about what faulting 2 MiB in does). */
	bool ok = !hugetlb && (grow_in_place(s, u, n, want, backing) ||
			       (n >= MOVE_MIN_UNITS && move_units(s, u, n, want, backing)));
	pthread_mutex_unlock(&pg.lock);
	return ok;
}
