/* trans.c - the seed's trans.c: an n x n transpose, a read by rows, b written by columns. */
#include "kernel.h"
#include "square.h"

static const char usage[] =
	"Transposes an n x n matrix of doubles out of place, b[j][i] = a[i][j] (row-major\n"
	"C): a is read along its rows, b is written down its columns, a stride of n*8 bytes\n"
	"a store. Reports MB/s (10^6 bytes/s), counting 2*n*n*8 bytes moved a transpose.\n"
	BENCH_SQUARE_USAGE_SIZE BENCH_SQUARE_USAGE_REPS;

static void transpose(double *restrict b, const double *restrict a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			b[j * n + i] = a[i * n + j];
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t n = bench_square_order(argc, argv, usage, "trans", &args);
	double *a = bench_alloc(n * n * sizeof(double)), *b = bench_alloc(n * n * sizeof(double));

	bench_square_fill(a, n);
	bench_square_run(&args, "trans", transpose, b, a, n, 0);
	return bench_exit(&args);
}
