/* bigmap.c - large private anonymous mappings as a program sees them: zeroed, partly
 * unmapped, re-protected, advised, mapped over, resized, moved and forked. Under
 * superpage run --backing 2m they are on hugetlb pages, which the kernel cannot
 * split, and every result must still be the kernel's for plain anonymous memory.
 * Prints the same lines either way (no addresses); exits 1 at the first difference.
 * Usage: bigmap            the semantics
 *        bigmap --huge N   map N MiB, write it, say on stderr "map_hugetlb_kb=H
 *                          map_thp_kb=T map_kb=K" (from /proc/self/smaps)
 *        bigmap --fork N   map N MiB, write it, say its hugetlb kB as above, then fork:
 *                          the child and the parent each write their own data
 *        bigmap --threads  4 threads map, write, check, resize, re-protect, advise
 *                          and unmap mappings of their own while the main thread
 *                          forks 30 times: every mapping keeps its data */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <pthread.h>
#include <unistd.h>

#include "smaps_kb.h"
#include "xorshift.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

#define KB 1024ul
#define MB (1024ul * KB)
#define PAGE 4096ul

static unsigned checks;

static void die(const char *what)
{
	printf("bigmap: FAILED: %s (errno %d)\n", what, errno);
	exit(1);
}

static void check(bool ok, const char *what)
{
	if (!ok)
		die(what);
	checks++;
}

static unsigned char *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/* The byte at offset off of a buffer in the pass salt. */
static unsigned char pat(size_t off, unsigned salt)
{
	uint64_t x = ((uint64_t)off + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)salt << 40);
	return (unsigned char)(x >> 56 ^ x >> 17 ^ x);
}

static void fill(unsigned char *p, size_t from, size_t to, unsigned salt)
{
	for (size_t off = from; off < to; off++)
		p[off] = pat(off, salt);
}

static bool holds(const unsigned char *p, size_t from, size_t to, unsigned salt)
{
	for (size_t off = from; off < to; off++)
		if (p[off] != pat(off, salt))
			return false;
	return true;
}

static bool zero(const unsigned char *p, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (p[k])
			return false;
	return true;
}

/* ---------- faults ---------- */

static sigjmp_buf jb;
static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* Reading (or writing, with write) the byte faults. (Never inlined: each call has a
 * sigsetjmp of its own to come back to.) */
static __attribute__((noinline)) bool faults(volatile unsigned char *p, bool write)
{
	struct sigaction sa, old;
	volatile bool f = false;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(jb, 1))
		f = true;
	else if (write)
		*p = *p;
	else
		(void)*p;
	sigaction(SIGSEGV, &old, NULL);
	return f;
}

/* ---------- smaps ---------- */

static void say_huge(const unsigned char *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p, hi = lo + len;
	fprintf(stderr, "map_hugetlb_kb=%ld map_thp_kb=%ld map_kb=%lu\n",
		smaps_kb(lo, hi, "Private_Hugetlb:") + smaps_kb(lo, hi, "Shared_Hugetlb:"),
		smaps_kb(lo, hi, "AnonHugePages:"), (unsigned long)(len / KB));
}

/* ---------- the semantics ---------- */

#define L (8 * MB + 12 * KB) /* five 2 MiB pages, the last one in part */

/* A hole of 1 MiB + 8 KiB that starts and ends inside 2 MiB pages. The checks that
 * reach into the hole (advise, fixed_over) come before malloc_beside: after it the
 * hole may hold the allocator's memory, glibc's or the runtime's, which nothing the
 * program does may touch. */
static void partial_munmap(unsigned char *p)
{
	check(munmap(p + 3 * MB + 4 * KB, MB + 8 * KB) == 0, "munmap of a middle part");
	check(holds(p, 0, 3 * MB + 4 * KB, 1) && holds(p, 4 * MB + 12 * KB, L, 1),
	      "the rest of a partly unmapped mapping changed");
	printf("munmap: a hole of 1 MiB + 8 KiB, the rest kept\n");
}

/* The heap (malloc) must not hand out what the program still has of a mapping with
 * a hole (and, since fixed_over, 8 KiB of PROT_NONE). */
static void malloc_beside(unsigned char *p)
{
	for (unsigned i = 0; i < 300; i++) {
		size_t n = 1 + (size_t)(i * 7919u) % (3 * MB);
		unsigned char *m = malloc(n);
		if (!m)
			die("malloc");
		memset(m, (int)i, n);
		free(m);
	}
	check(holds(p, 0, 3 * MB + 4 * KB, 1) && holds(p, 4 * MB + 12 * KB, 7 * MB + 4 * KB, 1) &&
	      holds(p, 7 * MB + 12 * KB, L, 1),
	      "malloc'd memory overlapped what the program still has mapped");
	printf("malloc: beside a mapping with a hole, what it has kept\n");
}

static void partial_mprotect(unsigned char *p)
{
	unsigned char *q = p + 5 * MB + 4 * KB;
	check(mprotect(q, 8 * KB, PROT_READ) == 0, "mprotect PROT_READ of two pages");
	check(faults(q, true) && faults(q + 8 * KB - 1, true), "a read-only page can be written");
	check(!faults(q, false) && holds(p, 5 * MB + 4 * KB, 5 * MB + 12 * KB, 1),
	      "a read-only page cannot be read, or changed");
	check(!faults(q - 1, true) && !faults(q + 8 * KB, true), "its neighbours became read-only");
	check(mprotect(q, 8 * KB, PROT_READ | PROT_WRITE) == 0, "mprotect back to read-write");
	check(!faults(q, true), "a page made read-write again cannot be written");
	q = p + 6 * MB;
	check(mprotect(q, 4 * KB, PROT_NONE) == 0 && faults(q, false), "a PROT_NONE page is readable");
	check(mprotect(q, 4 * KB, PROT_READ | PROT_WRITE) == 0 && !faults(q, true),
	      "mprotect of a PROT_NONE page back");
	check(holds(p, 0, 3 * MB + 4 * KB, 1) && holds(p, 4 * MB + 12 * KB, L, 1),
	      "mprotect changed the contents");
	errno = 0;
	check(mprotect(p + 1, 4 * KB, PROT_READ) == -1 && errno == EINVAL,
	      "mprotect of an unaligned address is not EINVAL");
	printf("mprotect: read-only and PROT_NONE pages inside a 2 MiB page, and back\n");
}

static void advise(unsigned char *p)
{
	check(madvise(p + 12 * KB, 20 * KB, MADV_DONTNEED) == 0, "madvise DONTNEED");
	check(zero(p + 12 * KB, 20 * KB) && holds(p, 0, 12 * KB, 1) &&
	      holds(p, 32 * KB, 3 * MB + 4 * KB, 1), "MADV_DONTNEED did not zero just its range");
	fill(p, 12 * KB, 32 * KB, 1);
	check(madvise(p + 2 * MB + 4 * KB, 8 * KB, MADV_FREE) == 0, "madvise FREE");
	for (size_t pg = 0; pg < 2; pg++) {
		size_t off = 2 * MB + 4 * KB + pg * PAGE;
		check(holds(p, off, off + PAGE, 1) || zero(p + off, PAGE),
		      "a page after MADV_FREE is neither what it was nor zero");
	}
	fill(p, 2 * MB + 4 * KB, 2 * MB + 12 * KB, 1);
	check(madvise(p, 3 * MB, MADV_HUGEPAGE) == 0 &&
	      madvise(p + 4 * KB, 8 * KB, MADV_NOHUGEPAGE) == 0 &&
	      madvise(p + 4 * KB, 8 * KB, MADV_WILLNEED) == 0 &&
	      madvise(p + 8 * KB, 4 * KB, MADV_RANDOM) == 0 && madvise(p, 3 * MB, MADV_NORMAL) == 0,
	      "a hint was refused");
	errno = 0;
	check(madvise(p, 4 * KB, 12345) == -1 && errno == EINVAL, "an unknown advice is not EINVAL");
	/* Over the hole: what is mapped is advised, and the answer is ENOMEM. */
	errno = 0;
	check(madvise(p + 3 * MB, 2 * MB, MADV_DONTNEED) == -1 && errno == ENOMEM,
	      "madvise over an unmapped part is not ENOMEM");
	check(holds(p, 0, 3 * MB, 1) && zero(p + 3 * MB, 4 * KB) &&
	      zero(p + 4 * MB + 12 * KB, MB - 12 * KB) && holds(p, 5 * MB, L, 1),
	      "madvise over an unmapped part did not zero the mapped part");
	fill(p, 3 * MB, 3 * MB + 4 * KB, 1);
	fill(p, 4 * MB + 12 * KB, 5 * MB, 1);
	errno = 0;
	check(madvise(p, L, MADV_NORMAL) == -1 && errno == ENOMEM,
	      "a hint over an unmapped part is not ENOMEM");
	check(holds(p, 0, 3 * MB + 4 * KB, 1) && holds(p, 4 * MB + 12 * KB, L, 1),
	      "the hints changed the contents");
	printf("madvise: DONTNEED zeroes, FREE keeps or zeroes, hints change nothing\n");
}

static void fixed_over(unsigned char *p)
{
	unsigned char *q = p + 7 * MB + 4 * KB;
	check(mmap(q, 8 * KB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == q,
	      "MAP_FIXED PROT_NONE over part of a mapping");
	check(faults(q, false) && faults(q + 8 * KB - 1, false), "a fixed PROT_NONE mapping is readable");
	check(holds(p, 7 * MB, 7 * MB + 4 * KB, 1) && holds(p, 7 * MB + 12 * KB, L, 1),
	      "MAP_FIXED changed its neighbours");
	q = p + 4 * MB + 20 * KB;
	check(mmap(q, 4 * KB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == q,
	      "MAP_FIXED read-write over part of a mapping");
	check(zero(q, 4 * KB), "a fixed anonymous mapping is not zero");
	memset(q, 0x77, 4 * KB);
	check(holds(p, 4 * MB + 12 * KB, 4 * MB + 20 * KB, 1) &&
	      holds(p, 4 * MB + 24 * KB, 7 * MB + 4 * KB, 1), "MAP_FIXED changed its neighbours");
	fill(p, 4 * MB + 20 * KB, 4 * MB + 24 * KB, 1);
	/* Into the hole partial_munmap left (the program's own address space again). */
	q = p + 3 * MB + 8 * KB;
	check(mmap(q, 64 * KB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		   0) == q, "MAP_FIXED into a hole the program unmapped");
	check(zero(q, 64 * KB), "a fixed mapping in a hole is not zero");
	memset(q, 0x55, 64 * KB);
	check(holds(p, 0, 3 * MB + 4 * KB, 1) && holds(p, 4 * MB + 12 * KB, 7 * MB + 4 * KB, 1) &&
	      holds(p, 7 * MB + 12 * KB, L, 1), "a fixed mapping in a hole changed the rest");
	check(munmap(q, 64 * KB) == 0, "munmap of a fixed mapping in a hole");
	/* And into a whole 2 MiB the program unmapped from another mapping. */
	unsigned char *m = map(6 * MB);
	fill(m, 0, 6 * MB, 5);
	check(munmap(m + 2 * MB, 2 * MB) == 0, "munmap of 2 MiB in the middle");
	check(mmap(m + 2 * MB, 2 * MB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == m + 2 * MB,
	      "MAP_FIXED into 2 MiB the program unmapped");
	check(zero(m + 2 * MB, 2 * MB) && holds(m, 0, 2 * MB, 5) && holds(m, 4 * MB, 6 * MB, 5),
	      "a fixed mapping in an unmapped 2 MiB is not zero, or changed the rest");
	fill(m, 2 * MB, 4 * MB, 5);
	check(holds(m, 0, 6 * MB, 5) && munmap(m, 6 * MB) == 0, "munmap after MAP_FIXED in a hole");
	printf("MAP_FIXED: over pages inside a 2 MiB page, and into holes, the rest kept\n");
}

static void remaps(void)
{
	unsigned char *q = map(3 * MB + 4 * KB), *r, *s, *t, *u, *v, *w, *x;
	fill(q, 0, 3 * MB + 4 * KB, 2);
	r = mremap(q, 3 * MB + 4 * KB, 7 * MB, MREMAP_MAYMOVE);
	check(r != MAP_FAILED, "mremap grow");
	check(holds(r, 0, 3 * MB + 4 * KB, 2) && zero(r + 3 * MB + 4 * KB, 7 * MB - 3 * MB - 4 * KB),
	      "mremap grow did not keep the contents, or the new part is not zero");
	s = mremap(r, 7 * MB, 2 * MB + 4 * KB, 0);
	check(s == r && holds(s, 0, 2 * MB + 4 * KB, 2), "mremap shrink in place");
	/* Grown in place (or refused with ENOMEM: the kernel's two answers). */
	x = mremap(s, 2 * MB + 4 * KB, 2 * MB + 64 * KB, 0);
	if (x != MAP_FAILED) {
		check(x == s && holds(x, 0, 2 * MB + 4 * KB, 2) && zero(x + 2 * MB + 4 * KB, 60 * KB),
		      "mremap grown in place lost the contents or is not zero");
		memset(x + 2 * MB + 4 * KB, 0x33, 60 * KB);
		if (mremap(x, 2 * MB + 64 * KB, 2 * MB + 4 * KB, 0) != x)
			die("mremap shrink back");
	} else {
		check(errno == ENOMEM, "mremap without MREMAP_MAYMOVE failed with another error");
	}
	t = map(4 * MB);
	fill(t, 0, 4 * MB, 3);
	u = mremap(s, 2 * MB + 4 * KB, 2 * MB + 4 * KB, MREMAP_MAYMOVE | MREMAP_FIXED, t + MB);
	check(u == t + MB && holds(u, 0, 2 * MB + 4 * KB, 2), "mremap MREMAP_FIXED into a mapping");
	check(holds(t, 0, MB, 3) && holds(t, 3 * MB + 4 * KB, 4 * MB, 3),
	      "mremap MREMAP_FIXED changed the target's neighbours");
	errno = 0;
	check(mremap(t, 8 * KB, 8 * KB, MREMAP_MAYMOVE | MREMAP_FIXED, t + 4 * KB) == MAP_FAILED &&
	      errno == EINVAL, "mremap onto an overlapping range is not EINVAL");
	v = map(2 * MB + 8 * KB);
	fill(v, 0, 2 * MB + 8 * KB, 4);
	errno = 0;
	check(mremap(v, 4 * KB, 8 * KB, MREMAP_MAYMOVE | MREMAP_DONTUNMAP) == MAP_FAILED &&
	      errno == EINVAL, "mremap MREMAP_DONTUNMAP of another length is not EINVAL");
	/* (glibc 2.36's mremap refuses the flag itself, with EINVAL; superpage's takes it,
	 * as the kernel does.) */
	w = mremap(v, 2 * MB + 8 * KB, 2 * MB + 8 * KB, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
	if (w == MAP_FAILED) {
		check(errno == EINVAL, "mremap MREMAP_DONTUNMAP failed, not with EINVAL");
		w = map(2 * MB + 8 * KB);
	} else {
		/* (One check either way: the count printed is the same.) */
		check(w != v && holds(w, 0, 2 * MB + 8 * KB, 4) && !faults(v, true) &&
		      zero(v + 1, 2 * MB + 8 * KB - 1),
		      "mremap MREMAP_DONTUNMAP did not move the contents, or the old range is "
		      "not mapped, or not zero");
	}
	check(munmap(t, 4 * MB) == 0 && munmap(v, 2 * MB + 8 * KB) == 0 &&
	      munmap(w, 2 * MB + 8 * KB) == 0, "munmap after mremap");
	printf("mremap: grown, shrunk, moved onto a mapping, DONTUNMAP, the errors\n");
}

/* The child sees the parent's data and writes its own; the parent, at the same time,
 * writes its own: each keeps what it wrote (hugetlb pages are copied on write). */
static void forked(unsigned char *p, size_t len, unsigned salt)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int bad = !holds(p, 0, len, salt);
		fill(p, 0, len, salt + 100);
		bad |= !holds(p, 0, len, salt + 100) << 1;
		_exit(bad);
	}
	fill(p, 0, len, salt + 200);
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("bigmap: FAILED: the child found its data wrong (status %#x)\n", status);
		exit(1);
	}
	check(holds(p, 0, len, salt + 200), "the child's writes reached the parent");
}

/* MADV_DONTFORK: the child has no such pages; MADV_WIPEONFORK: they are zero in it. */
static void fork_advice(void)
{
	unsigned char *p = map(6 * MB);
	fill(p, 0, 6 * MB, 6);
	check(madvise(p + 4 * KB, 4 * KB, MADV_DONTFORK) == 0, "madvise DONTFORK");
	check(madvise(p + 2 * MB + 8 * KB, 8 * KB, MADV_WIPEONFORK) == 0, "madvise WIPEONFORK");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int bad = !faults(p + 4 * KB, false);
		bad |= !zero(p + 2 * MB + 8 * KB, 8 * KB) << 1;
		bad |= !(holds(p, 0, 4 * KB, 6) && holds(p, 8 * KB, 2 * MB + 8 * KB, 6) &&
			 holds(p, 2 * MB + 16 * KB, 6 * MB, 6)) << 2;
		_exit(bad);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("bigmap: FAILED: DONTFORK/WIPEONFORK not as the kernel's (child status %#x)\n",
		       status);
		exit(1);
	}
	check(holds(p, 0, 6 * MB, 6), "fork advice changed the parent's data");
	check(munmap(p, 6 * MB) == 0, "munmap");
	printf("fork: MADV_DONTFORK pages absent and MADV_WIPEONFORK pages zero in the child\n");
}

static int semantics(void)
{
	unsigned char *p = map(L);
	check(zero(p, L), "a new mapping is not zero");
	fill(p, 0, L, 1);
	printf("map: %lu KiB, zero, written\n", (unsigned long)(L / KB));
	partial_munmap(p);
	partial_mprotect(p);
	advise(p);
	fixed_over(p);
	malloc_beside(p);
	forked(p, 3 * MB + 4 * KB, 1);
	fill(p, 0, 3 * MB + 4 * KB, 1);
	printf("fork: the child and the parent each wrote their own copy\n");
	check(munmap(p, 3 * MB + 4 * KB) == 0 && munmap(p + 4 * MB + 12 * KB, L - 4 * MB - 12 * KB) == 0,
	      "munmap of the whole mapping, around its hole");
	remaps();
	fork_advice();
	printf("bigmap: %u checks\n", checks);
	return 0;
}

/* ---------- threads and forks ---------- */

#define NTHREADS 4
#define NMAPS 6
static volatile int stop_threads;

static uint64_t next(uint64_t *s)
{
	return xorshift64(s);
}

/* A word at each end of each page: cheap to write and check over many MiB. */
static void mark(unsigned char *p, size_t pages, uint64_t tag)
{
	for (size_t i = 0; i < pages; i++) {
		uint64_t *w = (uint64_t *)(void *)(p + i * PAGE);
		w[0] = tag + i;
		w[PAGE / 8 - 1] = ~(tag + i);
	}
}

static bool marked(const unsigned char *p, size_t pages, uint64_t tag)
{
	for (size_t i = 0; i < pages; i++) {
		const uint64_t *w = (const uint64_t *)(const void *)(p + i * PAGE);
		if (w[0] != tag + i || w[PAGE / 8 - 1] != ~(tag + i))
			return false;
	}
	return true;
}

static void *thread_main(void *arg)
{
	uint64_t s = 0x9E3779B97F4A7C15ull * ((uintptr_t)arg + 1), tag[NMAPS] = { 0 };
	unsigned char *p[NMAPS] = { 0 };
	size_t np[NMAPS] = { 0 };
	while (!stop_threads) {
		int k = (int)(next(&s) % NMAPS);
		if (!p[k]) {
			np[k] = 512 + next(&s) % 4096;
			p[k] = map(np[k] * PAGE);
			mark(p[k], np[k], tag[k] = next(&s));
			continue;
		}
		if (!marked(p[k], np[k], tag[k]))
			die("a thread's mapping lost its data");
		size_t i = next(&s) % np[k], grown;
		switch (next(&s) % 4) {
		case 0:
			if (munmap(p[k], np[k] * PAGE))
				die("munmap");
			p[k] = NULL;
			break;
		case 1:
			grown = np[k] + 1 + next(&s) % 1024;
			p[k] = mremap(p[k], np[k] * PAGE, grown * PAGE, MREMAP_MAYMOVE);
			if (p[k] == MAP_FAILED)
				die("mremap");
			mark(p[k], np[k] = grown, tag[k]);
			break;
		case 2:
			if (mprotect(p[k] + i * PAGE, PAGE, PROT_READ) || !marked(p[k], np[k], tag[k]) ||
			    mprotect(p[k] + i * PAGE, PAGE, PROT_READ | PROT_WRITE))
				die("mprotect of a page, or its data after it");
			break;
		default:
			if (madvise(p[k] + i * PAGE, PAGE, MADV_DONTNEED) || !zero(p[k] + i * PAGE, PAGE))
				die("MADV_DONTNEED of a page");
			mark(p[k] + i * PAGE, 1, tag[k] + i);
		}
	}
	for (int k = 0; k < NMAPS; k++)
		if (p[k] && (!marked(p[k], np[k], tag[k]) || munmap(p[k], np[k] * PAGE)))
			die("a thread's mapping lost its data");
	return NULL;
}

static int threads(void)
{
	pthread_t th[NTHREADS];
	for (uintptr_t t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, thread_main, (void *)t))
			die("pthread_create");
	for (int f = 0; f < 30; f++) {
		usleep(100000);
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0)
			_exit(0);
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			die("a child did not exit");
	}
	stop_threads = 1;
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	printf("threads: %d threads, 30 forks, every mapping kept its data\n", NTHREADS);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 1)
		return semantics();
	if (argc == 2 && !strcmp(argv[1], "--threads"))
		return threads();
	if (argc == 3 && (!strcmp(argv[1], "--huge") || !strcmp(argv[1], "--fork"))) {
		size_t len = (size_t)strtoul(argv[2], NULL, 10) * MB;
		unsigned char *p = map(len);
		fill(p, 0, len, 9);
		say_huge(p, len);
		if (!strcmp(argv[1], "--fork")) {
			forked(p, len, 9);
			printf("fork: the child and the parent each wrote their own copy of %s MiB\n",
			       argv[2]);
		} else {
			check(holds(p, 0, len, 9), "the mapping lost what was written");
			printf("huge: %s MiB written and read back\n", argv[2]);
		}
		return 0;
	}
	fprintf(stderr, "usage: bigmap [--huge MIB | --fork MIB | --threads]\n");
	return 2;
}
