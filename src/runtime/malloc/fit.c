/* fit.c - blocks above 4 KiB and below 128 KiB, fitted to 64 bytes: best fit over
 * chunks of pages that grow and shrink with their use. Size classes (8 per doubling
 * above 8 KiB) rounded such a block up by up to 12.5%, and where few blocks of a size
 * lived most of each class's span of 8 stayed unused, so such blocks took well over
 * glibc's memory. Here any free block serves any size it holds, neighbours join, and a
 * chunk's pages come from the page heap and go back to it (runs.c), so a chunk lies on
 * huge pages with its neighbours.
 *
 * No record of the arena's is in the blocks: a write after free cannot mislead it.
 * A chunk's metadata is a mapping of its own with, per page, the block in use that
 * starts on it, and the free blocks that start and end on it (one of each at most:
 * blocks in use are longer than a page, and free blocks never touch). Free blocks
 * are nodes in bins, from a pool per arena. Threads use arenas by their slot, each
 * with its lock, bins and chunks; in front of them, a thread's cache of the blocks it
 * freed, each marked with the heap's free key at its second word (as small objects
 * are), which malloc clears. */
#include <emmintrin.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "fit.h"
#include "internal.h"

/* The first bin whose every block holds g grains. */
static unsigned bin_above(uint64_t g)
{
	unsigned b = bin_of(g);
	if (g >= EXACT_BINS) {
		unsigned fl = 63u - (unsigned)__builtin_clzll(g);
		if (g & ((1ull << (fl - 4)) - 1))
			b++;
	}
	return b;
}

/* A free block of arena a of at least g grains, out of its bin; NULL if none. */
static struct fit_node *find(struct fit_arena *a, uint64_t g)
{
	unsigned b = bin_of(g);
	struct fit_node *best = NULL;
	unsigned looked = 0;
	for (struct fit_node *x = a->bins[b]; x && looked < FIT_LOOK; x = x->next, looked++)
		if (x->grains >= g && (!best || x->grains < best->grains))
			best = x;
	if (!best) {
		unsigned from = bin_above(g);
		if (from <= b)
			from = b + 1;
		for (unsigned w = from >> 6; w < NBIN / 64 && !best; w++) {
			uint64_t m = a->bin_bits[w] & (w == from >> 6 ? ~0ull << (from & 63) : ~0ull);
			if (m)
				best = a->bins[w * 64 + (unsigned)__builtin_ctzll(m)];
		}
	}
	if (best)
		bin_take(a, best);
	return best;
}

/* Free block x, out of its bin, is used for g grains; the rest stays free. The
 * grains used; *dirty: the bytes at its start that may not be zero (the rest never
 * was given out). */
static uint64_t take(struct fit_arena *a, struct fit_node *x, uint64_t g, size_t *dirty)
{
	struct fit_chunk *c = x->c;
	uint64_t at = x->g, n = x->grains;
	uint64_t clean = c->clean_from > at ? c->clean_from : at;
	*dirty = (size_t)((clean < at + g ? clean : at + g) - at) << GRAIN_SHIFT;
	if (c->clean_from < at + g)
		c->clean_from = (uint32_t)(at + g);
	if (c == a->kept_empty)
		a->kept_empty = NULL;
	if (n > g)
		bin_put(a, c, x, at + g, n - g);
	else
		node_del(a, x);
	set_used(c, at, g);
	c->used += (uint32_t)g;
	return g;
}

/* Grains [g, g+n) of c, no longer in use, become free: joined with the free blocks
 * around them, and a long free tail given back to the page heap. False if there is
 * no node for them (they stay in use). */
static bool put_back(struct fit_arena *a, struct fit_chunk *c, uint64_t g, uint64_t n)
{
	struct fit_node *x = free_from(c, g + n), *prev = free_to(c, g);
	if (x) {
		bin_take(a, x);
		n += x->grains;
	}
	if (prev) {
		bin_take(a, prev);
		n += prev->grains;
		g = prev->g;
		if (x)
			node_del(a, x);
		x = prev;
	}
	if (!x && !(x = fit_node_new(a)))
		return false;
	if (g + n == c->top && g == 0) {
		fit_chunk_emptied(a, c, x);
		return true;
	}
	size_t keep = (size_t)((g + GRAINS_PER_PAGE - 1) / GRAINS_PER_PAGE) + CHUNK_STEP;
	if (g + n == c->top && c->top / GRAINS_PER_PAGE >= keep + TAIL_GIVE - CHUNK_STEP &&
	    pages_resize_run(c->span, keep))
		fit_set_end(a, c, x, g, keep);
	else
		bin_put(a, c, x, g, n);
	return true;
}

/* ---------- the thread's cache ---------- */

/* Blocks a thread frees wait in its cache, 8 classes per doubling by length, at most
 * CACHE_WAYS a class and CACHE_BYTES in all, for its next mallocs of sizes they hold:
 * one is taken with no lock and no record touched. A best fit in the arena alone cost
 * 140 ns a free and malloc of random sizes of 4-64 KiB, against 32 ns for the size
 * classes' caches; and blocks of one size freed and made again, the common case, come
 * back as they were. A block is given out whole: its length over what was asked (at
 * most an eighth, the best fit of its class) is paid on reused blocks only. A cached
 * block carries the heap's free key, as a small object does, for double frees. */
#define CACHE_CLASSES 48
/* (blocks are below 2^11 grains: their classes and the next are below 48) */
_Static_assert(FIT_MAX <= (1ul << (11 + GRAIN_SHIFT)) && (11 - 6) * 8 + 1 < CACHE_CLASSES,
	       "a fitted block's cache class and the next are in the cache");
_Static_assert((FIT_MAX >> GRAIN_SHIFT) + (FIT_MAX >> GRAIN_SHIFT) / 8 + 1 < INT16_MAX,
	       "a fitted block's grains, and an eighth more, are a 16-bit lane");
#define CACHE_WAYS 8
/* (3 MiB: with less, a freed block that does not stay in the cache mostly finds it full
 * of bytes and goes to an arena, under its lock; with more, few more stay out of the
 * arena. A thread may hold all of it while others need memory, so every thread pays for
 * it.) */
#define CACHE_BYTES ((uint64_t)3 << 20)

struct fit_cache {
	/* The blocks' grains, 0 in the ways not used (which no size matches): a class's
	 * ways and the next class's are the 32 bytes cache_pick() reads. */
	_Alignas(64) uint16_t grains[CACHE_CLASSES][CACHE_WAYS];
	void *blk[CACHE_CLASSES][CACHE_WAYS];
	uint8_t n[CACHE_CLASSES];
	bool closed;                    /* the thread has exited: nothing is kept */
	uint64_t bytes;
};
static __thread struct fit_cache cache;

static unsigned cache_class(uint64_t g)
{
	unsigned fl = 63u - (unsigned)__builtin_clzll(g);
	return (fl - 6) * 8 + (unsigned)((g >> (fl - 3)) & 7);
}

/* The ways of one 16-bit lane's worth of 8, kept where they fit: the others read
 * INT16_MAX. */
static inline __m128i fitting(__m128i x, __m128i lo, __m128i hi)
{
	__m128i ok = _mm_and_si128(_mm_cmpgt_epi16(x, lo), _mm_cmplt_epi16(x, hi));
	return _mm_or_si128(_mm_and_si128(ok, x), _mm_andnot_si128(ok, _mm_set1_epi16(INT16_MAX)));
}

/* The way that best fits g grains among the 16 of class k and the next (which
 * begins where k ends), no more than an eighth over: 8 * (its class - k) + its
 * way, or -1. Every block of class k that holds g is within the eighth, so this is
 * the best fit of class k, else of the next; of equal ones, the first. Without a
 * branch: the loop over the ways it replaces missed ~3 branch predictions a malloc,
 * at random sizes. (Grains are below 2^12: 16-bit lanes, the 16 ways in two
 * registers; with 32-bit lanes and the way in each key it took 95 instructions.) */
static inline int cache_pick(const uint16_t *ways, uint64_t g)
{
	const __m128i lo = _mm_set1_epi16((short)(g - 1)), hi = _mm_set1_epi16((short)(g + g / 8 + 1));
	__m128i a = fitting(_mm_load_si128((const __m128i *)(const void *)ways), lo, hi);
	__m128i b = fitting(_mm_load_si128((const __m128i *)(const void *)ways + 1), lo, hi);
	__m128i m = _mm_min_epi16(a, b);
	m = _mm_min_epi16(m, _mm_shuffle_epi32(m, 0x4e));
	m = _mm_min_epi16(m, _mm_shuffle_epi32(m, 0xb1));
	m = _mm_min_epi16(m, _mm_srli_epi32(m, 16));
	int v = _mm_cvtsi128_si32(m) & 0xffff;
	if (v == INT16_MAX)
		return -1;
	__m128i want = _mm_set1_epi16((short)v);
	unsigned hit = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi16(a, want)) |
		       (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi16(b, want)) << 16;
	return __builtin_ctz(hit) / 2;
}

static bool freed_mark(const void *p)
{
	return ((const uintptr_t *)p)[1] == free_mark(p);
}

void *fit_cached(size_t size)
{
	uint64_t g = (size + GRAIN - 1) >> GRAIN_SHIFT;
	struct fit_cache *fc = &cache;
	unsigned k = cache_class(g);
	int way = cache_pick(fc->grains[k], g);
	if (way < 0)
		return NULL;
	unsigned i = (unsigned)way & (CACHE_WAYS - 1);
	k += (unsigned)way / CACHE_WAYS;
	void *p = fc->blk[k][i];
	unsigned last = --fc->n[k];
	fc->bytes -= (uint64_t)fc->grains[k][i] << GRAIN_SHIFT;
	fc->blk[k][i] = fc->blk[k][last];
	fc->grains[k][i] = fc->grains[k][last];
	fc->grains[k][last] = 0;
	((uintptr_t *)p)[1] = 0;
	return p;
}

void *fit_alloc(size_t size, unsigned slot, size_t *fresh, size_t *dirty)
{
	uint64_t g = (size + GRAIN - 1) >> GRAIN_SHIFT;
	struct fit_arena *a = &fit_arenas[slot % FIT_ARENAS];
	void *p = NULL;
	pthread_mutex_lock(&a->lock);
	struct fit_node *x = find(a, g);
	if (!x && fit_grow(a, g))
		x = find(a, g);
	if (x) {
		p = (void *)(x->c->span->start + ((uintptr_t)x->g << GRAIN_SHIFT));
		*fresh = take(a, x, g, dirty) << GRAIN_SHIFT;
	}
	pthread_mutex_unlock(&a->lock);
	sp_assert(!p || mem_is_zero((char *)p + *dirty, *fresh - *dirty));
	if (p && *dirty) /* (the pages may have held a freed object's key) */
		((uintptr_t *)p)[1] = 0;
	return p;
}

/* The arena of the chunk span s, locked. */
static struct fit_arena *lock_arena(const struct span *s, const void *p, const char *fn)
{
	struct fit_chunk *c = __atomic_load_n(&s->fit, __ATOMIC_ACQUIRE);
	if (!c)
		rt_abort("%s(): invalid pointer %p", fn, p);
	struct fit_arena *a = c->arena;
	pthread_mutex_lock(&a->lock);
	return a;
}

/* The grain p starts at in c, checked to be a block in use; its length in *n. Under
 * its arena's lock. */
static uint64_t block_in_use(const struct fit_chunk *c, const void *p, uint64_t *n,
			     const char *fn)
{
	uintptr_t off = (uintptr_t)p - c->span->start;
	uint64_t g = off >> GRAIN_SHIFT;
	if (!(off & (GRAIN - 1)) && g < c->top && (*n = used_from(c, g))) {
		if (freed_mark(p))
			rt_abort("%s(): %s of %p", fn, fn[0] == 'f' ? "double free" : "a freed block", p);
		return g;
	}
	if (!(off & (GRAIN - 1)) && free_from(c, g))
		rt_abort("%s(): %s of %p", fn, fn[0] == 'f' ? "double free" : "a freed block", p);
	rt_abort("%s(): invalid pointer %p (inside a block)", fn, p);
}

/* Block p of s back to its arena: the bytes given back. */
static size_t arena_free(struct span *s, void *p)
{
	struct fit_arena *a = lock_arena(s, p, "free");
	struct fit_chunk *c = s->fit;
	uint64_t n, g = block_in_use(c, p, &n, "free");
	set_used(c, g, 0);
	c->used -= (uint32_t)n;
	if (!put_back(a, c, g, n)) {
		/* (no memory for a node: the block stays out, as if still in use) */
		set_used(c, g, n);
		c->used += (uint32_t)n;
	}
	pthread_mutex_unlock(&a->lock);
	return n << GRAIN_SHIFT;
}

size_t fit_free(struct span *s, void *p)
{
	struct fit_chunk *c = __atomic_load_n(&s->fit, __ATOMIC_ACQUIRE);
	struct fit_cache *fc = &cache;
	uintptr_t off = (uintptr_t)p - s->start;
	uint64_t g = off >> GRAIN_SHIFT, n;
	/* (The page's word of a block in use cannot change under its free; anything
	 * else, the locked way says what is wrong.) */
	if (!c || (off & (GRAIN - 1)) || g >= CHUNK_GRAINS || !(n = used_from(c, g)) || fc->closed)
		return arena_free(s, p);
	if (freed_mark(p))
		rt_abort("free(): double free of %p", p);
	unsigned k = cache_class(n);
	uint64_t bytes = n << GRAIN_SHIFT;
	if (fc->n[k] == CACHE_WAYS || fc->bytes + bytes > CACHE_BYTES)
		return arena_free(s, p);
	fc->blk[k][fc->n[k]] = p;
	fc->grains[k][fc->n[k]++] = (uint16_t)n;
	fc->bytes += bytes;
	((uintptr_t *)p)[1] = free_mark(p);
	return 0;
}

size_t fit_release(struct span *s, void *p)
{
	((uintptr_t *)p)[1] = 0;
	return arena_free(s, p);
}

size_t fit_cache_flush(bool close)
{
	struct fit_cache *fc = &cache;
	size_t back = 0;
	for (unsigned k = 0; k < CACHE_CLASSES; k++) {
		for (unsigned i = 0; i < fc->n[k]; i++) {
			void *p = fc->blk[k][i];
			((uintptr_t *)p)[1] = 0;
			back += arena_free(span_at((uintptr_t)p), p);
			fc->grains[k][i] = 0;
		}
		fc->n[k] = 0;
	}
	fc->bytes = 0;
	fc->closed = close;
	return back;
}

size_t fit_usable(struct span *s, const void *p, const char *fn)
{
	/* (As in fit_free: the word of a block in use is the caller's; anything else,
	 * the locked way says what is wrong.) */
	struct fit_chunk *c = __atomic_load_n(&s->fit, __ATOMIC_ACQUIRE);
	uintptr_t off = (uintptr_t)p - s->start;
	uint64_t g = off >> GRAIN_SHIFT, n;
	if (c && !(off & (GRAIN - 1)) && g < CHUNK_GRAINS && (n = used_from(c, g)) && !freed_mark(p))
		return n << GRAIN_SHIFT;
	struct fit_arena *a = lock_arena(s, p, fn);
	block_in_use(s->fit, p, &n, fn);
	pthread_mutex_unlock(&a->lock);
	return n << GRAIN_SHIFT;
}

bool fit_resize(struct span *s, void *p, size_t size, size_t *now)
{
	struct fit_arena *a = lock_arena(s, p, "realloc");
	struct fit_chunk *c = s->fit;
	uint64_t n, want = (size + GRAIN - 1) >> GRAIN_SHIFT;
	uint64_t g = block_in_use(c, p, &n, "realloc"), end = g + n;
	if (want < n) {
		set_used(c, g, want);
		c->used -= (uint32_t)(n - want);
		if (put_back(a, c, g + want, n - want)) {
			n = want;
		} else {
			set_used(c, g, n);
			c->used += (uint32_t)(n - want);
		}
	} else if (want > n) {
		/* Room for the next growth too, from free grains only: a string grown
		 * by appends then comes back for the lock once in a while, not at every
		 * grain it crosses (fit_keeps). */
		uint64_t room = want + (want >> FIT_ROOM_SHIFT);
		if (room > FIT_MAX >> GRAIN_SHIFT)
			room = want;
		if (end == c->top && !fit_grow_chunk(a, c, room - n))
			fit_grow_chunk(a, c, want - n);
		struct fit_node *x = free_from(c, end);
		if (x && n + x->grains >= want) {
			/* the block and the free one after it, as one free block, taken */
			bin_take(a, x);
			x->g = (uint32_t)g;
			x->grains += (uint32_t)n;
			c->used -= (uint32_t)n;
			size_t dirty; /* (realloc copies, and zeroes nothing) */
			n = take(a, x, room < x->grains ? room : x->grains, &dirty);
		}
	}
	pthread_mutex_unlock(&a->lock);
	*now = n << GRAIN_SHIFT;
	return n >= want;
}

void fit_init(void)
{
	for (unsigned i = 0; i < FIT_ARENAS; i++)
		pthread_mutex_init(&fit_arenas[i].lock, NULL);
}

/* Arenas first, then the spare records: the order fit_grow() and fit_chunk_emptied()
 * take them in (the other order deadlocked a fork against a thread making a chunk). */
void fit_lock(void)
{
	for (unsigned i = 0; i < FIT_ARENAS; i++)
		pthread_mutex_lock(&fit_arenas[i].lock);
	fit_meta_lock();
}

void fit_unlock(void)
{
	fit_meta_unlock();
	for (unsigned i = FIT_ARENAS; i-- > 0;)
		pthread_mutex_unlock(&fit_arenas[i].lock);
}

void fit_stats(uint64_t *chunk_bytes, uint64_t *free_bytes)
{
	*chunk_bytes = *free_bytes = 0;
	for (unsigned i = 0; i < FIT_ARENAS; i++) {
		const struct fit_arena *a = &fit_arenas[i];
		*chunk_bytes += __atomic_load_n(&a->chunk_grains, __ATOMIC_RELAXED) << GRAIN_SHIFT;
		*free_bytes += __atomic_load_n(&a->free_grains, __ATOMIC_RELAXED) << GRAIN_SHIFT;
	}
}

