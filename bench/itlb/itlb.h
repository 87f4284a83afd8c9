/* itlb.h - the generated functions of the itlb kernel, as C: the constants each one
 * uses (the generator writes them into the code) and what each one computes (the
 * driver's check runs it beside the code).
 *
 * Function i is straight-line code: v = a; then `steps` times v += add, v = v rol rot,
 * v ^= xor; then v *= mul (odd: every step is a bijection of the 64-bit value, so the
 * chain never collapses), return v. The multiply last spreads every bit into the
 * high ones, which pick the next function. */
#ifndef BENCH_ITLB_H
#define BENCH_ITLB_H

#include <stdint.h>

struct itlb_consts {
	uint64_t add, xor, mul;
	unsigned rot;
};

/* splitmix64's finalizer: consecutive indices give unrelated constants. */
static inline uint64_t itlb_mix(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static inline struct itlb_consts itlb_consts_of(uint32_t i)
{
	struct itlb_consts c;
	uint64_t base = (uint64_t)i * 4;

	c.add = itlb_mix(base + 1);
	c.xor = itlb_mix(base + 2);
	c.mul = itlb_mix(base + 3) | 1;
	/* 5 to 59: no shift the assembler could encode shorter (rol by 1 is), and no
	 * rotation so small that it barely moves the bits. */
	c.rot = 5 + (unsigned)(itlb_mix(base + 4) % 55);
	return c;
}

static inline uint64_t itlb_model(uint32_t i, unsigned steps, uint64_t v)
{
	struct itlb_consts c = itlb_consts_of(i);

	for (unsigned s = 0; s < steps; s++) {
		v += c.add;
		v = v << c.rot | v >> (64 - c.rot);
		v ^= c.xor;
	}
	return v * c.mul;
}

/* The function a value calls next: its high bits scaled to [0, n). */
static inline uint32_t itlb_next(uint64_t v, uint32_t n)
{
	return (uint32_t)(((unsigned __int128)v * n) >> 64);
}

#endif
