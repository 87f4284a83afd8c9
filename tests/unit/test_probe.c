/* test_probe.c - discovery against the fake machine: sizes, pools, THP, mounts, features, pool writes. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define K 1024ull
#define M2 (2ull << 20)
#define G1 (1ull << 30)
#define THP "/sys/kernel/mm/transparent_hugepage"

static struct sp_system sys;

static void setup(void)
{
	fk_reset();
	fk_machine_default();
	fk_install();
}

static int probe(void)
{
	memset(&sys, 0x5a, sizeof sys);
	sp_refresh();
	return sp_probe(&sys);
}

static const struct sp_mthp *mthp_of(uint64_t size)
{
	for (int i = 0; i < sys.thp.n_mthp && i < SP_MAX_MTHP; i++)
		if (sys.thp.mthp[i].size == size)
			return &sys.thp.mthp[i];
	return NULL;
}

static const struct sp_mount *mount_of(const char *path)
{
	for (int i = 0; i < sys.n_mounts && i < SP_MAX_MOUNTS; i++)
		if (!strcmp(sys.mounts[i].path, path))
			return &sys.mounts[i];
	return NULL;
}

static void test_sizes_and_pools(void)
{
	setup();
	fk_pool(M2, 16, 10);
	fk_pool(G1, 2, 1);
	CHECK_EQ(probe(), 0);
	CHECK_EQ(sys.base_page_size, 4096);
	CHECK_EQ(sys.default_huge_size, M2);
	CHECK_EQ(sys.n_sizes, 2);
	CHECK_EQ(sys.page_sizes[0], M2);
	CHECK_EQ(sys.page_sizes[1], G1);
	CHECK_EQ(sys.pools[0].page_size, M2);
	CHECK_EQ(sys.pools[0].node, -1);
	CHECK_EQ(sys.pools[0].total, 16);
	CHECK_EQ(sys.pools[0].free, 10);
	CHECK_EQ(sys.pools[0].reserved, 0);
	CHECK_EQ(sys.pools[0].surplus, 0);
	CHECK_EQ(sys.pools[0].overcommit, 0);
	CHECK_EQ(sys.pools[1].page_size, G1);
	CHECK_EQ(sys.pools[1].total, 2);
	CHECK_EQ(sys.pools[1].free, 1);
	/* the probe leaves nothing behind */
	CHECK_EQ(fk_open_fds(), 0);
	CHECK_EQ(fk_map_count(), 0);
	CHECK_EQ(fk_pool_free(M2), 10);
	CHECK_EQ(fk_pool_free(G1), 1);
}

static void test_nodes(void)
{
	setup();
	fk_pool(M2, 16, 10);
	CHECK_EQ(probe(), 0);
	CHECK_EQ(sys.n_nodes, 1);
	CHECK_EQ(sys.nodes[0].node, 0);
	CHECK_EQ(sys.nodes[0].n_pools, 2);
	CHECK_EQ(sys.nodes[0].pools[0].page_size, M2);
	CHECK_EQ(sys.nodes[0].pools[0].node, 0);
	CHECK_EQ(sys.nodes[0].pools[0].total, 16);
	CHECK_EQ(sys.nodes[0].pools[0].free, 10);
	CHECK_EQ(sys.nodes[0].pools[1].page_size, G1);
	CHECK_EQ(sys.nodes[0].pools[1].total, 0);
	fk_nodes(2);
	CHECK_EQ(probe(), 0);
	CHECK_EQ(sys.n_nodes, 2);
	CHECK_EQ(sys.nodes[1].node, 1);
	CHECK_EQ(sys.nodes[1].pools[0].total, 0);
}

static void test_thp(void)
{
	setup();
	fk_file(THP "/hugepages-64kB/enabled", "always inherit [madvise] never\n");
	CHECK_EQ(probe(), 0);
	CHECK(sys.thp.present);
	CHECK(!strcmp(sys.thp.enabled, "madvise"));
	CHECK(!strcmp(sys.thp.defrag, "madvise"));
	CHECK(!strcmp(sys.thp.shmem_enabled, "never"));
	CHECK_EQ(sys.thp.pmd_size, M2);
	CHECK_EQ(sys.thp.n_mthp, 4);
	const struct sp_mthp *m;
	CHECK((m = mthp_of(16 * K)) && !strcmp(m->enabled, "never"));
	CHECK((m = mthp_of(32 * K)) && !strcmp(m->enabled, "never"));
	CHECK((m = mthp_of(64 * K)) && !strcmp(m->enabled, "madvise"));
	CHECK((m = mthp_of(2048 * K)) && !strcmp(m->enabled, "inherit"));
	CHECK(!strcmp(sys.thp.khugepaged.defrag, "1"));
	CHECK_EQ(sys.thp.khugepaged.pages_to_scan, 4096);
	CHECK_EQ(sys.thp.khugepaged.scan_sleep_millisecs, 10000);
	CHECK_EQ(sys.thp.khugepaged.alloc_sleep_millisecs, 60000);
	CHECK_EQ(sys.thp.khugepaged.max_ptes_none, 511);
	CHECK_EQ(sys.thp.khugepaged.max_ptes_swap, 64);
	CHECK_EQ(sys.thp.khugepaged.max_ptes_shared, 256);
	CHECK_EQ(sys.thp.khugepaged.full_scans, 0);
	CHECK_EQ(sys.thp.khugepaged.pages_collapsed, 0);

	fk_file(THP "/enabled", "[always] madvise never\n");
	fk_file(THP "/khugepaged/pages_collapsed", "77\n");
	CHECK_EQ(probe(), 0);
	CHECK(!strcmp(sys.thp.enabled, "always"));
	CHECK_EQ(sys.thp.khugepaged.pages_collapsed, 77);
	CHECK(!sp_view_get()->thp_never);
	fk_file(THP "/enabled", "always madvise [never]\n");
	CHECK_EQ(probe(), 0);
	CHECK(!strcmp(sys.thp.enabled, "never"));
	CHECK(sp_view_get()->thp_never);
}

/* The 2 MiB mTHP setting governs PMD THP unless it is "inherit". */
static void test_pmd_mode(void)
{
	setup();
	CHECK_EQ(probe(), 0);
	CHECK(!strcmp(sp_thp_pmd_mode(&sys.thp), "madvise")); /* inherit: the global mode */
	fk_file(THP "/hugepages-2048kB/enabled", "always inherit madvise [never]\n");
	CHECK_EQ(probe(), 0);
	CHECK(!strcmp(sp_thp_pmd_mode(&sys.thp), "never"));
	fk_file(THP "/hugepages-2048kB/enabled", "[always] inherit madvise never\n");
	CHECK_EQ(probe(), 0);
	CHECK(!strcmp(sp_thp_pmd_mode(&sys.thp), "always"));
}

static void test_no_thp(void)
{
	setup();
	fk_file_remove_tree(THP);
	CHECK_EQ(probe(), 0);
	CHECK(!sys.thp.present);
	CHECK_EQ(sys.thp.n_mthp, 0);
	CHECK_EQ(sys.n_sizes, 2); /* hugetlb is still there */
	CHECK(!sp_view_get()->thp_present);
	CHECK(sp_view_get()->has_2m);
}

static void test_no_sys(void)
{
	fk_reset();
	fk_install();
	memset(&sys, 0, sizeof sys);
	sp_refresh();
	CHECK(sp_probe(&sys) < 0);
}

static void test_mounts(void)
{
	setup();
	fk_file("/proc/mounts",
		"proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
		"hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"
		"tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n"
		"none /mnt/huge1g hugetlbfs rw,relatime,pagesize=1024M 0 0\n"
		"nodefault /mnt/hugedef hugetlbfs rw,relatime,mode=1770 0 0\n");
	CHECK_EQ(probe(), 0);
	CHECK_EQ(sys.n_mounts, 3);
	const struct sp_mount *m;
	CHECK((m = mount_of("/dev/hugepages")) && m->page_size == M2);
	CHECK((m = mount_of("/mnt/huge1g")) && m->page_size == G1);
	CHECK((m = mount_of("/mnt/hugedef")) && m->page_size == M2); /* the default size */
	CHECK(mount_of("/dev/shm") == NULL);
	fk_file("/proc/mounts", "proc /proc proc rw 0 0\n");
	CHECK_EQ(probe(), 0);
	CHECK_EQ(sys.n_mounts, 0);
}

static void test_features(void)
{
	setup();
	CHECK_EQ(probe(), 0);
	CHECK(sys.features.madv_collapse);
	CHECK(sys.features.madv_populate_write);
	CHECK(sys.features.map_huge_2mb);
	CHECK(sys.features.map_huge_1gb);
	CHECK(sys.features.memfd_hugetlb);
	CHECK(sys.features.thp_disable_prctl);
	CHECK(!sys.features.thp_disabled_here);
	CHECK(sp_view_has_collapse());
	CHECK(sp_view_get()->has_1g);

	fk_collapse(EAGAIN); /* known but busy: still there */
	CHECK_EQ(probe(), 0);
	CHECK(sys.features.madv_collapse);
	fk_collapse(EINVAL); /* a kernel without MADV_COLLAPSE */
	CHECK_EQ(probe(), 0);
	CHECK(!sys.features.madv_collapse);
	CHECK(!sp_view_has_collapse());
	fk_collapse(0);

	fk_mmap_fail_huge(G1, EINVAL);
	CHECK_EQ(probe(), 0);
	CHECK(!sys.features.map_huge_1gb);
	CHECK(sys.features.map_huge_2mb);
	fk_mmap_fail_huge(G1, 0);

	fk_memfd_error(EINVAL);
	CHECK_EQ(probe(), 0);
	CHECK(!sys.features.memfd_hugetlb);
	fk_memfd_error(0);

	fk_prctl_thp(-EINVAL);
	CHECK_EQ(probe(), 0);
	CHECK(!sys.features.thp_disable_prctl);
	CHECK(!sys.features.thp_disabled_here);
	fk_prctl_thp(1);
	CHECK_EQ(probe(), 0);
	CHECK(sys.features.thp_disable_prctl);
	CHECK(sys.features.thp_disabled_here);
	CHECK(sp_view_get()->features.thp_disabled_here);

	fk_madvise_fail(MADV_POPULATE_WRITE, EINVAL); /* before Linux 5.14 */
	CHECK_EQ(probe(), 0);
	CHECK(!sys.features.madv_populate_write);
	CHECK_EQ(fk_open_fds(), 0);
	CHECK_EQ(fk_map_count(), 0);
}

static void test_pool_get_set(void)
{
	struct sp_pool p;
	long got = -1;
	setup();
	fk_pool(M2, 3, 2);
	memset(&p, 0x5a, sizeof p);
	CHECK_EQ(sp_pool_get(M2, -1, &p), 0);
	CHECK_EQ(p.page_size, M2);
	CHECK_EQ(p.node, -1);
	CHECK_EQ(p.total, 3);
	CHECK_EQ(p.free, 2);
	CHECK_EQ(p.reserved, 0);
	CHECK_EQ(p.overcommit, 0);

	CHECK_EQ(sp_pool_set(M2, -1, 8, &got), 0);
	CHECK_EQ(got, 8);
	CHECK_EQ(fk_pool_total(M2), 8);
	CHECK_EQ(sp_pool_get(M2, -1, &p), 0);
	CHECK_EQ(p.total, 8);
	CHECK_EQ(p.free, 7);

	fk_pool_grantable(M2, 5); /* the kernel finds memory for 5 only */
	got = -1;
	CHECK_EQ(sp_pool_set(M2, -1, 8, &got), 0);
	CHECK_EQ(got, 8); /* 8 already: nothing to ask */
	CHECK_EQ(sp_pool_set(M2, -1, 0, &got), -EBUSY);
	CHECK_EQ(got, 1); /* one page is in use: the kernel keeps it */
	CHECK_EQ(sp_pool_set(M2, -1, 8, &got), -ENOMEM);
	CHECK_EQ(got, 5);
	CHECK_EQ(fk_pool_total(M2), 5);

	fk_write_error(EACCES);
	CHECK_EQ(sp_pool_set(M2, -1, 2, &got), -EACCES);
	CHECK_EQ(fk_pool_total(M2), 5);
	fk_write_error(0);

	CHECK_EQ(sp_pool_get(4 * 1024 * K, -1, &p), -ENOENT);
	CHECK_EQ(sp_pool_set(4 * 1024 * K, -1, 1, &got), -ENOENT);

	CHECK_EQ(sp_pool_get(M2, 0, &p), 0);
	CHECK_EQ(p.node, 0);
	CHECK_EQ(p.total, 5);
	CHECK_EQ(p.reserved, -1);
	CHECK_EQ(p.overcommit, -1);
	fk_pool_grantable(M2, -1);
	CHECK_EQ(sp_pool_set(M2, 0, 9, &got), 0);
	CHECK_EQ(got, 9);
	CHECK_EQ(fk_pool_total(M2), 9);
	CHECK_EQ(sp_pool_get(M2, 7, &p), -ENOENT);
	CHECK_EQ(sp_pool_set(M2, 7, 1, &got), -ENOENT);
	CHECK_EQ(sp_pool_set(G1, 0, 1, &got), 0);
	CHECK_EQ(fk_pool_total(G1), 1);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_helpers(void)
{
	char buf[SP_PATH_LEN], mode[SP_MODE_LEN];
	setup();
	CHECK_EQ(sp_pool_dir(M2, -1, buf, sizeof buf), 0);
	CHECK(!strcmp(buf, "/sys/kernel/mm/hugepages/hugepages-2048kB"));
	CHECK_EQ(sp_pool_dir(G1, 0, buf, sizeof buf), 0);
	CHECK(!strcmp(buf, "/sys/devices/system/node/node0/hugepages/hugepages-1048576kB"));
	sp_mode_selected("always [madvise] never\n", mode, sizeof mode);
	CHECK(!strcmp(mode, "madvise"));
	sp_mode_selected("always defer defer+madvise [madvise] never", mode, sizeof mode);
	CHECK(!strcmp(mode, "madvise"));
	sp_mode_selected("[always] madvise never", mode, sizeof mode);
	CHECK(!strcmp(mode, "always"));
	sp_mode_selected("never", mode, sizeof mode);
	CHECK(!strcmp(mode, "never"));
}

int main(void)
{
	RUN(test_sizes_and_pools);
	RUN(test_nodes);
	RUN(test_thp);
	RUN(test_pmd_mode);
	RUN(test_no_thp);
	RUN(test_no_sys);
	RUN(test_mounts);
	RUN(test_features);
	RUN(test_pool_get_set);
	RUN(test_helpers);
	fk_reset();
	return CHECK_DONE();
}
