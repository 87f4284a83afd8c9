/* limits.c - the limits this process runs under: its memory cgroup's (v1 or v2), the
 * hugetlb controller's, RLIMIT_AS and RLIMIT_DATA. The cgroups are found once, from
 * /proc/self/cgroup and /proc/self/mountinfo (the memory controller's at its usual
 * mount without the latter, when it is there); their figures are read as often as the
 * caller likes, through the seam, into buffers of the caller's (the runtime reads them
 * inside malloc). */
#include <errno.h>
#include <linux/magic.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>

#include "internal.h"

/* v1 shows "no limit" as the largest multiple of the page below 2^63. */
#define V1_NONE ((uint64_t)1 << 62)

/* ---- reading files ---- */

/* Calls fn on each line of path (NUL-terminated, without its newline), read through
 * buf; a line longer than buf is skipped. Stops when fn returns true. 0, or -errno if
 * the file cannot be opened. */
static int each_line(const char *path, char *buf, size_t len, bool (*fn)(char *line, void *arg),
		     void *arg)
{
	int fd = sp_os->open(path, O_RDONLY, 0);
	size_t have = 0;
	bool skipping = false, done = false;
	if (fd < 0)
		return fd;
	while (!done) {
		ssize_t n = sp_os->read(fd, buf + have, len - 1 - have);
		if (n <= 0) {
			if (have && !skipping) { /* the last line, unterminated */
				buf[have] = 0;
				fn(buf, arg);
			}
			break;
		}
		have += (size_t)n;
		size_t at = 0;
		for (char *nl; !done && (nl = memchr(buf + at, '\n', have - at)); at = (size_t)(nl - buf) + 1) {
			*nl = 0;
			if (!skipping)
				done = fn(buf + at, arg);
			skipping = false;
		}
		memmove(buf, buf + at, have - at);
		have -= at;
		if (have == len - 1) { /* a line longer than buf: skip to its end */
			skipping = true;
			have = 0;
		}
	}
	sp_os->close(fd);
	return 0;
}

/* A file of one number, or "max" (v2: no limit): the value, SP_LIMIT_NONE for none
 * (and v1's "no limit"), or false if the file cannot be read or holds neither. */
static bool read_value(const char *path, uint64_t *out)
{
	char buf[32];
	const char *p = buf;
	if (sp_read_value(path, buf, sizeof buf) < 0)
		return false;
	if (!strncmp(buf, "max", 3)) {
		*out = SP_LIMIT_NONE;
		return true;
	}
	if (sp_scan_u64(&p, out) < 0)
		return false;
	if (*out >= V1_NONE)
		*out = SP_LIMIT_NONE;
	return true;
}

/* ---- finding the cgroups ---- */

/* A cgroup hierarchy: where it is mounted, the part of the hierarchy the mount
 * shows (its root), and the process's cgroup in it. */
struct hier {
	int version;
	char mount[SP_LIMIT_PATH], root[SP_LIMIT_PATH], own[SP_LIMIT_PATH];
};

struct found {
	struct hier mem1, huge1, v2;
};

/* Whether word is one of the comma-separated words of list. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == 0 || p[n] == ','))
			return true;
	return false;
}

/* Copies a mountinfo field, its octal escapes (\040 for a space) undone. */
static void unescape(char *dst, size_t len, const char *src)
{
	size_t k = 0;
	while (*src && k + 1 < len) {
		if (src[0] == '\\' && src[1] >= '0' && src[1] <= '3' && src[2] >= '0' && src[2] <= '7' &&
		    src[3] >= '0' && src[3] <= '7') {
			dst[k++] = (char)((src[1] - '0') << 6 | (src[2] - '0') << 3 | (src[3] - '0'));
			src += 4;
		} else {
			dst[k++] = *src++;
		}
	}
	dst[k] = 0;
}

/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS" */
static bool mount_line(char *line, void *arg)
{
	struct found *f = arg;
	char *w[6], *save, *fstype = NULL, *super = NULL;
	int n = 0;
	for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n < 6) {
			w[n++] = t;
		} else if (!strcmp(t, "-")) {
			fstype = strtok_r(NULL, " ", &save);
			if (fstype && strtok_r(NULL, " ", &save))
				super = strtok_r(NULL, " ", &save);
			break;
		}
	}
	if (n < 6 || !fstype)
		return false;
	struct hier *h = NULL;
	if (!strcmp(fstype, "cgroup2") && !f->v2.version)
		h = &f->v2;
	else if (!strcmp(fstype, "cgroup") && super && has_word(super, "memory") && !f->mem1.version)
		h = &f->mem1;
	else if (!strcmp(fstype, "cgroup") && super && has_word(super, "hugetlb") && !f->huge1.version)
		h = &f->huge1;
	if (h) {
		h->version = !strcmp(fstype, "cgroup2") ? 2 : 1;
		unescape(h->root, sizeof h->root, w[3]);
		unescape(h->mount, sizeof h->mount, w[4]);
	}
	return false;
}

/* "ID:CONTROLLERS:PATH": v2 is "0::PATH"; v1 names its controllers. */
static bool cgroup_line(char *line, void *arg)
{
	struct found *f = arg;
	char *c = strchr(line, ':'), *p = c ? strchr(c + 1, ':') : NULL;
	if (!p)
		return false;
	*p++ = 0;
	if (!strcmp(line, "0:") && c[1] == 0)
		sp_strlcpy(f->v2.own, p, sizeof f->v2.own);
	if (has_word(c + 1, "memory"))
		sp_strlcpy(f->mem1.own, p, sizeof f->mem1.own);
	if (has_word(c + 1, "hugetlb"))
		sp_strlcpy(f->huge1.own, p, sizeof f->huge1.own);
	return false;
}

/* The process's cgroup's directory in h: its mount and the cgroup's path below the
 * mount's root (in a cgroup namespace both are "/"); false if h has none. */
static bool own_dir(const struct hier *h, char *out, size_t len)
{
	const char *rel = h->own;
	size_t r = strlen(h->root);
	if (!h->version || !h->own[0])
		return false;
	if (strcmp(h->root, "/")) {
		if (strncmp(rel, h->root, r) || (rel[r] != '/' && rel[r] != 0))
			rel = ""; /* (not below the mount's root: the mount's own cgroup) */
		else
			rel += r;
	}
	if (!strcmp(rel, "/"))
		rel = "";
	return (size_t)snprintf(out, len, "%s%s", h->mount, rel) < len;
}

/* Whether a directory's limit file (name) holds a limit. */
static bool limited(const char *dir, const char *name)
{
	char path[SP_LIMIT_PATH + 64];
	uint64_t v;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return read_value(path, &v) && v != SP_LIMIT_NONE;
}

static bool mem_limited(const char *dir, int version)
{
	if (version == 1)
		return limited(dir, "memory.limit_in_bytes");
	return limited(dir, "memory.max") || limited(dir, "memory.high");
}

static bool huge_limited(const char *dir, int version)
{
	static const char *const v1[] = { "hugetlb.2MB.limit_in_bytes", "hugetlb.1GB.limit_in_bytes",
					  "hugetlb.2MB.rsvd.limit_in_bytes",
					  "hugetlb.1GB.rsvd.limit_in_bytes" };
	static const char *const v2[] = { "hugetlb.2MB.max", "hugetlb.1GB.max", "hugetlb.2MB.rsvd.max",
					  "hugetlb.1GB.rsvd.max" };
	for (int i = 0; i < 4; i++)
		if (limited(dir, version == 1 ? v1[i] : v2[i]))
			return true;
	return false;
}

/* The levels from the process's cgroup in h up to the mount's that hold a limit
 * (is_limited), into dirs; how many. */
static int levels(const struct hier *h, bool (*is_limited)(const char *dir, int version),
		  char (*dirs)[SP_LIMIT_PATH])
{
	char dir[SP_LIMIT_PATH];
	size_t top = strlen(h->mount);
	int n = 0;
	if (!own_dir(h, dir, sizeof dir))
		return 0;
	for (;;) {
		if (n < SP_LIMIT_LEVELS && is_limited(dir, h->version))
			sp_strlcpy(dirs[n++], dir, SP_LIMIT_PATH);
		char *slash = strrchr(dir, '/');
		if (strlen(dir) <= top || !slash || (size_t)(slash - dir) < top)
			break;
		*slash = 0;
	}
	return n;
}

/* Whether dir/file is there (the process's cgroup, seen through the mount at dir). */
static bool has_file(const char *dir, const char *own, const char *file)
{
	char path[2 * SP_LIMIT_PATH + 64];
	if (!strcmp(own, "/"))
		own = "";
	return (size_t)snprintf(path, sizeof path, "%s%s/%s", dir, own, file) < sizeof path &&
	       sp_os->access(path, F_OK) == 0;
}

/* The memory controller's hierarchy where most systems mount it, into f, without
 * reading mountinfo (which costs more than the rest of the search at a program's
 * start): v1's /sys/fs/cgroup/memory if the process's cgroup line names memory,
 * else v2's /sys/fs/cgroup, or beside v1 controllers /sys/fs/cgroup/unified. Taken
 * only if the process's own cgroup is there, with the file only that controller's
 * directories have: a mount that shows part of the hierarchy (its root not "/")
 * has no such directory, and mountinfo then says where it is. */
static bool mem_at_usual_place(struct found *f)
{
	static const char *const v2_at[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	struct statfs st;
	struct hier *h = f->mem1.own[0] ? &f->mem1 : &f->v2;
	const char *at = NULL;
	if (h == &f->mem1) {
		const char *v1_at = "/sys/fs/cgroup/memory";
		if (sp_os->statfs(v1_at, &st) == 0 && st.f_type == CGROUP_SUPER_MAGIC &&
		    has_file(v1_at, h->own, "memory.limit_in_bytes"))
			at = v1_at;
	} else if (h->own[0]) {
		for (size_t i = 0; !at && i < sizeof v2_at / sizeof *v2_at; i++)
			if (sp_os->statfs(v2_at[i], &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC &&
			    has_file(v2_at[i], h->own, "cgroup.controllers"))
				at = v2_at[i];
	}
	if (!at)
		return false;
	h->version = h == &f->mem1 ? 1 : 2;
	sp_strlcpy(h->mount, at, sizeof h->mount);
	sp_strlcpy(h->root, "/", sizeof h->root);
	return true;
}

int sp_limits_find(struct sp_limit_dirs *d, bool huge, char *scratch, size_t len)
{
	struct found f;
	memset(d, 0, sizeof *d);
	memset(&f, 0, sizeof f);
	int r = each_line("/proc/self/cgroup", scratch, len, cgroup_line, &f);
	if (r < 0)
		return r;
	if (huge || !mem_at_usual_place(&f)) {
		r = each_line("/proc/self/mountinfo", scratch, len, mount_line, &f);
		if (r < 0)
			return r;
	}
	/* (A controller is in one hierarchy at a time: v1's when it is mounted there.) */
	const struct hier *mem = f.mem1.version ? &f.mem1 : &f.v2;
	const struct hier *hug = f.huge1.version ? &f.huge1 : &f.v2;
	d->mem_version = mem->version;
	d->n_mem = levels(mem, mem_limited, d->mem);
	if (huge) {
		d->huge_version = hug->version;
		d->n_huge = levels(hug, huge_limited, d->huge);
	}
	return 0;
}

/* The process's: the memory levels at its start, the hugetlb levels only once asked
 * (a program that maps no hugetlb page never looks: four files a level). */
static struct {
	pthread_once_t mem_once, huge_once;
	bool mem_found;
	struct sp_limit_dirs mem, huge;
	char mem_scratch[4096], huge_scratch[4096];
} dirs = { PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, false };

static void find_mem(void)
{
	dirs.mem_found = sp_limits_find(&dirs.mem, false, dirs.mem_scratch, sizeof dirs.mem_scratch) == 0;
}

/* If the files could be read at the start and not now (the program went into a
 * chroot), a hugetlb limit cannot be ruled out: no room (n_huge -1), rather than a
 * SIGBUS at the first touch of a page over the limit. */
static void find_huge(void)
{
	(void)sp_limit_dirs(); /* (the start's look, if none was made yet) */
	if (sp_limits_find(&dirs.huge, true, dirs.huge_scratch, sizeof dirs.huge_scratch) < 0 &&
	    dirs.mem_found)
		dirs.huge.n_huge = -1;
}

const struct sp_limit_dirs *sp_limit_dirs(void)
{
	pthread_once(&dirs.mem_once, find_mem);
	return &dirs.mem;
}

const struct sp_limit_dirs *sp_limit_dirs_huge(void)
{
	pthread_once(&dirs.huge_once, find_huge);
	return &dirs.huge;
}

void sp_limits_forget(void)
{
	dirs.mem_once = dirs.huge_once = PTHREAD_ONCE_INIT;
	dirs.mem_found = false;
}

/* ---- reading the figures ---- */

struct file_cache {
	const char *inactive, *active;
	uint64_t bytes;
	int seen;
};

static bool stat_line(char *line, void *arg)
{
	struct file_cache *c = arg;
	const char *names[2] = { c->inactive, c->active };
	for (int i = 0; i < 2; i++) {
		size_t n = strlen(names[i]);
		uint64_t v;
		const char *p;
		if (strncmp(line, names[i], n) || line[n] != ' ')
			continue;
		p = line + n + 1;
		if (sp_scan_u64(&p, &v) == 0) {
			c->bytes += v;
			c->seen++;
		}
	}
	return c->seen == 2;
}

void sp_limits_memory(const struct sp_limit_dirs *d, struct sp_limits *out, char *scratch,
		      size_t len)
{
	out->mem_limit = out->mem_room = SP_LIMIT_NONE;
	out->mem_usage = out->mem_file = 0;
	for (int i = 0; i < d->n_mem; i++) {
		char path[SP_LIMIT_PATH + 64];
		uint64_t limit = SP_LIMIT_NONE, high = SP_LIMIT_NONE, usage;
		bool v1 = d->mem_version == 1;
		snprintf(path, sizeof path, "%s/%s", d->mem[i], v1 ? "memory.limit_in_bytes" : "memory.max");
		read_value(path, &limit);
		if (!v1) {
			snprintf(path, sizeof path, "%s/memory.high", d->mem[i]);
			if (read_value(path, &high) && high < limit)
				limit = high;
		}
		snprintf(path, sizeof path, "%s/%s", d->mem[i], v1 ? "memory.usage_in_bytes" : "memory.current");
		if (limit == SP_LIMIT_NONE || !read_value(path, &usage) || usage == SP_LIMIT_NONE)
			continue;
		/* The file cache is the kernel's to reclaim before it runs out: what counts
		 * is the rest (anonymous memory, shmem, the kernel's own). */
		struct file_cache c = { v1 ? "total_inactive_file" : "inactive_file",
					v1 ? "total_active_file" : "active_file", 0, 0 };
		snprintf(path, sizeof path, "%s/memory.stat", d->mem[i]);
		each_line(path, scratch, len, stat_line, &c);
		uint64_t file = c.bytes < usage ? c.bytes : usage;
		uint64_t room = usage - file < limit ? limit - (usage - file) : 0;
		if (room < out->mem_room) {
			out->mem_room = room;
			out->mem_limit = limit;
			out->mem_usage = usage;
			out->mem_file = file;
		}
	}
}

/* One hugetlb counter of a level: hugetlb.<2MB|1GB>.[rsvd.]<what>. */
static bool huge_value(const struct sp_limit_dirs *d, int i, bool giga, bool rsvd, bool limit,
		       uint64_t *out)
{
	char path[SP_LIMIT_PATH + 64];
	const char *what = d->huge_version == 1 ? (limit ? "limit_in_bytes" : "usage_in_bytes")
						: (limit ? "max" : "current");
	snprintf(path, sizeof path, "%s/hugetlb.%s.%s%s", d->huge[i], giga ? "1GB" : "2MB",
		 rsvd ? "rsvd." : "", what);
	return read_value(path, out);
}

uint64_t sp_limits_hugetlb(const struct sp_limit_dirs *d, bool giga, uint64_t *limit_out,
			   uint64_t *usage_out)
{
	uint64_t room = SP_LIMIT_NONE, least_limit = SP_LIMIT_NONE, its_usage = 0;
	if (d->n_huge < 0)
		room = least_limit = 0; /* (not known: sp_limit_dirs_huge) */
	for (int i = 0; i < d->n_huge; i++)
		for (int rsvd = 0; rsvd < 2; rsvd++) {
			uint64_t limit, usage;
			/* (A kernel before 5.7 has no rsvd files.) */
			if (!huge_value(d, i, giga, rsvd, true, &limit) || limit == SP_LIMIT_NONE ||
			    !huge_value(d, i, giga, rsvd, false, &usage))
				continue;
			uint64_t r = usage < limit ? limit - usage : 0;
			if (r < room) {
				room = r;
				least_limit = limit;
				its_usage = usage;
			}
		}
	if (limit_out)
		*limit_out = least_limit;
	if (usage_out)
		*usage_out = its_usage;
	return room;
}

void sp_limits_rlimits(struct sp_limits *out)
{
	struct rlimit r;
	out->as_limit = out->data_limit = SP_LIMIT_NONE;
	if (sp_os->getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
		out->as_limit = r.rlim_cur;
	if (sp_os->getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
		out->data_limit = r.rlim_cur;
}
