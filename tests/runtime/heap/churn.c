/* churn.c - a program that allocates and frees one block again and again (a buffer
 * per request): each block is written at both ends, every other one is a calloc
 * checked to read as zero (memory the last block wrote, given out again), and the
 * sums are printed: the same line under every malloc.
 *
 * usage: churn [SIZE [COUNT]]  (default 256 KiB, 2000 times) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 0) : (size_t)256 << 10;
	unsigned long count = argc > 2 ? strtoul(argv[2], NULL, 0) : 2000;
	uint64_t sum = 0;
	if (size < 2) {
		fprintf(stderr, "churn: SIZE must be at least 2\n");
		return 2;
	}
	for (unsigned long i = 0; i < count; i++) {
		unsigned char *p = i % 2 ? calloc(1, size) : malloc(size);
		if (!p) {
			fprintf(stderr, "churn: allocation %lu of %zu bytes failed\n", i, size);
			return 1;
		}
		if (i % 2)
			for (size_t k = 0; k < size; k += 512)
				if (p[k] || p[size - 1]) {
					fprintf(stderr, "churn: calloc %lu does not read as zero\n", i);
					return 1;
				}
		memset(p, (int)(i & 0xff), size);
		sum += p[0] + p[size / 2] + p[size - 1];
		free(p);
	}
	printf("churn: %lu blocks of %zu bytes, sum %llu\n", count, size, (unsigned long long)sum);
	return 0;
}
