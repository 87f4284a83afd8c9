/* brk.c - the program break (sbrk, brk) on huge pages: the kernel's [heap] mapping
 * never gets MADV_HUGEPAGE, so the break is emulated inside a range of our own that
 * has it, with the kernel's and glibc's results, errno and shrinking rules. When the
 * runtime is off, the heap is off or the backing is 4k, the kernel's break is used. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "life.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"

#define EXPORT __attribute__((visibility("default")))

/* Under 2m and 1g the break's memory is on 2 MiB hugetlb pages while the pool has
 * them, in whole 2 MiB steps (THP where it has none, each refusal counted); under the
 * other backings but 4k it is THP. Private hugetlb memory that a forked child shares
 * is copied on write from the pool: so, as the heap does with its units
 * (fork_units.c), the child copies the hugetlb steps into THP memory of its own as
 * soon as it runs (fork.c). A step the program changes (mprotect, munmap, MAP_FIXED, mremap over part
 * of it) is first copied to THP memory in place: the kernel cannot split a hugetlb
 * page's mapping. */

enum brk_mode { BRK_UNDECIDED, BRK_EMULATED, BRK_KERNEL };

/* brk is rare: one lock for all of it, taken around fork so a child finds the
 * break whole. Everything below is under it, but the counters (read by the report,
 * which may run while another thread is here). */
static pthread_mutex_t brk_lock = PTHREAD_MUTEX_INITIALIZER;
SP_LOCK_RANK(brk_lock, RANK_BRK, NULL);
#define MAX_STEPS ((64ul << 30) >> UNIT_SHIFT)
/* The break, passed to every function below that reads or changes it. */
struct brk_state {
	enum brk_mode mode;
	uintptr_t lo, hi;          /* BRK_EMULATED: the range; the break starts at lo */
	uintptr_t cur;             /* BRK_EMULATED: the break */
	uintptr_t writable;        /* [lo, writable) is read-write */
	uintptr_t kernel_start;    /* BRK_KERNEL: the kernel's break at the first call */
	bool hugetlb_wanted;
	/* Hugetlb steps (2m, 1g): a bit per 2 MiB of the range, 1 for a step on a
	 * hugetlb page; they lie in [lo, writable), whole. Memory in [page_up(cur),
	 * writable) reads as zero (a correct program does not write above its break). */
	uint64_t huge_steps[MAX_STEPS / 64];
	size_t n_huge;
	struct sp_rung_skip skip;  /* after a refusal, the pool is not asked for a while */
};
static struct brk_state the_brk;

static _Atomic int st_mode;
static _Atomic uint64_t st_bytes, st_peak;

/* The address space to ask for, largest first: it costs nothing until the break
 * reaches it (PROT_NONE, MAP_NORESERVE), and a ulimit -v may leave less. */
static const size_t range_sizes_mib[] = { 64 << 10, 16 << 10, 4 << 10, 1 << 10, 256, 64 };

static uintptr_t unit_up(uintptr_t a) { return (a + UNIT_SIZE - 1) & ~(UNIT_SIZE - 1); }
static uintptr_t unit_down(uintptr_t a) { return a & ~(UNIT_SIZE - 1); }
static uintptr_t min_addr(uintptr_t a, uintptr_t b) { return a < b ? a : b; }

static void count(uintptr_t start, uintptr_t brk_now)
{
	uint64_t bytes = brk_now > start ? brk_now - start : 0;
	atomic_store_explicit(&st_bytes, bytes, memory_order_relaxed);
	if (bytes > atomic_load_explicit(&st_peak, memory_order_relaxed))
		atomic_store_explicit(&st_peak, bytes, memory_order_relaxed);
}

static void fall(enum sp_fall why, const char *what)
{
	sp_fall(SP_SITE_BRK, SP_BACKING_THP, why);
	rt_verbose(1, "the program break stays the kernel's, on 4 KiB pages: %s", what);
}

/* ---------- hugetlb steps (2m, 1g) ---------- */

static size_t step_of(const struct brk_state *b, uintptr_t a) { return (a - b->lo) >> UNIT_SHIFT; }

static bool huge_at(const struct brk_state *b, uintptr_t a)
{
	size_t i = step_of(b, a);
	return b->huge_steps[i >> 6] >> (i & 63) & 1;
}

static void set_huge(struct brk_state *b, uintptr_t from, uintptr_t to, bool on)
{
	for (uintptr_t a = from; a < to; a += UNIT_SIZE) {
		size_t i = step_of(b, a);
		if (on == huge_at(b, a))
			continue;
		b->huge_steps[i >> 6] ^= 1ull << (i & 63);
		if (on)
			b->n_huge++;
		else
			b->n_huge--;
	}
}

/* Hugetlb 2 MiB pages over the steps [a, end), as many as the pool holds from a;
 * returns where they end. A refusal is counted and said, and the pool is not asked
 * again for a while (rung.c); *hole says the rest may have been unmapped by a
 * refused move (pages_hugetlb_into; a refused map changes nothing). */
static uintptr_t grow_hugetlb(struct brk_state *b, uintptr_t a, uintptr_t end, bool *hole)
{
	size_t n = (end - a) >> UNIT_SHIFT;
	struct sp_rung_ask ask = { .site = SP_SITE_BRK, .rung = SP_BACKING_2M, .skip = &b->skip };
	*hole = false;
	if (!b->hugetlb_wanted || n == 0)
		return a;
	int why = pages_hugetlb_try(&ask, a, n << UNIT_SHIFT, hole);
	if (why < 0) {
		set_huge(b, a, end, true);
		return end;
	}
	rt_fall(SP_BACKING_2M, (enum sp_fall)why);
	/* As many as it has free, if not all. */
	size_t room = (size_t)sp_rung_room(SP_BACKING_2M, false);
	if (why == SP_FALL_POOL_EMPTY && room > 0 && room < n &&
	    pages_hugetlb_into(a, room << UNIT_SHIFT, false, hole) == 0) {
		set_huge(b, a, a + (room << UNIT_SHIFT), true);
		return a + (room << UNIT_SHIFT);
	}
	return a;
}

/* Fresh read-write THP memory over [a, end), where a refused move of hugetlb pages
 * may have left a hole. */
static int plain_rw(uintptr_t a, uintptr_t end)
{
	int r = kern_fresh_at((void *)a, end - a);
	if (r == 0)
		kern_want_huge((void *)a, end - a, true);
	return r;
}

/* Back to the range's reservation (no memory, inaccessible, advised huge): a hugetlb
 * page returns to the pool. */
static int unreserve(uintptr_t a, uintptr_t end)
{
	int r = kern_reserve_at((void *)a, end - a, true);
	if (r == 0)
		kern_want_huge((void *)a, end - a, true);
	return r;
}

/* The range, advised huge; false (and why) when it cannot be had. */
static bool reserve(struct brk_state *b, enum sp_fall *why)
{
	*why = SP_FALL_MMAP;
	for (size_t i = 0; i < sizeof range_sizes_mib / sizeof *range_sizes_mib; i++) {
		size_t len = range_sizes_mib[i] << 20;
		void *p;
		if (sp_map_aligned(len, UNIT_SIZE, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, &p) < 0)
			continue;
		if (kern_want_huge(p, len, true) < 0) {
			kern_unmap(p, len);
			*why = SP_FALL_MADVISE;
			return false;
		}
		b->lo = b->writable = b->cur = (uintptr_t)p;
		b->hi = b->lo + len;
		return true;
	}
	return false;
}

/* On the first call, under the lock: emulate the break, or leave it the kernel's. */
static void decide(struct brk_state *b, bool active)
{
	const struct sp_options *o = rt_options();
	b->mode = BRK_KERNEL;
	if (active && o->heap && o->backing != SP_BACKING_4K) {
		const struct sp_view *v = sp_view_get();
		enum sp_fall why;
		if (!v->thp_present)
			fall(SP_FALL_UNSUPPORTED, "this kernel has no THP");
		else if (v->thp_never || v->features.thp_disabled_here)
			fall(SP_FALL_THP_OFF, "THP is never, or disabled for this process");
		else if (reserve(b, &why))
			b->mode = BRK_EMULATED;
		else
			fall(why, why == SP_FALL_MMAP ? "no address space for it (ulimit -v?)"
						      : "madvise(MADV_HUGEPAGE) failed");
	}
	b->hugetlb_wanted = b->mode == BRK_EMULATED &&
			    (o->backing == SP_BACKING_2M || o->backing == SP_BACKING_1G);
	if (b->mode == BRK_EMULATED)
		rt_verbose(1, "the program break is emulated on %s in %zu MiB of address space "
			   "at %p, not the kernel's [heap]",
			   b->hugetlb_wanted ? "2 MiB hugetlb pages (THP where the pool has none)"
					     : "THP",
			   (size_t)((b->hi - b->lo) >> 20), (void *)b->lo);
	else
		b->kernel_start = kern_brk(0);
	atomic_store(&st_mode, b->mode);
}

/* Makes [from, to) of the reservation read-write; near RLIMIT_DATA or the commit
 * limit, what is needed (up to need) may still be had. Returns the new end of the
 * read-write part (from if nothing could be had). */
static uintptr_t make_rw(uintptr_t from, uintptr_t to, uintptr_t need)
{
	if (kern_protect((void *)from, to - from, PROT_READ | PROT_WRITE) == 0)
		return to;
	if (to > need && need > from &&
	    kern_protect((void *)from, need - from, PROT_READ | PROT_WRITE) == 0)
		return need;
	return from;
}

/* Makes the pages up to need (page-aligned) read-write, in steps that end on 2 MiB:
 * a 2 MiB block that lies whole in the read-write part faults in as one huge page,
 * or is one hugetlb page (2m, 1g) while the pool has them. */
static int grow_to(struct brk_state *b, uintptr_t need)
{
	if (need <= b->writable)
		return 0;
	uintptr_t end = min_addr(unit_up(need), b->hi);
	/* The rest of the THP step the read-write part ends in, if it ends in one. */
	uintptr_t a = min_addr(unit_up(b->writable), end);
	if (a > b->writable) {
		b->writable = make_rw(b->writable, a, need);
		if (b->writable < a)
			return b->writable >= need ? 0 : -ENOMEM;
	}
	if (b->writable >= end)
		return 0;
	bool hole;
	uintptr_t h = grow_hugetlb(b, b->writable, end, &hole);
	b->writable = h;
	if (h < end && hole) {
		/* A refused move may have unmapped the rest: fresh THP memory there, or at
		 * least the reservation back. */
		if (plain_rw(h, end) == 0)
			b->writable = end;
		else
			unreserve(h, end);
	} else if (h < end) {
		b->writable = make_rw(h, end, need);
	}
	return b->writable >= need ? 0 : -ENOMEM;
}

/* What the kernel does to the pages above a lowered break (keep, page-aligned): they
 * are gone, and read as zero when the break grows over them again. Ours are freed and
 * made inaccessible; the page the break is in keeps its bytes, as the kernel's does,
 * and a break that stays in its page frees nothing (nor splits a huge page).
 * A 2 MiB page that the new break cuts is split by the kernel: what stays below it is
 * on base pages from then on (khugepaged may collapse it again later). */
static void zero(uintptr_t from, uintptr_t to, uintptr_t dirty)
{
	uintptr_t end = min_addr(to, dirty);
	if (from < end)
		memset((void *)from, 0, end - from);
}

/* Frees [s, w) above the break (steps of one kind) and makes it inaccessible; memory
 * below dirty may hold the program's bytes. False if the kernel refused. */
static bool give_back(struct brk_state *b, uintptr_t s, uintptr_t w, uintptr_t dirty)
{
	if (huge_at(b, s)) {
		/* Whole hugetlb pages: back to the pool. */
		if (unreserve(s, w) < 0)
			return false;
		set_huge(b, s, w, false);
		sp_rung_forget(&b->skip);
		return true;
	}
	if (kern_drop((void *)s, w - s) < 0)
		/* Locked memory (mlockall) refuses DONTNEED: zero what the program had. */
		zero(s, w, dirty);
	return kern_protect((void *)s, w - s, PROT_NONE) == 0;
}

static void shrink_to(struct brk_state *b, uintptr_t keep, uintptr_t old_brk)
{
	uintptr_t dirty = page_up(old_brk);
	if (keep >= dirty || keep >= b->writable)
		return;
	uintptr_t ku = min_addr(unit_up(keep), b->writable), w = b->writable;
	/* The steps above the one the break is in, from the top, a run of one kind at a
	 * time. */
	while (w > ku) {
		uintptr_t s = unit_down(w - 1);
		bool h = huge_at(b, s);
		while (s > ku && huge_at(b, s - UNIT_SIZE) == h)
			s -= UNIT_SIZE;
		if (!give_back(b, s, w, dirty))
			break;
		w = s;
	}
	/* Should the kernel refuse (no VMA left to split), the pages stay accessible:
	 * zero, and past the break, where a correct program does not go. */
	zero(ku, w, dirty);
	b->writable = w;
	if (keep >= ku)
		return;
	/* The step the break is in: a hugetlb page's mapping cannot be cut, so above the
	 * break its pages are zeroed and stay accessible (as the rest of a 2 MiB step
	 * does above a break that grows). */
	if (huge_at(b, keep) || w > ku) {
		zero(keep, ku, dirty);
		return;
	}
	if (kern_drop((void *)keep, ku - keep) < 0)
		zero(keep, ku, dirty);
	if (kern_protect((void *)keep, ku - keep, PROT_NONE) == 0)
		b->writable = keep;
}

/* Sets the break to want, under the lock; 0 or -ENOMEM, as glibc's brk: below the
 * start nothing moves and that is no error (the kernel returns the old break, which
 * glibc takes for success). */
static int set_break(struct brk_state *b, uintptr_t want)
{
	if (b->mode == BRK_KERNEL) {
		uintptr_t got = kern_brk(want);
		count(b->kernel_start, got);
		return got < want ? -ENOMEM : 0;
	}
	if (want < b->lo)
		return 0;
	if (want > b->hi)
		return -ENOMEM;
	if (want > b->cur) {
		if (grow_to(b, page_up(want)) < 0)
			return -ENOMEM;
	} else {
		shrink_to(b, page_up(want), b->cur);
	}
	b->cur = want;
	count(b->lo, b->cur);
	return 0;
}

static uintptr_t current_break(struct brk_state *b)
{
	return b->mode == BRK_KERNEL ? kern_brk(0) : b->cur;
}

static struct brk_state *lock_decided(void)
{
	struct brk_state *b = &the_brk;
	bool active = rt_init(); /* outside the lock: it may start the heap */
	pthread_mutex_lock(&brk_lock);
	if (b->mode == BRK_UNDECIDED)
		decide(b, active);
	return b;
}

EXPORT void *sbrk(intptr_t increment)
{
	struct brk_state *b = lock_decided();
	uintptr_t old = current_break(b);
	int r = 0;
	if (increment > 0) {
		if (old + (uintptr_t)increment < old)
			r = -ENOMEM;
	} else if (increment < 0) {
		if (old < (uintptr_t)0 - (uintptr_t)increment)
			r = -ENOMEM;
	}
	if (r == 0 && increment != 0)
		r = set_break(b, old + (uintptr_t)increment);
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
	struct brk_state *b = lock_decided();
	int r = set_break(b, (uintptr_t)addr);
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
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT];
	sp_falls_get(SP_SITE_BRK, falls);
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++)
			st->falls[b][f] += falls[b][f];
}

/* ---------- the program's calls on the break's memory (mmap.c) ---------- */

bool brk_range(uintptr_t *lo, uintptr_t *hi)
{
	/* The range is set before the mode is published, and never changes. */
	if (atomic_load_explicit(&st_mode, memory_order_acquire) != BRK_EMULATED)
		return false;
	*lo = the_brk.lo;
	*hi = the_brk.hi;
	return true;
}

/* Under the lock: the hugetlb steps that [addr, addr+len) meets are copied to THP
 * memory in place, with the caller's signals blocked (a handler must not write them
 * meanwhile; another thread's write to them while they are copied is lost, see
 * superpage-run(7)). */
static int demote_locked(struct brk_state *b, uintptr_t addr, size_t len)
{
	uintptr_t from = unit_down(addr > b->lo ? addr : b->lo);
	uintptr_t to = min_addr(addr + len, b->writable);
	bool blocked = false;
	sigset_t all, old;
	int r = 0;
	for (uintptr_t a = from; a < to && b->n_huge && r == 0; a += UNIT_SIZE) {
		if (!huge_at(b, a))
			continue;
		if (!blocked) {
			sigfillset(&all);
			pthread_sigmask(SIG_BLOCK, &all, &old);
			blocked = true;
		}
		if (pages_copy_in(a, UNIT_SIZE, (const void *)a)) {
			set_huge(b, a, a + UNIT_SIZE, false);
			sp_rung_forget(&b->skip);
		} else {
			r = -ENOMEM;
		}
	}
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

int brk_demote(uintptr_t addr, size_t len)
{
	uintptr_t lo, hi;
	if (!brk_range(&lo, &hi) || addr >= hi || addr + len <= lo)
		return 0;
	pthread_mutex_lock(&brk_lock);
	int r = demote_locked(&the_brk, addr, len);
	pthread_mutex_unlock(&brk_lock);
	return r;
}

int brk_advise(uintptr_t addr, size_t len, int advice)
{
	struct brk_state *b = &the_brk;
	enum advise_how how = pages_advise_how(advice);
	uintptr_t end = addr + len, run = addr; /* [run, a): for the kernel, not yet asked */
	int ret = 0, r;
	pthread_mutex_lock(&brk_lock);
	if (how == ADV_CHANGE)
		ret = demote_locked(b, addr, len);
	if (how == ADV_CHANGE || how == ADV_KERNEL || !b->n_huge) {
		if (ret == 0)
			ret = kern_advise((void *)addr, len, advice);
		pthread_mutex_unlock(&brk_lock);
		return ret;
	}
	/* DONTNEED and hints: as the heap does on its hugetlb units (pages_advise). */
	for (uintptr_t a = addr; a < end;) {
		uintptr_t e = min_addr(unit_down(a) + UNIT_SIZE, end);
		if (a < b->lo || a >= b->writable || !huge_at(b, a)) {
			a = e;
			continue;
		}
		if (run < a && (r = kern_advise((void *)run, a - run, advice)) < 0 && !ret)
			ret = r;
		if (how == ADV_ZERO)
			memset((void *)a, 0, e - a);
		a = run = e;
	}
	if (run < end && (r = kern_advise((void *)run, end - run, advice)) < 0 && !ret)
		ret = r;
	pthread_mutex_unlock(&brk_lock);
	return ret;
}

/* ---------- fork: the child gets the break as it was, and a free lock ----------
 * Hugetlb steps are shared with the child by the kernel's fork, copy on write, and
 * the child copies them into THP memory of its own, reading only (fork.c), as the
 * heap does with its hugetlb units. */

void brk_fork_prepare(void)
{
	pthread_mutex_lock(&brk_lock);
}

/* Each hugetlb step, to fn. Under the lock. */
void brk_fork_hugetlb(fork_range_fn fn, void *arg)
{
	const struct brk_state *b = &the_brk;
	if (b->mode != BRK_EMULATED || !b->n_huge)
		return;
	for (uintptr_t a = b->lo; a < b->writable; a += UNIT_SIZE)
		if (huge_at(b, a))
			fn(a, UNIT_SIZE, UNIT_SIZE, arg);
}

/* Before a fork the pool cannot cover (fork.c, every other write held): hugetlb steps
 * copied to THP in place while *want > 0, each giving a page back. The steps moved;
 * under the lock. */
size_t brk_fork_demote(long *want)
{
	struct brk_state *b = &the_brk;
	size_t moved = 0;
	if (b->mode != BRK_EMULATED || !b->n_huge)
		return 0;
	for (uintptr_t a = b->lo; a < b->writable && *want > 0; a += UNIT_SIZE) {
		if (huge_at(b, a) && pages_copy_in(a, UNIT_SIZE, (const void *)a)) {
			set_huge(b, a, a + UNIT_SIZE, false);
			sp_rung_forget(&b->skip);
			(*want)--;
			moved++;
		}
	}
	return moved;
}

void brk_fork_parent(void)
{
	pthread_mutex_unlock(&brk_lock);
}

/* In the child, once fork.c has copied the hugetlb steps: they are THP now. */
void brk_fork_copied(void)
{
	struct brk_state *b = &the_brk;
	if (b->mode == BRK_EMULATED && b->n_huge)
		set_huge(b, b->lo, unit_up(b->writable), false);
}

void brk_fork_child(void)
{
	int e = errno;
	pthread_mutex_unlock(&brk_lock);
	errno = e;
}
