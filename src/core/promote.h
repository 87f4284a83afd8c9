/* promote.h - what promote.c (the collapse pass) and promote_scan.c (reading the target) share. */
#ifndef SP_PROMOTE_H
#define SP_PROMOTE_H

#include "internal.h"

#define PR_PAGES 512 /* base pages in a 2 MiB range */

/* What became of a range. */
enum { PR_UNTRIED = 0, PR_COLLAPSED, PR_WOULD, PR_SKIPPED };

/* One aligned 2 MiB range of private anonymous memory that could be collapsed. */
struct pr_range {
	uint64_t start;
	uint64_t map_start, map_end;  /* its mapping as read: a refusal checks it is still so */
	uint16_t present;             /* resident base pages, not huge, not the zero page */
	uint16_t hot;                 /* per mille of its mapping accessed (--hot) */
	uint8_t region;               /* enum sp_region */
	uint8_t outcome;              /* PR_* */
	uint8_t why;                  /* enum sp_promote_why when PR_SKIPPED */
	int16_t err;                  /* the kernel's -errno */
};

/* The target as read: its ranges (an anonymous mapping of the seam's: no malloc). */
struct pr_target {
	pid_t pid;
	const struct sp_promote_options *o;
	struct sp_promote_result *r;
	struct pr_range *ranges;
	size_t n, cap;                /* cap: entries the mapping holds */
	bool thp_off;
	int min_present;
};

/* Reads the target's smaps into t (ranges, skips for what cannot be collapsed, the
 * usage before) and each range's residency; with o->hot, its accesses. 0 or -errno
 * (-ESRCH, -EACCES, -EPROTO, -ENOMEM). */
int pr_scan(struct pr_target *t);
/* Reads the usage after into t->r (rss_after, huge_after, region[].huge_after). */
int pr_scan_after(struct pr_target *t);
/* Whether [start, start+2M) still lies in a private anonymous mapping with the bounds
 * it had (/proc/PID/maps): 1 yes, 0 no, -errno. */
int pr_still_mapped(pid_t pid, const struct pr_range *g);
/* Which of the k ranges from g (adjacent: g[i].start = g[0].start + i * 2 MiB) sit on
 * a huge page now (PAGEMAP_SCAN): 0, or -errno (-ENOTTY: no PAGEMAP_SCAN). */
int pr_huge_now(pid_t pid, const struct pr_range *g, size_t k, bool *huge);
/* Gives back the ranges' memory. */
void pr_target_free(struct pr_target *t);
/* Adds a skip to r (merged with the last one if it continues it) and its bytes. */
void pr_skip(struct sp_promote_result *r, uint64_t start, uint64_t end, uint64_t resident,
	     enum sp_promote_why why, enum sp_region region, int err);

#endif
