/* units.h - the page heap's shared state: the range of 2 MiB units, the unit table,
 * the lists units are on, the backing policy and the counts, under one lock. */
#ifndef SUPERPAGE_UNITS_H
#define SUPERPAGE_UNITS_H

#include <pthread.h>
#include <stdatomic.h>

#include "heap.h"

enum unit_state { U_FREE = 0, U_HEAP, U_LARGE, U_RELEASING };
#define NO_UNIT (-1)
#define NBUCKET 10          /* HEAP units by longest free run: [2^b, 2^(b+1)) pages */
#define NO_BUCKET 0xff
#define GIGA_UNITS ((size_t)1 << (30 - UNIT_SHIFT)) /* units in a 1 GiB page */
/* auto starts the heap on base pages and puts it on THP once it is big enough for
 * huge pages to pay (a small program would only pay their memory: a unit touched
 * once is a whole 2 MiB resident); --backing thp starts on THP. */
#define PROMOTE_UNITS 32    /* 64 MiB of heap */

struct unit {
	uint64_t free[PAGES_PER_UNIT / 64]; /* HEAP: 1 = free page */
	uint16_t nfree, longest;
	uint8_t state, backing, bucket;
	uint8_t resident;                   /* may hold pages (touched since released) */
	uint8_t in_cache;                   /* FREE, resident, in the empty-unit cache */
	uint8_t mapping;                    /* HEAP: holds a program's large mapping (2m, 1g)
	                                       and nothing of the heap's (never in a bucket) */
	int32_t prev, next;                 /* bucket list (HEAP) or empty cache (FREE) */
};

/* What the page heap counts, under the lock (the atomics without it). */
struct page_counts {
	uint64_t units[SP_BACKING_COUNT], units_peak;
	uint64_t large_blocks, large_bytes, mremaps, released, reused, small_mmap_pages;
	/* The most units resident lately (in use, or empty in the cache): since it was
	 * last reached, or RECENT_NS ago. */
	uint64_t recent_peak, recent_peak_ns;
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT];
	_Atomic uint64_t unit_events; /* changes of units, for rt_live_tick */
	_Atomic uint64_t small_mmaps, large_mmaps;
};

struct pages {
	pthread_mutex_t lock;
	/* The range: [base, end) of max_units units, writable below frontier.
	 * Under a finite RLIMIT_AS every mapping counts against the limit, a PROT_NONE
	 * reservation too: the range is not reserved ahead (lazy) but claimed as it
	 * grows, from a place far below the kernel's mappings; [base, end) is all it
	 * holds (end: of its claimed part). Under a finite RLIMIT_AS or RLIMIT_DATA
	 * (tight) the heap holds no address space it does not use: no slack when it
	 * grows, no empty units kept, emptied units at its top given back, and large
	 * blocks that whole units would round up by more than an eighth mapped on their
	 * own, to the page (SPAN_OUTSIDE), as plain malloc does. */
	uintptr_t base, end;
	size_t max_units, frontier;
	bool lazy, tight;
	/* The unit table, and 1 = unit FREE and below the frontier. */
	struct unit *units;
	uint64_t *freebits;
	/* HEAP units by their longest free run; the empty units kept resident (cached
	 * of them), newest first; the HEAP units. */
	int32_t bucket_head[NBUCKET];
	int32_t cache_head, cache_tail;
	size_t cached, heap_units;
	/* The heap's own HEAP units (not a program's mappings): their free pages, and
	 * how many have none free; and the units that hold a program's mappings. */
	size_t unit_free_pages, full_units, mapping_units;
	/* What units are asked to be; 2m or 1g: the rung the program's large mappings
	 * ask for (SP_BACKING_COUNT: none, they are mapped by the kernel outside the
	 * range, see mmap.c); auto's start on base pages, and its promotion. */
	enum sp_backing policy, map_rung;
	bool small_first;
	_Atomic bool promoted, promote_pending;
	struct page_counts st;
};
extern struct pages pg;

#endif
