/* pages.c - the page heap: one reserved range of address space cut into 2 MiB units;
 * small and medium spans are runs of 4 KiB pages packed into the fullest unit that
 * fits, large blocks are runs of whole units, and empty units go back to the kernel
 * whole (never in 4 KiB pieces that would split a huge page). */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>

#include "bits.h"
#include "internal.h"
#include "units.h"

#define GROW_UNITS 32       /* the writable part of the range grows 64 MiB at a time */
#define SKIP_NS 1000000000ull
#define MOVE_MIN_UNITS 8    /* realloc moves blocks of 16 MiB or more by mremap */
#define LONG_MAX_BYTES ((size_t)128 << 20) /* the longest runs of pages */
#define LAZY_LO ((uintptr_t)1 << 44)      /* lazy ranges start in [16, 32) TiB */
#define LAZY_SLOTS ((size_t)1 << 14)      /* ... at one of these GiBs */
#define RANGE_MAX_MIB ((size_t)256 << 10)
#define RECENT_NS 1000000000ull

struct heap_hot heap_hot;
struct pages pg = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cache_head = NO_UNIT,
	.cache_tail = NO_UNIT,
	.map_rung = SP_BACKING_COUNT,
};
/* After the pool refused n units, runs of n or more are not asked for again for a
 * second (or until hugetlb units are given back); smaller ones still are. The same
 * for 1 GiB pages, of any size. */
static struct {
	uint64_t until, giga_until;
	size_t units;
} skip;
static struct {
	struct span *free;
	char *chunk;
	size_t left;
} spans; /* span descriptors: freed ones, and the rest of the chunk cut last */

void pages_lock(void) { pthread_mutex_lock(&pg.lock); }
void pages_unlock(void) { pthread_mutex_unlock(&pg.lock); }

static uintptr_t unit_addr(size_t u) { return pg.base + (u << UNIT_SHIFT); }

static void fall(enum sp_backing rung, enum sp_fall why)
{
	pg.st.falls[rung][why]++;
	rt_fall(rung, why);
}

static uint16_t longest_run(const uint64_t *b)
{
	size_t best = 0, i = 0;
	while (i < PAGES_PER_UNIT) {
		size_t f = bits_next(b, i, PAGES_PER_UNIT, true);
		if (f == PAGES_PER_UNIT)
			break;
		size_t e = bits_next(b, f, PAGES_PER_UNIT, false);
		if (e - f > best)
			best = e - f;
		i = e;
	}
	return (uint16_t)best;
}

/* ---------- unit lists ---------- */

static void list_unlink(int32_t *head, int32_t *tail, int32_t u)
{
	struct unit *x = &pg.units[u];
	if (x->prev != NO_UNIT)
		pg.units[x->prev].next = x->next;
	else
		*head = x->next;
	if (x->next != NO_UNIT)
		pg.units[x->next].prev = x->prev;
	else if (tail)
		*tail = x->prev;
	x->prev = x->next = NO_UNIT;
}

static void list_push_front(int32_t *head, int32_t *tail, int32_t u)
{
	struct unit *x = &pg.units[u];
	x->prev = NO_UNIT;
	x->next = *head;
	if (*head != NO_UNIT)
		pg.units[*head].prev = u;
	else if (tail)
		*tail = u;
	*head = u;
}

static unsigned bucket_of(unsigned longest)
{
	unsigned b = 31u - (unsigned)__builtin_clz(longest);
	return b < NBUCKET ? b : NBUCKET - 1;
}

/* Puts a HEAP unit in the bucket of its longest free run (none when full). */
static void rebucket(int32_t u)
{
	struct unit *x = &pg.units[u];
	if (x->bucket != NO_BUCKET)
		list_unlink(&pg.bucket_head[x->bucket], NULL, u);
	x->bucket = NO_BUCKET;
	x->longest = longest_run(x->free);
	if (x->longest) {
		x->bucket = (uint8_t)bucket_of(x->longest);
		list_push_front(&pg.bucket_head[x->bucket], NULL, u);
	}
}

static void cache_remove(int32_t u)
{
	list_unlink(&pg.cache_head, &pg.cache_tail, u);
	pg.units[u].in_cache = 0;
	pg.cached--;
}

static int range_advice(void);
static struct span *outside_lookup(uintptr_t a);
static void outside_promote(void);
static void outside_free(struct span *s);

/* ---------- backing units ---------- */

static bool is_hugetlb(uint8_t backing)
{
	return backing == SP_BACKING_2M || backing == SP_BACKING_1G;
}

/* Plain anonymous memory at n units from u, with the range's advice: what a unit
 * is when it has no hugetlb pages. The range is ours, so MAP_FIXED harms nothing;
 * if even this fails the heap has a hole it cannot account for, and stops. */
static void plain_units(size_t u, size_t n)
{
	void *out;
	size_t len = n << UNIT_SHIFT;
	if (sp_os->mmap((void *)unit_addr(u), len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0, &out) < 0)
		rt_abort("cannot map the heap's memory at %p back (%zu bytes)", (void *)unit_addr(u),
			 len);
	sp_os->madvise(out, len, range_advice());
}

/* Maps n units at u with hugetlb pages of the rung's size (2m, or 1g for a 1 GiB-
 * aligned run of whole GiBs), mapped elsewhere and moved into place: a map the pool
 * refuses leaves the units as they were; a refused move may have unmapped them, so
 * they get plain memory back then. A rung that was refused is not asked
 * again for SKIP_NS (for runs as large, for 2m). Units on 1 GiB pages are only ever
 * given back, staged for fork or replaced whole: the kernel cannot split a 1 GiB
 * page's mapping. */
static bool back_hugetlb(size_t u, size_t n, enum sp_backing rung)
{
	bool giga = rung == SP_BACKING_1G;
	uint64_t *until = giga ? &skip.giga_until : &skip.until;
	uint64_t now = sp_os->now_ns();
	if (now < *until && (giga || n >= skip.units)) {
		fall(rung, SP_FALL_SKIPPED);
		return false;
	}
	size_t len = n << UNIT_SHIFT, page = giga ? (size_t)1 << 30 : UNIT_SIZE;
	bool hole;
	int r = pages_hugetlb_into(unit_addr(u), len, giga, &hole);
	if (r < 0) {
		struct sp_pool pool;
		bool none = sp_pool_get(page, -1, &pool) == 0 && pool.total == 0;
		if (hole)
			plain_units(u, n);
		fall(rung, hole ? SP_FALL_MMAP
			   : r == -ENOMEM ? (none ? SP_FALL_NO_POOL : SP_FALL_POOL_EMPTY)
			   : r == -EINVAL ? SP_FALL_UNSUPPORTED : SP_FALL_MMAP);
		if (!giga && (now >= skip.until || n < skip.units))
			skip.units = n;
		*until = now + SKIP_NS;
		return false;
	}
	return true;
}

/* Puts plain anonymous memory back where hugetlb units were (their pages return to
 * the pool), with the range's THP advice. */
static void unback_hugetlb(size_t u, size_t n)
{
	plain_units(u, n);
	skip.until = 0;
	skip.giga_until = 0;
}

/* Gives n units at u the policy's backing; returns the backing they got. */
static enum sp_backing back_units(size_t u, size_t n)
{
	if (pg.policy == SP_BACKING_2M || pg.policy == SP_BACKING_1G) {
		if (back_hugetlb(u, n, SP_BACKING_2M))
			return SP_BACKING_2M;
		const struct sp_view *v = sp_view_get();
		return v->thp_never || v->features.thp_disabled_here ? SP_BACKING_4K : SP_BACKING_THP;
	}
	if (pg.policy == SP_BACKING_THP && pg.small_first && !atomic_load(&pg.promoted))
		return SP_BACKING_4K;
	return pg.policy;
}


uint64_t pages_unit_events(void)
{
	return atomic_load_explicit(&pg.st.unit_events, memory_order_relaxed);
}

static void count_units(enum sp_backing b, long n)
{
	atomic_fetch_add_explicit(&pg.st.unit_events, 1, memory_order_relaxed);
	pg.st.units[b] += (uint64_t)n;
	uint64_t total = 0;
	for (int i = 0; i < SP_BACKING_COUNT; i++)
		total += pg.st.units[i];
	if (total > pg.st.units_peak)
		pg.st.units_peak = total;
	if (n > 0 && total + pg.cached >= pg.st.recent_peak) {
		pg.st.recent_peak = total + pg.cached;
		pg.st.recent_peak_ns = sp_os->now_ns();
	}
	if (pg.small_first && total >= PROMOTE_UNITS && !atomic_load(&pg.promoted))
		atomic_store(&pg.promote_pending, true);
}

/* The advice the range carries now. */
static int range_advice(void)
{
	if (pg.policy == SP_BACKING_4K || (pg.small_first && !atomic_load(&pg.promoted)))
		return MADV_NOHUGEPAGE;
	return MADV_HUGEPAGE;
}

/* The heap has grown big: THP from now on for all of it, and the units in use are
 * collapsed into huge pages now rather than whenever khugepaged comes by. Runs
 * after an allocation, without the lock. */
static void maybe_promote(void)
{
	if (!atomic_exchange(&pg.promote_pending, false) || atomic_exchange(&pg.promoted, true))
		return;
	pthread_mutex_lock(&pg.lock);
	size_t top = pg.frontier;
	/* (Lazy: only what is claimed is the range's; grow advises the rest.) */
	sp_os->madvise((void *)pg.base, (pg.lazy ? top : pg.max_units) << UNIT_SHIFT, MADV_HUGEPAGE);
	outside_promote();
	for (size_t u = 0; u < top; u++) {
		struct unit *x = &pg.units[u];
		if ((x->state == U_HEAP || x->state == U_LARGE) && x->backing == SP_BACKING_4K) {
			x->backing = SP_BACKING_THP;
			pg.st.units[SP_BACKING_4K]--;
			pg.st.units[SP_BACKING_THP]++;
		}
	}
	pthread_mutex_unlock(&pg.lock);
	/* Advisory: a unit freed meanwhile is collapsed for nothing, never harmed. */
	for (size_t u = 0; u < top; u++)
		if (pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE)
			sp_os->madvise((void *)unit_addr(u), UNIT_SIZE, MADV_COLLAPSE);
}

/* ---------- the range ---------- */

/* Units [from, to) become read-write memory of the range, with its advice: made so
 * in the reservation, or (lazy) mapped where nothing else may be. */
static int claim_space(size_t from, size_t to)
{
	void *at = (void *)unit_addr(from), *out;
	size_t len = (to - from) << UNIT_SHIFT;
	int r;
	if (!pg.lazy) {
		r = sp_os->mprotect(at, len, PROT_READ | PROT_WRITE);
	} else {
		r = sp_os->mmap(at, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1,
				0, &out);
		if (r == 0 && out != at) { /* (taken as a hint: something is there) */
			sp_os->munmap(out, len);
			r = -EEXIST;
		}
	}
	if (r == 0)
		sp_os->madvise(at, len, range_advice());
	return r;
}

/* Undoes claim_space: the units' memory is gone, and (lazy) their address space. */
static void unclaim_space(size_t from, size_t to)
{
	void *at = (void *)unit_addr(from), *out;
	size_t len = (to - from) << UNIT_SHIFT;
	if (pg.lazy)
		sp_os->munmap(at, len);
	else if (sp_os->mmap(at, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			     MAP_FIXED, -1, 0, &out) == 0)
		sp_os->madvise(at, len, range_advice());
}

static int grow(size_t need_units)
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
	/* One page of pagemap per unit: 512 pointers; and 1 KiB of page info. */
	r = sp_os->mprotect((char *)heap_hot.pagemap + pg.frontier * PAGE_SIZE, add * PAGE_SIZE,
			    PROT_READ | PROT_WRITE);
	uintptr_t i0 = (uintptr_t)(heap_hot.pageinfo + pg.frontier * PAGES_PER_UNIT) & ~(PAGE_SIZE - 1);
	uintptr_t i1 = (uintptr_t)(heap_hot.pageinfo + want * PAGES_PER_UNIT);
	if (r == 0)
		r = sp_os->mprotect((void *)i0, ((i1 + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)) - i0,
				    PROT_READ | PROT_WRITE);
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
	if (pg.lazy)
		__atomic_store_n(&pg.end, unit_addr(want), __ATOMIC_RELEASE);
	return 0;
}

/* Tight: the free units at the top of the range are given back (lazy: their address
 * space too), as a trimmed break is. The metadata stays writable: free() reads it
 * without the lock. Under plock. */
static void trim_top(void)
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
		r = sp_os->now_ns() * 0x9e3779b97f4a7c15ull;
	if (n > most)
		n = most;
	if (n == 0)
		return false;
	for (int i = 0; i < 8; i++, r = r * 0x9e3779b97f4a7c15ull + 1) {
		uintptr_t at = LAZY_LO + (((r >> 20) % (LAZY_SLOTS - (RANGE_MAX_MIB >> 10))) << 30);
		void *out;
		if (sp_os->mmap((void *)at, UNIT_SIZE, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1,
				0, &out) < 0)
			continue;
		sp_os->munmap(out, UNIT_SIZE);
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
	if (!o->heap)
		pg.policy = SP_BACKING_4K; /* --no-heap: malloc on base pages, mappings still huge */
	if (o->backing == SP_BACKING_2M || o->backing == SP_BACKING_1G)
		pg.map_rung = o->backing;
	const struct sp_view *v = sp_view_get();
	if (pg.policy == SP_BACKING_THP && (!v->thp_present || v->thp_never ||
					 v->features.thp_disabled_here)) {
		fall(SP_BACKING_THP, !v->thp_present ? SP_FALL_UNSUPPORTED : SP_FALL_THP_OFF);
		pg.policy = SP_BACKING_4K;
	}
	struct rlimit as, data;
	bool data_set = getrlimit(RLIMIT_DATA, &data) == 0 && data.rlim_cur != RLIM_INFINITY;
	pg.lazy = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
	pg.tight = pg.lazy || data_set;
	/* The range never holds more than the limits let it have (and its metadata,
	 * sized by it, counts against RLIMIT_DATA too). */
	size_t most = RANGE_MAX_MIB << 20;
	if (pg.lazy && as.rlim_cur < most)
		most = as.rlim_cur;
	if (data_set && data.rlim_cur < most)
		most = data.rlim_cur;
	most = (most + UNIT_SIZE - 1) & ~(UNIT_SIZE - 1);
	if (pg.lazy && !lazy_place(most))
		pg.lazy = false; /* (reserved then, as far as the limit lets it be) */
	if (pg.lazy)
		rt_verbose(1, "RLIMIT_AS is %zu MiB: the heap's range is claimed as it grows, at %p",
			   (size_t)(as.rlim_cur >> 20), (void *)pg.base);
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
		sp_os->madvise((void *)pg.base, pg.max_units << UNIT_SHIFT, range_advice());
	void *m;
	size_t meta = pg.max_units * sizeof(struct unit) + (pg.max_units / 64 + 1) * 8;
	if (sp_os->mmap(NULL, meta, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m) < 0)
		return -ENOMEM;
	pg.units = m;
	pg.freebits = (uint64_t *)(void *)((char *)m + pg.max_units * sizeof(struct unit));
	size_t info = (pg.max_units * PAGES_PER_UNIT * sizeof *heap_hot.pageinfo + PAGE_SIZE - 1) &
		      ~(PAGE_SIZE - 1);
	if (sp_os->mmap(NULL, pg.max_units * PAGE_SIZE + info, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m) < 0)
		return -ENOMEM;
	heap_hot.pagemap = m;
	heap_hot.pageinfo = (uint16_t *)(void *)((char *)m + pg.max_units * PAGE_SIZE);
	heap_hot.base = pg.base;
	pg.end = pg.lazy ? pg.base : pg.base + (pg.max_units << UNIT_SHIFT);
	for (int b = 0; b < NBUCKET; b++)
		pg.bucket_head[b] = NO_UNIT;
	return 0;
}

/* ---------- span descriptors ---------- */

static struct span *span_new(void)
{
	struct span *s = spans.free;
	if (s) {
		spans.free = s->next;
	} else {
		if (spans.left < sizeof *s) {
			void *c;
			if (sp_os->mmap(NULL, 65536, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &c) < 0)
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

static void span_delete(struct span *s)
{
	s->magic = 0;
	s->next = spans.free;
	spans.free = s;
}

/* Deletes a chain of span descriptors linked through next. Under plock. */
static void spans_delete(struct span *list)
{
	while (list) {
		struct span *s = list;
		list = s->next;
		span_delete(s);
	}
}

static size_t page_of(uintptr_t a)
{
	return (a - pg.base) >> PAGE_SHIFT;
}

static void map_set(size_t page, struct span *s)
{
	atomic_store_explicit(&heap_hot.pagemap[page], s, memory_order_release);
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

/* ---------- units for the page heap ---------- */

/* Sets the count of free pages of a HEAP unit, keeping the totals of them. */
static void set_nfree(struct unit *x, size_t n)
{
	if (!x->mapping) {
		pg.unit_free_pages += n - x->nfree;
		pg.full_units += (size_t)(n == 0) - (size_t)(x->nfree == 0);
	}
	x->nfree = (uint16_t)n;
}

/* A HEAP unit of the heap's own is empty and leaves it. */
static void heap_unit_gone(struct unit *x)
{
	if (x->bucket != NO_BUCKET)
		list_unlink(&pg.bucket_head[x->bucket], NULL, (int32_t)(x - pg.units));
	x->bucket = NO_BUCKET;
	pg.unit_free_pages -= PAGES_PER_UNIT;
	pg.heap_units--;
}

/* FREE unit u joins the page heap, empty, with the backing it got. */
static void heap_unit_init(size_t u, enum sp_backing got)
{
	struct unit *x = &pg.units[u];
	x->state = U_HEAP;
	x->backing = (uint8_t)got;
	x->resident = 1;
	x->nfree = PAGES_PER_UNIT;
	pg.unit_free_pages += PAGES_PER_UNIT;
	memset(x->free, 0xff, sizeof x->free);
	x->bucket = NO_BUCKET;
	pg.heap_units++;
	count_units(got, 1);
}

/* A FREE unit for the page heap: a resident empty one first (no new memory), else
 * the lowest free one. Returns its index or NO_UNIT. */
static int32_t take_unit(void)
{
	int32_t u = pg.cache_head;
	bool kept = u != NO_UNIT;
	if (kept) {
		cache_remove(u);
		pg.st.reused++;
	} else {
		size_t f = bits_next(pg.freebits, 0, pg.frontier, true);
		if (f == pg.frontier) {
			if (grow(pg.frontier + 1) < 0)
				return NO_UNIT;
			f = bits_next(pg.freebits, 0, pg.frontier, true);
			if (f == pg.frontier)
				return NO_UNIT;
		}
		u = (int32_t)f;
	}
	bits_set(pg.freebits, (size_t)u, 1, false);
	struct unit *x = &pg.units[u];
	/* (An empty unit kept on a hugetlb page stays on it.) */
	heap_unit_init((size_t)u, kept && is_hugetlb(x->backing) ? (enum sp_backing)x->backing
								  : back_units((size_t)u, 1));
	return u;
}

/* ---------- runs across units ----------
 * A block or a span of objects whose run no unit's free pages hold is placed across
 * units: in the free tail of a HEAP unit, whole FREE units, and the free head of the
 * next HEAP unit, so that blocks of any size pack against their neighbours and only
 * the last unit of a stretch is partly used (a unit touched once is resident whole
 * on THP: blocks of 300 KB in units of their own left 12% of each unit unused,
 * blocks of 1 MiB + 1 B half of it). */

/* A HEAP unit whose free pages a run may take: the heap's, not a program's mapping. */
static bool joinable(size_t u)
{
	return pg.units[u].state == U_HEAP && !pg.units[u].mapping;
}

/* The free pages at the end and at the start of a HEAP unit. */
static size_t unit_tail(size_t u)
{
	size_t used = bits_prev(pg.units[u].free, PAGES_PER_UNIT, false);
	return used == SIZE_MAX ? PAGES_PER_UNIT : PAGES_PER_UNIT - 1 - used;
}

static size_t unit_head(size_t u)
{
	return bits_next(pg.units[u].free, 0, PAGES_PER_UNIT, false);
}

/* The part of pages [p, p+n) that lies in unit u, as pages [*from, *to) of it. */
static void unit_part(size_t p, size_t n, size_t u, size_t *from, size_t *to)
{
	size_t first = u * PAGES_PER_UNIT;
	*from = p > first ? p - first : 0;
	*to = p + n < first + PAGES_PER_UNIT ? p + n - first : PAGES_PER_UNIT;
}

/* FREE units [u, u+n) (some may be past the frontier) that a run would claim and
 * that hold no memory yet: what the run costs. */
static size_t fresh_units(size_t u, size_t n)
{
	size_t k = 0;
	for (size_t i = u; i < u + n; i++)
		k += i >= pg.frontier || !pg.units[i].resident;
	return k;
}

struct place {
	size_t page;  /* the run's first page in the range, SIZE_MAX for none */
	size_t cost;  /* units it makes resident */
	size_t used;  /* free pages of HEAP units it takes */
	size_t room;  /* free pages of the stretch it lies in */
};

/* A stretch: t free pages of a HEAP unit ending at a unit boundary (from page at),
 * then m FREE units, then h free pages at the start of a HEAP unit. Keeps in *best
 * the run's place there if it is better: fewer new units, then a shorter stretch
 * (best fit: the mixed heap of the sweep left 15.5 MiB free inside units, against
 * 17.5), then more pages of HEAP units put to use, then lower. */
static void place_in(struct place *best, size_t np, size_t at, size_t t, size_t m, size_t h)
{
	if (np > t + m * PAGES_PER_UNIT + h)
		return;
	size_t f = (at + t) / PAGES_PER_UNIT; /* the first FREE unit */
	/* From the tail on ... */
	size_t rest = np > t ? np - t : 0, n = (rest + PAGES_PER_UNIT - 1) / PAGES_PER_UNIT;
	size_t room = t + m * PAGES_PER_UNIT + h;
	struct place p = { at, 0, t < np ? t : np, room };
	if (n > m) {
		n = m;
		p.used = np - m * PAGES_PER_UNIT;
	}
	p.cost = fresh_units(f, n);
	/* ... or up to the head's end. */
	rest = np > h ? np - h : 0;
	n = (rest + PAGES_PER_UNIT - 1) / PAGES_PER_UNIT;
	if (h && n <= m) {
		struct place q = { at + t + m * PAGES_PER_UNIT + h - np, 0, h < np ? h : np, room };
		q.cost = fresh_units(f + m - n, n);
		if (q.cost < p.cost || (q.cost == p.cost && q.used > p.used))
			p = q;
	}
	if (p.cost < best->cost || (p.cost == best->cost && (p.room < best->room ||
				(p.room == best->room && p.used > best->used))))
		*best = p;
}

/* The best place for a run of np pages across units, or SIZE_MAX if the range
 * cannot hold it. Under plock. */
static size_t find_place(size_t np)
{
	struct place best = { SIZE_MAX, SIZE_MAX, 0, SIZE_MAX };
	size_t at = 0, t = 0, m = 0; /* the open stretch: its tail, its FREE units */
	for (size_t u = 0; u < pg.frontier; u++) {
		if (bit(pg.freebits, u)) {
			size_t e = bits_next(pg.freebits, u, pg.frontier, false);
			m += e - u;
			u = e - 1;
			continue;
		}
		bool join = joinable(u);
		place_in(&best, np, at, t, m, join ? unit_head(u) : 0);
		if (best.cost == 0 && best.used == np)
			return best.page;
		t = join ? unit_tail(u) : 0;
		at = (u + 1) * PAGES_PER_UNIT - t;
		m = 0;
	}
	/* The last stretch runs on past the frontier, to the end of the range. */
	place_in(&best, np, at, t, m + (pg.max_units - pg.frontier), 0);
	return best.page;
}

/* Units to release, gathered under the lock and given back after it: a run, and
 * (extra, unless NO_EXTRA) one unit of the empty cache that has outgrown its limit. */
#define NO_EXTRA SIZE_MAX
struct release { size_t u, n, extra; };
static void release_locked(const struct release *rel);

/* made units were made resident for a block that the kept empty units could not
 * hold (they lie elsewhere): as many kept units go back, oldest first. Kept, they
 * spare the next block a fault; once blocks fault new units in beside them they
 * spare nothing, and the program pays for both (the sweep's mixed heap ended with
 * 9 kept units, 18 MiB of its 310). Under plock. */
static void trim_kept(size_t made)
{
	while (made-- > 0 && pg.cache_tail != NO_UNIT) {
		int32_t u = pg.cache_tail;
		cache_remove(u);
		pg.units[u].state = U_RELEASING;
		struct release rel = { .u = (size_t)u, .n = 1, .extra = NO_EXTRA };
		release_locked(&rel);
	}
}

/* Units [u0, u1) that a run at pages [p, p+np) covers: the FREE ones join the page
 * heap (growing the range where they lie past its frontier), and the run's pages are
 * taken. *clean: every page of the run was memory the kernel had not given yet.
 * False if the range cannot grow. Under plock. */
static bool take_pages(size_t p, size_t np, bool *clean)
{
	size_t u0 = p / PAGES_PER_UNIT, u1 = (p + np - 1) / PAGES_PER_UNIT + 1;
	if (u1 > pg.frontier && grow(u1) < 0)
		return false;
	bool fresh = true;
	for (size_t i = u0; i < u1;) {
		if (!bit(pg.freebits, i)) {
			fresh = false; /* a HEAP unit's free pages: they may have been used */
			i++;
			continue;
		}
		if (pg.units[i].in_cache) {
			cache_remove((int32_t)i);
			pg.st.reused++;
			bits_set(pg.freebits, i, 1, false);
			heap_unit_init(i, is_hugetlb(pg.units[i].backing) ? (enum sp_backing)pg.units[i].backing
								       : back_units(i, 1));
			fresh = false;
			i++;
			continue;
		}
		size_t e = i, made = 0;
		while (e < u1 && bit(pg.freebits, e) && !pg.units[e].in_cache) {
			fresh = fresh && !pg.units[e].resident;
			made += !pg.units[e].resident;
			e++;
		}
		bits_set(pg.freebits, i, e - i, false);
		enum sp_backing got = back_units(i, e - i);
		for (size_t k = i; k < e; k++)
			heap_unit_init(k, got);
		trim_kept(made);
		i = e;
	}
	for (size_t i = u0; i < u1; i++) {
		size_t from, to;
		unit_part(p, np, i, &from, &to);
		bits_set(pg.units[i].free, from, to - from, false);
		set_nfree(&pg.units[i], pg.units[i].nfree - (to - from));
		rebucket((int32_t)i);
	}
	*clean = fresh;
	return true;
}

struct span *pages_alloc_run(size_t npages, size_t align, enum span_kind kind)
{
	/* Blocks and spans of objects may lie across units (long blocks must: 18 spans
	 * of 27 pages in a unit left 5% of it unused); the program's small mappings stay
	 * inside one. */
	bool across = (kind == SPAN_MEDIUM || kind == SPAN_SMALL || kind == SPAN_FIT) && align <= 1;
	if (npages == 0 || (npages > PAGES_PER_UNIT && !across) || align > PAGES_PER_UNIT ||
	    npages > (pg.max_units << (UNIT_SHIFT - PAGE_SHIFT)))
		return NULL;
	pthread_mutex_lock(&pg.lock);
	struct span *s = span_new();
	int32_t u = NO_UNIT;
	size_t at = PAGES_PER_UNIT, p = SIZE_MAX;
	bool clean = false;
	if (!s)
		goto fail;
	/* Best fit by longest free run: the smallest bucket that can hold the run. */
	for (unsigned b = npages <= PAGES_PER_UNIT ? bucket_of((unsigned)npages) : NBUCKET;
	     b < NBUCKET && u == NO_UNIT; b++) {
		for (int32_t c = pg.bucket_head[b]; c != NO_UNIT; c = pg.units[c].next) {
			if (pg.units[c].longest < npages)
				continue;
			at = bits_find_run_phase(pg.units[c].free, PAGES_PER_UNIT, npages, align, 0);
			if (at < PAGES_PER_UNIT) {
				u = c;
				break;
			}
		}
	}
	if (u != NO_UNIT) {
		struct unit *x = &pg.units[u];
		bits_set(x->free, at, npages, false);
		set_nfree(x, x->nfree - npages);
		rebucket(u);
		p = (size_t)u * PAGES_PER_UNIT + at;
	} else if (across && (npages > PAGES_PER_UNIT || pg.cache_head == NO_UNIT)) {
		/* (An empty unit kept resident holds a run of a unit or less at no cost,
		 * and without a walk over the units.) */
		p = find_place(npages);
		if (p == SIZE_MAX || !take_pages(p, npages, &clean))
			goto fail;
	} else {
		u = take_unit();
		if (u == NO_UNIT)
			goto fail;
		bits_set(pg.units[u].free, 0, npages, false);
		set_nfree(&pg.units[u], PAGES_PER_UNIT - npages);
		rebucket(u);
		p = (size_t)u * PAGES_PER_UNIT;
	}
	s->kind = (uint8_t)kind;
	s->start = pg.base + (p << PAGE_SHIFT);
	s->npages = npages;
	s->clean = clean;
	if (kind == SPAN_MMAP)
		pg.st.small_mmap_pages += npages;
	if (span_maps_all(kind))
		pages_map_all(s);
	else
		map_set(p, s);
	pthread_mutex_unlock(&pg.lock);
	maybe_promote();
	rt_live_tick();
	return s;
fail:
	if (s)
		span_delete(s);
	pthread_mutex_unlock(&pg.lock);
	return NULL;
}

static unsigned give_back_units(const struct release *rel);
static void mark_released(const struct release *rel, unsigned ok);

/* A unit or run of units has no user any more: keep it resident in the empty cache
 * while the cache is small (a program that frees and allocates again pays no fault),
 * else mark it RELEASING for the caller to give back. */
static bool retire_units(size_t u, size_t n, struct release *rel)
{
	bool hugetlb = is_hugetlb(pg.units[u].backing), mapping = pg.units[u].mapping;
	uint64_t in_use = 0;
	if (mapping) {
		/* A program's mapping fallen to plain memory had THP advice of its own; and
		 * what the program unmaps is given back, not kept resident. */
		for (size_t i = u; i < u + n; i++)
			pg.units[i].mapping = 0;
		pg.mapping_units -= n;
		if (!hugetlb)
			sp_os->madvise((void *)unit_addr(u), n << UNIT_SHIFT, range_advice());
	}
	for (size_t i = u; i < u + n; i++)
		count_units((enum sp_backing)pg.units[i].backing, -1);
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		in_use += pg.st.units[b];
	/* Empty units stay resident, for a program that frees and allocates again (a
	 * growing string, a buffer per request) to pay no new fault: as many as it had
	 * resident lately over what it has in use now (at most as many as it has in
	 * use, or 16), and at least one per four in use (at least four). Past that, and
	 * once that peak is a second old, units go back to the kernel. */
	uint64_t now = sp_os->now_ns();
	if (now - pg.st.recent_peak_ns > RECENT_NS) {
		pg.st.recent_peak = in_use + n;
		pg.st.recent_peak_ns = now;
	}
	size_t limit = in_use / 4 > 4 ? (size_t)(in_use / 4) : 4;
	size_t lately = pg.st.recent_peak > in_use ? (size_t)(pg.st.recent_peak - in_use) : 0;
	size_t most = in_use > 16 ? (size_t)in_use : 16;
	if (lately > limit)
		limit = lately < most ? lately : most;
	/* (1 GiB pages are not kept: a fraction of one is not a unit to give out.) */
	if (!pg.tight && pg.units[u].backing != SP_BACKING_1G && !mapping && pg.cached + n <= limit) {
		for (size_t i = u; i < u + n; i++) {
			pg.units[i].state = U_FREE;
			pg.units[i].in_cache = 1;
			list_push_front(&pg.cache_head, &pg.cache_tail, (int32_t)i);
			pg.cached++;
		}
		bits_set(pg.freebits, u, n, true);
		return false;
	}
	for (size_t i = u; i < u + n; i++)
		pg.units[i].state = U_RELEASING;
	rel->u = u;
	rel->n = n;
	rel->extra = NO_EXTRA;
	/* The cache may hold more than its limit now (it was filled while more was in
	 * use): each run given back takes its oldest unit along, until it fits. */
	if (pg.cached > limit && pg.cache_tail != NO_UNIT &&
	    is_hugetlb(pg.units[pg.cache_tail].backing) == hugetlb) {
		int32_t t = pg.cache_tail;
		cache_remove(t);
		bits_set(pg.freebits, (size_t)t, 1, false);
		pg.units[t].state = U_RELEASING;
		rel->extra = (size_t)t;
	}
	if (hugetlb) {
		/* Given back now, under the lock (unmapping hugetlb pages is quick): a fork
		 * in the meantime would not stage them, no unit of the heap's any more,
		 * and would share them with the child. With the pool short, that was seen
		 * to end in a SIGBUS in this process (threads unmapping hugetlb mappings
		 * while another forked). */
		mark_released(rel, give_back_units(rel));
		return false;
	}
	return true;
}

/* What give_back_units did: bit 0 the run, bit 1 the extra unit was given back. */
#define GAVE_RUN 1u
#define GAVE_EXTRA 2u

/* Gives the units back to the kernel: hugetlb pages to the pool, THP memory freed. */
static unsigned give_back_units(const struct release *rel)
{
	unsigned ok = 0;
	if (is_hugetlb(pg.units[rel->u].backing)) { /* (and the extra unit, if any: hugetlb too) */
		unback_hugetlb(rel->u, rel->n);
		if (rel->extra != NO_EXTRA)
			unback_hugetlb(rel->extra, 1);
		return GAVE_RUN | GAVE_EXTRA;
	}
	if (rel->extra != NO_EXTRA &&
	    sp_os->madvise((void *)unit_addr(rel->extra), UNIT_SIZE, MADV_DONTNEED) == 0)
		ok |= GAVE_EXTRA;
	if (sp_os->madvise((void *)unit_addr(rel->u), rel->n << UNIT_SHIFT, MADV_DONTNEED) == 0)
		ok |= GAVE_RUN;
	return ok;
}

static void mark_one_released(size_t u, bool ok)
{
	pg.units[u].state = U_FREE;
	pg.units[u].resident = !ok;
	if (ok)
		pg.units[u].backing = 0;
}

/* A unit whose madvise failed stays marked resident: memory given out from it is
 * not taken to read as zero. */
static void mark_released(const struct release *rel, unsigned ok)
{
	for (size_t i = rel->u; i < rel->u + rel->n; i++)
		mark_one_released(i, ok & GAVE_RUN);
	bits_set(pg.freebits, rel->u, rel->n, true);
	pg.st.released += rel->n;
	if (rel->extra != NO_EXTRA) {
		mark_one_released(rel->extra, ok & GAVE_EXTRA);
		bits_set(pg.freebits, rel->extra, 1, true);
		pg.st.released++;
	}
	trim_top();
}

/* The system calls run without the lock (a big madvise must not hold up malloc). */
static void release(const struct release *rel)
{
	unsigned ok = give_back_units(rel);
	pthread_mutex_lock(&pg.lock);
	mark_released(rel, ok);
	pthread_mutex_unlock(&pg.lock);
}

static void release_locked(const struct release *rel)
{
	mark_released(rel, give_back_units(rel));
}

/* Pages of a unit that holds a program's mapping were unmapped: the unit goes once
 * it is empty, and a unit on a 1 GiB page once every unit of that page is (the kernel
 * cannot split its mapping; until then the emptied units stay as they are). Their
 * free pages are never the heap's: they would be in memory that demote_units copies.
 * Under plock. */
static bool mapping_unit_freed(size_t u, struct release *rel)
{
	size_t first = u, n = 1;
	if (pg.units[u].nfree < PAGES_PER_UNIT)
		return false;
	if (pg.units[u].backing == SP_BACKING_1G) {
		first = u - u % GIGA_UNITS;
		n = GIGA_UNITS;
		for (size_t i = first; i < first + n; i++)
			if (pg.units[i].nfree < PAGES_PER_UNIT)
				return false;
	}
	pg.heap_units -= n;
	return retire_units(first, n, rel);
}

/* Units of [u, u+n) that held a program's mapping on a 1 GiB page, and were emptied
 * while the rest of that page was not, are given back once they are on pages of
 * their own (demoted, or copied in a forked child). Under plock. */
static void release_emptied(size_t u, size_t n)
{
	for (size_t i = u; i < u + n; i++) {
		struct release rel;
		if (pg.units[i].state != U_HEAP || !pg.units[i].mapping || is_hugetlb(pg.units[i].backing) ||
		    pg.units[i].nfree < PAGES_PER_UNIT)
			continue;
		pg.heap_units--;
		if (retire_units(i, 1, &rel))
			release_locked(&rel);
	}
}

/* Pages [p0, p0+n) of one unit are free again; true (with rel filled) if the unit
 * emptied and is to be given back. Under plock. */
static bool free_pages(size_t p0, size_t n, struct release *rel)
{
	size_t u = p0 / PAGES_PER_UNIT;
	struct unit *x = &pg.units[u];
	bits_set(x->free, p0 % PAGES_PER_UNIT, n, true);
	set_nfree(x, x->nfree + n);
	if (x->mapping)
		return mapping_unit_freed(u, rel);
	if (x->nfree < PAGES_PER_UNIT) {
		rebucket((int32_t)u);
		return false;
	}
	heap_unit_gone(x);
	return retire_units(u, 1, rel);
}

/* Pages [p, p+n) are free again, across units if need be; true (with rel filled) if
 * units emptied and are to be given back after the lock. Units of a run emptied
 * together are retired together; of them, a stretch on hugetlb pages apart from one
 * that is not (their memory goes back differently). Under plock. */
static bool free_run(size_t p, size_t n, struct release *rel)
{
	size_t u0 = p / PAGES_PER_UNIT, u1 = (p + n - 1) / PAGES_PER_UNIT + 1;
	if (u1 - u0 == 1)
		return free_pages(p, n, rel);
	size_t e0 = SIZE_MAX, e1 = 0; /* the emptied units: the run covered those between */
	for (size_t u = u0; u < u1; u++) {
		struct unit *x = &pg.units[u];
		size_t from, to;
		unit_part(p, n, u, &from, &to);
		bits_set(x->free, from, to - from, true);
		set_nfree(x, x->nfree + (to - from));
		if (x->nfree < PAGES_PER_UNIT) {
			rebucket((int32_t)u);
			continue;
		}
		heap_unit_gone(x);
		if (e0 == SIZE_MAX)
			e0 = u;
		e1 = u + 1;
	}
	bool out = false;
	for (size_t a = e0; a < e1;) {
		size_t b = a + 1;
		while (b < e1 && is_hugetlb(pg.units[b].backing) == is_hugetlb(pg.units[a].backing))
			b++;
		struct release r;
		if (retire_units(a, b - a, &r)) {
			if (!out)
				*rel = r;
			else
				release_locked(&r);
			out = true;
		}
		a = b;
	}
	return out;
}

void pages_free(struct span *s)
{
	struct release rel;
	bool give_back = false;
	if (s->kind == SPAN_OUTSIDE) {
		outside_free(s);
		return;
	}
	pthread_mutex_lock(&pg.lock);
	size_t p0 = page_of(s->start);
	if (s->kind == SPAN_LARGE) {
		map_set(p0, NULL);
		pg.st.large_blocks--;
		pg.st.large_bytes -= s->npages << PAGE_SHIFT;
		give_back = retire_units(p0 / PAGES_PER_UNIT, s->npages / PAGES_PER_UNIT, &rel);
	} else {
		size_t n = span_maps_all(s->kind) ? s->npages : 1;
		for (size_t i = 0; i < n; i++)
			map_set(p0 + i, NULL);
		give_back = free_run(p0, s->npages, &rel);
	}
	span_delete(s);
	pthread_mutex_unlock(&pg.lock);
	if (give_back)
		release(&rel);
	rt_live_tick();
}

void pages_range(uintptr_t *lo, uintptr_t *hi)
{
	*lo = pg.base;
	*hi = pg.lazy ? __atomic_load_n(&pg.end, __ATOMIC_ACQUIRE) : pg.base + (pg.max_units << UNIT_SHIFT);
}

/* The SPAN_MMAP span on page p, if any. Under plock. */
static struct span *mmap_span_at(size_t p)
{
	struct span *s = atomic_load_explicit(&heap_hot.pagemap[p], memory_order_relaxed);
	return s && s->kind == SPAN_MMAP ? s : NULL;
}

/* Clamps [addr, addr+len) to the writable part of the range, in pages. */
static bool page_window(uintptr_t addr, size_t len, size_t *first, size_t *last)
{
	uintptr_t lo = addr > pg.base ? addr : pg.base, hi = addr + len;
	uintptr_t top = unit_addr(pg.frontier);
	if (hi > top)
		hi = top;
	if (hi <= lo)
		return false;
	*first = page_of(lo);
	*last = page_of(hi - 1) + 1;
	return true;
}

/* Puts the heap's own memory back on pages [lo, hi) the program mapped over or
 * re-protected: private anonymous, read-write, with the range's THP advice. */
static bool restore_pages(size_t lo, size_t hi)
{
	void *at = (void *)(pg.base + (lo << PAGE_SHIFT)), *out;
	size_t len = (hi - lo) << PAGE_SHIFT;
	if (sp_os->mmap(at, len, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0, &out) < 0)
		return false;
	sp_os->madvise(at, len, range_advice());
	return true;
}

void pages_unmap(uintptr_t addr, size_t len)
{
	struct release rel[8];
	int nrel = 0;
	size_t p, last;
	pthread_mutex_lock(&pg.lock);
	if (!page_window(addr, len, &p, &last)) {
		pthread_mutex_unlock(&pg.lock);
		return;
	}
	while (p < last) {
		struct span *s = mmap_span_at(p);
		if (!s) {
			p++;
			continue;
		}
		size_t s0 = page_of(s->start), s1 = s0 + s->npages;
		size_t lo = p, hi = last < s1 ? last : s1;
		struct span *r = NULL;
		if (hi < s1 && lo > s0 && !(r = span_new())) {
			/* No descriptor for the right part: leave the whole span mapped (the
			 * program will not touch what it unmapped; the heap must not reuse it). */
			p = s1;
			continue;
		}
		/* Pages the program changed go back to plain anonymous memory first; if
		 * that fails they are never reused. */
		bool reusable = !s->foreign || restore_pages(lo, hi);
		for (size_t i = lo; i < hi; i++)
			map_set(i, NULL);
		if (r) {
			/* A hole in the middle: the right part becomes a span of its own. */
			*r = *s;
			r->start = pg.base + (hi << PAGE_SHIFT);
			r->npages = s1 - hi;
			pages_map_all(r);
			s->npages = lo - s0;
		} else if (hi < s1) {
			s->start = pg.base + (hi << PAGE_SHIFT);
			s->npages = s1 - hi;
		} else if (lo > s0) {
			s->npages = lo - s0;
		} else {
			span_delete(s);
		}
		if (!pg.units[lo / PAGES_PER_UNIT].mapping) /* (large mappings are not counted) */
			pg.st.small_mmap_pages -= hi - lo;
		if (!reusable) {
			p = hi;
			continue;
		}
		struct release one;
		if (free_pages(lo, hi - lo, &one)) {
			if (nrel < 8)
				rel[nrel++] = one;
			else
				release_locked(&one);
		}
		p = hi;
	}
	pthread_mutex_unlock(&pg.lock);
	for (int i = 0; i < nrel; i++)
		release(&rel[i]);
}

void pages_note_foreign(uintptr_t addr, size_t len)
{
	size_t p, last;
	pthread_mutex_lock(&pg.lock);
	if (page_window(addr, len, &p, &last))
		for (; p < last; p++) {
			struct span *s = mmap_span_at(p);
			/* (A hugetlb unit is never changed: pages_demote copied it to THP
			 * first, or the change was none, mprotect to read-write.) */
			if (s && !is_hugetlb(pg.units[p / PAGES_PER_UNIT].backing))
				s->foreign = true;
		}
	pthread_mutex_unlock(&pg.lock);
}

bool pages_program_owns(uintptr_t addr, size_t len)
{
	size_t p, last;
	bool owns = true;
	pthread_mutex_lock(&pg.lock);
	if (addr < pg.base || addr + len > unit_addr(pg.frontier) || !page_window(addr, len, &p, &last))
		owns = false;
	else
		for (; p < last && owns; p++)
			owns = mmap_span_at(p) != NULL;
	pthread_mutex_unlock(&pg.lock);
	return owns;
}

/* ---------- large blocks outside the range ----------
 * A large block the range cannot hold (it is full, or a limit stops it growing), or
 * that whole units would round up by more than an eighth under a limit (tight), is
 * a private mapping of its own, to the page, as plain malloc makes it: committed as
 * the kernel commits that (no MAP_NORESERVE), 2 MiB-aligned and advised huge as the
 * range is. Its span (SPAN_OUTSIDE) is found by its start in a hash table. */
#define OUT_TOMB ((struct span *)1)
static struct {
	struct span **tab;   /* NULL, OUT_TOMB or a span; under the lock */
	size_t cap, used;    /* slots, slots not NULL */
	uint64_t bytes;      /* of outside blocks now */
	_Atomic unsigned said; /* why blocks went outside, said once each */
} outs;
enum { OUT_FULL = 1, OUT_LIMIT = 2, OUT_ROUND = 4 };

static size_t out_slot(uintptr_t a, size_t cap)
{
	return (size_t)(((a >> PAGE_SHIFT) * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

/* The slot holding the span that starts at a, or SIZE_MAX. Under plock. */
static size_t out_find(uintptr_t a)
{
	if (!outs.cap)
		return SIZE_MAX;
	for (size_t i = out_slot(a, outs.cap);; i = (i + 1) & (outs.cap - 1)) {
		struct span *s = outs.tab[i];
		if (!s)
			return SIZE_MAX;
		if (s != OUT_TOMB && s->start == a)
			return i;
	}
}

/* Room in the table for one more span (rebuilt larger, or without its tombs, once
 * it is three quarters full); false if it is full and could not grow. Under plock. */
static bool out_room(void)
{
	if ((outs.used + 1) * 4 > outs.cap * 3) {
		/* Rebuilt at twice the live spans' count, at least: tombs go. */
		size_t live = 0, cap = 256;
		for (size_t i = 0; i < outs.cap; i++)
			live += outs.tab[i] && outs.tab[i] != OUT_TOMB;
		while (cap < (live + 1) * 4)
			cap *= 2;
		void *m;
		if (sp_os->mmap(NULL, cap * sizeof *outs.tab, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &m) == 0) {
			struct span **t = m;
			for (size_t i = 0; i < outs.cap; i++) {
				struct span *o = outs.tab[i];
				if (!o || o == OUT_TOMB)
					continue;
				size_t j = out_slot(o->start, cap);
				while (t[j])
					j = (j + 1) & (cap - 1);
				t[j] = o;
			}
			if (outs.tab)
				sp_os->munmap(outs.tab, outs.cap * sizeof *outs.tab);
			outs.tab = t;
			outs.cap = cap;
			outs.used = live;
		}
	}
	return outs.cap && outs.used + 1 < outs.cap; /* (an empty slot stays: lookups end) */
}

/* Files s, where out_room said there is room. Under plock. */
static void out_insert(struct span *s)
{
	size_t i = out_slot(s->start, outs.cap);
	while (outs.tab[i] && outs.tab[i] != OUT_TOMB)
		i = (i + 1) & (outs.cap - 1);
	outs.used += !outs.tab[i];
	outs.tab[i] = s;
}

static struct span *outside_lookup(uintptr_t a)
{
	if (!__atomic_load_n(&outs.cap, __ATOMIC_RELAXED) || (a & (PAGE_SIZE - 1)))
		return NULL;
	pthread_mutex_lock(&pg.lock);
	size_t i = out_find(a);
	struct span *s = i == SIZE_MAX ? NULL : outs.tab[i];
	pthread_mutex_unlock(&pg.lock);
	return s;
}

/* Whether outside blocks are advised huge: as the range's units are. */
static bool outside_huge(void)
{
	return range_advice() == MADV_HUGEPAGE;
}

/* Once the heap is promoted (auto): the outside blocks mapped before go on THP too.
 * Under plock. */
static void outside_promote(void)
{
	for (size_t i = 0; i < outs.cap; i++) {
		struct span *s = outs.tab[i];
		if (s && s != OUT_TOMB && s->npages >= PAGES_PER_UNIT)
			sp_os->madvise((void *)s->start, s->npages << PAGE_SHIFT, MADV_HUGEPAGE);
	}
}

/* Says once per process why blocks go outside the range. */
static void outside_say(unsigned why, size_t size)
{
	if (atomic_fetch_or(&outs.said, why) & why)
		return;
	if (why == OUT_FULL)
		rt_say("the heap's range (%zu GiB) has no room for a block of %zu MiB: it and "
		       "blocks like it are mapped on their own, outside it",
		       (pg.max_units << UNIT_SHIFT) >> 30, size >> 20);
	else if (why == OUT_LIMIT)
		rt_say("the address-space or data limit (ulimit -v/-d) stops the heap's range "
		       "growing: large blocks are mapped on their own, to the page");
	else
		rt_say("under a finite address-space or data limit (ulimit -v/-d), blocks "
		       "above 1 MiB (or aligned above 2 MiB) are mapped to the page (%zu bytes "
		       "in %zu KiB), not in whole 2 MiB units",
		       size, ((size + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)) >> 10);
}

/* A block of size bytes (> MEDIUM_MAX, or aligned above 2 MiB) outside the range;
 * NULL if the kernel refuses it (as it would have plain malloc's). */
static struct span *outside_alloc(size_t size, size_t align, unsigned why)
{
	if (size > SIZE_MAX - UNIT_SIZE || align > ((size_t)1 << 40))
		return NULL;
	size_t len = (size + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	pthread_mutex_lock(&pg.lock);
	bool huge = outside_huge() && len >= UNIT_SIZE;
	struct span *s = span_new();
	pthread_mutex_unlock(&pg.lock);
	if (!s)
		return NULL;
	void *m;
	const int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	int r = -ENOMEM;
	/* 2 MiB-aligned for THP; near the limit, the slack that takes may not be had. */
	if (huge || align > PAGE_SIZE)
		r = sp_map_aligned(len, align > UNIT_SIZE ? align : UNIT_SIZE,
				   PROT_READ | PROT_WRITE, flags, &m);
	if (r < 0 && align <= PAGE_SIZE)
		r = sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0, &m);
	pthread_mutex_lock(&pg.lock);
	if (r < 0) {
		span_delete(s);
		pthread_mutex_unlock(&pg.lock);
		return NULL;
	}
	s->kind = SPAN_OUTSIDE;
	s->start = (uintptr_t)m;
	s->npages = len >> PAGE_SHIFT;
	s->clean = true;
	if (!out_room()) {
		span_delete(s);
		pthread_mutex_unlock(&pg.lock);
		sp_os->munmap(m, len);
		return NULL;
	}
	out_insert(s);
	pg.st.large_blocks++;
	pg.st.large_bytes += len;
	outs.bytes += len;
	/* (auto: the heap's size, for its promotion to THP, counts these too) */
	if (pg.small_first && !atomic_load(&pg.promoted) &&
	    (outs.bytes >> UNIT_SHIFT) + pg.st.units[SP_BACKING_4K] >= PROMOTE_UNITS)
		atomic_store(&pg.promote_pending, true);
	/* Never on hugetlb pages (2m, 1g): a fall, counted. */
	if (pg.policy == SP_BACKING_2M || pg.policy == SP_BACKING_1G)
		fall(pg.policy, SP_FALL_MMAP);
	pthread_mutex_unlock(&pg.lock);
	if (huge)
		sp_os->madvise(m, len, MADV_HUGEPAGE);
	outside_say(why, size);
	maybe_promote();
	return s;
}

/* Resizes an outside block by moving or resizing its mapping (mremap). */
static bool outside_resize(struct span *s, size_t new_size)
{
	if (new_size > SIZE_MAX - UNIT_SIZE)
		return false;
	size_t len = s->npages << PAGE_SHIFT;
	size_t want = (new_size + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	void *out;
	if (want == len)
		return true;
	/* Under the lock, with room in the table for where the block goes. */
	pthread_mutex_lock(&pg.lock);
	if (!out_room() ||
	    sp_os->mremap((void *)s->start, len, want, MREMAP_MAYMOVE, NULL, &out) < 0) {
		pthread_mutex_unlock(&pg.lock);
		return false;
	}
	size_t i = out_find(s->start);
	if (i != SIZE_MAX)
		outs.tab[i] = OUT_TOMB;
	s->start = (uintptr_t)out;
	s->npages = want >> PAGE_SHIFT;
	out_insert(s);
	pg.st.large_bytes += want - len;
	outs.bytes += want - len;
	pthread_mutex_unlock(&pg.lock);
	if (want >= UNIT_SIZE && outside_huge())
		sp_os->madvise(out, want, MADV_HUGEPAGE);
	return true;
}

static void outside_free(struct span *s)
{
	size_t len = s->npages << PAGE_SHIFT;
	uintptr_t a = s->start;
	pthread_mutex_lock(&pg.lock);
	size_t i = out_find(a);
	if (i != SIZE_MAX)
		outs.tab[i] = OUT_TOMB;
	pg.st.large_blocks--;
	pg.st.large_bytes -= len;
	outs.bytes -= len;
	span_delete(s);
	pthread_mutex_unlock(&pg.lock);
	sp_os->munmap((void *)a, len);
}

/* What whole units would add to a block of size bytes, over its whole pages (*len). */
static size_t unit_rounding(size_t size, size_t *len)
{
	*len = page_up(size);
	return ((size + UNIT_SIZE - 1) & ~(UNIT_SIZE - 1)) - *len;
}

/* Tight: whole units would round the block up by more than an eighth. */
static bool rounds_badly(size_t size)
{
	size_t len, more = unit_rounding(size, &len);
	return pg.tight && more > len / 8;
}

/* ---------- large blocks: runs of whole units ---------- */

/* n FREE units whose address is aligned to align units (the range itself is aligned
 * to 1 GiB only): their index, growing the range if needed. */
static size_t find_units(size_t n, size_t align)
{
	size_t phase = (pg.base >> UNIT_SHIFT) & (align - 1);
	/* The free run that makes the fewest new units resident (empty units kept
	 * resident first: a block that faults new units in beside them makes them go,
	 * trim_kept), then the lowest. */
	size_t best = SIZE_MAX, best_cost = SIZE_MAX;
	for (size_t u = bits_next(pg.freebits, 0, pg.frontier, true); u < pg.frontier && best_cost;) {
		size_t e = bits_next(pg.freebits, u, pg.frontier, false);
		size_t at = ((u + phase + align - 1) & ~(align - 1)) - phase;
		size_t cost = at + n <= e ? fresh_units(at, n) : 0;
		for (; at + n <= e; cost += at + align + n <= e
			? fresh_units(at + n, align) - fresh_units(at, align) : 0, at += align) {
			if (cost < best_cost) {
				best = at;
				best_cost = cost;
				if (!cost)
					break;
			}
		}
		u = e < pg.frontier ? bits_next(pg.freebits, e, pg.frontier, true) : pg.frontier;
	}
	if (best != SIZE_MAX)
		return best;
	/* Past the frontier, starting in the free tail below it if there is one. */
	size_t tail = pg.frontier;
	while (tail > 0 && bit(pg.freebits, tail - 1))
		tail--;
	size_t at = ((tail + phase + align - 1) & ~(align - 1)) - phase;
	if (at + n > pg.max_units || grow(at + n) < 0)
		return SIZE_MAX;
	return at;
}

static void claim_units(size_t at, size_t n)
{
	for (size_t i = at; i < at + n; i++) {
		if (!pg.units[i].in_cache)
			continue;
		cache_remove((int32_t)i);
		/* A unit kept on a hugetlb page goes back to the pool first: the run is
		 * backed whole, and where that falls to THP, no hugetlb page must stay
		 * behind in a unit taken for THP (fork would share it with a child). */
		if (is_hugetlb(pg.units[i].backing)) {
			unback_hugetlb(i, 1);
			pg.units[i].backing = 0;
			pg.units[i].resident = 0;
		} else {
			pg.st.reused++;
		}
	}
	bits_set(pg.freebits, at, n, false);
}

static struct span *range_alloc_large(size_t size, size_t align)
{
	if (size > (pg.max_units << UNIT_SHIFT))
		return NULL;
	size_t n = (size + UNIT_SIZE - 1) >> UNIT_SHIFT;
	size_t a = align > UNIT_SIZE ? align >> UNIT_SHIFT : 1;
	/* Under 1g, a block of 1 GiB or more starts on a 1 GiB boundary: its whole GiBs
	 * go on 1 GiB pages, the rest on 2 MiB ones. */
	bool giga = pg.policy == SP_BACKING_1G && n >= GIGA_UNITS;
	if (giga && a < GIGA_UNITS)
		a = GIGA_UNITS;
	pthread_mutex_lock(&pg.lock);
	struct span *s = span_new();
	size_t at = s ? find_units(n, a) : SIZE_MAX;
	if (at == SIZE_MAX) {
		if (s)
			span_delete(s);
		pthread_mutex_unlock(&pg.lock);
		return NULL;
	}
	size_t made = 0;
	for (size_t i = at; i < at + n; i++)
		made += !pg.units[i].in_cache && !pg.units[i].resident;
	claim_units(at, n);
	trim_kept(made);
	bool clean = true;
	for (size_t i = at; i < at + n; i++)
		clean = clean && !pg.units[i].resident;
	size_t g = n / GIGA_UNITS * GIGA_UNITS;
	if (!giga || !back_hugetlb(at, g, SP_BACKING_1G))
		g = 0;
	enum sp_backing got = g < n ? back_units(at + g, n - g) : SP_BACKING_1G;
	for (size_t i = at; i < at + n; i++) {
		pg.units[i].state = U_LARGE;
		pg.units[i].backing = (uint8_t)(i < at + g ? SP_BACKING_1G : got);
		pg.units[i].resident = 1;
	}
	count_units(SP_BACKING_1G, (long)g);
	count_units(got, (long)(n - g));
	s->kind = SPAN_LARGE;
	s->start = unit_addr(at);
	s->npages = n * PAGES_PER_UNIT;
	s->clean = clean || is_hugetlb((uint8_t)got);
	map_set(page_of(s->start), s);
	pg.st.large_blocks++;
	pg.st.large_bytes += n << UNIT_SHIFT;
	pthread_mutex_unlock(&pg.lock);
	maybe_promote();
	rt_live_tick();
	return s;
}

/* Blocks up to LONG_MAX that whole units would round up by more than 1/64 are runs
 * of pages (across units), as medium ones are: as whole units, a block of 2.2 MB
 * was resident as 4 MiB, one of 9 MB as 10 MiB. Past LONG_MAX a unit's worth of
 * rounding is under 1/64; and runs of whole units are what realloc moves by mremap
 * and 1 GiB pages hold. Under a limit (tight) large blocks go as they did. */
bool pages_is_run(size_t size, size_t align)
{
	if (size <= MEDIUM_MAX)
		return align <= UNIT_SIZE;
	if (pg.tight || align > PAGE_SIZE || size > LONG_MAX_BYTES)
		return false;
	size_t len, more = unit_rounding(size, &len);
	return more * 64 > len;
}

struct span *pages_alloc_large(size_t size, size_t align)
{
	struct span *s = NULL;
	bool badly = rounds_badly(size);
	/* Under a limit, to the page first; the range may still have free units. */
	if (badly && (s = outside_alloc(size, align, OUT_ROUND)))
		return s;
	if ((s = range_alloc_large(size, align)) || badly)
		return s;
	return outside_alloc(size, align, pg.tight ? OUT_LIMIT : OUT_FULL);
}

/* Pages [p, p+n) are free for a run to grow into: free pages of HEAP units the heap
 * may join, or FREE units (past the frontier too). Under plock. */
static bool pages_free_for_run(size_t p, size_t n)
{
	if (p + n > pg.max_units * PAGES_PER_UNIT)
		return false;
	for (size_t u = p / PAGES_PER_UNIT; u <= (p + n - 1) / PAGES_PER_UNIT; u++) {
		if (u >= pg.frontier || bit(pg.freebits, u))
			continue;
		size_t from, to;
		unit_part(p, n, u, &from, &to);
		if (!joinable(u) || bits_next(pg.units[u].free, from, to, false) != to)
			return false;
	}
	return true;
}

bool pages_resize_run(struct span *s, size_t npages)
{
	size_t p0 = page_of(s->start);
	struct release rel;
	bool give_back = false, clean;
	/* (Past 1 MiB a block realloc grows moves to whole units, heap.c: grown in
	 * place across units instead, strings grown by realloc in 2 threads had 10
	 * times as many units given back and refaulted.) */
	size_t most = s->kind == SPAN_FIT ? FIT_CHUNK_PAGES : MEDIUM_MAX >> PAGE_SHIFT;
	if (npages == 0 || (npages > s->npages && (npages > most ||
						   (s->kind != SPAN_MEDIUM && s->kind != SPAN_FIT))))
		return false;
	pthread_mutex_lock(&pg.lock);
	if (npages < s->npages) {
		if (span_maps_all(s->kind))
			for (size_t i = npages; i < s->npages; i++)
				map_set(p0 + i, NULL);
		give_back = free_run(p0 + npages, s->npages - npages, &rel);
	} else if (npages > s->npages) {
		size_t p = p0 + s->npages, n = npages - s->npages;
		if (!pages_free_for_run(p, n) || !take_pages(p, n, &clean)) {
			pthread_mutex_unlock(&pg.lock);
			return false;
		}
		if (span_maps_all(s->kind))
			for (size_t i = 0; i < n; i++)
				map_set(p + i, s);
	}
	s->npages = npages;
	pthread_mutex_unlock(&pg.lock);
	if (give_back)
		release(&rel);
	return true;
}

bool pages_resize_large(struct span *s, size_t new_size)
{
	size_t n = s->npages / PAGES_PER_UNIT;
	if (s->kind == SPAN_OUTSIDE)
		return outside_resize(s, new_size);
	if (new_size > (pg.max_units << UNIT_SHIFT))
		return false;
	size_t want = (new_size + UNIT_SIZE - 1) >> UNIT_SHIFT;
	size_t u = (s->start - pg.base) >> UNIT_SHIFT;
	struct release rel;
	if (want == n)
		return true;
	if (want > n && rounds_badly(new_size))
		return false; /* (the caller copies it to a block to the page) */
	/* A block on 1 GiB pages keeps its size: its mapping cannot be cut. */
	if (want < n && pg.units[u].backing == SP_BACKING_1G)
		return true;
	pthread_mutex_lock(&pg.lock);
	if (want < n) {
		bool give_back = retire_units(u + want, n - want, &rel);
		s->npages = want * PAGES_PER_UNIT;
		pg.st.large_bytes -= (n - want) << UNIT_SHIFT;
		pthread_mutex_unlock(&pg.lock);
		if (give_back)
			release(&rel);
		return true;
	}
	uint8_t backing = pg.units[u].backing; /* the unit's: a forked child's are THP */
	bool hugetlb = is_hugetlb(backing);
	/* Grow in place when the units after the block are free. */
	if (!hugetlb && u + want <= pg.max_units &&
	    (u + want <= pg.frontier || grow(u + want) == 0) &&
	    bits_next(pg.freebits, u + n, u + want, false) == u + want) {
		claim_units(u + n, want - n);
		for (size_t i = u + n; i < u + want; i++) {
			pg.units[i].state = U_LARGE;
			pg.units[i].backing = backing;
			pg.units[i].resident = 1;
		}
		count_units((enum sp_backing)backing, (long)(want - n));
		s->npages = want * PAGES_PER_UNIT;
		pg.st.large_bytes += (want - n) << UNIT_SHIFT;
		pthread_mutex_unlock(&pg.lock);
		return true;
	}
	/* A block below MOVE_MIN_UNITS is copied by the caller: the units it leaves
	 * stay resident for the next block, where moved-from units would be faulted in
	 * again (a copy of 2 MiB costs about what faulting 2 MiB in does). */
	if (hugetlb || n < MOVE_MIN_UNITS) {
		pthread_mutex_unlock(&pg.lock);
		return false;
	}
	/* Move the pages to a free run big enough, leaving the old units mapped and
	 * empty (MREMAP_DONTUNMAP): no copy, and no hole in the range. */
	size_t at = find_units(want, 1);
	if (at == SIZE_MAX) {
		pthread_mutex_unlock(&pg.lock);
		return false;
	}
	claim_units(at, want);
	void *out;
	int r = sp_os->mremap((void *)s->start, n << UNIT_SHIFT, n << UNIT_SHIFT,
			      MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP,
			      (void *)unit_addr(at), &out);
	if (r < 0) {
		plain_units(at, n); /* a refused move may have unmapped them */
		bits_set(pg.freebits, at, want, true);
		pthread_mutex_unlock(&pg.lock);
		return false;
	}
	for (size_t i = at; i < at + want; i++) {
		pg.units[i].state = U_LARGE;
		pg.units[i].backing = backing;
		pg.units[i].resident = 1;
	}
	for (size_t i = u; i < u + n; i++) {
		pg.units[i].state = U_FREE;
		pg.units[i].resident = 0;
		pg.units[i].backing = 0;
	}
	bits_set(pg.freebits, u, n, true);
	count_units((enum sp_backing)backing, (long)(want - n));
	map_set(page_of(s->start), NULL);
	s->start = unit_addr(at);
	s->npages = want * PAGES_PER_UNIT;
	map_set(page_of(s->start), s);
	pg.st.large_bytes += (want - n) << UNIT_SHIFT;
	pg.st.mremaps++;
	trim_top();
	pthread_mutex_unlock(&pg.lock);
	return true;
}


void pages_note_mmap(bool large)
{
	atomic_fetch_add_explicit(large ? &pg.st.large_mmaps : &pg.st.small_mmaps, 1, memory_order_relaxed);
}

void pages_note_fall(enum sp_backing rung, enum sp_fall why)
{
	pthread_mutex_lock(&pg.lock);
	fall(rung, why);
	pthread_mutex_unlock(&pg.lock);
}

/* ---------- fork, with hugetlb units ----------
 * Private hugetlb pages are copied on write after fork, from the pool: a child
 * that writes one while the pool is empty dies of SIGBUS, and a parent that writes
 * one then takes it from its child. So hugetlb units are never shared with a
 * child: before fork their contents go to a staging copy and they are marked
 * MADV_DONTFORK; the child maps THP memory in their place and fills it from the
 * copy. The parent keeps its units untouched. Only --backing 2m has such units,
 * and only its forks pay for the copy. */
static struct {
	char *copy;   /* the staging copy, NULL for none */
	size_t units; /* units copied into it */
} staging;

static bool is_hugetlb_unit(size_t u)
{
	return (pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE) &&
	       is_hugetlb(pg.units[u].backing);
}

/* The fork advice for unit u: 2 MiB units one by one, 1 GiB pages whole (at the
 * first unit of each; the kernel refuses to split their mapping). */
static void fork_advice(size_t u, int advice)
{
	if (pg.units[u].backing == SP_BACKING_2M)
		sp_os->madvise((void *)unit_addr(u), UNIT_SIZE, advice);
	else if (u % GIGA_UNITS == 0)
		sp_os->madvise((void *)unit_addr(u), GIGA_UNITS << UNIT_SHIFT, advice);
}

/* Empty units kept on hugetlb pages go back to the pool before fork: a child must not
 * share them (it would take them for its heap and write them, copied from the pool).
 * Under plock. */
static void release_kept_hugetlb(void)
{
	for (int32_t u = pg.cache_head, next; u != NO_UNIT; u = next) {
		next = pg.units[u].next;
		if (!is_hugetlb(pg.units[u].backing))
			continue;
		cache_remove(u);
		pg.units[u].state = U_RELEASING;
		struct release rel = { .u = (size_t)u, .n = 1, .extra = NO_EXTRA };
		mark_released(&rel, give_back_units(&rel));
	}
}

/* Under plock, before fork. */
void pages_fork_prepare(void)
{
	release_kept_hugetlb();
	size_t n = pg.st.units[SP_BACKING_2M] + pg.st.units[SP_BACKING_1G];
	void *m;
	staging.copy = NULL;
	staging.units = 0;
	if (!n || sp_os->mmap(NULL, n << UNIT_SHIFT, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m) < 0)
		return;
	staging.copy = m;
	for (size_t u = 0; u < pg.frontier && staging.units < n; u++) {
		if (!is_hugetlb_unit(u))
			continue;
		memcpy(staging.copy + (staging.units << UNIT_SHIFT), (void *)unit_addr(u), UNIT_SIZE);
		fork_advice(u, MADV_DONTFORK);
		staging.units++;
	}
}

void pages_fork_parent(void)
{
	if (!staging.copy)
		return;
	for (size_t u = 0, k = 0; u < pg.frontier && k < staging.units; u++)
		if (is_hugetlb_unit(u)) {
			fork_advice(u, MADV_DOFORK);
			k++;
		}
	sp_os->munmap(staging.copy, (pg.st.units[SP_BACKING_2M] + pg.st.units[SP_BACKING_1G]) << UNIT_SHIFT);
	staging.copy = NULL;
}

/* Puts a private THP copy of src at n units from u: filled 2 MiB-aligned elsewhere
 * (so the copy faults in as huge pages) and moved over the units' place, which is a
 * hole (MADV_DONTFORK) or, if that advice failed, the units shared with the parent
 * (replaced whole: a 1 GiB page's n is all of its units); or the units themselves,
 * still mapped, when they are demoted to THP (demote_units). */
bool pages_copy_in(uintptr_t at, size_t len, const void *src)
{
	void *m, *out, *hold;
	/* Hold the hole first: the copy must not be placed in it, as a move between
	 * overlapping ranges is refused. (Where the units are still mapped, this fails
	 * harmlessly.) */
	sp_os->mmap((void *)at, len, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0, &hold);
	if (sp_map_aligned(len, UNIT_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, &m) < 0)
		return false;
	uintptr_t a = (uintptr_t)m;
	sp_os->madvise((void *)a, len, MADV_HUGEPAGE);
	memcpy((void *)a, src, len);
	if (sp_os->mremap((void *)a, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)at, &out) == 0)
		return true;
	/* Refused, perhaps after what was at at was unmapped (out of mappings): the
	 * copy may be all that is left of it, and is put there by hand. */
	bool put = sp_os->mmap((void *)at, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0,
			       &out) == 0;
	if (put) {
		sp_os->madvise((void *)at, len, MADV_HUGEPAGE);
		memcpy((void *)at, (const void *)a, len);
	}
	sp_os->munmap((void *)a, len);
	/* (Not put, but still mapped as it was: nothing changed.) */
	if (!put && sp_os->mprotect((void *)at, len, PROT_READ | PROT_WRITE) < 0)
		rt_abort("memory at %p could not be put back after a refused move", (void *)at);
	return put;
}

int pages_hugetlb_into(uintptr_t at, size_t len, bool giga, bool *hole)
{
	void *tmp, *out;
	int huge = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (giga ? MAP_HUGE_1GB : MAP_HUGE_2MB);
	*hole = false;
	int r = sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, huge, -1, 0, &tmp);
	if (r < 0)
		return r;
	r = sp_os->mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)at, &out);
	if (r == 0)
		return 0;
	sp_os->munmap(tmp, len);
	*hole = true;
	/* This kernel sometimes refuses the move of a 1 GiB page with ENOMEM (seen here
	 * with 1-2 runs in 8, the same again on every retry; a new mapping does not
	 * help, it lands where the last one was). What was at at is unmapped by then:
	 * map the pages into the hole directly, unless something else landed there. */
	if (sp_os->mmap((void *)at, len, PROT_READ | PROT_WRITE, huge | MAP_FIXED_NOREPLACE, -1,
			0, &out) < 0)
		return r;
	if ((uintptr_t)out == at) {
		*hole = false;
		return 0;
	}
	sp_os->munmap(out, len); /* a kernel without MAP_FIXED_NOREPLACE took it as a hint */
	return r;
}

static bool units_from_copy(size_t u, size_t n, const void *src)
{
	return pages_copy_in(unit_addr(u), n << UNIT_SHIFT, src);
}

bool pages_fork_staged(void)
{
	return staging.copy != NULL;
}

/* In the child, before anything else touches the units: from fork.c's guard (a signal
 * handler: system calls and memcpy only, under the lock this thread took in prepare)
 * or its child handler. Once: the units it copies are THP after it. */
void pages_fork_fixup(void)
{
	size_t total = pg.st.units[SP_BACKING_2M] + pg.st.units[SP_BACKING_1G], k = 0;
	if (!total)
		return;
	for (size_t u = 0; u < pg.frontier && k < total;) {
		if (!is_hugetlb_unit(u)) {
			u++;
			continue;
		}
		/* A 1 GiB page's units are staged one after another and copied as one. */
		size_t n = pg.units[u].backing == SP_BACKING_1G ? GIGA_UNITS : 1;
		/* Without a staging copy (it could not be mapped) the units were shared
		 * with this child, and are copied from where they are. */
		const void *src = staging.copy ? staging.copy + (k << UNIT_SHIFT) : (const void *)unit_addr(u);
		if ((staging.copy && k + n > staging.units) || !units_from_copy(u, n, src))
			rt_abort("after fork, the heap's hugetlb memory at %p could not be copied "
				 "into this process", (void *)unit_addr(u));
		for (size_t i = u; i < u + n; i++) {
			pg.st.units[pg.units[i].backing]--;
			pg.units[i].backing = SP_BACKING_THP;
		}
		k += n;
		u += n;
	}
	pg.st.units[SP_BACKING_THP] += k;
	if (staging.copy)
		sp_os->munmap(staging.copy, total << UNIT_SHIFT);
	staging.copy = NULL;
}

void pages_fork_child(void)
{
	pages_fork_fixup();
	release_emptied(0, pg.frontier);
}

/* ---------- the program's large mappings on hugetlb units (2m, 1g) ----------
 * A private anonymous mmap of at least SUPERPAGE_MIN is served from units of the
 * range, one SPAN_MMAP span per unit, so that its hugetlb pages are staged around
 * fork with the heap's (above) and never shared with a child, and its munmap,
 * mremap and madvise are answered by the range's code. Its units hold nothing of the
 * heap's: the kernel cannot re-protect or map over part of a hugetlb page, so a unit
 * the program changes is first copied to THP memory in place (demote_units), and no
 * malloc'd object may lie in memory being copied. */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

/* What memory that is not hugetlb gets here: THP, or base pages where THP is off. */
static enum sp_backing plain_backing(void)
{
	const struct sp_view *v = sp_view_get();
	return !v->thp_present || v->thp_never || v->features.thp_disabled_here ? SP_BACKING_4K
										  : SP_BACKING_THP;
}

/* 2 MiB hugetlb pages on as many of the n units at u as the pool can hold: all of
 * them, or else as many as it has free (read after the refusal, which is counted).
 * Returns how many, from u; the others have plain memory. Under plock. */
static size_t back_hugetlb_most(size_t u, size_t n)
{
	struct sp_pool pool;
	if (back_hugetlb(u, n, SP_BACKING_2M))
		return n;
	if (n < 2 || sp_pool_get(UNIT_SIZE, -1, &pool) < 0 || pool.free - pool.reserved <= 0 ||
	    (size_t)(pool.free - pool.reserved) >= n)
		return 0;
	n = (size_t)(pool.free - pool.reserved);
	return back_hugetlb(u, n, SP_BACKING_2M) ? n : 0;
}

/* Fresh plain memory for the program at n units from u, advised huge, reserved as
 * the program asked (MAP_NORESERVE or not: the commit limit may refuse it). */
static int plain_for_program(size_t u, size_t n, int flags)
{
	void *out;
	size_t len = n << UNIT_SHIFT;
	int r = sp_os->mmap((void *)unit_addr(u), len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | (flags & MAP_NORESERVE), -1, 0,
			    &out);
	if (r < 0)
		return r;
	sp_os->madvise(out, len, MADV_HUGEPAGE);
	return 0;
}

/* Units claimed for a mapping that is not made after all go back to the free ones,
 * as they are now (what they held, or fresh plain memory after a refused move), so
 * they stay marked resident if they were. Under plock. */
static void unclaim_units(size_t at, size_t n)
{
	for (size_t i = at; i < at + n; i++) {
		pg.units[i].state = U_FREE;
		pg.units[i].backing = 0;
	}
	bits_set(pg.freebits, at, n, true);
}

/* n new span descriptors, linked by next, or NULL (none left over). Under plock. */
static struct span *spans_new(size_t n)
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

/* A unit taken for a program's mappings, of backing b: in the heap, resident, in no
 * bucket (its free pages are the caller's to set). */
static void mapping_unit_start(struct unit *x, enum sp_backing b)
{
	x->state = U_HEAP;
	x->mapping = 1;
	pg.mapping_units++;
	x->backing = (uint8_t)b;
	x->resident = 1;
	x->bucket = NO_BUCKET;
	x->longest = 0;
}

/* Units [at, at+n), mapped with backing b, become the program's: its np pages from
 * the first one, a span per unit taken from *list; the rest of the last unit is free
 * and stays unused. Under plock. */
static void mapping_units_set(size_t at, size_t n, size_t np, enum sp_backing b,
			      struct span **list)
{
	for (size_t i = 0; i < n; i++) {
		struct unit *x = &pg.units[at + i];
		struct span *s = *list;
		size_t used = np - i * PAGES_PER_UNIT;
		if (used > PAGES_PER_UNIT)
			used = PAGES_PER_UNIT;
		*list = s->next;
		mapping_unit_start(x, b);
		memset(x->free, 0, sizeof x->free);
		bits_set(x->free, used, PAGES_PER_UNIT - used, true);
		set_nfree(x, PAGES_PER_UNIT - used);
		pg.heap_units++;
		count_units(b, 1);
		s->next = NULL;
		s->kind = SPAN_MMAP;
		s->start = unit_addr(at + i);
		s->npages = used;
		pages_map_all(s);
	}
}

void *pages_map_program(size_t len, int flags, bool hugetlb, int *err)
{
	*err = 0;
	if (pg.map_rung == SP_BACKING_COUNT || len == 0)
		return NULL;
	/* (Larger than the range: n would not hold it, and the rounding could wrap.) */
	size_t np = len <= (pg.max_units << UNIT_SHIFT) ? (len + PAGE_SIZE - 1) >> PAGE_SHIFT : 0;
	size_t n = (np + PAGES_PER_UNIT - 1) / PAGES_PER_UNIT;
	bool giga = hugetlb && pg.map_rung == SP_BACKING_1G && n >= GIGA_UNITS;
	pthread_mutex_lock(&pg.lock);
	struct span *list = np ? spans_new(n) : NULL;
	size_t at = list ? find_units(n, giga ? GIGA_UNITS : 1) : SIZE_MAX;
	if (at == SIZE_MAX) {
		/* No room in the range (or no descriptors): the kernel maps it, on THP. */
		if (hugetlb)
			fall(giga ? SP_BACKING_1G : SP_BACKING_2M, SP_FALL_MMAP);
		pthread_mutex_unlock(&pg.lock);
		goto drop;
	}
	claim_units(at, n);
	/* The whole GiBs on 1 GiB pages under 1g, the rest on 2 MiB ones. */
	size_t g = giga ? n / GIGA_UNITS * GIGA_UNITS : 0, h = 0;
	if (g && !back_hugetlb(at, g, SP_BACKING_1G))
		g = 0;
	if (hugetlb && g < n)
		h = back_hugetlb_most(at + g, n - g);
	if (hugetlb && g + h == 0) {
		/* No hugetlb page at all (counted): the kernel's THP mapping serves it, as
		 * under the other backings. */
		unclaim_units(at, n);
		pthread_mutex_unlock(&pg.lock);
		goto drop;
	}
	if (g + h < n) {
		int r = plain_for_program(at + g + h, n - g - h, flags);
		if (r < 0) {
			/* Refused where the kernel would have refused the whole mapping. */
			unback_hugetlb(at, g + h);
			plain_units(at + g + h, n - g - h);
			unclaim_units(at, n);
			pthread_mutex_unlock(&pg.lock);
			*err = -r;
			goto drop;
		}
	}
	mapping_units_set(at, g, np, SP_BACKING_1G, &list);
	mapping_units_set(at + g, h, np - g * PAGES_PER_UNIT, SP_BACKING_2M, &list);
	mapping_units_set(at + g + h, n - g - h, np - (g + h) * PAGES_PER_UNIT, plain_backing(),
			  &list);
	pthread_mutex_unlock(&pg.lock);
	void *p = (void *)unit_addr(at);
	if (flags & MAP_POPULATE)
		sp_os->madvise(p, np << PAGE_SHIFT, MADV_POPULATE_WRITE);
	return p;
drop:
	if (list) {
		pthread_mutex_lock(&pg.lock);
		spans_delete(list);
		pthread_mutex_unlock(&pg.lock);
	}
	return NULL;
}

bool pages_grow_mapping(uintptr_t end, size_t add)
{
	size_t lp = page_of(end - 1), np = add >> PAGE_SHIFT, u = lp / PAGES_PER_UNIT;
	size_t off = lp % PAGES_PER_UNIT + 1, nu = 0;
	struct span *s = NULL, *list = NULL;
	bool ok = false;
	pthread_mutex_lock(&pg.lock);
	if (end <= pg.base || u >= pg.frontier || !pg.units[u].mapping || np == 0)
		goto out;
	s = mmap_span_at(lp);
	if (!s || s->start + (s->npages << PAGE_SHIFT) != end)
		goto out;
	/* The free pages after it in its unit, then free units after that one. */
	size_t here = PAGES_PER_UNIT - off < np ? PAGES_PER_UNIT - off : np;
	if (bits_next(pg.units[u].free, off, off + here, false) != off + here)
		goto out;
	size_t more = np - here, u1 = u + 1;
	nu = (more + PAGES_PER_UNIT - 1) / PAGES_PER_UNIT;
	if (nu) {
		if (u1 + nu > pg.max_units || (u1 + nu > pg.frontier && grow(u1 + nu) < 0) ||
		    bits_next(pg.freebits, u1, u1 + nu, false) != u1 + nu || !(list = spans_new(nu)))
			goto out;
		claim_units(u1, nu);
		size_t h = back_hugetlb_most(u1, nu);
		if (h < nu && plain_for_program(u1 + h, nu - h, MAP_NORESERVE) < 0) {
			unback_hugetlb(u1, h);
			plain_units(u1 + h, nu - h);
			unclaim_units(u1, nu);
			goto out;
		}
		mapping_units_set(u1, h, more, SP_BACKING_2M, &list);
		mapping_units_set(u1 + h, nu - h, more - h * PAGES_PER_UNIT, plain_backing(), &list);
	}
	if (here) {
		/* These pages may have been the program's before (unmapped since): zero,
		 * as new memory is. They are read-write: nothing but pages_demote's owners
		 * change the protection of a mapping unit. */
		struct unit *x = &pg.units[u];
		bits_set(x->free, off, here, false);
		set_nfree(x, x->nfree - here);
		memset((void *)end, 0, here << PAGE_SHIFT);
		for (size_t i = 0; i < here; i++)
			map_set(lp + 1 + i, s);
		s->npages += here;
	}
	ok = true;
out:
	spans_delete(list);
	pthread_mutex_unlock(&pg.lock);
	return ok;
}

/* Copies a hugetlb unit of a mapping (all the units of its 1 GiB page, for those) to
 * THP memory in place: the program changes part of it. A write that another thread
 * makes to that memory while it is copied is lost (superpage-run(7)). Under plock,
 * with the caller's signals blocked (a handler must not write it meanwhile). */
static bool demote_units(size_t u)
{
	size_t first = u, n = 1;
	if (pg.units[u].backing == SP_BACKING_1G) {
		first = u - u % GIGA_UNITS;
		n = GIGA_UNITS;
	}
	if (!units_from_copy(first, n, (const void *)unit_addr(first)))
		return false;
	enum sp_backing b = plain_backing();
	for (size_t i = first; i < first + n; i++) {
		pg.st.units[pg.units[i].backing]--;
		pg.st.units[b]++;
		pg.units[i].backing = (uint8_t)b;
	}
	skip.until = 0;
	skip.giga_until = 0;
	release_emptied(first, n);
	return true;
}

/* Copies to THP every hugetlb unit of a program's mapping that pages [p, last) touch,
 * with the caller's signals blocked from the first (*blocked, *old: to put back once
 * the lock is dropped). 0, or -ENOMEM if a unit could not be copied. Under plock. */
static int demote_window(size_t p, size_t last, bool *blocked, sigset_t *old)
{
	sigset_t all;
	for (size_t u = p / PAGES_PER_UNIT; u <= (last - 1) / PAGES_PER_UNIT; u++) {
		if (!pg.units[u].mapping || pg.units[u].state != U_HEAP || !is_hugetlb(pg.units[u].backing))
			continue;
		if (!*blocked) {
			sigfillset(&all);
			pthread_sigmask(SIG_BLOCK, &all, old);
			*blocked = true;
		}
		if (!demote_units(u))
			return -ENOMEM;
	}
	return 0;
}

int pages_demote(uintptr_t addr, size_t len)
{
	size_t p, last;
	int r = 0;
	bool blocked = false;
	sigset_t old;
	pthread_mutex_lock(&pg.lock);
	if (!page_window(addr, len, &p, &last)) {
		pthread_mutex_unlock(&pg.lock);
		return 0;
	}
	/* Pages of a mapping unit that are not the program's are unmapped, as far as
	 * it knows: the kernel would say ENOMEM (and its change must not reach them). */
	for (size_t i = p; i < last && r == 0; i++)
		if (pg.units[i / PAGES_PER_UNIT].mapping && !mmap_span_at(i))
			r = -ENOMEM;
	if (r == 0)
		r = demote_window(p, last, &blocked, &old);
	pthread_mutex_unlock(&pg.lock);
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* Where a fixed mapping of the program's may land: pages it has from us, pages of
 * its large mappings' units that it unmapped (nothing else is ever given those),
 * and free units (that it may have unmapped whole: nothing of the heap's is there).
 * Under plock. */
static bool fixed_allowed_locked(uintptr_t addr, size_t len)
{
	size_t p, last;
	if (addr < pg.base || addr + len > unit_addr(pg.frontier) || !page_window(addr, len, &p, &last))
		return false;
	for (; p < last; p++) {
		size_t u = p / PAGES_PER_UNIT;
		if (!mmap_span_at(p) && pg.units[u].state != U_FREE &&
		    !(pg.units[u].mapping && bit(pg.units[u].free, p % PAGES_PER_UNIT)))
			return false;
	}
	return true;
}

bool pages_fixed_allowed(uintptr_t addr, size_t len)
{
	pthread_mutex_lock(&pg.lock);
	bool ok = fixed_allowed_locked(addr, len);
	pthread_mutex_unlock(&pg.lock);
	return ok;
}

int pages_fixed_into(uintptr_t addr, size_t len)
{
	size_t p, last, runs = 0;
	struct span *list = NULL, *taken = NULL;
	bool blocked = false;
	sigset_t old;
	int r = 0;
	pthread_mutex_lock(&pg.lock);
	if (!fixed_allowed_locked(addr, len) || !page_window(addr, len, &p, &last)) {
		pthread_mutex_unlock(&pg.lock);
		return -EINVAL;
	}
	/* A descriptor for each run of unmapped pages (within a unit) it takes back. */
	for (size_t i = p; i < last; i++)
		if (!mmap_span_at(i) && (i == p || mmap_span_at(i - 1) || i % PAGES_PER_UNIT == 0))
			runs++;
	if (runs && !(list = spans_new(runs))) {
		pthread_mutex_unlock(&pg.lock);
		return -ENOMEM;
	}
	/* A free unit becomes an (empty) unit of the program's mappings. */
	for (size_t u = p / PAGES_PER_UNIT; u <= (last - 1) / PAGES_PER_UNIT; u++) {
		struct unit *x = &pg.units[u];
		if (x->state != U_FREE)
			continue;
		enum sp_backing b = plain_backing();
		claim_units(u, 1);
		mapping_unit_start(x, b);
		memset(x->free, 0xff, sizeof x->free);
		set_nfree(x, PAGES_PER_UNIT);
		pg.heap_units++;
		count_units(b, 1);
	}
	/* Taken back first, so that no unit of them is given back meanwhile (an empty
	 * unit of a 1 GiB page goes once the page is demoted). They are about to be
	 * mapped over: plain memory goes back there when the program unmaps them. */
	for (size_t i = p; i < last;) {
		if (mmap_span_at(i)) {
			i++;
			continue;
		}
		size_t e = i + 1, u = i / PAGES_PER_UNIT;
		while (e < last && e % PAGES_PER_UNIT && !mmap_span_at(e))
			e++;
		struct span *s = list;
		list = s->next;
		s->next = taken;
		taken = s;
		s->kind = SPAN_MMAP;
		s->foreign = true;
		s->start = pg.base + (i << PAGE_SHIFT);
		s->npages = e - i;
		bits_set(pg.units[u].free, i % PAGES_PER_UNIT, e - i, false);
		set_nfree(&pg.units[u], pg.units[u].nfree - (e - i));
		pages_map_all(s);
		i = e;
	}
	if (r == 0)
		r = demote_window(p, last, &blocked, &old);
	while (r < 0 && taken) {
		/* (A unit could not be copied: the pages are unmapped again, and units
		 * taken whole go back.) */
		struct span *s = taken;
		size_t p0 = page_of(s->start), u = p0 / PAGES_PER_UNIT;
		taken = s->next;
		for (size_t i = p0; i < p0 + s->npages; i++)
			map_set(i, NULL);
		bits_set(pg.units[u].free, p0 % PAGES_PER_UNIT, s->npages, true);
		set_nfree(&pg.units[u], pg.units[u].nfree + s->npages);
		span_delete(s);
		if (!taken)
			release_emptied(p / PAGES_PER_UNIT,
					(last - 1) / PAGES_PER_UNIT + 1 - p / PAGES_PER_UNIT);
	}
	while (taken) {
		struct span *s = taken;
		taken = s->next;
		s->next = NULL;
	}
	pthread_mutex_unlock(&pg.lock);
	if (blocked)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

bool pages_has_foreign(uintptr_t addr, size_t len)
{
	size_t p, last;
	bool any = false;
	pthread_mutex_lock(&pg.lock);
	if (page_window(addr, len, &p, &last))
		for (; p < last && !any; p++) {
			struct span *s = mmap_span_at(p);
			any = s && s->foreign;
		}
	pthread_mutex_unlock(&pg.lock);
	return any;
}

enum advise_how pages_advise_how(int advice)
{
	switch (advice) {
	case MADV_DONTNEED:
	case MADV_DONTNEED_LOCKED:
		return ADV_ZERO;
	case MADV_FREE:
	case MADV_NORMAL:
	case MADV_RANDOM:
	case MADV_SEQUENTIAL:
	case MADV_WILLNEED:
	case MADV_HUGEPAGE:
	case MADV_NOHUGEPAGE:
	case MADV_COLLAPSE:
	case MADV_COLD:
	case MADV_PAGEOUT:
	case MADV_MERGEABLE:
	case MADV_UNMERGEABLE:
		return ADV_NOTHING;
	case MADV_DOFORK:
	case MADV_DODUMP:
	case MADV_KEEPONFORK:
	case MADV_GUARD_REMOVE:
		/* Undo what, on hugetlb memory, was never done (its change would have put
		 * the memory on plain pages first). */
		return ADV_NOTHING;
	case MADV_DONTFORK:
	case MADV_DONTDUMP:
	case MADV_WIPEONFORK:
	case MADV_GUARD_INSTALL:
		return ADV_CHANGE;
	default:
		/* The rest: what the kernel does on hugetlb pages as on others
		 * (POPULATE_*, REMOVE, poison), or unknown to it (EINVAL). */
		return ADV_KERNEL;
	}
}

/* True if a page of [a, e), in one unit that holds a program's mapping, is not the
 * program's (unmapped, as far as it knows). Under plock. */
static bool mapping_hole(uintptr_t a, uintptr_t e)
{
	for (size_t p = page_of(a); p <= page_of(e - 1); p++)
		if (!mmap_span_at(p))
			return true;
	return false;
}

int pages_advise(uintptr_t addr, size_t len, int advice)
{
	enum advise_how how = pages_advise_how(advice);
	uintptr_t end = addr + len, run = addr; /* [run, a): for the kernel, not yet asked */
	int ret = 0, r;
	bool hole = false;
	for (uintptr_t a = addr; a < end;) {
		uintptr_t e = (a | (UNIT_SIZE - 1)) + 1;
		size_t u = (a - pg.base) >> UNIT_SHIFT;
		if (e > end)
			e = end;
		pthread_mutex_lock(&pg.lock);
		bool in_use = u < pg.frontier && (pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE);
		bool huge = in_use && is_hugetlb(pg.units[u].backing);
		bool mapping = in_use && pg.units[u].mapping;
		/* The kernel advises what is mapped, and says ENOMEM for the rest. */
		hole = hole || (mapping && mapping_hole(a, e));
		pthread_mutex_unlock(&pg.lock);
		/* Plain memory of the heap, and hints the kernel takes on hugetlb pages:
		 * the kernel's, in one call for the whole run. */
		if ((!huge || how == ADV_KERNEL) && !(mapping && how == ADV_CHANGE)) {
			a = e;
			continue;
		}
		if (run < a && (r = sp_os->madvise((void *)run, a - run, advice)) < 0 && !ret)
			ret = r;
		r = 0;
		if (how == ADV_ZERO) {
			/* Under the lock: a unit being demoted meanwhile would lose the zeros
			 * (and one demoted already is the kernel's to advise). */
			pthread_mutex_lock(&pg.lock);
			huge = (pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE) &&
			       is_hugetlb(pg.units[u].backing);
			if (huge)
				memset((void *)a, 0, e - a);
			pthread_mutex_unlock(&pg.lock);
			if (!huge)
				r = sp_os->madvise((void *)a, e - a, advice);
		} else if (how == ADV_CHANGE) {
			r = mapping ? pages_demote(a, e - a) : 0;
		}
		if (r == 0 && how == ADV_CHANGE)
			r = sp_os->madvise((void *)a, e - a, advice);
		if (r < 0 && !ret)
			ret = r;
		a = run = e;
	}
	if (run < end && (r = sp_os->madvise((void *)run, end - run, advice)) < 0 && !ret)
		ret = r;
	return ret ? ret : hole ? -ENOMEM : 0;
}

/* The units' memory, from the totals kept as it changes: no walk, so that the account
 * a running program publishes (rt_live_tick) costs little. Under plock. */
static void unit_account(struct rt_stats *st)
{
	size_t total = 0;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		total += pg.st.units[b];
	size_t large = total - pg.heap_units, own = pg.heap_units - pg.mapping_units;
	st->unit_used_bytes = (uint64_t)((own + large) * PAGES_PER_UNIT - pg.unit_free_pages)
			      << PAGE_SHIFT;
	st->unit_free_bytes = (uint64_t)pg.unit_free_pages << PAGE_SHIFT;
	st->full_unit_bytes = (uint64_t)(pg.full_units + large) << UNIT_SHIFT;
	st->kept_units = pg.cached;
}

void pages_stats(struct rt_stats *st)
{
	st->small_mmaps = atomic_load(&pg.st.small_mmaps);
	st->large_mmaps = atomic_load(&pg.st.large_mmaps);
	pack_stats(&st->packed, &st->packed_collapsed, &st->packed_refused);
	pthread_mutex_lock(&pg.lock);
	memcpy(st->units, pg.st.units, sizeof st->units);
	st->units_peak = pg.st.units_peak;
	st->large_blocks = pg.st.large_blocks;
	st->large_bytes = pg.st.large_bytes;
	st->mremaps = pg.st.mremaps;
	st->released_units = pg.st.released;
	st->reused_units = pg.st.reused;
	unit_account(st);
	st->small_mmap_bytes = pg.st.small_mmap_pages << PAGE_SHIFT;
	memcpy(st->falls, pg.st.falls, sizeof st->falls);
	pthread_mutex_unlock(&pg.lock);
}

/* ---------- consistency ---------- */

/* Recomputes what the page heap keeps counted and listed, from the units' bitmaps
 * and the page map, and compares: the first difference found (*unit: where), or
 * NULL. For the tests, after each step of a random sequence; it walks every page,
 * under plock. */
const char *pages_check(size_t *unit)
{
	const char *bad = NULL;
	size_t n_heap = 0, n_cached = 0, used = 0, spanned = 0, bad_u = 0;
	size_t own_free = 0, own_full = 0, n_map = 0;
	uint64_t per[SP_BACKING_COUNT] = { 0 };
	pthread_mutex_lock(&pg.lock);
	for (size_t u = 0; u < pg.frontier && !bad; u++) {
		struct unit *x = &pg.units[u];
		bad_u = u;
		if (bit(pg.freebits, u) != (x->state == U_FREE))
			bad = "a unit's free bit disagrees with its state";
		else if (x->in_cache && (x->state != U_FREE || !x->resident))
			bad = "a unit in the empty cache is not free and resident";
		n_cached += x->in_cache;
		if (x->state == U_LARGE) {
			per[x->backing]++;
			used += PAGES_PER_UNIT;
		}
		if (x->state != U_HEAP || bad)
			continue;
		n_heap++;
		n_map += x->mapping;
		per[x->backing]++;
		size_t nfree = 0;
		for (size_t w = 0; w < PAGES_PER_UNIT / 64; w++)
			nfree += (size_t)__builtin_popcountll(x->free[w]);
		used += PAGES_PER_UNIT - nfree;
		if (!x->mapping) {
			own_free += nfree;
			own_full += nfree == 0;
		}
		if (nfree != x->nfree)
			bad = "a unit's count of free pages is wrong";
		else if (!x->mapping && nfree == PAGES_PER_UNIT)
			bad = "an empty unit is still the heap's";
		else if (!x->mapping && (x->longest != longest_run(x->free) ||
					 x->bucket != (x->longest ? bucket_of(x->longest) : NO_BUCKET)))
			bad = "a unit's longest free run or its bucket is wrong";
	}
	for (unsigned b = 0; b < NBUCKET && !bad; b++)
		for (int32_t c = pg.bucket_head[b]; c != NO_UNIT && !bad; c = pg.units[c].next)
			if (pg.units[c].bucket != b || pg.units[c].state != U_HEAP)
				bad = "a bucket lists a unit not of it", bad_u = (size_t)c;
	size_t listed = 0;
	for (int32_t c = pg.cache_head; c != NO_UNIT && !bad; c = pg.units[c].next)
		if (!pg.units[c].in_cache || ++listed > n_cached)
			bad = "the empty cache lists a unit not in it", bad_u = (size_t)c;
	if (!bad && (listed != n_cached || pg.cached != n_cached))
		bad = "the empty cache's count is wrong";
	if (!bad && n_heap != pg.heap_units)
		bad = "the count of the heap's units is wrong";
	if (!bad && (own_free != pg.unit_free_pages || own_full != pg.full_units || n_map != pg.mapping_units))
		bad = "the totals of free pages, full units or mapping units are wrong";
	for (int b = 0; b < SP_BACKING_COUNT && !bad; b++)
		if (per[b] != pg.st.units[b])
			bad = "the count of units by backing is wrong";
	/* Every span's pages are in use, and the spans hold every page in use. */
	for (size_t p = 0; p < pg.frontier * PAGES_PER_UNIT && !bad; p++) {
		struct span *s = atomic_load_explicit(&heap_hot.pagemap[p], memory_order_relaxed);
		if (!s || page_of(s->start) != p)
			continue;
		bad_u = p / PAGES_PER_UNIT;
		if (s->magic != SPAN_MAGIC) {
			bad = "the page map holds a span that is not one";
			break;
		}
		spanned += s->npages;
		for (size_t i = p; i < p + s->npages && !bad; i++) {
			struct unit *x = &pg.units[i / PAGES_PER_UNIT];
			if (s->kind == SPAN_LARGE ? x->state != U_LARGE
						  : x->state != U_HEAP || bit(x->free, i % PAGES_PER_UNIT))
				bad = "a span's page is free in its unit";
		}
	}
	if (!bad && spanned != used)
		bad = "the spans do not hold the pages in use";
	pthread_mutex_unlock(&pg.lock);
	*unit = bad_u;
	return bad;
}
