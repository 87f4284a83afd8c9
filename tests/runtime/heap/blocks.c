/* blocks.c - what a few blocks of one size cost: N blocks of SIZE bytes malloc'd and
 * each written whole once, then the process's resident memory read (the runtime's own
 * included: a small heap is to cost little more than under glibc in all).
 * Usage: blocks N SIZE. Prints "blocks=N size=SIZE" on stdout, and the figures
 * "rss_kb=R huge_kb=H" (VmRSS, AnonHugePages of smaps_rollup) on a line of their own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "field_kb.h"

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 0;
	char **p;

	if (n <= 0 || size == 0) {
		fprintf(stderr, "usage: blocks N SIZE\n");
		return 2;
	}
	p = malloc((size_t)n * sizeof *p);
	if (!p)
		return 1;
	for (int i = 0; i < n; i++) {
		p[i] = malloc(size);
		if (!p[i]) {
			fprintf(stderr, "blocks: malloc(%zu) failed\n", size);
			return 1;
		}
		memset(p[i], i + 1, size);
	}
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += p[i][size - 1];
	printf("blocks=%d size=%zu sum=%ld\n", n, size, sum);
	printf("rss_kb=%ld huge_kb=%ld\n", field_kb("/proc/self/status", "VmRSS:"),
	       field_kb("/proc/self/smaps_rollup", "AnonHugePages:"));
	return 0;
}
