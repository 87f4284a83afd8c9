/* transw.c - the seed's transw.c (vm_align): a big transpose, arrays on and off the 2 MiB grid. */
#include "kernel.h"
#include "square.h"

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

static void transpose(double *restrict b, const double *restrict a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			b[j * n + i] = a[i * n + j];
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

	/* The views overlap the other case's, so each case fills its own a
	 * (and bench_square_run clears its b). */
	bench_square_fill(a, n);
	fprintf(stderr, "%s: a at %p, b at %p (%#lx past 2 MiB)\n", name, (void *)a, (void *)b,
		(unsigned long)offset);
	bench_square_run(args, name, transpose, b, a, n, 0);
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t n = bench_square_order(argc, argv, usage, "transw", &args);
	/* Room to round up to 2 MiB and then move on by OFFSET. */
	size_t block = n * n * sizeof(double) + HUGE_2M + OFFSET;
	void *block_a = bench_alloc(block), *block_b = bench_alloc(block);

	run_case(&args, "transw/aligned", block_a, block_b, 0, n);
	run_case(&args, "transw/offset", block_a, block_b, OFFSET, n);
	return bench_exit(&args);
}
