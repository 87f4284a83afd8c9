/* himeno.c - the Himeno benchmark's idea: Jacobi sweeps of a 19-point Poisson stencil over a 3-D float grid. */
#include <math.h>

#include "kernel.h"

#define DEFAULT_GRID 2
#define OMEGA 0.8f
#define FLOPS_PER_POINT 34.0 /* as the Himeno benchmark counts one interior point */
#define WORK_POINTS 50e6     /* the default --reps sweeps this many points: ~1 s at M */
#define STAGGER 64           /* bytes between the arrays' offsets in their pages */

static const char usage[] =
	"The Himeno benchmark's kernel, written from its description: Jacobi iterations of\n"
	"a Poisson equation for pressure p on a 3-D grid, each interior point from its 19\n"
	"neighbours (itself, 6 faces, 12 edges) weighted by coefficient grids a[4], b[3],\n"
	"c[3], with a source wrk1 and a boundary mask bnd, into wrk2, copied back to p: 14\n"
	"float grids, each a separate array. Reports MFLOPS counting 34 flops an interior\n"
	"point an iteration. Checked: the residual (gosa, on stderr) falls every iteration.\n"
	"  --size N  the grid, by the benchmark's names: 1 = S (65x65x129, 30 MB), 2 = M\n"
	"            (129x129x257, 240 MB), 3 = L (257x257x513, 1.9 GB); default 2, M (the\n"
	"            seed ran the Fortran Himeno and does not say at which size)\n"
	"  --reps R  iterations (default: about 50M point updates, 99 at S, 12 at M, 2 at L)\n";

struct grid {
	size_t ni, nj, nk;  /* points along i, j and k; k is contiguous */
	float *a[4], *b[3], *c[3], *p, *bnd, *wrk1, *wrk2;
};

/* Array q of a grid, its start moved q cache lines into its page. bench_alloc's big
 * blocks all start at the same offset in a page (a 4K one, or 2M), so the 14 arrays'
 * elements m would fall in one set of the L1 and L2 and evict one another: the
 * benchmark would time that, not the memory and the TLB. The Fortran original's arrays
 * lie one after another in a common block, staggered by their odd size. */
static float *grid_array(size_t bytes, unsigned q)
{
	return (float *)((char *)bench_alloc(bytes + q * STAGGER) + q * STAGGER);
}

/* Allocates every array on its own and fills in the benchmark's problem: a Laplacian
 * (a = 1 and a[3] = 1/6 for the face terms, b = 0 for the edge terms, c = 1), no
 * source, every point free, and a pressure rising as (i/(ni-1))^2 from 0 to 1 across i.
 * The boundary keeps those values; the interior relaxes towards a straight line. */
static void grid_init(struct grid *g)
{
	size_t n = g->ni * g->nj * g->nk, bytes = n * sizeof(float);
	unsigned q = 0;

	for (int s = 0; s < 4; s++)
		g->a[s] = grid_array(bytes, q++);
	for (int s = 0; s < 3; s++) {
		g->b[s] = grid_array(bytes, q++);
		g->c[s] = grid_array(bytes, q++);
	}
	g->p = grid_array(bytes, q++);
	g->bnd = grid_array(bytes, q++);
	g->wrk1 = grid_array(bytes, q++);
	g->wrk2 = grid_array(bytes, q++);
	for (size_t i = 0; i < g->ni; i++) {
		float x = (float)i / (float)(g->ni - 1), pressure = x * x;

		for (size_t m = i * g->nj * g->nk; m < (i + 1) * g->nj * g->nk; m++) {
			g->a[0][m] = g->a[1][m] = g->a[2][m] = 1.0f;
			g->a[3][m] = 1.0f / 6.0f;
			g->b[0][m] = g->b[1][m] = g->b[2][m] = 0.0f;
			g->c[0][m] = g->c[1][m] = g->c[2][m] = 1.0f;
			g->p[m] = pressure;
			g->bnd[m] = 1.0f;
			g->wrk1[m] = 0.0f;
			g->wrk2[m] = pressure;
		}
	}
}

/* One Jacobi iteration; returns the residual, the sum of squared corrections. The
 * arrays are passed one by one so that restrict can promise the compiler they do not
 * overlap. The sum is kept in double: in float, the millions of small squares of a
 * large grid would stop adding up long before the residual stops falling. */
static double jacobi(size_t ni, size_t nj, size_t nk, const float *restrict a0,
		     const float *restrict a1, const float *restrict a2, const float *restrict a3,
		     const float *restrict b0, const float *restrict b1, const float *restrict b2,
		     const float *restrict c0, const float *restrict c1, const float *restrict c2,
		     float *restrict p, const float *restrict bnd, const float *restrict wrk1,
		     float *restrict wrk2)
{
	const size_t di = nj * nk, dj = nk; /* the steps to the next i and j; k's is 1 */
	double gosa = 0.0;

	for (size_t i = 1; i < ni - 1; i++)
		for (size_t j = 1; j < nj - 1; j++) {
			size_t row = i * di + j * dj;

			for (size_t m = row + 1; m < row + nk - 1; m++) {
				float s0, ss;

				s0 = a0[m] * p[m + di] + a1[m] * p[m + dj] + a2[m] * p[m + 1] +
				     b0[m] * (p[m + di + dj] - p[m + di - dj] -
					      p[m - di + dj] + p[m - di - dj]) +
				     b1[m] * (p[m + dj + 1] - p[m - dj + 1] -
					      p[m + dj - 1] + p[m - dj - 1]) +
				     b2[m] * (p[m + di + 1] - p[m - di + 1] -
					      p[m + di - 1] + p[m - di - 1]) +
				     c0[m] * p[m - di] + c1[m] * p[m - dj] + c2[m] * p[m - 1] +
				     wrk1[m];
				ss = (s0 * a3[m] - p[m]) * bnd[m];
				gosa += (double)(ss * ss);
				wrk2[m] = p[m] + OMEGA * ss;
			}
		}
	/* Jacobi: every point above was computed from the old p; only now is p the new one. */
	for (size_t i = 1; i < ni - 1; i++)
		for (size_t j = 1; j < nj - 1; j++) {
			size_t row = i * di + j * dj;

			memcpy(p + row + 1, wrk2 + row + 1, (nk - 2) * sizeof(float));
		}
	return gosa;
}

int main(int argc, char **argv)
{
	static const size_t dims[4][3] = { { 0, 0, 0 }, { 65, 65, 129 }, { 129, 129, 257 },
					   { 257, 257, 513 } };
	static const char names[4] = { '?', 'S', 'M', 'L' };
	struct bench_args args;
	struct grid g;
	double *gosa, t0, secs, points;
	int ok = 1;

	/* reps 0 cannot come from the command line: it means "not given". */
	bench_parse_args(argc, argv, usage, DEFAULT_GRID, 0, &args);
	if (args.size < 1 || args.size > 3) {
		fprintf(stderr, "himeno: --size %llu: the grid is 1 (S), 2 (M) or 3 (L)\n",
			(unsigned long long)args.size);
		return 2;
	}
	g.ni = dims[args.size][0];
	g.nj = dims[args.size][1];
	g.nk = dims[args.size][2];
	points = (double)(g.ni - 2) * (double)(g.nj - 2) * (double)(g.nk - 2);
	if (!args.reps)
		args.reps = (unsigned)fmax(2.0, WORK_POINTS / points);
	gosa = malloc(args.reps * sizeof(*gosa));
	if (!gosa) {
		fprintf(stderr, "himeno: no memory for %u residuals\n", args.reps);
		return 1;
	}
	grid_init(&g);

	t0 = bench_now();
	for (unsigned r = 0; r < args.reps; r++)
		gosa[r] = jacobi(g.ni, g.nj, g.nk, g.a[0], g.a[1], g.a[2], g.a[3], g.b[0], g.b[1],
				 g.b[2], g.c[0], g.c[1], g.c[2], g.p, g.bnd, g.wrk1, g.wrk2);
	secs = bench_now() - t0;

	fprintf(stderr, "himeno: grid %c %zux%zux%zu, %u iterations, gosa", names[args.size], g.ni,
		g.nj, g.nk, args.reps);
	for (unsigned r = 0; r < args.reps; r++)
		if (args.reps <= 16 || r < 4 || r >= args.reps - 4)
			fprintf(stderr, " %.7g", gosa[r]);
		else if (r == 4)
			fprintf(stderr, " ...");
	fputc('\n', stderr);
	for (unsigned r = 0; r < args.reps && ok; r++)
		if (!isfinite(gosa[r]) || (r > 0 && !(gosa[r] < gosa[r - 1]))) {
			fprintf(stderr, "himeno: FAIL: gosa %.9g at iteration %u after %.9g\n", gosa[r],
				r + 1, r > 0 ? gosa[r - 1] : NAN);
			ok = 0;
		}
	free(gosa);
	bench_result(&args, "himeno", args.size, secs,
		     FLOPS_PER_POINT * points * args.reps / secs / 1e6, "MFLOPS", ok);
	return bench_exit(&args);
}
