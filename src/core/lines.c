/* lines.c - reads a file line by line through the seam into fixed buffers. */
#include <string.h>

#include "internal.h"

void sp_lines_init(struct sp_lines *l, int fd)
{
	l->fd = fd;
	l->start = l->end = 0;
	l->eof = false;
	l->cut = false;
	l->unterminated = false;
}

/* Refills buf; returns bytes read, 0 at end, -errno. */
static ssize_t refill(struct sp_lines *l)
{
	l->start = 0;
	l->end = 0;
	if (l->eof)
		return 0;
	ssize_t n = sp_os->read(l->fd, l->buf, sizeof l->buf);
	if (n <= 0) {
		l->eof = true;
		return n;
	}
	l->end = (size_t)n;
	return n;
}

int sp_lines_next(struct sp_lines *l, const char **line)
{
	size_t len = 0;
	l->cut = false;
	l->unterminated = false;
	for (;;) {
		if (l->start == l->end) {
			ssize_t n = refill(l);
			if (n < 0)
				return (int)n;
			if (n == 0) {
				if (len == 0 && !l->cut)
					return 0;
				l->unterminated = true;
				break;
			}
		}
		char *p = l->buf + l->start;
		size_t avail = l->end - l->start;
		char *nl = memchr(p, '\n', avail);
		size_t take = nl ? (size_t)(nl - p) : avail;
		size_t room = sizeof l->line - 1 - len;
		if (take > room) {
			l->cut = true;
			memcpy(l->line + len, p, room);
			len += room;
		} else {
			memcpy(l->line + len, p, take);
			len += take;
		}
		l->start += take + (nl ? 1 : 0);
		if (nl)
			break;
	}
	l->line[len] = 0;
	*line = l->line;
	return 1;
}
