/* check.c - the checking mode (superpage run --check, SUPERPAGE_CHECK=yes): every
 * block carries a canary past the bytes asked for and a record of their number; a
 * freed block is filled with a pattern and waits in a quarantine before it can be
 * given out again. free finds a write past a block's end (its canary or record
 * changed), and the block's release from the quarantine (or its next malloc) a write
 * after free (its pattern changed); either ends the process with one line naming the
 * block. Every malloc and free of the mode goes past the threads' caches (malloc.c
 * keeps their lists empty), so that each is checked; the common paths of the default
 * mode are not touched by it.
 *
 * A block of n bytes asked is taken of at least n + 8 (and 24: the record must not
 * lie on the free mark, malloc.h): [0, n) the program's, [n, usable - 8) the canary
 * (CANARY_MAX bytes of it at most), [usable - 8, usable) the record, n mangled with
 * the block's free mark. */
#include <stdatomic.h>
#include <string.h>

#include "malloc/malloc.h"
#include "runtime.h"

bool rt_check;

#define CANARY 0xa5
#define CANARY_MAX 4096         /* canary bytes checked, at most (large blocks) */
#define FREED 0xdf              /* what a freed block is filled with */
#define QUARANTINE 1024         /* freed blocks that wait before reuse */

/* Freed blocks of up to FIT_MAX bytes wait here, the oldest given back as each new
 * one comes: a lock-free ring, so that no lock is held across a fork. A slot holds
 * the block's address with its usable bytes / 16 in the top bits (user addresses
 * are below 2^47, blocks 16-aligned). */
static struct {
	_Atomic uint64_t slot[QUARANTINE];
	_Atomic unsigned long next;
} quarantine;
#define SLOT_SHIFT 47
_Static_assert((FIT_MAX >> 4) < (1ul << (64 - SLOT_SHIFT)), "a block's size fits a slot's top bits");

static uintptr_t record_of(const void *p, size_t n)
{
	return (uintptr_t)n ^ free_mark(p);
}

static size_t canary_end(size_t n, size_t usable)
{
	size_t end = usable - sizeof(uintptr_t);
	return end - n > CANARY_MAX ? n + CANARY_MAX : end;
}

/* The first byte of [from, to) of p that is not b, or to: eight at a time between
 * the ends (a freed block of 64 KiB is read whole as it leaves the quarantine). */
static size_t first_not(const unsigned char *p, size_t from, size_t to, unsigned char b)
{
	const uint64_t all = 0x0101010101010101ull * b;
	size_t i = from;
	for (; i < to && i % 8; i++)
		if (p[i] != b)
			return i;
	for (; i + 8 <= to; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, sizeof w);
		if (w != all)
			break;
	}
	for (; i < to; i++)
		if (p[i] != b)
			return i;
	return to;
}

/* The bytes the program asked for in block p of usable bytes, its record and canary
 * checked: fn aborts if they were written over. */
static size_t asked_of(const void *p, size_t usable, const char *fn)
{
	const unsigned char *b = p;
	uintptr_t rec;
	memcpy(&rec, b + usable - sizeof rec, sizeof rec);
	size_t n = rec ^ free_mark(p);
	if (usable < 3 * sizeof(uintptr_t) || n > usable - sizeof(uintptr_t))
		rt_abort("%s(): the block %p (%zu bytes usable) was written past its end: its size "
			 "record at +%zu changed (superpage --check)", fn, p, usable,
			 usable - sizeof rec);
	size_t bad = first_not(b, n, canary_end(n, usable), CANARY);
	if (bad < canary_end(n, usable))
		rt_abort("%s(): the %zu-byte block %p was written past its end: byte +%zu changed "
			 "(superpage --check)", fn, n, p, bad);
	return n;
}

/* Block p of usable bytes, freed, is as free left it, from byte from on: filled, its
 * free mark on. */
static void check_pattern(const void *p, size_t usable, size_t from, const char *fn)
{
	const unsigned char *b = p;
	uintptr_t changed = ((const uintptr_t *)p)[1] ^ free_mark(p);
	size_t bad = first_not(b, from, sizeof(uintptr_t), FREED);
	if (bad == sizeof(uintptr_t))
		bad = changed ? sizeof(uintptr_t) + (size_t)__builtin_ctzll(changed) / 8
			      : first_not(b, 16, usable, FREED);
	if (bad < usable)
		rt_abort("%s(): the %zu-byte block %p was written after its free: byte +%zu changed "
			 "(superpage --check)", fn, usable, p, bad);
}

void *check_alloc(size_t size, size_t align, bool zero)
{
	size_t want, usable;
	bool clean;
	if (__builtin_add_overflow(size, sizeof(uintptr_t), &want))
		return NULL;
	if (want < 3 * sizeof(uintptr_t))
		want = 3 * sizeof(uintptr_t);
	bool small;
	unsigned char *p = heap_take(want, align, &usable, &clean, &small);
	if (!p)
		return NULL;
	/* A small object back from the quarantine, given out again: its pattern checked
	 * once more (heap_give left its free mark and all but its first word). */
	if (small && ((uintptr_t *)p)[1] == free_mark(p))
		check_pattern(p, usable, sizeof(uintptr_t), "malloc");
	((uintptr_t *)p)[1] = 0;
	if (zero && !clean)
		memset(p, 0, size);
	memset(p + size, CANARY, canary_end(size, usable) - size);
	uintptr_t rec = record_of(p, size);
	memcpy(p + usable - sizeof rec, &rec, sizeof rec);
	return p;
}

size_t check_usable(const void *p, size_t usable, const char *fn)
{
	return asked_of(p, usable, fn);
}

void check_free(void *p, size_t usable)
{
	asked_of(p, usable, "free");
	if (usable > FIT_MAX || usable % 16 || (uintptr_t)p >> SLOT_SHIFT) {
		heap_give(p); /* (no room for it in a slot) */
		return;
	}
	memset(p, FREED, usable);
	((uintptr_t *)p)[1] = free_mark(p);
	unsigned long i = atomic_fetch_add_explicit(&quarantine.next, 1, memory_order_relaxed);
	uint64_t out = atomic_exchange(&quarantine.slot[i % QUARANTINE],
				       (uint64_t)(usable >> 4) << SLOT_SHIFT | (uintptr_t)p);
	if (!out)
		return;
	void *old = (void *)(uintptr_t)(out & ((1ull << SLOT_SHIFT) - 1));
	check_pattern(old, (size_t)(out >> SLOT_SHIFT) << 4, 0, "free");
	heap_give(old);
}
