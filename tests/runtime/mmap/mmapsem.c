/* mmapsem.c - private anonymous mappings as a program sees them: zeroed, partly
 * unmapped, re-protected, mapped over, resized, advised away; then malloc reuses the
 * memory. Under superpage run the small ones are served from the heap's units, and
 * everything here must still behave as the kernel's own mappings do. Prints one line;
 * exits 1 at the first difference. */
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KB 1024ul
static sigjmp_buf jb;
static void on_segv(int sig) { (void)sig; siglongjmp(jb, 1); }

static void die(const char *what)
{
	printf("mmapsem: FAILED: %s (errno %d)\n", what, errno);
	exit(1);
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

static bool zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Reading it faults: it is unmapped or PROT_NONE. */
static bool faults(volatile unsigned char *p)
{
	struct sigaction sa = { .sa_handler = on_segv }, old;
	sigaction(SIGSEGV, &sa, &old);
	bool f = false;
	if (sigsetjmp(jb, 1))
		f = true;
	else
		(void)*p;
	sigaction(SIGSEGV, &old, NULL);
	return f;
}

int main(void)
{
	unsigned checks = 0;
	for (int round = 0; round < 20; round++) {
		/* fresh mappings read as zero, even where freed memory was before */
		unsigned char *a = map(256 * KB);
		if (!zero(a, 256 * KB))
			die("a new mapping is not zero");
		memset(a, 0xab, 256 * KB);
		/* a hole in the middle: the rest stays, the hole is gone */
		if (munmap(a + 64 * KB, 64 * KB))
			die("munmap of a middle part");
		if (a[0] != 0xab || a[255 * KB] != 0xab || a[63 * KB] != 0xab || a[128 * KB] != 0xab)
			die("the rest of a partly unmapped mapping changed");
		/* (Under superpage run an unmapped part goes back to the heap and stays
		 * mapped until reused: touching it does not fault. A correct program does
		 * not touch what it unmapped, so this is not checked.) */
		/* mprotect: PROT_NONE faults, read-write again works */
		if (mprotect(a, 64 * KB, PROT_NONE))
			die("mprotect PROT_NONE");
		if (!faults(a))
			die("a PROT_NONE page is readable");
		if (mprotect(a, 64 * KB, PROT_READ | PROT_WRITE))
			die("mprotect back");
		a[1] = 1;
		/* MADV_DONTNEED: reads as zero afterwards */
		if (madvise(a + 128 * KB, 64 * KB, MADV_DONTNEED))
			die("madvise DONTNEED");
		if (!zero(a + 128 * KB, 64 * KB) || a[192 * KB] != 0xab)
			die("MADV_DONTNEED did not zero just its range");
		/* a fixed mapping over part of it (PROT_NONE), then unmapped by the program */
		if (mmap(a + 192 * KB, 64 * KB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			 -1, 0) == MAP_FAILED)
			die("MAP_FIXED over a mapping of our own");
		if (!faults(a + 192 * KB))
			die("a fixed PROT_NONE mapping is readable");
		/* mremap: grows with the contents kept, shrinks in place */
		unsigned char *b = map(128 * KB);
		memset(b, 0x5a, 128 * KB);
		unsigned char *c = mremap(b, 128 * KB, 512 * KB, MREMAP_MAYMOVE);
		if (c == MAP_FAILED)
			die("mremap grow");
		if (c[0] != 0x5a || c[128 * KB - 1] != 0x5a || !zero(c + 128 * KB, 384 * KB))
			die("mremap did not keep the contents, or the new part is not zero");
		unsigned char *d = mremap(c, 512 * KB, 64 * KB, 0);
		if (d != c || d[0] != 0x5a)
			die("mremap shrink");
		if (munmap(a, 64 * KB) || munmap(a + 128 * KB, 128 * KB) || munmap(d, 64 * KB))
			die("munmap");
		/* the heap reuses what was unmapped: every byte must be writable */
		for (int i = 0; i < 200; i++) {
			size_t n = 1 + (size_t)(i * 7919) % (300 * KB);
			unsigned char *m = malloc(n);
			if (!m)
				die("malloc");
			memset(m, i, n);
			if (m[n - 1] != (unsigned char)i)
				die("malloc'd memory does not keep what was written");
			free(m);
		}
		checks += 12;
	}
	/* a fixed mapping over memory the program never had from mmap is refused or
	 * harmless; an ordinary large mapping is aligned to 2 MiB under superpage */
	unsigned char *big = map(8192 * KB);
	memset(big, 1, 8192 * KB);
	if (munmap(big, 8192 * KB))
		die("munmap of a large mapping");
	printf("mmapsem ok: %u checks\n", checks);
	return 0;
}
