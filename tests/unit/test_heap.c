/* test_heap.c - the runtime allocator called directly (rt_*), on the real kernel, so
 * that it also runs under ASan/UBSan: sizes, alignment, realloc by moving pages,
 * units given back whole, dense packing, calloc, double free, threads and fork. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "heap.h"

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
	unsigned char *blocker = rt_malloc(4 * MB);
	CHECK(p && blocker);
	if (!p || !blocker)
		return;
	fill(p, 16 * MB, 5);
	rt_stats_get(&st);
	moves = st.mremaps;
	bool after = blocker == p + 16 * MB;
	CHECK(after); /* first fit puts it right after p: the move below is exercised */
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
	CHECK(units_now() <= before + 1);
	CHECK(st.released_units >= released + 14);
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

static void double_free(void)
{
	void *p = rt_malloc(40);
	rt_free(p);
	rt_free(p);
}

static void inner_pointer(void)
{
	char *p = rt_malloc(300000);
	rt_free(p + 4096);
}

static void test_bad_frees_abort(void)
{
	int st = child_status(double_free);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	st = child_status(inner_pointer);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
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

int main(void)
{
	RUN(test_sizes);
	RUN(test_errno_kept);
	RUN(test_alignment);
	RUN(test_realloc_large);
	RUN(test_units_given_back);
	RUN(test_calloc_zeroes);
	RUN(test_bad_frees_abort);
	RUN(test_cross_thread_free);
	RUN(test_fork_while_allocating);
	return CHECK_DONE();
}
