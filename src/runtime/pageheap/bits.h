/* bits.h - bitmaps of pages: the page heap's free pages in a unit and its free units
 * (units.c), the free and read-write pages of packed reservations (pack.c). */
#ifndef SP_BITS_H
#define SP_BITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline void bits_set(uint64_t *b, size_t from, size_t n, bool on)
{
	for (size_t i = from; i < from + n; i++) {
		if (on)
			b[i >> 6] |= 1ull << (i & 63);
		else
			b[i >> 6] &= ~(1ull << (i & 63));
	}
}

static inline bool bit(const uint64_t *b, size_t i)
{
	return b[i >> 6] >> (i & 63) & 1;
}

/* First index >= from below limit whose bit is `on`, or limit. */
static inline size_t bits_next(const uint64_t *b, size_t from, size_t limit, bool on)
{
	size_t i = from;
	while (i < limit) {
		uint64_t w = b[i >> 6];
		if (!on)
			w = ~w;
		w &= ~0ull << (i & 63);
		if (w) {
			size_t f = (i & ~(size_t)63) + (size_t)__builtin_ctzll(w);
			return f < limit ? f : limit;
		}
		i = (i | 63) + 1;
	}
	return limit;
}

/* A run of n set bits whose start, plus phase, is a multiple of align; or limit. */
static inline size_t bits_find_run_phase(const uint64_t *b, size_t limit, size_t n, size_t align,
				  size_t phase)
{
	size_t i = 0;
	while (i + n <= limit) {
		size_t f = bits_next(b, i, limit, true);
		f = ((f + phase + align - 1) & ~(align - 1)) - phase;
		if (f + n > limit)
			return limit;
		size_t used = bits_next(b, f, f + n, false);
		if (used == f + n)
			return f;
		i = used + 1;
	}
	return limit;
}

/* Last index below `to` whose bit is `on`, or SIZE_MAX. */
static inline size_t bits_prev(const uint64_t *b, size_t to, bool on)
{
	size_t i = to;
	while (i > 0) {
		size_t wi = (i - 1) >> 6, top = (i - 1) & 63;
		uint64_t w = b[wi];
		if (!on)
			w = ~w;
		if (top < 63)
			w &= (2ull << top) - 1;
		if (w)
			return (wi << 6) + 63 - (size_t)__builtin_clzll(w);
		i = wi << 6;
	}
	return SIZE_MAX;
}

/* The highest run of n set bits below limit whose start is a multiple of align; or
 * limit. */
static inline size_t bits_find_run_last(const uint64_t *b, size_t limit, size_t n, size_t align)
{
	size_t end = limit;
	while (n && end >= n) {
		size_t last = bits_prev(b, end, true);
		if (last == SIZE_MAX || last + 1 < n)
			return limit;
		size_t f = (last + 1 - n) & ~(align - 1);
		size_t clear = bits_prev(b, f + n, false);
		if (clear == SIZE_MAX || clear < f)
			return f;
		end = clear; /* (the run lies below the clear bit) */
	}
	return limit;
}

#endif
