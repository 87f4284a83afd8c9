/* fake_kernel.c - the fake kernel: a file table, hugetlb pools, tracked real mappings, knobs. */
#include "fake_kernel.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "internal.h"

#define FD_BASE 1000
#define MAX_FDS 256
#define MAX_POOLS 4
#define MAX_PIDS 32
#define MAX_FS 8
#define MAX_SHM 32
#define BRK_START ((uintptr_t)0x555500000000ull) /* the fake break: address only */
#define EXT4_MAGIC 0xEF53
#define PAGE 4096ul
#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"

enum { FD_FREE = 0, FD_FILE, FD_DIR, FD_MEMFD, FD_PIDFD };
enum { GEN_NONE = 0, GEN_POOL, GEN_NODE, GEN_SMAPS };

struct file { char *path, *data; size_t len; };
struct fs { char path[128]; long type, bsize; int access_err; };
struct pool { uint64_t size; long total, free, resv, surplus, overcommit, grantable; int fail; };
struct fd { int kind; bool wr; char *path, *data; size_t len, pos; char name[64]; pid_t pid; };
struct shm_seg { key_t key; int id; size_t size; long huge_pages; bool live; };
struct map {
	uintptr_t start, end;
	int prot, flags, advice;
	uint64_t hpage;
	bool populated, resident, huge;
	bool stale; /* from before fk_reset: forgotten, but still real memory */
	char path[96];
};
/* What a generated path stands for. */
struct gen { int kind; struct pool *pool; int field, node; };

static const char *pool_fields[] = { "nr_hugepages", "free_hugepages", "resv_hugepages",
				     "surplus_hugepages", "nr_overcommit_hugepages" };
static const char *node_fields[] = { "nr_hugepages", "free_hugepages", "surplus_hugepages" };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct file *files;
	int n_files;
	struct pool pools[MAX_POOLS];
	int n_pools, n_nodes;
	struct fd fds[MAX_FDS];
	struct map *maps;
	int n_maps;
	int write_err, fail_next_n, fail_next_err;
	int mmap_calls, munmap_calls, noreserve, last_flags, huge_calls[64];
	int madv_err[128], madv_calls[128];
	int mremap_err;
	bool thp_on_fault;
	size_t thp_fault_limit;
	char err_path[256];
	int err_path_err;
	int collapse_err, prctl_thp, memfd_err, memfd_calls;
	pid_t pids[MAX_PIDS];
	int n_pids;
	uint64_t clock;
	struct fs fss[MAX_FS];
	int n_fss, tmpfile_err, tmpfile_calls, unlink_calls, cloexec_cleared;
	unsigned memfd_flags;
	uint64_t rlim[RLIMIT_NLIMITS]; /* soft limits set by fk_rlimit, plus one (0: none) */
	uintptr_t brk_cur, brk_max;     /* the break: from BRK_START up to brk_max */
	int brk_calls;
	struct shm_seg shm[MAX_SHM];
	int shm_next_id, shm_huge_err, shm_huge_calls, truncate_err, truncate_calls;
} fk;

/* ---------- small helpers ---------- */

struct sb { char *p; size_t len, cap; };

static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

static void die(const char *what)
{
	fprintf(stderr, "fake kernel: %s\n", what);
	abort();
}

static struct pool *pool_of(uint64_t size)
{
	for (int i = 0; i < fk.n_pools; i++)
		if (fk.pools[i].size == size)
			return &fk.pools[i];
	return NULL;
}

static struct file *file_of(const char *path)
{
	for (int i = 0; i < fk.n_files; i++)
		if (!strcmp(fk.files[i].path, path))
			return &fk.files[i];
	return NULL;
}

static void file_set(const char *path, const char *data, size_t len)
{
	struct file *f = file_of(path);
	if (!f) {
		fk.files = realloc(fk.files, (fk.n_files + 1) * sizeof *fk.files);
		f = &fk.files[fk.n_files++];
		f->path = strdup(path);
	} else {
		free(f->data);
	}
	f->data = malloc(len + 1);
	memcpy(f->data, data, len);
	f->data[len] = 0;
	f->len = len;
}

/* Every generated path, in a fixed order; fn returns true to stop. */
static bool gen_each(bool (*fn)(const char *path, const struct gen *g, void *arg), void *arg)
{
	char path[256];
	for (int i = 0; i < fk.n_pools; i++) {
		struct pool *p = &fk.pools[i];
		for (int f = 0; f < 5; f++) {
			snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%llukB/%s",
				 (unsigned long long)(p->size >> 10), pool_fields[f]);
			struct gen g = { GEN_POOL, p, f, -1 };
			if (fn(path, &g, arg))
				return true;
		}
		for (int n = 0; n < fk.n_nodes; n++)
			for (int f = 0; f < 3; f++) {
				snprintf(path, sizeof path,
					 "/sys/devices/system/node/node%d/hugepages/hugepages-%llukB/%s",
					 n, (unsigned long long)(p->size >> 10), node_fields[f]);
				struct gen g = { GEN_NODE, p, f, n };
				if (fn(path, &g, arg))
					return true;
			}
	}
	struct gen g = { GEN_SMAPS, NULL, 0, -1 };
	return fn("/proc/self/smaps", &g, arg);
}

struct gen_find { const char *path; struct gen *out; };
static bool gen_match(const char *path, const struct gen *g, void *arg)
{
	struct gen_find *f = arg;
	if (strcmp(path, f->path))
		return false;
	*f->out = *g;
	return true;
}
static bool gen_lookup(const char *path, struct gen *out)
{
	struct gen_find f = { path, out };
	out->kind = GEN_NONE;
	return gen_each(gen_match, &f);
}

/* PMD-sized THP is off: the 2 MiB mTHP mode says so, or inherits "never". */
static bool thp_never(void)
{
	struct file *f = file_of("/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled");
	if (!f || strstr(f->data, "[inherit]"))
		f = file_of(THP_ENABLED);
	return f && strstr(f->data, "[never]");
}

static int map_cmp(const void *a, const void *b)
{
	const struct map *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void map_add(const struct map *m)
{
	fk.maps = realloc(fk.maps, (fk.n_maps + 1) * sizeof *fk.maps);
	fk.maps[fk.n_maps++] = *m;
	qsort(fk.maps, fk.n_maps, sizeof *fk.maps, map_cmp);
}

/* Splits the mapping strictly containing x in two at x (hugetlb only at its page size). */
static void map_split(uintptr_t x)
{
	for (int i = 0; i < fk.n_maps; i++) {
		struct map *m = &fk.maps[i];
		if (m->start < x && x < m->end && !(m->hpage && x % m->hpage)) {
			struct map right = *m;
			m->end = x;
			right.start = x;
			map_add(&right);
			return;
		}
	}
}

/* Forgets [lo, hi): gives hugetlb pages back, unmaps the real memory if asked. */
static void map_untrack(uintptr_t lo, uintptr_t hi, bool real)
{
	map_split(lo);
	map_split(hi);
	for (int i = 0; i < fk.n_maps;) {
		struct map *m = &fk.maps[i];
		if (m->start >= lo && m->end <= hi) {
			struct pool *p = m->hpage && !(m->flags & MAP_NORESERVE) && !m->stale
						 ? pool_of(m->hpage) : NULL;
			if (p)
				p->free += (m->end - m->start) / m->hpage;
			if (real && munmap((void *)m->start, m->end - m->start))
				die("real munmap failed");
			memmove(m, m + 1, (fk.n_maps - i - 1) * sizeof *m);
			fk.n_maps--;
		} else {
			i++;
		}
	}
}

/* ---------- generated contents ---------- */

static void smaps_field(struct sb *b, const char *name, uint64_t bytes)
{
	char label[32];
	snprintf(label, sizeof label, "%s:", name);
	sb_printf(b, "%-16s%8llu kB\n", label, (unsigned long long)(bytes >> 10));
}

static void gen_smaps(struct sb *b)
{
	for (int i = 0; i < fk.n_maps; i++) {
		const struct map *m = &fk.maps[i];
		if (m->stale)
			continue;
		uint64_t size = m->end - m->start, kps = m->hpage ? m->hpage : PAGE;
		bool shared = m->flags & MAP_SHARED;
		uint64_t rss = !m->hpage && m->resident ? size : 0;
		uint64_t tlb = m->hpage && m->populated ? size : 0;
		char head[160];
		int n = snprintf(head, sizeof head, "%lx-%lx %c%c%c%c %08x %s %lu", m->start, m->end,
				 m->prot & PROT_READ ? 'r' : '-', m->prot & PROT_WRITE ? 'w' : '-',
				 m->prot & PROT_EXEC ? 'x' : '-', shared ? 's' : 'p', 0,
				 m->path[0] ? "00:11" : "00:00", m->path[0] ? 4909ul + i : 0ul);
		if (m->path[0])
			sb_printf(b, "%s%*s%s\n", head, n < 73 ? 73 - n : 1, "", m->path);
		else
			sb_printf(b, "%s \n", head);
		smaps_field(b, "Size", size);
		smaps_field(b, "KernelPageSize", kps);
		smaps_field(b, "MMUPageSize", kps);
		smaps_field(b, "Rss", rss);
		smaps_field(b, "Pss", rss);
		smaps_field(b, "Pss_Dirty", rss);
		smaps_field(b, "Shared_Clean", 0);
		smaps_field(b, "Shared_Dirty", shared ? rss : 0);
		smaps_field(b, "Private_Clean", 0);
		smaps_field(b, "Private_Dirty", shared ? 0 : rss);
		smaps_field(b, "Referenced", rss);
		smaps_field(b, "Anonymous", shared ? 0 : rss);
		smaps_field(b, "KSM", 0);
		smaps_field(b, "LazyFree", 0);
		smaps_field(b, "AnonHugePages", rss && m->huge ? size : 0);
		smaps_field(b, "ShmemPmdMapped", 0);
		smaps_field(b, "FilePmdMapped", 0);
		smaps_field(b, "Shared_Hugetlb", shared ? tlb : 0);
		smaps_field(b, "Private_Hugetlb", shared ? 0 : tlb);
		smaps_field(b, "Swap", 0);
		smaps_field(b, "SwapPss", 0);
		smaps_field(b, "Locked", 0);
		sb_printf(b, "%-16s%8d\n", "THPeligible:", !m->hpage && m->advice > 0);
		sb_printf(b, "%-16s%8d\n", "ProtectionKey:", 0);
		sb_printf(b, "VmFlags: %s%s%s%s%s%s\n", m->prot & PROT_READ ? "rd " : "",
			  m->prot & PROT_WRITE ? "wr " : "", shared ? "sh mr mw me ms " : "mr mw me ",
			  m->hpage ? "de ht " : shared ? "" : "ac ",
			  m->advice > 0 ? "hg " : "", m->advice < 0 ? "nh " : "");
	}
}

static void gen_content(const struct gen *g, struct sb *b)
{
	long v = 0;
	if (g->kind == GEN_SMAPS) {
		gen_smaps(b);
		return;
	}
	if (g->kind == GEN_POOL) {
		long vals[5] = { g->pool->total, g->pool->free, g->pool->resv, g->pool->surplus,
				 g->pool->overcommit };
		v = vals[g->field];
	} else if (g->node == 0) { /* the pools live on node 0 */
		long vals[3] = { g->pool->total, g->pool->free, g->pool->surplus };
		v = vals[g->field];
	}
	sb_printf(b, "%ld\n", v);
}

/* ---------- directories ---------- */

struct dir_walk { const char *prefix; size_t plen; struct sb names; bool found; };

/* names holds "\nDname\nRname\n...": D for a directory, R for a file. */
static void dir_visit(struct dir_walk *w, const char *path)
{
	if (strncmp(path, w->prefix, w->plen) || !path[w->plen])
		return;
	w->found = true;
	const char *rest = path + w->plen, *slash = strchr(rest, '/');
	int n = slash ? (int)(slash - rest) : (int)strlen(rest);
	char as_dir[300], as_file[300];
	snprintf(as_dir, sizeof as_dir, "\nD%.*s\n", n, rest);
	snprintf(as_file, sizeof as_file, "\nR%.*s\n", n, rest);
	if (!strstr(w->names.p, as_dir) && !strstr(w->names.p, as_file))
		sb_printf(&w->names, "%s", (slash ? as_dir : as_file) + 1);
}

static bool dir_visit_gen(const char *path, const struct gen *g, void *arg)
{
	(void)g;
	dir_visit(arg, path);
	return false;
}

/* Lists a directory's children as linux_dirent64 records; false if it is not one. */
static bool dir_list(const char *path, struct sb *out)
{
	char prefix[512];
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	snprintf(prefix, sizeof prefix, "%.*s/", (int)len, path);
	if (len == 1 && path[0] == '/')
		snprintf(prefix, sizeof prefix, "/");
	struct dir_walk w = { prefix, strlen(prefix), { 0 }, false };
	sb_printf(&w.names, "\n");
	for (int i = 0; i < fk.n_files; i++)
		dir_visit(&w, fk.files[i].path);
	gen_each(dir_visit_gen, &w);
	if (!w.found) {
		free(w.names.p);
		return false;
	}
	/* ".", "..", then the children last-seen first: like the kernel, in no sorted
	 * order, so that code which needs an order has to sort. */
	const char *lines[1024] = { "D.", "D.." }; /* each name ends at a newline */
	int n_lines = 2;
	for (const char *l = w.names.p + 1; *l && n_lines < 1024; l = strchr(l, '\n') + 1)
		lines[n_lines++] = l;
	for (int i = 2, j = n_lines - 1; i < j; i++, j--) {
		const char *t = lines[i];
		lines[i] = lines[j];
		lines[j] = t;
	}
	for (int i = 0; i < n_lines; i++) {
		const char *line = lines[i];
		size_t n = strcspn(line + 1, "\n");
		unsigned short reclen = (19 + n + 1 + 7) & ~7u;
		char rec[320] = { 0 };
		uint64_t ino = 1000 + i * 7 + n;
		int64_t next = i + 1;
		memcpy(rec, &ino, 8);
		memcpy(rec + 8, &next, 8);
		memcpy(rec + 16, &reclen, 2);
		rec[18] = line[0] == 'D' ? DT_DIR : DT_REG;
		memcpy(rec + 19, line + 1, n);
		if (out->len + reclen + 1 > out->cap) {
			out->cap = (out->len + reclen + 1) * 2;
			out->p = realloc(out->p, out->cap);
		}
		memcpy(out->p + out->len, rec, reclen);
		out->len += reclen;
	}
	free(w.names.p);
	return true;
}

/* ---------- the sp_os members ---------- */

/* Like the real table, every member leaves errno as it found it. */
#define LOCK()                      \
	int errno_saved_ = errno;   \
	pthread_mutex_lock(&lock)
#define UNLOCK()                        \
	do {                            \
		pthread_mutex_unlock(&lock); \
		errno = errno_saved_;   \
	} while (0)

static struct fd *fd_of(int fd)
{
	if (fd < FD_BASE || fd >= FD_BASE + MAX_FDS || fk.fds[fd - FD_BASE].kind == FD_FREE)
		return NULL;
	return &fk.fds[fd - FD_BASE];
}

static int fd_new(int kind)
{
	for (int i = 0; i < MAX_FDS; i++)
		if (fk.fds[i].kind == FD_FREE) {
			memset(&fk.fds[i], 0, sizeof fk.fds[i]);
			fk.fds[i].kind = kind;
			return FD_BASE + i;
		}
	return -EMFILE;
}

/* The filesystem registered by fk_fs that holds path (the longest match), NULL if none. */
static struct fs *fs_of(const char *path)
{
	struct fs *best = NULL;
	for (int i = 0; i < fk.n_fss; i++) {
		size_t n = strlen(fk.fss[i].path);
		if (!strncmp(path, fk.fss[i].path, n) && (path[n] == 0 || path[n] == '/') &&
		    (!best || n > strlen(best->path)))
			best = &fk.fss[i];
	}
	return best;
}

/* An unnamed file in directory path (O_TMPFILE): an fd like a memfd's. */
static int tmpfile_open(const char *path)
{
	struct sb list = { 0 };
	struct fs *f = fs_of(path);
	bool is_dir = f || dir_list(path, &list);
	free(list.p);
	fk.tmpfile_calls++;
	if (fk.tmpfile_err)
		return -fk.tmpfile_err;
	if (!is_dir)
		return -ENOENT;
	if (f && f->access_err)
		return -f->access_err;
	int fd = fd_new(FD_MEMFD);
	if (fd >= 0)
		snprintf(fd_of(fd)->name, sizeof fd_of(fd)->name, "tmpfile:%s", path);
	return fd;
}

static int fk_open(const char *path, int flags, int mode)
{
	(void)mode;
	bool wr = (flags & O_ACCMODE) != O_RDONLY;
	struct gen g;
	struct sb data = { 0 };
	int kind = FD_FILE, ret;
	LOCK();
	if ((flags & O_TMPFILE) == O_TMPFILE) {
		ret = tmpfile_open(path);
		goto out;
	}
	struct file *f = file_of(path);
	if (fk.err_path_err && !strcmp(path, fk.err_path)) {
		ret = -fk.err_path_err;
		goto out;
	}
	char *pdata;
	size_t plen;
	int pr = f ? 0 : fkp_open(path, &pdata, &plen);
	if (pr < 0) {
		ret = pr;
		goto out;
	}
	if (pr > 0) {
		data.p = pdata;
		data.len = plen;
	} else if (f) {
		data.p = malloc(f->len + 1);
		memcpy(data.p, f->data, f->len + 1);
		data.len = f->len;
	} else if (gen_lookup(path, &g)) {
		if (wr && !((g.kind == GEN_POOL && (g.field == 0 || g.field == 4)) ||
			    (g.kind == GEN_NODE && g.field == 0))) {
			ret = -EACCES;
			goto out;
		}
		gen_content(&g, &data);
	} else if (dir_list(path, &data)) {
		kind = FD_DIR;
	} else if (flags & O_CREAT) {
		file_set(path, "", 0);
	} else {
		ret = -ENOENT;
		goto out;
	}
	if (kind == FD_DIR && wr) {
		ret = -EISDIR;
		goto out;
	}
	if (kind == FD_FILE && (flags & O_DIRECTORY)) {
		ret = -ENOTDIR;
		goto out;
	}
	if (wr && fk.write_err) {
		ret = -fk.write_err;
		goto out;
	}
	ret = fd_new(kind);
	if (ret >= 0) {
		struct fd *d = fd_of(ret);
		d->wr = wr;
		d->path = strdup(path);
		d->data = data.p;
		d->len = data.len;
		data.p = NULL;
	}
out:
	free(data.p);
	UNLOCK();
	return ret;
}

static ssize_t fk_read(int fd, void *buf, size_t len)
{
	ssize_t ret;
	LOCK();
	struct fd *d = fd_of(fd);
	if (!d || d->kind == FD_MEMFD) {
		ret = d ? 0 : -EBADF;
	} else if (d->kind == FD_DIR) {
		ret = -EISDIR;
	} else {
		size_t n = d->len - d->pos < len ? d->len - d->pos : len;
		if (n)
			memcpy(buf, d->data + d->pos, n);
		d->pos += n;
		ret = n;
	}
	UNLOCK();
	return ret;
}

static ssize_t fk_pread(int fd, void *buf, size_t len, off_t off)
{
	ssize_t ret;
	LOCK();
	struct fd *d = fd_of(fd);
	if (!d || d->kind != FD_FILE) {
		ret = d ? -EISDIR : -EBADF;
	} else if (off < 0) {
		ret = -EINVAL;
	} else {
		size_t at = (size_t)off < d->len ? (size_t)off : d->len;
		size_t n = d->len - at < len ? d->len - at : len;
		if (n)
			memcpy(buf, d->data + at, n);
		ret = (ssize_t)n;
	}
	UNLOCK();
	return ret;
}

static int parse_long(const char *buf, size_t len, long *out)
{
	char tmp[32], *end;
	if (len == 0 || len >= sizeof tmp)
		return -EINVAL;
	memcpy(tmp, buf, len);
	tmp[len] = 0;
	errno = 0;
	*out = strtol(tmp, &end, 10);
	while (*end == '\n' || *end == ' ')
		end++;
	return end == tmp || *end || errno || *out < 0 ? -EINVAL : 0;
}

/* A write to "a [b] c" style file selects one of its words, like sysfs. */
static int write_mode(struct file *f, const char *buf, size_t len)
{
	char word[64], out[512] = "";
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len == 0 || len >= sizeof word)
		return -EINVAL;
	memcpy(word, buf, len);
	word[len] = 0;
	bool found = false;
	char copy[512];
	snprintf(copy, sizeof copy, "%s", f->data);
	for (char *save, *t = strtok_r(copy, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
		if (*t == '[')
			t++;
		t[strcspn(t, "]")] = 0;
		bool sel = !strcmp(t, word);
		found |= sel;
		snprintf(out + strlen(out), sizeof out - strlen(out), "%s%s%s%s", out[0] ? " " : "",
			 sel ? "[" : "", t, sel ? "]" : "");
	}
	if (!found)
		return -EINVAL;
	strcat(out, "\n");
	file_set(f->path, out, strlen(out));
	return 0;
}

static ssize_t fk_write(int fd, const void *buf, size_t len)
{
	ssize_t ret = len;
	struct gen g;
	long v;
	LOCK();
	struct fd *d = fd_of(fd);
	struct file *f = d ? file_of(d->path) : NULL;
	int pw;
	if (!d || d->kind != FD_FILE || !d->wr) {
		ret = -EBADF;
	} else if ((pw = fkp_write(d->path, buf, len)) != 0) {
		ret = pw < 0 ? pw : (ssize_t)len;
	} else if (fk.write_err) {
		ret = -fk.write_err;
	} else if (f) {
		if (strchr(f->data, '[')) {
			int err = write_mode(f, buf, len);
			ret = err ? err : (ssize_t)len;
		} else {
			file_set(d->path, buf, len);
		}
	} else if (gen_lookup(d->path, &g) && g.kind != GEN_SMAPS) {
		struct pool *p = g.pool;
		if (parse_long(buf, len, &v)) {
			ret = -EINVAL;
		} else if (g.kind == GEN_POOL && g.field == 4) {
			p->overcommit = v;
		} else if (g.node <= 0) { /* nodes other than 0 have no memory to give */
			long in_use = p->total - p->free;
			if (p->grantable >= 0 && v > p->total && v > p->grantable) /* a shortfall */
				v = p->total > p->grantable ? p->total : p->grantable;
			if (v < in_use)
				v = in_use;
			p->total = v;
			p->free = v - in_use;
		}
	} else {
		ret = -ENOENT;
	}
	UNLOCK();
	return ret;
}

static int fk_close(int fd)
{
	int ret = 0;
	LOCK();
	struct fd *d = fd_of(fd);
	if (d) {
		free(d->path);
		free(d->data);
		memset(d, 0, sizeof *d);
	} else {
		ret = -EBADF;
	}
	UNLOCK();
	return ret;
}

static ssize_t fk_getdents(int fd, void *buf, size_t len)
{
	ssize_t ret = 0;
	LOCK();
	struct fd *d = fd_of(fd);
	if (!d || d->kind != FD_DIR) {
		ret = d ? -ENOTDIR : -EBADF;
	} else {
		while (d->pos < d->len) {
			unsigned short reclen;
			memcpy(&reclen, d->data + d->pos + 16, 2);
			if ((size_t)ret + reclen > len)
				break;
			memcpy((char *)buf + ret, d->data + d->pos, reclen);
			ret += reclen;
			d->pos += reclen;
		}
		if (ret == 0 && d->pos < d->len)
			ret = -EINVAL; /* the buffer cannot hold one record */
	}
	UNLOCK();
	return ret;
}

static int fk_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	struct map m = { 0 };
	struct pool *p = NULL;
	int ret = 0;
	(void)off;
	LOCK();
	fk.mmap_calls++;
	fk.last_flags = flags;
	if (flags & MAP_HUGETLB) {
		int shift = (flags >> MAP_HUGE_SHIFT) & 0x3f;
		m.hpage = shift ? 1ull << shift : SP_2M_SIZE;
		fk.huge_calls[shift ? shift : 21]++;
		if (flags & MAP_NORESERVE)
			fk.noreserve++;
		p = pool_of(m.hpage);
	}
	if (fk.fail_next_n > 0) {
		fk.fail_next_n--;
		ret = -fk.fail_next_err;
		goto out;
	}
	uint64_t unit = m.hpage ? m.hpage : PAGE;
	if (len == 0 || (m.hpage && !p) || ((flags & MAP_FIXED) && (uintptr_t)addr % unit)) {
		ret = -EINVAL;
		goto out;
	}
	if (p && p->fail) {
		ret = -p->fail;
		goto out;
	}
	len = (len + unit - 1) / unit * unit;
	if (!(flags & MAP_ANONYMOUS)) {
		struct fd *d = fd_of(fd);
		if (!d || d->kind != FD_MEMFD) {
			ret = -EBADF;
			goto out;
		}
		snprintf(m.path, sizeof m.path, "/memfd:%s (deleted)", d->name);
	} else if (m.hpage) {
		snprintf(m.path, sizeof m.path, "/anon_hugepage (deleted)");
	}
	if (flags & MAP_NORESERVE)
		p = NULL; /* no reservation: the pool is not asked (a touch could SIGBUS) */
	if (p && (uint64_t)p->free < len / m.hpage) {
		ret = -ENOMEM;
		goto out;
	}
	int real = (flags & (MAP_SHARED | MAP_PRIVATE | MAP_FIXED | MAP_FIXED_NOREPLACE)) |
		   MAP_ANONYMOUS | MAP_NORESERVE;
	/* Aligned by over-mapping, unless the place is given (MAP_FIXED_NOREPLACE too). */
	size_t extra = m.hpage && !(flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) ? m.hpage : 0;
	if (flags & MAP_FIXED)
		map_untrack((uintptr_t)addr, (uintptr_t)addr + len, false);
	char *r = mmap(addr, len + extra, prot, real, -1, 0);
	if (r == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	if (extra) { /* over-mapped: trim to the huge page alignment */
		char *a = (char *)(((uintptr_t)r + extra - 1) & ~(uintptr_t)(extra - 1));
		if (a > r)
			munmap(r, a - r);
		if (r + len + extra > a + len)
			munmap(a + len, r + len + extra - (a + len));
		r = a;
	}
	if (p)
		p->free -= len / m.hpage;
	m.start = (uintptr_t)r;
	m.end = m.start + len;
	m.prot = prot;
	m.flags = flags;
	m.populated = m.resident = flags & MAP_POPULATE;
	map_add(&m);
	*out = r;
out:
	UNLOCK();
	return ret;
}

static int fk_munmap(void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + (len + PAGE - 1) / PAGE * PAGE;
	int ret = 0;
	LOCK();
	fk.munmap_calls++;
	if (len == 0 || lo % PAGE || hi < lo) {
		ret = -EINVAL;
		goto out;
	}
	for (int i = 0; i < fk.n_maps; i++) { /* hugetlb: whole huge pages only */
		struct map *m = &fk.maps[i];
		if (m->hpage && m->start < hi && lo < m->end) {
			if (lo % m->hpage) {
				ret = -EINVAL;
				goto out;
			}
			if (hi < m->end)
				hi = (hi + m->hpage - 1) / m->hpage * m->hpage;
		}
	}
	map_untrack(lo, hi, true);
out:
	UNLOCK();
	return ret;
}

static bool advice_known(int advice)
{
	return (advice >= 0 && advice <= 4) || (advice >= 8 && advice <= 25);
}

static int fk_madvise(void *addr, size_t len, int advice)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + (len + PAGE - 1) / PAGE * PAGE;
	int ret = 0, inject;
	LOCK();
	inject = advice >= 0 && advice < 128 ? fk.madv_err[advice] : 0;
	if (advice == MADV_COLLAPSE && fk.collapse_err)
		inject = fk.collapse_err;
	if (len && advice >= 0 && advice < 128)
		fk.madv_calls[advice]++;
	if (lo % PAGE || !advice_known(advice) || (inject == EINVAL)) {
		ret = -EINVAL;
		goto out;
	}
	if (len == 0)
		goto out;
	if (inject) {
		ret = -inject;
		goto out;
	}
	map_split(lo);
	map_split(hi);
	uintptr_t huge_end = hi; /* populate: huge pages only below this */
	if (advice == MADV_POPULATE_WRITE && fk.thp_fault_limit && lo + fk.thp_fault_limit < hi) {
		huge_end = lo + fk.thp_fault_limit;
		map_split(huge_end);
	}
	uintptr_t covered = 0;
	for (int i = 0; i < fk.n_maps; i++) {
		struct map *m = &fk.maps[i];
		if (m->end <= lo || m->start >= hi)
			continue;
		covered += (m->end < hi ? m->end : hi) - (m->start > lo ? m->start : lo);
		switch (advice) {
		case MADV_HUGEPAGE:
		case MADV_NOHUGEPAGE:
			if (!m->hpage)
				m->advice = advice == MADV_HUGEPAGE ? 1 : -1;
			break;
		case MADV_POPULATE_READ:
		case MADV_POPULATE_WRITE:
			m->populated = m->resident = true;
			m->huge |= !m->hpage && m->advice > 0 && fk.thp_on_fault && !thp_never() &&
				    m->end <= huge_end;
			break;
		case MADV_COLLAPSE:
			if (!m->hpage)
				m->resident = m->huge = true;
			break;
		case MADV_DONTNEED:
			if (!m->hpage) {
				m->resident = m->huge = false;
				madvise((void *)m->start, m->end - m->start, MADV_DONTNEED);
			}
			break;
		}
	}
	if (covered < hi - lo)
		ret = -ENOMEM; /* part of the range is not mapped */
out:
	UNLOCK();
	return ret;
}

static int fk_memfd_create(const char *name, unsigned flags)
{
	int ret;
	LOCK();
	fk.memfd_calls++;
	fk.memfd_flags = flags;
	ret = fk.memfd_err ? -fk.memfd_err : fd_new(FD_MEMFD);
	if (ret >= 0)
		snprintf(fd_of(ret)->name, sizeof fd_of(ret)->name, "%s", name);
	UNLOCK();
	return ret;
}

/* THP's switch and the thread's name; nothing else (PR_GET_SECCOMP: EINVAL, so the
 * runtime publishes no live page on the fake). */
static long fk_prctl5(int option, unsigned long a2, unsigned long a3, unsigned long a4,
		      unsigned long a5)
{
	long ret = -EINVAL;
	(void)a3, (void)a4, (void)a5;
	LOCK();
	if (option == PR_GET_THP_DISABLE) {
		ret = fk.prctl_thp;
	} else if (option == PR_SET_THP_DISABLE && fk.prctl_thp >= 0) {
		fk.prctl_thp = a2 != 0;
		ret = 0;
	} else if (option == PR_GET_NAME) {
		memcpy((char *)a2, "fake", 5);
		ret = 0;
	}
	UNLOCK();
	return ret;
}

static int fk_prctl(int option, unsigned long arg2)
{
	return (int)fk_prctl5(option, arg2, 0, 0, 0);
}

/* The break moves within [BRK_START, brk_max]; no memory is behind it (the runtime
 * only passes the kernel's break on). */
static uintptr_t fk_brk(uintptr_t want)
{
	LOCK();
	fk.brk_calls++;
	if (want >= BRK_START && want <= fk.brk_max)
		fk.brk_cur = want;
	uintptr_t r = fk.brk_cur;
	UNLOCK();
	return r;
}

static struct shm_seg *shm_of_key(key_t key)
{
	for (int i = 0; key != IPC_PRIVATE && i < MAX_SHM; i++)
		if (fk.shm[i].live && fk.shm[i].key == key)
			return &fk.shm[i];
	return NULL;
}

static struct shm_seg *shm_of_id(int id)
{
	for (int i = 0; i < MAX_SHM; i++)
		if (fk.shm[i].live && fk.shm[i].id == id)
			return &fk.shm[i];
	return NULL;
}

/* SysV segments: SHM_HUGETLB ones (2 MiB pages) reserve their pages from the pool
 * at shmget, as the kernel does, and give them back at IPC_RMID. */
static int fk_shmget(key_t key, size_t size, int flags)
{
	int ret;
	LOCK();
	struct shm_seg *s = shm_of_key(key), *free_seg = NULL;
	bool huge = flags & SHM_HUGETLB;
	struct pool *p = huge ? pool_of(SP_2M_SIZE) : NULL;
	long pages = (long)((size + SP_2M_SIZE - 1) / SP_2M_SIZE);
	for (int i = 0; i < MAX_SHM && !free_seg; i++)
		if (!fk.shm[i].live)
			free_seg = &fk.shm[i];
	if (huge)
		fk.shm_huge_calls++;
	if (s) {
		ret = (flags & IPC_CREAT) && (flags & IPC_EXCL) ? -EEXIST
		      : size > s->size				 ? -EINVAL
								 : s->id;
	} else if (key != IPC_PRIVATE && !(flags & IPC_CREAT)) {
		ret = -ENOENT;
	} else if (size == 0 || !free_seg) {
		ret = size == 0 ? -EINVAL : -ENOSPC;
	} else if (huge && fk.shm_huge_err) {
		ret = -fk.shm_huge_err;
	} else if (huge && (!p || p->free < pages)) {
		ret = -ENOMEM;
	} else {
		if (huge)
			p->free -= pages;
		*free_seg = (struct shm_seg){ key, ++fk.shm_next_id, size, huge ? pages : 0, true };
		ret = free_seg->id;
	}
	UNLOCK();
	return ret;
}

static int fk_shmctl(int id, int cmd, struct shmid_ds *buf)
{
	int ret = 0;
	LOCK();
	struct shm_seg *s = shm_of_id(id);
	struct pool *p = pool_of(SP_2M_SIZE);
	if (!s) {
		ret = -EINVAL;
	} else if (cmd == IPC_STAT) {
		memset(buf, 0, sizeof *buf);
		buf->shm_segsz = s->size;
	} else if (cmd == IPC_RMID) {
		if (p)
			p->free += s->huge_pages;
		s->live = false;
	} else {
		ret = -EINVAL;
	}
	UNLOCK();
	return ret;
}

static int fk_ftruncate(int fd, off_t len)
{
	int ret;
	LOCK();
	fk.truncate_calls++;
	ret = !fd_of(fd) ? -EBADF : len < 0 ? -EINVAL : fk.truncate_err ? -fk.truncate_err : 0;
	UNLOCK();
	return ret;
}

/* Threads are the host's: their ids and their ends are the real kernel's. */
static pid_t fk_gettid(void)
{
	return (pid_t)sp_syscall_raw(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

static int fk_tgkill0(pid_t tid)
{
	return (int)sp_syscall_raw(SYS_tgkill, getpid(), tid, 0, 0, 0, 0);
}

static int fk_kill0(pid_t pid)
{
	int ret = -ESRCH;
	LOCK();
	for (int i = 0; i < fk.n_pids; i++)
		if (fk.pids[i] == pid)
			ret = 0;
	UNLOCK();
	return ret;
}

static uint64_t fk_now_ns(void)
{
	LOCK();
	uint64_t t = fk.clock;
	UNLOCK();
	return t;
}

static long fk_page_size(void)
{
	return PAGE;
}

/* The runtime's page heap calls these (test_pages_fake): done on real memory, and
 * tracked as the kernel would (a protection per part, mappings that move). */
static int fk_mprotect(void *addr, size_t len, int prot)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + (len + PAGE - 1) / PAGE * PAGE;
	int ret = 0;
	LOCK();
	if (lo % PAGE || hi < lo) {
		ret = -EINVAL;
		goto out;
	}
	if (mprotect(addr, hi - lo, prot) < 0) {
		ret = -errno;
		goto out;
	}
	map_split(lo);
	map_split(hi);
	for (int i = 0; i < fk.n_maps; i++)
		if (fk.maps[i].start >= lo && fk.maps[i].end <= hi)
			fk.maps[i].prot = prot;
out:
	UNLOCK();
	return ret;
}

static int fk_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
		     void **out)
{
	uintptr_t lo = (uintptr_t)old, hi = lo + old_len;
	int ret = 0;
	LOCK();
	if (fk.mremap_err) {
		ret = -fk.mremap_err;
		goto out;
	}
	void *r = mremap(old, old_len, new_len, flags, new_addr);
	if (r == MAP_FAILED) {
		ret = -errno;
		goto out;
	}
	uintptr_t to = (uintptr_t)r;
	/* What was at the new place is gone (not unmapped again: mremap did that). */
	map_untrack(to, to + new_len, false);
	map_split(lo);
	map_split(hi);
	/* The records of [lo, hi) move by (to - lo), their pool pages with them; with
	 * MREMAP_DONTUNMAP the old range stays mapped, empty and plain. */
	int k = 0;
	struct map *moving = malloc((size_t)(fk.n_maps + 1) * sizeof *moving);
	if (!moving)
		die("no memory");
	for (int i = 0; i < fk.n_maps;) {
		struct map *m = &fk.maps[i];
		if (m->start < lo || m->end > hi || m->stale) {
			i++;
			continue;
		}
		moving[k++] = *m;
		if (flags & MREMAP_DONTUNMAP) {
			m->hpage = 0;
			m->resident = m->huge = m->populated = false;
			i++;
		} else {
			memmove(m, m + 1, (size_t)(fk.n_maps - i - 1) * sizeof *m);
			fk.n_maps--;
		}
	}
	for (int i = 0; i < k; i++) {
		moving[i].start = to + (moving[i].start - lo);
		moving[i].end = to + (moving[i].end - lo);
		if (moving[i].end > to + new_len)
			moving[i].end = to + new_len;
		if (moving[i].start < moving[i].end)
			map_add(&moving[i]);
	}
	free(moving);
	*out = r;
out:
	UNLOCK();
	return ret;
}

static int fk_pidfd_open(pid_t pid)
{
	int ret;
	LOCK();
	ret = fkp_pidfd_check(pid);
	if (ret == 0) {
		ret = fd_new(FD_PIDFD);
		if (ret >= 0)
			fd_of(ret)->pid = pid;
	}
	UNLOCK();
	return ret;
}

static ssize_t fk_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice)
{
	ssize_t ret;
	LOCK();
	struct fd *d = fd_of(pidfd);
	ret = d && d->kind == FD_PIDFD ? fkp_process_madvise(d->pid, iov, n, advice, &fk.clock)
				       : -EBADF;
	UNLOCK();
	return ret;
}

static int fk_ioctl(int fd, unsigned long request, void *arg)
{
	int ret = -ENOTTY, pid, n = 0;
	LOCK();
	struct fd *d = fd_of(fd);
	if (!d)
		ret = -EBADF;
	else if (request == 0xc0606610ul && d->path &&
		 sscanf(d->path, "/proc/%d/pagemap%n", &pid, &n) == 1 && !d->path[n])
		ret = fkp_pagemap_scan(pid, arg);
	UNLOCK();
	return ret;
}

static void fk_sleep_ns(uint64_t ns)
{
	LOCK();
	fk.clock += ns;
	fkp_sleep(ns);
	UNLOCK();
}

/* The fake's mappings are real memory: what the kernel says of it. */
static int fk_mincore(void *addr, size_t len, unsigned char *vec)
{
	return mincore(addr, len, vec) ? -errno : 0;
}

/* A path on a filesystem of fk_fs has its type; any other that exists is ext4. */
static int fk_statfs(const char *path, struct statfs *out)
{
	struct sb list = { 0 };
	int ret = 0;
	LOCK();
	struct fs *f = fs_of(path);
	memset(out, 0, sizeof *out);
	if (f) {
		out->f_type = f->type;
		out->f_bsize = f->bsize;
	} else if (file_of(path) || dir_list(path, &list)) {
		out->f_type = EXT4_MAGIC;
		out->f_bsize = PAGE;
	} else {
		ret = -ENOENT;
	}
	free(list.p);
	UNLOCK();
	return ret;
}

static int fk_unlink(const char *path)
{
	int ret = -ENOENT;
	LOCK();
	fk.unlink_calls++;
	struct file *f = file_of(path);
	if (f) {
		free(f->path);
		free(f->data);
		*f = fk.files[--fk.n_files];
		ret = 0;
	}
	UNLOCK();
	return ret;
}

static int fk_access(const char *path, int mode)
{
	struct sb list = { 0 };
	int ret = 0;
	(void)mode;
	LOCK();
	struct fs *f = fs_of(path);
	if (f && f->access_err)
		ret = -f->access_err;
	else if (!(f && !strcmp(f->path, path)) && !file_of(path) && !dir_list(path, &list))
		ret = -ENOENT; /* (a mount point is there; below it, what was made) */
	free(list.p);
	UNLOCK();
	return ret;
}

/* F_SETFD only: the fd must be open. */
static int fk_fcntl(int fd, int cmd, int arg)
{
	int ret;
	LOCK();
	ret = fd_of(fd) ? 0 : -EBADF;
	if (ret == 0 && cmd == F_SETFD && arg == 0)
		fk.cloexec_cleared++;
	UNLOCK();
	return ret;
}

/* The fake has no userfaultfd: fork takes the route without it. */
static int fk_userfaultfd(int flags)
{
	(void)flags;
	return -ENOSYS;
}

static int fk_getrlimit(int resource, struct rlimit *out)
{
	if (resource < 0 || resource >= RLIMIT_NLIMITS)
		return -EINVAL;
	LOCK();
	uint64_t v = fk.rlim[resource];
	UNLOCK();
	out->rlim_cur = out->rlim_max = v ? (rlim_t)(v - 1) : RLIM_INFINITY;
	return 0;
}

const struct sp_os fk_os = {
	.open = fk_open,
	.read = fk_read,
	.pread = fk_pread,
	.write = fk_write,
	.close = fk_close,
	.getdents = fk_getdents,
	.mmap = fk_mmap,
	.munmap = fk_munmap,
	.mprotect = fk_mprotect,
	.mremap = fk_mremap,
	.madvise = fk_madvise,
	.memfd_create = fk_memfd_create,
	.prctl = fk_prctl,
	.kill0 = fk_kill0,
	.now_ns = fk_now_ns,
	.page_size = fk_page_size,
	.pidfd_open = fk_pidfd_open,
	.process_madvise = fk_process_madvise,
	.ioctl = fk_ioctl,
	.sleep_ns = fk_sleep_ns,
	.mincore = fk_mincore,
	.statfs = fk_statfs,
	.unlink = fk_unlink,
	.access = fk_access,
	.fcntl = fk_fcntl,
	.userfaultfd = fk_userfaultfd,
	.getrlimit = fk_getrlimit,
	.brk = fk_brk,
	.shmget = fk_shmget,
	.shmctl = fk_shmctl,
	.ftruncate = fk_ftruncate,
	.gettid = fk_gettid,
	.tgkill0 = fk_tgkill0,
	.prctl5 = fk_prctl5,
};

/* ---------- the control API ---------- */

/* Runs statements under the fake's lock (for the one-line controls below). */
#define LOCKED(...)                          \
	do {                                 \
		pthread_mutex_lock(&lock);   \
		__VA_ARGS__;                 \
		pthread_mutex_unlock(&lock); \
	} while (0)

void fk_reset(void)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < fk.n_files; i++) {
		free(fk.files[i].path);
		free(fk.files[i].data);
	}
	free(fk.files);
	for (int i = 0; i < MAX_FDS; i++) {
		free(fk.fds[i].path);
		free(fk.fds[i].data);
	}
	/* The library may still use memory it got before (its block registry): keep the
	 * mappings, forgotten, so that only a munmap of them unmaps them. */
	struct map *maps = fk.maps;
	int n_maps = fk.n_maps;
	for (int i = 0; i < n_maps; i++)
		maps[i].stale = true;
	memset(&fk, 0, sizeof fk);
	fk.maps = maps;
	fk.n_maps = n_maps;
	fk.thp_on_fault = true;
	fk.clock = 1000ull * 1000000000ull;
	fk.brk_cur = BRK_START;
	fk.brk_max = BRK_START + ((uintptr_t)64 << 20);
	fkp_reset();
	pthread_mutex_unlock(&lock);
}

void fk_rlimit(int resource, uint64_t cur)
{
	if (resource >= 0 && resource < RLIMIT_NLIMITS)
		LOCKED(fk.rlim[resource] = cur == RLIM_INFINITY ? 0 : cur + 1);
}

/* (The process's cgroup levels are the installed kernel's: looked for again.) */
void fk_install(void)
{
	sp_os_use(&fk_os);
	sp_limits_forget();
}

void fk_uninstall(void)
{
	sp_os_use(NULL);
	sp_limits_forget();
}

void fk_file_n(const char *path, const char *data, size_t len)
{
	LOCKED(file_set(path, data, len));
}

void fk_file(const char *path, const char *text) { fk_file_n(path, text, strlen(text)); }

int fk_file_load(const char *path, const char *host_path)
{
	FILE *f = fopen(host_path, "rb");
	if (!f)
		return -errno;
	struct sb b = { 0 };
	char chunk[4096];
	size_t n;
	sb_printf(&b, "%s", "");
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		sb_printf(&b, "%.*s", (int)n, chunk);
	fclose(f);
	fk_file_n(path, b.p, b.len);
	free(b.p);
	return 0;
}

/* Removes the file at path, or every file under it if tree. */
static void files_remove(const char *path, bool tree)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < fk.n_files;) {
		const char *p = fk.files[i].path;
		if (tree ? !strncmp(p, path, strlen(path)) : !strcmp(p, path)) {
			free(fk.files[i].path);
			free(fk.files[i].data);
			fk.files[i] = fk.files[--fk.n_files];
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&lock);
}

void fk_file_remove(const char *path) { files_remove(path, false); }
void fk_file_remove_tree(const char *prefix) { files_remove(prefix, true); }

const char *fk_file_get(const char *path)
{
	struct file *f;
	LOCKED(f = file_of(path));
	return f ? f->data : NULL;
}

void fk_write_error(int err) { fk.write_err = err; }

void fk_file_error(const char *path, int err)
{
	snprintf(fk.err_path, sizeof fk.err_path, "%s", path);
	fk.err_path_err = err;
}

void fk_counters_reset(void)
{
	LOCKED(fk.mmap_calls = fk.munmap_calls = fk.memfd_calls = fk.noreserve = 0;
	       memset(fk.huge_calls, 0, sizeof fk.huge_calls);
	       memset(fk.madv_calls, 0, sizeof fk.madv_calls));
}

int fk_open_fds(void)
{
	int n = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_FDS; i++)
		n += fk.fds[i].kind != FD_FREE;
	pthread_mutex_unlock(&lock);
	return n;
}

void fk_pool(uint64_t page_size, long total, long free_pages)
{
	pthread_mutex_lock(&lock);
	struct pool *p = pool_of(page_size);
	if (!p) {
		if (fk.n_pools == MAX_POOLS)
			die("too many pools");
		p = &fk.pools[fk.n_pools++];
	}
	*p = (struct pool){ page_size, total, free_pages, 0, 0, 0, -1, 0 };
	/* keep the pools in ascending order, as sysfs lists them by name */
	for (int i = fk.n_pools - 1; i > 0 && fk.pools[i].size < fk.pools[i - 1].size; i--) {
		struct pool t = fk.pools[i];
		fk.pools[i] = fk.pools[i - 1];
		fk.pools[i - 1] = t;
	}
	pthread_mutex_unlock(&lock);
}

void fk_pool_remove(uint64_t page_size)
{
	pthread_mutex_lock(&lock);
	struct pool *p = pool_of(page_size);
	if (p) {
		size_t after = fk.pools + fk.n_pools - (p + 1);
		memmove(p, p + 1, after * sizeof *p);
		fk.n_pools--;
	}
	pthread_mutex_unlock(&lock);
}

void fk_pool_grantable(uint64_t size, long max)
{
	LOCKED(if (pool_of(size)) pool_of(size)->grantable = max);
}

long fk_pool_total(uint64_t size)
{
	long v;
	LOCKED(v = pool_of(size) ? pool_of(size)->total : -1);
	return v;
}

long fk_pool_free(uint64_t size)
{
	long v;
	LOCKED(v = pool_of(size) ? pool_of(size)->free : -1);
	return v;
}

void fk_nodes(int n) { fk.n_nodes = n; }

void fk_mmap_fail_next(int n, int err) { LOCKED(fk.fail_next_n = n; fk.fail_next_err = err); }
void fk_mmap_fail_huge(uint64_t size, int err)
{
	LOCKED(if (pool_of(size)) pool_of(size)->fail = err);
}
int fk_mmap_calls(void) { return fk.mmap_calls; }
int fk_mmap_huge_calls(uint64_t page_size)
{
	return fk.huge_calls[__builtin_ctzll(page_size) & 63];
}
int fk_munmap_calls(void) { return fk.munmap_calls; }
int fk_noreserve_hugetlb(void) { return fk.noreserve; }
int fk_last_mmap_flags(void) { return fk.last_flags; }

/* Counts the mappings (not stale) of at least min bytes and their bytes inside [lo, hi). */
static size_t map_sum(uintptr_t lo, uintptr_t hi, size_t min, int *count)
{
	size_t n = 0;
	*count = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < fk.n_maps; i++) {
		const struct map *m = &fk.maps[i];
		uintptr_t s = m->start > lo ? m->start : lo, e = m->end < hi ? m->end : hi;
		if (m->stale || m->end - m->start < min || s >= e)
			continue;
		n += e - s;
		++*count;
	}
	pthread_mutex_unlock(&lock);
	return n;
}

int fk_map_count(void)
{
	int n;
	map_sum(0, UINTPTR_MAX, 0, &n);
	return n;
}

size_t fk_map_bytes_min(size_t min)
{
	int n;
	return map_sum(0, UINTPTR_MAX, min, &n);
}

size_t fk_map_bytes(void) { return fk_map_bytes_min(0); }

size_t fk_map_bytes_in(uintptr_t lo, uintptr_t hi)
{
	int n;
	return map_sum(lo, hi, 0, &n);
}

void fk_dump(void)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < fk.n_maps; i++) {
		const struct map *m = &fk.maps[i];
		if (m->stale)
			continue;
		printf("    fake map %lx-%lx (%lu kB) hpage %llu flags %#x advice %d%s%s%s\n",
		       m->start, m->end, (m->end - m->start) >> 10, (unsigned long long)m->hpage,
		       m->flags, m->advice, m->populated ? " populated" : "",
		       m->resident ? " resident" : "", m->huge ? " huge" : "");
	}
	for (int i = 0; i < fk.n_pools; i++)
		printf("    fake pool %llu kB: total %ld free %ld\n",
		       (unsigned long long)(fk.pools[i].size >> 10), fk.pools[i].total, fk.pools[i].free);
	pthread_mutex_unlock(&lock);
}

int fk_map_find(const void *addr, struct fk_map_info *out)
{
	int ret = -1;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < fk.n_maps; i++) {
		const struct map *m = &fk.maps[i];
		if (!m->stale && m->start <= (uintptr_t)addr && (uintptr_t)addr < m->end) {
			*out = (struct fk_map_info){ m->start, m->end, m->prot, m->flags, m->hpage,
						     m->populated, m->advice, m->resident, m->huge };
			ret = 0;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void fk_madvise_fail(int advice, int err)
{
	if (advice >= 0 && advice < 128)
		fk.madv_err[advice] = err;
}
int fk_madvise_calls(int advice) { return advice >= 0 && advice < 128 ? fk.madv_calls[advice] : 0; }
void fk_thp_on_fault(bool on) { fk.thp_on_fault = on; }
void fk_thp_fault_limit(size_t bytes) { fk.thp_fault_limit = bytes; }
void fk_collapse(int err) { fk.collapse_err = err; }
void fk_mremap_fail(int err) { fk.mremap_err = err; }
void fk_prctl_thp(int value) { fk.prctl_thp = value; }
void fk_memfd_error(int err) { fk.memfd_err = err; }
int fk_memfd_calls(void) { return fk.memfd_calls; }
unsigned fk_memfd_last_flags(void) { return fk.memfd_flags; }

void fk_fs(const char *path, long type, long bsize, int access_err)
{
	LOCKED(if (fk.n_fss < MAX_FS) {
		struct fs *f = &fk.fss[fk.n_fss++];
		snprintf(f->path, sizeof f->path, "%s", path);
		f->type = type;
		f->bsize = bsize;
		f->access_err = access_err;
	});
}
void fk_tmpfile_error(int err) { LOCKED(fk.tmpfile_err = err); }
int fk_tmpfile_calls(void) { return fk.tmpfile_calls; }
int fk_unlink_calls(void) { return fk.unlink_calls; }
int fk_cloexec_cleared(void) { return fk.cloexec_cleared; }

void fk_pid_add(pid_t pid)
{
	if (fk.n_pids < MAX_PIDS)
		fk.pids[fk.n_pids++] = pid;
}

void fk_pid_remove(pid_t pid)
{
	for (int i = 0; i < fk.n_pids; i++)
		if (fk.pids[i] == pid)
			fk.pids[i--] = fk.pids[--fk.n_pids];
}

void fk_brk_max(size_t bytes) { LOCKED(fk.brk_max = BRK_START + bytes); }
uintptr_t fk_brk_now(void) { return fk.brk_cur; }
int fk_brk_calls(void) { return fk.brk_calls; }
void fk_shm_huge_error(int err) { LOCKED(fk.shm_huge_err = err); }
int fk_shm_huge_calls(void) { return fk.shm_huge_calls; }
size_t fk_shm_size(int id)
{
	size_t n = 0;
	LOCKED(struct shm_seg *s = shm_of_id(id); n = s ? s->size : 0);
	return n;
}
long fk_shm_huge_pages(int id)
{
	long n = -1;
	LOCKED(struct shm_seg *s = shm_of_id(id); n = s ? s->huge_pages : -1);
	return n;
}
void fk_truncate_error(int err) { LOCKED(fk.truncate_err = err); }
int fk_truncate_calls(void) { return fk.truncate_calls; }

void fk_clock_set(uint64_t ns) { fk.clock = ns; }
void fk_clock_advance(uint64_t ns) { fk.clock += ns; }

void fk_machine_default(void)
{
	static const char *files[][2] = {
		{ THP_ENABLED, "always [madvise] never\n" },
		{ "/sys/kernel/mm/transparent_hugepage/defrag",
		  "always defer defer+madvise [madvise] never\n" },
		{ "/sys/kernel/mm/transparent_hugepage/shmem_enabled",
		  "always within_size advise [never] deny force\n" },
		{ "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "2097152\n" },
		{ "/sys/kernel/mm/transparent_hugepage/use_zero_page", "1\n" },
		{ "/sys/kernel/mm/transparent_hugepage/hugepages-16kB/enabled",
		  "always inherit madvise [never]\n" },
		{ "/sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled",
		  "always inherit madvise [never]\n" },
		{ "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled",
		  "always inherit madvise [never]\n" },
		{ "/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled",
		  "always [inherit] madvise never\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/defrag", "1\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan", "4096\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs", "10000\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs", "60000\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none", "511\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_swap", "64\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared", "256\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/full_scans", "0\n" },
		{ "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_collapsed", "0\n" },
		{ "/sys/devices/system/node/online", "0\n" },
		{ "/sys/devices/system/node/possible", "0\n" },
		{ "/proc/meminfo", "MemTotal:       16384000 kB\n"
				   "MemFree:        12000000 kB\n"
				   "MemAvailable:   14000000 kB\n"
				   "AnonHugePages:         0 kB\n"
				   "HugePages_Total:       0\n"
				   "HugePages_Free:        0\n"
				   "HugePages_Rsvd:        0\n"
				   "HugePages_Surp:        0\n"
				   "Hugepagesize:       2048 kB\n"
				   "Hugetlb:               0 kB\n" },
		{ "/proc/mounts", "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
				  "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
				  "/dev/vda / ext4 rw,relatime 0 0\n"
				  "tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n" },
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		fk_file(files[i][0], files[i][1]);
	fk_pool(SP_2M_SIZE, 0, 0);
	fk_pool(SP_1G_SIZE, 0, 0);
	fk_nodes(1);
}

void fk_setup(long pages_2m, long pages_1g)
{
	fk_reset();
	fk_machine_default();
	fk_pool(SP_2M_SIZE, pages_2m, pages_2m);
	fk_pool(SP_1G_SIZE, pages_1g, pages_1g);
	fk_install();
}
