/* out.c - a formatter that needs nothing but a buffer: the runtime's messages and
 * account are built on the stack and written with one write. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "out.h"

void put_char(struct out *o, char c)
{
	if (o->len < o->cap)
		o->buf[o->len++] = c;
	else
		o->cut = true;
}

void put_str(struct out *o, const char *s)
{
	if (!s)
		s = "(null)";
	while (*s)
		put_char(o, *s++);
}

static void put_uint(struct out *o, unsigned long long v, unsigned base)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		put_char(o, digits[--n]);
}

static void put_int(struct out *o, long long v)
{
	if (v < 0) {
		put_char(o, '-');
		put_uint(o, 0ull - (unsigned long long)v, 10);
	} else {
		put_uint(o, (unsigned long long)v, 10);
	}
}

/* %s %d %i %u %x %p %c %%, with the length modifiers l, ll and z; no widths. */
void put_vfmt(struct out *o, const char *fmt, va_list ap)
{
	for (const char *p = fmt; *p; p++) {
		int lng = 0;
		bool z = false;

		if (*p != '%') {
			put_char(o, *p);
			continue;
		}
		p++;
		while (*p == 'l') {
			lng++;
			p++;
		}
		if (*p == 'z') {
			z = true;
			p++;
		}
		switch (*p) {
		case 'd':
		case 'i':
			if (z)
				put_int(o, va_arg(ap, ssize_t));
			else if (lng >= 2)
				put_int(o, va_arg(ap, long long));
			else if (lng)
				put_int(o, va_arg(ap, long));
			else
				put_int(o, va_arg(ap, int));
			break;
		case 'u':
		case 'x':
			if (z)
				put_uint(o, va_arg(ap, size_t), *p == 'x' ? 16 : 10);
			else if (lng >= 2)
				put_uint(o, va_arg(ap, unsigned long long), *p == 'x' ? 16 : 10);
			else if (lng)
				put_uint(o, va_arg(ap, unsigned long), *p == 'x' ? 16 : 10);
			else
				put_uint(o, va_arg(ap, unsigned), *p == 'x' ? 16 : 10);
			break;
		case 's':
			put_str(o, va_arg(ap, const char *));
			break;
		case 'c':
			put_char(o, (char)va_arg(ap, int));
			break;
		case 'p':
			put_str(o, "0x");
			put_uint(o, (uintptr_t)va_arg(ap, void *), 16);
			break;
		case '%':
			put_char(o, '%');
			break;
		case 0:
			put_char(o, '%');
			return;
		default:
			put_char(o, '%');
			put_char(o, *p);
			break;
		}
	}
}

void put_fmt(struct out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_vfmt(o, fmt, ap);
	va_end(ap);
}

/* "512 B", "64.0 MiB": as the command prints amounts of memory. */
void put_human(struct out *o, uint64_t bytes)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	uint64_t tenths;
	int u = -1;

	if (bytes < 1024) {
		put_fmt(o, "%llu B", (unsigned long long)bytes);
		return;
	}
	while (v >= 1023.95 && u < 5) {
		v /= 1024;
		u++;
	}
	tenths = (uint64_t)(v * 10 + 0.5);
	put_fmt(o, "%llu.%llu %s", (unsigned long long)(tenths / 10),
		(unsigned long long)(tenths % 10), unit[u]);
}

/* part/whole as "98.5%". */
void put_percent(struct out *o, uint64_t part, uint64_t whole)
{
	uint64_t tenths = whole ? (uint64_t)((double)part * 1000 / (double)whole + 0.5) : 0;

	put_fmt(o, "%llu.%llu%%", (unsigned long long)(tenths / 10),
		(unsigned long long)(tenths % 10));
}

/* A ratio in [0, 1] as "0.941176", the way the command's JSON writes it (%.6f). */
void put_ratio(struct out *o, double r)
{
	uint64_t millionths = (uint64_t)(r * 1e6 + 0.5);
	char frac[7];

	for (int k = 5; k >= 0; k--) {
		frac[k] = (char)('0' + millionths % 10);
		millionths /= 10;
	}
	frac[6] = 0;
	put_fmt(o, "%llu.%s", (unsigned long long)millionths, frac);
}

/* Length of the UTF-8 sequence at s (at most n bytes), 0 if it is not valid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	/* No overlong forms, no surrogates, nothing above U+10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* A JSON string; bytes that are not UTF-8 (a name cut in the middle of a
 * character) become '?', so that every reader can parse the line. */
void put_json_string(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	put_char(o, '"');
	while (n) {
		size_t len = utf8_len(p, n);

		if (len == 0) {
			put_char(o, '?');
			len = 1;
		} else if (*p == '"' || *p == '\\') {
			put_char(o, '\\');
			put_char(o, (char)*p);
		} else if (*p < 0x20 || *p == 0x7f) {
			put_fmt(o, "\\u00%c%c", "0123456789abcdef"[*p >> 4], "0123456789abcdef"[*p & 15]);
		} else {
			for (size_t k = 0; k < len; k++)
				put_char(o, (char)p[k]);
		}
		p += len;
		n -= len;
	}
	put_char(o, '"');
}

/* Control characters shown as '?', so that a message stays one line. */
void one_line(struct out *o, size_t from)
{
	for (size_t k = from; k < o->len; k++)
		if ((unsigned char)o->buf[k] < 0x20 || o->buf[k] == 0x7f)
			o->buf[k] = '?';
}

int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

