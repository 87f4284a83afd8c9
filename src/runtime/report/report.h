/* report.h - the account of a process that --stats writes (report.c gathers it,
 * report_text.c and report_json.c write it). */
#ifndef SP_REPORT_H
#define SP_REPORT_H

#include "pageheap/pageheap.h"
#include "program/program.h"
#include "runtime.h"
#include "say/out.h"

#pragma GCC visibility push(hidden)

struct account {
	int pid;
	char comm[17];
	struct rt_stats st;
	struct rt_shm_stats shm;  /* --shm: shared memory on hugetlb, and its falls */
	struct rt_text_stats text; /* --text: text and data moved to huge pages */
	struct rt_stack_stats stacks; /* --stacks: thread stacks on THP, and their falls */
	struct rt_map_stats maps; /* executable heaps, hints placed */
	struct sp_coverage cov;
	int cov_err;         /* sp_coverage's error, 0 if the coverage was read */
	uint64_t hwm;        /* peak resident set (VmHWM; hugetlb is not in it), 0 if unknown */
};

/* The rungs units can have, in the order of the JSON and the text. */
extern const enum sp_backing unit_rungs[4];
#define N_UNIT_RUNGS (sizeof unit_rungs / sizeof unit_rungs[0])

/* Falls by rung and reason, as "rung/reason":N pairs (JSON) or " rung reason N"
 * (text); false if there were none. */
bool put_rung_falls(struct out *o, const uint64_t (*falls)[SP_FALL_COUNT], bool json);
/* The falls of --shm or --stacks by reason, as "reason":N pairs (JSON) or " reason N"
 * (text); false if there were none. */
bool put_shm_falls(struct out *o, const uint64_t *falls, bool json);

/* The account as one JSON line, or as the text report's lines. */
void report_json(struct out *o, const struct account *a);
void report_text(struct out *o, const struct account *a);

#pragma GCC visibility pop

#endif
