/* judge.c - what each run got: judged against what its backing asks for, and added to its rows. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "parts.h"

/* ---------- did the run get what it asked for ---------- */

/* The share of the data on the pages variant v asked for, and whether that makes the
 * run a result for v. why says what was missing. */
static bool judge(const struct bench_variant *v, const struct bench_memory *m, double *cov,
		  double *wanted, char *why, size_t len)
{
	double data = m->data ? (double)m->data : 1;
	double huge = (double)(m->thp + m->tlb2m + m->tlb1g) / data;
	const char *b = v->backing ? v->backing : "";

	*cov = huge > 1 ? 1 : huge;
	why[0] = 0;
	if (v->how == BENCH_HOW_PROMOTE) {
		/* At its exit: after the promotion. */
		*wanted = *cov;
		if (*cov >= 0.9)
			return true;
		snprintf(why, len, "only %.0f%% of the data on huge pages after promote", 100 * *cov);
		return false;
	}
	if (v->how == BENCH_HOW_PEER || v->how == BENCH_HOW_SYSFS) {
		*wanted = *cov;
		return true;
	}
	if (!strcmp(b, "4k")) {
		*wanted = 1 - *cov;
		if (*cov < 0.01)
			return true;
		snprintf(why, len, "%.0f%% of the data on huge pages", 100 * *cov);
		return false;
	}
	if (!strcmp(b, "auto")) {
		*wanted = *cov;
		/* auto may keep a heap below 64 MiB on base pages, by design: one with more
		 * than an eighth of its units' pages never touched (superpage-run(7)). */
		if (*cov >= 0.9 || m->data < 64 * MIB)
			return true;
		snprintf(why, len, "only %.0f%% of %llu MiB of data on huge pages", 100 * *cov,
			 (unsigned long long)(m->data / MIB));
		return false;
	}
	if (!strcmp(b, "thp")) {
		*wanted = (double)m->thp / data;
		if (*wanted >= 0.9)
			return true;
		snprintf(why, len, "%.0f%% of the data on THP", 100 * *wanted);
		return false;
	}
	if (!strcmp(b, "2m")) {
		*wanted = (double)m->tlb2m / data;
		if (*wanted >= 0.9)
			return true;
		snprintf(why, len, "%.0f%% of the data on 2M hugetlb pages (THP %.0f%%)",
			 100 * *wanted, 100.0 * (double)m->thp / data);
		return false;
	}
	/* 1g: 1 GiB pages for the whole GiBs of each array, 2 MiB hugetlb pages for the
	 * rest (DESIGN.md); the kernel says how large its largest array is. */
	*wanted = (double)(m->tlb1g + m->tlb2m) / data;
	if (*wanted >= 0.9 && m->tlb1g >= m->largest / GIB * GIB)
		return true;
	snprintf(why, len, "%.0f%% of the data on 1G pages, %.0f%% on 2M hugetlb pages",
		 100.0 * (double)m->tlb1g / data, 100.0 * (double)m->tlb2m / data);
	return false;
}

bool bench_judge_text(const char *backing, const struct bench_memory *m, double *cov,
		      double *wanted, char *why, size_t len)
{
	double text = m->text ? (double)m->text : 1;
	double huge = (double)m->text_huge / text, tlb = (double)m->text_hugetlb / text;

	*cov = huge > 1 ? 1 : huge;
	*wanted = 0;
	why[0] = 0;
	/* A program always has some code: no text figure is an old kernel's memory line. */
	if (!m->text) {
		snprintf(why, len, "the kernel did not say where its text was");
		return false;
	}
	if (!backing) {
		*wanted = *cov;
		return true;
	}
	if (!strcmp(backing, "4k")) {
		*wanted = 1 - *cov;
		if (*cov < 0.01)
			return true;
		snprintf(why, len, "%.0f%% of the text on huge pages", 100 * *cov);
		return false;
	}
	if (!strcmp(backing, "auto")) {
		/* auto chooses the pages, THP or hugetlb: any huge page is what it asks. */
		*wanted = *cov;
		if (*cov >= 0.9)
			return true;
		snprintf(why, len, "only %.0f%% of %llu MiB of text on huge pages", 100 * *cov,
			 (unsigned long long)(m->text >> 20));
		return false;
	}
	if (!strcmp(backing, "thp")) {
		/* THP: AnonHugePages and FilePmdMapped, the huge pages that are not hugetlb. */
		*wanted = huge - tlb < 0 ? 0 : huge - tlb > 1 ? 1 : huge - tlb;
		if (*wanted >= 0.9)
			return true;
		snprintf(why, len, "%.0f%% of the text on THP", 100 * *wanted);
		return false;
	}
	if (!strcmp(backing, "2m")) {
		*wanted = tlb > 1 ? 1 : tlb;
		if (*wanted >= 0.9)
			return true;
		snprintf(why, len, "%.0f%% of the text on 2M hugetlb pages (THP %.0f%%)", 100 * *wanted,
			 100 * (*cov - *wanted));
		return false;
	}
	snprintf(why, len, "text is not put on %s pages", backing);
	return false;
}

/* ---------- rows ---------- */

static struct bench_row *find_row(struct bench *b, const char *name, const char *size,
				  const char *backing)
{
	struct bench_row *r;

	for (int i = 0; i < b->nrows; i++) {
		r = &b->rows[i];
		if (!strcmp(r->name, name) && !strcmp(r->size, size) && !strcmp(r->backing, backing))
			return r;
	}
	if (b->nrows == BENCH_MAX_ROWS)
		return NULL;
	r = &b->rows[b->nrows++];
	memset(r, 0, sizeof *r);
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->size, sizeof r->size, "%s", size);
	snprintf(r->backing, sizeof r->backing, "%s", backing);
	r->valid = true;
	r->coverage = r->cov_wanted = 2; /* lowered by the first run */
	return r;
}

static void row_invalid(struct bench_row *r, const char *why)
{
	if (r->valid || !r->why[0])
		snprintf(r->why, sizeof r->why, "%.*s", (int)sizeof r->why - 1, why);
	r->valid = false;
}

/* A run that crashed or printed no result: its row says why (a row's why holds 95
 * characters: the stderr quoted is cut short of that). */
static void record_failed(struct bench *b, const struct bench_item *it,
			  const struct bench_variant *v, const struct run_out *o)
{
	struct bench_row *r = find_row(b, it->k->name, it->dec, v->name);
	bool unavailable = o->status >= 0 && WIFEXITED(o->status) && WEXITSTATUS(o->status) == 3;
	char why[160];

	if (o->timed_out)
		snprintf(why, sizeof why, "timed out after %d s", BENCH_RUN_TIMEOUT_S);
	else if (o->status >= 0 && WIFSIGNALED(o->status))
		snprintf(why, sizeof why, "died of signal %d; %.120s", WTERMSIG(o->status), o->err);
	else if (unavailable)
		snprintf(why, sizeof why, "backing not available: %.120s", o->err);
	else
		snprintf(why, sizeof why, "exit %d, no result; %.120s",
			 o->status >= 0 && WIFEXITED(o->status) ? WEXITSTATUS(o->status) : -1, o->err);
	if (r)
		row_invalid(r, why);
	/* A missing backing is a skip; anything else is a failure of the kernel. */
	if (!unavailable)
		b->failures++;
}

/* A promote run's lines printed before its promotion: they ran on the pages it had
 * before, which are to be base pages. */
static bool judge_before(const struct run_out *o, double *cov, double *wanted, char *why,
			 size_t len)
{
	*cov = o->cov_before;
	*wanted = 1 - *cov;
	why[0] = 0;
	if (o->promote_err[0]) {
		snprintf(why, len, "%s", o->promote_err);
		return false;
	}
	if (*cov < 0.01)
		return true;
	snprintf(why, len, "%.0f%% of the data on huge pages before promote", 100 * *cov);
	return false;
}

void bench_record(struct bench *b, const struct bench_item *it, const struct bench_variant *v,
		  const struct run_out *o, long (*minflts)[BENCH_MAX_REPEAT])
{
	char why[160];
	double cov = 0, wanted = 0;
	bool ok_backing = true, crashed;

	crashed = o->status < 0 || o->timed_out || !WIFEXITED(o->status) ||
		  (WEXITSTATUS(o->status) != 0 && WEXITSTATUS(o->status) != 1);
	if (crashed || o->nlines == 0) {
		record_failed(b, it, v, o);
		return;
	}
	if (o->have_mem) {
		if (it->k->text)
			ok_backing = bench_judge_text(v->how == BENCH_HOW_RUN ? v->backing : NULL, &o->mem,
						      &cov, &wanted, why, sizeof why);
		else
			ok_backing = judge(v, &o->mem, &cov, &wanted, why, sizeof why);
		if (o->promote_err[0] && ok_backing) {
			snprintf(why, sizeof why, "%s", o->promote_err);
			ok_backing = false;
		}
		if (it->k->allocator)
			ok_backing = true;
	} else
		snprintf(why, sizeof why, "the kernel did not say what memory it had");
	for (int i = 0; i < o->nlines; i++) {
		const struct bench_line *l = &o->lines[i];
		struct bench_row *r;
		double lcov = cov, lwanted = wanted;
		bool lok = ok_backing;
		char lwhy[160];

		snprintf(lwhy, sizeof lwhy, "%s", why);
		if (o->promoted && i < o->lines_before)
			lok = judge_before(o, &lcov, &lwanted, lwhy, sizeof lwhy);

		r = find_row(b, l->name, it->dec, v->name);
		if (!r)
			continue;
		snprintf(r->unit, sizeof r->unit, "%s", l->unit);
		if (r->n < BENCH_MAX_REPEAT) {
			r->runs_s[r->n] = l->seconds;
			r->metric[r->n] = l->metric;
			minflts[r - b->rows][r->n] = o->minflt;
			r->n++;
		}
		if (!l->ok) {
			r->check_failed = true;
			b->failures++;
		}
		if (!o->have_mem) {
			row_invalid(r, why);
			continue;
		}
		if (lcov < r->coverage)
			r->coverage = lcov;
		if (lwanted < r->cov_wanted)
			r->cov_wanted = lwanted;
		if (!lok)
			row_invalid(r, lwhy);
	}
}

const char *bench_not_for(const struct bench_kernel *k, const struct bench_variant *v)
{
	/* The ideal's strict sp_alloc blocks are no text. */
	if (k->text && v->how == BENCH_HOW_IDEAL)
		return "";
	/* The promote variant runs the kernel made for it, and it alone. */
	if (v->how == BENCH_HOW_PROMOTE && !k->promote)
		return "";
	if (k->text && v->how == BENCH_HOW_RUN && !strcmp(v->backing, "1g"))
		return "text is not put on 1 GiB pages";
	return NULL;
}

void bench_mark_skipped(struct bench *b, const struct bench_item *it)
{
	size_t kn = strlen(it->k->name);
	int rows = b->nrows;

	for (int k = 0; k < b->nvar; k++) {
		const char *why = bench_not_for(it->k, &b->var[k]);

		if (!why)
			why = b->var[k].skip ? b->var[k].why : NULL;
		if (!why || !why[0])
			continue;
		for (int i = 0; i < rows; i++) {
			const struct bench_row *c = &b->rows[i];
			struct bench_row *r;

			if (strcmp(c->backing, "4k") || strcmp(c->size, it->dec) ||
			    strncmp(c->name, it->k->name, kn) || (c->name[kn] && c->name[kn] != '/'))
				continue;
			r = find_row(b, c->name, it->dec, b->var[k].name);
			if (r)
				row_invalid(r, why);
		}
	}
}

