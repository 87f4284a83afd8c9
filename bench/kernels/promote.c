/* promote.c - random updates over a table that superpage bench promotes in the middle of
 * the run (superpage promote): the rate before and after, from the same process. */
#include <signal.h>

#include "table.h"

#define SLICE (1ull << 20)             /* updates between looks at the signal */
#define WAIT_S 120                     /* the longest wait for the signal */

static const char usage[] =
	"Random updates (as gups: table[k] ^= r) over a table of 64-bit words, timed in two\n"
	"equal passes, promote/before and promote/after; metric MUP/s.\n"
	"  --size N  bytes of the table (default 1G)\n"
	"  --reps R  each timed pass makes R * N / 64 updates (default 3: passes of a second\n"
	"            or two, long enough to set one against the other)\n"
	"With BENCH_PROMOTE set (superpage bench's promote variant, which runs it plain and\n"
	"promotes it once it has printed its first result), it goes on updating between the\n"
	"passes until SIGUSR1 says the promotion is over (at most 120 s). Then every update\n"
	"is made again, untimed: xor undoes itself, so the table must be back as it was.\n";

static volatile sig_atomic_t promoted;

static void on_promoted(int sig)
{
	(void)sig;
	promoted = 1;
}

/* n updates from LCG state r; returns the state after them. noinline: each pass is work
 * the caller cannot see through. */
__attribute__((noinline)) static uint64_t update(uint64_t *table, uint64_t words, uint64_t r,
						 uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		r = r * LCG_MUL + LCG_ADD;
		table[(uint64_t)(((unsigned __int128)r * words) >> 64)] ^= r;
	}
	return r;
}

/* Updates on, a slice at a time, until SIGUSR1 or WAIT_S; adds them to *done. */
static uint64_t wait_promoted(uint64_t *table, uint64_t words, uint64_t r, uint64_t *done)
{
	double t0 = bench_now();

	while (!promoted && bench_now() - t0 < WAIT_S) {
		r = update(table, words, r, SLICE);
		*done += SLICE;
	}
	if (!promoted)
		fprintf(stderr, "promote: no SIGUSR1 after %d s; the after pass runs anyway\n", WAIT_S);
	return r;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_promoted };
	struct bench_args a;
	uint64_t words, n, done = 0, bad = 0, r = SEED;
	uint64_t *table;
	double t0, t1, t2, t3;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	bench_parse_args(argc, argv, usage, 1ull << 30, 3, &a);
	table = bench_table(&a, "promote", &words);
	n = (uint64_t)a.reps * (words / 8);

	t0 = bench_now();
	r = update(table, words, r, n);
	t1 = bench_now();
	done += n;
	bench_result(&a, "promote/before", a.size, t1 - t0, (double)n / (t1 - t0) / 1e6, "MUP/s", 1);
	if (getenv("BENCH_PROMOTE"))
		r = wait_promoted(table, words, r, &done);
	t2 = bench_now();
	update(table, words, r, n);
	t3 = bench_now();
	done += n;

	/* The same stream from its start undoes every update made. */
	update(table, words, SEED, done);
	for (uint64_t i = 0; i < words; i++)
		bad += table[i] != bench_table_initial(i);
	if (bad)
		fprintf(stderr, "promote: %llu of %llu words wrong after undoing %llu updates\n",
			(unsigned long long)bad, (unsigned long long)words, (unsigned long long)done);
	bench_result(&a, "promote/after", a.size, t3 - t2, (double)n / (t3 - t2) / 1e6, "MUP/s",
		     bad == 0);
	return bench_exit(&a);
}
