/* test_pack.c - the program's small reservations packed into chunks (pack.c) on the
 * fake kernel: placed side by side from the bottom, read-write ones from the top, a
 * unit collapsed only once all of it is the program's read-write memory, what the
 * program unmaps kept for its next mapping or reserved again, MADV_DONTFORK kept
 * from the kernel but across fork, and a refused map. The calls mmap.c makes are made
 * here directly, the program's mprotect through the room's seam (kern.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"
#include "life.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"

#define KB ((uintptr_t)1 << 10)
#define MB ((uintptr_t)1 << 20)
#define CHUNK (256 * MB)
#define RES (MAP_PRIVATE | MAP_ANONYMOUS)

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_setup(0, 0);
	setenv("SUPERPAGE_BACKING", "thp", 1);
}

static uintptr_t r[4];    /* four reservations of 512 KiB: one 2 MiB unit */
static int outside_calls;

static int outside(uintptr_t a, size_t len)
{
	(void)a, (void)len;
	outside_calls++;
	return 0;
}

static uint64_t collapsed(void)
{
	uint64_t p, c, f;
	pack_stats(&p, &c, &f);
	return c;
}

/* The program's mprotect to read-write, as mmap.c makes it. */
static void commit(uintptr_t a, size_t len)
{
	CHECK_EQ(kern_protect((void *)a, len, PROT_READ | PROT_WRITE), 0);
	pack_changed(a, len, true);
}

/* Reservations side by side from a unit's start, each aligned to half its length, in
 * address space advised huge; each is the program's own mapping (PROT_NONE). */
static void test_side_by_side(void)
{
	struct fk_map_info m;
	CHECK(rt_init());
	CHECK(!pack_holds(0x10000, 4096));
	for (int i = 0; i < 4; i++) {
		r[i] = (uintptr_t)pack_map(512 * KB, PROT_NONE, RES);
		CHECK(r[i] != 0);
	}
	CHECK_EQ(r[0] % (2 * MB), 0);
	for (int i = 1; i < 4; i++)
		CHECK_EQ(r[i], r[0] + (uintptr_t)i * 512 * KB);
	CHECK(pack_holds(r[0], 4096) && pack_holds(r[3] + 512 * KB - 1, 1));
	CHECK(fk_map_find((void *)r[1], &m) == 0);
	CHECK_EQ(m.prot, PROT_NONE);
	CHECK_EQ(m.advice, 1);
	uint64_t packed, c, f;
	pack_stats(&packed, &c, &f);
	CHECK_EQ(packed, 4);
}

/* Committed piece by piece: no collapse until the whole unit is the program's
 * read-write memory, then one, and the unit is huge. */
static void test_collapse_when_whole(void)
{
	struct fk_map_info m;
	int calls = fk_madvise_calls(MADV_COLLAPSE);
	for (int i = 0; i < 3; i++)
		commit(r[i], 512 * KB);
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), calls);
	CHECK_EQ(collapsed(), 0);
	commit(r[3], 512 * KB);
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), calls + 1);
	CHECK_EQ(collapsed(), 1);
	CHECK(fk_map_find((void *)r[0], &m) == 0 && m.huge);
	((volatile char *)r[0])[0] = 1;
}

/* One piece unmapped from the huge unit: left resident, free, and the program's next
 * reservation of that size gets it back; nothing of it goes to the caller's unmap
 * (it lies in a chunk). */
static void test_unmap_keeps_huge_unit(void)
{
	struct fk_map_info m;
	int maps = fk_mmap_calls();
	CHECK_EQ(pack_unmap(r[1], 512 * KB, outside), 0);
	CHECK_EQ(outside_calls, 0);
	CHECK_EQ(fk_mmap_calls(), maps);
	CHECK(fk_map_find((void *)r[0], &m) == 0 && m.huge);
	uintptr_t again = (uintptr_t)pack_map(512 * KB, PROT_NONE, RES);
	CHECK_EQ(again, r[1]);
	CHECK(fk_map_find((void *)r[1], &m) == 0 && m.prot == PROT_NONE);
}

/* Every piece unmapped: the unit is reserved again (no access, not huge). A range
 * that lies partly outside every chunk: that part is the caller's to unmap. */
static void test_unmap_all(void)
{
	struct fk_map_info m;
	for (int i = 0; i < 4; i++)
		CHECK_EQ(pack_unmap(r[i], 512 * KB, outside), 0);
	CHECK(fk_map_find((void *)r[0], &m) == 0);
	CHECK_EQ(m.prot, PROT_NONE);
	CHECK(!m.huge);
	CHECK_EQ(outside_calls, 0);
	CHECK_EQ(pack_unmap(r[0] - 4096, 8192, outside), 0);
	CHECK_EQ(outside_calls, 1);
}

/* A read-write mapping goes at the top of the chunk, from the top down; a unit it
 * fills only in part is not collapsed. */
static void test_read_write_from_top(void)
{
	int calls = fk_madvise_calls(MADV_COLLAPSE);
	uint64_t before = collapsed();
	uintptr_t w = (uintptr_t)pack_map(64 * KB, PROT_READ | PROT_WRITE, RES);
	CHECK(w != 0);
	CHECK_EQ(w + 64 * KB, r[0] + CHUNK);
	((volatile char *)w)[0] = 1;
	uintptr_t w2 = (uintptr_t)pack_map(64 * KB, PROT_READ | PROT_WRITE, RES);
	CHECK_EQ(w2 + 64 * KB, w);
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), calls);
	CHECK_EQ(collapsed(), before);
	/* The rest of the top unit read-write too: collapsed at once. */
	uintptr_t w3 = (uintptr_t)pack_map(384 * KB, PROT_READ | PROT_WRITE, RES);
	CHECK_EQ(w3 + 384 * KB, w2);
	CHECK_EQ(collapsed(), before);
	uintptr_t w4 = (uintptr_t)pack_map(1536 * KB, PROT_READ | PROT_WRITE, RES);
	CHECK_EQ(w4, r[0] + CHUNK - 2 * MB);
	CHECK_EQ(w4 + 1536 * KB, w3);
	CHECK_EQ(collapsed(), before + 1);
	CHECK_EQ(fk_madvise_calls(MADV_COLLAPSE), calls + 1);
}

/* MADV_DONTFORK on a chunk's pages is kept, not given to the kernel (it would set the
 * pages apart from their neighbours), but across fork: DONTFORK before, DOFORK after. */
static void test_dontfork_across_fork(void)
{
	int df = fk_madvise_calls(MADV_DONTFORK), dof = fk_madvise_calls(MADV_DOFORK);
	uintptr_t a = (uintptr_t)pack_map(512 * KB, PROT_NONE, RES);
	CHECK_EQ(pack_advise(a, 8192, MADV_DONTFORK), 0);
	CHECK_EQ(fk_madvise_calls(MADV_DONTFORK), df);
	pack_fork_prepare();
	CHECK_EQ(fk_madvise_calls(MADV_DONTFORK), df + 1);
	pack_fork_parent();
	CHECK_EQ(fk_madvise_calls(MADV_DOFORK), dof + 1);
	/* Other advice goes to the kernel as it is. */
	int dn = fk_madvise_calls(MADV_DONTNEED);
	CHECK_EQ(pack_advise(a, 8192, MADV_DONTNEED), 0);
	CHECK_EQ(fk_madvise_calls(MADV_DONTNEED), dn + 1);
	CHECK_EQ(pack_unmap(a, 512 * KB, outside), 0);
}

/* The kernel refuses the program's mapping over the reservation: NULL (the caller
 * maps it as asked), and those pages, which the failed MAP_FIXED may have unmapped,
 * are never handed out again. */
static void test_refused_map(void)
{
	uintptr_t first = (uintptr_t)pack_map(512 * KB, PROT_NONE, RES);
	CHECK(first != 0);
	fk_mmap_fail_next(1, ENOMEM);
	CHECK(pack_map(512 * KB, PROT_NONE, RES) == NULL);
	uintptr_t next = (uintptr_t)pack_map(512 * KB, PROT_NONE, RES);
	CHECK(next != 0);
	CHECK_EQ(next, first + 1024 * KB);
	CHECK_EQ(pack_unmap(first, 512 * KB, outside), 0);
	CHECK_EQ(pack_unmap(next, 512 * KB, outside), 0);
}

int main(void)
{
	RUN(test_side_by_side);
	RUN(test_collapse_when_whole);
	RUN(test_unmap_keeps_huge_unit);
	RUN(test_unmap_all);
	RUN(test_read_write_from_top);
	RUN(test_dontfork_across_fork);
	RUN(test_refused_map);
	fk_uninstall();
	return CHECK_DONE();
}
