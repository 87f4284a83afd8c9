/* promote.c - collapses a running process's memory onto 2 MiB pages: ranked, in chunks, paced, every refusal a reason. */
#include <errno.h>
#include <string.h>

#include "promote.h"

static const char *const why_names[SP_PROMOTE_WHY_COUNT] = {
	[SP_PROMOTE_FILE] = "file",           [SP_PROMOTE_SHARED] = "shared",
	[SP_PROMOTE_SPECIAL] = "special",     [SP_PROMOTE_NOHUGEPAGE] = "nohugepage",
	[SP_PROMOTE_THP_OFF] = "thp_off",     [SP_PROMOTE_SMALL] = "small",
	[SP_PROMOTE_SPARSE] = "sparse",       [SP_PROMOTE_BUDGET] = "budget",
	[SP_PROMOTE_NO_MEMORY] = "no_memory", [SP_PROMOTE_BUSY] = "busy",
	[SP_PROMOTE_CHANGED] = "changed",     [SP_PROMOTE_REFUSED] = "refused",
	[SP_PROMOTE_GONE] = "gone",           [SP_PROMOTE_PERMISSION] = "permission",
	[SP_PROMOTE_UNSUPPORTED] = "unsupported", [SP_PROMOTE_STOPPED] = "stopped",
};

const char *sp_promote_why_name(enum sp_promote_why w)
{
	return (unsigned)w < SP_PROMOTE_WHY_COUNT ? why_names[w] : "?";
}

bool sp_promote_why_transient(enum sp_promote_why w)
{
	return w == SP_PROMOTE_NO_MEMORY || w == SP_PROMOTE_BUSY || w == SP_PROMOTE_BUDGET ||
	       w == SP_PROMOTE_STOPPED;
}

const char *sp_promote_rank_name(enum sp_promote_rank r)
{
	static const char *const names[] = { "resident", "mapping", "hot" };
	return (unsigned)r < 3 ? names[r] : "?";
}

void sp_promote_options_default(struct sp_promote_options *o)
{
	memset(o, 0, sizeof *o);
	o->hot_ns = 1000000000ull;
	o->chunk_bytes = 32ull << 20;
	o->pause_ns = 5000000ull;
	o->slow_ns = 50000000ull;
	o->max_pause_ns = 1000000000ull;
	o->max_failures = 8;
}

/* ---------- ranking: a heap sort (qsort may malloc) ---------- */

static uint64_t rank_key(const struct pr_range *g)
{
	/* Hotter first, then fuller; a skipped range last. */
	if (g->outcome == PR_SKIPPED)
		return 0;
	return ((uint64_t)g->hot << 16 | g->present) + 1;
}

/* True if a goes after b: by key descending, then by address. */
static bool after(const struct pr_range *a, const struct pr_range *b, bool by_address)
{
	if (!by_address) {
		uint64_t ka = rank_key(a), kb = rank_key(b);
		if (ka != kb)
			return ka < kb;
	}
	return a->start > b->start;
}

static void sift(struct pr_range *v, size_t i, size_t n, bool by_address)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			return;
		if (c + 1 < n && after(&v[c + 1], &v[c], by_address))
			c++;
		if (!after(&v[c], &v[i], by_address))
			return;
		struct pr_range x = v[i];
		v[i] = v[c];
		v[c] = x;
		i = c;
	}
}

static void sort_ranges(struct pr_range *v, size_t n, bool by_address)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n, by_address);
	for (size_t end = n; end > 1; end--) {
		struct pr_range x = v[0];
		v[0] = v[end - 1];
		v[end - 1] = x;
		sift(v, 0, end - 1, by_address);
	}
}

/* ---------- the kernel's answers ---------- */

/* A refusal for the whole process: its reason, or -1 if it is about the range. */
static int fatal_why(int err)
{
	switch (err) {
	case -ESRCH:
		return SP_PROMOTE_GONE;
	case -EPERM:
	case -EACCES:
		return SP_PROMOTE_PERMISSION;
	case -ENOSYS:
		return SP_PROMOTE_UNSUPPORTED;
	default:
		return -1;
	}
}

/* Why the kernel refused one range (err: -errno). */
static enum sp_promote_why range_why(pid_t pid, const struct pr_range *g, int err)
{
	switch (err) {
	case -EAGAIN:
		return SP_PROMOTE_BUSY;
	case -EBUSY:
		return SP_PROMOTE_NO_MEMORY;
	case -ENOMEM:
	case -EINVAL:
	case -EFAULT: {
		/* ENOMEM is also "part of the range is not mapped", and EINVAL a mapping
		 * that is no longer what it was: the maps file tells which. */
		int still = pr_still_mapped(pid, g);
		if (still == -ESRCH)
			return SP_PROMOTE_GONE;
		if (still == 0)
			return SP_PROMOTE_CHANGED;
		return err == -ENOMEM ? SP_PROMOTE_NO_MEMORY : SP_PROMOTE_REFUSED;
	}
	default:
		return SP_PROMOTE_REFUSED;
	}
}

static void mark(struct pr_range *g, enum sp_promote_why why, int err)
{
	g->outcome = PR_SKIPPED;
	g->why = (uint8_t)why;
	g->err = (int16_t)err;
}

/* The pidfd, and whether process_madvise takes MADV_COLLAPSE for it (an empty
 * vector: the kernel checks the call, the advice and the rights, and advises
 * nothing). 0, or the -errno that holds for the whole process. */
static int open_target(pid_t pid, int *pidfd)
{
	int fd = sp_os->pidfd_open(pid);
	if (fd < 0)
		return fd;
	struct iovec none = { NULL, 0 };
	ssize_t r = sp_os->process_madvise(fd, &none, 1, MADV_COLLAPSE);
	if (r < 0) {
		sp_os->close(fd);
		return (int)r;
	}
	*pidfd = fd;
	return 0;
}

/* ---------- the pass ---------- */

#define PR_BATCH_MAX 64 /* ranges in one call at most (128 MiB) */

struct pace {
	uint64_t pause;       /* the pause after this chunk */
	uint64_t in_chunk;    /* bytes asked in this chunk */
	bool backoff;         /* something was slow or failed in it */
	int failures;         /* for want of memory, in a row */
};

static void pause_now(const struct sp_promote_options *o, struct sp_promote_result *r,
		      struct pace *p)
{
	if (p->backoff) {
		p->pause = p->pause * 2 > o->max_pause_ns ? o->max_pause_ns : p->pause * 2;
		r->backoffs++;
	} else if (p->pause / 2 >= o->pause_ns) {
		p->pause /= 2;
	} else {
		p->pause = o->pause_ns;
	}
	r->chunks++;
	uint64_t t0 = sp_os->now_ns();
	if (p->pause)
		sp_os->sleep_ns(p->pause);
	r->paused_ns += sp_os->now_ns() - t0;
	p->in_chunk = 0;
	p->backoff = false;
}

/* How many ranges from i go in one call: the next in rank order while they follow
 * each other in the same mapping, at most max. MADV_COLLAPSE drains every CPU's LRU
 * caches once per call: a run of ranges in one call pays that once. */
static size_t batch_len(const struct pr_target *t, size_t i, size_t max)
{
	size_t k = 1;
	while (k < max && i + k < t->n) {
		const struct pr_range *g = &t->ranges[i + k], *prev = g - 1;
		if (g->outcome != PR_UNTRIED || g->start != prev->start + SP_2M_SIZE ||
		    g->map_start != prev->map_start)
			break;
		k++;
	}
	return k;
}

/* Collapses the k ranges from g in one call: the number collapsed. ends: the pass
 * ends here, for that reason. A refused call is followed by a look at which ranges
 * are huge now (the kernel goes on past most refusals); the others get its reason. */
static size_t collapse_batch(struct pr_target *t, int pidfd, struct pr_range *g, size_t k,
			     struct pace *p, int *ends)
{
	const struct sp_promote_options *o = t->o;
	struct sp_promote_result *r = t->r;
	struct iovec v = { (void *)(uintptr_t)g->start, k * SP_2M_SIZE };
	uint64_t t0 = sp_os->now_ns();
	ssize_t n = sp_os->process_madvise(pidfd, &v, 1, MADV_COLLAPSE);
	uint64_t took = sp_os->now_ns() - t0;
	bool huge[PR_BATCH_MAX];
	size_t done = 0;

	r->tried += k;
	r->collapse_ns += took;
	if (took / k > r->slowest_ns)
		r->slowest_ns = took / k;
	p->in_chunk += k * SP_2M_SIZE;
	if (took / k > o->slow_ns)
		p->backoff = true;
	int err = n < 0 ? (int)n : 0, why = err ? fatal_why(err) : -1;
	if (why >= 0) {
		*ends = why;
		for (size_t i = 0; i < k; i++)
			mark(&g[i], (enum sp_promote_why)why, err);
		return 0;
	}
	for (size_t i = 0; i < k; i++)
		huge[i] = !err;
	if (err && k > 1 && pr_huge_now(t->pid, g, k, huge) == -ESRCH) {
		*ends = SP_PROMOTE_GONE;
		for (size_t i = 0; i < k; i++)
			mark(&g[i], SP_PROMOTE_GONE, err);
		return 0;
	}
	why = -1;
	for (size_t i = 0; i < k; i++) {
		if (huge[i]) {
			g[i].outcome = PR_COLLAPSED;
			done++;
			continue;
		}
		if (why < 0)
			why = range_why(t->pid, &g[i], err);
		mark(&g[i], (enum sp_promote_why)why, err);
	}
	r->collapsed += done;
	r->collapsed_bytes += done * SP_2M_SIZE;
	if (why == SP_PROMOTE_GONE)
		*ends = why;
	if (why == SP_PROMOTE_NO_MEMORY || why == SP_PROMOTE_BUSY) {
		p->backoff = true;
		if (++p->failures >= o->max_failures)
			*ends = SP_PROMOTE_STOPPED;
	} else if (done) {
		p->failures = 0;
	}
	return done;
}

/* Asks for the ranges in rank order, within the budget; the rest get a reason. */
static void pass(struct pr_target *t, int pidfd)
{
	const struct sp_promote_options *o = t->o;
	struct sp_promote_result *r = t->r;
	struct pace p = { o->pause_ns, 0, false, 0 };
	uint64_t used = 0;
	int ends = -1;
	/* Without PAGEMAP_SCAN a refused call cannot tell which ranges it did: one each. */
	size_t most = r->rank == SP_RANK_MAPPING ? 1 : PR_BATCH_MAX;

	for (size_t i = 0; i < t->n;) {
		struct pr_range *g = &t->ranges[i];
		if (g->outcome != PR_UNTRIED) {
			i++;
			continue;
		}
		if (ends < 0 && o->stop && *o->stop)
			ends = SP_PROMOTE_STOPPED;
		if (ends >= 0) {
			/* The rest: the process is gone, or refused, or the pass stopped. */
			mark(g, (enum sp_promote_why)(ends == SP_PROMOTE_GONE || ends == SP_PROMOTE_PERMISSION ||
						      ends == SP_PROMOTE_UNSUPPORTED ? ends : SP_PROMOTE_STOPPED), 0);
			i++;
			continue;
		}
		if (r->budget && used + SP_2M_SIZE > r->budget) {
			mark(g, SP_PROMOTE_BUDGET, 0);
			i++;
			continue;
		}
		if (o->dry_run) {
			g->outcome = PR_WOULD;
			r->tried++;
			used += SP_2M_SIZE;
			i++;
			continue;
		}
		/* At most what is left of the chunk and of the budget, in one call. */
		size_t max = most, room = (size_t)((o->chunk_bytes - p.in_chunk) / SP_2M_SIZE);
		if (o->chunk_bytes > p.in_chunk && room < max)
			max = room;
		if (r->budget && (r->budget - used) / SP_2M_SIZE < max)
			max = (size_t)((r->budget - used) / SP_2M_SIZE);
		if (max < 1)
			max = 1;
		size_t k = batch_len(t, i, max);
		/* The budget is of memory put on huge pages: a refusal takes none of it. */
		used += collapse_batch(t, pidfd, g, k, &p, &ends) * SP_2M_SIZE;
		i += k;
		if (ends < 0 && i < t->n && (p.backoff || p.in_chunk >= o->chunk_bytes))
			pause_now(o, r, &p);
	}
}

/* The ranges' outcomes as skips, in address order with the mappings' own. */
static void report(struct pr_target *t)
{
	struct sp_promote_result *r = t->r;
	sort_ranges(t->ranges, t->n, true);
	for (size_t i = 0; i < t->n; i++) {
		const struct pr_range *g = &t->ranges[i];
		if (g->outcome == PR_SKIPPED)
			pr_skip(r, g->start, g->start + SP_2M_SIZE, (uint64_t)g->present * 4096,
				(enum sp_promote_why)g->why, (enum sp_region)g->region, g->err);
	}
	/* Insertion sort of at most SP_PROMOTE_MAX_SKIPS, mostly in order already. */
	for (int i = 1; i < r->n_skips; i++) {
		struct sp_promote_skip x = r->skips[i];
		int j = i;
		for (; j > 0 && r->skips[j - 1].start > x.start; j--)
			r->skips[j] = r->skips[j - 1];
		r->skips[j] = x;
	}
}

/* Leaves the candidates at the front, in rank order; the rest are skips already or
 * hold nothing to collapse. */
static void pick(struct pr_target *t)
{
	struct sp_promote_result *r = t->r;
	size_t keep = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct pr_range g = t->ranges[i];
		if (g.outcome == PR_UNTRIED && g.present == 0)
			continue; /* nothing resident, or on a huge page already */
		if (g.outcome == PR_UNTRIED && g.present < t->min_present)
			mark(&g, SP_PROMOTE_SPARSE, 0);
		if (g.outcome == PR_UNTRIED) {
			r->candidates++;
			r->candidate_bytes += (uint64_t)g.present * 4096;
		}
		t->ranges[keep++] = g;
	}
	t->n = keep;
	sort_ranges(t->ranges, t->n, false);
}

int sp_promote(pid_t pid, const struct sp_promote_options *o, struct sp_promote_result *r)
{
	struct sp_promote_options def;
	struct pr_target t = { .pid = pid, .r = r };
	int pidfd = -1;

	if (!o) {
		sp_promote_options_default(&def);
		o = &def;
	}
	t.o = o;
	memset(r, 0, sizeof *r);
	r->pid = pid;
	if (pid <= 0)
		return r->fatal = -ESRCH;
	uint64_t t0 = sp_os->now_ns();
	int e = open_target(pid, &pidfd);
	if (e == 0)
		e = pr_scan(&t);
	if (e < 0) {
		r->fatal = e;
		if (pidfd >= 0)
			sp_os->close(pidfd);
		pr_target_free(&t);
		r->elapsed_ns = sp_os->now_ns() - t0;
		return r->fatal;
	}
	if (o->budget_bytes)
		r->budget = o->budget_bytes;
	if (o->budget_share > 0) {
		uint64_t b = (uint64_t)(o->budget_share * (double)r->rss_before);
		if (!r->budget || b < r->budget)
			r->budget = b;
	}
	pick(&t);
	pass(&t, pidfd);
	report(&t);
	sp_os->close(pidfd);
	pr_target_free(&t);
	if (o->dry_run) {
		r->rss_after = r->rss_before;
		r->huge_after = r->huge_before;
		for (int i = 0; i < SP_REGION_COUNT; i++)
			r->region[i].huge_after = r->region[i].huge_before;
	} else if (pr_scan_after(&t) < 0) {
		/* Gone meanwhile: nothing to read after. */
		r->rss_after = r->huge_after = 0;
		for (int i = 0; i < SP_REGION_COUNT; i++)
			r->region[i].huge_after = 0;
	}
	r->elapsed_ns = sp_os->now_ns() - t0;
	return (int)(o->dry_run ? r->tried : r->collapsed);
}
