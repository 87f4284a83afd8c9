/* heap_heavy.c - a plain malloc program for the container test: builds a heap of many
 * small and medium blocks, checks it, and says how much of its memory is on huge pages.
 *
 * usage: heap_heavy MIB [hold]
 *   MIB   heap built, in blocks of 16 B to 64 KiB (sizes from a fixed sequence), a
 *         quarter freed and made again, every block written and read back
 *   hold  after the result, wait for stdin to end (a test reads the process meanwhile)
 * Prints on stdout one line that depends on the work only ("sum HEX blocks N"), the
 * same under any allocator; on stderr "anon KB huge KB" from /proc/self/smaps_rollup
 * (anonymous and hugetlb memory, and the part of it on huge pages), then "ready". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runtime/common/xorshift.h"

static uint64_t state = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
	return xorshift64(&state);
}

/* Mostly small blocks, some up to 64 KiB: a heap, not a few big arrays. */
static size_t block_size(void)
{
	uint64_t r = next();

	if (r % 8)
		return 16 + (size_t)(r >> 8) % 1008;
	return 1024 + (size_t)(r >> 8) % (63u << 10);
}

static void fill(unsigned char *p, size_t n, size_t i)
{
	for (size_t k = 0; k < n; k += 64)
		p[k] = (unsigned char)(i + k);
	p[n - 1] = (unsigned char)i;
}

static uint64_t field(const char *text, const char *name)
{
	const char *at = strstr(text, name);

	return at ? strtoull(at + strlen(name), NULL, 10) : 0;
}

int main(int argc, char **argv)
{
	size_t want = (argc > 1 ? strtoull(argv[1], NULL, 10) : 256) << 20, have = 0, n = 0, cap = 1024;
	unsigned char **blk = malloc(cap * sizeof *blk);
	size_t *len = malloc(cap * sizeof *len);
	uint64_t sum = 0;

	if (!blk || !len)
		return 1;
	while (have < want) {
		if (n == cap) {
			cap *= 2;
			blk = realloc(blk, cap * sizeof *blk);
			len = realloc(len, cap * sizeof *len);
			if (!blk || !len)
				return 1;
		}
		len[n] = block_size();
		blk[n] = malloc(len[n]);
		if (!blk[n])
			return 1;
		fill(blk[n], len[n], n);
		have += len[n++];
	}
	/* A quarter freed and made again, of other sizes: the heap is reused, not only grown. */
	for (size_t i = 0; i < n; i += 4) {
		free(blk[i]);
		len[i] = block_size();
		blk[i] = malloc(len[i]);
		if (!blk[i])
			return 1;
		fill(blk[i], len[i], i);
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < len[i]; k += 64)
			if (blk[i][k] != (unsigned char)(i + k) && k != len[i] - 1)
				return fprintf(stderr, "block %zu changed\n", i), 1;
		sum = sum * 31 + blk[i][len[i] - 1] + len[i];
	}
	printf("sum %016llx blocks %zu\n", (unsigned long long)sum, n);
	fflush(stdout);

	char text[4096] = "";
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	size_t got = f ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f)
		fclose(f);
	text[got] = 0;
	uint64_t htlb = field(text, "Private_Hugetlb:") + field(text, "Shared_Hugetlb:");
	fprintf(stderr, "anon %llu huge %llu\n",
		(unsigned long long)(field(text, "Anonymous:") + htlb),
		(unsigned long long)(field(text, "AnonHugePages:") + htlb));
	fprintf(stderr, "ready\n");
	if (argc > 2 && !strcmp(argv[2], "hold")) {
		char c;
		while (read(0, &c, 1) > 0)
			;
	}
	for (size_t i = 0; i < n; i++)
		free(blk[i]);
	free(blk);
	free(len);
	return 0;
}
