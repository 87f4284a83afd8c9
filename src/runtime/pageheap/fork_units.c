/* fork_units.c - the page heap's hugetlb units at fork. The kernel's fork shares them
 * with the child, copy on write, as it shares all private memory: the child's heap is
 * the parent's at the instant of fork, whichever thread was writing it. The child
 * then copies each unit into THP memory of its own, reading only, and drops its share
 * (fork.c says why, and how the pool's room for the copies on write is kept). The
 * parent keeps its units and copies nothing. */
#include <string.h>
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "life.h"
#include "units.h"

static bool is_hugetlb_unit(size_t u)
{
	return (pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE) &&
	       is_hugetlb(pg.units[u].backing);
}

static size_t page_of_backing(uint8_t b)
{
	return b == SP_BACKING_1G ? GIGA_UNITS << UNIT_SHIFT : UNIT_SIZE;
}

/* Empty units kept on hugetlb pages go back to the pool before fork: the child would
 * copy them for nothing, and the pool has more room for the copies on write. Not
 * those in chunks (backing.c): one given back from the middle of a chunk cuts its
 * mapping in two, and a program that forks often would cut its chunks to units. The
 * child shares their pages, and drops them without a copy (pages_fork_copied); the
 * room the pool must have counts them (pages_fork_held). Under the lock. */
void pages_fork_prepare(void)
{
	for (int32_t u = pg.cache_head, next; u != NO_UNIT; u = next) {
		next = pg.units[u].next;
		if (!is_hugetlb(pg.units[u].backing) || pg.units[u].chunk)
			continue;
		cache_remove(u);
		pg.units[u].state = U_RELEASING;
		struct release rel = { .u = (size_t)u, .n = 1, .extra = NO_EXTRA };
		mark_released(&rel, give_back_units(&rel));
	}
}

/* Each run of hugetlb units of one page size, to fn. Under the lock. (A 1 GiB page's
 * units are all hugetlb while any of them is: release.c gives them back together.) */
void pages_fork_hugetlb(fork_range_fn fn, void *arg)
{
	for (size_t u = 0; u < pg.frontier;) {
		if (!is_hugetlb_unit(u)) {
			u++;
			continue;
		}
		size_t v = u + 1;
		while (v < pg.frontier && is_hugetlb_unit(v) && pg.units[v].backing == pg.units[u].backing)
			v++;
		fn(unit_addr(u), (v - u) << UNIT_SHIFT, page_of_backing(pg.units[u].backing), arg);
		u = v;
	}
}

/* Whether the 2 MiB page at a is known present: a unit of a chunk whose page a walk
 * of the page tables found (pages_fork_faulted_at) and that has not left its chunk
 * since. The parent is its page's reservation owner, and the heap never drops a page
 * from a chunk (the program's MADV_DONTNEED of its memory is written as zeros,
 * demote.c): it stays present until the unit leaves the chunk (chunk_forget). Fork
 * walks only the others. Under the lock. */
bool pages_fork_faulted(uintptr_t a)
{
	if (a < pg.base || a >= unit_addr(pg.frontier))
		return false;
	const struct unit *x = &pg.units[(a - pg.base) >> UNIT_SHIFT];
	return x->chunk && x->faulted;
}

void pages_fork_faulted_at(uintptr_t a)
{
	if (a >= pg.base && a < unit_addr(pg.frontier) && pg.units[(a - pg.base) >> UNIT_SHIFT].chunk)
		pg.units[(a - pg.base) >> UNIT_SHIFT].faulted = 1;
}

/* The pages of chunks' free units the child shares (pages_fork_prepare): those that
 * were given out, and may be present (resident); a spare unit's page is reserved and
 * not faulted in, and shared with no one. Under the lock. */
size_t pages_fork_held(void)
{
	size_t k = 0;
	for (size_t u = 0; u < pg.frontier; u++)
		k += pg.units[u].chunk && pg.units[u].state == U_FREE && pg.units[u].resident;
	return k;
}

/* The free units of chunks from u on, up to n, made plain memory: their pages (or
 * reservations) go back to the pool. How many of them the child would have shared.
 * Under the lock. */
static size_t give_back_free(size_t u, size_t n)
{
	size_t shared = 0;
	for (size_t i = u; i < u + n; i++) {
		struct unit *x = &pg.units[i];
		shared += x->resident;
		if (x->in_cache)
			cache_remove((int32_t)i);
		x->resident = 0;
		x->backing = 0;
	}
	plain_units(u, n);
	forget_refusals();
	return shared;
}

static bool chunk_free(size_t u)
{
	return pg.units[u].chunk && pg.units[u].state == U_FREE;
}

/* Before a fork the pool cannot cover: free units of chunks given back, from the top
 * of the range down, until want pages more of room are had (a spare unit's
 * reservation gives one; a kept unit's page two, one more free and one the child does
 * not share): first the spare ones (at the tops of chunks: a chunk shrinks, and is
 * not cut in two), then the kept ones. Nothing is copied, and no thread can be
 * writing a free unit: no hold is needed. The room had; under the lock. */
long pages_fork_trim(long want)
{
	long had = 0;
	for (int kept = 0; kept < 2 && had < want; kept++)
		for (size_t u = pg.frontier; u-- > 0 && had < want;) {
			if (!chunk_free(u) || pg.units[u].resident != kept)
				continue;
			size_t e = u + 1;
			while (u > 0 && chunk_free(u - 1) && pg.units[u - 1].resident == kept &&
			       had + (long)(e - u) * (kept + 1) < want)
				u--;
			had += (long)(e - u) + (long)give_back_free(u, e - u);
		}
	return had;
}

/* Before a fork the pool cannot cover, with the other threads' writes held (fork.c):
 * up to want[0] units on 2 MiB pages and want[1] 1 GiB pages copied to THP in place,
 * from the top of the range down, so that their pages go back to the pool; want is
 * left with what could not be. The units moved; under the lock. */
size_t pages_fork_demote(long want[2])
{
	size_t moved = 0;
	for (size_t u = pg.frontier; u-- > 0 && (want[0] > 0 || want[1] > 0);) {
		if (!is_hugetlb_unit(u))
			continue;
		int i = pg.units[u].backing == SP_BACKING_1G;
		if (want[i] <= 0 || (i && u % GIGA_UNITS))
			continue;
		if (demote_units(u)) {
			want[i]--;
			moved += i ? GIGA_UNITS : 1;
		}
	}
	return moved;
}

/* In a forked child: the chunks' free units made plain memory (what the kept ones
 * held is no one's; a spare one's reservation is the parent's, and a touch of it here
 * would take a page from the pool), and the chunks forgotten (their units in use are
 * copied, or about to be). Under the lock. */
static void chunks_child(void)
{
	for (size_t u = 0; u < pg.frontier; u++) {
		if (chunk_free(u)) {
			size_t e = u + 1;
			while (e < pg.frontier && chunk_free(e))
				e++;
			give_back_free(u, e - u);
			u = e - 1;
			continue;
		}
		pg.units[u].chunk = pg.units[u].faulted = 0;
	}
}

/* In the child, once fork.c has copied every hugetlb unit: they are THP now, and the
 * chunks are gone (chunks_child). */
void pages_fork_copied(void)
{
	size_t k = 0;
	chunks_child();
	for (size_t u = 0; u < pg.frontier; u++) {
		if (!is_hugetlb_unit(u))
			continue;
		pg.st.units[pg.units[u].backing]--;
		pg.units[u].backing = SP_BACKING_THP;
		k++;
	}
	pg.st.units[SP_BACKING_THP] += k;
}

void pages_fork_child(void)
{
	chunks_child(); /* (a fork that shared no page did not copy: spare units only) */
	release_emptied(0, pg.frontier);
}
