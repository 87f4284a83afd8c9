/* units.h - the page heap's shared state: the range of 2 MiB units, the unit table,
 * the lists units are on, the backing policy and the counts, under one lock. */
#ifndef SUPERPAGE_UNITS_H
#define SUPERPAGE_UNITS_H

#include <pthread.h>
#include <stdatomic.h>

#include "pageheap/pageheap.h"
#include "runtime.h"

enum unit_state { U_FREE = 0, U_HEAP, U_LARGE, U_RELEASING };
#define NO_UNIT (-1)
#define NBUCKET 10          /* HEAP units by longest free run: [2^b, 2^(b+1)) pages */
#define NO_BUCKET 0xff
/* What a HEAP unit's runs hold: blocks and the program's small mappings, or spans of
 * small objects and fitted chunks. Tiers never share a unit: a span of objects
 * placed beside a block held the block's unit resident after the block was freed, and
 * so did a chunk of fitted blocks: both live with the objects. */
enum tier { TIER_BLOCKS = 0, TIER_OBJECTS, NTIER };
#define GIGA_UNITS ((size_t)1 << (30 - UNIT_SHIFT)) /* units in a 1 GiB page */
/* auto starts the heap on base pages and puts it on THP once it is big enough for
 * huge pages to pay (a small program would only pay their memory: a unit touched
 * once is a whole 2 MiB resident); --backing thp starts on THP. */
#define PROMOTE_UNITS 32    /* 64 MiB of heap */
/* ... or, from DENSE_UNITS on, once its units are resident on base pages but for an
 * eighth of their pages: a heap that churns touches what it is given, and one that
 * grows fast is better on THP from its start (a unit faulted in at 4 KiB and then
 * collapsed costs twice). 6 MiB and an eighth: a heap that grows fast (the mixed malloc
 * kernel on 2 threads) goes over within its first units, while a sparse one (git
 * fast-import's, most of its pages never touched) stays on base pages, where THP would
 * make every unit resident whole; a quarter took more sparse heaps over. Auto looks
 * every DENSE_NS, and whenever the heap has more units on base pages than it had when
 * it last looked (backing.c), not counting the pages not given out yet: a heap that
 * grows faster than the clock is seen as it grows. */
#define DENSE_UNITS 3
#define DENSE_NS 10000000ull /* 10 ms */
/* Once auto's heap is on THP (promoted), a unit of it is made huge when it is dense:
 * when DENSE_PAGES of its pages are given out (the page heap knows it exactly), it is
 * advised MADV_HUGEPAGE and collapsed (MADV_COLLAPSE); a unit given out whole (a large
 * block's) is advised before it is touched. The others stay on base pages, so a unit
 * the program uses a little of costs what it uses, not 2 MiB. */
#define DENSE_PAGES (PAGES_PER_UNIT * 3 / 4)
/* The units one run may leave to collapse after the lock (struct dense): the ones it
 * made dense that may hold pages already (the others fault in huge). */
#define DENSE_MAX 4
struct dense { size_t n, u[DENSE_MAX]; };

struct unit {
	uint64_t free[PAGES_PER_UNIT / 64]; /* HEAP: 1 = free page */
	uint16_t nfree, longest;
	uint16_t clean_from;                /* HEAP: its pages from this one on have not
	                                       been given out since it joined the heap
	                                       not resident: they read as zero */
	uint8_t state, backing, bucket;
	uint8_t resident;                   /* may hold pages (touched since released) */
	uint8_t in_cache;                   /* FREE, resident, in the empty-unit cache */
	uint8_t mapping;                    /* HEAP: holds a program's large mapping (2m, 1g)
	                                       and nothing of the heap's (never in a bucket) */
	uint8_t tier;                       /* HEAP: what its pages hold (enum tier) */
	uint8_t huge;                       /* auto: advised MADV_HUGEPAGE on its own (made
	                                       huge when dense; the advice stays after it
	                                       is given back, until it is taken again) */
	uint8_t chunk;                      /* in a chunk (backing.c): a hugetlb mapping of
	                                       2 MiB pages, reserved, over many units (2: its
	                                       first); FREE, its page is present if resident
	                                       (kept), else reserved and not faulted in
	                                       (spare) */
	uint8_t faulted;                    /* in a chunk, in use: its page is known present
	                                       (fork_units.c learns it, once) */
	uint8_t watch;                      /* auto, dense by touch (pg.touched): given out
	                                       whole or mostly to long runs, on base pages
	                                       until its pages are touched (dense_look) */
	uint16_t owner;                     /* the thread slot (malloc_thread_slot) its
	                                       pages were last given to or freed by */
	int32_t prev, next;                 /* bucket list (HEAP) or empty cache (FREE) */
};

/* What the page heap counts, under the lock (the atomics without it). */
struct page_counts {
	uint64_t units[SP_BACKING_COUNT], units_peak;
	uint64_t large_blocks, large_bytes, mremaps, released, reused, small_mmap_pages;
	/* The most units resident lately (in use, or empty in the cache): since it was
	 * last reached, or RECENT_NS ago. */
	uint64_t recent_peak, recent_peak_ns;
	_Atomic uint64_t unit_events; /* changes of units, for rt_live_tick */
	_Atomic uint64_t units_added; /* units that joined, for limits_tick */
	_Atomic uint64_t small_mmaps, large_mmaps;
	/* auto: units made huge when dense (collapsed, or advised before their first
	 * touch), and collapses the kernel refused. */
	_Atomic uint64_t dense_huge, dense_refused;
};

struct pages {
	pthread_mutex_t lock;
	/* The range: [base, end) of max_units units, writable below frontier.
	 * Under a finite RLIMIT_AS every mapping counts against the limit, a PROT_NONE
	 * reservation too: the range is not reserved ahead (lazy) but claimed as it
	 * grows, from a place far below the kernel's mappings; [base, end) is all it
	 * holds (end: of its claimed part). Under a finite RLIMIT_AS or RLIMIT_DATA
	 * (tight) the heap holds no address space it does not use: no slack when it
	 * grows, no empty units kept, emptied units at its top given back, and large
	 * blocks that whole units would round up by more than an eighth mapped on their
	 * own, to the page (SPAN_OUTSIDE), as plain malloc does. */
	uintptr_t base, end;
	size_t max_units, frontier;
	bool lazy, tight;
	/* The unit table, and 1 = unit FREE and below the frontier. */
	struct unit *units;
	uint64_t *freebits;
	/* HEAP units by tier and longest free run; the empty units kept resident (cached
	 * of them), newest first; the HEAP units. */
	int32_t bucket_head[NTIER][NBUCKET];
	int32_t cache_head, cache_tail;
	size_t cached, heap_units;
	/* The heap's own HEAP units (not a program's mappings): their free pages, and
	 * how many have none free; and the units that hold a program's mappings. */
	size_t unit_free_pages, full_units, mapping_units;
	/* What units are asked to be; 2m or 1g: the rung the program's large mappings
	 * ask for (SP_BACKING_COUNT: none, they are mapped by the kernel outside the
	 * range, see mmap.c); auto's start on base pages, and its promotion. */
	enum sp_backing policy, map_rung;
	bool small_first;
	/* auto: units given out whole go huge when touched, not when given (dense_look;
	 * SUPERPAGE_DENSE_TOUCHED). */
	bool touched;
	_Atomic bool promoted, promote_pending;
	_Atomic uint64_t dense_at; /* when auto last looked whether the heap is dense */
	/* Near a memory limit (near_limit.c): no empty units kept, units on base pages
	 * (range_advice, back_units), the pages runs free given back. */
	_Atomic bool near;
	_Atomic size_t dense_units; /* the units on base pages when it last looked on growth */
	struct page_counts st;
};
extern struct pages pg;

static inline uintptr_t unit_addr(size_t u) { return pg.base + (u << UNIT_SHIFT); }

static inline bool is_hugetlb(uint8_t backing)
{
	return backing == SP_BACKING_2M || backing == SP_BACKING_1G;
}

/* Whether unit u's pages were last another thread's than slot me's (0: none, which
 * has no other): their lines are likely still in that thread's core's caches, and
 * every line this thread writes is fetched from there first. Runs and units go
 * where they are not, where there is a choice: writing memory another core wrote last
 * fetches each line from that core, and two threads that realloc large blocks would
 * otherwise often take each other's freed pages. */
static inline bool unit_foreign(size_t u, unsigned me)
{
	unsigned o = pg.units[u].owner;
	return me && o && o != me;
}

/* The range's page that holds a. */
static inline size_t page_of(uintptr_t a)
{
	return (a - pg.base) >> PAGE_SHIFT;
}

static inline void map_set(size_t page, struct span *s)
{
	atomic_store_explicit(&heap_hot.pagemap[page], s, memory_order_release);
}

/* Units to release, gathered under the lock and given back after it: a run, and
 * (extra, unless NO_EXTRA) one unit of the empty cache that has outgrown its limit. */
#define NO_EXTRA SIZE_MAX
struct release { size_t u, n, extra; };

/* Why a large block goes outside the range (outside_alloc): said once each. */
enum { OUT_FULL = 1, OUT_LIMIT = 2, OUT_ROUND = 4 };

/* Between the page heap's files; each is described where it is defined. All but
 * the advisory ones (maybe_promote) run under pg.lock. */
/* units.c */
void list_push_front(int32_t *head, int32_t *tail, int32_t u);
unsigned bucket_of(unsigned longest);
void rebucket(int32_t u);
void cache_remove(int32_t u);
void count_units(enum sp_backing b, long n);
void set_nfree(struct unit *x, size_t n);
void heap_unit_gone(struct unit *x);
void heap_unit_init(size_t u, enum sp_backing got, enum tier t);
bool unit_take(size_t u, size_t at, size_t n);
size_t unit_give(size_t u, size_t at, size_t n);
/* The tier whose units hold spans of this kind. */
static inline enum tier tier_of(enum span_kind kind)
{
	return kind == SPAN_SMALL || kind == SPAN_FIT ? TIER_OBJECTS : TIER_BLOCKS;
}
/* backing.c */
void plain_units(size_t u, size_t n);
void chunk_forget(size_t u, size_t n);
void chunk_leave(size_t u, size_t n);
bool back_hugetlb(size_t u, size_t n, enum sp_backing rung);
void unback_hugetlb(size_t u, size_t n);
void forget_refusals(void);
enum sp_backing back_units(size_t u, size_t n);
/* The policy's backing for n units at u, as much as can be had: under 2m and 1g, 2 MiB
 * hugetlb pages on as many as the pool holds (returned, from u) and *rest (plain)
 * on the others; else 0, and *rest what back_units gave them all. */
size_t back_units_most(size_t u, size_t n, enum sp_backing *rest);
int range_advice(void);
int unit_advice(size_t u);
bool heap_on_thp(void);
void units_settle(size_t p, size_t np, bool clean, struct dense *d);
void units_settle_large(size_t u, size_t n);
void dense_collapse(const struct dense *d);
void maybe_promote(void);
int claim_space(size_t from, size_t to);
void unclaim_space(size_t from, size_t to);
bool restore_pages(size_t lo, size_t hi);
bool units_from_copy(size_t u, size_t n, const void *src);
enum sp_backing plain_backing(void);
size_t back_hugetlb_most(size_t u, size_t n);
int plain_for_program(size_t u, size_t n, int flags);
/* range.c */
int range_grow(size_t need_units);
void range_trim_top(void);
struct span *span_new(void);
void span_delete(struct span *s);
void spans_delete(struct span *list);
struct span *spans_new(size_t n);
/* runs.c */
size_t fresh_units(size_t u, size_t n);
void take_kept(size_t u, size_t n);
bool free_pages(size_t p0, size_t n, struct release *rel);
/* release.c */
bool retire_units(size_t u, size_t n, struct release *rel);
unsigned give_back_units(const struct release *rel);
void mark_released(const struct release *rel, unsigned ok);
void release_units(const struct release *rel);
void release_units_locked(const struct release *rel);
bool mapping_unit_freed(size_t u, struct release *rel);
void release_emptied(size_t u, size_t n);
/* near_limit.c */
struct sp_limits;
void limits_init(const struct sp_limits *rl);
void limits_tick(void);
bool limits_on(void);
void limits_give_back(uintptr_t start, size_t npages);
void limits_base_unit(size_t n);
void limits_stats(struct rt_stats *st);
/* backing.c, for touched.c */
bool dense_on(void);
bool units_make_huge(size_t u, size_t n);
void units_make_small(size_t u, size_t n);
int collapse_at(uintptr_t a, int tries);
void collapse_unit(size_t u);
/* touched.c */
void watch_unit(struct unit *x);
void dense_look(void);
/* demote.c */
bool demote_units(size_t u);
/* outside.c */
struct span *outside_lookup(uintptr_t a);
void outside_promote(void);
struct span *outside_alloc(size_t size, size_t align, unsigned why);
bool outside_resize(struct span *s, size_t new_size);
void outside_free(struct span *s);
size_t unit_rounding(size_t size, size_t *len);
bool rounds_badly(size_t size);
/* large.c */
size_t find_units(size_t n, size_t align);
void claim_units(size_t at, size_t n);
/* mappings.c */
struct span *mmap_span_at(size_t p);
bool page_window(uintptr_t addr, size_t len, size_t *first, size_t *last);
void mapping_unit_start(struct unit *x, enum sp_backing b);

#endif
