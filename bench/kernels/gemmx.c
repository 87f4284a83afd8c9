/* gemmx.c - the seed's gemmx.c: C = A*B on n x n doubles, naively (B walked down its columns) and blocked to the caches and TLB. */
#include "cpu.h"
#include "kernel.h"

#define DEFAULT_N 2000
#define MAX_N 65536      /* keeps n * n * 8 far from overflow */
#define AUTO_ROWS 32     /* the default --reps at n=2000: about a second of naive on 4K pages */
#define CHECKS 16
#define MR 4             /* the register block: MR rows x NR columns of C */
#define NR 4

static const char usage[] =
	"Multiplies n x n matrices of doubles, C = A*B (row-major C), two ways:\n"
	"  gemmx/naive    i-j-k loops, the inner one over k: B is walked down a column, a\n"
	"                 stride of n*8 bytes a load, a new 4K page each at n >= 512\n"
	"  gemmx/blocked  tiles sized at run time from the caches and the data TLB (the\n"
	"                 blocks chosen are printed on stderr)\n"
	"Both compute the same band of C, its first R rows (from R rows of A and all of B),\n"
	"and report MFLOPS counting 2*R*n*n flops; 16 entries of the band are checked\n"
	"against dot products summed directly.\n"
	"  --size N  the matrix order n (default 2000: A and B 32 MB each; the seed used 1000)\n"
	"  --reps R  rows of C computed, at most n (default: the work of 32 rows at n=2000,\n"
	"            128 rows at n=1000, all of them at n <= 504; the seed computed all n)\n";

/* Both matrices positive and of one magnitude, so no sum cancels and a relative
 * error is meaningful; a mix of i and k so that a misplaced element changes C. */
static inline double a_value(size_t i, size_t k)
{
	return 1.0 + (double)((i * 7 + k * 13) % 31) / 32.0;
}

static inline double b_value(size_t k, size_t j)
{
	return 0.5 + (double)((k * 11 + j * 5) % 29) / 64.0;
}

static void gemm_naive(size_t n, size_t rows, const double *restrict a,
		       const double *restrict b, double *restrict c)
{
	for (size_t i = 0; i < rows; i++)
		for (size_t j = 0; j < n; j++) {
			double sum = 0.0;

			for (size_t k = 0; k < n; k++)
				sum += a[i * n + k] * b[k * n + j];
			c[i * n + j] = sum;
		}
}

/* C[0..MR)[0..NR) += A[0..MR)[0..kc) * B[0..kc)[0..NR), every matrix n doubles a row.
 * Unrolled (gcc -O2 would not), the 16 sums live in registers, not on the stack. */
static inline void block_full(size_t n, size_t kc, const double *restrict a,
			      const double *restrict b, double *restrict c)
{
	double sum[MR][NR] = { { 0.0 } };

	for (size_t k = 0; k < kc; k++) {
#pragma GCC unroll 4
		for (size_t r = 0; r < MR; r++)
#pragma GCC unroll 4
			for (size_t s = 0; s < NR; s++)
				sum[r][s] += a[r * n + k] * b[k * n + s];
	}
	for (size_t r = 0; r < MR; r++)
		for (size_t s = 0; s < NR; s++)
			c[r * n + s] += sum[r][s];
}

/* The same on the ragged edge, mr <= MR rows and nr <= NR columns. */
static void block_edge(size_t n, size_t kc, size_t mr, size_t nr, const double *restrict a,
		       const double *restrict b, double *restrict c)
{
	for (size_t r = 0; r < mr; r++)
		for (size_t s = 0; s < nr; s++) {
			double sum = 0.0;

			for (size_t k = 0; k < kc; k++)
				sum += a[r * n + k] * b[k * n + s];
			c[r * n + s] += sum;
		}
}

/* For each kc-row slab of B and nc-column panel in it, every MR-row strip of the band
 * sweeps the panel in NR-column blocks. C must start at zero. */
static void gemm_blocked(size_t n, size_t rows, size_t kc, size_t nc, const double *restrict a,
			 const double *restrict b, double *restrict c)
{
	for (size_t k0 = 0; k0 < n; k0 += kc) {
		size_t kb = n - k0 < kc ? n - k0 : kc;

		for (size_t j0 = 0; j0 < n; j0 += nc) {
			size_t jend = n - j0 < nc ? n : j0 + nc;

			for (size_t i = 0; i < rows; i += MR) {
				size_t mr = rows - i < MR ? rows - i : MR;

				for (size_t j = j0; j < jend; j += NR) {
					const double *ap = a + i * n + k0;
					const double *bp = b + k0 * n + j;
					double *cp = c + i * n + j;

					if (mr == MR && jend - j >= NR)
						block_full(n, kb, ap, bp, cp);
					else
						block_edge(n, kb, mr, jend - j < NR ? jend - j : NR,
							   ap, bp, cp);
				}
			}
		}
	}
}

/* The blocks, from the machine. A call of block_full touches kc rows of B, each in a
 * page of its own when a row of B (n*8 bytes) is a page or more, MR rows of A, each at
 * worst across a page boundary, and MR of C: kc + 3*MR pages. So kc is what the L1
 * data TLB holds for base pages (64 entries if unknown, 16 + 3*MR at least) less 3*MR,
 * times the rows of B
 * a page holds when rows are shorter than a page: a slab's NR-wide column then costs no
 * TLB miss however many strips of A reuse it. The panel, kc x nc doubles of B, is
 * swept once by every strip of A, so it is sized to half the L2 (256 KiB if unknown),
 * the other half left to the strips of A and C and to the L2's associativity. Huge
 * pages are not assumed: the blocked case is the software answer to the TLB, and
 * should be as fast on 4K pages as on 2M ones. */
static void choose_blocks(size_t n, size_t *kc, size_t *nc)
{
	struct bench_cpu cpu;
	size_t page, tlb, l2, rows_per_page, k, j;

	bench_cpu_probe(&cpu);
	page = cpu.page_size > 0 ? (size_t)cpu.page_size : 4096;
	tlb = cpu.dtlb_4k ? cpu.dtlb_4k : 64;
	if (tlb < 3 * MR + 16)
		tlb = 3 * MR + 16;
	l2 = cpu.l2 ? (size_t)cpu.l2 : 256 * 1024;
	rows_per_page = n * sizeof(double) >= page ? 1 : page / (n * sizeof(double));
	k = (tlb - 3 * MR) * rows_per_page;
	k -= k % 4;
	k = k < n ? k : n;
	j = l2 / 2 / (k * sizeof(double));
	j -= j % NR;
	j = j < NR ? NR : j;
	*kc = k;
	*nc = j < n ? j : n;
	fprintf(stderr,
		"gemmx: blocked kc=%zu nc=%zu (page %zu bytes, L1 dTLB %u entries, L2 %zu bytes, "
		"%s)\n", *kc, *nc, page, cpu.dtlb_4k, l2, cpu.model);
}

/* A few entries of the band, spread over it, against dot products summed directly. */
static int check(size_t n, size_t rows, const double *a, const double *b, const double *c,
		 const char *name)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;

	for (int t = 0; t < CHECKS; t++) {
		size_t i, j;
		double want = 0.0, err;

		x ^= x >> 31;
		x *= 0xBF58476D1CE4E5B9ull;
		x ^= x >> 29;
		i = t == 0 ? 0 : t == 1 ? rows - 1 : (size_t)(x % rows);
		j = t == 0 ? 0 : t == 1 ? n - 1 : (size_t)((x >> 32) % n);
		for (size_t k = 0; k < n; k++)
			want += a[i * n + k] * b[k * n + j];
		err = c[i * n + j] - want;
		if (!(err <= 1e-9 * want && -err <= 1e-9 * want)) {
			fprintf(stderr, "%s: C[%zu][%zu] = %.17g, want %.17g\n", name, i, j,
				c[i * n + j], want);
			return 0;
		}
	}
	return 1;
}

/* A band of C as much work as AUTO_ROWS rows at n=2000, so that every n takes about
 * as long: a whole product would take the naive case half a minute at n=2000. */
static unsigned auto_rows(size_t n)
{
	double r = AUTO_ROWS * (2000.0 / (double)n) * (2000.0 / (double)n);

	return r >= (double)n ? (unsigned)n : r < MR ? MR : (unsigned)r;
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t n, rows, kc, nc;
	double *a, *b, *c, t0, secs, flops;

	/* reps 0 cannot come from the command line: it means "not given". */
	bench_parse_args(argc, argv, usage, DEFAULT_N, 0, &args);
	if (args.size > MAX_N) {
		fprintf(stderr, "gemmx: --size %llu is too large (at most %u)\n",
			(unsigned long long)args.size, MAX_N);
		return 2;
	}
	n = (size_t)args.size;
	if (!args.reps)
		args.reps = auto_rows(n);
	rows = args.reps < n ? args.reps : n;
	flops = 2.0 * (double)rows * (double)n * (double)n;
	choose_blocks(n, &kc, &nc);

	a = bench_alloc(n * n * sizeof(double));
	b = bench_alloc(n * n * sizeof(double));
	c = bench_alloc(rows * n * sizeof(double));
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < n; k++) {
			a[i * n + k] = a_value(i, k);
			b[i * n + k] = b_value(i, k);
		}
	memset(c, 0, rows * n * sizeof(double));

	t0 = bench_now();
	gemm_naive(n, rows, a, b, c);
	secs = bench_now() - t0;
	bench_result(&args, "gemmx/naive", n, secs, flops / secs / 1e6, "MFLOPS",
		     check(n, rows, a, b, c, "gemmx/naive"));

	/* The blocked case accumulates into C: start it from zero again. */
	memset(c, 0, rows * n * sizeof(double));
	t0 = bench_now();
	gemm_blocked(n, rows, kc, nc, a, b, c);
	secs = bench_now() - t0;
	bench_result(&args, "gemmx/blocked", n, secs, flops / secs / 1e6, "MFLOPS",
		     check(n, rows, a, b, c, "gemmx/blocked"));
	return bench_exit(&args);
}
