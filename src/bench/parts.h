/* parts.h - what the bench's files share with each other (not the command, not the tests). */
#ifndef SP_BENCH_PARTS_H
#define SP_BENCH_PARTS_H

#include <signal.h>
#include <sys/types.h>

#include "superpage.h"
#include "bench.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

/* ---------- one run of a kernel (runner.c), and what it got (judge.c) ---------- */

struct run_out {
	struct bench_line lines[8];
	int nlines;
	struct bench_memory mem;
	bool have_mem;
	long minflt;
	int status;       /* the wait status */
	bool timed_out;
	char err[256];    /* the last lines of its stderr */
	/* the promote variant's promotion (variant_promote.c): */
	bool promoted;    /* sp_promote was called on it */
	int lines_before; /* result lines printed before it */
	double cov_before, cov_after; /* share of its data (heap, anonymous) on huge pages */
	double promote_s; /* the call's wall time */
	char promote_err[96]; /* why it could not be promoted at all, "" if it could */
};

/* ---------- the promote variant's promotion (variant_promote.c) ---------- */

/* Promotes the running kernel pid (sp_promote with its defaults), records what it got in
 * o, says so on stderr, and sends the kernel SIGUSR1 (also when it failed). */
void bench_promote_child(pid_t pid, struct run_out *o);
/* Why this process cannot promote another here (a reason), or NULL if it can. */
const char *bench_promote_unavailable(void);

/* Why kernel k is not run under v: a reason, "" if it gets no row at all (there is no
 * ideal build of a text kernel), or NULL if it is run. */
const char *bench_not_for(const struct bench_kernel *k, const struct bench_variant *v);
/* Adds a run's figures to its rows (and its minor faults to minflts), judged. */
void bench_record(struct bench *b, const struct bench_item *it, const struct bench_variant *v,
		  const struct run_out *o, long (*minflts)[BENCH_MAX_REPEAT]);
/* A skipped backing gets a row, with the reason, beside each case the item printed. */
void bench_mark_skipped(struct bench *b, const struct bench_item *it);

/* ---------- the machine (testbed.c) ---------- */

/* Backings that cannot be had here are skipped, with the reason. */
void bench_check_offer(struct bench *b);
void bench_read_machine(const struct bench *b, struct bench_machine *m);
/* Fresh memory and the pools' free pages touched and given back before runs. */
void bench_warm_memory(uint64_t bytes);
void bench_warm_pools(void);

/* ---------- what the bench changes on the machine and puts back (setup.c) ---------- */

/* The kernel running now: the signal handler ends it before it puts the pools back. */
extern volatile pid_t bench_running_child;
void bench_setup_pools(struct bench *b);
/* The same for a user's command that had `bytes` of memory at its peak under plain. */
void bench_setup_pools_bytes(struct bench *b, uint64_t bytes);
void bench_restore_pools(void);
/* THP "always" for a thp-always run of v (false, with the reason in v->why, if it
 * cannot be set), and put back after it. */
bool bench_thp_always(struct bench_variant *v);
void bench_thp_put_back(void);

/* ---------- shared by the writers ---------- */

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

/* The JSON writer's parts, for the command's JSON too: the machine object, and one
 * row with its speedup named after what it is against ("speedup_vs_4k"). */
struct json;
void bench_json_machine(struct json *j, const struct bench_machine *m);
void bench_json_row(struct json *j, const struct bench_row *r, const char *base);

/* One output line of the text table, built up and written with its trailing blanks cut. */
struct line {
	char s[4096];
	size_t len;
};
void line_add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void line_put(FILE *f, struct line *l);
/* head, padded to indent columns, then text folded at 80 columns, its other lines
 * indented as far. */
void put_folded(FILE *f, int indent, const char *head, const char *text);
/* The "kernels:" and "why" paragraphs of the table (write_why.c). */
void bench_write_why(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		     const int *first, int ng);

#endif
