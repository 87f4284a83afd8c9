/* backing.c - what memory a unit is: the only file of the page heap that maps memory
 * into the range (plain, THP-advised, or hugetlb moved into place), with the
 * rungs refused lately, and auto's promotion to THP: its units made huge where
 * they are dense. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/unit_os.h"
#include "units.h"

/* The hugetlb rungs refused lately (rung.c): 2m for runs as large as one refused,
 * 1g for any; until hugetlb units are given back. */
static struct sp_rung_skip skip_2m, skip_1g;

/* Plain anonymous memory at n units from u, with the range's advice: what a unit
 * is when it has no hugetlb pages. The range is ours, so MAP_FIXED harms nothing;
 * if even this fails the heap has a hole it cannot account for, and stops. */
void plain_units(size_t u, size_t n)
{
	void *out;
	size_t len = n << UNIT_SHIFT;
	int r = unit_map_plain((void *)unit_addr(u), len, &out);
	if (r < 0)
		rt_abort("cannot map the heap's memory at %p back (%zu bytes, errno %d)",
			 (void *)unit_addr(u), len, -r);
	unit_advise(out, len, range_advice());
	chunk_forget(u, n);
}

/* Chunks. The kernel never merges hugetlb mappings, and fork pays for each one (it
 * copies their page tables one by one): a heap whose units were each mapped alone
 * forked the slower the more units it had. So units on 2 MiB pages lie in chunks:
 * one private hugetlb mapping, reserved when it is made (never MAP_NORESERVE: a
 * reserved page cannot fail its first touch), over the units being backed and the
 * free units above them, as many in all as an eighth of the units on 2 MiB pages
 * already (no more than the pool has free): past 16 units the mappings grow in
 * number as the logarithm of the heap, and the pool's pages reserved and not yet
 * given out (spare units) stay within about an eighth of those in use; a heap of
 * fewer holds no spare unit at all. A freed unit keeps its page in its chunk (kept,
 * as an empty unit is: reserved and used again); what goes back to the pool goes by
 * plain memory mapped over it (the chunk shrinks, or is cut in two), never by
 * MADV_DONTNEED: that keeps the page's reservation on Linux 6.18 (so the pool has no
 * more room for it), and older kernels lost it, after which a touch could be a
 * SIGBUS. A unit of a chunk that is to be memory of another kind is made plain memory
 * first (chunk_leave). 1 GiB pages are mapped a block at a time, as before. */
#define CHUNK_SHARE 8

/* Units [u, u+n) are in no chunk any more: something else was mapped over them (the
 * unit after them, if in a chunk, now begins a mapping of its own). */
void chunk_forget(size_t u, size_t n)
{
	for (size_t i = u; i < u + n; i++)
		pg.units[i].chunk = pg.units[i].faulted = 0;
	if (u + n < pg.frontier && pg.units[u + n].chunk)
		pg.units[u + n].chunk = 2;
}

/* The chunks' units of [u, u+n) made plain memory: they are to be memory of another
 * kind, and were not mapped over. */
void chunk_leave(size_t u, size_t n)
{
	for (size_t a = u, e; a < u + n; a = e) {
		for (e = a + 1; e < u + n && !pg.units[e].chunk == !pg.units[a].chunk; e++)
			;
		if (pg.units[a].chunk)
			plain_units(a, e - a);
	}
}

/* Whether unit u may join a chunk made below it, as a spare unit: free, holding no
 * memory, in no chunk (growing the range, lazy: what is claimed is the range's). */
static bool chunk_room(size_t u)
{
	if (u >= pg.max_units)
		return false;
	if (u >= pg.frontier && range_grow(u + 1) < 0)
		return false;
	const struct unit *x = &pg.units[u];
	return x->state == U_FREE && bit(pg.freebits, u) && !x->in_cache && !x->resident &&
	       !x->chunk;
}

/* How many units a chunk made for n units is to span: an eighth of those on 2 MiB
 * pages, within what the pool has free (and the room promised to forked children
 * copying theirs left alone). No more than n under a hugetlb cgroup limit (a spare
 * unit's first touch would be charged then, and could fail) or a limit of address
 * space (tight: the heap holds none it does not use). */
static size_t chunk_units(size_t n)
{
	size_t k = (size_t)(pg.st.units[SP_BACKING_2M] / CHUNK_SHARE);
	if (k <= n || pg.tight || sp_limit_dirs_huge()->n_huge)
		return n;
	long room = sp_rung_room(SP_BACKING_2M, false);
	if (room < (long)k)
		k = room > (long)n ? (size_t)room : n;
	while (k > n && !fork_pool_spares(false, k))
		k = k / 2 > n ? k / 2 : n;
	return k;
}

struct into {
	uintptr_t at;
	size_t len;
	bool giga, chunk; /* chunk: the range's units, on 2 MiB pages */
	bool *hole;
};

/* Maps a chunk over the units [a, e) of those being backed, which are in none,
 * reaching on over free units above them when e is the run's end (end). 0 or the
 * refusal; with *hole, the units [a, e) (and any above) may have been unmapped. */
static int chunk_map(size_t a, size_t e, size_t end, bool *hole)
{
	size_t top = e;
	if (e == end) {
		size_t k = chunk_units(e - a);
		while (top < a + k && chunk_room(top))
			top++;
	}
	int r = pages_hugetlb_into(unit_addr(a), (top - a) << UNIT_SHIFT, false, hole);
	if (r < 0 && top > e) {
		if (*hole)
			plain_units(e, top - e);
		top = e;
		r = pages_hugetlb_into(unit_addr(a), (top - a) << UNIT_SHIFT, false, hole);
	}
	if (r < 0)
		return r;
	for (size_t i = a; i < top; i++) {
		pg.units[i].chunk = i == a ? 2 : 1;
		pg.units[i].faulted = 0;
	}
	return 0;
}

/* The units [u, u+n) in chunks: those in none get one (chunk_map), the others have
 * their pages reserved already. Under a hugetlb cgroup limit every page is faulted
 * in (sp_rung_charge): a refused touch is an error here, never a SIGBUS later. */
static int chunks_into(struct into *m)
{
	size_t u = (m->at - pg.base) >> UNIT_SHIFT, n = m->len >> UNIT_SHIFT;
	for (size_t a = u; a < u + n;) {
		if (pg.units[a].chunk) {
			a++;
			continue;
		}
		size_t e = a + 1;
		while (e < u + n && !pg.units[e].chunk)
			e++;
		int r = chunk_map(a, e, u + n, m->hole);
		if (r < 0)
			return r;
		a = e;
	}
	return sp_rung_charge(SP_BACKING_2M, (void *)m->at, m->len);
}

static int map_into(void *arg)
{
	struct into *m = arg;
	int r = m->chunk ? chunks_into(m) : pages_hugetlb_into(m->at, m->len, m->giga, m->hole);
	return r < 0 && *m->hole ? -EIO : r; /* (a refused move: an mmap fall) */
}

/* Whether units [u, u+n) all lie in chunks: their pages are reserved. */
static bool in_chunks(size_t u, size_t n)
{
	for (size_t i = u; i < u + n; i++)
		if (!pg.units[i].chunk)
			return false;
	return true;
}

int pages_hugetlb_try(const struct sp_rung_ask *ask, uintptr_t at, size_t len, bool *hole)
{
	struct into m = { .at = at, .len = len, .giga = ask->rung == SP_BACKING_1G, .hole = hole };
	*hole = false;
	return sp_rung_try(ask, map_into, &m);
}

/* Maps n units at u with hugetlb pages of the rung's size (2m, or 1g for a 1 GiB-
 * aligned run of whole GiBs), mapped elsewhere and moved into place: a map the pool
 * refuses leaves the units as they were; a refused move may have unmapped them, so
 * they get plain memory back then. A rung that was refused is not asked again for
 * a while (for runs as large, for 2m; rung.c). Units on 1 GiB pages are only ever
 * given back, staged for fork or replaced whole: the kernel cannot split a 1 GiB
 * page's mapping. */
bool back_hugetlb(size_t u, size_t n, enum sp_backing rung)
{
	bool giga = rung == SP_BACKING_1G, hole;
	size_t len = n << UNIT_SHIFT;
	struct sp_rung_ask ask = { .site = SP_SITE_HEAP, .rung = rung,
				   .skip = giga ? &skip_1g : &skip_2m, .size = giga ? 0 : len };
	struct into m = { .at = unit_addr(u), .len = len, .giga = giga, .chunk = !giga,
			  .hole = &hole };
	hole = false;
	/* (Units in chunks have their pages: no rung to try, but under a cgroup limit.) */
	int why = !giga && in_chunks(u, n) && sp_rung_charge(rung, (void *)m.at, len) == 0
			  ? -1 : sp_rung_try(&ask, map_into, &m);
	if (why < 0)
		return true;
	if (hole)
		plain_units(u, n);
	rt_fall(rung, (enum sp_fall)why);
	return false;
}

/* Puts plain anonymous memory back where hugetlb units were (their pages return to
 * the pool), with the range's THP advice. */
void unback_hugetlb(size_t u, size_t n)
{
	plain_units(u, n);
	forget_refusals();
}

/* Hugetlb pages went back to the pool: it may hold runs it refused. */
void forget_refusals(void)
{
	sp_rung_forget(&skip_2m);
	sp_rung_forget(&skip_1g);
}

static enum sp_backing back_units_plain(size_t u, size_t n);

/* Gives n units at u the policy's backing; returns the backing they got. */
enum sp_backing back_units(size_t u, size_t n)
{
	enum sp_backing b = back_units_plain(u, n);
	if (!is_hugetlb(b))
		chunk_leave(u, n);
	return b;
}

/* back_units, but for the units of chunks among them (which stay). */
static enum sp_backing back_units_plain(size_t u, size_t n)
{
	if (pg.policy == SP_BACKING_2M || pg.policy == SP_BACKING_1G) {
		if (back_hugetlb(u, n, SP_BACKING_2M))
			return SP_BACKING_2M;
		const struct sp_view *v = sp_view_get();
		if (v->thp_never || v->features.thp_disabled_here)
			return SP_BACKING_4K;
	} else if (pg.small_first) {
		/* (auto: base pages until the unit is dense, units_settle; near a memory
		 * limit the promoted heap counts the unit it put on them.) */
		if (atomic_load(&pg.promoted) && atomic_load_explicit(&pg.near, memory_order_relaxed))
			limits_base_unit(n);
		return SP_BACKING_4K;
	} else if (pg.policy != SP_BACKING_THP) {
		return pg.policy;
	}
	/* Near a memory limit, a unit on THP is resident whole from its first touch. */
	if (atomic_load_explicit(&pg.near, memory_order_relaxed)) {
		limits_base_unit(n);
		return SP_BACKING_4K;
	}
	return SP_BACKING_THP;
}

size_t back_units_most(size_t u, size_t n, enum sp_backing *rest)
{
	if (pg.policy == SP_BACKING_2M || pg.policy == SP_BACKING_1G) {
		size_t got = back_hugetlb_most(u, n);
		*rest = plain_backing();
		chunk_leave(u + got, n - got);
		/* (Near a memory limit, as back_units: base pages.) */
		if (*rest == SP_BACKING_THP && got < n &&
		    atomic_load_explicit(&pg.near, memory_order_relaxed)) {
			limits_base_unit(n - got);
			*rest = SP_BACKING_4K;
		}
		return got;
	}
	*rest = back_units(u, n);
	return 0;
}

/* The advice the range carries now: under auto, base pages (a unit is advised on its
 * own when it is dense: unit_advice). */
int range_advice(void)
{
	if (pg.policy == SP_BACKING_4K || pg.small_first ||
	    atomic_load_explicit(&pg.near, memory_order_relaxed))
		return MADV_NOHUGEPAGE;
	return MADV_HUGEPAGE;
}

/* Whether the heap's large blocks go on THP now: under thp, and under auto once the
 * heap is promoted; not near a memory limit. */
bool heap_on_thp(void)
{
	if (pg.policy != SP_BACKING_THP || atomic_load_explicit(&pg.near, memory_order_relaxed))
		return false;
	return !pg.small_first || atomic_load(&pg.promoted);
}

/* The advice unit u carries now: the range's, or under auto its own. */
int unit_advice(size_t u)
{
	if (pg.small_first && !atomic_load_explicit(&pg.near, memory_order_relaxed))
		return pg.units[u].huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
	return range_advice();
}

/* Whether auto makes dense units huge now: promoted, and not near a memory limit. */
bool dense_on(void)
{
	return pg.small_first && atomic_load(&pg.promoted) &&
	       !atomic_load_explicit(&pg.near, memory_order_relaxed);
}

/* Units [u, u+n) on base pages become THP: advised MADV_HUGEPAGE (the next touch of a
 * unit with no pages faults in a huge page; one with pages is to be collapsed) and
 * counted as THP. False if the kernel refused the advice (out of mappings): they stay
 * on base pages. Under the lock. */
bool units_make_huge(size_t u, size_t n)
{
	if (unit_want_huge((void *)unit_addr(u), n << UNIT_SHIFT, true) < 0)
		return false;
	for (size_t i = u; i < u + n; i++) {
		struct unit *x = &pg.units[i];
		x->huge = 1;
		if (x->backing == SP_BACKING_4K) {
			x->backing = SP_BACKING_THP;
			count_units(SP_BACKING_4K, -1);
			count_units(SP_BACKING_THP, 1);
			atomic_fetch_add_explicit(&pg.st.dense_huge, 1, memory_order_relaxed);
		}
	}
	return true;
}

/* Units [u, u+n), taken again on base pages, lose the MADV_HUGEPAGE advice an
 * earlier use left them (a unit given back keeps its advice). Under the lock. */
void units_make_small(size_t u, size_t n)
{
	for (size_t i = u; i < u + n; i++)
		if (pg.units[i].huge && pg.units[i].backing == SP_BACKING_4K) {
			unit_want_huge((void *)unit_addr(i), UNIT_SIZE, false);
			pg.units[i].huge = 0;
		}
}

/* Whether HEAP unit x is dense enough to be made huge: DENSE_PAGES of its pages given
 * out; under a memory limit, all but an eighth (a collapse makes the free ones
 * resident too). */
static bool heap_unit_dense(const struct unit *x)
{
	size_t used = PAGES_PER_UNIT - x->nfree;
	return used >= DENSE_PAGES && (!limits_on() || x->nfree * 8 <= PAGES_PER_UNIT);
}

/* Dense by touch (pg.touched): units given out whole, or mostly to long runs (blocks
 * past MEDIUM_MAX), stay on base pages until DENSE_PAGES of their pages are resident
 * (dense_look): a block a program was given is not a block it touches (a
 * compressor's window sized for any input, a database's buffer pool). */
#define LONG_RUN_PAGES (MEDIUM_MAX >> PAGE_SHIFT)
/* auto: the units a run of pages [p, p+np) of the heap was just given in (clean: all
 * of them memory the kernel had not given yet). Those it made dense are made huge
 * (units_make_huge), and those of them that may hold pages (given out before it, or
 * kept resident) are left in *d to collapse after the lock (dense_collapse); one
 * taken again with the advice of its last use loses it, unless it is dense now.
 * Under the lock, before the run is handed out. */
void units_settle(size_t p, size_t np, bool clean, struct dense *d)
{
	if (!pg.small_first)
		return;
	bool on = dense_on();
	size_t u0 = p / PAGES_PER_UNIT, u1 = (p + np - 1) / PAGES_PER_UNIT + 1;
	for (size_t u = u0; u < u1; u++) {
		struct unit *x = &pg.units[u];
		if (x->state != U_HEAP || x->mapping || x->backing != SP_BACKING_4K)
			continue;
		if (!on || !heap_unit_dense(x)) {
			units_make_small(u, 1);
			continue;
		}
		if (pg.touched && np > LONG_RUN_PAGES) {
			/* (Dense by a long run's pages: huge when they are touched.) */
			units_make_small(u, 1);
			watch_unit(x);
			continue;
		}
		size_t first = u * PAGES_PER_UNIT, from = p > first ? p - first : 0;
		size_t to = p + np < first + PAGES_PER_UNIT ? p + np - first : PAGES_PER_UNIT;
		bool held = PAGES_PER_UNIT - x->nfree > to - from;
		x->watch = 0;
		if (units_make_huge(u, 1) && (held || !clean) && d->n < DENSE_MAX)
			d->u[d->n++] = u;
	}
}

/* Whether auto's unit x of a large block is as units_settle_large would have it. */
static bool large_settled(const struct unit *x, bool on)
{
	return is_hugetlb(x->backing) || (on ? x->huge && x->backing == SP_BACKING_THP
					     : !(x->huge && x->backing == SP_BACKING_4K));
}

/* auto: units [u, u+n) of a large block, given out whole (or grown, or moved): dense,
 * so huge from their first touch once the heap is promoted, else on base pages.
 * Under the lock. */
void units_settle_large(size_t u, size_t n)
{
	if (!pg.small_first)
		return;
	bool on = dense_on();
	if (on && pg.touched) {
		/* (Huge when touched: dense_look. Units moved with their advice keep it.) */
		for (size_t i = u; i < u + n; i++) {
			struct unit *x = &pg.units[i];
			if (is_hugetlb(x->backing) || (x->huge && x->backing == SP_BACKING_THP))
				continue;
			units_make_small(i, 1);
			watch_unit(x);
		}
		return;
	}
	for (size_t i = u; i < u + n;) {
		if (large_settled(&pg.units[i], on)) {
			i++;
			continue;
		}
		size_t e = i + 1;
		while (e < u + n && !large_settled(&pg.units[e], on))
			e++;
		if (on)
			units_make_huge(i, e - i);
		else
			units_make_small(i, e - i);
		i = e;
	}
}

/* Units whose collapse the kernel found busy three times in a row (EAGAIN: a page
 * of it was being faulted in by another thread, or not yet on its LRU list), tried
 * again on a later allocation, DENSE_NS after the last try, up to LATER_TRIES times
 * each; past that, or when the list is full, counted as refused (khugepaged may
 * still collapse them: they are advised). Two threads that filled units side by side
 * left 12-34 of 775 units on base pages without a later try. Under pg.lock. */
#define LATER_MAX 64
#define LATER_TRIES 8
static struct {
	size_t n, u[LATER_MAX];
	uint8_t tries[LATER_MAX];
} later;
static _Atomic size_t later_n;
static _Atomic uint64_t later_at;

/* Tries to collapse the unit at a into a huge page, tries (1-3) times while the kernel
 * finds it busy; returns the last answer. A unit with no page touched yet is left to fault
 * in huge (EINVAL). Advisory: a unit freed meanwhile is collapsed for nothing, never
 * harmed. Without the lock. */
int collapse_at(uintptr_t a, int tries)
{
	int r;
	for (int k = 1; (r = unit_collapse((void *)a, UNIT_SIZE)) == -EAGAIN && k < tries; k++)
		;
	return r;
}

static int collapse_tries(size_t u, int tries)
{
	return collapse_at(unit_addr(u), tries);
}

/* What became of a collapse of unit u, tried tries times before: a busy one goes
 * on the list for later, a refused one is counted. Without the lock. */
static void collapse_done(size_t u, int r, unsigned tries)
{
	if (r == -EAGAIN && tries < LATER_TRIES) {
		pthread_mutex_lock(&pg.lock);
		bool kept = later.n < LATER_MAX;
		if (kept) {
			later.u[later.n] = u;
			later.tries[later.n++] = (uint8_t)tries;
			atomic_store(&later_n, later.n);
			atomic_store(&later_at, heap_now_ns());
		}
		pthread_mutex_unlock(&pg.lock);
		if (kept)
			return;
	}
	if (r < 0 && r != -EINVAL) {
		atomic_fetch_add_explicit(&pg.st.dense_refused, 1, memory_order_relaxed);
		rt_verbose(2, "the collapse of a dense unit at %p was refused (errno %d)",
			   (void *)unit_addr(u), -r);
	}
}

void collapse_unit(size_t u)
{
	collapse_done(u, collapse_tries(u, 3), 1);
}

/* The units whose collapse was busy, once each, DENSE_NS after the last try. A unit
 * given back meanwhile (no longer huge, or not in use) is dropped. Without the lock. */
static void collapse_later(void)
{
	if (!atomic_load_explicit(&later_n, memory_order_relaxed))
		return;
	uint64_t now = heap_now_ns(), at = atomic_load(&later_at);
	if (now - at < DENSE_NS || !atomic_compare_exchange_strong(&later_at, &at, now))
		return;
	size_t n, u[LATER_MAX];
	uint8_t tries[LATER_MAX];
	pthread_mutex_lock(&pg.lock);
	n = later.n;
	memcpy(u, later.u, n * sizeof u[0]);
	memcpy(tries, later.tries, n);
	later.n = 0;
	atomic_store(&later_n, 0);
	for (size_t i = 0; i < n; i++) {
		const struct unit *x = &pg.units[u[i]];
		if (!x->huge || (x->state != U_HEAP && x->state != U_LARGE))
			u[i] = SIZE_MAX;
	}
	pthread_mutex_unlock(&pg.lock);
	for (size_t i = 0; i < n; i++)
		if (u[i] != SIZE_MAX)
			collapse_done(u[i], collapse_tries(u[i], 1), tries[i] + 1u);
}

void dense_collapse(const struct dense *d)
{
	for (size_t i = 0; i < d->n; i++)
		collapse_unit(d->u[i]);
}

/* Whether auto's heap, on base pages still and of DENSE_UNITS or more (units of it
 * now), has so few of its units' pages not resident (an eighth) that THP costs it
 * little more memory than it has (units.h). Looks at most every DENSE_NS, and at
 * once when the heap has more units than it had when it last looked: then the pages
 * the page heap has not given out are not counted, for the unit just taken is mostly
 * such, and a heap that grows fills it. Without the lock (the units' states are read
 * under it). */
static bool heap_dense(size_t units)
{
	if (!unit_resident_known())
		return false;
	/* (A look on growth leaves the next timed one where it was; each kind is
	 * claimed by one thread at a time, and the promotion happens once.) */
	size_t seen = atomic_load_explicit(&pg.dense_units, memory_order_relaxed);
	bool grown = units > seen && atomic_compare_exchange_strong(&pg.dense_units, &seen, units);
	if (!grown) {
		uint64_t now = heap_now_ns(), at = atomic_load_explicit(&pg.dense_at, memory_order_relaxed);
		if (now - at < DENSE_NS || !atomic_compare_exchange_strong(&pg.dense_at, &at, now))
			return false;
	}
	size_t in[PROMOTE_UNITS], n = 0;
	uint64_t idle[PROMOTE_UNITS][PAGES_PER_UNIT / 64]; /* pages not counted */
	pthread_mutex_lock(&pg.lock);
	for (size_t u = 0; u < pg.frontier && n < PROMOTE_UNITS; u++) {
		const struct unit *x = &pg.units[u];
		if ((x->state == U_HEAP && !x->mapping) || x->state == U_LARGE) {
			if (grown && x->state == U_HEAP)
				memcpy(idle[n], x->free, sizeof idle[n]);
			else
				memset(idle[n], 0, sizeof idle[n]);
			in[n++] = u;
		}
	}
	pthread_mutex_unlock(&pg.lock);
	if (n < DENSE_UNITS)
		return false;
	unsigned char vec[PAGES_PER_UNIT];
	size_t absent = 0;
	for (size_t i = 0; i < n; i++) {
		/* (A unit given back meanwhile reads as not resident: no promotion for it.) */
		if (unit_resident((void *)unit_addr(in[i]), UNIT_SIZE, vec) < 0)
			return false;
		for (size_t p = 0; p < PAGES_PER_UNIT; p++)
			absent += !(vec[p] & 1) && !(idle[i][p / 64] >> (p % 64) & 1);
		if (absent * 8 > n * PAGES_PER_UNIT)
			return false;
	}
	rt_verbose(2, "the heap's %zu units are resident but for %zu pages: on THP from now on", n,
		   absent);
	return true;
}

/* The heap has grown big, or dense (heap_dense): from now on its units are made huge
 * as they become dense (units_settle), and those dense now are, collapsed into huge
 * pages now rather than whenever khugepaged comes by: the units of large blocks, and
 * the heap's with DENSE_PAGES given out (under a memory limit, all but an eighth).
 * Not near a memory limit (near_limit.c): the promotion waits until the heap is far
 * from it again. Runs after an allocation, without the lock; so does the look at the
 * limit. */
void maybe_promote(void)
{
	limits_tick();
	collapse_later();
	dense_look();
	if (atomic_load_explicit(&pg.near, memory_order_relaxed))
		return;
	size_t units = __atomic_load_n(&pg.st.units[SP_BACKING_4K], __ATOMIC_RELAXED);
	if (pg.small_first && !atomic_load_explicit(&pg.promoted, memory_order_relaxed) &&
	    !atomic_load_explicit(&pg.promote_pending, memory_order_relaxed) &&
	    units >= DENSE_UNITS && heap_dense(units))
		atomic_store(&pg.promote_pending, true);
	if (!atomic_exchange(&pg.promote_pending, false) || atomic_exchange(&pg.promoted, true))
		return;
	pthread_mutex_lock(&pg.lock);
	size_t top = pg.frontier;
	outside_promote();
	for (size_t u = 0; u < top; u++) {
		struct unit *x = &pg.units[u];
		if (x->backing != SP_BACKING_4K)
			continue;
		if (x->state == U_LARGE && pg.touched)
			watch_unit(x);
		else if (x->state == U_LARGE || (x->state == U_HEAP && !x->mapping && heap_unit_dense(x)))
			units_make_huge(u, 1);
	}
	pthread_mutex_unlock(&pg.lock);
	/* (A unit read without the lock: one given back meanwhile is left alone, or
	 * collapsed for nothing, never harmed.) */
	for (size_t u = 0; u < top; u++)
		if ((pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE) && pg.units[u].huge &&
		    pg.units[u].backing == SP_BACKING_THP)
			collapse_unit(u);
	dense_look(); /* (the large blocks' units it watches now) */
}

/* Units [from, to) become read-write memory of the range, with its advice: made so
 * in the reservation, or (lazy) mapped where nothing else may be. */
int claim_space(size_t from, size_t to)
{
	void *at = (void *)unit_addr(from), *out;
	size_t len = (to - from) << UNIT_SHIFT;
	int r;
	if (!pg.lazy) {
		r = unit_make_rw(at, len);
	} else {
		r = unit_map_new(at, len, &out);
		if (r == 0 && out != at) { /* (taken as a hint: something is there) */
			unit_unmap(out, len);
			r = -EEXIST;
		}
	}
	if (r == 0) {
		unit_advise(at, len, range_advice());
		for (size_t u = from; u < to; u++)
			pg.units[u].huge = 0;
	}
	return r;
}

/* Undoes claim_space: the units' memory is gone, and (lazy) their address space. */
void unclaim_space(size_t from, size_t to)
{
	void *at = (void *)unit_addr(from), *out;
	size_t len = (to - from) << UNIT_SHIFT;
	if (pg.lazy)
		unit_unmap(at, len);
	else if (unit_reserve(at, len, true, &out) == 0)
		unit_advise(at, len, range_advice());
	for (size_t u = from; u < to; u++)
		pg.units[u].huge = 0;
	chunk_forget(from, to - from);
}

/* Puts the heap's own memory back on pages [lo, hi) the program mapped over or
 * re-protected: private anonymous, read-write, with the range's THP advice. */
bool restore_pages(size_t lo, size_t hi)
{
	void *at = (void *)(pg.base + (lo << PAGE_SHIFT)), *out;
	size_t len = (hi - lo) << PAGE_SHIFT;
	if (unit_map_plain(at, len, &out) < 0)
		return false;
	unit_advise(at, len, unit_advice(lo / PAGES_PER_UNIT));
	return true;
}

/* Puts a private THP copy of src (NULL: zeros) at at: filled 2 MiB-aligned elsewhere
 * (so the copy faults in as huge pages) and moved over at, which is still mapped (a
 * hugetlb range demoted to THP, or shared with the parent in a forked child: replaced
 * whole, a 1 GiB page's len all of it) or a hole. */
bool pages_copy_in(uintptr_t at, size_t len, const void *src)
{
	void *m, *out, *hold;
	/* Hold the hole first: the copy must not be placed in it, as a move between
	 * overlapping ranges is refused. (Where the units are still mapped, this fails
	 * harmlessly.) */
	unit_reserve((void *)at, len, false, &hold);
	if (sp_map_aligned(len, UNIT_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, &m) < 0)
		return false;
	uintptr_t a = (uintptr_t)m;
	unit_want_huge((void *)a, len, true);
	if (src)
		memcpy((void *)a, src, len);
	if (unit_move((void *)a, len, (void *)at, false, &out) == 0)
		return true;
	/* Refused, perhaps after what was at at was unmapped (out of mappings): the
	 * copy may be all that is left of it, and is put there by hand. */
	bool put = unit_map_plain((void *)at, len, &out) == 0;
	if (put) {
		unit_want_huge((void *)at, len, true);
		memcpy((void *)at, (const void *)a, len);
	}
	unit_unmap((void *)a, len);
	/* (Not put, but still mapped as it was: nothing changed.) */
	if (!put && unit_make_rw((void *)at, len) < 0)
		rt_abort("memory at %p could not be put back after a refused move", (void *)at);
	return put;
}

int pages_hugetlb_into(uintptr_t at, size_t len, bool giga, bool *hole)
{
	void *tmp, *out;
	*hole = false;
	/* The pages forked children's copies may need are not the heap's to take. */
	if (!fork_pool_spares(giga, len >> (giga ? 30 : UNIT_SHIFT)))
		return -ENOMEM;
	enum sp_backing rung = giga ? SP_BACKING_1G : SP_BACKING_2M;
	int r = sp_rung_cgroup_room(rung, len);
	if (r == 0)
		r = unit_map_hugetlb(len, giga, &tmp);
	if (r < 0)
		return r;
	/* (Under a hugetlb cgroup limit, faulted in here: never a SIGBUS later.) */
	if ((r = sp_rung_charge(rung, tmp, len)) < 0) {
		unit_unmap(tmp, len);
		return r;
	}
	r = unit_move(tmp, len, (void *)at, false, &out);
	if (r == 0)
		return 0;
	unit_unmap(tmp, len);
	*hole = true;
	/* This kernel sometimes refuses the move of a 1 GiB page with ENOMEM (seen here
	 * with 1-2 runs in 8, the same again on every retry; a new mapping does not
	 * help, it lands where the last one was). What was at at is unmapped by then:
	 * map the pages into the hole directly, unless something else landed there. */
	if (unit_map_hugetlb_at((void *)at, len, giga, &out) < 0)
		return r;
	if ((uintptr_t)out == at && sp_rung_charge(rung, out, len) == 0) {
		*hole = false;
		return 0;
	}
	/* (A kernel without MAP_FIXED_NOREPLACE took it as a hint; or the limit.) */
	unit_unmap(out, len);
	return r;
}

bool units_from_copy(size_t u, size_t n, const void *src)
{
	if (!pages_copy_in(unit_addr(u), n << UNIT_SHIFT, src))
		return false;
	chunk_forget(u, n);
	return true;
}

/* What memory that is not hugetlb gets here: THP, or base pages where THP is off. */
enum sp_backing plain_backing(void)
{
	const struct sp_view *v = sp_view_get();
	return !v->thp_present || v->thp_never || v->features.thp_disabled_here ? SP_BACKING_4K
										  : SP_BACKING_THP;
}

/* 2 MiB hugetlb pages on as many of the n units at u as the pool can hold: all of
 * them, or else as many as it has free (read after the refusal, which is counted).
 * Returns how many, from u; the others have plain memory. A run split so is told
 * (rt_fall_split: said with --verbose, and by superpage run once the program has
 * ended). Under the lock. */
size_t back_hugetlb_most(size_t u, size_t n)
{
	if (back_hugetlb(u, n, SP_BACKING_2M))
		return n;
	long free = sp_rung_room(SP_BACKING_2M, false);
	size_t room = free > 0 ? (size_t)free : 0;
	if (n < 2 || room == 0 || room >= n)
		return 0;
	if (!back_hugetlb(u, room, SP_BACKING_2M))
		return 0;
	rt_fall_split(n, room, plain_backing());
	return room;
}

/* Fresh plain memory for the program at n units from u, advised huge, reserved as
 * the program asked (MAP_NORESERVE or not: the commit limit may refuse it). */
int plain_for_program(size_t u, size_t n, int flags)
{
	void *out;
	size_t len = n << UNIT_SHIFT;
	int r = unit_map_program((void *)unit_addr(u), len, flags & MAP_NORESERVE, &out);
	if (r < 0)
		return r;
	unit_want_huge(out, len, true);
	chunk_forget(u, n);
	return 0;
}
