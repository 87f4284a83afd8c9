/* units.c - the unit table: the lists units are on (buckets by longest free run, the
 * empty-unit cache), their counts, and the check that recomputes them. */
#include <string.h>

#include "bits.h"
#include "internal.h"
#include "malloc/malloc.h"
#include "pageheap/unit_os.h"
#include "units.h"

/* The lock spins a little before it sleeps: it is held briefly, and is mostly free
 * again before a futex call would return (two threads growing strings by realloc made
 * far fewer futex calls so). */
struct pages pg = {
	.lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP,
	.cache_head = NO_UNIT,
	.cache_tail = NO_UNIT,
	.map_rung = SP_BACKING_COUNT,
};

void pages_lock(void) { pthread_mutex_lock(&pg.lock); }

void pages_unlock(void) { pthread_mutex_unlock(&pg.lock); }

void pages_note_fall(enum sp_backing rung, enum sp_fall why)
{
	sp_fall(SP_SITE_HEAP, rung, why);
	rt_fall(rung, why);
}

static uint16_t longest_run(const uint64_t *b)
{
	size_t best = 0, i = 0;
	while (i < PAGES_PER_UNIT) {
		size_t f = bits_next(b, i, PAGES_PER_UNIT, true);
		if (f == PAGES_PER_UNIT)
			break;
		size_t e = bits_next(b, f, PAGES_PER_UNIT, false);
		if (e - f > best)
			best = e - f;
		i = e;
	}
	return (uint16_t)best;
}

static void list_unlink(int32_t *head, int32_t *tail, int32_t u)
{
	struct unit *x = &pg.units[u];
	if (x->prev != NO_UNIT)
		pg.units[x->prev].next = x->next;
	else
		*head = x->next;
	if (x->next != NO_UNIT)
		pg.units[x->next].prev = x->prev;
	else if (tail)
		*tail = x->prev;
	x->prev = x->next = NO_UNIT;
}

void list_push_front(int32_t *head, int32_t *tail, int32_t u)
{
	struct unit *x = &pg.units[u];
	x->prev = NO_UNIT;
	x->next = *head;
	if (*head != NO_UNIT)
		pg.units[*head].prev = u;
	else if (tail)
		*tail = u;
	*head = u;
}

unsigned bucket_of(unsigned longest)
{
	unsigned b = 31u - (unsigned)__builtin_clz(longest);
	return b < NBUCKET ? b : NBUCKET - 1;
}

/* Puts a HEAP unit in the bucket of its longest free run (none when full). */
void rebucket(int32_t u)
{
	struct unit *x = &pg.units[u];
	if (x->bucket != NO_BUCKET)
		list_unlink(&pg.bucket_head[x->tier][x->bucket], NULL, u);
	x->bucket = NO_BUCKET;
	x->longest = longest_run(x->free);
	if (x->longest) {
		x->bucket = (uint8_t)bucket_of(x->longest);
		list_push_front(&pg.bucket_head[x->tier][x->bucket], NULL, u);
	}
}

void cache_remove(int32_t u)
{
	list_unlink(&pg.cache_head, &pg.cache_tail, u);
	pg.units[u].in_cache = 0;
	pg.cached--;
}

uint64_t pages_unit_events(void)
{
	return atomic_load_explicit(&pg.st.unit_events, memory_order_relaxed);
}

void count_units(enum sp_backing b, long n)
{
	atomic_fetch_add_explicit(&pg.st.unit_events, 1, memory_order_relaxed);
	if (n > 0)
		atomic_fetch_add_explicit(&pg.st.units_added, (uint64_t)n, memory_order_relaxed);
	pg.st.units[b] += (uint64_t)n;
	uint64_t total = 0;
	for (int i = 0; i < SP_BACKING_COUNT; i++)
		total += pg.st.units[i];
	if (total > pg.st.units_peak)
		pg.st.units_peak = total;
	if (n > 0 && total + pg.cached >= pg.st.recent_peak) {
		pg.st.recent_peak = total + pg.cached;
		pg.st.recent_peak_ns = heap_now_ns();
	}
	if (pg.small_first && total >= PROMOTE_UNITS && !atomic_load(&pg.promoted))
		atomic_store(&pg.promote_pending, true);
}

/* Sets the count of free pages of a HEAP unit, keeping the totals of them: the calling
 * thread took or freed some, and is the unit's owner (unit_foreign). */
void set_nfree(struct unit *x, size_t n)
{
	sp_assert(n <= PAGES_PER_UNIT);
	if (!x->mapping) {
		pg.unit_free_pages += n - x->nfree;
		pg.full_units += (size_t)(n == 0) - (size_t)(x->nfree == 0);
	}
	x->nfree = (uint16_t)n;
	x->owner = (uint16_t)malloc_thread_slot();
}

/* Pages [at, at+n) of unit u change hands: its map of free pages, its count, the
 * totals and its bucket in one call (a unit that holds a program's mapping has no
 * bucket). Whether they read as zero (never given out since the unit was new). Under
 * the lock. */
bool unit_take(size_t u, size_t at, size_t n)
{
	struct unit *x = &pg.units[u];
	sp_assert(bits_next(x->free, at, at + n, false) == at + n); /* all of them free */
	bits_set(x->free, at, n, false);
	set_nfree(x, x->nfree - n);
	if (!x->mapping)
		rebucket((int32_t)u);
	bool clean = at >= x->clean_from;
	if (at + n > x->clean_from)
		x->clean_from = (uint16_t)(at + n);
	return clean;
}

/* ...and back: its free pages now. A unit of the heap's own that empties leaves the
 * buckets and the heap (heap_unit_gone): its caller retires it. */
size_t unit_give(size_t u, size_t at, size_t n)
{
	struct unit *x = &pg.units[u];
	sp_assert(bits_next(x->free, at, at + n, true) == at + n); /* none of them free */
	bits_set(x->free, at, n, true);
	set_nfree(x, x->nfree + n);
	if (!x->mapping) {
		if (x->nfree < PAGES_PER_UNIT)
			rebucket((int32_t)u);
		else
			heap_unit_gone(x);
	}
	return x->nfree;
}

/* A HEAP unit of the heap's own is empty and leaves it. */
void heap_unit_gone(struct unit *x)
{
	if (x->bucket != NO_BUCKET)
		list_unlink(&pg.bucket_head[x->tier][x->bucket], NULL, (int32_t)(x - pg.units));
	x->bucket = NO_BUCKET;
	pg.unit_free_pages -= PAGES_PER_UNIT;
	pg.heap_units--;
}

/* FREE unit u joins the page heap, empty, with the backing it got, for runs of tier t;
 * its pages read as zero if it was not resident. */
void heap_unit_init(size_t u, enum sp_backing got, enum tier t)
{
	struct unit *x = &pg.units[u];
	x->state = U_HEAP;
	x->tier = (uint8_t)t;
	x->backing = (uint8_t)got;
	x->clean_from = x->resident ? PAGES_PER_UNIT : 0;
	x->resident = 1;
	x->nfree = PAGES_PER_UNIT;
	pg.unit_free_pages += PAGES_PER_UNIT;
	memset(x->free, 0xff, sizeof x->free);
	x->bucket = NO_BUCKET;
	pg.heap_units++;
	count_units(got, 1);
}

void pages_note_mmap(bool large)
{
	atomic_fetch_add_explicit(large ? &pg.st.large_mmaps : &pg.st.small_mmaps, 1, memory_order_relaxed);
}


/* The units' memory, from the totals kept as it changes: no walk, so that the account
 * a running program publishes (rt_live_tick) costs little. Under the lock. */
static void unit_account(struct rt_stats *st)
{
	size_t total = 0;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		total += pg.st.units[b];
	size_t large = total - pg.heap_units, own = pg.heap_units - pg.mapping_units;
	st->unit_used_bytes = (uint64_t)((own + large) * PAGES_PER_UNIT - pg.unit_free_pages)
			      << PAGE_SHIFT;
	st->unit_free_bytes = (uint64_t)pg.unit_free_pages << PAGE_SHIFT;
	st->full_unit_bytes = (uint64_t)(pg.full_units + large) << UNIT_SHIFT;
	st->kept_units = pg.cached;
	/* (A walk, under 2m and 1g only.) */
	st->chunk_held_units = st->chunk_spare_units = st->chunk_maps = 0;
	if (pg.policy != SP_BACKING_2M && pg.policy != SP_BACKING_1G)
		return;
	for (size_t u = 0; u < pg.frontier; u++) {
		const struct unit *x = &pg.units[u];
		if (!x->chunk)
			continue;
		st->chunk_maps += x->chunk == 2;
		if (x->state == U_FREE) {
			st->chunk_held_units++;
			st->chunk_spare_units += !x->resident;
		}
	}
}

void pages_stats(struct rt_stats *st)
{
	st->small_mmaps = atomic_load(&pg.st.small_mmaps);
	st->large_mmaps = atomic_load(&pg.st.large_mmaps);
	limits_stats(st);
	pthread_mutex_lock(&pg.lock);
	memcpy(st->units, pg.st.units, sizeof st->units);
	st->units_peak = pg.st.units_peak;
	st->large_blocks = pg.st.large_blocks;
	st->large_bytes = pg.st.large_bytes;
	st->mremaps = pg.st.mremaps;
	st->released_units = pg.st.released;
	st->reused_units = pg.st.reused;
	st->dense_units = atomic_load_explicit(&pg.st.dense_huge, memory_order_relaxed);
	st->dense_refused = atomic_load_explicit(&pg.st.dense_refused, memory_order_relaxed);
	unit_account(st);
	st->small_mmap_bytes = pg.st.small_mmap_pages << PAGE_SHIFT;
	sp_falls_get(SP_SITE_HEAP, st->falls);
	pthread_mutex_unlock(&pg.lock);
}

/* A span of objects agrees with its class: whole, or one of a thread's first, short
 * ones (class_span_pages); its objects end where a whole span's do, and its pages'
 * info is its class and their indexes in a whole span (what free checks). */
static bool small_span_ok(const struct span *s)
{
	unsigned c = s->cls, k = 0;
	if (c >= NCLASS || s->npages + s->first != class_pages(c))
		return false;
	while (s->first && class_span_pages(c, k) < s->npages)
		k++;
	if (s->first && class_span_pages(c, k) != s->npages)
		return false;
	uintptr_t origin = s->start - ((uintptr_t)s->first << PAGE_SHIFT);
	if (s->end != origin + class_limit(c) || s->bump > s->end)
		return false;
	const uint64_t *info = &heap_hot.pageinfo[page_of(s->start)];
	for (size_t i = 0; i < s->npages; i++)
		if (__atomic_load_n(&info[i], __ATOMIC_RELAXED) != small_info(c, origin))
			return false;
	return true;
}

/* Recomputes what the page heap keeps counted and listed, from the units' bitmaps
 * and the page map, and compares: the first difference found (*unit: where), or
 * NULL. It walks every page, under the lock; objects: the spans of objects against
 * their class and page info too (which central.c sets after the span is made, out of
 * this lock). */
static const char *check_locked(size_t *unit, bool objects)
{
	const char *bad = NULL;
	size_t n_heap = 0, n_cached = 0, used = 0, spanned = 0, bad_u = 0;
	size_t own_free = 0, own_full = 0, n_map = 0;
	uint64_t per[SP_BACKING_COUNT] = { 0 };
	for (size_t u = 0; u < pg.frontier && !bad; u++) {
		struct unit *x = &pg.units[u];
		bad_u = u;
		if (bit(pg.freebits, u) != (x->state == U_FREE))
			bad = "a unit's free bit disagrees with its state";
		else if (x->in_cache && (x->state != U_FREE || !x->resident))
			bad = "a unit in the empty cache is not free and resident";
		n_cached += x->in_cache;
		bool in_use = x->state == U_HEAP || x->state == U_LARGE;
		if (in_use && (x->backing == SP_BACKING_2M) != (x->chunk != 0))
			bad = "a unit in use on 2 MiB pages is in no chunk, or one in a chunk is not";
		else if (x->chunk == 1 && (u == 0 || !pg.units[u - 1].chunk))
			bad = "a chunk's first unit is not marked so";
		else if (x->faulted && !x->chunk)
			bad = "a unit in no chunk is marked present";
		if (bad)
			continue;
		if (x->state == U_LARGE) {
			per[x->backing]++;
			used += PAGES_PER_UNIT;
		}
		if (x->state != U_HEAP || bad)
			continue;
		n_heap++;
		n_map += x->mapping;
		per[x->backing]++;
		size_t nfree = 0;
		for (size_t w = 0; w < PAGES_PER_UNIT / 64; w++)
			nfree += (size_t)__builtin_popcountll(x->free[w]);
		used += PAGES_PER_UNIT - nfree;
		if (!x->mapping) {
			own_free += nfree;
			own_full += nfree == 0;
		}
		if (nfree != x->nfree)
			bad = "a unit's count of free pages is wrong";
		else if (!x->mapping && nfree == PAGES_PER_UNIT)
			bad = "an empty unit is still the heap's";
		else if (!x->mapping && (x->longest != longest_run(x->free) ||
					 x->bucket != (x->longest ? bucket_of(x->longest) : NO_BUCKET)))
			bad = "a unit's longest free run or its bucket is wrong";
	}
	for (unsigned t = 0; t < NTIER && !bad; t++)
		for (unsigned b = 0; b < NBUCKET && !bad; b++)
			for (int32_t c = pg.bucket_head[t][b]; c != NO_UNIT && !bad; c = pg.units[c].next)
				if (pg.units[c].bucket != b || pg.units[c].tier != t ||
				    pg.units[c].state != U_HEAP)
					bad = "a bucket lists a unit not of it", bad_u = (size_t)c;
	size_t listed = 0;
	for (int32_t c = pg.cache_head; c != NO_UNIT && !bad; c = pg.units[c].next)
		if (!pg.units[c].in_cache || ++listed > n_cached)
			bad = "the empty cache lists a unit not in it", bad_u = (size_t)c;
	if (!bad && (listed != n_cached || pg.cached != n_cached))
		bad = "the empty cache's count is wrong";
	if (!bad && n_heap != pg.heap_units)
		bad = "the count of the heap's units is wrong";
	if (!bad && (own_free != pg.unit_free_pages || own_full != pg.full_units || n_map != pg.mapping_units))
		bad = "the totals of free pages, full units or mapping units are wrong";
	for (int b = 0; b < SP_BACKING_COUNT && !bad; b++)
		if (per[b] != pg.st.units[b])
			bad = "the count of units by backing is wrong";
	/* Every span's pages are in use, and the spans hold every page in use. */
	for (size_t p = 0; p < pg.frontier * PAGES_PER_UNIT && !bad; p++) {
		struct span *s = atomic_load_explicit(&heap_hot.pagemap[p], memory_order_relaxed);
		if (!s || page_of(s->start) != p)
			continue;
		bad_u = p / PAGES_PER_UNIT;
		if (s->magic != SPAN_MAGIC) {
			bad = "the page map holds a span that is not one";
			break;
		}
		if (objects && s->kind == SPAN_SMALL && !small_span_ok(s)) {
			bad = "a span of objects disagrees with its class or its pages' info";
			break;
		}
		spanned += s->npages;
		for (size_t i = p; i < p + s->npages && !bad; i++) {
			struct unit *x = &pg.units[i / PAGES_PER_UNIT];
			if (s->kind == SPAN_LARGE ? x->state != U_LARGE
						  : x->state != U_HEAP || bit(x->free, i % PAGES_PER_UNIT))
				bad = "a span's page is free in its unit";
			else if (s->kind != SPAN_LARGE && !x->mapping && x->tier != tier_of(s->kind))
				bad = "a span lies in a unit of the other tier";
		}
	}
	if (!bad && spanned != used)
		bad = "the spans do not hold the pages in use";
	*unit = bad_u;
	return bad;
}

/* For the tests, after each step of a random sequence. */
const char *pages_check(size_t *unit)
{
	pthread_mutex_lock(&pg.lock);
	const char *bad = check_locked(unit, true);
	pthread_mutex_unlock(&pg.lock);
	return bad;
}

#ifdef SP_DEBUG
/* DEBUG: the heap checked as its lock is released (the spans of objects apart: their
 * class is set after their pages are had), every page while they are few. */
static const char *check_released(pthread_mutex_t *m)
{
	static _Atomic size_t credit;
	size_t where;
	(void)m;
	if (!sp_check_due(&credit, pg.frontier * (PAGES_PER_UNIT + 1)))
		return NULL;
	return check_locked(&where, false);
}
#endif
SP_LOCK_RANK(pg.lock, RANK_PAGES, check_released);
