/* packres.c - a heap kept as V8 keeps its pages: each page of 256 KiB reserved on its
 * own with mmap(hint, 2 x 256 KiB - 4 KiB, PROT_NONE), marked MADV_DONTFORK, trimmed
 * to a 256 KiB-aligned part with munmap, made read-write with mprotect and written;
 * then pages freed and reserved again, one moved and one shrunk with mremap, one
 * mapped back with MAP_FIXED_NOREPLACE where it was unmapped, and a child forked.
 * Every byte is read back and what the program sees (contents, zeros of new pages,
 * faults on what it reserved, the answers of the calls) is printed on stdout, the same
 * lines with or without superpage (no addresses); it exits 1 at the first difference
 * from what the kernel promises. Then 32 arenas of 1 MiB read-write, as another
 * allocator maps them, half unmapped and mapped again. Then 2048 heap pages of
 * 16 KiB as Ruby keeps its own: each mapped read-write 32 KiB and trimmed to the
 * first 16 KiB-aligned part above its start, written, a third freed and taken again.
 * On stderr, from /proc/self/smaps: pages_thp_kb=K, the AnonHugePages kB of the
 * 32 MiB of pages committed, late_thp_kb=L, of 16 MiB of pages committed before
 * them, every other one first, then the rest, arenas_thp_kb=A, of the 32 MiB of arenas once written,
 * rpages_thp_kb=R, of the 32 MiB of Ruby's pages, rpages_rss_kb=S, resident from
 * the lowest of them to the end of the highest (-1: not all of it mapped), and
 * sparse_rss_kb=F, the same once all but one in sixteen are freed (2 MiB kept). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECKS_PROG "packres"
#include "checks.h"
#include "smaps_kb.h"

#define PAGE_KB 256ul
#define HEAP_PAGE (PAGE_KB << 10)
#define NPAGES 128 /* 32 MiB */
#define RW (PROT_READ | PROT_WRITE)

static unsigned char *pages[NPAGES];

#define RPAGE (16ul << 10)
#define NRPAGES 2048 /* 32 MiB */
static unsigned char *rpages[NRPAGES];

/* One heap page as V8's OS::Allocate reserves it: over-reserved at a hint, aligned by
 * unmapping what lies outside. */
static unsigned char *reserve_page(unsigned i)
{
	size_t request = 2 * HEAP_PAGE - 4096;
	void *hint = (void *)(uintptr_t)(((uintptr_t)0x100000000ul + (uintptr_t)i * 0x3f7c0000ul) &
					 ~(uintptr_t)0xfff);
	unsigned char *m = mmap(hint, request, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	check(m != MAP_FAILED, "reserve a page");
	check(madvise(m, request, MADV_DONTFORK) == 0, "MADV_DONTFORK the reservation");
	uintptr_t a = (uintptr_t)m, al = (a + HEAP_PAGE - 1) & ~(HEAP_PAGE - 1);
	if (al > a)
		check(munmap(m, al - a) == 0, "unmap the head");
	if (al + HEAP_PAGE < a + request)
		check(munmap((void *)(al + HEAP_PAGE), a + request - al - HEAP_PAGE) == 0,
		      "unmap the tail");
	unsigned char *p = (unsigned char *)al;
	check(read_faults(p), "a reserved page faults before it is committed");
	return p;
}

/* A reserved page committed and written with its own pattern. */
static unsigned char *commit_page(unsigned char *p, unsigned i)
{
	check(mprotect(p, HEAP_PAGE, RW) == 0, "commit a page");
	for (size_t k = 0; k < HEAP_PAGE; k += 4096)
		check(p[k] == 0 && p[k + 4095] == 0, "a new page reads as zero");
	memset(p, (int)(i & 0xff) | 1, HEAP_PAGE);
	return p;
}

static unsigned char *new_page(unsigned i)
{
	return commit_page(reserve_page(i), i);
}

static int by_address(const void *x, const void *y)
{
	uintptr_t a = (uintptr_t)*(unsigned char *const *)x, b = (uintptr_t)*(unsigned char *const *)y;
	return a < b ? -1 : a > b;
}

/* The kB of field ("AnonHugePages:") of n mappings of size bytes each, over runs of
 * adjacent ones (smaps counts a kernel mapping that holds several once). */
static long span_kb(unsigned char *const *v, unsigned n, size_t size, const char *field)
{
	static unsigned char *sorted[NRPAGES];
	long kb = 0;
	memcpy(sorted, v, n * sizeof sorted[0]);
	qsort(sorted, n, sizeof sorted[0], by_address);
	for (unsigned i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && sorted[j] == sorted[j - 1] + size; j++)
			;
		kb += smaps_kb((uintptr_t)sorted[i], (uintptr_t)sorted[j - 1] + size, field);
	}
	return kb;
}

/* One of Ruby's heap pages (gc.c, 3.1): mapped read-write twice its size, the part
 * from the first aligned address above the start kept, the rest unmapped. */
static unsigned char *new_rpage(unsigned i)
{
	unsigned char *m = mmap(NULL, 2 * RPAGE, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	check(m != MAP_FAILED, "map a Ruby page");
	uintptr_t a = (uintptr_t)m, al = (a + RPAGE) & ~(RPAGE - 1);
	check(munmap(m, al - a) == 0, "unmap a Ruby page's head");
	check(al + RPAGE == a + 2 * RPAGE || munmap((void *)(al + RPAGE), a + RPAGE - al) == 0,
	      "unmap a Ruby page's tail");
	unsigned char *p = (unsigned char *)al;
	for (size_t k = 0; k < RPAGE; k += 4096)
		check(p[k] == 0 && p[k + 4095] == 0, "a new Ruby page reads as zero");
	memset(p, (int)((i * 7) & 0xff) | 1, RPAGE);
	return p;
}

/* The kB resident (mincore) from the lowest of Ruby's pages (every step-th) to the end
 * of the highest: their memory and that of any hole between them. -1 if part of it is
 * not mapped. */
static long rpages_hull_kb(unsigned step)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (unsigned i = 0; i < NRPAGES; i += step) {
		uintptr_t a = (uintptr_t)rpages[i];
		lo = a < lo ? a : lo;
		hi = a + RPAGE > hi ? a + RPAGE : hi;
	}
	size_t n = (hi - lo) / 4096;
	unsigned char *v = malloc(n);
	long kb = -1;
	if (v && mincore((void *)lo, hi - lo, v) == 0) {
		kb = 0;
		for (size_t i = 0; i < n; i++)
			kb += (v[i] & 1) * 4;
	}
	free(v);
	return kb;
}

static bool rpage_intact(unsigned i)
{
	unsigned char want = (unsigned char)(((i * 7) & 0xff) | 1);
	for (size_t k = 0; k < RPAGE; k++)
		if (rpages[i][k] != want)
			return false;
	return true;
}

static bool intact(unsigned i)
{
	unsigned char want = (unsigned char)((i & 0xff) | 1);
	for (size_t k = 0; k < HEAP_PAGE; k++)
		if (pages[i][k] != want)
			return false;
	return true;
}

int main(void)
{
	catch_faults();

	/* First, pages committed out of order: every other one written while its
	 * neighbours are still reserved, then the rest (the kernel's mappings of the
	 * first ones are each touched on their own before the rest joins them). Read
	 * before anything else is mapped beside them. */
	enum { NLATE = 64 }; /* 16 MiB */
	static unsigned char *late[NLATE];
	unsigned base = NPAGES; /* (patterns of their own) */
	for (unsigned i = 0; i < NLATE; i++)
		late[i] = reserve_page(base + i);
	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = k; i < NLATE; i += 2)
			commit_page(late[i], base + i);
	long lkb = span_kb(late, NLATE, HEAP_PAGE, "AnonHugePages:");
	for (unsigned i = 0; i < NLATE; i++)
		check(late[i][0] == (((base + i) & 0xff) | 1) &&
		      late[i][HEAP_PAGE - 1] == (((base + i) & 0xff) | 1),
		      "a page committed out of order keeps what was written");
	for (unsigned i = 0; i < NLATE; i++)
		check(munmap(late[i], HEAP_PAGE) == 0, "free a page committed out of order");
	printf("%u pages committed out of order, intact, freed\n", NLATE);

	for (unsigned i = 0; i < NPAGES; i++)
		pages[i] = new_page(i);
	long kb = span_kb(pages, NPAGES, HEAP_PAGE, "AnonHugePages:");
	for (unsigned i = 0; i < NPAGES; i++)
		check(intact(i), "every page keeps what was written");
	printf("%u pages of %lu KiB committed and intact\n", NPAGES, PAGE_KB);

	/* A collection: every third page freed, and as many taken again. */
	for (unsigned i = 0; i < NPAGES; i += 3)
		check(munmap(pages[i], HEAP_PAGE) == 0, "free a page");
	for (unsigned i = 1; i < NPAGES; i += 3)
		check(intact(i), "pages left keep their contents after others are freed");
	for (unsigned i = 0; i < NPAGES; i += 3) {
		pages[i] = new_page(i);
		check(intact(i), "a page taken again holds what was written");
	}
	printf("a third freed and taken again: new pages read zero first, others intact\n");

	/* mremap: one page shrunk in place, one moved (grown). */
	unsigned char *s = mremap(pages[1], HEAP_PAGE, HEAP_PAGE / 2, 0);
	check(s == pages[1], "shrink a page in place");
	check(s[0] == ((1 & 0xff) | 1) && s[HEAP_PAGE / 2 - 1] == ((1 & 0xff) | 1),
	      "a shrunk page keeps its first half");
	unsigned char *g = mremap(pages[2], HEAP_PAGE, 2 * HEAP_PAGE, MREMAP_MAYMOVE);
	check(g != MAP_FAILED, "grow a page, moving it");
	check(g[0] == 3 && g[HEAP_PAGE - 1] == 3 && g[HEAP_PAGE] == 0,
	      "a grown page keeps its contents, and its new part reads zero");
	check(munmap(g, 2 * HEAP_PAGE) == 0 && munmap(s, HEAP_PAGE / 2) == 0,
	      "unmap the moved and the shrunk page");
	printf("mremap: shrunk in place, grown by a move, contents kept\n");

	/* MAP_FIXED_NOREPLACE where the program unmapped a page: the place is free. */
	unsigned char *at = pages[4];
	check(munmap(at, HEAP_PAGE) == 0, "unmap a page");
	unsigned char *back = mmap(at, HEAP_PAGE, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
				   -1, 0);
	check(back == at, "MAP_FIXED_NOREPLACE where a page was unmapped");
	check(back[0] == 0 && back[HEAP_PAGE - 1] == 0, "it reads as zero");
	back[0] = 9;
	/* ... and not over a page the program still has. */
	errno = 0;
	void *over = mmap(pages[5], HEAP_PAGE, RW,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	check(over == MAP_FAILED && errno == EEXIST, "MAP_FIXED_NOREPLACE over a live page: EEXIST");
	printf("MAP_FIXED_NOREPLACE: mapped where unmapped, EEXIST over a live page\n");

	/* A child: the pages are MADV_DONTFORK (a hole in the child), the rest is shared;
	 * and the same in the child's child. */
	pid_t pid = fork();
	check(pid >= 0, "fork");
	if (pid == 0) {
		bool absent = read_faults(pages[7]) && back[0] == 9;
		pid_t grandchild = fork();
		if (grandchild == 0)
			_exit(read_faults(pages[7]) && back[0] == 9 ? 0 : 3);
		int gst;
		bool gone = grandchild > 0 && waitpid(grandchild, &gst, 0) == grandchild &&
			    WIFEXITED(gst) && WEXITSTATUS(gst) == 0;
		_exit(absent && gone ? 0 : 3);
	}
	int st;
	check(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "the child ends");
	printf("child: DONTFORK pages %s\n", WEXITSTATUS(st) == 0 ? "absent" : "present");
	check(intact(7), "a page is intact after fork");


	/* Arenas as another allocator maps them (CPython's: 1 MiB read-write), half
	 * unmapped and mapped again. */
	enum { NARENA = 32, ARENA = 1 << 20 };
	static unsigned char *arena[NARENA];
	for (unsigned i = 0; i < NARENA; i++) {
		arena[i] = mmap(NULL, ARENA, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		check(arena[i] != MAP_FAILED, "map an arena");
		check(arena[i][0] == 0 && arena[i][ARENA - 1] == 0, "a new arena reads as zero");
		memset(arena[i], (int)i + 1, ARENA);
	}
	long akb = span_kb(arena, NARENA, ARENA, "AnonHugePages:");
	for (unsigned i = 0; i < NARENA; i += 2)
		check(munmap(arena[i], ARENA) == 0, "unmap an arena");
	for (unsigned i = 0; i < NARENA; i += 2) {
		arena[i] = mmap(NULL, ARENA, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		check(arena[i] != MAP_FAILED && arena[i][0] == 0 && arena[i][ARENA / 2] == 0,
		      "an arena mapped again reads as zero");
		memset(arena[i], (int)i + 1, ARENA);
	}
	for (unsigned i = 0; i < NARENA; i++)
		for (size_t k = 0; k < ARENA; k += 4096)
			check(arena[i][k] == (unsigned char)(i + 1), "every arena keeps what was written");
	printf("%u arenas of 1 MiB: written, half mapped again, intact\n", NARENA);

	for (unsigned i = 0; i < NRPAGES; i++)
		rpages[i] = new_rpage(i);
	long rkb = span_kb(rpages, NRPAGES, RPAGE, "AnonHugePages:");
	long rss = rpages_hull_kb(1);
	for (unsigned i = 0; i < NRPAGES; i += 3)
		check(munmap(rpages[i], RPAGE) == 0, "free a Ruby page");
	for (unsigned i = 0; i < NRPAGES; i += 3)
		rpages[i] = new_rpage(i);
	for (unsigned i = 0; i < NRPAGES; i++)
		check(rpage_intact(i), "every Ruby page keeps what was written");
	printf("%u Ruby pages of 16 KiB: written, a third freed and taken again, intact\n",
	       NRPAGES);
	/* All but one in sixteen freed: what they held must not stay resident. */
	for (unsigned i = 0; i < NRPAGES; i++)
		if (i % 16)
			check(munmap(rpages[i], RPAGE) == 0, "free a Ruby page");
	long sparse = rpages_hull_kb(16);
	for (unsigned i = 0; i < NRPAGES; i += 16)
		check(rpage_intact(i), "a Ruby page kept keeps what was written");
	printf("%u Ruby pages freed, the rest intact\n", NRPAGES - NRPAGES / 16);

	fprintf(stderr, "pages_thp_kb=%ld\n", kb);
	fprintf(stderr, "arenas_thp_kb=%ld\n", akb);
	fprintf(stderr, "late_thp_kb=%ld\n", lkb);
	fprintf(stderr, "rpages_thp_kb=%ld\nrpages_rss_kb=%ld\nsparse_rss_kb=%ld\n", rkb, rss,
		sparse);
	printf("packres: %u checks passed\n", checks);
	return 0;
}
