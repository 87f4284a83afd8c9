/* callocs.c - calloc of blocks past a unit: zero, and resident only where it must be.
 * "sparse": a small block, a 13 MB block written at every other page, then a calloc of
 * 17 MB (a run that begins in a unit in use: xz's hash table lies so) left untouched;
 * prints "added_kb=A" (the VmRSS the calloc added) on a line of its own. "reuse": blocks
 * of many sizes past a unit written with 0xa5 and freed, then calloc'd again at sizes
 * that lie across the units they left; prints "ok" if every byte of every calloc'd
 * block read 0, else where one did not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "field_kb.h"
#include "xorshift.h"

#define MB 1000000ul

static int sparse(void)
{
	char *small = malloc(100), *b = malloc(13 * MB);
	if (!small || !b)
		return 1;
	memset(small, 1, 100);
	for (size_t i = 0; i < 13 * MB; i += 8192)
		b[i] = 1;
	long before = field_kb("/proc/self/status", "VmRSS:");
	char *c = calloc(1, 17 * MB);
	long after = field_kb("/proc/self/status", "VmRSS:");
	if (!c || c[17 * MB - 1] || c[0])
		return 1;
	printf("sparse\nadded_kb=%ld\n", after - before);
	return 0;
}

static int reuse(void)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	enum { N = 24 };
	for (int round = 0; round < 8; round++) {
		char *b[N];
		size_t len[N];
		for (int i = 0; i < N; i++) {
			len[i] = 100 + xorshift64(&s) % (6 * MB);
			if (!(b[i] = malloc(len[i])))
				return 1;
			memset(b[i], 0xa5, len[i]);
		}
		for (int i = 0; i < N; i += 2)
			free(b[i]);
		for (int i = 0; i < N; i += 2) {
			len[i] = 100 + xorshift64(&s) % (9 * MB);
			if (!(b[i] = calloc(1, len[i])))
				return 1;
			for (size_t k = 0; k < len[i]; k++)
				if (b[i][k]) {
					printf("round %d: calloc(%zu) byte %zu is %d\n", round, len[i], k, b[i][k]);
					return 1;
				}
			memset(b[i], 0xa5, len[i]);
		}
		for (int i = 0; i < N; i++)
			free(b[i]);
	}
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "sparse"))
		return sparse();
	if (!strcmp(mode, "reuse"))
		return reuse();
	fprintf(stderr, "usage: callocs sparse|reuse\n");
	return 2;
}
