/* kernel_lines.c - the kernels' output read: their result lines and memory lines. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parts.h"

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

