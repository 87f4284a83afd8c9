/* watch.c - superpage run's watch of a program it cannot preload, as published for
 * superpage stat: the watcher's page, and the watch that reaches a process, found
 * among its ancestors. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define WATCH_NAME "superpage-watch"
#define WATCH_MAGIC 0x53505754u /* "SPWT" */
#define WATCH_VERSION 1
#define WATCH_DEPTH 64 /* ancestors looked at, at most */

struct watch_page {
	struct sp_pub_head head;
	struct sp_watch w;
};
#define WATCH_LEN ((sizeof(struct watch_page) + 4095) & ~(size_t)4095)

const char *sp_watch_why_name(enum sp_watch_why w)
{
	static const char *const names[SP_WATCH_WHY_COUNT] = {
		[SP_WATCH_STATIC] = "static", [SP_WATCH_LIBC] = "libc", [SP_WATCH_CLASS] = "class",
	};
	return (unsigned)w < SP_WATCH_WHY_COUNT ? names[w] : "?";
}

void *sp_watch_page_new(void)
{
	return sp_pub_map(WATCH_NAME, WATCH_LEN);
}

void sp_watch_put(void *page, const struct sp_watch *w)
{
	static struct watch_page p; /* (one watcher a process: no lock) */
	p.head.magic = WATCH_MAGIC;
	p.head.version = WATCH_VERSION;
	p.w = *w;
	sp_pub_put(page, &p, sizeof p);
}

int sp_proc_parent(pid_t pid, pid_t *ppid, uint64_t *start_time)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	ssize_t n = sp_read_file(path, buf, sizeof buf);
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	/* "pid (comm) state ppid ... starttime ...": the comm may hold spaces and ')'. */
	const char *s = strrchr(buf, ')');
	if (!s)
		return -EPROTO;
	s++;
	uint64_t v = 0;
	for (int field = 3; field <= 22; field++) {
		while (*s == ' ')
			s++;
		if (field == 3) {
			if (!*s)
				return -EPROTO;
			s++;
			continue;
		}
		if (*s == '-')
			s++; /* (tty_nr, priority and nice may be negative: not needed) */
		if (sp_scan_u64(&s, &v) < 0)
			return -EPROTO;
		if (field == 4)
			*ppid = (pid_t)v;
	}
	*start_time = v;
	return 0;
}

int sp_watch_find(pid_t pid, struct sp_watch *out, int *index)
{
	static struct watch_page p;
	uint64_t start, up_start;
	pid_t up;
	int denied = 0;

	memset(out, 0, sizeof *out);
	int r = sp_proc_parent(pid, &up, &start);
	if (r < 0)
		return r;
	for (int depth = 0; depth < WATCH_DEPTH && up > 1; depth++) {
		r = sp_pub_read(up, WATCH_NAME, &p, sizeof p, WATCH_MAGIC, WATCH_VERSION);
		if (r == -EACCES || r == -EPERM)
			denied = r;
		if (r == 0 && p.w.watcher == up) {
			for (int i = 0; i < p.w.n && i < SP_WATCH_MAX; i++)
				if (p.w.procs[i].pid == pid && p.w.procs[i].start_time == start) {
					uint64_t now = sp_os->now_ns();
					*out = p.w;
					out->age_ns = now > p.w.at_ns ? now - p.w.at_ns : 0;
					*index = i;
					return 0;
				}
		}
		/* Not this one's: a watch further up may reach it (a watched program
		 * that started another superpage run). */
		if (sp_proc_parent(up, &up, &up_start) < 0)
			break;
	}
	return denied ? denied : -ENOENT;
}
