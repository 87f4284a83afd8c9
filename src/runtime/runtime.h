/* runtime.h - what the files of libsuperpage-run.so (the LD_PRELOAD runtime) share. */
#ifndef SP_RUNTIME_H
#define SP_RUNTIME_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "superpage.h"

/* The options (runtime.c), read once from SUPERPAGE_* by rt_options_read at the
 * heap's start (life.c: the first malloc, or the constructor); what cannot be used
 * is handed to warn. */
const struct sp_options *rt_options(void);
void rt_options_read(sp_warn_fn warn);

/* Counters of the runtime, for the report at exit and for tests. */
struct rt_stats {
	uint64_t in_use;            /* bytes handed out to the program now (usable sizes) */
	uint64_t peak_in_use;       /* the most in_use has been */
	uint64_t mallocs, frees;    /* calls that allocated / freed a block */
	/* 2 MiB units of heap memory mapped now, by the backing they got (4k means the
	 * unit was asked for as THP but THP is off, or the backing is 4k). */
	uint64_t units[SP_BACKING_COUNT];
	uint64_t units_peak;        /* the most units mapped at once */
	uint64_t large_blocks;      /* live blocks with a mapping of their own */
	uint64_t large_bytes;       /* bytes mapped for them */
	uint64_t mremaps;           /* reallocs served by moving pages, not copying */
	uint64_t released_units;    /* empty units given back to the kernel */
	uint64_t reused_units;      /* empty units kept resident and given out again */
	/* The page heap's units now: bytes of their pages in blocks and spans; free pages
	 * inside units in use (resident with them: on THP or hugetlb, what blocks freed
	 * leave in a huge page); of the bytes in use, those in units with no page free;
	 * empty units kept resident. */
	uint64_t unit_used_bytes, unit_free_bytes, full_unit_bytes, kept_units;
	/* Under 2m and 1g: the units of the heap's chunks of 2 MiB pages not in use, whose
	 * pages the pool holds for it (kept empty, or reserved and not yet given out:
	 * spare), and the chunks' mappings. */
	uint64_t chunk_held_units, chunk_spare_units, chunk_maps;
	uint64_t small_mmaps;       /* private anonymous mmaps below SUPERPAGE_MIN served from
	                               the heap's units (arenas of other allocators) */
	uint64_t small_mmap_bytes;  /* bytes of them mapped now */
	uint64_t large_mmaps;       /* mmaps of at least SUPERPAGE_MIN aligned to 2 MiB */
	/* Small mappings packed side by side (pack.c: PROT_NONE reservations; read-write
	 * ones under 2m and 1g), and the 2 MiB units the program's commits of them made
	 * whole: collapsed, or refused by the kernel. */
	uint64_t packed, packed_collapsed, packed_refused;
	/* auto: the heap's units made huge when they were dense (collapsed, or advised
	 * before their first touch), and collapses of them the kernel refused; the units
	 * on base pages now are units[SP_BACKING_4K]. */
	uint64_t dense_units, dense_refused;
	/* Falls: a rung that was asked for and not had, by reason (enum sp_fall). */
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT];
	/* The program break (sbrk, brk): bytes from its start to the break now and the
	 * most there were; used: the program moved or read it; emulated: on THP in a
	 * range of the runtime's (else the kernel's). Filled by rt_brk_stats. */
	uint64_t brk_bytes, brk_peak;
	bool brk_used, brk_emulated;
	/* Forks that shared private hugetlb memory with the child (fork.c); heap units
	 * moved to THP to make room in the pool for them; those short of room; and the huge
	 * pages whose presence their prepare asked the kernel (PAGEMAP_SCAN, mincore). */
	uint64_t forks_shared, fork_moved_units, forks_short, fork_scanned_pages;
	/* Limits (near_limit.c): the memory cgroup's version (0: none mounted) and its limit
	 * where the room was least (0: none), the least room seen, the looks at it
	 * (each reads the cgroup's files); times the heap came
	 * near it and for how long in all; what it did there: empty units given back,
	 * bytes of free pages given back, units put on base pages rather than THP. The
	 * hugetlb controller's limits for 2 MiB and 1 GiB pages, RLIMIT_AS and
	 * RLIMIT_DATA (0: none). */
	int limit_version;
	uint64_t limit_bytes, limit_least_room, limit_looks, limit_nears, limit_near_ns;
	uint64_t limit_kept_given, limit_free_given, limit_base_units;
	uint64_t limit_hugetlb[2], limit_as, limit_data;
};
void rt_stats_get(struct rt_stats *out);
/* Adds the program break's counts and falls to st (brk.c). */
void rt_brk_stats(struct rt_stats *st);

/* Writes the account of this process (stats + smaps coverage) to fd: a short text
 * report, or JSON when json is true. Called at exit when SUPERPAGE_STATS is set. */
void rt_report(int fd, bool json);
/* The same when the program asks for it (malloc_stats): not the account at exit. */
void rt_report_asked(int fd);
/* The heap's account for superpage stat (core's sp_live): its page had at start
 * (rt_live_init), published when units change and every 0.1 s (rt_live_tick: after
 * the page heap's allocations and frees, without its lock), a forked child's own
 * (rt_live_fork_child). */
void rt_live_init(void);
void rt_live_tick(void);
void rt_live_fork_child(void);
/* For superpage run, in the page it shares with the program it started (nothing in
 * another process): the account at exit written (err 0), or not (errno). */
void rt_run_account(int err);
/* A fall, and a run split between the pool and plain memory (why: the fall counted
 * for the whole run just before), added to the program tree's count in superpage
 * run's page (every process of the tree that reached it). */
void rt_run_fall(enum sp_backing rung, enum sp_fall why);
void rt_run_split(size_t wanted, size_t had, enum sp_backing rest, enum sp_fall why);
/* At exit of the program superpage run started: the tree's falls from 2m and 1g said
 * on fd in one line, when superpage run asked for it and no one said it yet. */
void rt_run_falls_at_exit(int fd);
/* A count that moves whenever units join or leave the heap (units.c, lock-free). */
uint64_t pages_unit_events(void);

/* A one-line message on stderr, "superpage: ...", with write(2) only (no malloc,
 * no stdio): safe inside malloc. */
void rt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* rt_say, only when SUPERPAGE_VERBOSE >= level. */
void rt_verbose(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Says a fall once per (rung, reason) when verbose >= 1 (the caller counts it). */
void rt_fall(enum sp_backing rung, enum sp_fall why);
/* A run of wanted 2 MiB units that took the had pages the pool had and rest for the
 * others, just after its fall (rt_fall): counted for superpage run, said once with
 * --verbose. */
void rt_fall_split(size_t wanted, size_t had, enum sp_backing rest);

/* What a part of the runtime has said once already (a bit each), in process pid. */
struct rt_said {
	_Atomic uint64_t bits;
	_Atomic int pid;
};
/* Whether the thing numbered bit is to be said now: with --verbose (verbose >= 1)
 * the first time in each process (a forked child says it again), every time from
 * -vv on, never without. */
static inline bool rt_say_now(struct rt_said *s, int verbose, unsigned bit)
{
	int me;

	if (verbose < 1)
		return false;
	if (verbose >= 2)
		return true;
	me = (int)getpid();
	if (atomic_load(&s->pid) != me) {
		atomic_store(&s->bits, 0);
		atomic_store(&s->pid, me);
	}
	return !(atomic_fetch_or(&s->bits, 1ull << bit) & (1ull << bit));
}

/* Ends the process with "superpage: MESSAGE" on stderr (heap corruption, double free:
 * as glibc does, never walk on with a broken heap). */
__attribute__((noreturn)) void rt_abort(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* sp_assert and the lock ranks (make DEBUG=1; nothing without it). */
#include "say/debug.h"

#endif
