/* mappings.c - the program's large mappings on hugetlb units (2m, 1g): mapped, grown,
 * unmapped.
 *
 * A private anonymous mmap of at least SUPERPAGE_MIN is served from units of the
 * range, one SPAN_MMAP span per unit, so that its hugetlb pages are staged around
 * fork with the heap's (above) and never shared with a child, and its munmap,
 * mremap and madvise are answered by the range's code. Its units hold nothing of the
 * heap's: the kernel cannot re-protect or map over part of a hugetlb page, so a unit
 * the program changes is first copied to THP memory in place (demote_units), and no
 * malloc'd object may lie in memory being copied. And the counts of mmap.c's other
 * mappings for the account: executable heaps, hints placed. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "program/mmap.h"
#include "pageheap/unit_os.h"
#include "units.h"

/* What mmap.c did with the program's mappings beyond the heap's counts. */
static struct {
	_Atomic uint64_t exec_maps, exec_bytes, hints_moved;
} mst;

void map_note_exec(size_t len)
{
	atomic_fetch_add_explicit(&mst.exec_maps, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&mst.exec_bytes, len, memory_order_relaxed);
}

void map_note_hint_moved(void)
{
	atomic_fetch_add_explicit(&mst.hints_moved, 1, memory_order_relaxed);
}

void rt_map_stats_get(struct rt_map_stats *out)
{
	out->exec_maps = atomic_load_explicit(&mst.exec_maps, memory_order_relaxed);
	out->exec_bytes = atomic_load_explicit(&mst.exec_bytes, memory_order_relaxed);
	out->hints_moved = atomic_load_explicit(&mst.hints_moved, memory_order_relaxed);
}

/* The SPAN_MMAP span on page p, if any. Under the lock. */
struct span *mmap_span_at(size_t p)
{
	struct span *s = atomic_load_explicit(&heap_hot.pagemap[p], memory_order_relaxed);
	return s && s->kind == SPAN_MMAP ? s : NULL;
}

/* Clamps [addr, addr+len) to the writable part of the range, in pages. */
bool page_window(uintptr_t addr, size_t len, size_t *first, size_t *last)
{
	uintptr_t lo = addr > pg.base ? addr : pg.base, hi = addr + len;
	uintptr_t top = unit_addr(pg.frontier);
	if (hi > top)
		hi = top;
	if (hi <= lo)
		return false;
	*first = page_of(lo);
	*last = page_of(hi - 1) + 1;
	return true;
}

int pages_unmap(uintptr_t addr, size_t len)
{
	struct release rel[8];
	int nrel = 0, err = 0;
	size_t p, last;
	pthread_mutex_lock(&pg.lock);
	if (!page_window(addr, len, &p, &last)) {
		pthread_mutex_unlock(&pg.lock);
		return 0;
	}
	while (p < last) {
		struct span *s = mmap_span_at(p);
		if (!s) {
			p++;
			continue;
		}
		size_t s0 = page_of(s->start), s1 = s0 + s->npages;
		size_t lo = p, hi = last < s1 ? last : s1;
		struct span *r = NULL;
		/* No descriptor for the right part, or the program's changed pages cannot
		 * be plain anonymous memory again (out of mappings): the span stays whole
		 * and mapped, the heap never reuses its pages, and the program is told
		 * ENOMEM, as the kernel's munmap says when a split would pass
		 * vm.max_map_count. (Cut with its pages left in use, the span held less
		 * than its unit used, and the unit was never given back.) */
		if ((hi < s1 && lo > s0 && !(r = span_new())) ||
		    (s->foreign && !restore_pages(lo, hi))) {
			if (r)
				span_delete(r);
			err = -ENOMEM;
			break;
		}
		for (size_t i = lo; i < hi; i++)
			map_set(i, NULL);
		if (r) {
			/* A hole in the middle: the right part becomes a span of its own. */
			*r = *s;
			r->start = pg.base + (hi << PAGE_SHIFT);
			r->npages = s1 - hi;
			pages_map_all(r);
			s->npages = lo - s0;
		} else if (hi < s1) {
			s->start = pg.base + (hi << PAGE_SHIFT);
			s->npages = s1 - hi;
		} else if (lo > s0) {
			s->npages = lo - s0;
		} else {
			span_delete(s);
		}
		if (!pg.units[lo / PAGES_PER_UNIT].mapping) /* (large mappings are not counted) */
			pg.st.small_mmap_pages -= hi - lo;
		struct release one;
		if (free_pages(lo, hi - lo, &one)) {
			if (nrel < 8)
				rel[nrel++] = one;
			else
				release_units_locked(&one);
		}
		p = hi;
	}
	pthread_mutex_unlock(&pg.lock);
	for (int i = 0; i < nrel; i++)
		release_units(&rel[i]);
	return err;
}

void pages_note_foreign(uintptr_t addr, size_t len)
{
	size_t p, last;
	pthread_mutex_lock(&pg.lock);
	if (page_window(addr, len, &p, &last))
		for (; p < last; p++) {
			struct span *s = mmap_span_at(p);
			/* (A hugetlb unit is never changed: pages_demote copied it to THP
			 * first, or the change was none, mprotect to read-write.) */
			if (s && !is_hugetlb(pg.units[p / PAGES_PER_UNIT].backing))
				s->foreign = true;
		}
	pthread_mutex_unlock(&pg.lock);
}

bool pages_program_owns(uintptr_t addr, size_t len)
{
	size_t p, last;
	bool owns = true;
	pthread_mutex_lock(&pg.lock);
	if (addr < pg.base || addr + len > unit_addr(pg.frontier) || !page_window(addr, len, &p, &last))
		owns = false;
	else
		for (; p < last && owns; p++)
			owns = mmap_span_at(p) != NULL;
	pthread_mutex_unlock(&pg.lock);
	return owns;
}

/* Units claimed for a mapping that is not made after all go back to the free ones,
 * as they are now (what they held, or fresh plain memory after a refused move), so
 * they stay marked resident if they were. Under the lock. */
static void unclaim_units(size_t at, size_t n)
{
	for (size_t i = at; i < at + n; i++) {
		pg.units[i].state = U_FREE;
		pg.units[i].backing = 0;
	}
	bits_set(pg.freebits, at, n, true);
}

/* A unit taken for a program's mappings, of backing b: in the heap, resident, in no
 * bucket (its free pages are the caller's to set). */
void mapping_unit_start(struct unit *x, enum sp_backing b)
{
	x->state = U_HEAP;
	x->mapping = 1;
	pg.mapping_units++;
	x->backing = (uint8_t)b;
	x->resident = 1;
	x->bucket = NO_BUCKET;
	x->longest = 0;
}

/* Units [at, at+n), mapped with backing b, become the program's: its np pages from
 * the first one, a span per unit taken from *list; the rest of the last unit is free
 * and stays unused. Under the lock. */
static void mapping_units_set(size_t at, size_t n, size_t np, enum sp_backing b,
			      struct span **list)
{
	for (size_t i = 0; i < n; i++) {
		struct unit *x = &pg.units[at + i];
		struct span *s = *list;
		size_t used = np - i * PAGES_PER_UNIT;
		if (used > PAGES_PER_UNIT)
			used = PAGES_PER_UNIT;
		*list = s->next;
		mapping_unit_start(x, b);
		memset(x->free, 0, sizeof x->free);
		bits_set(x->free, used, PAGES_PER_UNIT - used, true);
		set_nfree(x, PAGES_PER_UNIT - used);
		pg.heap_units++;
		count_units(b, 1);
		s->next = NULL;
		s->kind = SPAN_MMAP;
		s->start = unit_addr(at + i);
		s->npages = used;
		pages_map_all(s);
	}
}

void *pages_map_program(size_t len, int flags, bool hugetlb, int *err)
{
	*err = 0;
	if (pg.map_rung == SP_BACKING_COUNT || len == 0)
		return NULL;
	/* (Larger than the range: n would not hold it, and the rounding could wrap.) */
	size_t np = len <= (pg.max_units << UNIT_SHIFT) ? (len + PAGE_SIZE - 1) >> PAGE_SHIFT : 0;
	size_t n = (np + PAGES_PER_UNIT - 1) / PAGES_PER_UNIT;
	bool giga = hugetlb && pg.map_rung == SP_BACKING_1G && n >= GIGA_UNITS;
	pthread_mutex_lock(&pg.lock);
	struct span *list = np ? spans_new(n) : NULL;
	size_t at = list ? find_units(n, giga ? GIGA_UNITS : 1) : SIZE_MAX;
	if (at == SIZE_MAX) {
		/* No room in the range (or no descriptors): the kernel maps it, on THP. */
		if (hugetlb)
			pages_note_fall(giga ? SP_BACKING_1G : SP_BACKING_2M, SP_FALL_MMAP);
		pthread_mutex_unlock(&pg.lock);
		goto drop;
	}
	claim_units(at, n);
	/* The whole GiBs on 1 GiB pages under 1g, the rest on 2 MiB ones. */
	size_t g = giga ? n / GIGA_UNITS * GIGA_UNITS : 0, h = 0;
	if (g && !back_hugetlb(at, g, SP_BACKING_1G))
		g = 0;
	if (hugetlb && g < n)
		h = back_hugetlb_most(at + g, n - g);
	if (hugetlb && g + h == 0) {
		/* No hugetlb page at all (counted): the kernel's THP mapping serves it, as
		 * under the other backings. */
		unclaim_units(at, n);
		pthread_mutex_unlock(&pg.lock);
		goto drop;
	}
	if (g + h < n) {
		int r = plain_for_program(at + g + h, n - g - h, flags);
		if (r < 0) {
			/* Refused where the kernel would have refused the whole mapping. */
			unback_hugetlb(at, g + h);
			plain_units(at + g + h, n - g - h);
			unclaim_units(at, n);
			pthread_mutex_unlock(&pg.lock);
			*err = -r;
			goto drop;
		}
	}
	mapping_units_set(at, g, np, SP_BACKING_1G, &list);
	mapping_units_set(at + g, h, np - g * PAGES_PER_UNIT, SP_BACKING_2M, &list);
	mapping_units_set(at + g + h, n - g - h, np - (g + h) * PAGES_PER_UNIT, plain_backing(),
			  &list);
	pthread_mutex_unlock(&pg.lock);
	void *p = (void *)unit_addr(at);
	if (flags & MAP_POPULATE)
		unit_populate(p, np << PAGE_SHIFT);
	return p;
drop:
	if (list) {
		pthread_mutex_lock(&pg.lock);
		spans_delete(list);
		pthread_mutex_unlock(&pg.lock);
	}
	return NULL;
}

bool pages_grow_mapping(uintptr_t end, size_t add)
{
	size_t lp = page_of(end - 1), np = add >> PAGE_SHIFT, u = lp / PAGES_PER_UNIT;
	size_t off = lp % PAGES_PER_UNIT + 1, nu = 0;
	struct span *s = NULL, *list = NULL;
	bool ok = false;
	pthread_mutex_lock(&pg.lock);
	if (end <= pg.base || u >= pg.frontier || !pg.units[u].mapping || np == 0)
		goto out;
	s = mmap_span_at(lp);
	if (!s || s->start + (s->npages << PAGE_SHIFT) != end)
		goto out;
	/* The free pages after it in its unit, then free units after that one. */
	size_t here = PAGES_PER_UNIT - off < np ? PAGES_PER_UNIT - off : np;
	if (bits_next(pg.units[u].free, off, off + here, false) != off + here)
		goto out;
	size_t more = np - here, u1 = u + 1;
	nu = (more + PAGES_PER_UNIT - 1) / PAGES_PER_UNIT;
	if (nu) {
		if (u1 + nu > pg.max_units || (u1 + nu > pg.frontier && range_grow(u1 + nu) < 0) ||
		    bits_next(pg.freebits, u1, u1 + nu, false) != u1 + nu || !(list = spans_new(nu)))
			goto out;
		claim_units(u1, nu);
		size_t h = back_hugetlb_most(u1, nu);
		if (h < nu && plain_for_program(u1 + h, nu - h, MAP_NORESERVE) < 0) {
			unback_hugetlb(u1, h);
			plain_units(u1 + h, nu - h);
			unclaim_units(u1, nu);
			goto out;
		}
		mapping_units_set(u1, h, more, SP_BACKING_2M, &list);
		mapping_units_set(u1 + h, nu - h, more - h * PAGES_PER_UNIT, plain_backing(), &list);
	}
	if (here) {
		/* These pages may have been the program's before (unmapped since): zero,
		 * as new memory is. They are read-write: nothing but pages_demote's owners
		 * change the protection of a mapping unit. */
		unit_take(u, off, here);
		memset((void *)end, 0, here << PAGE_SHIFT);
		for (size_t i = 0; i < here; i++)
			map_set(lp + 1 + i, s);
		s->npages += here;
	}
	ok = true;
out:
	spans_delete(list);
	pthread_mutex_unlock(&pg.lock);
	return ok;
}
