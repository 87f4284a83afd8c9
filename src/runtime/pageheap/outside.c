/* outside.c - large blocks outside the range.
 *
 * A large block the range cannot hold (it is full, or a limit stops it growing), or
 * that whole units would round up by more than an eighth under a limit (tight), is
 * a private mapping of its own, to the page, as plain malloc makes it: committed as
 * the kernel commits that (no MAP_NORESERVE), 2 MiB-aligned and advised huge as the
 * range is. Its span (SPAN_OUTSIDE) is found by its start in a hash table. */
#include <errno.h>
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "pageheap/unit_os.h"
#include "units.h"

#define OUT_TOMB ((struct span *)1)

static struct {
	struct span **tab;   /* NULL, OUT_TOMB or a span; under the lock */
	size_t cap, used;    /* slots, slots not NULL */
	uint64_t bytes;      /* of outside blocks now */
	_Atomic unsigned said; /* why blocks went outside, said once each */
} outs;

static size_t out_slot(uintptr_t a, size_t cap)
{
	return (size_t)(((a >> PAGE_SHIFT) * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

/* The slot holding the span that starts at a, or SIZE_MAX. Under the lock. */
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
 * it is three quarters full); false if it is full and could not grow. Under the lock. */
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
		if (meta_map(cap * sizeof *outs.tab, &m) == 0) {
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
				unit_unmap(outs.tab, outs.cap * sizeof *outs.tab);
			outs.tab = t;
			outs.cap = cap;
			outs.used = live;
		}
	}
	return outs.cap && outs.used + 1 < outs.cap; /* (an empty slot stays: lookups end) */
}

/* Files s, where out_room said there is room. Under the lock. */
static void out_insert(struct span *s)
{
	size_t i = out_slot(s->start, outs.cap);
	while (outs.tab[i] && outs.tab[i] != OUT_TOMB)
		i = (i + 1) & (outs.cap - 1);
	outs.used += !outs.tab[i];
	outs.tab[i] = s;
}

struct span *outside_lookup(uintptr_t a)
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
	return heap_on_thp();
}

/* Once the heap is promoted (auto): the outside blocks mapped before go on THP too.
 * Under the lock. */
void outside_promote(void)
{
	for (size_t i = 0; i < outs.cap; i++) {
		struct span *s = outs.tab[i];
		if (s && s != OUT_TOMB && s->npages >= PAGES_PER_UNIT)
			unit_want_huge((void *)s->start, s->npages << PAGE_SHIFT, true);
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
struct span *outside_alloc(size_t size, size_t align, unsigned why)
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
		r = block_map(len, flags, &m);
	pthread_mutex_lock(&pg.lock);
	if (r < 0) {
		span_delete(s);
		pthread_mutex_unlock(&pg.lock);
		return NULL;
	}
	s->kind = SPAN_OUTSIDE;
	s->start = (uintptr_t)m;
	s->npages = len >> PAGE_SHIFT;
	s->clean = SPAN_CLEAN;
	if (!out_room()) {
		span_delete(s);
		pthread_mutex_unlock(&pg.lock);
		unit_unmap(m, len);
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
		pages_note_fall(pg.policy, SP_FALL_MMAP);
	pthread_mutex_unlock(&pg.lock);
	if (huge)
		unit_want_huge(m, len, true);
	outside_say(why, size);
	maybe_promote();
	return s;
}

/* Resizes an outside block by moving or resizing its mapping (mremap). */
bool outside_resize(struct span *s, size_t new_size)
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
	    block_resize((void *)s->start, len, want, &out) < 0) {
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
		unit_want_huge(out, want, true);
	return true;
}

void outside_free(struct span *s)
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
	unit_unmap((void *)a, len);
}

/* What whole units would add to a block of size bytes, over its whole pages (*len). */
size_t unit_rounding(size_t size, size_t *len)
{
	*len = page_up(size);
	return ((size + UNIT_SIZE - 1) & ~(UNIT_SIZE - 1)) - *len;
}

/* Tight: whole units would round the block up by more than an eighth. */
bool rounds_badly(size_t size)
{
	size_t len, more = unit_rounding(size, &len);
	return pg.tight && more > len / 8;
}
