/* gups_malloc.c - the random-update kernel (GUPS) over malloc'd memory, as an unmodified
 * program: what `superpage run` should speed up with no change to the code.
 *
 * usage: gups_malloc [SIZE [UPDATES]]   SIZE in bytes with K/M/G (default 1G),
 *                                        UPDATES per pass (default SIZE / 64)
 * Two passes of the same update sequence (x ^= r) put the table back as it was, which
 * is checked word by word. Line 1 on stdout is the same under every malloc; line 2 has
 * the time of the two passes: "seconds=S updates_per_s=U". Exit 1 if the check fails. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLY 0x0000000000000007ull

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	int shift = 0;
	if (end == s || *s == '-')
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The HPCC generator: a shift register over GF(2), one value per update. */
static void updates(uint64_t *table, uint64_t words, uint64_t n)
{
	uint64_t r = 1;
	for (uint64_t i = 0; i < n; i++) {
		r = (r << 1) ^ ((int64_t)r < 0 ? POLY : 0);
		table[(uint64_t)(((unsigned __int128)r * words) >> 64)] ^= r;
	}
}

int main(int argc, char **argv)
{
	uint64_t size = (uint64_t)1 << 30, n;
	if (argc > 3 || (argc > 1 && parse_size(argv[1], &size)) || size < 4096) {
		fprintf(stderr, "usage: gups_malloc [SIZE [UPDATES]]\n");
		return 2;
	}
	n = size / 64;
	if (argc > 2 && parse_size(argv[2], &n)) {
		fprintf(stderr, "usage: gups_malloc [SIZE [UPDATES]]\n");
		return 2;
	}
	uint64_t words = size / 8;
	uint64_t *table = malloc(words * 8);
	if (!table) {
		fprintf(stderr, "gups_malloc: malloc(%" PRIu64 ") failed\n", words * 8);
		return 1;
	}
	for (uint64_t i = 0; i < words; i++)
		table[i] = i;

	double t0 = now();
	updates(table, words, n);
	double t1 = now();
	uint64_t check = 0;
	for (uint64_t i = 0; i < words; i++)
		check += table[i] * (i | 1);
	double t2 = now();
	updates(table, words, n);
	double t3 = now();
	for (uint64_t i = 0; i < words; i++)
		if (table[i] != i) {
			fprintf(stderr, "gups_malloc: word %" PRIu64 " is %#" PRIx64 " after two passes\n",
				i, table[i]);
			return 1;
		}
	free(table);
	double s = (t1 - t0) + (t3 - t2);
	printf("gups_malloc: %" PRIu64 " bytes, %" PRIu64 " updates x 2, checksum %016" PRIx64
	       ", verified\n", size, n, check);
	printf("seconds=%.3f updates_per_s=%.0f\n", s, s > 0 ? 2.0 * (double)n / s : 0.0);
	return 0;
}
