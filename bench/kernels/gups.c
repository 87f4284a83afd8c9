/* gups.c - random read-modify-write updates (GUPS) over one big table of 64-bit words. */
#include "table.h"

static const char usage[] =
	"Random updates (GUPS): table[k] ^= r for a pseudo-random r and a k drawn from it,\n"
	"over a table of 64-bit words; metric MUP/s (million updates per second).\n"
	"  --size N  bytes of the table (default 1G)\n"
	"  --reps R  the timed pass makes R * N / 64 updates (default 1)\n"
	"The same updates are then made again, untimed: xor undoes itself, so the table\n"
	"must be back as it was (check=ok).\n";

/* The LCG's high bits are its good ones: they pick the word, by multiply-shift, and the
 * whole state is the value xored in. noinline so each pass is real work the caller
 * cannot see through. */
__attribute__((noinline)) static void update(uint64_t *table, uint64_t words, uint64_t n)
{
	uint64_t r = SEED;

	for (uint64_t i = 0; i < n; i++) {
		r = r * LCG_MUL + LCG_ADD;
		table[(uint64_t)(((unsigned __int128)r * words) >> 64)] ^= r;
	}
}

int main(int argc, char **argv)
{
	struct bench_args a;
	uint64_t words, n, bad = 0;
	uint64_t *table;
	double t0, t1;

	bench_parse_args(argc, argv, usage, 1ull << 30, 1, &a);
	table = bench_table(&a, "gups", &words);
	/* One update per 64 bytes, as tests/runtime/common/gups_malloc makes: the figures compare,
	 * and the two passes plus the first touch of 1 GiB stay near 2 s on 4 KiB pages. */
	n = (uint64_t)a.reps * (words / 8);

	t0 = bench_now();
	update(table, words, n);
	t1 = bench_now();

	update(table, words, n);
	for (uint64_t i = 0; i < words; i++)
		bad += table[i] != bench_table_initial(i);
	if (bad)
		fprintf(stderr, "gups: %llu of %llu words wrong after two passes\n",
			(unsigned long long)bad, (unsigned long long)words);
	fprintf(stderr, "gups: %llu updates over %llu words in %.3f s\n", (unsigned long long)n,
		(unsigned long long)words, t1 - t0);
	bench_result(&a, "gups", a.size, t1 - t0, (double)n / (t1 - t0) / 1e6, "MUP/s", bad == 0);
	return bench_exit(&a);
}
