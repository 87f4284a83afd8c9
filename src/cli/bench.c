/* bench.c - superpage bench, the command: its options into a plan, the run (src/bench), the results out. */
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

/* The files to write besides the table, and where the kernels are (NULL: not given);
 * for a command (bench -- CMD), its options. */
struct outputs {
	const char *json, *csv, *svg, *kdir;
	bool kernel_only;      /* an option only the kernels take was given */
	const char *kernel_opt;
	const char *metric_dir; /* --metric-higher or --metric-lower, if given */
	const char *max_time;
};

void usage_bench(void)
{
	fputs("usage: superpage bench [OPTIONS]\n"
	      "       superpage bench [OPTIONS] -- CMD [ARGS...]\n"
	      "\n"
	      "Runs the benchmark kernels (the seed's trans, trans2, transf, transw, mem2, gemmx,\n"
	      "fft and himeno, and today's gups, tlbreach, stream, fault, itlb and fork) as\n"
	      "unmodified programs under each backing through superpage run, alternating the\n"
	      "backings in every round, and reports medians side by side with the share of\n"
	      "each run's data (itlb: its code) that really was on huge pages. A run that did\n"
	      "not get the pages it asked for is marked and is no result for that backing.\n"
	      "\n"
	      "  --kernel K,...     the kernels to run (default: all; see the list below);\n"
	      "                     K=SIZE/SIZE/... runs K at those --size values only\n"
	      "  --backing B,...    4k, auto, thp, 2m, 1g (default: all five, thp left out with\n"
	      "                     --quick; 4k is always run, it is the baseline)\n"
	      "  --repeat N         rounds (default 5, 3 with --quick; at most 50)\n"
	      "  --quick            fewer sizes and rounds, and without trans2, transw,\n"
	      "                     malloc and promote unless named: a few minutes in all\n"
	      "  --peers            also glibc's malloc.hugetlb=1 and =2, mimalloc and jemalloc\n"
	      "                     with their huge page options and tcmalloc (where\n"
	      "                     installed), and the ideal: each kernel built with its\n"
	      "                     arrays from strict sp_alloc 2m (and 1g) blocks\n"
	      "  --allow-sysfs      (root, with --peers) also the system's THP 'always' mode,\n"
	      "                     set around each of its runs and put back (also on Ctrl-C)\n"
	      "  --setup-pools      (root) size the 2M and 1G pools for the runs, put them back\n"
	      "                     at the end (also on Ctrl-C); holds /tmp/sp-pool.lock\n"
	      "  --json FILE, --csv FILE, --svg FILE\n"
	      "                     also write the results as JSON, CSV or an SVG chart\n"
	      "  --kernels DIR      where the kernel programs are (default: next to superpage)\n"
	      "\n"
	      "kernels: trans trans2 transf transw mem2 gemmx fft himeno gups tlbreach stream fault\n"
	      "         malloc (throughput of malloc itself; its size is a number of threads)\n"
	      "         itlb (calls spread over 16 MiB of code: run with --text, judged by its\n"
	      "         text's pages; x86-64 only)\n"
	      "         promote (gups's updates before and after superpage promote; adds the\n"
	      "         column promote: run plain, promoted mid-run; needs CAP_SYS_NICE)\n"
	      "         fork (fork() timed while 2 threads allocate; its size is the data held)\n"
	      "The table goes to stdout, progress to stderr. Exit status: 0, 1 if a kernel's\n"
	      "own check failed or a run crashed, 2 for bad options. See superpage(1).\n"
	      "\n"
	      "With -- CMD [ARGS...], runs your own program instead: plain (as it is) and under\n"
	      "each variant, the order rotating from round to round, and reports side by side\n"
	      "the medians and spread of wall, user and sys time, peak RSS, the share of its\n"
	      "anonymous memory on huge pages (sampled from /proc/PID/smaps_rollup while it\n"
	      "runs) and its faults, then a verdict per variant against plain: 'auto: 1.12x\n"
	      "faster, 95% CI 1.08-1.16, 99% huge, RSS 1.01x', or 'no measurable difference'.\n"
	      "Every run's exit status is checked, and its stdout against plain's first run's.\n"
	      "  --backing B,...    the backings to run it under (default: auto,2m; 2m only\n"
	      "                     where the 2M pool has free pages, or with --setup-pools)\n"
	      "  --repeat N         rounds at most (default 5); it stops after 3 or more when\n"
	      "                     every ratio's 95% interval is above 1.01, below 0.99 or\n"
	      "                     within 0.98-1.02\n"
	      "  --max-time S       starts no round that would end past S seconds in all\n"
	      "  --metric REGEX     judge by the program's own figure: the number in the first\n"
	      "                     group of REGEX (POSIX extended) on a line of its stdout,\n"
	      "                     instead of wall time; those lines are not compared\n"
	      "  --metric-higher, --metric-lower\n"
	      "                     whether a higher figure is better (default: higher)\n"
	      "  --ignore REGEX     lines of its stdout left out of the comparison\n"
	      "  --baseline V       the variant the ratios are against (default: plain; 4k,\n"
	      "                     with --backing 4k,..., as the kernels' table)\n"
	      "  --output FILE      every run's stdout and stderr, under a head line, into FILE\n"
	      "                     (default: /dev/null)\n"
	      "  --peers, --allow-sysfs, --setup-pools, --json, --csv, --svg  as above (no\n"
	      "                     ideal builds; --setup-pools sizes the pools from what\n"
	      "                     plain's first run had)\n"
	      "Exit status: 0; 1 if a run failed (non-zero exit, a signal, no figure) or its\n"
	      "stdout differed from plain's first run's; 2 for bad options or a CMD that\n"
	      "cannot be found.\n",
	      stdout);
}

/* ---------- options ---------- */

/* A regular expression of an option, compiled into re; a one-line error if it is bad. */
static int compile_re(const char *opt, const char *src, regex_t *re, bool want_group)
{
	int e = regcomp(re, src, REG_EXTENDED | (want_group ? 0 : REG_NOSUB));
	char msg[128];

	if (e) {
		regerror(e, re, msg, sizeof msg);
		return cli_error(EXIT_USAGE, "bench: bad %s '%s': %s", opt, src, msg);
	}
	if (want_group && re->re_nsub < 1) {
		regfree(re);
		return cli_error(EXIT_USAGE, "bench: %s '%s' has no group: put the number in ( )", opt, src);
	}
	return 0;
}

/* Whether name can be run: a path that can be executed, or a program in PATH. */
static bool can_exec(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	struct stat st;

	if (strchr(name, '/'))
		return access(name, X_OK) == 0 && stat(name, &st) == 0 && !S_ISDIR(st.st_mode);
	if (!path)
		path = "/usr/bin:/bin";
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(buf, sizeof buf, "%.*s/%s", (int)(n ? n : 1), n ? p : ".", name);
		if (access(buf, X_OK) == 0 && stat(buf, &st) == 0 && !S_ISDIR(st.st_mode))
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

/* bench -- CMD: the options that go with it, and the command itself. */
static int plan_command(struct bench *b, struct outputs *out, struct bench_cmd *c, const char *backings,
			int repeat)
{
	static regex_t metric_re, ignore_re;
	char err[1024], *end;
	const char *slash;
	int rc;

	if (!c->argv[0])
		return cli_error(EXIT_USAGE, "bench: -- needs a command to run");
	if (out->kernel_only)
		return cli_error(EXIT_USAGE, "bench: %s is for the kernels, not for -- CMD", out->kernel_opt);
	if (b->allow_sysfs && !b->peers)
		return cli_error(EXIT_USAGE, "bench: --allow-sysfs goes with --peers (it adds thp-always)");
	if (out->metric_dir && !c->metric_src)
		return cli_error(EXIT_USAGE, "bench: %s goes with --metric", out->metric_dir);
	if (out->max_time) {
		errno = 0;
		c->max_time = strtod(out->max_time, &end);
		if (errno || *end || end == out->max_time || !(c->max_time > 0) || c->max_time > 1e7)
			return cli_error(EXIT_USAGE, "bench: bad --max-time '%s' (seconds, more than 0)",
					 out->max_time);
	}
	if (c->metric_src) {
		if ((rc = compile_re("--metric", c->metric_src, &metric_re, true)))
			return rc;
		c->metric_re = &metric_re;
	}
	if (c->ignore_src) {
		if ((rc = compile_re("--ignore", c->ignore_src, &ignore_re, false)))
			return rc;
		c->ignore_re = &ignore_re;
	}
	if (!can_exec(c->argv[0]))
		return cli_error(EXIT_USAGE, "bench: cannot run %s: no such program (or not executable)",
				 c->argv[0]);
	slash = strrchr(c->argv[0], '/');
	snprintf(c->label, sizeof c->label, "%s", slash ? slash + 1 : c->argv[0]);
	b->repeat = repeat ? repeat : 5;
	if (bench_plan_command(b, backings ? backings : "auto,2m", err, sizeof err))
		return cli_error(EXIT_USAGE, "bench: %s", err);
	if (c->baseline) {
		bool found = false;

		for (int i = 0; i < b->nvar; i++)
			found |= !strcmp(b->var[i].name, c->baseline);
		if (!found)
			return cli_error(EXIT_USAGE, "bench: --baseline %s is none of the variants run "
					 "(plain, those of --backing, and with --peers the peers')", c->baseline);
	}
	return 0;
}

static int parse_options(struct bench *b, struct outputs *out, struct bench_cmd *c, int argc, char **argv)
{
	const char *kernels = NULL, *backings = NULL, *v;
	char err[1024];
	int m, repeat = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			c->argv = argv + i + 1;
			break;
		}
		if ((m = cli_opt_value(argc, argv, &i, "--metric", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			c->metric_src = v;
		} else if (!strcmp(a, "--metric-higher") || !strcmp(a, "--metric-lower")) {
			c->metric_higher = !strcmp(a, "--metric-higher");
			out->metric_dir = a;
		} else if ((m = cli_opt_value(argc, argv, &i, "--baseline", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			c->baseline = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--ignore", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			c->ignore_src = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--output", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			c->output = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--max-time", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			out->max_time = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--kernel", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			kernels = v;
			out->kernel_only = true;
			out->kernel_opt = "--kernel";
		} else if ((m = cli_opt_value(argc, argv, &i, "--backing", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			backings = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--repeat", &v)) != 0) {
			char *end;
			long n;

			if (m < 0)
				return EXIT_USAGE;
			errno = 0;
			n = strtol(v, &end, 10);
			if (errno || *end || end == v || n < 1 || n > BENCH_MAX_REPEAT)
				return cli_error(EXIT_USAGE, "bench: bad --repeat '%s' (1 to %d)", v,
						 BENCH_MAX_REPEAT);
			repeat = (int)n;
		} else if ((m = cli_opt_value(argc, argv, &i, "--json", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			out->json = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--csv", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			out->csv = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--svg", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			out->svg = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--kernels", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			out->kdir = v;
			out->kernel_only = true;
			out->kernel_opt = "--kernels";
		} else if (!strcmp(a, "--quick")) {
			b->quick = true;
			out->kernel_only = true;
			out->kernel_opt = "--quick";
		} else if (!strcmp(a, "--peers")) {
			b->peers = true;
		} else if (!strcmp(a, "--setup-pools")) {
			b->setup_pools = true;
		} else if (!strcmp(a, "--allow-sysfs")) {
			b->allow_sysfs = true;
		} else {
			return cli_error(EXIT_USAGE, "bench: unknown argument '%s' (see superpage bench --help)", a);
		}
	}
	if (c->argv)
		return plan_command(b, out, c, backings, repeat);
	if (c->metric_src || c->ignore_src || c->output || out->metric_dir || out->max_time || c->baseline)
		return cli_error(EXIT_USAGE, "bench: %s goes with -- CMD (your own program)",
				 c->metric_src ? "--metric" : c->ignore_src ? "--ignore" : c->output ? "--output" :
				 out->metric_dir ? out->metric_dir : out->max_time ? "--max-time" : "--baseline");
	b->repeat = repeat ? repeat : b->quick ? 3 : 5;
	/* --quick leaves out thp: at the quick sizes auto is THP, and time is short. */
	if (!backings)
		backings = b->quick ? "auto,2m,1g" : "auto,thp,2m,1g";
	if (bench_plan_backings(b, backings, err, sizeof err))
		return cli_error(EXIT_USAGE, "bench: %s", err);
	if (b->allow_sysfs && !b->peers)
		return cli_error(EXIT_USAGE, "bench: --allow-sysfs goes with --peers (it adds thp-always)");
	if (b->peers)
		bench_plan_peers(b);
	if (kernels ? bench_plan_kernels(b, kernels, err, sizeof err) : bench_plan_all(b, err, sizeof err))
		return cli_error(EXIT_USAGE, "bench: %s", err);
	bench_plan_promote(b);
	return 0;
}

/* ---------- where things are ---------- */

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The kernels next to this executable (build tree: bench/kernels), else installed
 * in ../lib/superpage/kernels; the ideal builds beside them in "ideal". */
static int find_dirs(struct bench *b, const char *kdir)
{
	char dir[PATH_MAX], cand[PATH_MAX + 64], *slash;
	ssize_t n = readlink("/proc/self/exe", b->exe, sizeof b->exe - 1);

	if (n <= 0)
		return cli_error(EXIT_FAIL, "bench: cannot find the superpage executable (/proc/self/exe)");
	b->exe[n] = 0;
	snprintf(dir, sizeof dir, "%s", b->exe);
	slash = strrchr(dir, '/');
	if (!slash)
		return cli_error(EXIT_FAIL, "bench: /proc/self/exe is not a path: %s", dir);
	*slash = 0;
	if (kdir) {
		if (!realpath(kdir, b->kdir) || !is_dir(b->kdir))
			return cli_error(EXIT_USAGE, "bench: --kernels %s is not a directory", kdir);
		snprintf(cand, sizeof cand, "%s/../ideal", b->kdir);
	} else {
		snprintf(cand, sizeof cand, "%s/bench/kernels", dir);
		if (!is_dir(cand))
			snprintf(cand, sizeof cand, "%s/../lib/superpage/kernels", dir);
		if (!realpath(cand, b->kdir) || !is_dir(b->kdir))
			return cli_error(EXIT_FAIL, "bench: no kernels in %s/bench/kernels or "
					 "%s/../lib/superpage/kernels (make kernels builds them)", dir, dir);
		snprintf(cand, sizeof cand, "%s/../ideal", b->kdir);
	}
	if (!realpath(cand, b->idir))
		b->idir[0] = 0;
	for (int i = 0; i < b->nitems; i++) {
		snprintf(cand, sizeof cand, "%s/%s", b->kdir, b->items[i].k->name);
		if (access(cand, X_OK) != 0)
			return cli_error(EXIT_FAIL, "bench: kernel %s is missing (make kernels builds it)", cand);
	}
	for (int i = 0; i < b->nvar; i++) {
		struct bench_variant *v = &b->var[i];

		if (v->how == BENCH_HOW_IDEAL && !b->idir[0]) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "no ideal builds beside the kernels (make kernels)");
		}
	}
	return 0;
}

static int write_file(const char *path, const char *what, const struct bench *b, const struct bench_cmd *c)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return cli_error(EXIT_FAIL, "bench: cannot write %s: %s", path, strerror(errno));
	if (!strcmp(what, "json") && c)
		bench_write_cmd_json(f, b, c);
	else if (!strcmp(what, "json"))
		bench_write_json(f, &b->machine, b->rows, b->nrows);
	else if (!strcmp(what, "csv"))
		bench_write_csv_vs(f, b->rows, b->nrows, c ? b->var[c->base].name : "4k");
	else
		bench_write_svg(f, &b->machine, b->rows, b->nrows, b->names, b->nnames);
	if (fclose(f) != 0)
		return cli_error(EXIT_FAIL, "bench: cannot write %s: %s", path, strerror(errno));
	return 0;
}

/* The files written before the run: a path that cannot be written is an error before
 * minutes of runs, not after. */
static int check_writable(const char *path)
{
	FILE *f;

	if (!path)
		return 0;
	f = fopen(path, "a");
	if (!f)
		return cli_error(EXIT_USAGE, "bench: cannot write %s: %s", path, strerror(errno));
	fclose(f);
	return 0;
}

/* superpage bench -- CMD */
static int bench_command(struct bench *b, struct bench_cmd *c, const struct outputs *out)
{
	ssize_t n = readlink("/proc/self/exe", b->exe, sizeof b->exe - 1);
	int rc;

	if (n <= 0)
		return cli_error(EXIT_FAIL, "bench: cannot find the superpage executable (/proc/self/exe)");
	b->exe[n] = 0;
	if ((rc = check_writable(out->json)) || (rc = check_writable(out->csv)) ||
	    (rc = check_writable(out->svg)) || (rc = check_writable(c->output)))
		return rc;
	fprintf(stderr, "bench: the program's output goes to %s\n", c->output ? c->output : "/dev/null");
	bench_cmd_run(b, c);
	bench_write_cmd_table(stdout, b, c);
	fflush(stdout);
	if (out->json && (rc = write_file(out->json, "json", b, c)))
		return rc;
	if (out->csv && (rc = write_file(out->csv, "csv", b, c)))
		return rc;
	if (out->svg && (rc = write_file(out->svg, "svg", b, c)))
		return rc;
	fprintf(stderr, "bench: %d runs in %.0f s\n", b->runs_done, b->seconds);
	if (c->failures)
		return cli_error(EXIT_FAIL, "bench: %d run(s) failed or printed another output than plain's "
				 "first (see the notes)", c->failures);
	return EXIT_OK;
}

int cmd_bench(int argc, char **argv)
{
	static struct bench b;
	static struct bench_cmd c;
	struct outputs out = { NULL };
	int rc;

	memset(&b, 0, sizeof b);
	memset(&c, 0, sizeof c);
	c.metric_higher = true;
	if ((rc = parse_options(&b, &out, &c, argc, argv)))
		return rc;
	if (c.argv)
		return bench_command(&b, &c, &out);
	if ((rc = find_dirs(&b, out.kdir)))
		return rc;
	bench_run(&b);
	bench_write_table(stdout, &b.machine, b.rows, b.nrows, b.names, b.nnames);
	if (out.json && (rc = write_file(out.json, "json", &b, NULL)))
		return rc;
	if (out.csv && (rc = write_file(out.csv, "csv", &b, NULL)))
		return rc;
	if (out.svg && (rc = write_file(out.svg, "svg", &b, NULL)))
		return rc;
	fprintf(stderr, "bench: %d runs in %.0f s\n", b.runs_done, b.seconds);
	if (b.failures)
		return cli_error(EXIT_FAIL, "bench: %d run(s) crashed or failed their own check (see the notes)",
				 b.failures);
	return EXIT_OK;
}
