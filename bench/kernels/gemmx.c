/* gemmx.c - the seed's gemmx.c: C = A*B on n x n doubles, naively (B walked down its columns) and blocked to the caches and TLB. */
#include "cpu.h"
#include "kernel.h"

#define DEFAULT_N 2000
#define MAX_N 65536      /* keeps n * n * 8 far from overflow */
#define AUTO_ROWS 32     /* the default --reps at n=2000: about a second of naive on 4K pages */
#define BLOCKED_ROWS 20  /* the blocked band is this many times the naive one (at most n) */
#define CHECKS 16
#define MR 4             /* the register block: MR rows x NR columns of C */
#define NR 4

static const char usage[] =
	"Multiplies n x n matrices of doubles, C = A*B (row-major C), two ways:\n"
	"  gemmx/naive    i-j-k loops, the inner one over k: B is walked down a column, a\n"
	"                 stride of n*8 bytes a load, a new 4K page each at n >= 512\n"
	"  gemmx/blocked  panels of B and strips of A copied (packed) into small buffers\n"
	"                 sized at run time from the caches and the TLB (the blocks chosen\n"
	"                 are printed on stderr)\n"
	"Each computes a band of C, its first rows (from those rows of A and all of B):\n"
	"naive R rows, blocked 20*R (at most n), as it is that much faster and its time\n"
	"must be long enough to measure. Both report MFLOPS counting 2*rows*n*n flops; 16\n"
	"entries of each band are checked against dot products summed directly.\n"
	"  --size N  the matrix order n (default 2000: A and B 32 MB each; the seed used 1000)\n"
	"  --reps R  rows of C the naive case computes, at most n (default: the work of 32\n"
	"            rows at n=2000, 128 rows at n=1000, all of them at n <= 504; the seed\n"
	"            computed all n)\n";

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

/* Copies the kb x nb panel of B at b (rows n doubles apart) into bp as NR-wide
 * slivers, each kb x NR and k-major: the inner kernel then reads B one 32-byte line
 * after another. Columns past nb are zero, so every sliver is full. */
static void pack_b(size_t n, size_t kb, size_t nb, const double *restrict b, double *restrict bp)
{
	for (size_t j = 0; j < nb; j += NR) {
		size_t w = nb - j < NR ? nb - j : NR;

		for (size_t k = 0; k < kb; k++) {
			const double *src = b + k * n + j;

			for (size_t s = 0; s < NR; s++)
				bp[s] = s < w ? src[s] : 0.0;
			bp += NR;
		}
	}
}

/* The same for an MR-row strip of A, kb long: ap[k*MR + r] = A[r][k], rows past mr zero. */
static void pack_a(size_t n, size_t mr, size_t kb, const double *restrict a, double *restrict ap)
{
	for (size_t k = 0; k < kb; k++)
		for (size_t r = 0; r < MR; r++)
			*ap++ = r < mr ? a[r * n + k] : 0.0;
}

/* C[0..mr)[0..nr) += the packed strip of A times the packed sliver of B, kb deep.
 * Unrolled (gcc -O2 would not), the 16 sums live in registers, not on the stack. */
static inline void block(size_t n, size_t kb, size_t mr, size_t nr, const double *restrict ap,
			 const double *restrict bp, double *restrict c)
{
	double sum[MR][NR] = { { 0.0 } };

	for (size_t k = 0; k < kb; k++) {
#pragma GCC unroll 4
		for (size_t r = 0; r < MR; r++)
#pragma GCC unroll 4
			for (size_t s = 0; s < NR; s++)
				sum[r][s] += ap[k * MR + r] * bp[k * NR + s];
	}
	if (mr == MR && nr == NR) {
#pragma GCC unroll 4
		for (size_t r = 0; r < MR; r++)
#pragma GCC unroll 4
			for (size_t s = 0; s < NR; s++)
				c[r * n + s] += sum[r][s];
		return;
	}
	for (size_t r = 0; r < mr; r++)
		for (size_t s = 0; s < nr; s++)
			c[r * n + s] += sum[r][s];
}

/* For each kc-row slab of B and nc-column panel in it, the panel is packed once, and
 * every MR-row strip of the band, packed in turn, sweeps it in NR-column blocks. The
 * packed buffers, not B itself, are what the loops reuse: where they sit in the
 * caches does not depend on where B's rows fall in physical memory (scattered on 4K
 * pages, contiguous on 2M ones) nor on B's alignment. C must start at zero. */
static void gemm_blocked(size_t n, size_t rows, size_t kc, size_t nc, const double *restrict a,
			 const double *restrict b, double *restrict c, double *restrict bp,
			 double *restrict ap)
{
	for (size_t k0 = 0; k0 < n; k0 += kc) {
		size_t kb = n - k0 < kc ? n - k0 : kc;

		for (size_t j0 = 0; j0 < n; j0 += nc) {
			size_t nb = n - j0 < nc ? n - j0 : nc;

			pack_b(n, kb, nb, b + k0 * n + j0, bp);
			for (size_t i = 0; i < rows; i += MR) {
				size_t mr = rows - i < MR ? rows - i : MR;

				pack_a(n, mr, kb, a + i * n + k0, ap);
				for (size_t j = 0; j < nb; j += NR)
					block(n, kb, mr, nb - j < NR ? nb - j : NR, ap, bp + j * kb,
					      c + i * n + j0 + j);
			}
		}
	}
}

/* The blocks, from the machine (the classic packed-panel blocking):
 * - kc: the inner kernel streams an A strip (MR x kc) and a B sliver (kc x NR) past
 *   its sums, and the sliver is read again by the next strip: both fit in half the
 *   L1 data cache (32 KiB if unknown), the other half left to C and associativity.
 * - nc: the packed panel, kc x nc, is swept once by every strip of the band: it fits
 *   in half the L2 (256 KiB if unknown), and its pages in half of what the TLB holds
 *   in base pages (the L2 TLB, or the L1 data TLB if that is all that is known; 64
 *   entries if neither): a page size of the machine, not of the backing, since the
 *   program does not know which pages it got. A strip's own pages (the packed strip
 *   and sliver, MR rows of C) are a handful, however large n is.
 * Before packing, blocking for the TLB meant kc rows of B, a page each, in the L1 data
 * TLB at once (kc = 60 here), and B was read in place: how its rows fell in the L2's
 * sets, and its alignment (glibc's malloc puts it 16 bytes off a line), then depended
 * on the pages and the allocator the program got, not on the blocking. */
static void choose_blocks(size_t n, size_t *kc, size_t *nc)
{
	struct bench_cpu cpu;
	size_t page, tlb, l1, l2, k, panel, j;

	bench_cpu_probe(&cpu);
	page = cpu.page_size > 0 ? (size_t)cpu.page_size : 4096;
	tlb = cpu.stlb_4k ? cpu.stlb_4k : cpu.dtlb_4k ? cpu.dtlb_4k : 64;
	l1 = cpu.l1d ? (size_t)cpu.l1d : 32 * 1024;
	l2 = cpu.l2 ? (size_t)cpu.l2 : 256 * 1024;
	k = l1 / 2 / ((MR + NR) * sizeof(double));
	k -= k % 4;
	k = k < 4 ? 4 : k < n ? k : n;
	panel = l2 / 2 < tlb * page / 2 ? l2 / 2 : tlb * page / 2;
	j = panel / (k * sizeof(double));
	j -= j % NR;
	j = j < NR ? NR : j;
	*kc = k;
	*nc = j < n ? j : n;
	fprintf(stderr,
		"gemmx: blocked kc=%zu nc=%zu (L1d %zu bytes, L2 %zu bytes, TLB %zu x %zu-byte pages, "
		"%s)\n", *kc, *nc, l1, l2, tlb, page, cpu.model);
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
	size_t n, rows, brows, kc, nc;
	double *a, *b, *c, *bp, *ap, t0, secs, flops;

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
	brows = rows < n / BLOCKED_ROWS ? rows * BLOCKED_ROWS : n;
	flops = 2.0 * (double)rows * (double)n * (double)n;
	choose_blocks(n, &kc, &nc);

	a = bench_alloc(n * n * sizeof(double));
	b = bench_alloc(n * n * sizeof(double));
	c = bench_alloc(brows * n * sizeof(double));
	/* The packed buffers: a cache line and more apart, aligned to one. */
	bp = bench_alloc((kc * (nc + NR) + MR * kc) * sizeof(double) + 128);
	bp = (double *)(((uintptr_t)bp + 63) & ~(uintptr_t)63);
	ap = bp + ((kc * (nc + NR) + 7) & ~(size_t)7);
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
	memset(c, 0, brows * n * sizeof(double));
	flops = 2.0 * (double)brows * (double)n * (double)n;
	t0 = bench_now();
	gemm_blocked(n, brows, kc, nc, a, b, c, bp, ap);
	secs = bench_now() - t0;
	bench_result(&args, "gemmx/blocked", n, secs, flops / secs / 1e6, "MFLOPS",
		     check(n, brows, a, b, c, "gemmx/blocked"));
	return bench_exit(&args);
}
