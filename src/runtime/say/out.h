/* out.h - a formatter that needs nothing but a buffer (out.c): no malloc, no stdio,
 * for what the runtime writes from inside other programs, perhaps inside malloc. */
#ifndef SP_OUT_H
#define SP_OUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

struct out {
	char *buf;
	size_t len, cap;
	bool cut;          /* something did not fit */
};

void put_char(struct out *o, char c);
void put_str(struct out *o, const char *s);
/* %s %d %i %u %x %p %c %%, with the length modifiers l, ll and z; no widths. */
void put_vfmt(struct out *o, const char *fmt, va_list ap);
void put_fmt(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "512 B", "64.0 MiB": as the command prints amounts of memory. */
void put_human(struct out *o, uint64_t bytes);
/* part/whole as "98.5%". */
void put_percent(struct out *o, uint64_t part, uint64_t whole);
/* A ratio in [0, 1] as "0.941176", the way the command's JSON writes it (%.6f). */
void put_ratio(struct out *o, double r);
/* A JSON string; bytes that are not UTF-8 (a name cut in the middle of a
 * character) become '?', so that every reader can parse the line. */
void put_json_string(struct out *o, const char *s);
/* Control characters from o->buf[from] on shown as '?', so that a message stays
 * one line. */
void one_line(struct out *o, size_t from);
/* All of buf to fd (retried on EINTR; given up on an error): 0, or the errno of the
 * write that failed (EIO for one that wrote nothing). */
int write_all(int fd, const char *buf, size_t len);

#pragma GCC visibility pop

#endif
