/* command.c - superpage bench -- CMD: the user's own program run plain and under each
 * variant, the variants alternating in every round, measured from outside. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "parts.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------- what the running program holds ---------- */

/* One read of /proc/PID/smaps_rollup, in bytes. */
struct rollup {
	uint64_t rss, anon, anon_huge, hugetlb;
};

/* 0, or -1 when the process has no memory to read (gone, a zombie, not ours). */
static int read_rollup(pid_t pid, struct rollup *r)
{
	char path[64], buf[4096], *line, *nl;
	bool any = false;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	memset(r, 0, sizeof *r);
	for (line = buf; line && *line; line = nl ? nl + 1 : NULL) {
		unsigned long long kb;
		char key[40];

		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (sscanf(line, "%39[^:]: %llu kB", key, &kb) != 2)
			continue;
		if (!strcmp(key, "Rss")) {
			r->rss = kb << 10;
			any = true;
		} else if (!strcmp(key, "Anonymous")) {
			r->anon = kb << 10;
		} else if (!strcmp(key, "AnonHugePages")) {
			r->anon_huge = kb << 10;
		} else if (!strcmp(key, "Shared_Hugetlb") || !strcmp(key, "Private_Hugetlb")) {
			r->hugetlb += kb << 10;
		}
	}
	return any ? 0 : -1;
}

/* Keeps the sample with the most anonymous memory (the latest of equals: THP that
 * khugepaged collapsed late counts), and the largest Rss with hugetlb. */
static void take_sample(pid_t pid, struct bench_cmd_run *o)
{
	struct rollup r;
	uint64_t anon, mem;

	if (read_rollup(pid, &r) < 0)
		return;
	anon = r.anon + r.hugetlb;
	mem = r.rss + r.hugetlb;
	if (anon > 0 && (!o->sampled || anon >= o->anon)) {
		o->anon = anon;
		o->huge = r.anon_huge + r.hugetlb;
		o->sampled = true;
	}
	if (mem > o->maxrss)
		o->maxrss = mem;
}

/* ---------- its output ---------- */

/* FNV-1a, 64 bits: enough to tell two outputs apart. */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* A number in s (its whole), into *v: 0, or -1. */
static int parse_figure(const char *s, size_t n, double *v)
{
	char buf[64], *end;

	while (n && (*s == ' ' || *s == '\t'))
		s++, n--;
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	errno = 0;
	*v = strtod(buf, &end);
	return errno || *end || !isfinite(*v) ? -1 : 0;
}

/* Goes through the stdout the run left in fd: the first figure --metric takes, and a
 * hash of every line but those --metric and --ignore match, which hold what changes
 * from run to run. */
static void read_stdout(int fd, const struct bench_cmd *c, struct bench_cmd_run *o, uint64_t *hash,
			uint64_t *kept)
{
	const regex_t *mre = c->metric_re, *ire = c->ignore_re;
	struct stat st;
	char *map = NULL, *line = NULL;
	size_t cap = 0, size;

	*hash = 0xcbf29ce484222325ull;
	*kept = 0;
	o->metric = NAN;
	if (fstat(fd, &st) < 0 || st.st_size <= 0)
		return;
	size = (size_t)st.st_size;
	map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		return;
	for (size_t at = 0; at < size;) {
		const char *nl = memchr(map + at, '\n', size - at);
		size_t n = nl ? (size_t)(nl - (map + at)) : size - at;
		bool skip = false;
		regmatch_t m[2];

		if (n + 1 > cap) {
			char *p = realloc(line, n + 1);

			if (!p)
				break;
			line = p;
			cap = n + 1;
		}
		memcpy(line, map + at, n);
		line[n] = 0;
		if (mre && regexec(mre, line, 2, m, 0) == 0) {
			skip = true;
			if (isnan(o->metric) && m[1].rm_so >= 0 &&
			    parse_figure(line + m[1].rm_so, (size_t)(m[1].rm_eo - m[1].rm_so), &o->metric) < 0)
				o->metric = NAN;
		}
		if (!skip && ire && regexec(ire, line, 0, NULL, 0) == 0)
			skip = true;
		if (!skip) {
			*hash = fnv1a(*hash, line, n);
			*hash = fnv1a(*hash, "\n", 1);
			*kept += n + 1;
		}
		at += n + 1;
	}
	free(line);
	munmap(map, size);
}

/* Copies what fd holds to out under a head line. */
static void copy_out(int out, const char *head, int fd)
{
	char buf[65536];
	ssize_t n;
	off_t off = 0;

	if (write(out, head, strlen(head)) < 0)
		return;
	while ((n = pread(fd, buf, sizeof buf, off)) > 0) {
		if (write(out, buf, (size_t)n) != n)
			return;
		off += n;
	}
}

/* The last line of its stderr, for the note on a failed run. */
static void err_tail(int fd, char *out, size_t len)
{
	char buf[512];
	off_t size = lseek(fd, 0, SEEK_END);
	off_t from = size > (off_t)sizeof buf - 1 ? size - (off_t)sizeof buf + 1 : 0;
	ssize_t n = size > 0 ? pread(fd, buf, sizeof buf - 1, from) : 0;
	char *p;

	out[0] = 0;
	if (n <= 0)
		return;
	buf[n] = 0;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = 0;
	p = strrchr(buf, '\n');
	p = p ? p + 1 : buf;
	snprintf(out, len, "%.*s", (int)len - 1, p);
	for (char *q = out; *q; q++)
		if ((unsigned char)*q < 0x20)
			*q = ' ';
}

/* ---------- one run ---------- */

/* The run's argv: through superpage run for a backing, else the command itself. */
static char **build_argv(const struct bench *b, const struct bench_cmd *c, const struct bench_variant *v)
{
	int argc = 0, n = 0;
	char **argv;

	while (c->argv[argc])
		argc++;
	argv = calloc((size_t)argc + 6, sizeof *argv);
	if (!argv)
		return NULL;
	if (v->how == BENCH_HOW_RUN) {
		argv[n++] = (char *)b->exe;
		argv[n++] = "run";
		argv[n++] = "--backing";
		argv[n++] = (char *)v->backing;
		argv[n++] = "--";
	}
	for (int i = 0; i < argc; i++)
		argv[n++] = c->argv[i];
	return argv;
}

static void child_env(const struct bench_variant *v)
{
	for (int i = 0; i < 4 && v->env[i]; i++)
		putenv((char *)v->env[i]);
	if (v->lib[0]) {
		/* In front of what the user preloads already. */
		const char *old = getenv("LD_PRELOAD");
		char buf[PATH_MAX * 2];

		if (old && *old)
			snprintf(buf, sizeof buf, "%s:%s", v->lib, old);
		else
			snprintf(buf, sizeof buf, "%s", v->lib);
		setenv("LD_PRELOAD", buf, 1);
	}
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* Waits for pid, reading its smaps_rollup 2 ms after its start, then at intervals
 * growing by half up to 100 ms (each read walks its page tables: often while it is
 * young and may be short, seldom once it runs long). The time of its exit into *end:
 * a pidfd wakes us as it exits; without one, its exit is polled every ms. */
static void wait_sampling(pid_t pid, struct bench_cmd_run *o, int *status, struct rusage *ru, double *end)
{
	int pfd = pidfd_of(pid);
	double interval = 0.002, next = now_s() + interval;

	for (;;) {
		double left = next - now_s();

		if (pfd >= 0) {
			struct pollfd p = { .fd = pfd, .events = POLLIN };
			int r = poll(&p, 1, left > 0 ? (int)(left * 1000) + 1 : 0);

			if (r > 0)
				break;
			if (r < 0 && errno != EINTR) {
				close(pfd);
				pfd = -1;
			}
		} else {
			struct timespec ms = { 0, 1000000 };
			pid_t w = wait4(pid, status, WNOHANG, ru);

			if (w == pid) {
				*end = now_s();
				return;
			}
			if (w < 0 && errno != EINTR)
				break;
			nanosleep(&ms, NULL);
		}
		if (now_s() >= next) {
			take_sample(pid, o);
			interval = interval * 1.5 > 0.1 ? 0.1 : interval * 1.5;
			next = now_s() + interval;
		}
	}
	*end = now_s();
	if (pfd >= 0)
		close(pfd);
	while (wait4(pid, status, 0, ru) < 0 && errno == EINTR)
		;
}

/* Runs the command once under v; o gets what it took and what it had. */
static void run_once(const struct bench *b, struct bench_cmd *c, const struct bench_variant *v, int out,
		     int round, bool is_ref, struct bench_cmd_run *o)
{
	int ofd = memfd_create("bench-stdout", MFD_CLOEXEC), efd = memfd_create("bench-stderr", MFD_CLOEXEC);
	char **argv = build_argv(b, c, v), tail[160];
	struct rusage ru;
	double t0, t1;
	uint64_t hash, kept;
	pid_t pid;

	memset(o, 0, sizeof *o);
	memset(&ru, 0, sizeof ru);
	o->metric = NAN;
	if (ofd < 0 || efd < 0 || !argv) {
		o->failed = true;
		snprintf(o->why, sizeof o->why, "cannot set up the run: %s", strerror(errno));
		goto out;
	}
	fflush(NULL);
	t0 = now_s();
	pid = fork();
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);

		if (in >= 0)
			dup2(in, 0);
		dup2(ofd, 1);
		dup2(efd, 2);
		child_env(v);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid < 0) {
		o->failed = true;
		snprintf(o->why, sizeof o->why, "fork: %s", strerror(errno));
		goto out;
	}
	bench_running_child = pid;
	wait_sampling(pid, o, &o->status, &ru, &t1);
	bench_running_child = 0;
	o->wall = t1 - t0;
	o->user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
	o->sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	if ((uint64_t)ru.ru_maxrss * 1024 > o->maxrss)
		o->maxrss = (uint64_t)ru.ru_maxrss * 1024;
	o->minflt = ru.ru_minflt;
	o->majflt = ru.ru_majflt;

	read_stdout(ofd, c, o, &hash, &kept);
	err_tail(efd, tail, sizeof tail);
	if (WIFSIGNALED(o->status)) {
		o->failed = true;
		snprintf(o->why, sizeof o->why, "killed by signal %d (%s)%s%.100s", WTERMSIG(o->status),
			 strsignal(WTERMSIG(o->status)), tail[0] ? ": " : "", tail);
	} else if (!WIFEXITED(o->status) || WEXITSTATUS(o->status) != 0) {
		o->failed = true;
		snprintf(o->why, sizeof o->why, "exit status %d%s%.120s", WEXITSTATUS(o->status),
			 tail[0] ? ": " : "", tail);
	} else if (c->metric_re && isnan(o->metric)) {
		o->failed = true;
		snprintf(o->why, sizeof o->why, "no figure on its stdout: no line matched --metric with a number");
	}
	if (is_ref) {
		c->have_ref = true;
		c->ref_hash = hash;
		c->ref_len = kept;
	} else if (c->have_ref && (hash != c->ref_hash || kept != c->ref_len) && !o->failed) {
		o->differs = true;
		o->failed = true;
		if (kept != c->ref_len)
			snprintf(o->why, sizeof o->why, "its stdout differs from plain's first run's (%llu "
				 "bytes compared, plain's %llu)", (unsigned long long)kept,
				 (unsigned long long)c->ref_len);
		else
			snprintf(o->why, sizeof o->why, "its stdout differs from plain's first run's");
	}
	if (out >= 0) {
		char head[128];

		snprintf(head, sizeof head, "==> %s, round %d: stdout <==\n", v->name, round + 1);
		copy_out(out, head, ofd);
		snprintf(head, sizeof head, "==> %s, round %d: stderr <==\n", v->name, round + 1);
		copy_out(out, head, efd);
	}
out:
	if (ofd >= 0)
		close(ofd);
	if (efd >= 0)
		close(efd);
	free(argv);
}

/* ---------- the rounds ---------- */

static int variant_index(const struct bench *b, const char *name)
{
	for (int i = 0; i < b->nvar; i++)
		if (!strcmp(b->var[i].name, name))
			return i;
	return 0;
}

/* Whether every variant that ran has a clear ratio against the baseline; false if none
 * ran. */
static bool all_clear(const struct bench *b, const struct bench_cmd *c)
{
	int compared = 0;

	for (int i = 0; i < b->nvar; i++) {
		struct bench_ratio r;

		if (i == c->base || b->var[i].skip || c->v[i].n == 0)
			continue;
		bench_cmd_ratio(c, i, &r);
		if (!bench_ratio_clear(&r))
			return false;
		compared++;
	}
	return compared > 0;
}

static int runnable(const struct bench *b, int base)
{
	int k = 0;

	for (int i = 0; i < b->nvar; i++)
		k += i != base && !b->var[i].skip;
	return k;
}

/* After plain's first run: the pools sized from what it had, and what cannot be had
 * skipped. */
static void after_first(struct bench *b, const struct bench_cmd_run *first)
{
	uint64_t peak = first->maxrss > first->anon ? first->maxrss : first->anon;

	if (b->setup_pools)
		bench_setup_pools_bytes(b, peak);
	bench_check_offer(b);
	for (int i = 0; i < b->nvar; i++)
		if (b->var[i].skip)
			fprintf(stderr, "bench: skipping %s: %s\n", b->var[i].name, b->var[i].why);
	/* Touching every free pool page takes them all for a moment: only while this bench
	 * holds the pools (--setup-pools), never under another pool user's feet. */
	if (b->setup_pools && geteuid() == 0)
		bench_warm_pools();
}

void bench_cmd_run(struct bench *b, struct bench_cmd *c)
{
	int base = variant_index(b, "plain"), out = -1;
	uint64_t warm = 0;
	bool first = true;

	c->base = variant_index(b, c->baseline ? c->baseline : "plain");
	b->started = now_s();
	if (c->output) {
		out = open(c->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (out < 0)
			fprintf(stderr, "superpage: bench: cannot write %s: %s; the output is dropped\n", c->output,
				strerror(errno));
	}
	for (int i = 0; i < b->nvar; i++)
		b->names[b->nnames++] = b->var[i].name;
	snprintf(c->stopped, sizeof c->stopped, "all %d rounds run", b->repeat);
	for (int round = 0; round < b->repeat; round++) {
		int order[BENCH_MAX_VARIANTS];
		double spent = now_s() - b->started;

		if (round > 0 && c->max_time > 0 && spent + spent / round > c->max_time) {
			snprintf(c->stopped, sizeof c->stopped, "stopped after %d of %d rounds: another would pass "
				 "--max-time %g s", round, b->repeat, c->max_time);
			break;
		}
		bench_round_order(b->nvar, round, order);
		for (int k = 0; k < b->nvar; k++) {
			int i = order[k];
			struct bench_variant *v = &b->var[i];
			struct bench_cmd_variant *cv = &c->v[i];
			struct bench_cmd_run *o;

			if (v->skip || cv->n >= BENCH_MAX_REPEAT)
				continue;
			if (v->how == BENCH_HOW_SYSFS && !bench_thp_always(v)) {
				v->skip = true;
				fprintf(stderr, "bench: skipping %s: %s\n", v->name, v->why);
				continue;
			}
			fprintf(stderr, "bench: %-14s round %d/%d\n", v->name, round + 1, b->repeat);
			bench_warm_memory(warm);
			o = &cv->run[cv->n];
			run_once(b, c, v, out, round, first && i == base, o);
			o->round = round;
			if (v->how == BENCH_HOW_SYSFS)
				bench_thp_put_back();
			cv->n++;
			b->runs_done++;
			if (o->failed) {
				c->failures++;
				c->differs += o->differs;
				fprintf(stderr, "bench: %s round %d: %s\n", v->name, round + 1, o->why);
			} else {
				cv->good++;
			}
			if (o->maxrss > warm)
				warm = o->maxrss;
			if (first && i == base) {
				/* Waiting for the pool lock is no time of the rounds' (--max-time). */
				double t = now_s();

				first = false;
				after_first(b, o);
				b->started += now_s() - t;
			}
		}
		c->rounds = round + 1;
		if (round == 0 && c->v[base].n && c->v[base].run[0].failed) {
			snprintf(c->stopped, sizeof c->stopped, "stopped after round 1: plain's run failed, "
				 "nothing to compare with");
			break;
		}
		if (round == 0 && runnable(b, base) == 0) {
			snprintf(c->stopped, sizeof c->stopped, "stopped after round 1: no variant but plain "
				 "could run");
			break;
		}
		if (c->rounds >= 3 && c->rounds < b->repeat && all_clear(b, c)) {
			snprintf(c->stopped, sizeof c->stopped, "stopped after %d of %d rounds: every ratio's "
				 "95%% interval was clear of 1.0 (or within 0.98-1.02)", c->rounds, b->repeat);
			break;
		}
	}
	if (out >= 0)
		close(out);
	bench_cmd_finish(b, c);
	bench_read_machine(b, &b->machine);
	snprintf(b->machine.baseline, sizeof b->machine.baseline, "%s", b->var[c->base].name);
	bench_restore_pools();
	b->seconds = now_s() - b->started;
}
