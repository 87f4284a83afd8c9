/* text.h - the program's text and large data on huge pages under --text (text.c):
 * what was moved, for the report at exit. */
#ifndef SP_TEXT_H
#define SP_TEXT_H

#include <stdint.h>

#include "superpage.h"

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

#endif
