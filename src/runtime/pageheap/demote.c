/* demote.c - what the program does to its large mappings on hugetlb units: a change
 * of protection or a fixed mapping over them (their units copied to THP first,
 * demoted), and madvise. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "pageheap/unit_os.h"
#include "units.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

/* Copies a hugetlb unit (all the units of its 1 GiB page, for those) to THP memory in
 * place: the program changes part of it, or a fork needs room in the pool (fork.c,
 * which holds the other threads' writes meanwhile). Otherwise a write that another
 * thread makes to that memory while it is copied is lost (superpage-run(7)). Under
 * the lock, with the caller's signals blocked (a handler must not write it
 * meanwhile). */
bool demote_units(size_t u)
{
	size_t first = u, n = 1;
	if (pg.units[u].backing == SP_BACKING_1G) {
		first = u - u % GIGA_UNITS;
		n = GIGA_UNITS;
	}
	if (!units_from_copy(first, n, (const void *)unit_addr(first)))
		return false;
	enum sp_backing b = plain_backing();
	for (size_t i = first; i < first + n; i++) {
		pg.st.units[pg.units[i].backing]--;
		pg.st.units[b]++;
		pg.units[i].backing = (uint8_t)b;
	}
	forget_refusals();
	release_emptied(first, n);
	return true;
}

/* Copies to THP every hugetlb unit of a program's mapping that pages [p, last) touch,
 * with the caller's signals blocked from the first (*blocked, *old: to put back once
 * the lock is dropped). 0, or -ENOMEM if a unit could not be copied. Under the lock. */
static int demote_window(size_t p, size_t last, bool *blocked, sigset_t *old)
{
	sigset_t all;
	for (size_t u = p / PAGES_PER_UNIT; u <= (last - 1) / PAGES_PER_UNIT; u++) {
		if (!pg.units[u].mapping || pg.units[u].state != U_HEAP || !is_hugetlb(pg.units[u].backing))
			continue;
		if (!*blocked) {
			sigfillset(&all);
			pthread_sigmask(SIG_BLOCK, &all, old);
			*blocked = true;
		}
		if (!demote_units(u))
			return -ENOMEM;
	}
	return 0;
}

int pages_demote(uintptr_t addr, size_t len)
{
	size_t p, last;
	int r = 0;
	bool blocked = false;
	sigset_t old;
	pthread_mutex_lock(&pg.lock);
	if (!page_window(addr, len, &p, &last)) {
		pthread_mutex_unlock(&pg.lock);
		return 0;
	}
	/* Pages of a mapping unit that are not the program's are unmapped, as far as
	 * it knows: the kernel would say ENOMEM (and its change must not reach them). */
	for (size_t i = p; i < last && r == 0; i++)
		if (pg.units[i / PAGES_PER_UNIT].mapping && !mmap_span_at(i))
			r = -ENOMEM;
	if (r == 0)
		r = demote_window(p, last, &blocked, &old);
	pthread_mutex_unlock(&pg.lock);
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* Where a fixed mapping of the program's may land: pages it has from us, pages of
 * its large mappings' units that it unmapped (nothing else is ever given those),
 * and free units (that it may have unmapped whole: nothing of the heap's is there).
 * Under the lock. */
static bool fixed_allowed_locked(uintptr_t addr, size_t len)
{
	size_t p, last;
	if (addr < pg.base || addr + len > unit_addr(pg.frontier) || !page_window(addr, len, &p, &last))
		return false;
	for (; p < last; p++) {
		size_t u = p / PAGES_PER_UNIT;
		if (!mmap_span_at(p) && pg.units[u].state != U_FREE &&
		    !(pg.units[u].mapping && bit(pg.units[u].free, p % PAGES_PER_UNIT)))
			return false;
	}
	return true;
}

bool pages_fixed_allowed(uintptr_t addr, size_t len)
{
	pthread_mutex_lock(&pg.lock);
	bool ok = fixed_allowed_locked(addr, len);
	pthread_mutex_unlock(&pg.lock);
	return ok;
}

/* The free units among [p, last) become (empty) units of the program's mappings.
 * Under the lock. */
static void free_units_to_mappings(size_t p, size_t last)
{
	for (size_t u = p / PAGES_PER_UNIT; u <= (last - 1) / PAGES_PER_UNIT; u++) {
		struct unit *x = &pg.units[u];
		if (x->state != U_FREE)
			continue;
		enum sp_backing b = plain_backing();
		claim_units(u, 1);
		chunk_leave(u, 1); /* (plain memory under the program's, not a chunk's) */
		mapping_unit_start(x, b);
		memset(x->free, 0xff, sizeof x->free);
		set_nfree(x, PAGES_PER_UNIT);
		pg.heap_units++;
		count_units(b, 1);
	}
}

/* The pages of [p, last) the program unmapped are its again, a span (from *list)
 * per run of them within a unit; returns those spans, linked by next. Under the
 * lock. */
static struct span *take_back(size_t p, size_t last, struct span **list)
{
	struct span *taken = NULL;
	for (size_t i = p; i < last;) {
		if (mmap_span_at(i)) {
			i++;
			continue;
		}
		size_t e = i + 1, u = i / PAGES_PER_UNIT;
		while (e < last && e % PAGES_PER_UNIT && !mmap_span_at(e))
			e++;
		struct span *s = *list;
		*list = s->next;
		s->next = taken;
		taken = s;
		s->kind = SPAN_MMAP;
		s->foreign = true;
		s->start = pg.base + (i << PAGE_SHIFT);
		s->npages = e - i;
		unit_take(u, i % PAGES_PER_UNIT, e - i);
		pages_map_all(s);
		i = e;
	}
	return taken;
}

/* Undoes take_back (a unit could not be copied): the pages are unmapped again, and
 * units taken whole go back. Under the lock. */
static void untake(struct span *taken, size_t p, size_t last)
{
	if (!taken)
		return;
	while (taken) {
		struct span *s = taken;
		size_t p0 = page_of(s->start), u = p0 / PAGES_PER_UNIT;
		taken = s->next;
		for (size_t i = p0; i < p0 + s->npages; i++)
			map_set(i, NULL);
		unit_give(u, p0 % PAGES_PER_UNIT, s->npages);
		span_delete(s);
	}
	release_emptied(p / PAGES_PER_UNIT, (last - 1) / PAGES_PER_UNIT + 1 - p / PAGES_PER_UNIT);
}

int pages_fixed_into(uintptr_t addr, size_t len)
{
	size_t p, last, runs = 0;
	struct span *list = NULL, *taken;
	bool blocked = false;
	sigset_t old;
	int r;
	pthread_mutex_lock(&pg.lock);
	if (!fixed_allowed_locked(addr, len) || !page_window(addr, len, &p, &last)) {
		pthread_mutex_unlock(&pg.lock);
		return -EINVAL;
	}
	/* A descriptor for each run of unmapped pages (within a unit) it takes back. */
	for (size_t i = p; i < last; i++)
		if (!mmap_span_at(i) && (i == p || mmap_span_at(i - 1) || i % PAGES_PER_UNIT == 0))
			runs++;
	if (runs && !(list = spans_new(runs))) {
		pthread_mutex_unlock(&pg.lock);
		return -ENOMEM;
	}
	free_units_to_mappings(p, last);
	/* Taken back first, so that no unit of them is given back meanwhile (an empty
	 * unit of a 1 GiB page goes once the page is demoted). They are about to be
	 * mapped over: plain memory goes back there when the program unmaps them. */
	taken = take_back(p, last, &list);
	r = demote_window(p, last, &blocked, &old);
	if (r < 0)
		untake(taken, p, last);
	else
		while (taken) {
			struct span *s = taken;
			taken = s->next;
			s->next = NULL;
		}
	pthread_mutex_unlock(&pg.lock);
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

bool pages_has_foreign(uintptr_t addr, size_t len)
{
	size_t p, last;
	bool any = false;
	pthread_mutex_lock(&pg.lock);
	if (page_window(addr, len, &p, &last))
		for (; p < last && !any; p++) {
			struct span *s = mmap_span_at(p);
			any = s && s->foreign;
		}
	pthread_mutex_unlock(&pg.lock);
	return any;
}

enum advise_how pages_advise_how(int advice)
{
	switch (advice) {
	case MADV_DONTNEED:
	case MADV_DONTNEED_LOCKED:
		return ADV_ZERO;
	case MADV_FREE:
	case MADV_NORMAL:
	case MADV_RANDOM:
	case MADV_SEQUENTIAL:
	case MADV_WILLNEED:
	case MADV_HUGEPAGE:
	case MADV_NOHUGEPAGE:
	case MADV_COLLAPSE:
	case MADV_COLD:
	case MADV_PAGEOUT:
	case MADV_MERGEABLE:
	case MADV_UNMERGEABLE:
		return ADV_NOTHING;
	case MADV_DOFORK:
	case MADV_DODUMP:
	case MADV_KEEPONFORK:
	case MADV_GUARD_REMOVE:
		/* Undo what, on hugetlb memory, was never done (its change would have put
		 * the memory on plain pages first). */
		return ADV_NOTHING;
	case MADV_DONTFORK:
	case MADV_DONTDUMP:
	case MADV_WIPEONFORK:
	case MADV_GUARD_INSTALL:
		return ADV_CHANGE;
	default:
		/* The rest: what the kernel does on hugetlb pages as on others
		 * (POPULATE_*, REMOVE, poison), or unknown to it (EINVAL). */
		return ADV_KERNEL;
	}
}

/* True if a page of [a, e), in one unit that holds a program's mapping, is not the
 * program's (unmapped, as far as it knows). Under the lock. */
static bool mapping_hole(uintptr_t a, uintptr_t e)
{
	for (size_t p = page_of(a); p <= page_of(e - 1); p++)
		if (!mmap_span_at(p))
			return true;
	return false;
}

/* A change the kernel makes to what is mapped of [a, e), in one unit of a program's
 * mapping: each run of the program's pages there is demoted (its unit copied to THP
 * first) and advised; the pages it unmapped are left alone, as the kernel leaves
 * them (the caller says ENOMEM for them). A whole window refused for its hole left
 * the program's pages unadvised: a forked child then saw what DONTFORK or
 * WIPEONFORK should have hidden. 0 or the first error. */
static int change_owned(uintptr_t a, uintptr_t e, int advice)
{
	int ret = 0, r;
	for (uintptr_t x = a, y; x < e; x = y) {
		pthread_mutex_lock(&pg.lock);
		bool owned = mmap_span_at(page_of(x)) != NULL;
		for (y = x + PAGE_SIZE; y < e && (mmap_span_at(page_of(y)) != NULL) == owned;)
			y += PAGE_SIZE;
		pthread_mutex_unlock(&pg.lock);
		if (!owned)
			continue;
		/* (Unmapped meanwhile by another thread: refused, as the kernel would.) */
		r = pages_demote(x, y - x);
		if (r == 0)
			r = unit_advise((void *)x, y - x, advice);
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

int pages_advise(uintptr_t addr, size_t len, int advice)
{
	enum advise_how how = pages_advise_how(advice);
	uintptr_t end = addr + len, run = addr; /* [run, a): for the kernel, not yet asked */
	int ret = 0, r;
	bool hole = false;
	for (uintptr_t a = addr; a < end;) {
		uintptr_t e = (a | (UNIT_SIZE - 1)) + 1;
		size_t u = (a - pg.base) >> UNIT_SHIFT;
		if (e > end)
			e = end;
		pthread_mutex_lock(&pg.lock);
		bool in_use = u < pg.frontier && (pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE);
		bool huge = in_use && is_hugetlb(pg.units[u].backing);
		bool mapping = in_use && pg.units[u].mapping;
		/* The kernel advises what is mapped, and says ENOMEM for the rest. */
		hole = hole || (mapping && mapping_hole(a, e));
		pthread_mutex_unlock(&pg.lock);
		/* Plain memory of the heap, and hints the kernel takes on hugetlb pages:
		 * the kernel's, in one call for the whole run. */
		if ((!huge || how == ADV_KERNEL) && !(mapping && how == ADV_CHANGE)) {
			a = e;
			continue;
		}
		if (run < a && (r = unit_advise((void *)run, a - run, advice)) < 0 && !ret)
			ret = r;
		r = 0;
		if (how == ADV_ZERO) {
			/* Under the lock: a unit being demoted meanwhile would lose the zeros
			 * (and one demoted already is the kernel's to advise). */
			pthread_mutex_lock(&pg.lock);
			huge = (pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE) &&
			       is_hugetlb(pg.units[u].backing);
			if (huge)
				memset((void *)a, 0, e - a);
			pthread_mutex_unlock(&pg.lock);
			if (!huge)
				r = unit_advise((void *)a, e - a, advice);
		} else if (how == ADV_CHANGE && mapping) {
			r = change_owned(a, e, advice);
		} else if (how == ADV_CHANGE) {
			r = unit_advise((void *)a, e - a, advice);
		}
		if (r < 0 && !ret)
			ret = r;
		a = run = e;
	}
	if (run < end && (r = unit_advise((void *)run, end - run, advice)) < 0 && !ret)
		ret = r;
	return ret ? ret : hole ? -ENOMEM : 0;
}
