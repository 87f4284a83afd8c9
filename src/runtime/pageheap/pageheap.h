/* pageheap.h - the page heap's face: the range of 2 MiB units, the spans of pages it
 * gives out, the page map every free reads, and the program's large mappings on its
 * units (the room's own state: units.h). */
#ifndef SP_PAGEHEAP_H
#define SP_PAGEHEAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "runtime.h"

/* Everything here is the runtime's own: reached without the GOT. */
#pragma GCC visibility push(hidden)

#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#define PAGE_SHIFT 12
#define PAGE_SIZE (1ul << PAGE_SHIFT)
#define UNIT_SHIFT 21
#define UNIT_SIZE (1ul << UNIT_SHIFT)
#define PAGES_PER_UNIT (UNIT_SIZE / PAGE_SIZE)

/* a (an address or a length) rounded up to a whole page */
static inline uintptr_t page_up(uintptr_t a) { return (a + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1); }

/* ---- spans and the page heap (units.h) ---- */
/* SPAN_OUTSIDE: a large block mapped on its own outside the range (outside.c). */
/* SPAN_FIT: a chunk of blocks fitted to 64 bytes (fit.c). */
enum span_kind { SPAN_SMALL = 1, SPAN_MEDIUM, SPAN_LARGE, SPAN_MMAP, SPAN_OUTSIDE, SPAN_FIT };
struct fit_chunk;
#define SPAN_MAGIC 0x53504e31u

struct span {
	uint32_t magic;
	uint8_t kind;
	uint8_t cls;           /* SPAN_SMALL */
	uint8_t clean;         /* of the pages it got last (when made, or grown by
	                          pages_resize_run): SPAN_CLEAN: memory known to be
	                          zero (not given out since the kernel gave it);
	                          SPAN_CLEAN_INNER: but for the unit at its start
	                          (SPAN_DIRTY_HEAD) or its end (SPAN_DIRTY_TAIL) (a run
	                          begun or ended in a unit in use); 0: not known
	                          (zero_unknown) */
	uint8_t first;         /* SPAN_SMALL: the index its first page has in the page
	                          info (nonzero: one of a thread's first, short spans
	                          of the class, the last pages of a whole one) */
	uint16_t owner;        /* SPAN_SMALL: the thread slot whose objects these are
	                          (1 + its index), 0 for none (central.c) */
	uintptr_t start;
	size_t npages;         /* SMALL/MEDIUM/OUTSIDE: pages; LARGE: pages of whole units */
	/* SPAN_SMALL: objects */
	void *freelist;
	uintptr_t bump, end;   /* never-used objects are [bump, end) */
	uint32_t used;         /* objects out of the span (in caches or the program's) */
	struct span *prev, *next; /* its owner's (or the class's) list of spans with
	                             free objects */
	bool listed;
	struct fit_chunk *fit; /* SPAN_FIT: its blocks */
	bool foreign;          /* SPAN_MMAP: the program mprotect'ed or mapped over some of
	                          it: plain anonymous memory is put back when unmapped */
};

enum { SPAN_CLEAN = 1, SPAN_CLEAN_INNER = 2, SPAN_DIRTY_HEAD = 4, SPAN_DIRTY_TAIL = 8 };

/* Zeroes what of [p, p+len), a block at the start of a span whose clean is clean, is
 * not known to be zero: all of it, nothing, or (SPAN_CLEAN_INNER) the parts in its
 * first and last units that are dirty. */
static inline void zero_unknown(unsigned clean, void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, e = a + len;
	if (clean == SPAN_CLEAN || len == 0)
		return;
	uintptr_t head = (a & ~(UNIT_SIZE - 1)) + UNIT_SIZE, tail = (e - 1) & ~(UNIT_SIZE - 1);
	if (!(clean & SPAN_CLEAN_INNER) || head > tail) { /* (one unit: the ends are one) */
		memset(p, 0, len);
		return;
	}
	if (clean & SPAN_DIRTY_HEAD)
		memset(p, 0, head - a);
	if (clean & SPAN_DIRTY_TAIL)
		memset((void *)tail, 0, e - tail);
}

/* Whether [p, p+len) reads as zero (DEBUG's check of memory said to be). */
static inline bool mem_is_zero(const void *p, size_t len)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* Every page of these spans maps to them (of others, the first page). */
static inline bool span_maps_all(unsigned kind)
{
	return kind == SPAN_SMALL || kind == SPAN_MMAP || kind == SPAN_FIT;
}

/* Sets up the reserved range and metadata; 0 or -errno. Called once, under init. */
int pages_init(const struct sp_options *o);
/* A span of npages pages, aligned to align_pages (a power of two <= PAGES_PER_UNIT);
 * NULL if out of memory. MMAP spans lie in one unit; SMALL and MEDIUM ones of
 * alignment 1 may lie across units (MEDIUM ones be any length). Takes the page-heap
 * lock. */
struct span *pages_alloc_run(size_t npages, size_t align_pages, enum span_kind kind);
/* A span of whole units (size bytes rounded up to units), aligned to align bytes;
 * or, where the range cannot hold it or (under a limit) units would round it up by
 * more than an eighth, a SPAN_OUTSIDE block: a mapping of its own, to the page. */
struct span *pages_alloc_large(size_t size, size_t align);
/* Gives a span's memory back (SMALL/MEDIUM pages or LARGE units). */
void pages_free(struct span *s);
/* Resizes a MEDIUM or FIT span in place to npages: shrinking gives the tail back;
 * growing (a MEDIUM span up to 1 MiB, a FIT one up to FIT_CHUNK_PAGES) takes the free
 * pages that follow it, across units (its clean then says theirs); false if they are
 * not free. */
bool pages_resize_run(struct span *s, size_t npages);
/* True if a block of size bytes aligned to align is a MEDIUM run of pages (up to
 * 1 MiB; up to 128 MiB where whole units would round it up by more than 1/64),
 * false if it is a LARGE one of whole units. */
bool pages_is_run(size_t size, size_t align);
/* The page heap's counts and lists recomputed and compared, and every span of
 * objects against its class and page info (for the tests): the first difference
 * found, *unit where; NULL if none. */
const char *pages_check(size_t *unit);
/* Resizes a LARGE or OUTSIDE span in place or by moving its pages (s->start then
 * changes); false if it cannot (the caller copies). */
bool pages_resize_large(struct span *s, size_t new_size);
/* The span owning addr, or NULL if addr is not in the heap's range at all (and
 * *in_range false; but the SPAN_OUTSIDE block that starts at addr, if there is one).
 * A page of the range with no span gives NULL, *in_range true. */
struct span *pages_lookup(const void *addr, bool *in_range);
/* For SMALL spans: record the span on every page (objects are anywhere in it). */
void pages_map_all(struct span *s);
/* Unmaps what SPAN_MMAP spans have in [addr, addr+len): their pages go back to the
 * page heap, the spans are cut. Pages of other spans are left alone. 0, or -ENOMEM
 * if a span could not be cut (no descriptor, or its changed pages could not be made
 * plain memory again): it and those after it stay as they were. */
int pages_unmap(uintptr_t addr, size_t len);
/* Marks the SPAN_MMAP spans in [addr, addr+len) as changed by the program
 * (mprotect, MAP_FIXED over them): they are remapped as the heap's when unmapped. */
void pages_note_foreign(uintptr_t addr, size_t len);
/* True if every page of [addr, addr+len) is in a SPAN_MMAP span: the program's own,
 * which it may map over. */
bool pages_program_owns(uintptr_t addr, size_t len);
/* Under 2m and 1g, the program's private anonymous mmap of len bytes (at least
 * SUPERPAGE_MIN) on hugetlb units of the range: 2 MiB pages while the pool has them
 * (1 GiB ones for its whole GiBs under 1g), the rest THP, every fall counted. NULL
 * when not one hugetlb page could be had or the range has no room (the caller maps
 * it as before, on THP), with *err set if the kernel would have refused it. Without
 * hugetlb, units of plain memory (where mremap puts pages it moves). */
void *pages_map_program(size_t len, int flags, bool hugetlb, int *err);
/* Grows in place the program's mapping in units that ends at end, by add bytes
 * (page multiples), zeroed; false if what follows it is not free. */
bool pages_grow_mapping(uintptr_t end, size_t add);
/* Before the program changes [addr, addr+len) of the range (mprotect, MAP_FIXED or
 * mremap onto it, madvise that changes the mapping): its mappings' hugetlb units
 * there are copied to THP memory in place. -ENOMEM if some page there in a mapping's
 * unit is not the program's, or a copy could not be made (nothing changed then). */
int pages_demote(uintptr_t addr, size_t len);
/* Where a fixed mapping of the program's may land in the range: pages it has from
 * us, and pages of its large mappings' units that it unmapped. */
bool pages_fixed_allowed(uintptr_t addr, size_t len);
/* Before such a fixed mapping lands there: the unmapped pages are the program's
 * again (changed by it), and hugetlb units there are copied to THP memory (see
 * pages_demote). 0, -EINVAL where it may not land, or -ENOMEM. */
int pages_fixed_into(uintptr_t addr, size_t len);
/* True if some SPAN_MMAP page in [addr, addr+len) was changed by the program. */
bool pages_has_foreign(uintptr_t addr, size_t len);
/* madvise(addr, len, advice) for a page-aligned part of the range: the kernel's
 * for plain memory, emulated on hugetlb units (DONTNEED zeroes, hints do nothing,
 * changes demote the program's units first). 0 or -errno. */
int pages_advise(uintptr_t addr, size_t len, int advice);
/* What madvise does on hugetlb memory of the runtime's (the range, the break). */
enum advise_how {
	ADV_KERNEL,   /* as asked: the kernel does it on hugetlb pages too */
	ADV_ZERO,     /* the pages read as zero afterwards: the kernel refuses a partial
	                 DONTNEED, and a whole one would lose the private page's reserve */
	ADV_NOTHING,  /* a hint that changes neither contents nor faults */
	ADV_CHANGE,   /* changes the mapping (fork, dump, guard...): on plain memory */
};
enum advise_how pages_advise_how(int advice);
/* Puts a private THP copy of len bytes from src (NULL: zeros) at at (2 MiB
 * multiples), in place of what is there or of a hole; false if it could not (nothing
 * changed then). */
bool pages_copy_in(uintptr_t at, size_t len, const void *src);
/* Hugetlb pages (2 MiB, or 1 GiB with giga) over [at, at+len), mapped elsewhere and
 * moved into place: a map the pool refuses changes nothing at at (a refused MAP_FIXED
 * would have unmapped what was there, and a mapping of another thread could land in
 * the hole before it is filled again). 0, or -errno with *hole set if what was at at
 * may be gone (a refused move: the caller maps it again). */
int pages_hugetlb_into(uintptr_t at, size_t len, bool giga, bool *hole);
/* pages_hugetlb_into on ask's rung (2m, 1g), through the rung service (rung.c): skipped
 * while refused lately, a refusal classified, remembered and counted (a refused move
 * that left a hole, *hole, as an mmap fall). -1 if the pages are there, else the
 * reason. */
struct sp_rung_ask;
int pages_hugetlb_try(const struct sp_rung_ask *ask, uintptr_t at, size_t len, bool *hole);
/* The range [lo, hi) the heap reserves (under a finite RLIMIT_AS, the part of it
 * claimed so far): everything in it is the heap's. */
void pages_range(uintptr_t *lo, uintptr_t *hi);
/* What every free reads, on one line: the range's start, how many of its pages are
 * writable (it grows), the page info (per page of the range, small_info() for a
 * page of a SPAN_SMALL span, 0 otherwise; set and cleared by central.c, read by free
 * without touching the span), the key that marks a free object and the one that
 * mangles the free lists' links (malloc.c: secret, from the kernel's random bytes). */
struct heap_hot {
	uintptr_t base;
	size_t top_pages;
	uint64_t *pageinfo;
	uintptr_t free_key;
	_Atomic(struct span *) *pagemap; /* per page of the range: its span (range.c) */
	uintptr_t link_key;
	size_t top_granules; /* top_pages in 16-byte steps, for link_plausible */
} __attribute__((aligned(64)));
extern struct heap_hot heap_hot;

/* The span on the page of a (which must be one of the range's writable pages). */
static inline struct span *span_at(uintptr_t a)
{
	return __atomic_load_n((struct span **)&heap_hot.pagemap[(a - heap_hot.base) >> PAGE_SHIFT],
			       __ATOMIC_ACQUIRE);
}

void pages_lock(void);
void pages_unlock(void);
/* Whether the heap is near a memory cgroup's limit (near_limit.c): no new memory of the
 * runtime's goes on THP. */
bool pages_near_limit(void);
/* auto, dense by touch (SUPERPAGE_DENSE_TOUCHED): the program's large mapping at p is
 * left on base pages and its 2 MiB units made huge as they are touched (backing.c);
 * false if not (the caller advises it whole). pages_watch_forget: [a, a+len) is
 * unmapped. */
bool pages_watch_map(void *p, size_t len);
bool pages_touched(void);
/* In a forked child: the looks' thread of dense by touch is not there (touched.c). */
void dense_fork_child(void);
/* Ends the looks' thread of dense by touch and starts none until the matching resume
 * (a call that needs the process single-threaded: program/userns.c). Returns the
 * kernel's id of the thread it ended, or 0. */
pid_t pages_looks_pause(void);
void pages_looks_resume(void);
void pages_watch_forget(uintptr_t a, size_t len);
void pages_stats(struct rt_stats *st);
/* The hugetlb cgroup's limits into st, for the account (near_limit.c): they are read
 * each time, and not by pages_stats. */
void limits_hugetlb_stats(struct rt_stats *st);
/* Counts a program's mmap served by mmap.c (large: aligned; else from units). */
void pages_note_mmap(bool large);
/* Counts (and says) a fall of mmap.c's, with the heap's. */
void pages_note_fall(enum sp_backing rung, enum sp_fall why);

/* What the runtime did with the program's mappings beyond the heap's counts
 * (mappings.c). */
struct rt_map_stats {
	uint64_t exec_maps, exec_bytes; /* writable and executable mappings advised for THP */
	uint64_t hints_moved;           /* hints the kernel would not honour: placed as
	                                   unhinted mappings are (2 MiB-aligned, packed) */
};
void rt_map_stats_get(struct rt_map_stats *out);
/* Counts an executable heap of len bytes advised, a hint the kernel would not honour. */
void map_note_exec(size_t len);
void map_note_hint_moved(void);

#pragma GCC visibility pop

#endif
