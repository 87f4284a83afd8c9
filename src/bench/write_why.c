/* write_why.c - the text table's paragraphs: what each kernel does, and why some gain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* ---------- what the kernels are, and why some gain ---------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The sizes of this run's cases whose kernel goes through its pages that way, smallest
 * first and each once, into v[max]; their count. */
static int case_sizes(const struct bench_row *rows, const int *first, int ng,
		      enum bench_walk walk, uint64_t *v, int max)
{
	int nv = 0, kept = 0;

	for (int g = 0; g < ng && nv < max; g++) {
		const struct bench_row *r = &rows[first[g]];
		const struct bench_kernel *k = bench_kernel_of(r->name);

		if (k && k->walk == walk && !bench_parse_u64(r->size, strlen(r->size), &v[nv]))
			nv++;
	}
	qsort(v, (size_t)nv, sizeof v[0], cmp_u64);
	for (int i = 0; i < nv; i++)
		if (!kept || v[i] != v[kept - 1])
			v[kept++] = v[i];
	return kept;
}

/* Those of the sizes v[n] within the reach (at most limit) or past it, as
 * "1000, 2000", into buf. */
static void sizes_by_reach(const uint64_t *v, int n, uint64_t limit, bool within, char *buf,
			   size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (int i = 0; i < n && at < len; i++) {
		char num[24], sz[32];

		if ((v[i] <= limit) != within)
			continue;
		snprintf(num, sizeof num, "%llu", (unsigned long long)v[i]);
		at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "",
				       bench_fmt_size(num, sz, sizeof sz));
	}
}

/* Where the TLB's reach falls among this run's sizes: why some cases gain and others
 * do not, in this machine's numbers. */
static void write_reach_text(FILE *f, const struct bench_machine *m,
			     const struct bench_row *rows, const int *first, int ng)
{
	unsigned e4k = m->stlb_4k ? m->stlb_4k : m->dtlb_4k;
	unsigned e2m = m->stlb_4k ? m->stlb_2m : m->dtlb_2m;
	struct line t = { .len = 0 }; /* one paragraph, folded when written */
	char r4[32], r2[32], in[256], past[256];
	uint64_t v[64];
	int nv;
	bool seed = false, pow2 = false;

	if (!e4k)
		return;
	line_add(&t, "the %s TLB holds %u translations of 4K pages: %s of data",
		 m->stlb_4k ? "L2" : "L1 data", e4k, bench_fmt_bytes(e4k * 4096ull, r4, sizeof r4));
	if (e2m)
		line_add(&t, " (%u of 2M pages: %s)", e2m,
			 bench_fmt_bytes(e2m * (2ull << 20), r2, sizeof r2));
	line_add(&t, ". A kernel gains from huge pages when the pages it goes through before it "
		 "comes back to one are more than that.");
	nv = case_sizes(rows, first, ng, BENCH_WALK_RANDOM, v, 64);
	sizes_by_reach(v, nv, e4k * 4096ull, false, past, sizeof past);
	sizes_by_reach(v, nv, e4k * 4096ull, true, in, sizeof in);
	if (past[0])
		line_add(&t, " Random accesses (gups, tlbreach) over %s go past it on 4K pages.",
			 past);
	if (in[0])
		line_add(&t, " Over %s they stay within it: little to gain.", in);
	nv = case_sizes(rows, first, ng, BENCH_WALK_COLUMNS, v, 64);
	sizes_by_reach(v, nv, e4k, false, past, sizeof past);
	sizes_by_reach(v, nv, e4k, true, in, sizeof in);
	for (int i = 0; i < nv; i++) {
		seed |= v[i] == 1000 && v[i] <= e4k;           /* the seed's order, within reach */
		pow2 |= v[i] >= 512 && !(v[i] & (v[i] - 1)); /* a stride of a page or more */
	}
	if (past[0] || in[0]) {
		line_add(&t, " A column walk of an n x n matrix of doubles (trans, transf, "
			 "gemmx/naive) touches n pages of 4K, one a load:");
		if (past[0])
			line_add(&t, " at n = %s that is past the TLB's reach%s", past,
				 in[0] ? ";" : ".");
		if (in[0])
			line_add(&t, " at n = %s it is within it, so the page size matters little "
				 "there%s", in, seed ? " (the seed's n = 1000, 8 MB "
				 "an array, had outgrown the TLBs of 2002)." : ".");
		if (pow2)
			line_add(&t, " At a power-of-two n every load of a column falls in one set "
				 "of the caches, misses the page size does not change, so the "
				 "gain there is smaller than at an n just beside it.");
	}
	line_add(&t, " Kernels that stream through their memory (stream, mem2's cont stores, "
		 "fft, himeno, gemmx/blocked) use a few pages at a time and gain little; first "
		 "touch (fault) gains from making 2 MiB resident a fault at a time.");
	fputc('\n', f);
	put_folded(f, 10, "why", t.s);
}

/* What each kernel of the run does, then why some gain. */
void bench_write_why(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		     const int *first, int ng)
{
	fputs("\nkernels:\n", f);
	for (int g = 0; g < ng; g++) {
		const struct bench_kernel *k = bench_kernel_of(rows[first[g]].name);
		bool seen = !k;

		for (int h = 0; h < g && !seen; h++)
			seen = bench_kernel_of(rows[first[h]].name) == k;
		if (!seen)
			put_folded(f, 10, k->name, k->about);
	}
	write_reach_text(f, m, rows, first, ng);
}
