/* heap.h - the runtime allocator's parts: size classes, the page heap over 2 MiB units,
 * spans, and the rt_* entry points (malloc.c) that interpose.c exports as malloc & co. */
#ifndef SP_HEAP_H
#define SP_HEAP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* Everything here is the runtime's own: reached without the GOT. */
#pragma GCC visibility push(hidden)

#ifndef MREMAP_MAYMOVE
#define MREMAP_MAYMOVE 1
#endif
#ifndef MREMAP_FIXED
#define MREMAP_FIXED 2
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#define PAGE_SHIFT 12
#define PAGE_SIZE (1ul << PAGE_SHIFT)
#define UNIT_SHIFT 21
#define UNIT_SIZE (1ul << UNIT_SHIFT)
#define PAGES_PER_UNIT (UNIT_SIZE / PAGE_SIZE)

/* a (an address or a length) rounded up to a whole page */
static inline uintptr_t page_up(uintptr_t a) { return (a + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1); }

/* ---- size classes (sizeclass.c) ---- */
#define NCLASS 248
#define COARSE_MIN 8192          /* from here 8 classes per doubling, not 32 */
#define SMALL_MAX 65536ul          /* larger requests are page runs or units */
#define MEDIUM_MAX (1ul << 20)     /* larger requests get whole units */
#define MIN_ALIGN 16ul
#define CLASS_FINE_MAX 4096
/* What free checks a pointer with, per class: its size, the bytes of a span's
 * objects (count * size), and ~0 / size + 1, with which an offset off < 2^32 in a
 * span is a multiple of size iff off * divisor <= divisor - 1 (mod 2^64: Lemire,
 * Kaser and Kurz, "Faster remainder by direct computation", 2019). Class c's is
 * class_info[1 + c]; class_info[0] is no class's, all zero: no offset passes it
 * (a page of no small span names it, free's page info below). */
struct class_info {
	uint64_t divisor;
	uint32_t size;
	uint32_t limit;
};
extern struct class_info class_info[1 + NCLASS];
extern unsigned char class_npages[NCLASS];
extern unsigned char class_first_npages[NCLASS];
extern unsigned char class_batches[NCLASS];
extern unsigned char class_by_32[(SMALL_MAX >> 5) + 1];
extern unsigned char class_by_16[(CLASS_FINE_MAX >> 4) + 1];
extern uint16_t class_at_by_16[(CLASS_FINE_MAX >> 4) + 1];
void classes_init(void);

/* The class of size (1..SMALL_MAX): by 16-byte steps up to 4 KiB, 32-byte above
 * (every class above 4 KiB is a multiple of 32). Inline: it is on every malloc. */
static inline unsigned class_of(size_t size)
{
	if (size <= CLASS_FINE_MAX)
		return class_by_16[(size + 15) >> 4];
	return class_by_32[(size + 31) >> 5];
}
static inline size_t class_size(unsigned c) { return class_info[1 + c].size; }
/* Where the class of size (0..CLASS_FINE_MAX) is in class_info[] and in a thread's
 * cache, in bytes: (1 + class) * 16, read from a table of its own, so that malloc's
 * common case takes the offset with no shift. */
static inline size_t class_at_fine(size_t size) { return class_at_by_16[(size + 15) >> 4]; }
/* The bytes of the objects of a whole span of the class, from its start. */
static inline size_t class_limit(unsigned c) { return class_info[1 + c].limit; }
/* Pages in one span of the class. */
static inline unsigned class_pages(unsigned c) { return class_npages[c]; }
/* Pages in a thread's first span of the class, which holds two objects or more: the
 * last pages of a span of class_pages (central.c). */
static inline unsigned class_first_pages(unsigned c) { return class_first_npages[c]; }
/* Pages in a thread's span k (from 0) of the class: its first, each after it twice as
 * long, up to class_pages; the short ones are the last pages of a whole span
 * (central.c). */
static inline unsigned class_span_pages(unsigned c, unsigned k)
{
	unsigned np = class_first_pages(c), whole = class_pages(c);
	for (unsigned i = 0; i < k && np < whole; i++)
		np *= 2;
	return np < whole ? np : whole;
}
/* Objects moved at once between a thread's cache and the central list. */
static inline unsigned class_batch(unsigned c) { return class_batches[c]; }

/* ---- spans and the page heap (units.h) ---- */
/* SPAN_OUTSIDE: a large block mapped on its own outside the range (outside.c). */
/* SPAN_FIT: a chunk of blocks fitted to 64 bytes (fit.c). */
enum span_kind { SPAN_SMALL = 1, SPAN_MEDIUM, SPAN_LARGE, SPAN_MMAP, SPAN_OUTSIDE, SPAN_FIT };
struct fit_chunk;
#define SPAN_MAGIC 0x53504e31u

struct span {
	uint32_t magic;
	uint8_t kind;
	uint8_t cls;           /* SPAN_SMALL */
	uint8_t clean;         /* memory known to be zero (fresh from the kernel) */
	uint8_t first;         /* SPAN_SMALL: the index its first page has in the page
	                          info (nonzero: one of a thread's first, short spans
	                          of the class, the last pages of a whole one) */
	uint16_t owner;        /* SPAN_SMALL: the thread slot whose objects these are
	                          (1 + its index), 0 for none (central.c) */
	uintptr_t start;
	size_t npages;         /* SMALL/MEDIUM/OUTSIDE: pages; LARGE: pages of whole units */
	/* SPAN_SMALL: objects */
	void *freelist;
	uintptr_t bump, end;   /* never-used objects are [bump, end) */
	uint32_t used;         /* objects out of the span (in caches or the program's) */
	struct span *prev, *next; /* its owner's (or the class's) list of spans with
	                             free objects */
	bool listed;
	struct fit_chunk *fit; /* SPAN_FIT: its blocks */
	bool foreign;          /* SPAN_MMAP: the program mprotect'ed or mapped over some of
	                          it: plain anonymous memory is put back when unmapped */
};

/* Every page of these spans maps to them (of others, the first page). */
static inline bool span_maps_all(unsigned kind)
{
	return kind == SPAN_SMALL || kind == SPAN_MMAP || kind == SPAN_FIT;
}

/* Sets up the reserved range and metadata; 0 or -errno. Called once, under init. */
int pages_init(const struct sp_options *o);
/* A span of npages pages, aligned to align_pages (a power of two <= PAGES_PER_UNIT);
 * NULL if out of memory. MMAP spans lie in one unit; SMALL and MEDIUM ones of
 * alignment 1 may lie across units (MEDIUM ones be any length). Takes the page-heap
 * lock. */
struct span *pages_alloc_run(size_t npages, size_t align_pages, enum span_kind kind);
/* A span of whole units (size bytes rounded up to units), aligned to align bytes;
 * or, where the range cannot hold it or (under a limit) units would round it up by
 * more than an eighth, a SPAN_OUTSIDE block: a mapping of its own, to the page. */
struct span *pages_alloc_large(size_t size, size_t align);
/* Gives a span's memory back (SMALL/MEDIUM pages or LARGE units). */
void pages_free(struct span *s);
/* Resizes a MEDIUM or FIT span in place to npages: shrinking gives the tail back;
 * growing (a MEDIUM span up to 1 MiB, a FIT one up to FIT_CHUNK_PAGES) takes the free
 * pages that follow it, across units; false if they are not free. */
bool pages_resize_run(struct span *s, size_t npages);
/* True if a block of size bytes aligned to align is a MEDIUM run of pages (up to
 * 1 MiB; up to 128 MiB where whole units would round it up by more than 1/64),
 * false if it is a LARGE one of whole units. */
bool pages_is_run(size_t size, size_t align);
/* The page heap's counts and lists recomputed and compared, and every span of
 * objects against its class and page info (for the tests): the first difference
 * found, *unit where; NULL if none. */
const char *pages_check(size_t *unit);
/* Resizes a LARGE or OUTSIDE span in place or by moving its pages (s->start then
 * changes); false if it cannot (the caller copies). */
bool pages_resize_large(struct span *s, size_t new_size);
/* The span owning addr, or NULL if addr is not in the heap's range at all (and
 * *in_range false; but the SPAN_OUTSIDE block that starts at addr, if there is one).
 * A page of the range with no span gives NULL, *in_range true. */
struct span *pages_lookup(const void *addr, bool *in_range);
/* For SMALL spans: record the span on every page (objects are anywhere in it). */
void pages_map_all(struct span *s);
/* Unmaps what SPAN_MMAP spans have in [addr, addr+len): their pages go back to the
 * page heap, the spans are cut. Pages of other spans are left alone. 0, or -ENOMEM
 * if a span could not be cut (no descriptor, or its changed pages could not be made
 * plain memory again): it and those after it stay as they were. */
int pages_unmap(uintptr_t addr, size_t len);
/* Marks the SPAN_MMAP spans in [addr, addr+len) as changed by the program
 * (mprotect, MAP_FIXED over them): they are remapped as the heap's when unmapped. */
void pages_note_foreign(uintptr_t addr, size_t len);
/* True if every page of [addr, addr+len) is in a SPAN_MMAP span: the program's own,
 * which it may map over. */
bool pages_program_owns(uintptr_t addr, size_t len);
/* Under 2m and 1g, the program's private anonymous mmap of len bytes (at least
 * SUPERPAGE_MIN) on hugetlb units of the range: 2 MiB pages while the pool has them
 * (1 GiB ones for its whole GiBs under 1g), the rest THP, every fall counted. NULL
 * when not one hugetlb page could be had or the range has no room (the caller maps
 * it as before, on THP), with *err set if the kernel would have refused it. Without
 * hugetlb, units of plain memory (where mremap puts pages it moves). */
void *pages_map_program(size_t len, int flags, bool hugetlb, int *err);
/* Grows in place the program's mapping in units that ends at end, by add bytes
 * (page multiples), zeroed; false if what follows it is not free. */
bool pages_grow_mapping(uintptr_t end, size_t add);
/* Before the program changes [addr, addr+len) of the range (mprotect, MAP_FIXED or
 * mremap onto it, madvise that changes the mapping): its mappings' hugetlb units
 * there are copied to THP memory in place. -ENOMEM if some page there in a mapping's
 * unit is not the program's, or a copy could not be made (nothing changed then). */
int pages_demote(uintptr_t addr, size_t len);
/* Where a fixed mapping of the program's may land in the range: pages it has from
 * us, and pages of its large mappings' units that it unmapped. */
bool pages_fixed_allowed(uintptr_t addr, size_t len);
/* Before such a fixed mapping lands there: the unmapped pages are the program's
 * again (changed by it), and hugetlb units there are copied to THP memory (see
 * pages_demote). 0, -EINVAL where it may not land, or -ENOMEM. */
int pages_fixed_into(uintptr_t addr, size_t len);
/* True if some SPAN_MMAP page in [addr, addr+len) was changed by the program. */
bool pages_has_foreign(uintptr_t addr, size_t len);
/* madvise(addr, len, advice) for a page-aligned part of the range: the kernel's
 * for plain memory, emulated on hugetlb units (DONTNEED zeroes, hints do nothing,
 * changes demote the program's units first). 0 or -errno. */
int pages_advise(uintptr_t addr, size_t len, int advice);
/* What madvise does on hugetlb memory of the runtime's (the range, the break). */
enum advise_how {
	ADV_KERNEL,   /* as asked: the kernel does it on hugetlb pages too */
	ADV_ZERO,     /* the pages read as zero afterwards: the kernel refuses a partial
	                 DONTNEED, and a whole one would lose the private page's reserve */
	ADV_NOTHING,  /* a hint that changes neither contents nor faults */
	ADV_CHANGE,   /* changes the mapping (fork, dump, guard...): on plain memory */
};
enum advise_how pages_advise_how(int advice);
/* Puts a private THP copy of len bytes from src (NULL: zeros) at at (2 MiB
 * multiples), in place of what is there or of a hole; false if it could not (nothing
 * changed then). */
bool pages_copy_in(uintptr_t at, size_t len, const void *src);
/* Hugetlb pages (2 MiB, or 1 GiB with giga) over [at, at+len), mapped elsewhere and
 * moved into place: a map the pool refuses changes nothing at at (a refused MAP_FIXED
 * would have unmapped what was there, and a mapping of another thread could land in
 * the hole before it is filled again). 0, or -errno with *hole set if what was at at
 * may be gone (a refused move: the caller maps it again). */
int pages_hugetlb_into(uintptr_t at, size_t len, bool giga, bool *hole);
/* pages_hugetlb_into on ask's rung (2m, 1g), through the rung service (rung.c): skipped
 * while refused lately, a refusal classified, remembered and counted (a refused move
 * that left a hole, *hole, as an mmap fall). -1 if the pages are there, else the
 * reason. */
struct sp_rung_ask;
int pages_hugetlb_try(const struct sp_rung_ask *ask, uintptr_t at, size_t len, bool *hole);
/* The range [lo, hi) the heap reserves (under a finite RLIMIT_AS, the part of it
 * claimed so far): everything in it is the heap's. */
void pages_range(uintptr_t *lo, uintptr_t *hi);
/* What every free reads, on one line: the range's start, how many of its pages are
 * writable (it grows), the page info (per page of the range, small_info() for a
 * page of a SPAN_SMALL span, 0 otherwise; set and cleared by central.c, read by free
 * without touching the span), the key that marks a free object and the one that
 * mangles the free lists' links (malloc.c: secret, from the kernel's random bytes). */
struct heap_hot {
	uintptr_t base;
	size_t top_pages;
	uint64_t *pageinfo;
	uintptr_t free_key;
	_Atomic(struct span *) *pagemap; /* per page of the range: its span (range.c) */
	uintptr_t link_key;
	size_t top_granules; /* top_pages in 16-byte steps, for link_plausible */
} __attribute__((aligned(64)));
extern struct heap_hot heap_hot;

/* The mark a freed small object or a cached fitted block carries in its second word,
 * for double frees: the key bound to the block's address. A bare key, copied with
 * bytes the program never wrote (realloc of a block on reused pages copies them,
 * stale), marked the copy freed, and its next free aborted (torture, 1 run in ~60).
 * Never 0 (the key is odd, blocks are 16-aligned): a cleared word marks nothing. */
static inline uintptr_t free_mark(const void *p)
{
	return heap_hot.free_key ^ (uintptr_t)p;
}

/* The page info of a page of a small span of class cls, whose objects lie from
 * origin (where a whole span of the class starts: a short one is the last pages of a
 * whole one, central.c). High half: class cls's byte offset in class_info[] (and in
 * a thread's cache, malloc.c), so that free indexes both with no shift; low half:
 * the origin's offset in the range, mod 2^32, from which free takes a pointer's
 * offset in its span with one subtraction. */
static inline uint64_t small_info(unsigned cls, uintptr_t origin)
{
	return (uint64_t)((1 + cls) * sizeof(struct class_info)) << 32 |
	       (uint32_t)(origin - heap_hot.base);
}

/* The class a small span's page info names. */
static inline unsigned info_class(uint64_t info)
{
	return (unsigned)((info >> 32) / sizeof(struct class_info)) - 1;
}

/* The check record of the class a page info names (class_info[0] for 0). */
static inline const struct class_info *info_check(uint64_t info)
{
	return (const struct class_info *)(const void *)((const char *)class_info + (info >> 32));
}

/* True if the address at offset a in the range (a = address - base) is an object's
 * start on a page of the given info: a multiple of its class's size from the span's
 * origin, below the span's objects' end. False on a page of no small span. */
static inline bool info_fits(uint64_t info, uintptr_t a)
{
	const struct class_info *ci = info_check(info);
	uint32_t off = (uint32_t)a - (uint32_t)info;
	return (uint64_t)off * ci->divisor < ci->divisor && off < ci->limit;
}

/* The info of the page at offset a in the range (a = address - base), 0 if it is not
 * a page of a small span. */
static inline uint64_t page_info(uintptr_t a)
{
	size_t pg = a >> PAGE_SHIFT;
	if (__builtin_expect(pg >= __atomic_load_n(&heap_hot.top_pages, __ATOMIC_RELAXED), 0))
		return 0;
	return __atomic_load_n(&heap_hot.pageinfo[pg], __ATOMIC_ACQUIRE);
}

/* SP_HARDEN=0 (make SP_HARDEN=0, for bench/compare.sh only) builds the lists with plain
 * links and no checks, to measure what the hardening costs; the default is 1. */
#ifndef SP_HARDEN
#define SP_HARDEN 1
#endif

/* A free list's link as a freed small object holds it in its first word (the
 * threads' caches, the batches between them and the spans, the spans' own lists):
 * the next object's address mangled with a secret of the process and the object's
 * own address, as glibc's safe-linking mangles with the address alone and mimalloc
 * its lists with keys. A stray write into a freed object (a use after free) then
 * cannot name an address of its choosing: what it wrote reads back as noise, which
 * is refused before anything is taken from it (link_plausible below, as the threads'
 * caches pop; central.c checks each link it walks against the span); and a link
 * copied into another object reads as another address there. (The whole address,
 * not glibc's address >> 12: the secret already hides every bit, and the shift cost
 * malloc's common path two instructions.) */
static inline uintptr_t link_mask(const void *slot)
{
	uintptr_t mask = (uintptr_t)slot ^ heap_hot.link_key;
	/* (The mask is made whole before it meets the link, which a pop loads last and a
	 * push reads from the cache last: the link then waits for one xor, not two. The
	 * empty asm keeps the compiler from taking the xors in another order.) */
	__asm__("" : "+r"(mask));
	return mask;
}

static inline uintptr_t link_encode(const void *slot, const void *next)
{
	if (!SP_HARDEN)
		return (uintptr_t)next;
	return (uintptr_t)next ^ link_mask(slot);
}

static inline void *link_decode(const void *slot)
{
	if (!SP_HARDEN)
		return *(void *const *)slot;
	return (void *)(*(const uintptr_t *)slot ^ link_mask(slot));
}

/* The check of the threads' caches, which pop in a few instructions: an object read
 * from a list is 16-byte aligned on the range's writable pages before it is read or
 * given out. (Rotated right by 4, an offset that is not a multiple of 16 has its low
 * bits on top and reads as past the range's top: one compare, with the top counted in
 * 16-byte steps, checks both. NULL is refused too, its offset being above any range:
 * the caches' test for an empty list is this one, and the check costs malloc three
 * instructions and no branch. The top is read plainly, not as an atomic, so that the
 * compare takes it from memory: it is one aligned word, stored as the range grows,
 * before the page heap's lock hands out any span on the pages it adds.) */
static inline bool link_plausible(const void *p)
{
	if (!SP_HARDEN)
		return p != NULL;
	uintptr_t a = (uintptr_t)p - heap_hot.base;
	a = (a >> 4) | (a << 60);
	return a < heap_hot.top_granules;
}

/* Ends the process on a link that failed its check, read from the freed object slot
 * in fn (malloc, free). */
__attribute__((noreturn, cold)) void link_refused(const void *slot, const char *fn);
/* The same for a thread cache's list of class cls that leads to p, no object (not
 * said: see malloc.c). */
__attribute__((noreturn, cold)) void list_refused(const void *p, unsigned cls);

/* The span on the page of a (which must be one of the range's writable pages). */
static inline struct span *span_at(uintptr_t a)
{
	return __atomic_load_n((struct span **)&heap_hot.pagemap[(a - heap_hot.base) >> PAGE_SHIFT],
			       __ATOMIC_ACQUIRE);
}

/* ---- fork and private hugetlb memory (fork.c) ----
 * The kernel's fork shares private hugetlb memory with the child, copy on write; the
 * child copies it into THP memory of its own as soon as it runs, reading only. Each
 * module that holds such memory names its ranges to fork.c (under its lock, in the
 * same order in prepare and in the child), and in the child, once fork.c has copied
 * them, marks them THP (copied: from fork.c's guard, a signal handler, or its child
 * handler; system calls and memory only, under the module's lock, which this thread
 * took in prepare). */
typedef void (*fork_range_fn)(uintptr_t a, size_t len, size_t page, void *arg);
/* Whether the pool can give n more pages of 2 MiB (1 GiB with giga) besides those
 * promised to forked children still copying theirs (any page taken from that room
 * could cost a child the page its parent writes). */
bool fork_pool_spares(bool giga, size_t n);
/* The forks' counts, into st (struct rt_stats). */
void fork_stats(struct rt_stats *st);

/* The page heap's part (fork_units.c), under its lock: empty hugetlb units given back
 * (prepare), the runs of hugetlb units named, some of them moved to THP to make room
 * in the pool (demote), the units marked THP once copied. */
void pages_fork_prepare(void);
void pages_fork_hugetlb(fork_range_fn fn, void *arg);
size_t pages_fork_demote(long want[2]);
void pages_fork_copied(void);
void pages_fork_child(void);
/* The modules' parts of the runtime's one set of fork handlers, which life.c calls
 * in its order: the break's hugetlb steps (brk.c, as pages_fork_*; demote: 2 MiB pages
 * moved to THP, *want counted down), the program's own segments on hugetlb pages
 * (segments.c, the same), the SysV table's lock (shm.c). */
void brk_fork_prepare(void);
void brk_fork_hugetlb(fork_range_fn fn, void *arg);
size_t brk_fork_demote(long *want);
void brk_fork_parent(void);
void brk_fork_copied(void);
void brk_fork_child(void);
void segs_fork_prepare(void);
void segs_fork_hugetlb(fork_range_fn fn, void *arg);
size_t segs_fork_demote(long *want);
void segs_fork_parent(void);
void segs_fork_copied(void);
void segs_fork_child(void);
void shm_fork_prepare(void);
void shm_fork_after(void);

void pages_lock(void);
void pages_unlock(void);
/* Whether the heap is near a memory cgroup's limit (limits.c): no new memory of the
 * runtime's goes on THP. */
bool pages_near_limit(void);
/* In a forked child: the look at the limit another thread of the parent may have
 * been making is not this process's; the next look comes soon. */
void limits_fork_child(void);
void pages_stats(struct rt_stats *st);
/* Counts a program's mmap served by mmap.c (large: aligned; else from units). */
void pages_note_mmap(bool large);
/* Counts (and says) a fall of mmap.c's, with the heap's. */
void pages_note_fall(enum sp_backing rung, enum sp_fall why);

/* ---- the program's small reservations, packed (pack.c), for mmap.c ---- */
/* A private anonymous mapping of len bytes (below 2 MiB), PROT_NONE (a reservation)
 * or read-write (a runtime's heap page; under 2m and 1g, where the heap's units are
 * hugetlb, an arena), with the
 * program's flags, placed in a chunk of the runtime's; NULL if none can hold it.
 * Units it makes wholly read-write are collapsed. */
void *pack_map(size_t len, int prot, int flags);
/* Whether [a, a+len) meets a chunk. */
bool pack_holds(uintptr_t a, size_t len);
/* munmap of [a, a+len) (page-aligned): the chunks' parts are reserved again and free;
 * outside(part) unmaps each part outside every chunk. 0 or the first -errno. */
int pack_unmap(uintptr_t a, size_t len, int (*outside)(uintptr_t a, size_t len));
/* After the program's mprotect or fixed mapping of [a, a+len) succeeded: rw if it is
 * private anonymous read-write now. Units it made wholly read-write are collapsed. */
void pack_changed(uintptr_t a, size_t len, bool rw);
/* The same after a fixed mapping of the program's with flags. */
void pack_fixed(uintptr_t a, size_t len, bool rw, int flags);
/* The program's madvise of [a, a+len) (page-aligned): MADV_DONTFORK and MADV_DOFORK
 * on the chunks' parts are remembered (and given to the kernel only across fork),
 * the rest goes to the kernel. 0 or -errno. */
int pack_advise(uintptr_t a, size_t len, int advice);
/* MAP_FIXED_NOREPLACE at free pages of a chunk: mapped, or NULL. */
void *pack_take(uintptr_t a, size_t len, int prot, int flags);
/* After the kernel moved a mapping away from [a, a+len) (mremap). */
void pack_vacated(uintptr_t a, size_t len);
void pack_fork_prepare(void);
void pack_fork_parent(void);
void pack_fork_child(void);
/* Reservations packed, units collapsed, collapses the kernel refused. */
void pack_stats(uint64_t *packed, uint64_t *collapsed, uint64_t *failed);

/* ---- the emulated program break (brk.c), for mmap.c ---- */
/* The break's range [lo, hi) when it is emulated; false (and nothing) otherwise. */
bool brk_range(uintptr_t *lo, uintptr_t *hi);
/* Before the program changes part of the break's range: its hugetlb steps in
 * [addr, addr+len) are copied to THP memory in place. 0, or -ENOMEM. */
int brk_demote(uintptr_t addr, size_t len);
/* Before the program changes [addr, addr+len): the program's segments on hugetlb pages
 * that it meets (segments.c) are copied to THP memory in place. 0, or -ENOMEM. */
int segs_demote(uintptr_t addr, size_t len);
/* Whether a is in such a segment (fork.c's guard, in a child). */
bool segs_hold(uintptr_t a);
/* madvise on a page-aligned part of the break's range (see pages_advise). */
int brk_advise(uintptr_t addr, size_t len, int advice);

/* ---- blocks fitted to 64 bytes (fit.c) ---- */
#define FIT_MIN 4096ul             /* blocks above this size, */
#define FIT_MAX 131072ul           /* and below this one, are fitted */
#define FIT_CHUNK_PAGES 4096ul     /* the most pages of a chunk (16 MiB) */
#define FIT_ARENAS 8               /* threads use arena (slot % FIT_ARENAS) */
static inline bool fit_size(size_t size) { return size > FIT_MIN && size < FIT_MAX; }
/* A fitted block realloc grows in place takes up to 1/2^FIT_ROOM_SHIFT more than asked
 * where the grains after it are free: room for the next growth. realloc keeps a
 * block of have bytes for size bytes, without its arena's lock, while size is within
 * that room (or the block's last 64 bytes). */
#define FIT_ROOM_SHIFT 4
static inline bool fit_keeps(size_t have, size_t size)
{
	return size <= have && have - size < 64 + (have >> FIT_ROOM_SHIFT);
}
/* Sets up the arenas (once, before the first malloc). */
void fit_init(void);
/* A block of size bytes (fit_size) from the thread's cache, with no lock; NULL if
 * the cache holds none that fits. */
void *fit_cached(size_t size);
/* A block of size bytes (fit_size) from the arena of thread slot `slot`; *fresh: the
 * bytes it took out of the arena. NULL if out of memory. */
void *fit_alloc(size_t size, unsigned slot, size_t *fresh);
/* Frees p of the chunk span s (aborts if p is not a block in use) into the thread's
 * cache, or back to its arena: the bytes given back to the arena. */
size_t fit_free(struct span *s, void *p);
/* Frees p of the chunk span s (a block in use, its free mark allowed) straight back
 * to its arena, past the thread's cache (the checking mode, check.c): the bytes given
 * back. */
size_t fit_release(struct span *s, void *p);
/* The thread's cache back to the arenas (close: for good, the thread is leaving):
 * the bytes given back. */
size_t fit_cache_flush(bool close);
/* The usable bytes of block p of the chunk span s; aborts as fit_free, naming fn. */
size_t fit_usable(struct span *s, const void *p, const char *fn);
/* Resizes block p of s in place to size bytes (fit_size), *now bytes usable; false
 * if it cannot grow. */
bool fit_resize(struct span *s, void *p, size_t size, size_t *now);
void fit_lock(void);
void fit_unlock(void);
/* Bytes of the chunks, and free inside them. */
void fit_stats(uint64_t *chunk_bytes, uint64_t *free_bytes);
/* The chunks' bits, blocks, bins and counts recomputed and compared (for the tests):
 * the first difference found, or NULL. */
const char *fit_check(void);

/* ---- entry points (malloc.c) ---- */
void *rt_malloc(size_t size);
void rt_free(void *p);
void *rt_calloc(size_t n, size_t size);
void *rt_realloc(void *p, size_t size);
void *rt_memalign(size_t align, size_t size);
size_t rt_usable_size(const void *p);
/* The free mark's key and the threads' exit key, once, under rt_init; false if
 * the key cannot be had. */
bool malloc_init(void);
/* The calling thread's slot in the central lists (1 + index; 0: none). */
unsigned malloc_thread_slot(void);

/* ---- the checking mode (check.c; --check, SUPERPAGE_CHECK) ---- */
/* Set once at the start (malloc_init), never changed: the threads' caches then hold
 * nothing, and every malloc and free of a block takes these. */
extern bool rt_check;
/* A block of size bytes aligned to align, zeroed if zero, its canary and record set;
 * NULL if out of memory. */
void *check_alloc(size_t size, size_t align, bool zero);
/* Block p (of usable bytes, a valid pointer in use, a small one's free mark set by
 * the caller) freed: its canary checked, then it waits in the quarantine. */
void check_free(void *p, size_t usable);
/* The bytes asked for block p of usable bytes (its canary checked, fn aborts). */
size_t check_usable(const void *p, size_t usable, const char *fn);
/* What the mode takes from the heap and gives back (malloc.c): a block of at least
 * size bytes aligned to align, past the threads' caches, with its usable bytes, and
 * whether it is known zero and is a small object; NULL if out of memory. heap_give
 * puts a block of heap_take's back to the spans, fitted chunks or pages. */
void *heap_take(size_t size, size_t align, size_t *usable, bool *clean, bool *small);
void heap_give(void *p);

/* ---- pointers the heap never handed out (foreign.c) ---- */
/* free and realloc of p, which the page heap does not know: passed to glibc's malloc
 * if it may be its block, an abort if it can be no allocator's, else left alone (and
 * realloc gives NULL: the caller sets ENOMEM). */
void foreign_free(void *p);
void *foreign_realloc(void *p, size_t size);

/* ---- start-up (life.c) ---- */
/* Ready to serve: options read, range reserved. Idempotent, thread-safe. */
bool rt_init(void);
/* Whether the heap is serving (without starting it). */
bool rt_ready(void);

#pragma GCC visibility pop

#endif
