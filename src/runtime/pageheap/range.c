/* range.c - the range: where it lies and how it grows and shrinks, its metadata, the
 * page map and the span descriptors. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "bits.h"
#include "internal.h"
#include "pageheap/unit_os.h"
#include "units.h"

#define GROW_UNITS 32       /* the writable part of the range grows 64 MiB at a time */
#define LAZY_LO ((uintptr_t)1 << 44)      /* lazy ranges start in [16, 32) TiB */
#define LAZY_SLOTS ((size_t)1 << 14)      /* ... at one of these GiBs */
#define RANGE_MAX_MIB ((size_t)256 << 10)

struct heap_hot heap_hot;

static struct {
	struct span *free;
	char *chunk;
	size_t left;
} spans; /* span descriptors: freed ones, and the rest of the chunk cut last */

int range_grow(size_t need_units)
{
	size_t want = need_units > pg.frontier + GROW_UNITS ? need_units : pg.frontier + GROW_UNITS;
	if (pg.tight)
		want = need_units;
	if (want > pg.max_units)
		want = pg.max_units;
	if (want < need_units)
		return -ENOMEM;
	/* Near a limit (or, lazy, below a mapping of the program's), what is needed
	 * may still be had. */
	int r = claim_space(pg.frontier, want);
	if (r < 0 && want > need_units)
		r = claim_space(pg.frontier, want = need_units);
	if (r == -EEXIST) {
		/* Lazy: a mapping that is not ours lies there; the range ends here. */
		pg.max_units = pg.frontier;
		rt_verbose(1, "the heap's range ends at %zu MiB: a mapping of the program's "
			   "lies above it", pg.frontier << UNIT_SHIFT >> 20);
		return -ENOMEM;
	}
	if (r < 0)
		return r;
	size_t add = want - pg.frontier;
	/* One page of pagemap per unit: 512 pointers; and one of page info. */
	r = unit_make_rw((char *)heap_hot.pagemap + pg.frontier * PAGE_SIZE, add * PAGE_SIZE);
	uintptr_t i0 = (uintptr_t)(heap_hot.pageinfo + pg.frontier * PAGES_PER_UNIT) & ~(PAGE_SIZE - 1);
	uintptr_t i1 = (uintptr_t)(heap_hot.pageinfo + want * PAGES_PER_UNIT);
	if (r == 0)
		r = unit_make_rw((void *)i0, ((i1 + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)) - i0);
	if (r < 0) {
		unclaim_space(pg.frontier, want);
		return r;
	}
	for (size_t u = pg.frontier; u < want; u++) {
		pg.units[u].state = U_FREE;
		pg.units[u].prev = pg.units[u].next = NO_UNIT;
		pg.units[u].bucket = NO_BUCKET;
	}
	bits_set(pg.freebits, pg.frontier, add, true);
	__atomic_store_n(&pg.frontier, want, __ATOMIC_RELEASE);
	__atomic_store_n(&heap_hot.top_pages, want * PAGES_PER_UNIT, __ATOMIC_RELEASE);
	__atomic_store_n(&heap_hot.top_granules, want * PAGES_PER_UNIT << (PAGE_SHIFT - 4),
			 __ATOMIC_RELAXED);
	if (pg.lazy)
		__atomic_store_n(&pg.end, unit_addr(want), __ATOMIC_RELEASE);
	return 0;
}

/* Tight: the free units at the top of the range are given back (lazy: their address
 * space too), as a trimmed break is. The metadata stays writable: free() reads it
 * without the lock. Under the lock. */
void range_trim_top(void)
{
	size_t top = pg.frontier;
	if (!pg.tight)
		return;
	while (top > 0 && pg.units[top - 1].state == U_FREE && !pg.units[top - 1].in_cache &&
	       bit(pg.freebits, top - 1))
		top--;
	if (top == pg.frontier)
		return;
	size_t old = pg.frontier;
	__atomic_store_n(&heap_hot.top_pages, top * PAGES_PER_UNIT, __ATOMIC_RELEASE);
	__atomic_store_n(&heap_hot.top_granules, top * PAGES_PER_UNIT << (PAGE_SHIFT - 4),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&pg.frontier, top, __ATOMIC_RELEASE);
	if (pg.lazy)
		__atomic_store_n(&pg.end, unit_addr(top), __ATOMIC_RELEASE);
	unclaim_space(top, old);
	bits_set(pg.freebits, top, old - top, false);
	for (size_t u = top; u < old; u++) {
		pg.units[u].resident = 0;
		pg.units[u].backing = 0;
	}
}

/* Lazy: a place for the range, of at most limit bytes, in [16, 32) TiB (far below
 * the kernel's mappings, which fill from the top down, and above the program's
 * text and break), at a random GiB; false if none of those tried is free. */
static bool lazy_place(size_t limit)
{
	uint64_t r = 0;
	size_t n = limit >> UNIT_SHIFT, most = RANGE_MAX_MIB >> (UNIT_SHIFT - 20);
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = heap_now_ns() * 0x9e3779b97f4a7c15ull;
	if (n > most)
		n = most;
	if (n == 0)
		return false;
	for (int i = 0; i < 8; i++, r = r * 0x9e3779b97f4a7c15ull + 1) {
		uintptr_t at = LAZY_LO + (((r >> 20) % (LAZY_SLOTS - (RANGE_MAX_MIB >> 10))) << 30);
		void *out;
		if (unit_reserve((void *)at, UNIT_SIZE, false, &out) < 0)
			continue;
		unit_unmap(out, UNIT_SIZE);
		if ((uintptr_t)out != at)
			continue;
		pg.base = at;
		pg.max_units = n;
		return true;
	}
	return false;
}

int pages_init(const struct sp_options *o)
{
	/* In MiB: the most address space we can have, down to what a ulimit -v leaves. */
	static const size_t sizes_mib[] = { 256 << 10, 64 << 10, 16 << 10, 4 << 10, 1 << 10, 256 };
	/* auto is THP for the heap: MAP_PRIVATE hugetlb pages are copied on write in a
	 * forked child, from the pool, and a child that finds the pool empty dies of
	 * SIGBUS. THP copies fall back to base pages instead. 2m is the user's choice. */
	pg.policy = o->backing == SP_BACKING_AUTO ? SP_BACKING_THP : o->backing;
	pg.small_first = o->backing == SP_BACKING_AUTO;
	pg.touched = pg.small_first && o->dense_touched;
	if (!o->heap)
		pg.policy = SP_BACKING_4K; /* --no-heap: malloc on base pages, mappings still huge */
	if (o->backing == SP_BACKING_2M || o->backing == SP_BACKING_1G)
		pg.map_rung = o->backing;
	const struct sp_view *v = sp_view_get();
	if (pg.policy == SP_BACKING_THP && (!v->thp_present || v->thp_never ||
					 v->features.thp_disabled_here)) {
		pages_note_fall(SP_BACKING_THP, !v->thp_present ? SP_FALL_UNSUPPORTED : SP_FALL_THP_OFF);
		pg.policy = SP_BACKING_4K;
	}
	struct sp_limits rl;
	sp_limits_rlimits(&rl);
	bool data_set = rl.data_limit != SP_LIMIT_NONE;
	pg.lazy = rl.as_limit != SP_LIMIT_NONE;
	pg.tight = pg.lazy || data_set;
	/* The range never holds more than the limits let it have (and its metadata,
	 * sized by it, counts against RLIMIT_DATA too). */
	size_t most = RANGE_MAX_MIB << 20;
	if (pg.lazy && rl.as_limit < most)
		most = rl.as_limit;
	if (data_set && rl.data_limit < most)
		most = rl.data_limit;
	most = (most + UNIT_SIZE - 1) & ~(UNIT_SIZE - 1);
	if (pg.lazy && !lazy_place(most))
		pg.lazy = false; /* (reserved then, as far as the limit lets it be) */
	if (pg.lazy)
		rt_verbose(1, "RLIMIT_AS is %zu MiB: the heap's range is claimed as it grows, at %p",
			   (size_t)(rl.as_limit >> 20), (void *)pg.base);
	for (size_t i = 0; !pg.lazy && i < sizeof sizes_mib / sizeof *sizes_mib; i++) {
		size_t len = sizes_mib[i] << 20 < most ? sizes_mib[i] << 20 : most;
		void *p;
		/* Address space only: PROT_NONE costs nothing until the frontier grows. */
		if (sp_map_aligned(len, len < (1ul << 30) ? UNIT_SIZE : 1ul << 30, PROT_NONE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, &p) < 0)
			continue;
		pg.base = (uintptr_t)p;
		pg.max_units = len >> UNIT_SHIFT;
		break;
	}
	if (!pg.base)
		return -ENOMEM;
	if (!pg.lazy)
		unit_advise((void *)pg.base, pg.max_units << UNIT_SHIFT, range_advice());
	void *m;
	size_t meta = pg.max_units * sizeof(struct unit) + (pg.max_units / 64 + 1) * 8;
	if (meta_map_lazy(meta, &m) < 0)
		return -ENOMEM;
	pg.units = m;
	pg.freebits = (uint64_t *)(void *)((char *)m + pg.max_units * sizeof(struct unit));
	size_t info = (pg.max_units * PAGES_PER_UNIT * sizeof *heap_hot.pageinfo + PAGE_SIZE - 1) &
		      ~(PAGE_SIZE - 1);
	if (meta_reserve(pg.max_units * PAGE_SIZE + info, &m) < 0)
		return -ENOMEM;
	heap_hot.pagemap = m;
	heap_hot.pageinfo = (uint64_t *)(void *)((char *)m + pg.max_units * PAGE_SIZE);
	heap_hot.base = pg.base;
	pg.end = pg.lazy ? pg.base : pg.base + (pg.max_units << UNIT_SHIFT);
	for (int t = 0; t < NTIER; t++)
		for (int b = 0; b < NBUCKET; b++)
			pg.bucket_head[t][b] = NO_UNIT;
	limits_init(&rl);
	return 0;
}

struct span *span_new(void)
{
	struct span *s = spans.free;
	if (s) {
		spans.free = s->next;
	} else {
		if (spans.left < sizeof *s) {
			void *c;
			if (meta_map(65536, &c) < 0)
				return NULL;
			spans.chunk = c;
			spans.left = 65536;
		}
		s = (struct span *)(void *)spans.chunk;
		spans.chunk += sizeof *s;
		spans.left -= sizeof *s;
	}
	memset(s, 0, sizeof *s);
	s->magic = SPAN_MAGIC;
	return s;
}

void span_delete(struct span *s)
{
	s->magic = 0;
	s->next = spans.free;
	spans.free = s;
}

/* Deletes a chain of span descriptors linked through next. Under the lock. */
void spans_delete(struct span *list)
{
	while (list) {
		struct span *s = list;
		list = s->next;
		span_delete(s);
	}
}

void pages_map_all(struct span *s)
{
	size_t p0 = page_of(s->start);
	for (size_t i = 0; i < s->npages; i++)
		map_set(p0 + i, s);
}

struct span *pages_lookup(const void *addr, bool *in_range)
{
	uintptr_t a = (uintptr_t)addr;
	*in_range = a - heap_hot.base < __atomic_load_n(&pg.end, __ATOMIC_ACQUIRE) - heap_hot.base;
	if (!*in_range)
		return outside_lookup(a);
	if (((a - heap_hot.base) >> PAGE_SHIFT) >=
	    __atomic_load_n(&heap_hot.top_pages, __ATOMIC_ACQUIRE))
		return NULL;
	return span_at(a);
}

void pages_range(uintptr_t *lo, uintptr_t *hi)
{
	*lo = pg.base;
	*hi = pg.lazy ? __atomic_load_n(&pg.end, __ATOMIC_ACQUIRE) : pg.base + (pg.max_units << UNIT_SHIFT);
}

/* n new span descriptors, linked by next, or NULL (none left over). Under the lock. */
struct span *spans_new(size_t n)
{
	struct span *list = NULL;
	for (size_t i = 0; i < n; i++) {
		struct span *s = span_new();
		if (!s) {
			while (list) {
				s = list;
				list = s->next;
				span_delete(s);
			}
			return NULL;
		}
		s->next = list;
		list = s;
	}
	return list;
}
