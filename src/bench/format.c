/* format.c - figures and sizes as the writers print them, and the text table's line buffer. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parts.h"

/* "8 MiB", "1 GiB", "1.25 MiB", "512 B": amounts of memory. */
const char *bench_fmt_bytes(uint64_t b, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = -1;
	double v = (double)b;

	if (b < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)b);
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == floor(v))
		snprintf(buf, len, "%.0f %s", v, unit[u]);
	else
		snprintf(buf, len, "%.3g %s", v, unit[u]);
	return buf;
}

/* The size as a reader wants it: bytes of a MiB and more as "8M", "1G"; everything
 * else (matrix orders, points) as the kernel printed it. */
const char *bench_fmt_size(const char *size, char *buf, size_t len)
{
	uint64_t v;

	if (!bench_parse_u64(size, strlen(size), &v) && v >= (1u << 20) && v % 1024 == 0)
		return sp_format_size(v, buf, len);
	snprintf(buf, len, "%s", size);
	return buf;
}

/* A kernel's own figure with about four significant digits: "412.3", "12345", "1.23". */
const char *bench_fmt_metric(double v, char *buf, size_t len)
{
	double a = fabs(v);

	if (!isfinite(v))
		snprintf(buf, len, "?");
	else if (a >= 10000)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 100)
		snprintf(buf, len, "%.1f", v);
	else if (a >= 1)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3g", v);
	return buf;
}

const char *bench_fmt_speedup(double s, char *buf, size_t len)
{
	if (!(s > 0) || !isfinite(s))
		snprintf(buf, len, "n/a");
	else if (s >= 100)
		snprintf(buf, len, "%.0fx", s);
	else if (s >= 10)
		snprintf(buf, len, "%.1fx", s);
	else
		snprintf(buf, len, "%.2fx", s);
	return buf;
}

/* "100%", " 45%", "   ?": the share of the data on huge pages. */
const char *bench_fmt_coverage(double c, char *buf, size_t len)
{
	if (!(c >= 0) || !isfinite(c))
		snprintf(buf, len, "%4s", "?");
	else
		snprintf(buf, len, "%3.0f%%", 100 * (c > 1 ? 1 : c));
	return buf;
}

/* Why the row has no figure for its backing, in a few words. */
const char *bench_row_why(const struct bench_row *r)
{
	if (r->why[0])
		return r->why;
	if (r->check_failed)
		return "the kernel's check of its answer failed";
	if (!r->valid)
		return "did not get the backing it asked for";
	return "no round produced a figure";
}

const struct bench_machine *bench_machine_or_blank(const struct bench_machine *m)
{
	static const struct bench_machine blank = { .pool_2m_total = -1, .pool_2m_free = -1,
						    .pool_1g_total = -1, .pool_1g_free = -1 };

	return m ? m : &blank;
}

void line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (l->len >= sizeof l->s - 1)
		return;
	va_start(ap, fmt);
	k = vsnprintf(l->s + l->len, sizeof l->s - l->len, fmt, ap);
	va_end(ap);
	if (k > 0)
		l->len += (size_t)k < sizeof l->s - l->len ? (size_t)k : sizeof l->s - l->len - 1;
}

void line_put(FILE *f, struct line *l)
{
	while (l->len > 0 && l->s[l->len - 1] == ' ')
		l->len--;
	l->s[l->len] = 0;
	fprintf(f, "%s\n", l->s);
	l->len = 0;
}

void put_folded(FILE *f, int indent, const char *head, const char *text)
{
	struct line l = { .len = 0 };

	line_add(&l, "%-*s", indent, head);
	for (const char *p = text; *p;) {
		size_t w = strcspn(p, " ");
		bool first = l.len <= (size_t)indent;

		if (!first && l.len + 1 + w > 80) {
			line_put(f, &l);
			line_add(&l, "%*s", indent, "");
			first = true;
		}
		line_add(&l, "%s%.*s", first ? "" : " ", (int)w, p);
		p += w;
		p += strspn(p, " ");
	}
	line_put(f, &l);
}

