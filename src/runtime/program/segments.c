/* segments.c - private hugetlb memory of the program's that the runtime did not map
 * but must keep from a forked child: the writable segments that libhugetlbfs.so.0
 * puts on a hugetlbfs mount (HUGETLB_ELFMAP=W, src/htlb/elfmap.c), which it names
 * here through __superpage_segment_guard.
 *
 * A forked child shares private hugetlb pages until one of the two writes, and the
 * copy on write comes from the pool. So, as the heap's hugetlb units (fork_units.c)
 * and the break's steps (brk.c), the child copies each segment into THP memory of its
 * own, reading only, as soon as it runs (fork.c keeps the pool's room for the copies
 * on write, or holds the parent's writes until the child has copied). Before
 * the program changes one (munmap, mprotect, MAP_FIXED, mremap), it is copied to THP
 * memory in place and forgotten, since the kernel cannot split a hugetlb page's
 * mapping. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "life.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_SEGMENTS 16

/* Changed under the lock; the guard reads it in a child, where the lock is the
 * forking thread's. */
static pthread_mutex_t seg_lock = PTHREAD_MUTEX_INITIALIZER;
SP_LOCK_RANK(seg_lock, RANK_SEGMENTS, NULL);
static struct segment {
	uintptr_t lo, hi;       /* whole huge pages */
	int prot;
} segs[MAX_SEGMENTS];
static size_t nsegs;

static bool meets(const struct segment *s, uintptr_t a, size_t len)
{
	return a < s->hi && a + len > s->lo;
}

static void forget(size_t i)
{
	segs[i] = segs[nsegs - 1];
	__atomic_store_n(&nsegs, nsegs - 1, __ATOMIC_RELAXED);
}

/* [addr, addr+len), whole 2 MiB units (a huge page's mapping of the program's,
 * MAP_PRIVATE, with prot), is guarded from now on; prot -1 forgets it (the caller
 * could not map it after all). 0, or -1 with errno: EINVAL (not whole units, or a
 * range that meets one guarded), ENOSPC (MAX_SEGMENTS are). */
EXPORT int __superpage_segment_guard(void *addr, size_t len, int prot)
{
	uintptr_t a = (uintptr_t)addr;
	size_t i = 0;
	int err = 0;
	if (!len || (a | len) & (UNIT_SIZE - 1) || a + len < a) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&seg_lock);
	while (i < nsegs && !meets(&segs[i], a, len))
		i++;
	if (prot == -1 && i < nsegs && segs[i].lo == a && segs[i].hi == a + len)
		forget(i);
	else if (prot == -1 || i < nsegs)
		err = EINVAL;
	else if (nsegs == MAX_SEGMENTS)
		err = ENOSPC;
	else {
		segs[nsegs] = (struct segment){ a, a + len, prot };
		__atomic_store_n(&nsegs, nsegs + 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&seg_lock);
	if (err)
		errno = err;
	return err ? -1 : 0;
}

/* Segment s onto THP memory in place, its protection kept; false if it could not be
 * copied (it is then as it was). */
static void keep_prot(const struct segment *s)
{
	if (s->prot != (PROT_READ | PROT_WRITE))
		kern_protect((void *)s->lo, s->hi - s->lo, s->prot);
}

static bool to_thp(const struct segment *s, const void *src)
{
	if (!pages_copy_in(s->lo, s->hi - s->lo, src))
		return false;
	keep_prot(s);
	return true;
}

int segs_demote(uintptr_t a, size_t len)
{
	int r = 0;
	if (!__atomic_load_n(&nsegs, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&seg_lock);
	for (size_t i = 0; i < nsegs && r == 0;) {
		if (!meets(&segs[i], a, len)) {
			i++;
		} else if (to_thp(&segs[i], (const void *)segs[i].lo)) {
			rt_verbose(1, "the segment at %p is on THP memory now: the program changes "
				   "its mapping", (void *)segs[i].lo);
			forget(i);
		} else {
			r = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&seg_lock);
	return r;
}

bool segs_hold(uintptr_t a)
{
	size_t n = __atomic_load_n(&nsegs, __ATOMIC_RELAXED);
	for (size_t i = 0; i < n; i++)
		if (a >= segs[i].lo && a < segs[i].hi)
			return true;
	return false;
}

void segs_fork_prepare(void)
{
	pthread_mutex_lock(&seg_lock);
}

/* Each segment, to fn, counted in 2 MiB pages (libhugetlbfs.so.0 maps them from the
 * mount of the default huge page size, 2 MiB on x86-64 unless the machine's boot line
 * says otherwise). Under the lock. */
void segs_fork_hugetlb(fork_range_fn fn, void *arg)
{
	for (size_t i = 0; i < nsegs; i++)
		fn(segs[i].lo, segs[i].hi - segs[i].lo, UNIT_SIZE, arg);
}

/* Before a fork the pool cannot cover (fork.c, every other write held): segments
 * copied to THP in place and forgotten while *want > 0, each 2 MiB giving a page
 * back. The pages moved; under the lock. */
size_t segs_fork_demote(long *want)
{
	size_t moved = 0;
	for (size_t i = 0; i < nsegs && *want > 0;) {
		size_t pages = (segs[i].hi - segs[i].lo) / UNIT_SIZE;
		if (!to_thp(&segs[i], (const void *)segs[i].lo)) {
			i++;
			continue;
		}
		rt_verbose(1, "the segment at %p is on THP memory now: a fork needed room in the "
			   "pool", (void *)segs[i].lo);
		*want -= (long)pages;
		moved += pages;
		forget(i);
	}
	return moved;
}

void segs_fork_parent(void)
{
	pthread_mutex_unlock(&seg_lock);
}

/* In the child, once fork.c has copied the segments: they are THP now, with their
 * protection. */
void segs_fork_copied(void)
{
	for (size_t i = 0; i < nsegs; i++)
		keep_prot(&segs[i]);
	__atomic_store_n(&nsegs, 0, __ATOMIC_RELAXED);
}

void segs_fork_child(void)
{
	pthread_mutex_unlock(&seg_lock);
}
