/* run_watch.c - superpage run on a program it cannot preload (static, another libc):
 * promote's passes over it and the processes it starts, round after round while it
 * runs; published for superpage stat, and its account for --stats at its end. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "preload.h"

#define SHORT_NS 200000000ull   /* the pause after a round that found work */
#define LONGEST_NS 2000000000ull /* doubled after each round without, up to this */

/* What the watch keeps of a process beside what it publishes (struct sp_watch_proc). */
struct watched {
	struct promote_target t;
	char comm[17];
	bool preloaded;           /* it maps the runtime now: the runtime serves it */
	bool given_up;            /* refused for the whole process: not passed over again */
	uint64_t tried, collapsed; /* ranges, all its passes */
	uint64_t not_done[SP_PROMOTE_WHY_COUNT]; /* of its last pass */
};

static struct {
	struct run_watch_setup s;
	volatile int *stop;
	void *page;               /* published for superpage stat (NULL: not published) */
	struct sp_watch pub;
	struct watched procs[SP_WATCH_MAX];
	bool scan_all;            /* no /proc/PID/task/TID/children: parents read from /proc */
} W;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------- the processes ---------- */

static int tracked(pid_t pid)
{
	for (int i = 0; i < W.pub.n; i++)
		if (W.pub.procs[i].pid == pid && !W.pub.procs[i].gone)
			return i;
	return -1;
}

static void track(pid_t pid)
{
	pid_t parent;
	uint64_t start;

	if (sp_proc_parent(pid, &parent, &start) < 0)
		return;
	/* (one that ended stays known: a zombie its parent has not reaped is no new one) */
	for (int i = 0; i < W.pub.n; i++)
		if (W.pub.procs[i].pid == pid && W.pub.procs[i].start_time == start)
			return;
	int i = W.pub.n;
	if (i == SP_WATCH_MAX) {
		/* Full: the place of one that ended before any pass (a short command of a
		 * script), which has nothing to account for. */
		for (i = 0; i < W.pub.n; i++)
			if (W.pub.procs[i].gone && !W.pub.procs[i].rounds && !W.pub.procs[i].fatal &&
			    W.pub.procs[i].pid != W.pub.root)
				break;
		if (i == W.pub.n) {
			W.pub.left_out++;
			return;
		}
	} else {
		W.pub.n++;
	}
	memset(&W.pub.procs[i], 0, sizeof W.pub.procs[i]);
	memset(&W.procs[i], 0, sizeof W.procs[i]);
	W.pub.procs[i].pid = pid;
	W.pub.procs[i].start_time = start;
	W.procs[i].t.pid = pid;
	W.procs[i].t.alive = true;
	sp_comm_read(pid, W.procs[i].comm, sizeof W.procs[i].comm);
}

/* The children of pid (of each of its threads) tracked. */
static void track_children(pid_t pid)
{
	char path[96], buf[4096];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	if (!(d = opendir(path)))
		return; /* gone */
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue; /* (a thread that ended) */
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = 0;
		for (char *s = buf, *end; *s; s = end) {
			long child = strtol(s, &end, 10);
			if (end == s)
				break;
			if (child > 0)
				track((pid_t)child);
		}
	}
	closedir(d);
}

/* Without children files: every process whose parent is watched, until none is new. */
static void track_from_parents(void)
{
	pid_t *pids, parent;
	uint64_t start;
	long n = sp_pids(&pids);
	if (n < 0)
		return;
	for (int before = -1; before != W.pub.n && W.pub.n < SP_WATCH_MAX;) {
		before = W.pub.n;
		for (long k = 0; k < n; k++)
			if (tracked(pids[k]) < 0 && sp_proc_parent(pids[k], &parent, &start) == 0 &&
			    tracked(parent) >= 0)
				track(pids[k]);
	}
	free(pids);
}

/* New processes started by those watched (a process that was watched stays so when
 * its parent ends and it is reparented). */
static void find_processes(void)
{
	if (W.scan_all) {
		track_from_parents();
		return;
	}
	for (int i = 0; i < W.pub.n; i++)
		if (!W.pub.procs[i].gone)
			track_children(W.pub.procs[i].pid);
}

/* Whether pid maps the runtime (it, or a program it started, was preloaded). */
static bool maps_runtime(pid_t pid)
{
	char path[64], line[1024];
	bool found = false;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, "/" SP_RUNTIME_NAME) != NULL;
	fclose(f);
	return found;
}

/* Still the process tracked at i (its pid not taken by another since). */
static bool same_process(int i)
{
	pid_t parent;
	uint64_t start;
	return sp_proc_parent(W.pub.procs[i].pid, &parent, &start) == 0 &&
	       start == W.pub.procs[i].start_time;
}

/* ---------- the rounds ---------- */

uint64_t run_watch_begin(pid_t root, const struct run_watch_setup *s, volatile int *stop)
{
	memset(&W, 0, sizeof W);
	W.s = *s;
	W.s.promote.stop = stop;
	W.stop = stop;
	W.pub.watcher = getpid();
	W.pub.root = root;
	W.pub.why = s->why;
	W.pub.asked = s->asked;
	W.pub.budget_bytes = s->promote.budget_bytes;
	W.pub.budget_share = s->promote.budget_share;
	W.pub.interval_ns = SHORT_NS;
	/* (CONFIG_PROC_CHILDREN: a kernel without it has no children files) */
	char self[64];
	snprintf(self, sizeof self, "/proc/self/task/%d/children", (int)getpid());
	W.scan_all = access(self, R_OK) != 0;
	track(root);
	W.page = sp_watch_page_new();
	if (W.page) {
		W.pub.at_ns = now_ns();
		sp_watch_put(W.page, &W.pub);
	}
	/* (A program just started has nothing to collapse; one that ends at once pays
	 * no round.) */
	return SHORT_NS;
}

/* One pass over process i; true if it found work (collapsed, or grew). */
static bool pass_one(int i)
{
	static struct sp_promote_result r;
	struct sp_watch_proc *p = &W.pub.procs[i];
	struct watched *w = &W.procs[i];
	char a[32], b[32], c[32];

	if (!same_process(i)) {
		p->gone = true;
		return false;
	}
	w->preloaded = maps_runtime(p->pid);
	if (w->preloaded)
		return false;
	int n = promote_pass(&w->t, &W.s.promote, &r);
	p->last_ns = now_ns();
	if (n < 0) {
		if (n == -ESRCH) {
			p->gone = true;
			return false;
		}
		/* Refused for the whole process: said for the program, counted for all. */
		p->fatal = n;
		w->given_up = true;
		if (p->pid == W.pub.root)
			promote_say_fatal("run", p->pid, n);
		return false;
	}
	uint64_t before = p->rss_bytes;
	p->rounds++;
	p->collapsed_bytes += r.collapsed_bytes;
	w->tried += r.tried;
	w->collapsed += r.collapsed;
	memcpy(w->not_done, r.not_done, sizeof w->not_done);
	if (!r.rss_after) {
		p->gone = true; /* it ended during the pass */
		return false;
	}
	/* The program ending (its memory torn down as it was read): what the last
	 * whole pass left stands. */
	if (*W.stop)
		return false;
	p->rss_bytes = r.rss_after;
	p->huge_bytes = r.huge_after;
	if (W.s.verbose > 0 && r.collapsed)
		cli_warn("run: pid %d (%s), pass %u: collapsed %s; %s of %s on huge pages", (int)p->pid,
			 w->comm, p->rounds, cli_human(r.collapsed_bytes, a, sizeof a),
			 cli_human(r.huge_after, b, sizeof b), cli_human(r.rss_after, c, sizeof c));
	return r.collapsed || r.rss_after > before + (2u << 20);
}

uint64_t run_watch_round(void)
{
	bool work = false;

	find_processes();
	for (int i = 0; i < W.pub.n && !*W.stop; i++)
		if (!W.pub.procs[i].gone && !W.procs[i].given_up)
			work |= pass_one(i);
	W.pub.rounds++;
	W.pub.interval_ns = work ? SHORT_NS : W.pub.interval_ns * 2 > LONGEST_NS ? LONGEST_NS
										 : W.pub.interval_ns * 2;
	if (W.page) {
		W.pub.at_ns = now_ns();
		sp_watch_put(W.page, &W.pub);
	}
	return W.pub.interval_ns;
}

/* ---------- the account at the end ---------- */

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static const char *fatal_word(int err)
{
	switch (err) {
	case 0: return NULL;
	case -EPERM: case -EACCES: return "permission";
	case -ENOSYS: case -EINVAL: return "unsupported";
	default: return "error";
	}
}

static void account_json(FILE *f, int i, int status)
{
	const struct sp_watch_proc *p = &W.pub.procs[i];
	const struct watched *w = &W.procs[i];
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	json_key(&j, "pid");
	json_int(&j, p->pid);
	json_key(&j, "comm");
	json_string(&j, w->comm);
	json_key(&j, "reached");
	json_string(&j, "watch");
	json_key(&j, "why");
	json_string(&j, sp_watch_why_name(W.pub.why));
	json_key(&j, "backing");
	json_string(&j, "thp");
	json_key(&j, "asked");
	json_string(&j, sp_backing_name(W.pub.asked));
	if (p->pid == W.pub.root) {
		json_key(&j, "left");
		json_string(&j, WIFSIGNALED(status) ? "signal" : "exit");
		json_key(&j, WIFSIGNALED(status) ? "signal" : "status");
		json_int(&j, WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	}
	json_key(&j, "error");
	if (fatal_word(p->fatal))
		json_string(&j, fatal_word(p->fatal));
	else
		json_null(&j);
	const struct { const char *k; uint64_t v; } n[] = {
		{ "rss_bytes", p->rss_bytes }, { "huge_bytes", p->huge_bytes },
		{ "passes", p->rounds }, { "tried", w->tried }, { "collapsed", w->collapsed },
		{ "collapsed_bytes", p->collapsed_bytes }, { "budget_bytes", W.pub.budget_bytes },
	};
	for (size_t k = 0; k < sizeof n / sizeof *n; k++) {
		json_key(&j, n[k].k);
		json_uint(&j, n[k].v);
	}
	json_key(&j, "coverage");
	json_double(&j, share(p->huge_bytes, p->rss_bytes));
	json_key(&j, "budget_share");
	json_double(&j, W.pub.budget_share);
	json_key(&j, "not_collapsed");
	json_object_begin(&j);
	for (int k = 0; k < SP_PROMOTE_WHY_COUNT; k++)
		if (w->not_done[k]) {
			json_key(&j, sp_promote_why_name((enum sp_promote_why)k));
			json_uint(&j, w->not_done[k]);
		}
	json_object_end(&j);
	json_object_end(&j);
	json_end(&j);
}

static void account_text(int i)
{
	const struct sp_watch_proc *p = &W.pub.procs[i];
	const struct watched *w = &W.procs[i];
	char a[32], b[32], c[32];

	if (p->fatal) {
		cli_warn("pid %d (%s): the watch could not keep it promoted (%s: %s)", (int)p->pid,
			 w->comm, fatal_word(p->fatal), strerror(-p->fatal));
		return;
	}
	const char *what = W.pub.why == SP_WATCH_STATIC ? "statically linked" :
			   W.pub.why == SP_WATCH_LIBC ? "of another libc" : "of another word size";
	if (!p->rounds) {
		cli_warn("pid %d (%s): kept by the watch (it is %s, not preloaded): it ended before "
			 "the first pass", (int)p->pid, w->comm, what);
		return;
	}
	cli_warn("pid %d (%s): reached by the watch (it is %s, not preloaded): %u pass%s collapsed "
		 "%s onto 2 MiB THP; its last pass left %s of %s resident on huge pages (%.1f%%)",
		 (int)p->pid, w->comm, what,
		 p->rounds, p->rounds == 1 ? "" : "es", cli_human(p->collapsed_bytes, a, sizeof a),
		 cli_human(p->huge_bytes, b, sizeof b), cli_human(p->rss_bytes, c, sizeof c),
		 100 * share(p->huge_bytes, p->rss_bytes));
}

void run_watch_accounts(int status, const char *file)
{
	for (int i = 0; i < W.pub.n; i++) {
		const struct sp_watch_proc *p = &W.pub.procs[i];
		/* The program (unless it became one the runtime serves before any pass),
		 * and a process it started if the watch reached it. */
		if (!p->rounds && !p->fatal && (p->pid != W.pub.root || W.procs[i].preloaded))
			continue;
		if (!file) {
			account_text(i);
			continue;
		}
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f)
			return;
		account_json(f, i, status);
		fclose(f);
		int rc = cli_append(file, buf, len);
		if (rc < 0)
			cli_warn("cannot write the account of pid %d (%s) to %s: %s", (int)p->pid,
				 W.procs[i].comm, file, strerror(-rc));
		free(buf);
	}
	if (W.pub.left_out)
		cli_warn("the watch left out %u processes beyond the first %d", W.pub.left_out,
			 SP_WATCH_MAX);
}
