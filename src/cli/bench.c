/* bench.c - superpage bench: runs the benchmark kernels under each backing, rounds
 * alternating the backings, checks what each run really got, and reports side by side. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../bench/cpu.h"
#include "bench.h"
#include "cli.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define MAX_BACKINGS 16
#define MAX_ITEMS 64
#define MAX_ROWS 1024
#define RUN_TIMEOUT_S 900

void usage_bench(void)
{
	fputs("usage: superpage bench [OPTIONS]\n"
	      "\n"
	      "Runs the benchmark kernels (the seed's trans, trans2, transf, transw, mem2, gemmx,\n"
	      "fft and himeno, and today's gups, tlbreach, stream, fault and itlb) as\n"
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
	      "  --quick            fewer sizes and rounds, and without trans2, transw and\n"
	      "                     malloc unless named: a few minutes in all\n"
	      "  --peers            also glibc's malloc.hugetlb=1 and =2, mimalloc and jemalloc\n"
	      "                     with their huge page options (where installed), and the\n"
	      "                     ideal: each kernel built with its arrays from strict\n"
	      "                     sp_alloc 2m (and 1g) blocks\n"
	      "  --allow-sysfs      (root, with --peers) also the system's THP 'always' mode,\n"
	      "                     set around each of its runs and put back (also on Ctrl-C)\n"
	      "  --setup-pools      (root) size the 2M and 1G pools for the runs, put them back\n"
	      "                     at the end (also on Ctrl-C)\n"
	      "  --json FILE, --csv FILE, --svg FILE\n"
	      "                     also write the results as JSON, CSV or an SVG chart\n"
	      "  --kernels DIR      where the kernel programs are (default: next to superpage)\n"
	      "\n"
	      "kernels: trans trans2 transf transw mem2 gemmx fft himeno gups tlbreach stream fault\n"
	      "         malloc (throughput of malloc itself; its size is a number of threads)\n"
	      "         itlb (calls spread over 16 MiB of code: run with --text, judged by its\n"
	      "         text's pages; x86-64 only)\n"
	      "The table goes to stdout, progress to stderr. Exit status: 0, 1 if a kernel's\n"
	      "own check failed or a run crashed, 2 for bad options. See superpage(1).\n",
	      stdout);
}

/* ---------- the kernels and their sizes ---------- */

enum est { EST_BYTES, EST_MATRIX, EST_POINTS, EST_GRID };

struct kernel_spec {
	const char *name;
	const char *sizes;   /* --size values of a full run, space-separated */
	const char *quick;   /* of --quick; NULL: not in --quick unless named */
	const char *args;    /* more arguments, or NULL */
	enum est est;        /* how --size turns into bytes of data */
	unsigned mult;       /* data = mult x that */
	bool allocator;      /* measures malloc itself: its few MiB of heap are not what it
	                        is about, so every run is a result, and it has no ideal */
	bool text;           /* is about its code: run with superpage run --text, judged by
	                        the pages of its text, not its data; no ideal (sp_alloc has
	                        no text), no 1g (text is not put on 1 GiB pages) */
};

static const struct kernel_spec kernel_specs[] = {
	{ "trans", "1000 4096 8192", "1000 8192", NULL, EST_MATRIX, 2 },
	{ "trans2", "1000 8192", NULL, NULL, EST_MATRIX, 2 },
	{ "transf", "1000 4096 8192 8200", "8192", NULL, EST_MATRIX, 2 },
	{ "transw", "8192", NULL, NULL, EST_MATRIX, 2 },
	{ "mem2", "512M", "64M", NULL, EST_BYTES, 2 },
	/* 4096: its column walk (4096 pages of 4K) outgrows an L2 TLB of 3072 entries,
	 * where 2000 does not. */
	{ "gemmx", "1000 2000 4096", "1000 2000", NULL, EST_MATRIX, 3 },
	{ "fft", "131072 4M", "131072 4M", NULL, EST_POINTS, 2 },
	{ "himeno", "1 2 3", "2", NULL, EST_GRID, 1 },
	{ "gups", "1G", "1G", NULL, EST_BYTES, 1 },
	{ "tlbreach", "8M 64M 512M 1G 2G 4G", "64M 1G", NULL, EST_BYTES, 1 },
	{ "stream", "256M", "256M", NULL, EST_BYTES, 3 },
	{ "fault", "4G", "1G", NULL, EST_BYTES, 1 },
	/* Not in --quick: make bench puts mallocs side by side with bench/compare.sh. */
	{ "malloc", "1 2", NULL, NULL, EST_POINTS, 0, true },
#ifdef __x86_64__
	/* Bytes of text in use: within the L2 instruction TLB's reach on 4 KiB pages (here
	 * 512 entries, 2 MiB), and 8 times past it, where 2 MiB pages need only 8 entries. */
	{ "itlb", "1M 4M 16M", "1M 16M", NULL, EST_BYTES, 1, false, true },
#endif
};
#define N_KERNELS (sizeof kernel_specs / sizeof kernel_specs[0])

/* Bytes of data a kernel has at this size: sizes the pools. A high guess costs only
 * pool pages; a low one makes 2m runs fall (and be marked so). */
static uint64_t est_bytes(const struct kernel_spec *k, uint64_t size)
{
	uint64_t b;

	switch (k->est) {
	case EST_MATRIX:
		b = size * size * 8;
		break;
	case EST_POINTS:
		b = size * 16;
		break;
	case EST_GRID: /* Himeno S, M, L: 14 float arrays over the grid */
		b = size == 1 ? 65ull * 65 * 129 : size == 2 ? 129ull * 129 * 257 : 257ull * 257 * 513;
		b *= 14 * 4;
		break;
	default:
		b = size;
	}
	return b * k->mult + 16 * MIB;
}

/* ---------- the ways to run a kernel ---------- */

enum how { HOW_RUN, HOW_IDEAL, HOW_PEER, HOW_SYSFS };

struct variant {
	char name[24];
	enum how how;
	const char *backing;   /* HOW_RUN: superpage run --backing; HOW_IDEAL: BENCH_IDEAL */
	const char *env[4];    /* HOW_PEER: NAME=VALUE settings */
	char lib[PATH_MAX];    /* HOW_PEER: the library to preload, "" for none */
	bool skip;
	char why[96];          /* why it is skipped */
};

struct plan_item {
	const struct kernel_spec *k;
	const char *size;      /* as given to --size */
	char dec[24];          /* the same in decimal: the rows' size, as the kernels print it */
	uint64_t bytes;        /* est_bytes */
};

struct bench {
	struct variant var[MAX_BACKINGS];
	int nvar;
	struct plan_item items[MAX_ITEMS];
	int nitems;
	int repeat;
	bool quick, peers, setup_pools, allow_sysfs;
	const char *json, *csv, *svg, *kdir_opt;
	char exe[PATH_MAX], kdir[PATH_MAX], idir[PATH_MAX];
	struct bench_row *rows;
	int nrows;
	int failures;          /* runs that crashed or failed their check */
	double started, run_seconds; /* time spent in runs, for the estimate */
	int runs_done, runs_total;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct variant *add_variant(struct bench *b, const char *name, enum how how,
				   const char *backing)
{
	struct variant *v;

	for (int i = 0; i < b->nvar; i++)
		if (!strcmp(b->var[i].name, name))
			return NULL;
	v = &b->var[b->nvar++];
	memset(v, 0, sizeof *v);
	snprintf(v->name, sizeof v->name, "%s", name);
	v->how = how;
	v->backing = backing;
	return v;
}

/* The first readable path of a shared library among the usual directories, or "". */
static void find_library(const char *name, char *out, size_t len)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
					    "/usr/local/lib", "/lib/x86_64-linux-gnu" };

	out[0] = 0;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(out, len, "%s/%s", dirs[i], name);
		if (access(out, R_OK) == 0)
			return;
	}
	out[0] = 0;
}

static void add_peers(struct bench *b)
{
	struct variant *v;

	if ((v = add_variant(b, "glibc-hugetlb1", HOW_PEER, NULL)))
		v->env[0] = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1";
	if ((v = add_variant(b, "glibc-hugetlb2", HOW_PEER, NULL)))
		v->env[0] = "GLIBC_TUNABLES=glibc.malloc.hugetlb=2";
	if ((v = add_variant(b, "mimalloc", HOW_PEER, NULL))) {
		v->env[0] = "MIMALLOC_ALLOW_LARGE_OS_PAGES=1";
		v->env[1] = "MIMALLOC_LARGE_OS_PAGES=1";
		find_library("libmimalloc.so.2", v->lib, sizeof v->lib);
		if (!v->lib[0]) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "libmimalloc.so.2 not installed (libmimalloc2.0)");
		}
	}
	if ((v = add_variant(b, "jemalloc", HOW_PEER, NULL))) {
		v->env[0] = "MALLOC_CONF=thp:always,metadata_thp:always";
		find_library("libjemalloc.so.2", v->lib, sizeof v->lib);
		if (!v->lib[0]) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "libjemalloc.so.2 not installed (libjemalloc2)");
		}
	}
	add_variant(b, "ideal-2m", HOW_IDEAL, "2m");
	add_variant(b, "ideal-1g", HOW_IDEAL, "1g");
	/* The system's own THP "always": plain kernels, the mode set around each run. */
	if ((v = add_variant(b, "thp-always", HOW_SYSFS, NULL)) && !b->allow_sysfs) {
		v->skip = true;
		snprintf(v->why, sizeof v->why, "changes a system setting: only with --allow-sysfs");
	} else if (v && geteuid() != 0) {
		v->skip = true;
		snprintf(v->why, sizeof v->why, "--allow-sysfs needs root to set THP 'always'");
	}
}

/* ---------- options ---------- */

static const struct kernel_spec *find_kernel(const char *name, size_t n)
{
	for (size_t i = 0; i < N_KERNELS; i++)
		if (strlen(kernel_specs[i].name) == n && !memcmp(kernel_specs[i].name, name, n))
			return &kernel_specs[i];
	return NULL;
}

/* Adds the items of kernel k, one per size of the list (separated by sep), or of
 * the run's own list when sizes is NULL. */
static int plan_kernel(struct bench *b, const struct kernel_spec *k, const char *sizes, size_t len,
		       char sep)
{
	static char names[MAX_ITEMS][16];
	const char *p = sizes ? sizes : b->quick && k->quick ? k->quick : k->sizes;
	const char *end = sizes ? sizes + len : p + strlen(p);

	if (!sizes)
		sep = ' ';
	while (p < end) {
		size_t n = strcspn(p, sep == ' ' ? " " : "/,");
		uint64_t v;

		if (n > (size_t)(end - p))
			n = (size_t)(end - p);
		if (b->nitems == MAX_ITEMS)
			return cli_error(EXIT_USAGE, "bench: too many kernel sizes (at most %d)", MAX_ITEMS);
		if (n == 0 || n >= sizeof names[0])
			return cli_error(EXIT_USAGE, "bench: bad size '%.*s' for %s", (int)n, p, k->name);
		snprintf(names[b->nitems], sizeof names[0], "%.*s", (int)n, p);
		if (sp_parse_size(names[b->nitems], &v) < 0 || v == 0)
			return cli_error(EXIT_USAGE, "bench: bad size '%s' for %s (a number, or bytes "
					 "with K, M or G)", names[b->nitems], k->name);
		b->items[b->nitems].k = k;
		b->items[b->nitems].size = names[b->nitems];
		b->items[b->nitems].bytes = est_bytes(k, v);
		snprintf(b->items[b->nitems].dec, sizeof b->items[0].dec, "%llu", (unsigned long long)v);
		b->nitems++;
		p += n;
		while (p < end && *p == sep)
			p++;
	}
	return 0;
}

static int parse_kernels(struct bench *b, const char *list)
{
	const char *p = list;
	int rc;

	if (!*list)
		return cli_error(EXIT_USAGE, "bench: --kernel needs a list of kernels");
	while (*p) {
		/* K, or K=SIZE/SIZE/...: the kernel at the sizes given. */
		size_t n = strcspn(p, ","), kn = strcspn(p, ",=");
		const struct kernel_spec *k = find_kernel(p, kn);

		if (!k)
			return cli_error(EXIT_USAGE, "bench: unknown kernel '%.*s' (see superpage bench --help)",
					 (int)kn, p);
		for (int i = 0; i < b->nitems; i++)
			if (b->items[i].k == k)
				return cli_error(EXIT_USAGE, "bench: kernel %s is named twice", k->name);
		if (kn < n && p[kn] == '=')
			rc = plan_kernel(b, k, p + kn + 1, n - kn - 1, '/');
		else
			rc = plan_kernel(b, k, NULL, 0, ' ');
		if (rc)
			return rc;
		p += n;
		if (*p && !*++p)
			return cli_error(EXIT_USAGE, "bench: --kernel list ends in ','");
	}
	return 0;
}

static int parse_backings(struct bench *b, const char *list)
{
	const char *p = list;
	enum sp_backing bk;
	char one[16];

	if (!*list)
		return cli_error(EXIT_USAGE, "bench: --backing needs a list of backings");
	add_variant(b, "4k", HOW_RUN, "4k");
	while (*p) {
		size_t n = strcspn(p, ",");

		snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
		if (n >= sizeof one || sp_backing_parse(one, &bk) < 0)
			return cli_error(EXIT_USAGE, "bench: bad backing '%.*s' (4k, auto, thp, 2m or 1g)",
					 (int)n, p);
		add_variant(b, sp_backing_name(bk), HOW_RUN, sp_backing_name(bk));
		p += n;
		if (*p)
			p++;
	}
	return 0;
}

static int parse_options(struct bench *b, int argc, char **argv)
{
	const char *kernels = NULL, *backings = NULL, *v;
	int m, rc, repeat = 0;

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
			b->json = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--csv", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			b->csv = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--svg", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			b->svg = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--kernels", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			b->kdir_opt = v;
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
	if ((rc = parse_backings(b, backings)))
		return rc;
	if (b->allow_sysfs && !b->peers)
		return cli_error(EXIT_USAGE, "bench: --allow-sysfs goes with --peers (it adds thp-always)");
	if (b->peers)
		add_peers(b);
	if (kernels)
		return parse_kernels(b, kernels);
	for (size_t i = 0; i < N_KERNELS; i++)
		if ((!b->quick || kernel_specs[i].quick) &&
		    (rc = plan_kernel(b, &kernel_specs[i], NULL, 0, ' ')))
			return rc;
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
static int find_dirs(struct bench *b)
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
	if (b->kdir_opt) {
		if (!realpath(b->kdir_opt, b->kdir) || !is_dir(b->kdir))
			return cli_error(EXIT_USAGE, "bench: --kernels %s is not a directory", b->kdir_opt);
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
		struct variant *v = &b->var[i];

		if (v->how == HOW_IDEAL && !b->idir[0]) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "no ideal builds beside the kernels (make kernels)");
		}
	}
	return 0;
}

/* ---------- pools: sized for the runs, put back at the end, also on a signal ---------- */

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
static volatile pid_t running_child;
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
	pid_t c = running_child;

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

static void restore_pools(void)
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
				cli_warn("bench: could not put the %s pool back to %ld (now %ld)",
					 pools[i].name, pools[i].old_total, now.total);
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

static void setup_pools(struct bench *b)
{
	uint64_t need2m = 0, need1g = 0;

	if (geteuid() != 0) {
		fprintf(stderr, "bench: --setup-pools needs root; using the pools as they are\n");
		return;
	}
	for (int i = 0; i < b->nitems; i++) {
		if (b->items[i].bytes > need2m)
			need2m = b->items[i].bytes;
		if (b->items[i].bytes >= GIB && b->items[i].bytes > need1g)
			need1g = b->items[i].bytes;
	}
	install_signals();
	/* 1 GiB pages first: they need contiguous memory that 2 MiB ones would split. */
	if (wants(b, "1g") || wants(b, "ideal-1g"))
		raise_pool(1, (long)((need1g + GIB - 1) / GIB));
	if (wants(b, "2m") || wants(b, "1g") || wants(b, "ideal-2m") || wants(b, "ideal-1g"))
		raise_pool(0, (long)((need2m + 2 * MIB - 1) / (2 * MIB)) + 64);
}

/* THP's "enabled" and "defrag" modes, "?" where they cannot be read. */
static void read_thp_modes(char *enabled, char *defrag, size_t len)
{
	struct sp_offer o;

	sp_offer_get(SP_OFFER_THP, &o);
	snprintf(enabled, len, "%.*s", (int)len - 1, o.thp.enabled[0] ? o.thp.enabled : "?");
	snprintf(defrag, len, "%.*s", (int)len - 1, o.thp.defrag[0] ? o.thp.defrag : "?");
}

/* Backings that cannot be had here are skipped, with the reason. */
static void check_offer(struct bench *b)
{
	char thp[16], defrag[16];

	read_thp_modes(thp, defrag, sizeof thp);
	for (int i = 0; i < b->nvar; i++) {
		struct variant *v = &b->var[i];
		struct sp_pool p;
		uint64_t ps;

		if (v->skip || !v->backing)
			continue;
		if (!strcmp(v->backing, "thp") && !strcmp(thp, "never")) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "THP is 'never' on this machine");
			continue;
		}
		if (strcmp(v->backing, "2m") && strcmp(v->backing, "1g"))
			continue;
		/* A 1g run without free 1 GiB pages would be a 2m run: no result for 1g. */
		ps = !strcmp(v->backing, "1g") ? GIB : 2 * MIB;
		if (sp_pool_get(ps, -1, &p) < 0 || p.free - p.reserved <= 0) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "no free %s pages (superpage pool, or --setup-pools as root)",
				 ps == GIB ? "1 GiB" : "2 MiB");
		}
	}
}

/* THP "always" for a thp-always run; put back by thp_put_back (or the signal
 * handler). False, with the reason in v->why, if it cannot be set. The mode is saved
 * once, before the first such run: what a later run finds may be the first's. */
static bool thp_always(struct variant *v)
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

static void thp_put_back(void)
{
	sigset_t set, old;
	int e;

	sigemptyset(&set);
	for (int i = 0; i < N_FATAL; i++)
		sigaddset(&set, fatal_signals[i]);
	sigprocmask(SIG_BLOCK, &set, &old);
	if ((e = sp_setting_restore(&thp_saved)) < 0)
		cli_warn("bench: could not put THP 'enabled' back to %s: %s", thp_saved.old,
			 strerror(-e));
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* ---------- running one kernel ---------- */

struct run_out {
	struct bench_line lines[8];
	int nlines;
	struct bench_memory mem;
	bool have_mem;
	long minflt;
	int status;       /* the wait status */
	bool timed_out;
	char err[256];    /* the last lines of its stderr */
};

/* Fills argv/envp for item under variant v. */
static void build_command(const struct bench *b, const struct plan_item *it, const struct variant *v,
			  char *prog, size_t plen, char **argv, int *argc)
{
	int n = 0;

	snprintf(prog, plen, "%s/%s", v->how == HOW_IDEAL ? b->idir : b->kdir, it->k->name);
	if (v->how == HOW_RUN) {
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

static void child_env(const struct variant *v)
{
	setenv("BENCH_SMAPS", "1", 1);
	unsetenv("GLIBC_TUNABLES");
	if (v->how == HOW_IDEAL)
		setenv("BENCH_IDEAL", v->backing, 1);
	for (int i = 0; i < 4 && v->env[i]; i++)
		putenv((char *)v->env[i]);
	if (v->lib[0])
		setenv("LD_PRELOAD", v->lib, 1);
}

/* Reads the kernel's stdout line by line into o, until EOF or the time limit. */
static void read_output(int fd, struct run_out *o)
{
	char buf[4096];
	size_t len = 0;
	double deadline = now_s() + RUN_TIMEOUT_S;

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
			    bench_parse_result(buf, &o->lines[o->nlines]) == 1)
				o->nlines++;
			else if (bench_parse_memory(buf, &o->mem) == 1)
				o->have_mem = true;
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

static void run_kernel(const struct bench *b, const struct plan_item *it, const struct variant *v,
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
	running_child = pid;
	read_output(pipefd[0], o);
	close(pipefd[0]);
	if (o->timed_out)
		kill(pid, SIGKILL);
	while (wait4(pid, &o->status, 0, &ru) < 0 && errno == EINTR)
		;
	running_child = 0;
	o->minflt = ru.ru_minflt;
	read_err_tail(errfd, o->err, sizeof o->err);
	close(errfd);
}

/* ---------- did the run get what it asked for ---------- */

/* The share of the data on the pages variant v asked for, and whether that makes the
 * run a result for v. why says what was missing. */
static bool judge(const struct variant *v, const struct bench_memory *m, double *cov,
		  double *wanted, char *why, size_t len)
{
	double data = m->data ? (double)m->data : 1;
	double huge = (double)(m->thp + m->tlb2m + m->tlb1g) / data;
	const char *b = v->backing ? v->backing : "";

	*cov = huge > 1 ? 1 : huge;
	why[0] = 0;
	if (v->how == HOW_PEER || v->how == HOW_SYSFS) {
		*wanted = *cov;
		return true;
	}
	if (!strcmp(b, "4k")) {
		*wanted = 1 - *cov;
		if (*cov < 0.01)
			return true;
		snprintf(why, len, "%.0f%% of the data on huge pages", 100 * *cov);
		return false;
	}
	if (!strcmp(b, "auto")) {
		*wanted = *cov;
		/* auto keeps a heap below 64 MiB on base pages, by design (superpage-run(7)). */
		if (*cov >= 0.9 || m->data < 64 * MIB)
			return true;
		snprintf(why, len, "only %.0f%% of %llu MiB of data on huge pages", 100 * *cov,
			 (unsigned long long)(m->data / MIB));
		return false;
	}
	if (!strcmp(b, "thp")) {
		*wanted = (double)m->thp / data;
		if (*wanted >= 0.9)
			return true;
		snprintf(why, len, "%.0f%% of the data on THP", 100 * *wanted);
		return false;
	}
	if (!strcmp(b, "2m")) {
		*wanted = (double)m->tlb2m / data;
		if (*wanted >= 0.9)
			return true;
		snprintf(why, len, "%.0f%% of the data on 2M hugetlb pages (THP %.0f%%)",
			 100 * *wanted, 100.0 * (double)m->thp / data);
		return false;
	}
	/* 1g: 1 GiB pages for the whole GiBs of each array, 2 MiB hugetlb pages for the
	 * rest (DESIGN.md); the kernel says how large its largest array is. */
	*wanted = (double)(m->tlb1g + m->tlb2m) / data;
	if (*wanted >= 0.9 && m->tlb1g >= m->largest / GIB * GIB)
		return true;
	snprintf(why, len, "%.0f%% of the data on 1G pages, %.0f%% on 2M hugetlb pages",
		 100.0 * (double)m->tlb1g / data, 100.0 * (double)m->tlb2m / data);
	return false;
}

/* ---------- rows ---------- */

static struct bench_row *find_row(struct bench *b, const char *name, const char *size,
				  const char *backing)
{
	struct bench_row *r;

	for (int i = 0; i < b->nrows; i++) {
		r = &b->rows[i];
		if (!strcmp(r->name, name) && !strcmp(r->size, size) && !strcmp(r->backing, backing))
			return r;
	}
	if (b->nrows == MAX_ROWS)
		return NULL;
	r = &b->rows[b->nrows++];
	memset(r, 0, sizeof *r);
	snprintf(r->name, sizeof r->name, "%s", name);
	snprintf(r->size, sizeof r->size, "%s", size);
	snprintf(r->backing, sizeof r->backing, "%s", backing);
	r->valid = true;
	r->coverage = r->cov_wanted = 2; /* lowered by the first run */
	return r;
}

static void row_invalid(struct bench_row *r, const char *why)
{
	if (r->valid || !r->why[0])
		snprintf(r->why, sizeof r->why, "%s", why);
	r->valid = false;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* The kernel's size as its result line prints it, for rows named by its output. */
static void record(struct bench *b, const struct plan_item *it, const struct variant *v,
		   const struct run_out *o, long (*minflts)[BENCH_MAX_REPEAT])
{
	char why[160];
	double cov = 0, wanted = 0;
	bool ok_backing = true, crashed;

	crashed = o->status < 0 || o->timed_out || !WIFEXITED(o->status) ||
		  (WEXITSTATUS(o->status) != 0 && WEXITSTATUS(o->status) != 1);
	if (crashed || o->nlines == 0) {
		struct bench_row *r = find_row(b, it->k->name, it->dec, v->name);

		if (o->timed_out)
			snprintf(why, sizeof why, "timed out after %d s", RUN_TIMEOUT_S);
		else if (o->status >= 0 && WIFSIGNALED(o->status))
			snprintf(why, sizeof why, "died of signal %d; %s", WTERMSIG(o->status), o->err);
		else if (o->status >= 0 && WIFEXITED(o->status) && WEXITSTATUS(o->status) == 3)
			snprintf(why, sizeof why, "backing not available: %s", o->err);
		else
			snprintf(why, sizeof why, "exit %d, no result; %s",
				 o->status >= 0 && WIFEXITED(o->status) ? WEXITSTATUS(o->status) : -1, o->err);
		if (r)
			row_invalid(r, why);
		/* A missing backing is a skip; anything else is a failure of the kernel. */
		if (!(o->status >= 0 && WIFEXITED(o->status) && WEXITSTATUS(o->status) == 3))
			b->failures++;
		return;
	}
	if (o->have_mem) {
		if (it->k->text)
			ok_backing = bench_judge_text(v->how == HOW_RUN ? v->backing : NULL, &o->mem,
						      &cov, &wanted, why, sizeof why);
		else
			ok_backing = judge(v, &o->mem, &cov, &wanted, why, sizeof why);
		if (it->k->allocator)
			ok_backing = true;
	} else
		snprintf(why, sizeof why, "the kernel did not say what memory it had");
	for (int i = 0; i < o->nlines; i++) {
		const struct bench_line *l = &o->lines[i];
		struct bench_row *r;

		r = find_row(b, l->name, it->dec, v->name);
		if (!r)
			continue;
		snprintf(r->unit, sizeof r->unit, "%s", l->unit);
		if (r->n < BENCH_MAX_REPEAT) {
			r->runs_s[r->n] = l->seconds;
			r->metric[r->n] = l->metric;
			minflts[r - b->rows][r->n] = o->minflt;
			r->n++;
		}
		if (!l->ok) {
			r->check_failed = true;
			b->failures++;
		}
		if (!o->have_mem) {
			row_invalid(r, why);
			continue;
		}
		if (cov < r->coverage)
			r->coverage = cov;
		if (wanted < r->cov_wanted)
			r->cov_wanted = wanted;
		if (!ok_backing)
			row_invalid(r, why);
	}
}

/* Why kernel k is not run under v: a reason, "" if it gets no row at all (there is no
 * ideal build of a text kernel), or NULL if it is run. */
static const char *not_for(const struct kernel_spec *k, const struct variant *v)
{
	if (k->text && v->how == HOW_IDEAL)
		return "";
	if (k->text && v->how == HOW_RUN && !strcmp(v->backing, "1g"))
		return "text is not put on 1 GiB pages";
	return NULL;
}

/* A skipped backing gets a row, with the reason, beside each case the item printed. */
static void mark_skipped(struct bench *b, const struct plan_item *it)
{
	size_t kn = strlen(it->k->name);
	int rows = b->nrows;

	for (int k = 0; k < b->nvar; k++) {
		const char *why = not_for(it->k, &b->var[k]);

		if (!why)
			why = b->var[k].skip ? b->var[k].why : NULL;
		if (!why || !why[0])
			continue;
		for (int i = 0; i < rows; i++) {
			const struct bench_row *c = &b->rows[i];
			struct bench_row *r;

			if (strcmp(c->backing, "4k") || strcmp(c->size, it->dec) ||
			    strncmp(c->name, it->k->name, kn) || (c->name[kn] && c->name[kn] != '/'))
				continue;
			r = find_row(b, c->name, it->dec, b->var[k].name);
			if (r)
				row_invalid(r, why);
		}
	}
}

/* ---------- the machine ---------- */

static void read_machine(const struct bench *b, struct bench_machine *m)
{
	struct bench_cpu c;
	struct utsname u;
	struct sp_pool p;
	time_t t = time(NULL);
	struct tm tm;

	memset(m, 0, sizeof *m);
	bench_cpu_probe(&c);
	snprintf(m->cpu, sizeof m->cpu, "%s", c.model);
	m->cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	m->l1d = c.l1d;
	m->l2 = c.l2;
	m->l3 = c.l3;
	m->dtlb_4k = c.dtlb_4k;
	m->dtlb_2m = c.dtlb_2m;
	m->dtlb_1g = c.dtlb_1g;
	m->stlb_4k = c.stlb_4k;
	m->stlb_2m = c.stlb_2m;
	m->stlb_1g = c.stlb_1g;
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof m->kernel, "%.16s %.80s %.16s", u.sysname, u.release, u.machine);
	read_thp_modes(m->thp_enabled, m->thp_defrag, sizeof m->thp_enabled);
	m->pool_2m_total = m->pool_2m_free = m->pool_1g_total = m->pool_1g_free = -1;
	if (sp_pool_get(2 * MIB, -1, &p) == 0) {
		m->pool_2m_total = p.total;
		m->pool_2m_free = p.free;
	}
	if (sp_pool_get(GIB, -1, &p) == 0) {
		m->pool_1g_total = p.total;
		m->pool_1g_free = p.free;
	}
	gmtime_r(&t, &tm);
	strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
	m->quick = b->quick;
	m->repeat = b->repeat;
}

/* ---------- the rounds ---------- */

static void progress(struct bench *b, const struct plan_item *it, const struct variant *v, int round)
{
	double per = b->runs_done ? b->run_seconds / b->runs_done : 0;
	int left = (int)(per * (b->runs_total - b->runs_done));

	fprintf(stderr, "bench: %-8s %-6s %-14s round %d/%d", it->k->name, it->size, v->name, round + 1,
		b->repeat);
	if (b->runs_done)
		fprintf(stderr, "  (about %dm%02ds left)", left / 60, left % 60);
	fputc('\n', stderr);
}

/* Touches `bytes` of fresh memory (THP where it can, to be quick) and gives it back,
 * so the run that follows gets memory the host really backs. A guest that reports its
 * free memory to the host (virtio-balloon free page reporting: this one does, 2 s
 * after a free) has it taken back, and the next fault of it is the host's too: here
 * 1 GiB under auto faulted in 1.5-2.8 s after a 4 s pause against 0.1 s right after
 * another run's exit, and a run's predecessor decided which it got. Pages freed just
 * now are the first the allocator hands out again. One pass after a pause still left
 * 0.1-0.7 s, a second pass 0.10-0.21 s: so two. At most half the free memory. */
static void warm_memory(uint64_t bytes)
{
	struct sysinfo si;

	if (sysinfo(&si) == 0 && bytes > (uint64_t)si.freeram * si.mem_unit / 2)
		bytes = (uint64_t)si.freeram * si.mem_unit / 2;
	bytes &= ~(2 * MIB - 1);
	for (int pass = 0; bytes && pass < 2; pass++) {
		char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			return;
		madvise(p, bytes, MADV_HUGEPAGE);
		for (uint64_t off = 0; off < bytes; off += 4096)
			p[off] = 1;
		munmap(p, bytes);
	}
}

/* The same for the pools' free pages, once before the rounds: a pool page is backed
 * by the host from its first use on (a freed hugetlb page stays in the pool, unreported),
 * so without this the first 2m and 1g runs alone pay the host's faults. */
static void warm_pools(void)
{
	static const struct { uint64_t size; int shift; } sizes[] = { { 2 * MIB, 21 }, { GIB, 30 } };

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct sp_pool p;
		uint64_t bytes;
		char *m;

		if (sp_pool_get(sizes[i].size, -1, &p) < 0)
			continue;
		if (p.reserved > 0)
			p.free -= p.reserved; /* promised to mappings already made */
		if (p.free <= 0)
			continue;
		bytes = (uint64_t)p.free * sizes[i].size;
		m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (sizes[i].shift << MAP_HUGE_SHIFT),
			 -1, 0);
		if (m == MAP_FAILED)
			continue;
		for (uint64_t off = 0; off < bytes; off += sizes[i].size)
			m[off] = 1;
		munmap(m, bytes);
	}
}

static int write_file(const char *path, const char *what, struct bench *b,
		      const struct bench_machine *m, const char *const *names, int nb)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return cli_error(EXIT_FAIL, "bench: cannot write %s: %s", path, strerror(errno));
	if (!strcmp(what, "json"))
		bench_write_json(f, m, b->rows, b->nrows);
	else if (!strcmp(what, "csv"))
		bench_write_csv(f, b->rows, b->nrows);
	else
		bench_write_svg(f, m, b->rows, b->nrows, names, nb);
	if (fclose(f) != 0)
		return cli_error(EXIT_FAIL, "bench: cannot write %s: %s", path, strerror(errno));
	return 0;
}

int cmd_bench(int argc, char **argv)
{
	static struct bench b;
	static struct bench_row rows[MAX_ROWS];
	static long minflts[MAX_ROWS][BENCH_MAX_REPEAT];
	struct bench_machine m;
	const char *names[MAX_BACKINGS];
	int rc, nb = 0, runnable = 0;

	memset(&b, 0, sizeof b);
	b.rows = rows;
	if ((rc = parse_options(&b, argc, argv)))
		return rc;
	if ((rc = find_dirs(&b)))
		return rc;
	if (b.setup_pools)
		setup_pools(&b);
	check_offer(&b);
	for (int i = 0; i < b.nvar; i++) {
		names[nb++] = b.var[i].name;
		if (b.var[i].skip)
			fprintf(stderr, "bench: skipping %s: %s\n", b.var[i].name, b.var[i].why);
		else
			runnable++;
	}
	b.runs_total = b.nitems * b.repeat * runnable;
	b.started = now_s();
	warm_pools();
	for (int i = 0; i < b.nitems; i++) {
		const struct plan_item *it = &b.items[i];

		for (int round = 0; round < b.repeat; round++) {
			/* The rows of a balanced Latin square: over the rounds every
			 * backing runs first, and right after each other one, equally
			 * often, so what a run leaves behind weighs on no backing more
			 * than on another. */
			int order[MAX_BACKINGS];

			bench_round_order(b.nvar, round, order);
			for (int k = 0; k < b.nvar; k++) {
				struct variant *v = &b.var[order[k]];
				struct run_out o;
				double t0;

				if (v->skip || (v->how == HOW_IDEAL && it->k->allocator) ||
				    not_for(it->k, v))
					continue;
				if (v->how == HOW_SYSFS && !thp_always(v)) {
					v->skip = true;
					continue;
				}
				progress(&b, it, v, round);
				t0 = now_s();
				warm_memory(it->bytes);
				run_kernel(&b, it, v, &o);
				if (v->how == HOW_SYSFS)
					thp_put_back();
				b.run_seconds += now_s() - t0;
				b.runs_done++;
				record(&b, it, v, &o, minflts);
			}
		}
		mark_skipped(&b, it);
	}
	for (int i = 0; i < b.nrows; i++) {
		struct bench_row *r = &b.rows[i];

		if (r->coverage > 1)
			r->coverage = r->cov_wanted = 0;
		if (r->n) {
			qsort(minflts[i], (size_t)r->n, sizeof minflts[i][0], cmp_long);
			r->minflt = (uint64_t)minflts[i][r->n / 2];
		}
	}
	bench_finish(b.rows, b.nrows);
	read_machine(&b, &m);
	restore_pools();
	bench_write_table(stdout, &m, b.rows, b.nrows, names, nb);
	if (b.json && (rc = write_file(b.json, "json", &b, &m, names, nb)))
		return rc;
	if (b.csv && (rc = write_file(b.csv, "csv", &b, &m, names, nb)))
		return rc;
	if (b.svg && (rc = write_file(b.svg, "svg", &b, &m, names, nb)))
		return rc;
	fprintf(stderr, "bench: %d runs in %.0f s\n", b.runs_done, now_s() - b.started);
	if (b.failures)
		return cli_error(EXIT_FAIL, "bench: %d run(s) crashed or failed their own check (see the notes)",
				 b.failures);
	return EXIT_OK;
}
