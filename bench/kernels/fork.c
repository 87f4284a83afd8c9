/* fork.c - the cost of fork() in a program whose threads allocate while it forks.
 *
 * What a server or an interpreter that runs subprocesses does: its heap is busy and
 * large when it forks. The time taken is that of the fork() call in the parent, the
 * fork handlers of the malloc in use included (under superpage run, the runtime's:
 * with hugetlb memory in the heap it checks the pool's room there, and moves units to
 * THP when the pool has none: src/runtime/fork.c); fork/child adds the child's life,
 * in which the runtime's child handler copies the hugetlb memory it shares.
 *
 * The memory line (BENCH_SMAPS) is read when the forks begin: the pages the backing
 * gave the data. The forks change them, and that is their cost, not the backing's:
 * the kernel splits a THP page that the parent writes while a child shares it (one
 * fork of the 40M heap split a tenth to a quarter of it, 300 left the threads' part on
 * 4 KiB pages), and under 2m and 1g the runtime moves units to THP when the pool has
 * no room for a fork, and puts new ones there while children copy. stderr gives the
 * line again after the forks. Built as the ideal (-DBENCH_IDEAL), the data held is one
 * array from bench_alloc, and the threads' blocks are glibc's. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "kernel.h"

#define MAX_THREADS 64
#define SLOTS 512          /* blocks a thread holds at once */
#define TOUCH_STRIDE 4096
#define MIN_FORKS 30       /* forks made before the time budget can end the run */
#define BUDGET_S 10.0
#define SAMPLES 32         /* words of the held data a child checks */
#define GIB (1ull << 30)

static const char usage[] =
	"Fork cost: THREADS threads malloc and free blocks of mixed sizes (16 B to 4 MiB,\n"
	"most under 1 KiB), writing and checking each, while the main thread forks again and\n"
	"again. Each child checks that it sees the parent's data (a count written just before\n"
	"the fork, and words of the data held), mallocs and writes 64 KiB and _exits; the\n"
	"parent waits for it before the next fork. Result lines, in ms/fork:\n"
	"  fork/median  the median time of the fork() call in the parent\n"
	"  fork/p90     its 90th percentile\n"
	"  fork/child   the median time from the fork() call to the child reaped\n"
	"  --size N     bytes of data the program holds besides, filled (default 40M): blocks\n"
	"               of 64 KiB-4 MiB; from 2G on, half of it (whole GiBs) is one array\n"
	"  --reps R     forks (default 300); once 10 s have passed, 30 are enough\n"
	"  --threads T  threads allocating, 0 to 64 (default 2)\n"
	"  --child-reads  each child checks every word of the held data, not 32 (it reads\n"
	"               it all, as the runtime's child does under 2m to copy it: the\n"
	"               parent's next fork then finds the kernel's page data cold)\n"
	"The held data is checked whole at the end.\n";

struct slot {
	unsigned char *p;
	size_t size;
	uint64_t tag;
};

struct churn {
	pthread_t thread;
	int index;
	_Atomic uint64_t ops; /* mallocs made; read by the main thread */
	_Atomic int done;     /* it stopped (told to, or malloc failed) */
	char error[160]; /* the first thing found wrong */
};

/* The data held across the forks: blocks[0] is the array (NULL below 2G). */
static uint64_t **blocks;
static size_t *block_words;
static size_t n_blocks;
static _Atomic int stop;
static volatile uint64_t *generation; /* in the heap: the fork's number, for the child */

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1Dull;
}

/* A value in [0, n) from the high bits of r. */
static uint64_t pick(uint64_t r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)r * n) >> 64);
}

/* Word j of held block b. */
static uint64_t pattern(size_t b, size_t j)
{
	return ((uint64_t)(b + 1) << 40) ^ ((uint64_t)j * 0x9E3779B97F4A7C15ull);
}

/* ---------- the threads that allocate ---------- */

/* Mostly 16 B-1 KiB; one in 16 from 1 KiB to 64 KiB; one in 256 from 64 KiB to 4 MiB. */
static size_t churn_size(uint64_t r, uint64_t *x)
{
	if ((r & 255) == 0) {
		size_t lo = (size_t)64 << (10 + pick(r, 6));
		size_t sz = lo + (size_t)pick(next_random(x), lo);

		return sz > (4u << 20) ? 4u << 20 : sz;
	}
	if ((r & 15) == 0)
		return 1024 + (size_t)pick(r, 63 * 1024);
	return 16 + (size_t)pick(r, 1009);
}

/* A tag at the start, tag ^ size at the end, a byte of it in every page between. */
static void block_write(unsigned char *p, size_t size, uint64_t tag)
{
	uint64_t end = tag ^ size;

	memcpy(p, &tag, sizeof tag);
	for (size_t off = TOUCH_STRIDE; off + sizeof tag < size; off += TOUCH_STRIDE)
		p[off] = (unsigned char)tag;
	memcpy(p + size - sizeof end, &end, sizeof end);
}

static bool block_holds(const unsigned char *p, size_t size, uint64_t tag)
{
	uint64_t head, end;

	memcpy(&head, p, sizeof head);
	memcpy(&end, p + size - sizeof end, sizeof end);
	for (size_t off = TOUCH_STRIDE; off + sizeof tag < size; off += TOUCH_STRIDE)
		if (p[off] != (unsigned char)tag)
			return false;
	return head == tag && end == (tag ^ size);
}

static void churn_check(struct churn *c, const struct slot *s)
{
	if (!c->error[0] && !block_holds(s->p, s->size, s->tag))
		snprintf(c->error, sizeof c->error, "a block of %zu bytes did not hold what was written",
			 s->size);
}

static void *churn_thread(void *arg)
{
	struct churn *c = arg;
	struct slot *slots = calloc(SLOTS, sizeof *slots);
	uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(c->index + 1) | 1, ops = 0;

	if (!slots) {
		snprintf(c->error, sizeof c->error, "out of memory");
		atomic_store(&c->done, 1);
		return NULL;
	}
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t r = next_random(&x);
		struct slot *s = &slots[pick(r, SLOTS)];

		if (s->p) {
			churn_check(c, s);
			free(s->p);
		}
		s->size = churn_size(next_random(&x), &x);
		s->tag = r;
		s->p = malloc(s->size);
		if (!s->p) {
			snprintf(c->error, sizeof c->error, "malloc(%zu) failed", s->size);
			break;
		}
		block_write(s->p, s->size, s->tag);
		atomic_store_explicit(&c->ops, ++ops, memory_order_relaxed);
	}
	atomic_store(&c->done, 1);
	for (int i = 0; i < SLOTS; i++)
		if (slots[i].p) {
			churn_check(c, &slots[i]);
			free(slots[i].p);
		}
	free(slots);
	return NULL;
}

/* ---------- the data held ---------- */

static void hold_block(size_t b, uint64_t *p, size_t words)
{
	blocks[b] = p;
	block_words[b] = words;
	for (size_t j = 0; j < words; j++)
		p[j] = pattern(b, j);
}

/* size bytes: from 2G on, half of it in whole GiBs as blocks[0]; the rest in blocks of
 * 64 KiB-4 MiB, drawn from one seed so every run holds the same. The ideal holds all
 * of it as blocks[0], one strict array of huge pages: what a fork of that much
 * explicit huge memory costs the kernel. */
static void hold_data(uint64_t size)
{
#ifdef BENCH_IDEAL
	uint64_t array = size & ~(uint64_t)7, left = 0;
#else
	uint64_t array = size >= 2 * GIB ? size / 2 / GIB * GIB : 0, left = size - array;
#endif
	size_t cap = (size_t)(left / (64 << 10)) + 2;
	uint64_t x = 0x2545F4914F6CDD1Dull;

	blocks = calloc(cap, sizeof *blocks);
	block_words = calloc(cap, sizeof *block_words);
	if (!blocks || !block_words) {
		fprintf(stderr, "fork: out of memory\n");
		exit(1);
	}
	n_blocks = 1;
	if (array)
		hold_block(0, bench_alloc(array), array / 8);
	while (left >= 8 && n_blocks < cap) {
		uint64_t r = next_random(&x);
		size_t lo = (size_t)64 << (10 + pick(r, 6));
		size_t bytes = (lo + (size_t)pick(next_random(&x), lo)) & ~(size_t)7;
		uint64_t *p;

		if (bytes > (4u << 20))
			bytes = 4u << 20;
		if (bytes > left)
			bytes = (size_t)left & ~(size_t)7;
		p = malloc(bytes);
		if (!p) {
			fprintf(stderr, "fork: malloc(%zu) failed\n", bytes);
			exit(1);
		}
		hold_block(n_blocks++, p, bytes / 8);
		left -= bytes;
	}
}

/* Words of the held data that are not what was written (all of them, or samples). */
static uint64_t held_wrong(uint64_t samples, uint64_t seed)
{
	uint64_t bad = 0, x = seed | 1;

	if (samples == 0) {
		for (size_t b = 0; b < n_blocks; b++)
			for (size_t j = 0; j < block_words[b]; j++)
				bad += blocks[b][j] != pattern(b, j);
		return bad;
	}
	for (uint64_t i = 0; i < samples; i++) {
		size_t b = (size_t)pick(next_random(&x), n_blocks);

		if (block_words[b]) {
			size_t j = (size_t)pick(next_random(&x), block_words[b]);

			bad += blocks[b][j] != pattern(b, j);
		}
	}
	return bad;
}

/* ---------- the child ---------- */

static bool child_reads; /* --child-reads */

/* Sees the parent's data, touches a little memory of its own, and goes. */
static __attribute__((noreturn)) void child(uint64_t gen)
{
	uint64_t samples = child_reads ? 0 : SAMPLES;
	bool ok = *generation == gen && held_wrong(samples, gen * 0x9E3779B97F4A7C15ull) == 0;
	unsigned char *p = malloc(64 << 10);

	if (p) {
		memset(p, (int)gen, 64 << 10);
		ok = ok && p[(64 << 10) - 1] == (unsigned char)gen;
		free(p);
	}
	_exit(ok ? 0 : 1);
}

/* ---------- main ---------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --threads T and --child-reads are the kernel's own: taken out of argv before the
 * common options. */
static int take_threads(int *argc, char **argv)
{
	int threads = 2;

	for (int i = 1; i < *argc; i++) {
		char *end;
		long t;

		if (!strcmp(argv[i], "--child-reads")) {
			child_reads = true;
			memmove(&argv[i], &argv[i + 1], (size_t)(*argc - i) * sizeof *argv);
			(*argc)--;
			i--;
			continue;
		}
		if (strcmp(argv[i], "--threads"))
			continue;
		errno = 0;
		t = i + 1 < *argc ? strtol(argv[i + 1], &end, 10) : -1;
		if (i + 1 >= *argc || errno || end == argv[i + 1] || *end || t < 0 || t > MAX_THREADS) {
			fprintf(stderr, "%s: --threads takes 0 to %d\n", argv[0], MAX_THREADS);
			exit(2);
		}
		threads = (int)t;
		memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 1) * sizeof *argv);
		*argc -= 2;
		i--;
	}
	return threads;
}

int main(int argc, char **argv)
{
	static struct churn churns[MAX_THREADS];
	struct bench_args a;
	int threads = take_threads(&argc, argv);
	double *fork_s, *child_s, t_start;
	unsigned forks = 0, wrong = 0, died = 0;
	uint64_t ops = 0, bad;
	bool threads_ok = true;

	bench_parse_args(argc, argv, usage, 40ull << 20, 300, &a);
	fork_s = calloc(a.reps, sizeof *fork_s);
	child_s = calloc(a.reps, sizeof *child_s);
	generation = malloc(sizeof *generation);
	if (!fork_s || !child_s || !generation) {
		fprintf(stderr, "fork: out of memory\n");
		return 1;
	}
	hold_data(a.size);
	for (int i = 0; i < threads; i++) {
		int rc;

		churns[i].index = i;
		if ((rc = pthread_create(&churns[i].thread, NULL, churn_thread, &churns[i]))) {
			fprintf(stderr, "fork: pthread_create: %s\n", strerror(rc));
			return 1;
		}
	}

	/* The forks begin once every thread has filled its slots a few times over. */
	for (int i = 0; i < threads; i++)
		while (atomic_load(&churns[i].ops) < 4 * SLOTS && !atomic_load(&churns[i].done))
			usleep(1000);
	if (getenv("BENCH_SMAPS"))
		bench_print_memory();
	t_start = bench_now();
	while (forks < a.reps && (forks < MIN_FORKS || bench_now() - t_start < BUDGET_S)) {
		double t0, t1;
		int status;
		pid_t pid;

		*generation = forks + 1;
		t0 = bench_now();
		pid = fork();
		t1 = bench_now();
		if (pid == 0)
			child(forks + 1);
		if (pid < 0) {
			fprintf(stderr, "fork: fork() failed after %u forks: %s\n", forks, strerror(errno));
			a.failed = 1;
			break;
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		fork_s[forks] = t1 - t0;
		child_s[forks] = bench_now() - t0;
		forks++;
		if (WIFSIGNALED(status) && died++ == 0)
			fprintf(stderr, "fork: child %u died of signal %d\n", forks, WTERMSIG(status));
		else if (WIFEXITED(status) && WEXITSTATUS(status) && wrong++ == 0)
			fprintf(stderr, "fork: child %u did not see the parent's data\n", forks);
	}
	fprintf(stderr, "fork: after the forks: ");
	bench_print_memory_to(stderr);

	atomic_store(&stop, 1);
	for (int i = 0; i < threads; i++) {
		pthread_join(churns[i].thread, NULL);
		ops += churns[i].ops;
		if (churns[i].error[0]) {
			fprintf(stderr, "fork: thread %d: %s\n", i, churns[i].error);
			threads_ok = false;
		}
	}
	bad = held_wrong(0, 0);
	if (bad)
		fprintf(stderr, "fork: %llu words of the data held are wrong after the forks\n",
			(unsigned long long)bad);
	if (forks == 0)
		return 1;

	bool ok = !wrong && !died && !bad && threads_ok;
	double med, p90, reaped = median_of(child_s, forks);

	fprintf(stderr, "fork: %u forks in %.2f s holding %llu bytes in %zu blocks, %d threads "
		"allocating (%llu mallocs); %u children wrong, %u died\n", forks,
		bench_now() - t_start, (unsigned long long)a.size, n_blocks - !blocks[0], threads,
		(unsigned long long)ops, wrong, died);
	qsort(fork_s, forks, sizeof *fork_s, cmp_double);
	p90 = fork_s[(forks * 9 + 9) / 10 - 1];
	med = median_of(fork_s, forks);
	fprintf(stderr, "fork: fork() took %.3f ms median, %.3f ms p90, %.3f to %.3f ms; the child "
		"was reaped %.3f ms after the call, median\n", med * 1e3, p90 * 1e3, fork_s[0] * 1e3,
		fork_s[forks - 1] * 1e3, reaped * 1e3);
	bench_result(&a, "fork/median", a.size, med, med * 1e3, "ms/fork", ok);
	bench_result(&a, "fork/p90", a.size, p90, p90 * 1e3, "ms/fork", ok);
	bench_result(&a, "fork/child", a.size, reaped, reaped * 1e3, "ms/fork", ok);
	return a.failed;
}
