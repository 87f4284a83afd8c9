/* release.c - units with no user any more: kept resident in the empty-unit cache, or
 * given back to the kernel whole (never in 4 KiB pieces that would split a
 * huge page). */
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "malloc/malloc.h"
#include "pageheap/unit_os.h"
#include "units.h"

#define RECENT_NS 1000000000ull /* how long "lately" is, for the kept units */

/* A unit or run of units has no user any more: keep it resident in the empty cache
 * while the cache is small (a program that frees and allocates again pays no fault),
 * else mark it RELEASING for the caller to give back. */
bool retire_units(size_t u, size_t n, struct release *rel)
{
	bool hugetlb = is_hugetlb(pg.units[u].backing), mapping = pg.units[u].mapping;
	uint64_t in_use = 0;
	if (mapping) {
		/* A program's mapping fallen to plain memory had THP advice of its own; and
		 * what the program unmaps is given back, not kept resident. */
		for (size_t i = u; i < u + n; i++)
			pg.units[i].mapping = 0;
		pg.mapping_units -= n;
		if (!hugetlb)
			unit_advise((void *)unit_addr(u), n << UNIT_SHIFT, range_advice());
	}
	for (size_t i = u; i < u + n; i++)
		count_units((enum sp_backing)pg.units[i].backing, -1);
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		in_use += pg.st.units[b];
	/* Empty units stay resident, for a program that frees and allocates again (a
	 * growing string, a buffer per request) to pay no new fault: as many as it had
	 * resident lately over what it has in use now (at most as many as it has in
	 * use, or 16), and at least one per four in use (at least four). Past that, and
	 * once that peak is a second old, units go back to the kernel. */
	uint64_t now = heap_now_ns();
	if (now - pg.st.recent_peak_ns > RECENT_NS) {
		pg.st.recent_peak = in_use + n;
		pg.st.recent_peak_ns = now;
	}
	size_t limit = in_use / 4 > 4 ? (size_t)(in_use / 4) : 4;
	size_t lately = pg.st.recent_peak > in_use ? (size_t)(pg.st.recent_peak - in_use) : 0;
	size_t most = in_use > 16 ? (size_t)in_use : 16;
	if (lately > limit)
		limit = lately < most ? lately : most;
	/* (1 GiB pages are not kept: a fraction of one is not a unit to give out. Under
	 * SUPERPAGE_SHRINK none is, nor near a memory limit.) */
	if (rt_options()->shrink || atomic_load_explicit(&pg.near, memory_order_relaxed))
		limit = 0;
	if (!pg.tight && pg.units[u].backing != SP_BACKING_1G && !mapping && pg.cached + n <= limit) {
		for (size_t i = u; i < u + n; i++) {
			pg.units[i].state = U_FREE;
			pg.units[i].in_cache = 1;
			pg.units[i].owner = (uint16_t)malloc_thread_slot();
			list_push_front(&pg.cache_head, &pg.cache_tail, (int32_t)i);
			pg.cached++;
		}
		bits_set(pg.freebits, u, n, true);
		return false;
	}
	for (size_t i = u; i < u + n; i++)
		pg.units[i].state = U_RELEASING;
	rel->u = u;
	rel->n = n;
	rel->extra = NO_EXTRA;
	/* The cache may hold more than its limit now (it was filled while more was in
	 * use): each run given back takes its oldest unit along, until it fits. */
	if (pg.cached > limit && pg.cache_tail != NO_UNIT &&
	    is_hugetlb(pg.units[pg.cache_tail].backing) == hugetlb) {
		int32_t t = pg.cache_tail;
		cache_remove(t);
		bits_set(pg.freebits, (size_t)t, 1, false);
		pg.units[t].state = U_RELEASING;
		rel->extra = (size_t)t;
	}
	if (hugetlb) {
		/* Given back now, under the lock (unmapping hugetlb pages is quick): a fork
		 * in the meantime would not stage them, no unit of the heap's any more,
		 * and would share them with the child. With the pool short, that was seen
		 * to end in a SIGBUS in this process (threads unmapping hugetlb mappings
		 * while another forked). */
		mark_released(rel, give_back_units(rel));
		return false;
	}
	return true;
}

/* What give_back_units did: bit 0 the run, bit 1 the extra unit was given back. */
#define GAVE_RUN 1u
#define GAVE_EXTRA 2u

/* Gives the units back to the kernel: hugetlb pages to the pool, THP memory freed. */
unsigned give_back_units(const struct release *rel)
{
	unsigned ok = 0;
	if (is_hugetlb(pg.units[rel->u].backing)) { /* (and the extra unit, if any: hugetlb too) */
		unback_hugetlb(rel->u, rel->n);
		if (rel->extra != NO_EXTRA)
			unback_hugetlb(rel->extra, 1);
		return GAVE_RUN | GAVE_EXTRA;
	}
	if (rel->extra != NO_EXTRA &&
	    unit_release((void *)unit_addr(rel->extra), UNIT_SIZE) == 0)
		ok |= GAVE_EXTRA;
	if (unit_release((void *)unit_addr(rel->u), rel->n << UNIT_SHIFT) == 0)
		ok |= GAVE_RUN;
	return ok;
}

static void mark_one_released(size_t u, bool ok)
{
	pg.units[u].state = U_FREE;
	pg.units[u].resident = !ok;
	if (ok)
		pg.units[u].backing = 0;
}

/* A unit whose madvise failed stays marked resident: memory given out from it is
 * not taken to read as zero. */
void mark_released(const struct release *rel, unsigned ok)
{
	for (size_t i = rel->u; i < rel->u + rel->n; i++)
		mark_one_released(i, ok & GAVE_RUN);
	bits_set(pg.freebits, rel->u, rel->n, true);
	pg.st.released += rel->n;
	if (rel->extra != NO_EXTRA) {
		mark_one_released(rel->extra, ok & GAVE_EXTRA);
		bits_set(pg.freebits, rel->extra, 1, true);
		pg.st.released++;
	}
	range_trim_top();
}

/* The system calls run without the lock (a big madvise must not hold up malloc). */
void release_units(const struct release *rel)
{
	unsigned ok = give_back_units(rel);
	pthread_mutex_lock(&pg.lock);
	mark_released(rel, ok);
	pthread_mutex_unlock(&pg.lock);
}

void release_units_locked(const struct release *rel)
{
	mark_released(rel, give_back_units(rel));
}

/* Pages of a unit that holds a program's mapping were unmapped: the unit goes once
 * it is empty, and a unit on a 1 GiB page once every unit of that page is (the kernel
 * cannot split its mapping; until then the emptied units stay as they are). Their
 * free pages are never the heap's: they would be in memory that demote_units copies.
 * Under the lock. */
bool mapping_unit_freed(size_t u, struct release *rel)
{
	size_t first = u, n = 1;
	if (pg.units[u].nfree < PAGES_PER_UNIT)
		return false;
	if (pg.units[u].backing == SP_BACKING_1G) {
		first = u - u % GIGA_UNITS;
		n = GIGA_UNITS;
		for (size_t i = first; i < first + n; i++)
			if (pg.units[i].nfree < PAGES_PER_UNIT)
				return false;
	}
	pg.heap_units -= n;
	return retire_units(first, n, rel);
}

/* Units of [u, u+n) that held a program's mapping on a 1 GiB page, and were emptied
 * while the rest of that page was not, are given back once they are on pages of
 * their own (demoted, or copied in a forked child). Under the lock. */
void release_emptied(size_t u, size_t n)
{
	for (size_t i = u; i < u + n; i++) {
		struct release rel;
		if (pg.units[i].state != U_HEAP || !pg.units[i].mapping || is_hugetlb(pg.units[i].backing) ||
		    pg.units[i].nfree < PAGES_PER_UNIT)
			continue;
		pg.heap_units--;
		if (retire_units(i, 1, &rel))
			release_units_locked(&rel);
	}
}
