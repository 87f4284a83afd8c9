/* probe.c - what this machine offers: page sizes, pools, THP modes, mounts, features. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define HUGEPAGES_DIR "/sys/kernel/mm/hugepages"
#define NODES_DIR "/sys/devices/system/node"
#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

struct dirent64_hdr {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

int sp_dir_each(const char *path, void (*fn)(const char *name, void *arg), void *arg)
{
	int fd = sp_os->open(path, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	_Alignas(8) char buf[2048];
	for (;;) {
		ssize_t n = sp_os->getdents(fd, buf, sizeof buf);
		if (n < 0) {
			sp_os->close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		for (ssize_t off = 0; off < n;) {
			struct dirent64_hdr *d = (struct dirent64_hdr *)(void *)(buf + off);
			if (d->d_reclen == 0)
				break;
			if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
				fn(d->d_name, arg);
			off += d->d_reclen;
		}
	}
	sp_os->close(fd);
	return 0;
}

/* "hugepages-2048kB" -> 2 MiB; 0 if the name is not of that form. */
static uint64_t size_from_name(const char *name)
{
	if (strncmp(name, "hugepages-", 10) != 0)
		return 0;
	const char *s = name + 10;
	uint64_t kb;
	if (sp_scan_u64(&s, &kb) < 0 || strcmp(s, "kB") != 0 || kb == 0 || kb > (UINT64_MAX >> 10))
		return 0;
	return kb << 10;
}

static void insert_sorted(uint64_t *sizes, int *n, int max, uint64_t v)
{
	int i = *n;
	if (i >= max)
		return;
	while (i > 0 && sizes[i - 1] > v) {
		sizes[i] = sizes[i - 1];
		i--;
	}
	sizes[i] = v;
	(*n)++;
}

struct sizes { uint64_t v[SP_MAX_PAGE_SIZES]; int n; };

static void add_size(const char *name, void *arg)
{
	struct sizes *s = arg;
	uint64_t size = size_from_name(name);
	if (size)
		insert_sorted(s->v, &s->n, SP_MAX_PAGE_SIZES, size);
}

int sp_pool_dir(uint64_t page_size, int node, char *buf, size_t len)
{
	int n;
	if (node < 0)
		n = snprintf(buf, len, HUGEPAGES_DIR "/hugepages-%llukB",
			     (unsigned long long)(page_size >> 10));
	else
		n = snprintf(buf, len, NODES_DIR "/node%d/hugepages/hugepages-%llukB", node,
			     (unsigned long long)(page_size >> 10));
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static long read_field(const char *dir, const char *file, bool *ok)
{
	char path[SP_PATH_LEN + 32];
	long v;
	snprintf(path, sizeof path, "%s/%s", dir, file);
	if (sp_read_long(path, &v) < 0) {
		*ok = false;
		return -1;
	}
	return v;
}

int sp_pool_get(uint64_t page_size, int node, struct sp_pool *out)
{
	char dir[SP_PATH_LEN];
	bool ok = true;
	if (page_size == 0 || page_size % 4096)
		return -ENOENT;
	int r = sp_pool_dir(page_size, node, dir, sizeof dir);
	if (r < 0)
		return r;
	memset(out, 0, sizeof *out);
	out->page_size = page_size;
	out->node = node < 0 ? -1 : node;
	out->total = read_field(dir, "nr_hugepages", &ok);
	if (!ok)
		return -ENOENT;
	out->free = read_field(dir, "free_hugepages", &ok);
	out->surplus = read_field(dir, "surplus_hugepages", &ok);
	bool sys_ok = true;
	out->reserved = node < 0 ? read_field(dir, "resv_hugepages", &sys_ok) : -1;
	out->overcommit = node < 0 ? read_field(dir, "nr_overcommit_hugepages", &sys_ok) : -1;
	return ok && sys_ok ? 0 : -EPROTO;
}

int sp_pool_set(uint64_t page_size, int node, long count, long *got)
{
	char dir[SP_PATH_LEN], path[SP_PATH_LEN + 16], num[32];
	struct sp_pool p;
	if (count < 0)
		return -EINVAL;
	int r = sp_pool_get(page_size, node, &p);
	if (r < 0)
		return r;
	sp_pool_dir(page_size, node, dir, sizeof dir);
	snprintf(path, sizeof path, "%s/nr_hugepages", dir);
	snprintf(num, sizeof num, "%ld", count);
	r = sp_write_file(path, num);
	if (r < 0 && r != -ENOMEM)
		return r;
	/* The kernel may give fewer than asked (and say nothing, or ENOMEM): read back. */
	long now;
	int rr = sp_read_long(path, &now);
	if (rr < 0)
		return rr;
	if (got)
		*got = now;
	sp_refresh();
	if (now < count)
		return -ENOMEM;
	/* Pages in use cannot leave the pool: the kernel keeps them as surplus. */
	return now > count ? -EBUSY : 0;
}

void sp_mode_selected(const char *text, char *out, size_t len)
{
	const char *open = strchr(text, '[');
	const char *close = open ? strchr(open, ']') : NULL;
	const char *from = text, *to;
	if (open && close) {
		from = open + 1;
		to = close;
	} else {
		while (*from == ' ')
			from++;
		to = from + strcspn(from, " \n");
	}
	size_t n = (size_t)(to - from);
	if (len == 0)
		return;
	if (n >= len)
		n = len - 1;
	memcpy(out, from, n);
	out[n] = 0;
}

static void read_mode(const char *path, char *out, size_t len)
{
	char buf[256];
	if (sp_read_value(path, buf, sizeof buf) < 0) {
		out[0] = 0;
		return;
	}
	sp_mode_selected(buf, out, len);
}

static void add_mthp(const char *name, void *arg)
{
	struct sp_thp *t = arg;
	uint64_t size = size_from_name(name);
	char path[SP_PATH_LEN];
	if (!size || t->n_mthp >= SP_MAX_MTHP)
		return;
	int i = t->n_mthp;
	/* Some sizes have only shmem_enabled (8K on 6.18): they are not anonymous mTHP. */
	char mode[SP_MODE_LEN], buf[256];
	snprintf(path, sizeof path, THP_DIR "/%s/enabled", name);
	if (sp_read_value(path, buf, sizeof buf) < 0)
		return;
	sp_mode_selected(buf, mode, sizeof mode);
	while (i > 0 && t->mthp[i - 1].size > size) {
		t->mthp[i] = t->mthp[i - 1];
		i--;
	}
	t->mthp[i].size = size;
	sp_strlcpy(t->mthp[i].enabled, mode, sizeof t->mthp[i].enabled);
	t->n_mthp++;
}

const char *sp_thp_pmd_mode(const struct sp_thp *t)
{
	/* The PMD size's own setting wins unless it is "inherit". */
	for (int i = 0; i < t->n_mthp; i++)
		if (t->mthp[i].size == t->pmd_size && t->mthp[i].enabled[0] &&
		    strcmp(t->mthp[i].enabled, "inherit") != 0)
			return t->mthp[i].enabled;
	return t->enabled;
}

static void probe_thp(struct sp_thp *t)
{
	long v;
	memset(t, 0, sizeof *t);
	char buf[256];
	if (sp_read_value(THP_DIR "/enabled", buf, sizeof buf) < 0)
		return;
	t->present = true;
	sp_mode_selected(buf, t->enabled, sizeof t->enabled);
	read_mode(THP_DIR "/defrag", t->defrag, sizeof t->defrag);
	read_mode(THP_DIR "/shmem_enabled", t->shmem_enabled, sizeof t->shmem_enabled);
	if (sp_read_long(THP_DIR "/hpage_pmd_size", &v) == 0 && v > 0)
		t->pmd_size = (uint64_t)v;
	sp_dir_each(THP_DIR, add_mthp, t);

	struct sp_khugepaged *k = &t->khugepaged;
	read_mode(THP_DIR "/khugepaged/defrag", k->defrag, sizeof k->defrag);
	static const struct { const char *name; size_t off; } fields[] = {
		{ "pages_to_scan", offsetof(struct sp_khugepaged, pages_to_scan) },
		{ "scan_sleep_millisecs", offsetof(struct sp_khugepaged, scan_sleep_millisecs) },
		{ "alloc_sleep_millisecs", offsetof(struct sp_khugepaged, alloc_sleep_millisecs) },
		{ "max_ptes_none", offsetof(struct sp_khugepaged, max_ptes_none) },
		{ "max_ptes_swap", offsetof(struct sp_khugepaged, max_ptes_swap) },
		{ "max_ptes_shared", offsetof(struct sp_khugepaged, max_ptes_shared) },
		{ "full_scans", offsetof(struct sp_khugepaged, full_scans) },
		{ "pages_collapsed", offsetof(struct sp_khugepaged, pages_collapsed) },
	};
	for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
		char path[SP_PATH_LEN];
		long *field = (long *)(void *)((char *)k + fields[i].off);
		snprintf(path, sizeof path, THP_DIR "/khugepaged/%s", fields[i].name);
		if (sp_read_long(path, field) < 0)
			*field = -1;
	}
}

static int seam_open(const char *path)
{
	return sp_os->open(path, O_RDONLY, 0);
}

static const struct sp_files seam_files = { seam_open, sp_dir_each };

static uint64_t default_huge_size(const struct sp_files *files)
{
	struct sp_lines l;
	const char *line;
	uint64_t size = 0;
	int fd = files->open("/proc/meminfo");
	if (fd < 0)
		return 0;
	sp_lines_init(&l, fd);
	while (sp_lines_next(&l, &line) > 0) {
		if (strncmp(line, "Hugepagesize:", 13) == 0) {
			const char *s = line + 13;
			uint64_t kb;
			while (*s == ' ' || *s == '\t')
				s++;
			if (sp_scan_u64(&s, &kb) == 0 && kb <= (UINT64_MAX >> 10))
				size = kb << 10;
			break;
		}
	}
	sp_os->close(fd);
	return size;
}

/* /proc/mounts escapes space, tab, newline and backslash as \ooo. */
static void unescape_path(const char *in, size_t n, char *out, size_t len)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 1 < len; i++) {
		if (in[i] == '\\' && i + 3 < n && in[i + 1] >= '0' && in[i + 1] <= '3') {
			out[o++] = (char)((in[i + 1] - '0') * 64 + (in[i + 2] - '0') * 8 + (in[i + 3] - '0'));
			i += 3;
		} else {
			out[o++] = in[i];
		}
	}
	out[o] = 0;
}

static void probe_mounts(struct sp_system *sys, const struct sp_files *files)
{
	struct sp_lines l;
	const char *line;
	int fd = files->open("/proc/mounts");
	if (fd < 0)
		return;
	sp_lines_init(&l, fd);
	while (sp_lines_next(&l, &line) > 0 && sys->n_mounts < SP_MAX_MOUNTS) {
		/* device path fstype options dump pass */
		const char *f[4];
		size_t flen[4];
		const char *s = line;
		int i;
		for (i = 0; i < 4; i++) {
			while (*s == ' ')
				s++;
			if (!*s)
				break;
			f[i] = s;
			flen[i] = strcspn(s, " ");
			s += flen[i];
		}
		if (i < 4 || flen[2] != 9 || strncmp(f[2], "hugetlbfs", 9) != 0)
			continue;
		struct sp_mount *m = &sys->mounts[sys->n_mounts++];
		unescape_path(f[1], flen[1], m->path, sizeof m->path);
		m->page_size = sys->default_huge_size;
		char opts[512];
		size_t ol = flen[3] < sizeof opts - 1 ? flen[3] : sizeof opts - 1;
		memcpy(opts, f[3], ol);
		opts[ol] = 0;
		for (char *o = opts; o && *o;) {
			char *comma = strchr(o, ',');
			if (comma)
				*comma = 0;
			uint64_t ps;
			if (strncmp(o, "pagesize=", 9) == 0 && sp_parse_size(o + 9, &ps) == 0)
				m->page_size = ps;
			o = comma ? comma + 1 : NULL;
		}
	}
	sp_os->close(fd);
}

/* Whether PR_GET_THP_DISABLE's answer takes THP from memory advised MADV_HUGEPAGE:
 * 1 does; 3 (PR_THP_DISABLE_EXCEPT_ADVISED, Linux 6.18) leaves it to advised memory,
 * which is what superpage's is. */
static bool thp_off_for_advised(int thp)
{
	return thp > 0 && !(thp & 2);
}

/* Fills madv_populate_write and madv_collapse from a 2 MiB-aligned trial block. */
static void probe_collapse(struct sp_features *f)
{
	void *p;
	if (sp_map_aligned(SP_2M_SIZE, SP_2M_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, &p) < 0)
		return;
	f->madv_populate_write = sp_os->madvise(p, 4096, MADV_POPULATE_WRITE) != -EINVAL;
	*(volatile char *)p = 1;
	/* Unknown advice is EINVAL; EAGAIN/ENOMEM mean known but busy. EINVAL also
	 * comes when THP is disabled for this process, where collapse is no use. */
	f->madv_collapse = sp_os->madvise(p, SP_2M_SIZE, MADV_COLLAPSE) != -EINVAL;
	sp_os->munmap(p, SP_2M_SIZE);
}

static bool probe_hugetlb_size(unsigned shift)
{
	void *p;
	size_t len = (size_t)1 << shift;
	/* A probe that is never touched: MAP_NORESERVE lets it work with an empty pool.
	 * Memory handed to a program never uses MAP_NORESERVE. */
	int r = sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_NORESERVE |
				    (int)(shift << MAP_HUGE_SHIFT),
			    -1, 0, &p);
	if (r == 0) {
		sp_os->munmap(p, len);
		return true;
	}
	return r == -ENOMEM;
}

static void probe_features(struct sp_features *f, const struct sp_system *sys)
{
	memset(f, 0, sizeof *f);
	bool has_2m = false, has_1g = false;
	for (int i = 0; i < sys->n_sizes; i++) {
		has_2m |= sys->page_sizes[i] == SP_2M_SIZE;
		has_1g |= sys->page_sizes[i] == SP_1G_SIZE;
	}
	f->map_huge_2mb = has_2m && probe_hugetlb_size(21);
	f->map_huge_1gb = has_1g && probe_hugetlb_size(30);

	int fd = sp_os->memfd_create("superpage-probe", MFD_HUGETLB | 1u /* MFD_CLOEXEC */);
	if (fd >= 0) {
		f->memfd_hugetlb = true;
		sp_os->close(fd);
	}

	int thp = sp_os->prctl(PR_GET_THP_DISABLE, 0);
	f->thp_disable_prctl = thp >= 0;
	f->thp_disabled_here = thp_off_for_advised(thp);

	probe_collapse(f);
}

static void probe_pools(struct sp_system *sys, const struct sp_files *files)
{
	struct sizes s = { .n = 0 };
	files->list(HUGEPAGES_DIR "/", add_size, &s);
	sys->n_sizes = s.n;
	for (int i = 0; i < s.n; i++) {
		sys->page_sizes[i] = s.v[i];
		if (sp_pool_get(s.v[i], -1, &sys->pools[i]) < 0) {
			memset(&sys->pools[i], 0, sizeof sys->pools[i]);
			sys->pools[i].page_size = s.v[i];
			sys->pools[i].node = -1;
		}
	}
}

static void add_node(const char *name, void *arg)
{
	struct sp_system *sys = arg;
	if (strncmp(name, "node", 4) != 0 || sys->n_nodes >= SP_MAX_NODES)
		return;
	const char *s = name + 4;
	uint64_t id;
	if (sp_scan_u64(&s, &id) < 0 || *s || id > 1u << 20)
		return;
	struct sp_node_pools *np = &sys->nodes[sys->n_nodes];
	np->node = (int)id;
	np->n_pools = 0;
	for (int i = 0; i < sys->n_sizes; i++)
		if (sp_pool_get(sys->page_sizes[i], (int)id, &np->pools[np->n_pools]) == 0)
			np->n_pools++;
	if (np->n_pools == 0)
		return;
	/* Keep nodes in order of their number. */
	int i = sys->n_nodes++;
	struct sp_node_pools tmp = *np;
	while (i > 0 && sys->nodes[i - 1].node > tmp.node) {
		sys->nodes[i] = sys->nodes[i - 1];
		i--;
	}
	sys->nodes[i] = tmp;
}

void sp_probe_pools(struct sp_system *sys)
{
	probe_pools(sys, &seam_files);
}

void sp_probe_hugetlb_via(struct sp_system *sys, const struct sp_files *files)
{
	if (!files)
		files = &seam_files;
	memset(sys, 0, sizeof *sys);
	long ps = sp_os->page_size();
	sys->base_page_size = ps > 0 ? (uint64_t)ps : 4096;
	sys->default_huge_size = default_huge_size(files);
	probe_pools(sys, files);
	probe_mounts(sys, files);
}

void sp_probe_hugetlb(struct sp_system *sys)
{
	sp_probe_hugetlb_via(sys, NULL);
}

int sp_probe(struct sp_system *sys)
{
	sp_probe_hugetlb(sys);
	sp_dir_each(NODES_DIR, add_node, sys);
	probe_thp(&sys->thp);
	probe_features(&sys->features, sys);
	if (sys->n_sizes == 0 && !sys->thp.present) {
		/* Nothing at all under /sys: say so rather than describe an empty machine. */
		int fd = sp_os->open("/sys/kernel/mm", O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0)
			return fd;
		sp_os->close(fd);
	}
	return 0;
}

/* ---- the cached view the allocator asks: two copies, the live one published
 * atomically, so readers never see one half-written. ---- */
static struct sp_view views[2];
static _Atomic(struct sp_view *) live_view;
static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;

int sp_thp_read_pmd(struct sp_thp *t)
{
	char buf[256];
	long pmd;
	memset(t, 0, sizeof *t);
	int r = (int)sp_read_value(THP_DIR "/enabled", buf, sizeof buf);
	if (r < 0)
		return r;
	t->present = true;
	sp_mode_selected(buf, t->enabled, sizeof t->enabled);
	if (sp_read_long(THP_DIR "/hpage_pmd_size", &pmd) == 0 && pmd > 0) {
		char path[SP_PATH_LEN];
		t->pmd_size = (uint64_t)pmd;
		snprintf(path, sizeof path, THP_DIR "/hugepages-%lukB/enabled",
			 (unsigned long)(pmd >> 10));
		if (sp_read_value(path, buf, sizeof buf) >= 0) {
			t->n_mthp = 1;
			t->mthp[0].size = t->pmd_size;
			sp_mode_selected(buf, t->mthp[0].enabled, sizeof t->mthp[0].enabled);
		}
	}
	return 0;
}

/* The allocator's view is read at the start of every program under superpage run:
 * only what is cheap to know (a few sysfs reads, one prctl).
 * Whether MADV_COLLAPSE works costs a huge page fault to learn: asked lazily. */
void sp_view_fill(struct sp_view *v)
{
	struct sizes sz = { .n = 0 };
	memset(v, 0, sizeof *v);
	long ps = sp_os->page_size();
	v->base_page_size = ps > 0 ? (uint64_t)ps : 4096;
	sp_dir_each(HUGEPAGES_DIR, add_size, &sz);
	for (int i = 0; i < sz.n; i++) {
		v->has_2m |= sz.v[i] == SP_2M_SIZE;
		v->has_1g |= sz.v[i] == SP_1G_SIZE;
	}
	struct sp_thp t;
	if (sp_thp_read_pmd(&t) == 0) {
		v->thp_present = true;
		v->thp_never = strcmp(sp_thp_pmd_mode(&t), "never") == 0;
	}
	int thp = sp_os->prctl(PR_GET_THP_DISABLE, 0);
	v->features.thp_disable_prctl = thp >= 0;
	v->features.thp_disabled_here = thp_off_for_advised(thp);
}

static _Atomic int collapse_known; /* 0: not asked yet, 1: works, 2: does not */

bool sp_view_has_collapse(void)
{
	int k = atomic_load(&collapse_known);
	if (k == 0) {
		struct sp_features f;
		probe_collapse(&f);
		k = f.madv_collapse ? 1 : 2;
		atomic_store(&collapse_known, k);
	}
	return k == 1;
}

static void view_publish(void)
{
	pthread_mutex_lock(&view_lock);
	struct sp_view *cur = atomic_load(&live_view);
	struct sp_view *next = cur == &views[0] ? &views[1] : &views[0];
	sp_view_fill(next);
	atomic_store(&live_view, next);
	pthread_mutex_unlock(&view_lock);
}

const struct sp_view *sp_view_get(void)
{
	struct sp_view *v = atomic_load(&live_view);
	if (v)
		return v;
	view_publish();
	return atomic_load(&live_view);
}

void sp_view_refresh(void)
{
	atomic_store(&collapse_known, 0);
	view_publish();
}
