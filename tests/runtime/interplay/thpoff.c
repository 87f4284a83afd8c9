/* thpoff.c - a program that turns THP off for itself, as Ruby does at start
 * (prctl PR_SET_THP_DISABLE), then fills a heap of 192 MiB in 64 KiB blocks. Prints
 * what PR_GET_THP_DISABLE reads before and after, the heap's checksum and how much of
 * the process is on THP (AnonHugePages of /proc/self/smaps_rollup, in KiB).
 * Usage: thpoff [set|keep]: set turns it off; keep leaves the switch as inherited. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

static long thp_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	int set = argc > 1 && !strcmp(argv[1], "set");
	int before = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (set && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0) {
		perror("prctl");
		return 1;
	}
	int after = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	enum { N = 3072, SZ = 64 << 10 };
	static unsigned char *blk[N];
	unsigned long sum = 0;
	for (int i = 0; i < N; i++) {
		blk[i] = malloc(SZ);
		if (!blk[i])
			return 1;
		memset(blk[i], i & 0xff, SZ);
	}
	for (int i = 0; i < N; i++)
		for (int k = 0; k < SZ; k += 4096)
			sum += blk[i][k] + (unsigned long)k;
	printf("before=%d after=%d sum=%lu\n", before, after, sum);
	fprintf(stderr, "thp_kb=%ld\n", thp_kb());
	return 0;
}
