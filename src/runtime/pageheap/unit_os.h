/* unit_os.h - the page heap's one door to the kernel: verbs that say what the heap
 * means (plain memory for units, hugetlb pages, a move into place, advice to make
 * huge, a release, a look at what is resident, ...), over the core's table of system
 * calls (sp_os, src/core/os.h), so that a unit test runs the heap on the fake kernel.
 * Each verb is one call of the table, inline: the heap's hot paths (a release, the
 * clock of its timed looks) pay nothing for the door.
 *
 * As the table: every verb returns 0 (or a value >= 0) on success or a negative errno
 * value, and leaves errno as it found it; out, where there is one, is where the
 * kernel put the memory. */
#ifndef SP_PAGEHEAP_UNIT_OS_H
#define SP_PAGEHEAP_UNIT_OS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "internal.h"

#define UNIT_OS_ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define UNIT_OS_LAZY (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

/* ---- memory of the range: units, their pages ---- */

/* Plain read-write memory at [at, at+len), over what was there (charged as it is
 * touched): what a unit is without hugetlb pages. */
static inline int unit_map_plain(void *at, size_t len, void **out)
{
	return sp_os->mmap(at, len, PROT_READ | PROT_WRITE, UNIT_OS_LAZY | MAP_FIXED, -1, 0, out);
}

/* As unit_map_plain, reserved as the program asked (noreserve: MAP_NORESERVE or 0;
 * without it the commit limit may refuse it). */
static inline int unit_map_program(void *at, size_t len, int noreserve, void **out)
{
	return sp_os->mmap(at, len, PROT_READ | PROT_WRITE, UNIT_OS_ANON | MAP_FIXED | noreserve,
			   -1, 0, out);
}

/* Plain read-write memory at [at, at+len) only where nothing is mapped
 * (MAP_FIXED_NOREPLACE; a kernel without it takes at as a hint: see out). */
static inline int unit_map_new(void *at, size_t len, void **out)
{
	return sp_os->mmap(at, len, PROT_READ | PROT_WRITE, UNIT_OS_LAZY | MAP_FIXED_NOREPLACE,
			   -1, 0, out);
}

/* Address space at [at, at+len) that costs nothing until made accessible (PROT_NONE):
 * over what was there (replace), or only where nothing is mapped. */
static inline int unit_reserve(void *at, size_t len, bool replace, void **out)
{
	return sp_os->mmap(at, len, PROT_NONE,
			   UNIT_OS_LAZY | (replace ? MAP_FIXED : MAP_FIXED_NOREPLACE), -1, 0, out);
}

/* Private hugetlb pages (2 MiB, or 1 GiB if giga), reserved when mapped, anywhere. */
static inline int unit_map_hugetlb(size_t len, bool giga, void **out)
{
	return sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE,
			   UNIT_OS_ANON | MAP_HUGETLB | (giga ? MAP_HUGE_1GB : MAP_HUGE_2MB), -1, 0,
			   out);
}

/* As unit_map_hugetlb, at at, only where nothing is mapped. */
static inline int unit_map_hugetlb_at(void *at, size_t len, bool giga, void **out)
{
	return sp_os->mmap(at, len, PROT_READ | PROT_WRITE,
			   UNIT_OS_ANON | MAP_HUGETLB | (giga ? MAP_HUGE_1GB : MAP_HUGE_2MB) |
				   MAP_FIXED_NOREPLACE,
			   -1, 0, out);
}

/* The memory at [from, from+len) moved whole to to (mremap MREMAP_FIXED), its pages
 * with it; keep: from stays mapped, empty (MREMAP_DONTUNMAP). */
static inline int unit_move(void *from, size_t len, void *to, bool keep, void **out)
{
	int flags = MREMAP_MAYMOVE | MREMAP_FIXED | (keep ? MREMAP_DONTUNMAP : 0);
	return sp_os->mremap(from, len, len, flags, to, out);
}

/* Reserved address space made read-write (mprotect). */
static inline int unit_make_rw(void *at, size_t len)
{
	return sp_os->mprotect(at, len, PROT_READ | PROT_WRITE);
}

/* Memory (the range's, a block's, the heap's own tables) unmapped. */
static inline int unit_unmap(void *at, size_t len)
{
	return sp_os->munmap(at, len);
}

/* ---- advice: as madvise(2) ---- */

static inline int unit_advise(void *addr, size_t len, int advice)
{
	return sp_os->madvise(addr, len, advice);
}

/* THP wanted here (MADV_HUGEPAGE), or not (MADV_NOHUGEPAGE). */
static inline int unit_want_huge(void *addr, size_t len, bool huge)
{
	return sp_os->madvise(addr, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

/* Made huge now, from what is resident (MADV_COLLAPSE). */
static inline int unit_collapse(void *addr, size_t len)
{
	return sp_os->madvise(addr, len, MADV_COLLAPSE);
}

/* The pages given back to the kernel: they read as zero next time (MADV_DONTNEED). */
static inline int unit_release(void *addr, size_t len)
{
	return sp_os->madvise(addr, len, MADV_DONTNEED);
}

/* The pages the kernel's to take when it wants them (MADV_FREE): a huge page a part of
 * which is so is split at once. */
static inline int unit_release_lazy(void *addr, size_t len)
{
	return sp_os->madvise(addr, len, MADV_FREE);
}

/* Faulted in, writable, now (MADV_POPULATE_WRITE). */
static inline int unit_populate(void *addr, size_t len)
{
	return sp_os->madvise(addr, len, MADV_POPULATE_WRITE);
}

/* ---- what is resident: as mincore(2) ---- */

/* Whether the kernel (the table) can say which pages are resident. */
static inline bool unit_resident_known(void)
{
	return sp_os->mincore != NULL;
}

/* One byte a page of [addr, addr+len) in vec: bit 0 set where the page is resident. */
static inline int unit_resident(void *addr, size_t len, unsigned char *vec)
{
	return sp_os->mincore(addr, len, vec);
}

/* ---- the heap's own memory: its tables, blocks outside the range ---- */

/* Private read-write memory anywhere, charged when mapped. */
static inline int meta_map(size_t len, void **out)
{
	return sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, UNIT_OS_ANON, -1, 0, out);
}

/* Private read-write memory anywhere, charged as it is touched (MAP_NORESERVE). */
static inline int meta_map_lazy(size_t len, void **out)
{
	return sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, UNIT_OS_LAZY, -1, 0, out);
}

/* Address space anywhere, PROT_NONE until made read-write (unit_make_rw). */
static inline int meta_reserve(size_t len, void **out)
{
	return sp_os->mmap(NULL, len, PROT_NONE, UNIT_OS_LAZY, -1, 0, out);
}

/* A block outside the range: read-write memory anywhere, mapped with flags. */
static inline int block_map(size_t len, int flags, void **out)
{
	return sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0, out);
}

/* A block outside the range resized to want bytes, moved where the kernel likes. */
static inline int block_resize(void *at, size_t len, size_t want, void **out)
{
	return sp_os->mremap(at, len, want, MREMAP_MAYMOVE, NULL, out);
}

/* ---- the clock: CLOCK_MONOTONIC, in ns ---- */

static inline uint64_t heap_now_ns(void)
{
	return sp_os->now_ns();
}

/* ---- the calling thread's id in the kernel ---- */

static inline pid_t heap_tid(void)
{
	return sp_os->gettid();
}

#endif
