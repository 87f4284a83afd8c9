/* fake_kernel.h - a fake kernel behind struct sp_os for the unit tests: files, pools, mappings, faults. */
#ifndef FAKE_KERNEL_H
#define FAKE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "os.h"

extern const struct sp_os fk_os;

/* Forgets every file, pool, fd and knob, and every mapping: the library may still use
 * memory it mapped before (its block registry), so a forgotten mapping stays real and
 * out of every count, smaps included, until something munmaps it. */
void fk_reset(void);
/* sp_os_use(&fk_os) / sp_os_use(NULL). */
void fk_install(void);
void fk_uninstall(void);
/* Files and pools like the machine these tests were written on (see fake_kernel.c). */
void fk_machine_default(void);
/* fk_reset, fk_machine_default, 2M and 1G pools of that many pages (all free), and
 * fk_install: a test's usual start. */
void fk_setup(long pages_2m, long pages_1g);

/* ---- files: path -> contents ----
 * Directories are implied by the paths and listed by getdents with "." and "..", the
 * children in no sorted order. A write replaces a file, except that a write to an
 * "a [b] c" mode file selects one of its words (else -EINVAL), as sysfs does. */
void fk_file(const char *path, const char *text);
void fk_file_n(const char *path, const char *data, size_t len);
/* Loads a host file's bytes as a fake file. 0, or -errno. */
int fk_file_load(const char *path, const char *host_path);
void fk_file_remove(const char *path);
/* Removes every file whose path starts with prefix. */
void fk_file_remove_tree(const char *prefix);
/* The current static contents of a file, NULL if none (valid until the next change). */
const char *fk_file_get(const char *path);
/* open() of that path fails with -err (EACCES: another user's smaps); 0 turns it off. */
void fk_file_error(const char *path, int err);
/* open() for writing fails with -err (EACCES: not root); 0 turns it off. */
void fk_write_error(int err);
/* Number of fds the library has open on the fake (files, dirs, memfds). */
int fk_open_fds(void);

/* ---- hugetlb pools: their sysfs files are generated from this state ---- */
/* Creates (or resets) the pool of that page size: total pages, free pages. */
void fk_pool(uint64_t page_size, long total, long free_pages);
void fk_pool_remove(uint64_t page_size);
/* At most max pages are granted by writes to nr_hugepages (-1: no limit). */
void fk_pool_grantable(uint64_t page_size, long max);
long fk_pool_total(uint64_t page_size);
long fk_pool_free(uint64_t page_size);
/* Number of NUMA nodes shown (the pools live on node 0). */
void fk_nodes(int n);

/* ---- mmap / munmap ---- */
/* The next n mmap calls fail with -err. */
void fk_mmap_fail_next(int n, int err);
/* Every MAP_HUGETLB mmap of that page size fails with -err (0: off). */
void fk_mmap_fail_huge(uint64_t page_size, int err);
int fk_mmap_calls(void);                   /* all mmap calls */
int fk_mmap_huge_calls(uint64_t page_size);/* MAP_HUGETLB calls of that size */
int fk_munmap_calls(void);
/* MAP_HUGETLB|MAP_NORESERVE calls. Such a map takes nothing from the pool, as in the
 * kernel (a touch could SIGBUS): memory handed to a program must never be one. */
int fk_noreserve_hugetlb(void);
int fk_last_mmap_flags(void);

struct fk_map_info {
	uintptr_t start, end;
	int prot, flags;
	uint64_t hpage;        /* hugetlb page size, 0 for base pages */
	bool populated;        /* hugetlb: resident */
	int advice;            /* 1: MADV_HUGEPAGE, -1: MADV_NOHUGEPAGE, 0: none */
	bool resident, huge;   /* base-page mappings */
};
int fk_map_count(void);
size_t fk_map_bytes(void);
/* Bytes of mappings of at least min bytes each: blocks, not the library's own small
 * mappings (its block registry is mapped through the same seam). */
size_t fk_map_bytes_min(size_t min);
/* The tracked mapping containing addr: 0, or -1 if none. */
int fk_map_find(const void *addr, struct fk_map_info *out);
/* Bytes of tracked mappings inside [lo, hi). */
size_t fk_map_bytes_in(uintptr_t lo, uintptr_t hi);
/* Prints the mappings and pools (for a failing test). */
void fk_dump(void);

/* ---- madvise ---- */
/* madvise(advice) fails with -err on memory (len > 0); 0 turns it off. EINVAL also
 * answers the len-0 probe, as a kernel that does not know the advice. */
void fk_madvise_fail(int advice, int err);
int fk_madvise_calls(int advice);          /* calls with len > 0 */
/* MADV_POPULATE_WRITE of an advised range gives huge pages, unless PMD THP is
 * "never" (the 2 MiB mTHP mode, or the global one it inherits). Default on. */
void fk_thp_on_fault(bool on);
/* At most this many bytes of one MADV_POPULATE_WRITE become huge (0: no limit). */
void fk_thp_fault_limit(size_t bytes);
/* MADV_COLLAPSE: 0 succeeds and marks huge; else fails with -err (EINVAL: unknown). */
void fk_collapse(int err);
/* mremap fails with -err, moving nothing (0: it moves real memory and its records). */
void fk_mremap_fail(int err);

/* ---- the rest ---- */
/* getrlimit(resource) gives cur (RLIM_INFINITY, as after fk_reset: none). */
void fk_rlimit(int resource, uint64_t cur);
/* Zeroes the call counters (mmap, munmap, madvise, memfd, NORESERVE). */
void fk_counters_reset(void);
/* PR_GET_THP_DISABLE returns value; a negative value is an error (-EINVAL: old kernel). */
void fk_prctl_thp(int value);
/* memfd_create fails with -err (0: succeeds). */
void fk_memfd_error(int err);
int fk_memfd_calls(void);
/* The flags of the last memfd_create. */
unsigned fk_memfd_last_flags(void);

/* ---- the break, SysV shared memory, ftruncate ---- */
/* The kernel's break starts at an address of the fake's, with no memory behind it, and
 * moves up to that many bytes above it (64 MiB after fk_reset). */
void fk_brk_max(size_t bytes);
uintptr_t fk_brk_now(void);
int fk_brk_calls(void);
/* SysV segments: SHM_HUGETLB ones reserve 2 MiB pages of the fake's pool at shmget
 * (ENOMEM when it has too few free) and give them back at IPC_RMID; IPC_STAT says the
 * size they were made with. Every SHM_HUGETLB shmget fails with -err (EPERM: not in
 * vm.hugetlb_shm_group; 0: off). */
void fk_shm_huge_error(int err);
int fk_shm_huge_calls(void);
/* The size segment id was made with, 0 if there is none; its 2 MiB pages, -1 if none. */
size_t fk_shm_size(int id);
long fk_shm_huge_pages(int id);
/* ftruncate of a fake fd fails with -err (0: it succeeds). */
void fk_truncate_error(int err);
int fk_truncate_calls(void);

/* ---- filesystems (statfs, access, O_TMPFILE) ----
 * A filesystem mounted at path: statfs of path and below gives type and bsize, access
 * and O_TMPFILE there fail with -access_err (0: allowed). Any other path that exists
 * is ext4. fk_reset forgets them. */
void fk_fs(const char *path, long type, long bsize, int access_err);
/* open(O_TMPFILE) fails with -err (EOPNOTSUPP: a kernel without it; 0: off). */
void fk_tmpfile_error(int err);
int fk_tmpfile_calls(void);
int fk_unlink_calls(void);
/* fcntl(F_SETFD, 0) calls: fds made not close-on-exec. */
int fk_cloexec_cleared(void);
/* kill0(pid) is 0 for these pids, -ESRCH for any other. */
void fk_pid_add(pid_t pid);
void fk_pid_remove(pid_t pid);
/* now_ns: starts at 1000 s, moves only when told (and by sleep_ns, and by a collapse's
 * cost). */
void fk_clock_set(uint64_t ns);
void fk_clock_advance(uint64_t ns);

/* ---- other processes, for promote (fake_proc.c) ----
 * A fake process has mappings and 2 MiB ranges; its /proc/PID/{smaps,maps,status,
 * pagemap,clear_refs} are generated from them, pidfd_open and process_madvise
 * (MADV_COLLAPSE) answer as Linux 6.18 does: EINVAL for VM_NOHUGEPAGE, a file, shared
 * memory or THP disabled by prctl, ENOMEM for a range not mapped, ESRCH once ended. */
#define FK_NH 1        /* the mapping has VM_NOHUGEPAGE */
#define FK_FILE 2      /* a file's mapping */
#define FK_HUGETLB 4   /* hugetlb: KernelPageSize 2048 kB */
void fk_proc(pid_t pid);
void fk_proc_exit(pid_t pid);
void fk_proc_thp_off(pid_t pid, bool off);
/* It ends after n more collapses. */
void fk_proc_exit_after(pid_t pid, int n);
/* fn(pid) runs after n more collapses (in the fake kernel: it may change the process). */
void fk_proc_after(pid_t pid, int n, void (*fn)(pid_t pid));
void fk_proc_map(pid_t pid, uintptr_t start, size_t len, const char *perms, const char *path,
		 int flags);
void fk_proc_unmap(pid_t pid, uintptr_t start);
/* The 2 MiB range at a: present base pages (its first ones), on a huge page, touched
 * during every pause (hot). */
void fk_proc_range(pid_t pid, uintptr_t a, int present, bool huge, bool hot);
bool fk_proc_huge(pid_t pid, uintptr_t a);
/* MADV_COLLAPSE of the range at a fails with -err (0: it succeeds). */
void fk_proc_collapse_err(pid_t pid, uintptr_t a, int err);
/* A collapse takes ns of the fake clock; the one at a takes its own. */
void fk_proc_collapse_cost(uint64_t ns);
void fk_proc_collapse_cost_at(pid_t pid, uintptr_t a, uint64_t ns);
/* Every process_madvise fails with -err (ENOSYS, EINVAL, EPERM, EACCES; 0: off). */
void fk_process_madvise_error(int err);
/* pidfd_open fails with -err (0: off). */
void fk_pidfd_error(int err);
/* PAGEMAP_SCAN answered (default) or -ENOTTY, as before Linux 6.7. */
void fk_pagemap_scan(bool on);
/* 2 MiB ranges process_madvise was asked to collapse, and the address of the i-th;
 * process_madvise calls (the probe of an empty vector included). */
int fk_collapse_calls(void);
int fk_process_madvise_calls(void);
uintptr_t fk_collapse_at(int i);
/* Time spent in sleep_ns. */
uint64_t fk_slept_ns(void);

/* fake_kernel.c's hooks into fake_proc.c (called under its lock). */
void fkp_reset(void);
int fkp_open(const char *path, char **out, size_t *len);
int fkp_write(const char *path, const char *buf, size_t len);
void fkp_sleep(uint64_t ns);
int fkp_pidfd_check(pid_t pid);
struct iovec;
ssize_t fkp_process_madvise(pid_t pid, const struct iovec *iov, size_t n, int advice,
			    uint64_t *clock);
int fkp_pagemap_scan(pid_t pid, void *arg);

#endif
