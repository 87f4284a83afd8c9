/* test_bits.c - the page bitmaps of bits.h against a page-at-a-time reference:
 * the next and previous set or clear bit, and the first and the last aligned run of
 * set bits, on random maps and on the edges (word boundaries, full and empty maps). */
#include <stdint.h>
#include <stdlib.h>

#include "pageheap/bits.h"
#include "check.h"

#define NBITS 640 /* ten words */

static size_t ref_next(const uint64_t *b, size_t from, size_t limit, bool on)
{
	for (size_t i = from; i < limit; i++)
		if (bit(b, i) == on)
			return i;
	return limit;
}

static size_t ref_prev(const uint64_t *b, size_t to, bool on)
{
	for (size_t i = to; i > 0; i--)
		if (bit(b, i - 1) == on)
			return i - 1;
	return SIZE_MAX;
}

static bool ref_run(const uint64_t *b, size_t f, size_t n)
{
	for (size_t i = f; i < f + n; i++)
		if (!bit(b, i))
			return false;
	return true;
}

static size_t ref_first(const uint64_t *b, size_t limit, size_t n, size_t align)
{
	for (size_t f = 0; f + n <= limit; f += align)
		if (ref_run(b, f, n))
			return f;
	return limit;
}

static size_t ref_last(const uint64_t *b, size_t limit, size_t n, size_t align)
{
	size_t found = limit;
	for (size_t f = 0; f + n <= limit; f += align)
		if (ref_run(b, f, n))
			found = f;
	return found;
}

/* A map of runs: set runs and clear runs of random lengths up to maxrun. */
static void random_map(uint64_t *b, unsigned *seed, size_t maxrun)
{
	bool on = rand_r(seed) & 1;
	for (size_t i = 0; i < NBITS;) {
		size_t len = 1 + (size_t)rand_r(seed) % maxrun;
		if (len > NBITS - i)
			len = NBITS - i;
		bits_set(b, i, len, on);
		i += len;
		on = !on;
	}
}

static void test_next_prev(void)
{
	uint64_t b[NBITS / 64];
	unsigned seed = 7;
	for (int round = 0; round < 200; round++) {
		random_map(b, &seed, round % 2 ? 9 : 90);
		for (size_t i = 0; i <= NBITS; i += 1 + (size_t)rand_r(&seed) % 13) {
			for (int on = 0; on < 2; on++) {
				CHECK_EQ(bits_next(b, i, NBITS, on), ref_next(b, i, NBITS, on));
				CHECK_EQ(bits_prev(b, i, on), ref_prev(b, i, on));
			}
		}
	}
	bits_set(b, 0, NBITS, true);
	CHECK_EQ(bits_prev(b, NBITS, false), SIZE_MAX);
	CHECK_EQ(bits_prev(b, 64, true), 63);
	CHECK_EQ(bits_prev(b, 0, true), SIZE_MAX);
	bits_set(b, 0, NBITS, false);
	CHECK_EQ(bits_prev(b, NBITS, true), SIZE_MAX);
	bits_set(b, 128, 1, true);
	CHECK_EQ(bits_prev(b, 129, true), 128);
	CHECK_EQ(bits_prev(b, 128, true), SIZE_MAX);
	CHECK_EQ(bits_prev(b, NBITS, true), 128);
}

static void test_runs(void)
{
	uint64_t b[NBITS / 64];
	unsigned seed = 11;
	static const size_t aligns[] = { 1, 2, 4, 8, 64 };
	for (int round = 0; round < 300; round++) {
		random_map(b, &seed, round % 3 ? 40 : 150);
		for (size_t n = 1; n <= 130; n += 1 + (size_t)rand_r(&seed) % 9) {
			for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
				size_t al = aligns[a];
				size_t limit = NBITS - (size_t)rand_r(&seed) % 70;
				CHECK_EQ(bits_find_run_phase(b, limit, n, al, 0),
					 ref_first(b, limit, n, al));
				CHECK_EQ(bits_find_run_last(b, limit, n, al), ref_last(b, limit, n, al));
			}
		}
	}
	/* A full map: the last run ends at the limit, aligned down. */
	bits_set(b, 0, NBITS, true);
	CHECK_EQ(bits_find_run_last(b, NBITS, 8, 4), NBITS - 8);
	CHECK_EQ(bits_find_run_last(b, NBITS - 1, 8, 4), NBITS - 12);
	CHECK_EQ(bits_find_run_last(b, NBITS, NBITS, 1), 0);
	CHECK_EQ(bits_find_run_last(b, NBITS, NBITS + 1, 1), NBITS);
	/* Pages in use at the top: the run ends below them, aligned down. */
	bits_set(b, NBITS - 4, 4, false);
	CHECK_EQ(bits_find_run_last(b, NBITS, 8, 4), NBITS - 12);
	bits_set(b, 0, NBITS, false);
	CHECK_EQ(bits_find_run_last(b, NBITS, 1, 1), NBITS);
}

int main(void)
{
	RUN(test_next_prev);
	RUN(test_runs);
	return CHECK_DONE();
}
