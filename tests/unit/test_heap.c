/* test_heap.c - the runtime allocator called directly (rt_*), on the real kernel, so
 * that it also runs under ASan/UBSan: sizes, alignment, realloc by moving pages,
 * units given back whole, dense packing, calloc, double free, threads and fork. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "life.h"
#include "malloc/central.h"
#include "malloc/malloc.h"
#include "pageheap/pageheap.h"
#include "runtime.h"
#include "runtime/common/xorshift.h"

#define MB (1ul << 20)

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 509)
		p[i] = (unsigned char)(seed + i);
	p[n - 1] = (unsigned char)seed;
}

static bool check_fill(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i += 509)
		if (p[i] != (unsigned char)(seed + i))
			return false;
	return p[n - 1] == (unsigned char)seed;
}

static uint64_t units_now(void)
{
	struct rt_stats st;
	rt_stats_get(&st);
	uint64_t n = 0;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		n += st.units[b];
	return n;
}

static void test_sizes(void)
{
	CHECK(rt_init());
	for (size_t n = 1; n <= 3 * MB; n = n < 64 ? n + 1 : n * 5 / 4) {
		unsigned char *p = rt_malloc(n);
		CHECK(p != NULL);
		if (!p)
			return;
		CHECK_EQ((uintptr_t)p % 16, 0);
		CHECK(rt_usable_size(p) >= n);
		fill(p, n, (unsigned)n);
		CHECK(check_fill(p, n, (unsigned)n));
		rt_free(p);
	}
	void *z = rt_malloc(0);
	CHECK(z != NULL);
	rt_free(z);
	rt_free(NULL);
}

/* Every size up to SMALL_MAX gets the smallest class that holds it (size 0: class
 * 0), classes are multiples of 16; and free's check of an offset in a span, with
 * one multiply, agrees with off % size == 0 for every offset of every class's span. */
static void test_size_classes(void)
{
	CHECK(rt_init());
	int bad_class = 0, bad_check = 0;
	for (size_t n = 0; n <= SMALL_MAX; n++) {
		unsigned c = class_of(n);
		if (c >= NCLASS || class_size(c) < n || (c > 0 && class_size(c - 1) >= n))
			bad_class++;
	}
	/* free's check from a page's info: a span's origin anywhere, its offset in the
	 * range wrapping past 2^32 too; and a page of no small span passes nothing */
	const uintptr_t origins[] = { heap_hot.base + PAGE_SIZE, heap_hot.base + (1ull << 32) - PAGE_SIZE };
	int bad_info = 0;
	for (unsigned c = 0; c < NCLASS; c++) {
		const struct class_info *ci = &class_info[1 + c];
		if (ci->size % 16 || ci->limit % ci->size || ci->limit > class_pages(c) * PAGE_SIZE)
			bad_class++;
		for (uint32_t off = 0; off < class_pages(c) * PAGE_SIZE; off++)
			bad_check += (off * ci->divisor <= ci->divisor - 1) != (off % ci->size == 0);
		for (unsigned i = 0; i < sizeof origins / sizeof *origins; i++) {
			uint64_t info = small_info(c, origins[i]);
			bad_info += info_class(info) != c || info_check(info) != ci;
			for (uint32_t off = 0; off < class_pages(c) * PAGE_SIZE + 64; off += 8) {
				uintptr_t a = origins[i] - heap_hot.base + off;
				bad_info += info_fits(info, a) != (off % ci->size == 0 && off < ci->limit);
				bad_info += info_fits(0, a);
			}
		}
	}
	CHECK_EQ(bad_class, 0);
	CHECK_EQ(bad_check, 0);
	CHECK_EQ(bad_info, 0);
}

static void test_errno_kept(void)
{
	errno = 4242;
	void *a = rt_malloc(100), *b = rt_malloc(300000), *c = rt_malloc(5 * MB);
	void *d = rt_calloc(10, 10), *e = rt_memalign(4096, 10);
	a = rt_realloc(a, 5000);
	rt_free(a);
	rt_free(b);
	rt_free(c);
	rt_free(d);
	rt_free(e);
	CHECK_EQ(errno, 4242);
	errno = 0;
	CHECK(rt_malloc(SIZE_MAX - 4096) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(rt_calloc(SIZE_MAX / 2, 3) == NULL);
	CHECK_EQ(errno, ENOMEM);
}

static void test_alignment(void)
{
	for (size_t al = 32; al <= (4ul << 30); al *= 2) {
		size_t sizes[] = { 1, al / 2 + 1, al + 5, 3 * MB };
		for (size_t i = 0; i < 4; i++) {
			unsigned char *p = rt_memalign(al, sizes[i]);
			CHECK(p != NULL);
			if (!p)
				continue;
			CHECK_EQ((uintptr_t)p % al, 0);
			CHECK(rt_usable_size(p) >= sizes[i]);
			p[0] = 1;
			p[sizes[i] - 1] = 2;
			rt_free(p);
		}
	}
	errno = 0;
	CHECK(rt_memalign(48, 10) == NULL); /* not a power of two */
	CHECK_EQ(errno, EINVAL);
}

/* A large block (16 MiB or more) that cannot grow in place moves its pages (no
 * copy); one that can grows where it is; a smaller one is copied (the units it
 * leaves stay resident for the next block). */
static void test_realloc_large(void)
{
	struct rt_stats st;
	unsigned char *small = rt_malloc(4 * MB);
	unsigned char *small_blocker = rt_malloc(2 * MB);
	CHECK(small && small_blocker);
	if (!small || !small_blocker)
		return;
	fill(small, 4 * MB, 3);
	rt_stats_get(&st);
	uint64_t moves = st.mremaps;
	unsigned char *copied = rt_realloc(small, 8 * MB);
	rt_stats_get(&st);
	CHECK(copied != NULL && st.mremaps == moves);
	CHECK(copied && check_fill(copied, 4 * MB, 3));
	rt_free(copied);
	rt_free(small_blocker);

	unsigned char *p = rt_malloc(16 * MB);
	/* A block right after p (the lowest place that makes the fewest units resident
	 * is there, on a heap that held only the blocks above: this test runs first; or
	 * past the gaps below): the move below is exercised. */
	static unsigned char *gaps[64];
	unsigned ngaps = 0;
	unsigned char *blocker = rt_malloc(4 * MB);
	while (p && blocker && blocker != p + 16 * MB && ngaps < 64) {
		gaps[ngaps++] = blocker;
		blocker = rt_malloc(4 * MB);
	}
	CHECK(p && blocker);
	if (!p || !blocker)
		return;
	fill(p, 16 * MB, 5);
	rt_stats_get(&st);
	moves = st.mremaps;
	bool after = blocker == p + 16 * MB;
	CHECK(after);
	unsigned char *q = rt_realloc(p, 64 * MB);
	CHECK(q != NULL);
	rt_stats_get(&st);
	if (after) {
		CHECK(q != p);
		CHECK_EQ(st.mremaps, moves + 1);
	}
	CHECK(check_fill(q, 16 * MB, 5));
	q[64 * MB - 1] = 9;
	rt_free(blocker);
	/* now the units after q are free (or past the frontier): grows in place */
	unsigned char *r = rt_realloc(q, 96 * MB);
	CHECK(r == q);
	CHECK(check_fill(r, 16 * MB, 5));
	CHECK_EQ(r[64 * MB - 1], 9);
	/* shrinking stays in place and gives units back */
	uint64_t units = units_now();
	unsigned char *s = rt_realloc(r, 20 * MB);
	CHECK(s == r);
	CHECK(units_now() < units);
	CHECK(check_fill(s, 16 * MB, 5));
	rt_free(s);
	while (ngaps)
		rt_free(gaps[--ngaps]);
}

/* Emptied units go back to the kernel whole; the cache of empty units stays small
 * (16 units when little is in use). */
static void test_units_given_back(void)
{
	enum { N = 640 };
	static void *b[N];
	struct rt_stats st;
	uint64_t before = units_now();
	rt_stats_get(&st);
	uint64_t released = st.released_units;
	for (int i = 0; i < N; i++) {
		b[i] = rt_malloc(100 * 1024);
		CHECK(b[i] != NULL);
		if (b[i])
			fill(b[i], 100 * 1024, (unsigned)i);
	}
	uint64_t during = units_now();
	/* dense: 64000 KiB fits in 32 units; allow a few partly used */
	CHECK(during - before >= 31);
	CHECK(during - before <= 34);
	for (int i = 0; i < N; i++) {
		CHECK(check_fill(b[i], 100 * 1024, (unsigned)i));
		rt_free(b[i]);
	}
	rt_stats_get(&st);
	/* (Two units may stay: one holds the fitted blocks' kept empty chunk, the other
	 * the chunk they grew in last, down to its step; both of the objects' tier.) */
	CHECK(units_now() <= before + 2);
	CHECK(st.released_units >= released + 14);
}

/* Spans of small objects and fitted chunks never share a unit with a block's run:
 * freed, a block gives its unit back whole instead of leaving it held by a span or a
 * chunk (the free tail of a block's unit is where they went before). Blocks of 448
 * pages leave tails of 64 free pages, a new chunk's length: the best fit for it. */
static void test_objects_apart_from_blocks(void)
{
	enum { N = 1500, K = 8 };
	static void *o[N];
	unsigned char *b[K];
	size_t len = 448 * 4096;
	uintptr_t u0[K], u1[K];
	for (int k = 0; k < K; k++) {
		b[k] = rt_malloc(len);
		CHECK(b[k] != NULL);
		if (!b[k])
			return;
		u0[k] = (uintptr_t)b[k] >> 21;
		u1[k] = ((uintptr_t)b[k] + len - 1) >> 21;
	}
	size_t near = 0;
	for (int i = 0; i < N; i++) {
		/* new spans of objects of a few classes, and fitted blocks (more than
		 * one chunk grown to its longest holds) */
		o[i] = rt_malloc(i % 4 == 0 ? 3000 : i % 4 == 1 ? 700 : i % 4 == 2 ? 90 : 100000);
		CHECK(o[i] != NULL);
		uintptr_t u = (uintptr_t)o[i] >> 21;
		for (int k = 0; k < K; k++)
			near += u >= u0[k] && u <= u1[k];
	}
	CHECK(near == 0);
	for (int k = 0; k < K; k++)
		rt_free(b[k]);
	for (int i = 0; i < N; i++)
		rt_free(o[i]);
}

static void test_calloc_zeroes(void)
{
	size_t sizes[] = { 24, 4000, 200000, 5 * MB };
	for (size_t i = 0; i < 4; i++) {
		unsigned char *p = rt_malloc(sizes[i]);
		CHECK(p != NULL);
		if (!p)
			continue;
		memset(p, 0xa5, sizes[i]);
		rt_free(p);
		unsigned char *q = rt_calloc(1, sizes[i]);
		CHECK(q != NULL);
		bool zero = true;
		for (size_t j = 0; q && j < sizes[i]; j++)
			zero = zero && q[j] == 0;
		CHECK(zero);
		rt_free(q);
	}
}

static int child_status(void (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0) {
		signal(SIGABRT, SIG_DFL);
		fn();
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

/* The size of the blocks the children below free wrongly: a small object, then a
 * block fitted to 64 bytes (fit.c), whose freed blocks wait in the thread's cache. */
static size_t bad_size;

static void double_free(void)
{
	void *p = rt_malloc(bad_size);
	rt_free(p);
	rt_free(p);
}

static void inner_pointer(void)
{
	char *p = rt_malloc(300000);
	rt_free(p + 4096);
}

/* Inside a small object: the page info says which class, the offset is no object's. */
static void inner_small_pointer(void)
{
	char *p = rt_malloc(40);
	rt_free(p + 16);
}

/* Inside a fitted block, on a grain of it (fit.c). */
static void inner_fit_pointer(void)
{
	char *p = rt_malloc(9000);
	rt_free(p + 64);
}

static void realloc_freed(void)
{
	void *p = rt_malloc(bad_size);
	rt_free(p);
	p = rt_realloc(p, 2 * bad_size);
	(void)p;
}

/* A thread's first span of a class is short (class_first_pages: two objects or more,
 * not 16 KiB or more), each next one twice as long up to a whole span; free checks a
 * pointer into the short span's head, before its first object, as inside a block (its
 * page info goes on from where a whole span's would be). */
#define FIRST_SPANS_OBJECTS 96
static uintptr_t short_head;
static void *short_kept; /* the span's first object, kept so that the span stays */

static void *first_spans(void *arg)
{
	size_t n = (size_t)(uintptr_t)arg, bad = 0, spans = 0, want = 0;
	bool doubled = true, whole = false;
	uintptr_t last = 0;
	unsigned c = class_of(n);
	void *o[FIRST_SPANS_OBJECTS];
	for (int i = 0; i < FIRST_SPANS_OBJECTS; i++) {
		o[i] = rt_malloc(n);
		bool in_range;
		struct span *s = o[i] ? pages_lookup(o[i], &in_range) : NULL;
		if (!s || s->kind != SPAN_SMALL || s->cls != c) {
			bad++;
			continue;
		}
		memset(o[i], i + 1, n);
		if (s->start == last)
			continue;
		/* a new span: the first short, each after twice the one before, or whole */
		last = s->start;
		want = spans++ ? (2 * want < class_pages(c) ? 2 * want : class_pages(c))
			       : class_first_pages(c);
		doubled = doubled && s->npages == want && s->first == class_pages(c) - s->npages;
		whole = whole || (s->first == 0 && s->npages == class_pages(c));
		if (i == 0)
			short_head = s->start;
	}
	for (int i = 0; i < FIRST_SPANS_OBJECTS; i++) {
		if (o[i] && ((unsigned char *)o[i])[n - 1] != i + 1)
			bad++;
		if (i > 0)
			rt_free(o[i]);
	}
	short_kept = o[0];
	return (void *)(uintptr_t)(bad ? 0 : doubled + whole * 2 + (spans > 2) * 4);
}

static void free_short_head(void)
{
	rt_free((void *)short_head);
}

static void test_first_span_short(void)
{
	/* (classes no test before uses: a thread adopts the spans of exited threads
	 * before it makes one) */
	const size_t sizes[] = { 2950, 600 };
	for (int k = 0; k < 2; k++) {
		unsigned c = class_of(sizes[k]);
		CHECK(class_first_pages(c) < class_pages(c));
		pthread_t t;
		void *r;
		pthread_create(&t, NULL, first_spans, (void *)(uintptr_t)sizes[k]);
		pthread_join(t, &r);
		CHECK_EQ((uintptr_t)r, 7); /* short first spans doubling, whole ones after */
		size_t skip = (size_t)(class_pages(c) - class_first_pages(c)) * PAGE_SIZE;
		if (skip % class_size(c)) { /* the head is no object's */
			int st = child_status(free_short_head);
			CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
		}
		rt_free(short_kept);
	}
}

static void test_bad_frees_abort(void)
{
	void (*const bad[])(void) = { double_free, inner_pointer, inner_small_pointer,
				      inner_fit_pointer, realloc_freed };
	const size_t sizes[] = { 100, 9000 };
	for (size_t k = 0; k < 2; k++) {
		bad_size = sizes[k];
		for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
			int st = child_status(bad[i]);
			CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
		}
	}
}

/* A write after free into the first word of a freed small object, while it waits in
 * the thread's cache or (a batch more freed than its magazine holds once grown: the
 * first went back) on its span's list: no malloc of its class returns the address written. In the cache the write
 * changes nothing malloc reads (the cache holds the objects' addresses, not links in
 * them: malloc.c), and the next malloc gives the written object itself back; on the
 * span the child aborts at the check of the link (central.c) instead. (The second
 * object stays, and with it the span, which would otherwise go back to the page heap
 * empty, the write with it.) */
static char uaf_target[256] __attribute__((aligned(64)));
static size_t uaf_size;
static unsigned uaf_which; /* 0: the last freed (in the cache), 1: the first (on the span) */

static void freed_link_written(void)
{
	unsigned c = class_of(uaf_size), n = malloc_mag_most(c) + class_batch(c) + 2;
	void **o = malloc(n * sizeof *o); /* (glibc's: the test's own bookkeeping) */
	if (!o)
		_exit(1);
	for (unsigned i = 0; i < n; i++)
		o[i] = rt_malloc(uaf_size);
	for (unsigned i = 0; i < n; i++)
		if (i != 1)
			rt_free(o[i]);
	uintptr_t *w = uaf_which ? o[0] : o[n - 1];
	__asm__ volatile("" : "+r"(w));
	w[0] = (uintptr_t)uaf_target;
	for (unsigned i = 0; i < 2 * n; i++) {
		char *q = rt_malloc(uaf_size);
		if (q >= uaf_target && q < uaf_target + sizeof uaf_target)
			_exit(3);
		if (i == 0 && !uaf_which && q != (char *)w)
			_exit(4);
	}
	_exit(0);
}

static void test_freed_link_written_not_followed(void)
{
	const size_t sizes[] = { 16, 48, 200, 1024, 4000 };
	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		for (uaf_which = 0; uaf_which < 2; uaf_which++) {
			uaf_size = sizes[k];
			int st = child_status(freed_link_written);
			if (uaf_which)
				CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
			else
				CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
	}
}

/* Runs of small mallocs, then their frees in a random order, of one size a round,
 * past what a magazine holds both ways (it refills from the central lists, and
 * gives its older batch back): every 16 steps the thread's magazines and the central
 * lists recompute; no block's bytes change while it is in use (two blocks given out
 * at once would write each other's); a child forked with full magazines finds them
 * whole and allocates from them. */
static uint64_t mag_x = 88172645463325252ull;

static unsigned mag_next(unsigned n)
{
	return (unsigned)(xorshift64(&mag_x) % n);
}

static void mag_forked(void)
{
	if (malloc_cache_check() || central_check())
		_exit(1);
	for (int i = 0; i < 1200; i++)
		if (!rt_malloc(100))
			_exit(2);
	_exit(malloc_cache_check() ? 3 : 0);
}

static void test_magazines_consistent(void)
{
	enum { MAX = 1200 };
	static unsigned char *live[MAX];
	const size_t sizes[] = { 16, 100, 1000, 3000, 4096, 40000 };
	unsigned bad = 0, steps = 0;
	const char *why = NULL;
	for (unsigned round = 0; round < 36 && !why; round++) {
		size_t len = sizes[round % 6];
		unsigned n = 1 + mag_next(MAX);
		for (unsigned i = 0; i < n; i++) {
			live[i] = rt_malloc(len);
			CHECK(live[i] != NULL);
			fill(live[i], len, i);
			if (++steps % 16 == 0 && !why && !(why = malloc_cache_check()))
				why = central_check();
		}
		if (round == 7) {
			int st = child_status(mag_forked);
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		}
		for (unsigned left = n; left > 0; left--) {
			unsigned i = mag_next(left);
			if (!check_fill(live[i], len, i))
				bad++;
			rt_free(live[i]);
			if (i != left - 1) { /* (the last takes its place, and its seed) */
				live[i] = live[left - 1];
				if (!check_fill(live[i], len, left - 1))
					bad++;
				fill(live[i], len, i);
			}
			if (++steps % 16 == 0 && !why && !(why = malloc_cache_check()))
				why = central_check();
		}
	}
	if (why)
		fprintf(stderr, "test_magazines_consistent: %s\n", why);
	CHECK(why == NULL);
	CHECK_EQ(bad, 0);
}

/* Bytes a program never wrote hold what the pages held before: on reused pages, a
 * freed object's mark. realloc copies them into the new block, a small object or a
 * fitted block, whose usable size and free must not take it for freed (torture
 * aborted so, 1 run in ~60). The children's block starts with the mark its pages would
 * hold had a freed object been there. */
static void stale_mark_copied(void)
{
	uintptr_t *p = rt_malloc(300000); /* (a page run: nothing of it is cleared) */
	p[0] = 42;
	p[1] = free_mark(p);
	uintptr_t *q = rt_realloc(p, bad_size);
	if (!q || q == p || q[0] != 42 || rt_usable_size(q) < bad_size)
		_exit(1);
	rt_free(q);
}

static void test_stale_mark_not_freed(void)
{
	const size_t sizes[] = { 100, 9000 };
	for (size_t k = 0; k < 2; k++) {
		bad_size = sizes[k];
		int st = child_status(stale_mark_copied);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

/* A block grown a page at a time from 68 KiB to 1 MiB keeps its bytes, and moves
 * seldom: in place where the pages after it are free, else with 1/8 room to grow
 * (moving at each page would be 240 moves; 1.125^23 > 15). */
static void test_realloc_grows_seldom_moves(void)
{
	size_t n = 68 << 10;
	unsigned char *p = rt_malloc(n);
	CHECK(p != NULL);
	fill(p, n, 7);
	unsigned moves = 0;
	bool same = true;
	for (; n + 4096 <= MB; n += 4096) {
		unsigned char *q = rt_realloc(p, n + 4096);
		CHECK(q != NULL);
		if (!q)
			return;
		for (size_t i = 0; i < n - 1; i += 509) /* n - 1 holds the seed */
			same = same && q[i] == (unsigned char)(7 + i);
		same = same && q[n - 1] == 7;
		moves += q != p;
		p = q;
		fill(p, n + 4096, 7);
	}
	CHECK(same);
	CHECK(moves <= 23);
	printf("  %u moves in 240 growths\n", moves);
	rt_free(p);
}

/* Two threads' small objects never share a cache line: a thread takes objects only
 * from spans of its own, even those another thread freed next to its live ones. */
#define LINE_OBJS 4000
static char *line_objs[2][LINE_OBJS];
static pthread_barrier_t line_bar;

static void *line_thread(void *arg)
{
	long me = (long)arg;
	if (me == 0) {
		for (int i = 0; i < LINE_OBJS; i++)
			line_objs[0][i] = rt_malloc(32);
		for (int i = 0; i < LINE_OBJS; i += 2) { /* every other one back */
			rt_free(line_objs[0][i]);
			line_objs[0][i] = NULL;
		}
	}
	pthread_barrier_wait(&line_bar);
	if (me == 1)
		for (int i = 0; i < LINE_OBJS; i++)
			line_objs[1][i] = rt_malloc(32);
	pthread_barrier_wait(&line_bar);
	return NULL;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static void test_threads_share_no_line(void)
{
	pthread_t t[2];
	pthread_barrier_init(&line_bar, NULL, 2);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, line_thread, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&line_bar);
	static uintptr_t lines0[LINE_OBJS];
	size_t n0 = 0;
	for (int i = 0; i < LINE_OBJS; i++)
		if (line_objs[0][i])
			lines0[n0++] = (uintptr_t)line_objs[0][i] >> 6;
	qsort(lines0, n0, sizeof *lines0, cmp_ptr);
	int shared = 0;
	for (int i = 0; i < LINE_OBJS; i++) {
		uintptr_t l = (uintptr_t)line_objs[1][i] >> 6;
		shared += bsearch(&l, lines0, n0, sizeof *lines0, cmp_ptr) != NULL;
	}
	CHECK_EQ(shared, 0);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < LINE_OBJS; i++)
			rt_free(line_objs[k][i]);
}

/* The spans of a thread that exited are adopted by the next thread that needs the
 * class, instead of new spans: memory of exited threads is not stranded. */
#define ORPHAN_OBJS 300
static char *orphan_objs[ORPHAN_OBJS];

static void *orphan_maker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ORPHAN_OBJS; i++)
		orphan_objs[i] = rt_malloc(2900);
	for (int i = 0; i < ORPHAN_OBJS; i += 2) {
		rt_free(orphan_objs[i]);
		orphan_objs[i] = NULL;
	}
	return NULL;
}

static bool in_orphan_spans(const void *p)
{
	for (int i = 1; i < ORPHAN_OBJS; i += 2)
		if (pages_lookup(p, &(bool){ 0 }) == pages_lookup(orphan_objs[i], &(bool){ 0 }))
			return true;
	return false;
}

static void *orphan_taker(void *arg)
{
	int *adopted = arg;
	for (int i = 0; i < ORPHAN_OBJS / 2; i++) {
		void *p = rt_malloc(2900);
		*adopted += in_orphan_spans(p);
		rt_free(p);
	}
	return NULL;
}

static void test_exited_threads_spans_adopted(void)
{
	pthread_t t;
	int adopted = 0;
	pthread_create(&t, NULL, orphan_maker, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, orphan_taker, &adopted);
	pthread_join(t, NULL);
	CHECK(adopted > 0);
	printf("  %d of %d objects from the exited thread's spans\n", adopted, ORPHAN_OBJS / 2);
	for (int i = 1; i < ORPHAN_OBJS; i += 2)
		rt_free(orphan_objs[i]);
}

/* More threads at once than there are slots (256): the threads without one share
 * the orphans, while the others adopt and leave spans; every byte stays right. */
#define MANY_THREADS 300
static _Atomic int many_arrived, many_target = MANY_THREADS;

/* Waits until every thread started has come here for the round'th time (the
 * number started is known only once they all are: a barrier could wait forever). */
static void many_wait(int round)
{
	atomic_fetch_add(&many_arrived, 1);
	while (atomic_load(&many_arrived) < atomic_load(&many_target) * (round + 1))
		sched_yield();
}

static void *many_thread(void *arg)
{
	long me = (long)arg;
	long *bad = calloc(1, sizeof *bad);
	unsigned char *keep[64];
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 64; i++) {
			size_t n = 16 + (size_t)((me * 131 + i * 977) % 3000);
			keep[i] = rt_malloc(n);
			if (!keep[i]) {
				(*bad)++;
				continue;
			}
			memset(keep[i], (int)(me + i), n);
		}
		many_wait(round); /* all alive at once */
		for (int i = 0; i < 64; i++) {
			size_t n = 16 + (size_t)((me * 131 + i * 977) % 3000);
			if (keep[i] && (keep[i][0] != (unsigned char)(me + i) ||
					keep[i][n - 1] != (unsigned char)(me + i)))
				(*bad)++;
			rt_free(keep[i]);
		}
	}
	return bad;
}

static void test_more_threads_than_slots(void)
{
	static pthread_t t[MANY_THREADS];
	int started = 0;
	long bad = 0;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	for (long i = 0; i < MANY_THREADS; i++)
		started += pthread_create(&t[started], &attr, many_thread, (void *)i) == 0;
	atomic_store(&many_target, started);
	CHECK_EQ(started, MANY_THREADS);
	for (int i = 0; i < started; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += *(long *)r;
		free(r);
	}
	pthread_attr_destroy(&attr);
	CHECK_EQ(bad, 0);
}

/* Threads come and go while others free what they made: blocks pass through shared
 * slots, so frees land on spans whose owner is alive, leaving or gone, and spans
 * are orphaned and adopted all the while; every block keeps its bytes. */
#define SWAP_SLOTS 2048
#define SWAP_THREADS 24
static unsigned char *_Atomic swap_slot[SWAP_SLOTS];

static size_t swap_size(uint64_t tag)
{
	return 16 + (size_t)(tag % 3000);
}

static bool swap_ok(const unsigned char *p, uint64_t tag)
{
	size_t n = swap_size(tag);
	uint64_t t;
	memcpy(&t, p, sizeof t);
	return t == tag && p[n - 1] == (unsigned char)tag;
}

static void *swap_thread(void *arg)
{
	long *bad = arg;
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull | 1;
	for (int i = 0; i < 20000; i++) {
		uint64_t tag = xorshift64(&x);
		size_t n = swap_size(tag);
		unsigned char *p = rt_malloc(n);
		if (!p) {
			(*bad)++;
			continue;
		}
		memset(p, (unsigned char)tag, n);
		memcpy(p, &tag, sizeof tag);
		unsigned char *old = atomic_exchange(&swap_slot[(x >> 40) % SWAP_SLOTS], p);
		if (old) {
			uint64_t t;
			memcpy(&t, old, sizeof t);
			*bad += !swap_ok(old, t);
			rt_free(old);
		}
	}
	return NULL;
}

static void test_threads_come_and_go(void)
{
	pthread_t t[SWAP_THREADS];
	static long bad[SWAP_THREADS];
	/* Four at a time, each next one started before the oldest is joined. */
	for (int i = 0; i < SWAP_THREADS; i++) {
		CHECK_EQ(pthread_create(&t[i], NULL, swap_thread, &bad[i]), 0);
		if (i >= 3)
			pthread_join(t[i - 3], NULL);
	}
	for (int i = SWAP_THREADS - 3; i < SWAP_THREADS; i++)
		pthread_join(t[i], NULL);
	long total = 0;
	for (int i = 0; i < SWAP_THREADS; i++)
		total += bad[i];
	for (int i = 0; i < SWAP_SLOTS; i++) {
		unsigned char *p = atomic_exchange(&swap_slot[i], NULL);
		if (p) {
			uint64_t tag;
			memcpy(&tag, p, sizeof tag);
			total += !swap_ok(p, tag);
			rt_free(p);
		}
	}
	CHECK_EQ(total, 0);
}

/* In a forked child, the spans of the parent's other threads are the child's to use. */
static void *fork_owner(void *arg)
{
	pthread_barrier_t *bar = arg;
	orphan_maker(NULL);
	pthread_barrier_wait(bar);  /* made and half freed */
	pthread_barrier_wait(bar);  /* the parent forked */
	return NULL;
}

static void test_fork_child_adopts_spans(void)
{
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, 2);
	pthread_t t;
	pthread_create(&t, NULL, fork_owner, &bar);
	pthread_barrier_wait(&bar);
	pid_t pid = fork();
	if (pid == 0) {
		int adopted = 0;
		orphan_taker(&adopted);
		_exit(adopted > 0 ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pthread_barrier_wait(&bar);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&bar);
	for (int i = 1; i < ORPHAN_OBJS; i += 2)
		rt_free(orphan_objs[i]);
}

/* Blocks made by one thread and freed by another. */
#define HANDOFF 20000
static void *volatile slots[64];

static void *producer(void *arg)
{
	(void)arg;
	for (int i = 0; i < HANDOFF; i++) {
		size_t n = 16 + (size_t)(i * 7919) % 5000;
		unsigned char *p = rt_malloc(n);
		p[0] = (unsigned char)n;
		void *expected = NULL;
		while (!__atomic_compare_exchange_n(&slots[i % 64], &expected, p, false,
						    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			expected = NULL;
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long *bad = arg;
	for (int i = 0; i < HANDOFF; i++) {
		unsigned char *p;
		while (!(p = __atomic_exchange_n(&slots[i % 64], NULL, __ATOMIC_ACQUIRE)))
			;
		size_t n = 16 + (size_t)(i * 7919) % 5000;
		if (p[0] != (unsigned char)n)
			(*bad)++;
		rt_free(p);
	}
	return NULL;
}

static void test_cross_thread_free(void)
{
	pthread_t a, b;
	long bad = 0;
	struct rt_stats st0, st1;
	rt_stats_get(&st0);
	pthread_create(&a, NULL, producer, NULL);
	pthread_create(&b, NULL, consumer, &bad);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	CHECK_EQ(bad, 0);
	rt_stats_get(&st1);
	/* both threads handed their caches back: everything made was freed */
	CHECK_EQ(st1.mallocs - st0.mallocs, st1.frees - st0.frees);
}

/* A burst of 1600 objects of 16 bytes, malloc'd then all freed, twice, in a thread of
 * its own (its magazines start at two batches): the magazine grows to hold them all,
 * a batch at a time, and the second burst leaves it as full (no batch taken or given
 * back); objects freed by a
 * thread that mallocs none of their class grow nothing (they go back to their spans
 * past two batches). */
enum { BURST = 1600 };
static void *burst[BURST];

static void *burst_thread(void *arg)
{
	unsigned c = class_of(16), *held = arg;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < BURST; i++)
			burst[i] = rt_malloc(16);
		for (int i = 0; i < BURST; i++)
			rt_free(burst[i]);
		held[round] = malloc_mag_count(c);
	}
	held[2] = malloc_cache_check() == NULL;
	return NULL;
}

static void *burst_free_thread(void *arg)
{
	for (int i = 0; i < BURST; i++)
		rt_free(burst[i]);
	*(unsigned *)arg = malloc_mag_count(class_of(16));
	return NULL;
}

static void test_magazine_grows_for_bursts(void)
{
	unsigned c = class_of(16), held[3] = { 0 }, freed_only = 0;
	pthread_t t;
	CHECK(malloc_mag_most(c) >= BURST);
	pthread_create(&t, NULL, burst_thread, held);
	pthread_join(t, NULL);
	CHECK(held[0] >= BURST); /* (and what its last refill took past the burst) */
	CHECK_EQ(held[1], held[0]);
	CHECK(held[2]);
	for (int i = 0; i < BURST; i++)
		burst[i] = rt_malloc(16);
	pthread_create(&t, NULL, burst_free_thread, &freed_only);
	pthread_join(t, NULL);
	CHECK(freed_only <= 2 * class_batch(c));
	CHECK(central_check() == NULL);
}

/* Objects one thread mallocs and another frees: past the freeing thread's magazine
 * they wait in the owner's inbox (the freeing thread takes no lock of the owner's),
 * until the owner's next refill puts them back on its spans; once the owner has
 * exited, they go to their spans at once. The lists recompute whole after each step. */
enum { HANDED = 2000 };
static void *handed[HANDED];
static unsigned handed_slot;
static pthread_barrier_t handed_made, handed_freed;

static void *hand_maker(void *arg)
{
	bool stay = arg != NULL;
	for (int i = 0; i < HANDED; i++)
		handed[i] = rt_malloc(16);
	handed_slot = malloc_thread_slot();
	if (!stay)
		return NULL;
	pthread_barrier_wait(&handed_made);
	pthread_barrier_wait(&handed_freed);
	unsigned c = class_of(16), waiting = central_inbox_count(handed_slot, c);
	/* a refill takes them back: more mallocs than its magazine holds */
	unsigned n = malloc_mag_most(c) + 1;
	void **more = malloc(n * sizeof *more); /* (glibc's: the test's own) */
	for (unsigned i = 0; more && i < n; i++)
		more[i] = rt_malloc(16);
	unsigned after = central_inbox_count(handed_slot, c);
	for (unsigned i = 0; more && i < n; i++)
		rt_free(more[i]);
	free(more);
	return (void *)(uintptr_t)(more && waiting > 0 && after == 0 && central_check() == NULL);
}

static void *hand_freer(void *arg)
{
	(void)arg;
	for (int i = 0; i < HANDED; i++)
		rt_free(handed[i]);
	return NULL;
}

static void test_handed_objects_wait_in_inbox(void)
{
	pthread_t a, b;
	void *ok = NULL;
	unsigned c = class_of(16);
	pthread_barrier_init(&handed_made, NULL, 2);
	pthread_barrier_init(&handed_freed, NULL, 2);
	pthread_create(&a, NULL, hand_maker, (void *)1);
	pthread_barrier_wait(&handed_made);
	pthread_create(&b, NULL, hand_freer, NULL);
	pthread_join(b, NULL); /* (its exit gave back its magazine too) */
	CHECK(central_check() == NULL);
	CHECK(central_inbox_count(handed_slot, c) >= HANDED - 2 * class_batch(c));
	pthread_barrier_wait(&handed_freed);
	pthread_join(a, &ok);
	CHECK(ok != NULL);
	/* the maker gone first: its objects go to their spans, its inbox stays empty */
	pthread_create(&a, NULL, hand_maker, NULL);
	pthread_join(a, NULL);
	pthread_create(&b, NULL, hand_freer, NULL);
	pthread_join(b, NULL);
	CHECK_EQ(central_inbox_count(handed_slot, c), 0);
	CHECK(central_check() == NULL);
	pthread_barrier_destroy(&handed_made);
	pthread_barrier_destroy(&handed_freed);
}

static volatile int stop;
static void *churn(void *arg)
{
	(void)arg;
	while (!stop) {
		void *p = rt_malloc(64);
		void *q = rt_malloc(70000);
		rt_free(p);
		rt_free(q);
	}
	return NULL;
}

/* fork while another thread allocates: the child can allocate at once. */
static void test_fork_while_allocating(void)
{
	pthread_t t;
	stop = 0;
	pthread_create(&t, NULL, churn, NULL);
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int j = 0; j < 1000; j++) {
				void *p = rt_malloc((size_t)(j * 37) % 100000 + 1);
				if (!p)
					_exit(1);
				rt_free(p);
			}
			_exit(0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	stop = 1;
	pthread_join(t, NULL);
}

/* pages_hugetlb_into when the kernel refuses the move (the fake kernel refuses every
 * mremap; this one refused some 1 GiB moves with ENOMEM): pages go into a hole at
 * the target directly; a mapping that landed in the hole meanwhile is left alone. */
static void test_hugetlb_into_refused_move(void)
{
	const size_t M2 = 2ul << 20;
	fk_install();
	fk_reset();
	fk_machine_default();
	fk_pool(M2, 8, 8);
	fk_mremap_fail(ENOMEM); /* every move refused */
	void *r;
	CHECK_EQ(fk_os.mmap(NULL, 3 * M2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			    -1, 0, &r), 0);
	uintptr_t at = ((uintptr_t)r + M2 - 1) & ~(M2 - 1);
	CHECK_EQ(fk_os.munmap((void *)at, M2), 0); /* the hole a refused move leaves */
	bool hole = true;
	CHECK_EQ(pages_hugetlb_into(at, M2, false, &hole), 0);
	CHECK(!hole);
	struct fk_map_info mi;
	CHECK(fk_map_find((void *)at, &mi) == 0 && mi.start == at && mi.hpage == M2);
	CHECK_EQ(fk_pool_free(M2), 7); /* the page in place; the first mapping's given back */

	/* Something else is at the target now: it stays, and the caller hears of it. */
	uintptr_t at2 = at + M2;
	void *other;
	CHECK_EQ(fk_os.mmap((void *)at2, M2, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0, &other), 0);
	CHECK(pages_hugetlb_into(at2, M2, false, &hole) < 0);
	CHECK(hole);
	CHECK(fk_map_find((void *)at2, &mi) == 0 && mi.start == at2 && mi.hpage == 0);
	CHECK_EQ(fk_pool_free(M2), 7);
	fk_os.munmap((void *)at, 2 * M2);
	fk_mremap_fail(0);
	fk_uninstall();
}

int main(void)
{
	RUN(test_realloc_large);
	RUN(test_sizes);
	RUN(test_size_classes);
	RUN(test_errno_kept);
	RUN(test_alignment);
	RUN(test_units_given_back);
	RUN(test_objects_apart_from_blocks);
	RUN(test_first_span_short);
	RUN(test_calloc_zeroes);
	RUN(test_bad_frees_abort);
	RUN(test_freed_link_written_not_followed);
	RUN(test_magazines_consistent);
	RUN(test_magazine_grows_for_bursts);
	RUN(test_handed_objects_wait_in_inbox);
	RUN(test_stale_mark_not_freed);
	RUN(test_hugetlb_into_refused_move);
	RUN(test_realloc_grows_seldom_moves);
	RUN(test_threads_share_no_line);
	RUN(test_exited_threads_spans_adopted);
	RUN(test_fork_child_adopts_spans);
	RUN(test_more_threads_than_slots);
	RUN(test_threads_come_and_go);
	RUN(test_cross_thread_free);
	RUN(test_fork_while_allocating);
	return CHECK_DONE();
}
