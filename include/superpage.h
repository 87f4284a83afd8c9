/* superpage.h - the public API of libsuperpage: discovery, pools, huge allocation, coverage. */
#ifndef SUPERPAGE_H
#define SUPERPAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SP_VERSION_MAJOR 0
#define SP_VERSION_MINOR 1
#define SP_VERSION_PATCH 0
#define SP_VERSION_STRING "0.1.0"

/* Conventions: functions returning int give 0 (or a count) on success and a
 * negative errno value on failure. sp_alloc returns NULL and sets errno.
 * Nothing here prints, exits, or calls malloc. Everything is thread-safe. */

const char *sp_version(void);

/* ---------- backings: the names are a contract (CLI, env, reports) ---------- */

enum sp_backing {
	SP_BACKING_AUTO = 0, /* the best rung available now, per size */
	SP_BACKING_4K,       /* base pages only */
	SP_BACKING_THP,      /* 2 MiB-aligned anonymous memory + MADV_HUGEPAGE */
	SP_BACKING_2M,       /* hugetlb 2 MiB pages, reserved at map time */
	SP_BACKING_1G,       /* hugetlb 1 GiB pages, reserved at map time */
	SP_BACKING_COUNT
};

/* "auto", "4k", "thp", "2m", "1g"; "?" for an out-of-range value. */
const char *sp_backing_name(enum sp_backing b);
/* Parses a backing name (case-insensitive). -EINVAL if unknown. */
int sp_backing_parse(const char *s, enum sp_backing *out);

/* ---------- parsing helpers shared by the CLI and the runtime ---------- */

/* "4096", "64K", "2M", "1G", "1T", with an optional "B" or "iB" after the unit.
 * -EINVAL for bad syntax (signs, spaces, unknown units, empty), -ERANGE on overflow. */
int sp_parse_size(const char *s, uint64_t *out);
/* A plain decimal count, no sign, no unit. -EINVAL / -ERANGE as above. */
int sp_parse_count(const char *s, uint64_t *out);
/* 1/0, yes/no, on/off, true/false (case-insensitive). -EINVAL otherwise. */
int sp_parse_bool(const char *s, bool *out);
/* Writes "2M", "1G", "4K", or a plain byte count when not a whole unit. */
const char *sp_format_size(uint64_t bytes, char *buf, size_t len);

/* ---------- discovery ---------- */

#define SP_MAX_PAGE_SIZES 8
#define SP_MAX_NODES 16
#define SP_MAX_MOUNTS 16
#define SP_MAX_MTHP 16
#define SP_MODE_LEN 24
#define SP_PATH_LEN 256

struct sp_pool {
	uint64_t page_size;  /* bytes */
	int node;            /* -1: system-wide */
	long total;          /* nr_hugepages */
	long free;           /* free_hugepages */
	long reserved;       /* resv_hugepages (system-wide only, else -1) */
	long surplus;        /* surplus_hugepages */
	long overcommit;     /* nr_overcommit_hugepages (system-wide only, else -1) */
};

struct sp_node_pools {
	int node;
	int n_pools;
	struct sp_pool pools[SP_MAX_PAGE_SIZES];
};

struct sp_mthp {
	uint64_t size;                 /* bytes */
	char enabled[SP_MODE_LEN];     /* "always", "inherit", "madvise", "never" */
};

struct sp_khugepaged {
	char defrag[SP_MODE_LEN];      /* "1"/"0" as sysfs has it */
	long pages_to_scan, scan_sleep_millisecs, alloc_sleep_millisecs;
	long max_ptes_none, max_ptes_swap, max_ptes_shared;
	long full_scans, pages_collapsed;
};

struct sp_thp {
	bool present;                  /* /sys/kernel/mm/transparent_hugepage exists */
	char enabled[SP_MODE_LEN];     /* the selected mode, e.g. "madvise" */
	char defrag[SP_MODE_LEN];
	char shmem_enabled[SP_MODE_LEN];
	uint64_t pmd_size;             /* hpage_pmd_size, bytes */
	int n_mthp;
	struct sp_mthp mthp[SP_MAX_MTHP];
	struct sp_khugepaged khugepaged;
};

struct sp_mount {
	char path[SP_PATH_LEN];
	uint64_t page_size;            /* pagesize= option, else the default huge size */
};

struct sp_features {
	bool madv_collapse;            /* madvise(MADV_COLLAPSE) is known to the kernel */
	bool madv_populate_write;      /* madvise(MADV_POPULATE_WRITE) */
	bool map_huge_2mb;             /* mmap(MAP_HUGETLB|MAP_HUGE_2MB) accepted */
	bool map_huge_1gb;             /* mmap(MAP_HUGETLB|MAP_HUGE_1GB) accepted */
	bool memfd_hugetlb;            /* memfd_create(MFD_HUGETLB) */
	bool thp_disable_prctl;        /* PR_GET/SET_THP_DISABLE */
	bool thp_disabled_here;        /* this process has PR_SET_THP_DISABLE set */
};

struct sp_system {
	uint64_t base_page_size;
	uint64_t default_huge_size;    /* Hugepagesize of /proc/meminfo, 0 if none */
	int n_sizes;                   /* huge page sizes, ascending */
	uint64_t page_sizes[SP_MAX_PAGE_SIZES];
	struct sp_pool pools[SP_MAX_PAGE_SIZES];   /* system-wide, same order */
	int n_nodes;
	struct sp_node_pools nodes[SP_MAX_NODES];
	struct sp_thp thp;
	int n_mounts;
	struct sp_mount mounts[SP_MAX_MOUNTS];
	struct sp_features features;
};

/* Reads everything afresh. Returns 0, or -errno if /sys cannot be read at all. */
int sp_probe(struct sp_system *out);
/* The mode that governs 2 MiB (PMD) THP: the PMD size's own mTHP setting unless it
 * is "inherit", else the global "enabled". */
const char *sp_thp_pmd_mode(const struct sp_thp *t);
/* Reads one pool. node -1 for system-wide. -ENOENT if that size/node has none. */
int sp_pool_get(uint64_t page_size, int node, struct sp_pool *out);
/* Sets nr_hugepages of a pool and reads back what the kernel gave into *got.
 * Returns 0 if *got == count, -ENOMEM if the kernel gave fewer (a shortfall),
 * -EBUSY if it kept more (pages in use stay, as surplus, until they are freed),
 * -EACCES/-EPERM without privilege, -ENOENT for a size or node that does not exist. */
int sp_pool_set(uint64_t page_size, int node, long count, long *got);

/* What the machine offers now, read cheaply (a few sysfs files and one prctl, no
 * probing mmap): what a command asks before it starts a program. parts says what to
 * read (SP_OFFER_*); the rest of *out is zero. 0, or -EINVAL for unknown parts. */
#define SP_OFFER_THP 0x1u   /* thp and thp_disable */
#define SP_OFFER_2M  0x2u   /* pool_2m */
#define SP_OFFER_1G  0x4u   /* pool_1g */
#define SP_OFFER_ALL 0x7u

struct sp_offer_pool {
	bool present;        /* the page size exists here */
	long total;          /* nr_hugepages */
	long free;           /* free_hugepages (reserved pages included) */
	long avail;          /* free - reserved: what a new mapping can get now */
	long room;           /* overcommit - surplus, 0 if none: what the kernel may add */
};

struct sp_offer {
	struct sp_thp thp;   /* present, enabled, defrag, pmd_size, and the PMD size's own
	                        mTHP mode in mthp[0] (n_mthp 0 or 1): enough for
	                        sp_thp_pmd_mode(); not the other mTHP sizes, not khugepaged */
	int thp_disable;     /* PR_GET_THP_DISABLE for this process: 0 (THP on), 1 (off),
	                        3 (off but for MADV_HUGEPAGE memory, Linux 6.18); -errno */
	struct sp_offer_pool pool_2m, pool_1g;   /* system-wide */
};
int sp_offer_get(unsigned parts, struct sp_offer *out);

/* A system setting (a sysfs file) saved, changed by the caller and put back: THP's
 * "enabled" mode, a pool's nr_hugepages. The save arms it (held 1); putting it back
 * disarms it. A caller that puts it back another way may clear held itself. */
struct sp_setting {
	char path[SP_PATH_LEN];  /* the sysfs file */
	char old[SP_MODE_LEN];   /* what it held when saved, written back as it is */
	volatile int held;       /* 1 from the save until it is put back */
};
/* Saves THP's "enabled" mode ("madvise"). -errno if it cannot be read (-ENOENT: no THP). */
int sp_thp_save(struct sp_setting *s);
/* Saves a pool's nr_hugepages (node -1: system-wide). -ENOENT if there is no such pool. */
int sp_pool_save(struct sp_setting *s, uint64_t page_size, int node);
/* Sets THP's "enabled" mode: "always", "madvise" or "never" (-EINVAL for another
 * word); -EACCES/-EPERM without privilege. */
int sp_thp_set(const char *mode);
/* Writes back what *s saved if it is held, and disarms it. Async-signal-safe (open,
 * write, close; no malloc, no lock, no stdio, errno left alone): a signal handler may
 * call it, also while the program was about to. 0 (also when not held), or -errno. */
int sp_setting_restore(struct sp_setting *s);

/* ---------- allocation ---------- */

/* Flags for sp_alloc. At most one backing flag; none means auto. */
#define SP_AUTO      0x0u
#define SP_4K        0x1u
#define SP_THP       0x2u
#define SP_2M        0x4u
#define SP_1G        0x8u
#define SP_STRICT    0x100u  /* the chosen backing or ENOMEM: never fall down the ladder */
#define SP_POPULATE  0x200u  /* fault the memory in before returning */

/* Why a rung was left. Counted per rung; see sp_stats. */
enum sp_fall {
	SP_FALL_NO_POOL = 0,     /* no pool of that size is configured (total 0) */
	SP_FALL_POOL_EMPTY,      /* the pool has too few free pages (mmap ENOMEM) */
	SP_FALL_UNSUPPORTED,     /* the kernel does not offer this page size / THP */
	SP_FALL_THP_OFF,         /* THP is "never" or disabled for this process */
	SP_FALL_MADVISE,         /* madvise(MADV_HUGEPAGE) failed */
	SP_FALL_NOT_HUGE,        /* populated, collapse tried, still on base pages */
	SP_FALL_MMAP,            /* mmap failed for another reason */
	SP_FALL_SKIPPED,         /* the rung failed just before; not asked again yet */
	SP_FALL_PROGRAM_PAGES,   /* the program reserves the range and changes it at 4 KiB
	                            (mprotect, MAP_FIXED): a hugetlb page cannot be split */
	SP_FALL_CGROUP,          /* the hugetlb cgroup's limit leaves too little room: a page
	                            past it would be a SIGBUS when touched */
	SP_FALL_COUNT
};
const char *sp_fall_name(enum sp_fall f);

/* Maps at least size bytes (rounded up to the page size of the backing used;
 * hugetlb memory is always reserved at map time, so touching it never SIGBUSes).
 * Auto picks 1G for blocks of at least 1 GiB where rounding wastes at most 1/8,
 * 2M otherwise, then THP, then base pages. Alignment: 2 MiB for thp/2m, 1 GiB for
 * 1g, 4 KiB for 4k. Returns NULL with errno ENOMEM (or EINVAL for bad flags). */
void *sp_alloc(size_t size, unsigned flags);
/* Frees a block from sp_alloc. size must be the size asked for (or less).
 * -EINVAL for a pointer that is not a live block or a size larger than asked. */
int sp_free(void *p, size_t size);

struct sp_block {
	void *addr;
	size_t size;               /* as asked */
	size_t mapped;             /* bytes mapped (rounded) */
	unsigned flags;            /* as asked */
	enum sp_backing backing;   /* the rung the block was served from */
};
/* Describes the live block that starts at p. -EINVAL if there is none. */
int sp_block_info(const void *p, struct sp_block *out);

/* What the kernel really did for a range of this process, read from /proc/self/smaps. */
struct sp_verify {
	enum sp_backing backing;   /* what the resident pages are: 1g/2m if hugetlb, thp if
	                              all resident bytes are AnonHugePages, else 4k */
	uint64_t page_size;        /* KernelPageSize of the mapping(s) */
	uint64_t rss_bytes;        /* resident bytes, hugetlb included */
	uint64_t huge_bytes;       /* bytes on huge pages */
};
/* Reads smaps for [p, p+len). Whole mappings that overlap the range are counted. */
int sp_verify_range(const void *p, size_t len, struct sp_verify *out);

struct sp_stats {
	uint64_t blocks[SP_BACKING_COUNT];        /* blocks served, by backing got */
	uint64_t bytes[SP_BACKING_COUNT];         /* bytes mapped, by backing got */
	uint64_t live_blocks;
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT]; /* rung left, by reason */
	uint64_t collapses;                       /* MADV_COLLAPSE calls that succeeded */
};
void sp_stats_get(struct sp_stats *out);
void sp_stats_reset(void);
/* Re-reads THP modes, pools and features (they can change while a process runs). */
void sp_refresh(void);

/* ---------- coverage ---------- */

enum sp_region {
	SP_REGION_HEAP = 0,   /* [heap] */
	SP_REGION_ANON,       /* private anonymous memory (writable and executable too: a
	                         Lisp's heap, a JIT's code cache), hugetlb included */
	SP_REGION_TEXT,       /* executable mappings: of files, and anonymous ones that are
	                         not writable (moved text, code a JIT sealed) */
	SP_REGION_DATA,       /* other file mappings (data, bss, rodata, files) */
	SP_REGION_STACK,      /* [stack] */
	SP_REGION_SHM,        /* shared mappings: SysV, memfd, /dev/zero, hugetlbfs, MAP_SHARED files */
	SP_REGION_OTHER,      /* [vdso], [vvar], [vsyscall] and the like */
	SP_REGION_COUNT
};
const char *sp_region_name(enum sp_region r); /* "heap", "anon", ... */

/* Why resident memory is not on huge pages, mapping by mapping (the first that holds). */
enum sp_why {
	SP_WHY_SHARED = 0,    /* shared memory not on hugetlb pages (no pool that could
	                         hold it, or not taken: SUPERPAGE_SHM) */
	SP_WHY_FILE,          /* a file's pages (the page cache) */
	SP_WHY_THP_OFF,       /* THP is off for the process (PR_SET_THP_DISABLE) */
	SP_WHY_NOHUGEPAGE,    /* THP is off for the mapping (MADV_NOHUGEPAGE: the program's,
	                         or superpage's own: --backing 4k, a heap still small) */
	SP_WHY_SMALL,         /* the mapping holds no whole 2 MiB-aligned 2 MiB */
	SP_WHY_NOT_ADVISED,   /* THP is "madvise" and the mapping is not advised: not
	                         superpage's (stacks, other runtimes' small mappings) */
	SP_WHY_PARTIAL,       /* could be huge: its 2 MiB units not wholly touched yet, or
	                         not collapsed yet */
	SP_WHY_COUNT
};
const char *sp_why_name(enum sp_why w); /* "shared", "file", "thp_off", ... */

struct sp_usage {
	uint64_t bytes;       /* resident, hugetlb included */
	uint64_t huge_bytes;  /* on huge pages */
	uint64_t not_huge[SP_WHY_COUNT]; /* bytes - huge_bytes, by why */
};

struct sp_coverage {
	pid_t pid;
	uint64_t rss_bytes;   /* Rss + Private_Hugetlb + Shared_Hugetlb */
	uint64_t huge_bytes;  /* AnonHugePages + ShmemPmdMapped + FilePmdMapped + *_Hugetlb */
	uint64_t hugetlb_bytes;
	uint64_t thp_bytes;   /* AnonHugePages + ShmemPmdMapped + FilePmdMapped */
	int mappings;
	struct sp_usage region[SP_REGION_COUNT];
	bool thp_off;         /* the process has THP off (/proc/PID/status THP_enabled: 0) */
	bool thp_always;      /* THP is "always" here: no mapping needs advice */
};
/* Coverage of a process (pid 0: this one). -ESRCH if it does not exist, -EACCES
 * if its smaps cannot be read, -EPROTO if what was read is not smaps. */
int sp_coverage(pid_t pid, struct sp_coverage *out);
/* coverage.huge_bytes / rss_bytes, 0 when nothing is resident. */
double sp_coverage_ratio(const struct sp_coverage *c);

/* The account of its heap that a process under superpage run publishes while it runs
 * (when its 2 MiB units change, and every 0.1 s that it allocates), read through
 * /proc/PID/mem. */
struct sp_account {
	pid_t pid;
	uint64_t age_ns;           /* how long ago it was published */
	uint64_t in_use, peak_in_use, mallocs, frees;     /* malloc'd bytes and calls */
	uint64_t units[SP_BACKING_COUNT], units_peak;     /* 2 MiB units, by backing */
	uint64_t large_blocks, large_bytes;               /* blocks mapped whole */
	uint64_t released_units, reused_units;            /* units given back, kept and reused */
	uint64_t unit_used_bytes, unit_free_bytes, full_unit_bytes, kept_units;
	uint64_t falls;            /* rungs asked for and not had, all reasons */
	uint64_t falls_by[SP_FALL_COUNT]; /* the same by reason (enum sp_fall) */
};
/* 0; -ENOENT if pid publishes none (not under superpage run, or not yet); -EACCES or
 * -EPERM if its memory cannot be read; -ESRCH if it is gone; -EAGAIN if it kept
 * changing while read. */
int sp_account_read(pid_t pid, struct sp_account *out);
/* A process's command name (/proc/PID/comm, no newline) into buf; its length, or
 * -errno (buf then ""). */
int sp_comm_read(pid_t pid, char *buf, size_t len);

/* ---------- superpage run and the program it starts ---------- */

/* The page superpage run shares with the program (with --stats): the
 * environment variable that names it ("FD:PID"), made by sp_run_page_new, read by
 * sp_run_page_read once the program has ended. */
#define SP_RUN_PAGE_ENV "SUPERPAGE_RUN_PAGE"
struct sp_run_report {
	pid_t pid;                 /* the process that wrote the page */
	char comm[17];
	bool account_written;      /* it wrote its --stats account at exit */
	int stats_errno;           /* its account could not be written: why (0: it could) */
	bool has_account;          /* its heap published an account */
	struct sp_account account; /* the heap's account as last published (age_ns 0) */
};
/* A memfd of one page (close-on-exec) mapped shared at *page, zeroed: its fd, or
 * -errno. */
int sp_run_page_new(void **page);
/* What process pid wrote in page: 0; -ENOENT if it wrote nothing. */
int sp_run_page_read(const void *page, pid_t pid, struct sp_run_report *out);

/* The falls of the program's whole tree, gathered in the page while it ran (every
 * process that reached the page adds its own; see SUPERPAGE_RUN_PAGE). */
struct sp_run_falls {
	uint64_t by[SP_BACKING_COUNT][SP_FALL_COUNT]; /* by rung asked for and reason */
	uint64_t splits;           /* runs split between the pool and plain memory */
	uint64_t split_wanted, split_had; /* the first: 2 MiB pages wanted and had */
	enum sp_backing split_rest;       /* the backing its other units got */
	pid_t split_pid;
	long empty_free[2];        /* 2m, 1g: free pages at the first pool_empty, -1 unknown */
};
/* Sets the page up for the tree's falls, to be said once the program has ended
 * (say) or only counted. */
void sp_run_page_tree_init(void *page, bool say);
/* The tree's falls: 0; -ENOENT if the page was not set up for them. */
int sp_run_page_falls(const void *page, struct sp_run_falls *out);
/* Whether the page asks for the line, and this caller is the first to take it (the
 * program at its exit, or superpage run after it): true once per page. */
bool sp_run_page_claim(void *page);
/* The line that says the falls from the hugetlb rungs (2m, 1g), with their reasons,
 * "superpage: ...\n", into buf (cut to len); its length, 0 if there were none. */
size_t sp_run_falls_line(const struct sp_run_falls *f, char *buf, size_t len);

/* ---------- superpage run's watch: a program it cannot preload, kept promoted ---------- */

/* Why superpage run watches a program instead of preloading the runtime into it (the
 * names are a contract: --stats, stat --json). */
enum sp_watch_why {
	SP_WATCH_STATIC = 0,      /* statically linked: no loader reads LD_PRELOAD */
	SP_WATCH_LIBC,            /* its loader is another libc's (musl...): the runtime is glibc's */
	SP_WATCH_CLASS,           /* a program of another word size than the runtime's */
	SP_WATCH_WHY_COUNT
};
const char *sp_watch_why_name(enum sp_watch_why w); /* "static", "libc", "class" */

#define SP_WATCH_MAX 48
/* A process the watch reaches: the program, or one it started. */
struct sp_watch_proc {
	pid_t pid;
	uint64_t start_time;      /* when it started (/proc/PID/stat): a pid used again is
	                             another process */
	uint32_t rounds;          /* passes over it */
	int fatal;                /* its last pass's refusal for the whole process (-errno) */
	bool gone;                /* it ended */
	uint64_t collapsed_bytes; /* put on 2 MiB pages, all its passes */
	uint64_t rss_bytes, huge_bytes; /* as its last pass left it */
	uint64_t last_ns;         /* CLOCK_MONOTONIC of its last pass */
};
/* What superpage run publishes of its watch while it runs. */
struct sp_watch {
	pid_t watcher;            /* superpage run */
	pid_t root;               /* the program it started */
	enum sp_watch_why why;
	enum sp_backing asked;    /* the backing asked for (2m, 1g: fallen to THP) */
	uint64_t rounds;          /* rounds over all its processes */
	uint64_t interval_ns;     /* the pause before the next round */
	uint64_t budget_bytes;    /* promote's budget per pass (0: none) */
	double budget_share;
	uint64_t at_ns;           /* CLOCK_MONOTONIC when published */
	uint64_t age_ns;          /* (sp_watch_find) how long ago that was */
	int n;                    /* procs in use */
	uint32_t left_out;        /* processes found beyond SP_WATCH_MAX, not watched */
	struct sp_watch_proc procs[SP_WATCH_MAX];
};
/* The watcher's page (a memfd named "superpage-watch", mapped privately): NULL if it
 * cannot be had. */
void *sp_watch_page_new(void);
/* Publishes *w in the page. */
void sp_watch_put(void *page, const struct sp_watch *w);
/* The watch that reaches process pid, from a superpage run among its ancestors: 0
 * with *index its entry in out->procs; -ENOENT if no watch reaches it; -EACCES or
 * -EPERM if a watcher's memory cannot be read. */
int sp_watch_find(pid_t pid, struct sp_watch *out, int *index);
/* Process pid's parent and start time (/proc/PID/stat fields 4 and 22): 0, -ESRCH
 * if it is gone, -EPROTO if the file is not what it should be. */
int sp_proc_parent(pid_t pid, pid_t *ppid, uint64_t *start_time);

/* ---------- the machine at once: every process, every cgroup ---------- */

/* How a process's huge bytes are counted: PAGEMAP_SCAN (Linux 6.7: the page tables'
 * huge entries, no per-page accounting) or smaps_rollup (every page, as smaps does);
 * auto takes PAGEMAP_SCAN where the kernel has it. */
enum sp_scan { SP_SCAN_AUTO = 0, SP_SCAN_PAGEMAP, SP_SCAN_ROLLUP };
const char *sp_scan_name(enum sp_scan s); /* "auto", "pagemap", "rollup" */

#define SP_PROC_HUGETLB_SIZES 4
struct sp_proc {
	pid_t pid;
	uid_t uid;                 /* real uid */
	char comm[32];
	char cgroup[SP_PATH_LEN];  /* its memory cgroup ("/system.slice/x.service"), "" if none */
	uint64_t rss_bytes;        /* resident, hugetlb included (VmRSS + HugetlbPages) */
	uint64_t huge_bytes;       /* on huge pages: mapped by a PMD (THP), and hugetlb */
	uint64_t thp_bytes, hugetlb_bytes;
	struct { uint64_t page_size, bytes; } hugetlb[SP_PROC_HUGETLB_SIZES]; /* by size */
	enum sp_scan scan;         /* how huge_bytes was counted */
	int account_rc;            /* sp_account_read's: 0 for a process under superpage run */
	struct sp_account account;
};
/* One process, read cheaply (/proc/PID/status counters, then PAGEMAP_SCAN or
 * smaps_rollup; smaps only when it holds hugetlb pages, for their sizes). 0; -ESRCH
 * if it is gone, -ENODATA if it maps nothing (a kernel thread, a zombie), -EACCES or
 * -EPERM if it cannot be read, -ENOTTY if SP_SCAN_PAGEMAP was asked and the kernel
 * has none. */
int sp_proc_read(pid_t pid, enum sp_scan how, struct sp_proc *out);
/* The pids of /proc, ascending, into a malloc'd array (*out; free() it). Their
 * number, or -errno. */
long sp_pids(pid_t **out);

/* What /proc/meminfo says of huge pages, machine-wide. */
struct sp_meminfo {
	uint64_t total, available;           /* MemTotal, MemAvailable */
	uint64_t anon_thp, shmem_thp, file_thp; /* AnonHugePages, ShmemPmdMapped, FilePmdMapped */
	uint64_t hugetlb;                    /* Hugetlb: every pool, pages in use or not */
	uint64_t hugetlb_used;               /* pages in use (total - free), every size */
};
int sp_meminfo_read(struct sp_meminfo *out);

/* A memory cgroup: memory.stat (hierarchical: its descendants included) and the
 * hugetlb controller's usage where it is mounted. */
struct sp_cgroup {
	char path[SP_PATH_LEN];    /* from the hierarchy's root: "/", "/system.slice" */
	int version;               /* 1 or 2 */
	int depth;                 /* "/" is 0 */
	uint64_t anon, anon_thp, file, file_thp, shmem, shmem_thp; /* bytes (v1: rss,
	                              rss_huge, cache, -, shmem, -) */
	bool hugetlb_known;        /* the hugetlb controller is there */
	struct { uint64_t page_size, bytes; } hugetlb[SP_PROC_HUGETLB_SIZES];
	uint64_t hugetlb_bytes;
};
/* Every memory cgroup, parents before children, into a malloc'd array (*out; free()
 * it): their number; -ENOENT if no memory controller is mounted, or -errno. */
long sp_cgroups_read(struct sp_cgroup **out);
/* bytes on huge pages, and all its memory: anon + file + hugetlb. */
uint64_t sp_cgroup_huge(const struct sp_cgroup *c);
uint64_t sp_cgroup_bytes(const struct sp_cgroup *c);

/* ---------- promote: a running process's memory collapsed onto huge pages ---------- */

/* Why a range of the process was not collapsed (the names are a contract: CLI, JSON). */
enum sp_promote_why {
	SP_PROMOTE_FILE = 0,      /* a file's pages: not anonymous memory */
	SP_PROMOTE_SHARED,        /* shared memory (MAP_SHARED, SysV, memfd) */
	SP_PROMOTE_SPECIAL,       /* hugetlb already, [vdso] and the like, or no access */
	SP_PROMOTE_NOHUGEPAGE,    /* MADV_NOHUGEPAGE on the mapping (VmFlags "nh") */
	SP_PROMOTE_THP_OFF,       /* the process disabled THP (PR_SET_THP_DISABLE) */
	SP_PROMOTE_SMALL,         /* the mapping holds no whole aligned 2 MiB */
	SP_PROMOTE_SPARSE,        /* too few of its pages resident: collapsing would bloat */
	SP_PROMOTE_BUDGET,        /* beyond the budget */
	SP_PROMOTE_NO_MEMORY,     /* ENOMEM, EBUSY: no free huge page (or the cgroup's limit) */
	SP_PROMOTE_BUSY,          /* EAGAIN: pages locked or isolated by the kernel just then */
	SP_PROMOTE_CHANGED,       /* the mapping changed or went away meanwhile */
	SP_PROMOTE_REFUSED,       /* EINVAL on a range still mapped: pages the kernel will
	                             not collapse (swapped out, KSM, pinned, ...) */
	SP_PROMOTE_GONE,          /* the process ended (ESRCH) */
	SP_PROMOTE_PERMISSION,    /* EPERM/EACCES: needs CAP_SYS_NICE and ptrace read access */
	SP_PROMOTE_UNSUPPORTED,   /* the kernel has no process_madvise (ENOSYS) or does not
	                             take MADV_COLLAPSE from another process (EINVAL) */
	SP_PROMOTE_STOPPED,       /* not tried: the pass stopped (failures in a row, a stop
	                             request, the process gone) */
	SP_PROMOTE_WHY_COUNT
};
const char *sp_promote_why_name(enum sp_promote_why w); /* "file", "nohugepage", ... */
/* True for the reasons a later pass may see go away (no_memory, busy, budget, stopped). */
bool sp_promote_why_transient(enum sp_promote_why w);

/* How the ranges were ranked. */
enum sp_promote_rank {
	SP_RANK_RESIDENT = 0,     /* resident share not yet huge, per 2 MiB (PAGEMAP_SCAN) */
	SP_RANK_MAPPING,          /* the same per mapping (smaps): no PAGEMAP_SCAN here */
	SP_RANK_HOT,              /* accessed share of the mapping after clear_refs, then
	                             resident share per 2 MiB */
};
const char *sp_promote_rank_name(enum sp_promote_rank r); /* "resident", "mapping", "hot" */

/* A range not collapsed, adjacent ranges with the same reason merged. */
struct sp_promote_skip {
	uint64_t start, end;
	uint64_t resident;        /* its resident bytes not on huge pages when read */
	enum sp_promote_why why;
	enum sp_region region;
	int err;                  /* the kernel's -errno for the refusals it gave, else 0 */
};

#define SP_PROMOTE_MAX_SKIPS 256

struct sp_promote_options {
	uint64_t budget_bytes;    /* at most this much collapsed (0: no limit) */
	double budget_share;      /* or this share of the resident memory (0: no limit) */
	bool hot;                 /* rank by recent access (clear_refs, then hot_ns later) */
	uint64_t hot_ns;          /* how long accesses are gathered (default 1 s) */
	bool dry_run;             /* rank and say, collapse nothing */
	uint64_t chunk_bytes;     /* collapsed between pauses (default 32 MiB) */
	uint64_t pause_ns;        /* the pause between chunks (default 5 ms) */
	uint64_t slow_ns;         /* a collapse slower than this backs off (default 50 ms) */
	uint64_t max_pause_ns;    /* the backoff's longest pause (default 1 s) */
	int max_failures;         /* failures for want of memory in a row that stop the
	                             pass (default 8) */
	int min_resident_pages;   /* of 512 in a 2 MiB range, at least (default: 512 -
	                             khugepaged/max_ptes_none, as khugepaged would) */
	volatile int *stop;       /* set non-zero (a signal handler): stop after the range */
	/* Ranges not to try, with the reason they are said to be skipped (a --watch
	 * passes what an earlier pass was refused for good). */
	const struct sp_promote_skip *avoid;
	int n_avoid;
};
/* The defaults above. */
void sp_promote_options_default(struct sp_promote_options *o);

struct sp_promote_usage {
	uint64_t bytes;                /* resident (Rss) when read before */
	uint64_t huge_before, huge_after;
};

struct sp_promote_result {
	pid_t pid;
	enum sp_promote_rank rank;
	uint64_t rss_before, huge_before;  /* the whole process, read before and after */
	uint64_t rss_after, huge_after;
	struct sp_promote_usage region[SP_REGION_COUNT];
	uint64_t candidates;           /* 2 MiB ranges that could be collapsed */
	uint64_t candidate_bytes;      /* their resident bytes not on huge pages */
	uint64_t budget;               /* bytes the budget allowed (0: no limit) */
	uint64_t tried, collapsed;     /* ranges asked, ranges the kernel collapsed */
	uint64_t collapsed_bytes;
	uint64_t not_done[SP_PROMOTE_WHY_COUNT]; /* resident bytes not collapsed, by why */
	uint64_t elapsed_ns;           /* the whole call */
	uint64_t collapse_ns;          /* inside process_madvise */
	uint64_t slowest_ns;           /* the slowest call, per range in it */
	uint64_t paused_ns;            /* in pauses between chunks (backoff included) */
	uint64_t hot_ns;               /* gathering accesses (--hot) */
	int chunks, backoffs;
	int fatal;                     /* a refusal for the whole process (-ESRCH, -EPERM,
	                                  -EACCES, -ENOSYS, -EINVAL), else 0 */
	int n_skips;
	uint64_t skips_dropped;        /* skips not listed: the array was full */
	struct sp_promote_skip skips[SP_PROMOTE_MAX_SKIPS];
};
/* Collapses the memory of process pid onto 2 MiB pages with process_madvise(2)
 * MADV_COLLAPSE: reads its smaps and the residency of each 2 MiB range
 * (PAGEMAP_SCAN), ranks the aligned 2 MiB ranges of its private anonymous memory
 * (heap, stacks, anonymous mappings) and collapses them in that order within the
 * budget (ranges next to each other in one call), in chunks with a pause between
 * them, backing off when a collapse is slow or fails; no range is asked twice. Fills *r (o NULL: the defaults). Returns the
 * number of ranges collapsed (or, dry run, that would be tried), or -errno when the
 * process cannot be promoted at all: -ESRCH (gone), -EACCES/-EPERM (its memory map or
 * process_madvise refused), -ENOSYS/-EINVAL (no process_madvise, or no MADV_COLLAPSE
 * through it), -EPROTO (smaps unreadable); r->fatal says the same. Needs
 * CAP_SYS_NICE and ptrace read access to pid. */
int sp_promote(pid_t pid, const struct sp_promote_options *o, struct sp_promote_result *r);

/* ---------- options from the environment (SUPERPAGE_*) ---------- */

enum sp_text_mode { SP_TEXT_NO = 0, SP_TEXT_MAIN, SP_TEXT_ALL };

struct sp_options {
	enum sp_backing backing;   /* SUPERPAGE_BACKING, default auto */
	uint64_t min;              /* SUPERPAGE_MIN, default 2M */
	uint64_t arena_min;        /* SUPERPAGE_ARENA_MIN: smaller private anonymous mmaps
	                              are served from heap units, default 64K; 0 = none */
	bool heap;                 /* SUPERPAGE_HEAP, default yes */
	bool stacks;               /* SUPERPAGE_STACKS, default no */
	bool shm;                  /* SUPERPAGE_SHM, default no */
	enum sp_text_mode text;    /* SUPERPAGE_TEXT, default no */
	bool perf_map;             /* SUPERPAGE_PERF_MAP: name moved text in /tmp/perf-PID.map */
	bool stats;                /* SUPERPAGE_STATS set to yes or a file */
	char stats_file[SP_PATH_LEN]; /* empty: stderr */
	int verbose;               /* SUPERPAGE_VERBOSE, 0-3 */
	bool honour_thp_disable;   /* SUPERPAGE_HONOUR_THP_DISABLE: a program's
	                              PR_SET_THP_DISABLE holds for the runtime's memory
	                              too, default no (only for the program's own) */
	bool shrink;               /* SUPERPAGE_SHRINK: units the heap empties go back to
	                              the kernel at once, none kept for reuse; default no */
	bool check;                /* SUPERPAGE_CHECK: the checking mode (canaries past
	                              blocks, freed blocks filled and held back); default no */
	bool dense_touched;        /* SUPERPAGE_DENSE_TOUCHED: under auto, a unit given out
	                              whole (a large block, a long run, a large mapping)
	                              goes huge when its pages are touched, not when it is
	                              given; default no */
};

/* Called once per bad value with a one-line message; the default stands. */
typedef void (*sp_warn_fn)(const char *msg, void *arg);
void sp_options_default(struct sp_options *o);
/* Reads SUPERPAGE_* with getenv. Returns the number of warnings given. */
int sp_options_from_env(struct sp_options *o, sp_warn_fn warn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* SUPERPAGE_H */
