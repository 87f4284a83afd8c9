/* promote_print.c - what superpage promote says: a process's pass as text or JSON. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static double ratio(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
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

void promote_print_human(const struct sp_promote_result *r, const char *comm, bool dry, int round)
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

void promote_print_json(const struct sp_promote_result *r, const char *comm, bool dry, int round)
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
