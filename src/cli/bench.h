/* bench.h - superpage bench's results and what reads and writes them: the kernels'
 * result lines in, the table, JSON, CSV and SVG out. */
#ifndef SP_CLI_BENCH_H
#define SP_CLI_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

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

/* ---------- shared by the writers (benchout.c, benchsvg.c) ---------- */
int bench_parse_u64(const char *s, size_t len, uint64_t *out);
int bench_rounds(const struct bench_row *r);
bool bench_is_4k(const struct bench_row *r);
const struct bench_row *bench_find_row(const struct bench_row *rows, int n,
				      const struct bench_row *like, const char *backing);
/* The backings to show (the caller's, or those of the rows); free *out. -1: no memory. */
int bench_backing_list(const struct bench_row *rows, int n, const char *const *backings, int nb,
		       const char ***out);
/* The first row of each (case, size), in order; free *out. -1: no memory. */
int bench_case_list(const struct bench_row *rows, int n, int **out);
const char *bench_fmt_bytes(uint64_t b, char *buf, size_t len);
const char *bench_fmt_size(const char *size, char *buf, size_t len);
const char *bench_fmt_metric(double v, char *buf, size_t len);
const char *bench_fmt_speedup(double s, char *buf, size_t len);
const char *bench_fmt_coverage(double c, char *buf, size_t len);
const char *bench_row_why(const struct bench_row *r);
const struct bench_machine *bench_machine_or_blank(const struct bench_machine *m);

#endif
