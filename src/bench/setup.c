/* setup.c - what the bench changes on the machine (pool sizes, THP's mode) and puts back, also on a signal. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "parts.h"

struct pool_change {
	uint64_t page_size;
	const char *name;
	long old_total;
	struct sp_setting saved; /* armed while the pool is not as it was */
};

static struct pool_change pools[2] = {
	{ .page_size = 2 * MIB, .name = "2M" },
	{ .page_size = GIB, .name = "1G" },
};
volatile pid_t bench_running_child;
/* THP "enabled" while a thp-always run holds it, and what to put back. */
#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"
static struct sp_setting thp_saved;
static volatile sig_atomic_t pools_restored;
static const int fatal_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define N_FATAL ((int)(sizeof fatal_signals / sizeof fatal_signals[0]))

static void write_str(int fd, const char *s)
{
	ssize_t r = write(fd, s, strlen(s));
	(void)r;
}

/* Async-signal-safe: ends the kernel (hugetlb pages in use cannot leave a pool),
 * writes the old totals back, then dies of the signal as it would have. */
static void on_fatal_signal(int sig)
{
	pid_t c = bench_running_child;

	if (c > 0) {
		kill(c, SIGKILL);
		while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (!pools_restored) {
		pools_restored = 1;
		for (int i = 0; i < 2; i++) {
			if (!pools[i].saved.held)
				continue;
			if (sp_setting_restore(&pools[i].saved) < 0) {
				write_str(2, "\nsuperpage: bench: could not put back ");
				write_str(2, pools[i].saved.path);
			}
		}
		write_str(2, "\nsuperpage: bench: interrupted; pools put back\n");
	}
	if (thp_saved.held && sp_setting_restore(&thp_saved) < 0)
		write_str(2, "\nsuperpage: bench: could not put back " THP_ENABLED "\n");
	signal(sig, SIG_DFL);
	raise(sig);
}

void bench_restore_pools(void)
{
	sigset_t set, old;

	sigemptyset(&set);
	for (int i = 0; i < N_FATAL; i++)
		sigaddset(&set, fatal_signals[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	if (!pools_restored) {
		pools_restored = 1;
		for (int i = 0; i < 2; i++) {
			struct sp_pool now;
			int r;

			if (!pools[i].saved.held)
				continue;
			r = sp_setting_restore(&pools[i].saved);
			if (sp_pool_get(pools[i].page_size, -1, &now) < 0)
				now.total = -1;
			if (r < 0 || now.total != pools[i].old_total)
				fprintf(stderr, "superpage: bench: could not put the %s pool back to %ld "
					"(now %ld)\n", pools[i].name, pools[i].old_total, now.total);
			else
				fprintf(stderr, "bench: %s pool put back to %ld\n", pools[i].name,
					pools[i].old_total);
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal_signal;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < N_FATAL; i++)
		sigaddset(&sa.sa_mask, fatal_signals[i]);
	for (int i = 0; i < N_FATAL; i++)
		sigaction(fatal_signals[i], &sa, NULL);
}

static bool wants(const struct bench *b, const char *name)
{
	for (int i = 0; i < b->nvar; i++)
		if (!b->var[i].skip && !strcmp(b->var[i].name, name))
			return true;
	return false;
}

/* Raises pool i to hold `pages` free pages; says what it got. */
static void raise_pool(int i, long pages)
{
	struct pool_change *c = &pools[i];
	struct sp_pool p;
	long want, got = -1;
	int r = sp_pool_get(c->page_size, -1, &p);

	if (r < 0) {
		fprintf(stderr, "bench: no %s pool here: %s\n", c->name, strerror(-r));
		return;
	}
	if (p.free - p.reserved >= pages)
		return;
	want = p.total + pages - (p.free - p.reserved);
	c->old_total = p.total;
	if ((r = sp_pool_save(&c->saved, c->page_size, -1)) < 0) {
		fprintf(stderr, "bench: cannot read the %s pool: %s\n", c->name, strerror(-r));
		return;
	}
	r = sp_pool_set(c->page_size, -1, want, &got);
	fprintf(stderr, "bench: %s pool %ld -> %ld%s\n", c->name, p.total, got,
		r == -ENOMEM ? " (the kernel gave fewer than asked: runs that need more are marked)" : "");
}

/* One pool user at a time on the machine: tests/run.sh and make compat hold the same
 * lock while they set pools. Held until the bench exits; SP_POOL_LOCKED=1 says the
 * caller holds it already (run.sh exports it to the tests it runs). */
#define POOL_LOCK "/tmp/sp-pool.lock"

/* The parent of process pid, from /proc/PID/status; 0 if unknown. */
static pid_t parent_of(pid_t pid)
{
	char path[64], line[128];
	pid_t pp = 0;
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "PPid: %d", &pp) == 1)
			break;
	fclose(f);
	return pp;
}

/* True if a process above this one holds the lock on the file open at fd, as
 * `flock /tmp/sp-pool.lock superpage bench --setup-pools` does: taking it again would
 * wait for ourselves for ever. */
static bool lock_held_above(int fd)
{
	struct stat st;
	char line[256];
	pid_t held[64];
	unsigned n = 0, maj, mnr;
	unsigned long ino;
	int pid;
	if (fstat(fd, &st) < 0)
		return false;
	FILE *f = fopen("/proc/locks", "re");
	if (!f)
		return false;
	/* "1: FLOCK  ADVISORY  WRITE 4242 fe:00:123 0 EOF"; a waiter's line has "->". */
	while (fgets(line, sizeof line, f) && n < 64)
		if (sscanf(line, "%*d: FLOCK %*s %*s %d %x:%x:%lu", &pid, &maj, &mnr, &ino) == 4 &&
		    maj == major(st.st_dev) && mnr == minor(st.st_dev) && ino == st.st_ino)
			held[n++] = pid;
	fclose(f);
	for (pid_t p = getppid(); p > 1; p = parent_of(p))
		for (unsigned i = 0; i < n; i++)
			if (held[i] == p)
				return true;
	return false;
}

static void take_pool_lock(void)
{
	const char *held = getenv("SP_POOL_LOCKED");
	/* (SP_POOL_LOCK_FILE names another lock file: for the tests of this.) */
	const char *path = getenv("SP_POOL_LOCK_FILE");
	int fd;

	if (held && !strcmp(held, "1"))
		return;
	if (!path || !*path)
		path = POOL_LOCK;
	fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "bench: cannot open %s (%s): setting the pools without it\n", path,
			strerror(errno));
		return;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0 || lock_held_above(fd))
		return;
	fprintf(stderr, "bench: waiting for %s (another pool user runs)\n", path);
	while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
		;
}

/* Raises the pools the plan's variants use to hold need2m and need1g pages free. */
static void setup_pools_for(struct bench *b, uint64_t need2m, uint64_t need1g)
{
	if (geteuid() != 0) {
		fprintf(stderr, "bench: --setup-pools needs root; using the pools as they are\n");
		return;
	}
	take_pool_lock();
	install_signals();
	/* 1 GiB pages first: they need contiguous memory that 2 MiB ones would split. */
	if (wants(b, "1g") || wants(b, "ideal-1g"))
		raise_pool(1, (long)need1g);
	if (wants(b, "2m") || wants(b, "1g") || wants(b, "ideal-2m") || wants(b, "ideal-1g"))
		raise_pool(0, (long)need2m + 64);
}

void bench_setup_pools(struct bench *b)
{
	uint64_t need2m = 0, need1g = 0;

	for (int i = 0; i < b->nitems; i++) {
		const struct bench_item *it = &b->items[i];
		uint64_t p2 = bench_kernel_pool_pages(it->k, it->value, 2 * MIB);
		uint64_t p1 = bench_kernel_pool_pages(it->k, it->value, GIB);

		need2m = p2 > need2m ? p2 : need2m;
		need1g = p1 > need1g ? p1 : need1g;
	}
	setup_pools_for(b, need2m, need1g);
}

void bench_setup_pools_bytes(struct bench *b, uint64_t bytes)
{
	/* An eighth more than plain had: the runtime's units round up, and a heap grows
	 * in steps. 1 GiB pages only for the whole GiBs. */
	uint64_t need2m = (bytes + bytes / 8 + 2 * MIB - 1) / (2 * MIB);

	setup_pools_for(b, need2m, bytes / GIB);
}

/* THP "always" for a thp-always run; put back by bench_thp_put_back (or the signal
 * handler). False, with the reason in v->why, if it cannot be set. The mode is saved
 * once, before the first such run: what a later run finds may be the first's. */
bool bench_thp_always(struct bench_variant *v)
{
	static bool saved;
	int e;

	if (!saved && sp_thp_save(&thp_saved) < 0) {
		snprintf(v->why, sizeof v->why, "cannot read " THP_ENABLED);
		return false;
	}
	saved = true;
	install_signals();
	thp_saved.held = 1;
	if ((e = sp_thp_set("always")) < 0) {
		thp_saved.held = 0;
		snprintf(v->why, sizeof v->why, "cannot set THP 'always': %s", strerror(-e));
		return false;
	}
	return true;
}

void bench_thp_put_back(void)
{
	sigset_t set, old;
	int e;

	sigemptyset(&set);
	for (int i = 0; i < N_FATAL; i++)
		sigaddset(&set, fatal_signals[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	if ((e = sp_setting_restore(&thp_saved)) < 0)
		fprintf(stderr, "superpage: bench: could not put THP 'enabled' back to %s: %s\n",
			thp_saved.old, strerror(-e));
	sigprocmask(SIG_SETMASK, &old, NULL);
}

