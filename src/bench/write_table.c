/* write_table.c - the text report: the machine, the table of medians and speedups, the key, the notes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* ---------- the machine ---------- */

/* "2048 x 4K = 8 MiB reach, 2048 x 2M = 4 GiB": what a TLB level covers. */
static void tlb_line(FILE *f, const char *label, unsigned e4k, unsigned e2m, unsigned e1g)
{
	static const char *const page[] = { "4K", "2M", "1G" };
	const uint64_t bytes[] = { 4096, 2ull << 20, 1ull << 30 };
	const unsigned entries[] = { e4k, e2m, e1g };
	struct line l = { .len = 0 };
	int shown = 0;

	line_add(&l, "%-10s", label);
	for (int i = 0; i < 3; i++) {
		char b[32];

		if (!entries[i])
			continue;
		line_add(&l, "%s%u x %s = %s%s", shown ? ", " : "", entries[i], page[i],
			 bench_fmt_bytes(entries[i] * bytes[i], b, sizeof b), shown ? "" : " reach");
		shown++;
	}
	if (!shown)
		line_add(&l, "unknown");
	line_put(f, &l);
}

static void pool_text(struct line *l, const char *size, long total, long avail)
{
	if (total < 0)
		line_add(l, "%s: none", size);
	else
		line_add(l, "%s: %ld %s (%ld free)", size, total, total == 1 ? "page" : "pages",
			 avail < 0 ? 0 : avail);
}

static void write_machine_text(FILE *f, const struct bench_machine *m)
{
	struct line l = { .len = 0 };
	char a[32];

	line_add(&l, "superpage bench");
	if (m->date[0])
		line_add(&l, ", %s", m->date);
	line_put(f, &l);
	line_add(&l, "%-10s%s", "cpu", m->cpu[0] ? m->cpu : "unknown");
	if (m->cpus)
		line_add(&l, " (%u %s)", m->cpus, m->cpus == 1 ? "cpu" : "cpus");
	line_put(f, &l);
	if (m->l1d || m->l2 || m->l3) {
		/* Only the levels the machine told of: some have no L3. */
		line_add(&l, "%-10s", "caches");
		if (m->l1d)
			line_add(&l, "L1d %s", bench_fmt_bytes(m->l1d, a, sizeof a));
		if (m->l2)
			line_add(&l, "%sL2 %s", m->l1d ? ", " : "", bench_fmt_bytes(m->l2, a, sizeof a));
		if (m->l3)
			line_add(&l, "%sL3 %s", m->l1d || m->l2 ? ", " : "", bench_fmt_bytes(m->l3, a, sizeof a));
		line_put(f, &l);
	}
	tlb_line(f, "L1 dTLB", m->dtlb_4k, m->dtlb_2m, m->dtlb_1g);
	tlb_line(f, "L2 TLB", m->stlb_4k, m->stlb_2m, m->stlb_1g);
	line_add(&l, "%-10s%s", "kernel", m->kernel[0] ? m->kernel : "unknown");
	line_put(f, &l);
	line_add(&l, "%-10senabled %s, defrag %s", "THP", m->thp_enabled[0] ? m->thp_enabled : "?",
		 m->thp_defrag[0] ? m->thp_defrag : "?");
	line_put(f, &l);
	line_add(&l, "%-10s", "pools");
	pool_text(&l, "2M", m->pool_2m_total, m->pool_2m_free);
	line_add(&l, ", ");
	pool_text(&l, "1G", m->pool_1g_total, m->pool_1g_free);
	line_put(f, &l);
	line_add(&l, "%-10s%d per backing, %s run", "rounds", m->repeat, m->quick ? "quick" : "full");
	line_put(f, &l);
}

#define CELL 32
#define STRINGIFY(x) #x
#define TEXT_OF(x) STRINGIFY(x)
#define UNSTEADY_TEXT TEXT_OF(BENCH_UNSTEADY)

/* The table's cell for one row: its figure, or why there is none. */
static void table_cell(const struct bench_row *r, char *cell)
{
	char s[CELL - 1], sp[12], cov[8];

	if (!r) {
		snprintf(cell, CELL, "-- ");
		return;
	}
	if (bench_rounds(r) == 0) {
		snprintf(cell, CELL, "skip ");
		return;
	}
	if (r->check_failed)
		snprintf(s, sizeof s, "FAIL");
	else if (bench_is_4k(r))
		bench_fmt_metric(r->median_metric, s, sizeof s);
	else
		snprintf(s, sizeof s, "%s %s", bench_fmt_speedup(r->speedup, sp, sizeof sp),
			 bench_fmt_coverage(r->coverage, cov, sizeof cov));
	/* A place for the mark on every cell keeps the figures in line. */
	snprintf(cell, CELL, "%s%c", s, !r->valid ? '!' : bench_unsteady(r) ? '~' : ' ');
}

/* The table's layout: its columns, its cases, every cell, and the widths they need. */
struct table {
	const char **back;
	int nb, *first, ng;
	int wcase, wsize, wunit, *wcol;
	char (*cells)[CELL];
};

/* Fills t from the rows; -1 when out of memory. */
static int table_layout(struct table *t, const struct bench_row *rows, int n,
			const char *const *backings, int nb)
{
	t->wcase = t->wsize = t->wunit = 4;
	t->nb = bench_backing_list(rows, n, backings, nb, &t->back);
	t->ng = t->nb < 0 ? -1 : bench_case_list(rows, n, &t->first);
	if (t->ng >= 0) {
		t->cells = calloc((size_t)(t->ng > 0 ? t->ng : 1) * (size_t)(t->nb > 0 ? t->nb : 1),
				  sizeof *t->cells);
		t->wcol = calloc((size_t)(t->nb > 0 ? t->nb : 1), sizeof *t->wcol);
	}
	if (t->nb < 0 || t->ng < 0 || !t->cells || !t->wcol)
		return -1;
	for (int b = 0; b < t->nb; b++)
		t->wcol[b] = (int)strlen(t->back[b]) + 1;
	for (int g = 0; g < t->ng; g++) {
		const struct bench_row *r = &rows[t->first[g]];
		char sz[32];
		int k;

		k = (int)strlen(r->name);
		t->wcase = k > t->wcase ? k : t->wcase;
		k = (int)strlen(bench_fmt_size(r->size, sz, sizeof sz));
		t->wsize = k > t->wsize ? k : t->wsize;
		k = (int)strlen(r->unit);
		t->wunit = k > t->wunit ? k : t->wunit;
		for (int b = 0; b < t->nb; b++) {
			char *cell = t->cells[g * t->nb + b];

			table_cell(bench_find_row(rows, n, r, t->back[b]), cell);
			k = (int)strlen(cell);
			t->wcol[b] = k > t->wcol[b] ? k : t->wcol[b];
		}
	}
	return 0;
}

/* The head, its rule, and a line per case. */
static void table_lines(FILE *f, const struct table *t, const struct bench_row *rows)
{
	struct line l = { .len = 0 };

	line_add(&l, "%-*s  %*s  %-*s", t->wcase, "case", t->wsize, "size", t->wunit, "unit");
	for (int b = 0; b < t->nb; b++)
		line_add(&l, "  %*s ", t->wcol[b] - 1, t->back[b]);
	line_put(f, &l);
	for (size_t i = 0, w = (size_t)(t->wcase + t->wsize + t->wunit + 4); i < w; i++)
		line_add(&l, "-");
	for (int b = 0; b < t->nb; b++)
		for (int i = 0; i < t->wcol[b] + 2; i++)
			line_add(&l, "-");
	line_put(f, &l);
	for (int g = 0; g < t->ng; g++) {
		const struct bench_row *r = &rows[t->first[g]];
		char sz[32];

		line_add(&l, "%-*s  %*s  %-*s", t->wcase, r->name, t->wsize,
			 bench_fmt_size(r->size, sz, sizeof sz), t->wunit, r->unit);
		for (int b = 0; b < t->nb; b++)
			line_add(&l, "  %*s", t->wcol[b], t->cells[g * t->nb + b]);
		line_put(f, &l);
	}
}

/* What the marks and figures mean. */
static void write_key(FILE *f)
{
	fputs("\n"
	      "size     what the kernel was given: bytes of data (8M, 1G), or a matrix order,\n"
	      "         a number of points, ... (the kernel's --size)\n"
	      "4k       the kernel's own figure on base pages, the median over the rounds,\n"
	      "         in the unit shown\n"
	      "others   speedup, then coverage:\n"
	      "         speedup = median time on 4k / median time on that backing (1.52x: the\n"
	      "         same work took 1/1.52 of the time; below 1.00x it was slower)\n"
	      "         coverage = share of the kernel's data (itlb: of its code) on huge\n"
	      "         pages, the smallest over the rounds\n"
	      "!        the run did not get the backing it asked for: no result for that\n"
	      "         backing (see notes)\n"
	      "FAIL     the kernel's check of its own answer failed\n"
	      "skip     the backing was not run (see notes)\n"
	      "--       no run for that backing\n"
	      "n/a      no valid 4k time of that case to compare with\n"
	      "~        the runs were not steady: the slowest took over " UNSTEADY_TEXT " times as long as\n"
	      "         the fastest (see notes); read that figure with care\n",
	      f);
}

/* Rows without a result, then rows that were not steady. */
static void write_notes(FILE *f, const struct bench_row *rows, int n)
{
	int notes = 0;

	for (int i = 0; i < n; i++) {
		const struct bench_row *r = &rows[i];
		char sz[32];

		if (r->valid && bench_rounds(r) > 0 && !r->check_failed)
			continue;
		if (!notes++)
			fputs("\nnotes:\n", f);
		fprintf(f, "  %s %s %s: %s\n", r->name, bench_fmt_size(r->size, sz, sizeof sz), r->backing,
			bench_row_why(r));
	}
	for (int i = 0; i < n; i++) {
		const struct bench_row *r = &rows[i];
		char sz[32];

		if (!r->valid || r->check_failed || !bench_unsteady(r))
			continue;
		if (!notes++)
			fputs("\nnotes:\n", f);
		fprintf(f, "  %s %s %s: not steady, its runs took %.3g to %.3g s (%.2f times as long)\n",
			r->name, bench_fmt_size(r->size, sz, sizeof sz), r->backing, r->best_s,
			r->best_s * r->spread, r->spread);
	}
}

void bench_write_table(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		       int n, const char *const *backings, int nb)
{
	struct table t = { NULL };

	write_machine_text(f, bench_machine_or_blank(m));
	fputc('\n', f);
	if (table_layout(&t, rows, n, backings, nb) < 0) {
		fprintf(f, "(no table: out of memory)\n");
	} else if (t.ng == 0) {
		fprintf(f, "(no results)\n");
	} else {
		table_lines(f, &t, rows);
		write_key(f);
		bench_write_why(f, bench_machine_or_blank(m), rows, t.first, t.ng);
		write_notes(f, rows, n);
	}
	free(t.cells);
	free(t.wcol);
	free(t.first);
	free(t.back);
}
