/* test_limits.c - the limits a process runs under, read from the fake kernel: memory
 * cgroups v1 (as on this machine: memory in a v1 hierarchy, hugetlb in the v2 one)
 * and v2 (max, high, a cgroup namespace's mount), the least room over the levels, the
 * file cache left out of it, the hugetlb controller's counters, RLIMIT_AS/DATA; and
 * the rung service under a hugetlb limit: a map the limit cannot hold is refused as
 * cgroup_limit, one it can is faulted in at once (never a SIGBUS later). */
#include <errno.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define MB (1ull << 20)
#define V1 "/sys/fs/cgroup/memory"
#define V2 "/sys/fs/cgroup/unified"

/* This machine's mounts: every v1 controller on its own, hugetlb in the v2 one. */
static const char *mounts_hybrid =
	"22 27 0:20 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

static char scratch[4096];

static void setup(void)
{
	fk_reset();
	fk_machine_default();
	fk_install();
}

static void v1_level(const char *dir, uint64_t limit, uint64_t usage, uint64_t inactive_file,
		     uint64_t active_file)
{
	char path[256], text[512];
	snprintf(path, sizeof path, "%s/memory.limit_in_bytes", dir);
	snprintf(text, sizeof text, "%llu\n", (unsigned long long)limit);
	fk_file(path, text);
	snprintf(path, sizeof path, "%s/memory.usage_in_bytes", dir);
	snprintf(text, sizeof text, "%llu\n", (unsigned long long)usage);
	fk_file(path, text);
	snprintf(path, sizeof path, "%s/memory.stat", dir);
	snprintf(text, sizeof text,
		 "cache 0\nrss 0\ninactive_file 1\nactive_file 2\nhierarchical_memory_limit %llu\n"
		 "total_cache 5\ntotal_rss 6\ntotal_inactive_file %llu\ntotal_active_file %llu\n"
		 "total_unevictable 0\n", (unsigned long long)limit,
		 (unsigned long long)inactive_file, (unsigned long long)active_file);
	fk_file(path, text);
}

/* v1: the limit is the process's cgroup's (its parents' are v1's "none"); the room
 * is the limit less the usage that is not file cache. */
static void test_v1(void)
{
	struct sp_limit_dirs d;
	struct sp_limits l;
	setup();
	fk_file("/proc/self/mountinfo", mounts_hybrid);
	fk_file("/proc/self/cgroup", "9:name=systemd:/\n4:memory:/jobs/a1/sp-limits-7\n1:cpu:/\n0::/\n");
	v1_level(V1 "/jobs/a1/sp-limits-7", 512 * MB, 400 * MB, 50 * MB, 10 * MB);
	v1_level(V1 "/jobs/a1", 9223372036854771712ull, 900 * MB, 0, 0);
	v1_level(V1 "/jobs", 9223372036854771712ull, 900 * MB, 0, 0);
	v1_level(V1, 9223372036854771712ull, 2000 * MB, 0, 0);
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.mem_version, 1);
	CHECK_EQ(d.huge_version, 2); /* (hugetlb is no v1 mount's: the v2 hierarchy's) */
	CHECK_EQ(d.n_mem, 1);
	CHECK(!strcmp(d.mem[0], V1 "/jobs/a1/sp-limits-7"));
	CHECK_EQ(d.n_huge, 0);
	sp_limits_memory(&d, &l, scratch, sizeof scratch);
	CHECK_EQ(l.mem_limit, 512 * MB);
	CHECK_EQ(l.mem_usage, 400 * MB);
	CHECK_EQ(l.mem_file, 60 * MB);
	CHECK_EQ(l.mem_room, 512 * MB - 340 * MB);
	/* Over the limit in all but the cache: no room, not a wrapped-around one. */
	v1_level(V1 "/jobs/a1/sp-limits-7", 512 * MB, 600 * MB, 20 * MB, 0);
	sp_limits_memory(&d, &l, scratch, sizeof scratch);
	CHECK_EQ(l.mem_room, 0);
	/* The cache counted as more than the usage (the counters are read apart). */
	v1_level(V1 "/jobs/a1/sp-limits-7", 512 * MB, 100 * MB, 200 * MB, 0);
	sp_limits_memory(&d, &l, scratch, sizeof scratch);
	CHECK_EQ(l.mem_room, 512 * MB);
	CHECK_EQ(fk_open_fds(), 0);
}

/* A level above with less room is the one that counts. */
static void test_v1_parent(void)
{
	struct sp_limit_dirs d;
	struct sp_limits l;
	setup();
	fk_file("/proc/self/mountinfo", mounts_hybrid);
	fk_file("/proc/self/cgroup", "4:memory:/jobs/a1/sp-limits-7\n0::/\n");
	v1_level(V1 "/jobs/a1/sp-limits-7", 512 * MB, 100 * MB, 0, 0);
	v1_level(V1 "/jobs/a1", 300 * MB, 290 * MB, 0, 0);
	v1_level(V1 "/jobs", 9223372036854771712ull, 900 * MB, 0, 0);
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_mem, 2);
	CHECK(!strcmp(d.mem[1], V1 "/jobs/a1"));
	sp_limits_memory(&d, &l, scratch, sizeof scratch);
	CHECK_EQ(l.mem_limit, 300 * MB);
	CHECK_EQ(l.mem_usage, 290 * MB);
	CHECK_EQ(l.mem_room, 10 * MB);
}

static void v2_level(const char *dir, const char *max, const char *high, uint64_t current,
		     uint64_t inactive_file, uint64_t active_file)
{
	char path[256], text[512];
	snprintf(path, sizeof path, "%s/memory.max", dir);
	fk_file(path, max);
	snprintf(path, sizeof path, "%s/memory.high", dir);
	fk_file(path, high);
	snprintf(path, sizeof path, "%s/memory.current", dir);
	snprintf(text, sizeof text, "%llu\n", (unsigned long long)current);
	fk_file(path, text);
	snprintf(path, sizeof path, "%s/memory.stat", dir);
	snprintf(text, sizeof text,
		 "anon 1000\nfile 2000\nkernel 300\nshmem 0\nactive_anon 10\ninactive_file %llu\n"
		 "active_file %llu\nunevictable 0\n", (unsigned long long)inactive_file,
		 (unsigned long long)active_file);
	fk_file(path, text);
}

/* v2: memory.max or memory.high, the lower; the root cgroup has no such files. */
static void test_v2(void)
{
	struct sp_limit_dirs d;
	struct sp_limits l;
	setup();
	fk_file("/proc/self/mountinfo",
		"30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 "
		"cgroup2 rw,nsdelegate,memory_recursiveprot\n");
	fk_file("/proc/self/cgroup", "0::/user.slice/app.service\n");
	v2_level("/sys/fs/cgroup/user.slice/app.service", "max\n", "268435456\n", 200 * MB, 30 * MB, 0);
	v2_level("/sys/fs/cgroup/user.slice", "1073741824\n", "max\n", 600 * MB, 100 * MB, 0);
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.mem_version, 2);
	CHECK_EQ(d.n_mem, 2);
	sp_limits_memory(&d, &l, scratch, sizeof scratch);
	CHECK_EQ(l.mem_limit, 256 * MB);
	CHECK_EQ(l.mem_room, 256 * MB - 170 * MB);
	/* No limit anywhere: nothing to read. */
	v2_level("/sys/fs/cgroup/user.slice/app.service", "max\n", "max\n", 200 * MB, 0, 0);
	v2_level("/sys/fs/cgroup/user.slice", "max\n", "max\n", 600 * MB, 0, 0);
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_mem, 0);
	sp_limits_memory(&d, &l, scratch, sizeof scratch);
	CHECK(l.mem_room == SP_LIMIT_NONE && l.mem_limit == SP_LIMIT_NONE);
}

/* In a container: the mount shows the container's own cgroup as its root, and
 * /proc/self/cgroup says "/" (a cgroup namespace) or the host's path (none). */
static void test_v2_container(void)
{
	struct sp_limit_dirs d;
	setup();
	fk_file("/proc/self/mountinfo",
		"700 690 0:26 /docker/4f1e /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n");
	fk_file("/proc/self/cgroup", "0::/docker/4f1e\n");
	v2_level("/sys/fs/cgroup", "536870912\n", "max\n", 100 * MB, 0, 0);
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_mem, 1);
	CHECK(!strcmp(d.mem[0], "/sys/fs/cgroup"));
	fk_file("/proc/self/mountinfo",
		"700 690 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n");
	fk_file("/proc/self/cgroup", "0::/\n");
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_mem, 1);
	CHECK(!strcmp(d.mem[0], "/sys/fs/cgroup"));
}

/* The memory controller at its usual mount is found without mountinfo (here there is
 * none: the search would fail if it read it); the hugetlb levels still read it. A
 * mount that shows part of the hierarchy has no directory for the process's cgroup
 * below it: mountinfo is read then, and says where its root is. */
static void test_usual_place(void)
{
	struct sp_limit_dirs d;
	setup(); /* v1, as on this machine */
	fk_fs(V1, CGROUP_SUPER_MAGIC, 4096, 0);
	fk_file("/proc/self/cgroup", "9:name=systemd:/\n4:memory:/jobs/a1\n0::/\n");
	v1_level(V1 "/jobs/a1", 512 * MB, 400 * MB, 0, 0);
	v1_level(V1 "/jobs", 9223372036854771712ull, 900 * MB, 0, 0);
	CHECK_EQ(sp_limits_find(&d, false, scratch, sizeof scratch), 0);
	CHECK_EQ(d.mem_version, 1);
	CHECK_EQ(d.n_mem, 1);
	CHECK(!strcmp(d.mem[0], V1 "/jobs/a1"));
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), -ENOENT);
	fk_file("/proc/self/mountinfo", mounts_hybrid);
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_mem, 1);
	CHECK_EQ(d.huge_version, 2);
	setup(); /* v2 */
	fk_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC, 4096, 0);
	fk_file("/proc/self/cgroup", "0::/user.slice/app.service\n");
	fk_file("/sys/fs/cgroup/user.slice/app.service/cgroup.controllers", "memory pids\n");
	v2_level("/sys/fs/cgroup/user.slice/app.service", "max\n", "268435456\n", 200 * MB, 0, 0);
	v2_level("/sys/fs/cgroup/user.slice", "max\n", "max\n", 600 * MB, 0, 0);
	CHECK_EQ(sp_limits_find(&d, false, scratch, sizeof scratch), 0);
	CHECK_EQ(d.mem_version, 2);
	CHECK_EQ(d.n_mem, 1);
	CHECK(!strcmp(d.mem[0], "/sys/fs/cgroup/user.slice/app.service"));
	setup(); /* a container's mount of its own part of v2, no cgroup namespace */
	fk_fs("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC, 4096, 0);
	fk_file("/proc/self/cgroup", "0::/docker/4f1e\n");
	fk_file("/sys/fs/cgroup/cgroup.controllers", "memory pids\n");
	v2_level("/sys/fs/cgroup", "536870912\n", "max\n", 100 * MB, 0, 0);
	CHECK_EQ(sp_limits_find(&d, false, scratch, sizeof scratch), -ENOENT);
	fk_file("/proc/self/mountinfo",
		"700 690 0:26 /docker/4f1e /sys/fs/cgroup ro,nosuid - cgroup2 cgroup rw\n");
	CHECK_EQ(sp_limits_find(&d, false, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_mem, 1);
	CHECK(!strcmp(d.mem[0], "/sys/fs/cgroup"));
	CHECK_EQ(fk_open_fds(), 0);
}

/* Mount points with escaped spaces, a line longer than the scratch (skipped), no
 * newline at the end; and no cgroup at all. */
static void test_odd_files(void)
{
	struct sp_limit_dirs d;
	struct sp_limits l;
	static char text[16384];
	setup();
	char *t = text;
	t += sprintf(t, "1 0 0:1 / /a rw - ext4 /dev/x rw,");
	memset(t, 'o', 6000); /* a line longer than the scratch */
	t += 6000;
	t += sprintf(t, "\n41 31 0:38 / /cg\\040two rw,relatime - cgroup2 cgroup2 rw");
	fk_file("/proc/self/mountinfo", text);
	fk_file("/proc/self/cgroup", "0::/x");
	v2_level("/cg two/x", "104857600\n", "max\n", 50 * MB, 0, 0);
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_mem, 1);
	CHECK(!strcmp(d.mem[0], "/cg two/x"));
	sp_limits_memory(&d, &l, scratch, sizeof scratch);
	CHECK_EQ(l.mem_room, 50 * MB);
	setup();
	CHECK(sp_limits_find(&d, true, scratch, sizeof scratch) < 0);
	CHECK_EQ(d.n_mem + d.n_huge + d.mem_version + d.huge_version, 0);
	sp_limits_memory(&d, &l, scratch, sizeof scratch);
	CHECK(l.mem_room == SP_LIMIT_NONE);
	CHECK_EQ(sp_limits_hugetlb(&d, false, NULL, NULL), SP_LIMIT_NONE);
	CHECK_EQ(fk_open_fds(), 0);
}

/* The hugetlb controller: v2 (as here) and v1, fault-time and reservation counters. */
static void test_hugetlb(void)
{
	struct sp_limit_dirs d;
	uint64_t limit, usage;
	setup();
	fk_file("/proc/self/mountinfo", mounts_hybrid);
	fk_file("/proc/self/cgroup", "4:memory:/\n0::/sp-h\n");
	fk_file(V2 "/sp-h/hugetlb.2MB.max", "41943040\n");
	fk_file(V2 "/sp-h/hugetlb.2MB.current", "8388608\n");
	fk_file(V2 "/sp-h/hugetlb.2MB.rsvd.max", "max\n");
	fk_file(V2 "/sp-h/hugetlb.2MB.rsvd.current", "10485760\n");
	fk_file(V2 "/sp-h/hugetlb.1GB.max", "max\n");
	fk_file(V2 "/sp-h/hugetlb.1GB.current", "0\n");
	CHECK_EQ(sp_limits_find(&d, false, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_huge, 0); /* (not looked for) */
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.n_mem, 0);
	CHECK_EQ(d.n_huge, 1);
	CHECK_EQ(sp_limits_hugetlb(&d, false, &limit, &usage), 32 * MB);
	CHECK_EQ(limit, 40 * MB);
	CHECK_EQ(usage, 8 * MB);
	CHECK_EQ(sp_limits_hugetlb(&d, true, &limit, NULL), SP_LIMIT_NONE);
	CHECK_EQ(limit, SP_LIMIT_NONE);
	/* The reservations' limit, lower. */
	fk_file(V2 "/sp-h/hugetlb.2MB.rsvd.max", "16777216\n");
	CHECK_EQ(sp_limits_hugetlb(&d, false, &limit, NULL), 6 * MB);
	CHECK_EQ(limit, 16 * MB);
	/* v1: a hierarchy of its own. */
	setup();
	fk_file("/proc/self/mountinfo",
		"35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
		"36 31 0:33 / /sys/fs/cgroup/hugetlb rw - cgroup cgroup rw,hugetlb\n");
	fk_file("/proc/self/cgroup", "5:hugetlb:/db\n4:memory:/db\n");
	fk_file("/sys/fs/cgroup/hugetlb/db/hugetlb.2MB.limit_in_bytes", "20971520\n");
	fk_file("/sys/fs/cgroup/hugetlb/db/hugetlb.2MB.usage_in_bytes", "20971520\n");
	fk_file("/sys/fs/cgroup/hugetlb/hugetlb.2MB.limit_in_bytes", "9223372036854771712\n");
	CHECK_EQ(sp_limits_find(&d, true, scratch, sizeof scratch), 0);
	CHECK_EQ(d.huge_version, 1);
	CHECK_EQ(d.n_huge, 1);
	CHECK_EQ(sp_limits_hugetlb(&d, false, NULL, NULL), 0);
}

/* The hugetlb levels are looked for when first asked: if the files were there at the
 * start and are gone by then (the program went into a chroot), a limit cannot be
 * ruled out, and the rungs have no room (a map is refused, not a SIGBUS later). In a
 * child: the process's levels are found once. */
static void test_huge_dirs_gone(void)
{
	struct sp_limit_dirs unknown = { .n_huge = -1 };
	uint64_t limit;
	CHECK_EQ(sp_limits_hugetlb(&unknown, false, &limit, NULL), 0);
	CHECK_EQ(limit, 0);
	pid_t pid = fork();
	if (pid == 0) {
		setup();
		fk_pool(SP_2M_SIZE, 16, 16);
		fk_file("/proc/self/mountinfo", mounts_hybrid);
		fk_file("/proc/self/cgroup", "4:memory:/\n0::/sp-h\n");
		CHECK_EQ(sp_limit_dirs()->n_mem, 0);
		fk_reset(); /* (the chroot: no /proc; the same kernel, still installed) */
		fk_machine_default();
		fk_pool(SP_2M_SIZE, 16, 16);
		CHECK_EQ(sp_limit_dirs_huge()->n_huge, -1);
		CHECK_EQ(sp_rung_room(SP_BACKING_2M, false), 0);
		CHECK_EQ(sp_rung_cgroup_room(SP_BACKING_2M, SP_2M_SIZE), -EDQUOT);
		_exit(check_fails_ ? 1 : 0);
	}
	int st = -1;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_rlimits(void)
{
	struct sp_limits l;
	setup();
	sp_limits_rlimits(&l);
	CHECK(l.as_limit == SP_LIMIT_NONE && l.data_limit == SP_LIMIT_NONE);
	fk_rlimit(RLIMIT_AS, 1000 * MB);
	fk_rlimit(RLIMIT_DATA, 700 * MB);
	sp_limits_rlimits(&l);
	CHECK_EQ(l.as_limit, 1000 * MB);
	CHECK_EQ(l.data_limit, 700 * MB);
}

/* The rung service under a hugetlb limit of 8 MiB with 4 used: a map of 6 MiB is
 * refused before it is made, counted as cgroup_limit; one of 4 MiB is made and
 * faulted in at once. The process's limits are found once: this test is the only
 * one that asks for them in this process (sp_limit_dirs, sp_limit_dirs_huge). */
static void test_rung_under_limit(void)
{
	void *p = NULL;
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT];
	struct sp_rung_ask ask = { .site = SP_SITE_ALLOC, .rung = SP_BACKING_2M };
	setup();
	fk_pool(SP_2M_SIZE, 16, 16);
	fk_file("/proc/self/mountinfo", mounts_hybrid);
	fk_file("/proc/self/cgroup", "4:memory:/\n0::/sp-h\n");
	fk_file(V2 "/sp-h/hugetlb.2MB.max", "8388608\n");
	fk_file(V2 "/sp-h/hugetlb.2MB.current", "4194304\n");
	CHECK_EQ(sp_limit_dirs()->n_huge, 0); /* (the memory levels only) */
	CHECK_EQ(sp_limit_dirs_huge()->n_huge, 1);
	CHECK_EQ(sp_rung_room(SP_BACKING_2M, false), 2);
	sp_falls_reset(SP_SITE_ALLOC);
	CHECK_EQ(sp_rung_map(&ask, 6 * MB, 0, &p), SP_FALL_CGROUP);
	CHECK_EQ(fk_mmap_huge_calls(SP_2M_SIZE), 0);
	sp_falls_get(SP_SITE_ALLOC, falls);
	CHECK_EQ(falls[SP_BACKING_2M][SP_FALL_CGROUP], 1);
	CHECK(!strcmp(sp_fall_name(SP_FALL_CGROUP), "cgroup_limit"));
	int populates = fk_madvise_calls(MADV_POPULATE_WRITE);
	CHECK_EQ(sp_rung_map(&ask, 4 * MB, 0, &p), -1);
	CHECK_EQ(fk_madvise_calls(MADV_POPULATE_WRITE), populates + 1);
	struct fk_map_info m;
	CHECK(fk_map_find(p, &m) == 0 && m.hpage == SP_2M_SIZE && m.populated);
	if (p)
		munmap(p, 4 * MB);
	/* A populate the limit refuses (the kernel's EFAULT, where a touch would have
	 * been a SIGBUS): the mapping is given back, the fall is cgroup_limit. */
	fk_madvise_fail(MADV_POPULATE_WRITE, EFAULT);
	int before = fk_munmap_calls();
	CHECK_EQ(sp_rung_map(&ask, 2 * MB, 0, &p), SP_FALL_CGROUP);
	CHECK_EQ(fk_munmap_calls(), before + 1);
	CHECK_EQ(sp_rung_refusal(SP_BACKING_2M, -EDQUOT), SP_FALL_CGROUP);
	fk_madvise_fail(MADV_POPULATE_WRITE, 0);
}

int main(void)
{
	RUN(test_v1);
	RUN(test_v1_parent);
	RUN(test_v2);
	RUN(test_v2_container);
	RUN(test_usual_place);
	RUN(test_odd_files);
	RUN(test_hugetlb);
	RUN(test_huge_dirs_gone);
	RUN(test_rlimits);
	RUN(test_rung_under_limit);
	fk_uninstall();
	return CHECK_DONE();
}
