/* htlb.h - what the files of libhugetlbfs.so.0 share: the HUGETLB_* environment and
 * the machine's huge page sizes and mounts, read once, and HUGETLB_VERBOSE's messages. */
#ifndef SP_HTLB_H
#define SP_HTLB_H

#include <stdbool.h>

#include "internal.h"

/* The interface's functions; everything else in the library is hidden. */
#define HTLB_EXPORT __attribute__((visibility("default")))

/* Where HUGETLB_VERBOSE's messages start (superpage-libhugetlbfs(7)). */
#define HTLB_PREFIX "superpage libhugetlbfs: "

/* Levels of HUGETLB_VERBOSE, as libhugetlbfs(7) has them: 0 quiet, 1 (the default)
 * errors and warnings, 2 what the library did for the program, 3 and up details. */
enum { HTLB_ERROR = 1, HTLB_INFO = 2, HTLB_DEBUG = 3 };

struct htlb_size {
	long size;                 /* bytes */
	char mount[SP_PATH_LEN];   /* the hugetlbfs mount used for it, "" if none */
	bool memfd;                /* no mount, and the kernel has no usable one either:
	                              unlinked fds are memfds */
};

struct htlb_state {
	int verbose;               /* HUGETLB_VERBOSE (HUGETLB_DEBUG: 99), default 1 */
	long base_page;
	long kernel_default;       /* Hugepagesize of /proc/meminfo, 0 if none */
	long default_size;         /* gethugepagesize: HUGETLB_DEFAULT_PAGE_SIZE if it is a
	                              size of this machine, else kernel_default; 0 if none */
	bool path_set;             /* HUGETLB_PATH: only its mounts are used */
	bool no_reserve;           /* HUGETLB_NO_RESERVE=yes (accepted, not acted on) */
	int n_sizes;               /* the kernel's huge page sizes: its default first, the
	                              others ascending */
	struct htlb_size sizes[SP_MAX_PAGE_SIZES];
};

/* The state, read on first use (the library's constructor uses it first). */
const struct htlb_state *htlb_state(void);
/* Reads the environment and the machine again (the test probe, the unit tests). */
void htlb_reload(void);
/* The entry of a huge page size of this machine, NULL if it is none. */
const struct htlb_size *htlb_size_of(const struct htlb_state *st, long size);
/* One line on stderr, HTLB_PREFIX first, if HUGETLB_VERBOSE is at least level; errno
 * is left as it was. */
/* HUGETLB_MORECORE, HUGETLB_SHM, HUGETLB_ELFMAP (and HUGETLB_RESTRICT_EXE): execs the
 * program again with superpage's runtime preloaded when they ask for huge pages; in the
 * process so started, puts the program's LD_PRELOAD back. Returns when there is nothing
 * to do, or it cannot be done (said). From the constructor, with its argv. */
void htlb_rerun(char **argv);
/* Whether the program's segments may be moved, as HUGETLB_MORECORE restarts it: not in
 * a setuid program, only when the program itself names this library (the constructor
 * runs before main), and only in an executable HUGETLB_RESTRICT_EXE allows. */
bool htlb_may_map_segments(void);
/* HUGETLB_ELFMAP=R|W: the program's read-only (R) and writable (W) segments onto huge
 * pages of the default size's hugetlbfs mount, where their extent holds nothing else
 * (the writable ones named to the runtime first); said at level 2. */
void htlb_elfmap(void);
void htlb_say(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
