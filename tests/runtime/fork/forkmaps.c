/* forkmaps.c - the hugetlb mappings of a heap as it grows: fork copies each mapping's
 * page tables apart, and the kernel never merges two hugetlb mappings, so under
 * --backing 2m their number must grow far slower than the heap (test_fork.sh).
 *
 *   forkmaps MIB...
 *       for each MIB in turn (rising): mallocs blocks of 16 KiB to 4 MiB, a byte
 *       written in each of their pages, until MIB MiB are held, freeing an earlier
 *       block for every third one made (their units are kept and given out again);
 *       forks a child that checks every block held and exits; then prints
 *       "MIB MAPPINGS HUGE_MIB": the mappings of 2 MiB hugetlb pages in
 *       /proc/self/smaps and the MiB of hugetlb memory in them.
 *
 * Exits 0 if every block and every child held what was written, else 1. Counts,
 * never times. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "xorshift.h"

#define MIB ((size_t)1 << 20)
#define MOST 16384 /* blocks at once */

static unsigned char *block[MOST];
static size_t bytes[MOST], n_blocks, held;
static uint64_t state = 0x9E3779B97F4A7C15ull;

static uint64_t draw(void)
{
	return xorshift64(&state);
}

/* What page k of block i holds in its first byte. */
static unsigned char mark(size_t i, size_t k)
{
	return (unsigned char)(i * 37 + k * 11 + 5);
}

static void write_block(size_t i)
{
	for (size_t k = 0; k * 4096 < bytes[i]; k++)
		block[i][k * 4096] = mark(i, k);
}

/* Blocks that do not hold what was written (freed ones hold nothing). */
static size_t wrong_blocks(void)
{
	size_t bad = 0;
	for (size_t i = 0; i < n_blocks; i++) {
		if (!block[i])
			continue;
		for (size_t k = 0; k * 4096 < bytes[i]; k++)
			if (block[i][k * 4096] != mark(i, k)) {
				bad++;
				break;
			}
	}
	return bad;
}

/* The mappings of 2 MiB hugetlb pages, and the MiB of hugetlb memory in them. */
static long hugetlb_mappings(size_t *mib)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	size_t kb = 0, v;
	long n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "KernelPageSize: %zu kB", &v) == 1 && v == 2048)
			n++;
		else if (sscanf(line, "Private_Hugetlb: %zu kB", &v) == 1 ||
			 sscanf(line, "Shared_Hugetlb: %zu kB", &v) == 1)
			kb += v;
	}
	fclose(f);
	*mib = kb >> 10;
	return n;
}

int main(int argc, char **argv)
{
	size_t bad = 0;
	if (argc < 2) {
		fprintf(stderr, "usage: forkmaps MIB...\n");
		return 2;
	}
	for (int a = 1; a < argc; a++) {
		size_t want = strtoul(argv[a], NULL, 10) * MIB, mib;
		while (held < want && n_blocks < MOST) {
			size_t i = n_blocks++, lo = (size_t)16 << (10 + draw() % 9); /* 16K-4M */
			bytes[i] = lo + draw() % lo;
			if (bytes[i] > 4 * MIB)
				bytes[i] = 4 * MIB;
			if (!(block[i] = malloc(bytes[i]))) {
				fprintf(stderr, "forkmaps: malloc(%zu) failed\n", bytes[i]);
				return 1;
			}
			write_block(i);
			held += bytes[i];
			size_t j = draw() % n_blocks;
			if (i % 3 == 0 && j != i && block[j]) {
				free(block[j]);
				block[j] = NULL;
				held -= bytes[j];
			}
		}
		pid_t pid = fork();
		if (pid == 0)
			_exit(wrong_blocks() ? 1 : 0);
		int status = 0;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			fprintf(stderr, "forkmaps: the child at %s MiB saw a wrong block or died "
				"(status %#x)\n", argv[a], (unsigned)status);
			bad++;
		}
		long maps = hugetlb_mappings(&mib);
		printf("%s %ld %zu\n", argv[a], maps, mib);
		fflush(stdout);
	}
	bad += wrong_blocks();
	if (bad)
		fprintf(stderr, "forkmaps: %zu blocks or children wrong\n", bad);
	return bad ? 1 : 0;
}
