/* report_text.c - the account as the text report's lines on stderr (superpage run
 * --stats): coverage by region and why not huge, malloc, units and mappings, what
 * --shm, --text and --stacks did, and the falls. */
#include "internal.h"
#include "report.h"

/* Starts a line of the text report: "superpage: pid N (comm): ". */
static void line_start(struct out *o, const struct account *a)
{
	size_t from;

	put_fmt(o, "superpage: pid %d", a->pid);
	if (a->comm[0]) {
		put_str(o, " (");
		from = o->len;
		put_str(o, a->comm);
		one_line(o, from);
		put_char(o, ')');
	}
	put_str(o, ": ");
}

/* "not huge, why: anon 70.0 MiB small, 2.0 MiB partial; text 3.9 MiB file": every
 * resident byte not on huge pages, by region, with its reason (sp_why). */
static void report_why(struct out *o, const struct account *a)
{
	bool any = false;
	for (int r = 0; r < SP_REGION_COUNT; r++) {
		const struct sp_usage *u = &a->cov.region[r];
		bool first = true;
		for (int w = 0; w < SP_WHY_COUNT; w++) {
			if (!u->not_huge[w])
				continue;
			if (!any) {
				line_start(o, a);
				put_str(o, "not huge, why:");
			}
			put_fmt(o, "%s", first ? (any ? "; " : " ") : ", ");
			if (first)
				put_fmt(o, "%s ", sp_region_name((enum sp_region)r));
			put_human(o, u->not_huge[w]);
			put_fmt(o, " %s", sp_why_name((enum sp_why)w));
			first = false;
			any = true;
		}
	}
	if (any)
		put_char(o, '\n');
}

/* The coverage smaps gives (or why there is none), by region, and why not huge. */
static void text_coverage(struct out *o, const struct account *a)
{
	bool any = false;

	line_start(o, a);
	if (a->cov_err < 0) {
		put_fmt(o, "cannot read /proc/self/smaps (errno %d): no coverage\n", -a->cov_err);
		return;
	}
	put_human(o, a->cov.rss_bytes);
	put_str(o, " resident, ");
	put_human(o, a->cov.huge_bytes);
	put_str(o, " on huge pages (");
	put_percent(o, a->cov.huge_bytes, a->cov.rss_bytes);
	put_str(o, "): hugetlb ");
	put_human(o, a->cov.hugetlb_bytes);
	put_str(o, ", THP ");
	put_human(o, a->cov.thp_bytes);
	if (a->hwm) {
		put_str(o, "; peak RSS ");
		put_human(o, a->hwm);
	}
	put_char(o, '\n');

	line_start(o, a);
	put_str(o, "resident by region:");
	for (int r = 0; r < SP_REGION_COUNT; r++) {
		const struct sp_usage *u = &a->cov.region[r];

		/* heap and anon always: they are what the runtime backs. */
		if (!u->bytes && r != SP_REGION_HEAP && r != SP_REGION_ANON)
			continue;
		put_fmt(o, "%s %s ", any ? "," : "", sp_region_name((enum sp_region)r));
		put_human(o, u->bytes);
		put_str(o, " (");
		put_percent(o, u->huge_bytes, u->bytes);
		put_str(o, " huge)");
		any = true;
	}
	put_char(o, '\n');
	report_why(o, a);
}

/* malloc's counts, and the program break. tlb: 2m or 1g, the break on hugetlb. */
static void text_malloc(struct out *o, const struct account *a, bool tlb)
{
	const struct rt_stats *st = &a->st;

	line_start(o, a);
	put_str(o, "malloc: ");
	put_human(o, st->in_use);
	put_str(o, " in use at exit, peak ");
	put_human(o, st->peak_in_use);
	put_fmt(o, "; %llu mallocs, %llu frees", (unsigned long long)st->mallocs,
		(unsigned long long)st->frees);
	if (st->brk_used) {
		put_str(o, "; program break ");
		put_human(o, st->brk_bytes);
		put_str(o, " (peak ");
		put_human(o, st->brk_peak);
		put_str(o, !st->brk_emulated ? ", the kernel's)"
			   : tlb ? ", emulated on hugetlb)" : ", emulated on THP)");
	}
	if (st->forks_shared)
		put_fmt(o, "; %llu forks shared hugetlb memory (%llu units moved to THP to make "
			"room in the pool, %llu forks short of room)",
			(unsigned long long)st->forks_shared, (unsigned long long)st->fork_moved_units,
			(unsigned long long)st->forks_short);
	put_char(o, '\n');
}

/* The 2 MiB units by rung, large blocks and the program's mmaps; then the memory of
 * the units: in use, free inside units in use, in full units. */
static void text_units(struct out *o, const struct account *a, bool tlb)
{
	const struct rt_stats *st = &a->st;
	bool any = false;

	line_start(o, a);
	put_str(o, "2 MiB units:");
	for (size_t k = 0; k < N_UNIT_RUNGS; k++) {
		if (!st->units[unit_rungs[k]])
			continue;
		put_fmt(o, "%s %llu %s", any ? "," : "", (unsigned long long)st->units[unit_rungs[k]],
			sp_backing_name(unit_rungs[k]));
		any = true;
	}
	put_fmt(o, "%s (peak %llu, %llu given back, %llu reused", any ? "" : " none",
		(unsigned long long)st->units_peak, (unsigned long long)st->released_units,
		(unsigned long long)st->reused_units);
	if (st->dense_units || st->dense_refused)
		put_fmt(o, ", %llu made huge when dense (%llu collapses refused)",
			(unsigned long long)st->dense_units, (unsigned long long)st->dense_refused);
	put_fmt(o, "); %llu large blocks (", (unsigned long long)st->large_blocks);
	put_human(o, st->large_bytes);
	put_fmt(o, "), %llu mremaps; mmaps: %llu small from units (", (unsigned long long)st->mremaps,
		(unsigned long long)st->small_mmaps);
	put_human(o, st->small_mmap_bytes);
	put_fmt(o, " now), %llu large %s", (unsigned long long)st->large_mmaps,
		tlb ? "(on hugetlb units while the pool had pages)" : "aligned");
	if (st->packed)
		put_fmt(o, ", %llu packed (%llu units collapsed, %llu refused)",
			(unsigned long long)st->packed, (unsigned long long)st->packed_collapsed,
			(unsigned long long)st->packed_refused);
	if (a->maps.exec_maps) {
		put_fmt(o, ", %llu writable and executable (", (unsigned long long)a->maps.exec_maps);
		put_human(o, a->maps.exec_bytes);
		put_str(o, ") advised for THP");
	}
	if (a->maps.hints_moved)
		put_fmt(o, ", %llu at hints the kernel would not honour placed on 2 MiB boundaries "
			"or packed", (unsigned long long)a->maps.hints_moved);
	put_char(o, '\n');

	line_start(o, a);
	put_str(o, "in units: ");
	put_human(o, st->unit_used_bytes);
	put_str(o, " in use, ");
	put_human(o, st->unit_free_bytes);
	put_str(o, " free inside units in use (");
	put_percent(o, st->unit_free_bytes, st->unit_used_bytes + st->unit_free_bytes);
	put_str(o, " of their memory), ");
	put_percent(o, st->full_unit_bytes, st->unit_used_bytes);
	put_fmt(o, " of what is in use in full units; %llu empty units kept",
		(unsigned long long)st->kept_units);
	if (st->chunk_maps)
		put_fmt(o, "; 2 MiB pages in %llu mappings, %llu units of them held not in use "
			"(%llu reserved, not yet given out)", (unsigned long long)st->chunk_maps,
			(unsigned long long)st->chunk_held_units,
			(unsigned long long)st->chunk_spare_units);
	put_char(o, '\n');
}

/* The limits the process runs under, if any, and what the heap did near the memory
 * cgroup's: "limits: memory cgroup v1 512.0 MiB, least room 9.1 MiB; near it 1 time
 * (0.4 s): 0 empty units and 16.5 MiB of free pages given back, 12 units on base
 * pages rather than THP". */
static void text_limits(struct out *o, const struct account *a)
{
	const struct rt_stats *st = &a->st;
	static const char *const huge[2] = { "2 MiB", "1 GiB" };

	if (!st->limit_bytes && !st->limit_hugetlb[0] && !st->limit_hugetlb[1] && !st->limit_as &&
	    !st->limit_data)
		return;
	line_start(o, a);
	put_str(o, "limits:");
	if (st->limit_bytes) {
		put_fmt(o, " memory cgroup v%d ", st->limit_version);
		put_human(o, st->limit_bytes);
		put_str(o, ", least room ");
		put_human(o, st->limit_least_room);
		if (st->limit_nears) {
			put_fmt(o, "; near it %llu time%s (%llu.%llu s): %llu empty units and ",
				(unsigned long long)st->limit_nears, st->limit_nears == 1 ? "" : "s",
				(unsigned long long)(st->limit_near_ns / 1000000000ull),
				(unsigned long long)(st->limit_near_ns / 100000000ull % 10),
				(unsigned long long)st->limit_kept_given);
			put_human(o, st->limit_free_given);
			put_fmt(o, " of free pages given back, %llu units on base pages rather than THP",
				(unsigned long long)st->limit_base_units);
		} else {
			put_str(o, "; never near it");
		}
		put_char(o, ';');
	}
	for (int g = 0; g < 2; g++)
		if (st->limit_hugetlb[g]) {
			put_fmt(o, " hugetlb cgroup %s pages ", huge[g]);
			put_human(o, st->limit_hugetlb[g]);
			put_char(o, ';');
		}
	if (st->limit_as) {
		put_str(o, " RLIMIT_AS ");
		put_human(o, st->limit_as);
		put_char(o, ';');
	}
	if (st->limit_data) {
		put_str(o, " RLIMIT_DATA ");
		put_human(o, st->limit_data);
		put_char(o, ';');
	}
	if (o->len && o->buf[o->len - 1] == ';')
		o->len--;
	put_char(o, '\n');
}

/* --shm: SysV segments and shared mappings on hugetlb, and the falls. */
static void text_shm(struct out *o, const struct account *a)
{
	line_start(o, a);
	put_fmt(o, "shm on 2 MiB hugetlb: %llu SysV segments (",
		(unsigned long long)a->shm.segments);
	put_human(o, a->shm.segment_bytes);
	put_fmt(o, "), %llu shared mappings (", (unsigned long long)a->shm.maps);
	put_human(o, a->shm.map_bytes);
	put_str(o, "); segments left on base pages:");
	if (!put_shm_falls(o, a->shm.segment_falls, false))
		put_str(o, " none");
	put_str(o, "; mappings:");
	if (!put_shm_falls(o, a->shm.map_falls, false))
		put_str(o, " none");
	put_char(o, '\n');
}

/* --text: text and data moved to huge pages, and what was left as it was. */
static void text_text(struct out *o, const struct account *a)
{
	line_start(o, a);
	put_str(o, "text on huge pages: ");
	put_human(o, a->text.text_moved + a->text.text_cached);
	put_str(o, " of ");
	put_human(o, a->text.text_bytes);
	put_str(o, " (");
	put_human(o, a->text.text_hugetlb);
	put_str(o, " hugetlb, ");
	put_human(o, a->text.text_cached);
	put_fmt(o, " left in the page cache) in %llu objects, data ",
		(unsigned long long)a->text.objects);
	put_human(o, a->text.data_moved);
	put_fmt(o, " on THP; %llu segments unaligned; left as they were:",
		(unsigned long long)a->text.unaligned);
	if (!put_rung_falls(o, a->text.falls, false))
		put_str(o, " none");
	put_char(o, '\n');
}

/* --stacks: threads on stacks of ours, and those left to glibc. */
static void text_stacks(struct out *o, const struct account *a)
{
	line_start(o, a);
	put_fmt(o, "thread stacks on THP: %llu threads (", (unsigned long long)a->stacks.threads);
	put_human(o, a->stacks.bytes);
	put_fmt(o, "), %llu mapped, %llu reused, %llu unmapped; left to glibc:",
		(unsigned long long)a->stacks.maps, (unsigned long long)a->stacks.reused,
		(unsigned long long)a->stacks.unmaps);
	if (!put_shm_falls(o, a->stacks.falls, false))
		put_str(o, " none");
	put_char(o, '\n');
}

void report_text(struct out *o, const struct account *a)
{
	const struct sp_options *opt = rt_options();
	/* 2m, 1g: the break and large mappings on hugetlb pages while the pool had them */
	bool tlb = opt->backing == SP_BACKING_2M || opt->backing == SP_BACKING_1G;

	text_coverage(o, a);
	text_malloc(o, a, tlb);
	text_units(o, a, tlb);
	text_limits(o, a);
	if (opt->shm)
		text_shm(o, a);
	if (opt->text != SP_TEXT_NO)
		text_text(o, a);
	if (opt->stacks)
		text_stacks(o, a);
	line_start(o, a);
	put_str(o, "fallbacks:");
	put_str(o, put_rung_falls(o, a->st.falls, false) ? "\n" : " none\n");
}
