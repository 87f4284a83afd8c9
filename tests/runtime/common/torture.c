/* torture.c - a malloc torture test: random sizes and alignments, realloc chains, frees
 * on other threads, fork while threads allocate; every byte is checked before its free.
 *
 * usage: torture [-e] [-n ITERATIONS | -s SECONDS] [-t THREADS] [-r ROUNDS] [SEED]
 * Plain C and pthreads, no superpage calls: it is run as is and under `superpage run`.
 * On success it prints one summary line that depends only on the seed and the counts
 * (the same under every malloc) and exits 0; the first wrong byte or broken promise of
 * the malloc API ends it with a message on stderr and status 1. */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16
#define SLOTS 128                     /* live blocks a worker keeps */
#define BUDGET ((size_t)64 << 20)     /* live bytes a worker keeps, at most */
#define MAX_SIZE ((size_t)64 << 20)   /* the largest block asked for */
#define HANDOFF_MAX ((size_t)1 << 20) /* the largest block given to another thread */
#define QUEUE_CAP 128
#ifndef FORK_EVERY
#define FORK_EVERY 100                /* worker 0 forks every this many iterations */
#endif
#define MAGIC_ERRNO 4242              /* errno before every call that should succeed */

struct block {
	unsigned char *p;
	size_t size;     /* bytes asked for */
	size_t filled;   /* bytes that hold the pattern: size, or the usable size */
	uintptr_t origin; /* the address the block first had: the pattern's base */
	uint64_t tag;    /* unique per block, so two blocks never hold the same bytes */
};

struct worker {
	int index, round;
	uint64_t rng;
	struct block slot[SLOTS];
	size_t live;
	long iterations; /* -1: until the deadline */
	/* counts that depend only on the seed: the summary line */
	uint64_t ops, asked, forks;
};

static uint64_t seed;
static int nthreads = 4, rounds = 4;
static long iterations = 4000; /* per worker, over all rounds */
static double seconds;         /* > 0: run by time instead */
static struct timespec deadline;
static size_t page;
static atomic_uint_fast64_t serial;
static _Thread_local int in_child;
/* -e: glibc's malloc leaves errno at ENOMEM on some successful calls (a thread's arena
 * cannot grow, the retry in another arena works); with -e such changes are counted on
 * stderr, not failures. */
static int errno_may_change;
static atomic_uint_fast64_t errno_changes;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block queue[QUEUE_CAP];
static int queue_head, queue_len;

/* Blocks left by workers of the last round: freed by the next round's threads. */
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block orphans[MAX_THREADS * SLOTS];
static int norphans;

/* ---------- failing ---------- */

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
	char msg[512];
	int n = snprintf(msg, sizeof msg, "torture%s: ", in_child ? " (fork child)" : "");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(msg + n, sizeof msg - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof msg - 2)
		n = sizeof msg - 2;
	msg[n++] = '\n';
	/* write(2) and _exit: the heap may be broken, stdio and atexit may not work. */
	if (write(2, msg, n) < 0)
		_exit(1);
	_exit(1);
}

/* ---------- random numbers ---------- */

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rnd(struct worker *w)
{
	w->rng += 0x9e3779b97f4a7c15ull;
	return mix64(w->rng);
}

static uint64_t below(struct worker *w, uint64_t n)
{
	return rnd(w) % n;
}

/* 1 B to max, log-uniform: as many blocks of 1-2 KiB as of 32-64 MiB. */
static size_t log_uniform(struct worker *w, size_t max)
{
	double bits = log2((double)max);
	size_t n = (size_t)exp2(bits * (double)below(w, 1u << 20) / (double)(1u << 20));
	return n < 1 ? 1 : n > max ? max : n;
}

/* 1 B to max, log-uniform, but 7 draws in 8 stop at 64 KiB: small blocks dominate and
 * the large ones (each filled and checked whole) do not eat the run time. */
static size_t random_size(struct worker *w, size_t max)
{
	size_t small = (size_t)64 << 10;
	return log_uniform(w, below(w, 8) && max > small ? small : max);
}

/* ---------- the pattern ---------- */

/* Word k of a block (bytes 8k..8k+7) holds pattern(origin + 8k, tag); the bytes stay
 * where they are when realloc moves the block, so the prefix can be checked. */
static uint64_t pattern(uintptr_t at, uint64_t tag)
{
	uint64_t x = ((uint64_t)at ^ tag) * 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static unsigned char pattern_byte(const struct block *b, size_t i)
{
	return (unsigned char)(pattern(b->origin + (i & ~(size_t)7), b->tag) >> (8 * (i & 7)));
}

static void fill(const struct block *b, size_t from, size_t to)
{
	size_t i = from;
	for (; i < to && (i & 7); i++)
		b->p[i] = pattern_byte(b, i);
	for (; i + 8 <= to; i += 8) {
		uint64_t v = pattern(b->origin + i, b->tag);
		memcpy(b->p + i, &v, 8);
	}
	for (; i < to; i++)
		b->p[i] = pattern_byte(b, i);
}

static void wrong_byte(const struct block *b, size_t i, unsigned want, const char *what)
{
	die("%s: wrong byte at offset %zu of block %p (size %zu, first at %#" PRIxPTR
	    "): 0x%02x, want 0x%02x",
	    what, i, (void *)b->p, b->size, b->origin, b->p[i], want);
}

/* Checks bytes [from, to) of the block; ends the program at the first wrong one. */
static void check(const struct block *b, size_t from, size_t to, const char *what)
{
	size_t i = from;
	for (; i < to && (i & 7); i++)
		if (b->p[i] != pattern_byte(b, i))
			wrong_byte(b, i, pattern_byte(b, i), what);
	for (; i + 8 <= to; i += 8) {
		uint64_t v, want = pattern(b->origin + i, b->tag);
		memcpy(&v, b->p + i, 8);
		if (v != want)
			break;
	}
	for (; i < to; i++)
		if (b->p[i] != pattern_byte(b, i))
			wrong_byte(b, i, pattern_byte(b, i), what);
}

static void check_zero(const unsigned char *p, size_t n, const char *what)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v;
		memcpy(&v, p + i, 8);
		if (v)
			break;
	}
	for (; i < n; i++)
		if (p[i])
			die("%s: byte %zu of %zu is 0x%02x, want 0", what, i, n, p[i]);
}

/* ---------- the malloc API, each call checked ---------- */

static size_t pow2_floor(size_t n)
{
	size_t a = 1;
	while (a <= n / 2)
		a *= 2;
	return a;
}

static void errno_kept(const char *call, size_t n)
{
	if (errno != MAGIC_ERRNO && errno_may_change) {
		atomic_fetch_add(&errno_changes, 1);
		return;
	}
	if (errno != MAGIC_ERRNO)
		die("%s(%zu) succeeded but changed errno from %d to %d", call, n, MAGIC_ERRNO, errno);
}

/* A new block: checks it is there, aligned, as large as asked, and fills it. */
static struct block adopt(void *p, size_t size, size_t align, const char *call)
{
	if (!p)
		die("%s(%zu) returned NULL, errno %d", call, size, errno);
	errno_kept(call, size);
	if ((uintptr_t)p % align)
		die("%s(%zu) returned %p, not aligned to %zu", call, size, p, align);
	size_t usable = malloc_usable_size(p);
	if (usable < size)
		die("%s(%zu): malloc_usable_size is %zu", call, size, usable);
	struct block b = { p, size, size, (uintptr_t)p, mix64(seed ^ atomic_fetch_add(&serial, 1)) };
	/* Some blocks use all their usable size, as programs may. */
	if (usable - size <= 4096 && (b.tag & 3) == 0)
		b.filled = usable;
	fill(&b, 0, b.filled);
	return b;
}

static size_t natural_align(size_t n)
{
	size_t a = pow2_floor(n ? n : 1);
	return a < 16 ? a : 16;
}

static struct block do_malloc(size_t n)
{
	errno = MAGIC_ERRNO;
	return adopt(malloc(n), n, natural_align(n), "malloc");
}

static struct block do_calloc(size_t nmemb, size_t each)
{
	errno = MAGIC_ERRNO;
	void *p = calloc(nmemb, each);
	if (p)
		check_zero(p, nmemb * each, "calloc");
	return adopt(p, nmemb * each, natural_align(nmemb * each), "calloc");
}

static void do_free(struct block *b, const char *what)
{
	check(b, 0, b->filled, what);
	errno = MAGIC_ERRNO;
	free(b->p);
	errno_kept("free", b->size);
	b->p = NULL;
}

/* realloc to n bytes: the first min(old, n) bytes must come along. */
static void do_realloc(struct block *b, size_t n)
{
	size_t kept = b->size < n ? b->size : n;
	errno = MAGIC_ERRNO;
	unsigned char *q = realloc(b->p, n);
	if (!q)
		die("realloc(%p, %zu) from %zu bytes returned NULL, errno %d", (void *)b->p, n,
		    b->size, errno);
	errno_kept("realloc", n);
	if ((uintptr_t)q % natural_align(n))
		die("realloc(%zu) returned %p, misaligned", n, (void *)q);
	size_t usable = malloc_usable_size(q);
	if (usable < n)
		die("realloc(%zu): malloc_usable_size is %zu", n, usable);
	b->p = q;
	check(b, 0, kept, "realloc kept");
	b->size = b->filled = n;
	fill(b, kept, n);
}

/* ---------- the API's corners ---------- */

/* Hides a constant from the compiler, which would warn about the sizes used here. */
static size_t opaque(size_t n)
{
	__asm__ volatile("" : "+r"(n));
	return n;
}

static void expect_enomem(void *p, const char *call)
{
	if (p)
		die("%s returned %p, want NULL", call, p);
	if (errno != ENOMEM)
		die("%s: errno %d, want ENOMEM", call, errno);
}

static void overflows(struct worker *w, struct block *b)
{
	void *q = (void *)&q;
	int rc;
	errno = 0;
	expect_enomem(calloc(opaque(SIZE_MAX / 2 + 1), 2), "calloc(SIZE_MAX/2+1, 2)");
	errno = 0;
	expect_enomem(calloc(opaque((size_t)1 << 33), opaque((size_t)1 << 33)),
		      "calloc(2^33, 2^33)");
	errno = 0;
	expect_enomem(malloc(opaque(SIZE_MAX)), "malloc(SIZE_MAX)");
	errno = 0;
	expect_enomem(malloc(opaque(SIZE_MAX - 4095)), "malloc(SIZE_MAX-4095)");
	errno = 0;
	expect_enomem(malloc(opaque((size_t)PTRDIFF_MAX + 1)), "malloc(PTRDIFF_MAX+1)");
	errno = 0;
	expect_enomem(aligned_alloc(64, opaque(SIZE_MAX - 100)), "aligned_alloc(64, SIZE_MAX-100)");
	errno = 0;
	expect_enomem(memalign(4096, opaque(SIZE_MAX - 100)), "memalign(4096, SIZE_MAX-100)");
	errno = 0;
	expect_enomem(valloc(opaque(SIZE_MAX - 100)), "valloc(SIZE_MAX-100)");
	errno = 0;
	expect_enomem(pvalloc(opaque(SIZE_MAX - 100)), "pvalloc(SIZE_MAX-100)");
	rc = posix_memalign(&q, 64, opaque(SIZE_MAX - 100));
	if (rc != ENOMEM)
		die("posix_memalign(64, SIZE_MAX-100) returned %d, want ENOMEM", rc);
	static const size_t bad_align[] = { 0, 1, 3, 4, 12, 24, 4097 };
	for (size_t i = 0; i < sizeof bad_align / sizeof *bad_align; i++) {
		rc = posix_memalign(&q, bad_align[i], 16);
		if (rc != EINVAL)
			die("posix_memalign(%zu, 16) returned %d, want EINVAL", bad_align[i], rc);
	}
	/* A failed realloc or reallocarray leaves the block as it was. */
	if (b->p) {
		errno = 0;
		expect_enomem(reallocarray(b->p, opaque(SIZE_MAX / 4 + 1), 8),
			      "reallocarray(p, SIZE_MAX/4+1, 8)");
		errno = 0;
		expect_enomem(reallocarray(b->p, opaque((size_t)1 << 40), opaque((size_t)1 << 40)),
			      "reallocarray(p, 2^40, 2^40)");
		errno = 0;
		expect_enomem(realloc(b->p, opaque(SIZE_MAX - 100)), "realloc(p, SIZE_MAX-100)");
		check(b, 0, b->filled, "after failed realloc");
	}
	/* free(NULL) does nothing, errno included. */
	errno = MAGIC_ERRNO;
	free(NULL);
	errno_kept("free(NULL)", 0);
	w->ops++;
}

/* malloc(0): a unique pointer each time, that free takes. */
static void zero_sizes(struct worker *w)
{
	void *p[8];
	int n = 1 + (int)below(w, 8);
	for (int i = 0; i < n; i++) {
		errno = MAGIC_ERRNO;
		p[i] = malloc(0);
		if (!p[i])
			die("malloc(0) returned NULL");
		errno_kept("malloc", 0);
		for (int j = 0; j < i; j++)
			if (p[j] == p[i])
				die("malloc(0) returned %p twice", p[i]);
	}
	errno = MAGIC_ERRNO;
	void *r = realloc(NULL, 0);
	if (!r)
		die("realloc(NULL, 0) returned NULL");
	errno_kept("realloc(NULL, 0)", 0);
	for (int j = 0; j < n; j++)
		if (p[j] == r)
			die("realloc(NULL, 0) returned %p, also given by malloc(0)", r);
	free(r);
	for (int i = 0; i < n; i++) {
		errno = MAGIC_ERRNO;
		free(p[i]);
		errno_kept("free(malloc(0))", 0);
	}
	w->ops += n;
}

/* posix_memalign, aligned_alloc, memalign, valloc or pvalloc, 8 B to 1 GiB aligned. */
static struct block aligned(struct worker *w, size_t n, int log2_align)
{
	size_t a = (size_t)1 << log2_align;
	void *p = NULL;
	int rc;
	/* valloc and pvalloc align to a page only. */
	switch (below(w, a > page ? 3 : 5)) {
	case 0:
		errno = MAGIC_ERRNO;
		rc = posix_memalign(&p, a, n);
		if (rc)
			die("posix_memalign(%zu, %zu) returned %d", a, n, rc);
		return adopt(p, n, a, "posix_memalign");
	case 1:
		errno = MAGIC_ERRNO;
		return adopt(aligned_alloc(a, n), n, a, "aligned_alloc");
	case 2:
		errno = MAGIC_ERRNO;
		return adopt(memalign(a, n), n, a, "memalign");
	case 3:
		errno = MAGIC_ERRNO;
		return adopt(valloc(n), n, page, "valloc");
	default: {
		size_t rounded = (n + page - 1) / page * page;
		errno = MAGIC_ERRNO;
		p = pvalloc(n);
		struct block b = adopt(p, n, page, "pvalloc");
		if (malloc_usable_size(p) < rounded)
			die("pvalloc(%zu): usable size %zu, want at least %zu", n,
			    malloc_usable_size(p), rounded);
		return b;
	}
	}
}

/* ---------- handing blocks between threads ---------- */

static int queue_put(const struct block *b)
{
	int ok = 0;
	pthread_mutex_lock(&queue_lock);
	if (queue_len < QUEUE_CAP) {
		queue[(queue_head + queue_len++) % QUEUE_CAP] = *b;
		ok = 1;
	}
	pthread_mutex_unlock(&queue_lock);
	return ok;
}

static int queue_take(struct block *b)
{
	int ok = 0;
	pthread_mutex_lock(&queue_lock);
	if (queue_len > 0) {
		*b = queue[queue_head];
		queue_head = (queue_head + 1) % QUEUE_CAP;
		queue_len--;
		ok = 1;
	}
	pthread_mutex_unlock(&queue_lock);
	return ok;
}

static void drain_orphans(int max)
{
	struct block b;
	for (int i = 0; i < max; i++) {
		pthread_mutex_lock(&orphan_lock);
		int have = norphans > 0;
		if (have)
			b = orphans[--norphans];
		pthread_mutex_unlock(&orphan_lock);
		if (!have)
			return;
		do_free(&b, "free of a block from an exited thread");
	}
}

/* ---------- the worker ---------- */

static void drop(struct worker *w, int s, const char *what)
{
	w->live -= w->slot[s].size;
	do_free(&w->slot[s], what);
}

/* Frees random blocks until n more bytes fit the budget and there is a free slot.
 * Returns that slot. */
static int make_room(struct worker *w, size_t n)
{
	for (;;) {
		int s = (int)below(w, SLOTS);
		if (!w->slot[s].p && w->live + n <= BUDGET)
			return s;
		if (w->slot[s].p)
			drop(w, s, "free");
	}
}

static void keep(struct worker *w, int s, struct block b)
{
	w->slot[s] = b;
	w->live += b.size;
	w->asked += b.size;
	w->ops++;
}

static void realloc_chain(struct worker *w)
{
	int s = (int)below(w, SLOTS);
	struct block *b = &w->slot[s];
	int steps = 1 + (int)below(w, 6);
	if (!b->p) {
		size_t n = random_size(w, MAX_SIZE / 4);
		s = make_room(w, n);
		b = &w->slot[s];
		errno = MAGIC_ERRNO;
		keep(w, s, adopt(realloc(NULL, n), n, natural_align(n), "realloc(NULL)"));
	}
	for (int i = 0; i < steps; i++) {
		size_t old = b->size, n;
		switch (below(w, 4)) {
		case 0: n = old + below(w, old + 1) + 1; break;      /* grow up to 2x */
		case 1: n = 1 + below(w, old); break;                /* shrink */
		case 2: n = old + below(w, 129) - 64; break;         /* in place, maybe */
		default: n = random_size(w, MAX_SIZE); break;
		}
		if (n < 1 || n > MAX_SIZE)
			n = old / 2 + 1;
		if (w->live - old + n > BUDGET)
			n = old / 2 + 1;
		do_realloc(b, n);
		w->live = w->live - old + n;
		w->asked += n;
		w->ops++;
	}
}

/* Many small blocks at once, freed in a random order: the fast path. */
static void burst(struct worker *w)
{
	struct block b[64];
	int n = 8 + (int)below(w, 57);
	for (int i = 0; i < n; i++) {
		b[i] = do_malloc(1 + below(w, 256));
		w->asked += b[i].size;
	}
	for (int i = n; i > 0; i--) {
		int j = (int)below(w, i);
		do_free(&b[j], "burst free");
		b[j] = b[i - 1];
	}
	w->ops += n;
}

static void child(struct worker *w);

static void fork_now(struct worker *w)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		in_child = 1;
		child(w);
		_exit(0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(st))
		die("fork child %d died of signal %d", (int)pid, WTERMSIG(st));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("fork child %d exited with status %d", (int)pid, WEXITSTATUS(st));
	w->forks++;
}

/* In the child of a fork from a thread while other threads allocate: the inherited
 * blocks are intact and can be freed and grown, and new ones can be had at once. */
static void child(struct worker *w)
{
	for (int s = 0; s < SLOTS; s++) {
		struct block *b = &w->slot[s];
		if (!b->p)
			continue;
		check(b, 0, b->filled, "inherited block");
		/* Write into it, as a child does: each touched page is copied (a huge page
		 * too: that needs a free page of its pool, or a fallback). */
		for (size_t i = 0; i < b->filled; i += 64 << 10)
			((volatile unsigned char *)b->p)[i] = pattern_byte(b, i);
	}
	for (int s = 0; s < SLOTS; s += 2)
		if (w->slot[s].p)
			do_free(&w->slot[s], "free of an inherited block");
	for (int s = 1; s < SLOTS; s += 8)
		if (w->slot[s].p && w->slot[s].size < ((size_t)8 << 20))
			do_realloc(&w->slot[s], w->slot[s].size * 2 + 1);
	struct block b[256];
	for (int i = 0; i < 256; i++)
		b[i] = i % 32 == 5 ? do_calloc(1 + below(w, 64), 1 + below(w, 64))
				   : do_malloc(1 + below(w, 2048));
	struct block big = do_malloc((size_t)6 << 20);
	for (int i = 255; i >= 0; i--)
		do_free(&b[i], "free of a child's block");
	do_free(&big, "free of a child's large block");
	for (int s = 1; s < SLOTS; s += 2)
		if (w->slot[s].p)
			do_free(&w->slot[s], "free of an inherited block");
}

static int time_is_up(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline.tv_sec ||
	       (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec);
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct block b;
	drain_orphans(SLOTS);
	/* One block aligned to 1 GiB, small, per worker and round. */
	if (w->index < 2) {
		b = aligned(w, 1 + below(w, 4096), 30);
		w->asked += b.size;
		do_free(&b, "free of a 1 GiB-aligned block");
	}
	for (long it = 0; w->iterations < 0 ? !time_is_up() : it < w->iterations; it++) {
		unsigned op = (unsigned)below(w, 100);
		int s;
		size_t n;
		if (w->index == 0 && it % FORK_EVERY == FORK_EVERY - 1)
			fork_now(w);
		if (op < 35) {
			n = random_size(w, MAX_SIZE);
			s = make_room(w, n);
			keep(w, s, do_malloc(n));
		} else if (op < 50) {
			s = (int)below(w, SLOTS);
			if (!w->slot[s].p)
				continue;
			/* Half of the blocks that are small enough go to another thread. */
			if (w->slot[s].size <= HANDOFF_MAX && below(w, 2) && queue_put(&w->slot[s])) {
				w->live -= w->slot[s].size;
				w->slot[s].p = NULL;
			} else {
				drop(w, s, "free");
			}
			w->ops++;
		} else if (op < 58) {
			size_t each = 1 + below(w, 64);
			n = random_size(w, MAX_SIZE / 4) / each + 1;
			s = make_room(w, n * each);
			keep(w, s, do_calloc(n, each));
		} else if (op < 66) {
			int lg = below(w, 64) ? 3 + (int)below(w, 19) : 22 + (int)below(w, 9);
			n = lg > 21 ? 1 + below(w, 4096) : random_size(w, MAX_SIZE / 8);
			s = make_room(w, n);
			keep(w, s, aligned(w, n, lg));
		} else if (op < 78) {
			realloc_chain(w);
		} else if (op < 88) {
			for (int i = 0; i < 4 && queue_take(&b); i++)
				do_free(&b, "free of a block from another thread");
			w->ops++;
		} else if (op < 92) {
			zero_sizes(w);
		} else if (op < 94) {
			overflows(w, &w->slot[below(w, SLOTS)]);
		} else if (op < 98) {
			burst(w);
		} else {
			/* reallocarray that fits */
			s = make_room(w, 0);
			n = 1 + below(w, 512);
			size_t each = 1 + below(w, 64);
			b = do_malloc(n);
			errno = MAGIC_ERRNO;
			unsigned char *q = reallocarray(b.p, each, n);
			if (!q)
				die("reallocarray(%zu, %zu) returned NULL", each, n);
			errno_kept("reallocarray", each * n);
			b.p = q;
			check(&b, 0, b.size < each * n ? b.size : each * n, "reallocarray kept");
			fill(&b, b.size < each * n ? b.size : each * n, each * n);
			b.size = b.filled = each * n;
			keep(w, s, b);
		}
	}
	/* What is still live is freed by other threads after this one has exited. */
	pthread_mutex_lock(&orphan_lock);
	for (int s = 0; s < SLOTS; s++)
		if (w->slot[s].p) {
			orphans[norphans++] = w->slot[s];
			w->slot[s].p = NULL;
		}
	pthread_mutex_unlock(&orphan_lock);
	w->live = 0;
	return NULL;
}

/* Short-lived threads: each allocates a few blocks and exits; the main thread frees them. */
static void *short_lived(void *arg)
{
	struct block *b = arg;
	for (int i = 0; i < 32; i++)
		b[i] = do_malloc(1 + (size_t)(mix64(seed + (uintptr_t)i) % 3000));
	return NULL;
}

static void run_short_lived(void)
{
	struct block b[8][32];
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, short_lived, b[i]))
			die("pthread_create failed");
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		for (int j = 0; j < 32; j++)
			do_free(&b[i][j], "free of a block from an exited thread");
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: torture [-e] [-n ITERATIONS | -s SECONDS] [-t THREADS] [-r ROUNDS]"
			" [SEED]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct worker w[MAX_THREADS];
	pthread_t t[MAX_THREADS];
	int c;
	char *end;
	while ((c = getopt(argc, argv, "en:s:t:r:")) != -1) {
		if (c == 'e') {
			errno_may_change = 1;
			continue;
		}
		switch (c) {
		case 'n': iterations = strtol(optarg, &end, 10); break;
		case 's': seconds = strtod(optarg, &end); break;
		case 't': nthreads = (int)strtol(optarg, &end, 10); break;
		case 'r': rounds = (int)strtol(optarg, &end, 10); break;
		default: usage();
		}
		if (*end || !*optarg)
			usage();
	}
	if (optind < argc) {
		seed = strtoull(argv[optind++], &end, 0);
		if (*end || !*argv[optind - 1])
			usage();
	}
	if (optind != argc || nthreads < 1 || nthreads > MAX_THREADS || rounds < 1 ||
	    iterations < 0 || seconds < 0)
		usage();
	page = (size_t)sysconf(_SC_PAGESIZE);

	for (int r = 0; r < rounds; r++) {
		if (seconds > 0) {
			clock_gettime(CLOCK_MONOTONIC, &deadline);
			double end_s = deadline.tv_nsec / 1e9 + seconds / rounds;
			deadline.tv_sec += (time_t)end_s;
			deadline.tv_nsec = (long)((end_s - (double)(time_t)end_s) * 1e9);
		}
		for (int i = 0; i < nthreads; i++) {
			w[i].index = i;
			w[i].round = r;
			w[i].rng = mix64(seed * 1000003 + (uint64_t)r * 131 + (uint64_t)i);
			w[i].iterations = seconds > 0 ? -1 : iterations / rounds;
			if (pthread_create(&t[i], NULL, work, &w[i]))
				die("pthread_create failed");
		}
		for (int i = 0; i < nthreads; i++)
			if (pthread_join(t[i], NULL))
				die("pthread_join failed");
		run_short_lived();
	}
	struct block b;
	while (queue_take(&b))
		do_free(&b, "free of a queued block");
	drain_orphans(MAX_THREADS * SLOTS);

	uint64_t ops = 0, asked = 0, forks = 0;
	for (int i = 0; i < nthreads; i++) {
		ops += w[i].ops;
		asked += w[i].asked;
		forks += w[i].forks;
	}
	if (errno_changes)
		fprintf(stderr, "torture: %" PRIu64 " successful calls changed errno\n",
			(uint64_t)errno_changes);
	if (seconds > 0)
		printf("torture ok: seed %" PRIu64 ", %d threads, %d rounds, %.1f s, %" PRIu64
		       " ops, %" PRIu64 " forks\n", seed, nthreads, rounds, seconds, ops, forks);
	else
		printf("torture ok: seed %" PRIu64 ", %d threads, %d rounds, %ld iterations, %" PRIu64
		       " ops, %" PRIu64 " bytes asked, %" PRIu64 " forks\n",
		       seed, nthreads, rounds, iterations, ops, asked, forks);
	return 0;
}
