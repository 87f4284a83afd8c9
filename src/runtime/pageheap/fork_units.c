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
 * copy them for nothing, and the pool has more room for the copies on write. Under
 * the lock. */
void pages_fork_prepare(void)
{
	for (int32_t u = pg.cache_head, next; u != NO_UNIT; u = next) {
		next = pg.units[u].next;
		if (!is_hugetlb(pg.units[u].backing))
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

/* In the child, once fork.c has copied every hugetlb unit: they are THP now. */
void pages_fork_copied(void)
{
	size_t k = 0;
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
	release_emptied(0, pg.frontier);
}
