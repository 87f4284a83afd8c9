/* machine.c - the machine at once: every process's huge pages read cheaply (status
 * counters, then PAGEMAP_SCAN or smaps_rollup), /proc/meminfo, and every memory
 * cgroup's memory.stat and hugetlb usage. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The end of user space: with 5-level page tables, else 4-level (the kernel refuses a
 * scan past its own, -EFAULT). */
#define USER_END_57 0x00fffffffffff000ull
#define USER_END_48 0x00007ffffffff000ull
static uint64_t user_end = USER_END_57;

const char *sp_scan_name(enum sp_scan s)
{
	switch (s) {
	case SP_SCAN_AUTO: return "auto";
	case SP_SCAN_PAGEMAP: return "pagemap";
	case SP_SCAN_ROLLUP: return "rollup";
	}
	return "?";
}

int sp_open_proc(pid_t pid, const char *what, int flags)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
	int fd = sp_os->open(path, flags, 0);
	if (fd == -ENOENT)
		return -ESRCH;
	if (fd == -EPERM)
		return -EACCES;
	return fd;
}

/* The number after "key" at the start of a line of text (kB lines give kB), or
 * false. */
static bool field(const char *text, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);
	for (const char *l = text; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) == 0) {
			char *end;
			*out = strtoull(l + kl, &end, 10);
			return end > l + kl;
		}
	}
	return false;
}

static uint64_t kb_field(const char *text, const char *key)
{
	uint64_t v = 0;
	return field(text, key, &v) ? v << 10 : 0;
}

/* ---- pids ---- */

struct pid_list {
	pid_t *v;
	size_t n, cap;
	int err;
};

static void one_pid(const char *name, void *arg)
{
	struct pid_list *l = arg;
	if (l->err || !*name || strspn(name, "0123456789") != strlen(name))
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		pid_t *v = realloc(l->v, cap * sizeof *v);
		if (!v) {
			l->err = -ENOMEM;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (pid_t)atoi(name);
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

long sp_pids(pid_t **out)
{
	struct pid_list l = { 0 };
	int r = sp_dir_each("/proc", one_pid, &l);
	if (r < 0 || l.err) {
		free(l.v);
		*out = NULL;
		return r < 0 ? r : l.err;
	}
	qsort(l.v, l.n, sizeof *l.v, pid_cmp);
	*out = l.v;
	return (long)l.n;
}

/* ---- the memory cgroup hierarchy ---- */

struct hierarchy {
	int version;                 /* 0: none */
	char root[SP_PATH_LEN];      /* its mount */
	char hugetlb[SP_PATH_LEN];   /* v1: the hugetlb controller's mount, "" if none */
};

static bool lists_memory(const char *controllers_file)
{
	char buf[512], *save;
	if (sp_read_file(controllers_file, buf, sizeof buf) < 0)
		return false;
	for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (!strcmp(w, "memory"))
			return true;
	return false;
}

static void find_hierarchy(struct hierarchy *h)
{
	char buf[16];
	memset(h, 0, sizeof *h);
	if (lists_memory("/sys/fs/cgroup/cgroup.controllers")) {
		h->version = 2;
		snprintf(h->root, sizeof h->root, "/sys/fs/cgroup");
	} else if (lists_memory("/sys/fs/cgroup/unified/cgroup.controllers")) {
		h->version = 2;
		snprintf(h->root, sizeof h->root, "/sys/fs/cgroup/unified");
	} else if (sp_read_file("/sys/fs/cgroup/memory/memory.use_hierarchy", buf, sizeof buf) >= 0) {
		h->version = 1;
		snprintf(h->root, sizeof h->root, "/sys/fs/cgroup/memory");
		if (sp_read_file("/sys/fs/cgroup/hugetlb/cgroup.procs", buf, sizeof buf) >= 0)
			snprintf(h->hugetlb, sizeof h->hugetlb, "/sys/fs/cgroup/hugetlb");
	}
}

static struct hierarchy memory_hierarchy;
static pthread_once_t hierarchy_once = PTHREAD_ONCE_INIT;

static void find_memory_hierarchy(void)
{
	find_hierarchy(&memory_hierarchy);
}

/* The memory cgroup of pid from /proc/PID/cgroup ("" if none is mounted). */
static void proc_cgroup(pid_t pid, const struct hierarchy *h, char *out, size_t len)
{
	char buf[4096], *save;
	out[0] = 0;
	int fd = sp_open_proc(pid, "cgroup", O_RDONLY);
	if (fd < 0 || h->version == 0) {
		if (fd >= 0)
			sp_os->close(fd);
		return;
	}
	ssize_t n = sp_os->read(fd, buf, sizeof buf - 1);
	sp_os->close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		/* "ID:CONTROLLERS:PATH": v2 is "0::PATH", v1 names memory among its list. */
		char *c = strchr(l, ':'), *p = c ? strchr(c + 1, ':') : NULL;
		if (!p)
			continue;
		*p = 0;
		bool ours = h->version == 2 ? !strcmp(l, "0") && c[1] == 0 : false;
		for (char *w = c + 1; h->version == 1 && w && *w; w = strchr(w, ',') ? strchr(w, ',') + 1 : NULL)
			if (!strncmp(w, "memory", 6) && (w[6] == 0 || w[6] == ','))
				ours = true;
		if (ours) {
			snprintf(out, len, "%s", p + 1);
			return;
		}
	}
}

/* ---- one process ---- */

/* Huge bytes from PAGEMAP_SCAN: every range mapped huge (a PMD, or hugetlb). */
static int huge_by_pagemap(pid_t pid, uint64_t *huge)
{
	struct pr_region vec[256];
	int fd = sp_open_proc(pid, "pagemap", O_RDONLY);
	if (fd < 0)
		return fd;
	uint64_t at = 0, sum = 0;
	int ret = 0;
	while (at < user_end) {
		struct pr_scan_arg a = {
			.size = sizeof a, .start = at, .end = user_end,
			.vec = (uint64_t)(uintptr_t)vec, .vec_len = sizeof vec / sizeof *vec,
			.category_mask = PR_PAGE_IS_HUGE, .return_mask = PR_PAGE_IS_HUGE,
		};
		int n = sp_os->ioctl(fd, PR_PAGEMAP_SCAN, &a);
		if (n == -EFAULT && at == 0 && user_end == USER_END_57) {
			user_end = USER_END_48;
			continue;
		}
		if (n < 0) {
			ret = n == -EINVAL ? -ENOTTY : n;
			break;
		}
		for (int v = 0; v < n; v++)
			sum += vec[v].end - vec[v].start;
		if (a.walk_end <= at || a.walk_end >= user_end)
			break;
		at = a.walk_end;
	}
	sp_os->close(fd);
	*huge = sum;
	return ret;
}

/* THP bytes from smaps_rollup (every page walked). */
static int thp_by_rollup(pid_t pid, uint64_t *thp)
{
	char buf[4096];
	int fd = sp_open_proc(pid, "smaps_rollup", O_RDONLY);
	if (fd < 0)
		return fd;
	ssize_t n = sp_os->read(fd, buf, sizeof buf - 1);
	sp_os->close(fd);
	if (n < 0)
		return n == -EPERM ? -EACCES : (int)n;
	buf[n] = 0;
	*thp = kb_field(buf, "AnonHugePages:") + kb_field(buf, "ShmemPmdMapped:") +
	       kb_field(buf, "FilePmdMapped:");
	return 0;
}

/* Hugetlb bytes by page size, from smaps (KernelPageSize comes before the
 * mapping's Shared_Hugetlb and Private_Hugetlb lines). */
static int hugetlb_sizes(pid_t pid, struct sp_proc *p)
{
	struct sp_lines l;
	const char *line;
	int fd = sp_open_proc(pid, "smaps", O_RDONLY), r;
	if (fd < 0)
		return fd;
	uint64_t page = 0;
	sp_lines_init(&l, fd);
	while ((r = sp_lines_next(&l, &line)) > 0) {
		uint64_t v;
		if (field(line, "KernelPageSize:", &v)) {
			page = v << 10;
		} else if ((field(line, "Shared_Hugetlb:", &v) || field(line, "Private_Hugetlb:", &v)) &&
			   v) {
			int k = 0;
			while (k < SP_PROC_HUGETLB_SIZES && p->hugetlb[k].page_size &&
			       p->hugetlb[k].page_size != page)
				k++;
			if (k == SP_PROC_HUGETLB_SIZES)
				continue;
			p->hugetlb[k].page_size = page;
			p->hugetlb[k].bytes += v << 10;
		}
	}
	sp_os->close(fd);
	return r;
}

static bool pagemap_missing; /* the kernel said no once: not asked again */

int sp_proc_read(pid_t pid, enum sp_scan how, struct sp_proc *out)
{
	char status[4096];
	char path[64];
	memset(out, 0, sizeof *out);
	out->pid = pid;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	ssize_t n = sp_read_file(path, status, sizeof status);
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	uint64_t uid = 0;
	field(status, "Uid:", &uid);
	out->uid = (uid_t)uid;
	if (!strstr(status, "\nVmRSS:"))
		return -ENODATA; /* a kernel thread, or a zombie: nothing mapped */
	out->hugetlb_bytes = kb_field(status, "HugetlbPages:");
	out->rss_bytes = kb_field(status, "VmRSS:") + out->hugetlb_bytes;
	sp_comm_read(pid, out->comm, sizeof out->comm);

	int r = -ENOTTY;
	if (how != SP_SCAN_ROLLUP && !(how == SP_SCAN_AUTO && pagemap_missing)) {
		r = huge_by_pagemap(pid, &out->huge_bytes);
		if (r == -ENOTTY && how == SP_SCAN_AUTO)
			pagemap_missing = true;
		else if (r == 0)
			out->thp_bytes = out->huge_bytes > out->hugetlb_bytes
						 ? out->huge_bytes - out->hugetlb_bytes : 0;
		out->scan = SP_SCAN_PAGEMAP;
	}
	if (r == -ENOTTY && how != SP_SCAN_PAGEMAP) {
		r = thp_by_rollup(pid, &out->thp_bytes);
		out->huge_bytes = out->thp_bytes + out->hugetlb_bytes;
		out->scan = SP_SCAN_ROLLUP;
	}
	if (r < 0)
		return r;
	if (out->hugetlb_bytes && (r = hugetlb_sizes(pid, out)) < 0)
		return r;

	pthread_once(&hierarchy_once, find_memory_hierarchy);
	proc_cgroup(pid, &memory_hierarchy, out->cgroup, sizeof out->cgroup);
	out->account_rc = sp_account_read(pid, &out->account);
	return 0;
}

/* ---- the machine ---- */

int sp_meminfo_read(struct sp_meminfo *out)
{
	char buf[8192];
	memset(out, 0, sizeof *out);
	ssize_t n = sp_read_file("/proc/meminfo", buf, sizeof buf);
	if (n < 0)
		return (int)n;
	if (!field(buf, "MemTotal:", &out->total))
		return -EPROTO;
	out->total <<= 10;
	out->available = kb_field(buf, "MemAvailable:");
	out->anon_thp = kb_field(buf, "AnonHugePages:");
	out->shmem_thp = kb_field(buf, "ShmemPmdMapped:");
	out->file_thp = kb_field(buf, "FilePmdMapped:");
	out->hugetlb = kb_field(buf, "Hugetlb:");
	struct sp_system sys;
	sp_probe_pools(&sys);
	for (int i = 0; i < sys.n_sizes; i++)
		if (sys.pools[i].free >= 0 && sys.pools[i].free <= sys.pools[i].total)
			out->hugetlb_used +=
				(uint64_t)(sys.pools[i].total - sys.pools[i].free) * sys.page_sizes[i];
	return 0;
}

/* ---- cgroups ---- */

struct cg_walk {
	const struct hierarchy *h;
	struct sp_cgroup *v;
	size_t n, cap;
	int err;
	char rel[SP_PATH_LEN]; /* the directory being read, from the root */
	int depth;
};

/* "2MB", "1GB", "64KB" as bytes; 0 if not such a size. */
static uint64_t hugetlb_size(const char *s, size_t len)
{
	char *end;
	uint64_t v = strtoull(s, &end, 10);
	size_t rest = len - (size_t)(end - s);
	if (end == s || rest != 2 || end[1] != 'B')
		return 0;
	switch (end[0]) {
	case 'K': return v << 10;
	case 'M': return v << 20;
	case 'G': return v << 30;
	default: return 0;
	}
}

struct cg_hugetlb {
	struct sp_cgroup *c;
	const char *dir;
	const char *suffix; /* "current" (v2) or "usage_in_bytes" (v1) */
};

static void one_hugetlb_file(const char *name, void *arg)
{
	struct cg_hugetlb *w = arg;
	size_t sl = strlen(w->suffix), nl = strlen(name);
	/* hugetlb.SIZE.SUFFIX */
	if (strncmp(name, "hugetlb.", 8) || nl <= 9 + sl || strcmp(name + nl - sl, w->suffix) ||
	    name[nl - sl - 1] != '.')
		return;
	uint64_t page = hugetlb_size(name + 8, nl - sl - 1 - 8);
	char path[2 * SP_PATH_LEN], buf[32];
	snprintf(path, sizeof path, "%s/%s", w->dir, name);
	if (!page || sp_read_file(path, buf, sizeof buf) < 0)
		return;
	struct sp_cgroup *c = w->c;
	c->hugetlb_known = true;
	for (int k = 0; k < SP_PROC_HUGETLB_SIZES; k++) {
		if (c->hugetlb[k].page_size == 0 || c->hugetlb[k].page_size == page) {
			c->hugetlb[k].page_size = page;
			c->hugetlb[k].bytes = strtoull(buf, NULL, 10);
			c->hugetlb_bytes += c->hugetlb[k].bytes;
			return;
		}
	}
}

static int read_cgroup(const struct hierarchy *h, const char *rel, int depth, struct sp_cgroup *c)
{
	char path[2 * SP_PATH_LEN], buf[8192];
	memset(c, 0, sizeof *c);
	snprintf(c->path, sizeof c->path, "%s", *rel ? rel : "/");
	c->version = h->version;
	c->depth = depth;
	snprintf(path, sizeof path, "%s%s/memory.stat", h->root, rel);
	if (sp_read_file(path, buf, sizeof buf) < 0)
		return -ENOENT;
	if (h->version == 2) {
		field(buf, "anon ", &c->anon);
		field(buf, "anon_thp ", &c->anon_thp);
		field(buf, "file ", &c->file);
		field(buf, "file_thp ", &c->file_thp);
		field(buf, "shmem ", &c->shmem);
		field(buf, "shmem_thp ", &c->shmem_thp);
	} else {
		field(buf, "total_rss ", &c->anon);
		field(buf, "total_rss_huge ", &c->anon_thp);
		field(buf, "total_cache ", &c->file);
		field(buf, "total_shmem ", &c->shmem);
	}
	struct cg_hugetlb w = { c, NULL, h->version == 2 ? "current" : "usage_in_bytes" };
	char dir[2 * SP_PATH_LEN];
	if (h->version == 2)
		snprintf(dir, sizeof dir, "%s%s", h->root, rel);
	else if (h->hugetlb[0])
		snprintf(dir, sizeof dir, "%s%s", h->hugetlb, rel);
	else
		return 0;
	w.dir = dir;
	sp_dir_each(dir, one_hugetlb_file, &w);
	return 0;
}

static void walk_cgroup(struct cg_walk *w);

static void one_child(const char *name, void *arg)
{
	struct cg_walk *w = arg;
	char path[2 * SP_PATH_LEN + 32];
	char probe[8];
	if (w->err)
		return;
	snprintf(path, sizeof path, "%s%s/%s/cgroup.procs", w->h->root, w->rel, name);
	if (sp_read_file(path, probe, sizeof probe) < 0)
		return; /* a file, not a cgroup */
	size_t at = strlen(w->rel);
	if (at + 1 + strlen(name) >= sizeof w->rel)
		return;
	snprintf(w->rel + at, sizeof w->rel - at, "/%s", name);
	w->depth++;
	walk_cgroup(w);
	w->depth--;
	w->rel[at] = 0;
}

/* The cgroup at w->rel, then its children. */
static void walk_cgroup(struct cg_walk *w)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		struct sp_cgroup *v = realloc(w->v, cap * sizeof *v);
		if (!v) {
			w->err = -ENOMEM;
			return;
		}
		w->v = v;
		w->cap = cap;
	}
	if (read_cgroup(w->h, w->rel, w->depth, &w->v[w->n]) == 0)
		w->n++;
	char dir[2 * SP_PATH_LEN];
	snprintf(dir, sizeof dir, "%s%s", w->h->root, w->rel);
	sp_dir_each(dir, one_child, w);
}

long sp_cgroups_read(struct sp_cgroup **out)
{
	struct hierarchy h;
	find_hierarchy(&h);
	*out = NULL;
	if (h.version == 0)
		return -ENOENT;
	struct cg_walk w = { .h = &h };
	walk_cgroup(&w);
	if (w.err) {
		free(w.v);
		return w.err;
	}
	*out = w.v;
	return (long)w.n;
}

uint64_t sp_cgroup_huge(const struct sp_cgroup *c)
{
	return c->anon_thp + c->file_thp + c->shmem_thp + c->hugetlb_bytes;
}

uint64_t sp_cgroup_bytes(const struct sp_cgroup *c)
{
	return c->anon + c->file + c->hugetlb_bytes;
}
