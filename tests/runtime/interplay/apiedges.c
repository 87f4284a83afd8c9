/* apiedges.c - the malloc API's edge cases, answered as the C library answers them:
 * odd and zero alignments, huge sizes, zero sizes. Prints one line per call (whether
 * it gave memory, how aligned, errno), to be compared with a plain run. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void show(const char *call, void *p, int err, size_t align_want)
{
	if (!p) {
		printf("%-34s NULL errno=%s\n", call, err ? strerrorname_np(err) : "0");
		return;
	}
	int aligned = align_want ? (uintptr_t)p % align_want == 0 : 1;
	printf("%-34s memory%s\n", call, aligned ? "" : " MISALIGNED");
}

#define TRY(call, align)                                      \
	do {                                                  \
		errno = 0;                                    \
		void *p_ = call;                              \
		show(#call, p_, p_ ? 0 : errno, align);       \
		if (p_)                                       \
			memset(p_, 0xab, 1);                  \
		free(p_);                                     \
	} while (0)

/* Sizes the compiler cannot see, so that it does not warn of what is tried on purpose. */
static volatile size_t huge = SIZE_MAX, half = SIZE_MAX / 2;

int main(void)
{
	TRY(aligned_alloc(24, 48), 32);
	TRY(aligned_alloc(0, 16), 1);
	TRY(aligned_alloc(3, 100), 4);
	TRY(aligned_alloc(4096, 10), 4096);
	TRY(aligned_alloc(1 << 21, 100), 1 << 21);
	TRY(aligned_alloc((size_t)1 << 63, 16), 1);
	TRY(memalign(24, 48), 32);
	TRY(memalign(0, 48), 1);
	TRY(memalign(1000, 5000), 1024);
	TRY(malloc(huge), 1);
	TRY(malloc(half), 1);
	TRY(calloc(half, 3), 1);
	TRY(realloc(NULL, 64), 1);
	TRY(reallocarray(NULL, half, 3), 1);
	TRY(valloc(100), 4096);
	TRY(pvalloc(100), 4096);
	for (size_t a = 0; a <= 64; a += 8) {
		void *p = (void *)1;
		int r = posix_memalign(&p, a, 100);
		printf("posix_memalign(&p, %2zu, 100)      %s%s\n", a, r ? strerrorname_np(r) : "0",
		       r && p != (void *)1 ? " (p changed)" : "");
		if (!r)
			free(p);
	}
	void *p = malloc(0);
	printf("malloc(0)                          %s\n", p ? "memory" : "NULL");
	free(p);
	p = malloc(10);
	p = realloc(p, 0);
	printf("realloc(p, 0)                      %s\n", p ? "memory" : "NULL");
	free(p);
	return 0;
}
