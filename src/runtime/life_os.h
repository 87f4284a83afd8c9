/* life_os.h - the lifecycle's one door to the kernel (fork.c, clone.c): memory of its
 * own, the walk of what is resident (PAGEMAP_SCAN, mincore), userfaultfd's hold on
 * the other threads' writes, a thread's exit; over the core's table of system calls
 * (sp_os, src/core/os.h). Each verb is one call, inline.
 *
 * As the table: every verb returns a value >= 0 on success or a negative errno value,
 * and leaves errno as it found it. */
#ifndef SP_LIFE_OS_H
#define SP_LIFE_OS_H

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* ---- memory of its own ---- */

/* Private read-write memory anywhere. */
static inline int life_map(size_t len, void **out)
{
	return sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			   out);
}

/* Read-write memory anywhere, shared with the children forked after. */
static inline int life_map_shared(size_t len, void **out)
{
	return sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0,
			   out);
}

static inline int life_unmap(void *at, size_t len)
{
	return sp_os->munmap(at, len);
}

/* ---- what is resident ---- */

/* /proc/self/pagemap opened to read (close-on-exec): its fd. */
static inline int life_pagemap_open(void)
{
	return sp_os->open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0);
}

/* PAGEMAP_SCAN on the open pagemap: the regions filled in. */
static inline int life_pagemap_scan(int fd, struct pr_scan_arg *q)
{
	return sp_os->ioctl(fd, PR_PAGEMAP_SCAN, q);
}

/* As mincore(2): one byte a page, bit 0 set where the page is resident. */
static inline int life_resident(void *addr, size_t len, unsigned char *vec)
{
	return sp_os->mincore(addr, len, vec);
}

static inline int life_close(int fd)
{
	return sp_os->close(fd);
}

/* ---- userfaultfd: the other threads' writes held ---- */

/* A new userfaultfd, close-on-exec, non-blocking: its fd. */
static inline int life_uffd_new(void)
{
	return sp_os->userfaultfd(O_CLOEXEC | O_NONBLOCK);
}

/* UFFDIO_API: the features asked for, and those the kernel has, in api. */
static inline int life_uffd_api(int fd, struct uffdio_api *api)
{
	return sp_os->ioctl(fd, UFFDIO_API, api);
}

static inline int life_uffd_register(int fd, struct uffdio_register *reg)
{
	return sp_os->ioctl(fd, UFFDIO_REGISTER, reg);
}

static inline int life_uffd_protect(int fd, struct uffdio_writeprotect *wp)
{
	return sp_os->ioctl(fd, UFFDIO_WRITEPROTECT, wp);
}

/* ---- threads ---- */

/* This thread (a clone's child) ends with status: the exit system call, not the
 * process's. */
static inline void life_exit_thread(int status)
{
	syscall(SYS_exit, status);
}

#endif
