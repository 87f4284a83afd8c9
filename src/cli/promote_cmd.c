/* promote_cmd.c - superpage promote: collapse the memory of running processes onto huge pages, once or on watch. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define MAX_PIDS 64

void usage_promote(void)
{
	fputs("usage: superpage promote [--budget SIZE|PCT] [--hot] [--dry-run] [--json]\n"
	      "                         [--watch SECONDS] PID...\n"
	      "\n"
	      "Collapses the memory of running processes onto 2 MiB pages with\n"
	      "process_madvise(2) MADV_COLLAPSE, without restarting them: their private\n"
	      "anonymous memory (heap, stacks, anonymous mappings), in aligned 2 MiB ranges,\n"
	      "the fullest first, a chunk at a time with a pause between chunks and a longer\n"
	      "one when collapses get slow or fail. Every range not collapsed is listed with\n"
	      "its reason; none is asked twice. Needs CAP_SYS_NICE and the access a debugger\n"
	      "needs (root, in practice).\n"
	      "\n"
	      "  --budget SIZE|PCT  collapse at most SIZE (512M, 2G) or PCT of each process's\n"
	      "                     resident memory (25%); default: no limit\n"
	      "  --hot              rank by recent access: clear the accessed bits, wait 1 s,\n"
	      "                     read them back per mapping (smaps Referenced)\n"
	      "  --dry-run          rank and say what would be collapsed; collapse nothing\n"
	      "  --json             one JSON object per process (and per round), for scripts\n"
	      "  --watch SECONDS    after the first pass, look again every SECONDS and collapse\n"
	      "                     what fell back to small pages, until the processes end or\n"
	      "                     Ctrl-C\n"
	      "\n"
	      "Exit status: 0 something was promoted (or nothing was left to promote, or a\n"
	      "dry run), 1 nothing could be, 2 bad arguments or no such process.\n",
	      stdout);
}

static volatile int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	if (!*s || strspn(s, "0123456789.") != strlen(s))
		return -EINVAL;
	double v = strtod(s, &end);
	if (*end || !(v > 0) || v > 86400)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_pid(const char *s, pid_t *out)
{
	uint64_t v;
	if (!*s || strspn(s, "0123456789") != strlen(s) || sp_parse_count(s, &v) < 0 || v == 0 ||
	    v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

/* One pass over one process: says what it did; false once it is gone. */
static bool promote_one(struct promote_target *t, struct sp_promote_options *o, bool as_json,
			int round)
{
	static struct sp_promote_result r;
	char comm[64] = "";
	sp_comm_read(t->pid, comm, sizeof comm);
	int n = promote_pass(t, o, &r);
	if (n < 0) {
		/* After the first round, a process that ended is the end of its watch. */
		if (round > 1 && n == -ESRCH)
			return false;
		promote_say_fatal("promote", t->pid, n);
		t->missing = round == 1 && n == -ESRCH;
		if (as_json)
			promote_print_json(&r, comm, o->dry_run, round);
		return false;
	}
	if (as_json)
		promote_print_json(&r, comm, o->dry_run, round);
	else if (round == 1 || r.tried || r.rss_after == 0)
		promote_print_human(&r, comm, o->dry_run, round);
	return r.rss_after != 0 || o->dry_run;
}

static void nap(double seconds)
{
	struct timespec ts = { (time_t)seconds, (long)((seconds - floor(seconds)) * 1e9) };
	if (!stop_flag)
		nanosleep(&ts, NULL); /* a signal ends it early */
}

int cmd_promote(int argc, char **argv)
{
	static struct promote_target targets[MAX_PIDS];
	struct sp_promote_options o;
	bool as_json = false, options = true;
	double watch = 0;
	const char *v;
	int n = 0, k;

	sp_promote_options_default(&o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (options && !strcmp(a, "--")) {
			options = false;
		} else if (options && !strcmp(a, "--json")) {
			as_json = true;
		} else if (options && !strcmp(a, "--hot")) {
			o.hot = true;
		} else if (options && !strcmp(a, "--dry-run")) {
			o.dry_run = true;
		} else if (options && (k = cli_opt_value(argc, argv, &i, "--budget", &v)) != 0) {
			if (k < 0)
				return EXIT_USAGE;
			if (cli_parse_budget(v, &o) < 0)
				return cli_error(EXIT_USAGE, "promote: bad budget '%s' (a size like 512M "
						 "or 2G, or a share like 25%%)", v);
		} else if (options && (k = cli_opt_value(argc, argv, &i, "--watch", &v)) != 0) {
			if (k < 0)
				return EXIT_USAGE;
			if (parse_seconds(v, &watch) < 0)
				return cli_error(EXIT_USAGE, "promote: bad --watch '%s' (seconds, above "
						 "0 and at most 86400)", v);
		} else if (options && a[0] == '-') {
			return cli_error(EXIT_USAGE, "promote: unknown option '%s' (see superpage "
					 "promote --help)", a);
		} else {
			if (n == MAX_PIDS)
				return cli_error(EXIT_USAGE, "promote: at most %d processes", MAX_PIDS);
			if (parse_pid(a, &targets[n].pid) < 0)
				return cli_error(EXIT_USAGE, "promote: bad pid '%s' (a process id: 1, "
						 "2, ...)", a);
			targets[n].alive = true;
			targets[n].promoted = targets[n].missing = false;
			targets[n].n_avoid = 0;
			n++;
		}
	}
	if (!n)
		return cli_error(EXIT_USAGE, "promote: missing PID, the process to promote (see "
				 "superpage promote --help)");
	if (watch && o.dry_run)
		return cli_error(EXIT_USAGE, "promote: --watch and --dry-run do not go together");

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: a sleep ends at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.stop = &stop_flag;

	int alive;
	for (int round = 1;; round++) {
		alive = 0;
		for (int i = 0; i < n && !stop_flag; i++) {
			if (!targets[i].alive)
				continue;
			targets[i].alive = promote_one(&targets[i], &o, as_json, round);
			alive += targets[i].alive;
			fflush(stdout);
		}
		if (!watch || !alive || stop_flag)
			break;
		nap(watch);
		if (stop_flag)
			break;
	}
	bool any = false, all_missing = true;
	for (int i = 0; i < n; i++) {
		any |= targets[i].promoted;
		all_missing &= targets[i].missing;
	}
	if (any)
		return EXIT_OK;
	/* No such process, as superpage stat says it: bad input. */
	return all_missing ? EXIT_USAGE : EXIT_FAIL;
}
