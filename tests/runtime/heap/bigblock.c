/* bigblock.c - one block of MIB MiB, filled with a pattern and checked, held to the
 * end (test_heap.sh: under --backing 2m with a pool that holds part of it, the pool's
 * pages serve that part and THP the rest). Prints "MIB MiB block right" or exits 1. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	size_t mib = argc == 2 ? strtoul(argv[1], NULL, 10) : 0, n = mib << 20;
	if (!mib) {
		fprintf(stderr, "usage: bigblock MIB\n");
		return 2;
	}
	unsigned char *volatile p = malloc(n);
	if (!p)
		return 1;
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 13 + i / 4096);
	for (size_t i = 0; i < n; i += 511)
		if (p[i] != (unsigned char)(i * 13 + i / 4096))
			return 1;
	printf("%zu MiB block right\n", mib);
	return 0;
}
