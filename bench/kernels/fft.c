/* fft.c - the seed's fft: an iterative, in-place radix-2 complex FFT of N points, repeated between timings. */
#include <math.h>

#include "kernel.h"

#define DEFAULT_POINTS 131072
#define SEED_REPS 10                 /* the seed timed 10 transforms of 131072 points */
#define MAX_POINTS (1ull << 30)      /* 16 GiB of data: more is a typo */
#define MAX_REPS 1000000

static const char usage[] =
	"Transforms N complex doubles with an iterative radix-2 FFT, in place: a bit-reversal\n"
	"permutation, then log2(N) passes of butterflies whose partners sit 16 bytes to N*8\n"
	"bytes apart, twiddles from a table of N/2 entries. The timed transforms alternate\n"
	"forward and inverse (scaled by 1/N), so the data keeps its magnitude. Reports\n"
	"MFLOPS counting 5*N*log2(N) flops a transform. Checked afterwards, untimed: four\n"
	"bins of the forward transform against sums taken directly, and the inverse gives\n"
	"the input back (max abs error under 1e-9*log2(N)).\n"
	"  --size N  points, a power of two (default 131072, the seed's; 2 MiB of data)\n"
	"  --reps R  transforms timed (default: the work of the seed's 10 at 131072 points,\n"
	"            at least 1: 10 at 131072, 1 at 4M, 2176 at 1024)\n";

struct cpx {
	double re, im;
};

/* The input, regenerated for the check rather than kept: two values in [-1, 1) a
 * point, from a hash of its index. */
static struct cpx input(uint64_t i)
{
	uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull;
	struct cpx v;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	v.re = (double)(z >> 32) / 2147483648.0 - 1.0;
	v.im = (double)(z & 0xffffffffu) / 2147483648.0 - 1.0;
	return v;
}

/* w[m] = exp(-2 pi i m / n) for m < n/2, each from cos and sin directly: a recurrence
 * would be faster but its error grows with n. */
static void make_twiddles(struct cpx *w, size_t n)
{
	for (size_t m = 0; m < n / 2; m++) {
		double t = -2.0 * M_PI * (double)m / (double)n;

		w[m].re = cos(t);
		w[m].im = sin(t);
	}
}

/* exp(-2 pi i m / n) for any m < n, from the half table: the other half is its negative. */
static struct cpx twiddle(const struct cpx *w, size_t n, size_t m)
{
	struct cpx v;

	if (m < n / 2)
		return w[m];
	v.re = -w[m - n / 2].re;
	v.im = -w[m - n / 2].im;
	return v;
}

static void bit_reverse(struct cpx *x, size_t n)
{
	size_t j = 0;

	for (size_t i = 0; i < n; i++) {
		size_t bit = n >> 1;

		if (i < j) {
			struct cpx t = x[i];

			x[i] = x[j];
			x[j] = t;
		}
		/* j becomes the reverse of i + 1: add one at the top, carrying downwards. */
		while (j & bit) {
			j ^= bit;
			bit >>= 1;
		}
		j |= bit;
	}
}

/* sign -1 is the forward transform, +1 the inverse (unscaled): conj(w) for w. Each
 * butterfly is a complex multiply (6 flops) and two complex adds (4): 5 flops a point
 * a pass. */
static void fft(struct cpx *restrict x, const struct cpx *restrict w, size_t n, double sign)
{
	bit_reverse(x, n);
	for (size_t half = 1; half < n; half *= 2) {
		size_t stride = n / (2 * half);

		for (size_t s = 0; s < n; s += 2 * half)
			for (size_t j = 0; j < half; j++) {
				struct cpx u = x[s + j], v = x[s + j + half];
				double wr = w[j * stride].re, wi = -sign * w[j * stride].im;
				double tr = wr * v.re - wi * v.im, ti = wr * v.im + wi * v.re;

				x[s + j].re = u.re + tr;
				x[s + j].im = u.im + ti;
				x[s + j + half].re = u.re - tr;
				x[s + j + half].im = u.im - ti;
			}
	}
}

static void fft_forward(struct cpx *x, const struct cpx *w, size_t n)
{
	fft(x, w, n, -1.0);
}

static void fft_inverse(struct cpx *x, const struct cpx *w, size_t n)
{
	double scale = 1.0 / (double)n;

	fft(x, w, n, 1.0);
	for (size_t i = 0; i < n; i++) {
		x[i].re *= scale;
		x[i].im *= scale;
	}
}

/* x holds the input again: within 1e-9 * log2(n) of it everywhere. */
static int check_roundtrip(const struct cpx *x, size_t n, unsigned log2n)
{
	double worst = 0.0;
	size_t at = 0;

	for (size_t i = 0; i < n; i++) {
		struct cpx v = input(i);
		double e = fmax(fabs(x[i].re - v.re), fabs(x[i].im - v.im));

		if (!(e <= worst)) {
			worst = e;
			at = i;
		}
	}
	fprintf(stderr, "fft: forward+inverse max abs error %.3g (at %zu)\n", worst, at);
	if (!(worst < 1e-9 * log2n)) {
		fprintf(stderr, "fft: FAIL: error %.3g over %.3g\n", worst, 1e-9 * log2n);
		return 0;
	}
	return 1;
}

/* x holds the forward transform of the input: a few bins against sums taken directly.
 * The tolerance scales with the input's norm, sqrt(2n) at most. */
static int check_bins(const struct cpx *x, const struct cpx *w, size_t n, unsigned log2n)
{
	const size_t bins[4] = { 0, 1, 2, n - 1 }; /* walking the table in order */
	double tol = 1e-9 * log2n * sqrt(2.0 * (double)n);

	for (int b = 0; b < 4; b++) {
		size_t k = bins[b] % n, km = 0; /* km = k*m mod n, kept by addition */
		double re = 0.0, im = 0.0, e;

		for (size_t m = 0; m < n; m++) {
			struct cpx v = input(m), t = twiddle(w, n, km);

			re += v.re * t.re - v.im * t.im;
			im += v.re * t.im + v.im * t.re;
			km += k;
			if (km >= n)
				km -= n;
		}
		e = fmax(fabs(x[k].re - re), fabs(x[k].im - im));
		if (!(e < tol)) {
			fprintf(stderr, "fft: FAIL: bin %zu is %.17g%+.17gi, summed directly %.17g%+.17gi\n",
				k, x[k].re, x[k].im, re, im);
			return 0;
		}
	}
	return 1;
}

/* The seed's work, 10 transforms of 131072 points, in transforms of n points: small
 * sizes get enough to time, 4M points one (already most of a second: a pass of the
 * butterflies streams all 64 MiB). */
static unsigned auto_reps(size_t n, unsigned log2n)
{
	double r = SEED_REPS * (double)DEFAULT_POINTS * 17.0 / ((double)n * log2n);

	return r < 1 ? 1 : r > MAX_REPS ? MAX_REPS : (unsigned)r;
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t n;
	unsigned log2n = 0;
	struct cpx *x, *w;
	double t0, secs;
	int ok;

	/* reps 0 cannot come from the command line: it means "not given". */
	bench_parse_args(argc, argv, usage, DEFAULT_POINTS, 0, &args);
	if (args.size < 2 || args.size > MAX_POINTS || (args.size & (args.size - 1))) {
		fprintf(stderr, "fft: --size %llu must be a power of two from 2 to %llu\n",
			(unsigned long long)args.size, MAX_POINTS);
		return 2;
	}
	n = (size_t)args.size;
	while (((size_t)1 << log2n) < n)
		log2n++;
	if (!args.reps)
		args.reps = auto_reps(n, log2n);

	x = bench_alloc(n * sizeof(*x));
	w = bench_alloc(n / 2 * sizeof(*w));
	make_twiddles(w, n);
	for (size_t i = 0; i < n; i++)
		x[i] = input(i);

	t0 = bench_now();
	for (unsigned r = 0; r < args.reps; r++) {
		if (r % 2 == 0)
			fft_forward(x, w, n);
		else
			fft_inverse(x, w, n);
	}
	secs = bench_now() - t0;

	/* Untimed: an odd count ends on a forward transform, whose bins are checked as they
	 * stand; an even one on the input again, which is transformed once more for them.
	 * Then the inverse must give the input back. */
	if (args.reps % 2 == 0)
		fft_forward(x, w, n);
	ok = check_bins(x, w, n, log2n);
	fft_inverse(x, w, n);
	ok = check_roundtrip(x, n, log2n) && ok;
	bench_result(&args, "fft", n, secs, 5.0 * (double)n * log2n * args.reps / secs / 1e6,
		     "MFLOPS", ok);
	return bench_exit(&args);
}
