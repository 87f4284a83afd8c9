/* get_huge_pages.c - get_huge_pages(3) and get_hugepage_region(3) on sp_alloc: strict hugetlb of
 * the default size, or superpage's ladder below it (GHR_FALLBACK), the start moved by
 * a cache line into the slack (GHR_COLOR); and their frees. */
#include <errno.h>
#include <stdatomic.h>
#include <unistd.h>

#include "hugetlbfs.h"
#include "htlb.h"

#define CACHE_LINE_DEFAULT 64

/* sp_alloc's flag for a huge page size, 0 for a size it does not serve. */
static unsigned rung_of(long size)
{
	if ((uint64_t)size == SP_2M_SIZE)
		return SP_2M;
	if ((uint64_t)size == SP_1G_SIZE)
		return SP_1G;
	return 0;
}

HTLB_EXPORT void *get_huge_pages(size_t len, ghp_t flags)
{
	const struct htlb_state *st = htlb_state();
	unsigned rung = rung_of(st->default_size);
	void *p;

	if (flags & GHR_MASK)
		htlb_say(HTLB_ERROR, "get_huge_pages: flags 0x%lx hold GHR_* flags of "
			 "get_hugepage_region(3); ignored", flags);
	if (!st->default_size) {
		errno = ENOSYS;
		return NULL;
	}
	if (!rung) {
		htlb_say(HTLB_ERROR, "get_huge_pages: %ld-byte pages are not served here "
			 "(2M and 1G are)", st->default_size);
		errno = EINVAL;
		return NULL;
	}
	p = sp_alloc(len, rung | SP_STRICT);
	if (!p)
		htlb_say(HTLB_INFO, "get_huge_pages: no %zu bytes of %ld-byte pages: %s", len,
			 st->default_size, errno == ENOMEM ? "too few free in the pool" :
			 "bad length");
	return p;
}

static long cache_line(void)
{
	static _Atomic long line;
	long l = atomic_load_explicit(&line, memory_order_relaxed);

	if (!l) {
		l = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
		if (l <= 0 || (l & (l - 1)))
			l = CACHE_LINE_DEFAULT;
		atomic_store_explicit(&line, l, memory_order_relaxed);
	}
	return l;
}

/* A cache line of the slack after a block's len bytes, a different one from call to
 * call (a Weyl sequence from the clock): its offset from the block's start. */
static size_t color_offset(size_t slack)
{
	static _Atomic uint64_t next;
	size_t lines = slack / (size_t)cache_line();
	uint64_t n;

	if (lines < 2)
		return 0;
	n = atomic_fetch_add_explicit(&next, 0x9e3779b97f4a7c15ull, memory_order_relaxed);
	if (n == 0) /* the first call: start where the clock says */
		n = sp_os->now_ns() * 0x9e3779b97f4a7c15ull;
	return (size_t)((n >> 32) % lines) * (size_t)cache_line();
}

HTLB_EXPORT void *get_hugepage_region(size_t len, ghr_t flags)
{
	const struct htlb_state *st = htlb_state();
	unsigned rung = rung_of(st->default_size);
	bool fallback = flags & GHR_FALLBACK;
	struct sp_block b;
	char *p;

	if (flags & GHP_MASK)
		htlb_say(HTLB_ERROR, "get_hugepage_region: flags 0x%lx hold GHP_DEFAULT of "
			 "get_huge_pages(3); ignored", flags);
	if (!rung && !fallback) {
		errno = st->default_size ? EINVAL : ENOSYS;
		return NULL;
	}
	/* Without huge pages of the default size, base pages are the fallback. */
	p = sp_alloc(len, !rung ? SP_4K : fallback ? rung : rung | SP_STRICT);
	if (!p || sp_block_info(p, &b) < 0)
		return p;
	if (fallback && (!rung || b.backing != (rung == SP_1G ? SP_BACKING_1G : SP_BACKING_2M)))
		htlb_say(HTLB_INFO, "get_hugepage_region: %zu bytes fell back to %s pages", len,
			 sp_backing_name(b.backing));
	if (flags & GHR_COLOR)
		p += color_offset(b.mapped - b.size);
	return p;
}

/* The block that holds p: one that starts there, or (not exact: a colored region)
 * one that starts at the base page, 2 MiB or 1 GiB below. */
static int block_of(void *p, bool exact, struct sp_block *out)
{
	const struct htlb_state *st = htlb_state();
	uintptr_t a = (uintptr_t)p;
	uintptr_t aligns[] = { 1, (uintptr_t)st->base_page, SP_2M_SIZE, SP_1G_SIZE };

	for (size_t i = 0; i < (exact ? 1 : sizeof aligns / sizeof *aligns); i++) {
		uintptr_t start = a & ~(aligns[i] - 1);
		if (aligns[i] && sp_block_info((void *)start, out) == 0 &&
		    a - start < out->mapped)
			return 0;
	}
	return -EINVAL;
}

static void release(void *p, bool exact, const char *who)
{
	struct sp_block b;

	if (!p)
		return;
	if (block_of(p, exact, &b) < 0) {
		htlb_say(HTLB_ERROR, "%s: %p was not given by this library (freed before?); "
			 "nothing freed", who, p);
		return;
	}
	sp_free(b.addr, b.size);
}

HTLB_EXPORT void free_huge_pages(void *ptr)
{
	release(ptr, true, "free_huge_pages");
}

HTLB_EXPORT void free_hugepage_region(void *ptr)
{
	release(ptr, false, "free_hugepage_region");
}
