/* shm.h - shared memory on 2 MiB hugetlb pages under --shm (shm.c): the hook mmap.c
 * calls for shared anonymous mappings, and the counts the report prints. */
#ifndef SP_SHM_H
#define SP_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "superpage.h"

/* What --shm did in this process (cumulative: created, not live). */
struct rt_shm_stats {
	uint64_t segments;        /* SysV segments created on 2 MiB hugetlb pages */
	uint64_t segment_bytes;   /* their sizes, rounded up to 2 MiB */
	uint64_t maps;            /* MAP_SHARED|MAP_ANONYMOUS mappings put on them */
	uint64_t map_bytes;       /* their lengths */
	/* Left on base pages, as the program asked, by reason (enum sp_fall): no_pool,
	 * pool_empty, unsupported (the kernel lacks it, or a mapping whose length is not
	 * a multiple of 2 MiB), mmap_failed (the kernel refused: EPERM, EINVAL, ...),
	 * skipped_recent_failure (refused with EPERM before, or too many segments). */
	uint64_t segment_falls[SP_FALL_COUNT];
	uint64_t map_falls[SP_FALL_COUNT];
};
void rt_shm_stats_get(struct rt_shm_stats *out);

/* A MAP_SHARED|MAP_ANONYMOUS mapping the program asked for with no address: mapped on
 * 2 MiB hugetlb pages (a memfd) when --shm is on, the mapping qualifies and the pool
 * can hold it. NULL when it was not taken or could not be had (the fall is counted):
 * the caller then maps it as asked. errno is left as it was. */
void *shm_map(size_t len, int prot, int flags);
/* mremap of such a mapping, whole, to grow: the kernel refuses to grow hugetlb memory,
 * so a mapping of the same file, grown, takes its place (or, not shared with another
 * process, a copy). 0: not such a call (the kernel's to answer); 1: done, *out set;
 * -errno. */
int shm_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr, void **out);
/* The program unmapped [a, a+len): what of those mappings it held is forgotten. */
void shm_unmapped(uintptr_t a, size_t len);
/* A munmap or mprotect of [a, a+*len) that ends where a mapping of those ends as the
 * program asked for it (its length rounded up to 2 MiB pages) is taken to the mapping's
 * end: the kernel refuses part of a hugetlb page. */
void shm_whole(uintptr_t a, size_t *len);
/* The kernel moved or resized [old, old+old_len) to [to, to+new_len). */
void shm_moved(uintptr_t old, size_t old_len, uintptr_t to, size_t new_len);

#endif
