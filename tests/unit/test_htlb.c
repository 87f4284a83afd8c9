/* test_htlb.c - the libhugetlbfs interface (src/htlb) against the fake kernel: sizes,
 * mounts and HUGETLB_PATH, unlinked fds with and without a mount, get_huge_pages and
 * get_hugepage_region with their flags, and frees of what they did not give. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "hugetlbfs.h"
#include "htlb.h"

#define M1 (1ull << 20)
#define M2 (2ull << 20)
#define G1 (1ull << 30)
#define EXT4_MAGIC 0xEF53
#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"
#define MFD_HUGE_SHIFT 26

static const char *vars[] = { "HUGETLB_PATH", "HUGETLB_DEFAULT_PAGE_SIZE", "HUGETLB_VERBOSE" };

/* The default fake machine (2M and 1G sizes, 2M the kernel's default) with pools of
 * these sizes, no HUGETLB_* set, and the library's state read from it. */
static void setup(long pool_2m, long pool_1g)
{
	fk_setup(pool_2m, pool_1g);
	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
		unsetenv(vars[i]);
	setenv("HUGETLB_VERBOSE", "0", 1); /* the failures tested here are not to be said */
	htlb_reload();
}

/* Two hugetlbfs mounts in /proc/mounts (2M, 1G) and an ext4 one, as statfs sees them. */
static void mounts(void)
{
	fk_file("/proc/mounts", "/dev/vda / ext4 rw,relatime 0 0\n"
				"hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"
				"none /mnt/huge\\0401g hugetlbfs rw,pagesize=1024M 0 0\n");
	fk_fs("/dev/hugepages", HUGETLBFS_MAGIC, (long)M2, 0);
	fk_fs("/mnt/huge 1g", HUGETLBFS_MAGIC, (long)G1, 0);
	fk_fs("/", EXT4_MAGIC, 4096, 0);
}

/* What an allocation that must work gave: not NULL, errno left as the test set it
 * (1234), and its mapping found (in *m). */
static bool served(const void *p, struct fk_map_info *m)
{
	CHECK(p != NULL);
	CHECK_EQ(errno, 1234);
	return p && fk_map_find(p, m) == 0;
}

static void reload_with(const char *var, const char *value)
{
	setenv(var, value, 1);
	htlb_reload();
}

static void test_sizes(void)
{
	long s[8] = { 0 };

	setup(0, 0);
	errno = 1234;
	CHECK_EQ(gethugepagesize(), (long)M2);
	CHECK_EQ(errno, 1234);
	CHECK_EQ(gethugepagesizes(NULL, 0), 2);
	CHECK_EQ(gethugepagesizes(s, 8), 2);
	CHECK_EQ(s[0], (long)M2);
	CHECK_EQ(s[1], (long)G1);
	CHECK_EQ(gethugepagesizes(s, 1), 1);
	CHECK_EQ(getpagesizes(NULL, 0), 3);
	CHECK_EQ(getpagesizes(s, 0), 0);
	CHECK_EQ(getpagesizes(s, 8), 3);
	CHECK_EQ(s[0], 4096);
	CHECK_EQ(s[1], (long)M2);
	CHECK_EQ(s[2], (long)G1);
	CHECK_EQ(getpagesizes(s, 2), 2);
	errno = 0;
	CHECK_EQ(gethugepagesizes(s, -1), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(gethugepagesizes(NULL, 1), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(getpagesizes(NULL, 2), -1);
	CHECK_EQ(errno, EINVAL);

	/* The kernel's default comes first, whatever its rank. */
	fk_file("/proc/meminfo", "MemTotal: 16384000 kB\nHugepagesize: 1048576 kB\n");
	htlb_reload();
	CHECK_EQ(gethugepagesize(), (long)G1);
	CHECK_EQ(gethugepagesizes(s, 8), 2);
	CHECK_EQ(s[0], (long)G1);
	CHECK_EQ(s[1], (long)M2);
}

static void test_default_page_size_env(void)
{
	long s[4];

	setup(0, 0);
	reload_with("HUGETLB_DEFAULT_PAGE_SIZE", "1G");
	CHECK_EQ(gethugepagesize(), (long)G1);
	CHECK_EQ(gethugepagesizes(s, 4), 2); /* the kernel's list, its default first */
	CHECK_EQ(s[0], (long)M2);
	reload_with("HUGETLB_DEFAULT_PAGE_SIZE", "1073741824");
	CHECK_EQ(gethugepagesize(), (long)G1);
	reload_with("HUGETLB_DEFAULT_PAGE_SIZE", "4M"); /* not a size here: the kernel's */
	CHECK_EQ(gethugepagesize(), (long)M2);
	reload_with("HUGETLB_DEFAULT_PAGE_SIZE", "lots");
	CHECK_EQ(gethugepagesize(), (long)M2);
	reload_with("HUGETLB_DEFAULT_PAGE_SIZE", "");
	CHECK_EQ(gethugepagesize(), (long)M2);
}

static void test_no_huge_pages(void)
{
	long s[4];

	setup(0, 0);
	fk_pool_remove(M2);
	fk_pool_remove(G1);
	fk_file("/proc/meminfo", "MemTotal: 16384000 kB\n");
	htlb_reload();
	errno = 0;
	CHECK_EQ(gethugepagesize(), -1);
	CHECK_EQ(errno, ENOSYS);
	CHECK_EQ(gethugepagesizes(s, 4), 0);
	CHECK_EQ(getpagesizes(s, 4), 1);
	CHECK_EQ(s[0], 4096);
	CHECK(hugetlbfs_find_path() == NULL);
	errno = 0;
	CHECK_EQ(hugetlbfs_unlinked_fd(), -1);
	CHECK_EQ(errno, ENOSYS);
	errno = 0;
	CHECK(get_huge_pages(M2, GHP_DEFAULT) == NULL);
	CHECK_EQ(errno, ENOSYS);
	errno = 0;
	CHECK(get_hugepage_region(M2, GHR_STRICT) == NULL);
	CHECK_EQ(errno, ENOSYS);
	/* GHR_FALLBACK: base pages. */
	char *p = get_hugepage_region(M1, GHR_FALLBACK);
	CHECK(p != NULL);
	struct fk_map_info m;
	CHECK(p && fk_map_find(p, &m) == 0 && m.hpage == 0);
	free_hugepage_region(p);
	CHECK(fk_map_find(p, &m) < 0);
}

static void test_test_path(void)
{
	setup(0, 0);
	mounts();
	CHECK_EQ(hugetlbfs_test_path("/dev/hugepages"), 1);
	CHECK_EQ(hugetlbfs_test_path("/dev/hugepages/some/file"), 1);
	CHECK_EQ(hugetlbfs_test_path("/mnt/huge 1g"), 1);
	CHECK_EQ(hugetlbfs_test_path("/proc"), 0);
	errno = 0;
	fk_reset(); /* no filesystem at all: the path does not exist */
	fk_install();
	CHECK_EQ(hugetlbfs_test_path("/nowhere"), -1);
	CHECK_EQ(errno, ENOENT);
	errno = 0;
	CHECK_EQ(hugetlbfs_test_path(NULL), -1);
	CHECK_EQ(errno, EFAULT);
}

static void test_find_path(void)
{
	setup(0, 0);
	mounts();
	htlb_reload();
	CHECK(hugetlbfs_find_path() && !strcmp(hugetlbfs_find_path(), "/dev/hugepages"));
	const char *g = hugetlbfs_find_path_for_size((long)G1);
	CHECK(g && !strcmp(g, "/mnt/huge 1g"));
	CHECK(hugetlbfs_find_path_for_size(4096) == NULL);
	CHECK(hugetlbfs_find_path_for_size(-1) == NULL);
	reload_with("HUGETLB_DEFAULT_PAGE_SIZE", "1G");
	CHECK(hugetlbfs_find_path() && !strcmp(hugetlbfs_find_path(), "/mnt/huge 1g"));
}

static void test_find_path_skips_unusable(void)
{
	setup(0, 0);
	/* The first 2M mount is not ours to write, the second is not hugetlbfs any more
	 * (/proc/mounts said so, statfs does not): the third is used. */
	fk_file("/proc/mounts", "a /mnt/a hugetlbfs rw 0 0\nb /mnt/b hugetlbfs rw 0 0\n"
				"c /mnt/c hugetlbfs rw 0 0\nd /mnt/d hugetlbfs rw 0 0\n");
	fk_fs("/mnt/a", HUGETLBFS_MAGIC, (long)M2, EACCES);
	fk_fs("/mnt/b", EXT4_MAGIC, 4096, 0);
	fk_fs("/mnt/c", HUGETLBFS_MAGIC, (long)M2, 0);
	fk_fs("/mnt/d", HUGETLBFS_MAGIC, (long)M2, 0); /* the size is served already */
	htlb_reload();
	CHECK(hugetlbfs_find_path() && !strcmp(hugetlbfs_find_path(), "/mnt/c"));
	CHECK(hugetlbfs_find_path_for_size((long)G1) == NULL);
}

static void test_hugetlb_path_env(void)
{
	setup(0, 0);
	mounts();
	fk_fs("/mnt/mine", HUGETLBFS_MAGIC, (long)M2, 0); /* not in /proc/mounts */
	reload_with("HUGETLB_PATH", "/mnt/mine");
	CHECK(hugetlbfs_find_path() && !strcmp(hugetlbfs_find_path(), "/mnt/mine"));
	/* Only HUGETLB_PATH's mounts: /proc/mounts' 1G mount is not used. */
	CHECK(hugetlbfs_find_path_for_size((long)G1) == NULL);
	reload_with("HUGETLB_PATH", "/mnt/mine:/mnt/huge 1g");
	CHECK(hugetlbfs_find_path() && !strcmp(hugetlbfs_find_path(), "/mnt/mine"));
	CHECK(hugetlbfs_find_path_for_size((long)G1) &&
	      !strcmp(hugetlbfs_find_path_for_size((long)G1), "/mnt/huge 1g"));
	/* A path that is not hugetlbfs is ignored. */
	reload_with("HUGETLB_PATH", "/tmp");
	CHECK(hugetlbfs_find_path() == NULL);
	reload_with("HUGETLB_PATH", "/tmp::/dev/hugepages");
	CHECK(hugetlbfs_find_path() && !strcmp(hugetlbfs_find_path(), "/dev/hugepages"));
	unsetenv("HUGETLB_PATH");
	htlb_reload();
	CHECK(hugetlbfs_find_path() && !strcmp(hugetlbfs_find_path(), "/dev/hugepages"));
}

static void test_unlinked_fd_mount(void)
{
	setup(0, 0);
	mounts();
	htlb_reload();
	errno = 1234;
	int fd = hugetlbfs_unlinked_fd();
	CHECK(fd >= 0);
	CHECK_EQ(errno, 1234);
	CHECK_EQ(fk_tmpfile_calls(), 1);
	CHECK_EQ(fk_memfd_calls(), 0);
	CHECK_EQ(fk_cloexec_cleared(), 1); /* not close-on-exec, as mkstemp's */
	CHECK_EQ(fk_os.close(fd), 0);
	fd = hugetlbfs_unlinked_fd_for_size((long)G1);
	CHECK(fd >= 0);
	CHECK_EQ(fk_tmpfile_calls(), 2);
	fk_os.close(fd);

	/* A kernel without O_TMPFILE on hugetlbfs: a named file, unlinked at once. */
	fk_tmpfile_error(EOPNOTSUPP);
	fd = hugetlbfs_unlinked_fd();
	CHECK(fd >= 0);
	CHECK_EQ(fk_unlink_calls(), 1);
	CHECK_EQ(fk_memfd_calls(), 0);
	fk_os.close(fd);

	/* The mount refuses: -1 and its errno, no memfd instead. */
	fk_tmpfile_error(EACCES);
	errno = 0;
	CHECK_EQ(hugetlbfs_unlinked_fd(), -1);
	CHECK_EQ(errno, EACCES);
	CHECK_EQ(fk_memfd_calls(), 0);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_unlinked_fd_memfd(void)
{
	setup(0, 0); /* no hugetlbfs mount in /proc/mounts */
	CHECK(hugetlbfs_find_path() == NULL);
	int fd = hugetlbfs_unlinked_fd();
	CHECK(fd >= 0);
	CHECK_EQ(fk_memfd_calls(), 1);
	CHECK_EQ(fk_memfd_last_flags(), MFD_HUGETLB | (21u << MFD_HUGE_SHIFT));
	fk_os.close(fd);
	fd = hugetlbfs_unlinked_fd_for_size((long)G1);
	CHECK(fd >= 0);
	CHECK_EQ(fk_memfd_last_flags(), MFD_HUGETLB | (30u << MFD_HUGE_SHIFT));
	fk_os.close(fd);
	errno = 0;
	CHECK_EQ(hugetlbfs_unlinked_fd_for_size(4096), -1);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(fk_memfd_calls(), 2);
	fk_memfd_error(ENOSYS);
	errno = 0;
	CHECK_EQ(hugetlbfs_unlinked_fd(), -1);
	CHECK_EQ(errno, ENOSYS);
	CHECK_EQ(fk_open_fds(), 0);
}

/* A hugetlbfs mount the program may not use (access(2) refuses) is no mount: the kernel
 * has no usable one for the size, so unlinked fds are memfds. */
static void test_unlinked_fd_unusable_mount(void)
{
	setup(0, 0);
	fk_file("/proc/mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,mode=1770,pagesize=2M 0 0\n");
	fk_fs("/dev/hugepages", HUGETLBFS_MAGIC, (long)M2, EACCES);
	htlb_reload();
	CHECK(hugetlbfs_find_path() == NULL);
	int fd = hugetlbfs_unlinked_fd();
	CHECK(fd >= 0);
	CHECK_EQ(fk_memfd_calls(), 1);
	if (fd >= 0)
		fk_os.close(fd);
	CHECK_EQ(fk_open_fds(), 0);
}

/* /proc/meminfo with no Hugepagesize line: no default size (gethugepagesize fails as
 * on a kernel without hugetlb), though sysfs still lists sizes. */
static void test_no_default_size(void)
{
	long s[4] = { 0 };

	setup(0, 0);
	fk_file("/proc/meminfo", "MemTotal: 16384000 kB\n");
	htlb_reload();
	errno = 0;
	CHECK_EQ(gethugepagesize(), -1);
	CHECK_EQ(errno, ENOSYS);
	CHECK_EQ(gethugepagesizes(s, 4), 2);
	CHECK_EQ(s[0], (long)M2);
	CHECK_EQ(s[1], (long)G1);
	/* HUGETLB_DEFAULT_PAGE_SIZE names a size sysfs has: still none. */
	reload_with("HUGETLB_DEFAULT_PAGE_SIZE", "2M");
	errno = 0;
	CHECK_EQ(gethugepagesize(), -1);
	CHECK_EQ(errno, ENOSYS);
	CHECK(hugetlbfs_find_path() == NULL);
	errno = 0;
	CHECK_EQ(hugetlbfs_unlinked_fd(), -1);
	CHECK_EQ(errno, ENOSYS);
	CHECK_EQ(fk_memfd_calls(), 0);
}

static void test_get_huge_pages(void)
{
	struct fk_map_info m;

	setup(4, 0);
	errno = 1234;
	char *p = get_huge_pages(2 * M2, GHP_DEFAULT);
	CHECK(served(p, &m) && m.hpage == M2 && !(m.flags & MAP_NORESERVE));
	CHECK_EQ((uintptr_t)p % M2, 0);
	CHECK_EQ(fk_pool_free(M2), 2);
	free_huge_pages(p);
	CHECK_EQ(fk_pool_free(M2), 4);
	CHECK(fk_map_find(p, &m) < 0);
	/* A length that is not a multiple of the page: rounded up. */
	p = get_huge_pages(M2 + 1, GHP_DEFAULT);
	CHECK(p && fk_map_find(p, &m) == 0 && m.end - m.start == 2 * M2);
	free_huge_pages(p);
	CHECK_EQ(fk_pool_free(M2), 4);
	errno = 0;
	CHECK(get_huge_pages(0, GHP_DEFAULT) == NULL);
	CHECK_EQ(errno, EINVAL);
	CHECK_EQ(fk_noreserve_hugetlb(), 0);
}

static void test_get_huge_pages_strict(void)
{
	setup(0, 8); /* 1G pages would do, but only the default size is asked */
	int maps = fk_map_count();
	errno = 0;
	CHECK(get_huge_pages(M2, GHP_DEFAULT) == NULL);
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(fk_map_count(), maps);
	CHECK_EQ(fk_mmap_huge_calls(G1), 0);
	/* Asked again at once: asked of the kernel again (strict), refused again. */
	CHECK(get_huge_pages(M2, GHP_DEFAULT) == NULL);
	CHECK_EQ(fk_mmap_huge_calls(M2), 2);
	/* 1G the default: 1G pages. */
	reload_with("HUGETLB_DEFAULT_PAGE_SIZE", "1G");
	char *p = get_huge_pages(G1, GHP_DEFAULT);
	struct fk_map_info m;
	CHECK(p && fk_map_find(p, &m) == 0 && m.hpage == G1);
	free_huge_pages(p);
	CHECK_EQ(fk_pool_free(G1), 8);
}

static void test_region_strict(void)
{
	setup(0, 0);
	int maps = fk_map_count();
	errno = 0;
	CHECK(get_hugepage_region(M1, GHR_STRICT) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(get_hugepage_region(M1, GHR_STRICT | GHR_COLOR) == NULL);
	CHECK_EQ(errno, ENOMEM);
	errno = 0;
	CHECK(get_hugepage_region(M1, 0) == NULL); /* no GHR_FALLBACK: strict */
	CHECK_EQ(errno, ENOMEM);
	CHECK_EQ(fk_map_count(), maps);
	CHECK_EQ(fk_noreserve_hugetlb(), 0);
}

static void test_region_fallback(void)
{
	struct fk_map_info m;

	setup(0, 0);
	errno = 1234;
	char *p = get_hugepage_region(3 * M1, GHR_FALLBACK);
	/* The rung below 2M hugetlb: THP ("madvise" here). */
	CHECK(served(p, &m) && m.hpage == 0 && m.advice == 1);
	CHECK_EQ((uintptr_t)p % M2, 0);
	memset(p, 1, 3 * M1);
	free_hugepage_region(p);
	CHECK(fk_map_find(p, &m) < 0);
	/* STRICT and FALLBACK both: FALLBACK wins, as in libhugetlbfs. */
	p = get_hugepage_region(M1, GHR_FALLBACK | GHR_STRICT);
	CHECK(p != NULL);
	free_hugepage_region(p);

	/* THP "never": base pages. */
	fk_file(THP_ENABLED, "always madvise [never]\n");
	sp_refresh();
	p = get_hugepage_region(3 * 4096 + 100, GHR_FALLBACK);
	CHECK(p && fk_map_find(p, &m) == 0 && m.hpage == 0 && m.advice <= 0);
	CHECK(p && m.end - m.start == 4 * 4096);
	free_hugepage_region(p);
	CHECK(fk_map_find(p, &m) < 0);

	/* With a pool: huge pages first. */
	setup(2, 0);
	p = get_hugepage_region(3 * M1, GHR_DEFAULT);
	CHECK(p && fk_map_find(p, &m) == 0 && m.hpage == M2);
	CHECK_EQ(fk_pool_free(M2), 0);
	free_hugepage_region(p);
	CHECK_EQ(fk_pool_free(M2), 2);
}

/* GHR_COLOR: the start moves by whole cache lines into the bytes the rounding up
 * leaves after len, and the region still ends inside its mapping. */
static void test_region_color(void)
{
	struct fk_map_info m;
	long line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
	uintptr_t offsets[16];
	int distinct = 0;

	if (line <= 0 || (line & (line - 1)))
		line = 64;
	setup(64, 0);
	for (int i = 0; i < 16; i++) {
		char *p = get_hugepage_region(M1, GHR_STRICT | GHR_COLOR);
		CHECK(p != NULL);
		if (!p || fk_map_find(p, &m) < 0) {
			CHECK(0);
			continue;
		}
		uintptr_t off = (uintptr_t)p - m.start;
		CHECK_EQ(m.hpage, M2);
		CHECK_EQ(off % (uintptr_t)line, 0);
		CHECK((uintptr_t)p + M1 <= m.end);
		offsets[i] = off;
		bool seen = false;
		for (int k = 0; k < i; k++)
			seen |= offsets[k] == off;
		distinct += !seen;
		free_hugepage_region(p);
		CHECK(fk_map_find((void *)m.start, &m) < 0);
	}
	CHECK(distinct > 1); /* a random line: not the same one each time */
	CHECK_EQ(fk_pool_free(M2), 64);

	/* No slack (len a multiple of the page): the region starts at its page. */
	char *p = get_hugepage_region(M2, GHR_STRICT | GHR_COLOR);
	CHECK(p && (uintptr_t)p % M2 == 0);
	free_hugepage_region(p);
	/* Without GHR_COLOR: at the start of the page. */
	p = get_hugepage_region(M1, GHR_STRICT);
	CHECK(p && (uintptr_t)p % M2 == 0);
	free_hugepage_region(p);

	/* Colored on base pages: within the last page's slack, and freed by that pointer. */
	setup(0, 0);
	fk_file(THP_ENABLED, "always madvise [never]\n");
	sp_refresh();
	p = get_hugepage_region(4096 + 100, GHR_DEFAULT);
	CHECK(p && fk_map_find(p, &m) == 0 && m.hpage == 0);
	CHECK(p && (uintptr_t)p + 4096 + 100 <= m.end && ((uintptr_t)p - m.start) % line == 0);
	free_hugepage_region(p);
	CHECK(fk_map_find((void *)m.start, &m) < 0);
	CHECK_EQ(fk_pool_free(M2), 0);
}

static void test_free_foreign(void)
{
	struct fk_map_info m;

	setup(2, 0);
	char *mine = get_huge_pages(M2, GHP_DEFAULT);
	CHECK(mine != NULL);
	int unmaps = fk_munmap_calls();
	char *heap = malloc(100);
	errno = 1234;
	free_huge_pages(heap);           /* not this library's: nothing freed */
	free_hugepage_region(heap);
	free_huge_pages(mine + 4096);    /* inside a block, not its start */
	free_huge_pages(NULL);
	free_hugepage_region(NULL);
	CHECK_EQ(errno, 1234);
	CHECK_EQ(fk_munmap_calls(), unmaps);
	CHECK(fk_map_find(mine, &m) == 0);
	mine[0] = 1;
	heap[99] = 1;
	free(heap);
	free_huge_pages(mine);
	CHECK_EQ(fk_munmap_calls(), unmaps + 1);
	free_huge_pages(mine);           /* twice: nothing more */
	free_hugepage_region(mine);
	CHECK_EQ(fk_munmap_calls(), unmaps + 1);
	CHECK_EQ(fk_pool_free(M2), 2);
}

int main(void)
{
	RUN(test_sizes);
	RUN(test_default_page_size_env);
	RUN(test_no_huge_pages);
	RUN(test_test_path);
	RUN(test_find_path);
	RUN(test_find_path_skips_unusable);
	RUN(test_hugetlb_path_env);
	RUN(test_unlinked_fd_mount);
	RUN(test_unlinked_fd_memfd);
	RUN(test_unlinked_fd_unusable_mount);
	RUN(test_no_default_size);
	RUN(test_get_huge_pages);
	RUN(test_get_huge_pages_strict);
	RUN(test_region_strict);
	RUN(test_region_fallback);
	RUN(test_region_color);
	RUN(test_free_foreign);
	fk_uninstall();
	return CHECK_DONE();
}
