/* near_limit.c - the page heap near a memory limit: the memory cgroup's room read at
 * start and again as the heap grows; near the limit the heap keeps no empty unit,
 * makes no new unit huge and gives back the free pages of its units, so that a
 * program that fits under the limit plain fits under superpage run.
 *
 * A unit on THP is resident whole once a page of it is touched: the pages the page
 * heap has not given out, or that blocks freed, cost memory that the program plain
 * never had. limits need 502 (tests/runtime/limits: 502 MiB of blocks of 16 B to
 * 12 MiB, allocated and filled) ran plain at a peak of 503 MiB in its cgroup, and
 * under auto at 519 MiB, 259 units with 17.6 MiB free inside them: in a cgroup of
 * 512 MiB, plain ran and auto was killed (2 of 2). */
#include <stdatomic.h>
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "life.h"
#include "pageheap/unit_os.h"
#include "units.h"

/* Near: the room the memory cgroup leaves (its limit less what it holds but the
 * file cache) is below a sixteenth of the limit, at least 16 MiB and at most 256 MiB
 * (32 MiB of 512 MiB); far again from twice that. Reaching it, the heap gives back
 * at once what it holds beyond the program's blocks, and holds nothing more from
 * then on (a unit faulted in at 4 KiB costs only the pages touched), so the margin
 * is not the excess THP may have (3.4% of the units in the test above, 5% in the
 * sweep's mixed heap, up to a quarter in kept units) but time: the cgroup must not
 * fill between two looks, also with other processes in it. The test above ran at
 * a peak of 504 MiB with margins of 8, 16 and 32 MiB alike; they put 0, 7 and 11
 * of its last units on base pages. */
#define NEAR_DIV 16
#define NEAR_MIN ((uint64_t)16 << 20)
#define NEAR_MAX ((uint64_t)256 << 20)
/* The heap looks again once it has added a quarter of the room in units (at least
 * one), and after LOOK_NS (NEAR_LOOK_NS near the limit) when it places a run: the
 * cgroup's other processes and the program's own mappings grow too. A look reads
 * three files per limited cgroup (28 us here); never on malloc's fast path. */
#define LOOK_NS 1000000000ull     /* 1 s */
#define NEAR_LOOK_NS 100000000ull /* 0.1 s */

static struct {
	bool on;                     /* a memory cgroup limit applies: the heap looks */
	_Atomic bool busy;           /* a thread looks (one at a time: the scratch) */
	_Atomic uint64_t next_units; /* look when pg.st.units_added reaches it, */
	_Atomic uint64_t at_ns;      /* or after LOOK_NS from this last look */
	/* For --stats, under busy: the limit and the least room seen, the looks; the
	 * times near, when it began and the time near before. */
	uint64_t limit, least_room, looks, nears, near_since, near_ns;
	int version;
	/* What was done near the limit: kept units given back, bytes of free pages
	 * given back, units put on base pages that would have been THP. */
	_Atomic uint64_t kept_given, free_given, base_units;
	struct sp_limits rl;         /* RLIMIT_AS, RLIMIT_DATA (read at start) */
	char scratch[8192];          /* memory.stat, under busy */
} lim;

static uint64_t margin_of(uint64_t limit)
{
	uint64_t m = limit / NEAR_DIV;
	return m < NEAR_MIN ? NEAR_MIN : m > NEAR_MAX ? NEAR_MAX : m;
}

bool limits_on(void)
{
	return lim.on;
}

bool pages_near_limit(void)
{
	return atomic_load_explicit(&pg.near, memory_order_relaxed);
}

/* Gives units [u, u+n) the advice they carry now (the range's, or under auto each
 * its own: unit_advice), but for those on hugetlb pages and those that hold a
 * program's mapping (with advice of its own). Under the lock. */
static void advise_units(size_t u, size_t n)
{
	for (size_t i = u; i < u + n;) {
		const struct unit *x = &pg.units[i];
		if (is_hugetlb(x->backing) || (x->state == U_HEAP && x->mapping)) {
			i++;
			continue;
		}
		int advice = unit_advice(i);
		size_t e = i + 1;
		while (e < u + n && !is_hugetlb(pg.units[e].backing) &&
		       !(pg.units[e].state == U_HEAP && pg.units[e].mapping) && unit_advice(e) == advice)
			e++;
		unit_advise((void *)unit_addr(i), (e - i) << UNIT_SHIFT, advice);
		i = e;
	}
}

/* Gives back len bytes at a, free pages of a unit of backing b. A huge page that
 * MADV_DONTNEED unmaps a part of is freed only once the kernel splits it, when it
 * must (its deferred split, under the cgroup's reclaim); MADV_FREE of a part splits
 * it at once (its other pages stay as they are), then MADV_DONTNEED frees the part. */
static bool give_back_pages(uintptr_t a, size_t len, enum sp_backing b)
{
	if (b == SP_BACKING_THP)
		unit_release_lazy((void *)a, len);
	if (unit_release((void *)a, len) < 0)
		return false;
	atomic_fetch_add_explicit(&lim.free_given, len, memory_order_relaxed);
	return true;
}

/* The empty units kept resident go back, oldest first: hugetlb ones under the lock
 * (retire_units says why), the others after it. */
static void give_back_kept(void)
{
	for (;;) {
		pthread_mutex_lock(&pg.lock);
		int32_t t = pg.cache_tail;
		if (t == NO_UNIT) {
			pthread_mutex_unlock(&pg.lock);
			return;
		}
		cache_remove(t);
		bits_set(pg.freebits, (size_t)t, 1, false);
		pg.units[t].state = U_RELEASING;
		struct release rel = { .u = (size_t)t, .n = 1, .extra = NO_EXTRA };
		bool hugetlb = is_hugetlb(pg.units[t].backing);
		if (hugetlb)
			release_units_locked(&rel);
		pthread_mutex_unlock(&pg.lock);
		if (!hugetlb)
			release_units(&rel);
		atomic_fetch_add_explicit(&lim.kept_given, 1, memory_order_relaxed);
	}
}

/* The free pages of unit u (the heap's own, not on hugetlb pages) go back to the
 * kernel: on THP, that splits its huge page. Under the lock: another thread could
 * take them the moment the lock is dropped. */
static void give_back_unit(size_t u)
{
	const struct unit *x = &pg.units[u];
	if (x->state != U_HEAP || x->mapping || is_hugetlb(x->backing) || !x->nfree)
		return;
	for (size_t a = bits_next(x->free, 0, PAGES_PER_UNIT, true); a < PAGES_PER_UNIT;) {
		size_t e = bits_next(x->free, a, PAGES_PER_UNIT, false);
		give_back_pages(unit_addr(u) + (a << PAGE_SHIFT), (e - a) << PAGE_SHIFT,
				(enum sp_backing)x->backing);
		a = bits_next(x->free, e, PAGES_PER_UNIT, true);
	}
}

/* Every unit's free pages, a unit at a time under the lock (a madvise or a few
 * each: other threads wait for one unit, not for the heap). */
static void give_back_free(void)
{
	for (size_t u = 0;; u++) {
		pthread_mutex_lock(&pg.lock);
		bool more = u < pg.frontier;
		if (more)
			give_back_unit(u);
		pthread_mutex_unlock(&pg.lock);
		if (!more)
			return;
	}
}

void limits_give_back(uintptr_t start, size_t npages)
{
	size_t p = page_of(start), end = p + npages;
	while (p < end) {
		size_t u = p / PAGES_PER_UNIT, e = (u + 1) * PAGES_PER_UNIT;
		if (e > end)
			e = end;
		/* (The run is the caller's still: its units' backing stays as it is.) */
		enum sp_backing b = (enum sp_backing)pg.units[u].backing;
		if (!is_hugetlb(b))
			give_back_pages(pg.base + (p << PAGE_SHIFT), (e - p) << PAGE_SHIFT, b);
		p = e;
	}
}

void limits_base_unit(size_t n)
{
	atomic_fetch_add_explicit(&lim.base_units, n, memory_order_relaxed);
}

static void set_near(bool near, uint64_t now)
{
	pthread_mutex_lock(&pg.lock);
	atomic_store(&pg.near, near);
	advise_units(0, pg.frontier);
	pthread_mutex_unlock(&pg.lock);
	if (near) {
		lim.nears++;
		lim.near_since = now;
		give_back_kept();
		give_back_free();
	} else {
		lim.near_ns += now - lim.near_since;
	}
}

/* Reads the room and moves near or far. Under busy. */
static void look(uint64_t added, uint64_t now)
{
	struct sp_limits l;
	sp_limits_memory(sp_limit_dirs(), &l, lim.scratch, sizeof lim.scratch);
	lim.looks++;
	atomic_store_explicit(&lim.at_ns, now, memory_order_relaxed);
	uint64_t step = l.mem_room == SP_LIMIT_NONE ? UINT64_MAX / 2 : l.mem_room / 4 >> UNIT_SHIFT;
	atomic_store_explicit(&lim.next_units, added + (step ? step : 1), memory_order_relaxed);
	if (l.mem_room == SP_LIMIT_NONE)
		return;
	lim.limit = l.mem_limit;
	if (l.mem_room < lim.least_room)
		lim.least_room = l.mem_room;
	uint64_t margin = margin_of(l.mem_limit);
	bool near = atomic_load(&pg.near);
	if (!near && l.mem_room < margin) {
		rt_verbose(1, "%llu MiB left under the memory cgroup's limit of %llu MiB: no empty "
			   "units kept, no new units on THP, free pages given back",
			   (unsigned long long)(l.mem_room >> 20), (unsigned long long)(l.mem_limit >> 20));
		set_near(true, now);
	} else if (near && l.mem_room >= 2 * margin) {
		rt_verbose(1, "%llu MiB left under the memory cgroup's limit: units on THP again",
			   (unsigned long long)(l.mem_room >> 20));
		set_near(false, now);
	}
}

void limits_tick(void)
{
	if (!lim.on)
		return;
	uint64_t added = atomic_load_explicit(&pg.st.units_added, memory_order_relaxed);
	uint64_t now = heap_now_ns(), at = atomic_load_explicit(&lim.at_ns, memory_order_relaxed);
	uint64_t wait = atomic_load_explicit(&pg.near, memory_order_relaxed) ? NEAR_LOOK_NS : LOOK_NS;
	if ((added < atomic_load_explicit(&lim.next_units, memory_order_relaxed) && now - at < wait) ||
	    atomic_exchange_explicit(&lim.busy, true, memory_order_acquire))
		return;
	look(added, now);
	atomic_store_explicit(&lim.busy, false, memory_order_release);
}

void limits_fork_child(void)
{
	atomic_store(&lim.busy, false);
	atomic_store(&lim.at_ns, 0);
}

void limits_init(const struct sp_limits *rl)
{
	const struct sp_limit_dirs *d = sp_limit_dirs();
	lim.rl = *rl;
	lim.version = d->mem_version;
	lim.least_room = SP_LIMIT_NONE;
	if (!d->n_mem)
		return;
	lim.on = true;
	atomic_store(&lim.busy, true);
	look(0, heap_now_ns());
	atomic_store(&lim.busy, false);
}

/* (Read without busy: figures for a report, each of them whole.) */
void limits_stats(struct rt_stats *st)
{
	st->limit_version = lim.version;
	st->limit_bytes = lim.on ? lim.limit : 0;
	st->limit_least_room = lim.on && lim.least_room != SP_LIMIT_NONE ? lim.least_room : 0;
	st->limit_looks = lim.looks;
	st->limit_nears = lim.nears;
	st->limit_near_ns = lim.near_ns;
	if (atomic_load(&pg.near))
		st->limit_near_ns += heap_now_ns() - lim.near_since;
	st->limit_kept_given = atomic_load(&lim.kept_given);
	st->limit_free_given = atomic_load(&lim.free_given);
	st->limit_base_units = atomic_load(&lim.base_units);
	st->limit_as = lim.rl.as_limit == SP_LIMIT_NONE ? 0 : lim.rl.as_limit;
	st->limit_data = lim.rl.data_limit == SP_LIMIT_NONE ? 0 : lim.rl.data_limit;
}

/* (The hugetlb cgroup's limits are read for the account only: not at each
 * rt_stats_get, which the live report calls as the heap grows.) */
void limits_hugetlb_stats(struct rt_stats *st)
{
	for (int g = 0; g < 2; g++) {
		uint64_t limit;
		sp_limits_hugetlb(sp_limit_dirs_huge(), g, &limit, NULL);
		st->limit_hugetlb[g] = limit == SP_LIMIT_NONE ? 0 : limit;
	}
}
