/* variant_promote.c - the promote variant: a kernel running plain, promoted in the middle of its run. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parts.h"

#define CAP_SYS_NICE_BIT 23

/* Whether this process has CAP_SYS_NICE in effect (/proc/self/status CapEff). */
static bool have_sys_nice(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long caps = 0;
	char line[256];
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1) {
			found = true;
			break;
		}
	fclose(f);
	return found && (caps >> CAP_SYS_NICE_BIT & 1);
}

/* MADV_COLLAPSE does not ask THP's sysfs mode: "never" does not stop it. */
const char *bench_promote_unavailable(void)
{
	return have_sys_nice() ? NULL : "promoting another process needs CAP_SYS_NICE (root)";
}

/* The share of the data (heap and private anonymous memory: what a kernel's memory line
 * counts) on huge pages, before or after. */
static double data_share(const struct sp_promote_result *r, bool after)
{
	const struct sp_promote_usage *h = &r->region[SP_REGION_HEAP], *a = &r->region[SP_REGION_ANON];
	uint64_t bytes = h->bytes + a->bytes;
	uint64_t huge = after ? h->huge_after + a->huge_after : h->huge_before + a->huge_before;

	if (!bytes)
		return 0;
	return huge > bytes ? 1 : (double)huge / (double)bytes;
}

static const char *fatal_reason(int err)
{
	switch (err) {
	case -ESRCH: return "the kernel ended before it was promoted";
	case -EPERM: return "permission refused (CAP_SYS_NICE)";
	case -EACCES: return "permission refused (ptrace read access)";
	case -ENOSYS: return "no process_madvise(2) in this kernel";
	case -EINVAL: return "no MADV_COLLAPSE through process_madvise(2) here";
	default: return strerror(-err);
	}
}

void bench_promote_child(pid_t pid, struct run_out *o)
{
	static struct sp_promote_result r; /* 10 KiB of skips: not on the stack */
	struct timespec t0, t1;
	int rc;

	o->promoted = true;
	o->lines_before = o->nlines;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = sp_promote(pid, NULL, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	o->promote_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
	/* The kernel waits for this to time its second pass, promoted or not. */
	kill(pid, SIGUSR1);
	if (rc < 0) {
		snprintf(o->promote_err, sizeof o->promote_err, "promote: %s", fatal_reason(rc));
		fprintf(stderr, "bench: %s\n", o->promote_err);
		return;
	}
	o->cov_before = data_share(&r, false);
	o->cov_after = data_share(&r, true);
	fprintf(stderr, "bench: promoted: %.1f%% of its data on huge pages -> %.1f%% in %.2f s "
		"(%llu of %llu ranges of 2 MiB)\n", 100 * o->cov_before, 100 * o->cov_after,
		o->promote_s, (unsigned long long)r.collapsed, (unsigned long long)r.candidates);
}
