/* spread.c - where blocks of one large size lie: N blocks of SIZE MiB are malloc'd
 * one after another (not touched), and no two may lie a multiple of 256 MiB apart
 * (a loop over such arrays runs at a fraction of its speed: src/runtime/pageheap/large.c).
 * Usage: spread N SIZE_MIB. Prints one line; exit 0, or 1 if two blocks lie so. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define APART ((uintptr_t)256 << 20)

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 0;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) << 20 : 0;
	uintptr_t at[16];

	if (n < 2 || n > 16 || size == 0) {
		fprintf(stderr, "usage: spread N(2-16) SIZE_MIB\n");
		return 2;
	}
	for (int i = 0; i < n; i++) {
		void *p = malloc(size);
		if (!p) {
			fprintf(stderr, "spread: malloc(%zu) failed\n", size);
			return 2;
		}
		at[i] = (uintptr_t)p;
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			uintptr_t d = at[i] > at[j] ? at[i] - at[j] : at[j] - at[i];
			if (d % APART == 0) {
				printf("blocks %d and %d lie %zu MiB apart\n", i, j, (size_t)(d >> 20));
				return 1;
			}
		}
	printf("%d blocks of %zu MiB: no two a multiple of 256 MiB apart\n", n, size >> 20);
	return 0;
}
