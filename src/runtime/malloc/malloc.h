/* malloc.h - malloc's face: the size classes, the marks and links of freed objects,
 * the blocks fitted to 64 bytes, the rt_* entry points (malloc.c) that interpose.c
 * exports as malloc & co, the checking mode and the pointers the heap never handed
 * out. */
#ifndef SP_MALLOC_H
#define SP_MALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pageheap/pageheap.h"

#pragma GCC visibility push(hidden)

/* ---- size classes (sizeclass.c) ---- */
#define NCLASS 248
#define COARSE_MIN 8192          /* from here 8 classes per doubling, not 32 */
#define SMALL_MAX 65536ul          /* larger requests are page runs or units */
#define MEDIUM_MAX (1ul << 20)     /* larger requests get whole units */
#define MIN_ALIGN 16ul
#define CLASS_FINE_MAX 4096
/* What free checks a pointer with, per class: its size, the bytes of a span's
 * objects (count * size), and ~0 / size + 1, with which an offset off < 2^32 in a
 * span is a multiple of size iff off * divisor <= divisor - 1 (mod 2^64: Lemire,
 * Kaser and Kurz, "Faster remainder by direct computation", 2019). Class c's is
 * class_info[1 + c]; class_info[0] is no class's, all zero: no offset passes it
 * (a page of no small span names it, free's page info below). */
struct class_info {
	uint64_t divisor;
	uint32_t size;
	uint32_t limit;
};
extern struct class_info class_info[1 + NCLASS];
extern unsigned char class_npages[NCLASS];
extern unsigned char class_first_npages[NCLASS];
extern unsigned char class_batches[NCLASS];
extern unsigned char class_by_32[(SMALL_MAX >> 5) + 1];
extern unsigned char class_by_16[(CLASS_FINE_MAX >> 4) + 1];
extern uint16_t class_at_by_16[(CLASS_FINE_MAX >> 4) + 1];
void classes_init(void);

/* The class of size (1..SMALL_MAX): by 16-byte steps up to 4 KiB, 32-byte above
 * (every class above 4 KiB is a multiple of 32). Inline: it is on every malloc. */
static inline unsigned class_of(size_t size)
{
	if (size <= CLASS_FINE_MAX)
		return class_by_16[(size + 15) >> 4];
	return class_by_32[(size + 31) >> 5];
}
static inline size_t class_size(unsigned c) { return class_info[1 + c].size; }
/* Where the class of size (0..CLASS_FINE_MAX) is in class_info[] and in a thread's
 * cache, in bytes: (1 + class) * 16, read from a table of its own, so that malloc's
 * common case takes the offset with no shift. */
static inline size_t class_at_fine(size_t size) { return class_at_by_16[(size + 15) >> 4]; }
/* The bytes of the objects of a whole span of the class, from its start. */
static inline size_t class_limit(unsigned c) { return class_info[1 + c].limit; }
/* Pages in one span of the class. */
static inline unsigned class_pages(unsigned c) { return class_npages[c]; }
/* Pages in a thread's first span of the class, which holds two objects or more: the
 * last pages of a span of class_pages (central.c). */
static inline unsigned class_first_pages(unsigned c) { return class_first_npages[c]; }
/* Pages in a thread's span k (from 0) of the class: its first, each after it twice as
 * long, up to class_pages; the short ones are the last pages of a whole span
 * (central.c). */
static inline unsigned class_span_pages(unsigned c, unsigned k)
{
	unsigned np = class_first_pages(c), whole = class_pages(c);
	for (unsigned i = 0; i < k && np < whole; i++)
		np *= 2;
	return np < whole ? np : whole;
}
/* Objects moved at once between a thread's cache and the central list. */
static inline unsigned class_batch(unsigned c) { return class_batches[c]; }

/* The mark a freed small object or a cached fitted block carries in its second word,
 * for double frees: the key bound to the block's address. A bare key, copied with
 * bytes the program never wrote (realloc of a block on reused pages copies them,
 * stale), marked the copy freed, and its next free aborted (torture, 1 run in ~60).
 * Never 0 (the key is odd, blocks are 16-aligned): a cleared word marks nothing. */
static inline uintptr_t free_mark(const void *p)
{
	return heap_hot.free_key ^ (uintptr_t)p;
}

/* The page info of a page of a small span of class cls, whose objects lie from
 * origin (where a whole span of the class starts: a short one is the last pages of a
 * whole one, central.c). High half: class cls's byte offset in class_info[] (and in
 * a thread's cache, malloc.c), so that free indexes both with no shift; low half:
 * the origin's offset in the range, mod 2^32, from which free takes a pointer's
 * offset in its span with one subtraction. */
static inline uint64_t small_info(unsigned cls, uintptr_t origin)
{
	return (uint64_t)((1 + cls) * sizeof(struct class_info)) << 32 |
	       (uint32_t)(origin - heap_hot.base);
}

/* The class a small span's page info names. */
static inline unsigned info_class(uint64_t info)
{
	return (unsigned)((info >> 32) / sizeof(struct class_info)) - 1;
}

/* The check record of the class a page info names (class_info[0] for 0). */
static inline const struct class_info *info_check(uint64_t info)
{
	return (const struct class_info *)(const void *)((const char *)class_info + (info >> 32));
}

/* True if the address at offset a in the range (a = address - base) is an object's
 * start on a page of the given info: a multiple of its class's size from the span's
 * origin, below the span's objects' end. False on a page of no small span. */
static inline bool info_fits(uint64_t info, uintptr_t a)
{
	const struct class_info *ci = info_check(info);
	uint32_t off = (uint32_t)a - (uint32_t)info;
	return (uint64_t)off * ci->divisor < ci->divisor && off < ci->limit;
}

/* The info of the page at offset a in the range (a = address - base), 0 if it is not
 * a page of a small span. */
static inline uint64_t page_info(uintptr_t a)
{
	size_t pg = a >> PAGE_SHIFT;
	if (__builtin_expect(pg >= __atomic_load_n(&heap_hot.top_pages, __ATOMIC_RELAXED), 0))
		return 0;
	return __atomic_load_n(&heap_hot.pageinfo[pg], __ATOMIC_ACQUIRE);
}

/* SP_HARDEN=0 (make SP_HARDEN=0, for bench/compare.sh only) builds the spans' free
 * lists with plain links and no checks, to measure what the hardening costs; the
 * default is 1. */
#ifndef SP_HARDEN
#define SP_HARDEN 1
#endif

/* A span's free list's link as a freed small object on it holds it in its first word
 * (central.c; the threads' caches hold no links: their objects are in arrays of
 * pointers outside the heap, malloc.c): the next object's address mangled with a
 * secret of the process and the object's own address, as glibc's safe-linking
 * mangles with the address alone and mimalloc its lists with keys. A stray write into
 * a freed object on a span (a use after free) then cannot name an address of its
 * choosing: what it wrote reads back as noise, which is refused as the list is walked
 * (every link is checked to be an object of the span: span_next, central.c); and a
 * link copied into another object reads as another address there. */
static inline uintptr_t link_mask(const void *slot)
{
	return (uintptr_t)slot ^ heap_hot.link_key;
}

static inline uintptr_t link_encode(const void *slot, const void *next)
{
	if (!SP_HARDEN)
		return (uintptr_t)next;
	return (uintptr_t)next ^ link_mask(slot);
}

static inline void *link_decode(const void *slot)
{
	if (!SP_HARDEN)
		return *(void *const *)slot;
	return (void *)(*(const uintptr_t *)slot ^ link_mask(slot));
}

/* Whether p is 16-byte aligned on the range's writable pages: what central_put checks
 * of each object a thread's cache gives back before it reads the object's span.
 * (Rotated right by 4, an offset that is not a multiple of 16 has its low bits on top
 * and reads as past the range's top: one compare, with the top counted in 16-byte
 * steps, checks both; NULL fails it too.) */
static inline bool link_plausible(const void *p)
{
	uintptr_t a = (uintptr_t)p - heap_hot.base;
	a = (a >> 4) | (a << 60);
	return a < __atomic_load_n(&heap_hot.top_granules, __ATOMIC_RELAXED);
}

/* Ends the process on a link that failed its check, read from the freed object slot
 * in fn (malloc, free). */
__attribute__((noreturn, cold)) void link_refused(const void *slot, const char *fn);
/* The same for a thread's cache of class cls that was written over (an object in it
 * that is none of the class's, or a hole under its top), named in fn (not said: see
 * malloc.c). */
__attribute__((noreturn, cold)) void cache_refused(unsigned cls, const char *fn);

/* ---- blocks fitted to 64 bytes (fit.c) ---- */
#define FIT_MIN 4096ul             /* blocks above this size, */
#define FIT_MAX 131072ul           /* and below this one, are fitted */
#define FIT_CHUNK_PAGES 4096ul     /* the most pages of a chunk (16 MiB) */
#define FIT_ARENAS 8               /* threads use arena (slot % FIT_ARENAS) */
static inline bool fit_size(size_t size) { return size > FIT_MIN && size < FIT_MAX; }
/* A fitted block realloc grows in place takes up to 1/2^FIT_ROOM_SHIFT more than asked
 * where the grains after it are free: room for the next growth. realloc keeps a
 * block of have bytes for size bytes, without its arena's lock, while size is within
 * that room (or the block's last 64 bytes). */
#define FIT_ROOM_SHIFT 4
static inline bool fit_keeps(size_t have, size_t size)
{
	return size <= have && have - size < 64 + (have >> FIT_ROOM_SHIFT);
}
/* Sets up the arenas (once, before the first malloc). */
void fit_init(void);
/* A block of size bytes (fit_size) from the thread's cache, with no lock; NULL if
 * the cache holds none that fits. */
void *fit_cached(size_t size);
/* A block of size bytes (fit_size) from the arena of thread slot `slot`; *fresh: the
 * bytes it took out of the arena; *dirty: the bytes at its start that may not be
 * zero (the rest is memory never given out). NULL if out of memory. */
void *fit_alloc(size_t size, unsigned slot, size_t *fresh, size_t *dirty);
/* Frees p of the chunk span s (aborts if p is not a block in use) into the thread's
 * cache, or back to its arena: the bytes given back to the arena. */
size_t fit_free(struct span *s, void *p);
/* Frees p of the chunk span s (a block in use, its free mark allowed) straight back
 * to its arena, past the thread's cache (the checking mode, check.c): the bytes given
 * back. */
size_t fit_release(struct span *s, void *p);
/* The thread's cache back to the arenas (close: for good, the thread is leaving):
 * the bytes given back. */
size_t fit_cache_flush(bool close);
/* The usable bytes of block p of the chunk span s; aborts as fit_free, naming fn. */
size_t fit_usable(struct span *s, const void *p, const char *fn);
/* Resizes block p of s in place to size bytes (fit_size), *now bytes usable; false
 * if it cannot grow. */
bool fit_resize(struct span *s, void *p, size_t size, size_t *now);
void fit_lock(void);
void fit_unlock(void);
/* Bytes of the chunks, and free inside them. */
void fit_stats(uint64_t *chunk_bytes, uint64_t *free_bytes);
/* The chunks' bits, blocks, bins and counts recomputed and compared (for the tests):
 * the first difference found, or NULL. */
const char *fit_check(void);

/* ---- entry points (malloc.c) ---- */
void *rt_malloc(size_t size);
void rt_free(void *p);
void *rt_calloc(size_t n, size_t size);
void *rt_realloc(void *p, size_t size);
void *rt_memalign(size_t align, size_t size);
size_t rt_usable_size(const void *p);
/* The free mark's key and the threads' exit key, once, under rt_init; false if
 * the key cannot be had. */
bool malloc_init(void);
/* The calling thread's slot in the central lists (1 + index; 0: none). */
unsigned malloc_thread_slot(void);
/* The calling thread's magazines (malloc.c) recomputed, for the tests: each between its
 * bottom and its end, its bottom NULL, every object in it an object of its class, none
 * twice; the first thing wrong, or NULL. */
const char *malloc_cache_check(void);
/* The most objects of class c a thread's magazine holds, once grown; and what the
 * calling thread's holds now (for the tests). */
unsigned malloc_mag_most(unsigned c);
unsigned malloc_mag_count(unsigned c);

/* ---- the checking mode (check.c; --check, SUPERPAGE_CHECK) ---- */
/* Set once at the start (malloc_init), never changed: the threads' caches then hold
 * nothing, and every malloc and free of a block takes these. */
extern bool rt_check;
/* A block of size bytes aligned to align, zeroed if zero, its canary and record set;
 * NULL if out of memory. */
void *check_alloc(size_t size, size_t align, bool zero);
/* Block p (of usable bytes, a valid pointer in use, a small one's free mark set by
 * the caller) freed: its canary checked, then it waits in the quarantine. */
void check_free(void *p, size_t usable);
/* The bytes asked for block p of usable bytes (its canary checked, fn aborts). */
size_t check_usable(const void *p, size_t usable, const char *fn);
/* What the mode takes from the heap and gives back (malloc.c): a block of at least
 * size bytes aligned to align, past the threads' caches, with its usable bytes, and
 * whether it is known zero and is a small object; NULL if out of memory. heap_give
 * puts a block of heap_take's back to the spans, fitted chunks or pages. */
void *heap_take(size_t size, size_t align, size_t *usable, bool *clean, bool *small);
void heap_give(void *p);

/* ---- pointers the heap never handed out (foreign.c) ---- */
/* free and realloc of p, which the page heap does not know: passed to glibc's malloc
 * if it may be its block, an abort if it can be no allocator's, else left alone (and
 * realloc gives NULL: the caller sets ENOMEM). */
void foreign_free(void *p);
void *foreign_realloc(void *p, size_t size);

#pragma GCC visibility pop

#endif
