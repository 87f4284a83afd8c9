/* segments.c - private hugetlb memory of the program's that the runtime did not map
 * but must keep from a forked child: the writable segments that libhugetlbfs.so.0
 * puts on a hugetlbfs mount (HUGETLB_ELFMAP=W, src/htlb/elfmap.c), which it names
 * here through __superpage_segment_guard.
 *
 * A forked child shares private hugetlb pages until one of the two writes: the copy
 * comes from the pool, and the child dies of SIGBUS if the pool is empty (or loses
 * the page to a parent that wrote first). So, as the heap's hugetlb units (staging.c)
 * and the break's steps (brk.c): before fork each segment is staged and marked
 * MADV_DONTFORK, the child maps THP copies in their place (fork.c's guard stands for
 * the touches made before its handler runs), and the parent keeps its pages. Before
 * the program changes one (munmap, mprotect, MAP_FIXED, mremap), it is copied to THP
 * memory in place and forgotten, since the kernel cannot split a hugetlb page's
 * mapping. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "heap.h"
#include "internal.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_SEGMENTS 16

/* Changed under the lock; the guard reads it in a child, where the lock is the
 * forking thread's. */
static pthread_mutex_t seg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct segment {
	uintptr_t lo, hi;       /* whole huge pages */
	int prot;
} segs[MAX_SEGMENTS];
static size_t nsegs;
static size_t staged_bytes;     /* around fork: the staging copy's length */
static char *stage;             /* around fork: the segments' copy, in their order */

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
static bool to_thp(const struct segment *s, const void *src)
{
	if (!pages_copy_in(s->lo, s->hi - s->lo, src))
		return false;
	if (s->prot != (PROT_READ | PROT_WRITE))
		sp_os->mprotect((void *)s->lo, s->hi - s->lo, s->prot);
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
	void *m;
	size_t total = 0;
	pthread_mutex_lock(&seg_lock);
	stage = NULL;
	staged_bytes = 0;
	for (size_t i = 0; i < nsegs; i++)
		total += segs[i].hi - segs[i].lo;
	/* (Without a staging copy they are shared with the child, which copies them from
	 * where they are: its reads take no page from the pool.) */
	if (!total || sp_os->mmap(NULL, total, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m) < 0)
		return;
	stage = m;
	staged_bytes = total;
	for (size_t i = 0, at = 0; i < nsegs; at += segs[i].hi - segs[i].lo, i++) {
		memcpy(stage + at, (const void *)segs[i].lo, segs[i].hi - segs[i].lo);
		sp_os->madvise((void *)segs[i].lo, segs[i].hi - segs[i].lo, MADV_DONTFORK);
	}
}

bool segs_fork_staged(void)
{
	return stage != NULL;
}

void segs_fork_parent(void)
{
	if (stage) {
		for (size_t i = 0; i < nsegs; i++)
			sp_os->madvise((void *)segs[i].lo, segs[i].hi - segs[i].lo, MADV_DOFORK);
		sp_os->munmap(stage, staged_bytes);
		stage = NULL;
	}
	pthread_mutex_unlock(&seg_lock);
}

/* In the child, from fork.c's guard (a signal handler: system calls and memcpy only,
 * the lock held by this thread since prepare) or its child handler; once. */
void segs_fork_fixup(void)
{
	for (size_t i = 0, at = 0; i < nsegs; at += segs[i].hi - segs[i].lo, i++) {
		const void *src = stage ? stage + at : (const void *)segs[i].lo;
		if (!to_thp(&segs[i], src))
			rt_abort("after fork, the program's segment on hugetlb pages at %p could "
				 "not be copied into this process", (void *)segs[i].lo);
	}
	__atomic_store_n(&nsegs, 0, __ATOMIC_RELAXED);
	if (stage)
		sp_os->munmap(stage, staged_bytes);
	stage = NULL;
}

void segs_fork_child(void)
{
	segs_fork_fixup();
	pthread_mutex_unlock(&seg_lock);
}
