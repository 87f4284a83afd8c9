/* bench.c - superpage bench, the command: its options into a plan, the run (src/bench), the results out. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

/* The files to write besides the table, and where the kernels are (NULL: not given). */
struct outputs {
	const char *json, *csv, *svg, *kdir;
};

void usage_bench(void)
{
	fputs("usage: superpage bench [OPTIONS]\n"
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
	      "                     with their huge page options (where installed), and the\n"
	      "                     ideal: each kernel built with its arrays from strict\n"
	      "                     sp_alloc 2m (and 1g) blocks\n"
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
	      "own check failed or a run crashed, 2 for bad options. See superpage(1).\n",
	      stdout);
}

/* ---------- options ---------- */

static int parse_options(struct bench *b, struct outputs *out, int argc, char **argv)
{
	const char *kernels = NULL, *backings = NULL, *v;
	char err[1024];
	int m, repeat = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if ((m = cli_opt_value(argc, argv, &i, "--kernel", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			kernels = v;
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
		} else if (!strcmp(a, "--quick")) {
			b->quick = true;
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

static int write_file(const char *path, const char *what, const struct bench *b)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return cli_error(EXIT_FAIL, "bench: cannot write %s: %s", path, strerror(errno));
	if (!strcmp(what, "json"))
		bench_write_json(f, &b->machine, b->rows, b->nrows);
	else if (!strcmp(what, "csv"))
		bench_write_csv(f, b->rows, b->nrows);
	else
		bench_write_svg(f, &b->machine, b->rows, b->nrows, b->names, b->nnames);
	if (fclose(f) != 0)
		return cli_error(EXIT_FAIL, "bench: cannot write %s: %s", path, strerror(errno));
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	static struct bench b;
	struct outputs out = { NULL };
	int rc;

	memset(&b, 0, sizeof b);
	if ((rc = parse_options(&b, &out, argc, argv)))
		return rc;
	if ((rc = find_dirs(&b, out.kdir)))
		return rc;
	bench_run(&b);
	bench_write_table(stdout, &b.machine, b.rows, b.nrows, b.names, b.nnames);
	if (out.json && (rc = write_file(out.json, "json", &b)))
		return rc;
	if (out.csv && (rc = write_file(out.csv, "csv", &b)))
		return rc;
	if (out.svg && (rc = write_file(out.svg, "svg", &b)))
		return rc;
	fprintf(stderr, "bench: %d runs in %.0f s\n", b.runs_done, b.seconds);
	if (b.failures)
		return cli_error(EXIT_FAIL, "bench: %d run(s) crashed or failed their own check (see the notes)",
				 b.failures);
	return EXIT_OK;
}
