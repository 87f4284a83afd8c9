/* test_machine.c - the machine at once against the fake kernel: a process read by
 * PAGEMAP_SCAN and by smaps_rollup to the same figures, hugetlb by size, a process
 * gone or denied, /proc/meminfo and the pools, memory cgroups (v2 and v1). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define M2 (2ull << 20)
#define PID 4343
#define A 0x7f0000000000ull
#define H 0x7f2000000000ull

/* 3 ranges of anonymous memory (2 huge, 1 with 100 pages) and 2 of hugetlb. */
static void setup(void)
{
	fk_reset();
	fk_machine_default();
	fk_install();
	fk_proc(PID);
	fk_proc_map(PID, A, 3 * M2, "rw-p", "", 0);
	fk_proc_range(PID, A, 512, true, false);
	fk_proc_range(PID, A + M2, 512, true, false);
	fk_proc_range(PID, A + 2 * M2, 100, false, false);
	fk_proc_map(PID, H, 2 * M2, "rw-p", "/anon_hugepage (deleted)", FK_HUGETLB);
	fk_proc_range(PID, H, 512, true, false);
	fk_proc_range(PID, H + M2, 512, true, false);
}

static void check_figures(const struct sp_proc *p)
{
	CHECK_EQ(p->pid, PID);
	CHECK_EQ(p->uid, 1000);
	CHECK_EQ(p->rss_bytes, 4 * M2 + 100 * 4096);
	CHECK_EQ(p->huge_bytes, 4 * M2);
	CHECK_EQ(p->thp_bytes, 2 * M2);
	CHECK_EQ(p->hugetlb_bytes, 2 * M2);
	CHECK_EQ(p->hugetlb[0].page_size, M2);
	CHECK_EQ(p->hugetlb[0].bytes, 2 * M2);
	CHECK_EQ(p->hugetlb[1].page_size, 0);
	CHECK(p->account_rc < 0); /* not under superpage run */
}

static void test_proc_both_ways(void)
{
	struct sp_proc p;
	setup();
	CHECK_EQ(sp_proc_read(PID, SP_SCAN_PAGEMAP, &p), 0);
	CHECK_EQ(p.scan, SP_SCAN_PAGEMAP);
	check_figures(&p);
	CHECK_EQ(sp_proc_read(PID, SP_SCAN_ROLLUP, &p), 0);
	CHECK_EQ(p.scan, SP_SCAN_ROLLUP);
	check_figures(&p);
	CHECK_EQ(sp_proc_read(PID, SP_SCAN_AUTO, &p), 0);
	CHECK_EQ(p.scan, SP_SCAN_PAGEMAP);
	CHECK_EQ(fk_open_fds(), 0);
}

/* Gone (or never there), not readable, or a kernel thread: each its own code. */
static void test_proc_refusals(void)
{
	struct sp_proc p;
	setup();
	CHECK_EQ(sp_proc_read(PID + 1, SP_SCAN_AUTO, &p), -ESRCH);
	fk_file_error("/proc/4343/pagemap", EACCES);
	CHECK_EQ(sp_proc_read(PID, SP_SCAN_PAGEMAP, &p), -EACCES);
	fk_file_error("/proc/4343/smaps_rollup", EPERM);
	CHECK_EQ(sp_proc_read(PID, SP_SCAN_ROLLUP, &p), -EACCES);
	fk_file_error("", 0);
	fk_file("/proc/77/status", "Name:\tkthreadd\nPid:\t77\nUid:\t0\t0\t0\t0\n");
	CHECK_EQ(sp_proc_read(77, SP_SCAN_AUTO, &p), -ENODATA);
	fk_proc_exit(PID);
	CHECK_EQ(sp_proc_read(PID, SP_SCAN_AUTO, &p), -ESRCH);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_pids(void)
{
	pid_t *v;
	setup();
	fk_file("/proc/31/status", "x");
	fk_file("/proc/7/status", "x");
	fk_file("/proc/self/status", "x");
	fk_file("/proc/meminfo", "MemTotal: 1 kB\n");
	long n = sp_pids(&v);
	CHECK_EQ(n, 2);
	if (n == 2) {
		CHECK_EQ(v[0], 7);
		CHECK_EQ(v[1], 31);
	}
	free(v);
}

static void test_meminfo(void)
{
	struct sp_meminfo m;
	setup();
	fk_file("/proc/meminfo", "MemTotal:       1000 kB\nMemAvailable:    500 kB\n"
				 "AnonHugePages:   4096 kB\nShmemPmdMapped:  2048 kB\n"
				 "FilePmdMapped:      0 kB\nHugetlb:        20480 kB\n");
	fk_pool(M2, 10, 4);
	fk_pool(1ull << 30, 1, 1);
	CHECK_EQ(sp_meminfo_read(&m), 0);
	CHECK_EQ(m.total, 1000 << 10);
	CHECK_EQ(m.available, 500 << 10);
	CHECK_EQ(m.anon_thp, 4096 << 10);
	CHECK_EQ(m.shmem_thp, 2048 << 10);
	CHECK_EQ(m.hugetlb, 20480 << 10);
	CHECK_EQ(m.hugetlb_used, 6 * M2);
}

static const struct sp_cgroup *find(const struct sp_cgroup *v, long n, const char *path)
{
	for (long i = 0; i < n; i++)
		if (!strcmp(v[i].path, path))
			return &v[i];
	return NULL;
}

static void test_cgroups_v2(void)
{
	struct sp_cgroup *v;
	setup();
	fk_file("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory hugetlb pids\n");
	fk_file("/sys/fs/cgroup/cgroup.procs", "1\n");
	fk_file("/sys/fs/cgroup/memory.stat", "anon 1000\nanon_thp 0\nfile 10\n");
	fk_file("/sys/fs/cgroup/db.slice/cgroup.procs", "");
	fk_file("/sys/fs/cgroup/db.slice/memory.stat",
		"anon 8000\nanon_thp 4000\nfile 2000\nfile_thp 0\nshmem 500\nshmem_thp 100\n"
		"file_mapped 7\n");
	fk_file("/sys/fs/cgroup/db.slice/hugetlb.2MB.current", "4194304\n");
	fk_file("/sys/fs/cgroup/db.slice/hugetlb.1GB.current", "0\n");
	fk_file("/sys/fs/cgroup/db.slice/pg.service/cgroup.procs", "12\n");
	fk_file("/sys/fs/cgroup/db.slice/pg.service/memory.stat", "anon 10\n");
	long n = sp_cgroups_read(&v);
	CHECK_EQ(n, 3);
	const struct sp_cgroup *root = find(v, n, "/"), *db = find(v, n, "/db.slice"),
				*pg = find(v, n, "/db.slice/pg.service");
	CHECK(root && db && pg);
	if (root && db && pg) {
		CHECK(root < db && db < pg); /* parents first */
		CHECK_EQ(db->version, 2);
		CHECK_EQ(db->depth, 1);
		CHECK_EQ(pg->depth, 2);
		CHECK_EQ(db->anon, 8000);
		CHECK_EQ(db->anon_thp, 4000);
		CHECK_EQ(db->shmem_thp, 100);
		CHECK(db->hugetlb_known);
		CHECK_EQ(db->hugetlb_bytes, 4194304);
		CHECK_EQ(sp_cgroup_huge(db), 4000 + 100 + 4194304);
		CHECK_EQ(sp_cgroup_bytes(db), 8000 + 2000 + 4194304);
		CHECK_EQ(root->anon, 1000);
		CHECK(!root->hugetlb_known);
	}
	free(v);
}

static void test_cgroups_v1(void)
{
	struct sp_cgroup *v;
	setup();
	fk_file("/sys/fs/cgroup/memory/memory.use_hierarchy", "1\n");
	fk_file("/sys/fs/cgroup/memory/cgroup.procs", "1\n");
	fk_file("/sys/fs/cgroup/memory/memory.stat",
		"cache 1\nrss 2\nrss_huge 0\ntotal_cache 300\ntotal_rss 9000\n"
		"total_rss_huge 4096\ntotal_shmem 40\n");
	long n = sp_cgroups_read(&v);
	CHECK_EQ(n, 1);
	if (n == 1) {
		CHECK_EQ(v[0].version, 1);
		CHECK_EQ(v[0].anon, 9000);
		CHECK_EQ(v[0].anon_thp, 4096);
		CHECK_EQ(v[0].file, 300);
		CHECK_EQ(v[0].shmem, 40);
		CHECK(!v[0].hugetlb_known);
	}
	free(v);
	setup(); /* no memory controller at all */
	CHECK_EQ(sp_cgroups_read(&v), -ENOENT);
	CHECK(v == NULL);
}

/* Last: once a kernel says it has no PAGEMAP_SCAN, auto does not ask it again. */
static void test_proc_no_pagemap_scan(void)
{
	struct sp_proc p;
	setup();
	fk_pagemap_scan(false);
	CHECK_EQ(sp_proc_read(PID, SP_SCAN_PAGEMAP, &p), -ENOTTY);
	CHECK_EQ(sp_proc_read(PID, SP_SCAN_AUTO, &p), 0);
	CHECK_EQ(p.scan, SP_SCAN_ROLLUP);
	check_figures(&p);
	CHECK_EQ(fk_open_fds(), 0);
}

int main(void)
{
	RUN(test_proc_both_ways);
	RUN(test_proc_refusals);
	RUN(test_pids);
	RUN(test_meminfo);
	RUN(test_cgroups_v2);
	RUN(test_cgroups_v1);
	RUN(test_proc_no_pagemap_scan);
	fk_uninstall();
	return CHECK_DONE();
}
