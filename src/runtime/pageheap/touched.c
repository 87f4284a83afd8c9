/* touched.c - auto, dense by touch (SUPERPAGE_DENSE_TOUCHED, pg.touched): memory
 * given out whole (large blocks, units given mostly to long runs, the program's large
 * mappings and the parts of its reservations made writable) stays on base pages, and
 * each 2 MiB unit of it is advised huge and collapsed once DENSE_PAGES of its pages
 * are resident. The looks come from a thread of the runtime's own while anything is
 * watched, else after allocations (dense_look). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"
#include "pageheap/unit_os.h"
#include "units.h"

static _Atomic bool look_pending;
static _Atomic uint64_t look_at;

/* Unit x, on base pages, is to be looked at (dense_look). Under the lock. */
void watch_unit(struct unit *x)
{
	x->watch = 1;
	atomic_store_explicit(&look_pending, true, memory_order_relaxed);
}

/* The program's large mappings under auto, dense by touch (pages_watch_map): each
 * 2 MiB unit of them advised huge and collapsed once DENSE_PAGES of its pages are
 * resident. huge: a bit a unit, set once it is. Under pg.lock. */
#define WATCH_MAX 64
static struct watched {
	uintptr_t at;
	size_t units, next; /* next: where the next look starts */
	uint64_t *huge;
	size_t huge_len;
} watched[WATCH_MAX];
static size_t look_heap, look_map; /* where the next look starts */
static _Atomic size_t watched_n;   /* mappings in watched[] */

static bool look_start(void);

bool pages_touched(void)
{
	return pg.touched;
}

bool pages_watch_map(void *p, size_t len)
{
	uintptr_t a = ((uintptr_t)p + UNIT_SIZE - 1) & ~(UNIT_SIZE - 1);
	uintptr_t e = ((uintptr_t)p + len) & ~(UNIT_SIZE - 1);
	if (!pg.touched || e <= a || atomic_load_explicit(&pg.near, memory_order_relaxed))
		return false;
	size_t n = (e - a) >> UNIT_SHIFT, blen = page_up((n + 63) / 64 * sizeof(uint64_t));
	void *m;
	if (meta_map(blen, &m) < 0)
		return false;
	pthread_mutex_lock(&pg.lock);
	struct watched *w = NULL;
	bool had = false; /* (a part made writable again, of a mapping watched already) */
	for (size_t i = 0; i < WATCH_MAX && !had; i++)
		had = watched[i].units && a < watched[i].at + (watched[i].units << UNIT_SHIFT) &&
		      e > watched[i].at;
	for (size_t i = 0; i < WATCH_MAX && !w && !had; i++)
		if (!watched[i].units)
			w = &watched[i];
	if (w) {
		*w = (struct watched){ .at = a, .units = n, .huge = m, .huge_len = blen };
		atomic_fetch_add_explicit(&watched_n, 1, memory_order_relaxed);
		atomic_store_explicit(&look_pending, true, memory_order_relaxed);
	}
	pthread_mutex_unlock(&pg.lock);
	if (!w)
		unit_unmap(m, blen);
	else
		look_start();
	return w != NULL || had;
}

void pages_watch_forget(uintptr_t a, size_t len)
{
	void *drop[WATCH_MAX];
	size_t dlen[WATCH_MAX], nd = 0;
	if (!atomic_load_explicit(&watched_n, memory_order_relaxed))
		return;
	pthread_mutex_lock(&pg.lock);
	for (size_t i = 0; i < WATCH_MAX; i++) {
		struct watched *w = &watched[i];
		if (!w->units || a >= w->at + (w->units << UNIT_SHIFT) || a + len <= w->at)
			continue;
		drop[nd] = w->huge;
		dlen[nd++] = w->huge_len;
		*w = (struct watched){ 0 };
		atomic_fetch_sub_explicit(&watched_n, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&pg.lock);
	for (size_t i = 0; i < nd; i++)
		unit_unmap(drop[i], dlen[i]);
}

/* Whether watched unit x may still be made huge when touched. */
static bool watch_ok(const struct unit *x)
{
	return x->watch && x->backing == SP_BACKING_4K &&
	       (x->state == U_LARGE || (x->state == U_HEAP && !x->mapping));
}

/* A block filled in order: a unit of it found dense on base pages has the units after
 * it advised MADV_HUGEPAGE before they are touched (they fault in huge, with no
 * collapse: a collapse costs a copy of the unit, and the program works on base pages
 * until it comes). As many as the units made huge just before it (at least one, at
 * most AHEAD_MAX): a unit touched in part after a dense one is 2 MiB resident, so what
 * is advised so stays within what the block has shown it fills. A unit advised ahead
 * stays watched, and is counted huge when it is dense; it advises none (a unit that
 * faulted in huge reads as dense whatever was touched). Under the lock. */
#define AHEAD_MAX 64
static void advise_ahead(size_t u)
{
	size_t run = 0, e = u + 1;
	while (run < AHEAD_MAX && u > run) {
		const struct unit *y = &pg.units[u - 1 - run];
		if (y->state != U_LARGE || y->backing != SP_BACKING_THP || !y->huge)
			break;
		run++;
	}
	while (e < pg.frontier && e - (u + 1) < run + 1 && e - (u + 1) < AHEAD_MAX &&
	       pg.units[e].state == U_LARGE && watch_ok(&pg.units[e]) && !pg.units[e].huge)
		e++;
	if (e > u + 1 &&
	    unit_want_huge((void *)unit_addr(u + 1), (e - u - 1) << UNIT_SHIFT, true) == 0)
		for (size_t i = u + 1; i < e; i++)
			pg.units[i].huge = 1;
}

/* Looks at up to LOOK_UNITS units being watched of the heap's, and as many of the
 * program's mappings', round robin: those with DENSE_PAGES of their pages resident
 * (mincore, one call for up to LOOK_RUN units side by side) are made huge and
 * collapsed. Returns how many were, or -1 if none was watched. One look at a time
 * (its tables are static); without the lock. */
#define LOOK_UNITS 512
#define LOOK_RUN 64
struct look {
	uintptr_t addr;
	size_t u, w, j; /* the heap's unit, or SIZE_MAX and the mapping's and its unit */
	bool dense, made;
};
static struct look cand[2 * LOOK_UNITS];
static unsigned char look_vec[LOOK_RUN * PAGES_PER_UNIT];
static _Atomic bool looking;

/* Look candidate c was found dense: made huge (a heap unit of a large block found so
 * on base pages advises the units after it: advise_ahead), and left in c->made to
 * be collapsed (after the look's other advice: a collapse copies the unit, while the
 * program may be filling the units after it). 1 if it was. Without the lock. */
static int look_dense(struct look *c)
{
	bool now_huge;
	pthread_mutex_lock(&pg.lock);
	if (c->u != SIZE_MAX) {
		struct unit *x = &pg.units[c->u];
		bool ahead = x->huge; /* (advised ahead of its touch: filled huge) */
		now_huge = watch_ok(x) && dense_on() && units_make_huge(c->u, 1);
		if (now_huge)
			x->watch = 0;
		if (now_huge && !ahead && x->state == U_LARGE)
			advise_ahead(c->u);
	} else {
		struct watched *w = &watched[c->w];
		now_huge = w->units && w->at + (c->j << UNIT_SHIFT) == c->addr &&
			   unit_want_huge((void *)c->addr, UNIT_SIZE, true) == 0;
		/* (Advisory: a mapping the program unmapped meanwhile refuses it.) */
		if (now_huge) {
			w->huge[c->j / 64] |= 1ull << (c->j % 64);
			atomic_fetch_add_explicit(&pg.st.dense_huge, 1, memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&pg.lock);
	c->made = now_huge;
	return now_huge;
}

/* Collapses the units look_dense made huge. Without the lock. */
static void look_collapse(const struct look *c)
{
	if (!c->made)
		return;
	if (c->u != SIZE_MAX) {
		collapse_unit(c->u);
		return;
	}
	int r = collapse_at(c->addr, 3);
	if (r < 0 && r != -EINVAL)
		atomic_fetch_add_explicit(&pg.st.dense_refused, 1, memory_order_relaxed);
}

static int look_once(void)
{
	bool no = false;
	if (!atomic_compare_exchange_strong(&looking, &no, true))
		return 0;
	struct look *c = cand;
	size_t n = 0, nheap = 0, nmap = 0;
	int made = 0;
	pthread_mutex_lock(&pg.lock);
	bool on = dense_on();
	for (size_t k = 0, from = look_heap; on && k < pg.frontier && nheap < LOOK_UNITS; k++) {
		size_t u = (from + k) % pg.frontier;
		struct unit *x = &pg.units[u];
		if (!x->watch)
			continue;
		if (!watch_ok(x)) {
			x->watch = 0;
			continue;
		}
		c[n++] = (struct look){ .addr = unit_addr(u), .u = u };
		nheap++;
		look_heap = u + 1;
	}
	for (size_t k = 0; k < WATCH_MAX && nmap < LOOK_UNITS; k++) {
		size_t i = (look_map + k) % WATCH_MAX;
		struct watched *w = &watched[i];
		for (size_t m = 0, from = w->next; m < w->units && nmap < LOOK_UNITS; m++) {
			size_t j = (from + m) % w->units;
			if (w->huge[j / 64] >> (j % 64) & 1)
				continue;
			c[n++] = (struct look){ .addr = w->at + (j << UNIT_SHIFT), .u = SIZE_MAX, .w = i, .j = j };
			nmap++;
			w->next = j + 1;
		}
		if (nmap == LOOK_UNITS)
			look_map = i;
	}
	/* (Nothing left to watch: no look until a unit or mapping is watched again.) */
	if (!nheap && !nmap)
		atomic_store_explicit(&look_pending, false, memory_order_relaxed);
	pthread_mutex_unlock(&pg.lock);
	rt_verbose(3, "dense: looking at %zu units of the heap's, %zu of mappings'", nheap, nmap);
	for (size_t i = 0, e; i < n; i = e) {
		/* (Units side by side in one call; a unit unmapped meanwhile fails it, and
		 * its run is skipped until the next look.) */
		for (e = i + 1; e < n && e - i < LOOK_RUN &&
				c[e].addr == c[e - 1].addr + UNIT_SIZE; e++)
			;
		if (unit_resident((void *)c[i].addr, (e - i) << UNIT_SHIFT, look_vec) < 0) {
			for (size_t k = i; k < e; k++)
				c[k].dense = false;
			continue;
		}
		for (size_t k = i; k < e; k++) {
			const unsigned char *v = look_vec + (k - i) * PAGES_PER_UNIT;
			size_t resident = 0;
			for (size_t p = 0; p < PAGES_PER_UNIT; p++)
				resident += v[p] & 1;
			c[k].dense = resident >= DENSE_PAGES;
		}
	}
	for (size_t i = 0; i < n; i++)
		c[i].made = c[i].dense && look_dense(&c[i]);
	for (size_t i = 0; i < n; i++)
		made += c[i].made;
	for (size_t i = 0; i < n; i++)
		look_collapse(&c[i]);
	atomic_store(&looking, false);
	return n ? made : -1;
}

/* The looks' thread (one a process, of the runtime's own): while units are watched it
 * looks every DENSE_NS, so that a block the program fills and then works on without
 * a call into the allocator goes huge as it is filled, not at the program's next
 * call; after LOOK_IDLE looks with nothing watched it ends (a program that holds no
 * sparse block holds no thread of ours), and the next watched unit starts another.
 * look_state: 1 while it runs, 0 with none, -1 if none could be made (the looks come
 * after allocations then). It is joinable, so that a call that needs the process to
 * be single-threaded (unshare(CLONE_NEWUSER)) can end it first and wait until it is
 * gone (pages_looks_pause); an ended one is joined before the next starts. look_mu
 * guards the rest: the id, whether it is to be joined, the stop asked, the pauses.
 * A forked child has none (dense_fork_child); a vfork child, sharing the parent's
 * memory, sees the parent's and starts none. */
#define LOOK_IDLE 100
#define LOOK_SLOWEST (DENSE_NS * 64)
static _Atomic int look_state;
static pthread_mutex_t look_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t look_cv; /* (on CLOCK_MONOTONIC: look_cv_init) */
static pthread_t look_id;
static bool look_joinable, look_stop;
static unsigned look_paused;
static _Atomic pid_t look_tid; /* the thread's id in the kernel, while it runs */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef int (*join_fn)(pthread_t, void **);

static void look_cv_init(void)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&look_cv, &a);
	pthread_condattr_destroy(&a);
}

/* Waits ns, or until a stop is asked; true if one was. Under look_mu. */
static bool look_wait(uint64_t ns)
{
	ns += heap_now_ns(); /* (CLOCK_MONOTONIC) */
	struct timespec at = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	while (!look_stop && pthread_cond_timedwait(&look_cv, &look_mu, &at) == 0)
		;
	return look_stop;
}

static void *look_thread(void *arg)
{
	(void)arg;
	uint64_t wait = DENSE_NS;
	atomic_store(&look_tid, heap_tid());
	pthread_mutex_lock(&look_mu);
	for (int idle = 0; idle < LOOK_IDLE && !look_wait(wait);) {
		pthread_mutex_unlock(&look_mu);
		atomic_store(&look_at, heap_now_ns());
		int made = atomic_load_explicit(&look_pending, memory_order_relaxed) ? look_once() : -1;
		idle = made < 0 ? idle + 1 : 0;
		/* (Units that stay sparse are looked at less and less often.) */
		wait = made > 0 || made < 0 ? DENSE_NS : wait * 2 > LOOK_SLOWEST ? LOOK_SLOWEST : wait * 2;
		pthread_mutex_lock(&look_mu);
	}
	atomic_store(&look_state, 0);
	pthread_mutex_unlock(&look_mu);
	/* (A unit watched just before the store: the next allocation starts a thread.) */
	return NULL;
}

/* Joins the thread, if there is one to join: one that ended (look_state 0 while
 * look_mu is held: it is past its last use of look_mu) with look_mu held, one that
 * runs told to stop first, with look_mu dropped meanwhile. Under look_mu. */
static void look_join(void)
{
	join_fn join = (join_fn)dlsym(RTLD_NEXT, "pthread_join");
	if (!look_joinable || !join)
		return;
	pthread_t t = look_id;
	look_joinable = false;
	if (atomic_load(&look_state) == 0) {
		join(t, NULL);
		return;
	}
	look_stop = true;
	pthread_cond_signal(&look_cv);
	pthread_mutex_unlock(&look_mu);
	join(t, NULL);
	pthread_mutex_lock(&look_mu);
	look_stop = false;
	atomic_store(&look_state, 0);
}

/* Makes the thread; look_state is 1 already (an allocation pthread_create makes
 * finds it so, and starts none). Under look_mu. */
static bool look_create(void)
{
	static bool cv_made;
	if (!cv_made) {
		look_cv_init();
		cv_made = true;
	}
	create_fn create = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	pthread_attr_t a;
	sigset_t all, old;
	int r = -1;
	if (create && pthread_attr_init(&a) == 0) {
		pthread_attr_setstacksize(&a, (size_t)64 << 10);
		/* (No signal of the program's is ever delivered to it.) */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		r = create(&look_id, &a, look_thread, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&a);
	}
	if (r != 0) {
		atomic_store(&look_state, -1);
		rt_verbose(1, "no thread for the looks at units made huge when touched (error %d): "
			   "they come after allocations", r);
		return false;
	}
	look_joinable = true;
	pthread_setname_np(look_id, "superpage-look");
	return true;
}

/* Starts the looks' thread if this process has none and none is paused; false if
 * it cannot (then the looks come after allocations). Without the page heap's lock:
 * pthread_create may malloc. */
static bool look_start(void)
{
	int cur = atomic_load(&look_state);
	if (cur != 0)
		return cur == 1;
	pthread_mutex_lock(&look_mu);
	bool ok = atomic_load(&look_state) == 1;
	if (atomic_load(&look_state) == 0 && !look_paused) {
		look_join(); /* (the one that ended, if any: look_mu stays held) */
		atomic_store(&look_state, 1);
		ok = look_create();
	}
	pthread_mutex_unlock(&look_mu);
	return ok;
}

pid_t pages_looks_pause(void)
{
	pid_t tid = 0;
	if (!pg.touched)
		return 0;
	pthread_mutex_lock(&look_mu);
	look_paused++;
	if (look_joinable) {
		look_join();
		tid = atomic_load(&look_tid); /* (read once it ran: it set it first) */
	}
	pthread_mutex_unlock(&look_mu);
	return tid;
}

void pages_looks_resume(void)
{
	if (!pg.touched)
		return;
	pthread_mutex_lock(&look_mu);
	if (look_paused)
		look_paused--;
	pthread_mutex_unlock(&look_mu);
}

void dense_fork_child(void)
{
	pthread_mutex_init(&look_mu, NULL);
	look_cv_init();
	look_joinable = look_stop = false;
	look_paused = 0;
	atomic_store(&look_state, 0);
	atomic_store(&looking, false);
}

/* Looks (look_once) for the units being watched: by the looks' thread, or where it
 * cannot be had after an allocation, at most every DENSE_NS * 4. Without the lock. */
void dense_look(void)
{
	if (!atomic_load_explicit(&look_pending, memory_order_relaxed) || look_start())
		return;
	uint64_t now = heap_now_ns(), at = atomic_load(&look_at);
	if (now - at < DENSE_NS * 4 || !atomic_compare_exchange_strong(&look_at, &at, now))
		return;
	look_once();
}
