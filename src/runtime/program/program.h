/* program.h - the program's own memory's face: its small reservations packed
 * (pack.c), the emulated break (brk.c), its segments on hugetlb pages (segments.c),
 * and what --shm, --stacks and --text did, for the report. */
#ifndef SP_PROGRAM_H
#define SP_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "superpage.h"

#pragma GCC visibility push(hidden)

/* ---- the program's small reservations, packed (pack.c), for mmap.c ---- */
/* A private anonymous mapping of len bytes (below 2 MiB), PROT_NONE (a reservation)
 * or read-write (a runtime's heap page; under 2m and 1g, where the heap's units are
 * hugetlb, an arena), with the
 * program's flags, placed in a chunk of the runtime's; NULL if none can hold it.
 * Units it makes wholly read-write are collapsed. */
void *pack_map(size_t len, int prot, int flags);
/* Whether [a, a+len) meets a chunk. */
bool pack_holds(uintptr_t a, size_t len);
/* munmap of [a, a+len) (page-aligned): the chunks' parts are reserved again and free;
 * outside(part) unmaps each part outside every chunk. 0 or the first -errno. */
int pack_unmap(uintptr_t a, size_t len, int (*outside)(uintptr_t a, size_t len));
/* After the program's mprotect or fixed mapping of [a, a+len) succeeded: rw if it is
 * private anonymous read-write now. Units it made wholly read-write are collapsed. */
void pack_changed(uintptr_t a, size_t len, bool rw);
/* The same after a fixed mapping of the program's with flags. */
void pack_fixed(uintptr_t a, size_t len, bool rw, int flags);
/* The program's madvise of [a, a+len) (page-aligned): MADV_DONTFORK and MADV_DOFORK
 * on the chunks' parts are remembered (and given to the kernel only across fork),
 * the rest goes to the kernel. 0 or -errno. */
int pack_advise(uintptr_t a, size_t len, int advice);
/* MAP_FIXED_NOREPLACE at free pages of a chunk: mapped, or NULL. */
void *pack_take(uintptr_t a, size_t len, int prot, int flags);
/* After the kernel moved a mapping away from [a, a+len) (mremap). */
void pack_vacated(uintptr_t a, size_t len);
/* Reservations packed, units collapsed, collapses the kernel refused. */
void pack_stats(uint64_t *packed, uint64_t *collapsed, uint64_t *failed);

/* ---- the emulated program break (brk.c), for mmap.c ---- */
/* The break's range [lo, hi) when it is emulated; false (and nothing) otherwise. */
bool brk_range(uintptr_t *lo, uintptr_t *hi);
/* Before the program changes part of the break's range: its hugetlb steps in
 * [addr, addr+len) are copied to THP memory in place. 0, or -ENOMEM. */
int brk_demote(uintptr_t addr, size_t len);
/* Before the program changes [addr, addr+len): the program's segments on hugetlb pages
 * that it meets (segments.c) are copied to THP memory in place. 0, or -ENOMEM. */
int segs_demote(uintptr_t addr, size_t len);
/* Whether a is in such a segment (fork.c's guard, in a child). */
bool segs_hold(uintptr_t a);
/* madvise on a page-aligned part of the break's range (see pages_advise). */
int brk_advise(uintptr_t addr, size_t len, int advice);

/* ---- what --shm, --stacks and --text did (shm.c, stacks.c, text.c) ---- */
/* What --shm did in this process (cumulative: created, not live). */
struct rt_shm_stats {
	uint64_t segments;        /* SysV segments created on 2 MiB hugetlb pages */
	uint64_t segment_bytes;   /* their sizes, rounded up to 2 MiB */
	uint64_t maps;            /* MAP_SHARED|MAP_ANONYMOUS mappings put on them */
	uint64_t map_bytes;       /* their lengths */
	/* Left on base pages, as the program asked, by reason (enum sp_fall): no_pool,
	 * pool_empty, unsupported (the kernel lacks it, or a mapping whose length is not
	 * a multiple of 2 MiB), mmap_failed (the kernel refused: EPERM, EINVAL, ...),
	 * skipped_recent_failure (refused with EPERM before, or too many segments). */
	uint64_t segment_falls[SP_FALL_COUNT];
	uint64_t map_falls[SP_FALL_COUNT];
};
void rt_shm_stats_get(struct rt_shm_stats *out);

/* What --stacks did in this process. */
struct rt_stack_stats {
	uint64_t threads;      /* threads started on a stack of ours */
	uint64_t bytes;        /* the sizes of those stacks, added up */
	uint64_t maps;         /* stacks mapped (the rest were reused) */
	uint64_t reused;       /* threads given a stack a joined or ended thread left */
	uint64_t unmaps;       /* stacks given back to the kernel: more were free than kept */
	uint64_t live;         /* stacks held by threads now (joinable ones until joined) */
	uint64_t cached;       /* free stacks kept for the next threads now */
	uint64_t looks;        /* looks at a running thread's top unit (PAGEMAP_SCAN) */
	uint64_t collapsed;    /* top units found dense and collapsed into a huge page */
	uint64_t collapse_failed; /* of those, refused (left advised, to khugepaged) */
	/* Threads left on glibc's stack, by reason (enum sp_fall): thp_off (THP never or
	 * disabled), unsupported (no THP; explicit scheduling or an attribute that
	 * cannot be copied; the thread could not be started on our stack), mmap_failed,
	 * madvise_failed, skipped_recent_failure (too many stacks of ours live). */
	uint64_t falls[SP_FALL_COUNT];
};
void rt_stack_stats_get(struct rt_stack_stats *out);

/* What --text moved, for the report at exit (text.c). */
struct rt_text_stats {
	uint64_t objects;           /* programs and libraries with something moved */
	uint64_t text_bytes;        /* bytes of executable segments in the objects looked at */
	uint64_t text_moved;        /* of them, moved to huge memory (2 MiB-aligned interiors) */
	uint64_t text_hugetlb;      /* of text_moved, on 2 MiB hugetlb pages (the rest THP) */
	uint64_t text_cached;       /* text left where it was: huge pages of the page cache */
	uint64_t data_moved;        /* bytes of writable segments moved to THP */
	/* Ranges left where they were, by the rung that was not had and why (enum sp_fall);
	 * a failed move puts nothing in place: the original mapping stays. */
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT];
	uint64_t unaligned;         /* executable segments with no whole aligned 2 MiB in them */
	uint64_t perf_map_symbols;  /* functions written to /tmp/perf-PID.map */
};
void rt_text_stats_get(struct rt_text_stats *out);

#pragma GCC visibility pop

#endif
