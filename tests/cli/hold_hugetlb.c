/* hold_hugetlb.c - test helper: holds 64 MiB of 2 MiB hugetlb pages until its stdin closes. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif

#define HOLD_BYTES (64ul << 20)

int main(void)
{
	char buf[256];
	char *p = mmap(NULL, HOLD_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB, -1, 0);

	if (p == MAP_FAILED) {
		puts("nomem");
		return 3;
	}
	/* Touch every base page, so the whole range is resident whatever backs it. */
	for (size_t off = 0; off < HOLD_BYTES; off += 4096)
		p[off] = (char)off | 1;
	puts("ready");
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof buf) > 0)
		;
	munmap(p, HOLD_BYTES);
	return 0;
}
