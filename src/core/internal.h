/* internal.h - what the core's files share with each other and with the unit tests. */
#ifndef SP_INTERNAL_H
#define SP_INTERNAL_H

#include <stdarg.h>

#include "superpage.h"
#include "os.h"

#define SP_2M_SIZE (2ull << 20)
#define SP_1G_SIZE (1ull << 30)

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

#ifndef MAP_HUGE_1GB
#define MAP_HUGE_1GB (30 << MAP_HUGE_SHIFT)
#endif

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 4u
#endif

#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41
#define PR_GET_THP_DISABLE 42
#endif

/* The kernel's system calls, as libc's syscall() makes them (-1 and errno), but never
 * through the symbol syscall, which the runtime interposes (libc_syscall.c). */
#if defined(__x86_64__) || defined(__aarch64__)
#define SP_HAVE_RAW_SYSCALL 1
#endif
long sp_syscall(long n, ...);
/* The same, returning -errno; errno untouched. */
long sp_syscall_raw(long n, long a, long b, long c, long d, long e, long f);
/* What sp_syscall does, in two steps for an interposer of syscall (libc_syscall.c) that
 * looks at the call first: the six arguments read from ap (va_start'ed after the
 * number; the caller va_ends it), then the call made with them (-1 and errno). */
void sp_syscall_args(va_list ap, long a[6]) __attribute__((visibility("hidden")));
long sp_syscall_a(long n, const long a[6]) __attribute__((visibility("hidden")));
#define syscall sp_syscall


/* PAGEMAP_SCAN (Linux 6.7) for machine.c and promote_scan.c, defined here: Debian 12's
 * headers are older. */
#define PR_PAGEMAP_SCAN 0xc0606610ul /* _IOWR('f', 16, struct pm_scan_arg) */
#define PR_PAGE_IS_PRESENT (1ull << 3)
#define PR_PAGE_IS_PFNZERO (1ull << 5)
#define PR_PAGE_IS_HUGE (1ull << 6)

struct pr_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};

struct pr_region {
	uint64_t start, end, categories;
};

/* /proc/PID/WHAT opened through the seam: -ESRCH if the process is gone, -EACCES if
 * it may not be read. */
int sp_open_proc(pid_t pid, const char *what, int flags);

/* ---- smaps (coverage.c) ----
 * Streams an smaps file from fd. Every mapping is added to cov (if not NULL).
 * If v is not NULL, only mappings overlapping [lo, hi) are added to v.
 * Returns 0, or -EPROTO if the text is not smaps (no mapping header at all while
 * there were non-empty lines, or a number too large to be real), -errno on read errors. */
int sp_smaps_parse(int fd, struct sp_coverage *cov, uintptr_t lo, uintptr_t hi,
		   struct sp_verify *v);
/* Calls fn for each name in a directory but . and .., through the seam (opendir
 * would malloc). 0, or -errno if the directory cannot be opened or read. */
int sp_dir_each(const char *path, void (*fn)(const char *name, void *arg), void *arg);
/* Classifies one smaps header line's perms and path (path may be ""). */
enum sp_region sp_region_classify(const char *perms, const char *path);
/* The stack pointers of a process's threads that are not on a CPU (pid 0: this
 * one), sorted, from /proc/PID/task/TID/syscall; at most SP_THREADS_MAX. */
#define SP_THREADS_MAX 512
struct sp_threads {
	int n;
	uintptr_t sp[SP_THREADS_MAX];
};
/* The number read, or -errno if the task directory cannot be opened (t->n is 0). */
int sp_threads_read(pid_t pid, struct sp_threads *t);
/* sp_smaps_parse that also tells thread stacks from other anonymous memory: a
 * private read-write anonymous mapping right above a PROT_NONE one (its guard)
 * that holds one of t's stack pointers is SP_REGION_STACK. t may be NULL. */
int sp_smaps_parse_threads(int fd, struct sp_coverage *cov, uintptr_t lo, uintptr_t hi,
			   struct sp_verify *v, const struct sp_threads *t);
/* One mapping of an smaps (or maps) file, as sp_smaps_walk hands it over. */
struct sp_smaps_map {
	uintptr_t start, end;
	char perms[5];
	bool file;            /* inode not 0 */
	bool hg, nh;          /* VmFlags: MADV_HUGEPAGE, MADV_NOHUGEPAGE */
	enum sp_region region;
	uint64_t rss, anon_huge, shmem_pmd, file_pmd, priv_hugetlb, shared_hugetlb, kernel_page;
	uint64_t referenced;  /* Referenced: bytes accessed since the last clear_refs */
};
/* Streams an smaps file from fd and calls fn once per mapping, with every field of
 * the mapping read (a maps file gives the headers only: the numbers are 0). t as
 * for sp_smaps_parse_threads (NULL: no thread stacks told apart). A non-zero value
 * from fn stops the walk and is returned; else 0, -EPROTO or -errno as
 * sp_smaps_parse. */
int sp_smaps_walk(int fd, const struct sp_threads *t,
		  int (*fn)(const struct sp_smaps_map *m, void *arg), void *arg);

/* ---- cached view of the machine (probe.c) ----
 * The allocator asks this, not the kernel. Filled on first use, re-filled by sp_refresh. */
struct sp_view {
	uint64_t base_page_size;
	bool has_2m, has_1g;           /* hugetlb page size present in sysfs */
	bool thp_present;
	bool thp_never;                /* the PMD size's THP mode is never */
	/* only thp_disable_prctl and thp_disabled_here are filled: the rest costs too
	 * much at every program's start (sp_view_has_collapse). */
	struct sp_features features;
};
const struct sp_view *sp_view_get(void);
void sp_view_fill(struct sp_view *v);
void sp_view_refresh(void);
/* Whether MADV_COLLAPSE works here, probed on first use (after each refresh). */
bool sp_view_has_collapse(void);
/* The huge page sizes and their system-wide pools into sys (sizes, pools, n_sizes);
 * the rest of sys as it was. */
void sp_probe_pools(struct sp_system *sys);
/* The cheap part of sp_probe: base_page_size, default_huge_size, page_sizes, pools
 * and mounts (sysfs, /proc/meminfo, /proc/mounts); no probing mmap, the rest zero. */
void sp_probe_hugetlb(struct sp_system *sys);
/* How sp_probe_hugetlb_via opens /proc/meminfo and /proc/mounts (an fd read with
 * sp_os->read and closed with sp_os->close, or -errno) and lists the directory of huge
 * page sizes (each name but . and ..; 0 or -errno). */
struct sp_files {
	int (*open)(const char *path);
	int (*list)(const char *dir, void (*fn)(const char *name, void *arg), void *arg);
};
/* sp_probe_hugetlb with those three read through files (NULL: the seam, as
 * sp_probe_hugetlb); the pools' counts are read through the seam. libhugetlbfs.so
 * reads them as the program would, through libc (src/htlb/env.c). */
void sp_probe_hugetlb_via(struct sp_system *sys, const struct sp_files *files);
/* sysfs directory of a pool: system-wide if node < 0. */
int sp_pool_dir(uint64_t page_size, int node, char *buf, size_t len);
/* The cheap part of THP's state, for every program's start: enabled, pmd_size and the
 * PMD size's own mTHP mode (in mthp[0], n_mthp 0 or 1). -errno if THP's enabled file
 * cannot be read (t->present false). */
int sp_thp_read_pmd(struct sp_thp *t);
/* Parses "always [madvise] never" into "madvise"; a value without brackets is copied. */
void sp_mode_selected(const char *text, char *out, size_t len);

/* ---- block registry (registry.c): address -> block, no malloc ---- */
int sp_registry_add(const struct sp_block *b);          /* -ENOMEM if it cannot grow */
int sp_registry_find(const void *addr, struct sp_block *out);
int sp_registry_remove(const void *addr, struct sp_block *out);
void sp_registry_lock_for_fork(void);
void sp_registry_unlock_after_fork(void);

/* ---- the rung service (rung.c) ----
 * Where hugetlb is tried and the ladder falls, and the one table every fall of the
 * project is counted in: by site, rung and reason. */
enum sp_site {
	SP_SITE_ALLOC,      /* sp_alloc */
	SP_SITE_HEAP,       /* the runtime's page heap and the program's mappings */
	SP_SITE_BRK,        /* the program break */
	SP_SITE_TEXT,       /* --text: text and data moved */
	SP_SITE_SHM_SYSV,   /* --shm: SysV segments */
	SP_SITE_SHM_ANON,   /* --shm: shared anonymous mappings */
	SP_SITE_STACKS,     /* --stacks: thread stacks */
	SP_SITE_COUNT
};
void sp_fall(enum sp_site site, enum sp_backing rung, enum sp_fall why);
void sp_falls_get(enum sp_site site, uint64_t out[SP_BACKING_COUNT][SP_FALL_COUNT]);
void sp_falls_reset(enum sp_site site);
/* Why the rung's pool refused a mapping with err (-errno): CGROUP for EDQUOT (the
 * hugetlb cgroup's limit, sp_rung_cgroup_room), UNSUPPORTED for EINVAL, NO_POOL or
 * POOL_EMPTY for ENOMEM, MMAP for the rest. */
enum sp_fall sp_rung_refusal(enum sp_backing rung, int err);
/* Pages the rung's pool can give now: free and not reserved (0 if it cannot be
 * read), with overcommit what it may still add; no more than the hugetlb cgroup's
 * limit leaves room for (sp_limits_hugetlb). */
long sp_rung_room(enum sp_backing rung, bool overcommit);
/* Under a hugetlb cgroup limit, for a map function: before it maps len bytes of the
 * rung's pages, whether they fit the room the limit leaves (0, or -EDQUOT:
 * SP_FALL_CGROUP); once mapped at p, its pages faulted in now, so that the limit
 * refuses them here and not by a SIGBUS at the program's first touch (0, or -EDQUOT:
 * the caller unmaps). Without such a limit, 0 and nothing done. */
int sp_rung_cgroup_room(enum sp_backing rung, size_t len);
int sp_rung_charge(enum sp_backing rung, void *p, size_t len);
/* A rung refused lately: requests of at least min_size are not asked before until_ns
 * (all zero: none). */
struct sp_rung_skip {
	_Atomic uint64_t until_ns, min_size;
};
bool sp_rung_skipping(struct sp_rung_skip *k, uint64_t size);
/* Pages of the rung went back to its pool: ask it again. */
void sp_rung_forget(struct sp_rung_skip *k);
struct sp_rung_ask {
	enum sp_site site;
	enum sp_backing rung;        /* SP_BACKING_2M or SP_BACKING_1G */
	struct sp_rung_skip *skip;   /* where refusals are remembered; NULL: nowhere */
	uint64_t size;               /* the request's (a refusal skips those as large; 0: all) */
	bool strict;                 /* ask even if refused lately */
};
/* Tries the rung: SP_FALL_SKIPPED if it refused a request as large lately, else
 * map(arg), which maps and returns 0 or -errno (-EIO for a refused move that left
 * a hole: MMAP). -1 if it mapped; else the reason, counted in the table and
 * remembered in *skip. */
int sp_rung_try(const struct sp_rung_ask *a, int (*map)(void *arg), void *arg);
/* sp_rung_try of a private anonymous mapping of len bytes (a multiple of the rung's
 * page) on the rung's pages, anywhere, reserved at map time (never MAP_NORESERVE),
 * with extra flags (MAP_POPULATE); *out the mapping when it returns -1. */
int sp_rung_map(const struct sp_rung_ask *a, size_t len, int extra, void **out);
/* A pool of that page size as sp_offer_get reads it (all zero if it cannot be read). */
void sp_offer_pool_read(uint64_t page_size, struct sp_offer_pool *o);

/* ---- the limits this process runs under (limits.c) ----
 * Its memory cgroup's limit (v1 memory.limit_in_bytes; v2 memory.max, memory.high),
 * the hugetlb controller's (v1 hugetlb.SIZE.limit_in_bytes, v2 hugetlb.SIZE.max, and
 * their rsvd. counterparts), for its own cgroup and every one above it, and
 * RLIMIT_AS/RLIMIT_DATA. The cgroups are found once; their figures read when the
 * caller likes, through the seam, with no malloc. */
#define SP_LIMIT_NONE UINT64_MAX
#define SP_LIMIT_LEVELS 8
#define SP_LIMIT_PATH 256
struct sp_limit_dirs {
	int mem_version, huge_version; /* the controllers' cgroup version; 0: not mounted */
	/* The directories, from the process's own cgroup up, that hold a limit (at
	 * most SP_LIMIT_LEVELS, the nearest). */
	int n_mem, n_huge;
	char mem[SP_LIMIT_LEVELS][SP_LIMIT_PATH], huge[SP_LIMIT_LEVELS][SP_LIMIT_PATH];
};
/* From /proc/self/cgroup and /proc/self/mountinfo (not read if the memory controller
 * is at its usual mount, with the process's cgroup in it), through scratch (a line
 * longer than it is skipped); the hugetlb levels and version only with huge (0
 * without). 0, or -errno if those cannot be read (d: none). */
int sp_limits_find(struct sp_limit_dirs *d, bool huge, char *scratch, size_t len);
/* The process's, found on first use (a limit set later on a cgroup that had none
 * when the process started is not seen): sp_limit_dirs() the memory levels only,
 * sp_limit_dirs_huge() the hugetlb levels too, for sp_limits_hugetlb: n_huge -1
 * (no room) if the files were there at the start and are not when first asked. */
const struct sp_limit_dirs *sp_limit_dirs(void);
const struct sp_limit_dirs *sp_limit_dirs_huge(void);
/* For the fake kernel's tests, as it is installed (no other thread in those two):
 * the next call looks again, in the kernel the process has now. */
void sp_limits_forget(void);
struct sp_limits {
	/* The memory cgroup level with the least room: its limit (v2: the lower of max
	 * and high), its usage and the file cache in it; the room is the limit less the
	 * usage that is not file cache (the kernel reclaims that first). SP_LIMIT_NONE
	 * (usage and file 0) if no level has a limit. */
	uint64_t mem_limit, mem_usage, mem_file, mem_room;
	uint64_t as_limit, data_limit; /* RLIMIT_AS, RLIMIT_DATA (soft); SP_LIMIT_NONE */
};
/* The memory cgroup's figures into out (mem_*), memory.stat read through scratch. */
void sp_limits_memory(const struct sp_limit_dirs *d, struct sp_limits *out, char *scratch,
		      size_t len);
/* The room the hugetlb controller leaves for pages of 2 MiB (1 GiB with giga), in
 * bytes, the least over the levels and over the fault-time and reservation counters;
 * with the limit and usage where it is least. SP_LIMIT_NONE if none applies. */
uint64_t sp_limits_hugetlb(const struct sp_limit_dirs *d, bool giga, uint64_t *limit,
			   uint64_t *usage);
/* RLIMIT_AS and RLIMIT_DATA into out. */
void sp_limits_rlimits(struct sp_limits *out);

/* ---- small string helpers (parse.c) ---- */
size_t sp_strlcpy(char *dst, const char *src, size_t len);
/* Parses a decimal uint64 at *s, advancing it. -ERANGE on overflow, -EINVAL if no digit. */
int sp_scan_u64(const char **s, uint64_t *out);



/* ---- a page one process publishes for others to read (live.c) ----
 * A private mapping of a memfd (so that it shows by name in /proc/PID/maps, and a
 * forked child writes its own copy), read by others through /proc/PID/mem. It starts
 * with this head; its count, odd while the page is written, lets a reader take a
 * consistent copy without a lock. */
struct sp_pub_head {
	uint32_t magic, version;
	uint64_t seq;
};
/* len bytes (a multiple of 4096) mapped from a memfd named name, zeroed; NULL if they
 * cannot be had. */
void *sp_pub_map(const char *name, size_t len);
/* Copies the len bytes of snap into page under its count (snap's seq aside). */
void sp_pub_put(void *page, const void *snap, size_t len);
/* A consistent copy of the len bytes that process pid publishes in its mapping of
 * the memfd named name: 0; -ENOENT if it maps none, or one without that magic and
 * version; -EACCES or -EPERM if its memory cannot be read; -ESRCH if it is gone;
 * -EAGAIN if it kept changing while read. */
int sp_pub_read(pid_t pid, const char *name, void *out, size_t len, uint32_t magic,
		uint32_t version);

/* ---- a heap's account while it runs (live.c) ----
 * A process under superpage run publishes its heap's counts in a page of its own,
 * for superpage stat. The layout is between this build's runtime and command. */
#define SP_LIVE_NAME "superpage-live"
#define SP_LIVE_VERSION 3
struct sp_live {
	uint32_t magic, version;
	uint64_t seq;               /* odd while the page is being written */
	int32_t pid;                /* the publisher (a forked child's copy says its parent) */
	uint32_t reserved;
	uint64_t at_ns;             /* CLOCK_MONOTONIC when published */
	uint64_t in_use, peak_in_use, mallocs, frees;
	uint64_t units[SP_BACKING_COUNT], units_peak;
	uint64_t large_blocks, large_bytes, released_units, reused_units;
	uint64_t unit_used_bytes, unit_free_bytes, full_unit_bytes, kept_units;
	uint64_t falls;             /* rungs asked for and not had, all reasons */
	uint64_t falls_by[SP_FALL_COUNT]; /* the same by reason */
};
/* The publisher's page, a private mapping of a memfd named SP_LIVE_NAME (the fd is
 * closed at once); NULL if it cannot be had. */
struct sp_live *sp_live_map(void);
/* Copies *snap (magic, version and seq aside) into the page under its count. */
void sp_live_put(struct sp_live *page, const struct sp_live *snap);
/* The account pid published: 0; -ENOENT if it publishes none (not under superpage
 * run, or not yet); -EACCES or -EPERM if its memory cannot be read; -ESRCH if it is
 * gone; -EAGAIN if it kept changing while read. */
int sp_live_read(pid_t pid, struct sp_live *out);

/* ---- superpage run's page, shared with the program it starts (live.c) ----
 * With --stats, superpage run forks, maps a memfd of one page shared, and names it
 * to the program in SP_RUN_PAGE_ENV ("FD:PID"); the process PID (each of its images,
 * across execve) writes there what the command says once it has ended: its heap's
 * account as last published (for a program that leaves by exit_group, or is killed,
 * and writes none), whether it wrote its account at exit or why it could not. */
#define SP_RUN_NAME "superpage-run"
#define SP_RUN_MAGIC 0x53505255u /* "SPRU" */
#define SP_RUN_VERSION 2
#define SP_RUN_TREE_MAGIC 0x53505254u /* "SPRT" */
/* The falls of the program's whole tree: each process that maps the page (the
 * program, the processes it forks, and those started from it that reach the page
 * through its holder) adds its own, as they happen, for the line said once the
 * program has ended (run_falls.c). Written with atomics (__atomic), never cleared. */
struct sp_run_tree {
	uint32_t magic;             /* SP_RUN_TREE_MAGIC: set up by superpage run */
	uint32_t say;               /* the line is to be said once the program has ended */
	uint32_t said;              /* taken by whoever says it (sp_run_page_claim) */
	uint32_t split_state;       /* the first split: 0 none, 1 being written, 2 written */
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT];
	uint64_t splits;            /* runs split between the pool and plain memory */
	uint64_t split_wanted, split_had; /* the first: pages of 2 MiB wanted, and had */
	int32_t split_rest, split_pid;    /* its other units' backing; the process */
	uint32_t empty_state[2];    /* 2m, 1g: the pool at the first pool_empty (as split) */
	int64_t empty_free[2];      /* its free pages then */
};
struct sp_run_page {
	uint32_t magic, version;
	int32_t pid;                /* the process that writes it */
	uint32_t account_written;   /* it wrote its --stats account at exit */
	int32_t stats_errno;        /* the account it could not write, and why */
	char comm[16];
	struct sp_live live;        /* as the live page (sp_live_put) */
	struct sp_run_tree tree;    /* every process's falls (not cleared by attach) */
};
/* The run page SP_RUN_PAGE_ENV names, mapped shared: from the fd FD if it is the
 * page's memfd, else (with a holder) from /proc/HOLDER/fd/FD; NULL if it cannot be
 * had. *root: this process is PID, the one whose account the page holds (its part
 * is set up afresh). An inherited FD of the page is closed in any other process. */
struct sp_run_page *sp_run_page_attach(bool *root);
/* Counts a fall in the tree's part (run_falls.c); a fall from 2m or 1g for want of
 * free pages also keeps what the pool had free the first time. */
void sp_run_tree_fall(struct sp_run_page *p, enum sp_backing rung, enum sp_fall why);
/* A run of wanted 2 MiB units that took the had pages the pool had and rest for the
 * others; the fall counted before it (why, from 2m) is the split's, not counted again. */
void sp_run_tree_split(struct sp_run_page *p, uint64_t wanted, uint64_t had,
		       enum sp_backing rest, enum sp_fall why);

/* ---- line reader over the seam (lines.c): no malloc, lines longer than the
 * buffer are cut (the rest is skipped) and flagged. ---- */
#define SP_LINE_MAX 8192
struct sp_lines {
	int fd;
	size_t start, end;
	bool eof;
	bool cut;           /* the last line returned was longer than SP_LINE_MAX-1 */
	bool unterminated;  /* the last line returned had no newline (end of file) */
	char buf[4096];
	char line[SP_LINE_MAX];
};
void sp_lines_init(struct sp_lines *l, int fd);
/* 1 with *line set (NUL-terminated, no newline), 0 at end, -errno on a read error. */
int sp_lines_next(struct sp_lines *l, const char **line);
#endif
