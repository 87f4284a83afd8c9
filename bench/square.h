/* bench/square.h - what the n x n transpose kernels share: size limit, matrices, timing, check. */
#ifndef BENCH_SQUARE_H
#define BENCH_SQUARE_H

#include "kernel.h"

#define BENCH_SQUARE_DEFAULT_N 8192
#define BENCH_SQUARE_MAX_N (1u << 24) /* keeps n * n * 8 and every cell value exact in a double */
#define BENCH_SQUARE_AUTO_N 8192 /* the default --reps does the work of one transpose at this n */

/* The usage lines the kernels have in common, to end their own text with. */
#define BENCH_SQUARE_USAGE_SIZE \
	"  --size N  the matrix order n (default 8192, two 512 MiB arrays; the seed used 1000)\n"
#define BENCH_SQUARE_USAGE_REPS \
	"  --reps R  transposes timed (default (8192/n)^2, at least 1: one at n=8192, 67 at\n" \
	"            the seed's n=1000, 1024 at n=256)\n"

/* A kernel's transpose of the n x n matrix a into b, in its own loop order and layout. */
typedef void bench_square_transpose(double *restrict b, const double *restrict a, size_t n);

/* Reads the command line into args and returns the order n; exits 2, as bad usage, if
 * --size is too large. */
static inline size_t bench_square_order(int argc, char **argv, const char *usage,
					const char *kernel, struct bench_args *args)
{
	/* reps 0 cannot come from the command line: it means "not given". */
	bench_parse_args(argc, argv, usage, BENCH_SQUARE_DEFAULT_N, 0, args);
	if (args->size > BENCH_SQUARE_MAX_N) {
		fprintf(stderr, "%s: --size %llu is too large (at most %u)\n", kernel,
			(unsigned long long)args->size, BENCH_SQUARE_MAX_N);
		exit(2);
	}
	if (!args->reps)
		args->reps = bench_square_reps(args->size, BENCH_SQUARE_AUTO_N);
	return (size_t)args->size;
}

/* What a[i][j] holds: distinct for every cell and exact in a double, so a misplaced
 * element cannot pass the check. */
static inline double bench_square_cell(size_t i, size_t j, size_t n)
{
	return (double)(i * n + j);
}

static inline void bench_square_fill(double *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			a[i * n + j] = bench_square_cell(i, j, n);
}

/* Walks b in memory order, so the full check costs one sequential pass, not another
 * transpose. A column-major kernel names the cell b[j][i] of C as Fortran does, b(i,j). */
static inline int bench_square_check(const char *name, const double *b, size_t n,
				     int column_major)
{
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < n; i++) {
			if (b[j * n + i] == bench_square_cell(i, j, n))
				continue;
			if (column_major)
				fprintf(stderr, "%s: b(%zu,%zu) = %g, want %g\n", name, i, j,
					b[j * n + i], bench_square_cell(i, j, n));
			else
				fprintf(stderr, "%s: b[%zu][%zu] = %g, want %g\n", name, j, i,
					b[j * n + i], bench_square_cell(i, j, n));
			return 0;
		}
	return 1;
}

/* One case: clears b, times args->reps transposes of a into b, prints the result line
 * in MB/s (2*n*n*8 bytes moved a transpose) with the check of b. */
static inline void bench_square_run(struct bench_args *args, const char *name,
				    bench_square_transpose *transpose, double *b, const double *a,
				    size_t n, int column_major)
{
	double t0, secs, bytes = (double)n * (double)n * sizeof(double);

	/* Touches b before the clock starts (and clears what an earlier case left there),
	 * with a value the check would reject. */
	for (size_t k = 0; k < n * n; k++)
		b[k] = -1.0;

	t0 = bench_now();
	for (unsigned r = 0; r < args->reps; r++) {
		transpose(b, a, n);
		/* Every rep stores the same values: keep the compiler from merging them. */
		__asm__ volatile("" ::: "memory");
	}
	secs = bench_now() - t0;

	bench_result(args, name, n, secs, 2.0 * bytes * args->reps / secs / 1e6, "MB/s",
		     bench_square_check(name, b, n, column_major));
}

#endif
