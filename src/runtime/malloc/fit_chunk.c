/* fit_chunk.c - the chunks of fitted blocks: their records, made and kept spare, a
 * chunk grown in place or a new one made, an emptied one kept or given back to the
 * page heap; and the check that walks every chunk's blocks. */
#include <sys/mman.h>

#include "fit.h"
#include "internal.h"
#include "malloc/malloc_os.h"

struct fit_arena fit_arenas[FIT_ARENAS];
static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER; /* after an arena's */
SP_LOCK_RANK(meta_lock, RANK_FIT_META, NULL);
static struct fit_chunk *spare_meta;    /* metadata of chunks gone, maps all clear */

void fit_meta_lock(void) { pthread_mutex_lock(&meta_lock); }
void fit_meta_unlock(void) { pthread_mutex_unlock(&meta_lock); }

static void *map_meta(size_t len)
{
	void *m;
	if (malloc_map_lazy(len, &m) < 0)
		return NULL;
	return m;
}

/* A node from the arena's pool; NULL if no memory for one. */
struct fit_node *fit_node_new(struct fit_arena *a)
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

void fit_set_end(struct fit_arena *a, struct fit_chunk *c, struct fit_node *x, uint64_t from,
		 size_t pages)
{
	uint64_t top = pages * GRAINS_PER_PAGE;
	count_add(&a->chunk_grains, top - c->top);
	c->top = (uint32_t)top;
	if (c->clean_from > top)
		c->clean_from = (uint32_t)top;
	bin_put(a, c, x, from, top - from);
}

/* The free block at the end of c, or NULL if its last block is in use. */
static struct fit_node *tail_of(const struct fit_chunk *c)
{
	return free_to(c, c->top);
}

/* c grows in place to hold a block of g grains at its end; false if the pages after
 * it are not free. */
bool fit_grow_chunk(struct fit_arena *a, struct fit_chunk *c, uint64_t g)
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
	if (pages < need || (fresh && !(x = fit_node_new(a))))
		return false;
	if (!pages_resize_run(c->span, pages)) {
		if (fresh)
			node_del(a, x);
		return false;
	}
	if (!fresh)
		bin_take(a, x);
	if (c->span->clean != SPAN_CLEAN) /* (else the clean grains go on to the end) */
		c->clean_from = (uint32_t)(pages * GRAINS_PER_PAGE);
	fit_set_end(a, c, x, from, pages);
	return true;
}

/* Room for g more grains in arena a: the chunk grown last grown in place, else a new
 * chunk. */
bool fit_grow(struct fit_arena *a, uint64_t g)
{
	if (a->growing && fit_grow_chunk(a, a->growing, g))
		return true;
	size_t need = (size_t)((g + GRAINS_PER_PAGE - 1) / GRAINS_PER_PAGE);
	size_t pages = need > CHUNK_STEP ? need : CHUNK_STEP;
	struct fit_node *x = fit_node_new(a);
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
	c->clean_from = s->clean == SPAN_CLEAN ? 0 : (uint32_t)(pages * GRAINS_PER_PAGE);
	c->prev = NULL;
	c->next = a->chunks;
	if (a->chunks)
		a->chunks->prev = c;
	a->chunks = c;
	__atomic_store_n(&s->fit, c, __ATOMIC_RELEASE);
	fit_set_end(a, c, x, 0, pages);
	a->growing = c;
	return true;
}

/* c holds no block any more: kept (down to CHUNK_STEP pages) if no other empty one
 * is and SUPERPAGE_SHRINK is not set, else its pages go back to the page heap. x, out
 * of its bin, is its one free block. */
void fit_chunk_emptied(struct fit_arena *a, struct fit_chunk *c, struct fit_node *x)
{
	if (!a->kept_empty && !rt_options()->shrink) {
		size_t pages = c->top / GRAINS_PER_PAGE;
		if (pages > CHUNK_STEP && pages_resize_run(c->span, CHUNK_STEP))
			pages = CHUNK_STEP;
		a->kept_empty = c;
		fit_set_end(a, c, x, 0, pages);
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
	if (c->clean_from > c->top)
		return "a chunk's clean grains run past its end";
	if (used == 0 && c != a->kept_empty)
		return "an empty chunk is not the one kept";
	return NULL;
}

/* Arena a's chunks, bins and counts, under its lock: NULL, or the first thing wrong. */
static const char *arena_check(const struct fit_arena *a)
{
	const char *bad = NULL;
	uint64_t n_free = 0, n_chunk = 0, n_binned = 0;
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
	return bad;
}

const char *fit_check(void)
{
	const char *bad = NULL;
	for (unsigned i = 0; i < FIT_ARENAS && !bad; i++) {
		pthread_mutex_lock(&fit_arenas[i].lock);
		bad = arena_check(&fit_arenas[i]);
		pthread_mutex_unlock(&fit_arenas[i].lock);
	}
	return bad;
}

#ifdef SP_DEBUG
/* DEBUG: an arena checked as its lock is released (each chunk's walk reads its
 * FIT_CHUNK_PAGES pages' records). */
static const char *arena_released(pthread_mutex_t *m)
{
	static _Atomic size_t credit;
	_Static_assert(offsetof(struct fit_arena, lock) == 0, "an arena's lock is its first member");
	const struct fit_arena *a = (const struct fit_arena *)m;
	size_t cost = NBIN;
	for (const struct fit_chunk *c = a->chunks; c; c = c->next)
		cost += FIT_CHUNK_PAGES;
	return sp_check_due(&credit, cost) ? arena_check(a) : NULL;
}
#endif
SP_LOCK_RANK(fit_arenas, RANK_FIT_ARENA, arena_released);
