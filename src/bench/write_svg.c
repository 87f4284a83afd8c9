/* write_svg.c - the chart: speedups per case and backing as grouped bars, and the
 * working-set curve of the kernel that has one, as one self-contained SVG. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* ---------- SVG ---------- */

/* Length of the valid UTF-8 sequence at s, or 0 if there is none. */
static int utf8_seq(const unsigned char *s)
{
	int k;
	unsigned cp, min;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		k = 2, min = 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		k = 3, min = 0x800;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		k = 4, min = 0x10000;
	else
		return 0;
	cp = s[0] & (0x7fu >> k);
	for (int i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	return cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? 0 : k;
}

/* Text for XML content or a quoted attribute: markup escaped, and control characters
 * and bytes that are not UTF-8 (which XML cannot hold) shown as '?'. */
static void xml_text(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		int k;

		switch (*s) {
		case '&': fputs("&amp;", f); s++; continue;
		case '<': fputs("&lt;", f); s++; continue;
		case '>': fputs("&gt;", f); s++; continue;
		case '"': fputs("&quot;", f); s++; continue;
		case '\'': fputs("&#39;", f); s++; continue;
		}
		k = *s < 0x20 || *s == 0x7f ? 0 : utf8_seq(s);
		if (k == 0) {
			fputc('?', f);
			s++;
			continue;
		}
		fwrite(s, 1, (size_t)k, f);
		s += k;
	}
}

/* Tableau's ten colours: distinct side by side, and none of them the 4k grey. */
static const char *const palette[] = { "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
				       "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac" };
#define PALETTE_N ((int)(sizeof palette / sizeof palette[0]))
#define BASE_COLOUR "#555555"

#define FONT_W 6.2 /* the width of an average character at 11px, for layout */
#define LABEL_MAX 26

/* A round step for about `want` ticks up to top: 1, 2, 2.5 or 5 times a power of ten. */
static double tick_step(double top, int want)
{
	double raw = top / want, p = pow(10, floor(log10(raw))), m = raw / p;

	return p * (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10);
}

/* "gups 1G": the name cut with ".." when the label would pass LABEL_MAX characters,
 * so the size always shows. */
static const char *group_label(const struct bench_row *r, char *buf, size_t len)
{
	char sz[32];
	int keep;

	bench_fmt_size(r->size, sz, sizeof sz);
	keep = LABEL_MAX - 1 - (int)strlen(sz);
	if ((int)strlen(r->name) <= keep || keep < 4)
		snprintf(buf, len, "%s %s", r->name, sz);
	else
		snprintf(buf, len, "%.*s.. %s", keep - 2, r->name, sz);
	return buf;
}

/* Where each chart goes, worked out before anything is drawn. */
struct svg_layout {
	int nbars;        /* backings drawn as bars: all but 4k */
	double width, height;
	double left, top, plot_w, plot_h, group_w, bar_w, label_h;
	double ymax, ystep;
	double line_top; /* the working-set chart, 0 when there is none */
	const char *curve; /* its kernel (the kernel table's curve), NULL when there is none */
	const char *base;  /* what the speedups are against: "4k", or "plain" for a command */
};

static const char *colour_of(const char *const *back, int nb, const char *backing, const char *base)
{
	int c = 0;

	if (!strcmp(backing, base))
		return BASE_COLOUR;
	for (int b = 0; b < nb; b++) {
		if (!strcmp(back[b], backing))
			return palette[c % PALETTE_N];
		if (strcmp(back[b], base))
			c++;
	}
	return palette[PALETTE_N - 1];
}

static bool bar_drawn(const struct bench_row *r)
{
	return r && bench_rounds(r) > 0 && !r->check_failed && r->speedup > 0 && isfinite(r->speedup);
}

static void svg_legend_item(FILE *f, double *x, double y, const char *fill, const char *stroke,
			    const char *text)
{
	fprintf(f, "<rect class=\"key\" x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\" "
		   "stroke=\"%s\"/>",
		*x, y - 10, fill, stroke);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", *x + 17, y);
	xml_text(f, text);
	fputs("</text>\n", f);
	*x += 17 + FONT_W * (double)strlen(text) + 16;
}

static void svg_header(FILE *f, const struct bench_machine *m, const struct svg_layout *L,
		       const char *const *back, int nb)
{
	int c = 0;

	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		   "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
		L->width, L->height, L->width, L->height);
	fputs("<title>superpage bench</title>\n<defs>\n", f);
	/* Hatching for a bar whose run did not get its backing: its colour, faded. */
	for (int b = 0; b < nb; b++) {
		if (!strcmp(back[b], L->base))
			continue;
		fprintf(f, "<pattern id=\"hatch%d\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" "
			   "patternTransform=\"rotate(45)\"><path d=\"M0,0 L0,4\" stroke=\"%s\" "
			   "stroke-width=\"2\"/></pattern>\n",
			c, palette[c % PALETTE_N]);
		c++;
	}
	fprintf(f, "</defs>\n<rect class=\"page\" width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
	fputs("<text x=\"16\" y=\"26\" font-size=\"16\" font-weight=\"bold\">superpage bench: ", f);
	xml_text(f, m->cpu[0] ? m->cpu : "unknown cpu");
	if (m->date[0]) {
		fputs(", ", f);
		xml_text(f, m->date);
	}
	fputs("</text>\n<text x=\"16\" y=\"44\" fill=\"#444444\">", f);
	if (m->kernel[0]) {
		fputs("kernel ", f);
		xml_text(f, m->kernel);
		fputs(", ", f);
	}
	if (m->cpus)
		fprintf(f, "%u cpus, ", m->cpus);
	if (m->thp_enabled[0]) {
		fputs("THP ", f);
		xml_text(f, m->thp_enabled);
		fputs(", ", f);
	}
	if (m->repeat > 0)
		fprintf(f, "%d rounds per backing, ", m->repeat);
	if (!strcmp(L->base, "4k"))
		fprintf(f, "%s run</text>\n", m->quick ? "quick" : "full");
	else
		fprintf(f, "against %s</text>\n", L->base);
	if (!strcmp(L->base, "4k"))
		fputs("<text x=\"16\" y=\"60\" fill=\"#444444\">Speedup = median time on 4k / median "
		      "time on the backing, for the same work: above 1.0x is faster than base pages.</text>\n",
		      f);
	else
		fprintf(f, "<text x=\"16\" y=\"60\" fill=\"#444444\">Speedup against %s: the geometric "
			   "mean of each round's ratio (time, or the program's own figure): above 1.0x is "
			   "better.</text>\n",
			L->base);
}

static void svg_bar_chart(FILE *f, const struct svg_layout *L, const struct bench_row *rows, int n,
			  const int *first, int ng, const char *const *back, int nb)
{
	double x = L->left, y = L->top - 18, base = L->top + L->plot_h;
	bool band = false;
	int c;

	/* The key: one colour per backing, the hatching, the line of 4k's speed. */
	c = 0;
	for (int b = 0; b < nb; b++) {
		if (strcmp(back[b], L->base))
			svg_legend_item(f, &x, y, palette[c++ % PALETTE_N], "none", back[b]);
	}
	if (c)
		svg_legend_item(f, &x, y, "url(#hatch0)", palette[0],
				"! did not get the backing it asked for: no result");
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\" "
		   "stroke-dasharray=\"5,3\"/><text x=\"%.1f\" y=\"%.1f\">1.0x = as fast as %s</text>\n",
		x, y - 4, x + 22, y - 4, x + 28, y, L->base);

	/* A light band behind each case, its sizes side by side. */
	for (int g = 0; g < ng; g++) {
		if (g > 0 && strcmp(rows[first[g]].name, rows[first[g - 1]].name))
			band = !band;
		if (band)
			fprintf(f, "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				   "fill=\"#f0f0f0\"/>\n",
				L->left + g * L->group_w, L->top, L->group_w, L->plot_h);
	}
	/* The y axis: speedups, a grid, and the 1.0x line. */
	for (double t = 0; t <= L->ymax + L->ystep / 1000; t += L->ystep) {
		double ty = base - t / L->ymax * L->plot_h;
		int dec = L->ystep >= 1 ? 0 : L->ystep >= 0.1 ? 1 : 2;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.*fx</text>\n",
			L->left, ty, L->left + L->plot_w, ty, L->left - 6, ty + 4, dec, t);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\" "
		   "stroke-dasharray=\"5,3\"/>\n",
		L->left, base - 1 / L->ymax * L->plot_h, L->left + L->plot_w,
		base - 1 / L->ymax * L->plot_h);
	fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\">"
		   "speedup vs %s</text>\n",
		16.0, L->top + L->plot_h / 2, L->base);

	for (int g = 0; g < ng; g++) {
		const struct bench_row *r0 = &rows[first[g]];
		double gx = L->left + g * L->group_w, cx = gx + L->group_w / 2;
		char label[BENCH_NAME_LEN + 48], sz[32], a[32], b2[32];
		int j = 0;

		c = 0;
		for (int b = 0; b < nb; b++) {
			const struct bench_row *r;
			double bx, h;

			if (!strcmp(back[b], L->base))
				continue;
			r = bench_find_row(rows, n, r0, back[b]);
			bx = gx + (L->group_w - L->nbars * L->bar_w) / 2 + j * L->bar_w;
			j++;
			c++;
			if (!r)
				continue;
			if (!bar_drawn(r)) {
				/* No bar: say why, small and upright in the bar's place. */
				const char *what = bench_rounds(r) == 0 ? "skip" : r->check_failed ? "FAIL" : "n/a";

				fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" "
					   "font-size=\"8\" fill=\"%s\">%s</text>\n",
					bx + L->bar_w / 2 + 3, base - 3,
					r->check_failed ? "#cc0000" : "#888888", what);
				continue;
			}
			h = (r->speedup > L->ymax ? L->ymax : r->speedup) / L->ymax * L->plot_h;
			if (r->valid)
				fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
					   "height=\"%.1f\" fill=\"%s\">",
					bx, base - h, L->bar_w - 1, h, palette[(c - 1) % PALETTE_N]);
			else
				fprintf(f, "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
					   "height=\"%.1f\" fill=\"url(#hatch%d)\" stroke=\"%s\" "
					   "stroke-width=\"0.8\">",
					bx + 0.4, base - h, L->bar_w - 1.8, h, c - 1,
					palette[(c - 1) % PALETTE_N]);
			fputs("<title>", f);
			xml_text(f, r0->name);
			fprintf(f, " %s on ", bench_fmt_size(r0->size, sz, sizeof sz));
			xml_text(f, r->backing);
			fprintf(f, ": %s vs %s, %s of the data on huge pages",
				bench_fmt_speedup(r->speedup, a, sizeof a), L->base,
				bench_fmt_coverage(r->coverage, b2, sizeof b2));
			if (!r->valid) {
				fputs(" (not valid: ", f);
				xml_text(f, bench_row_why(r));
				fputc(')', f);
			}
			fputs("</title></rect>\n", f);
			if (!r->valid)
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
					   "font-weight=\"bold\" fill=\"#cc0000\">!</text>\n",
					bx + L->bar_w / 2 - 0.5, base - h - 3);
		}
		fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-45)\" text-anchor=\"end\">",
			cx + 3, base + 12);
		xml_text(f, group_label(r0, label, sizeof label));
		fputs("</text>\n", f);
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\"/>\n",
		L->left, base, L->left + L->plot_w, base);
}

/* The working-set chart: the curve kernel's time per load against its size, a line per
 * backing, with the sizes the L2 TLB covers marked. Whole: one picture, drawn top down. */
static void svg_line_chart(FILE *f, const struct bench_machine *m, const struct svg_layout *L,
			   const struct bench_row *rows, int n, const char *const *back, int nb)
{
	const double top = L->line_top + 40, h = 220, left = 70;
	double w = L->width - left - 150, lo2 = 0, hi2 = 0, ymax = 0, step, x, base = top + h;
	double key_y = top + 8;
	const char *unit = "ns/load";
	bool any = false;

	if (w > 760)
		w = 760;
	for (int i = 0; i < n; i++) {
		uint64_t s;
		double l2;

		if (strcmp(rows[i].name, L->curve) ||
		    bench_parse_u64(rows[i].size, strlen(rows[i].size), &s) || s == 0)
			continue;
		l2 = log2((double)s);
		if (!any || floor(l2) < lo2)
			lo2 = floor(l2);
		if (!any || ceil(l2) > hi2)
			hi2 = ceil(l2);
		any = true;
		unit = rows[i].unit;
		if (bench_rounds(&rows[i]) > 0 && isfinite(rows[i].median_metric) && rows[i].median_metric > ymax)
			ymax = rows[i].median_metric;
	}
	if (hi2 <= lo2)
		hi2 = lo2 + 1;
	if (!(ymax > 0))
		ymax = 1;
	step = tick_step(ymax * 1.05, 5);
	ymax = ceil(ymax * 1.05 / step) * step;

	fputs("<text x=\"16\" y=\"", f);
	fprintf(f, "%.1f\" font-size=\"13\" font-weight=\"bold\">%s: time per dependent load "
		   "as the working set grows</text>\n",
		L->line_top + 14, L->curve);
	fprintf(f, "<text x=\"16\" y=\"%.1f\" fill=\"#444444\">Lower is better. Past the L2 TLB's "
		   "reach (dashed), base pages miss the TLB on every load; huge pages move that "
		   "point out.</text>\n",
		L->line_top + 30);
	for (double t = 0; t <= ymax + step / 1000; t += step)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			left, base - t / ymax * h, left + w, base - t / ymax * h, left - 6,
			base - t / ymax * h + 4, t);
	fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\">",
		24.0, top + h / 2);
	xml_text(f, unit);
	fputs("</text>\n", f);
	for (double p = lo2; p <= hi2; p++) {
		char sz[32];
		double tx = left + (p - lo2) / (hi2 - lo2) * w;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>",
			tx, top, tx, base);
		if (hi2 - lo2 <= 14 || (int)(p - lo2) % 2 == 0)
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", tx,
				base + 15, sp_format_size((uint64_t)1 << (int)p, sz, sizeof sz));
		else
			fputc('\n', f);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">working set (bytes, log scale)"
		   "</text>\n",
		left + w / 2, base + 32);
	/* The reach of the L2 TLB for each page size: where misses begin. */
	{
		static const char *const page[] = { "4K", "2M", "1G" };
		const double bytes[] = { 4096, 2 << 20, 1 << 30 };
		const unsigned entries[] = { m->stlb_4k, m->stlb_2m, m->stlb_1g };

		for (int i = 0; i < 3; i++) {
			double r2 = entries[i] ? log2(entries[i] * bytes[i]) : -1;
			double rx = left + (r2 - lo2) / (hi2 - lo2) * w;
			char b[32];

			if (!entries[i] || r2 < lo2 || r2 > hi2)
				continue;
			/* The label on the side of the line that has room. */
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#777777\" "
				   "stroke-dasharray=\"4,3\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"#555555\" "
				   "font-size=\"10\" text-anchor=\"%s\">%s pages: L2 TLB reach %s</text>\n",
				rx, top, rx, base, rx < left + w / 2 ? rx + 4 : rx - 4, top + 12 + 12 * i,
				rx < left + w / 2 ? "start" : "end", page[i],
				bench_fmt_bytes((uint64_t)(entries[i] * bytes[i]), b, sizeof b));
		}
	}
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\"/>"
		   "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\"/>\n",
		left, base, left + w, base, left, top, left, base);

	x = left + w + 24;
	for (int b = 0; b < nb; b++) {
		const char *col = colour_of(back, nb, back[b], L->base);
		double px[64], py[64];
		int np = 0, order[64];
		bool drew = false;

		for (int i = 0; i < n && np < 64; i++) {
			const struct bench_row *r = &rows[i];
			uint64_t s;

			if (strcmp(r->name, L->curve) || strcmp(r->backing, back[b]) || bench_rounds(r) == 0 ||
			    !isfinite(r->median_metric) || bench_parse_u64(r->size, strlen(r->size), &s) || s == 0)
				continue;
			px[np] = left + (log2((double)s) - lo2) / (hi2 - lo2) * w;
			py[np] = base - (r->median_metric > ymax ? ymax : r->median_metric) / ymax * h;
			order[np] = i;
			np++;
		}
		/* In order of size, whatever order the rounds came in. */
		for (int i = 1; i < np; i++)
			for (int k = i; k > 0 && px[k - 1] > px[k]; k--) {
				double tx = px[k], ty = py[k];
				int to = order[k];

				px[k] = px[k - 1], py[k] = py[k - 1], order[k] = order[k - 1];
				px[k - 1] = tx, py[k - 1] = ty, order[k - 1] = to;
			}
		if (np > 1) {
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
			for (int i = 0; i < np; i++)
				fprintf(f, "%s%.1f,%.1f", i ? " " : "", px[i], py[i]);
			fputs("\"/>\n", f);
		}
		for (int i = 0; i < np; i++) {
			const struct bench_row *r = &rows[order[i]];
			char mv[32];

			drew = true;
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\" stroke=\"%s\" "
				   "stroke-width=\"1.5\"><title>",
				px[i], py[i], r->valid && !r->check_failed ? col : "#ffffff", col);
			xml_text(f, r->backing);
			fprintf(f, ", %s: %s ", r->size, bench_fmt_metric(r->median_metric, mv, sizeof mv));
			xml_text(f, r->unit);
			if (!r->valid || r->check_failed) {
				fputs(" (not valid: ", f);
				xml_text(f, bench_row_why(r));
				fputc(')', f);
			}
			fputs("</title></circle>\n", f);
			if (!r->valid || r->check_failed)
				fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
					   "font-weight=\"bold\" fill=\"#cc0000\">!</text>\n",
					px[i], py[i] - 7);
		}
		if (!drew)
			continue;
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			   "stroke-width=\"2\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>"
			   "<text x=\"%.1f\" y=\"%.1f\">",
			x, key_y, x + 22, key_y, col, x + 11, key_y, col, x + 28, key_y + 4);
		xml_text(f, back[b]);
		fputs("</text>\n", f);
		key_y += 18;
	}
}

void bench_write_svg(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		     int n, const char *const *backings, int nb)
{
	struct svg_layout L;
	const char **back = NULL;
	int *first = NULL, ng, longest = 0;
	double key_w = 0, ext;
	char label[BENCH_NAME_LEN + 48];

	m = bench_machine_or_blank(m);
	nb = bench_backing_list(rows, n, backings, nb, &back);
	ng = nb < 0 ? -1 : bench_case_list(rows, n, &first);
	if (nb < 0 || ng < 0) {
		fputs("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"320\" height=\"40\">"
		      "<text x=\"10\" y=\"24\">superpage bench: out of memory</text></svg>\n",
		      f);
		goto out;
	}

	memset(&L, 0, sizeof L);
	L.base = m->baseline[0] ? m->baseline : "4k";
	for (int b = 0; b < nb; b++)
		if (strcmp(back[b], L.base)) {
			L.nbars++;
			key_w += 17 + FONT_W * (double)strlen(back[b]) + 16;
		}
	key_w += 17 + FONT_W * 50 + 16 + 28 + FONT_W * 21;
	L.bar_w = L.nbars <= 4 ? 10 : L.nbars <= 8 ? 7 : 5;
	L.group_w = (L.nbars > 0 ? L.nbars : 1) * L.bar_w + 14;
	for (int g = 0; g < ng; g++) {
		int k = (int)strlen(group_label(&rows[first[g]], label, sizeof label));
		const struct bench_kernel *kn = bench_kernel_of(rows[first[g]].name);

		longest = k > longest ? k : longest;
		if (kn && kn->curve && !strcmp(rows[first[g]].name, kn->name) && !L.curve)
			L.curve = kn->name;
	}
	/* Labels hang down-left at 45 degrees from their group: the first must fit. */
	ext = FONT_W * (ng > 0 ? (double)strlen(group_label(&rows[first[0]], label, sizeof label)) : 0) *
	      0.7071;
	L.left = ext - L.group_w / 2 + 12 > 64 ? ext - L.group_w / 2 + 12 : 64;
	L.top = 104;
	L.plot_h = 240;
	L.plot_w = ng * L.group_w;
	L.label_h = FONT_W * longest * 0.7071 + 24;
	L.width = L.left + L.plot_w + 24;
	if (L.width < L.left + key_w)
		L.width = L.left + key_w;
	if (L.width < 760)
		L.width = 760;

	L.ymax = 1;
	for (int i = 0; i < n; i++)
		if (strcmp(rows[i].backing, L.base) && bar_drawn(&rows[i]) && rows[i].speedup > L.ymax)
			L.ymax = rows[i].speedup;
	L.ystep = tick_step(L.ymax * 1.08, 6);
	L.ymax = ceil(L.ymax * 1.08 / L.ystep) * L.ystep;

	L.height = L.top + L.plot_h + L.label_h + 12;
	if (L.curve) {
		L.line_top = L.height + 16;
		L.height = L.line_top + 40 + 220 + 52;
	}

	svg_header(f, m, &L, back, nb);
	if (ng == 0 || L.nbars == 0)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">no results to compare with %s</text>\n",
			L.left, L.top + 40, L.base);
	else
		svg_bar_chart(f, &L, rows, n, first, ng, back, nb);
	if (L.curve)
		svg_line_chart(f, m, &L, rows, n, back, nb);
	fputs("</svg>\n", f);
out:
	free(first);
	free(back);
}
