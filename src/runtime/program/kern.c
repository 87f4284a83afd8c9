/* kern.c - the program room's system calls (kern.h), each one call of the core's table
 * (sp_os): the only file of the room that names it. */
#include <sys/mman.h>
#include <errno.h>
#include <sys/prctl.h>

#include "internal.h"
#include "program/kern.h"

#define RESERVE (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)

int kern_map(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	return sp_os->mmap(addr, len, prot, flags, fd, off, out);
}

int kern_unmap(void *addr, size_t len)
{
	return sp_os->munmap(addr, len);
}

int kern_protect(void *addr, size_t len, int prot)
{
	return sp_os->mprotect(addr, len, prot);
}

int kern_remap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
	       void **out)
{
	return sp_os->mremap(old, old_len, new_len, flags, new_addr, out);
}

int kern_reserve_at(void *at, size_t len, bool replace)
{
	void *out;
	return sp_os->mmap(at, len, PROT_NONE,
			   RESERVE | (replace ? MAP_FIXED : MAP_FIXED_NOREPLACE), -1, 0, &out);
}

int kern_fresh_at(void *at, size_t len)
{
	void *out;
	return sp_os->mmap(at, len, PROT_READ | PROT_WRITE, RESERVE | MAP_FIXED, -1, 0, &out);
}

int kern_advise(void *addr, size_t len, int advice)
{
	return sp_os->madvise(addr, len, advice);
}

int kern_want_huge(void *addr, size_t len, bool huge)
{
	return sp_os->madvise(addr, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
}

int kern_collapse(void *addr, size_t len)
{
	return sp_os->madvise(addr, len, MADV_COLLAPSE);
}

int kern_drop(void *addr, size_t len)
{
	return sp_os->madvise(addr, len, MADV_DONTNEED);
}

int kern_populate(void *addr, size_t len)
{
	return sp_os->madvise(addr, len, MADV_POPULATE_WRITE);
}

int kern_open(const char *path, int flags, int mode)
{
	return sp_os->open(path, flags, mode);
}

int kern_close(int fd)
{
	return sp_os->close(fd);
}

ssize_t kern_write(int fd, const void *buf, size_t len)
{
	return sp_os->write(fd, buf, len);
}

int kern_pagemap_scan(int fd, void *scan_arg)
{
	return sp_os->ioctl(fd, PR_PAGEMAP_SCAN, scan_arg);
}

int kern_memfd(const char *name, unsigned flags)
{
	return sp_os->memfd_create(name, flags);
}

int kern_truncate(int fd, off_t len)
{
	return sp_os->ftruncate(fd, len);
}

uintptr_t kern_brk(uintptr_t want)
{
	return sp_os->brk(want);
}

int kern_shmget(key_t key, size_t size, int flags)
{
	return sp_os->shmget(key, size, flags);
}

int kern_shmctl(int id, int cmd, struct shmid_ds *buf)
{
	return sp_os->shmctl(id, cmd, buf);
}

pid_t kern_tid(void)
{
	return sp_os->gettid();
}

bool kern_thread_gone(pid_t tid)
{
	return sp_os->tgkill0(tid) == -ESRCH;
}

long kern_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
		unsigned long a5)
{
	return sp_os->prctl5(option, a2, a3, a4, a5);
}

bool kern_seccomp(void)
{
	return sp_os->prctl(PR_GET_SECCOMP, 0) != 0;
}

uint64_t kern_now_ns(void)
{
	return sp_os->now_ns();
}
