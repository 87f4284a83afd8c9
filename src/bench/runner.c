/* runner.c - runs the plan: every kernel's sizes, round by round, each round's backings in a balanced order. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* Fills argv/envp for item under variant v. */
static void build_command(const struct bench *b, const struct bench_item *it, const struct bench_variant *v,
			  char *prog, size_t plen, char **argv, int *argc)
{
	int n = 0;

	snprintf(prog, plen, "%s/%s", v->how == BENCH_HOW_IDEAL ? b->idir : b->kdir, it->k->name);
	if (v->how == BENCH_HOW_RUN) {
		argv[n++] = (char *)b->exe;
		argv[n++] = "run";
		argv[n++] = "--backing";
		argv[n++] = (char *)v->backing;
		if (it->k->text)
			argv[n++] = "--text";
		argv[n++] = "--";
	}
	argv[n++] = prog;
	argv[n++] = "--size";
	argv[n++] = (char *)it->size;
	argv[n] = NULL;
	*argc = n;
}

static void child_env(const struct bench_variant *v)
{
	setenv("BENCH_SMAPS", "1", 1);
	unsetenv("GLIBC_TUNABLES");
	if (v->how == BENCH_HOW_IDEAL)
		setenv("BENCH_IDEAL", v->backing, 1);
	if (v->how == BENCH_HOW_PROMOTE)
		setenv("BENCH_PROMOTE", "1", 1);
	else
		unsetenv("BENCH_PROMOTE");
	for (int i = 0; i < 4 && v->env[i]; i++)
		putenv((char *)v->env[i]);
	if (v->lib[0])
		setenv("LD_PRELOAD", v->lib, 1);
}

/* Reads the kernel's stdout line by line into o, until EOF or the time limit. With
 * promote set (the promote variant), promotes process promote once its first result
 * line is in. */
static void read_output(int fd, struct run_out *o, pid_t promote)
{
	char buf[4096];
	size_t len = 0;
	double deadline = now_s() + BENCH_RUN_TIMEOUT_S;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = (int)((deadline - now_s()) * 1000);
		ssize_t n;
		char *nl;

		if (left <= 0) {
			o->timed_out = true;
			return;
		}
		if (poll(&pfd, 1, left) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		len += (size_t)n;
		buf[len] = 0;
		while ((nl = strchr(buf, '\n'))) {
			*nl = 0;
			if (o->nlines < (int)(sizeof o->lines / sizeof o->lines[0]) &&
			    bench_parse_result(buf, &o->lines[o->nlines]) == 1) {
				o->nlines++;
				if (promote > 0 && !o->promoted)
					bench_promote_child(promote, o);
			} else if (bench_parse_memory(buf, &o->mem) == 1) {
				o->have_mem = true;
			}
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof buf - 1)
			len = 0; /* a line too long to be ours */
	}
}

static void read_err_tail(int fd, char *out, size_t len)
{
	char buf[8192];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	char *p;

	out[0] = 0;
	if (n <= 0)
		return;
	off_t size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)sizeof buf - 1)
		n = pread(fd, buf, sizeof buf - 1, size - (off_t)(sizeof buf - 1));
	if (n <= 0)
		return;
	buf[n] = 0;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = 0;
	p = buf + n;
	for (int lines = 0; p > buf && lines < 2; p--)
		if (p[-1] == '\n')
			lines++;
	snprintf(out, len, "%.*s", (int)(len - 1), p);
	for (char *q = out; *q; q++)
		if (*q == '\n' || *q == '\t')
			*q = ' ';
}

static void run_kernel(const struct bench *b, const struct bench_item *it, const struct bench_variant *v,
		       struct run_out *o)
{
	char prog[PATH_MAX + 64], *argv[12];
	int argc, pipefd[2], errfd;
	struct rusage ru;
	pid_t pid;

	memset(o, 0, sizeof *o);
	build_command(b, it, v, prog, sizeof prog, argv, &argc);
	errfd = memfd_create("bench-stderr", MFD_CLOEXEC);
	if (pipe2(pipefd, O_CLOEXEC) < 0 || errfd < 0) {
		snprintf(o->err, sizeof o->err, "cannot make a pipe: %s", strerror(errno));
		o->status = -1;
		return;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(errfd, 2);
		child_env(v);
		execv(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	if (pid < 0) {
		snprintf(o->err, sizeof o->err, "fork: %s", strerror(errno));
		o->status = -1;
		close(pipefd[0]);
		close(errfd);
		return;
	}
	bench_running_child = pid;
	read_output(pipefd[0], o, v->how == BENCH_HOW_PROMOTE ? pid : 0);
	close(pipefd[0]);
	if (o->timed_out)
		kill(pid, SIGKILL);
	while (wait4(pid, &o->status, 0, &ru) < 0 && errno == EINTR)
		;
	bench_running_child = 0;
	o->minflt = ru.ru_minflt;
	read_err_tail(errfd, o->err, sizeof o->err);
	close(errfd);
}

static void progress(struct bench *b, const struct bench_item *it, const struct bench_variant *v, int round)
{
	double per = b->runs_done ? b->run_seconds / b->runs_done : 0;
	int left = (int)(per * (b->runs_total - b->runs_done));

	fprintf(stderr, "bench: %-8s %-6s %-14s round %d/%d", it->k->name, it->size, v->name, round + 1,
		b->repeat);
	if (b->runs_done)
		fprintf(stderr, "  (about %dm%02ds left)", left / 60, left % 60);
	fputc('\n', stderr);
}

/* Every round of one item. */
static void run_item(struct bench *b, const struct bench_item *it,
		     long (*minflts)[BENCH_MAX_REPEAT])
{
	for (int round = 0; round < b->repeat; round++) {
		/* The rows of a balanced Latin square: over the rounds every backing runs
		 * first, and right after each other one, equally often, so what a run
		 * leaves behind weighs on no backing more than on another. */
		int order[BENCH_MAX_VARIANTS];

		bench_round_order(b->nvar, round, order);
		for (int k = 0; k < b->nvar; k++) {
			struct bench_variant *v = &b->var[order[k]];
			struct run_out o;
			double t0;

			if (v->skip || (v->how == BENCH_HOW_IDEAL && it->k->allocator) ||
			    bench_not_for(it->k, v))
				continue;
			if (v->how == BENCH_HOW_SYSFS && !bench_thp_always(v)) {
				v->skip = true;
				continue;
			}
			progress(b, it, v, round);
			t0 = now_s();
			bench_warm_memory(it->bytes);
			run_kernel(b, it, v, &o);
			if (v->how == BENCH_HOW_SYSFS)
				bench_thp_put_back();
			b->run_seconds += now_s() - t0;
			b->runs_done++;
			bench_record(b, it, v, &o, minflts);
		}
	}
	bench_mark_skipped(b, it);
}

void bench_run(struct bench *b)
{
	static struct bench_row rows[BENCH_MAX_ROWS];
	static long minflts[BENCH_MAX_ROWS][BENCH_MAX_REPEAT];
	int runnable = 0;

	b->rows = rows;
	b->nrows = 0;
	if (b->setup_pools)
		bench_setup_pools(b);
	bench_check_offer(b);
	for (int i = 0; i < b->nvar; i++) {
		b->names[b->nnames++] = b->var[i].name;
		if (b->var[i].skip)
			fprintf(stderr, "bench: skipping %s: %s\n", b->var[i].name, b->var[i].why);
		else
			runnable++;
	}
	b->runs_total = b->nitems * b->repeat * runnable;
	b->started = now_s();
	bench_warm_pools();
	for (int i = 0; i < b->nitems; i++)
		run_item(b, &b->items[i], minflts);
	for (int i = 0; i < b->nrows; i++) {
		struct bench_row *r = &b->rows[i];

		if (r->coverage > 1)
			r->coverage = r->cov_wanted = 0;
		if (r->n) {
			qsort(minflts[i], (size_t)r->n, sizeof minflts[i][0], cmp_long);
			r->minflt = (uint64_t)minflts[i][r->n / 2];
		}
	}
	bench_finish(b->rows, b->nrows);
	bench_read_machine(b, &b->machine);
	bench_restore_pools();
	b->seconds = now_s() - b->started;
}
