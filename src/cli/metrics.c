/* metrics.c - superpage export's metrics: the machine, pools, THP counters, processes, cgroups. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "export.h"
#include "prom.h"

#define KHUGEPAGED "/sys/kernel/mm/transparent_hugepage/khugepaged/"

int export_conf_init(struct export_conf *c, unsigned long top)
{
	static struct sp_system sys;
	int rc = sp_probe(&sys);

	memset(c, 0, sizeof *c);
	c->top = top;
	if (rc < 0)
		return rc;
	c->probed = true;
	c->n_sizes = sys.n_sizes;
	memcpy(c->sizes, sys.page_sizes, sizeof c->sizes);
	c->n_nodes = sys.n_nodes;
	for (int i = 0; i < sys.n_nodes; i++)
		c->nodes[i] = sys.nodes[i].node;
	return 0;
}

/* Which parts of a scrape could be read (superpage_scrape_success). */
enum part { PART_MEMINFO, PART_POOLS, PART_VMSTAT, PART_KHUGEPAGED, PART_PROCESSES,
	    PART_CGROUPS, PART_COUNT };
static const char *const part_names[PART_COUNT] = {
	"meminfo", "pools", "vmstat", "khugepaged", "processes", "cgroups",
};

/* ---------- the machine ---------- */

static bool machine(struct prom *p)
{
	struct sp_meminfo m;

	if (sp_meminfo_read(&m) < 0)
		return false;
	prom_family(p, "superpage_memory_bytes", "gauge", "Memory of the machine (MemTotal).");
	prom_u64(p, m.total, NULL);
	prom_family(p, "superpage_memory_available_bytes", "gauge",
		    "Memory available for new work without swapping (MemAvailable).");
	prom_u64(p, m.available, NULL);
	prom_family(p, "superpage_thp_bytes", "gauge",
		    "Memory on transparent huge pages mapped by a PMD, by kind (AnonHugePages, "
		    "ShmemPmdMapped, FilePmdMapped).");
	prom_u64(p, m.anon_thp, "kind", "anon", NULL);
	prom_u64(p, m.shmem_thp, "kind", "shmem", NULL);
	prom_u64(p, m.file_thp, "kind", "file", NULL);
	prom_family(p, "superpage_hugetlb_bytes", "gauge",
		    "Memory of every hugetlb pool, pages in use or free (Hugetlb).");
	prom_u64(p, m.hugetlb, NULL);
	prom_family(p, "superpage_hugetlb_used_bytes", "gauge",
		    "Memory of hugetlb pages in use, every page size.");
	prom_u64(p, m.hugetlb_used, NULL);

	/* In use: what is not available, less the pool's free pages (which MemAvailable
	 * does not count, but which hold nothing). */
	uint64_t huge = m.anon_thp + m.shmem_thp + m.file_thp + m.hugetlb_used;
	uint64_t used = m.total > m.available ? m.total - m.available : 0;
	uint64_t pool_free = m.hugetlb - (m.hugetlb_used < m.hugetlb ? m.hugetlb_used : m.hugetlb);
	used = used > pool_free ? used - pool_free : 0;
	double ratio = used ? (double)huge / (double)used : 0.0;
	prom_family(p, "superpage_machine_huge_ratio", "gauge",
		    "Share of the memory in use on huge pages: THP and hugetlb pages in use over "
		    "MemTotal - MemAvailable - free hugetlb pages (0 to 1).");
	prom_double(p, ratio > 1 ? 1.0 : ratio, NULL);
	return true;
}

/* ---------- pools ---------- */

static void pool_samples(struct prom *p, const struct sp_pool *pool, const char *size,
			 const char *node)
{
	prom_u64(p, (uint64_t)pool->total, "size", size, "node", node, "state", "total", NULL);
	prom_u64(p, (uint64_t)pool->free, "size", size, "node", node, "state", "free", NULL);
	if (pool->reserved >= 0)
		prom_u64(p, (uint64_t)pool->reserved, "size", size, "node", node, "state",
			 "reserved", NULL);
	prom_u64(p, (uint64_t)pool->surplus, "size", size, "node", node, "state", "surplus", NULL);
}

static bool pools(struct prom *p, const struct export_conf *c)
{
	struct sp_pool all[SP_MAX_PAGE_SIZES];
	char size[16], node[16];
	bool ok = true;

	if (!c->n_sizes)
		return c->probed;
	prom_family(p, "superpage_pool_pages", "gauge",
		    "Pages of a hugetlb pool by page size, NUMA node (all: the system-wide "
		    "counts) and state (reserved: system-wide only).");
	for (int i = 0; i < c->n_sizes; i++) {
		cli_page(c->sizes[i], size, sizeof size);
		if (sp_pool_get(c->sizes[i], -1, &all[i]) < 0) {
			all[i].overcommit = -1;
			ok = false;
			continue;
		}
		pool_samples(p, &all[i], size, "all");
		for (int n = 0; n < c->n_nodes; n++) {
			struct sp_pool one;

			if (sp_pool_get(c->sizes[i], c->nodes[n], &one) < 0)
				continue;
			snprintf(node, sizeof node, "%d", c->nodes[n]);
			pool_samples(p, &one, size, node);
		}
	}
	prom_family(p, "superpage_pool_overcommit_pages", "gauge",
		    "Surplus pages a hugetlb pool may add on demand (nr_overcommit_hugepages).");
	for (int i = 0; i < c->n_sizes; i++) {
		if (all[i].overcommit < 0)
			continue;
		cli_page(c->sizes[i], size, sizeof size);
		prom_u64(p, (uint64_t)all[i].overcommit, "size", size, NULL);
	}
	return ok;
}

/* ---------- counters node_exporter leaves out ---------- */

/* Every thp_* line of /proc/vmstat: events counted since boot. */
static bool vmstat(struct prom *p)
{
	FILE *f = fopen("/proc/vmstat", "re");
	char line[256], name[128];
	unsigned long long v;
	bool head = false;

	if (!f)
		return false;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "thp_", 4) || sscanf(line, "%127s %llu", name, &v) != 2)
			continue;
		if (!head)
			prom_family(p, "superpage_vmstat_thp_total", "counter",
				    "Transparent huge page events since boot, from the thp_* "
				    "lines of /proc/vmstat (event: the name after thp_).");
		head = true;
		prom_u64(p, v, "event", name + 4, NULL);
	}
	fclose(f);
	return head;
}

static bool read_counter(const char *path, uint64_t *out)
{
	FILE *f = fopen(path, "re");
	unsigned long long v;
	bool ok;

	if (!f)
		return false;
	ok = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	if (ok)
		*out = v;
	return ok;
}

/* Read here at each scrape, not through sp_probe (see export_conf_init). */
static bool khugepaged(struct prom *p)
{
	uint64_t scans, collapsed;

	if (!read_counter(KHUGEPAGED "full_scans", &scans) ||
	    !read_counter(KHUGEPAGED "pages_collapsed", &collapsed))
		return false;
	prom_family(p, "superpage_khugepaged_full_scans_total", "counter",
		    "Full scans of every advised mapping khugepaged has made.");
	prom_u64(p, scans, NULL);
	prom_family(p, "superpage_khugepaged_pages_collapsed_total", "counter",
		    "Huge pages khugepaged has made by collapsing base pages.");
	prom_u64(p, collapsed, NULL);
	return true;
}

/* ---------- processes ---------- */

enum proc_state { ST_READ, ST_GONE, ST_DENIED, ST_EMPTY, ST_ERROR, ST_COUNT };
static const char *const state_names[ST_COUNT] = { "read", "gone", "denied", "empty", "error" };

struct procs {
	struct sp_proc *v;          /* those read */
	size_t n;
	struct sp_proc **shown;     /* those with series: the top and those under run */
	size_t n_shown;
	uint64_t states[ST_COUNT];
};

/* What came of sp_proc_read (-ENODATA: nothing mapped, a kernel thread or a zombie). */
static enum proc_state state_of(int rc)
{
	if (rc == 0)
		return ST_READ;
	if (rc == -ESRCH)
		return ST_GONE;
	if (rc == -ENODATA)
		return ST_EMPTY;
	if (rc == -EACCES || rc == -EPERM)
		return ST_DENIED;
	return ST_ERROR;
}

static int by_huge(const void *a, const void *b)
{
	const struct sp_proc *x = *(struct sp_proc *const *)a, *y = *(struct sp_proc *const *)b;

	if (x->huge_bytes != y->huge_bytes)
		return x->huge_bytes < y->huge_bytes ? 1 : -1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Reads every process; picks the top by huge bytes (those with some) and every one
 * under superpage run. false if /proc could not be listed. */
static bool procs_read(struct procs *ps, unsigned long top)
{
	pid_t *pids;
	long n = sp_pids(&pids);

	memset(ps, 0, sizeof *ps);
	if (n < 0)
		return false;
	ps->v = calloc((size_t)n + 1, sizeof *ps->v);
	ps->shown = calloc((size_t)n + 1, sizeof *ps->shown);
	if (!ps->v || !ps->shown) {
		free(pids);
		return false;
	}
	for (long i = 0; i < n; i++) {
		int rc = sp_proc_read(pids[i], SP_SCAN_AUTO, &ps->v[ps->n]);
		enum proc_state st = state_of(rc);

		ps->states[st]++;
		if (st == ST_READ)
			ps->shown[ps->n_shown++] = &ps->v[ps->n++];
	}
	free(pids);
	qsort(ps->shown, ps->n_shown, sizeof *ps->shown, by_huge);
	/* Keep the first top with huge pages, and after them those under run. */
	size_t kept = 0;
	for (size_t i = 0; i < ps->n_shown; i++) {
		struct sp_proc *q = ps->shown[i];

		if ((kept < top && q->huge_bytes) || q->account_rc == 0)
			ps->shown[kept++] = q;
	}
	ps->n_shown = kept;
	return true;
}

static void procs_free(struct procs *ps)
{
	free(ps->v);
	free(ps->shown);
}

static void process_series(struct prom *p, const struct procs *ps)
{
	char pid[16];

	prom_family(p, "superpage_process_resident_bytes", "gauge",
		    "Resident memory of a process, hugetlb included (the top processes by "
		    "huge bytes, and every process under superpage run).");
	for (size_t i = 0; i < ps->n_shown; i++) {
		snprintf(pid, sizeof pid, "%d", (int)ps->shown[i]->pid);
		prom_u64(p, ps->shown[i]->rss_bytes, "pid", pid, "comm", ps->shown[i]->comm, NULL);
	}
	prom_family(p, "superpage_process_huge_bytes", "gauge",
		    "Memory of a process on huge pages: THP mapped by a PMD, and hugetlb.");
	for (size_t i = 0; i < ps->n_shown; i++) {
		snprintf(pid, sizeof pid, "%d", (int)ps->shown[i]->pid);
		prom_u64(p, ps->shown[i]->huge_bytes, "pid", pid, "comm", ps->shown[i]->comm, NULL);
	}
	prom_family(p, "superpage_process_falls_total", "counter",
		    "Rungs of the fallback ladder a process under superpage run asked for and "
		    "did not get, by reason.");
	for (size_t i = 0; i < ps->n_shown; i++) {
		const struct sp_proc *q = ps->shown[i];

		if (q->account_rc != 0)
			continue;
		snprintf(pid, sizeof pid, "%d", (int)q->pid);
		for (int f = 0; f < SP_FALL_COUNT; f++)
			prom_u64(p, q->account.falls_by[f], "pid", pid, "comm", q->comm, "reason",
				 sp_fall_name((enum sp_fall)f), NULL);
	}
}

/* ---------- cgroups ---------- */

static bool cgroups(struct prom *p)
{
	struct sp_cgroup *cg;
	long n = sp_cgroups_read(&cg);
	char size[16];

	if (n < 0)
		return false;
	prom_family(p, "superpage_cgroup_memory_bytes", "gauge",
		    "Memory of a memory cgroup and its descendants: anon + file + hugetlb.");
	for (long i = 0; i < n; i++)
		prom_u64(p, sp_cgroup_bytes(&cg[i]), "cgroup", cg[i].path, NULL);
	prom_family(p, "superpage_cgroup_huge_bytes", "gauge",
		    "Memory of a memory cgroup and its descendants on huge pages.");
	for (long i = 0; i < n; i++)
		prom_u64(p, sp_cgroup_huge(&cg[i]), "cgroup", cg[i].path, NULL);
	prom_family(p, "superpage_cgroup_thp_bytes", "gauge",
		    "Memory of a memory cgroup on transparent huge pages, by kind (cgroup v1 "
		    "tells anon only).");
	for (long i = 0; i < n; i++) {
		prom_u64(p, cg[i].anon_thp, "cgroup", cg[i].path, "kind", "anon", NULL);
		if (cg[i].version < 2)
			continue;
		prom_u64(p, cg[i].file_thp, "cgroup", cg[i].path, "kind", "file", NULL);
		prom_u64(p, cg[i].shmem_thp, "cgroup", cg[i].path, "kind", "shmem", NULL);
	}
	prom_family(p, "superpage_cgroup_hugetlb_bytes", "gauge",
		    "Hugetlb memory charged to a cgroup, by page size (where the hugetlb "
		    "controller is mounted).");
	for (long i = 0; i < n; i++) {
		if (!cg[i].hugetlb_known)
			continue;
		for (int k = 0; k < SP_PROC_HUGETLB_SIZES; k++) {
			if (!cg[i].hugetlb[k].page_size)
				continue;
			cli_page(cg[i].hugetlb[k].page_size, size, sizeof size);
			prom_u64(p, cg[i].hugetlb[k].bytes, "cgroup", cg[i].path, "size", size, NULL);
		}
	}
	free(cg);
	return true;
}

/* ---------- one scrape ---------- */

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

void metrics_write(FILE *f, const struct export_conf *c)
{
	struct timespec t0;
	struct prom p;
	struct procs ps;
	bool ok[PART_COUNT];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	prom_init(&p, f);
	prom_family(&p, "superpage_build_info", "gauge", "The superpage version that exports.");
	prom_u64(&p, 1, "version", sp_version(), NULL);
	ok[PART_MEMINFO] = machine(&p);
	ok[PART_POOLS] = pools(&p, c);
	ok[PART_VMSTAT] = vmstat(&p);
	ok[PART_KHUGEPAGED] = khugepaged(&p);
	ok[PART_PROCESSES] = procs_read(&ps, c->top);
	if (ok[PART_PROCESSES])
		process_series(&p, &ps);
	procs_free(&ps);
	ok[PART_CGROUPS] = cgroups(&p);

	prom_family(&p, "superpage_scrape_processes", "gauge",
		    "Processes of this scrape by what came of reading them (empty: nothing "
		    "mapped, a kernel thread or a zombie; gone: ended meanwhile; denied: not "
		    "allowed).");
	for (int s = 0; s < ST_COUNT; s++)
		prom_u64(&p, ps.states[s], "state", state_names[s], NULL);
	prom_family(&p, "superpage_scrape_success", "gauge",
		    "1 if this part of the scrape could be read, else 0 (its series are then "
		    "missing).");
	for (int i = 0; i < PART_COUNT; i++)
		prom_u64(&p, ok[i], "part", part_names[i], NULL);
	prom_family(&p, "superpage_scrape_seconds", "gauge", "How long this scrape took.");
	prom_double(&p, seconds_since(&t0), NULL);
}
