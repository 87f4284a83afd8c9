/* malloc.c - malloc throughput (mixed sizes, larson hand-offs, realloc'd strings, bursts)
 * under any malloc.
 *
 * usage: malloc KERNEL THREADS [SECONDS]     KERNEL: mixed, larson, realloc or burst
 *        malloc --size THREADS                 mixed for 0.5 s, as superpage bench runs it
 *
 * A plain C program with no superpage calls: bench/compare.sh runs it under glibc,
 * `superpage run`, mimalloc and jemalloc. Each thread repeats one batch of work, drawn
 * from the same seed every time, until SECONDS (default 1) have passed; so every malloc
 * does the same batches, and the checksum of a batch, taken from the data read back out
 * of the blocks, is the same under every malloc and is checked equal across the batches
 * of a run. Ops are calls into the allocator (malloc, free, realloc).
 *
 * stdout, one line: kernel=K threads=N ops_per_s=X seconds=S checksum=C; with --size,
 * the result line of bench/kernel.h instead, whose seconds are those of a million calls
 * (the run is timed, its work is not fixed: the time of a fixed work is what compares).
 * Exit status: 0, 1 if a block did not hold what was written in it, 2 on bad arguments. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernel.h"

#define MAX_THREADS 256
#define CACHE_LINE 64
#define TOUCH_STRIDE 4096

/* mixed: a thread's slot array, and the slots it reuses (a free and a malloc) per batch */
#define MIXED_SLOTS 4096
#define MIXED_PAIRS (1u << 18)

/* larson: blocks per batch, and each thread's queue of blocks handed to it */
#define LARSON_BATCH (1u << 17)
#define QUEUE_CAP 4096
#define QUEUE_BURST 64

/* burst: blocks of a size malloc'd and filled, then all freed, in bursts of these counts */
#define BURST_CALLS (1u << 15)
static const unsigned burst_counts[] = { 25, 100, 400, 1600 };
static const size_t burst_sizes[] = { 16, 32, 64 };

/* realloc: strings built at once, appends per batch, the pattern they copy from */
#define REALLOC_ACTIVE 4
#define REALLOC_APPENDS (1u << 17)
#define PATTERN_LEN 65536
#define CHUNK_MAX 4096
#define STRING_MAX ((size_t)6 << 20)
#define STEP_STRING_MAX ((size_t)256 << 10)
#define SAMPLES 16

enum kernel { K_MIXED, K_LARSON, K_REALLOC, K_BURST, NKERNEL };
static const char *const kernel_names[] = { "mixed", "larson", "realloc", "burst" };

struct queue {
	_Alignas(CACHE_LINE) _Atomic uint32_t head; /* next to pop; the consumer's */
	_Alignas(CACHE_LINE) _Atomic uint32_t tail; /* next to push; the producer's */
	_Alignas(CACHE_LINE) _Atomic int done;      /* the producer pushes no more */
	uint64_t produced;                          /* blocks pushed, final once done */
	void *slot[QUEUE_CAP];
};

struct worker {
	_Alignas(CACHE_LINE) int index;
	pthread_t thread;
	uint64_t ops;
	uint64_t batches;
	uint64_t batch_sum;  /* checksum of the first batch */
	char error[200];     /* why the data was wrong, if it was */
};

static enum kernel kernel;
static int n_threads;
static struct worker workers[MAX_THREADS];
static struct queue *queues;
static unsigned char *pattern;   /* PATTERN_LEN + CHUNK_MAX bytes, periodic */
static pthread_barrier_t start_line;
static _Atomic int stop;

static uint64_t mix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1Dull;
}

/* A value in [0, n) from the high bits of r. */
static inline uint64_t pick(uint64_t r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)r * n) >> 64);
}

static uint64_t thread_seed(int index)
{
	return mix64(((uint64_t)kernel << 32) | (uint64_t)index) | 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die_oom(size_t n)
{
	fprintf(stderr, "malloc: out of memory allocating %zu bytes\n", n);
	exit(1);
}

/* Records the first thing found wrong; the run goes on and exits 1. */
__attribute__((format(printf, 2, 3))) static void wrong(struct worker *w, const char *fmt, ...)
{
	if (w->error[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->error, sizeof w->error, fmt, ap);
	va_end(ap);
}

static bool should_stop(void)
{
	return atomic_load_explicit(&stop, memory_order_relaxed);
}

/* A thread's batch is done: its checksum kept (the first) or checked against the
 * first's, its calls counted. */
static void batch_done(struct worker *w, const char *kernel_name, uint64_t sum, uint64_t ops)
{
	if (w->batches == 0)
		w->batch_sum = sum;
	else if (sum != w->batch_sum)
		wrong(w, "%s: batch %" PRIu64 " read checksum %016" PRIx64 ", batch 1 %016" PRIx64,
		      kernel_name, w->batches + 1, sum, w->batch_sum);
	w->batches++;
	w->ops += ops;
}

/* ---------- a block: a tag at the start, tag ^ size at the end, a byte per page ---------- */

/* Sizes: mostly 8 B-1 KiB, more of them small (uniform within a power of two picked
 * uniformly); one in sixteen from 1 KiB to 64 KiB. */
static size_t mixed_size(uint64_t r)
{
	if ((r & 15) == 0)
		return 1024 + (size_t)pick(r, 63 * 1024 + 1);
	unsigned c = (unsigned)(r >> 4) % 7;        /* 8<<c .. 16<<c, capped at 1 KiB */
	size_t lo = (size_t)8 << c;
	size_t sz = lo + (size_t)pick(r, lo + 1);
	return sz > 1024 ? 1024 : sz;
}

/* 16 B-4 KiB, log-uniform. */
static size_t larson_size(uint64_t r)
{
	unsigned c = (unsigned)(r & 7);             /* 16<<c .. 32<<c, capped at 4 KiB */
	size_t lo = (size_t)16 << c;
	size_t sz = lo + (size_t)pick(r, lo + 1);
	return sz > 4096 ? 4096 : sz;
}

static void block_write(unsigned char *p, size_t size, uint64_t tag)
{
	memcpy(p, &tag, sizeof tag);
	for (size_t off = TOUCH_STRIDE; off + sizeof tag < size; off += TOUCH_STRIDE)
		p[off] = (unsigned char)tag;
	if (size >= 2 * sizeof tag) {
		uint64_t end = tag ^ size;
		memcpy(p + size - sizeof end, &end, sizeof end);
	}
}

/* Reads the block back; returns its tag, or sets *bad. */
static uint64_t block_read(const unsigned char *p, size_t size, bool *bad)
{
	uint64_t tag, end;
	memcpy(&tag, p, sizeof tag);
	for (size_t off = TOUCH_STRIDE; off + sizeof tag < size; off += TOUCH_STRIDE)
		if (p[off] != (unsigned char)tag)
			*bad = true;
	if (size >= 2 * sizeof tag) {
		memcpy(&end, p + size - sizeof end, sizeof end);
		if (end != (tag ^ size))
			*bad = true;
	}
	return tag;
}

/* ---------- mixed: random malloc/free over a slot array ---------- */

struct slot {
	unsigned char *p;
	size_t size;
	uint64_t tag;
};

static void *mixed_thread(void *arg)
{
	struct worker *w = arg;
	struct slot *slots = calloc(MIXED_SLOTS, sizeof *slots);
	if (!slots)
		die_oom(MIXED_SLOTS * sizeof *slots);
	pthread_barrier_wait(&start_line);
	do {
		uint64_t x = thread_seed(w->index), sum = 0, ops = 0;
		for (uint32_t i = 0; i < MIXED_PAIRS; i++) {
			uint64_t r = next_random(&x);
			struct slot *s = &slots[pick(r, MIXED_SLOTS)];
			if (s->p) {
				bool bad = false;
				uint64_t tag = block_read(s->p, s->size, &bad);
				if (bad || tag != s->tag)
					wrong(w, "mixed: a block of %zu bytes did not hold what was written",
					      s->size);
				sum += tag * (s->size | 1);
				free(s->p);
				ops++;
			}
			s->size = mixed_size(next_random(&x));
			s->tag = r;
			s->p = malloc(s->size);
			if (!s->p)
				die_oom(s->size);
			block_write(s->p, s->size, s->tag);
			ops++;
		}
		for (int i = 0; i < MIXED_SLOTS; i++) {
			struct slot *s = &slots[i];
			if (!s->p)
				continue;
			bool bad = false;
			sum += block_read(s->p, s->size, &bad) * (s->size | 1);
			if (bad)
				wrong(w, "mixed: a block of %zu bytes did not hold what was written", s->size);
			free(s->p);
			s->p = NULL;
			ops++;
		}
		batch_done(w, "mixed", sum, ops);
	} while (!should_stop());
	free(slots);
	return NULL;
}

/* ---------- larson: blocks made by one thread, freed by the next ---------- */

/* The tag carries the block's size in its low 16 bits, so the thread that frees the
 * block can check it without being told. */
static void *larson_make(uint64_t r, uint64_t salt)
{
	size_t size = larson_size(r);
	unsigned char *p = malloc(size);
	if (!p)
		die_oom(size);
	block_write(p, size, ((r ^ (salt << 32)) & ~(uint64_t)0xFFFF) | size);
	return p;
}

static uint64_t larson_take(struct worker *w, unsigned char *p)
{
	uint64_t tag;
	memcpy(&tag, p, sizeof tag);
	size_t size = (size_t)(tag & 0xFFFF);
	bool bad = size < 16 || size > 4096;
	if (!bad)
		block_read(p, size, &bad);
	if (bad)
		wrong(w, "larson: a block handed over (size %zu) did not hold what was written",
		      size);
	free(p);
	return tag;
}

/* Thread i hands its blocks to thread i+1 (mod N) through a single-producer
 * single-consumer queue, and frees what thread i-1 made. A thread makes whole batches,
 * the same each time; it takes blocks once its queue is over half full (so QUEUE_CAP/2
 * to QUEUE_CAP of them wait in each queue), or when it cannot hand any over, or at the
 * end. The blocks it frees in its k-th batch are those thread i-1 made in its k-th
 * batch, so every batch reads the same checksum. Each end publishes its index once a
 * burst and reads the other's only when it must, so the queue costs little next to
 * malloc and free; a thread with nothing to do yields (the machine may have fewer free
 * cpus than threads). */
static void *larson_thread(void *arg)
{
	struct worker *w = arg;
	struct queue *out = &queues[(w->index + 1) % n_threads];
	struct queue *in = &queues[w->index];
	uint32_t out_tail = 0, out_head_seen = 0, in_head = 0;
	uint64_t x = 0, made = 0, taken = 0, sum = 0, ops = 0, made_in_batch = LARSON_BATCH;
	bool making = true;
	pthread_barrier_wait(&start_line);
	for (;;) {
		uint32_t pushed = 0, popped = 0;
		if (making) {
			uint32_t room = QUEUE_CAP - (out_tail - out_head_seen);
			if (room < QUEUE_BURST) {
				out_head_seen = atomic_load_explicit(&out->head, memory_order_acquire);
				room = QUEUE_CAP - (out_tail - out_head_seen);
			}
			while (pushed < room && pushed < QUEUE_BURST) {
				if (made_in_batch == LARSON_BATCH) {
					if (made > 0 && should_stop()) {
						making = false;
						break;
					}
					x = thread_seed(w->index);
					made_in_batch = 0;
				}
				out->slot[out_tail % QUEUE_CAP] = larson_make(next_random(&x), made_in_batch);
				out_tail++;
				pushed++;
				made++;
				made_in_batch++;
			}
			ops += pushed;
			atomic_store_explicit(&out->tail, out_tail, memory_order_release);
			if (!making) {
				out->produced = made;
				atomic_store_explicit(&out->done, 1, memory_order_release);
			}
		}
		/* done before tail: once done is seen, the tail read after it is the last. */
		bool draining = atomic_load_explicit(&in->done, memory_order_acquire);
		uint32_t avail = atomic_load_explicit(&in->tail, memory_order_acquire) - in_head;
		if (draining && avail == 0 && !making) {
			if (taken != in->produced)
				wrong(w, "larson: took %" PRIu64 " blocks of %" PRIu64 " made", taken,
				      in->produced);
			break;
		}
		if (draining || !making || pushed == 0 || avail > QUEUE_CAP / 2) {
			while (popped < avail && popped < QUEUE_BURST) {
				sum += larson_take(w, in->slot[in_head % QUEUE_CAP]);
				in_head++;
				popped++;
				taken++;
				if (taken % LARSON_BATCH == 0) {
					if (taken == LARSON_BATCH)
						w->batch_sum = sum;
					else if (sum != w->batch_sum)
						wrong(w, "larson: batch %" PRIu64 " read checksum %016" PRIx64
						      ", batch 1 %016" PRIx64, taken / LARSON_BATCH, sum,
						      w->batch_sum);
					sum = 0;
					w->batches++;
				}
			}
			ops += popped;
			atomic_store_explicit(&in->head, in_head, memory_order_release);
		}
		if (pushed == 0 && popped == 0)
			sched_yield();
	}
	if (taken % LARSON_BATCH)
		wrong(w, "larson: took %" PRIu64 " blocks, not whole batches", taken);
	w->ops += ops;
	return NULL;
}

/* ---------- realloc: strings built by appending, grown by realloc ---------- */

struct string {
	unsigned char *p;
	size_t len, cap, target;
	size_t offset;      /* where in the pattern the string starts */
	bool step;          /* realloc to the exact length at each append */
};

static void string_start(struct string *s, uint64_t *x)
{
	uint64_t r = next_random(x);
	s->step = r & 1;
	/* Log-uniform lengths: 64 B .. STRING_MAX, or .. STEP_STRING_MAX when growing by steps. */
	size_t max = s->step ? STEP_STRING_MAX : STRING_MAX;
	unsigned bits = 6 + (unsigned)pick(r, (unsigned)(63 - __builtin_clzll(max)) - 6 + 1);
	size_t lo = (size_t)1 << bits;
	s->target = lo + (size_t)pick(next_random(x), lo);
	if (s->target > max)
		s->target = max;
	s->offset = (size_t)pick(next_random(x), PATTERN_LEN);
	s->p = NULL;
	s->len = s->cap = 0;
}

/* Checks the string at a few places (and its ends) against the pattern; frees it. */
static uint64_t string_finish(struct worker *w, struct string *s, uint64_t *ops)
{
	uint64_t sum = s->len;
	if (s->p) {
		uint64_t y = s->offset * 0x9E3779B97F4A7C15ull + s->len + 1;
		for (int k = 0; k < SAMPLES + 2; k++) {
			size_t at = k == SAMPLES ? 0 : k == SAMPLES + 1 ? s->len - 1 :
				    (size_t)pick(next_random(&y), s->len);
			unsigned char want = pattern[(s->offset + at) % PATTERN_LEN];
			if (s->p[at] != want)
				wrong(w, "realloc: byte %zu of a string of %zu is %u, not %u", at, s->len,
				      s->p[at], want);
			sum = sum * 31 + s->p[at] + at;
		}
		free(s->p);
		++*ops;
	}
	s->p = NULL;
	return sum;
}

static void *realloc_thread(void *arg)
{
	struct worker *w = arg;
	struct string strings[REALLOC_ACTIVE];
	pthread_barrier_wait(&start_line);
	do {
		uint64_t x = thread_seed(w->index), sum = 0, ops = 0;
		for (int i = 0; i < REALLOC_ACTIVE; i++)
			string_start(&strings[i], &x);
		for (uint32_t a = 0; a < REALLOC_APPENDS; a++) {
			uint64_t r = next_random(&x);
			struct string *s = &strings[pick(r, REALLOC_ACTIVE)];
			/* Chunks of 1-64 bytes, like words and numbers; one in 32 is 256 B-4 KiB. */
			size_t n = (r & 31) == 0 ? 256 + (size_t)((r >> 5) % (CHUNK_MAX - 255)) :
						   1 + (size_t)((r >> 5) % 64);
			if (n > s->target - s->len)
				n = s->target - s->len;
			if (s->len + n > s->cap) {
				size_t cap = s->step ? s->len + n : s->cap + s->cap / 2 + ((r >> 17) & 63) + n;
				unsigned char *p = realloc(s->p, cap);
				if (!p)
					die_oom(cap);
				s->p = p;
				s->cap = cap;
				ops++;
			}
			memcpy(s->p + s->len, pattern + (s->offset + s->len) % PATTERN_LEN, n);
			s->len += n;
			if (s->len == s->target) {
				sum += string_finish(w, s, &ops);
				string_start(s, &x);
			}
		}
		for (int i = 0; i < REALLOC_ACTIVE; i++)
			sum += string_finish(w, &strings[i], &ops);
		batch_done(w, "realloc", sum, ops);
	} while (!should_stop());
	return NULL;
}

/* ---------- burst: a burst of blocks malloc'd, filled, then all freed ---------- */

/* For each size and each count, bursts of that many blocks of that size until about
 * BURST_CALLS mallocs: each block filled with words of its own, each read back before
 * its free. A thread's cache of a class holds the small bursts; the long ones go
 * through whatever is behind it. */
static void *burst_thread(void *arg)
{
	struct worker *w = arg;
	uint32_t **p = malloc(1600 * sizeof *p);
	if (!p)
		die_oom(1600 * sizeof *p);
	pthread_barrier_wait(&start_line);
	do {
		uint64_t sum = 0, ops = 0;
		for (size_t z = 0; z < sizeof burst_sizes / sizeof *burst_sizes; z++) {
			size_t size = burst_sizes[z], words = size / sizeof **p;
			for (size_t c = 0; c < sizeof burst_counts / sizeof *burst_counts; c++) {
				unsigned n = burst_counts[c];
				for (uint32_t rep = 0; rep < BURST_CALLS / n; rep++) {
					for (unsigned i = 0; i < n; i++) {
						p[i] = malloc(size);
						if (!p[i])
							die_oom(size);
						for (size_t k = 0; k < words; k++)
							p[i][k] = i * 131u + (uint32_t)k;
					}
					for (unsigned i = 0; i < n; i++) {
						for (size_t k = 0; k < words; k++)
							if (p[i][k] != i * 131u + (uint32_t)k)
								wrong(w, "burst: a block of %zu bytes did not "
								      "hold what was written", size);
						sum += p[i][words - 1];
						free(p[i]);
					}
					ops += 2 * n;
				}
			}
		}
		batch_done(w, "burst", sum, ops);
	} while (!should_stop());
	free(p);
	return NULL;
}

/* ---------- main ---------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: malloc KERNEL THREADS [SECONDS]\n"
		"       malloc --size THREADS   (mixed for 0.5 s; prints superpage bench's result line)\n"
		"  mixed    random malloc/free of 8 B-64 KiB (mostly <= 1 KiB) over %d slots a thread\n"
		"  larson   each thread mallocs 16 B-4 KiB blocks and hands them to the next,\n"
		"           which frees them (through a lock-free queue of %d)\n"
		"  realloc  strings of 64 B-6 MiB built by appending 1 B-4 KiB chunks, grown by\n"
		"           realloc geometrically or to the exact length, then freed\n"
		"  burst    bursts of 25 to 1600 blocks of 16, 32 and 64 B malloc'd and filled,\n"
		"           then all freed\n"
		"THREADS from 1 to %d, SECONDS the time to run (default 1; whole batches).\n"
		"Prints: kernel=K threads=N ops_per_s=X seconds=S checksum=C\n"
		"(ops: calls to malloc, free and realloc; the checksum is the same under any malloc)\n",
		MIXED_SLOTS, QUEUE_CAP, MAX_THREADS);
}

int main(int argc, char **argv)
{
	bool contract = argc == 3 && !strcmp(argv[1], "--size");
	char *mixed_args[] = { argv[0], "mixed", argc > 2 ? argv[2] : NULL, "0.5", NULL };

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (contract) {
		argv = mixed_args;
		argc = 4;
	}
	if (argc < 3 || argc > 4) {
		usage(stderr);
		return 2;
	}
	int k;
	for (k = 0; k < NKERNEL; k++)
		if (!strcmp(argv[1], kernel_names[k]))
			break;
	if (k == NKERNEL) {
		fprintf(stderr, "malloc: unknown kernel '%s' (mixed, larson, realloc, burst)\n", argv[1]);
		return 2;
	}
	char *end;
	errno = 0;
	long t = strtol(argv[2], &end, 10);
	if (errno || end == argv[2] || *end || t < 1 || t > MAX_THREADS) {
		fprintf(stderr, "malloc: THREADS '%s' is not from 1 to %d\n", argv[2], MAX_THREADS);
		return 2;
	}
	double seconds = 1.0;
	if (argc == 4) {
		seconds = strtod(argv[3], &end);
		if (end == argv[3] || *end || !(seconds > 0 && seconds <= 3600)) {
			fprintf(stderr, "malloc: SECONDS '%s' is not from 0 to 3600\n", argv[3]);
			return 2;
		}
	}
	kernel = (enum kernel)k;
	n_threads = (int)t;

	if (kernel == K_LARSON) {
		queues = aligned_alloc(CACHE_LINE, (size_t)n_threads * sizeof *queues);
		if (!queues)
			die_oom((size_t)n_threads * sizeof *queues);
		memset(queues, 0, (size_t)n_threads * sizeof *queues);
	}
	if (kernel == K_REALLOC) {
		pattern = malloc(PATTERN_LEN + CHUNK_MAX);
		if (!pattern)
			die_oom(PATTERN_LEN + CHUNK_MAX);
		uint64_t x = 0x5DEECE66Dull;
		for (size_t i = 0; i < PATTERN_LEN; i++)
			pattern[i] = (unsigned char)(next_random(&x) >> 56);
		memcpy(pattern + PATTERN_LEN, pattern, CHUNK_MAX);
	}

	void *(*fn)(void *) = kernel == K_MIXED ? mixed_thread : kernel == K_LARSON ? larson_thread :
			      kernel == K_REALLOC ? realloc_thread : burst_thread;
	pthread_barrier_init(&start_line, NULL, (unsigned)n_threads + 1);
	for (int i = 0; i < n_threads; i++) {
		workers[i].index = i;
		int rc = pthread_create(&workers[i].thread, NULL, fn, &workers[i]);
		if (rc) {
			fprintf(stderr, "malloc: pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}
	pthread_barrier_wait(&start_line);
	double t0 = now_s();
	struct timespec nap = { .tv_sec = (time_t)seconds,
				.tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
	while (nanosleep(&nap, &nap) < 0 && errno == EINTR)
		;
	atomic_store(&stop, 1);
	uint64_t ops = 0, checksum = 0;
	for (int i = 0; i < n_threads; i++) {
		pthread_join(workers[i].thread, NULL);
		ops += workers[i].ops;
		checksum += mix64(workers[i].batch_sum + (uint64_t)i);
	}
	double dt = now_s() - t0;

	bool ok = true;
	for (int i = 0; i < n_threads; i++)
		if (workers[i].error[0]) {
			fprintf(stderr, "malloc: thread %d: %s\n", i, workers[i].error);
			ok = false;
		}
	if (contract) {
		struct bench_args a = { .size = (uint64_t)n_threads };
		bench_result(&a, "malloc/mixed", a.size, ops ? dt * 1e6 / (double)ops : 0,
			     (double)ops / dt, "ops/s", ok && ops);
		free(queues);
		free(pattern);
		return bench_exit(&a);
	}
	printf("kernel=%s threads=%d ops_per_s=%.0f seconds=%.3f checksum=%016" PRIx64 "\n",
	       kernel_names[kernel], n_threads, (double)ops / dt, dt, checksum);
	free(queues);
	free(pattern);
	return ok ? 0 : 1;
}
