/* report_json.c - the account as one JSON line (SUPERPAGE_STATS_FILE, superpage run
 * --stats-file): the coverage, the heap, the mappings and the break, the falls, and
 * what --shm, --text and --stacks did. */
#include "internal.h"
#include "report.h"

/* pid and comm, the coverage of the process and by region, the peak RSS. */
static void json_coverage(struct out *o, const struct account *a)
{
	put_fmt(o, "{\"pid\":%d,\"comm\":", a->pid);
	put_json_string(o, a->comm);
	put_fmt(o, ",\"rss_bytes\":%llu,\"huge_bytes\":%llu,\"coverage\":",
		(unsigned long long)a->cov.rss_bytes, (unsigned long long)a->cov.huge_bytes);
	put_ratio(o, sp_coverage_ratio(&a->cov));
	put_str(o, ",\"regions\":{");
	for (int r = 0; r < SP_REGION_COUNT; r++) {
		const struct sp_usage *u = &a->cov.region[r];
		put_fmt(o, "%s\"%s\":{\"bytes\":%llu,\"huge_bytes\":%llu,\"not_huge\":{", r ? "," : "",
			sp_region_name((enum sp_region)r), (unsigned long long)u->bytes,
			(unsigned long long)u->huge_bytes);
		for (int w = 0, n = 0; w < SP_WHY_COUNT; w++)
			if (u->not_huge[w])
				put_fmt(o, "%s\"%s\":%llu", n++ ? "," : "", sp_why_name((enum sp_why)w),
					(unsigned long long)u->not_huge[w]);
		put_str(o, "}}");
	}
	put_fmt(o, "},\"hugetlb_bytes\":%llu,\"thp_bytes\":%llu,\"vm_hwm_bytes\":%llu",
		(unsigned long long)a->cov.hugetlb_bytes, (unsigned long long)a->cov.thp_bytes,
		(unsigned long long)a->hwm);
	if (a->cov_err < 0)
		put_fmt(o, ",\"coverage_errno\":%d", -a->cov_err);
}

/* "heap": the malloc counts and the units; "mmaps"; "brk". */
static void json_heap(struct out *o, const struct account *a)
{
	const struct rt_stats *st = &a->st;
	put_fmt(o, ",\"heap\":{\"in_use\":%llu,\"peak\":%llu,\"mallocs\":%llu,\"frees\":%llu,\"units\":{",
		(unsigned long long)st->in_use, (unsigned long long)st->peak_in_use,
		(unsigned long long)st->mallocs, (unsigned long long)st->frees);
	for (size_t k = 0; k < N_UNIT_RUNGS; k++)
		put_fmt(o, "%s\"%s\":%llu", k ? "," : "", sp_backing_name(unit_rungs[k]),
			(unsigned long long)st->units[unit_rungs[k]]);
	put_fmt(o, "},\"units_peak\":%llu,\"large_blocks\":%llu,\"large_bytes\":%llu,"
		"\"mremaps\":%llu,\"released_units\":%llu,\"reused_units\":%llu",
		(unsigned long long)st->units_peak, (unsigned long long)st->large_blocks,
		(unsigned long long)st->large_bytes, (unsigned long long)st->mremaps,
		(unsigned long long)st->released_units, (unsigned long long)st->reused_units);
	put_fmt(o, ",\"unit_used_bytes\":%llu,\"unit_free_bytes\":%llu,\"full_unit_bytes\":%llu,"
		"\"kept_units\":%llu,\"dense_units\":%llu,\"dense_refused\":%llu",
		(unsigned long long)st->unit_used_bytes, (unsigned long long)st->unit_free_bytes,
		(unsigned long long)st->full_unit_bytes, (unsigned long long)st->kept_units,
		(unsigned long long)st->dense_units, (unsigned long long)st->dense_refused);
	put_fmt(o, ",\"chunk_maps\":%llu,\"chunk_held_units\":%llu,\"chunk_spare_units\":%llu",
		(unsigned long long)st->chunk_maps, (unsigned long long)st->chunk_held_units,
		(unsigned long long)st->chunk_spare_units);
	put_fmt(o, "},\"mmaps\":{\"small\":%llu,\"small_bytes\":%llu,\"large\":%llu,"
		"\"packed\":%llu,\"packed_collapsed\":%llu,\"packed_refused\":%llu,"
		"\"exec\":%llu,\"exec_bytes\":%llu,\"hints_moved\":%llu}",
		(unsigned long long)st->small_mmaps, (unsigned long long)st->small_mmap_bytes,
		(unsigned long long)st->large_mmaps, (unsigned long long)st->packed,
		(unsigned long long)st->packed_collapsed, (unsigned long long)st->packed_refused,
		(unsigned long long)a->maps.exec_maps, (unsigned long long)a->maps.exec_bytes,
		(unsigned long long)a->maps.hints_moved);
	put_fmt(o, ",\"brk\":{\"bytes\":%llu,\"peak\":%llu,\"emulated\":%s}",
		(unsigned long long)st->brk_bytes, (unsigned long long)st->brk_peak,
		st->brk_emulated ? "true" : "false");
	put_fmt(o, ",\"fork\":{\"shared\":%llu,\"moved_units\":%llu,\"short\":%llu,"
		"\"scanned_pages\":%llu}",
		(unsigned long long)st->forks_shared, (unsigned long long)st->fork_moved_units,
		(unsigned long long)st->forks_short, (unsigned long long)st->fork_scanned_pages);
}

/* "limits": the memory cgroup's (version 0: none mounted; limit 0: none) and what the
 * heap did near it; the hugetlb controller's limits, RLIMIT_AS and RLIMIT_DATA (0:
 * none). */
static void json_limits(struct out *o, const struct rt_stats *st)
{
	put_fmt(o, ",\"limits\":{\"memory_cgroup\":%d,\"memory_limit\":%llu,\"least_room\":%llu,"
		"\"looks\":%llu,\"near\":%llu,\"near_ns\":%llu,\"kept_units_given_back\":%llu,"
		"\"free_bytes_given_back\":%llu,\"base_units\":%llu,",
		st->limit_version, (unsigned long long)st->limit_bytes,
		(unsigned long long)st->limit_least_room, (unsigned long long)st->limit_looks,
		(unsigned long long)st->limit_nears,
		(unsigned long long)st->limit_near_ns, (unsigned long long)st->limit_kept_given,
		(unsigned long long)st->limit_free_given, (unsigned long long)st->limit_base_units);
	put_fmt(o, "\"hugetlb_2m_limit\":%llu,\"hugetlb_1g_limit\":%llu,\"rlimit_as\":%llu,"
		"\"rlimit_data\":%llu}",
		(unsigned long long)st->limit_hugetlb[0], (unsigned long long)st->limit_hugetlb[1],
		(unsigned long long)st->limit_as, (unsigned long long)st->limit_data);
}

/* "falls": {"rung":{"reason":N,...},...}, the rungs with none left out. */
static void json_falls(struct out *o, const struct rt_stats *st)
{
	bool first_rung = true;

	put_str(o, ",\"falls\":{");
	for (int b = 0; b < SP_BACKING_COUNT; b++) {
		bool first_why = true;

		for (int f = 0; f < SP_FALL_COUNT; f++) {
			if (!st->falls[b][f])
				continue;
			if (first_why)
				put_fmt(o, "%s\"%s\":{", first_rung ? "" : ",",
					sp_backing_name((enum sp_backing)b));
			put_fmt(o, "%s\"%s\":%llu", first_why ? "" : ",", sp_fall_name((enum sp_fall)f),
				(unsigned long long)st->falls[b][f]);
			first_why = first_rung = false;
		}
		if (!first_why)
			put_char(o, '}');
	}
	put_char(o, '}');
}

/* "shm", "text" and "stacks": what --shm, --text and --stacks did (zeros without). */
static void json_options(struct out *o, const struct account *a)
{
	put_fmt(o, ",\"shm\":{\"segments\":%llu,\"segment_bytes\":%llu,\"maps\":%llu,"
		"\"map_bytes\":%llu,\"segment_falls\":{", (unsigned long long)a->shm.segments,
		(unsigned long long)a->shm.segment_bytes, (unsigned long long)a->shm.maps,
		(unsigned long long)a->shm.map_bytes);
	put_shm_falls(o, a->shm.segment_falls, true);
	put_str(o, "},\"map_falls\":{");
	put_shm_falls(o, a->shm.map_falls, true);
	put_fmt(o, "}},\"text\":{\"objects\":%llu,\"text_bytes\":%llu,\"text_moved\":%llu,"
		"\"text_hugetlb\":%llu,\"text_page_cache\":%llu,\"data_moved\":%llu,"
		"\"unaligned_segments\":%llu,\"perf_map_symbols\":%llu,\"falls\":{",
		(unsigned long long)a->text.objects, (unsigned long long)a->text.text_bytes,
		(unsigned long long)a->text.text_moved, (unsigned long long)a->text.text_hugetlb,
		(unsigned long long)a->text.text_cached, (unsigned long long)a->text.data_moved,
		(unsigned long long)a->text.unaligned, (unsigned long long)a->text.perf_map_symbols);
	put_rung_falls(o, a->text.falls, true);
	put_fmt(o, "}},\"stacks\":{\"threads\":%llu,\"bytes\":%llu,\"maps\":%llu,\"reused\":%llu,"
		"\"unmaps\":%llu,\"live\":%llu,\"cached\":%llu,\"falls\":{",
		(unsigned long long)a->stacks.threads, (unsigned long long)a->stacks.bytes,
		(unsigned long long)a->stacks.maps, (unsigned long long)a->stacks.reused,
		(unsigned long long)a->stacks.unmaps, (unsigned long long)a->stacks.live,
		(unsigned long long)a->stacks.cached);
	put_shm_falls(o, a->stacks.falls, true);
	put_str(o, "}}");
}

void report_json(struct out *o, const struct account *a)
{
	json_coverage(o, a);
	json_heap(o, a);
	json_limits(o, &a->st);
	json_falls(o, &a->st);
	json_options(o, a);
	put_str(o, "}\n");
}
