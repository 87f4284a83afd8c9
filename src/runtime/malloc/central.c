/* central.c - the central lists: spans of small objects with free objects, by owner
 * (a thread's slot, or the class's orphans), between the threads' caches and the page
 * heap; new small spans are made here and empty ones given back.
 *
 * A thread fills its cache only from spans of its own, so that the objects it gets
 * new share no cache line with another thread's (that false sharing cost 2 threads
 * half their speed). An object freed joins the cache of the thread that frees it;
 * when that cache gives it back, it goes back to its span, and so to the span's
 * owner. A thread owns spans through a slot, whose lock guards its lists (one per
 * class) of spans with free objects; so threads that free their own objects take
 * only their own lock. An object a thread gives back that is of another live thread's
 * span waits in that thread's inbox (a chain through the objects, mangled as the spans'
 * lists, pushed without a lock) until its owner takes from the central lists and puts
 * it back on its span under its own lock: a thread that frees what another mallocs
 * (a producer and its consumer) then does not take the producer's lock, which the
 * producer takes at every batch. Spans of threads that exited, or of threads without
 * a slot, are the class's orphans (under the class's lock), which threads adopt before
 * they make new spans. A span's owner changes only under the lock of the list it
 * leaves and of the one it joins; locks are taken slot first, class second, and never
 * two at once but for those. */
#include <stdatomic.h>
#include <string.h>

#include "central.h"
#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/pageheap.h"
#include "runtime.h"

#define MAX_OWNERS CENTRAL_SLOTS

struct spanlist {
	struct span *head;
	unsigned n;
};

/* A class's orphans, under its lock; how many spans of the class threads without a
 * slot made (spans_made). */
struct class_list {
	pthread_mutex_t lock;
	struct spanlist orphans;
	uint8_t made;
} __attribute__((aligned(64)));

enum { SLOT_FREE = 0, SLOT_LIVE, SLOT_LEAVING };
#define PENDING_WORDS ((NCLASS + 63) / 64)
/* A thread's slot: its spans with free objects, one list per class, and how many
 * spans of each class it made since it was claimed (spans_made), under its lock; the
 * objects of its spans other threads gave back, by class, waiting for it (inbox_push,
 * inbox_take), and which classes' inboxes may hold some: on lines of their own, which
 * other threads write. */
struct owner {
	pthread_mutex_t lock;
	_Atomic int state;             /* changed under lists.slots_lock */
	struct spanlist own[NCLASS];   /* under lock */
	uint8_t made[NCLASS];
	_Alignas(64) void *_Atomic inbox[NCLASS];
	_Atomic uint64_t pending[PENDING_WORDS];
} __attribute__((aligned(64)));

/* All-zero is PTHREAD_MUTEX_INITIALIZER for glibc's default mutex. */
static struct {
	struct class_list classes[NCLASS];
	struct owner slots[MAX_OWNERS];
	pthread_mutex_t slots_lock;    /* claiming and leaving slots */
	unsigned high;                 /* slots [0, high) were ever claimed; under
	                                  slots_lock. fork locks only those: a slot
	                                  above was never an owner, so no thread takes
	                                  its lock, and its page stays untouched */
} lists = { .slots_lock = PTHREAD_MUTEX_INITIALIZER };

static void list_add(struct spanlist *l, struct span *s)
{
	s->prev = NULL;
	s->next = l->head;
	if (l->head)
		l->head->prev = s;
	l->head = s;
	s->listed = true;
	l->n++;
}

static void list_del(struct spanlist *l, struct span *s)
{
	sp_assert(s->listed && l->n > 0);
	if (s->prev)
		s->prev->next = s->next;
	else
		l->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	s->listed = false;
	l->n--;
}

/* Sets the page info of a small span's pages (malloc.h), or clears it. */
static void span_mark(struct span *s, bool on)
{
	uint64_t *info = &heap_hot.pageinfo[(s->start - heap_hot.base) >> PAGE_SHIFT];
	uint64_t v = on ? small_info(s->cls, s->start - ((uintptr_t)s->first << PAGE_SHIFT)) : 0;
	for (size_t i = 0; i < s->npages; i++)
		__atomic_store_n(&info[i], v, __ATOMIC_RELEASE);
}

/* A new span of the class, np pages of it (at most class_pages): a thread's first
 * ones are short (spans_made). free checks a short span as the last pages of a whole
 * one (its page info's indexes go on from where the whole span's would be): its
 * objects are those of a whole span that lie wholly in those pages. */
static struct span *new_small_span(unsigned cls, unsigned np)
{
	unsigned whole = class_pages(cls);
	struct span *s = pages_alloc_run(np, 1, SPAN_SMALL);
	if (!s)
		return NULL;
	size_t size = class_size(cls), skip = (size_t)(whole - np) << PAGE_SHIFT;
	uintptr_t origin = s->start - skip; /* where a whole span would start */
	s->cls = (uint8_t)cls;
	s->first = (uint8_t)(whole - np);
	s->bump = origin + (skip + size - 1) / size * size;
	s->end = origin + class_limit(cls);
	s->freelist = NULL;
	s->used = 0;
	span_mark(s, true);
	return s;
}

/* Gives empty small spans, linked through next, back to the page heap: no free may
 * find them any more. */
static void small_spans_free(struct span *list)
{
	while (list) {
		struct span *s = list;
		list = s->next;
		span_mark(s, false);
		pages_free(s);
	}
}

static unsigned owner_of(const struct span *s)
{
	return __atomic_load_n(&s->owner, __ATOMIC_RELAXED);
}

static void set_owner(struct span *s, unsigned o)
{
	__atomic_store_n(&s->owner, (uint16_t)o, __ATOMIC_RELAXED);
}

/* The lock of owner o's lists of class cls (o 0: the class's orphans). */
static pthread_mutex_t *lock_of(unsigned o, unsigned cls)
{
	return o ? &lists.slots[o - 1].lock : &lists.classes[cls].lock;
}

/* The list of owner o's spans of class cls. */
static struct spanlist *list_for(unsigned o, unsigned cls)
{
	return o ? &lists.slots[o - 1].own[cls] : &lists.classes[cls].orphans;
}

/* Lock m held, in place of held (the lock the caller holds, or NULL): one lock at a
 * time. Returns m. */
static pthread_mutex_t *hold(pthread_mutex_t *m, pthread_mutex_t *held)
{
	if (m != held) {
		if (held)
			pthread_mutex_unlock(held);
		pthread_mutex_lock(m);
	}
	return m;
}

/* Locks the list a span is on, or goes on when it gets a free object: its owner's
 * while the owner lives, else the orphans (the span leaves a dead owner then).
 * held is the lock the caller holds (or NULL): kept if it is that one, else
 * released. Returns the lock now held; s->owner is stable under it. */
static pthread_mutex_t *lock_span(struct span *s, pthread_mutex_t *held)
{
	for (;;) {
		unsigned o = owner_of(s);
		pthread_mutex_t *m = held = hold(lock_of(o, s->cls), held);
		if (owner_of(s) != o)
			continue;
		if (o && !s->listed &&
		    atomic_load_explicit(&lists.slots[o - 1].state, memory_order_relaxed) != SLOT_LIVE) {
			set_owner(s, 0); /* unlisted: on no list to leave */
			continue;
		}
		return m;
	}
}

/* Whether o is an object's place in s, a small span of class cls: in its objects'
 * stretch, a multiple of the class's size from its origin (the divisor of the page
 * info's check, malloc.h). From the span's own fields, which its lists read anyway:
 * the page info would cost a line more an object. */
static inline bool span_object(const struct span *s, uintptr_t o, unsigned cls)
{
	uintptr_t origin = s->start - ((uintptr_t)s->first << PAGE_SHIFT);
	uint64_t div = class_info[1 + cls].divisor;
	return s->kind == SPAN_SMALL && s->cls == cls && o >= s->start && o < s->end &&
	       (uint64_t)(uint32_t)(o - origin) * div < div;
}

/* Whether the address a link of an inbox names is an object of class cls. */
static bool chain_object(unsigned cls, const void *x)
{
	const struct span *s = link_plausible(x) ? span_at((uintptr_t)x) : NULL;
	return s && span_object(s, (uintptr_t)x, cls);
}

/* The span of object o of class cls that a thread's cache gives back, checked to be on
 * the range's writable pages and in a small span of the class before the span is
 * written (a cache written over, outside the heap, would else write where it says). */
static struct span *given_span(unsigned cls, void *o)
{
	struct span *s = !SP_HARDEN || link_plausible(o) ? span_at((uintptr_t)o) : NULL;
	if (SP_HARDEN && (!s || s->kind != SPAN_SMALL || s->cls != cls))
		cache_refused(cls, "free");
	return s;
}

/* Object o of class cls goes back on its span s, under the lock of the list the span
 * is on (held: the lock the caller holds, kept or changed; NULL and empty NULL: the
 * caller holds every lock, fork's child). A span left empty joins *empty (unless it is
 * the last its list has): the caller gives it back after the lock. Returns the lock
 * held. */
static pthread_mutex_t *put_one(unsigned cls, void *o, struct span *s, pthread_mutex_t *held,
				struct span **empty)
{
	if (empty)
		held = lock_span(s, held);
	struct spanlist *l = list_for(owner_of(s), cls);
	*(uintptr_t *)o = link_encode(o, s->freelist);
	s->freelist = o;
	s->used--;
	if (!s->listed)
		list_add(l, s);
	if (empty && s->used == 0 && l->n > 1) {
		list_del(l, s);
		s->next = *empty;
		*empty = s;
	}
	return held;
}

static bool slot_live(unsigned o)
{
	return atomic_load(&lists.slots[o - 1].state) == SLOT_LIVE;
}

/* Slot o's inbox of class cls emptied: each object back on its span (put_one). Each
 * link is checked to be an object of the class before it is followed (a write after
 * free into an object waiting there would else steer it). */
static pthread_mutex_t *inbox_take(unsigned o, unsigned cls, pthread_mutex_t *held,
				   struct span **empty)
{
	void *x = atomic_exchange(&lists.slots[o - 1].inbox[cls], NULL);
	while (x) {
		void *next = link_decode(x);
		struct span *s = span_at((uintptr_t)x);
		if (SP_HARDEN && next && !chain_object(cls, next))
			link_refused(x, "free");
		held = put_one(cls, x, s, held, empty);
		x = next;
	}
	return held;
}

/* Slot o's inboxes that may hold objects emptied (every class's with all). */
static void inbox_take_all(unsigned o, bool all)
{
	struct owner *w = &lists.slots[o - 1];
	pthread_mutex_t *held = NULL;
	struct span *empty = NULL;
	for (unsigned k = 0; k < PENDING_WORDS; k++) {
		if (!all && !atomic_load_explicit(&w->pending[k], memory_order_relaxed))
			continue;
		uint64_t bits = atomic_exchange(&w->pending[k], 0);
		if (all)
			bits = k + 1 < PENDING_WORDS || NCLASS % 64 == 0 ? ~0ull : (1ull << (NCLASS % 64)) - 1;
		for (; bits; bits &= bits - 1)
			held = inbox_take(o, k * 64 + (unsigned)__builtin_ctzll(bits), held, &empty);
	}
	if (held)
		pthread_mutex_unlock(held);
	small_spans_free(empty);
}

/* A chain of objects of one class for one owner's inbox, linked as it is made. */
struct chain {
	unsigned owner;
	void *head, *tail;
};

static void chain_add(struct chain *c, unsigned o, void *x)
{
	*(uintptr_t *)x = link_encode(x, c->head);
	if (!c->head)
		c->tail = x;
	c->head = x;
	c->owner = o;
}

/* The chain joins its owner's inbox of class cls, pushed by the thread of slot me under
 * its own lock (held: as put_one's): fork takes every slot's lock, so no inbox is
 * half pushed in a child. If the owner is leaving by then, its inbox is emptied here
 * (it may have emptied it before the chain came). */
static pthread_mutex_t *inbox_push(unsigned me, struct chain *c, unsigned cls,
				   pthread_mutex_t *held, struct span **empty)
{
	struct owner *w = &lists.slots[c->owner - 1];
	held = hold(&lists.slots[me - 1].lock, held);
	void *old = atomic_load_explicit(&w->inbox[cls], memory_order_relaxed);
	do
		*(uintptr_t *)c->tail = link_encode(c->tail, old);
	while (!atomic_compare_exchange_weak(&w->inbox[cls], &old, c->head));
	atomic_fetch_or(&w->pending[cls / 64], 1ull << (cls % 64));
	if (!slot_live(c->owner))
		held = inbox_take(c->owner, cls, held, empty);
	c->head = c->tail = NULL;
	return held;
}

unsigned central_claim(void)
{
	unsigned got = 0;
	pthread_mutex_lock(&lists.slots_lock);
	/* The lowest free slot: threads that come and go reuse the same few. */
	for (unsigned i = 0; i < MAX_OWNERS; i++) {
		if (atomic_load(&lists.slots[i].state) == SLOT_FREE) {
			atomic_store(&lists.slots[i].state, SLOT_LIVE);
			memset(lists.slots[i].made, 0, sizeof lists.slots[i].made);
			if (i + 1 > lists.high)
				lists.high = i + 1;
			got = i + 1;
			break;
		}
	}
	pthread_mutex_unlock(&lists.slots_lock);
	return got;
}

/* The spans of slot i become orphans. With lock, takes the slot's and each class's
 * lock and gives empty spans back to the page heap; else the caller holds all those
 * locks and the page heap's (fork's child), and empty spans are orphans too. */
static void owner_orphan(unsigned i, bool lock)
{
	struct span *empty = NULL;
	if (lock)
		pthread_mutex_lock(&lists.slots[i].lock);
	for (unsigned cls = 0; cls < NCLASS; cls++) {
		struct spanlist *own = &lists.slots[i].own[cls];
		if (!own->head)
			continue;
		struct class_list *c = &lists.classes[cls];
		if (lock)
			pthread_mutex_lock(&c->lock);
		while (own->head) {
			struct span *s = own->head;
			list_del(own, s);
			set_owner(s, 0);
			if (s->used == 0 && lock) {
				s->next = empty;
				empty = s;
			} else {
				list_add(&c->orphans, s);
			}
		}
		if (lock)
			pthread_mutex_unlock(&c->lock);
	}
	if (lock)
		pthread_mutex_unlock(&lists.slots[i].lock);
	small_spans_free(empty);
}

/* The slot's spans are orphans before another thread may take the slot (a put that
 * saw it live has listed its span by then: same lock). */
void central_release(unsigned slot)
{
	if (!slot)
		return;
	atomic_store(&lists.slots[slot - 1].state, SLOT_LEAVING);
	owner_orphan(slot - 1, true);
	inbox_take_all(slot, true);
	pthread_mutex_lock(&lists.slots_lock);
	atomic_store(&lists.slots[slot - 1].state, SLOT_FREE);
	pthread_mutex_unlock(&lists.slots_lock);
}


/* The next object on span s's list after o (links are mangled, malloc.h), checked to
 * be one of s's objects. */
static void *span_next(const struct span *s, void *o)
{
	void *next = link_decode(o);
	if (SP_HARDEN && next && !span_object(s, (uintptr_t)next, s->cls))
		link_refused(o, "malloc");
	return next;
}

/* Moves up to n - *got objects of span s into out[*got..n) (free ones first, then
 * never used ones), counting them in s->used and *got. A never used one's second
 * word is cleared: on pages used before, it may hold an old free mark (malloc.h);
 * on a span of memory never given out it is zero, and its page stays untouched. */
static void take_from(struct span *s, size_t size, unsigned n, void **out, unsigned *got)
{
	while (*got < n && s->freelist) {
		void *o = s->freelist;
		s->freelist = span_next(s, o);
		out[(*got)++] = o;
		s->used++;
	}
	while (*got < n && s->bump < s->end) {
		void *o = (void *)s->bump;
		s->bump += size;
		if (s->clean != SPAN_CLEAN)
			((uintptr_t *)o)[1] = 0;
		sp_assert(s->clean != SPAN_CLEAN || mem_is_zero(o, size));
		out[(*got)++] = o;
		s->used++;
	}
}

/* The pages of owner me's next new span of class cls, counted as made. Its first is
 * the fewest last pages of a whole span that hold two objects (class_first_pages),
 * and each one after it twice as long, up to a whole span: spans are carved as their
 * objects are first taken, and a unit on THP is resident whole, carved or not. Under
 * git gc, threads' whole second spans of many classes were two thirds uncarved, the
 * units of objects 60% not resident; most programs use a few objects of many
 * classes, and whole spans of 16 KiB or more for each of ~100 classes took 3.2 MiB
 * for 145 KiB of the sweep's mixed heap. Under me's lock. */
static unsigned spans_made(unsigned me, unsigned cls)
{
	uint8_t *k = me ? &lists.slots[me - 1].made[cls] : &lists.classes[cls].made;
	unsigned np = class_span_pages(cls, *k);
	if (np < class_pages(cls))
		(*k)++;
	return np;
}

/* From the slot's own spans first, then orphans it adopts, then a new span. */
unsigned central_take(unsigned me, unsigned cls, unsigned n, void **out)
{
	struct class_list *c = &lists.classes[cls];
	size_t size = class_size(cls);
	unsigned got = 0;
	pthread_mutex_t *m = lock_of(me, cls);
	struct spanlist *mine = list_for(me, cls);
	if (me)
		inbox_take_all(me, false);
	pthread_mutex_lock(m);
	while (got < n) {
		struct span *s = mine->head;
		if (!s && me) {
			pthread_mutex_lock(&c->lock);
			if ((s = c->orphans.head)) {
				list_del(&c->orphans, s);
				set_owner(s, me);
				list_add(mine, s);
			}
			pthread_mutex_unlock(&c->lock);
		}
		if (!s && got > 0)
			break; /* (a new span for the rest of a batch would be a first one half
				  used up, or a whole one for a few objects) */
		if (!s) {
			unsigned np = spans_made(me, cls);
			pthread_mutex_unlock(m);
			s = new_small_span(cls, np);
			pthread_mutex_lock(m);
			if (!s)
				break;
			set_owner(s, me);
			list_add(mine, s);
		}
		take_from(s, size, n, out, &got);
		if (!s->freelist && s->bump >= s->end)
			list_del(mine, s);
	}
	pthread_mutex_unlock(m);
	return got;
}

/* A span left empty goes back to the page heap unless it is the last its owner has
 * of the class. An object of another live thread's span goes to that thread's inbox
 * (me: the slot of the thread giving them back, 0 for none: each goes to its span). */
void central_put(unsigned me, unsigned cls, void *const *objs, unsigned n)
{
	struct span *empty = NULL;
	pthread_mutex_t *held = NULL;
	struct chain c = { 0, NULL, NULL };
	for (unsigned i = 0; i < n; i++) {
		/* o was checked by free to be an object of its page's class; given_span
		 * checks it once more. */
		void *o = objs[i];
		struct span *s = given_span(cls, o);
		unsigned own = owner_of(s);
		if (me && own && own != me && slot_live(own)) {
			if (c.head && c.owner != own)
				held = inbox_push(me, &c, cls, held, &empty);
			chain_add(&c, own, o);
			continue;
		}
		held = put_one(cls, o, s, held, &empty);
	}
	if (c.head)
		held = inbox_push(me, &c, cls, held, &empty);
	if (held)
		pthread_mutex_unlock(held);
	small_spans_free(empty);
}

/* ---------- fork (life.c calls these in its order) ---------- */

void central_fork_lock(void)
{
	pthread_mutex_lock(&lists.slots_lock);
	for (unsigned i = 0; i < lists.high; i++)
		pthread_mutex_lock(&lists.slots[i].lock);
	for (unsigned c = 0; c < NCLASS; c++)
		pthread_mutex_lock(&lists.classes[c].lock);
}

void central_fork_unlock(void)
{
	for (unsigned c = NCLASS; c-- > 0;)
		pthread_mutex_unlock(&lists.classes[c].lock);
	for (unsigned i = lists.high; i-- > 0;)
		pthread_mutex_unlock(&lists.slots[i].lock);
	pthread_mutex_unlock(&lists.slots_lock);
}

/* Only the forking thread lives on: the other slots' spans are orphans (the page
 * heap's lock is held too: empty spans stay orphans). */
void central_fork_orphan(unsigned keep)
{
	for (unsigned i = 0; i < lists.high; i++) {
		if (i + 1 == keep || atomic_load(&lists.slots[i].state) == SLOT_FREE)
			continue;
		atomic_store(&lists.slots[i].state, SLOT_LEAVING);
		owner_orphan(i, false);
		for (unsigned c = 0; c < NCLASS; c++) /* (the child holds every lock) */
			inbox_take(i + 1, c, NULL, NULL);
		for (unsigned k = 0; k < PENDING_WORDS; k++)
			atomic_store(&lists.slots[i].pending[k], 0);
		atomic_store(&lists.slots[i].state, SLOT_FREE);
	}
}

/* ---------- the check ---------- */

unsigned central_inbox_count(unsigned o, unsigned cls)
{
	unsigned n = 0;
	for (void *x = atomic_load(&lists.slots[o - 1].inbox[cls]); x; x = link_decode(x))
		n++;
	return n;
}

/* Span s on the list of owner o (0: the orphans) of class cls: of that class and owner,
 * with a free object; its objects in use, free and never used add up to those it
 * holds; every link of its free list is one of its objects, carved already, and the
 * list ends (no longer than the span holds objects). *cost: the objects walked. */
static const char *span_check(const struct span *s, unsigned o, unsigned cls, size_t *cost)
{
	if (s->magic != SPAN_MAGIC || s->kind != SPAN_SMALL || s->cls != cls || !s->listed ||
	    owner_of(s) != o)
		return "a listed span is not of its list's class and owner";
	size_t size = class_size(cls), skip = (size_t)s->first << PAGE_SHIFT;
	uintptr_t origin = s->start - skip, lo = origin + (skip + size - 1) / size * size;
	if (s->end != origin + class_limit(cls) || s->bump < lo || s->bump > s->end ||
	    (s->bump - lo) % size)
		return "a span's never used objects are not a tail of its objects";
	size_t all = (s->end - lo) / size, fresh = (s->end - s->bump) / size, nfree = 0;
	for (void *x = s->freelist; x; x = link_decode(x)) {
		if (!span_object(s, (uintptr_t)x, cls) || (uintptr_t)x >= s->bump)
			return "a free list's link is outside its span's objects";
		if (++nfree > all)
			return "a span's free list runs in a cycle";
	}
	*cost += nfree + 1;
	if (!nfree && !fresh)
		return "a listed span has no free object";
	if (s->used + nfree + fresh != all)
		return "a span's objects in use, free and never used do not add up";
	return NULL;
}

/* A list of spans: linked both ways, as long as its count, each span as above. */
static const char *list_check(const struct spanlist *l, unsigned o, unsigned cls, size_t *cost)
{
	unsigned n = 0;
	const struct span *prev = NULL;
	for (const struct span *s = l->head; s; prev = s, s = s->next) {
		if (++n > l->n)
			return "a list holds more spans than its count (or a cycle)";
		if (s->prev != prev)
			return "a list's back link is wrong";
		const char *bad = span_check(s, o, cls, cost);
		if (bad)
			return bad;
	}
	return n == l->n ? NULL : "a list holds fewer spans than its count";
}

/* Slot i's lists (under its lock; i == MAX_OWNERS: none), or class cls's orphans
 * (under the class's lock; cls == NCLASS: none). */
static const char *lists_check(unsigned i, unsigned cls, size_t *cost)
{
	const char *bad = NULL;
	if (i < MAX_OWNERS)
		for (unsigned c = 0; c < NCLASS && !bad; c++)
			bad = list_check(&lists.slots[i].own[c], i + 1, c, cost);
	if (cls < NCLASS && !bad)
		bad = list_check(&lists.classes[cls].orphans, 0, cls, cost);
	return bad;
}

const char *central_check(void)
{
	const char *bad = NULL;
	size_t cost = 0;
	pthread_mutex_lock(&lists.slots_lock);
	unsigned high = lists.high;
	pthread_mutex_unlock(&lists.slots_lock);
	for (unsigned i = 0; i < high && !bad; i++) {
		pthread_mutex_lock(&lists.slots[i].lock);
		bad = lists_check(i, NCLASS, &cost);
		pthread_mutex_unlock(&lists.slots[i].lock);
	}
	for (unsigned c = 0; c < NCLASS && !bad; c++) {
		pthread_mutex_lock(&lists.classes[c].lock);
		bad = lists_check(MAX_OWNERS, c, &cost);
		pthread_mutex_unlock(&lists.classes[c].lock);
	}
	return bad;
}

#ifdef SP_DEBUG
/* DEBUG: a slot's lists, or a class's orphans, checked as their lock is released;
 * once they hold many objects, at some releases only (what the last walk cost). */
static const char *released(pthread_mutex_t *m, unsigned i, unsigned cls, _Atomic size_t *credit,
			    _Atomic size_t *last)
{
	(void)m;
	if (!sp_check_due(credit, atomic_load_explicit(last, memory_order_relaxed)))
		return NULL;
	size_t cost = 0;
	const char *bad = lists_check(i, cls, &cost);
	atomic_store_explicit(last, cost, memory_order_relaxed);
	return bad;
}

static const char *slot_released(pthread_mutex_t *m)
{
	static _Atomic size_t credit, last;
	return released(m, (unsigned)((const struct owner *)m - lists.slots), NCLASS, &credit, &last);
}

static const char *class_released(pthread_mutex_t *m)
{
	static _Atomic size_t credit, last;
	return released(m, MAX_OWNERS, (unsigned)((const struct class_list *)m - lists.classes),
			&credit, &last);
}
_Static_assert(offsetof(struct owner, lock) == 0 && offsetof(struct class_list, lock) == 0,
	       "a slot's and a class's lock is its first member");
#endif
SP_LOCK_RANK(lists.slots_lock, RANK_CENTRAL_SLOTS, NULL);
SP_LOCK_RANK(lists.slots, RANK_CENTRAL_SLOT, slot_released);
SP_LOCK_RANK(lists.classes, RANK_CENTRAL_CLASS, class_released);
