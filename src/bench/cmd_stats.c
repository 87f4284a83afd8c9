/* cmd_stats.c - a user's command's runs reduced: medians, paired ratios against plain with
 * their 95% intervals, the rows the writers take, and the verdicts. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "parts.h"

double bench_t95(int df)
{
	static const double t[] = { 0,      12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
				    2.306,  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
				    2.120,  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
				    2.064,  2.060,  2.056, 2.052, 2.048, 2.045, 2.042 };

	if (df < 1)
		return NAN;
	if (df <= 30)
		return t[df];
	/* Past 30 the quantile falls as about 2.4/df towards the normal's 1.96 (40: 2.021,
	 * 60: 2.000, 120: 1.980). */
	return 1.96 + 2.4 / df;
}

double bench_cmd_value(const struct bench_cmd_run *r, enum bench_measure m)
{
	switch (m) {
	case BM_WALL: return r->wall;
	case BM_USER: return r->user;
	case BM_SYS: return r->sys;
	case BM_MAXRSS: return (double)r->maxrss;
	case BM_HUGE: return r->sampled && r->anon ? (double)r->huge / (double)r->anon : NAN;
	case BM_MINFLT: return (double)r->minflt;
	case BM_MAJFLT: return (double)r->majflt;
	case BM_METRIC: return r->metric;
	default: return NAN;
	}
}

int bench_cmd_summary(const struct bench_cmd_variant *v, enum bench_measure m, double *median,
		      double *lo, double *hi)
{
	double x[BENCH_MAX_REPEAT];
	int k = 0;

	for (int i = 0; i < v->n && i < BENCH_MAX_REPEAT; i++) {
		double y = bench_cmd_value(&v->run[i], m);

		if (!v->run[i].failed && isfinite(y))
			x[k++] = y;
	}
	*median = *lo = *hi = NAN;
	if (!k)
		return 0;
	*median = bench_median(x, k);
	*lo = x[0];
	*hi = x[k - 1];
	return k;
}

/* How much better run r is than the baseline's run p: by the figure when there is one. */
static double pair_ratio(const struct bench_cmd *c, const struct bench_cmd_run *p, const struct bench_cmd_run *r)
{
	if (c->metric_re) {
		if (!(p->metric > 0) || !(r->metric > 0))
			return NAN;
		return c->metric_higher ? r->metric / p->metric : p->metric / r->metric;
	}
	return p->wall > 0 && r->wall > 0 ? p->wall / r->wall : NAN;
}

void bench_cmd_ratio(const struct bench_cmd *c, int var, struct bench_ratio *out)
{
	const struct bench_cmd_variant *p = &c->v[c->base], *v = &c->v[var];
	double l[BENCH_MAX_REPEAT], sum = 0, ss = 0, mean;
	int n = 0;

	/* Paired by round: the rounds share the machine's state of the moment. */
	for (int i = 0; i < v->n; i++) {
		const struct bench_cmd_run *r = &v->run[i];

		if (r->failed)
			continue;
		for (int j = 0; j < p->n; j++) {
			double q;

			if (p->run[j].round != r->round || p->run[j].failed)
				continue;
			q = pair_ratio(c, &p->run[j], r);
			if (isfinite(q) && q > 0)
				l[n++] = log(q);
			break;
		}
	}
	out->n = n;
	out->ratio = out->lo = out->hi = NAN;
	if (!n)
		return;
	for (int i = 0; i < n; i++)
		sum += l[i];
	mean = sum / n;
	out->ratio = exp(mean);
	if (n < 2)
		return;
	for (int i = 0; i < n; i++)
		ss += (l[i] - mean) * (l[i] - mean);
	double half = bench_t95(n - 1) * sqrt(ss / (n - 1)) / sqrt(n);
	out->lo = exp(mean - half);
	out->hi = exp(mean + half);
}

bool bench_ratio_clear(const struct bench_ratio *r)
{
	if (r->n < 2 || !isfinite(r->lo) || !isfinite(r->hi))
		return false;
	return r->lo > 1.01 || r->hi < 0.99 || (r->lo >= 0.98 && r->hi <= 1.02);
}

/* "99% huge", "huge n/a" */
static const char *huge_text(double share, char *buf, size_t len)
{
	if (isfinite(share))
		snprintf(buf, len, "%.0f%% huge", 100 * share);
	else
		snprintf(buf, len, "huge n/a (never sampled: it ran too briefly)");
	return buf;
}

static void verdict(const struct bench *b, struct bench_cmd *c, int i)
{
	const struct bench_variant *v = &b->var[i];
	struct bench_cmd_variant *cv = &c->v[i];
	const struct bench_ratio *r = &cv->speed;
	char *s = cv->verdict, h[64], rss[32];
	size_t len = sizeof cv->verdict;
	int at;

	if (cv->n == 0) {
		snprintf(s, len, "%s: skipped: %s", v->name, v->why[0] ? v->why : "not run");
		return;
	}
	if (cv->good == 0) {
		const char *why = "";

		for (int k = 0; k < cv->n && !why[0]; k++)
			why = cv->run[k].why;
		snprintf(s, len, "%s: no result: %s %d run%s failed (%s)", v->name, cv->n == 1 ? "its" : "all",
			 cv->n, cv->n == 1 ? "" : "s", why);
		return;
	}
	if (!isfinite(r->ratio))
		at = snprintf(s, len, "%s: no ratio: %s has no good run to pair with", v->name,
			      b->var[c->base].name);
	else if (!isfinite(r->lo))
		at = snprintf(s, len, "%s: %.2fx %s, one round: no interval", v->name, r->ratio,
			      r->ratio >= 1 ? "faster" : "slower");
	else if (r->lo > 1)
		at = snprintf(s, len, "%s: %.2fx faster, 95%% CI %.2f-%.2f", v->name, r->ratio, r->lo, r->hi);
	else if (r->hi < 1)
		at = snprintf(s, len, "%s: %.2fx, slower, 95%% CI %.2f-%.2f", v->name, r->ratio, r->lo, r->hi);
	else
		at = snprintf(s, len, "%s: no measurable difference (%.2fx, 95%% CI %.2f-%.2f)", v->name,
			      r->ratio, r->lo, r->hi);
	if (isfinite(cv->rss_ratio))
		snprintf(rss, sizeof rss, "RSS %.2fx", cv->rss_ratio);
	else
		snprintf(rss, sizeof rss, "RSS n/a");
	at += snprintf(s + at, len - (size_t)at, ", %s, %s", huge_text(cv->huge_share, h, sizeof h), rss);
	if (cv->good < cv->n && at < (int)len)
		snprintf(s + at, len - (size_t)at, "; %d of %d runs failed", cv->n - cv->good, cv->n);
}

/* The writers' row of variant i. */
static void make_row(const struct bench *b, const struct bench_cmd *c, int i, struct bench_row *row)
{
	const struct bench_variant *v = &b->var[i];
	const struct bench_cmd_variant *cv = &c->v[i];
	double mid, lo, hi;

	memset(row, 0, sizeof *row);
	snprintf(row->name, sizeof row->name, "%s", c->label);
	snprintf(row->backing, sizeof row->backing, "%s", v->name);
	snprintf(row->unit, sizeof row->unit, "%s", c->metric_re ? "metric" : "s");
	for (int k = 0; k < cv->n; k++) {
		const struct bench_cmd_run *r = &cv->run[k];

		if (r->failed) {
			row->check_failed = true;
			if (!row->why[0])
				snprintf(row->why, sizeof row->why, "round %d: %s", r->round + 1, r->why);
			continue;
		}
		row->runs_s[row->n] = r->wall;
		row->metric[row->n] = c->metric_re ? r->metric : r->wall;
		row->n++;
	}
	if (cv->n == 0)
		snprintf(row->why, sizeof row->why, "%s", v->why[0] ? v->why : "not run");
	row->valid = cv->n > 0 && cv->good == cv->n;
	row->coverage = row->cov_wanted = cv->huge_share;
	if (bench_cmd_summary(cv, BM_MINFLT, &mid, &lo, &hi))
		row->minflt = (uint64_t)mid;
}

void bench_cmd_finish(struct bench *b, struct bench_cmd *c)
{
	static struct bench_row rows[BENCH_MAX_VARIANTS];
	double prss = NAN, lo, hi;

	bench_cmd_summary(&c->v[c->base], BM_MAXRSS, &prss, &lo, &hi);
	for (int i = 0; i < b->nvar; i++) {
		struct bench_cmd_variant *cv = &c->v[i];
		double rss;

		bench_cmd_ratio(c, i, &cv->speed);
		bench_cmd_summary(cv, BM_HUGE, &cv->huge_share, &lo, &hi);
		cv->rss_ratio = NAN;
		if (bench_cmd_summary(cv, BM_MAXRSS, &rss, &lo, &hi) && prss > 0)
			cv->rss_ratio = rss / prss;
		if (i != c->base)
			verdict(b, c, i);
		make_row(b, c, i, &rows[i]);
	}
	b->rows = rows;
	b->nrows = b->nvar;
	bench_finish(rows, b->nrows);
	for (int i = 0; i < b->nrows; i++) {
		struct bench_row *r = &rows[i];
		double t[BENCH_MAX_REPEAT];
		int k = bench_rounds(r);

		/* Against plain, paired by round; the figure's direction as told. */
		r->speedup = i == c->base ? (k ? 1.0 : 0) : isfinite(c->v[i].speed.ratio) ? c->v[i].speed.ratio : 0;
		r->higher_is_better = c->metric_re ? c->metric_higher : false;
		if (k) {
			memcpy(t, r->metric, (size_t)k * sizeof t[0]);
			bench_median(t, k);
			r->best_metric = r->higher_is_better ? t[k - 1] : t[0];
		}
	}
}
