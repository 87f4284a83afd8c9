/* xorshift.h - the tests' generator of repeatable pseudo-random numbers: Marsaglia's
 * xorshift64 (shifts 13, 7, 17). Header-only, as smaps_kb.h: each program stays one
 * file. The state must not be 0. */
#ifndef XORSHIFT_H
#define XORSHIFT_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#endif
