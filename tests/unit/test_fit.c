/* test_fit.c - blocks above 4 KiB and below 128 KiB fitted to 64 bytes (fit.c), through
 * the allocator's entry points on the real kernel: packed end to end, free neighbours
 * joined, resized in place, emptied chunks given back, freed blocks reused from the
 * thread's cache, a write after free harmless, threads and fork (bad pointers:
 * test_heap); fit_check after each step. The tests run in
 * order on one heap: each leaves every fitted block free. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/units.h"
#include "runtime.h"
#include "runtime/common/xorshift.h"

static uint64_t chunk_bytes(void)
{
	uint64_t c, f;
	fit_stats(&c, &f);
	return c;
}

/* Every fitted block is free, once the thread's cache is back in the arena: the
 * chunks hold nothing else. */
static bool all_free(void)
{
	uint64_t c, f;
	fit_cache_flush(false);
	fit_stats(&c, &f);
	return c == f;
}

static size_t fitted(size_t size)
{
	return (size + 63) & ~(size_t)63;
}

static bool intact(const unsigned char *p, size_t n, unsigned char tag)
{
	for (size_t i = 0; i < n; i += 997)
		if (p[i] != tag)
			return false;
	return p[n - 1] == tag;
}

/* Blocks of one size lie end to end, each rounded up to 64 bytes only, and the
 * chunk grows in place under them; freed in any order they leave one chunk of 64
 * pages, all free. */
static void test_packed_end_to_end(void)
{
	enum { N = 60 };
	static unsigned char *p[N];
	CHECK(rt_init());
	for (int i = 0; i < N; i++) {
		p[i] = rt_malloc(8193);
		CHECK(p[i] != NULL);
		if (!p[i])
			return;
		memset(p[i], i + 1, 8193);
		CHECK_EQ(rt_usable_size(p[i]), fitted(8193));
		if (i)
			CHECK_EQ(p[i] - p[i - 1], fitted(8193));
	}
	/* 60 blocks of 8256 B: 121 pages, in a chunk that grew by 64 pages at a time. */
	CHECK(chunk_bytes() <= 192 * 4096);
	CHECK(fit_check() == NULL);
	for (int i = 0; i < N; i++) {
		int k = (i * 37) % N;
		CHECK(intact(p[k], 8193, (unsigned char)(k + 1)));
		rt_free(p[k]);
		const char *why = fit_check();
		if (why)
			printf("  after free %d: %s\n", i, why);
		CHECK(why == NULL);
	}
	CHECK(all_free());
	CHECK_EQ(chunk_bytes(), 64 * 4096);
}

/* Three neighbours freed first, last, middle become one free block, which a block
 * of their three sizes then takes at the first one's place. */
static void test_neighbours_join(void)
{
	CHECK(all_free());
	unsigned char *a = rt_malloc(20000), *b = rt_malloc(20000), *c = rt_malloc(20000);
	CHECK(a && b && c);
	if (!a || !b || !c)
		return;
	CHECK(b == a + fitted(20000) && c == b + fitted(20000));
	rt_free(a);
	rt_free(c);
	fit_cache_flush(false);
	CHECK(fit_check() == NULL);
	rt_free(b);
	CHECK(all_free());
	CHECK(fit_check() == NULL);
	unsigned char *d = rt_malloc(3 * fitted(20000));
	CHECK(d == a);
	rt_free(d);
}

/* realloc grows a block into the free one after it and shrinks it in place; the
 * tail it gives up is the next block's. */
static void test_resized_in_place(void)
{
	CHECK(all_free());
	unsigned char *a = rt_malloc(10000), *b = rt_malloc(10000);
	CHECK(a && b);
	if (!a || !b)
		return;
	memset(a, 7, 10000);
	rt_free(b);
	fit_cache_flush(false);
	unsigned char *g = rt_realloc(a, 30000);
	CHECK(g == a);
	/* (with room for the next growth: 1/16 more, from the free grains after it) */
	size_t room = fitted(30000) + (fitted(30000) >> FIT_ROOM_SHIFT & ~(size_t)63);
	CHECK_EQ(rt_usable_size(g), room);
	CHECK(intact(g, 10000, 7));
	CHECK(rt_realloc(g, room - 1) == g); /* within the room: kept as it is */
	CHECK_EQ(rt_usable_size(g), room);
	CHECK(fit_check() == NULL);
	memset(g, 9, 30000);
	unsigned char *s = rt_realloc(g, 12000);
	CHECK(s == a);
	CHECK_EQ(rt_usable_size(s), fitted(12000));
	CHECK(intact(s, 12000, 9));
	unsigned char *n = rt_malloc(5000);
	CHECK(n == a + fitted(12000));
	CHECK(fit_check() == NULL);
	/* Out of the fitted sizes: moved, contents kept. */
	unsigned char *big = rt_realloc(s, 300000);
	CHECK(big != NULL && big != a);
	if (big)
		CHECK(intact(big, 12000, 9));
	rt_free(big);
	rt_free(n);
	CHECK(fit_check() == NULL);
	CHECK(all_free());
}

/* A chunk grown to a few MiB shrinks back when its blocks go; a second empty chunk
 * is given back whole, one is kept. */
static void test_chunks_given_back(void)
{
	enum { N = 64 };
	static unsigned char *p[N];
	CHECK(all_free());
	for (int i = 0; i < N; i++) {
		p[i] = rt_malloc(100000);
		CHECK(p[i] != NULL);
		if (!p[i])
			return;
		memset(p[i], 1, 100000);
	}
	uint64_t grown = chunk_bytes();
	CHECK(grown >= N * fitted(100000));
	CHECK(grown <= N * fitted(100000) + 2 * 64 * 4096 + 16 * 4096 * 64);
	for (int i = N; i-- > 0;)
		rt_free(p[i]);
	CHECK(fit_check() == NULL);
	CHECK(all_free());
	CHECK(chunk_bytes() <= 64 * 4096);
	/* aligned blocks of these sizes are fitted too */
	void *q = rt_memalign(64, 50000);
	CHECK(q != NULL && ((uintptr_t)q & 63) == 0);
	CHECK_EQ(rt_usable_size(q), fitted(50000));
	rt_free(q);
}

/* A block freed waits in the thread's cache and comes back to the next malloc of a
 * size it holds, with no change in the arena; one too long for the size stays. */
static void test_cache_reuses(void)
{
	CHECK(all_free());
	unsigned char *a = rt_malloc(20000);
	CHECK(a != NULL);
	if (!a)
		return;
	uint64_t c0, f0, c1, f1;
	rt_free(a);
	fit_stats(&c0, &f0);
	unsigned char *b = rt_malloc(19990);
	fit_stats(&c1, &f1);
	CHECK(b == a);
	CHECK(c1 == c0 && f1 == f0);
	CHECK_EQ(rt_usable_size(b), fitted(20000));
	rt_free(b);
	unsigned char *c = rt_malloc(9000); /* (20032 is more than an eighth over) */
	CHECK(c != NULL && c != a);
	rt_free(c);
	CHECK(all_free());
	CHECK(fit_check() == NULL);
}

/* The cache gives the block that fits best, of the size's class or the next one
 * (no more than an eighth over), and holds 8 blocks a class: a 9th freed goes back to
 * the arena. Sizes in grains of 64 bytes: class 18 is 320-351, class 19 352-383. */
static void test_cache_best_fit(void)
{
	CHECK(all_free());
	unsigned char *a = rt_malloc(340 * 64), *b = rt_malloc(330 * 64), *c = rt_malloc(360 * 64),
		      *d = rt_malloc(325 * 64);
	CHECK(a && b && c && d);
	if (!a || !b || !c || !d)
		return;
	rt_free(a);
	rt_free(b);
	rt_free(c);
	rt_free(d);
	uint64_t c0, f0, c1, f1;
	fit_stats(&c0, &f0);
	unsigned char *x = rt_malloc(328 * 64), *y = rt_malloc(335 * 64), *z = rt_malloc(345 * 64);
	CHECK(x == b); /* (330 fits 328 best; 340 and 360 hold it too) */
	CHECK(y == a);
	CHECK(z == c); /* (of the next class: 360 <= 345 + 345 / 8) */
	fit_stats(&c1, &f1);
	CHECK(c1 == c0 && f1 == f0);
	unsigned char *w = rt_malloc(326 * 64); /* (325 is too short: from the arena) */
	CHECK(w != NULL && w != d);
	fit_stats(&c1, &f1);
	CHECK(f1 < f0 || c1 > c0);
	rt_free(w);
	rt_free(x);
	rt_free(y);
	rt_free(z);
	CHECK(all_free());
	CHECK(fit_check() == NULL);

	enum { N = 9 };
	unsigned char *p[N];
	for (int i = 0; i < N; i++) {
		p[i] = rt_malloc(330 * 64);
		CHECK(p[i] != NULL);
		if (!p[i])
			return;
	}
	fit_stats(&c0, &f0);
	for (int i = 0; i < N - 1; i++)
		rt_free(p[i]);
	fit_stats(&c1, &f1);
	CHECK(f1 == f0);
	rt_free(p[N - 1]);
	fit_stats(&c1, &f1);
	CHECK_EQ(f1 - f0, 330 * 64);
	CHECK(fit_check() == NULL);
	CHECK(all_free());
}

/* Nothing of the allocator's is in a free block: a write after free over one leaves
 * the records whole, and the next blocks get the memory as before. */
static void test_write_after_free_harmless(void)
{
	CHECK(all_free());
	unsigned char *a = rt_malloc(9000), *b = rt_malloc(9000), *c = rt_malloc(9000);
	CHECK(a && b && c);
	if (!a || !b || !c)
		return;
	rt_free(b);
	fit_cache_flush(false);
	memset(b, 0x41, 9000);
	rt_free(a);
	rt_free(c);
	CHECK(all_free());
	CHECK(fit_check() == NULL);
	unsigned char *d = rt_malloc(3 * fitted(9000));
	CHECK(d == a);
	rt_free(d);
}

/* Two threads malloc, grow and free blocks of random fitted sizes at once; each
 * block keeps its bytes. */
#define STEPS 30000
#define SLOTS 64

static void *churn(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	unsigned char *slot[SLOTS] = { 0 };
	size_t len[SLOTS] = { 0 };
	long bad = 0;
	for (int i = 0; i < STEPS; i++) {
		xorshift64(&x);
		unsigned k = (unsigned)(x % SLOTS);
		unsigned char tag = (unsigned char)(k + 1);
		size_t size = FIT_MIN + 1 + (size_t)((x >> 8) % (FIT_MAX - FIT_MIN - 1));
		if (!slot[k]) {
			slot[k] = rt_malloc(size);
			if (!slot[k])
				return (void *)1;
			len[k] = size;
			memset(slot[k], tag, size);
		} else if ((x >> 40) & 1) {
			bad += !intact(slot[k], len[k], tag);
			rt_free(slot[k]);
			slot[k] = NULL;
		} else {
			bad += !intact(slot[k], len[k], tag);
			unsigned char *q = rt_realloc(slot[k], size);
			if (!q)
				return (void *)1;
			bad += !intact(q, size < len[k] ? size : len[k], tag);
			slot[k] = q;
			len[k] = size;
			memset(q, tag, size);
		}
	}
	for (unsigned k = 0; k < SLOTS; k++) {
		if (slot[k]) {
			bad += !intact(slot[k], len[k], (unsigned char)(k + 1));
			rt_free(slot[k]);
		}
	}
	return (void *)(uintptr_t)(bad != 0);
}

static void test_threads(void)
{
	pthread_t t[2];
	void *r[2];
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, churn, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], &r[i]);
	CHECK(r[0] == NULL && r[1] == NULL);
	CHECK(fit_check() == NULL);
	CHECK(all_free());
}

/* A child forked while the parent holds fitted blocks frees them and makes more. */
static void test_fork(void)
{
	unsigned char *a = rt_malloc(50000), *b = rt_malloc(70000);
	CHECK(a && b);
	if (!a || !b)
		return;
	memset(a, 3, 50000);
	memset(b, 4, 70000);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		bool ok = intact(a, 50000, 3) && intact(b, 70000, 4);
		rt_free(a);
		fit_cache_flush(false);
		unsigned char *c = rt_malloc(40000);
		ok = ok && c == a && fit_check() == NULL;
		rt_free(c);
		rt_free(b);
		_exit(ok && fit_check() == NULL && all_free() ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(intact(a, 50000, 3) && intact(b, 70000, 4));
	rt_free(b);
	rt_free(a);
	CHECK(fit_check() == NULL);
	CHECK(all_free());
}

/* Threads that make and empty chunks all the time (each round asks more than one chunk
 * holds) while another thread forks: every fork returns, and the children find the
 * arenas whole. The fork handlers once took the arenas' locks in the other order from
 * a thread making a chunk, and the fork hung (1 fork in ~700 under torture). */
#define MAKERS 2
#define MAKER_BLOCKS 200
#define FORKS 400

static atomic_int makers_stop;
static atomic_int forks_done, forks_seen;

static void *chunk_maker(void *arg)
{
	(void)arg;
	void *b[MAKER_BLOCKS];
	while (!atomic_load(&makers_stop)) {
		for (int i = 0; i < MAKER_BLOCKS; i++)
			b[i] = rt_malloc(FIT_MAX - 4096); /* 200 x 124 KiB: two chunks */
		for (int i = 0; i < MAKER_BLOCKS; i++)
			rt_free(b[i]);
		fit_cache_flush(false);
	}
	return NULL;
}

/* Every 60 s: some fork must have returned since the last look. Progress is counted,
 * not the whole run timed: a loaded machine makes the forks slow, a deadlock makes
 * them stop. */
static void hung(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: no fork returned in 60 s: the fork handlers deadlocked\n";
	int done = atomic_load(&forks_done);
	if (done != atomic_exchange(&forks_seen, done)) {
		alarm(60);
		return;
	}
	if (write(STDOUT_FILENO, msg, sizeof msg - 1) < 0)
		_exit(2);
	_exit(1);
}

static void test_fork_while_chunks_made(void)
{
	pthread_t t[MAKERS];
	atomic_store(&makers_stop, 0);
	for (int i = 0; i < MAKERS; i++)
		pthread_create(&t[i], NULL, chunk_maker, NULL);
	atomic_store(&forks_done, 0);
	atomic_store(&forks_seen, -1);
	signal(SIGALRM, hung);
	alarm(60);
	int bad = 0;
	for (int i = 0; i < FORKS; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			_exit(fit_check() == NULL ? 0 : 1);
		int st = 0;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		atomic_fetch_add(&forks_done, 1);
	}
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	atomic_store(&makers_stop, 1);
	for (int i = 0; i < MAKERS; i++)
		pthread_join(t[i], NULL);
	CHECK(bad == 0);
	CHECK(fit_check() == NULL);
	CHECK(all_free());
}

/* Two threads make and empty chunks by turns, a counted number of rounds: the range
 * does not grow past what they hold at once (and the free units it keeps below). Each
 * chunk grown in place past the frontier used to move it on, the units freed below
 * never used again, a mapping each, until the kernel's limit on mappings (65530) made
 * an mmap of the heap fail and the runtime abort. */
#define CHURN_ROUNDS 150

static void *churner(void *arg)
{
	(void)arg;
	void *b[MAKER_BLOCKS];
	for (int r = 0; r < CHURN_ROUNDS; r++) {
		for (int i = 0; i < MAKER_BLOCKS; i++)
			b[i] = rt_malloc(FIT_MAX - 4096);
		for (int i = 0; i < MAKER_BLOCKS; i++)
			rt_free(b[i]);
		fit_cache_flush(false);
	}
	return NULL;
}

static void test_range_bounded_under_churn(void)
{
	pthread_t t[MAKERS];
	size_t before = pg.frontier;
	for (int i = 0; i < MAKERS; i++)
		pthread_create(&t[i], NULL, churner, NULL);
	for (int i = 0; i < MAKERS; i++)
		pthread_join(t[i], NULL);
	/* (Two threads' 200 blocks of 124 KiB: about 25 units at once, 64 kept free.) */
	if (pg.frontier > before + 256)
		printf("    the range grew from %zu to %zu units\n", before, (size_t)pg.frontier);
	CHECK(pg.frontier <= before + 256);
	CHECK(fit_check() == NULL);
	CHECK(all_free());
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	RUN(test_packed_end_to_end);
	RUN(test_neighbours_join);
	RUN(test_resized_in_place);
	RUN(test_chunks_given_back);
	RUN(test_cache_reuses);
	RUN(test_cache_best_fit);
	RUN(test_write_after_free_harmless);
	RUN(test_threads);
	RUN(test_fork);
	RUN(test_fork_while_chunks_made);
	RUN(test_range_bounded_under_churn);
	return CHECK_DONE();
}
