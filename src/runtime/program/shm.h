/* shm.h - shared memory on 2 MiB hugetlb pages under --shm (shm.c, shm_anon.c): the
 * hooks mmap.c and mremap.c call for shared anonymous mappings, and what shm.c and
 * shm_anon.c share (the counts the report prints: program.h). */
#ifndef SP_SHM_H
#define SP_SHM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "superpage.h"

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

/* ---- between shm.c and shm_anon.c ---- */
#define HUGE_SIZE_SHIFT 26                       /* SHM_HUGE_SHIFT, MFD_HUGE_SHIFT */
#define HUGE_SIZE_BITS (0x3fu << HUGE_SIZE_SHIFT) /* the page size asked, log2 */
#define HUGE_SIZE_2MB (21 << HUGE_SIZE_SHIFT)
enum shm_kind { SHM_SYSV = 0, SHM_ANON = 1 };
extern const char *const shm_what[]; /* "a SysV segment", "a shared anonymous mapping" */
struct shm_shared {
	pthread_mutex_t lock;          /* the SysV table's and the mappings' */
	uint64_t forks;                /* forks and clones this process made; under lock */
	_Atomic uint64_t maps, map_bytes;
};
extern struct shm_shared shm_shared;
/* Counts a fall; true if it is to be said: once per kind and reason in each process
 * with --verbose, every time from -vv on. */
bool shm_fall(enum shm_kind k, enum sp_fall why);
/* --shm is on (or auto) and len is worth 2 MiB pages. */
bool shm_wanted(size_t len);
bool shm_round_2m(size_t len, size_t *out);
/* Whether the 2 MiB pool can hold bytes now: -1, or the reason; *room: its pages
 * to spare. */
int shm_pool_room(size_t bytes, long *room);
void shm_say_pool(enum shm_kind k, int why, size_t len, size_t rounded, long room);

#endif
