/* trans2.c - the seed's trans2.c: a transpose in both loop orders, strided store or load. */
#include "kernel.h"
#include "square.h"

static const char usage[] =
	"Transposes an n x n matrix of doubles out of place, b[j][i] = a[i][j] (row-major\n"
	"C), in two loop orders, one result line each:\n"
	"  trans2/rowread  reads a along its rows, writes b down its columns\n"
	"  trans2/colread  reads a down its columns, writes b along its rows\n"
	"The column side moves n*8 bytes a step. Reports MB/s (10^6 bytes/s), counting\n"
	"2*n*n*8 bytes moved a transpose.\n"
	BENCH_SQUARE_USAGE_SIZE
	"  --reps R  transposes timed per case (default (8192/n)^2, at least 1: one at\n"
	"            n=8192, 67 at the seed's n=1000, 1024 at n=256)\n";

static void transpose_rowread(double *restrict b, const double *restrict a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			b[j * n + i] = a[i * n + j];
}

static void transpose_colread(double *restrict b, const double *restrict a, size_t n)
{
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < n; i++)
			b[j * n + i] = a[i * n + j];
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t n = bench_square_order(argc, argv, usage, "trans2", &args);
	double *a = bench_alloc(n * n * sizeof(double)), *b = bench_alloc(n * n * sizeof(double));

	bench_square_fill(a, n);
	bench_square_run(&args, "trans2/rowread", transpose_rowread, b, a, n, 0);
	bench_square_run(&args, "trans2/colread", transpose_colread, b, a, n, 0);
	return bench_exit(&args);
}
