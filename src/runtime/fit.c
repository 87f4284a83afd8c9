/* fit.c - blocks above 4 KiB and below 128 KiB, fitted to 64 bytes: best fit over
 * chunks of pages that grow and shrink with their use. Size classes (8 per doubling
 * above 8 KiB) rounded such a block up by up to 12.5%, and where few blocks of a size
 * lived most of each class's span of 8 stayed unused: 1.13x glibc's memory for blocks
 * of 8 KiB + 1 B. Here any free block serves any size it holds, neighbours join, and
 * a chunk's pages come from the page heap and go back to it (runs.c), so a chunk lies
 * on huge pages with its neighbours.
 *
 * No record of the arena's is in the blocks: a write after free cannot mislead it.
 * A chunk's metadata is a mapping of its own with, per page, the block in use that
 * starts on it, and the free blocks that start and end on it (one of each at most:
 * blocks in use are longer than a page, and free blocks never touch). Free blocks
 * are nodes in bins, from a pool per arena. Threads use arenas by their slot, each
 * with its lock, bins and chunks; in front of them, a thread's cache of the blocks it
 * freed, each marked with the heap's free key at its second word (as small objects
 * are), which malloc clears. */
#include <string.h>
#include <sys/mman.h>

#include "heap.h"
#include "internal.h"

#define GRAIN_SHIFT 6
#define GRAIN (1ul << GRAIN_SHIFT)
#define GRAINS_PER_PAGE (PAGE_SIZE >> GRAIN_SHIFT)
#define CHUNK_GRAINS (FIT_CHUNK_PAGES * GRAINS_PER_PAGE)
/* Pages a chunk starts with and grows by, at least: ahead of its blocks, so that the
 * page heap places other spans elsewhere and the chunk can go on growing in place. */
#define CHUNK_STEP 64ul
/* A free tail of this many pages goes back to the page heap, all but CHUNK_STEP. */
#define TAIL_GIVE (4 * CHUNK_STEP)
/* Bins of free blocks by grains: exact below 32, then 16 per doubling. */
#define EXACT_BINS 32u
#define NBIN (EXACT_BINS + 14u * 16u)
/* Blocks of the exact bin looked at for the best fit before a larger bin's first. */
#define FIT_LOOK 8
#define NODE_SLAB 65536ul

struct fit_arena;
struct fit_chunk;

/* A free block. */
struct fit_node {
	struct fit_node *next, *prev;   /* its bin (spare nodes: next) */
	struct fit_chunk *c;
	uint32_t g, grains;             /* where it starts in c, and its length */
};

/* Per page of the chunk, the block in use that starts on it, the free block that
 * starts on it and the free block that ends on it (one of each at most: blocks in use
 * are longer than a page, and free blocks never touch). */
struct fit_chunk {
	struct span *span;
	struct fit_arena *arena;
	struct fit_chunk *prev, *next;  /* the arena's chunks (spare metadata: next) */
	uint32_t top;                   /* grains: the chunk's pages times 64 */
	uint32_t used;                  /* grains of the blocks in use */
	uint64_t used_at[FIT_CHUNK_PAGES];      /* used_word() of the block, or 0 */
	struct fit_node *free_at[FIT_CHUNK_PAGES];
	struct fit_node *end_at[FIT_CHUNK_PAGES];
};

struct fit_arena {
	pthread_mutex_t lock;
	struct fit_node *bins[NBIN];
	uint64_t bin_bits[NBIN / 64];
	struct fit_chunk *chunks;
	struct fit_chunk *growing;      /* the chunk grown last: the next to grow */
	struct fit_chunk *kept_empty;   /* one empty chunk kept for the next block */
	struct fit_node *spare_nodes;
	/* Changed under the lock, read without it (fit_stats: the live account asks
	 * from inside the page heap, which a chunk's growth calls under the lock). */
	uint64_t free_grains, chunk_grains;
} __attribute__((aligned(64)));

static struct fit_arena arenas[FIT_ARENAS];
static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER; /* after an arena's */
static struct fit_chunk *spare_meta;    /* metadata of chunks gone, maps all clear */

/* What a page's word says of the block in use that starts on it: its grains and its
 * first grain (read without the lock by free, whose block cannot change under it). */
static uint64_t used_word(uint64_t g, uint64_t n)
{
	return n << 32 | g;
}

static void set_used(struct fit_chunk *c, uint64_t g, uint64_t n)
{
	__atomic_store_n(&c->used_at[g / GRAINS_PER_PAGE], n ? used_word(g, n) : 0,
			 __ATOMIC_RELAXED);
}

/* The length of the block in use that starts at grain g of c, or 0. */
static uint64_t used_from(const struct fit_chunk *c, uint64_t g)
{
	uint64_t w = __atomic_load_n(&c->used_at[g / GRAINS_PER_PAGE], __ATOMIC_RELAXED);
	return (uint32_t)w == g ? w >> 32 : 0;
}

/* Adds d (mod 2^64) to a count fit_stats reads without the lock. */
static void count_add(uint64_t *v, uint64_t d)
{
	__atomic_store_n(v, *v + d, __ATOMIC_RELAXED);
}

static unsigned bin_of(uint64_t g)
{
	if (g < EXACT_BINS)
		return (unsigned)g;
	unsigned fl = 63u - (unsigned)__builtin_clzll(g);
	return EXACT_BINS + (fl - 5) * 16 + (unsigned)((g >> (fl - 4)) & 15);
}

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

static void *map_meta(size_t len)
{
	void *m;
	if (sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m) < 0)
		return NULL;
	return m;
}

/* A node from the arena's pool; NULL if no memory for one. */
static struct fit_node *node_new(struct fit_arena *a)
{
	if (!a->spare_nodes) {
		struct fit_node *slab = map_meta(NODE_SLAB);
		if (!slab)
			return NULL;
		for (size_t i = NODE_SLAB / sizeof *slab; i-- > 0;) {
			slab[i].next = a->spare_nodes;
			a->spare_nodes = &slab[i];
		}
	}
	struct fit_node *x = a->spare_nodes;
	a->spare_nodes = x->next;
	return x;
}

static void node_del(struct fit_arena *a, struct fit_node *x)
{
	x->next = a->spare_nodes;
	a->spare_nodes = x;
}

/* Node x, [g, g+n) of c, goes in its bin and on its pages. */
static void bin_put(struct fit_arena *a, struct fit_chunk *c, struct fit_node *x, uint64_t g,
		    uint64_t n)
{
	unsigned b = bin_of(n);
	x->c = c;
	x->g = (uint32_t)g;
	x->grains = (uint32_t)n;
	x->prev = NULL;
	x->next = a->bins[b];
	if (x->next)
		x->next->prev = x;
	a->bins[b] = x;
	a->bin_bits[b >> 6] |= 1ull << (b & 63);
	c->free_at[g / GRAINS_PER_PAGE] = x;
	c->end_at[(g + n - 1) / GRAINS_PER_PAGE] = x;
	count_add(&a->free_grains, n);
}

/* Node x leaves its bin and its pages, and is still the caller's. */
static void bin_take(struct fit_arena *a, struct fit_node *x)
{
	unsigned b = bin_of(x->grains);
	if (x->next)
		x->next->prev = x->prev;
	if (x->prev)
		x->prev->next = x->next;
	else if (!(a->bins[b] = x->next))
		a->bin_bits[b >> 6] &= ~(1ull << (b & 63));
	x->c->free_at[x->g / GRAINS_PER_PAGE] = NULL;
	x->c->end_at[(x->g + x->grains - 1) / GRAINS_PER_PAGE] = NULL;
	count_add(&a->free_grains, -(uint64_t)x->grains);
}

/* The free block that starts at grain g of c, or NULL. */
static struct fit_node *free_from(const struct fit_chunk *c, uint64_t g)
{
	if (g >= c->top)
		return NULL;
	struct fit_node *x = c->free_at[g / GRAINS_PER_PAGE];
	return x && x->g == g ? x : NULL;
}

/* The free block that ends at grain g of c (exclusive), or NULL. */
static struct fit_node *free_to(const struct fit_chunk *c, uint64_t g)
{
	if (g == 0)
		return NULL;
	struct fit_node *x = c->end_at[(g - 1) / GRAINS_PER_PAGE];
	return x && x->g + x->grains == g ? x : NULL;
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
 * grains used. */
static uint64_t take(struct fit_arena *a, struct fit_node *x, uint64_t g)
{
	struct fit_chunk *c = x->c;
	uint64_t at = x->g, n = x->grains;
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

static struct fit_chunk *meta_get(void)
{
	pthread_mutex_lock(&meta_lock);
	struct fit_chunk *c = spare_meta;
	if (c)
		spare_meta = c->next;
	pthread_mutex_unlock(&meta_lock);
	return c ? c : map_meta(sizeof *c);
}

static void meta_put(struct fit_chunk *c)
{
	pthread_mutex_lock(&meta_lock);
	c->next = spare_meta;
	spare_meta = c;
	pthread_mutex_unlock(&meta_lock);
}

/* The chunk's end moves to `pages` pages (its span already has them): its free tail,
 * from grain from, reaches the new end as node x (the tail's node, taken out of its
 * bin, or a new one). */
static void set_end(struct fit_arena *a, struct fit_chunk *c, struct fit_node *x, uint64_t from,
		    size_t pages)
{
	uint64_t top = pages * GRAINS_PER_PAGE;
	count_add(&a->chunk_grains, top - c->top);
	c->top = (uint32_t)top;
	bin_put(a, c, x, from, top - from);
}

/* The free block at the end of c, or NULL if its last block is in use. */
static struct fit_node *tail_of(const struct fit_chunk *c)
{
	return free_to(c, c->top);
}

/* c grows in place to hold a block of g grains at its end; false if the pages after
 * it are not free. */
static bool grow_chunk(struct fit_arena *a, struct fit_chunk *c, uint64_t g)
{
	struct fit_node *x = tail_of(c);
	bool fresh = !x;
	uint64_t from = x ? x->g : c->top;
	size_t need = (size_t)((from + g + GRAINS_PER_PAGE - 1) / GRAINS_PER_PAGE);
	size_t pages = c->top / GRAINS_PER_PAGE + CHUNK_STEP;
	if (pages < need)
		pages = need;
	if (pages > FIT_CHUNK_PAGES)
		pages = FIT_CHUNK_PAGES;
	if (pages < need || (fresh && !(x = node_new(a))))
		return false;
	if (!pages_resize_run(c->span, pages)) {
		if (fresh)
			node_del(a, x);
		return false;
	}
	if (!fresh)
		bin_take(a, x);
	set_end(a, c, x, from, pages);
	return true;
}

/* Room for g more grains in arena a: the chunk grown last grown in place, else a new
 * chunk. */
static bool grow(struct fit_arena *a, uint64_t g)
{
	if (a->growing && grow_chunk(a, a->growing, g))
		return true;
	size_t need = (size_t)((g + GRAINS_PER_PAGE - 1) / GRAINS_PER_PAGE);
	size_t pages = need > CHUNK_STEP ? need : CHUNK_STEP;
	struct fit_node *x = node_new(a);
	struct fit_chunk *c = x ? meta_get() : NULL;
	struct span *s = c ? pages_alloc_run(pages, 1, SPAN_FIT) : NULL;
	if (!s && c && pages > need)
		s = pages_alloc_run(pages = need, 1, SPAN_FIT);
	if (!s) {
		if (c)
			meta_put(c);
		if (x)
			node_del(a, x);
		return false;
	}
	c->span = s;
	c->arena = a;
	c->top = 0;
	c->used = 0;
	c->prev = NULL;
	c->next = a->chunks;
	if (a->chunks)
		a->chunks->prev = c;
	a->chunks = c;
	__atomic_store_n(&s->fit, c, __ATOMIC_RELEASE);
	set_end(a, c, x, 0, pages);
	a->growing = c;
	return true;
}

/* c holds no block any more: kept (down to CHUNK_STEP pages) if no other empty one
 * is, else its pages go back to the page heap. x, out of its bin, is its one free
 * block. */
static void chunk_emptied(struct fit_arena *a, struct fit_chunk *c, struct fit_node *x)
{
	if (!a->kept_empty) {
		size_t pages = c->top / GRAINS_PER_PAGE;
		if (pages > CHUNK_STEP && pages_resize_run(c->span, CHUNK_STEP))
			pages = CHUNK_STEP;
		a->kept_empty = c;
		set_end(a, c, x, 0, pages);
		return;
	}
	node_del(a, x);
	count_add(&a->chunk_grains, -(uint64_t)c->top);
	if (c->prev)
		c->prev->next = c->next;
	else
		a->chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (a->growing == c)
		a->growing = NULL;
	struct span *s = c->span;
	c->span = NULL;
	meta_put(c);
	pages_free(s);
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
	if (!x && !(x = node_new(a)))
		return false;
	if (g + n == c->top && g == 0) {
		chunk_emptied(a, c, x);
		return true;
	}
	size_t keep = (size_t)((g + GRAINS_PER_PAGE - 1) / GRAINS_PER_PAGE) + CHUNK_STEP;
	if (g + n == c->top && c->top / GRAINS_PER_PAGE >= keep + TAIL_GIVE - CHUNK_STEP &&
	    pages_resize_run(c->span, keep)) {
		count_add(&a->chunk_grains, keep * GRAINS_PER_PAGE - c->top);
		c->top = (uint32_t)(keep * GRAINS_PER_PAGE);
		n = c->top - g;
	}
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
#define CACHE_WAYS 8
#define CACHE_BYTES ((uint64_t)2 << 20)

struct fit_cache {
	void *blk[CACHE_CLASSES][CACHE_WAYS];
	uint32_t grains[CACHE_CLASSES][CACHE_WAYS];
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

static bool freed_mark(const void *p)
{
	return ((const uintptr_t *)p)[1] == free_mark(p);
}

void *fit_alloc(size_t size, unsigned slot, size_t *fresh)
{
	uint64_t g = (size + GRAIN - 1) >> GRAIN_SHIFT;
	struct fit_cache *fc = &cache;
	unsigned k = cache_class(g), best = CACHE_WAYS;
	for (unsigned i = 0; i < fc->n[k]; i++)
		if (fc->grains[k][i] >= g && (best == CACHE_WAYS || fc->grains[k][i] < fc->grains[k][best]))
			best = i;
	if (best == CACHE_WAYS && k + 1 < CACHE_CLASSES) {
		/* (the next class: no more than an eighth over) */
		k++;
		for (unsigned i = 0; i < fc->n[k]; i++)
			if (fc->grains[k][i] <= g + g / 8 &&
			    (best == CACHE_WAYS || fc->grains[k][i] < fc->grains[k][best]))
				best = i;
	}
	if (best < CACHE_WAYS) {
		void *p = fc->blk[k][best];
		unsigned last = --fc->n[k];
		fc->bytes -= (uint64_t)fc->grains[k][best] << GRAIN_SHIFT;
		fc->blk[k][best] = fc->blk[k][last];
		fc->grains[k][best] = fc->grains[k][last];
		((uintptr_t *)p)[1] = 0;
		*fresh = 0;
		return p;
	}
	struct fit_arena *a = &arenas[slot % FIT_ARENAS];
	void *p = NULL;
	pthread_mutex_lock(&a->lock);
	struct fit_node *x = find(a, g);
	if (!x && grow(a, g))
		x = find(a, g);
	if (x) {
		p = (void *)(x->c->span->start + ((uintptr_t)x->g << GRAIN_SHIFT));
		*fresh = take(a, x, g) << GRAIN_SHIFT;
	}
	pthread_mutex_unlock(&a->lock);
	if (p) /* (the pages may have held a freed object's key) */
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
	fc->grains[k][fc->n[k]++] = (uint32_t)n;
	fc->bytes += bytes;
	((uintptr_t *)p)[1] = free_mark(p);
	return 0;
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
		}
		fc->n[k] = 0;
	}
	fc->bytes = 0;
	fc->closed = close;
	return back;
}

size_t fit_usable(struct span *s, const void *p, const char *fn)
{
	struct fit_arena *a = lock_arena(s, p, fn);
	uint64_t n;
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
		if (end == c->top)
			grow_chunk(a, c, want - n);
		struct fit_node *x = free_from(c, end);
		if (x && n + x->grains >= want) {
			/* the block and the free one after it, as one free block, taken */
			bin_take(a, x);
			x->g = (uint32_t)g;
			x->grains += (uint32_t)n;
			c->used -= (uint32_t)n;
			n = take(a, x, want);
		}
	}
	pthread_mutex_unlock(&a->lock);
	*now = n << GRAIN_SHIFT;
	return n >= want;
}

void fit_init(void)
{
	for (unsigned i = 0; i < FIT_ARENAS; i++)
		pthread_mutex_init(&arenas[i].lock, NULL);
}

/* Arenas first, then the spare records: the order grow() and chunk_emptied() take
 * them in (the other order deadlocked a fork against a thread making a chunk). */
void fit_lock(void)
{
	for (unsigned i = 0; i < FIT_ARENAS; i++)
		pthread_mutex_lock(&arenas[i].lock);
	pthread_mutex_lock(&meta_lock);
}

void fit_unlock(void)
{
	pthread_mutex_unlock(&meta_lock);
	for (unsigned i = FIT_ARENAS; i-- > 0;)
		pthread_mutex_unlock(&arenas[i].lock);
}

void fit_stats(uint64_t *chunk_bytes, uint64_t *free_bytes)
{
	*chunk_bytes = *free_bytes = 0;
	for (unsigned i = 0; i < FIT_ARENAS; i++) {
		*chunk_bytes += __atomic_load_n(&arenas[i].chunk_grains, __ATOMIC_RELAXED) << GRAIN_SHIFT;
		*free_bytes += __atomic_load_n(&arenas[i].free_grains, __ATOMIC_RELAXED) << GRAIN_SHIFT;
	}
}

/* ---------- consistency ---------- */

/* The chunk's blocks walked: NULL, or the first thing wrong. Adds its grains, and
 * its free ones, to *all and *free. */
static const char *chunk_check(const struct fit_arena *a, const struct fit_chunk *c,
			       uint64_t *all, uint64_t *free)
{
	if (c->arena != a || c->span->fit != c || c->span->kind != SPAN_FIT ||
	    c->top != c->span->npages * GRAINS_PER_PAGE)
		return "a chunk and its span disagree";
	size_t n_used = 0, n_free = 0, maps_used = 0, maps_free = 0, maps_end = 0;
	for (size_t pg = 0; pg < FIT_CHUNK_PAGES; pg++) {
		maps_used += c->used_at[pg] != 0;
		maps_free += c->free_at[pg] != NULL;
		maps_end += c->end_at[pg] != NULL;
	}
	uint64_t used = 0, g = 0;
	bool prev_free = false;
	*all += c->top;
	while (g < c->top) {
		const struct fit_node *x = free_from(c, g);
		uint64_t len = used_from(c, g);
		if (len) {
			if (len <= GRAINS_PER_PAGE)
				return "a block in use is no longer than a page";
			used += len;
			n_used++;
			prev_free = false;
		} else if (x) {
			len = x->grains;
			if (prev_free)
				return "two free blocks are neighbours";
			if (free_to(c, g + len) != x)
				return "a free block is not found by its end";
			*free += len;
			n_free++;
			prev_free = true;
		} else {
			return "a grain is in no block";
		}
		g += len;
	}
	if (g != c->top)
		return "the blocks run past the chunk's end";
	if (maps_used != n_used || maps_free != n_free || maps_end != n_free)
		return "a page names a block that is not there";
	if (used != c->used)
		return "a chunk's count of grains in use is wrong";
	if (used == 0 && c != a->kept_empty)
		return "an empty chunk is not the one kept";
	return NULL;
}

const char *fit_check(void)
{
	const char *bad = NULL;
	for (unsigned i = 0; i < FIT_ARENAS && !bad; i++) {
		struct fit_arena *a = &arenas[i];
		uint64_t n_free = 0, n_chunk = 0, n_binned = 0;
		pthread_mutex_lock(&a->lock);
		for (struct fit_chunk *c = a->chunks; c && !bad; c = c->next)
			bad = chunk_check(a, c, &n_chunk, &n_free);
		for (unsigned b = 0; b < NBIN && !bad; b++) {
			if (!!a->bins[b] != !!(a->bin_bits[b >> 6] >> (b & 63) & 1))
				bad = "a bin's bit is wrong";
			for (struct fit_node *x = a->bins[b]; x && !bad; x = x->next) {
				if (bin_of(x->grains) != b || (x->next && x->next->prev != x) ||
				    free_from(x->c, x->g) != x)
					bad = "a bin lists a block not of it";
				n_binned += x->grains;
			}
		}
		if (!bad && (n_free != a->free_grains || n_binned != a->free_grains))
			bad = "the count of free grains is wrong";
		if (!bad && n_chunk != a->chunk_grains)
			bad = "the count of the chunks' grains is wrong";
		pthread_mutex_unlock(&a->lock);
	}
	return bad;
}
