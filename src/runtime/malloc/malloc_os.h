/* malloc_os.h - malloc's one door to the kernel: its own memory (the threads'
 * magazines, the fitted blocks' metadata, a scratch page) and a read of the
 * program's mappings, over the core's table of system calls (sp_os, src/core/os.h).
 * Each verb is one call of the table, inline. The memory malloc gives out is the
 * page heap's (pageheap/unit_os.h).
 *
 * As the table: every verb returns a value >= 0 on success or a negative errno value,
 * and leaves errno as it found it. */
#ifndef SP_MALLOC_OS_H
#define SP_MALLOC_OS_H

#include <fcntl.h>
#include <stddef.h>
#include <sys/mman.h>

#include "internal.h"

/* Private read-write memory anywhere, charged as it is touched (MAP_NORESERVE). */
static inline int malloc_map_lazy(size_t len, void **out)
{
	return sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, out);
}

/* Private read-write memory anywhere, charged when mapped. */
static inline int malloc_map(size_t len, void **out)
{
	return sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			   out);
}

static inline int malloc_unmap(void *at, size_t len)
{
	return sp_os->munmap(at, len);
}

/* /proc/self/maps opened to read (close-on-exec): its fd. */
static inline int malloc_maps_open(void)
{
	return sp_os->open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);
}

static inline int malloc_close(int fd)
{
	return sp_os->close(fd);
}

#endif
