/* heap.c - malloc on the page heap: per-thread caches of small objects (no lock, no
 * system call on the common path), central lists per size class, medium page runs,
 * large unit runs; fork and thread exit handled, errno left as the program had it. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>

#include "heap.h"
#include "internal.h"

/* ---------- options and start-up ---------- */

static struct sp_options options;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic int ready;       /* 1: serving, -1: could not start */
static pthread_key_t exit_key;

const struct sp_options *rt_options(void)
{
	return &options;
}

static void warn_option(const char *msg, void *arg)
{
	(void)arg;
	rt_say("%s", msg);
}

struct tcache;
static void thread_exit(void *arg);

static void start(void)
{
	sp_options_from_env(&options, warn_option, NULL);
	classes_init();
	fit_init();
	const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
	uintptr_t k = 0x9e3779b97f4a7c15ull;
	if (rnd)
		memcpy(&k, rnd + 8, sizeof k);
	heap_hot.free_key = k | 1;
	if (pthread_key_create(&exit_key, thread_exit) != 0 || pages_init(&options) < 0) {
		atomic_store(&ready, -1);
		rt_say("cannot set up the heap (no address space or memory left: ulimit -v?): "
		       "every malloc of this program fails");
		return;
	}
	atomic_store(&ready, 1);
	rt_live_init();
}

bool rt_init(void)
{
	if (atomic_load_explicit(&ready, memory_order_acquire) == 1)
		return true;
	pthread_once(&once, start);
	return atomic_load(&ready) == 1;
}

/* The heap is set up at load time, and the runtime's fork handlers go in (fork.c). */
__attribute__((constructor)) static void heap_constructor(void)
{
	rt_init();
	rt_fork_init();
}

/* ---------- spans with free objects, by owner ---------- */

/* A thread fills its cache only from spans of its own, so that the objects it gets
 * new share no cache line with another thread's (that false sharing cost 2 threads
 * half their speed). An object freed joins the cache of the thread that frees it;
 * when that cache gives it back, it goes back to its span, and so to the span's
 * owner. A thread owns spans through a slot, whose lock guards its lists (one per
 * class) of spans with free objects; so threads that free their own objects take
 * only their own lock. Spans of threads that exited, or of threads without a slot,
 * are the class's orphans (under the class's lock), which threads adopt before
 * they make new spans. A span's owner changes only under the lock of the list it
 * leaves and of the one it joins; locks are taken slot first, class second. */
#define MAX_OWNERS 256

struct spanlist {
	struct span *head;
	unsigned n;
};

struct central {
	pthread_mutex_t lock;
	struct spanlist orphans;
} __attribute__((aligned(64)));
/* All-zero is PTHREAD_MUTEX_INITIALIZER for glibc's default mutex. */
static struct central central[NCLASS];

enum { SLOT_FREE = 0, SLOT_LIVE, SLOT_LEAVING };
struct owner {
	pthread_mutex_t lock;
	_Atomic int state;             /* changed under owners_lock */
	struct spanlist own[NCLASS];   /* under lock */
} __attribute__((aligned(64)));
static struct owner owners[MAX_OWNERS];
static pthread_mutex_t owners_lock = PTHREAD_MUTEX_INITIALIZER;

struct tcache;
static void count_by(struct tcache *t, int64_t bytes);

static void list_add(struct spanlist *l, struct span *s)
{
	s->prev = NULL;
	s->next = l->head;
	if (l->head)
		l->head->prev = s;
	l->head = s;
	s->listed = true;
	l->n++;
}

static void list_del(struct spanlist *l, struct span *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		l->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	s->listed = false;
	l->n--;
}

/* Sets the page info of a span's pages (heap.h): mark | index, or 0 with mark 0. */
static void span_mark(struct span *s, uint16_t mark)
{
	uint16_t *info = &heap_hot.pageinfo[(s->start - heap_hot.base) >> PAGE_SHIFT];
	for (size_t i = 0; i < s->npages; i++)
		__atomic_store_n(&info[i], (uint16_t)(mark ? mark | i : 0), __ATOMIC_RELEASE);
}

static struct span *new_small_span(unsigned cls)
{
	struct span *s = pages_alloc_run(class_pages(cls), 1, SPAN_SMALL);
	if (!s)
		return NULL;
	s->cls = (uint8_t)cls;
	s->bump = s->start;
	s->end = s->start + class_info[cls].limit;
	s->freelist = NULL;
	s->used = 0;
	span_mark(s, (uint16_t)((cls + 1) << 8));
	return s;
}

/* Gives empty small spans, linked through next, back to the page heap: no free may
 * find them any more. */
static void small_spans_free(struct span *list)
{
	while (list) {
		struct span *s = list;
		list = s->next;
		span_mark(s, 0);
		pages_free(s);
	}
}

static unsigned owner_of(const struct span *s)
{
	return __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
}

static void set_owner(struct span *s, unsigned o)
{
	__atomic_store_n(&s->owner, (uint16_t)o, __ATOMIC_RELAXED);
}

/* The lock of owner o's lists of class cls (o 0: the class's orphans). */
static pthread_mutex_t *lock_of(unsigned o, unsigned cls)
{
	return o ? &owners[o - 1].lock : &central[cls].lock;
}

/* The list of owner o's spans of class cls. */
static struct spanlist *list_for(unsigned o, unsigned cls)
{
	return o ? &owners[o - 1].own[cls] : &central[cls].orphans;
}

/* Locks the list a span is on, or goes on when it gets a free object: its owner's
 * while the owner lives, else the orphans (the span leaves a dead owner then).
 * held is the lock the caller holds (or NULL): kept if it is that one, else
 * released. Returns the lock now held; s->owner is stable under it. */
static pthread_mutex_t *lock_span(struct span *s, pthread_mutex_t *held)
{
	for (;;) {
		unsigned o = owner_of(s);
		pthread_mutex_t *m = lock_of(o, s->cls);
		if (m != held) {
			if (held)
				pthread_mutex_unlock(held);
			pthread_mutex_lock(m);
			held = m;
		}
		if (owner_of(s) != o)
			continue;
		if (o && !s->listed &&
		    atomic_load_explicit(&owners[o - 1].state, memory_order_relaxed) != SLOT_LIVE) {
			set_owner(s, 0); /* unlisted: on no list to leave */
			continue;
		}
		return m;
	}
}

static unsigned owners_hint;

/* A slot for a new thread: 1 + its index, or 0 if all are taken (the thread then
 * takes from and makes orphans). */
static unsigned owner_claim(void)
{
	unsigned got = 0;
	pthread_mutex_lock(&owners_lock);
	for (unsigned k = 0; k < MAX_OWNERS; k++) {
		unsigned i = (owners_hint + k) % MAX_OWNERS;
		if (atomic_load(&owners[i].state) == SLOT_FREE) {
			atomic_store(&owners[i].state, SLOT_LIVE);
			owners_hint = i + 1;
			got = i + 1;
			break;
		}
	}
	pthread_mutex_unlock(&owners_lock);
	return got;
}

/* The spans of slot i become orphans. With lock, takes the slot's and each class's
 * lock and gives empty spans back to the page heap; else the caller holds all those
 * locks and the page heap's (fork's child), and empty spans are orphans too. */
static void owner_orphan(unsigned i, bool lock)
{
	struct span *empty = NULL;
	if (lock)
		pthread_mutex_lock(&owners[i].lock);
	for (unsigned cls = 0; cls < NCLASS; cls++) {
		struct spanlist *own = &owners[i].own[cls];
		if (!own->head)
			continue;
		struct central *c = &central[cls];
		if (lock)
			pthread_mutex_lock(&c->lock);
		while (own->head) {
			struct span *s = own->head;
			list_del(own, s);
			set_owner(s, 0);
			if (s->used == 0 && lock) {
				s->next = empty;
				empty = s;
			} else {
				list_add(&c->orphans, s);
			}
		}
		if (lock)
			pthread_mutex_unlock(&c->lock);
	}
	if (lock)
		pthread_mutex_unlock(&owners[i].lock);
	small_spans_free(empty);
}

/* A thread leaves its slot: its spans are orphans before another thread may take
 * the slot (a put that saw it live has listed its span by then: same lock). */
static void owner_release(unsigned slot)
{
	if (!slot)
		return;
	atomic_store(&owners[slot - 1].state, SLOT_LEAVING);
	owner_orphan(slot - 1, true);
	pthread_mutex_lock(&owners_lock);
	atomic_store(&owners[slot - 1].state, SLOT_FREE);
	pthread_mutex_unlock(&owners_lock);
}

/* Takes up to n objects of class cls for slot me (0: none), linked through their
 * first word; returns how many (0: out of memory). From the slot's own spans
 * first, then orphans it adopts, then a new span. */
static unsigned central_take(unsigned me, unsigned cls, unsigned n, void **out)
{
	struct central *c = &central[cls];
	size_t size = class_size(cls);
	void *list = NULL;
	unsigned got = 0;
	pthread_mutex_t *m = lock_of(me, cls);
	struct spanlist *mine = list_for(me, cls);
	pthread_mutex_lock(m);
	while (got < n) {
		struct span *s = mine->head;
		if (!s && me) {
			pthread_mutex_lock(&c->lock);
			if ((s = c->orphans.head)) {
				list_del(&c->orphans, s);
				set_owner(s, me);
				list_add(mine, s);
			}
			pthread_mutex_unlock(&c->lock);
		}
		if (!s) {
			pthread_mutex_unlock(m);
			s = new_small_span(cls);
			pthread_mutex_lock(m);
			if (!s)
				break;
			set_owner(s, me);
			list_add(mine, s);
		}
		while (got < n && s->freelist) {
			void *o = s->freelist;
			s->freelist = *(void **)o;
			*(void **)o = list;
			list = o;
			got++;
			s->used++;
		}
		while (got < n && s->bump < s->end) {
			void *o = (void *)s->bump;
			s->bump += size;
			*(void **)o = list;
			list = o;
			got++;
			s->used++;
		}
		if (!s->freelist && s->bump >= s->end)
			list_del(mine, s);
	}
	pthread_mutex_unlock(m);
	*out = list;
	return got;
}

/* Gives objects back to their spans; a span left empty goes back to the page heap
 * unless it is the last its owner has of the class. */
static void central_put(unsigned cls, void *list, struct tcache *t)
{
	struct span *empty = NULL;
	int64_t n = 0;
	pthread_mutex_t *held = NULL;
	while (list) {
		void *o = list;
		list = *(void **)o;
		struct span *s = span_at((uintptr_t)o);
		held = lock_span(s, held);
		struct spanlist *l = list_for(owner_of(s), cls);
		*(void **)o = s->freelist;
		s->freelist = o;
		s->used--;
		n++;
		if (!s->listed)
			list_add(l, s);
		if (s->used == 0 && l->n > 1) {
			list_del(l, s);
			s->next = empty;
			empty = s;
		}
	}
	if (held)
		pthread_mutex_unlock(held);
	count_by(t, -n * (int64_t)class_size(cls));
	small_spans_free(empty);
}

/* ---------- per-thread caches ---------- */

enum { TC_NEW = 0, TC_LIVE, TC_DEAD };
struct tcache {
	/* Per class, the objects malloc takes first (the last freed), at most a batch,
	 * and a spare batch. A free into a full list makes it the spare (the spare
	 * before, the coldest objects, goes back to the spans); malloc from an empty
	 * list takes the spare. So a class whose mallocs and frees balance moves whole
	 * lists back and forth, and only a run of either reaches the spans. */
	void *head[NCLASS];
	void *spare[NCLASS];
	/* How many more objects each head list may take: a batch less what it holds;
	 * 0 in a cache that is not live, whose frees all go the long way. */
	uint32_t room[NCLASS];
	int state;
	unsigned owner;              /* its slot (1 + index), 0 for none */
	/* Not yet added to the global counts: added when they reach FLUSH_BYTES or
	 * FLUSH_CALLS, when the thread exits and when it asks for the stats. */
	int64_t d_in_use;
	uint64_t d_mallocs, d_frees;
};
static __thread struct tcache tc;

#define FLUSH_BYTES ((int64_t)1 << 20)
#define FLUSH_CALLS 65536

static _Atomic int64_t g_in_use;
static _Atomic uint64_t g_peak, g_mallocs, g_frees;

/* Bytes out of the central lists and page heap: the program's blocks and what the
 * threads' caches hold (at most two batches a class). Counted on the slow paths
 * only, and by each thread on its own until a MiB has gathered, so that no common
 * malloc or free and few refills touch a shared line: in use and peak are right to
 * within a MiB per thread. */
static void count_out(int64_t bytes)
{
	int64_t now = atomic_fetch_add_explicit(&g_in_use, bytes, memory_order_relaxed) + bytes;
	uint64_t peak = atomic_load_explicit(&g_peak, memory_order_relaxed);
	while (bytes > 0 && (uint64_t)now > peak &&
	       !atomic_compare_exchange_weak(&g_peak, &peak, (uint64_t)now))
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
		atomic_fetch_add_explicit(&g_mallocs, t->d_mallocs, memory_order_relaxed);
		atomic_fetch_add_explicit(&g_frees, t->d_frees, memory_order_relaxed);
		t->d_mallocs = t->d_frees = 0;
	}
	if (all && t->d_in_use) {
		count_out(t->d_in_use);
		t->d_in_use = 0;
	}
}

static void thread_exit(void *arg)
{
	struct tcache *t = arg;
	for (unsigned c = 0; c < NCLASS; c++) {
		if (t->head[c])
			central_put(c, t->head[c], t);
		if (t->spare[c])
			central_put(c, t->spare[c], t);
		t->head[c] = t->spare[c] = NULL;
	}
	memset(t->room, 0, sizeof t->room);
	count_by(t, -(int64_t)fit_cache_flush(true));
	flush_counts(t, true);
	t->state = TC_DEAD;
	owner_release(t->owner);
	t->owner = 0;
}

/* The calling thread's cache, or NULL after its exit handler ran. */
static inline struct tcache *tc_get(void)
{
	if (__builtin_expect(tc.state == TC_LIVE, 1))
		return &tc;
	if (tc.state == TC_DEAD)
		return NULL;
	tc.state = TC_LIVE;
	for (unsigned c = 0; c < NCLASS; c++)
		tc.room[c] = class_batch(c);
	tc.owner = owner_claim();
	pthread_setspecific(exit_key, &tc);
	return &tc;
}

/* ---------- small objects ---------- */

/* The slow half of a small malloc: refill the cache from the central list. */
static __attribute__((noinline)) void *small_refill(unsigned cls)
{
	struct tcache *t = tc_get();
	void *list;
	unsigned n;
	if (t && t->spare[cls]) { /* a whole batch, in the cache already */
		list = t->spare[cls];
		t->spare[cls] = NULL;
		n = class_batch(cls);
	} else {
		n = central_take(t ? t->owner : 0, cls, t ? class_batch(cls) : 1, &list);
		if (n == 0)
			return NULL;
		count_by(t, (int64_t)(n * class_size(cls)));
	}
	void *o = list;
	if (t) {
		t->head[cls] = *(void **)o;
		t->room[cls] = class_batch(cls) - (n - 1);
		t->d_mallocs++;
		flush_counts(t, false);
	} else {
		atomic_fetch_add_explicit(&g_mallocs, 1, memory_order_relaxed);
	}
	((uintptr_t *)o)[1] = 0;
	return o;
}

/* An object of the class from this thread's cache; NULL if it has none. */
static inline void *tc_pop(unsigned cls)
{
	void *o = tc.head[cls];
	if (__builtin_expect(o != NULL, 1)) {
		tc.head[cls] = *(void **)o;
		tc.room[cls]++;
		tc.d_mallocs++;
		((uintptr_t *)o)[1] = 0;
	}
	return o;
}

static inline void *small_alloc(unsigned cls)
{
	void *o = tc_pop(cls);
	return __builtin_expect(o != NULL, 1) ? o : small_refill(cls);
}

static __attribute__((noinline)) void small_free_slow(unsigned cls, void *p)
{
	struct tcache *t = tc_get();
	if (!t) {
		*(void **)p = NULL;
		central_put(cls, p, NULL);
		atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
		return;
	}
	t->d_frees++;
	if (t->room[cls]) { /* the first free of a thread */
		*(void **)p = t->head[cls];
		t->head[cls] = p;
		t->room[cls]--;
		return;
	}
	/* The list is full: it becomes the spare, and the spare goes back. */
	void *give = t->spare[cls];
	t->spare[cls] = t->head[cls];
	*(void **)p = NULL;
	t->head[cls] = p;
	t->room[cls] = class_batch(cls) - 1;
	if (give)
		central_put(cls, give, t);
	flush_counts(t, false);
}

/* The info (heap.h) of the page of a, 0 if a is not on a page of a small span. */
static inline unsigned page_info(uintptr_t a)
{
	size_t pg = (a - heap_hot.base) >> PAGE_SHIFT;
	if (__builtin_expect(pg >= __atomic_load_n(&heap_hot.top_pages, __ATOMIC_RELAXED), 0))
		return 0;
	return __atomic_load_n(&heap_hot.pageinfo[pg], __ATOMIC_ACQUIRE);
}

/* Aborts unless p, on a page of the given info, is a small object that is not free:
 * its class and place checked from the class's table, the span not touched. */
static inline void small_check(unsigned info, void *p, const char *fn)
{
	const struct class_info *ci = &class_info[(info >> 8) - 1];
	uint32_t off = (info & 0xff) << PAGE_SHIFT | ((uintptr_t)p & (PAGE_SIZE - 1));
	if (__builtin_expect(off * ci->divisor > ci->divisor - 1 || off >= ci->limit, 0))
		rt_abort("%s(): invalid pointer %p (inside a block)", fn, p);
	if (__builtin_expect(((uintptr_t *)p)[1] == free_mark(p), 0))
		rt_abort("%s(): %s of %p", fn, fn[0] == 'f' ? "double free" : "a freed block", p);
}

/* Frees a small object given its page's info. */
static inline void small_free(unsigned info, void *p)
{
	unsigned cls = (info >> 8) - 1;
	small_check(info, p, "free");
	((uintptr_t *)p)[1] = free_mark(p);
	if (__builtin_expect(tc.room[cls] != 0, 1)) {
		*(void **)p = tc.head[cls];
		tc.head[cls] = p;
		tc.room[cls]--;
		tc.d_frees++;
		return;
	}
	small_free_slow(cls, p);
}

/* ---------- the entry points ---------- */

static size_t span_usable(const struct span *s)
{
	return s->kind == SPAN_SMALL ? class_size(s->cls) : s->npages << PAGE_SHIFT;
}

/* A block above SMALL_MAX: a run of pages, or whole units (whole: always units). */
static void *big_alloc(size_t size, size_t align, bool *clean, bool whole)
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
	count_out((int64_t)span_usable(s));
	atomic_fetch_add_explicit(&g_mallocs, 1, memory_order_relaxed);
	return (void *)s->start;
}

/* Counts a malloc or free of a fitted block, and the bytes it took out of its arena
 * (or gave back): on the counts of thread cache t while it is live (t: tc_get()). */
static void count_fit(struct tcache *t, bool is_malloc, int64_t bytes)
{
	count_by(t, bytes);
	if (!t) {
		atomic_fetch_add_explicit(is_malloc ? &g_mallocs : &g_frees, 1, memory_order_relaxed);
		return;
	}
	if (is_malloc)
		t->d_mallocs++;
	else
		t->d_frees++;
	flush_counts(t, false);
}

/* A block above FIT_MIN and below FIT_MAX, fitted to 64 bytes (fit.c), from the
 * thread's cache or the arena of its slot. */
static void *fit_block(size_t size)
{
	size_t fresh;
	struct tcache *t = tc_get();
	void *p = fit_alloc(size, t && t->owner ? t->owner - 1 : 0, &fresh);
	if (p)
		count_fit(t, true, (int64_t)fresh);
	return p;
}

static void *alloc(size_t size, bool *clean)
{
	if (__builtin_expect(atomic_load_explicit(&ready, memory_order_acquire) != 1, 0) &&
	    !rt_init())
		return NULL;
	if (clean)
		*clean = false;
	if (size <= FIT_MIN)
		return small_alloc(class_of(size ? size : 1));
	if (size < FIT_MAX)
		return fit_block(size);
	return big_alloc(size, PAGE_SIZE, clean, false);
}

static __attribute__((noinline)) void *malloc_slow(size_t size)
{
	void *p = alloc(size, NULL);
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
		void *o = tc_pop(class_of(size));
		if (__builtin_expect(o != NULL, 1))
			return o;
	}
	return malloc_slow(size);
}

/* The span of a block given to free/realloc/usable_size; NULL for a pointer from
 * outside the heap (left alone); aborts on a pointer into the heap that is no block. */
static struct span *block_span(const void *p)
{
	bool in_range;
	struct span *s = pages_lookup(p, &in_range);
	if (!in_range) {
		if (!s) /* (s: a block mapped on its own, outside the range) */
			rt_verbose(1, "ignoring a pointer from outside the heap: %p", p);
		return s;
	}
	if (!s || s->magic != SPAN_MAGIC || s->kind == SPAN_MMAP ||
	    (s->kind != SPAN_SMALL && s->kind != SPAN_FIT && (uintptr_t)p != s->start))
		rt_abort("free(): invalid pointer %p", p);
	return s;
}

static __attribute__((noinline)) void big_free(void *p)
{
	struct span *s = block_span(p);
	if (!s)
		return;
	if (s->kind == SPAN_SMALL) {
		small_free((s->cls + 1u) << 8 | (unsigned)(((uintptr_t)p - s->start) >> PAGE_SHIFT), p);
		return;
	}
	if (s->kind == SPAN_FIT) {
		count_fit(tc_get(), false, -(int64_t)fit_free(s, p));
		return;
	}
	count_out(-(int64_t)span_usable(s));
	atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
	pages_free(s);
}

void rt_free(void *p)
{
	/* The common case in a few loads: a small object on a page of the heap. */
	unsigned info = page_info((uintptr_t)p);
	if (__builtin_expect(info != 0, 1)) {
		small_free(info, p);
		return;
	}
	if (p)
		big_free(p);
}

void *rt_calloc(size_t n, size_t size)
{
	size_t total;
	if (__builtin_mul_overflow(n, size, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	bool clean;
	void *p = alloc(total, &clean);
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	if (!clean)
		memset(p, 0, total);
	return p;
}

size_t rt_usable_size(const void *p)
{
	if (!p)
		return 0;
	struct span *s = block_span(p);
	if (s && s->kind == SPAN_FIT)
		return fit_usable(s, p, "malloc_usable_size");
	return s ? span_usable(s) : 0;
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
	size_t have;
	struct span *s = NULL;
	unsigned info = page_info((uintptr_t)p);
	if (info) {
		small_check(info, p, "realloc");
		have = class_size((info >> 8) - 1);
	} else {
		s = block_span(p);
		if (!s) {
			errno = ENOMEM; /* not ours: we cannot know its size */
			return NULL;
		}
		have = s->kind == SPAN_FIT ? fit_usable(s, p, "realloc") : span_usable(s);
	}
	if (s && s->kind == SPAN_FIT && fit_size(size)) {
		size_t now;
		if (fit_resize(s, p, size, &now)) {
			count_out((int64_t)now - (int64_t)have);
			return p;
		}
	} else if (s && (s->kind == SPAN_LARGE || s->kind == SPAN_OUTSIDE) && size > MEDIUM_MAX) {
		size_t before = have;
		if (pages_resize_large(s, size)) {
			count_out((int64_t)span_usable(s) - (int64_t)before);
			return (void *)s->start;
		}
	} else if (size <= have && size >= have / 2) {
		return p;
	} else if (s && s->kind == SPAN_MEDIUM && size > SMALL_MAX &&
		   pages_resize_run(s, (size + PAGE_SIZE - 1) >> PAGE_SHIFT)) {
		count_out((int64_t)span_usable(s) - (int64_t)have);
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

void *rt_memalign(size_t align, size_t size)
{
	if (align <= MIN_ALIGN)
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
	if (align <= 64 && fit_size(size)) {
		p = fit_block(size); /* (blocks are fitted to 64 bytes) */
	} else if (size <= SMALL_MAX && align <= PAGE_SIZE) {
		/* A class whose size is a multiple of align: its objects are aligned, since
		 * spans start on a page. */
		size_t want = size > align ? size : align;
		for (unsigned c = class_of(want); c < NCLASS; c++) {
			if (class_size(c) % align == 0) {
				p = small_alloc(c);
				break;
			}
		}
	} else {
		p = big_alloc(size ? size : 1, align, NULL, false);
	}
	if (!p)
		errno = ENOMEM;
	return p;
}

/* ---------- fork (called by fork.c's handlers) ---------- */

void heap_fork_prepare(void)
{
	pthread_mutex_lock(&owners_lock);
	for (unsigned i = 0; i < MAX_OWNERS; i++)
		pthread_mutex_lock(&owners[i].lock);
	for (unsigned c = 0; c < NCLASS; c++)
		pthread_mutex_lock(&central[c].lock);
	fit_lock();
	pages_lock();
	pages_fork_prepare();
}

static void fork_unlock(void)
{
	pages_unlock();
	fit_unlock();
	for (unsigned c = NCLASS; c-- > 0;)
		pthread_mutex_unlock(&central[c].lock);
	for (unsigned i = MAX_OWNERS; i-- > 0;)
		pthread_mutex_unlock(&owners[i].lock);
	pthread_mutex_unlock(&owners_lock);
}

void heap_fork_parent(void)
{
	pages_fork_parent();
	fork_unlock();
}

void heap_fork_child(void)
{
	pages_fork_child();
	/* Only this thread lives on: the other slots' spans are orphans. */
	for (unsigned i = 0; i < MAX_OWNERS; i++) {
		if (i + 1 == tc.owner || atomic_load(&owners[i].state) == SLOT_FREE)
			continue;
		atomic_store(&owners[i].state, SLOT_LEAVING);
		owner_orphan(i, false);
		atomic_store(&owners[i].state, SLOT_FREE);
	}
	fork_unlock();
}

/* ---------- stats ---------- */

void rt_stats_get(struct rt_stats *out)
{
	memset(out, 0, sizeof *out);
	if (tc.state == TC_LIVE)
		flush_counts(&tc, true);
	int64_t in_use = atomic_load(&g_in_use);
	out->in_use = in_use > 0 ? (uint64_t)in_use : 0;
	out->peak_in_use = atomic_load(&g_peak);
	out->mallocs = atomic_load(&g_mallocs);
	out->frees = atomic_load(&g_frees);
	if (atomic_load(&ready) == 1) {
		pages_stats(out);
		/* Free space inside the fitted blocks' chunks is free inside units too. */
		uint64_t chunks, free;
		fit_stats(&chunks, &free);
		if (free > out->unit_used_bytes)
			free = out->unit_used_bytes;
		out->unit_used_bytes -= free;
		out->unit_free_bytes += free;
	}
}
