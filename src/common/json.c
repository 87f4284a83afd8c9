/* json.c - the JSON writer: commas by nesting level, strings escaped to valid UTF-8 JSON. */
#include <assert.h>
#include <math.h>
#include <string.h>

#include "json.h"

void json_init(struct json *j, FILE *f)
{
	memset(j, 0, sizeof *j);
	j->f = f;
	j->first[0] = true;
}

/* Writes the separator a new value needs at the current level. */
static void json_sep(struct json *j)
{
	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
}

static void json_open(struct json *j, char c)
{
	json_sep(j);
	fputc(c, j->f);
	/* Our documents are a few levels deep; deeper is a bug in the caller. */
	assert(j->depth + 1 < JSON_MAX_DEPTH);
	j->depth++;
	j->first[j->depth] = true;
}

static void json_close(struct json *j, char c)
{
	assert(j->depth > 0 && !j->after_key);
	j->depth--;
	fputc(c, j->f);
}

void json_object_begin(struct json *j) { json_open(j, '{'); }
void json_object_end(struct json *j) { json_close(j, '}'); }
void json_array_begin(struct json *j) { json_open(j, '['); }
void json_array_end(struct json *j) { json_close(j, ']'); }

int json_utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	int n;
	unsigned min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	unsigned cp = c & (0x3f >> (n - 1));
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static void json_quoted(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		unsigned c = *s;
		int n;

		switch (c) {
		case '"': fputs("\\\"", f); s++; continue;
		case '\\': fputs("\\\\", f); s++; continue;
		case '\b': fputs("\\b", f); s++; continue;
		case '\f': fputs("\\f", f); s++; continue;
		case '\n': fputs("\\n", f); s++; continue;
		case '\r': fputs("\\r", f); s++; continue;
		case '\t': fputs("\\t", f); s++; continue;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			s++;
			continue;
		}
		n = json_utf8_len(s);
		if (n == 0) {
			/* A byte that is not UTF-8 (a path can hold any): the replacement
			 * character keeps the document valid. */
			fputs("\\ufffd", f);
			s++;
			continue;
		}
		fwrite(s, 1, (size_t)n, f);
		s += n;
	}
	fputc('"', f);
}

void json_key(struct json *j, const char *key)
{
	json_sep(j);
	json_quoted(j->f, key);
	fputc(':', j->f);
	j->after_key = true;
}

void json_string(struct json *j, const char *s)
{
	json_sep(j);
	json_quoted(j->f, s);
}

void json_uint(struct json *j, uint64_t v)
{
	json_sep(j);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void json_int(struct json *j, long long v)
{
	json_sep(j);
	fprintf(j->f, "%lld", v);
}

void json_double(struct json *j, double v)
{
	json_sep(j);
	if (isfinite(v))
		fprintf(j->f, "%.6f", v);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, bool v)
{
	json_sep(j);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j)
{
	json_sep(j);
	fputs("null", j->f);
}

void json_end(struct json *j)
{
	assert(j->depth == 0 && !j->after_key);
	fputc('\n', j->f);
}
