/* malloc.c - the malloc entry points (malloc, free, calloc, realloc, memalign,
 * usable size): per-thread caches of small objects (no lock, no system call on the
 * common path) over the central lists (central.c), fitted blocks, medium page runs
 * and large unit runs; the counts; errno left as the program had it. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "central.h"
#include "internal.h"
#include "life.h"
#include "malloc/malloc.h"
#include "malloc/malloc_os.h"
#include "pageheap/pageheap.h"
#include "runtime.h"

/* ---------- per-thread caches ---------- */

enum { TC_NEW = 0, TC_LIVE, TC_DEAD };
/* A class's magazine in a thread's cache: the objects malloc takes first (the last
 * freed) as an array of their addresses, in a block of the thread's outside the heap
 * (its slots below), so that no object a cache holds carries a link: a write after
 * free into one changes nothing malloc reads, and a pop neither decodes nor checks.
 * top: the last object put in; the slot below the first is NULL, the magazine's
 * bottom, so that a pop that reads NULL finds it empty. end: its last slot, at which
 * a free goes the long way. A cache that is not live (or has no block) has every
 * class at mag_none, top and end: every malloc and free of it goes the long way. */
struct tc_list {
	void **top;
	void **end;
};
_Static_assert(sizeof(struct tc_list) == sizeof(struct class_info),
	       "a page's info indexes a cache's magazines as it indexes class_info");
static void *const mag_none = NULL;
#define MAG_NONE ((void **)&mag_none)
struct tcache {
	/* Class c's magazine at list[1 + c], as class_info[] (malloc.h): free finds both
	 * at the offset its page's info holds. list[0] is no class's, and stays at
	 * mag_none. A class's magazine holds two batches: malloc from an empty one takes
	 * a batch from the central lists; a free into a full one gives the older batch
	 * back (the coldest objects), the newer moved down. So a class whose mallocs and
	 * frees balance stays in its magazine, and only a run of either reaches the
	 * spans. */
	struct tc_list list[1 + NCLASS];
	void **mag;                  /* the magazines' block, NULL for none */
	int state;
	unsigned owner;              /* its slot (1 + index), 0 for none */
	/* A magazine grows (mag_grow) past its two batches, a batch at a time, when its
	 * class both emptied it (refilled, swung) and fills it: a program that mallocs a
	 * burst of objects, then frees them all, would else send the part past two
	 * batches through the central lists both ways at every burst. grown: the bytes
	 * of objects the thread's magazines may hold past their two batches. */
	uint8_t swung[NCLASS];
	size_t grown;
	/* Not yet added to the global counts: added when they reach FLUSH_BYTES or
	 * FLUSH_CALLS, when the thread exits and when it asks for the stats. */
	int64_t d_in_use;
	uint64_t d_mallocs, d_frees;
};
/* (Initialised, not zero: a zero magazine's top would be NULL, which a pop reads.) */
static __thread struct tcache tc = { .list = { [0 ... NCLASS] = { MAG_NONE, MAG_NONE } } };

/* Where class c's magazine starts in a thread's block, in slots (its bottom, then room
 * for MAG_BATCHES_MOST batches), and the block's bytes. A thread with a slot keeps the
 * block in the slot's place for the next thread that takes the slot (its bottoms stay
 * NULL: no write reaches them), so threads that come and go map none; a thread
 * without a slot maps one of its own and unmaps it as it exits. The block is address
 * space until a class is used: each class's magazine is resident as far as it is
 * used, 4 KiB for two batches of 255 objects. */
static uint32_t mag_at[NCLASS];
static size_t mag_bytes;
static void **slot_mag[CENTRAL_SLOTS];

/* A magazine's batches: at first, and at most once grown; the bytes of objects a
 * thread's magazines may hold past their first two batches, all classes together. */
#define MAG_BATCHES 2
#define MAG_BATCHES_MOST 8
#define MAG_GROWN_MAX ((size_t)256 << 10)

static unsigned mag_size(unsigned c)
{
	return MAG_BATCHES * class_batch(c);
}

unsigned malloc_mag_most(unsigned c)
{
	return MAG_BATCHES_MOST * class_batch(c);
}

/* The calling thread's cache, addressed from the thread pointer: list entries at an
 * offset (free's page info) in one step, where &tc would add the thread pointer
 * first. (The cache's offset from the thread pointer is the same in every thread:
 * static TLS. The sanitizers check a %fs-relative address as a plain one, and
 * fault: their builds take &tc; the Makefile's defines SP_SANITIZE.) */
#if defined(__SEG_FS) && !defined(__SANITIZE_ADDRESS__) && !defined(SP_SANITIZE)
typedef struct tcache __seg_fs tc_here;
typedef struct tc_list __seg_fs tc_list_here;
#define TC_HERE ((tc_here *)((uintptr_t)&tc - (uintptr_t)__builtin_thread_pointer()))
#else
typedef struct tcache tc_here;
typedef struct tc_list tc_list_here;
#define TC_HERE (&tc)
#endif

#define FLUSH_BYTES ((int64_t)1 << 20)
#define FLUSH_CALLS 65536

/* What the program has out of the heap, for rt_stats_get. */
static struct {
	_Atomic int64_t in_use;
	_Atomic uint64_t peak, mallocs, frees;
} counts;

/* Bytes out of the central lists and page heap: the program's blocks and what the
 * threads' caches hold (at most two batches a class). Counted on the slow paths
 * only, and by each thread on its own until a MiB has gathered, so that no common
 * malloc or free and few refills touch a shared line: in use and peak are right to
 * within a MiB per thread. */
static void count_out(int64_t bytes)
{
	int64_t now = atomic_fetch_add_explicit(&counts.in_use, bytes, memory_order_relaxed) + bytes;
	uint64_t peak = atomic_load_explicit(&counts.peak, memory_order_relaxed);
	while (bytes > 0 && (uint64_t)now > peak &&
	       !atomic_compare_exchange_weak(&counts.peak, &peak, (uint64_t)now))
		;
}

/* Counts bytes out (or back, negative) for thread cache t (NULL: at once). */
static void count_by(struct tcache *t, int64_t bytes)
{
	if (!t) {
		count_out(bytes);
		return;
	}
	t->d_in_use += bytes;
	if (t->d_in_use >= FLUSH_BYTES || t->d_in_use <= -FLUSH_BYTES) {
		count_out(t->d_in_use);
		t->d_in_use = 0;
	}
}

/* Adds what t has counted to the global counts: all of it, or the calls once
 * there are FLUSH_CALLS of them. */
static void flush_counts(struct tcache *t, bool all)
{
	if (all || t->d_mallocs + t->d_frees >= FLUSH_CALLS) {
		atomic_fetch_add_explicit(&counts.mallocs, t->d_mallocs, memory_order_relaxed);
		atomic_fetch_add_explicit(&counts.frees, t->d_frees, memory_order_relaxed);
		t->d_mallocs = t->d_frees = 0;
	}
	if (all && t->d_in_use) {
		count_out(t->d_in_use);
		t->d_in_use = 0;
	}
}

/* Gives the n objects of objs[] back to the central lists, for thread cache t. */
static void put_back(unsigned cls, void *const *objs, unsigned n, struct tcache *t)
{
	central_put(t ? t->owner : 0, cls, objs, n);
	count_by(t, -(int64_t)n * (int64_t)class_size(cls));
}

/* The magazines' block for a thread of slot owner (0: none); NULL if it cannot be
 * mapped (the thread then has no cache of small objects). */
static void **mag_get(unsigned owner)
{
	if (owner && slot_mag[owner - 1])
		return slot_mag[owner - 1];
	void *m;
	if (malloc_map_lazy(mag_bytes, &m) < 0)
		return NULL;
	if (owner)
		slot_mag[owner - 1] = m;
	return m;
}

static void thread_exit(void *arg)
{
	struct tcache *t = arg;
	for (unsigned c = 0; c < NCLASS; c++) {
		struct tc_list *l = &t->list[1 + c];
		if (t->mag) {
			void **first = t->mag + mag_at[c] + 1;
			if (l->top >= first)
				put_back(c, first, (unsigned)(l->top - first + 1), t);
		}
		l->top = l->end = MAG_NONE;
	}
	if (t->mag && !t->owner)
		malloc_unmap(t->mag, mag_bytes);
	t->mag = NULL;
	count_by(t, -(int64_t)fit_cache_flush(true));
	flush_counts(t, true);
	t->state = TC_DEAD;
	central_release(t->owner);
	t->owner = 0;
}

static pthread_key_t exit_key; /* runs thread_exit with a thread's cache */

/* splitmix64's finaliser: every bit of x moves every bit of the result. */
static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The free mark's key and the links' key (malloc.h), secret: from getrandom, else
 * hashed from the kernel's 16 random bytes of AT_RANDOM. Not those bytes as they
 * are: glibc's stack guard and pointer guard are made of them, and a freed object's
 * mark, read after free by a program that knows its address, gives its key away.
 * A forked child keeps both keys with the heap it inherits. */
static void keys_init(void)
{
	uint64_t k[2];
	if (getrandom(k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
		const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
		uint64_t r[2] = { 0x9e3779b97f4a7c15ull, (uintptr_t)&k };
		if (rnd)
			memcpy(r, rnd, sizeof r);
		k[0] = mix64(r[0] ^ mix64(r[1]));
		k[1] = mix64(k[0] ^ r[1]);
	}
	heap_hot.free_key = k[0] | 1;
	heap_hot.link_key = k[1];
}

/* The keys, the checking mode, and the key that flushes a thread's cache when it
 * exits. */
bool malloc_init(void)
{
	keys_init();
	size_t at = 0;
	for (unsigned c = 0; c < NCLASS; c++) {
		mag_at[c] = (uint32_t)at;
		at += 1 + malloc_mag_most(c);
	}
	mag_bytes = (at * sizeof(void *) + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	rt_check = rt_options()->check;
	return pthread_key_create(&exit_key, thread_exit) == 0;
}

/* The calling thread's cache, or NULL after its exit handler ran. */
static inline struct tcache *tc_get(void)
{
	if (__builtin_expect(tc.state == TC_LIVE, 1))
		return &tc;
	if (tc.state == TC_DEAD)
		return NULL;
	tc.state = TC_LIVE;
	tc.owner = central_claim();
	tc.mag = rt_check ? NULL : mag_get(tc.owner); /* (the checking mode keeps none: check.c) */
	for (unsigned c = 0; tc.mag && c < NCLASS; c++) {
		tc.list[1 + c].top = tc.mag + mag_at[c];
		tc.list[1 + c].end = tc.mag + mag_at[c] + mag_size(c);
	}
	memset(tc.swung, 0, sizeof tc.swung);
	tc.grown = 0;
	pthread_setspecific(exit_key, &tc);
	return &tc;
}

/* Counts a malloc or free of a block past the objects' classes, and the bytes it took
 * out of the heap (or gave back): on the counts of thread cache t while it is live (t:
 * tc_get()), so that two threads' blocks do not share a line (a global count on
 * every realloc of bench/kernels/malloc realloc took 4% of its time with 2 threads). */
static void count_call(struct tcache *t, bool is_malloc, int64_t bytes)
{
	count_by(t, bytes);
	if (!t) {
		atomic_fetch_add_explicit(is_malloc ? &counts.mallocs : &counts.frees, 1, memory_order_relaxed);
		return;
	}
	if (is_malloc)
		t->d_mallocs++;
	else
		t->d_frees++;
	flush_counts(t, false);
}

/* ---------- small objects ---------- */

/* The slow half of a small malloc: refill the class's magazine from the central
 * list (it is empty: tc_pop), or an object alone for a thread without one. */
static __attribute__((noinline)) void *small_refill(unsigned cls)
{
	struct tcache *t = tc_get();
	void *o;
	if (!t || !t->mag) {
		if (central_take(t ? t->owner : 0, cls, 1, &o) == 0)
			return NULL;
		count_call(t, true, (int64_t)class_size(cls));
	} else {
		struct tc_list *l = &t->list[1 + cls];
		void **bottom = t->mag + mag_at[cls];
		if (l->top != bottom) /* (a NULL above the bottom) */
			cache_refused(cls, "malloc");
		unsigned n = central_take(t->owner, cls, class_batch(cls), bottom + 1);
		if (n == 0)
			return NULL;
		t->swung[cls] = 1;
		count_by(t, (int64_t)(n * class_size(cls)));
		o = bottom[n];
		l->top = bottom + n - 1;
		t->d_mallocs++;
		flush_counts(t, false);
	}
	((uintptr_t *)o)[1] = 0;
	return o;
}

/* An object of the class at offset at of the thread's magazines (as in class_info[])
 * from this thread's cache; NULL if it has none. */
static inline void *tc_pop_at(size_t at)
{
	tc_here *t = TC_HERE;
	tc_list_here *l = (tc_list_here *)((uintptr_t)t->list + at);
	void **top = l->top;
	void *o = *top;
	if (__builtin_expect(o == NULL, 0))
		return NULL;
	l->top = top - 1;
	t->d_mallocs++;
	((uintptr_t *)o)[1] = 0;
	return o;
}

static inline void *tc_pop(unsigned cls)
{
	return tc_pop_at((1 + cls) * sizeof(struct class_info));
}

static inline void *small_alloc(unsigned cls)
{
	void *o = tc_pop(cls);
	return __builtin_expect(o != NULL, 1) ? o : small_refill(cls);
}

/* Class cls's full magazine in thread cache t grows by a batch, if the class swung
 * (its magazine emptied since the thread began) and it has room and the thread's
 * budget allows: whether it grew. A thread that only frees objects of a class (others
 * malloc them) does not grow it: a longer magazine would only hold them longer. */
static bool mag_grow(struct tcache *t, unsigned cls)
{
	struct tc_list *l = &t->list[1 + cls];
	unsigned b = class_batch(cls);
	size_t bytes = (size_t)b * class_size(cls);
	void **bottom = t->mag + mag_at[cls];
	if (!t->swung[cls] || (size_t)(l->end - bottom) + b > malloc_mag_most(cls) ||
	    t->grown + bytes > MAG_GROWN_MAX)
		return false;
	l->end += b;
	t->grown += bytes;
	return true;
}

/* The slow half of a small free (small_free checked p; its free mark is set here,
 * after the checking mode's look at the bytes it lies on): into a full magazine, or
 * with no magazine. */
static __attribute__((noinline)) void small_free_slow(unsigned cls, void *p)
{
	if (rt_check) {
		check_free(p, class_size(cls));
		return;
	}
	((uintptr_t *)p)[1] = free_mark(p);
	struct tcache *t = tc_get();
	if (!t || !t->mag) {
		central_put(t ? t->owner : 0, cls, &p, 1);
		count_call(t, false, -(int64_t)class_size(cls));
		return;
	}
	t->d_frees++;
	struct tc_list *l = &t->list[1 + cls];
	if (l->top == l->end && !mag_grow(t, cls)) { /* (else the first free of a thread) */
		/* The older batch goes back, the newer ones move down. */
		unsigned b = class_batch(cls);
		void **first = t->mag + mag_at[cls] + 1;
		put_back(cls, first, b, t);
		memmove(first, first + b, (size_t)(l->top - first + 1 - b) * sizeof *first);
		l->top -= b;
	}
	*++l->top = p;
	flush_counts(t, false);
}

/* What small_check says of a pointer it refuses; out of line, so that the check needs
 * no frame of its own. */
static __attribute__((noinline, cold)) void small_refused(const void *p, const char *fn, bool inside)
{
	if (inside)
		rt_abort("%s(): invalid pointer %p (inside a block)", fn, p);
	rt_abort("%s(): %s of %p", fn, fn[0] == 'f' ? "double free" : "a freed block", p);
}

/* (Neither says what a bad link or object is: with the address that was written,
 * that would give the secret away to whoever reads the line, and a forked sibling
 * keeps it.) */
void cache_refused(unsigned cls, const char *fn)
{
	rt_abort("%s(): corrupted cache of %zu-byte blocks: a thread's cache was written over",
		 fn, class_size(cls));
}

void link_refused(const void *slot, const char *fn)
{
	if (!slot)
		rt_abort("%s(): corrupted free list: a thread's cache was written over", fn);
	uint64_t info = page_info((uintptr_t)slot - heap_hot.base);
	rt_abort("%s(): corrupted free list: the freed %zu-byte block %p was written after its "
		 "free", fn, info ? class_size(info_class(info)) : 0, slot);
}

/* Aborts unless p, on a page of the given (nonzero) info, is a small object that is
 * not free: its class and place checked from the class's table, the span not
 * touched. */
static inline void small_check(uint64_t info, void *p, const char *fn)
{
	if (__builtin_expect(!info_fits(info, (uintptr_t)p - heap_hot.base), 0))
		small_refused(p, fn, true);
	else if (__builtin_expect(((uintptr_t *)p)[1] == free_mark(p), 0))
		small_refused(p, fn, false);
}

/* Frees small object p (info_fits() it) given its page's info: into the cache's
 * magazine at the offset the info holds. */
static inline void small_free(uint64_t info, void *p)
{
	uintptr_t mark = free_mark(p);
	if (__builtin_expect(((uintptr_t *)p)[1] == mark, 0))
		small_refused(p, "free", false);
	tc_here *t = TC_HERE;
	tc_list_here *l = (tc_list_here *)((uintptr_t)t->list + (info >> 32));
	void **top = l->top;
	if (__builtin_expect(top != l->end, 1)) {
		((uintptr_t *)p)[1] = mark;
		*++top = p;
		l->top = top;
		t->d_frees++;
		return;
	}
	small_free_slow(info_class(info), p);
}

/* ---------- the entry points ---------- */

static size_t span_usable(const struct span *s)
{
	return s->kind == SPAN_SMALL ? class_size(s->cls) : s->npages << PAGE_SHIFT;
}

/* A block above SMALL_MAX: a run of pages, or whole units (whole: always units). */
static void *big_alloc(size_t size, size_t align, uint8_t *clean, bool whole)
{
	struct span *s = NULL;
	bool run = !whole && pages_is_run(size, align);
	if (run) {
		size_t np = (size + PAGE_SIZE - 1) >> PAGE_SHIFT;
		s = pages_alloc_run(np, align > PAGE_SIZE ? align >> PAGE_SHIFT : 1, SPAN_MEDIUM);
	}
	/* (A long block the range has no run for may still be mapped on its own.) */
	if (!s && (!run || size > MEDIUM_MAX))
		s = pages_alloc_large(size, align);
	if (!s)
		return NULL;
	if (clean)
		*clean = s->clean;
	count_call(tc_get(), true, (int64_t)span_usable(s));
	return (void *)s->start;
}

/* A block above FIT_MIN and below FIT_MAX, fitted to 64 bytes (fit.c), from the
 * arena of the thread's slot (its cache had none); zeroed if zero, where it may not
 * read as zero already (a calloc of memory never given out touches none of it). */
static void *fit_arena_block(size_t size, bool zero)
{
	size_t fresh, dirty;
	struct tcache *t = tc_get();
	void *p = fit_alloc(size, t && t->owner ? t->owner - 1 : 0, &fresh, &dirty);
	if (p) {
		count_call(t, true, (int64_t)fresh);
		if (zero)
			memset(p, 0, dirty < size ? dirty : size);
	}
	return p;
}

/* A fitted block from the thread's cache, else from the arena; with clean (calloc),
 * one from the arena comes zeroed, and *clean says so. */
static void *fit_block(size_t size, uint8_t *clean)
{
	void *p = fit_cached(size);
	if (!p) {
		if ((p = fit_arena_block(size, clean != NULL)) && clean)
			*clean = SPAN_CLEAN;
		return p;
	}
	count_call(tc_get(), true, 0);
	return p;
}

static void *alloc(size_t size, uint8_t *clean)
{
	if (__builtin_expect(!rt_init(), 0))
		return NULL;
	if (clean)
		*clean = rt_check ? SPAN_CLEAN : 0;
	if (rt_check)
		return check_alloc(size, MIN_ALIGN, clean != NULL);
	if (size <= FIT_MIN)
		return small_alloc(class_of(size ? size : 1));
	if (size < FIT_MAX)
		return fit_block(size, clean);
	return big_alloc(size, PAGE_SIZE, clean, false);
}

static __attribute__((noinline)) void *malloc_slow(size_t size)
{
	void *p;
	if (fit_size(size) && tc.state == TC_LIVE && !rt_check) {
		/* (A live cache: the heap serves, no need to ask rt_init; a cached block
		 * was counted out of the heap when it was first given out.) */
		if ((p = fit_cached(size))) {
			tc.d_mallocs++;
			return p;
		}
		p = fit_arena_block(size, false);
	} else {
		p = alloc(size, NULL);
	}
	if (!p)
		errno = ENOMEM;
	return p;
}

/* The common case inline, in a dozen instructions: a small object from this
 * thread's cache (which has none before the heap is ready; size 0 is class 0's).
 * Anything else (an empty cache, a big block, the first call) goes the long way. */
void *rt_malloc(size_t size)
{
	if (__builtin_expect(size <= FIT_MIN, 1)) {
		void *o = tc_pop_at(class_at_fine(size));
		if (__builtin_expect(o != NULL, 1))
			return o;
	}
	return malloc_slow(size);
}

/* The span of a block given to free/realloc/usable_size; NULL for a pointer from
 * outside the heap (foreign.c's to tell); aborts on a pointer into the heap that is
 * no block. */
static struct span *block_span(const void *p)
{
	bool in_range;
	struct span *s = pages_lookup(p, &in_range);
	if (!in_range) /* (s: a block mapped on its own, outside the range) */
		return s;
	if (!s || s->magic != SPAN_MAGIC || s->kind == SPAN_MMAP ||
	    (s->kind != SPAN_SMALL && s->kind != SPAN_FIT && (uintptr_t)p != s->start))
		rt_abort("free(): invalid pointer %p", p);
	return s;
}

/* block_span, with the common case first: a block on the range's writable pages, read
 * from the page map (a fitted block's place in its chunk is fit.c's to check). */
static inline struct span *heap_span(const void *p)
{
	if (((uintptr_t)p - heap_hot.base) >> PAGE_SHIFT <
	    __atomic_load_n(&heap_hot.top_pages, __ATOMIC_ACQUIRE)) {
		struct span *s = span_at((uintptr_t)p);
		if (s && s->magic == SPAN_MAGIC &&
		    (s->kind == SPAN_FIT || s->kind == SPAN_SMALL ||
		     ((s->kind == SPAN_MEDIUM || s->kind == SPAN_LARGE) && (uintptr_t)p == s->start)))
			return s;
	}
	return block_span(p);
}

static __attribute__((noinline)) void big_free(void *p)
{
	struct span *s = heap_span(p);
	if (!s) {
		foreign_free(p);
		return;
	}
	if (rt_check && s->kind != SPAN_SMALL) {
		check_free(p, s->kind == SPAN_FIT ? fit_usable(s, p, "free") : span_usable(s));
		return;
	}
	if (s->kind == SPAN_SMALL) {
		uint64_t info = small_info(s->cls, s->start - ((uintptr_t)s->first << PAGE_SHIFT));
		if (!info_fits(info, (uintptr_t)p - heap_hot.base))
			small_refused(p, "free", true);
		small_free(info, p);
		return;
	}
	if (s->kind == SPAN_FIT) {
		size_t back = fit_free(s, p);
		if (back || tc.state != TC_LIVE)
			count_call(tc_get(), false, -(int64_t)back);
		else /* (into the thread's cache: still out of the heap) */
			tc.d_frees++;
		return;
	}
	count_call(tc_get(), false, -(int64_t)span_usable(s));
	pages_free(s);
}

/* A free that is not of a small object in its place: a block (or NULL, or a pointer
 * from outside), or a pointer on a small span's page (info) that is no object there. */
static __attribute__((noinline)) void free_other(void *p, uint64_t info)
{
	if (info)
		small_refused(p, "free", true);
	if (p)
		big_free(p);
}

void rt_free(void *p)
{
	/* The common case in a few loads: a small object on a page of the heap, checked
	 * to be one from its page's info. */
	uintptr_t a = (uintptr_t)p - heap_hot.base;
	uint64_t info = page_info(a);
	if (__builtin_expect(info_fits(info, a), 1)) {
		small_free(info, p);
		return;
	}
	free_other(p, info);
}

void *rt_calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	uint8_t clean;
	void *p = alloc(total, &clean);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	zero_unknown(clean, p, total);
	return p;
}

/* The usable bytes of block p in use (fn aborts on a pointer into the heap that is
 * no block in use); 0 for a pointer from outside the heap. */
static size_t block_usable(const void *p, const char *fn)
{
	uint64_t info = page_info((uintptr_t)p - heap_hot.base);
	if (info) {
		small_check(info, (void *)p, fn);
		return class_size(info_class(info));
	}
	struct span *s = heap_span(p);
	if (s && s->kind == SPAN_FIT)
		return fit_usable(s, p, fn);
	return s ? span_usable(s) : 0;
}

size_t rt_usable_size(const void *p)
{
	if (!p)
		return 0;
	if (rt_check) {
		size_t usable = block_usable(p, "malloc_usable_size");
		return usable ? check_usable(p, usable, "malloc_usable_size") : 0;
	}
	struct span *s = heap_span(p);
	if (s && s->kind == SPAN_FIT)
		return fit_usable(s, p, "malloc_usable_size");
	return s ? span_usable(s) : 0;
}

/* realloc in the checking mode: always a new block, the old one freed (and so
 * checked). */
static void *realloc_checked(void *p, size_t size)
{
	size_t usable = block_usable(p, "realloc");
	void *q;
	if (!usable) {
		q = foreign_realloc(p, size);
	} else {
		size_t have = check_usable(p, usable, "realloc");
		if ((q = check_alloc(size, MIN_ALIGN, false))) {
			memcpy(q, p, size < have ? size : have);
			rt_free(p);
		}
	}
	if (!q)
		errno = ENOMEM;
	return q;
}

/* Growth by realloc leaves this much room (1/8) for the next, so that a block grown
 * a little at a time is copied every 12% of growth, not at every class or page. */
static size_t grow_room(size_t size)
{
	size_t more = size + size / 8;
	return more > size ? more : size;
}

void *rt_realloc(void *p, size_t size)
{
	if (!p)
		return rt_malloc(size);
	if (size == 0) {
		rt_free(p); /* as glibc does */
		return NULL;
	}
	if (rt_check)
		return realloc_checked(p, size);
	size_t have;
	struct span *s = NULL;
	uint64_t info = page_info((uintptr_t)p - heap_hot.base);
	if (info) {
		small_check(info, p, "realloc");
		have = class_size(info_class(info));
	} else {
		s = heap_span(p);
		if (!s) {
			void *q = foreign_realloc(p, size);
			if (!q)
				errno = ENOMEM;
			return q;
		}
		have = s->kind == SPAN_FIT ? fit_usable(s, p, "realloc") : span_usable(s);
	}
	if (s && s->kind == SPAN_FIT && fit_size(size)) {
		size_t now;
		if (fit_keeps(have, size))
			return p;
		if (fit_resize(s, p, size, &now)) {
			count_by(tc_get(), (int64_t)now - (int64_t)have);
			return p;
		}
	} else if (s && (s->kind == SPAN_LARGE || s->kind == SPAN_OUTSIDE) && size > MEDIUM_MAX) {
		size_t before = have;
		if (pages_resize_large(s, size)) {
			count_by(tc_get(), (int64_t)span_usable(s) - (int64_t)before);
			return (void *)s->start;
		}
	} else if (size <= have && size >= have / 2) {
		return p;
	} else if (s && s->kind == SPAN_MEDIUM && size > SMALL_MAX &&
		   pages_resize_run(s, (size + PAGE_SIZE - 1) >> PAGE_SHIFT)) {
		count_by(tc_get(), (int64_t)span_usable(s) - (int64_t)have);
		return p;
	}
	/* A block realloc grows past 1 MiB moves to whole units, as it did before runs
	 * across units: the rest of its last unit, and the units after it, are room to
	 * grow in place (packed to the page, strings grown by realloc were copied at
	 * almost every growth: memmove took 27% of bench/kernels/malloc realloc's time,
	 * against 16%). */
	void *q = size > have && size > MEDIUM_MAX ? big_alloc(size, PAGE_SIZE, NULL, true)
		: rt_malloc(size > have && size <= MEDIUM_MAX ? grow_room(size) : size);
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(q, p, size < have ? size : have);
	rt_free(p);
	return q;
}

/* The class of small objects that serves size bytes (<= SMALL_MAX) aligned to align
 * (<= PAGE_SIZE): the first whose size is a multiple of align, since spans start on a
 * page; NCLASS if none. */
static unsigned aligned_class(size_t size, size_t align)
{
	size_t want = size > align ? size : align;
	for (unsigned c = class_of(want ? want : 1); c < NCLASS; c++)
		if (class_size(c) % align == 0)
			return c;
	return NCLASS;
}

void *rt_memalign(size_t align, size_t size)
{
	if (align <= MIN_ALIGN && !rt_check)
		return rt_malloc(size);
	if (align & (align - 1)) {
		errno = EINVAL;
		return NULL;
	}
	if (!rt_init()) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = NULL;
	unsigned c;
	if (rt_check)
		p = check_alloc(size, align, false);
	else if (align <= 64 && fit_size(size))
		p = fit_block(size, NULL); /* (blocks are fitted to 64 bytes) */
	else if (size <= SMALL_MAX && align <= PAGE_SIZE && (c = aligned_class(size, align)) < NCLASS)
		p = small_alloc(c);
	else
		p = big_alloc(size ? size : 1, align, NULL, false);
	if (!p)
		errno = ENOMEM;
	return p;
}

/* ---------- the checking mode's blocks (check.c) ---------- */

void *heap_take(size_t size, size_t align, size_t *usable, bool *clean, bool *small)
{
	unsigned c = NCLASS;
	void *p = NULL;
	*clean = *small = false;
	if (align < MIN_ALIGN)
		align = MIN_ALIGN;
	if (align <= 64 && fit_size(size)) {
		if ((p = fit_arena_block(size, false)))
			*usable = fit_usable(span_at((uintptr_t)p), p, "malloc");
	} else if (size <= SMALL_MAX && align <= PAGE_SIZE && (c = aligned_class(size, align)) < NCLASS) {
		struct tcache *t = tc_get();
		if (central_take(t ? t->owner : 0, c, 1, &p) == 0)
			return NULL;
		count_call(t, true, (int64_t)class_size(c));
		*usable = class_size(c);
		*small = true;
	} else {
		uint8_t c8;
		if ((p = big_alloc(size, align > PAGE_SIZE ? align : PAGE_SIZE, &c8, false))) {
			*usable = span_usable(heap_span(p));
			*clean = c8 == SPAN_CLEAN; /* (the checking mode zeroes a block whole) */
		}
	}
	return p;
}

void heap_give(void *p)
{
	uint64_t info = page_info((uintptr_t)p - heap_hot.base);
	struct tcache *t = tc_get();
	if (info) {
		unsigned c = info_class(info);
		central_put(t ? t->owner : 0, c, &p, 1);
		count_call(t, false, -(int64_t)class_size(c));
		return;
	}
	struct span *s = heap_span(p);
	if (s->kind == SPAN_FIT) {
		count_call(t, false, -(int64_t)fit_release(s, p));
		return;
	}
	count_call(t, false, -(int64_t)span_usable(s));
	pages_free(s);
}

/* ---------- the check ---------- */

/* a[0..n) in ascending order (a shell sort: the check below must not call malloc). */
static void sort_addresses(uintptr_t *a, unsigned n)
{
	for (unsigned gap = n / 2; gap > 0; gap /= 2)
		for (unsigned i = gap; i < n; i++)
			for (unsigned j = i; j >= gap && a[j - gap] > a[j]; j -= gap) {
				uintptr_t x = a[j];
				a[j] = a[j - gap];
				a[j - gap] = x;
			}
}

const char *malloc_cache_check(void)
{
	uintptr_t seen[MAG_BATCHES_MOST * 255]; /* (16 KiB of a test's stack) */
	for (unsigned c = 0; c <= NCLASS; c++) {
		const struct tc_list *l = &tc.list[c];
		if (c == 0 || !tc.mag) {
			if (l->top != MAG_NONE || l->end != MAG_NONE)
				return "a cache with no magazine (or class 0) is not at mag_none";
			continue;
		}
		void **bottom = tc.mag + mag_at[c - 1];
		size_t cap = (size_t)(l->end - bottom);
		if (cap < mag_size(c - 1) || cap > malloc_mag_most(c - 1) || cap % class_batch(c - 1) ||
		    l->top < bottom || l->top > l->end)
			return "a magazine's top or end is outside it";
		if (*bottom)
			return "a magazine's bottom is not NULL";
		unsigned n = (unsigned)(l->top - bottom);
		for (unsigned i = 0; i < n; i++) {
			uintptr_t a = (uintptr_t)bottom[1 + i] - heap_hot.base;
			uint64_t info = page_info(a);
			if (!info || info_class(info) != c - 1 || !info_fits(info, a))
				return "an object in a magazine is no object of its class";
			seen[i] = a;
		}
		sort_addresses(seen, n);
		for (unsigned i = 1; i < n; i++)
			if (seen[i] == seen[i - 1])
				return "an object is in a magazine twice";
	}
	return NULL;
}

unsigned malloc_mag_count(unsigned c)
{
	return tc.mag ? (unsigned)(tc.list[1 + c].top - (tc.mag + mag_at[c])) : 0;
}

/* The forking thread's slot (1 + index; 0: none), which a child keeps (life.c). */
unsigned malloc_thread_slot(void)
{
	return tc.owner;
}

/* ---------- stats ---------- */

void rt_stats_get(struct rt_stats *out)
{
	memset(out, 0, sizeof *out);
	if (tc.state == TC_LIVE)
		flush_counts(&tc, true);
	int64_t in_use = atomic_load(&counts.in_use);
	out->in_use = in_use > 0 ? (uint64_t)in_use : 0;
	out->peak_in_use = atomic_load(&counts.peak);
	out->mallocs = atomic_load(&counts.mallocs);
	out->frees = atomic_load(&counts.frees);
	if (rt_ready()) {
		pages_stats(out);
		/* Free space inside the fitted blocks' chunks is free inside units too.
		 * Which units it lies in is not counted: it is taken from the bytes in full
		 * units as well, which makes them a lower bound (they were more than the
		 * bytes in use: 108% for blocks of 4-64 KiB). */
		uint64_t chunks, free;
		fit_stats(&chunks, &free);
		if (free > out->unit_used_bytes)
			free = out->unit_used_bytes;
		out->unit_used_bytes -= free;
		out->unit_free_bytes += free;
		out->full_unit_bytes -= free < out->full_unit_bytes ? free : out->full_unit_bytes;
	}
}
