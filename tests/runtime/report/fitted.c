/* fitted.c - blocks of 4-64 KiB (the fitted sizes), every other one freed: the free
 * places stay inside their chunks, on units with no free page, when the account is
 * written at exit.
 *
 * usage: fitted [BLOCKS]   (default 4000) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "xorshift.h"

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 4000;
	void **b = calloc(n, sizeof *b);
	uint64_t x = 88172645463325252ull;
	if (!b)
		return 1;
	for (size_t i = 0; i < n; i++) {
		xorshift64(&x);
		size_t size = 4097 + x % (65536 - 4097);
		if (!(b[i] = malloc(size)))
			return 1;
		memset(b[i], (int)i, size);
	}
	for (size_t i = 0; i < n; i += 2)
		free(b[i]);
	printf("fitted: %zu blocks, %zu freed\n", n, (n + 1) / 2);
	return 0;
}
