/* stacks.c - thread stacks on huge pages under --stacks (SUPERPAGE_STACKS=yes): a
 * thread the program starts without a stack of its own gets one of ours, 2 MiB-aligned,
 * a multiple of 2 MiB, with a guard page below; huge only where the thread uses it
 * (the 2 MiB units below the top on THP, the top unit once it is dense); stacks come
 * back when their thread is joined, or has ended detached, and a few are kept for the
 * next threads. Everything else about the thread is as glibc would make it. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "life.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"
#include "stacks.h"

#define EXPORT __attribute__((visibility("default")))

/* Private hugetlb memory is never used for stacks: a forked child's copy of the
 * forking thread's stack would take pages from the pool on its first write, and
 * die of SIGBUS if it found the pool empty. THP copies fall back to base pages. */

#define SLOTS 1024        /* stacks of ours at once: live, ended-detached, free */
#define CACHE_MAX 8       /* free stacks kept for the next threads; more are unmapped */

/* Where a thread's stack is huge. Every thread touches the top of its stack (glibc's
 * descriptor and TLS, the first frames), most touch a few pages of it and no more:
 * the top 2 MiB unit stays on base pages (MADV_NOHUGEPAGE: under THP "always" too,
 * and khugepaged leaves it). A thread that reaches the units below has used all of
 * the top one on its way: those units are MADV_HUGEPAGE and fault in huge as the
 * thread reaches them (at most the deepest is partly used). The top unit is made
 * huge (MADV_COLLAPSE) once at least DENSE_PAGES of its pages are resident: a
 * collapse then adds at most a quarter of a unit. Stacks are looked at when the
 * program starts, joins or detaches a thread (no timer and no thread of ours), at
 * most LOOK_MAX at a time, each with one PAGEMAP_SCAN of its top unit. */
#define DENSE_PAGES (PAGES_PER_UNIT * 3 / 4)
#define LOOK_MAX 4

/* ---------- the real calls ---------- */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);
typedef int (*timedjoin_fn)(pthread_t, void **, const struct timespec *);
typedef int (*clockjoin_fn)(pthread_t, void **, clockid_t, const struct timespec *);
typedef int (*detach_fn)(pthread_t);

static struct {
	create_fn create;
	join_fn join, tryjoin;
	timedjoin_fn timedjoin;
	clockjoin_fn clockjoin;
	detach_fn detach;
} real;
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

/* glibc 2.34 moved libpthread into libc, with new versions of these symbols; the
 * default version is asked for by name, the plain lookup is for older glibcs. */
static void *next(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");

	return p ? p : dlsym(RTLD_NEXT, name);
}

/* A call the program made that the C library does not have: nothing to pass it to. */
static void *need(void *fn, const char *name)
{
	if (!fn)
		rt_abort("cannot find the C library's %s", name);
	return fn;
}

static void find_real(void)
{
	real.create = (create_fn)next("pthread_create");
	real.join = (join_fn)next("pthread_join");
	real.tryjoin = (join_fn)next("pthread_tryjoin_np");
	real.timedjoin = (timedjoin_fn)next("pthread_timedjoin_np");
	real.clockjoin = (clockjoin_fn)next("pthread_clockjoin_np");
	real.detach = (detach_fn)next("pthread_detach");
}

/* ---------- counts, and saying the falls ---------- */

static _Atomic uint64_t n_threads, n_bytes, n_maps, n_reused, n_unmaps, n_live, n_cached;
static _Atomic uint64_t n_looks, n_collapsed, n_collapse_failed;
static struct rt_said said;     /* reasons said already */

/* Counts a thread left on glibc's stack; true if why is to be said: once per reason
 * in each process with --verbose, every time from -vv on. */
static bool fall(enum sp_fall why)
{
	sp_fall(SP_SITE_STACKS, SP_BACKING_THP, why);
	return rt_say_now(&said, rt_options()->verbose, (unsigned)why);
}

#define SAY_FALL(why, fmt, ...)                                                          \
	do {                                                                             \
		if (fall(why))                                                           \
			rt_verbose(1, "pid %d: --stacks: a thread's stack stays glibc's, on "   \
				   "base pages: " fmt, (int)getpid(), ##__VA_ARGS__);           \
	} while (0)

void rt_stack_stats_get(struct rt_stack_stats *out)
{
	out->threads = atomic_load(&n_threads);
	out->bytes = atomic_load(&n_bytes);
	out->maps = atomic_load(&n_maps);
	out->reused = atomic_load(&n_reused);
	out->unmaps = atomic_load(&n_unmaps);
	out->live = atomic_load(&n_live);
	out->cached = atomic_load(&n_cached);
	out->looks = atomic_load(&n_looks);
	out->collapsed = atomic_load(&n_collapsed);
	out->collapse_failed = atomic_load(&n_collapse_failed);
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT];

	sp_falls_get(SP_SITE_STACKS, falls);
	memcpy(out->falls, falls[SP_BACKING_THP], sizeof out->falls);
}

/* ---------- whether to, decided at the first pthread_create ---------- */

static pthread_once_t decide_once = PTHREAD_ONCE_INIT;
static bool on;                   /* stacks of ours for threads that have none */
static int off_why = -1;          /* the fall of every thread when not on, or -1 */
static int stack_prot = PROT_READ | PROT_WRITE;

/* Whether the main thread's stack is executable: ld.so makes it so when an object
 * loaded at start asks for it (PT_GNU_STACK), and glibc then maps every thread
 * stack executable too. Ours follow. */
static bool main_stack_exec(void)
{
	struct sp_lines l;
	const char *line;
	bool exec = false;
	int fd = kern_open("/proc/self/maps", O_RDONLY, 0);

	if (fd < 0)
		return false;
	sp_lines_init(&l, fd);
	while (sp_lines_next(&l, &line) > 0) {
		size_t len = strlen(line);
		const char *perms = strchr(line, ' ');

		if (len >= 7 && strcmp(line + len - 7, "[stack]") == 0 && perms) {
			exec = perms[3] == 'x';
			break;
		}
	}
	kern_close(fd);
	return exec;
}

static void decide(void)
{
	const struct sp_options *o = rt_options();
	const struct sp_view *v;

	if (!o->stacks)
		return;
	/* 4k is the baseline: base pages only, nothing to say. */
	if (o->backing == SP_BACKING_4K) {
		rt_verbose(1, "--stacks: thread stacks are glibc's under --backing 4k");
		return;
	}
	v = sp_view_get();
	if (!v->thp_present)
		off_why = SP_FALL_UNSUPPORTED;
	else if (v->thp_never || v->features.thp_disabled_here)
		off_why = SP_FALL_THP_OFF;
	if (off_why >= 0)
		return;
	if (main_stack_exec())
		stack_prot |= PROT_EXEC;
	on = true;
}

/* ---------- our stacks ---------- */

enum { S_EMPTY = 0, S_CLAIMED, S_LIVE, S_DETACHED, S_FREE };

/* A stack of ours: [lo, hi) is the thread's, 2 MiB-aligned, with guard bytes of
 * PROT_NONE below it. While a thread has it, fn and arg are what it runs and tid is
 * its kernel id (0 until it has started): a detached thread's stack is free once no
 * task of that id is left in the process. glibc keeps the thread's descriptor at the
 * top of the stack, so a pthread_t of ours lies in [lo, hi). */
struct slot {
	int state;
	uintptr_t lo, hi;
	size_t guard;
	bool top_huge;          /* its top unit is collapsed, or advised after a refusal */
	bool looking;           /* a thread looks at its top unit now */
	_Atomic pid_t tid;
	void *(*fn)(void *);
	void *arg;
};

static struct slot slots[SLOTS];
static int n_used;                /* slots beyond this have never been used */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
SP_LOCK_RANK(lock, RANK_STACKS, NULL);
static _Atomic bool any;          /* a stack of ours was ever handed out */

struct gone { uintptr_t addr; size_t len; };

/* Takes a stack off the books (under the lock): kept free if there is room, else
 * noted in out for munmap after the lock. */
static void put_locked(struct slot *s, struct gone *out, int *n_out)
{
	/* (One being looked at is kept: its look ends in our memory.) */
	if (atomic_load(&n_cached) < CACHE_MAX || s->looking) {
		s->state = S_FREE;
		atomic_fetch_add(&n_cached, 1);
	} else {
		out[(*n_out)++] = (struct gone){ s->lo - s->guard, s->hi - s->lo + s->guard };
		s->state = S_EMPTY;
	}
}

static void unmap_all(const struct gone *sp, int n)
{
	for (int i = 0; i < n; i++) {
		kern_unmap((void *)sp[i].addr, sp[i].len);
		atomic_fetch_add(&n_unmaps, 1);
	}
}

/* Detached threads whose task has gone: the kernel cleared their tid word in the
 * stack (the last thing written to it) before it let the task go. tgkill with
 * signal 0 asks for the task in this process; a tid reused by a new thread of ours
 * only keeps the stack a while longer. */
static void reap_locked(struct gone *out, int *n_out, int max_out)
{
	for (int i = 0; i < n_used && *n_out < max_out; i++) {
		struct slot *s = &slots[i];
		pid_t tid;

		if (s->state != S_DETACHED || !(tid = atomic_load(&s->tid)))
			continue;
		if (kern_thread_gone(tid)) {
			atomic_fetch_sub(&n_live, 1);
			put_locked(s, out, n_out);
		}
	}
}

/* A fresh stack of size bytes (a multiple of 2 MiB) with guard bytes below: 0, or a
 * reason to fall (with *err set). */
static int map_stack(size_t size, size_t guard, uintptr_t *lo, int *err)
{
	size_t len = guard + size + UNIT_SIZE - PAGE_SIZE;
	uintptr_t raw, a, end;
	void *p;
	int r;

	*err = 0;
	if (size > SIZE_MAX / 2 || guard > SIZE_MAX / 4) {
		*err = ENOMEM;
		return SP_FALL_MMAP;
	}
	/* Address space only, until the stack is made writable. */
	r = kern_map(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &p);
	if (r < 0) {
		*err = -r;
		return SP_FALL_MMAP;
	}
	raw = (uintptr_t)p;
	end = raw + len;
	a = (raw + guard + UNIT_SIZE - 1) & ~(uintptr_t)(UNIT_SIZE - 1);
	if (a - guard > raw)
		kern_unmap(p, a - guard - raw);
	if (end > a + size)
		kern_unmap((void *)(a + size), end - (a + size));
	r = kern_protect((void *)a, size, stack_prot);
	if (r < 0) {
		kern_unmap((void *)(a - guard), guard + size);
		*err = -r;
		return SP_FALL_MMAP;
	}
	r = kern_want_huge((void *)(a + size - UNIT_SIZE), UNIT_SIZE, false);
	if (r >= 0 && size > UNIT_SIZE)
		r = kern_want_huge((void *)a, size - UNIT_SIZE, true);
	if (r < 0) {
		kern_unmap((void *)(a - guard), guard + size);
		*err = -r;
		return SP_FALL_MADVISE;
	}
	*lo = a;
	return -1;
}

/* ---------- the top unit, made huge once it is dense ---------- */

/* Whether /proc/self/pagemap could not be opened (then no stack's top is looked at).
 * It is opened for each look and closed after it: an fd kept open would be the
 * program's to see, close or reuse, and after a fork would read the parent's memory. */
static _Atomic bool pagemap_none;
static unsigned look_next;      /* where the next look starts (under the lock) */

/* The resident base pages of the unit at a, through the pagemap fd, or -1 if the
 * kernel cannot tell; *huge when it is one huge page already. */
static int resident_pages(int fd, uintptr_t a, bool *huge)
{
	struct pr_region vec[32];
	int pages = 0;
	uintptr_t p = a, end = a + UNIT_SIZE;

	*huge = false;
	/* Runs of present pages, as many calls as the vector needs: one for a stack
	 * touched from the top down. */
	while (p < end) {
		struct pr_scan_arg q = {
			.size = sizeof q, .start = p, .end = end,
			.vec = (uint64_t)(uintptr_t)vec, .vec_len = sizeof vec / sizeof *vec,
			.category_mask = PR_PAGE_IS_PRESENT,
			.return_mask = PR_PAGE_IS_PRESENT | PR_PAGE_IS_HUGE,
		};
		int n = kern_pagemap_scan(fd, &q);

		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++) {
			if (vec[i].categories & PR_PAGE_IS_HUGE)
				*huge = true;
			pages += (int)((vec[i].end - vec[i].start) / PAGE_SIZE);
		}
		if (q.walk_end <= p)
			break; /* (no progress said: what was counted stands) */
		p = (uintptr_t)q.walk_end;
	}
	return pages;
}

/* Looks at the top unit of a stack a thread runs on: huge already, or dense enough
 * to collapse (then collapsed). True when the stack needs no more looks. */
static bool look_top(int fd, uintptr_t top)
{
	bool huge;
	int pages, r;

	atomic_fetch_add(&n_looks, 1);
	pages = resident_pages(fd, top, &huge);
	if (pages < 0)
		return true; /* no PAGEMAP_SCAN: the top unit stays on base pages */
	if (huge)
		return true;
	if ((size_t)pages < DENSE_PAGES)
		return false;
	/* Advised first: MADV_COLLAPSE refuses a MADV_NOHUGEPAGE range, and a refused
	 * collapse (no huge page free now) is then khugepaged's to make. */
	r = kern_want_huge((void *)top, UNIT_SIZE, true);
	if (r >= 0)
		r = kern_collapse((void *)top, UNIT_SIZE);
	if (r < 0)
		atomic_fetch_add(&n_collapse_failed, 1);
	else
		atomic_fetch_add(&n_collapsed, 1);
	rt_verbose(2, "pid %d: --stacks: the top unit of a thread's stack at %p has %d of %d pages "
		   "resident: %s", (int)getpid(), (void *)top, pages, (int)PAGES_PER_UNIT,
		   r < 0 ? "the collapse was refused, left to khugepaged" : "collapsed");
	return true;
}

/* At the program's pthread_create, pthread_join or pthread_detach: up to LOOK_MAX
 * stacks of running threads whose top unit is not huge, from where the last look
 * left off. Each is claimed under the lock and looked at without it; a stack freed
 * meanwhile is only looked at (its memory stays mapped while it is looked at: it is
 * unmapped only from the states it is not in). */
static void look_some(void)
{
	struct slot *pick[LOOK_MAX];
	uintptr_t top[LOOK_MAX];
	int n = 0;

	int fd;

	if (!atomic_load(&any) || atomic_load_explicit(&pagemap_none, memory_order_relaxed))
		return;
	pthread_mutex_lock(&lock);
	for (int k = 0; k < n_used && n < LOOK_MAX; k++) {
		unsigned i = (look_next + (unsigned)k) % (unsigned)n_used;
		struct slot *s = &slots[i];

		if ((s->state == S_LIVE || s->state == S_DETACHED) && !s->top_huge &&
		    !s->looking && atomic_load(&s->tid)) {
			s->looking = true;
			top[n] = s->hi - UNIT_SIZE;
			pick[n++] = s;
			look_next = i + 1;
		}
	}
	pthread_mutex_unlock(&lock);
	fd = n ? kern_open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC, 0) : -1;
	/* (No pagemap here: no stack's top is ever looked at, and it stays on base pages.
	 * Out of fds: these stacks wait for another look.) */
	if (n && fd < 0 && fd != -EMFILE && fd != -ENFILE)
		atomic_store(&pagemap_none, true);
	for (int i = 0; i < n; i++) {
		bool done = fd < 0 ? fd != -EMFILE && fd != -ENFILE : look_top(fd, top[i]);

		pthread_mutex_lock(&lock);
		pick[i]->looking = false;
		if (done)
			pick[i]->top_huge = true;
		pthread_mutex_unlock(&lock);
	}
	if (fd >= 0)
		kern_close(fd);
}

static struct slot *find_free_locked(size_t size, size_t guard)
{
	for (int i = 0; i < n_used; i++)
		if (slots[i].state == S_FREE && slots[i].hi - slots[i].lo == size &&
		    slots[i].guard == guard)
			return &slots[i];
	return NULL;
}

/* A stack for a new thread: a free one of the same size and guard, else a new one.
 * NULL, with the reason to fall, if none can be had. */
static struct slot *stack_get(size_t size, size_t guard, int *why, int *err)
{
	struct gone gone[16];
	struct slot *s = NULL;
	int n_gone = 0;
	bool reused = false;
	uintptr_t lo;

	*err = 0;
	pthread_mutex_lock(&lock);
	s = find_free_locked(size, guard);
	if (!s) {
		/* Ended detached threads are looked for only now: each costs a system
		 * call, and a program that joins its threads has stacks to spare. */
		reap_locked(gone, &n_gone, 8);
		s = find_free_locked(size, guard);
	}
	if (s) {
		reused = true;
		s->state = S_LIVE;
		atomic_fetch_sub(&n_cached, 1);
		atomic_fetch_add(&n_reused, 1);
	}
	for (int i = 0; i < n_used && !s; i++)
		if (slots[i].state == S_EMPTY)
			s = &slots[i];
	if (!s && n_used < SLOTS)
		s = &slots[n_used++];
	if (s && !reused)
		s->state = S_CLAIMED;
	/* With the cache full, free stacks (of other sizes, or this one is new) make
	 * room: the stack taken now is kept when its thread is done. */
	for (int i = 0; i < n_used && atomic_load(&n_cached) >= CACHE_MAX && n_gone < 16; i++)
		if (slots[i].state == S_FREE && !slots[i].looking) {
			gone[n_gone++] = (struct gone){ slots[i].lo - slots[i].guard,
							slots[i].hi - slots[i].lo + slots[i].guard };
			slots[i].state = S_EMPTY;
			atomic_fetch_sub(&n_cached, 1);
		}
	pthread_mutex_unlock(&lock);
	unmap_all(gone, n_gone);
	if (!s) {
		*why = SP_FALL_SKIPPED;
		return NULL;
	}
	if (reused) {
		atomic_fetch_add(&n_live, 1);
		return s;
	}
	*why = map_stack(size, guard, &lo, err);
	pthread_mutex_lock(&lock);
	if (*why >= 0) {
		s->state = S_EMPTY;
		s = NULL;
	} else {
		s->lo = lo;
		s->hi = lo + size;
		s->guard = guard;
		s->top_huge = false;
		s->state = S_LIVE;
	}
	pthread_mutex_unlock(&lock);
	if (s) {
		atomic_fetch_add(&n_maps, 1);
		atomic_fetch_add(&n_live, 1);
	}
	return s;
}

/* The live stack of ours that thread t runs on, under the lock; NULL if none. */
static struct slot *find_locked(pthread_t t, int state)
{
	uintptr_t a = (uintptr_t)t;

	for (int i = 0; i < n_used; i++)
		if (slots[i].state == state && slots[i].lo <= a && a < slots[i].hi)
			return &slots[i];
	return NULL;
}

/* Thread t has been joined: glibc is done with its stack. */
static void joined(pthread_t t)
{
	struct gone gone[1];
	struct slot *s;
	uintptr_t lo = 0;
	size_t below = 0;
	int n_gone = 0;

	if (!atomic_load(&any))
		return;
	pthread_mutex_lock(&lock);
	s = find_locked(t, S_LIVE);
	if (s) {
		atomic_fetch_sub(&n_live, 1);
		/* A stack to be kept gives back what is below its top unit first (off the
		 * books meanwhile), as glibc gives back the part of its own stacks an
		 * ended thread no longer uses: the next thread on it starts with no
		 * more than the top unit resident, and a deep one faults in huge again. */
		if (s->hi - s->lo > UNIT_SIZE && atomic_load(&n_cached) < CACHE_MAX) {
			s->state = S_CLAIMED;
			lo = s->lo;
			below = s->hi - s->lo - UNIT_SIZE;
		} else {
			put_locked(s, gone, &n_gone);
		}
	}
	pthread_mutex_unlock(&lock);
	if (below) {
		kern_drop((void *)lo, below);
		pthread_mutex_lock(&lock);
		put_locked(s, gone, &n_gone);
		pthread_mutex_unlock(&lock);
	}
	unmap_all(gone, n_gone);
}

/* A stack that a thread could not be started on goes back. */
static void unused(struct slot *s)
{
	struct gone gone[1];
	int n_gone = 0;

	pthread_mutex_lock(&lock);
	atomic_fetch_sub(&n_live, 1);
	put_locked(s, gone, &n_gone);
	pthread_mutex_unlock(&lock);
	unmap_all(gone, n_gone);
}

/* A fork while another thread holds the lock must not leave the child a held lock.
 * In the child the forking thread has a new tid: were it on a detached stack of
 * ours, its old tid (gone from this process) would make the stack look free. The
 * other threads' stacks stay as they are in the child. */
void stacks_fork_prepare(void) { pthread_mutex_lock(&lock); }
void stacks_fork_parent(void) { pthread_mutex_unlock(&lock); }
void stacks_fork_child(void)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);

	pthread_mutex_init(&lock, NULL);
	for (int i = 0; i < n_used; i++)
		slots[i].looking = false; /* (the parent's lookers are not in the child) */
	for (int i = 0; i < n_used; i++)
		if ((slots[i].state == S_LIVE || slots[i].state == S_DETACHED) &&
		    slots[i].lo <= here && here < slots[i].hi)
			atomic_store(&slots[i].tid, kern_tid());
}

/* ---------- starting threads ---------- */

/* The thread's first frame: its id for the reaper, then what the program asked. Its
 * return value and pthread_exit reach glibc as they would have. */
static void *start(void *arg)
{
	struct slot *s = arg;
	void *(*fn)(void *) = s->fn;
	void *a = s->arg;

	atomic_store(&s->tid, kern_tid());
	return fn(a);
}

/* Starts the thread on a stack of ours; false when it is to be started as the
 * program asked (then nothing of it has been started). */
static bool huge_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			void *arg)
{
	pthread_attr_t mine;
	struct stack_want w;
	struct slot *s;
	uintptr_t lo;
	int why, err, r;

	why = stack_attr_copy(attr, &mine, &w);
	if (why == -2)
		return false;
	if (why >= 0) {
		SAY_FALL(why, "explicit scheduling, or attributes that cannot be copied");
		return false;
	}
	s = stack_get(w.size, w.guard, &why, &err);
	if (!s) {
		pthread_attr_destroy(&mine);
		if (why == SP_FALL_SKIPPED)
			SAY_FALL(why, "%d stacks of ours are in use", SLOTS);
		else if (why == SP_FALL_MADVISE)
			SAY_FALL(why, "madvise(MADV_HUGEPAGE) failed (errno %d)", err);
		else
			SAY_FALL(why, "no memory for a stack of %zu bytes (errno %d)", w.size, err);
		return false;
	}
	lo = s->lo;
	pthread_attr_setstack(&mine, (void *)lo, w.size);
	s->fn = fn;
	s->arg = arg;
	atomic_store(&s->tid, 0);
	if (w.detached) {
		pthread_mutex_lock(&lock);
		s->state = S_DETACHED;
		pthread_mutex_unlock(&lock);
	}
	atomic_store(&any, true);
	r = real.create(th, &mine, start, s);
	pthread_attr_destroy(&mine);
	if (r != 0) {
		/* Ours may be what it failed on (static TLS larger than the stack, say):
		 * the program's own call decides. */
		pthread_mutex_lock(&lock);
		s->state = S_LIVE;
		pthread_mutex_unlock(&lock);
		unused(s);
		SAY_FALL(SP_FALL_UNSUPPORTED, "pthread_create refused our stack (error %d)", r);
		return false;
	}
	atomic_fetch_add(&n_threads, 1);
	atomic_fetch_add(&n_bytes, w.size);
	rt_verbose(2, "pid %d: --stacks: a thread on %zu bytes of THP stack at %p", (int)getpid(),
		   w.size, (void *)lo);
	return true;
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	int e = errno;

	pthread_once(&real_once, find_real);
	need(real.create, "pthread_create");
	rt_init(); /* the options: read even when the heap cannot start */
	if (rt_options()->stacks) {
		pthread_once(&decide_once, decide);
		look_some();
		if (on && huge_create(th, attr, fn, arg)) {
			errno = e;
			return 0;
		} else if (!on && off_why >= 0) {
			SAY_FALL(off_why, "%s", off_why == SP_FALL_THP_OFF
						? "THP is never, or disabled for this process"
						: "this kernel has no THP");
		}
	}
	errno = e;
	return real.create(th, attr, fn, arg);
}

EXPORT int pthread_join(pthread_t t, void **ret)
{
	int r;

	pthread_once(&real_once, find_real);
	look_some();
	r = ((join_fn)need(real.join, "pthread_join"))(t, ret);
	if (r == 0)
		joined(t);
	return r;
}

EXPORT int pthread_tryjoin_np(pthread_t t, void **ret)
{
	int r;

	pthread_once(&real_once, find_real);
	look_some();
	r = ((join_fn)need(real.tryjoin, "pthread_tryjoin_np"))(t, ret);
	if (r == 0)
		joined(t);
	return r;
}

EXPORT int pthread_timedjoin_np(pthread_t t, void **ret, const struct timespec *abstime)
{
	int r;

	pthread_once(&real_once, find_real);
	look_some();
	r = ((timedjoin_fn)need(real.timedjoin, "pthread_timedjoin_np"))(t, ret, abstime);
	if (r == 0)
		joined(t);
	return r;
}

EXPORT int pthread_clockjoin_np(pthread_t t, void **ret, clockid_t clock,
				const struct timespec *abstime)
{
	int r;

	pthread_once(&real_once, find_real);
	look_some();
	r = ((clockjoin_fn)need(real.clockjoin, "pthread_clockjoin_np"))(t, ret, clock, abstime);
	if (r == 0)
		joined(t);
	return r;
}

/* A thread detached after it started: its stack is free once it has ended. glibc
 * has let go of it by then (a thread that had ended already is let go inside
 * pthread_detach itself). */
EXPORT int pthread_detach(pthread_t t)
{
	struct slot *s;
	int r;

	pthread_once(&real_once, find_real);
	look_some();
	r = ((detach_fn)need(real.detach, "pthread_detach"))(t);
	if (r != 0 || !atomic_load(&any))
		return r;
	pthread_mutex_lock(&lock);
	s = find_locked(t, S_LIVE);
	if (s)
		s->state = S_DETACHED;
	pthread_mutex_unlock(&lock);
	return r;
}
