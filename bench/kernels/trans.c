/* trans.c - the seed's trans.c: an n x n transpose, a read by rows, b written by columns. */
#include "kernel.h"

#define DEFAULT_N 8192
#define MAX_N (1u << 24) /* keeps n * n * 8 and every cell value exact in a double */
#define AUTO_N 8192       /* the default --reps does the work of one transpose at this n */
#define MAX_REPS 1000000  /* what --reps accepts */

static const char usage[] =
	"Transposes an n x n matrix of doubles out of place, b[j][i] = a[i][j] (row-major\n"
	"C): a is read along its rows, b is written down its columns, a stride of n*8 bytes\n"
	"a store. Reports MB/s (10^6 bytes/s), counting 2*n*n*8 bytes moved a transpose.\n"
	"  --size N  the matrix order n (default 8192, two 512 MiB arrays; the seed used 1000)\n"
	"  --reps R  transposes timed (default (8192/n)^2, at least 1: one at n=8192, 67 at\n"
	"            the seed's n=1000, 1024 at n=256)\n";

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
static int check(const double *b, size_t n)
{
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < n; i++)
			if (b[j * n + i] != cell(i, j, n)) {
				fprintf(stderr, "trans: b[%zu][%zu] = %g, want %g\n", j, i,
					b[j * n + i], cell(i, j, n));
				return 0;
			}
	return 1;
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t n, bytes;
	double *a, *b, t0, secs;

	/* reps 0 cannot come from the command line: it means "not given". */
	bench_parse_args(argc, argv, usage, DEFAULT_N, 0, &args);
	if (args.size > MAX_N) {
		fprintf(stderr, "trans: --size %llu is too large (at most %u)\n",
			(unsigned long long)args.size, MAX_N);
		return 2;
	}
	n = (size_t)args.size;
	if (!args.reps)
		args.reps = bench_square_reps(n, AUTO_N);
	bytes = n * n * sizeof(double);

	a = bench_alloc(bytes);
	b = bench_alloc(bytes);
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			a[i * n + j] = cell(i, j, n);
	/* Touches b before the clock starts, with a value the check would reject. */
	for (size_t k = 0; k < n * n; k++)
		b[k] = -1.0;

	t0 = bench_now();
	for (unsigned r = 0; r < args.reps; r++) {
		transpose(b, a, n);
		/* Every rep stores the same values: keep the compiler from merging them. */
		__asm__ volatile("" ::: "memory");
	}
	secs = bench_now() - t0;

	bench_result(&args, "trans", n, secs, 2.0 * (double)bytes * args.reps / secs / 1e6, "MB/s",
		     check(b, n));
	return bench_exit(&args);
}
