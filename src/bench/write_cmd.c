/* write_cmd.c - the report of a user's command: the measures side by side, the notes,
 * a verdict per variant; and the same as JSON. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "parts.h"
#include "../common/json.h"

static const struct {
	const char *head, *key;
} measures[BM_COUNT] = {
	[BM_WALL] = { "wall s", "wall_s" },       [BM_USER] = { "user s", "user_s" },
	[BM_SYS] = { "sys s", "sys_s" },          [BM_MAXRSS] = { "peak RSS", "maxrss_bytes" },
	[BM_HUGE] = { "huge", "huge_share" },     [BM_MINFLT] = { "minor flt", "minflt" },
	[BM_MAJFLT] = { "major flt", "majflt" },  [BM_METRIC] = { "figure", "metric" },
};

/* The program as typed, quoted where a word would not read back as one. */
static void put_argv(FILE *f, char **argv)
{
	for (int i = 0; argv[i]; i++) {
		const char *a = argv[i];

		fputs(i ? " " : "", f);
		if (*a && !a[strcspn(a, " \t\n'\"\\$`*?[]{}()<>|&;#~")]) {
			fputs(a, f);
			continue;
		}
		fputc('\'', f);
		for (; *a; a++)
			if (*a == '\'')
				fputs("'\\''", f);
			else
				fputc(*a, f);
		fputc('\'', f);
	}
}

static const char *fmt_value(enum bench_measure m, double v, char *buf, size_t len)
{
	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (m == BM_MAXRSS)
		bench_fmt_bytes((uint64_t)v, buf, len);
	else if (m == BM_HUGE)
		snprintf(buf, len, "%.0f%%", 100 * v);
	else if (m == BM_MINFLT || m == BM_MAJFLT)
		snprintf(buf, len, "%.0f", v);
	else
		bench_fmt_metric(v, buf, len);
	return buf;
}

/* "2.31 ±3%": the median, and half the range of the runs as a share of it. */
static void cell(const struct bench_cmd_variant *v, enum bench_measure m, char *buf, size_t len)
{
	double mid, lo, hi;
	char a[32];
	int k = bench_cmd_summary(v, m, &mid, &lo, &hi);

	if (!k) {
		snprintf(buf, len, "-");
		return;
	}
	fmt_value(m, mid, a, sizeof a);
	if (k > 1 && mid > 0 && m != BM_HUGE)
		snprintf(buf, len, "%s ±%.0f%%", a, 50 * (hi - lo) / mid);
	else
		snprintf(buf, len, "%s", a);
}

static void write_head(FILE *f, const struct bench *b, const struct bench_cmd *c)
{
	const struct bench_machine *m = &b->machine;

	fputs("superpage bench -- ", f);
	put_argv(f, c->argv);
	fprintf(f, "\n%-10s%s", "cpu", m->cpu[0] ? m->cpu : "unknown");
	if (m->cpus)
		fprintf(f, " (%u %s)", m->cpus, m->cpus == 1 ? "cpu" : "cpus");
	fprintf(f, "\n%-10s%s\n", "kernel", m->kernel[0] ? m->kernel : "unknown");
	fprintf(f, "%-10senabled %s, defrag %s\n", "THP", m->thp_enabled[0] ? m->thp_enabled : "?",
		m->thp_defrag[0] ? m->thp_defrag : "?");
	fprintf(f, "%-10s2M: ", "pools");
	if (m->pool_2m_total < 0)
		fputs("none", f);
	else
		fprintf(f, "%ld (%ld free)", m->pool_2m_total, m->pool_2m_free);
	fputs(", 1G: ", f);
	if (m->pool_1g_total < 0)
		fputs("none", f);
	else
		fprintf(f, "%ld (%ld free)", m->pool_1g_total, m->pool_1g_free);
	fprintf(f, "\n%-10s%d of %d, the variants' order rotating from round to round (%s)\n", "rounds",
		c->rounds, b->repeat, c->stopped);
	fprintf(f, "%-10s%s (its stdout is read to compare the runs with plain's first", "output",
		c->output ? c->output : "/dev/null");
	if (c->metric_src)
		fputs(" and for --metric", f);
	fputs(")\n", f);
	if (c->metric_src)
		fprintf(f, "%-10sthe first number --metric '%s' takes from its stdout, %s is better\n", "figure",
			c->metric_src, c->metric_higher ? "higher" : "lower");
	fprintf(f, "%-10s%s\n", "date", m->date);
}

void bench_write_cmd_table(FILE *f, const struct bench *b, const struct bench_cmd *c)
{
	enum bench_measure ms[BM_COUNT];
	int nm = 0, wname = 7, w[BM_COUNT];
	char buf[64];

	write_head(f, b, c);
	for (int m = 0; m < BM_COUNT; m++)
		if (m != BM_METRIC || c->metric_src)
			ms[nm++] = (enum bench_measure)m;
	for (int i = 0; i < b->nvar; i++) {
		int k = (int)strlen(b->var[i].name);

		wname = k > wname ? k : wname;
	}
	for (int j = 0; j < nm; j++) {
		w[j] = (int)strlen(measures[ms[j]].head);
		for (int i = 0; i < b->nvar; i++) {
			int k;

			cell(&c->v[i], ms[j], buf, sizeof buf);
			k = (int)strlen(buf) - (strstr(buf, "±") ? 1 : 0);
			w[j] = k > w[j] ? k : w[j];
		}
	}
	fprintf(f, "\n%-*s", wname, "variant");
	for (int j = 0; j < nm; j++)
		fprintf(f, "  %*s", w[j], measures[ms[j]].head);
	fputs("  runs\n", f);
	for (int i = 0; i < b->nvar; i++) {
		const struct bench_cmd_variant *v = &c->v[i];

		fprintf(f, "%-*s", wname, b->var[i].name);
		if (!v->n) {
			fprintf(f, "  skipped: %s\n", b->var[i].why[0] ? b->var[i].why : "not run");
			continue;
		}
		for (int j = 0; j < nm; j++) {
			cell(v, ms[j], buf, sizeof buf);
			/* "±" is two bytes and one column. */
			fprintf(f, "  %*s", w[j] + (strstr(buf, "±") ? 1 : 0), buf);
		}
		fprintf(f, "  %d/%d\n", v->good, v->n);
	}
	fputs("\nEach cell: the median over the runs that did not fail, ± half their range as a share\n"
	      "of it. peak RSS: wait4's ru_maxrss, or the largest sample of Rss plus hugetlb pages\n"
	      "(which ru_maxrss leaves out) where that is larger. huge: the share of its anonymous\n"
	      "memory on huge pages (AnonHugePages and hugetlb) in /proc/PID/smaps_rollup, read\n"
	      "while it ran, at the sample with the most; '-' when it ended before the first\n"
	      "sample. runs: good runs / runs.\n",
	      f);
	for (int i = 0, notes = 0; i < b->nvar; i++)
		for (int k = 0; k < c->v[i].n; k++) {
			const struct bench_cmd_run *r = &c->v[i].run[k];

			if (!r->failed)
				continue;
			if (!notes++)
				fputs("\nnotes:\n", f);
			fprintf(f, "  %s round %d: %s\n", b->var[i].name, r->round + 1, r->why);
		}
	if (c->differs)
		fputs("  (lines --ignore REGEX matches, and the lines --metric takes, are left out of "
		      "the comparison)\n",
		      f);
	fprintf(f, "\nverdict against %s, by %s (geometric mean of the rounds' ratios, 95%% CI):\n",
		b->var[c->base].name, c->metric_src ? "its figure" : "wall time");
	for (int i = 0; i < b->nvar; i++)
		if (i != c->base)
			fprintf(f, "%s\n", c->v[i].verdict);
	if (b->nvar == 1)
		fputs("(no variant besides plain: nothing to compare)\n", f);
}

/* ---------- JSON ---------- */

static void json_num(struct json *j, const char *key, double v)
{
	json_key(j, key);
	json_double(j, v);
}

/* A measure: counts and bytes as whole numbers. */
static void json_measure(struct json *j, enum bench_measure m, double v)
{
	json_key(j, measures[m].key);
	if ((m == BM_MAXRSS || m == BM_MINFLT || m == BM_MAJFLT) && isfinite(v) && v >= 0)
		json_uint(j, (uint64_t)v);
	else
		json_double(j, v);
}

static void json_run(struct json *j, const struct bench_cmd_run *r)
{
	json_object_begin(j);
	json_key(j, "round");
	json_int(j, r->round + 1);
	for (int m = 0; m < BM_COUNT; m++)
		json_measure(j, (enum bench_measure)m, bench_cmd_value(r, (enum bench_measure)m));
	json_key(j, "anon_bytes");
	json_uint(j, r->anon);
	json_key(j, "huge_bytes");
	json_uint(j, r->huge);
	json_key(j, "sampled");
	json_bool(j, r->sampled);
	json_key(j, "exit_status");
	if (WIFEXITED(r->status))
		json_int(j, WEXITSTATUS(r->status));
	else
		json_null(j);
	json_key(j, "signal");
	if (WIFSIGNALED(r->status))
		json_int(j, WTERMSIG(r->status));
	else
		json_null(j);
	json_key(j, "failed");
	json_bool(j, r->failed);
	json_key(j, "stdout_differs");
	json_bool(j, r->differs);
	if (r->why[0]) {
		json_key(j, "why");
		json_string(j, r->why);
	}
	json_object_end(j);
}

static void json_variant(struct json *j, const struct bench *b, const struct bench_cmd *c, int i)
{
	const struct bench_cmd_variant *v = &c->v[i];
	const struct bench_ratio *r = &v->speed;

	json_object_begin(j);
	json_key(j, "name");
	json_string(j, b->var[i].name);
	json_key(j, "skipped");
	json_bool(j, v->n == 0);
	if (v->n == 0 && b->var[i].why[0]) {
		json_key(j, "why");
		json_string(j, b->var[i].why);
	}
	json_key(j, "runs_made");
	json_int(j, v->n);
	json_key(j, "runs_good");
	json_int(j, v->good);
	json_key(j, "runs");
	json_array_begin(j);
	for (int k = 0; k < v->n; k++)
		json_run(j, &v->run[k]);
	json_array_end(j);
	/* Each measure: median, smallest, largest over the good runs. */
	json_key(j, "summary");
	json_object_begin(j);
	for (int m = 0; m < BM_COUNT; m++) {
		double mid, lo, hi;

		if (m == BM_METRIC && !c->metric_src)
			continue;
		bench_cmd_summary(v, (enum bench_measure)m, &mid, &lo, &hi);
		json_key(j, measures[m].key);
		json_object_begin(j);
		json_num(j, "median", mid);
		json_num(j, "min", lo);
		json_num(j, "max", hi);
		json_object_end(j);
	}
	json_object_end(j);
	json_key(j, "pairs");
	json_int(j, i == c->base ? v->good : r->n);
	json_num(j, "ratio", i == c->base ? (v->good ? 1.0 : NAN) : r->ratio);
	json_key(j, "ci95");
	if (i != c->base && isfinite(r->lo)) {
		json_array_begin(j);
		json_double(j, r->lo);
		json_double(j, r->hi);
		json_array_end(j);
	} else {
		json_null(j);
	}
	json_num(j, "huge_share", v->huge_share);
	json_num(j, "rss_ratio", v->rss_ratio);
	json_key(j, "verdict");
	if (i == c->base)
		json_null(j);
	else
		json_string(j, v->verdict);
	json_object_end(j);
}

void bench_write_cmd_json(FILE *f, const struct bench *b, const struct bench_cmd *c)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	bench_json_machine(&j, bench_machine_or_blank(&b->machine));
	json_key(&j, "command");
	json_object_begin(&j);
	json_key(&j, "argv");
	json_array_begin(&j);
	for (int i = 0; c->argv[i]; i++)
		json_string(&j, c->argv[i]);
	json_array_end(&j);
	json_key(&j, "output");
	json_string(&j, c->output ? c->output : "/dev/null");
	json_key(&j, "metric");
	if (c->metric_src)
		json_string(&j, c->metric_src);
	else
		json_null(&j);
	json_key(&j, "higher_is_better");
	json_bool(&j, c->metric_src ? c->metric_higher : false);
	json_key(&j, "judged_by");
	json_string(&j, c->metric_src ? "metric" : "wall_s");
	json_key(&j, "ignore");
	if (c->ignore_src)
		json_string(&j, c->ignore_src);
	else
		json_null(&j);
	json_key(&j, "baseline");
	json_string(&j, b->var[c->base].name);
	json_key(&j, "rounds");
	json_int(&j, c->rounds);
	json_key(&j, "repeat");
	json_int(&j, b->repeat);
	json_key(&j, "stopped");
	json_string(&j, c->stopped);
	json_key(&j, "failures");
	json_int(&j, c->failures);
	json_key(&j, "stdout_differs");
	json_int(&j, c->differs);
	json_object_end(&j);
	json_key(&j, "results");
	json_array_begin(&j);
	for (int i = 0; i < b->nrows; i++)
		bench_json_row(&j, &b->rows[i], b->var[c->base].name);
	json_array_end(&j);
	json_key(&j, "variants");
	json_array_begin(&j);
	for (int i = 0; i < b->nvar; i++)
		json_variant(&j, b, c, i);
	json_array_end(&j);
	json_key(&j, "verdicts");
	json_array_begin(&j);
	for (int i = 0; i < b->nvar; i++)
		if (i != c->base)
			json_string(&j, c->v[i].verdict);
	json_array_end(&j);
	json_object_end(&j);
	json_end(&j);
}
