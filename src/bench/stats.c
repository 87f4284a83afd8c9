/* stats.c - rounds reduced: the order of the backings in a round, medians, bests, spreads, speedups. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* ---------- the order of the runs ---------- */

/* Rows of a Williams design. w(k), the k-th of 0, 1, n-1, 2, n-2, ..., steps by +1,
 * -2, +3, ...: for even n these are every nonzero step mod n once, so the rows w + i
 * (i = 0..n-1) put every backing right after every other exactly once, and every
 * backing first once. For odd n the steps repeat, and the mirrored rows (read back to
 * front) make up the missing pairs: over 2n rounds every ordered pair twice.
 *
 * Round r starts with backing r mod n: even n takes row r; odd n takes row r (even r)
 * or the mirror of row r - h (odd r; h = (n+1)/2 = w(n-1), where a row ends). The last
 * run of a round is followed by the first of the next, so these pairs count too: row
 * r ends at r + n/2 (even n) and the pairs across the boundaries are all different
 * over a cycle; for odd n they are (r + h, r + 1) into a mirror and (r - h, r + 1) out
 * of one, different for n >= 5. Neither repeats a backing at a boundary (for n > 2).
 * n = 3 has no such rule (its steps 1 - h and 1 + h collide): its six rounds are a
 * table with the same properties. */
static int williams(int n, int k)
{
	return k == 0 ? 0 : k % 2 ? (k + 1) / 2 : n - k / 2;
}

void bench_round_order(int n, int round, int *order)
{
	static const int three[6][3] = { { 0, 1, 2 }, { 1, 2, 0 }, { 2, 1, 0 },
					 { 1, 0, 2 }, { 0, 2, 1 }, { 2, 0, 1 } };
	int row = round < 0 ? 0 : round, mirror = 0;

	if (n <= 0)
		return;
	if (n == 3) {
		memcpy(order, three[row % 6], sizeof three[0]);
		return;
	}
	if (n % 2 && row % 2) {
		mirror = 1;
		row -= (n + 1) / 2;
	}
	row = ((row % n) + n) % n;
	for (int k = 0; k < n; k++)
		order[k] = (williams(n, mirror ? n - 1 - k : k) + row) % n;
}

/* ---------- medians, bests, speedups ---------- */

double bench_median(double *v, int n)
{
	if (!v || n <= 0)
		return NAN;
	for (int i = 1; i < n; i++) {
		double x = v[i];
		int j = i;

		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A time per thing ("s", "ns/load", "ms/iter", "cycles/op"): less is better. Rates
 * (MB/s, MFLOPS, MUP/s, ops/s) are the rest. */
static bool unit_is_time(const char *unit)
{
	static const char *const times[] = { "s", "ms", "us", "ns", "cycles" };

	for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
		size_t k = strlen(times[i]);

		if (!strncmp(unit, times[i], k) && (unit[k] == 0 || unit[k] == '/'))
			return true;
	}
	return false;
}

int bench_rounds(const struct bench_row *r)
{
	return r->n < 0 ? 0 : r->n > BENCH_MAX_REPEAT ? BENCH_MAX_REPEAT : r->n;
}

bool bench_is_4k(const struct bench_row *r)
{
	return !strcmp(r->backing, "4k");
}

static bool same_case(const struct bench_row *a, const struct bench_row *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->size, b->size);
}

/* The row of this case and size run on backing, or NULL. */
const struct bench_row *bench_find_row(const struct bench_row *rows, int n,
					const struct bench_row *like, const char *backing)
{
	for (int i = 0; i < n; i++)
		if (same_case(&rows[i], like) && !strcmp(rows[i].backing, backing))
			return &rows[i];
	return NULL;
}

void bench_finish(struct bench_row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		struct bench_row *r = &rows[i];
		double t[BENCH_MAX_REPEAT];
		int k = bench_rounds(r);

		r->higher_is_better = !unit_is_time(r->unit);
		r->speedup = 0;
		if (k == 0) {
			r->median_s = r->best_s = r->median_metric = r->best_metric = NAN;
			r->spread = NAN;
			continue;
		}
		/* Copies: the rounds stay in the order they ran, times paired with metrics. */
		memcpy(t, r->runs_s, (size_t)k * sizeof t[0]);
		r->median_s = bench_median(t, k);
		r->best_s = t[0];
		r->spread = t[0] > 0 ? t[k - 1] / t[0] : NAN;
		memcpy(t, r->metric, (size_t)k * sizeof t[0]);
		r->median_metric = bench_median(t, k);
		r->best_metric = r->higher_is_better ? t[k - 1] : t[0];
	}
	/* Every case runs the same work under each backing, so time is the common measure,
	 * whatever the kernel's own metric. */
	for (int i = 0; i < n; i++) {
		struct bench_row *r = &rows[i];
		const struct bench_row *base = bench_is_4k(r) ? r : bench_find_row(rows, n, r, "4k");

		if (bench_rounds(r) == 0 || !(r->median_s > 0) || !isfinite(r->median_s))
			continue;
		if (base == r)
			r->speedup = 1.0;
		else if (base && bench_rounds(base) > 0 && base->valid && base->median_s > 0 &&
			 isfinite(base->median_s))
			r->speedup = base->median_s / r->median_s;
	}
}

bool bench_unsteady(const struct bench_row *r)
{
	return bench_rounds(r) > 1 && r->spread > BENCH_UNSTEADY;
}

/* ---------- shared by the writers ---------- */

/* The backings to show: the caller's list, or else every backing of the rows in the
 * order they first appear. Returns the count (-1 if out of memory); free *out. */
int bench_backing_list(const struct bench_row *rows, int n, const char *const *backings,
			int nb, const char ***out)
{
	const char **list;
	int k = 0;

	if (backings && nb > 0) {
		list = malloc((size_t)nb * sizeof *list);
		if (!list)
			return -1;
		for (int i = 0; i < nb; i++)
			list[i] = backings[i];
		*out = list;
		return nb;
	}
	list = malloc((size_t)(n > 0 ? n : 1) * sizeof *list);
	if (!list)
		return -1;
	for (int i = 0; i < n; i++) {
		int j = 0;

		while (j < k && strcmp(list[j], rows[i].backing))
			j++;
		if (j == k)
			list[k++] = rows[i].backing;
	}
	*out = list;
	return k;
}

/* The first row of each (case, size), in the order rows first appear: the table's lines
 * and the chart's groups. Returns the count (-1 if out of memory); free *out. */
int bench_case_list(const struct bench_row *rows, int n, int **out)
{
	int *first = malloc((size_t)(n > 0 ? n : 1) * sizeof *first);
	int k = 0;

	if (!first)
		return -1;
	for (int i = 0; i < n; i++) {
		int j = 0;

		while (j < k && !same_case(&rows[first[j]], &rows[i]))
			j++;
		if (j == k)
			first[k++] = i;
	}
	*out = first;
	return k;
}

