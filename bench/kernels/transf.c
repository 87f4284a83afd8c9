/* transf.c - the seed's trans.f in C: a column-major transpose, inner loop striding n*8 bytes. */
#include "kernel.h"

#define DEFAULT_N 8192
#define MAX_N (1u << 24) /* keeps n * n * 8 and every cell value exact in a double */
#define AUTO_N 8192       /* the default --reps does the work of one transpose at this n */
#define MAX_REPS 1000000  /* what --reps accepts */

static const char usage[] =
	"Transposes an n x n matrix of doubles out of place as Fortran would, b(j,i) = a(i,j)\n"
	"with column-major arrays: the inner loop runs along a row of a, n*8 bytes a step (a\n"
	"new 4 KiB page every step once n >= 512, the TLB-bound walk), and down a column of\n"
	"b, contiguously. Reports MB/s (10^6 bytes/s), counting 2*n*n*8 bytes moved a\n"
	"transpose.\n"
	"  --size N  the matrix order n (default 8192, two 512 MiB arrays; the seed used 1000)\n"
	"  --reps R  transposes timed (default (8192/n)^2, at least 1: one at n=8192, 67 at\n"
	"            the seed's n=1000, 1024 at n=256)\n";

/* Where element (i, j) lives in a column-major n x n array. */
static inline size_t at(size_t i, size_t j, size_t n)
{
	return j * n + i;
}

/* What a(i, j) holds: distinct for every cell and exact in a double, so a misplaced
 * element cannot pass the check. */
static inline double cell(size_t i, size_t j, size_t n)
{
	return (double)at(i, j, n);
}

/* do i = 1, n; do j = 1, n; b(j, i) = a(i, j) */
static void transpose(double *restrict b, const double *restrict a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			b[at(j, i, n)] = a[at(i, j, n)];
}

/* Walks b in memory order, so the full check costs one sequential pass, not another transpose. */
static int check(const double *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			if (b[at(j, i, n)] != cell(i, j, n)) {
				fprintf(stderr, "transf: b(%zu,%zu) = %g, want %g\n", j, i,
					b[at(j, i, n)], cell(i, j, n));
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
		fprintf(stderr, "transf: --size %llu is too large (at most %u)\n",
			(unsigned long long)args.size, MAX_N);
		return 2;
	}
	n = (size_t)args.size;
	if (!args.reps)
		args.reps = bench_square_reps(n, AUTO_N);
	bytes = n * n * sizeof(double);

	a = bench_alloc(bytes);
	b = bench_alloc(bytes);
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < n; i++)
			a[at(i, j, n)] = cell(i, j, n);
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

	bench_result(&args, "transf", n, secs, 2.0 * (double)bytes * args.reps / secs / 1e6,
		     "MB/s", check(b, n));
	return bench_exit(&args);
}
