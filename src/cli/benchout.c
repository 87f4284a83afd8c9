/* benchout.c - superpage bench's results in and out: the kernels' result and memory
 * lines read, rounds reduced to medians and speedups, and the table, JSON, CSV and SVG
 * written from them. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "superpage.h"
#include "bench.h"
#include "json.h"

/* ---------- reading the kernels' lines ---------- */

/* A plain decimal uint64 of exactly len bytes: no sign, no blanks, no overflow. */
int bench_parse_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/* A finite decimal number of exactly len bytes, as printf's %f, %g or %e writes one.
 * strtod alone would also take "nan", "inf", hex and leading blanks. */
static int parse_double(const char *s, size_t len, double *out)
{
	char buf[64], *end;
	double v;

	if (len == 0 || len >= sizeof buf || !((s[0] >= '0' && s[0] <= '9') || s[0] == '-'))
		return -1;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
		      s[i] == '+' || s[i] == '-'))
			return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	v = strtod(buf, &end);
	if (end != buf + len || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* A name or unit: 1 to max-1 printable bytes without blanks. */
static int parse_word(const char *s, size_t len, char *out, size_t max)
{
	if (len == 0 || len >= max)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c == 0x7f)
			return -1;
	}
	memcpy(out, s, len);
	out[len] = 0;
	return 0;
}

/* Takes " KEY=" (or "KEY=" for the first field) at *p and gives the value, which runs
 * to the next blank or the end; *p moves past it. Exactly one space between fields. */
static int next_field(const char **p, const char *key, const char **val, size_t *len)
{
	size_t k = strlen(key);
	const char *s = *p;

	if (*s != ' ')
		return -1;
	s++;
	if (strncmp(s, key, k) || s[k] != '=')
		return -1;
	*val = s + k + 1;
	*len = strcspn(*val, " \t\r\n");
	*p = *val + *len;
	return 0;
}

/* The end of a line as fgets leaves it: nothing, "\n" or "\r\n". */
static bool at_line_end(const char *p)
{
	if (*p == '\r')
		p++;
	if (*p == '\n')
		p++;
	return *p == 0;
}

/* True if line starts with word followed by a blank or its end: the line claims to be
 * of that kind, and anything wrong after the word makes it malformed. */
static bool starts_with_word(const char *line, const char *word)
{
	size_t k = strlen(word);

	return !strncmp(line, word, k) &&
	       (line[k] == 0 || line[k] == ' ' || line[k] == '\t' || line[k] == '\r' || line[k] == '\n');
}

int bench_parse_result(const char *line, struct bench_line *out)
{
	struct bench_line r;
	const char *p, *v;
	size_t len;

	if (!line || !starts_with_word(line, "result"))
		return 0;
	memset(&r, 0, sizeof r);
	p = line + strlen("result");
	if (next_field(&p, "name", &v, &len) || parse_word(v, len, r.name, sizeof r.name) ||
	    next_field(&p, "size", &v, &len) || bench_parse_u64(v, len, &r.size) ||
	    next_field(&p, "seconds", &v, &len) || parse_double(v, len, &r.seconds) ||
	    r.seconds < 0 || next_field(&p, "metric", &v, &len) ||
	    parse_double(v, len, &r.metric) || next_field(&p, "unit", &v, &len) ||
	    parse_word(v, len, r.unit, sizeof r.unit) || next_field(&p, "check", &v, &len))
		return -1;
	if (len == 2 && !strncmp(v, "ok", 2))
		r.ok = true;
	else if (len == 4 && !strncmp(v, "FAIL", 4))
		r.ok = false;
	else
		return -1;
	if (!at_line_end(p))
		return -1;
	if (out)
		*out = r;
	return 1;
}

int bench_parse_memory(const char *line, struct bench_memory *out)
{
	struct bench_memory m;
	const char *p, *v;
	size_t len;

	if (!line || !starts_with_word(line, "memory"))
		return 0;
	p = line + strlen("memory");
	/* "memory unknown=ERRNO": the kernel could not read its smaps. That is no figure,
	 * which the caller sees as no memory line, not a broken kernel. */
	if (!next_field(&p, "unknown", &v, &len) && !bench_parse_u64(v, len, &m.data) && at_line_end(p))
		return 0;
	p = line + strlen("memory");
	if (next_field(&p, "data_bytes", &v, &len) || bench_parse_u64(v, len, &m.data) ||
	    next_field(&p, "thp_bytes", &v, &len) || bench_parse_u64(v, len, &m.thp) ||
	    next_field(&p, "hugetlb_2m_bytes", &v, &len) || bench_parse_u64(v, len, &m.tlb2m) ||
	    next_field(&p, "hugetlb_1g_bytes", &v, &len) || bench_parse_u64(v, len, &m.tlb1g))
		return -1;
	m.largest = 0; /* optional: the largest array the kernel has */
	if (!at_line_end(p) &&
	    (next_field(&p, "largest_bytes", &v, &len) || bench_parse_u64(v, len, &m.largest)))
		return -1;
	/* optional, after largest_bytes: the three figures of the kernel's own code */
	m.text = m.text_huge = m.text_hugetlb = 0;
	if (!at_line_end(p) &&
	    (next_field(&p, "text_bytes", &v, &len) || bench_parse_u64(v, len, &m.text) ||
	     next_field(&p, "text_huge_bytes", &v, &len) || bench_parse_u64(v, len, &m.text_huge) ||
	     next_field(&p, "text_hugetlb_bytes", &v, &len) ||
	     bench_parse_u64(v, len, &m.text_hugetlb) || !at_line_end(p)))
		return -1;
	if (out)
		*out = m;
	return 1;
}

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

/* ---------- what a run of a text kernel got ---------- */

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

/* ---------- the text table ---------- */

/* One output line, built up and written with its trailing blanks cut. */
struct line {
	char s[4096];
	size_t len;
};

static void line_add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line_add(struct line *l, const char *fmt, ...)
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

static void line_put(FILE *f, struct line *l)
{
	while (l->len > 0 && l->s[l->len - 1] == ' ')
		l->len--;
	l->s[l->len] = 0;
	fprintf(f, "%s\n", l->s);
	l->len = 0;
}

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

/* ---------- what the kernels are, and why some gain ---------- */

/* For a reader without the source: what each kernel (a case's name up to its '/')
 * does, and so which of its pages it goes through before it comes back to one. */
static const struct {
	const char *kernel, *what;
} kernel_about[] = {
	{ "trans", "the seed's trans.c: b = a transposed, n x n doubles, a read along its "
		   "rows and b written down its columns, a store n*8 bytes after the last" },
	{ "trans2", "the seed's trans2.c: the same transpose in its two loop orders, a "
		    "read by rows (strided stores) and by columns (strided loads)" },
	{ "transf", "the seed's trans.f: a transpose of column-major arrays, a load n*8 "
		    "bytes after the last, the column walk of a Fortran program" },
	{ "transw", "the seed's transw.c (vm_align): a large transpose with its arrays on "
		    "the 2 MiB grid (aligned) and off it (offset)" },
	{ "mem2", "the seed's mem2.c: stores into mmap and sbrk memory, a page apart (stride) "
		  "or one after another (cont)" },
	{ "gemmx", "the seed's gemmx.c: C = A*B on n x n doubles, naive (B walked down its "
		   "columns, a page a load) and blocked (packed blocks sized to the caches)" },
	{ "fft", "the seed's FFT: radix-2 complex transforms of n points, repeated; strides "
		 "that double from pass to pass" },
	{ "himeno", "the Himeno benchmark: Jacobi sweeps of a 19-point stencil over a 3-D "
		    "grid (1, 2, 3: sizes S, M, L)" },
	{ "gups", "random read-modify-write updates of 64-bit words over one table" },
	{ "tlbreach", "a pointer chase through a random ring of cache lines: the latency of "
		      "a load whose page is anywhere in the working set" },
	{ "stream", "the STREAM triad, a[i] = b[i] + s*c[i]: memory bandwidth" },
	{ "fault", "the first touch of fresh memory: the cost of its page faults (a 2M page "
		   "is one fault where 4K pages are 512)" },
	{ "malloc", "malloc and free themselves (mixed sizes, hand-offs, realloc)" },
	{ "itlb", "calls through generated code, a function per 4 KiB page: the instruction "
		  "TLB (run with --text, judged by its code's pages)" },
};

/* Kernels whose size is a matrix order n, and which walk a column: n pages of 4K. */
static bool walks_columns(const char *kernel)
{
	static const char *const k[] = { "trans", "trans2", "transf", "transw", "gemmx" };

	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
		if (!strcmp(kernel, k[i]))
			return true;
	return false;
}

/* Writes head, padded to indent columns, then text folded at 80 columns, its other
 * lines indented as far. */
static void put_folded(FILE *f, int indent, const char *head, const char *text)
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

/* A case's kernel: its name up to the '/'. */
static void kernel_of(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%.*s", (int)strcspn(name, "/"), name);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The sizes of this run's cases whose kernel pick()s, smallest first and each once,
 * into v[max]; their count. */
static int case_sizes(const struct bench_row *rows, const int *first, int ng,
		      bool (*pick)(const char *), uint64_t *v, int max)
{
	int nv = 0, kept = 0;

	for (int g = 0; g < ng && nv < max; g++) {
		const struct bench_row *r = &rows[first[g]];
		char k[BENCH_NAME_LEN];

		kernel_of(r->name, k, sizeof k);
		if (pick(k) && !bench_parse_u64(r->size, strlen(r->size), &v[nv]))
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

static bool random_access(const char *kernel)
{
	return !strcmp(kernel, "gups") || !strcmp(kernel, "tlbreach");
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
	nv = case_sizes(rows, first, ng, random_access, v, 64);
	sizes_by_reach(v, nv, e4k * 4096ull, false, past, sizeof past);
	sizes_by_reach(v, nv, e4k * 4096ull, true, in, sizeof in);
	if (past[0])
		line_add(&t, " Random accesses (gups, tlbreach) over %s go past it on 4K pages.",
			 past);
	if (in[0])
		line_add(&t, " Over %s they stay within it: little to gain.", in);
	nv = case_sizes(rows, first, ng, walks_columns, v, 64);
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
static void write_kernels_text(FILE *f, const struct bench_machine *m,
			       const struct bench_row *rows, const int *first, int ng)
{
	fputs("\nkernels:\n", f);
	for (int g = 0; g < ng; g++) {
		char k[BENCH_NAME_LEN];
		bool seen = false;

		kernel_of(rows[first[g]].name, k, sizeof k);
		for (int h = 0; h < g && !seen; h++) {
			char kh[BENCH_NAME_LEN];

			kernel_of(rows[first[h]].name, kh, sizeof kh);
			seen = !strcmp(k, kh);
		}
		for (size_t i = 0; !seen && i < sizeof kernel_about / sizeof kernel_about[0]; i++)
			if (!strcmp(k, kernel_about[i].kernel))
				put_folded(f, 10, k, kernel_about[i].what);
	}
	write_reach_text(f, m, rows, first, ng);
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

void bench_write_table(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		       int n, const char *const *backings, int nb)
{
	const char **back = NULL;
	int *first = NULL, ng, wcase = 4, wsize = 4, wunit = 4, *wcol = NULL, notes = 0;
	char (*cells)[CELL] = NULL;
	struct line l = { .len = 0 };

	write_machine_text(f, bench_machine_or_blank(m));
	fputc('\n', f);
	nb = bench_backing_list(rows, n, backings, nb, &back);
	ng = nb < 0 ? -1 : bench_case_list(rows, n, &first);
	if (ng >= 0) {
		cells = calloc((size_t)(ng > 0 ? ng : 1) * (size_t)(nb > 0 ? nb : 1), sizeof *cells);
		wcol = calloc((size_t)(nb > 0 ? nb : 1), sizeof *wcol);
	}
	if (nb < 0 || ng < 0 || !cells || !wcol) {
		fprintf(f, "(no table: out of memory)\n");
		goto out;
	}
	if (ng == 0) {
		fprintf(f, "(no results)\n");
		goto out;
	}
	for (int b = 0; b < nb; b++)
		wcol[b] = (int)strlen(back[b]) + 1;
	for (int g = 0; g < ng; g++) {
		const struct bench_row *r = &rows[first[g]];
		char sz[32];
		int k;

		k = (int)strlen(r->name);
		wcase = k > wcase ? k : wcase;
		k = (int)strlen(bench_fmt_size(r->size, sz, sizeof sz));
		wsize = k > wsize ? k : wsize;
		k = (int)strlen(r->unit);
		wunit = k > wunit ? k : wunit;
		for (int b = 0; b < nb; b++) {
			char *cell = cells[g * nb + b];

			table_cell(bench_find_row(rows, n, r, back[b]), cell);
			k = (int)strlen(cell);
			wcol[b] = k > wcol[b] ? k : wcol[b];
		}
	}

	line_add(&l, "%-*s  %*s  %-*s", wcase, "case", wsize, "size", wunit, "unit");
	for (int b = 0; b < nb; b++)
		line_add(&l, "  %*s ", wcol[b] - 1, back[b]);
	line_put(f, &l);
	for (size_t i = 0, w = (size_t)(wcase + wsize + wunit + 4); i < w; i++)
		line_add(&l, "-");
	for (int b = 0; b < nb; b++)
		for (int i = 0; i < wcol[b] + 2; i++)
			line_add(&l, "-");
	line_put(f, &l);
	for (int g = 0; g < ng; g++) {
		const struct bench_row *r = &rows[first[g]];
		char sz[32];

		line_add(&l, "%-*s  %*s  %-*s", wcase, r->name, wsize, bench_fmt_size(r->size, sz, sizeof sz),
			 wunit, r->unit);
		for (int b = 0; b < nb; b++)
			line_add(&l, "  %*s", wcol[b], cells[g * nb + b]);
		line_put(f, &l);
	}

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
	write_kernels_text(f, bench_machine_or_blank(m), rows, first, ng);
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
out:
	free(cells);
	free(wcol);
	free(first);
	free(back);
}

/* ---------- JSON ---------- */

static void json_limit(struct json *j, const char *key, long v)
{
	json_key(j, key);
	if (v < 0)
		json_null(j);
	else
		json_int(j, v);
}

static void json_tlb(struct json *j, const char *key, unsigned e4k, unsigned e2m, unsigned e1g)
{
	json_key(j, key);
	json_object_begin(j);
	json_key(j, "4k");
	json_uint(j, e4k);
	json_key(j, "2m");
	json_uint(j, e2m);
	json_key(j, "1g");
	json_uint(j, e1g);
	json_object_end(j);
}

static void json_machine(struct json *j, const struct bench_machine *m)
{
	json_key(j, "machine");
	json_object_begin(j);
	json_key(j, "cpu");
	json_string(j, m->cpu);
	json_key(j, "cpus");
	json_uint(j, m->cpus);
	json_key(j, "kernel");
	json_string(j, m->kernel);
	json_key(j, "l1d");
	json_uint(j, m->l1d);
	json_key(j, "l2");
	json_uint(j, m->l2);
	json_key(j, "l3");
	json_uint(j, m->l3);
	/* Entries per page size: dtlb is the first-level data TLB, stlb the second level. */
	json_key(j, "tlb");
	json_object_begin(j);
	json_tlb(j, "dtlb", m->dtlb_4k, m->dtlb_2m, m->dtlb_1g);
	json_tlb(j, "stlb", m->stlb_4k, m->stlb_2m, m->stlb_1g);
	json_object_end(j);
	json_key(j, "thp_enabled");
	json_string(j, m->thp_enabled);
	json_key(j, "thp_defrag");
	json_string(j, m->thp_defrag);
	json_limit(j, "pool_2m_total", m->pool_2m_total);
	json_limit(j, "pool_2m_free", m->pool_2m_free);
	json_limit(j, "pool_1g_total", m->pool_1g_total);
	json_limit(j, "pool_1g_free", m->pool_1g_free);
	json_key(j, "date");
	json_string(j, m->date);
	json_key(j, "quick");
	json_bool(j, m->quick);
	json_key(j, "repeat");
	json_int(j, m->repeat);
	json_object_end(j);
}

static void json_row(struct json *j, const struct bench_row *r)
{
	uint64_t size;
	int k = bench_rounds(r);

	json_object_begin(j);
	json_key(j, "kernel");
	json_string(j, r->name);
	/* A number, as kernels print it; a string only if some kernel printed another form. */
	json_key(j, "size");
	if (!bench_parse_u64(r->size, strlen(r->size), &size))
		json_uint(j, size);
	else
		json_string(j, r->size);
	json_key(j, "backing");
	json_string(j, r->backing);
	json_key(j, "rounds");
	json_int(j, k);
	json_key(j, "runs_s");
	json_array_begin(j);
	for (int i = 0; i < k; i++)
		json_double(j, r->runs_s[i]);
	json_array_end(j);
	json_key(j, "median_s");
	json_double(j, k ? r->median_s : NAN);
	json_key(j, "best_s");
	json_double(j, k ? r->best_s : NAN);
	json_key(j, "metric");
	json_double(j, k ? r->median_metric : NAN);
	json_key(j, "best_metric");
	json_double(j, k ? r->best_metric : NAN);
	json_key(j, "metrics");
	json_array_begin(j);
	for (int i = 0; i < k; i++)
		json_double(j, r->metric[i]);
	json_array_end(j);
	json_key(j, "unit");
	json_string(j, r->unit);
	json_key(j, "higher_is_better");
	json_bool(j, r->higher_is_better);
	json_key(j, "coverage");
	json_double(j, r->coverage);
	json_key(j, "coverage_wanted");
	json_double(j, r->cov_wanted);
	json_key(j, "minflt");
	json_uint(j, r->minflt);
	json_key(j, "speedup_vs_4k");
	if (r->speedup > 0)
		json_double(j, r->speedup);
	else
		json_null(j);
	json_key(j, "spread");
	json_double(j, k ? r->spread : NAN);
	json_key(j, "valid");
	json_bool(j, r->valid);
	json_key(j, "check");
	json_string(j, r->check_failed ? "FAIL" : "ok");
	if (r->why[0]) {
		json_key(j, "why");
		json_string(j, r->why);
	}
	json_object_end(j);
}

void bench_write_json(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		      int n)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	json_machine(&j, bench_machine_or_blank(m));
	json_key(&j, "results");
	json_array_begin(&j);
	for (int i = 0; i < n; i++)
		json_row(&j, &rows[i]);
	json_array_end(&j);
	json_object_end(&j);
	json_end(&j);
}

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
	fputs("kernel,size,backing,unit,rounds,median_s,best_s,metric,best_metric,coverage,"
	      "coverage_wanted,minflt,speedup_vs_4k,valid,check,why,spread\n",
	      f);
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
