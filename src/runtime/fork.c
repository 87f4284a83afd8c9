/* fork.c - fork as the kernel forks, with private hugetlb memory in the process.
 *
 * Under 2m and 1g the heap's units, the break's steps and the program's segments
 * that libhugetlbfs.so.0 maps may be private hugetlb memory. The kernel's fork shares
 * it with the child, copy on write, as all private memory: the child's memory is the
 * parent's at the instant of fork, whatever the other threads were writing. Nothing
 * of it is copied in user space before fork, and nothing is taken out of the child.
 * But a copy on write of a hugetlb page comes from the pool, and when the pool has no
 * free page the kernel keeps the page for the process that mapped it (the parent)
 * and takes it from the child, which dies of SIGBUS at its next touch ("killed due to
 * inadequate hugepage pool"); a child that writes such a page itself dies the same
 * way. So the child copies that memory into THP memory of its own, reading only
 * (which takes no page from the pool), as soon as it runs, and drops its share: the
 * parent's writes after that find their pages theirs alone and copy nothing. What
 * must hold is that no page the child still needs is taken from it meanwhile: that
 * the pool's free pages (free less reserved, of each size) cover every huge page the
 * child shares, besides those promised to children of this process tree still
 * copying theirs (a count in a page they share). Then whatever the parent writes
 * meanwhile is copied from the pool. The prepare handler sees to it
 * (fork_share_prepare):
 *
 *   room   the pool has that room, or has it once free units of the heap's chunks
 *          are given back (pages_fork_trim: no copy, and no hold, for no thread can
 *          be writing them).
 *   make   it has not: the heap makes it, by moving some of its hugetlb units to THP
 *          (their pages go back to the pool), enough that the rest fit, while no
 *          write to the process's hugetlb memory can be lost: userfaultfd holds every
 *          write of the other threads (or of the kernel, for a system call's buffer)
 *          until the moves are done, or there is no other thread; the forking
 *          thread's other signals are blocked meanwhile. The hold is lifted before
 *          prepare returns (glibc's fork takes a lock in the heap after the last
 *          prepare handler: the name service's). A fork with the pool empty costs a
 *          copy of half that memory, and the parent keeps the rest on hugetlb pages.
 *          (userfaultfd needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1.)
 *   short  neither: the fork goes ahead as the kernel's, said once. A page the parent
 *          writes before the child has copied it may then be taken from the child,
 *          which ends with a message rather than run with a wrong page; and under
 *          such pressure on the pool the kernel was seen to end the parent too, with
 *          threads mapping and unmapping hugetlb memory while it forked
 *          (superpage-run(7), FORK).
 * Every huge page of the ranges counts, resident or not: one not resident at prepare
 * may be by the fork. While children copy, the heap takes no pool page from the room
 * promised to them (fork_pool_spares).
 *
 * Code runs in the child before the runtime's child handler (glibc's own: the stdio
 * list's locks, the name service; other libraries' handlers), and may write that
 * memory: with the pool empty that write is a SIGBUS. While hugetlb memory is shared,
 * a SIGBUS handler stands guard: in the child, a fault in that memory makes the copy
 * there and then (mmap, mremap, memcpy: safe in a signal handler; the runtime's locks
 * are held by this very thread since prepare, and nothing else runs in the child) and
 * the touch is made again, on memory of the child's own. Any other SIGBUS, and any in
 * the parent, goes to the handler the program had. The guard runs on a stack of the
 * runtime's (the forking thread's alternate stack may be in the heap: CPython's
 * faulthandler puts it there), set for the forking thread across fork. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/userfaultfd.h>
#include <signal.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/single_threaded.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "life.h"
#include "life_os.h"
#include "pageheap/pageheap.h"
#include "program/program.h"
#include "runtime.h"

enum route { ROUTE_NONE, ROUTE_ROOM, ROUTE_MADE, ROUTE_SHORT };

#define SIZES 2 /* the huge page sizes: [0] 2 MiB, [1] 1 GiB */
#define POOL(kb, f) "/sys/kernel/mm/hugepages/hugepages-" kb "kB/" f
static const char *const pool_free_path[SIZES] = { POOL("2048", "free_hugepages"),
						   POOL("1048576", "free_hugepages") };
static const char *const pool_resv_path[SIZES] = { POOL("2048", "resv_hugepages"),
						   POOL("1048576", "resv_hugepages") };

/* One fork's state, set by the forking thread in prepare under the runtime's locks;
 * the child has its own copy. */
static struct {
	enum route route;
	long pages[SIZES];             /* huge pages the child may share */
	long room[SIZES];              /* free pages of the pool */
	pid_t forker;                  /* the process that forked */
	stack_t alt;                   /* the forking thread's alternate stack */
	bool alt_swapped;
	struct sigaction prior;        /* the program's SIGBUS action while the guard stands */
	bool guarding;
	volatile sig_atomic_t copied;  /* in the child: the hugetlb memory is its own */
	volatile sig_atomic_t copying; /* in the child: it is being copied */
} fk;

/* Pages of each size promised to children still copying, shared by this process's
 * tree (they all draw on the one pool); mapped at the first fork that needs it. */
static _Atomic long *promised;
static _Atomic uint64_t n_shared, n_moved, n_short, n_scanned; /* for --stats */
static int uffd_refused;          /* userfaultfd said no once (its errno): not asked again */
static char guard_stack[64 << 10] __attribute__((aligned(16)));

/* The huge pages of the ranges, in the order each_range walks them (the same in the
 * child as in prepare: the modules' locks are held between): a bit each, set for a
 * page resident when prepare counted. The child reads only the pages resident in it
 * (a read of one never touched would take a page from the pool); one that is not,
 * though its bit is set, was taken from it. Grown as needed, never shrunk. */
static struct {
	uint64_t *bits;
	size_t cap, n;   /* bits mapped, pages walked */
	bool guessed;    /* a page was noted resident without the kernel saying so */
} walk;

static int size_index(size_t page)
{
	return page > UNIT_SIZE;
}

/* ---------- what the child shares ---------- */

static void each_range(fork_range_fn fn, void *arg);

/* Room for bit n of the walk; false if it cannot be mapped. */
static bool walk_room(size_t n)
{
	void *m;
	if (n < walk.cap)
		return true;
	size_t cap = walk.cap ? 2 * walk.cap : 1 << 15;
	while (cap <= n)
		cap *= 2;
	if (life_map(cap / 8, &m) < 0)
		return false;
	if (walk.bits) {
		memcpy(m, walk.bits, walk.cap / 8);
		life_unmap(walk.bits, walk.cap / 8);
	}
	walk.bits = m;
	walk.cap = cap;
	return true;
}

static bool walked_resident(size_t k)
{
	return k >= walk.cap || (walk.bits[k / 64] >> (k % 64) & 1);
}

static void note_page(bool resident, size_t page)
{
	/* (A page past a bitmap that could not be mapped counts as resident.) */
	if (walk_room(walk.n)) {
		uint64_t bit = 1ull << (walk.n % 64);
		walk.bits[walk.n / 64] = resident ? walk.bits[walk.n / 64] | bit
						  : walk.bits[walk.n / 64] & ~bit;
	} else {
		walk.guessed = true;
	}
	walk.n++;
	/* Every page counts for the room, resident or not: one not resident now may be
	 * by the fork (another thread's first touch), and shared then. */
	fk.pages[size_index(page)]++;
}

/* Notes the pages of [a, a+len) from p on, up to end, resident or not; the next page. */
static uintptr_t note_pages(uintptr_t p, uintptr_t end, size_t page, bool resident)
{
	for (; p < end; p += page)
		note_page(resident, page);
	return p;
}

/* Counts the pages of a range and notes which are resident, from the page tables
 * (PAGEMAP_SCAN, Linux 6.7: a few calls a range however large, the present pages
 * coming back as runs). False if the kernel cannot tell (no PAGEMAP_SCAN), with
 * nothing noted. */
static bool scan_range(int fd, uintptr_t a, size_t len, size_t page)
{
	static struct pr_region vec[256];
	uintptr_t p = a, end = a + len;
	while (p < end) {
		struct pr_scan_arg q = {
			.size = sizeof q, .start = p, .end = end,
			.vec = (uint64_t)(uintptr_t)vec, .vec_len = sizeof vec / sizeof *vec,
			.category_mask = PR_PAGE_IS_PRESENT, .return_mask = PR_PAGE_IS_PRESENT,
		};
		int n = life_pagemap_scan(fd, &q);
		if (n < 0) {
			if (p == a)
				return false;
			/* (Refused half-way: the rest counts as resident, as for mincore.) */
			walk.guessed = true;
			note_pages(p, end, page, true);
			return true;
		}
		for (int i = 0; i < n; i++) {
			uintptr_t lo = vec[i].start & ~(page - 1), hi = vec[i].end;
			p = note_pages(p, lo > p ? lo : p, page, false);
			p = note_pages(p, hi < end ? hi : end, page, true);
		}
		uintptr_t walked = q.walk_end > end ? end : (uintptr_t)q.walk_end;
		if (walked <= p && n == 0) {
			/* (No progress said: the rest counts as resident, the safe way.) */
			walk.guessed = true;
			note_pages(p, end, page, true);
			return true;
		}
		p = note_pages(p, walked, page, false);
	}
	return true;
}

/* Counts the pages of a range and notes which are resident, with mincore: 2 MiB pages
 * a stretch of 64 MiB at a time (its vector a byte per 4 KiB page), 1 GiB pages one
 * by one. */
static void mincore_range(uintptr_t a, size_t len, size_t page)
{
	static unsigned char vec[(64u << 20) / 4096];
	const size_t stretch = sizeof vec * 4096;
	for (uintptr_t p = a; p < a + len;) {
		size_t n = page;
		if (page == UNIT_SIZE)
			n = a + len - p < stretch ? a + len - p : stretch;
		if (life_resident((void *)p, page == UNIT_SIZE ? n : 4096, vec) < 0) {
			memset(vec, 1, sizeof vec);
			walk.guessed = true;
		}
		for (size_t off = 0; off < n; off += page)
			note_page(vec[off / 4096] & 1, page);
		p += n;
	}
}

static void walk_range(uintptr_t a, size_t len, size_t page, int *pagemap)
{
	atomic_fetch_add_explicit(&n_scanned, len / page, memory_order_relaxed);
	if (*pagemap == INT_MIN) /* (not opened yet: no range needed it) */
		*pagemap = life_pagemap_open();
	if (*pagemap >= 0 && scan_range(*pagemap, a, len, page))
		return;
	if (*pagemap >= 0)
		life_close(*pagemap);
	*pagemap = -1;
	mincore_range(a, len, page);
}

/* Counts a range's pages and notes which are resident: those of the heap's chunks
 * known present from its own record (pages_fork_faulted), the others from the page
 * tables; each found present there (and not guessed) is recorded as known. A heap
 * that forks again walks only its pages not known present: those given out since, or
 * never touched. */
static void count_range(uintptr_t a, size_t len, size_t page, void *arg)
{
	int *pagemap = arg; /* /proc/self/pagemap; -1 once the kernel could not scan */
	uintptr_t end = a + len;
	if (page != UNIT_SIZE) {
		walk_range(a, len, page, pagemap);
		return;
	}
	for (uintptr_t p = a, q; p < end; p = q) {
		bool known = pages_fork_faulted(p);
		for (q = p + page; q < end && pages_fork_faulted(q) == known;)
			q += page;
		if (known) {
			note_pages(p, q, page, true);
			continue;
		}
		size_t k = walk.n;
		walk.guessed = false;
		walk_range(p, q - p, page, pagemap);
		for (uintptr_t x = p; !walk.guessed && x < q; x += page, k++)
			if (walked_resident(k))
				pages_fork_faulted_at(x);
	}
}

/* Counts every range's resident pages afresh. */
static void count_all(void)
{
	int pagemap = INT_MIN;
	fk.pages[0] = fk.pages[1] = 0;
	walk.n = 0;
	each_range(count_range, &pagemap);
	if (pagemap >= 0)
		life_close(pagemap);
	/* (The heap's free units whose pages the child shares: not copied, but the
	 * parent's write to one, once it is given out again, is a copy on write.) */
	fk.pages[0] += (long)pages_fork_held();
}

static void each_range(fork_range_fn fn, void *arg)
{
	pages_fork_hugetlb(fn, arg);
	brk_fork_hugetlb(fn, arg);
	segs_fork_hugetlb(fn, arg);
}

/* ---------- room: the pool's free pages ---------- */

static long pool_free(int i)
{
	long free = 0, resv = 0;
	if (sp_read_long(pool_free_path[i], &free) < 0 || sp_read_long(pool_resv_path[i], &resv) < 0)
		return 0;
	return free - resv;
}

/* Whether the pool covers the child's share (and the promises still out); if so the
 * pages are promised. */
static bool has_room(void)
{
	if (!promised) {
		void *m;
		if (life_map_shared(4096, &m) < 0)
			return false;
		promised = m;
	}
	bool room = true;
	for (int i = 0; i < SIZES; i++) {
		fk.room[i] = fk.pages[i] ? pool_free(i) - atomic_load(&promised[i]) : 0;
		room = room && fk.room[i] >= fk.pages[i];
	}
	if (!room)
		return false;
	for (int i = 0; i < SIZES; i++)
		atomic_fetch_add(&promised[i], fk.pages[i]);
	return true;
}

bool fork_pool_spares(bool giga, size_t n)
{
	long p = promised ? atomic_load(&promised[giga]) : 0;
	return p <= 0 || pool_free(giga) - p >= (long)n;
}

static void unpromise(void)
{
	for (int i = 0; i < SIZES; i++)
		atomic_fetch_sub(&promised[i], fk.pages[i]);
}

/* Room had by giving back free units of the heap's chunks (pages_fork_trim): no copy,
 * no hold. Whether there is room now. */
static bool trim_room(void)
{
	long short_by = fk.pages[0] - fk.room[0];
	if (short_by <= 0 || pages_fork_trim(short_by) <= 0)
		return false;
	count_all();
	return has_room();
}

/* ---------- make: room in the pool, the other threads' writes held ---------- */

static void hold_range(uintptr_t a, size_t len, size_t page, void *arg)
{
	(void)page;
	int *hold = arg; /* the descriptor, or -errno once a range failed */
	struct uffdio_register reg = { .range = { a, len }, .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .range = { a, len }, .mode = UFFDIO_WRITEPROTECT_MODE_WP };
	int r;
	if (hold[0] < 0)
		return;
	r = life_uffd_register(hold[0], &reg);
	if (r == 0)
		r = life_uffd_protect(hold[0], &wp);
	if (r < 0) {
		life_close(hold[0]); /* its last close lifts what it protected */
		hold[0] = r;
	}
}

/* A descriptor that can write-protect private hugetlb memory, or -errno. */
static int open_uffd(void)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_WP_HUGETLBFS_SHMEM };
	int fd = life_uffd_new();
	if (fd < 0)
		return fd;
	int r = life_uffd_api(fd, &api);
	if (r == 0 && !(api.features & UFFD_FEATURE_WP_HUGETLBFS_SHMEM))
		r = -EOPNOTSUPP;
	if (r < 0) {
		life_close(fd);
		return r;
	}
	return fd;
}

static void say_moved(long units)
{
	static _Atomic int said;
	atomic_fetch_add(&n_moved, (uint64_t)units);
	/* (With --verbose: the program's stderr is its own; --stats counts it.) */
	if (units <= 0 || rt_options()->verbose < 1 || atomic_exchange(&said, 1))
		return;
	rt_say("fork: the pool had room for %ld of the %ld huge pages of 2 MiB (%ld of %ld "
	       "of 1 GiB) the child shares: %ld units of 2 MiB moved to THP to make room "
	       "(said once)",
	       fk.room[0], fk.pages[0], fk.room[1], fk.pages[1], units);
}

/* The hugetlb memory that the pool cannot cover moved to THP (the heap's units
 * first, then the break's steps, then the program's segments), each move giving a
 * page back: half the shortfall does (the rest then fits), and two more for the
 * pages another process may take meanwhile. Every write to the process's hugetlb
 * memory is held meanwhile: the other threads' wait on the protection (hold, a
 * userfaultfd descriptor), or there are none (alone, and hold -1); the forking
 * thread's signals are blocked (faults aside). Whether there is room now. */
static bool make_room(int hold)
{
	sigset_t all, old;
	long want[SIZES];
	static const int faults[] = { SIGBUS, SIGSEGV, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
	for (int i = 0; i < SIZES; i++)
		want[i] = fk.pages[i] > fk.room[i] ? (fk.pages[i] - fk.room[i] + 1) / 2 + 2 : 0;
	sigfillset(&all);
	for (size_t i = 0; i < sizeof faults / sizeof *faults; i++)
		sigdelset(&all, faults[i]);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int held = hold;
	if (hold >= 0)
		each_range(hold_range, &held);
	if (hold < 0 || held >= 0) {
		size_t units = pages_fork_demote(want);
		units += brk_fork_demote(&want[0]) + segs_fork_demote(&want[0]);
		say_moved((long)units);
	}
	if (held >= 0)
		life_close(held); /* the writes go on, on THP memory where a unit moved */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	count_all();
	return has_room();
}

/* Room made with the other threads' writes held, if userfaultfd allows it. */
static bool make_room_held(void)
{
	int hold;
	if (uffd_refused)
		return false;
	hold = open_uffd();
	if (hold < 0) {
		uffd_refused = -hold;
		return false;
	}
	return make_room(hold);
}

static void say_short(void)
{
	static _Atomic int said;
	if (atomic_exchange(&said, 1))
		return;
	rt_say("fork: the child shares %ld huge pages of 2 MiB and %ld of 1 GiB, the pool has "
	       "room for %ld and %ld, and no room can be made (userfaultfd refused: errno %d): "
	       "a page the parent writes before the child has copied it may be taken from "
	       "the child (grow the pool, or allow vm.unprivileged_userfaultfd; said once)",
	       fk.pages[0], fk.pages[1], fk.room[0], fk.room[1], uffd_refused);
}

/* ---------- the guard ---------- */

static bool in_range(uintptr_t a, bool (*range)(uintptr_t *, uintptr_t *))
{
	uintptr_t lo = 0, hi = 0;
	return range(&lo, &hi) && a >= lo && a < hi;
}

static bool heap_range(uintptr_t *lo, uintptr_t *hi)
{
	pages_range(lo, hi);
	return *hi > *lo;
}

static void guard(int sig, siginfo_t *si, void *ctx)
{
	int e = errno;
	uintptr_t a = (uintptr_t)si->si_addr;
	if (getpid() != fk.forker &&
	    (in_range(a, heap_range) || in_range(a, brk_range) || segs_hold(a))) {
		if (fk.copying)
			rt_abort("after fork, the hugetlb page at %p that this child shared with its "
				 "parent was taken back before the child could copy it: the pool had "
				 "no free page for the parent's write (superpage-run(7), FORK)",
				 (void *)a);
		if (!fk.copied) {
			fork_guard_copy();
			errno = e;
			return; /* the touch is made again, on memory of the child's own */
		}
	}
	errno = e;
	if (fk.prior.sa_flags & SA_SIGINFO) {
		fk.prior.sa_sigaction(sig, si, ctx);
	} else if (fk.prior.sa_handler != SIG_DFL && fk.prior.sa_handler != SIG_IGN) {
		fk.prior.sa_handler(sig);
	} else {
		/* The program's action is the default: it is put back, and the fault,
		 * made again, ends the process as it would have. */
		sigaction(SIGBUS, &fk.prior, NULL);
	}
}

static void guard_arm(void)
{
	struct sigaction sa;
	stack_t ours = { .ss_sp = guard_stack, .ss_size = sizeof guard_stack };
	sa.sa_sigaction = guard;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	fk.copied = 0;
	/* (Refused while the thread runs on its alternate stack: it keeps it.) */
	fk.alt_swapped = sigaltstack(&ours, &fk.alt) == 0;
	fk.guarding = sigaction(SIGBUS, &sa, &fk.prior) == 0;
}

/* The program's action and stack back, unless it set another action meanwhile. */
static void guard_disarm(void)
{
	struct sigaction now;
	if (fk.guarding && sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
	    now.sa_sigaction == guard)
		sigaction(SIGBUS, &fk.prior, NULL);
	fk.guarding = false;
	if (fk.alt_swapped)
		sigaltstack(&fk.alt, NULL);
	fk.alt_swapped = false;
}

/* ---------- the child's copy ---------- */

/* Whether page p of the range, walk bit k, is the child's to read: resident here
 * (then it was at the fork: its first touch since would have been a fault of the
 * child's); not resident here though it was at the fork, it was taken from the child
 * (the parent wrote it with the pool empty), and what it held is lost. */
static bool child_resident(uintptr_t p, size_t k)
{
	unsigned char v;
	if (life_resident((void *)p, 4096, &v) < 0 || (v & 1))
		return true;
	if (walked_resident(k))
		rt_abort("after fork, the hugetlb page at %p that this child shared with its parent "
			 "was taken back before the child could copy it: the pool had no free page "
			 "for the parent's write (superpage-run(7), FORK)", (void *)p);
	return false;
}

/* [p, p+len) copied into THP memory that replaces it (src: from itself; else zeros):
 * in one piece, or else page by page, which needs the least address space (the
 * copy is made beside the original: under ulimit -v the whole may not fit). */
static void copy_piece(uintptr_t p, size_t len, size_t page, bool src)
{
	if (pages_copy_in(p, len, src ? (const void *)p : NULL))
		return;
	if (len > page) {
		uintptr_t q = p;
		while (q < p + len && pages_copy_in(q, page, src ? (const void *)q : NULL))
			q += page;
		if (q == p + len)
			return;
	}
	rt_abort("after fork, the hugetlb memory at %p could not be copied into this process "
		 "(no address space or memory left: ulimit -v?)", (void *)p);
}

/* A range copied from where it is into THP memory that replaces it, in pieces of
 * pages alike (resident, or not: zeros) of at most 64 MiB. */
static void copy_range(uintptr_t a, size_t len, size_t page, void *arg)
{
	size_t *k = arg, n = len / page, most = page < (64u << 20) ? (64u << 20) / page : 1;
	for (size_t i = 0; i < n;) {
		bool res = child_resident(a + i * page, *k + i);
		size_t j = i + 1;
		while (j < n && j - i < most && child_resident(a + j * page, *k + j) == res)
			j++;
		copy_piece(a + i * page, (j - i) * page, page, res);
		i = j;
	}
	*k += n;
}

/* The child's copy of its hugetlb memory, once (from the guard or the handler). */
void fork_guard_copy(void)
{
	size_t k = 0;
	if (fk.copied || fk.route == ROUTE_NONE)
		return;
	fk.copying = 1;
	each_range(copy_range, &k);
	fk.copying = 0;
	fk.copied = 1;
	pages_fork_copied();
	brk_fork_copied();
	segs_fork_copied();
	if (fk.route != ROUTE_SHORT)
		unpromise();
}

/* ---------- the handlers' part ---------- */

void fork_share_prepare(void)
{
	fk.route = ROUTE_NONE;
	count_all();
	if (!fk.pages[0] && !fk.pages[1])
		return;
	fk.forker = getpid();
	atomic_fetch_add(&n_shared, 1);
	if (has_room() || trim_room()) {
		fk.route = ROUTE_ROOM;
	} else if (make_room_held() || (__libc_single_threaded && make_room(-1))) {
		fk.route = ROUTE_MADE;
	} else {
		fk.route = ROUTE_SHORT;
		atomic_fetch_add(&n_short, 1);
		say_short();
	}
	guard_arm();
}

void fork_share_parent(bool failed)
{
	if (fk.route == ROUTE_NONE)
		return;
	guard_disarm();
	if (fk.route != ROUTE_SHORT && failed)
		unpromise();
	fk.route = ROUTE_NONE;
}

void fork_stats(struct rt_stats *st)
{
	st->forks_shared = atomic_load(&n_shared);
	st->fork_moved_units = atomic_load(&n_moved);
	st->forks_short = atomic_load(&n_short);
	st->fork_scanned_pages = atomic_load(&n_scanned);
}

void fork_share_child(void)
{
	if (fk.route == ROUTE_NONE)
		return;
	atomic_store(&n_shared, 0); /* the child's account is its own */
	atomic_store(&n_moved, 0);
	atomic_store(&n_short, 0);
	atomic_store(&n_scanned, 0);
	fork_guard_copy();
	guard_disarm();
	fk.route = ROUTE_NONE;
}
