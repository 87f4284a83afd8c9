/* test_promote.c - sp_promote against the fake kernel: what is picked, in which order, within
 * which budget, at which pace, and every refusal of the kernel turned into a reason. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define M2 (2ull << 20)
#define PID 4242
#define A 0x7f0000000000ull   /* an anonymous mapping */
#define B 0x7f1000000000ull   /* another */
#define MAX_NONE "/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none"

static struct sp_promote_result r;
static struct sp_promote_options o;

static void setup(void)
{
	fk_reset();
	fk_machine_default();
	fk_install();
	fk_proc(PID);
	sp_promote_options_default(&o);
}

/* A mapping of n ranges of 2 MiB at at, each with present pages. */
static void anon(uintptr_t at, int n, int present, const char *path, int flags)
{
	fk_proc_map(PID, at, (size_t)n * M2, "rw-p", path, flags);
	for (int i = 0; i < n; i++)
		fk_proc_range(PID, at + (uint64_t)i * M2, present, false, false);
}

/* n mappings of one full range each, a range apart: one call each. */
static void spread(uintptr_t at, int n)
{
	for (int i = 0; i < n; i++)
		anon(at + 2 * (uint64_t)i * M2, 1, 512, "", 0);
}

static uint64_t skipped(enum sp_promote_why why)
{
	uint64_t n = 0;
	for (int i = 0; i < r.n_skips; i++)
		if (r.skips[i].why == why)
			n += (r.skips[i].end - r.skips[i].start) / M2;
	return n;
}

/* The reason given for the range at a, or -1. */
static int why_at(uintptr_t a)
{
	for (int i = 0; i < r.n_skips; i++)
		if (r.skips[i].start <= a && a < r.skips[i].end)
			return (int)r.skips[i].why;
	return -1;
}

static void test_collapses_all(void)
{
	setup();
	anon(A, 8, 512, "", 0);
	fk_proc_map(PID, 0x1000000, 4 * M2, "rw-p", "[heap]", 0);
	for (int i = 0; i < 4; i++)
		fk_proc_range(PID, 0x1000000 + (uint64_t)i * M2, 512, false, false);
	CHECK_EQ(sp_promote(PID, &o, &r), 12);
	CHECK_EQ(r.collapsed, 12);
	CHECK_EQ(r.tried, 12);
	CHECK_EQ(r.candidates, 12);
	CHECK_EQ(r.rank, SP_RANK_RESIDENT);
	CHECK_EQ(r.huge_before, 0);
	CHECK_EQ(r.huge_after, 24 * (1ull << 20));
	CHECK_EQ(r.rss_after, 24 * (1ull << 20));
	CHECK_EQ(r.region[SP_REGION_ANON].huge_after, 16 * (1ull << 20));
	CHECK_EQ(r.region[SP_REGION_HEAP].huge_after, 8 * (1ull << 20));
	CHECK_EQ(r.n_skips, 0);
	CHECK(fk_proc_huge(PID, A + 7 * M2));
	CHECK_EQ(fk_collapse_calls(), 12);
	CHECK_EQ(fk_open_fds(), 0);
	/* A second pass finds nothing left: what is huge is not asked again. */
	CHECK_EQ(sp_promote(PID, &o, &r), 0);
	CHECK_EQ(r.candidates, 0);
	CHECK_EQ(fk_collapse_calls(), 12);
	CHECK_EQ(r.huge_before, 24 * (1ull << 20));
}

/* Mappings that are no candidates: each said, none asked. */
static void test_mapping_reasons(void)
{
	setup();
	anon(A, 2, 512, "/usr/lib/libfoo.so", FK_FILE);
	fk_proc_map(PID, A + 4 * M2, 2 * M2, "rw-s", "/dev/zero", 0);
	for (int i = 0; i < 2; i++)
		fk_proc_range(PID, A + (4 + (uint64_t)i) * M2, 512, false, false);
	anon(A + 8 * M2, 2, 512, "", FK_NH);
	anon(A + 12 * M2, 1, 512, "[vdso]", 0);
	/* half of a range: no whole aligned 2 MiB */
	fk_proc_map(PID, A + 16 * M2, M2 / 2, "rw-p", "", 0);
	fk_proc_range(PID, A + 16 * M2, 256, false, false);
	CHECK_EQ(sp_promote(PID, &o, &r), 0);
	CHECK_EQ(fk_collapse_calls(), 0);
	CHECK_EQ(why_at(A), SP_PROMOTE_FILE);
	CHECK_EQ(why_at(A + 4 * M2), SP_PROMOTE_SHARED);
	CHECK_EQ(why_at(A + 8 * M2), SP_PROMOTE_NOHUGEPAGE);
	CHECK_EQ(why_at(A + 12 * M2), SP_PROMOTE_SPECIAL);
	CHECK_EQ(why_at(A + 16 * M2), SP_PROMOTE_SMALL);
	CHECK_EQ(r.not_done[SP_PROMOTE_NOHUGEPAGE], 2 * M2);
	CHECK_EQ(r.not_done[SP_PROMOTE_SMALL], M2 / 2);
	CHECK_EQ(r.candidates, 0);
}

static void test_thp_off(void)
{
	setup();
	anon(A, 4, 512, "", 0);
	fk_proc_thp_off(PID, true);
	CHECK_EQ(sp_promote(PID, &o, &r), 0);
	CHECK_EQ(fk_collapse_calls(), 0);
	CHECK_EQ(why_at(A), SP_PROMOTE_THP_OFF);
	CHECK_EQ(r.not_done[SP_PROMOTE_THP_OFF], 4 * M2);
}

/* The kernel's refusals of single ranges: each a reason, none asked twice. */
static void test_range_refusals(void)
{
	setup();
	spread(A, 5);
	fk_proc_collapse_err(PID, A + 0 * M2, ENOMEM);
	fk_proc_collapse_err(PID, A + 2 * M2, EAGAIN);
	fk_proc_collapse_err(PID, A + 4 * M2, EBUSY);
	fk_proc_collapse_err(PID, A + 6 * M2, EINVAL);
	CHECK_EQ(sp_promote(PID, &o, &r), 1);
	CHECK_EQ(why_at(A + 0 * M2), SP_PROMOTE_NO_MEMORY);
	CHECK_EQ(why_at(A + 2 * M2), SP_PROMOTE_BUSY);
	CHECK_EQ(why_at(A + 4 * M2), SP_PROMOTE_NO_MEMORY);
	CHECK_EQ(why_at(A + 6 * M2), SP_PROMOTE_REFUSED);
	CHECK_EQ(why_at(A + 8 * M2), -1);
	CHECK(fk_proc_huge(PID, A + 8 * M2));
	CHECK_EQ(fk_collapse_calls(), 5);
	CHECK_EQ(r.tried, 5);
	bool errs = false;
	for (int i = 0; i < r.n_skips; i++)
		errs |= r.skips[i].why == SP_PROMOTE_REFUSED && r.skips[i].err == -EINVAL;
	CHECK(errs);
	CHECK(r.backoffs >= 1);
}

/* Ranges next to each other go in one call; after a refusal, what is huge tells
 * which were done: past EINVAL the kernel goes on, at ENOMEM it stops. */
static void test_batches(void)
{
	setup();
	anon(A, 4, 512, "", 0);
	fk_proc_collapse_err(PID, A + M2, EINVAL);
	CHECK_EQ(sp_promote(PID, &o, &r), 3);
	CHECK_EQ(fk_process_madvise_calls(), 2); /* the probe, and one call */
	CHECK_EQ(why_at(A + M2), SP_PROMOTE_REFUSED);
	CHECK_EQ(why_at(A), -1);
	CHECK_EQ(why_at(A + 3 * M2), -1);
	CHECK(fk_proc_huge(PID, A + 3 * M2));

	setup();
	anon(A, 4, 512, "", 0);
	fk_proc_collapse_err(PID, A + M2, ENOMEM);
	CHECK_EQ(sp_promote(PID, &o, &r), 1);
	CHECK_EQ(fk_collapse_calls(), 2);
	CHECK_EQ(skipped(SP_PROMOTE_NO_MEMORY), 3);
	CHECK(fk_proc_huge(PID, A));

	/* a chunk is one call at most */
	setup();
	anon(A, 10, 512, "", 0);
	o.chunk_bytes = 4 * M2;
	CHECK_EQ(sp_promote(PID, &o, &r), 10);
	CHECK_EQ(fk_process_madvise_calls(), 1 + 3);
	CHECK_EQ(r.chunks, 2);

	/* without PAGEMAP_SCAN a refused call could not tell: one range a call */
	setup();
	anon(A, 4, 512, "", 0);
	fk_pagemap_scan(false);
	CHECK_EQ(sp_promote(PID, &o, &r), 4);
	CHECK_EQ(fk_process_madvise_calls(), 1 + 4);
}

static void unmap_b(pid_t pid)
{
	fk_proc_unmap(pid, B);
}

/* The mapping goes away between the read and the collapse. */
static void test_mapping_changed(void)
{
	setup();
	anon(A, 2, 512, "", 0);
	anon(B, 2, 100, "", 0); /* less full: asked after A's */
	fk_proc_after(PID, 2, unmap_b);
	CHECK_EQ(sp_promote(PID, &o, &r), 2);
	CHECK_EQ(why_at(B), SP_PROMOTE_CHANGED);
	CHECK_EQ(why_at(B + M2), SP_PROMOTE_CHANGED);
	/* (a refusal on a mapping as it was read stays "refused": above) */
	CHECK_EQ(fk_collapse_calls(), 2);
	CHECK_EQ(fk_process_madvise_calls(), 3);
}

/* The process ends mid-way: the rest is "gone", the pass ends at once. */
static void test_gone_midway(void)
{
	setup();
	anon(A, 6, 512, "", 0);
	o.chunk_bytes = M2; /* one range a call */
	fk_proc_exit_after(PID, 2);
	CHECK_EQ(sp_promote(PID, &o, &r), 2);
	CHECK_EQ(r.collapsed, 2);
	CHECK_EQ(r.tried, 3); /* the third found it gone */
	CHECK_EQ(fk_collapse_calls(), 2);
	CHECK_EQ(skipped(SP_PROMOTE_GONE), 4);
	CHECK_EQ(r.rss_after, 0);
	CHECK_EQ(r.fatal, 0);
	CHECK_EQ(fk_open_fds(), 0);
}

/* Refusals for the whole process: -errno, and nothing asked. */
static void test_process_refusals(void)
{
	static const struct { int err; bool pidfd; int want; } cases[] = {
		{ EPERM, false, -EPERM },    /* no CAP_SYS_NICE */
		{ EACCES, false, -EACCES },  /* no ptrace read access */
		{ ENOSYS, false, -ENOSYS },  /* no process_madvise */
		{ EINVAL, false, -EINVAL },  /* process_madvise without MADV_COLLAPSE */
		{ ENOSYS, true, -ENOSYS },   /* no pidfd_open */
		{ ESRCH, true, -ESRCH },
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		setup();
		anon(A, 2, 512, "", 0);
		if (cases[i].pidfd)
			fk_pidfd_error(cases[i].err);
		else
			fk_process_madvise_error(cases[i].err);
		CHECK_EQ(sp_promote(PID, &o, &r), cases[i].want);
		CHECK_EQ(r.fatal, cases[i].want);
		CHECK_EQ(fk_collapse_calls(), 0);
		CHECK_EQ(fk_open_fds(), 0);
	}
	/* smaps that cannot be read: another user's process */
	setup();
	anon(A, 2, 512, "", 0);
	fk_file_error("/proc/4242/smaps", EACCES);
	CHECK_EQ(sp_promote(PID, &o, &r), -EACCES);
	CHECK_EQ(fk_open_fds(), 0);
	/* no such process */
	setup();
	CHECK_EQ(sp_promote(999, &o, &r), -ESRCH);
	fk_proc_exit(PID);
	CHECK_EQ(sp_promote(PID, &o, &r), -ESRCH);
}

static void test_budget(void)
{
	setup();
	anon(A, 8, 512, "", 0);
	o.budget_bytes = 3 * M2;
	CHECK_EQ(sp_promote(PID, &o, &r), 3);
	CHECK_EQ(r.budget, 3 * M2);
	CHECK_EQ(skipped(SP_PROMOTE_BUDGET), 5);
	CHECK_EQ(fk_collapse_calls(), 3);
	/* a share of the resident memory: 25% of 16 MiB */
	setup();
	anon(A, 8, 512, "", 0);
	o.budget_share = 0.25;
	CHECK_EQ(sp_promote(PID, &o, &r), 2);
	CHECK_EQ(skipped(SP_PROMOTE_BUDGET), 6);
	/* a refusal takes none of the budget */
	setup();
	anon(A, 4, 512, "", 0);
	fk_proc_collapse_err(PID, A, EINVAL);
	o.budget_bytes = 2 * M2;
	CHECK_EQ(sp_promote(PID, &o, &r), 2);
	CHECK_EQ(fk_collapse_calls(), 3);
}

/* Fuller first; with --hot, the mapping touched meanwhile first. */
static void test_ranking(void)
{
	setup();
	fk_proc_map(PID, A, 3 * M2, "rw-p", "", 0);
	fk_proc_range(PID, A, 100, false, false);
	fk_proc_range(PID, A + M2, 512, false, false);
	fk_proc_range(PID, A + 2 * M2, 300, false, false);
	CHECK_EQ(sp_promote(PID, &o, &r), 3);
	CHECK_EQ(fk_collapse_at(0), A + M2);
	CHECK_EQ(fk_collapse_at(1), A + 2 * M2);
	CHECK_EQ(fk_collapse_at(2), A);

	setup();
	anon(A, 2, 512, "", 0);
	fk_proc_map(PID, B, 2 * M2, "rw-p", "", 0);
	fk_proc_range(PID, B, 200, false, true);
	fk_proc_range(PID, B + M2, 100, false, true);
	o.hot = true;
	o.hot_ns = 500000000ull;
	CHECK_EQ(sp_promote(PID, &o, &r), 4);
	CHECK_EQ(r.rank, SP_RANK_HOT);
	CHECK(r.hot_ns >= o.hot_ns);
	CHECK_EQ(fk_collapse_at(0), B);
	CHECK_EQ(fk_collapse_at(1), B + M2);
	CHECK_EQ(fk_collapse_at(2), A);

	/* without PAGEMAP_SCAN: per mapping, from smaps */
	setup();
	anon(A, 4, 512, "", 0);
	fk_pagemap_scan(false);
	CHECK_EQ(sp_promote(PID, &o, &r), 4);
	CHECK_EQ(r.rank, SP_RANK_MAPPING);
}

/* A range with too few pages resident: collapsing it would bloat. */
static void test_sparse(void)
{
	setup();
	fk_file(MAX_NONE, "256\n");
	fk_proc_map(PID, A, 3 * M2, "rw-p", "", 0);
	fk_proc_range(PID, A, 100, false, false);
	fk_proc_range(PID, A + M2, 400, false, false);
	/* A + 2 MiB * 2: nothing resident, no candidate and no skip */
	CHECK_EQ(sp_promote(PID, &o, &r), 1);
	CHECK_EQ(why_at(A), SP_PROMOTE_SPARSE);
	CHECK_EQ(why_at(A + 2 * M2), -1);
	CHECK_EQ(r.not_done[SP_PROMOTE_SPARSE], 100 * 4096);
	CHECK_EQ(fk_collapse_calls(), 1);
}

static void test_dry_run(void)
{
	setup();
	anon(A, 6, 512, "", 0);
	anon(B, 2, 512, "", FK_NH);
	o.dry_run = true;
	o.budget_bytes = 4 * M2;
	CHECK_EQ(sp_promote(PID, &o, &r), 4);
	CHECK_EQ(r.tried, 4);
	CHECK_EQ(r.collapsed, 0);
	CHECK_EQ(fk_collapse_calls(), 0);
	CHECK_EQ(skipped(SP_PROMOTE_BUDGET), 2);
	CHECK_EQ(why_at(B), SP_PROMOTE_NOHUGEPAGE);
	CHECK(!fk_proc_huge(PID, A));
	CHECK_EQ(r.huge_after, r.huge_before);
}

/* Chunks and pauses; slow collapses and failures lengthen the pause; failures in a
 * row stop the pass. */
static void test_pacing(void)
{
	setup();
	anon(A, 32, 512, "", 0);
	o.chunk_bytes = 8 * M2;
	o.pause_ns = 1000000;
	fk_proc_collapse_cost(1000000);
	CHECK_EQ(sp_promote(PID, &o, &r), 32);
	CHECK_EQ(r.chunks, 3); /* after 8, 16 and 24: none after the last */
	CHECK_EQ(r.backoffs, 0);
	CHECK_EQ(fk_slept_ns(), 3 * 1000000ull);
	CHECK_EQ(r.paused_ns, 3 * 1000000ull);
	uint64_t calm = fk_slept_ns();

	setup();
	anon(A, 32, 512, "", 0);
	o.chunk_bytes = 8 * M2;
	o.pause_ns = 1000000;
	fk_proc_collapse_cost(100000000); /* 100 ms each: slow */
	CHECK_EQ(sp_promote(PID, &o, &r), 32);
	CHECK_EQ(r.backoffs, 3);
	CHECK_EQ(fk_slept_ns(), (2 + 4 + 8) * 1000000ull); /* doubled each time */
	CHECK(fk_slept_ns() > 4 * calm);
	CHECK(r.slowest_ns >= 100000000ull);

	setup();
	spread(A, 12);
	for (int i = 0; i < 12; i++)
		fk_proc_collapse_err(PID, A + 2 * (uint64_t)i * M2, ENOMEM);
	o.max_failures = 4;
	CHECK_EQ(sp_promote(PID, &o, &r), 0);
	CHECK_EQ(fk_collapse_calls(), 4);
	CHECK_EQ(skipped(SP_PROMOTE_NO_MEMORY), 4);
	CHECK_EQ(skipped(SP_PROMOTE_STOPPED), 8);
	CHECK(r.backoffs >= 3);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < i; j++)
			CHECK(fk_collapse_at(i) != fk_collapse_at(j));
}

static void test_avoid_and_stop(void)
{
	setup();
	anon(A, 4, 512, "", 0);
	struct sp_promote_skip avoid = { A + M2, A + 3 * M2, 0, SP_PROMOTE_REFUSED,
					 SP_REGION_ANON, -EINVAL };
	o.avoid = &avoid;
	o.n_avoid = 1;
	CHECK_EQ(sp_promote(PID, &o, &r), 2);
	CHECK_EQ(fk_collapse_calls(), 2);
	CHECK_EQ(why_at(A + M2), SP_PROMOTE_REFUSED);
	CHECK_EQ(why_at(A + 2 * M2), SP_PROMOTE_REFUSED);

	setup();
	anon(A, 4, 512, "", 0);
	volatile int stop = 1;
	o.stop = &stop;
	CHECK_EQ(sp_promote(PID, &o, &r), 0);
	CHECK_EQ(fk_collapse_calls(), 0);
	CHECK_EQ(skipped(SP_PROMOTE_STOPPED), 4);
}

static void test_names(void)
{
	for (int w = 0; w < SP_PROMOTE_WHY_COUNT; w++)
		CHECK(strcmp(sp_promote_why_name((enum sp_promote_why)w), "?") != 0);
	CHECK(!strcmp(sp_promote_why_name(SP_PROMOTE_NOHUGEPAGE), "nohugepage"));
	CHECK(!strcmp(sp_promote_why_name(SP_PROMOTE_WHY_COUNT), "?"));
	CHECK(sp_promote_why_transient(SP_PROMOTE_NO_MEMORY));
	CHECK(!sp_promote_why_transient(SP_PROMOTE_REFUSED));
	CHECK(!strcmp(sp_promote_rank_name(SP_RANK_HOT), "hot"));
}

int main(void)
{
	RUN(test_collapses_all);
	RUN(test_mapping_reasons);
	RUN(test_thp_off);
	RUN(test_range_refusals);
	RUN(test_batches);
	RUN(test_mapping_changed);
	RUN(test_gone_midway);
	RUN(test_process_refusals);
	RUN(test_budget);
	RUN(test_ranking);
	RUN(test_sparse);
	RUN(test_dry_run);
	RUN(test_pacing);
	RUN(test_avoid_and_stop);
	RUN(test_names);
	fk_uninstall();
	return CHECK_DONE();
}
