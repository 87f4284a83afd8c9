/* stat.c - superpage stat: how much of a running process sits on huge pages, per kind of region. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

void usage_stat(void)
{
	fputs("usage: superpage stat [--json] PID\n"
	      "       superpage stat --all [--cgroup] [--top N] [--scan auto|pagemap|rollup] [--json]\n"
	      "\n"
	      "Reads /proc/PID/smaps and shows the resident memory of the process, the part\n"
	      "on huge pages (hugetlb and transparent huge pages) and the coverage, then the\n"
	      "same per kind of region: heap, anon, text, data, stack, shm, other. For a\n"
	      "process under superpage run, then its heap's account as the process last\n"
	      "published it (when its units change, and every 0.1 s it allocates): in use,\n"
	      "2 MiB units by backing, free pages inside units in use, units given back and\n"
	      "reused (reading it needs the access a debugger needs: its owner, or root).\n"
	      "For a program superpage run could not preload (a static one), how its watch\n"
	      "reaches it: the passes over it and what they collapsed.\n"
	      "\n"
	      "With --all, every process instead, one line each, sorted by bytes on huge\n"
	      "pages, under the machine's totals from /proc/meminfo: resident, huge, coverage,\n"
	      "hugetlb by page size, and for a process under superpage run its falls by\n"
	      "reason. Resident bytes come from /proc/PID/status, huge bytes from the page\n"
	      "tables' huge entries (PAGEMAP_SCAN, Linux 6.7) or else smaps_rollup. Processes\n"
	      "that end or cannot be read meanwhile are counted, not listed.\n"
	      "\n"
	      "  --json        print one JSON object instead, for scripts\n"
	      "  --all         every process\n"
	      "  --cgroup      with --all: every memory cgroup instead (memory.stat, and the\n"
	      "                hugetlb controller where it is mounted), descendants included\n"
	      "  --top N       with --all: the first N rows only (default 0: all)\n"
	      "  --scan HOW    with --all: pagemap, rollup, or auto (pagemap where the kernel\n"
	      "                has it)\n",
	      stdout);
}

/* A pid: digits only, above 0, fits pid_t. Returns 0 or -EINVAL. */
static int parse_pid(const char *s, pid_t *out)
{
	uint64_t v;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return -EINVAL;
	if (sp_parse_count(s, &v) < 0 || v == 0 || v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static void print_human(const struct sp_coverage *c, const char *comm)
{
	char a[32], b[32], pct[16];

	printf("pid %d", (int)c->pid);
	if (comm[0])
		printf(" (%s)", comm);
	printf(": %s resident, %s on huge pages (%.1f%%)\n", cli_human(c->rss_bytes, a, sizeof a),
	       cli_human(c->huge_bytes, b, sizeof b), 100.0 * sp_coverage_ratio(c));
	printf("  hugetlb %s, ", cli_human(c->hugetlb_bytes, a, sizeof a));
	printf("THP %s, %d mappings\n", cli_human(c->thp_bytes, a, sizeof a), c->mappings);
	if (c->mappings == 0)
		puts("  (no memory mapped: a kernel thread, or a process that has exited)");
	putchar('\n');
	printf("  %-8s %12s %12s %8s\n", "region", "resident", "huge", "huge %");
	for (int r = 0; r < SP_REGION_COUNT; r++) {
		const struct sp_usage *u = &c->region[r];

		if (u->bytes)
			snprintf(pct, sizeof pct, "%.1f%%", 100.0 * share(u->huge_bytes, u->bytes));
		else
			snprintf(pct, sizeof pct, "-");
		printf("  %-8s %12s %12s %8s\n", sp_region_name((enum sp_region)r),
		       cli_human(u->bytes, a, sizeof a), cli_human(u->huge_bytes, b, sizeof b), pct);
	}
	/* every resident byte not on huge pages, with its reason */
	bool head = false;
	for (int r = 0; r < SP_REGION_COUNT; r++) {
		const struct sp_usage *u = &c->region[r];
		for (int w = 0; w < SP_WHY_COUNT; w++) {
			if (!u->not_huge[w])
				continue;
			if (!head)
				printf("\n  not on huge pages, why:\n");
			head = true;
			printf("  %-8s %12s  %s\n", sp_region_name((enum sp_region)r),
			       cli_human(u->not_huge[w], a, sizeof a), sp_why_name((enum sp_why)w));
		}
	}
}

/* The backings of 2 MiB units, in the order the account lists them. */
static const enum sp_backing rungs[] = { SP_BACKING_4K, SP_BACKING_THP, SP_BACKING_2M,
					 SP_BACKING_1G };

/* The account a process under superpage run publishes (rc: sp_account_read's). */
static void print_live_human(int rc, const struct sp_account *l)
{
	char a[32], b[32];
	if (rc == -EACCES || rc == -EPERM) {
		printf("\n  its heap's account (superpage run): cannot read its memory (%s; run as "
		       "root)\n", strerror(-rc));
		return;
	}
	if (rc < 0)
		return; /* not under superpage run, or nothing published yet */
	printf("\n  heap (superpage run, %.1f s ago): %s in use (peak %s), %llu mallocs, "
	       "%llu frees\n", (double)l->age_ns / 1e9, cli_human(l->in_use, a, sizeof a),
	       cli_human(l->peak_in_use, b, sizeof b), (unsigned long long)l->mallocs,
	       (unsigned long long)l->frees);
	printf("  2 MiB units:");
	bool any = false;
	for (size_t k = 0; k < sizeof rungs / sizeof *rungs; k++) {
		if (!l->units[rungs[k]])
			continue;
		printf("%s %llu %s", any ? "," : "", (unsigned long long)l->units[rungs[k]],
		       sp_backing_name(rungs[k]));
		any = true;
	}
	printf("%s (peak %llu, %llu given back, %llu reused); %llu large blocks (%s)\n",
	       any ? "" : " none", (unsigned long long)l->units_peak,
	       (unsigned long long)l->released_units, (unsigned long long)l->reused_units,
	       (unsigned long long)l->large_blocks, cli_human(l->large_bytes, a, sizeof a));
	uint64_t held = l->unit_used_bytes + l->unit_free_bytes;
	printf("  in units: %s in use, %s free inside units in use (%.1f%% of their memory), "
	       "%.1f%% of what is in use in full units; %llu empty units kept; %llu falls\n",
	       cli_human(l->unit_used_bytes, a, sizeof a), cli_human(l->unit_free_bytes, b, sizeof b),
	       100 * share(l->unit_free_bytes, held), 100 * share(l->full_unit_bytes, l->unit_used_bytes),
	       (unsigned long long)l->kept_units, (unsigned long long)l->falls);
	for (int f = 0; f < SP_FALL_COUNT; f++)
		if (l->falls_by[f])
			printf("    %llu fall%s: %s\n", (unsigned long long)l->falls_by[f],
			       l->falls_by[f] == 1 ? "" : "s", sp_fall_name((enum sp_fall)f));
}

/* How the watch of a superpage run reaches a process it could not preload (rc:
 * sp_watch_find's). */
static void print_watch_human(int rc, const struct sp_watch *w, int i)
{
	char a[32], b[32];
	if (rc == -EACCES || rc == -EPERM) {
		printf("\n  the watch of a superpage run above it: cannot read its memory (%s; run as "
		       "root)\n", strerror(-rc));
		return;
	}
	if (rc < 0)
		return;
	const struct sp_watch_proc *p = &w->procs[i];
	printf("\n  reached by the watch of superpage run (pid %d), not preloaded (%s): its "
	       "private anonymous memory collapsed onto 2 MiB THP, none on hugetlb",
	       (int)w->watcher, w->why == SP_WATCH_STATIC ? "statically linked" :
	       w->why == SP_WATCH_LIBC ? "another libc" : "another word size");
	if (w->asked == SP_BACKING_2M || w->asked == SP_BACKING_1G)
		printf(" (--backing %s fell to THP)", sp_backing_name(w->asked));
	printf("\n  %u pass%s over it, %s collapsed", p->rounds, p->rounds == 1 ? "" : "es",
	       cli_human(p->collapsed_bytes, a, sizeof a));
	if (p->rounds)
		printf(", its last %.1f s ago", (double)(w->age_ns + (w->at_ns - p->last_ns)) / 1e9);
	printf("; next round in at most %.1f s", (double)w->interval_ns / 1e9);
	if (w->budget_bytes)
		printf("; budget %s a pass", cli_human(w->budget_bytes, b, sizeof b));
	else if (w->budget_share > 0)
		printf("; budget %.4g%% a pass", 100 * w->budget_share);
	if (p->fatal)
		printf("; refused: %s", strerror(-p->fatal));
	putchar('\n');
}

/* Its cgroups' limits, and inside a container what cannot be seen from it. */
static void print_limits_human(const struct cli_cgroups *g)
{
	struct cli_container ct;
	const char *blind[8];
	int n;

	putchar('\n');
	cli_cgroups_print(g, "  ");
	cli_container_here(&ct);
	n = cli_container_blind(&ct, g, blind, 8);
	for (int i = 0; i < n; i++)
		printf("  (in a container: %s)\n", blind[i]);
}

static void watch_json(struct json *j, int rc, const struct sp_watch *w, int i)
{
	if (rc < 0) {
		json_null(j);
		return;
	}
	const struct sp_watch_proc *p = &w->procs[i];
	json_object_begin(j);
	json_key(j, "watcher");
	json_int(j, w->watcher);
	json_key(j, "why");
	json_string(j, sp_watch_why_name(w->why));
	json_key(j, "asked");
	json_string(j, sp_backing_name(w->asked));
	json_key(j, "passes");
	json_uint(j, p->rounds);
	json_key(j, "collapsed_bytes");
	json_uint(j, p->collapsed_bytes);
	json_key(j, "last_pass_age_s");
	if (p->rounds)
		json_double(j, (double)(w->age_ns + (w->at_ns - p->last_ns)) / 1e9);
	else
		json_null(j);
	json_key(j, "interval_s");
	json_double(j, (double)w->interval_ns / 1e9);
	json_key(j, "budget_bytes");
	json_uint(j, w->budget_bytes);
	json_key(j, "budget_share");
	json_double(j, w->budget_share);
	json_key(j, "error");
	if (p->fatal)
		json_string(j, strerror(-p->fatal));
	else
		json_null(j);
	json_object_end(j);
}

static void print_json(const struct sp_coverage *c, const char *comm, int live_rc,
		       const struct sp_account *l, const struct cli_cgroups *g, int watch_rc,
		       const struct sp_watch *wt, int wi)
{
	struct json j;

	json_init(&j, stdout);
	json_object_begin(&j);
	json_key(&j, "pid");
	json_int(&j, c->pid);
	json_key(&j, "rss_bytes");
	json_uint(&j, c->rss_bytes);
	json_key(&j, "huge_bytes");
	json_uint(&j, c->huge_bytes);
	json_key(&j, "coverage");
	json_double(&j, sp_coverage_ratio(c));
	json_key(&j, "regions");
	json_object_begin(&j);
	for (int r = 0; r < SP_REGION_COUNT; r++) {
		json_key(&j, sp_region_name((enum sp_region)r));
		json_object_begin(&j);
		json_key(&j, "bytes");
		json_uint(&j, c->region[r].bytes);
		json_key(&j, "huge_bytes");
		json_uint(&j, c->region[r].huge_bytes);
		json_key(&j, "not_huge");
		json_object_begin(&j);
		for (int w = 0; w < SP_WHY_COUNT; w++) {
			if (!c->region[r].not_huge[w])
				continue;
			json_key(&j, sp_why_name((enum sp_why)w));
			json_uint(&j, c->region[r].not_huge[w]);
		}
		json_object_end(&j);
		json_object_end(&j);
	}
	json_object_end(&j);
	json_key(&j, "hugetlb_bytes");
	json_uint(&j, c->hugetlb_bytes);
	json_key(&j, "thp_bytes");
	json_uint(&j, c->thp_bytes);
	json_key(&j, "mappings");
	json_int(&j, c->mappings);
	json_key(&j, "comm");
	json_string(&j, comm);
	json_key(&j, "limits");
	cli_cgroups_json(&j, g);
	/* How superpage reaches it: its runtime, preloaded (its heap's account is read),
	 * the watch of a superpage run, or neither that can be seen. */
	json_key(&j, "reached");
	if (live_rc == 0)
		json_string(&j, "runtime");
	else if (watch_rc == 0)
		json_string(&j, "watch");
	else
		json_null(&j);
	json_key(&j, "watch");
	watch_json(&j, watch_rc, wt, wi);
	/* Under superpage run: its heap's account (null: none, or it cannot be read). */
	json_key(&j, "heap");
	if (live_rc < 0) {
		json_null(&j);
	} else {
		json_object_begin(&j);
		json_key(&j, "age_s");
		json_double(&j, (double)l->age_ns / 1e9);
		const struct { const char *k; uint64_t v; } f[] = {
			{ "in_use", l->in_use }, { "peak", l->peak_in_use }, { "mallocs", l->mallocs },
			{ "frees", l->frees }, { "units_peak", l->units_peak },
			{ "large_blocks", l->large_blocks }, { "large_bytes", l->large_bytes },
			{ "released_units", l->released_units }, { "reused_units", l->reused_units },
			{ "unit_used_bytes", l->unit_used_bytes },
			{ "unit_free_bytes", l->unit_free_bytes },
			{ "full_unit_bytes", l->full_unit_bytes }, { "kept_units", l->kept_units },
			{ "falls", l->falls },
		};
		for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
			json_key(&j, f[k].k);
			json_uint(&j, f[k].v);
		}
		json_key(&j, "falls_by");
		json_object_begin(&j);
		for (int k = 0; k < SP_FALL_COUNT; k++) {
			json_key(&j, sp_fall_name((enum sp_fall)k));
			json_uint(&j, l->falls_by[k]);
		}
		json_object_end(&j);
		json_key(&j, "units");
		json_object_begin(&j);
		for (size_t k = 0; k < sizeof rungs / sizeof *rungs; k++) {
			json_key(&j, sp_backing_name(rungs[k]));
			json_uint(&j, l->units[rungs[k]]);
		}
		json_object_end(&j);
		json_object_end(&j);
	}
	json_object_end(&j);
	json_end(&j);
}

int cmd_stat(int argc, char **argv)
{
	struct sp_coverage cov;
	const char *pid_arg = NULL;
	bool as_json = false, options = true;
	char comm[64];
	pid_t pid;
	int rc;

	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--all"))
			return stat_all(argc, argv);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (options && (!strcmp(a, "--cgroup") || !strncmp(a, "--top", 5) ||
				!strncmp(a, "--scan", 6))) {
			return cli_error(EXIT_USAGE, "stat: %s goes with --all", a);
		} else if (options && !strcmp(a, "--")) {
			options = false;
		} else if (options && !strcmp(a, "--json")) {
			as_json = true;
		} else if (options && a[0] == '-' && !(a[1] >= '0' && a[1] <= '9')) {
			return cli_error(EXIT_USAGE, "stat: unknown option '%s' (see superpage stat --help)",
					 a);
		} else if (pid_arg) {
			return cli_error(EXIT_USAGE, "stat: unexpected argument '%s' (see superpage stat --help)",
					 a);
		} else {
			pid_arg = a;
		}
	}
	if (!pid_arg)
		return cli_error(EXIT_USAGE, "stat: missing PID, the process to look at (see superpage stat --help)");
	if (parse_pid(pid_arg, &pid) < 0)
		return cli_error(EXIT_USAGE, "stat: bad pid '%s' (a process id: 1, 2, ...)", pid_arg);

	rc = sp_coverage(pid, &cov);
	switch (rc) {
	case 0:
		break;
	case -ESRCH:
		return cli_error(EXIT_USAGE, "no process %d", (int)pid);
	case -EACCES:
	case -EPERM:
		return cli_error(EXIT_USAGE, "cannot read the memory map of process %d: %s "
				 "(run as its owner or as root)", (int)pid, strerror(-rc));
	case -EPROTO:
		return cli_error(EXIT_FAIL, "/proc/%d/smaps is not what smaps should be", (int)pid);
	default:
		return cli_error(EXIT_FAIL, "cannot read process %d: %s", (int)pid, strerror(-rc));
	}
	sp_comm_read(pid, comm, sizeof comm);
	struct sp_account live;
	int live_rc = sp_account_read(pid, &live);
	struct cli_cgroups cg;
	cli_cgroups_of(pid, &cg);
	static struct sp_watch watch;
	int wi = -1, watch_rc = live_rc == 0 ? -ENOENT : sp_watch_find(pid, &watch, &wi);
	if (as_json) {
		print_json(&cov, comm, live_rc, &live, &cg, watch_rc, &watch, wi);
	} else {
		print_human(&cov, comm);
		print_live_human(live_rc, &live);
		print_watch_human(watch_rc, &watch, wi);
		print_limits_human(&cg);
	}
	return EXIT_OK;
}
