/* sparse.c - a large block the program touches a part of: after 80 MiB of blocks of
 * 512 KiB written whole (the heap grows past auto's promotion), a block of 64 MiB is
 * malloc'd (or, with "mmap", mapped; with "reserve", reserved PROT_NONE and made
 * writable) and one page in 64 of it written, or (dense) all of it; then blocks of
 * 3 MiB are malloc'd and freed, with a pause of 1 ms each, until the block is on huge
 * pages or (dense) 2000 have been, (else) 100. With "moved", the block's second half
 * is written whole, a block malloc'd just after it is in the way, and once that half
 * is on huge pages the block is grown to 96 MiB by realloc (moved), checked and both
 * freed: its units, some made huge by touch and some not, move with their own
 * backings. Usage: sparse sparse|dense|mmap|reserve|moved.
 * Prints the mode on stdout, and the figures "added_kb=A huge_kb=H calls=C" (VmRSS the
 * block added, AnonHugePages of the whole process, the small blocks made) on a line of
 * their own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "field_kb.h"

#define MIB ((size_t)1 << 20)
#define BLOCK (64 * MIB)
#define PAGE 4096

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int dense = strcmp(mode, "dense") == 0, map = strcmp(mode, "mmap") == 0;
	int reserve = strcmp(mode, "reserve") == 0, moved = strcmp(mode, "moved") == 0;
	volatile char *first[160], *block, *after = NULL;
	size_t from = moved ? BLOCK / 2 : 0;
	long before, huge0;
	int calls = 0;

	if (!dense && !map && !reserve && !moved && strcmp(mode, "sparse") != 0) {
		fprintf(stderr, "usage: sparse sparse|dense|mmap|reserve|moved\n");
		return 2;
	}
	for (int i = 0; i < 160; i++) {
		first[i] = malloc(MIB / 2);
		if (!first[i])
			return 1;
		memset((char *)first[i], 1, MIB / 2);
	}
	before = field_kb("/proc/self/status", "VmRSS:");
	huge0 = field_kb("/proc/self/smaps_rollup", "AnonHugePages:");
	if (map || reserve) {
		void *m = mmap(NULL, reserve ? 4 * BLOCK : BLOCK, reserve ? PROT_NONE : PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | (reserve ? MAP_NORESERVE : 0), -1, 0);
		block = m == MAP_FAILED ? NULL : m;
		if (block && reserve && mprotect((char *)block, BLOCK, PROT_READ | PROT_WRITE) < 0)
			block = NULL;
	} else {
		block = malloc(BLOCK);
		after = moved ? malloc(BLOCK) : NULL;
	}
	if (!block || (moved && !after))
		return 1;
	dense = dense || moved;
	for (size_t i = from; i < BLOCK; i += dense ? PAGE : 64 * PAGE)
		block[i] = (char)(i >> 12 | 1);
	for (int most = dense ? 2000 : 100; calls < most; calls++) {
		long huge = field_kb("/proc/self/smaps_rollup", "AnonHugePages:");
		if (huge - huge0 >= (long)((BLOCK - from) / 1024) * 9 / 10)
			break;
		struct timespec ms = { 0, 1000000 };
		free(malloc(3 * MIB + (size_t)(calls % 64) * PAGE));
		nanosleep(&ms, NULL);
	}
	if (moved && !(block = realloc((char *)block, BLOCK + BLOCK / 2)))
		return 1;
	for (size_t i = from; i < BLOCK; i += dense ? PAGE : 64 * PAGE)
		if (block[i] != (char)(i >> 12 | 1))
			return 3;
	if (moved) {
		free((char *)after);
		free((char *)block);
	}
	printf("%s\n", mode);
	printf("added_kb=%ld huge_kb=%ld calls=%d\n", field_kb("/proc/self/status", "VmRSS:") - before,
	       field_kb("/proc/self/smaps_rollup", "AnonHugePages:") - huge0, calls);
	return first[159][1000] == 1 ? 0 : 3;
}
