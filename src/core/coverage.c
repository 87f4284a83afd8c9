/* coverage.c - how much of a process sits on huge pages, read from /proc/PID/smaps. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define mapping sp_smaps_map

enum sp_region sp_region_classify(const char *perms, const char *path)
{
	if (strcmp(path, "[heap]") == 0)
		return SP_REGION_HEAP;
	if (strcmp(path, "[stack]") == 0 || strncmp(path, "[stack:", 7) == 0)
		return SP_REGION_STACK;
	if (strlen(perms) >= 4 && perms[3] == 's')
		return SP_REGION_SHM;
	/* Executable anonymous memory that cannot be written is text: what superpage run
	 * --text moved there, code a JIT wrote and sealed. Writable and executable, it is
	 * a heap like the others (a Lisp's image, a JIT's code cache). */
	if (!*path || strncmp(path, "[anon:", 6) == 0 || strncmp(path, "/anon_hugepage", 14) == 0 ||
	    strncmp(path, "/dev/zero", 9) == 0)
		return strlen(perms) >= 3 && perms[2] == 'x' && perms[1] != 'w' ? SP_REGION_TEXT
									  : SP_REGION_ANON;
	if (path[0] == '[')
		return SP_REGION_OTHER;
	if (strlen(perms) >= 3 && perms[2] == 'x')
		return SP_REGION_TEXT;
	return SP_REGION_DATA;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool scan_hex(const char **s, uintptr_t *out)
{
	const char *p = *s;
	uintptr_t v = 0;
	int d, n = 0;
	while ((d = hexval(*p)) >= 0) {
		if (n++ >= 16)
			return false;
		v = v << 4 | (uintptr_t)d;
		p++;
	}
	*s = p;
	*out = v;
	return n > 0;
}

/* "start-end perms offset dev inode [path]": true if line is such a header. */
static bool parse_header(const char *line, struct mapping *m)
{
	const char *s = line;
	if (!scan_hex(&s, &m->start) || *s++ != '-' || !scan_hex(&s, &m->end) || *s++ != ' ')
		return false;
	if (m->end < m->start)
		return false;
	size_t pl = strcspn(s, " \t");
	if (pl != 4)
		return false;
	memcpy(m->perms, s, 4);
	m->perms[4] = 0;
	s += 4;
	/* Skip offset, dev and inode; what is left after the spaces is the path. */
	m->file = false;
	for (int field = 0; field < 3; field++) {
		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			return false;
		size_t n = strcspn(s, " \t");
		if (field == 2)
			m->file = strspn(s, "0") != n;
		s += n;
	}
	m->hg = m->nh = false;
	while (*s == ' ' || *s == '\t')
		s++;
	m->region = sp_region_classify(m->perms, s);
	m->rss = m->anon_huge = m->shmem_pmd = m->file_pmd = 0;
	m->priv_hugetlb = m->shared_hugetlb = m->kernel_page = m->referenced = 0;
	return true;
}

/* "Name:   123 kB". 1 parsed, 0 not a "kB" field (ignored), -EPROTO absurd number. */
static int parse_field(const char *line, char *name, size_t nlen, uint64_t *bytes)
{
	const char *colon = strchr(line, ':');
	if (!colon || (size_t)(colon - line) >= nlen)
		return 0;
	memcpy(name, line, (size_t)(colon - line));
	name[colon - line] = 0;
	const char *s = colon + 1;
	while (*s == ' ' || *s == '\t')
		s++;
	uint64_t kb;
	int r = sp_scan_u64(&s, &kb);
	if (r == -EINVAL)
		return 0;
	while (*s == ' ' || *s == '\t')
		s++;
	if (strncmp(s, "kB", 2) != 0 || (s[2] && s[2] != '\r' && s[2] != ' '))
		return 0;
	if (r == -ERANGE || kb > (UINT64_MAX >> 12))
		return -EPROTO;
	*bytes = kb << 10;
	return 1;
}

static void add_field(struct mapping *m, const char *name, uint64_t bytes)
{
	static const struct { const char *name; size_t off; } fields[] = {
		{ "Rss", offsetof(struct mapping, rss) },
		{ "AnonHugePages", offsetof(struct mapping, anon_huge) },
		{ "ShmemPmdMapped", offsetof(struct mapping, shmem_pmd) },
		{ "FilePmdMapped", offsetof(struct mapping, file_pmd) },
		{ "Private_Hugetlb", offsetof(struct mapping, priv_hugetlb) },
		{ "Shared_Hugetlb", offsetof(struct mapping, shared_hugetlb) },
		{ "KernelPageSize", offsetof(struct mapping, kernel_page) },
		{ "Referenced", offsetof(struct mapping, referenced) },
	};
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		if (strcmp(name, fields[i].name) == 0) {
			*(uint64_t *)(void *)((char *)m + fields[i].off) = bytes;
			return;
		}
	}
}

/* "VmFlags: rd wr mr mw me ac hg": the THP advice of the mapping. */
static bool parse_vmflags(const char *line, struct mapping *m)
{
	if (strncmp(line, "VmFlags:", 8) != 0)
		return false;
	for (const char *s = line + 8; *s;) {
		s += strspn(s, " \t");
		size_t n = strcspn(s, " \t\r\n");
		if (n == 2 && !strncmp(s, "hg", 2))
			m->hg = true;
		else if (n == 2 && !strncmp(s, "nh", 2))
			m->nh = true;
		s += n;
		if (!n)
			break;
	}
	return true;
}

/* Why what of m is resident is not on huge pages: the first reason that holds. */
static enum sp_why why_not_huge(const struct mapping *m, const struct sp_coverage *cov)
{
	uintptr_t first = (m->start + SP_2M_SIZE - 1) & ~(uintptr_t)(SP_2M_SIZE - 1);
	if (m->perms[3] == 's')
		return SP_WHY_SHARED;
	if (m->file)
		return SP_WHY_FILE;
	if (cov->thp_off)
		return SP_WHY_THP_OFF;
	if (m->nh)
		return SP_WHY_NOHUGEPAGE;
	if (first < m->start || first + SP_2M_SIZE > m->end)
		return SP_WHY_SMALL;
	if (!m->hg && !cov->thp_always)
		return SP_WHY_NOT_ADVISED;
	return SP_WHY_PARTIAL;
}

static void commit(const struct mapping *m, struct sp_coverage *cov, uintptr_t lo, uintptr_t hi,
		   struct sp_verify *v)
{
	uint64_t hugetlb = m->priv_hugetlb + m->shared_hugetlb;
	uint64_t thp = m->anon_huge + m->shmem_pmd + m->file_pmd;
	uint64_t bytes = m->rss + hugetlb, huge = thp + hugetlb;
	if (cov) {
		cov->mappings++;
		cov->rss_bytes += bytes;
		cov->huge_bytes += huge;
		cov->hugetlb_bytes += hugetlb;
		cov->thp_bytes += thp;
		cov->region[m->region].bytes += bytes;
		cov->region[m->region].huge_bytes += huge;
		if (bytes > huge)
			cov->region[m->region].not_huge[why_not_huge(m, cov)] += bytes - huge;
	}
	if (v && m->start < hi && m->end > lo) {
		v->rss_bytes += bytes;
		v->huge_bytes += huge;
		if (m->kernel_page > v->page_size)
			v->page_size = m->kernel_page;
	}
}

/* ---------- thread stacks ---------- */

/* Only the main thread's stack is "[stack]" in smaps; every other thread's is an
 * anonymous mapping like any other. What gives one away is its thread's stack
 * pointer, which /proc/PID/task/TID/syscall shows for a thread that is not on a CPU:
 * "NR a1 a2 a3 a4 a5 a6 SP PC" in a system call, "-1 SP PC" out of one, "running"
 * on a CPU (nothing to read). Numbers after NR are hex with 0x. */
static bool syscall_sp(const char *s, uintptr_t *sp)
{
	uintptr_t field[9];
	int n = 0;

	while (*s == ' ')
		s++;
	if (*s == '-')
		s++;
	if (*s < '0' || *s > '9')
		return false; /* "running", or not this file */
	s += strspn(s, "0123456789");
	for (;;) {
		while (*s == ' ')
			s++;
		if (!*s || *s == '\n')
			break;
		if (n == 8 || s[0] != '0' || s[1] != 'x')
			return false;
		s += 2;
		if (!scan_hex(&s, &field[n++]))
			return false;
	}
	if (n != 8 && n != 2)
		return false;
	*sp = field[n - 2];
	return true;
}

struct task_walk {
	const char *dir;
	struct sp_threads *t;
};

/* One thread of the task directory: its stack pointer, if it can be read. A thread
 * that cannot be (ptrace rules: not ours) or has just gone is left out, and its
 * stack stays anon. */
static void one_task(const char *name, void *arg)
{
	struct task_walk *w = arg;
	char path[96], text[256];
	uintptr_t sp;

	if (w->t->n == SP_THREADS_MAX || !name[0] || strspn(name, "0123456789") != strlen(name))
		return;
	snprintf(path, sizeof path, "%s/%.20s/syscall", w->dir, name);
	if (sp_read_file(path, text, sizeof text) > 0 && syscall_sp(text, &sp))
		w->t->sp[w->t->n++] = sp;
}

int sp_threads_read(pid_t pid, struct sp_threads *t)
{
	char dir[48];
	struct task_walk w = { dir, t };
	int r;

	t->n = 0;
	if (pid)
		snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	else
		snprintf(dir, sizeof dir, "/proc/self/task");
	if ((r = sp_dir_each(dir, one_task, &w)) < 0 && t->n == 0)
		return r;
	/* Sorted, for a binary search per mapping: a few hundred at most. */
	for (int i = 1; i < t->n; i++) {
		uintptr_t x = t->sp[i];
		int j = i;

		for (; j > 0 && t->sp[j - 1] > x; j--)
			t->sp[j] = t->sp[j - 1];
		t->sp[j] = x;
	}
	return t->n;
}

static bool holds_sp(const struct sp_threads *t, uintptr_t start, uintptr_t end)
{
	int lo = 0, hi = t->n;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (t->sp[mid] < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->sp[lo] < end;
}

/* A thread's stack: private read-write anonymous memory holding a thread's stack
 * pointer, right above a PROT_NONE mapping (the guard glibc and the runtime put
 * below every stack they make). The guard is what keeps a malloc'ed stack from
 * making the whole heap mapping around it "stack". A stack of the runtime's (--stacks)
 * of more than 2 MiB is two mappings over its guard, for their THP advice differs:
 * the top 2 MiB right above the rest; a stack pointer in either makes both stack.
 * prev_guarded: prev is such memory right above a guard. Returns whether m is. */
static bool classify_stack(struct mapping *m, struct mapping *prev, bool prev_guarded,
			   const struct sp_threads *t)
{
	if (m->region != SP_REGION_ANON || m->perms[0] != 'r' || m->perms[1] != 'w' ||
	    m->perms[3] != 'p')
		return false;
	if (!prev || prev->end != m->start)
		return false;
	if (strcmp(prev->perms, "---p") == 0) {
		if (holds_sp(t, m->start, m->end))
			m->region = SP_REGION_STACK;
		return true;
	}
	if (prev_guarded && m->end - m->start == (2ul << 20) &&
	    (prev->region == SP_REGION_STACK || holds_sp(t, m->start, m->end)))
		m->region = prev->region = SP_REGION_STACK;
	return false;
}

int sp_smaps_parse(int fd, struct sp_coverage *cov, uintptr_t lo, uintptr_t hi,
		   struct sp_verify *v)
{
	return sp_smaps_parse_threads(fd, cov, lo, hi, v, NULL);
}

struct commit_to {
	struct sp_coverage *cov;
	uintptr_t lo, hi;
	struct sp_verify *v;
};

static int commit_one(const struct sp_smaps_map *m, void *arg)
{
	struct commit_to *c = arg;
	commit(m, c->cov, c->lo, c->hi, c->v);
	return 0;
}

int sp_smaps_parse_threads(int fd, struct sp_coverage *cov, uintptr_t lo, uintptr_t hi,
			   struct sp_verify *v, const struct sp_threads *t)
{
	struct commit_to c = { cov, lo, hi, v };
	return sp_smaps_walk(fd, t, commit_one, &c);
}

int sp_smaps_walk(int fd, const struct sp_threads *t,
		  int (*fn)(const struct sp_smaps_map *m, void *arg), void *arg)
{
	struct sp_lines l;
	const char *line;
	struct mapping cur, next;
	bool have = false, guarded = false, next_guarded;
	int garbage = 0, r;
	sp_lines_init(&l, fd);
	while ((r = sp_lines_next(&l, &line)) > 0) {
		if (parse_header(line, &next)) {
			next_guarded = t && t->n &&
				       classify_stack(&next, have ? &cur : NULL, guarded, t);
			if (have && (r = fn(&cur, arg)) != 0)
				return r;
			cur = next;
			guarded = next_guarded;
			have = true;
			continue;
		}
		char name[64];
		uint64_t bytes;
		int f = parse_field(line, name, sizeof name, &bytes);
		if (f < 0)
			return f;
		if (have) {
			if (f > 0)
				add_field(&cur, name, bytes);
			else
				parse_vmflags(line, &cur);
		} else if (line[strspn(line, " \t\r")]) {
			garbage++; /* text before any mapping header: not smaps */
		}
	}
	if (r < 0)
		return r;
	if (have)
		return fn(&cur, arg);
	if (garbage)
		return -EPROTO;
	return 0;
}

static int open_smaps(pid_t pid, int *fd)
{
	char path[64];
	if (pid < 0)
		return -ESRCH;
	if (pid == 0) {
		snprintf(path, sizeof path, "/proc/self/smaps");
	} else {
		int k = sp_os->kill0(pid);
		if (k < 0)
			return k;
		snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
	}
	int r = sp_os->open(path, O_RDONLY, 0);
	if (r == -ENOENT)
		return -ESRCH;
	if (r == -EPERM)
		return -EACCES;
	if (r < 0)
		return r;
	*fd = r;
	return 0;
}

/* The process's THP switch and the machine's THP mode, for why_not_huge. */
static void thp_facts(pid_t pid, struct sp_coverage *out)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, pid ? "/proc/%d/status" : "/proc/self/status", (int)pid);
	if (sp_read_file(path, buf, sizeof buf) > 0) {
		const char *t = strstr(buf, "\nTHP_enabled:");
		out->thp_off = t && strtol(t + 14, NULL, 10) == 0;
	}
	if (sp_read_file("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) > 0)
		out->thp_always = strstr(buf, "[always]") != NULL;
}

int sp_coverage(pid_t pid, struct sp_coverage *out)
{
	int fd;
	memset(out, 0, sizeof *out);
	out->pid = pid;
	int r = open_smaps(pid, &fd);
	if (r < 0)
		return r;
	thp_facts(pid, out);
	/* Read after smaps is open: a process that is gone has been said so already. */
	struct sp_threads t;
	sp_threads_read(pid, &t);
	r = sp_smaps_parse_threads(fd, out, 0, 0, NULL, &t);
	sp_os->close(fd);
	return r;
}

double sp_coverage_ratio(const struct sp_coverage *c)
{
	return c->rss_bytes ? (double)c->huge_bytes / (double)c->rss_bytes : 0.0;
}

int sp_verify_range(const void *p, size_t len, struct sp_verify *out)
{
	int fd;
	memset(out, 0, sizeof *out);
	if (!p || len == 0)
		return -EINVAL;
	int r = open_smaps(0, &fd);
	if (r < 0)
		return r;
	uintptr_t lo = (uintptr_t)p;
	r = sp_smaps_parse(fd, NULL, lo, lo + len, out);
	sp_os->close(fd);
	if (r < 0)
		return r;
	if (out->page_size == SP_1G_SIZE)
		out->backing = SP_BACKING_1G;
	else if (out->page_size == SP_2M_SIZE)
		out->backing = SP_BACKING_2M;
	else if (out->rss_bytes && out->huge_bytes >= out->rss_bytes)
		out->backing = SP_BACKING_THP;
	else
		out->backing = SP_BACKING_4K;
	return 0;
}
