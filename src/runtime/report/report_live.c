/* report_live.c - the heap's account while the program runs, for superpage stat: a
 * page (the core's sp_live) published when units change and every 0.1 s; and, in
 * the program superpage run started with --stats, the same in the page they share
 * (sp_run_page), with what the command says once the program has ended. */
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"
#include "program/kern.h"
#include "say/out.h"
#include "runtime.h"

#define LIVE_NS 100000000ull /* published every 0.1 s the heap is used, and when its
                                units change (the account walks nothing: cheap) */
static struct {
	struct sp_live *page;
	struct sp_run_page *run;           /* superpage run's, if this is its program */
	struct sp_run_page *tree;          /* the same page, in any process of the program's
	                                      tree (a forked child keeps it: shared) */
	int32_t pid;
	_Atomic bool busy;                 /* a thread publishes */
	_Atomic uint64_t at, events;       /* the last publication */
} live;

/* The page is had at start, before the program runs: a process under a seccomp
 * filter (it may kill on memfd_create) publishes nothing, and publishing itself
 * makes no system call (the clock is the vDSO's). */
void rt_live_init(void)
{
	if (kern_seccomp()) /* (in a mode, or cannot say) */
		return;
	live.pid = (int32_t)getpid();
	live.page = sp_live_map();
	bool root;
	live.tree = sp_run_page_attach(&root);
	live.run = root ? live.tree : NULL;
}

void rt_live_fork_child(void)
{
	live.run = NULL; /* (superpage run's page is its parent's: shared, not copied) */
	if (live.page) {
		live.pid = (int32_t)getpid();
		atomic_store(&live.at, 0);
	}
}

void rt_live_tick(void)
{
	if (!live.page && !live.run)
		return;
	uint64_t now = kern_now_ns(), events = pages_unit_events();
	/* Read first, so that threads share the flag's line only when it is time. */
	if ((now - atomic_load_explicit(&live.at, memory_order_relaxed) < LIVE_NS &&
	     events == atomic_load_explicit(&live.events, memory_order_relaxed)) ||
	    atomic_exchange_explicit(&live.busy, true, memory_order_acquire))
		return;
	atomic_store_explicit(&live.at, now, memory_order_relaxed);
	atomic_store_explicit(&live.events, events, memory_order_relaxed);
	struct rt_stats st;
	struct sp_live s;
	rt_stats_get(&st);
	memset(&s, 0, sizeof s);
	s.pid = live.pid;
	s.at_ns = now;
	s.in_use = st.in_use;
	s.peak_in_use = st.peak_in_use;
	s.mallocs = st.mallocs;
	s.frees = st.frees;
	memcpy(s.units, st.units, sizeof s.units);
	s.units_peak = st.units_peak;
	s.large_blocks = st.large_blocks;
	s.large_bytes = st.large_bytes;
	s.released_units = st.released_units;
	s.reused_units = st.reused_units;
	s.unit_used_bytes = st.unit_used_bytes;
	s.unit_free_bytes = st.unit_free_bytes;
	s.full_unit_bytes = st.full_unit_bytes;
	s.kept_units = st.kept_units;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++) {
			s.falls += st.falls[b][f];
			s.falls_by[f] += st.falls[b][f];
		}
	if (live.page)
		sp_live_put(live.page, &s);
	if (live.run) {
		char comm[17] = "";
		if (kern_prctl(PR_GET_NAME, (unsigned long)comm, 0, 0, 0) == 0)
			memcpy(live.run->comm, comm, sizeof live.run->comm);
		sp_live_put(&live.run->live, &s);
	}
	atomic_store_explicit(&live.busy, false, memory_order_release);
}

void rt_run_account(int err)
{
	if (!live.run)
		return;
	if (err)
		live.run->stats_errno = err;
	else
		live.run->account_written = 1;
}

void rt_run_fall(enum sp_backing rung, enum sp_fall why)
{
	if (live.tree)
		sp_run_tree_fall(live.tree, rung, why);
}

void rt_run_split(size_t wanted, size_t had, enum sp_backing rest, enum sp_fall why)
{
	if (live.tree)
		sp_run_tree_split(live.tree, wanted, had, rest, why);
}

/* The program superpage run started, leaving by exit: the tree's falls said now, in
 * order with what it wrote (superpage run says them after a program that could not:
 * killed, or gone by _exit). Not said if stderr takes no line: superpage run then
 * says it on the stderr it kept. */
void rt_run_falls_at_exit(int fd)
{
	struct sp_run_falls f;
	char line[1024];

	if (!live.run || live.pid != (int32_t)getpid() || sp_run_page_falls(live.run, &f) < 0)
		return;
	size_t n = sp_run_falls_line(&f, line, sizeof line);
	if (!n || !sp_run_page_claim(live.run))
		return;
	if (write_all(fd, line, n) != 0)
		__atomic_store_n(&live.run->tree.said, 0, __ATOMIC_RELEASE);
}
