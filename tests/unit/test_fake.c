/* test_fake.c - checks the fake kernel itself, so the other tests can trust what it says. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define M2 (2ul << 20)
#define G1 (1ul << 30)

static void setup(void)
{
	fk_reset();
	fk_machine_default();
	fk_install(); /* the library probes here */
	fk_counters_reset();
}

static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = fk_os.open(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	ssize_t n = fk_os.read(fd, buf, len - 1);
	fk_os.close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

static int put(const char *path, const char *s)
{
	int fd = fk_os.open(path, O_WRONLY, 0);
	if (fd < 0)
		return fd;
	ssize_t n = fk_os.write(fd, s, strlen(s));
	fk_os.close(fd);
	return n < 0 ? (int)n : 0;
}

static void test_files(void)
{
	char buf[256];
	setup();
	CHECK(slurp("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf) > 0);
	CHECK(!strcmp(buf, "always [madvise] never\n"));
	CHECK_EQ(slurp("/no/such/file", buf, sizeof buf), -ENOENT);
	CHECK_EQ(fk_os.open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_DIRECTORY, 0),
		 -ENOTDIR);
	CHECK_EQ(put("/sys/kernel/mm/transparent_hugepage/enabled", "never\n"), 0);
	CHECK(!strcmp(fk_file_get("/sys/kernel/mm/transparent_hugepage/enabled"),
		      "always madvise [never]\n"));
	CHECK_EQ(put("/sys/kernel/mm/transparent_hugepage/enabled", "sometimes"), -EINVAL);
	fk_write_error(EACCES);
	CHECK_EQ(put("/sys/kernel/mm/transparent_hugepage/enabled", "always"), -EACCES);
	fk_file_error("/proc/77/smaps", EACCES);
	fk_file("/proc/77/smaps", "");
	CHECK_EQ(slurp("/proc/77/smaps", buf, sizeof buf), -EACCES);
	CHECK_EQ(fk_open_fds(), 0);
}

struct dent { uint64_t ino; int64_t off; unsigned short reclen; unsigned char type; char name[]; };

static void test_getdents(void)
{
	char buf[40], names[512] = "";
	int dirs = 0, calls = 0;
	ssize_t n;
	setup();
	int fd = fk_os.open("/sys/kernel/mm/hugepages", O_RDONLY | O_DIRECTORY, 0);
	CHECK(fd >= 0);
	while ((n = fk_os.getdents(fd, buf, sizeof buf)) > 0) { /* one record per call */
		calls++;
		for (ssize_t off = 0; off < n;) {
			struct dent *d = (struct dent *)(buf + off);
			CHECK(d->ino != 0);
			CHECK_EQ(d->reclen % 8, 0);
			dirs += d->type == DT_DIR;
			strcat(names, d->name);
			strcat(names, ",");
			off += d->reclen;
		}
	}
	CHECK_EQ(n, 0);
	CHECK(calls >= 4);
	CHECK(!strcmp(names, ".,..,hugepages-1048576kB,hugepages-2048kB,")); /* not sorted */
	CHECK_EQ(dirs, 4);
	fk_os.close(fd);
	fd = fk_os.open("/sys/kernel/mm/hugepages/hugepages-2048kB", O_RDONLY | O_DIRECTORY, 0);
	CHECK_EQ(fk_os.getdents(fd, buf, 8), -EINVAL); /* too small for one record */
	char big[4096];
	n = fk_os.getdents(fd, big, sizeof big);
	int files = 0;
	for (ssize_t off = 0; off < n; off += ((struct dent *)(big + off))->reclen)
		files += ((struct dent *)(big + off))->type == DT_REG;
	CHECK_EQ(files, 5);
	fk_os.close(fd);
}

static void test_pools(void)
{
	char buf[64];
	void *p = NULL, *q = NULL;
	setup();
	fk_pool(M2, 4, 4);
	CHECK(slurp("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", buf, sizeof buf) > 0);
	CHECK(!strcmp(buf, "4\n"));
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB;
	CHECK_EQ(fk_os.mmap(NULL, 3 * M2 - 100, PROT_READ | PROT_WRITE, flags, -1, 0, &p), 0);
	CHECK_EQ((uintptr_t)p % M2, 0);
	CHECK_EQ(fk_pool_free(M2), 1);
	slurp("/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", buf, sizeof buf);
	CHECK(!strcmp(buf, "1\n"));
	CHECK_EQ(fk_os.mmap(NULL, 2 * M2, PROT_READ, flags, -1, 0, &q), -ENOMEM);
	CHECK_EQ(fk_os.mmap(NULL, M2, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (29 << 26),
			    -1, 0, &q), -EINVAL);
	memset(p, 1, 3 * M2);
	CHECK_EQ(fk_os.munmap((char *)p + 4096, M2), -EINVAL);
	CHECK_EQ(fk_os.munmap((char *)p + M2, M2), 0); /* a hole in the middle */
	CHECK_EQ(fk_pool_free(M2), 2);
	CHECK_EQ(fk_map_count(), 2);
	CHECK_EQ(fk_os.munmap(p, 3 * M2), 0);
	CHECK_EQ(fk_pool_free(M2), 4);
	CHECK_EQ(fk_map_count(), 0);

	fk_pool_grantable(M2, 5);
	CHECK_EQ(put("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "8"), 0);
	CHECK_EQ(fk_pool_total(M2), 5);
	CHECK_EQ(fk_pool_free(M2), 5);
	CHECK_EQ(put("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "8"), -EACCES);

	fk_pool(G1, 1, 1);
	CHECK_EQ(fk_os.mmap(NULL, G1, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_1GB, -1, 0, &p), 0);
	CHECK_EQ((uintptr_t)p % G1, 0);
	CHECK_EQ(fk_pool_free(G1), 0);
	CHECK_EQ(fk_os.munmap(p, G1), 0);
	CHECK_EQ(fk_pool_free(G1), 1);
	CHECK_EQ(fk_noreserve_hugetlb(), 0);
}

static void test_trim_and_smaps(void)
{
	static char buf[8192];
	void *p;
	setup();
	CHECK_EQ(fk_os.mmap(NULL, 3 * M2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			    &p), 0);
	char *a = (char *)(((uintptr_t)p + M2 - 1) & ~(M2 - 1));
	if (a > (char *)p)
		CHECK_EQ(fk_os.munmap(p, a - (char *)p), 0);
	CHECK_EQ(fk_os.munmap(a + M2, (char *)p + 3 * M2 - (a + M2)), 0);
	CHECK_EQ(fk_map_count(), 1);
	CHECK_EQ(fk_map_bytes(), M2);
	CHECK_EQ(fk_os.madvise(a, M2, MADV_HUGEPAGE), 0);
	CHECK_EQ(fk_os.madvise(a, M2, MADV_POPULATE_WRITE), 0);
	CHECK_EQ(fk_madvise_calls(MADV_POPULATE_WRITE), 1);
	CHECK(slurp("/proc/self/smaps", buf, sizeof buf) > 0);
	CHECK(strstr(buf, "AnonHugePages:      2048 kB\n") != NULL);
	CHECK(strstr(buf, "Rss:                2048 kB\n") != NULL);
	CHECK(strstr(buf, "VmFlags: rd wr mr mw me ac hg \n") != NULL);
	CHECK_EQ(fk_os.madvise(a, 2 * M2, MADV_NOHUGEPAGE), -ENOMEM); /* half unmapped */
	fk_collapse(EINVAL);
	CHECK_EQ(fk_os.madvise(NULL, 0, MADV_COLLAPSE), -EINVAL);
	fk_collapse(EAGAIN);
	CHECK_EQ(fk_os.madvise(NULL, 0, MADV_COLLAPSE), 0);
	CHECK_EQ(fk_os.madvise(a, M2, MADV_COLLAPSE), -EAGAIN);
	CHECK_EQ(fk_os.munmap(a, M2), 0);
	CHECK_EQ(fk_map_count(), 0);
}

int main(void)
{
	RUN(test_files);
	RUN(test_getdents);
	RUN(test_pools);
	RUN(test_trim_and_smaps);
	fk_reset();
	return CHECK_DONE();
}
