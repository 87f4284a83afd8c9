/* promote.c - superpage promote: collapse the memory of running processes onto huge pages, once or on watch. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "json.h"

#define MAX_PIDS 64

void usage_promote(void)
{
	fputs("usage: superpage promote [--budget SIZE|PCT] [--hot] [--dry-run] [--json]\n"
	      "                         [--watch SECONDS] PID...\n"
	      "\n"
	      "Collapses the memory of running processes onto 2 MiB pages with\n"
	      "process_madvise(2) MADV_COLLAPSE, without restarting them: their private\n"
	      "anonymous memory (heap, stacks, anonymous mappings), in aligned 2 MiB ranges,\n"
	      "the fullest first, a chunk at a time with a pause between chunks and a longer\n"
	      "one when collapses get slow or fail. Every range not collapsed is listed with\n"
	      "its reason; none is asked twice. Needs CAP_SYS_NICE and the access a debugger\n"
	      "needs (root, in practice).\n"
	      "\n"
	      "  --budget SIZE|PCT  collapse at most SIZE (512M, 2G) or PCT of each process's\n"
	      "                     resident memory (25%); default: no limit\n"
	      "  --hot              rank by recent access: clear the accessed bits, wait 1 s,\n"
	      "                     read them back per mapping (smaps Referenced)\n"
	      "  --dry-run          rank and say what would be collapsed; collapse nothing\n"
	      "  --json             one JSON object per process (and per round), for scripts\n"
	      "  --watch SECONDS    after the first pass, look again every SECONDS and collapse\n"
	      "                     what fell back to small pages, until the processes end or\n"
	      "                     Ctrl-C\n"
	      "\n"
	      "Exit status: 0 something was promoted (or nothing was left to promote, or a\n"
	      "dry run), 1 nothing could be, 2 bad arguments or no such process.\n",
	      stdout);
}

static volatile int stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

struct target {
	pid_t pid;
	bool alive;
	bool missing;             /* no such process at the first round */
	bool promoted;            /* some round collapsed something, or had nothing to do */
	int n_avoid;
	struct sp_promote_skip avoid[SP_PROMOTE_MAX_SKIPS];
};

/* "25%", "12.5%": a share in (0, 1]; "512M": bytes. */
static int parse_budget(const char *s, struct sp_promote_options *o)
{
	size_t n = strlen(s);
	if (n > 1 && s[n - 1] == '%') {
		char *end;
		if (strspn(s, "0123456789.") != n - 1)
			return -EINVAL;
		double v = strtod(s, &end);
		if (end != s + n - 1 || !(v > 0) || v > 100)
			return -EINVAL;
		o->budget_share = v / 100;
		return 0;
	}
	uint64_t b;
	if (sp_parse_size(s, &b) < 0 || b == 0)
		return -EINVAL;
	o->budget_bytes = b;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	if (!*s || strspn(s, "0123456789.") != strlen(s))
		return -EINVAL;
	double v = strtod(s, &end);
	if (*end || !(v > 0) || v > 86400)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_pid(const char *s, pid_t *out)
{
	uint64_t v;
	if (!*s || strspn(s, "0123456789") != strlen(s) || sp_parse_count(s, &v) < 0 || v == 0 ||
	    v > INT_MAX)
		return -EINVAL;
	*out = (pid_t)v;
	return 0;
}

static double ratio(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

/* The one-line error for a process that cannot be promoted at all; its exit status. */
static int say_fatal(pid_t pid, int err)
{
	switch (err) {
	case -ESRCH:
		return cli_error(EXIT_USAGE, "promote: no process %d", (int)pid);
	case -EPERM:
		return cli_error(EXIT_FAIL, "promote: process %d: permission refused: collapsing "
				 "another process's memory needs CAP_SYS_NICE (run as root)", (int)pid);
	case -EACCES:
		return cli_error(EXIT_FAIL, "promote: process %d: permission refused: its memory "
				 "needs ptrace read access (its owner, or root)", (int)pid);
	case -ENOSYS:
		return cli_error(EXIT_FAIL, "promote: this kernel has no process_madvise(2) "
				 "(Linux 5.10 and later have it)");
	case -EINVAL:
		return cli_error(EXIT_FAIL, "promote: this kernel does not take MADV_COLLAPSE "
				 "through process_madvise(2) (Linux 6.1 and later do)");
	case -EPROTO:
		return cli_error(EXIT_FAIL, "promote: /proc/%d/smaps is not what smaps should be",
				 (int)pid);
	default:
		return cli_error(EXIT_FAIL, "promote: process %d: %s", (int)pid, strerror(-err));
	}
}

static const char *fatal_word(int err)
{
	switch (err) {
	case -ESRCH: return "gone";
	case -EPERM: case -EACCES: return "permission";
	case -ENOSYS: case -EINVAL: return "unsupported";
	default: return "error";
	}
}

static const char *errno_name(int err)
{
	switch (err) {
	case 0: return NULL;
	case -EINVAL: return "EINVAL";
	case -ENOMEM: return "ENOMEM";
	case -EAGAIN: return "EAGAIN";
	case -EBUSY: return "EBUSY";
	case -EFAULT: return "EFAULT";
	case -ESRCH: return "ESRCH";
	case -EPERM: return "EPERM";
	case -EACCES: return "EACCES";
	case -ENOSYS: return "ENOSYS";
	default: return "other";
	}
}

static void print_human(const struct sp_promote_result *r, const char *comm, bool dry, int round)
{
	char a[32], b[32], c[32];
	printf("pid %d", (int)r->pid);
	if (comm[0])
		printf(" (%s)", comm);
	if (round > 1)
		printf(", round %d", round);
	printf(": %s resident, %s on huge pages (%.1f%%)", cli_human(r->rss_before, a, sizeof a),
	       cli_human(r->huge_before, b, sizeof b), 100 * ratio(r->huge_before, r->rss_before));
	if (dry)
		printf("; dry run\n");
	else if (r->rss_after)
		printf(" -> %s (%.1f%%) in %.2f s\n", cli_human(r->huge_after, c, sizeof c),
		       100 * ratio(r->huge_after, r->rss_after), (double)r->elapsed_ns / 1e9);
	else
		printf("; it ended meanwhile\n");
	printf("  ranked by %s share: %llu ranges of 2 MiB could be collapsed (%s resident)",
	       sp_promote_rank_name(r->rank), (unsigned long long)r->candidates,
	       cli_human(r->candidate_bytes, a, sizeof a));
	if (r->budget)
		printf(", budget %s", cli_human(r->budget, b, sizeof b));
	if (dry)
		printf("; would ask %llu\n", (unsigned long long)r->tried);
	else
		printf("; asked %llu, collapsed %llu\n", (unsigned long long)r->tried,
		       (unsigned long long)r->collapsed);
	if (!dry && r->tried)
		printf("  %.3f s collapsing (slowest %.1f ms), %.3f s in %d pauses, %d backoffs\n",
		       (double)r->collapse_ns / 1e9, (double)r->slowest_ns / 1e6,
		       (double)r->paused_ns / 1e9, r->chunks, r->backoffs);
	if (r->hot_ns)
		printf("  accesses gathered for %.2f s\n", (double)r->hot_ns / 1e9);
	printf("  %-8s %12s %12s %12s\n", "region", "resident", "huge before", "huge after");
	for (int i = 0; i < SP_REGION_COUNT; i++) {
		const struct sp_promote_usage *u = &r->region[i];
		if (!u->bytes)
			continue;
		printf("  %-8s %12s %12s %12s\n", sp_region_name((enum sp_region)i),
		       cli_human(u->bytes, a, sizeof a), cli_human(u->huge_before, b, sizeof b),
		       r->rss_after || dry ? cli_human(u->huge_after, c, sizeof c) : "-");
	}
	bool head = false;
	for (int w = 0; w < SP_PROMOTE_WHY_COUNT; w++) {
		if (!r->not_done[w])
			continue;
		if (!head)
			printf("  not collapsed, why (resident bytes not on huge pages):\n");
		head = true;
		printf("    %-12s %12s\n", sp_promote_why_name((enum sp_promote_why)w),
		       cli_human(r->not_done[w], a, sizeof a));
	}
	/* The ranges of anonymous memory left, one line each (files and shared memory are
	 * never candidates: their totals above say enough). */
	for (int i = 0; i < r->n_skips; i++) {
		const struct sp_promote_skip *k = &r->skips[i];
		if (k->why == SP_PROMOTE_FILE || k->why == SP_PROMOTE_SHARED ||
		    k->why == SP_PROMOTE_SPECIAL || k->why == SP_PROMOTE_SMALL)
			continue;
		printf("    %012llx-%012llx %-6s %10s  %s%s%s\n", (unsigned long long)k->start,
		       (unsigned long long)k->end, sp_region_name(k->region),
		       cli_human(k->resident, a, sizeof a), sp_promote_why_name(k->why),
		       k->err ? " " : "", k->err ? errno_name(k->err) : "");
	}
	if (r->skips_dropped)
		printf("    (%llu more not listed)\n", (unsigned long long)r->skips_dropped);
}

static void json_hex(struct json *j, uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
	json_string(j, buf);
}

static void print_json(const struct sp_promote_result *r, const char *comm, bool dry, int round)
{
	struct json j;
	json_init(&j, stdout);
	json_object_begin(&j);
	json_key(&j, "pid");
	json_int(&j, r->pid);
	json_key(&j, "comm");
	json_string(&j, comm);
	json_key(&j, "round");
	json_int(&j, round);
	json_key(&j, "dry_run");
	json_bool(&j, dry);
	json_key(&j, "error");
	if (r->fatal)
		json_string(&j, fatal_word(r->fatal));
	else
		json_null(&j);
	json_key(&j, "gone");
	json_bool(&j, !r->fatal && !dry && !r->rss_after);
	json_key(&j, "rank");
	json_string(&j, sp_promote_rank_name(r->rank));
	const struct { const char *k; uint64_t v; } n[] = {
		{ "rss_bytes_before", r->rss_before }, { "huge_bytes_before", r->huge_before },
		{ "rss_bytes_after", r->rss_after }, { "huge_bytes_after", r->huge_after },
		{ "candidates", r->candidates }, { "candidate_bytes", r->candidate_bytes },
		{ "budget_bytes", r->budget }, { "tried", r->tried }, { "collapsed", r->collapsed },
		{ "collapsed_bytes", r->collapsed_bytes },
	};
	for (size_t i = 0; i < sizeof n / sizeof *n; i++) {
		json_key(&j, n[i].k);
		json_uint(&j, n[i].v);
	}
	json_key(&j, "coverage_before");
	json_double(&j, ratio(r->huge_before, r->rss_before));
	json_key(&j, "coverage_after");
	json_double(&j, ratio(r->huge_after, r->rss_after));
	const struct { const char *k; uint64_t v; } t[] = {
		{ "elapsed_s", r->elapsed_ns }, { "collapse_s", r->collapse_ns },
		{ "slowest_s", r->slowest_ns }, { "paused_s", r->paused_ns }, { "hot_s", r->hot_ns },
	};
	for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
		json_key(&j, t[i].k);
		json_double(&j, (double)t[i].v / 1e9);
	}
	json_key(&j, "chunks");
	json_int(&j, r->chunks);
	json_key(&j, "backoffs");
	json_int(&j, r->backoffs);
	json_key(&j, "regions");
	json_object_begin(&j);
	for (int i = 0; i < SP_REGION_COUNT; i++) {
		json_key(&j, sp_region_name((enum sp_region)i));
		json_object_begin(&j);
		json_key(&j, "bytes");
		json_uint(&j, r->region[i].bytes);
		json_key(&j, "huge_bytes_before");
		json_uint(&j, r->region[i].huge_before);
		json_key(&j, "huge_bytes_after");
		json_uint(&j, r->region[i].huge_after);
		json_object_end(&j);
	}
	json_object_end(&j);
	json_key(&j, "not_collapsed");
	json_object_begin(&j);
	for (int w = 0; w < SP_PROMOTE_WHY_COUNT; w++) {
		if (!r->not_done[w])
			continue;
		json_key(&j, sp_promote_why_name((enum sp_promote_why)w));
		json_uint(&j, r->not_done[w]);
	}
	json_object_end(&j);
	json_key(&j, "skipped");
	json_array_begin(&j);
	for (int i = 0; i < r->n_skips; i++) {
		const struct sp_promote_skip *k = &r->skips[i];
		json_object_begin(&j);
		json_key(&j, "start");
		json_hex(&j, k->start);
		json_key(&j, "end");
		json_hex(&j, k->end);
		json_key(&j, "resident_bytes");
		json_uint(&j, k->resident);
		json_key(&j, "why");
		json_string(&j, sp_promote_why_name(k->why));
		json_key(&j, "region");
		json_string(&j, sp_region_name(k->region));
		json_key(&j, "errno");
		if (k->err)
			json_string(&j, errno_name(k->err));
		else
			json_null(&j);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "skipped_dropped");
	json_uint(&j, r->skips_dropped);
	json_object_end(&j);
	json_end(&j);
}

/* Nothing of its anonymous memory was left to collapse: already huge, or none. */
static bool nothing_left(const struct sp_promote_result *r)
{
	static const enum sp_promote_why left[] = {
		SP_PROMOTE_NOHUGEPAGE, SP_PROMOTE_THP_OFF, SP_PROMOTE_SPARSE, SP_PROMOTE_BUDGET,
		SP_PROMOTE_NO_MEMORY, SP_PROMOTE_BUSY, SP_PROMOTE_CHANGED, SP_PROMOTE_REFUSED,
		SP_PROMOTE_GONE, SP_PROMOTE_PERMISSION, SP_PROMOTE_UNSUPPORTED, SP_PROMOTE_STOPPED,
	};
	if (r->candidates)
		return false;
	for (size_t i = 0; i < sizeof left / sizeof *left; i++)
		if (r->not_done[left[i]])
			return false;
	return true;
}

/* One pass over one process: says what it did; false once it is gone. */
static bool promote_one(struct target *t, struct sp_promote_options *o, bool as_json, int round)
{
	static struct sp_promote_result r;
	char comm[64] = "";
	sp_comm_read(t->pid, comm, sizeof comm);
	o->avoid = t->avoid;
	o->n_avoid = t->n_avoid;
	int n = sp_promote(t->pid, o, &r);
	if (n < 0) {
		/* After the first round, a process that ended is the end of its watch. */
		if (round > 1 && n == -ESRCH)
			return false;
		say_fatal(t->pid, n);
		t->missing = round == 1 && n == -ESRCH;
		if (as_json)
			print_json(&r, comm, o->dry_run, round);
		return false;
	}
	if (as_json)
		print_json(&r, comm, o->dry_run, round);
	else if (round == 1 || r.tried || r.rss_after == 0)
		print_human(&r, comm, o->dry_run, round);
	if (n > 0 || o->dry_run || nothing_left(&r))
		t->promoted = true;
	/* What the kernel refused for good is not asked again by the next round. */
	for (int i = 0; i < r.n_skips && t->n_avoid < SP_PROMOTE_MAX_SKIPS; i++)
		if (r.skips[i].why == SP_PROMOTE_REFUSED)
			t->avoid[t->n_avoid++] = r.skips[i];
	return r.rss_after != 0 || o->dry_run;
}

static void nap(double seconds)
{
	struct timespec ts = { (time_t)seconds, (long)((seconds - floor(seconds)) * 1e9) };
	if (!stop_flag)
		nanosleep(&ts, NULL); /* a signal ends it early */
}

int cmd_promote(int argc, char **argv)
{
	static struct target targets[MAX_PIDS];
	struct sp_promote_options o;
	bool as_json = false, options = true;
	double watch = 0;
	const char *v;
	int n = 0, k;

	sp_promote_options_default(&o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (options && !strcmp(a, "--")) {
			options = false;
		} else if (options && !strcmp(a, "--json")) {
			as_json = true;
		} else if (options && !strcmp(a, "--hot")) {
			o.hot = true;
		} else if (options && !strcmp(a, "--dry-run")) {
			o.dry_run = true;
		} else if (options && (k = cli_opt_value(argc, argv, &i, "--budget", &v)) != 0) {
			if (k < 0)
				return EXIT_USAGE;
			if (parse_budget(v, &o) < 0)
				return cli_error(EXIT_USAGE, "promote: bad budget '%s' (a size like 512M "
						 "or 2G, or a share like 25%%)", v);
		} else if (options && (k = cli_opt_value(argc, argv, &i, "--watch", &v)) != 0) {
			if (k < 0)
				return EXIT_USAGE;
			if (parse_seconds(v, &watch) < 0)
				return cli_error(EXIT_USAGE, "promote: bad --watch '%s' (seconds, above "
						 "0 and at most 86400)", v);
		} else if (options && a[0] == '-') {
			return cli_error(EXIT_USAGE, "promote: unknown option '%s' (see superpage "
					 "promote --help)", a);
		} else {
			if (n == MAX_PIDS)
				return cli_error(EXIT_USAGE, "promote: at most %d processes", MAX_PIDS);
			if (parse_pid(a, &targets[n].pid) < 0)
				return cli_error(EXIT_USAGE, "promote: bad pid '%s' (a process id: 1, "
						 "2, ...)", a);
			targets[n].alive = true;
			targets[n].promoted = targets[n].missing = false;
			targets[n].n_avoid = 0;
			n++;
		}
	}
	if (!n)
		return cli_error(EXIT_USAGE, "promote: missing PID, the process to promote (see "
				 "superpage promote --help)");
	if (watch && o.dry_run)
		return cli_error(EXIT_USAGE, "promote: --watch and --dry-run do not go together");

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal; /* no SA_RESTART: a sleep ends at once */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.stop = &stop_flag;

	int alive;
	for (int round = 1;; round++) {
		alive = 0;
		for (int i = 0; i < n && !stop_flag; i++) {
			if (!targets[i].alive)
				continue;
			targets[i].alive = promote_one(&targets[i], &o, as_json, round);
			alive += targets[i].alive;
			fflush(stdout);
		}
		if (!watch || !alive || stop_flag)
			break;
		nap(watch);
		if (stop_flag)
			break;
	}
	bool any = false, all_missing = true;
	for (int i = 0; i < n; i++) {
		any |= targets[i].promoted;
		all_missing &= targets[i].missing;
	}
	if (any)
		return EXIT_OK;
	/* No such process, as superpage stat says it: bad input. */
	return all_missing ? EXIT_USAGE : EXIT_FAIL;
}
