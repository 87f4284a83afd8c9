/* mmap.h - what mmap.c and mremap.c share: the program's mappings, with the heap's
 * range and the emulated break in them. */
#ifndef SP_MMAP_H
#define SP_MMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

#define EXPORT __attribute__((visibility("default")))

#pragma GCC visibility push(hidden)

/* errno = err; MAP_FAILED. */
static inline void *fail(int err)
{
	errno = err;
	return MAP_FAILED;
}

/* Where [addr, addr+len) meets the heap's range. */
bool in_heap(const void *addr, size_t len);
/* Where [addr, addr+len) meets the range of the emulated program break. */
bool in_brk(const void *addr, size_t len);
/* Before a fixed mapping of the program's lands on [addr, addr+len) (page-aligned,
 * and allowed: fixed_into_heap_refused): hugetlb memory of the runtime's there is
 * copied to THP memory in place, and the pages of its mappings' units that it had
 * unmapped are its own again. 0 or -errno (ENOMEM: nothing changed). */
int before_fixed(const void *addr, size_t len);
/* The kernel's mmap, with errno and MAP_FAILED. */
void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
/* A fixed mapping into the heap's range: allowed where the program owns every page
 * (mappings it had from us), or had them and unmapped them (pages of its large
 * mappings' units, free units), which then go back to plain memory when it unmaps
 * them; anywhere else it would destroy the heap under the program's feet. */
bool fixed_into_heap_refused(void *addr, size_t len);
/* munmap of a page-aligned range that meets no chunk of pack.c's. 0 or -errno. */
int unmap_range(uintptr_t a, size_t len);
/* madvise over [a, end) (page-aligned), in pieces: the heap's range and the break's
 * answer for their hugetlb memory (pages_advise, brk_advise), the kernel for the
 * rest. The first error is returned, after every piece was advised, as the kernel
 * does with a range that has holes. */
int advise_pieces(uintptr_t a, uintptr_t end, int advice);

#pragma GCC visibility pop

#endif
