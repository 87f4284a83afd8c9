/* brk.c - the program break (sbrk, brk) on huge pages: the kernel's [heap] mapping
 * never gets MADV_HUGEPAGE, so the break is emulated inside a range of our own that
 * has it, with the kernel's and glibc's results, errno and shrinking rules. When the
 * runtime is off, the heap is off or the backing is 4k, the kernel's break is used. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "heap.h"
#include "internal.h"

#define EXPORT __attribute__((visibility("default")))

/* Under every backing but 4k the range is THP, never hugetlb: private hugetlb memory
 * that a forked child shares is copied on write from the pool, and a child that finds
 * the pool empty dies of SIGBUS. The heap stages its hugetlb units around fork
 * (pages.c); nothing stages this range, and THP copies fall back to base pages. */

enum brk_mode { BRK_UNDECIDED, BRK_EMULATED, BRK_KERNEL };

/* brk is rare: one lock for all of it, taken around fork so a child finds the
 * break whole. Everything below is under it, but the counters (read by the report,
 * which may run while another thread is here). */
static pthread_mutex_t brk_lock = PTHREAD_MUTEX_INITIALIZER;
static enum brk_mode mode;
static uintptr_t range_lo, range_hi; /* BRK_EMULATED: the range; the break starts at lo */
static uintptr_t cur;                /* BRK_EMULATED: the break */
static uintptr_t writable;           /* [range_lo, writable) is read-write */
static uintptr_t kernel_start;       /* BRK_KERNEL: the kernel's break at the first call */

static _Atomic int st_mode;
static _Atomic uint64_t st_bytes, st_peak;
static _Atomic uint64_t st_falls[SP_FALL_COUNT]; /* falls from the THP rung */

/* The address space to ask for, largest first: it costs nothing until the break
 * reaches it (PROT_NONE, MAP_NORESERVE), and a ulimit -v may leave less. */
static const size_t range_sizes_mib[] = { 64 << 10, 16 << 10, 4 << 10, 1 << 10, 256, 64 };

static uintptr_t page_up(uintptr_t a) { return (a + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1); }
static uintptr_t unit_up(uintptr_t a) { return (a + UNIT_SIZE - 1) & ~(UNIT_SIZE - 1); }

/* The kernel's break: brk(2) itself returns the break it has after the call (the
 * old one when it refuses) and never an error, so errno is never touched. The os
 * seam has no brk: this is the runtime's one system call made around it. */
static uintptr_t kernel_brk(uintptr_t want)
{
	return (uintptr_t)syscall(SYS_brk, want);
}

static void count(uintptr_t start, uintptr_t brk_now)
{
	uint64_t bytes = brk_now > start ? brk_now - start : 0;
	atomic_store_explicit(&st_bytes, bytes, memory_order_relaxed);
	if (bytes > atomic_load_explicit(&st_peak, memory_order_relaxed))
		atomic_store_explicit(&st_peak, bytes, memory_order_relaxed);
}

static void fall(enum sp_fall why, const char *what)
{
	atomic_fetch_add_explicit(&st_falls[why], 1, memory_order_relaxed);
	rt_verbose(1, "the program break stays the kernel's, on 4 KiB pages: %s", what);
}

/* The range, advised huge; false (and why) when it cannot be had. */
static bool reserve(enum sp_fall *why)
{
	*why = SP_FALL_MMAP;
	for (size_t i = 0; i < sizeof range_sizes_mib / sizeof *range_sizes_mib; i++) {
		size_t len = range_sizes_mib[i] << 20;
		void *p;
		if (sp_map_aligned(len, UNIT_SIZE, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, &p) < 0)
			continue;
		if (sp_os->madvise(p, len, MADV_HUGEPAGE) < 0) {
			sp_os->munmap(p, len);
			*why = SP_FALL_MADVISE;
			return false;
		}
		range_lo = writable = cur = (uintptr_t)p;
		range_hi = range_lo + len;
		return true;
	}
	return false;
}

/* On the first call, under the lock: emulate the break, or leave it the kernel's. */
static void decide(bool active)
{
	const struct sp_options *o = rt_options();
	mode = BRK_KERNEL;
	if (active && o->heap && o->backing != SP_BACKING_4K) {
		const struct sp_view *v = sp_view_get();
		enum sp_fall why;
		if (!v->thp_present)
			fall(SP_FALL_UNSUPPORTED, "this kernel has no THP");
		else if (v->thp_never || v->features.thp_disabled_here)
			fall(SP_FALL_THP_OFF, "THP is never, or disabled for this process");
		else if (reserve(&why))
			mode = BRK_EMULATED;
		else
			fall(why, why == SP_FALL_MMAP ? "no address space for it (ulimit -v?)"
						      : "madvise(MADV_HUGEPAGE) failed");
	}
	if (mode == BRK_EMULATED)
		rt_verbose(1, "the program break is emulated on THP in %zu MiB of address space "
			   "at %p, not the kernel's [heap]", (size_t)((range_hi - range_lo) >> 20),
			   (void *)range_lo);
	else
		kernel_start = kernel_brk(0);
	atomic_store(&st_mode, mode);
}

/* Makes the pages up to need (page-aligned) read-write, in steps that end on 2 MiB:
 * a 2 MiB block that lies whole in the read-write part faults in as one huge page. */
static int grow_to(uintptr_t need)
{
	if (need <= writable)
		return 0;
	uintptr_t end = unit_up(need) < range_hi ? unit_up(need) : range_hi;
	if (sp_os->mprotect((void *)writable, end - writable, PROT_READ | PROT_WRITE) == 0) {
		writable = end;
		return 0;
	}
	/* Near RLIMIT_DATA or the commit limit, what is needed may still be had. */
	if (end > need && sp_os->mprotect((void *)writable, need - writable,
					  PROT_READ | PROT_WRITE) == 0) {
		writable = need;
		return 0;
	}
	return -ENOMEM;
}

/* What the kernel does to the pages above a lowered break (keep, page-aligned): they
 * are gone, and read as zero when the break grows over them again. Ours are freed and
 * made inaccessible; the page the break is in keeps its bytes, as the kernel's does,
 * and a break that stays in its page frees nothing (nor splits a huge page).
 * A 2 MiB page that the new break cuts is split by the kernel: what stays below it is
 * on base pages from then on (khugepaged may collapse it again later). */
static void shrink_to(uintptr_t keep, uintptr_t old_brk)
{
	if (keep >= page_up(old_brk) || keep >= writable)
		return;
	size_t len = writable - keep;
	if (sp_os->madvise((void *)keep, len, MADV_DONTNEED) < 0 && page_up(old_brk) > keep)
		/* Locked memory (mlockall) refuses DONTNEED: zero what the program had. */
		memset((void *)keep, 0, page_up(old_brk) - keep);
	/* Should the kernel refuse (no VMA left to split), the pages stay accessible:
	 * zero, and past the break, where a correct program does not go. */
	if (sp_os->mprotect((void *)keep, len, PROT_NONE) == 0)
		writable = keep;
}

/* Sets the break to want, under the lock; 0 or -ENOMEM, as glibc's brk: below the
 * start nothing moves and that is no error (the kernel returns the old break, which
 * glibc takes for success). */
static int set_break(uintptr_t want)
{
	if (mode == BRK_KERNEL) {
		uintptr_t got = kernel_brk(want);
		count(kernel_start, got);
		return got < want ? -ENOMEM : 0;
	}
	if (want < range_lo)
		return 0;
	if (want > range_hi)
		return -ENOMEM;
	if (want > cur) {
		if (grow_to(page_up(want)) < 0)
			return -ENOMEM;
	} else {
		shrink_to(page_up(want), cur);
	}
	cur = want;
	count(range_lo, cur);
	return 0;
}

static uintptr_t current_break(void)
{
	return mode == BRK_KERNEL ? kernel_brk(0) : cur;
}

static void lock_decided(void)
{
	bool active = rt_init(); /* outside the lock: it may start the heap */
	pthread_mutex_lock(&brk_lock);
	if (mode == BRK_UNDECIDED)
		decide(active);
}

EXPORT void *sbrk(intptr_t increment)
{
	lock_decided();
	uintptr_t old = current_break();
	int r = 0;
	if (increment > 0) {
		if (old + (uintptr_t)increment < old)
			r = -ENOMEM;
	} else if (increment < 0) {
		if (old < (uintptr_t)0 - (uintptr_t)increment)
			r = -ENOMEM;
	}
	if (r == 0 && increment != 0)
		r = set_break(old + (uintptr_t)increment);
	pthread_mutex_unlock(&brk_lock);
	if (r < 0) {
		errno = -r;
		return (void *)-1;
	}
	return (void *)old;
}

EXPORT void *__sbrk(intptr_t increment)
{
	return sbrk(increment);
}

EXPORT int brk(void *addr)
{
	lock_decided();
	int r = set_break((uintptr_t)addr);
	pthread_mutex_unlock(&brk_lock);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return 0;
}

void rt_brk_stats(struct rt_stats *st)
{
	int m = atomic_load(&st_mode);
	st->brk_used = m != BRK_UNDECIDED;
	st->brk_emulated = m == BRK_EMULATED;
	st->brk_bytes = atomic_load(&st_bytes);
	st->brk_peak = atomic_load(&st_peak);
	for (int f = 0; f < SP_FALL_COUNT; f++)
		st->falls[SP_BACKING_THP][f] += atomic_load(&st_falls[f]);
}

/* ---------- fork: the child gets the break as it was, and a free lock ---------- */

static void fork_prepare(void) { pthread_mutex_lock(&brk_lock); }
static void fork_done(void) { pthread_mutex_unlock(&brk_lock); }

__attribute__((constructor)) static void brk_constructor(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}
