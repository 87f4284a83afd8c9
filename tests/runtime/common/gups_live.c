/* gups_live.c - the random-update kernel (GUPS) over malloc'd memory, its rate printed as it runs:
 * for a program promoted mid-run (bench/promote.sh), plain C, no superpage calls.
 *
 * usage: gups_live SIZE SECONDS   SIZE in bytes with K/M/G
 * Prints "ready" when the table is written, then every 0.25 s "t=T mups=R" (seconds since
 * the updates began, millions of updates a second over the last interval). After SECONDS
 * it runs the same updates again, which puts the table back (x ^= r twice), checks it
 * word by word and prints "intact updates=N", or "corrupt at I" and exits 1. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define POLY 0x0000000000000007ull
#define BATCH (1u << 20)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t next(uint64_t r)
{
	return (r << 1) ^ ((int64_t)r < 0 ? POLY : 0);
}

static uint64_t batch(uint64_t *table, uint64_t words, uint64_t r, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		r = next(r);
		table[(uint64_t)(((unsigned __int128)r * words) >> 64)] ^= r;
	}
	return r;
}

int main(int argc, char **argv)
{
	char *end;
	if (argc != 3) {
		fprintf(stderr, "usage: gups_live SIZE SECONDS\n");
		return 2;
	}
	unsigned long long v = strtoull(argv[1], &end, 10);
	int shift = *end == 'G' ? 30 : *end == 'M' ? 20 : *end == 'K' ? 10 : 0;
	uint64_t size = (uint64_t)v << shift, words = size / 8;
	double seconds = atof(argv[2]);
	uint64_t *table = malloc(size);
	if (!table || !words) {
		fprintf(stderr, "gups_live: malloc(%" PRIu64 ") failed\n", size);
		return 1;
	}
	for (uint64_t i = 0; i < words; i++)
		table[i] = i;
	printf("ready\n");
	fflush(stdout);
	uint64_t r = 1, done = 0, last_done = 0;
	double t0 = now(), last = t0, t;
	while ((t = now()) - t0 < seconds) {
		r = batch(table, words, r, BATCH);
		done += BATCH;
		t = now();
		if (t - last >= 0.25) {
			printf("t=%.3f mups=%.2f\n", t - t0, (double)(done - last_done) / (t - last) / 1e6);
			fflush(stdout);
			last = t;
			last_done = done;
		}
	}
	batch(table, words, 1, done);
	for (uint64_t i = 0; i < words; i++)
		if (table[i] != i) {
			printf("corrupt at %" PRIu64 "\n", i);
			return 1;
		}
	printf("intact updates=%" PRIu64 "\n", done);
	return 0;
}
