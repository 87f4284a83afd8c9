/* bench/table.h - what the random-update kernels (gups, promote) share: the LCG that
 * draws the updates, and the table of 64-bit words they update. */
#ifndef BENCH_TABLE_H
#define BENCH_TABLE_H

#include "kernel.h"

#define LCG_MUL 6364136223846793005ull /* Knuth's MMIX multiplier */
#define LCG_ADD 1442695040888963407ull
#define SEED 0x5DEECE66Dull

/* Word i's value before any update, and after each pair of equal passes. */
static inline uint64_t bench_table_initial(uint64_t i)
{
	return i * 0x9E3779B97F4A7C15ull;
}

/* The table of --size bytes, each word at its initial value, its length in *words; exits
 * 2 with a one-line error under 64 bytes. */
static inline uint64_t *bench_table(const struct bench_args *a, const char *kernel, uint64_t *words)
{
	uint64_t *table;

	*words = a->size / 8;
	if (*words < 8) {
		fprintf(stderr, "%s: --size must be at least 64 bytes\n", kernel);
		exit(2);
	}
	table = bench_alloc(*words * 8);
	for (uint64_t i = 0; i < *words; i++)
		table[i] = bench_table_initial(i);
	return table;
}

#endif
