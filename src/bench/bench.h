/* bench.h - superpage bench as a part: the kernels, the plan, the runs, their results,
 * and the writers (text table, JSON, CSV, SVG); what the command and the tests use. */
#ifndef SP_BENCH_H
#define SP_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#define BENCH_MAX_REPEAT 50
#define BENCH_NAME_LEN 48

/* One result line of a kernel ("result name=... size=... seconds=... metric=... unit=...
 * check=ok|FAIL") or its memory line ("memory data_bytes=... thp_bytes=..."). */
struct bench_line {
	char name[BENCH_NAME_LEN];
	char unit[16];
	uint64_t size;
	double seconds, metric;
	bool ok;
};
struct bench_memory {
	uint64_t data, thp, tlb2m, tlb1g; /* bytes */
	uint64_t largest;                 /* the largest array, 0 if not said */
	uint64_t text, text_huge, text_hugetlb; /* its own code, resident; 0 if not said */
};
/* 1 and *out set if line is a result line, 0 if it is some other line, -1 if it starts
 * like one but is malformed. */
int bench_parse_result(const char *line, struct bench_line *out);
/* 1 if line is a memory line (and *out set), 0 if not, -1 if malformed. */
int bench_parse_memory(const char *line, struct bench_memory *out);
/* Whether a run of a kernel that is about its code (itlb) got, for its text, the pages
 * `backing` asks for ("4k", "auto", "thp", "2m"; NULL for a peer, which asks nothing).
 * *cov: the share of its text on huge pages; *wanted: the share on the pages asked
 * for (for 4k, on base pages); why: what was missing. */
bool bench_judge_text(const char *backing, const struct bench_memory *m, double *cov,
		      double *wanted, char *why, size_t len);

/* The order of n backings (indices 0..n-1) in round `round` (0, 1, ...), into order[n]:
 * a balanced Latin square (Williams design), so that over the rounds each backing runs
 * first, and right after each other one, equally often: a run's speed can depend on
 * what the run before it left behind. */
void bench_round_order(int n, int round, int *order);

/* The median of n values (the mean of the middle two for even n); v is sorted. */
double bench_median(double *v, int n);

/* One (case, size, backing): every round's figures and what the runs got. */
struct bench_row {
	char name[BENCH_NAME_LEN];  /* the kernel's case: "gups", "mem2/brk-stride" */
	char size[24];              /* as the kernel printed it */
	char backing[24];           /* "4k", "auto", "2m", "ideal-2m", "mimalloc", ... */
	char unit[16];
	double runs_s[BENCH_MAX_REPEAT];
	double metric[BENCH_MAX_REPEAT];
	int n;                      /* rounds that produced a figure */
	double coverage;            /* smallest share of the data on huge pages over the runs */
	double cov_wanted;          /* smallest share on the pages the backing asked for */
	uint64_t minflt;            /* median minor faults of the process */
	bool check_failed;          /* a run's own check failed */
	bool valid;                 /* every run got the backing it asked for */
	char why[96];               /* why not valid, or why there is no figure */
	/* filled by bench_finish: */
	double median_s, best_s, median_metric, best_metric, speedup; /* speedup 0: none */
	double spread;              /* slowest run's time / fastest's; NAN without runs */
	bool higher_is_better;      /* from the unit: MB/s yes, ns/load no */
};

struct bench_machine {
	char cpu[64], kernel[128];
	unsigned cpus;
	uint64_t l1d, l2, l3;
	unsigned dtlb_4k, dtlb_2m, dtlb_1g, stlb_4k, stlb_2m, stlb_1g;
	char thp_enabled[16], thp_defrag[16];
	long pool_2m_total, pool_2m_free, pool_1g_total, pool_1g_free; /* -1: none */
	char date[32];
	bool quick;
	int repeat;
	char baseline[16];     /* what the speedups are against: "" is "4k"; "plain" for a
	                          user's command */
};

/* A row whose slowest run took more than this times its fastest is not steady: the
 * machine did not run the same work at one speed, and the table says so. */
#define BENCH_UNSTEADY 1.5

/* Medians, bests, spreads, and speedups against the "4k" row of the same case and size. */
void bench_finish(struct bench_row *rows, int n);
/* Whether a row with runs was not steady (its spread is over BENCH_UNSTEADY). */
bool bench_unsteady(const struct bench_row *r);

void bench_write_table(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		       int n, const char *const *backings, int nb);
void bench_write_json(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		      int n);
void bench_write_csv(FILE *f, const struct bench_row *rows, int n);
void bench_write_svg(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		     int n, const char *const *backings, int nb);


/* ---------- the kernels: every fact of one in one row (kernels.c) ---------- */

/* How a kernel's --size turns into bytes of data. */
enum bench_est { BENCH_EST_BYTES, BENCH_EST_MATRIX, BENCH_EST_POINTS, BENCH_EST_GRID,
		 BENCH_EST_HEAP };
/* How it goes through its pages: what the table's "why" says of it. */
enum bench_walk { BENCH_WALK_STREAM, BENCH_WALK_RANDOM, BENCH_WALK_COLUMNS };

struct bench_kernel {
	const char *name;
	const char *sizes;     /* --size values of a full run, space-separated */
	const char *quick;     /* of --quick; NULL: not in --quick unless named */
	enum bench_est est;    /* how --size turns into bytes of data */
	unsigned mult;         /* data = mult x that */
	bool allocator;        /* measures malloc itself: its few MiB of heap are not what it
	                          is about, so every run is a result, and it has no ideal */
	bool text;             /* is about its code: run with superpage run --text, judged by
	                          the pages of its text, not its data; no ideal (sp_alloc has
	                          no text), no 1g (text is not put on 1 GiB pages) */
	bool x86_64;           /* built on x86-64 only */
	bool promote;          /* prints a result, then runs on until the promote variant
	                          has promoted it (SIGUSR1), then the same work again: the
	                          only kernel the promote variant runs */
	enum bench_walk walk;  /* its size is a matrix order n and it walks columns (n pages
	                          of 4K), or it goes to random pages, or it streams */
	bool curve;            /* its rows make the SVG's working-set curve (time per load
	                          against size) */
	bool forks;            /* forks while its threads allocate: its data is malloc's heap
	                          (no ideal), shared with each child copy on write, so the
	                          pools need as many pages free again (src/runtime/fork.c);
	                          from 2G on half of it is one array in whole GiBs, the part
	                          1 GiB pages can take */
	const char *about;     /* what it does, for a reader without the source */
};

/* A kernel that runs here, by the first n bytes of name; NULL if none. */
const struct bench_kernel *bench_kernel_find(const char *name, size_t n);
/* The kernel of a case ("mem2" of "mem2/brk-stride"), built here or not; NULL if none. */
const struct bench_kernel *bench_kernel_of(const char *case_name);
/* The kernels that run here, in the table's order: the i-th, NULL past the last. */
const struct bench_kernel *bench_kernel_at(int i);
/* Bytes of data k has at this size. */
uint64_t bench_kernel_bytes(const struct bench_kernel *k, uint64_t size);
/* Pool pages of page bytes (2 MiB or 1 GiB) a run of k at this size may take: its data
 * (of 1 GiB pages, what of it is that large), twice over for a kernel that forks. */
uint64_t bench_kernel_pool_pages(const struct bench_kernel *k, uint64_t size, uint64_t page);

/* ---------- the plan: the ways to run a kernel, and the kernels' sizes (plan.c) ---------- */

#define BENCH_MAX_VARIANTS 16
#define BENCH_MAX_ITEMS 64
#define BENCH_MAX_ROWS 1024
#define BENCH_RUN_TIMEOUT_S 900

/* PROMOTE: the kernel run plain (THP as the machine has it, no advice), promoted with
 * sp_promote once it has printed its first result line, then told so with SIGUSR1. */
enum bench_how { BENCH_HOW_RUN, BENCH_HOW_IDEAL, BENCH_HOW_PEER, BENCH_HOW_SYSFS, BENCH_HOW_PROMOTE };

struct bench_variant {
	char name[24];
	enum bench_how how;
	const char *backing;   /* RUN: superpage run --backing; IDEAL: BENCH_IDEAL */
	const char *env[4];    /* PEER: NAME=VALUE settings */
	char lib[PATH_MAX];    /* PEER: the library to preload, "" for none */
	bool skip;
	char why[96];          /* why it is skipped */
};

struct bench_item {
	const struct bench_kernel *k;
	const char *size;      /* as given to --size */
	char dec[24];          /* the same in decimal: the rows' size, as the kernels print it */
	uint64_t value;        /* the same as a number */
	uint64_t bytes;        /* bench_kernel_bytes */
};

/* A whole run of superpage bench: the plan (filled by the command), then the results. */
struct bench {
	struct bench_variant var[BENCH_MAX_VARIANTS];
	int nvar;
	struct bench_item items[BENCH_MAX_ITEMS];
	int nitems;
	int repeat;
	bool quick, peers, setup_pools, allow_sysfs;
	char exe[PATH_MAX], kdir[PATH_MAX], idir[PATH_MAX]; /* superpage, kernels, ideal builds */
	/* filled by bench_run: */
	struct bench_row *rows;
	int nrows;
	const char *names[BENCH_MAX_VARIANTS]; /* every variant's name, the table's columns */
	int nnames;
	struct bench_machine machine;
	int failures;          /* runs that crashed or failed their check */
	double started, run_seconds; /* time spent in runs, for the estimate */
	double seconds;        /* the whole run */
	int runs_done, runs_total;
	bool command;          /* a user's command (bench -- CMD): no ideal builds, no 4k
	                          added, the baseline is the variant "plain" */
};

/* Each returns 0, or -1 with a one-line reason in err. */
/* "4k" and the backings of a list ("auto,2m"). */
int bench_plan_backings(struct bench *b, const char *list, char *err, size_t len);
/* The kernels of a list: K, or K=SIZE/SIZE/... for those --size values only. */
int bench_plan_kernels(struct bench *b, const char *list, char *err, size_t len);
/* Every kernel that runs here (with --quick, those that have quick sizes). */
int bench_plan_all(struct bench *b, char *err, size_t len);
/* The promote variant, when a kernel of the plan is one to promote (its only runs). */
void bench_plan_promote(struct bench *b);
/* The peers: glibc's hugetlb tunables, mimalloc, jemalloc, the ideal builds, the
 * system's THP "always". */
void bench_plan_peers(struct bench *b);

/* ---------- the runs (runner.c) ---------- */

/* Runs the plan: sets up the pools (setup_pools), skips what cannot be had, runs the
 * rounds, and fills rows, names and machine; puts the pools back. Progress on stderr. */
void bench_run(struct bench *b);

/* ---------- a user's command, plain and under each variant (command.c, cmd_stats.c,
 * write_cmd.c) ---------- */

/* One run of the command. */
struct bench_cmd_run {
	double wall, user, sys;     /* seconds */
	double metric;              /* its own figure (--metric); NAN without one */
	uint64_t maxrss;            /* bytes: wait4's ru_maxrss, or the largest sample of Rss
	                               plus hugetlb if larger (hugetlb is not in ru_maxrss) */
	uint64_t anon, huge;        /* at the sample with the most anonymous memory: its
	                               Anonymous + hugetlb, and AnonHugePages + hugetlb */
	bool sampled;               /* smaps_rollup was read while it ran */
	long minflt, majflt;
	int status;                 /* the wait status */
	bool failed;                /* it exited non-zero, died, or printed no figure */
	bool differs;               /* its stdout differed from plain's first run's */
	int round;                  /* the round it ran in (0, 1, ...) */
	char why[160];              /* what went wrong */
};

/* A ratio against the baseline (plain) over the rounds both ran well: the geometric mean of the
 * rounds' ratios (above 1: better than plain) and its 95% confidence interval. */
struct bench_ratio {
	int n;                      /* paired rounds */
	double ratio, lo, hi;       /* NAN where there is none (lo, hi: fewer than 2 pairs) */
};

struct bench_cmd_variant {
	struct bench_cmd_run run[BENCH_MAX_REPEAT];
	int n;                      /* runs made (one per round it ran in) */
	int good;                   /* runs that did not fail */
	struct bench_ratio speed;   /* by wall time, or by the metric when there is one */
	double huge_share;          /* median share of its anonymous memory on huge pages;
	                               NAN: never sampled */
	double rss_ratio;           /* median peak RSS / plain's; NAN: none */
	char verdict[256];
};

#define BENCH_CMD_MAX_ARGS 256

struct bench_cmd {
	char **argv;                /* the command and its arguments */
	char label[BENCH_NAME_LEN]; /* its name, for rows: the file name of argv[0] */
	const char *output;         /* where its output goes (--output FILE); NULL: /dev/null */
	const char *metric_src;     /* --metric REGEX, NULL: none */
	void *metric_re, *ignore_re; /* compiled (regex_t *) */
	const char *ignore_src;     /* --ignore REGEX */
	bool metric_higher;         /* the figure is better when higher (the default) */
	double max_time;            /* --max-time seconds, 0: none */
	struct bench_cmd_variant v[BENCH_MAX_VARIANTS];
	const char *baseline;       /* what the ratios are against (--baseline): a variant's
	                               name; NULL: plain */
	int base;                   /* its index among the variants */
	int rounds;                 /* rounds run */
	char stopped[160];          /* why the rounds ended */
	bool have_ref;              /* plain's first run's stdout, kept to compare with */
	uint64_t ref_hash, ref_len;
	int failures, differs;      /* runs that failed, runs whose stdout differed */
};

/* The variants of a command: "plain" (the program as it is), the backings of the list
 * ("auto,2m"), and with b->peers the peers (no ideal builds). */
int bench_plan_command(struct bench *b, const char *backings, char *err, size_t len);
/* Runs the command's rounds: variants alternating in every round, the pools sized from
 * plain's first run (setup_pools), early stop when every ratio is clear or at
 * max_time; fills c and b->rows, names, machine; puts the pools back. */
void bench_cmd_run(struct bench *b, struct bench_cmd *c);
/* What is measured of each run, for the table and the JSON. */
enum bench_measure { BM_WALL, BM_USER, BM_SYS, BM_MAXRSS, BM_HUGE, BM_MINFLT, BM_MAJFLT, BM_METRIC,
		     BM_COUNT };
/* A measure of a run (BM_HUGE: a share 0-1; NAN where the run has none). */
double bench_cmd_value(const struct bench_cmd_run *r, enum bench_measure m);
/* The median, smallest and largest of a measure over a variant's good runs; 0 if it has
 * none (all NAN). */
int bench_cmd_summary(const struct bench_cmd_variant *v, enum bench_measure m, double *median,
		      double *lo, double *hi);
/* Ratios, medians and verdicts (cmd_stats.c). */
void bench_cmd_ratio(const struct bench_cmd *c, int var, struct bench_ratio *out);
/* Whether a ratio is clear: its interval above 1.01, below 0.99, or within 0.98-1.02. */
bool bench_ratio_clear(const struct bench_ratio *r);
/* The two-sided 95% quantile of Student's t with df degrees of freedom. */
double bench_t95(int df);
void bench_cmd_finish(struct bench *b, struct bench_cmd *c);
/* The report: the measures side by side, the notes, a verdict line per variant. */
void bench_write_cmd_table(FILE *f, const struct bench *b, const struct bench_cmd *c);
void bench_write_cmd_json(FILE *f, const struct bench *b, const struct bench_cmd *c);
void bench_write_csv_vs(FILE *f, const struct bench_row *rows, int n, const char *base);

#endif
