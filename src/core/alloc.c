/* alloc.c - sp_alloc/sp_free: the fallback ladder 1G -> 2M hugetlb -> THP -> base pages,
 * which counts every fall by reason and remembers a rung that just failed. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define BACKING_FLAGS (SP_4K | SP_THP | SP_2M | SP_1G)
#define KNOWN_FLAGS (BACKING_FLAGS | SP_STRICT | SP_POPULATE)
#define MAX_SIZE (1ull << 46)

static _Atomic uint64_t st_blocks[SP_BACKING_COUNT], st_bytes[SP_BACKING_COUNT];
static _Atomic uint64_t st_live, st_collapses;
/* The hugetlb rungs refused lately: not asked again for a while (rung.c), unless a
 * block of the rung is freed first. */
static struct sp_rung_skip skips[SP_BACKING_COUNT];

static void fall(enum sp_backing rung, enum sp_fall why)
{
	sp_fall(SP_SITE_ALLOC, rung, why);
}

static void atfork_prepare(void) { sp_registry_lock_for_fork(); }
static void atfork_release(void) { sp_registry_unlock_after_fork(); }

/* At load time, not on the allocation path: glibc's pthread_atfork may call malloc. */
__attribute__((constructor)) static void alloc_init(void)
{
	pthread_atfork(atfork_prepare, atfork_release, atfork_release);
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* Faults in [p, p+len) for writing: MADV_POPULATE_WRITE, or a store per page (a
 * kernel before 5.14 does not know the advice). */
static void populate(void *p, size_t len, const struct sp_view *v)
{
	if (sp_os->madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
	uint64_t step = v->base_page_size ? v->base_page_size : 4096;
	for (size_t off = 0; off < len; off += step)
		((volatile char *)p)[off] = 0;
}

/* One hugetlb rung (refusals counted by the rung service). Reserved at map time: no
 * MAP_NORESERVE, ever. */
static int try_hugetlb(enum sp_backing rung, size_t size, unsigned flags,
		       const struct sp_view *v, void **out, size_t *mapped)
{
	bool is_1g = rung == SP_BACKING_1G;
	uint64_t ps = is_1g ? SP_1G_SIZE : SP_2M_SIZE;
	if (!(is_1g ? v->has_1g : v->has_2m)) {
		fall(rung, SP_FALL_UNSUPPORTED);
		return SP_FALL_UNSUPPORTED;
	}
	struct sp_rung_ask ask = { .site = SP_SITE_ALLOC, .rung = rung, .skip = &skips[rung],
				   .size = size, .strict = flags & SP_STRICT };
	size_t len = round_up(size, ps);
	int why = sp_rung_map(&ask, len, flags & SP_POPULATE ? MAP_POPULATE : 0, out);
	if (why < 0)
		*mapped = len;
	return why;
}

/* How much of [p, p+len) is on huge pages, per smaps; -1 if smaps cannot be read. */
static int64_t huge_bytes_of(void *p, size_t len)
{
	struct sp_verify ver;
	if (sp_verify_range(p, len, &ver) < 0)
		return -1;
	return (int64_t)ver.huge_bytes;
}

static int try_thp(size_t size, unsigned flags, const struct sp_view *v, void **out,
		   size_t *mapped, enum sp_backing *got)
{
	bool populate_now = flags & SP_POPULATE;
	if (!v->thp_present)
		return SP_FALL_UNSUPPORTED;
	if (v->features.thp_disabled_here)
		return SP_FALL_THP_OFF;
	if (v->thp_never && !(populate_now && sp_view_has_collapse()))
		return SP_FALL_THP_OFF;
	size_t len = round_up(size, SP_2M_SIZE);
	void *p;
	if (sp_map_aligned(len, SP_2M_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   &p) < 0)
		return SP_FALL_MMAP;
	if (sp_os->madvise(p, len, MADV_HUGEPAGE) < 0) {
		sp_os->munmap(p, len);
		return SP_FALL_MADVISE;
	}
	*got = SP_BACKING_THP;
	if (populate_now) {
		populate(p, len, v);
		int64_t huge = huge_bytes_of(p, len);
		if (huge >= 0 && (uint64_t)huge < len && sp_view_has_collapse() &&
		    sp_os->madvise(p, len, MADV_COLLAPSE) == 0) {
			atomic_fetch_add_explicit(&st_collapses, 1, memory_order_relaxed);
			huge = huge_bytes_of(p, len);
		}
		if (huge >= 0 && (uint64_t)huge < len) {
			if (flags & SP_STRICT) {
				sp_os->munmap(p, len);
				return SP_FALL_NOT_HUGE;
			}
			fall(SP_BACKING_THP, SP_FALL_NOT_HUGE);
			if (huge == 0)
				*got = SP_BACKING_4K;
		}
	}
	*out = p;
	*mapped = len;
	return -1;
}

static int try_base(size_t size, unsigned flags, const struct sp_view *v, void **out,
		    size_t *mapped)
{
	size_t len = round_up(size, v->base_page_size ? v->base_page_size : 4096);
	if (sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			out) < 0)
		return SP_FALL_MMAP;
	/* An honest base-page block, even where THP is "always". */
	sp_os->madvise(*out, len, MADV_NOHUGEPAGE);
	if (flags & SP_POPULATE)
		populate(*out, len, v);
	*mapped = len;
	return -1;
}

static enum sp_backing first_rung(size_t size, unsigned flags, const struct sp_view *v)
{
	switch (flags & BACKING_FLAGS) {
	case SP_4K: return SP_BACKING_4K;
	case SP_THP: return SP_BACKING_THP;
	case SP_2M: return SP_BACKING_2M;
	case SP_1G: return SP_BACKING_1G;
	}
	if (v->has_1g && size >= SP_1G_SIZE && round_up(size, SP_1G_SIZE) - size <= size / 8)
		return SP_BACKING_1G;
	return SP_BACKING_2M;
}

/* The next rung down: 1G -> 2M -> THP -> 4K -> none (AUTO). */
static enum sp_backing ladder_next(enum sp_backing b)
{
	switch (b) {
	case SP_BACKING_1G: return SP_BACKING_2M;
	case SP_BACKING_2M: return SP_BACKING_THP;
	case SP_BACKING_THP: return SP_BACKING_4K;
	default: return SP_BACKING_AUTO;
	}
}

void *sp_alloc(size_t size, unsigned flags)
{
	int saved = errno;
	unsigned bf = flags & BACKING_FLAGS;
	if (size == 0 || size > MAX_SIZE || (flags & ~KNOWN_FLAGS) || (bf & (bf - 1))) {
		errno = EINVAL;
		return NULL;
	}
	const struct sp_view *v = sp_view_get();
	void *p = NULL;
	size_t mapped = 0;
	enum sp_backing got = SP_BACKING_AUTO;
	for (enum sp_backing rung = first_rung(size, flags, v); rung != SP_BACKING_AUTO;
	     rung = ladder_next(rung)) {
		int why;
		got = rung;
		if (rung == SP_BACKING_1G || rung == SP_BACKING_2M)
			why = try_hugetlb(rung, size, flags, v, &p, &mapped); /* (counted) */
		else if (rung == SP_BACKING_THP)
			why = try_thp(size, flags, v, &p, &mapped, &got);
		else
			why = try_base(size, flags, v, &p, &mapped);
		if (why < 0)
			break;
		if (rung != SP_BACKING_1G && rung != SP_BACKING_2M)
			fall(rung, (enum sp_fall)why);
		p = NULL;
		if (flags & SP_STRICT)
			break;
	}
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	struct sp_block b = { .addr = p, .size = size, .mapped = mapped, .flags = flags, .backing = got };
	if (sp_registry_add(&b) < 0) {
		sp_os->munmap(p, mapped);
		errno = ENOMEM;
		return NULL;
	}
	atomic_fetch_add_explicit(&st_blocks[got], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_bytes[got], mapped, memory_order_relaxed);
	atomic_fetch_add_explicit(&st_live, 1, memory_order_relaxed);
	errno = saved;
	return p;
}

int sp_free(void *p, size_t size)
{
	struct sp_block b;
	if (sp_registry_find(p, &b) < 0 || size > b.size)
		return -EINVAL;
	/* Another thread may free the same block between find and remove: only the one
	 * that removes it unmaps. */
	if (sp_registry_remove(p, &b) < 0)
		return -EINVAL;
	int r = sp_os->munmap(b.addr, b.mapped);
	atomic_fetch_sub_explicit(&st_live, 1, memory_order_relaxed);
	if (b.backing == SP_BACKING_1G || b.backing == SP_BACKING_2M)
		sp_rung_forget(&skips[b.backing]);
	return r < 0 ? r : 0;
}

int sp_block_info(const void *p, struct sp_block *out)
{
	return sp_registry_find(p, out);
}

void sp_stats_get(struct sp_stats *out)
{
	memset(out, 0, sizeof *out);
	for (int b = 0; b < SP_BACKING_COUNT; b++) {
		out->blocks[b] = atomic_load(&st_blocks[b]);
		out->bytes[b] = atomic_load(&st_bytes[b]);
	}
	sp_falls_get(SP_SITE_ALLOC, out->falls);
	out->live_blocks = atomic_load(&st_live);
	out->collapses = atomic_load(&st_collapses);
}

void sp_stats_reset(void)
{
	for (int b = 0; b < SP_BACKING_COUNT; b++) {
		atomic_store(&st_blocks[b], 0);
		atomic_store(&st_bytes[b], 0);
	}
	sp_falls_reset(SP_SITE_ALLOC);
	atomic_store(&st_collapses, 0);
}

void sp_refresh(void)
{
	for (int i = 0; i < SP_BACKING_COUNT; i++)
		sp_rung_forget(&skips[i]);
	sp_view_refresh();
}
