/* promote_scan.c - reads a process for promote: its mappings, which 2 MiB ranges could be collapsed, how full and how hot each is. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "promote.h"

void pr_skip(struct sp_promote_result *r, uint64_t start, uint64_t end, uint64_t resident,
	     enum sp_promote_why why, enum sp_region region, int err)
{
	r->not_done[why] += resident;
	if (r->n_skips) {
		struct sp_promote_skip *k = &r->skips[r->n_skips - 1];
		if (k->end == start && k->why == why && k->region == region && k->err == err) {
			k->end = end;
			k->resident += resident;
			return;
		}
	}
	if (r->n_skips == SP_PROMOTE_MAX_SKIPS) {
		r->skips_dropped++;
		return;
	}
	r->skips[r->n_skips++] = (struct sp_promote_skip){ start, end, resident, why, region, err };
}

static int ranges_grow(struct pr_target *t)
{
	size_t cap = t->cap ? t->cap * 2 : 4096;
	void *p;
	int r = sp_os->mmap(NULL, cap * sizeof *t->ranges, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &p);
	if (r < 0)
		return r;
	if (t->n)
		memcpy(p, t->ranges, t->n * sizeof *t->ranges);
	if (t->cap)
		sp_os->munmap(t->ranges, t->cap * sizeof *t->ranges);
	t->ranges = p;
	t->cap = cap;
	return 0;
}

void pr_target_free(struct pr_target *t)
{
	if (t->cap)
		sp_os->munmap(t->ranges, t->cap * sizeof *t->ranges);
	t->ranges = NULL;
	t->n = t->cap = 0;
}

/* The reason a whole mapping is no candidate, or -1 if its aligned 2 MiB are. */
static int mapping_why(const struct pr_target *t, const struct sp_smaps_map *m, uint64_t lo,
		       uint64_t hi)
{
	if (m->kernel_page > 4096 || m->region == SP_REGION_OTHER)
		return SP_PROMOTE_SPECIAL;
	if (m->perms[3] == 's')
		return SP_PROMOTE_SHARED;
	if (m->file)
		return SP_PROMOTE_FILE;
	if (m->nh)
		return SP_PROMOTE_NOHUGEPAGE;
	if (t->thp_off)
		return SP_PROMOTE_THP_OFF;
	if (lo >= hi)
		return SP_PROMOTE_SMALL;
	return -1;
}

static bool avoided(const struct sp_promote_options *o, uint64_t start, int *why)
{
	for (int i = 0; i < o->n_avoid; i++)
		if (o->avoid[i].start <= start && start + SP_2M_SIZE <= o->avoid[i].end) {
			*why = o->avoid[i].why;
			return true;
		}
	return false;
}

/* One mapping of the first read: its usage, and its ranges or its skip. */
static int scan_one(const struct sp_smaps_map *m, void *arg)
{
	struct pr_target *t = arg;
	struct sp_promote_result *r = t->r;
	uint64_t huge = m->anon_huge + m->shmem_pmd + m->file_pmd + m->priv_hugetlb +
			m->shared_hugetlb;
	uint64_t bytes = m->rss + m->priv_hugetlb + m->shared_hugetlb;
	uint64_t lo = (m->start + SP_2M_SIZE - 1) & ~(SP_2M_SIZE - 1);
	uint64_t hi = m->end & ~(SP_2M_SIZE - 1);
	uint64_t small = bytes > huge ? bytes - huge : 0;

	r->rss_before += bytes;
	r->huge_before += huge;
	r->region[m->region].bytes += bytes;
	r->region[m->region].huge_before += huge;
	int why = mapping_why(t, m, lo, hi);
	if (why >= 0) {
		if (small)
			pr_skip(r, m->start, m->end, small, (enum sp_promote_why)why, m->region, 0);
		return 0;
	}
	/* The mapping's average, for a kernel without PAGEMAP_SCAN (per range below). */
	uint64_t nr = (hi - lo) / SP_2M_SIZE;
	uint64_t avg = m->rss > m->anon_huge ? (m->rss - m->anon_huge) / 4096 / nr : 0;
	for (uint64_t a = lo; a < hi; a += SP_2M_SIZE) {
		if (t->n == t->cap) {
			int e = ranges_grow(t);
			if (e < 0)
				return e;
		}
		struct pr_range *g = &t->ranges[t->n++];
		*g = (struct pr_range){ .start = a, .map_start = m->start, .map_end = m->end,
					.present = (uint16_t)(avg > PR_PAGES ? PR_PAGES : avg),
					.region = (uint8_t)m->region };
		int w;
		if (t->o->n_avoid && avoided(t->o, a, &w)) {
			g->outcome = PR_SKIPPED;
			g->why = (uint8_t)w;
		}
	}
	return 0;
}

/* Residency per range from PAGEMAP_SCAN: present base pages not huge and not the
 * zero page. -ENOTTY (or -EINVAL) if the kernel has no PAGEMAP_SCAN. */
static int residency(struct pr_target *t)
{
	struct pr_region vec[512];
	int fd = sp_open_proc(t->pid, "pagemap", O_RDONLY);
	if (fd < 0)
		return fd;
	int ret = 0;
	for (size_t i = 0; i < t->n && ret >= 0;) {
		/* A run of ranges next to each other: one walk. */
		size_t j = i + 1;
		while (j < t->n && t->ranges[j].start == t->ranges[j - 1].start + SP_2M_SIZE)
			j++;
		bool zeroed = false; /* the averages stand until the kernel answers */
		uint64_t at = t->ranges[i].start, end = t->ranges[j - 1].start + SP_2M_SIZE;
		while (at < end) {
			struct pr_scan_arg a = {
				.size = sizeof a, .start = at, .end = end,
				.vec = (uint64_t)(uintptr_t)vec, .vec_len = 512,
				.category_mask = PR_PAGE_IS_PRESENT,
				.return_mask = PR_PAGE_IS_PRESENT | PR_PAGE_IS_HUGE | PR_PAGE_IS_PFNZERO,
			};
			int n = sp_os->ioctl(fd, PR_PAGEMAP_SCAN, &a);
			if (n < 0) {
				ret = n;
				break;
			}
			for (size_t k = i; k < j && !zeroed; k++)
				t->ranges[k].present = 0;
			zeroed = true;
			for (int v = 0; v < n; v++) {
				if (vec[v].categories & (PR_PAGE_IS_HUGE | PR_PAGE_IS_PFNZERO))
					continue;
				for (uint64_t p = vec[v].start; p < vec[v].end;) {
					uint64_t unit = p & ~(SP_2M_SIZE - 1), stop = unit + SP_2M_SIZE;
					if (stop > vec[v].end)
						stop = vec[v].end;
					size_t k = i + (unit - t->ranges[i].start) / SP_2M_SIZE;
					if (unit >= t->ranges[i].start && k < j)
						t->ranges[k].present += (uint16_t)((stop - p) / 4096);
					p = stop;
				}
			}
			if (a.walk_end <= at)
				break;
			at = a.walk_end;
		}
		i = j;
	}
	sp_os->close(fd);
	return ret;
}

/* The range whose start is a (ranges are in address order after the scan). */
static struct pr_range *range_at(struct pr_target *t, uint64_t a)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->ranges[mid].start < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->n && t->ranges[lo].start == a ? &t->ranges[lo] : NULL;
}

static int hot_one(const struct sp_smaps_map *m, void *arg)
{
	struct pr_target *t = arg;
	if (!m->rss)
		return 0;
	uint64_t share = m->referenced * 1000 / m->rss;
	uint64_t lo = (m->start + SP_2M_SIZE - 1) & ~(SP_2M_SIZE - 1);
	for (uint64_t a = lo; a + SP_2M_SIZE <= m->end; a += SP_2M_SIZE) {
		struct pr_range *g = range_at(t, a);
		if (g)
			g->hot = (uint16_t)(share > 1000 ? 1000 : share);
	}
	return 0;
}

/* --hot: the accessed bits cleared (clear_refs 1), accesses gathered for hot_ns, read
 * back per mapping (smaps Referenced). No finer readback exists on a kernel without
 * idle page tracking or soft-dirty: PAGEMAP_SCAN tells no access. */
static int hotness(struct pr_target *t)
{
	int fd = sp_open_proc(t->pid, "clear_refs", O_WRONLY);
	if (fd < 0)
		return fd;
	ssize_t w = sp_os->write(fd, "1", 1);
	sp_os->close(fd);
	if (w < 0)
		return (int)w;
	uint64_t t0 = sp_os->now_ns();
	sp_os->sleep_ns(t->o->hot_ns);
	t->r->hot_ns = sp_os->now_ns() - t0;
	fd = sp_open_proc(t->pid, "smaps", O_RDONLY);
	if (fd < 0)
		return fd;
	int r = sp_smaps_walk(fd, NULL, hot_one, t);
	sp_os->close(fd);
	return r;
}

/* THP_enabled: 0 in /proc/PID/status: the process set PR_SET_THP_DISABLE. */
static bool thp_off(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (sp_read_file(path, buf, sizeof buf) <= 0)
		return false;
	const char *s = strstr(buf, "\nTHP_enabled:");
	return s && strtol(s + 13, NULL, 10) == 0;
}

static int min_present(const struct sp_promote_options *o)
{
	long none;
	if (o->min_resident_pages > 0)
		return o->min_resident_pages > PR_PAGES ? PR_PAGES : o->min_resident_pages;
	if (sp_read_long("/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none", &none) < 0 ||
	    none < 0 || none > PR_PAGES - 1)
		none = PR_PAGES - 1;
	return PR_PAGES - (int)none;
}

int pr_scan(struct pr_target *t)
{
	int fd = sp_open_proc(t->pid, "smaps", O_RDONLY);
	if (fd < 0)
		return fd;
	t->thp_off = thp_off(t->pid);
	t->min_present = min_present(t->o);
	struct sp_threads th;
	sp_threads_read(t->pid, &th);
	int r = sp_smaps_walk(fd, &th, scan_one, t);
	sp_os->close(fd);
	if (r < 0)
		return r;
	int rr = t->n ? residency(t) : 0;
	t->r->rank = rr < 0 ? SP_RANK_MAPPING : SP_RANK_RESIDENT;
	if (rr == -ESRCH)
		return rr;
	if (t->o->hot && t->n && hotness(t) == 0)
		t->r->rank = SP_RANK_HOT;
	return 0;
}

static int after_one(const struct sp_smaps_map *m, void *arg)
{
	struct sp_promote_result *r = arg;
	uint64_t huge = m->anon_huge + m->shmem_pmd + m->file_pmd + m->priv_hugetlb +
			m->shared_hugetlb;
	r->rss_after += m->rss + m->priv_hugetlb + m->shared_hugetlb;
	r->huge_after += huge;
	r->region[m->region].huge_after += huge;
	return 0;
}

int pr_scan_after(struct pr_target *t)
{
	int fd = sp_open_proc(t->pid, "smaps", O_RDONLY);
	if (fd < 0)
		return fd;
	struct sp_threads th;
	sp_threads_read(t->pid, &th);
	int r = sp_smaps_walk(fd, &th, after_one, t->r);
	sp_os->close(fd);
	return r;
}

struct still {
	const struct pr_range *g;
	int found;
};

static int still_one(const struct sp_smaps_map *m, void *arg)
{
	struct still *s = arg;
	if (m->start <= s->g->start && s->g->start < m->end) {
		s->found = m->start == s->g->map_start && m->end == s->g->map_end && !m->file &&
			   m->perms[3] == 'p';
		return 1;
	}
	return 0;
}

int pr_still_mapped(pid_t pid, const struct pr_range *g)
{
	int fd = sp_open_proc(pid, "maps", O_RDONLY);
	if (fd < 0)
		return fd;
	struct still s = { g, 0 };
	int r = sp_smaps_walk(fd, NULL, still_one, &s);
	sp_os->close(fd);
	return r < 0 ? r : s.found;
}

int pr_huge_now(pid_t pid, const struct pr_range *g, size_t k, bool *huge)
{
	struct pr_region vec[64];
	int fd = sp_open_proc(pid, "pagemap", O_RDONLY);
	if (fd < 0)
		return fd;
	for (size_t i = 0; i < k; i++)
		huge[i] = false;
	uint64_t at = g[0].start, end = g[0].start + k * SP_2M_SIZE;
	int ret = 0;
	while (at < end) {
		struct pr_scan_arg a = {
			.size = sizeof a, .start = at, .end = end,
			.vec = (uint64_t)(uintptr_t)vec, .vec_len = 64,
			.category_mask = PR_PAGE_IS_HUGE, .return_mask = PR_PAGE_IS_HUGE,
		};
		int n = sp_os->ioctl(fd, PR_PAGEMAP_SCAN, &a);
		if (n < 0) {
			ret = n;
			break;
		}
		for (int v = 0; v < n; v++)
			for (uint64_t p = vec[v].start & ~(SP_2M_SIZE - 1); p < vec[v].end; p += SP_2M_SIZE)
				if (p >= g[0].start && p < end)
					huge[(p - g[0].start) / SP_2M_SIZE] = true;
		if (a.walk_end <= at)
			break;
		at = a.walk_end;
	}
	sp_os->close(fd);
	return ret;
}
