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
static uintptr_t free_key;      /* marks objects in a free list (double free check) */

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
static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

static void start(void)
{
	sp_options_from_env(&options, warn_option, NULL);
	classes_init();
	const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
	uintptr_t k = 0x9e3779b97f4a7c15ull;
	if (rnd)
		memcpy(&k, rnd + 8, sizeof k);
	free_key = k | 1;
	if (pthread_key_create(&exit_key, thread_exit) != 0 || pages_init(&options) < 0) {
		atomic_store(&ready, -1);
		rt_say("cannot set up the heap (no address space or memory left: ulimit -v?): "
		       "every malloc of this program fails");
		return;
	}
	atomic_store(&ready, 1);
}

bool rt_init(void)
{
	if (atomic_load_explicit(&ready, memory_order_acquire) == 1)
		return true;
	pthread_once(&once, start);
	return atomic_load(&ready) == 1;
}

/* Fork handlers go in at load time: pthread_atfork may itself call malloc. */
__attribute__((constructor)) static void heap_constructor(void)
{
	rt_init();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ---------- central lists: spans with free objects, per class ---------- */

struct central {
	pthread_mutex_t lock;
	struct span *head;      /* spans of this class with a free object */
	unsigned nspans;
} __attribute__((aligned(64)));
/* All-zero is PTHREAD_MUTEX_INITIALIZER for glibc's default mutex. */
static struct central central[NCLASS];

static void count_out(int64_t bytes);

static void list_add(struct central *c, struct span *s)
{
	s->prev = NULL;
	s->next = c->head;
	if (c->head)
		c->head->prev = s;
	c->head = s;
	s->listed = true;
	c->nspans++;
}

static void list_del(struct central *c, struct span *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		c->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	s->listed = false;
	c->nspans--;
}

static struct span *new_small_span(unsigned cls)
{
	struct span *s = pages_alloc_run(class_pages(cls), 1, SPAN_SMALL);
	if (!s)
		return NULL;
	size_t size = class_size(cls);
	s->cls = (uint8_t)cls;
	s->size = (uint32_t)size;
	s->recip = (uint32_t)(((1ull << 32) + size - 1) / size);
	s->nobj = (uint32_t)((s->npages << PAGE_SHIFT) / size);
	s->bump = s->start;
	s->end = s->start + s->nobj * size;
	s->freelist = NULL;
	s->used = 0;
	return s;
}

/* Takes up to n objects of class cls, linked through their first word; returns how
 * many (0: out of memory). */
static unsigned central_take(unsigned cls, unsigned n, void **out)
{
	struct central *c = &central[cls];
	size_t size = class_size(cls);
	void *list = NULL;
	unsigned got = 0;
	pthread_mutex_lock(&c->lock);
	while (got < n) {
		struct span *s = c->head;
		if (!s) {
			pthread_mutex_unlock(&c->lock);
			s = new_small_span(cls);
			pthread_mutex_lock(&c->lock);
			if (!s)
				break;
			list_add(c, s);
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
			list_del(c, s);
	}
	pthread_mutex_unlock(&c->lock);
	count_out((int64_t)(got * size));
	*out = list;
	return got;
}

/* Gives objects back to their spans; spans left empty go back to the page heap. */
static void central_put(unsigned cls, void *list)
{
	struct central *c = &central[cls];
	struct span *empty = NULL;
	int64_t n = 0;
	pthread_mutex_lock(&c->lock);
	while (list) {
		void *o = list;
		list = *(void **)o;
		struct span *s = span_at((uintptr_t)o);
		*(void **)o = s->freelist;
		s->freelist = o;
		s->used--;
		n++;
		if (!s->listed)
			list_add(c, s);
		if (s->used == 0 && c->nspans > 1) {
			list_del(c, s);
			s->next = empty;
			empty = s;
		}
	}
	pthread_mutex_unlock(&c->lock);
	count_out(-n * (int64_t)class_size(cls));
	while (empty) {
		struct span *s = empty;
		empty = s->next;
		pages_free(s);
	}
}

/* ---------- per-thread caches ---------- */

enum { TC_NEW = 0, TC_LIVE, TC_DEAD };
struct tcache {
	void *head[NCLASS];
	uint32_t count[NCLASS];
	int state;
	uint64_t d_mallocs, d_frees; /* not yet added to the global counts */
};
static __thread struct tcache tc;

static _Atomic int64_t g_in_use;
static _Atomic uint64_t g_peak, g_mallocs, g_frees;

/* Bytes out of the central lists and page heap: the program's blocks and what the
 * threads' caches hold (at most two batches a class). Counted on the slow paths
 * only, so the common malloc and free touch no shared line. */
static void count_out(int64_t bytes)
{
	int64_t now = atomic_fetch_add_explicit(&g_in_use, bytes, memory_order_relaxed) + bytes;
	uint64_t peak = atomic_load_explicit(&g_peak, memory_order_relaxed);
	while (bytes > 0 && (uint64_t)now > peak &&
	       !atomic_compare_exchange_weak(&g_peak, &peak, (uint64_t)now))
		;
}

static void flush_counts(struct tcache *t)
{
	atomic_fetch_add_explicit(&g_mallocs, t->d_mallocs, memory_order_relaxed);
	atomic_fetch_add_explicit(&g_frees, t->d_frees, memory_order_relaxed);
	t->d_mallocs = t->d_frees = 0;
}

static void tc_drain(struct tcache *t, unsigned cls, unsigned keep)
{
	void *give = NULL;
	while (t->count[cls] > keep) {
		void *o = t->head[cls];
		t->head[cls] = *(void **)o;
		*(void **)o = give;
		give = o;
		t->count[cls]--;
	}
	if (give)
		central_put(cls, give);
	flush_counts(t);
}

static void thread_exit(void *arg)
{
	struct tcache *t = arg;
	for (unsigned c = 0; c < NCLASS; c++)
		tc_drain(t, c, 0);
	flush_counts(t);
	t->state = TC_DEAD;
}

/* The calling thread's cache, or NULL after its exit handler ran. */
static inline struct tcache *tc_get(void)
{
	if (__builtin_expect(tc.state == TC_LIVE, 1))
		return &tc;
	if (tc.state == TC_DEAD)
		return NULL;
	tc.state = TC_LIVE;
	pthread_setspecific(exit_key, &tc);
	return &tc;
}

/* ---------- small objects ---------- */

/* The slow half of a small malloc: refill the cache from the central list. */
static __attribute__((noinline)) void *small_refill(unsigned cls)
{
	struct tcache *t = tc_get();
	void *list;
	unsigned n = central_take(cls, t ? class_batch(cls) : 1, &list);
	if (n == 0)
		return NULL;
	void *o = list;
	if (t) {
		t->head[cls] = *(void **)o;
		t->count[cls] = n - 1;
		t->d_mallocs++;
		flush_counts(t);
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
		tc.count[cls]--;
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
		central_put(cls, p);
		atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
		return;
	}
	*(void **)p = t->head[cls];
	t->head[cls] = p;
	t->count[cls]++;
	t->d_frees++;
	tc_drain(t, cls, class_batch(cls));
}

static inline void small_free(struct span *s, void *p)
{
	unsigned cls = s->cls;
	uintptr_t off = (uintptr_t)p - s->start;
	if (__builtin_expect((uint32_t)((off * s->recip) >> 32) * (uintptr_t)s->size != off ||
			     (uintptr_t)p >= s->end, 0))
		rt_abort("free(): invalid pointer %p (inside a block)", p);
	if (__builtin_expect(((uintptr_t *)p)[1] == free_key, 0))
		rt_abort("free(): double free of %p", p);
	((uintptr_t *)p)[1] = free_key;
	if (__builtin_expect(tc.state == TC_LIVE && tc.count[cls] < 2u * class_batch(cls), 1)) {
		*(void **)p = tc.head[cls];
		tc.head[cls] = p;
		tc.count[cls]++;
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

static void *big_alloc(size_t size, size_t align, bool *clean)
{
	struct span *s;
	if (size <= MEDIUM_MAX && align <= UNIT_SIZE) {
		size_t np = (size + PAGE_SIZE - 1) >> PAGE_SHIFT;
		s = pages_alloc_run(np, align > PAGE_SIZE ? align >> PAGE_SHIFT : 1, SPAN_MEDIUM);
	} else {
		s = pages_alloc_large(size, align);
	}
	if (!s)
		return NULL;
	if (clean)
		*clean = s->clean;
	count_out((int64_t)span_usable(s));
	atomic_fetch_add_explicit(&g_mallocs, 1, memory_order_relaxed);
	return (void *)s->start;
}

static void *alloc(size_t size, bool *clean)
{
	if (__builtin_expect(atomic_load_explicit(&ready, memory_order_acquire) != 1, 0) &&
	    !rt_init())
		return NULL;
	if (clean)
		*clean = false;
	if (size <= SMALL_MAX)
		return small_alloc(class_of(size ? size : 1));
	return big_alloc(size, PAGE_SIZE, clean);
}

static __attribute__((noinline)) void *malloc_slow(size_t size)
{
	void *p = alloc(size, NULL);
	if (!p)
		errno = ENOMEM;
	return p;
}

/* The common case inline, in a dozen instructions: a small object from this
 * thread's cache. Anything else (an empty cache, a big block, the first call)
 * goes the long way. */
void *rt_malloc(size_t size)
{
	if (__builtin_expect(size <= SMALL_MAX, 1) &&
	    __builtin_expect(atomic_load_explicit(&ready, memory_order_acquire) == 1, 1)) {
		void *o = tc_pop(class_of(size ? size : 1));
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
		rt_verbose(1, "ignoring a pointer from outside the heap: %p", p);
		return NULL;
	}
	if (!s || s->magic != SPAN_MAGIC || s->kind == SPAN_MMAP ||
	    (s->kind != SPAN_SMALL && (uintptr_t)p != s->start))
		rt_abort("free(): invalid pointer %p", p);
	return s;
}

static __attribute__((noinline)) void big_free(void *p)
{
	struct span *s = block_span(p);
	if (!s)
		return;
	if (s->kind == SPAN_SMALL) {
		small_free(s, p);
		return;
	}
	count_out(-(int64_t)span_usable(s));
	atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
	pages_free(s);
}

void rt_free(void *p)
{
	uintptr_t a = (uintptr_t)p;
	/* The common case in a few loads: a small object on a page of the heap. */
	uintptr_t top = __atomic_load_n(&heap_top, __ATOMIC_RELAXED);
	if (__builtin_expect(a - heap_base < top - heap_base, 1)) {
		struct span *s = span_at(a);
		if (__builtin_expect(s && s->kind == SPAN_SMALL && s->magic == SPAN_MAGIC, 1)) {
			small_free(s, p);
			return;
		}
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
	return s ? span_usable(s) : 0;
}

void *rt_realloc(void *p, size_t size)
{
	if (!p)
		return rt_malloc(size);
	if (size == 0) {
		rt_free(p); /* as glibc does */
		return NULL;
	}
	struct span *s = block_span(p);
	if (!s) {
		errno = ENOMEM; /* not ours: we cannot know its size */
		return NULL;
	}
	size_t have = span_usable(s);
	if (s->kind == SPAN_LARGE && size > MEDIUM_MAX) {
		size_t before = have;
		if (pages_resize_large(s, size)) {
			count_out((int64_t)span_usable(s) - (int64_t)before);
			return (void *)s->start;
		}
	} else if (size <= have && size >= have / 2) {
		return p;
	}
	void *q = rt_malloc(size);
	if (!q)
		return NULL;
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
	if (size <= SMALL_MAX && align <= PAGE_SIZE) {
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
		p = big_alloc(size ? size : 1, align, NULL);
	}
	if (!p)
		errno = ENOMEM;
	return p;
}

/* ---------- fork ---------- */

static void fork_prepare(void)
{
	for (unsigned c = 0; c < NCLASS; c++)
		pthread_mutex_lock(&central[c].lock);
	pages_lock();
	pages_fork_prepare();
}

static void fork_unlock(void)
{
	pages_unlock();
	for (unsigned c = NCLASS; c-- > 0;)
		pthread_mutex_unlock(&central[c].lock);
}

static void fork_parent(void)
{
	int e = errno;
	pages_fork_parent();
	fork_unlock();
	errno = e;
}

static void fork_child(void)
{
	int e = errno;
	pages_fork_child();
	fork_unlock();
	errno = e;
}

/* ---------- stats ---------- */

void rt_stats_get(struct rt_stats *out)
{
	memset(out, 0, sizeof *out);
	flush_counts(&tc);
	int64_t in_use = atomic_load(&g_in_use);
	out->in_use = in_use > 0 ? (uint64_t)in_use : 0;
	out->peak_in_use = atomic_load(&g_peak);
	out->mallocs = atomic_load(&g_mallocs);
	out->frees = atomic_load(&g_frees);
	if (atomic_load(&ready) == 1)
		pages_stats(out);
}
