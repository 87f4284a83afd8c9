/* htlb_prog.c - a program of libhugetlbfs' users, built against superpage's
 * hugetlbfs.h and linked with -lhugetlbfs by tests/cli/test_htlb.sh: it asks one thing
 * of the library and prints what it got, and the page size smaps gives its memory.
 * usage: htlb_prog sizes | ghp PAGES | strict PAGES | fallback PAGES | fd */
#include <errno.h>
#include <hugetlbfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* KernelPageSize (kB) of the mapping that holds p, -1 if none is found. */
static long kernel_page_kb(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long lo, hi;
	long kb = -1;
	int in = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = (unsigned long)p >= lo && (unsigned long)p < hi;
		else if (in && sscanf(line, "KernelPageSize: %ld kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb;
}

/* Writes a pattern over len bytes and reads it back: 0 if the memory works. */
static int works(char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (char)(i >> 12);
	p[len - 1] = 'e';
	for (size_t i = 0; i < len; i += 4096)
		if (p[i] != (char)(i >> 12))
			return -1;
	return p[len - 1] == 'e' ? 0 : -1;
}

static int report(char *p, size_t len)
{
	if (!p) {
		printf("null errno=%d\n", errno);
		return 0;
	}
	if (works(p, len)) {
		printf("broken\n");
		return 1;
	}
	printf("ok kps=%ld\n", kernel_page_kb(p));
	return 0;
}

int main(int argc, char **argv)
{
	long hps = gethugepagesize();
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 1;
	const char *mode = argc > 1 ? argv[1] : "sizes";
	char *p;
	int rc;

	if (!strcmp(mode, "sizes")) {
		long s[8];
		int k = getpagesizes(s, 8);
		printf("default %ld\npagesizes", hps);
		for (int i = 0; i < k; i++)
			printf(" %ld", s[i]);
		printf("\npath %s\n", hugetlbfs_find_path() ? hugetlbfs_find_path() : "none");
		return 0;
	}
	if (hps <= 0) {
		printf("no huge pages errno=%d\n", errno);
		return 0;
	}
	if (!strcmp(mode, "ghp") || !strcmp(mode, "strict")) {
		p = get_huge_pages(n * (size_t)hps, GHP_DEFAULT);
		rc = report(p, n * (size_t)hps);
		if (p)
			free_huge_pages(p);
		return rc;
	}
	if (!strcmp(mode, "fallback")) {
		size_t len = n * (size_t)hps + 100;
		p = get_hugepage_region(len, GHR_FALLBACK | GHR_COLOR);
		rc = report(p, len);
		if (p)
			free_hugepage_region(p);
		return rc;
	}
	if (!strcmp(mode, "fd")) {
		int fd = hugetlbfs_unlinked_fd();
		if (fd < 0) {
			printf("null errno=%d\n", errno);
			return 0;
		}
		p = mmap(NULL, (size_t)hps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		rc = report(p == MAP_FAILED ? NULL : p, (size_t)hps);
		close(fd);
		return rc;
	}
	fprintf(stderr, "usage: htlb_prog sizes | ghp PAGES | strict PAGES | fallback PAGES | fd\n");
	return 2;
}
