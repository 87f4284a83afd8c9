/* status.c - superpage status: what this machine offers for huge pages, and what to fix. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

#define SZ_2M (2ull << 20)
#define SZ_1G (1ull << 30)
#define THP_SYSFS "/sys/kernel/mm/transparent_hugepage"

void usage_status(void)
{
	fputs("usage: superpage status [--json]\n"
	      "\n"
	      "Shows the huge page sizes, the hugetlb pools (system-wide and per NUMA node),\n"
	      "the transparent huge page modes (with mTHP sizes and khugepaged), hugetlbfs\n"
	      "mounts and kernel features, then a hint per backing (thp, 2m, 1g, 4k): is it\n"
	      "usable now, and if not, what to do. It says whether the pools recorded for\n"
	      "every boot (superpage pool --persist, in $SUPERPAGE_POOLS_CONF or\n"
	      "" POOLS_CONF_DEFAULT ") match the running ones.\n"
	      "\n"
	      "  --json   print one JSON object instead, for scripts\n",
	      stdout);
}

static const struct sp_pool *pool_of(const struct sp_system *s, uint64_t size)
{
	for (int i = 0; i < s->n_sizes; i++)
		if (s->pools[i].page_size == size)
			return &s->pools[i];
	return NULL;
}

static const char *yes_no(bool b) { return b ? "yes" : "no"; }

/* ---------- the pools recorded for every boot ---------- */

struct persisted {
	const char *path;
	struct pools_conf conf;
	int rc;                   /* pools_conf_read's */
	char err[PATH_MAX + 256];
};

static void persisted_read(struct persisted *p)
{
	p->path = pools_conf_path(NULL);
	p->rc = pools_conf_read(p->path, &p->conf, p->err, sizeof p->err);
}

/* Every recorded pool has its count now (true when none is recorded). */
static bool persisted_match(const struct persisted *p, const struct sp_system *s)
{
	if (p->rc < 0)
		return false;
	for (int i = 0; i < p->conf.n; i++)
		if (pools_conf_running(s, &p->conf.e[i]) != p->conf.e[i].count)
			return false;
	return true;
}

/* ---------- hints ---------- */

/* How to run a command that needs root, for whoever reads the hint. */
static const char *sudo(void) { return geteuid() == 0 ? "" : "sudo "; }

static void echo_hint(char *buf, size_t len, const char *what, const char *value, const char *file)
{
	if (geteuid() == 0)
		snprintf(buf, len, "%s: echo %s > %s", what, value, file);
	else
		snprintf(buf, len, "%s: echo %s | sudo tee %s", what, value, file);
}

static void hint_thp(const struct sp_system *s, char *buf, size_t len)
{
	const struct sp_thp *t = &s->thp;
	const char *mode = sp_thp_pmd_mode(t);
	char pmd[32], file[128], what[96];

	if (!t->present) {
		snprintf(buf, len, "this kernel has no transparent huge pages");
		return;
	}
	cli_page(t->pmd_size, pmd, sizeof pmd);
	if (!strcmp(t->enabled, "never") && mode == t->enabled) {
		echo_hint(buf, len, "THP is never", "madvise", THP_SYSFS "/enabled");
		return;
	}
	if (!strcmp(mode, "never")) {
		snprintf(file, sizeof file, THP_SYSFS "/hugepages-%llukB/enabled",
			 (unsigned long long)(t->pmd_size >> 10));
		snprintf(what, sizeof what, "%s THP is never", pmd);
		echo_hint(buf, len, what, "inherit", file);
		return;
	}
	if (s->features.thp_disabled_here) {
		snprintf(buf, len, "THP is %s, but disabled for programs started from here "
			 "(PR_SET_THP_DISABLE, inherited from a parent process)", mode);
		return;
	}
	if (!strcmp(t->defrag, "never")) {
		snprintf(buf, len, "usable now (THP is %s; defrag is never, so faults get huge "
			 "pages only while free memory is unfragmented)", mode);
		return;
	}
	snprintf(buf, len, "usable now (THP is %s, defrag %s)", mode, t->defrag);
}

/* A hugetlb backing: size and the count a first pool of it would get. */
static void hint_hugetlb(const struct sp_system *s, uint64_t size, long suggest, bool mmap_ok,
			 char *buf, size_t len)
{
	const struct sp_pool *p = pool_of(s, size);
	char human[32], page[32], opt[48], amount[32];
	const char *note = size >= SZ_1G ?
		" (1 GiB pages need unfragmented memory: set them early)" : "";
	long avail, extra;

	cli_units(size, human, sizeof human);
	cli_page(size, page, sizeof page);
	if (!p) {
		snprintf(buf, len, "this kernel has no %s hugetlb pages", human);
		return;
	}
	if (size == SZ_2M)
		opt[0] = 0;
	else
		snprintf(opt, sizeof opt, "--size %s ", page);
	if (p->total <= 0 && p->overcommit <= 0) {
		snprintf(buf, len, "no %s pool: %ssuperpage pool %s%ld%s", human, sudo(), opt,
			 suggest, note);
		return;
	}
	/* Reserved pages are promised to mappings already made: not free for a new one. */
	avail = p->free - (p->reserved > 0 ? p->reserved : 0);
	extra = p->overcommit > p->surplus ? p->overcommit - p->surplus : 0;
	if (avail <= 0 && extra <= 0) {
		snprintf(buf, len, "the %s pool is all in use (%ld %s, %ld free, %ld reserved): "
			 "%ssuperpage pool %s%ld%s", human, p->total, cli_pages(p->total), p->free,
			 p->reserved, sudo(), opt, p->total + suggest, note);
		return;
	}
	if (!mmap_ok) {
		snprintf(buf, len, "the %s pool has pages, but this kernel refuses "
			 "mmap(MAP_HUGETLB) of %s pages", human, page);
		return;
	}
	cli_human((uint64_t)(avail > 0 ? avail : 0) * size, amount, sizeof amount);
	if (extra > 0)
		snprintf(buf, len, "usable now: %ld free %s (%s), up to %ld more on demand "
			 "(overcommit)", avail > 0 ? avail : 0, cli_pages(avail), amount, extra);
	else
		snprintf(buf, len, "usable now: %ld free %s (%s)", avail, cli_pages(avail), amount);
}

static void print_hints(const struct sp_system *s)
{
	char buf[512];

	puts("hints:");
	hint_thp(s, buf, sizeof buf);
	printf("  thp: %s\n", buf);
	hint_hugetlb(s, SZ_2M, 512, s->features.map_huge_2mb, buf, sizeof buf);
	printf("  2m:  %s\n", buf);
	hint_hugetlb(s, SZ_1G, 4, s->features.map_huge_1gb, buf, sizeof buf);
	printf("  1g:  %s\n", buf);
	puts("  4k:  always available");
}

/* ---------- human output ---------- */

/* A count, or "-" where sysfs has none (-1). */
static const char *count_or_dash(long v, char *buf, size_t len)
{
	if (v < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%ld", v);
	return buf;
}

static void print_pool_row(const struct sp_pool *p, const char *where)
{
	char page[32], mem[32], label[48], resv[24], over[24];

	cli_page(p->page_size, page, sizeof page);
	snprintf(label, sizeof label, "%s %s", page, where);
	count_or_dash(p->reserved, resv, sizeof resv);
	count_or_dash(p->overcommit, over, sizeof over);
	cli_human((uint64_t)(p->total > 0 ? p->total : 0) * p->page_size, mem, sizeof mem);
	printf("  %-12s %9ld %9ld %9s %9ld %11s %11s\n", label, p->total, p->free, resv,
	       p->surplus, over, mem);
}

static void print_pools(const struct sp_system *s)
{
	char where[24];

	if (s->n_sizes == 0) {
		puts("hugetlb pools: none (this kernel has no hugetlb page sizes)");
		return;
	}
	printf("hugetlb pools:\n  %-12s %9s %9s %9s %9s %11s %11s\n", "size", "total", "free",
	       "reserved", "surplus", "overcommit", "memory");
	for (int i = 0; i < s->n_sizes; i++)
		print_pool_row(&s->pools[i], "all");
	for (int n = 0; n < s->n_nodes; n++) {
		snprintf(where, sizeof where, "node %d", s->nodes[n].node);
		for (int i = 0; i < s->nodes[n].n_pools; i++)
			print_pool_row(&s->nodes[n].pools[i], where);
	}
}

static void print_persisted(const struct persisted *p, const struct sp_system *s)
{
	char line[64], page[32];

	if (p->rc < 0) {
		printf("persisted pools (%s): cannot be used: %s\n", p->path, p->err);
		return;
	}
	if (p->conf.n == 0) {
		printf("persisted pools (%s): none\n", p->path);
		return;
	}
	printf("persisted pools (%s):\n", p->path);
	for (int i = 0; i < p->conf.n; i++) {
		const struct pools_conf_entry *e = &p->conf.e[i];
		long running = pools_conf_running(s, e);

		pools_conf_line(e, line, sizeof line);
		if (running < 0 && e->node >= 0)
			printf("  %s: no %s pool on node %d on this machine, differs\n", line,
			       cli_page(e->page_size, page, sizeof page), e->node);
		else if (running < 0)
			printf("  %s: no %s pool on this machine, differs\n", line,
			       cli_page(e->page_size, page, sizeof page));
		else
			printf("  %s: running %ld, %s\n", line, running,
			       running == e->count ? "matches" : "differs");
	}
	if (!persisted_match(p, s))
		printf("  (%ssuperpage pool --apply sets them as recorded)\n", sudo());
}

static int by_size(const void *a, const void *b)
{
	const struct sp_mthp *x = a, *y = b;

	return (x->size > y->size) - (x->size < y->size);
}

/* mTHP sizes grouped by mode, smallest first: "2M inherit; 16K 32K 64K never". */
static void print_mthp(const struct sp_thp *t)
{
	struct sp_mthp m[SP_MAX_MTHP];
	bool done[SP_MAX_MTHP] = { false };
	int n = t->n_mthp < SP_MAX_MTHP ? t->n_mthp : SP_MAX_MTHP;
	char page[32];
	int groups = 0;

	if (n <= 0) {
		puts("  mTHP: no per-size controls");
		return;
	}
	memcpy(m, t->mthp, (size_t)n * sizeof m[0]);
	qsort(m, (size_t)n, sizeof m[0], by_size);
	/* A size without an "enabled" file (the kernel has some, shmem-only) has no
	 * anonymous mode to show. */
	for (int i = 0; i < n; i++)
		done[i] = !m[i].enabled[0];
	fputs("  mTHP:", stdout);
	for (int i = 0; i < n; i++) {
		if (done[i])
			continue;
		fputs(groups++ ? ";" : "", stdout);
		for (int k = i; k < n; k++) {
			if (done[k] || strcmp(m[k].enabled, m[i].enabled))
				continue;
			done[k] = true;
			printf(" %s", cli_page(m[k].size, page, sizeof page));
		}
		printf(" %s", m[i].enabled);
	}
	puts(groups ? "" : " none with a mode");
}

static void print_thp(const struct sp_thp *t)
{
	const struct sp_khugepaged *k = &t->khugepaged;
	char pmd[32];

	if (!t->present) {
		puts("transparent huge pages: not in this kernel");
		return;
	}
	printf("transparent huge pages: enabled %s, defrag %s, shmem_enabled %s, PMD size %s\n",
	       t->enabled, t->defrag, t->shmem_enabled, cli_page(t->pmd_size, pmd, sizeof pmd));
	print_mthp(t);
	printf("  khugepaged: defrag %s, pages_to_scan %ld, scan_sleep %ld ms, alloc_sleep %ld ms,\n"
	       "    max_ptes_none %ld, max_ptes_swap %ld, max_ptes_shared %ld;"
	       " full_scans %ld, pages_collapsed %ld\n",
	       k->defrag[0] ? k->defrag : "?", k->pages_to_scan, k->scan_sleep_millisecs,
	       k->alloc_sleep_millisecs, k->max_ptes_none, k->max_ptes_swap, k->max_ptes_shared,
	       k->full_scans, k->pages_collapsed);
}

/* ---------- this process's cgroups, and the container it may run in ---------- */

struct here {
	struct cli_container ct;
	struct cli_cgroups cg;
	const char *blind[8];
	int n_blind;
};

static void here_read(struct here *h)
{
	cli_container_here(&h->ct);
	cli_cgroups_of(getpid(), &h->cg);
	if (h->ct.inside && !h->ct.id[0]) {
		char engine[32];

		cli_container_of_cgroup(h->cg.mem_path, engine, sizeof engine, h->ct.id, sizeof h->ct.id);
	}
	h->n_blind = cli_container_blind(&h->ct, &h->cg, h->blind, 8);
}

static void print_here(const struct here *h)
{
	const struct cli_container *c = &h->ct;

	if (c->inside) {
		printf("container: %s", c->engine[0] ? c->engine : "yes");
		if (c->name[0])
			printf(", name %s", c->name);
		if (c->id[0])
			printf(", id %.12s", c->id);
		printf(" (from %s)\n", c->how);
	}
	puts("limits of this process:");
	cli_cgroups_print(&h->cg, "  ");
	if (h->n_blind) {
		puts("not seen or not settable from inside the container:");
		for (int i = 0; i < h->n_blind; i++)
			printf("  %s\n", h->blind[i]);
	}
}

static void json_here(struct json *j, const struct here *h)
{
	const struct cli_container *c = &h->ct;

	json_key(j, "limits");
	cli_cgroups_json(j, &h->cg);
	json_key(j, "container");
	if (!c->inside) {
		json_null(j);
		return;
	}
	json_object_begin(j);
	json_key(j, "engine");
	json_string(j, c->engine);
	json_key(j, "name");
	json_string(j, c->name);
	json_key(j, "id");
	json_string(j, c->id);
	json_key(j, "detected_by");
	json_string(j, c->how);
	json_key(j, "sysfs_read_only");
	json_bool(j, c->sysfs_read_only);
	json_key(j, "pid_namespace");
	json_bool(j, c->pid_ns);
	json_key(j, "cannot_see");
	json_array_begin(j);
	for (int i = 0; i < h->n_blind; i++)
		json_string(j, h->blind[i]);
	json_array_end(j);
	json_object_end(j);
}

static void print_human(const struct sp_system *s, const struct persisted *pp, const struct here *h)
{
	const struct sp_features *f = &s->features;
	char page[32];

	printf("page sizes: %s (base)", cli_page(s->base_page_size, page, sizeof page));
	for (int i = 0; i < s->n_sizes; i++)
		printf(", %s", cli_page(s->page_sizes[i], page, sizeof page));
	if (s->default_huge_size)
		printf("; default huge page size %s",
		       cli_page(s->default_huge_size, page, sizeof page));
	puts("\n");
	print_pools(s);
	print_persisted(pp, s);
	putchar('\n');
	print_here(h);
	putchar('\n');
	print_thp(&s->thp);
	putchar('\n');
	if (s->n_mounts == 0) {
		puts("hugetlbfs mounts: none");
	} else {
		puts("hugetlbfs mounts:");
		for (int i = 0; i < s->n_mounts; i++)
			printf("  %s (%s pages)\n", s->mounts[i].path,
			       cli_page(s->mounts[i].page_size, page, sizeof page));
	}
	putchar('\n');
	printf("features:\n"
	       "  madv_collapse        %s\n"
	       "  madv_populate_write  %s\n"
	       "  map_huge_2mb         %s\n"
	       "  map_huge_1gb         %s\n"
	       "  memfd_hugetlb        %s\n"
	       "  thp_disable_prctl    %s\n",
	       yes_no(f->madv_collapse), yes_no(f->madv_populate_write), yes_no(f->map_huge_2mb),
	       yes_no(f->map_huge_1gb), yes_no(f->memfd_hugetlb), yes_no(f->thp_disable_prctl));
	putchar('\n');
	print_hints(s);
}

/* ---------- JSON output ---------- */

static void json_pool(struct json *j, const struct sp_pool *p)
{
	json_object_begin(j);
	json_key(j, "page_size");
	json_uint(j, p->page_size);
	json_key(j, "total");
	json_int(j, p->total);
	json_key(j, "free");
	json_int(j, p->free);
	/* Per-node pools have no reserved or overcommit count in sysfs: no key. */
	if (p->reserved >= 0) {
		json_key(j, "reserved");
		json_int(j, p->reserved);
	}
	json_key(j, "surplus");
	json_int(j, p->surplus);
	if (p->overcommit >= 0) {
		json_key(j, "overcommit");
		json_int(j, p->overcommit);
	}
	json_object_end(j);
}

static void json_thp(struct json *j, const struct sp_thp *t)
{
	const struct sp_khugepaged *k = &t->khugepaged;
	const struct {
		const char *name;
		long v;
	} nums[] = {
		{ "pages_to_scan", k->pages_to_scan },
		{ "scan_sleep_millisecs", k->scan_sleep_millisecs },
		{ "alloc_sleep_millisecs", k->alloc_sleep_millisecs },
		{ "max_ptes_none", k->max_ptes_none },
		{ "max_ptes_swap", k->max_ptes_swap },
		{ "max_ptes_shared", k->max_ptes_shared },
		{ "full_scans", k->full_scans },
		{ "pages_collapsed", k->pages_collapsed },
	};

	json_object_begin(j);
	json_key(j, "enabled");
	json_string(j, t->enabled);
	json_key(j, "defrag");
	json_string(j, t->defrag);
	json_key(j, "shmem_enabled");
	json_string(j, t->shmem_enabled);
	json_key(j, "present");
	json_bool(j, t->present);
	json_key(j, "pmd_size");
	json_uint(j, t->pmd_size);
	json_key(j, "mthp");
	json_array_begin(j);
	for (int i = 0; i < t->n_mthp && i < SP_MAX_MTHP; i++) {
		json_object_begin(j);
		json_key(j, "size");
		json_uint(j, t->mthp[i].size);
		json_key(j, "enabled");
		json_string(j, t->mthp[i].enabled);
		json_object_end(j);
	}
	json_array_end(j);
	json_key(j, "khugepaged");
	json_object_begin(j);
	json_key(j, "defrag");
	json_string(j, k->defrag);
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		json_key(j, nums[i].name);
		json_int(j, nums[i].v);
	}
	json_object_end(j);
	json_object_end(j);
}

static void json_persisted(struct json *j, const struct persisted *p, const struct sp_system *s)
{
	json_object_begin(j);
	json_key(j, "path");
	json_string(j, p->path);
	json_key(j, "present");
	json_bool(j, p->conf.present);
	json_key(j, "error");
	if (p->rc < 0)
		json_string(j, p->err);
	else
		json_null(j);
	json_key(j, "matches");
	json_bool(j, persisted_match(p, s));
	json_key(j, "pools");
	json_array_begin(j);
	for (int i = 0; i < p->conf.n && p->rc == 0; i++) {
		const struct pools_conf_entry *e = &p->conf.e[i];
		long running = pools_conf_running(s, e);

		json_object_begin(j);
		json_key(j, "page_size");
		json_uint(j, e->page_size);
		json_key(j, "node");
		if (e->node >= 0)
			json_int(j, e->node);
		else
			json_null(j);
		json_key(j, "count");
		json_int(j, e->count);
		json_key(j, "running");
		if (running >= 0)
			json_int(j, running);
		else
			json_null(j);
		json_key(j, "matches");
		json_bool(j, running == e->count);
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

static void print_json(const struct sp_system *s, const struct persisted *pp, const struct here *h)
{
	const struct sp_features *f = &s->features;
	const struct {
		const char *name;
		bool v;
	} feats[] = {
		{ "madv_collapse", f->madv_collapse },
		{ "map_huge_1gb", f->map_huge_1gb },
		{ "memfd_hugetlb", f->memfd_hugetlb },
		{ "map_huge_2mb", f->map_huge_2mb },
		{ "madv_populate_write", f->madv_populate_write },
		{ "thp_disable_prctl", f->thp_disable_prctl },
	};
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j);
	json_key(&j, "page_sizes");
	json_array_begin(&j);
	json_uint(&j, s->base_page_size);
	for (int i = 0; i < s->n_sizes; i++)
		json_uint(&j, s->page_sizes[i]);
	json_array_end(&j);
	json_key(&j, "pools");
	json_array_begin(&j);
	for (int i = 0; i < s->n_sizes; i++)
		json_pool(&j, &s->pools[i]);
	json_array_end(&j);
	json_key(&j, "thp");
	json_thp(&j, &s->thp);
	json_key(&j, "hugetlbfs_mounts");
	json_array_begin(&j);
	for (int i = 0; i < s->n_mounts; i++) {
		json_object_begin(&j);
		json_key(&j, "path");
		json_string(&j, s->mounts[i].path);
		json_key(&j, "page_size");
		json_uint(&j, s->mounts[i].page_size);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "features");
	json_object_begin(&j);
	for (size_t i = 0; i < sizeof feats / sizeof feats[0]; i++) {
		json_key(&j, feats[i].name);
		json_bool(&j, feats[i].v);
	}
	json_object_end(&j);
	json_key(&j, "nodes");
	json_array_begin(&j);
	for (int n = 0; n < s->n_nodes; n++) {
		json_object_begin(&j);
		json_key(&j, "node");
		json_int(&j, s->nodes[n].node);
		json_key(&j, "pools");
		json_array_begin(&j);
		for (int i = 0; i < s->nodes[n].n_pools; i++)
			json_pool(&j, &s->nodes[n].pools[i]);
		json_array_end(&j);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "base_page_size");
	json_uint(&j, s->base_page_size);
	json_key(&j, "default_huge_size");
	json_uint(&j, s->default_huge_size);
	json_key(&j, "persisted_pools");
	json_persisted(&j, pp, s);
	json_here(&j, h);
	json_object_end(&j);
	json_end(&j);
}

int cmd_status(int argc, char **argv)
{
	static struct sp_system sys;
	static struct persisted pp;
	static struct here h;
	bool as_json = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			as_json = true;
		else if (argv[i][0] == '-')
			return cli_error(EXIT_USAGE, "status: unknown option '%s' (see superpage status --help)",
					 argv[i]);
		else
			return cli_error(EXIT_USAGE, "status: unexpected argument '%s' (see superpage status --help)",
					 argv[i]);
	}
	rc = sp_probe(&sys);
	if (rc < 0)
		return cli_error(EXIT_FAIL, "cannot read the huge page setup of this machine: %s",
				 strerror(-rc));
	persisted_read(&pp);
	here_read(&h);
	if (as_json)
		print_json(&sys, &pp, &h);
	else
		print_human(&sys, &pp, &h);
	return EXIT_OK;
}
