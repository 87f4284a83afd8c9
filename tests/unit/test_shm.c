/* test_shm.c - shared memory on 2 MiB hugetlb pages under --shm (shm.c, shm_anon.c)
 * on the fake kernel, with a 2M pool of 8 pages: SysV segments made on the pool's
 * pages and showing the program the size it asked for, a segment found again by its
 * key, one the pool cannot hold left as asked, EPERM remembered; shared anonymous
 * mappings on a hugetlb memfd sized by ftruncate, and one whose ftruncate fails left
 * to the caller with nothing held. The program's shmget and shmctl are the runtime's
 * (interposed), called here as the program would. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"
#include "life.h"
#include "program/program.h"
#include "program/shm.h"
#include "runtime.h"

#define MB ((size_t)1 << 20)
#define POOL 8

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_setup(POOL, 0);
	setenv("SUPERPAGE_BACKING", "thp", 1);
	setenv("SUPERPAGE_SHM", "yes", 1);
}

static struct rt_shm_stats stats(void)
{
	struct rt_shm_stats st;
	rt_shm_stats_get(&st);
	return st;
}

/* A segment of 3 MiB: two 2 MiB pages reserved from the pool; IPC_STAT says 3 MiB,
 * as the kernel would have of the program's own; IPC_RMID gives the pages back. */
static void test_segment_on_pool(void)
{
	struct shmid_ds ds;
	CHECK(rt_init());
	int id = shmget(IPC_PRIVATE, 3 * MB, IPC_CREAT | 0600);
	CHECK(id >= 0);
	CHECK_EQ(fk_shm_huge_pages(id), 2);
	CHECK_EQ(fk_shm_size(id), 4 * MB);
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 2);
	CHECK_EQ(shmctl(id, IPC_STAT, &ds), 0);
	CHECK_EQ(ds.shm_segsz, 3 * MB);
	CHECK_EQ(stats().segments, 1);
	CHECK_EQ(stats().segment_bytes, 4 * MB);
	CHECK_EQ(shmctl(id, IPC_RMID, NULL), 0);
	CHECK_EQ(fk_pool_free(2 * MB), POOL);
	/* A failed shmctl is -1 and the kernel's errno. */
	errno = 0;
	CHECK_EQ(shmctl(id, IPC_STAT, &ds), -1);
	CHECK_EQ(errno, EINVAL);
}

/* By key: created on the pool, found again by the program's own call; a size over what
 * the program asked is refused (its own segment would have been too small), though
 * the kernel's, rounded up, holds it. */
static void test_segment_by_key(void)
{
	key_t key = 0x5eed;
	int id = shmget(key, 3 * MB, IPC_CREAT | 0600);
	CHECK(id >= 0);
	CHECK_EQ(fk_shm_huge_pages(id), 2);
	CHECK_EQ(shmget(key, 3 * MB, 0600), id);
	CHECK_EQ(shmget(key, 1 * MB, 0600), id);
	errno = 0;
	CHECK_EQ(shmget(key, 3 * MB + 4096, 0600), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(shmget(key, 3 * MB, IPC_CREAT | IPC_EXCL | 0600), -1);
	CHECK_EQ(errno, EEXIST);
	CHECK_EQ(shmctl(id, IPC_RMID, NULL), 0);
	CHECK_EQ(fk_pool_free(2 * MB), POOL);
}

/* More than the pool holds: not asked of the pool at all, made as the program asked,
 * the fall counted. */
static void test_segment_pool_too_small(void)
{
	int calls = fk_shm_huge_calls();
	struct rt_shm_stats before = stats();
	int id = shmget(IPC_PRIVATE, 20 * MB, IPC_CREAT | 0600);
	CHECK(id >= 0);
	CHECK_EQ(fk_shm_huge_pages(id), 0);
	CHECK_EQ(fk_shm_huge_calls(), calls);
	struct rt_shm_stats st = stats();
	uint64_t falls = 0, falls0 = 0;
	for (int f = 0; f < SP_FALL_COUNT; f++) {
		falls += st.segment_falls[f];
		falls0 += before.segment_falls[f];
	}
	CHECK_EQ(falls, falls0 + 1);
	CHECK_EQ(st.segments, before.segments);
	CHECK_EQ(shmctl(id, IPC_RMID, NULL), 0);
}

/* A shared anonymous mapping: a hugetlb memfd, sized by ftruncate, mapped shared;
 * writable, counted. */
static void test_anon_on_memfd(void)
{
	int truncs = fk_truncate_calls(), memfds = fk_memfd_calls();
	char *p = shm_map(4 * MB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
	CHECK(p != NULL);
	if (!p)
		return;
	CHECK_EQ(fk_memfd_calls(), memfds + 1);
	CHECK(fk_memfd_last_flags() & MFD_HUGETLB);
	CHECK_EQ(fk_truncate_calls(), truncs + 1);
	struct fk_map_info m;
	CHECK(fk_map_find(p, &m) == 0 && (m.flags & MAP_SHARED) && m.end - m.start == 4 * MB);
	memset(p, 3, 4 * MB);
	CHECK_EQ(stats().maps, 1);
	CHECK_EQ(stats().map_bytes, 4 * MB);
	/* Not a multiple of 2 MiB and too short to round: left as asked, counted. */
	uint64_t un = stats().map_falls[SP_FALL_UNSUPPORTED];
	CHECK(shm_map(4 * MB + 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS) == NULL);
	CHECK_EQ(stats().map_falls[SP_FALL_UNSUPPORTED], un + 1);
	/* Private mappings are not its to take. */
	CHECK(shm_map(4 * MB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS) == NULL);
	CHECK_EQ(fk_memfd_calls(), memfds + 1);
}

/* ftruncate refused: NULL (the caller maps it as asked), the memfd closed, the fall
 * counted as a refused map. */
static void test_anon_truncate_refused(void)
{
	int fds = fk_open_fds(), truncs = fk_truncate_calls();
	uint64_t falls = stats().map_falls[SP_FALL_MMAP], maps = stats().maps;
	fk_truncate_error(EIO);
	CHECK(shm_map(4 * MB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS) == NULL);
	fk_truncate_error(0);
	CHECK_EQ(fk_truncate_calls(), truncs + 1);
	CHECK_EQ(fk_open_fds(), fds);
	CHECK_EQ(stats().map_falls[SP_FALL_MMAP], falls + 1);
	CHECK_EQ(stats().maps, maps);
}

/* SHM_HUGETLB refused with EPERM: the segment made as asked; the pool is not asked
 * again (last: the refusal is remembered for the process). */
static void test_segment_eperm_remembered(void)
{
	fk_shm_huge_error(EPERM);
	int calls = fk_shm_huge_calls();
	uint64_t skipped = stats().segment_falls[SP_FALL_SKIPPED];
	uint64_t refused = stats().segment_falls[SP_FALL_MMAP];
	int id = shmget(IPC_PRIVATE, 2 * MB, IPC_CREAT | 0600);
	CHECK(id >= 0);
	CHECK_EQ(fk_shm_huge_pages(id), 0);
	CHECK_EQ(fk_shm_huge_calls(), calls + 1);
	CHECK_EQ(stats().segment_falls[SP_FALL_MMAP], refused + 1);
	int id2 = shmget(IPC_PRIVATE, 2 * MB, IPC_CREAT | 0600);
	CHECK(id2 >= 0);
	CHECK_EQ(fk_shm_huge_calls(), calls + 1);
	CHECK_EQ(stats().segment_falls[SP_FALL_SKIPPED], skipped + 1);
	shmctl(id, IPC_RMID, NULL);
	shmctl(id2, IPC_RMID, NULL);
	fk_shm_huge_error(0);
}

int main(void)
{
	RUN(test_segment_on_pool);
	RUN(test_segment_by_key);
	RUN(test_segment_pool_too_small);
	RUN(test_anon_on_memfd);
	RUN(test_anon_truncate_refused);
	RUN(test_segment_eperm_remembered);
	fk_uninstall();
	return CHECK_DONE();
}
