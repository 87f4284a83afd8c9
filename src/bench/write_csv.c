/* write_csv.c - the results as CSV, a row per case, size and backing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "parts.h"

/* ---------- CSV ---------- */

/* A field, quoted (quotes doubled) when it holds a comma, a quote or a line break. */
static void csv_field(FILE *f, const char *s)
{
	if (!s[strcspn(s, ",\"\r\n")]) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* A number, or an empty field when there is none. */
static void csv_double(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.9g", v);
}

void bench_write_csv(FILE *f, const struct bench_row *rows, int n)
{
	bench_write_csv_vs(f, rows, n, "4k");
}

void bench_write_csv_vs(FILE *f, const struct bench_row *rows, int n, const char *base)
{
	fprintf(f, "kernel,size,backing,unit,rounds,median_s,best_s,metric,best_metric,coverage,"
		   "coverage_wanted,minflt,speedup_vs_%s,valid,check,why,spread\n",
		base);
	for (int i = 0; i < n; i++) {
		const struct bench_row *r = &rows[i];
		int k = bench_rounds(r);

		csv_field(f, r->name);
		fputc(',', f);
		csv_field(f, r->size);
		fputc(',', f);
		csv_field(f, r->backing);
		fputc(',', f);
		csv_field(f, r->unit);
		fprintf(f, ",%d,", k);
		csv_double(f, k ? r->median_s : NAN);
		fputc(',', f);
		csv_double(f, k ? r->best_s : NAN);
		fputc(',', f);
		csv_double(f, k ? r->median_metric : NAN);
		fputc(',', f);
		csv_double(f, k ? r->best_metric : NAN);
		fputc(',', f);
		csv_double(f, r->coverage);
		fputc(',', f);
		csv_double(f, r->cov_wanted);
		fprintf(f, ",%llu,", (unsigned long long)r->minflt);
		csv_double(f, r->speedup > 0 ? r->speedup : NAN);
		fprintf(f, ",%s,%s,", r->valid ? "true" : "false", r->check_failed ? "FAIL" : "ok");
		csv_field(f, r->why);
		fputc(',', f);
		csv_double(f, k ? r->spread : NAN);
		fputc('\n', f);
	}
}
