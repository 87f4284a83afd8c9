/* transf.c - the seed's trans.f in C: a column-major transpose, inner loop striding n*8 bytes. */
#include "kernel.h"
#include "square.h"

static const char usage[] =
	"Transposes an n x n matrix of doubles out of place as Fortran would, b(j,i) = a(i,j)\n"
	"with column-major arrays: the inner loop runs along a row of a, n*8 bytes a step (a\n"
	"new 4 KiB page every step once n >= 512, the TLB-bound walk), and down a column of\n"
	"b, contiguously. Reports MB/s (10^6 bytes/s), counting 2*n*n*8 bytes moved a\n"
	"transpose.\n"
	BENCH_SQUARE_USAGE_SIZE BENCH_SQUARE_USAGE_REPS;

/* Where element (i, j) lives in a column-major n x n array: a(i, j) is the a[j][i] of
 * row-major C, so the shared fill and check hold for this layout too. */
static inline size_t at(size_t i, size_t j, size_t n)
{
	return j * n + i;
}

/* do i = 1, n; do j = 1, n; b(j, i) = a(i, j) */
static void transpose(double *restrict b, const double *restrict a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			b[at(j, i, n)] = a[at(i, j, n)];
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t n = bench_square_order(argc, argv, usage, "transf", &args);
	double *a = bench_alloc(n * n * sizeof(double)), *b = bench_alloc(n * n * sizeof(double));

	bench_square_fill(a, n);
	bench_square_run(&args, "transf", transpose, b, a, n, 1);
	return bench_exit(&args);
}
