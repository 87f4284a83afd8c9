/* transw.c - the seed's transw.c (vm_align): a big transpose, arrays on and off the 2 MiB grid. */
#include "kernel.h"

#define DEFAULT_N 8192
#define MAX_N (1u << 24) /* keeps n * n * 8 and every cell value exact in a double */
#define AUTO_N 8192       /* the default --reps does the work of one transpose at this n */
#define MAX_REPS 1000000  /* what --reps accepts */
#define HUGE_2M ((uintptr_t)2 << 20)
/* Half a huge page and one base page: every 2 MiB boundary falls mid-array, and no
 * row starts where a huge page does. */
#define OFFSET (((uintptr_t)1 << 20) + 4096)

static const char usage[] =
	"Transposes an n x n matrix of doubles out of place, b[j][i] = a[i][j] (row-major\n"
	"C, a read by rows, b written by columns), twice, one result line each:\n"
	"  transw/aligned  a and b start on 2 MiB boundaries\n"
	"  transw/offset   a and b start 1 MiB + 4 KiB past a 2 MiB boundary\n"
	"Both views lie in the same two blocks, so only the placement differs. Reports MB/s\n"
	"(10^6 bytes/s), counting 2*n*n*8 bytes moved a transpose.\n"
	"  --size N  the matrix order n (default 8192, two 512 MiB arrays; the seed names no\n"
	"            size, only \"a very large working set\")\n"
	"  --reps R  transposes timed per case (default (8192/n)^2, at least 1: one at\n"
	"            n=8192, 1024 at n=256)\n";

/* What a[i][j] holds: distinct for every cell and exact in a double, so a misplaced
 * element cannot pass the check. */
static inline double cell(size_t i, size_t j, size_t n)
{
	return (double)(i * n + j);
}

static void transpose(double *restrict b, const double *restrict a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			b[j * n + i] = a[i * n + j];
}

/* Walks b in memory order, so the full check costs one sequential pass, not another transpose. */
static int check(const char *name, const double *b, size_t n)
{
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < n; i++)
			if (b[j * n + i] != cell(i, j, n)) {
				fprintf(stderr, "%s: b[%zu][%zu] = %g, want %g\n", name, j, i,
					b[j * n + i], cell(i, j, n));
				return 0;
			}
	return 1;
}

/* The array offset bytes past the first 2 MiB boundary in block. */
static double *place(void *block, uintptr_t offset)
{
	uintptr_t p = ((uintptr_t)block + HUGE_2M - 1) & ~(HUGE_2M - 1);

	return (double *)(p + offset);
}

static void run_case(struct bench_args *args, const char *name, void *block_a, void *block_b,
		     uintptr_t offset, size_t n)
{
	double *a = place(block_a, offset), *b = place(block_b, offset);
	double t0, secs, bytes = (double)n * (double)n * sizeof(double);

	/* The views overlap the other case's, so each case fills its own a and clears its b. */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			a[i * n + j] = cell(i, j, n);
	for (size_t k = 0; k < n * n; k++)
		b[k] = -1.0;
	fprintf(stderr, "%s: a at %p, b at %p (%#lx past 2 MiB)\n", name, (void *)a, (void *)b,
		(unsigned long)offset);

	t0 = bench_now();
	for (unsigned r = 0; r < args->reps; r++) {
		transpose(b, a, n);
		/* Every rep stores the same values: keep the compiler from merging them. */
		__asm__ volatile("" ::: "memory");
	}
	secs = bench_now() - t0;

	bench_result(args, name, n, secs, 2.0 * bytes * args->reps / secs / 1e6, "MB/s",
		     check(name, b, n));
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t n, block;
	void *block_a, *block_b;

	/* reps 0 cannot come from the command line: it means "not given". */
	bench_parse_args(argc, argv, usage, DEFAULT_N, 0, &args);
	if (args.size > MAX_N) {
		fprintf(stderr, "transw: --size %llu is too large (at most %u)\n",
			(unsigned long long)args.size, MAX_N);
		return 2;
	}
	n = (size_t)args.size;
	if (!args.reps)
		args.reps = bench_square_reps(n, AUTO_N);
	/* Room to round up to 2 MiB and then move on by OFFSET. */
	block = n * n * sizeof(double) + HUGE_2M + OFFSET;

	block_a = bench_alloc(block);
	block_b = bench_alloc(block);
	run_case(&args, "transw/aligned", block_a, block_b, 0, n);
	run_case(&args, "transw/offset", block_a, block_b, OFFSET, n);
	return bench_exit(&args);
}
