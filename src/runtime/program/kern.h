/* kern.h - the program room's one door to the kernel: verbs that say what the room
 * means (a reservation, advice to make huge, a collapse, the kernel's break, ...), over
 * the core's table of system calls (sp_os, src/core/os.h), so that a unit test runs
 * the room on the fake kernel. The program's own syscall
 * (libc's, interposed) is libc_syscall.c's.
 *
 * As the table: every verb returns a value >= 0 on success or a negative errno value,
 * and leaves errno as it found it; addresses and lengths are page-aligned unless said. */
#ifndef SP_PROGRAM_KERN_H
#define SP_PROGRAM_KERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct shmid_ds;

#pragma GCC visibility push(hidden)

/* ---- address space: as mmap(2), munmap(2), mprotect(2), mremap(2) ---- */
int kern_map(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out);
int kern_unmap(void *addr, size_t len);
int kern_protect(void *addr, size_t len, int prot);
int kern_remap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
	       void **out);
/* Private anonymous address space at [at, at+len) that costs nothing until it is made
 * accessible (PROT_NONE, MAP_NORESERVE): over what was there (replace), or only where
 * nothing is mapped (MAP_FIXED_NOREPLACE). */
int kern_reserve_at(void *at, size_t len, bool replace);
/* Fresh private anonymous read-write memory at [at, at+len), over what was there
 * (MAP_NORESERVE: charged as it is touched). */
int kern_fresh_at(void *at, size_t len);

/* ---- advice: as madvise(2) ---- */
int kern_advise(void *addr, size_t len, int advice);
/* THP wanted here (MADV_HUGEPAGE), or not (MADV_NOHUGEPAGE). */
int kern_want_huge(void *addr, size_t len, bool huge);
/* Made huge now, from what is resident (MADV_COLLAPSE). */
int kern_collapse(void *addr, size_t len);
/* The memory dropped: it reads as zero next time (MADV_DONTNEED). */
int kern_drop(void *addr, size_t len);
/* Faulted in, writable, now (MADV_POPULATE_WRITE). */
int kern_populate(void *addr, size_t len);

/* ---- files ---- */
int kern_open(const char *path, int flags, int mode);
int kern_close(int fd);
ssize_t kern_write(int fd, const void *buf, size_t len);
/* PAGEMAP_SCAN on an open /proc/PID/pagemap: the regions filled in, or -errno. */
int kern_pagemap_scan(int fd, void *scan_arg);
/* A memfd (flags as memfd_create(2): MFD_HUGETLB, its page size, ...): its fd. */
int kern_memfd(const char *name, unsigned flags);
/* The file's size set to len (a hugetlbfs file is sized by this alone). */
int kern_truncate(int fd, off_t len);

/* ---- the break, SysV shared memory ---- */
/* brk(2): the break after the call (the old one when the kernel refuses); want 0
 * reads it. Never an error. */
uintptr_t kern_brk(uintptr_t want);
int kern_shmget(key_t key, size_t size, int flags);
int kern_shmctl(int id, int cmd, struct shmid_ds *buf);

/* ---- threads, the process, the clock ---- */
pid_t kern_tid(void);
/* Whether no task of that id is left in this process (tgkill with signal 0 says
 * ESRCH); false when it is there or the kernel cannot say. */
bool kern_thread_gone(pid_t tid);
/* prctl(2), all of its arguments passed on: its value, or -errno. */
long kern_prctl(int option, unsigned long a2, unsigned long a3, unsigned long a4,
		unsigned long a5);
/* The process runs under a seccomp mode or filter (or the kernel cannot say). */
bool kern_seccomp(void);
uint64_t kern_now_ns(void);

#pragma GCC visibility pop

#endif
