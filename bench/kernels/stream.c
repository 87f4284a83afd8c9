/* stream.c - STREAM triad, a[i] = b[i] + s * c[i]: the memory bandwidth of one core. */
#include "kernel.h"

#define SCALAR 3.0

static const char usage[] =
	"STREAM triad a[i] = b[i] + s * c[i] over three arrays of doubles, repeated;\n"
	"metric MB/s (10^6 bytes), counting 24 bytes per element as STREAM does.\n"
	"  --size N  bytes of each array (default 256M)\n"
	"  --reps R  times the triad runs (default 10)\n"
	"The metric is over all the reps; the best one goes to stderr.\n";

/* noinline: each call is real work the reps loop cannot merge or drop. */
__attribute__((noinline)) static void triad(double *restrict a, const double *restrict b,
					   const double *restrict c, double s, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		a[i] = b[i] + s * c[i];
}

int main(int argc, char **argv)
{
	struct bench_args args;
	double *a, *b, *c, total = 0, best = 0;
	uint64_t n, bad = 0;

	bench_parse_args(argc, argv, usage, 256ull << 20, 10, &args);
	n = args.size / sizeof(double);
	if (n == 0) {
		fprintf(stderr, "stream: --size must be at least 8 bytes\n");
		return 2;
	}
	a = bench_alloc(n * sizeof *a);
	b = bench_alloc(n * sizeof *b);
	c = bench_alloc(n * sizeof *c);
	/* Small integers and halves: every sum is exact, so the check can ask for equality.
	 * a starts negative, which no triad gives, so an element left unwritten shows. */
	for (uint64_t i = 0; i < n; i++) {
		a[i] = -1.0;
		b[i] = (double)(i % 1024);
		c[i] = (double)(i % 7) + 0.5;
	}

	for (unsigned r = 0; r < args.reps; r++) {
		double t0 = bench_now(), t;

		triad(a, b, c, SCALAR, n);
		t = bench_now() - t0;
		total += t;
		if (r == 0 || t < best)
			best = t;
	}

	for (uint64_t i = 0; i < n; i++)
		bad += a[i] != (double)(i % 1024) + SCALAR * ((double)(i % 7) + 0.5);
	if (bad)
		fprintf(stderr, "stream: %llu of %llu elements wrong\n", (unsigned long long)bad,
			(unsigned long long)n);
	fprintf(stderr, "stream: %u reps of %llu elements, best %.1f MB/s\n", args.reps,
		(unsigned long long)n, 24.0 * (double)n / best / 1e6);
	bench_result(&args, "stream", args.size, total,
		     24.0 * (double)n * args.reps / total / 1e6, "MB/s", bad == 0);
	return bench_exit(&args);
}
