/* fit.h - what fit.c (the fitted blocks) and fit_chunk.c (their chunks, and the check)
 * share: the grain, the records of chunks, free blocks and arenas, and the small steps
 * both take, inline (they are on malloc's and free's paths). */
#ifndef SP_FIT_H
#define SP_FIT_H

#include <pthread.h>

#include "malloc/malloc.h"
#include "pageheap/pageheap.h"

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
	uint32_t clean_from;            /* its grains from this one on (to top) were never
	                                   given out, and read as zero (calloc) */
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

extern struct fit_arena fit_arenas[FIT_ARENAS];

/* What a page's word says of the block in use that starts on it: its grains and its
 * first grain (read without the lock by free, whose block cannot change under it). */

static inline uint64_t used_word(uint64_t g, uint64_t n)
{
	return n << 32 | g;
}

static inline void set_used(struct fit_chunk *c, uint64_t g, uint64_t n)
{
	__atomic_store_n(&c->used_at[g / GRAINS_PER_PAGE], n ? used_word(g, n) : 0,
			 __ATOMIC_RELAXED);
}

/* The length of the block in use that starts at grain g of c, or 0. */
static inline uint64_t used_from(const struct fit_chunk *c, uint64_t g)
{
	uint64_t w = __atomic_load_n(&c->used_at[g / GRAINS_PER_PAGE], __ATOMIC_RELAXED);
	return (uint32_t)w == g ? w >> 32 : 0;
}

/* Adds d (mod 2^64) to a count fit_stats reads without the lock. */
static inline void count_add(uint64_t *v, uint64_t d)
{
	__atomic_store_n(v, *v + d, __ATOMIC_RELAXED);
}

static inline unsigned bin_of(uint64_t g)
{
	if (g < EXACT_BINS)
		return (unsigned)g;
	unsigned fl = 63u - (unsigned)__builtin_clzll(g);
	return EXACT_BINS + (fl - 5) * 16 + (unsigned)((g >> (fl - 4)) & 15);
}

static inline void node_del(struct fit_arena *a, struct fit_node *x)
{
	x->next = a->spare_nodes;
	a->spare_nodes = x;
}

/* Node x, [g, g+n) of c, goes in its bin and on its pages. */
static inline void bin_put(struct fit_arena *a, struct fit_chunk *c, struct fit_node *x,
			   uint64_t g, uint64_t n)
{
	unsigned b = bin_of(n);
	sp_assert(n > 0 && g + n <= c->top);
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
static inline void bin_take(struct fit_arena *a, struct fit_node *x)
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
static inline struct fit_node *free_from(const struct fit_chunk *c, uint64_t g)
{
	if (g >= c->top)
		return NULL;
	struct fit_node *x = c->free_at[g / GRAINS_PER_PAGE];
	return x && x->g == g ? x : NULL;
}

/* The free block that ends at grain g of c (exclusive), or NULL. */
static inline struct fit_node *free_to(const struct fit_chunk *c, uint64_t g)
{
	if (g == 0)
		return NULL;
	struct fit_node *x = c->end_at[(g - 1) / GRAINS_PER_PAGE];
	return x && x->g + x->grains == g ? x : NULL;
}

/* fit_chunk.c: a node from the arena's pool (NULL if no memory for one); room for g
 * more grains (the chunk grown last grown in place, else a new chunk); a chunk that
 * holds no block any more (x, out of its bin, its one free block); the lock of the
 * spare chunk records, taken after an arena's. */
struct fit_node *fit_node_new(struct fit_arena *a);
bool fit_grow(struct fit_arena *a, uint64_t g);
/* (c grows in place to hold a block of g grains at its end; false if the pages after
 * it are not free.) */
bool fit_grow_chunk(struct fit_arena *a, struct fit_chunk *c, uint64_t g);
/* The chunk's end moves to `pages` pages (its span already has them, or has given the
 * rest back): its free tail, from grain from, reaches the new end as node x (the
 * tail's node, out of its bin, or a new one). */
void fit_set_end(struct fit_arena *a, struct fit_chunk *c, struct fit_node *x, uint64_t from,
		 size_t pages);
void fit_chunk_emptied(struct fit_arena *a, struct fit_chunk *c, struct fit_node *x);
void fit_meta_lock(void);
void fit_meta_unlock(void);

#endif
