/* commitheap.c - a heap as a JVM or V8 keeps one: reserved PROT_NONE, committed by
 * mprotect and by mmap(MAP_FIXED) in pieces (some unaligned, some below 2 MiB), then
 * partly protected again and partly unmapped. Every byte written is read back; what
 * the program sees (contents, protections, faults) is printed on stdout, the same
 * lines with or without superpage (no addresses); it exits 1 at the first difference
 * from what the kernel promises. On stderr, from /proc/self/smaps, the AnonHugePages
 * kB of each way of committing:
 *   mprotect_thp_kb=A fixed_thp_kb=F pieces_thp_kb=P mprotect_pieces_thp_kb=Q
 *   hint_thp_kb=H nohuge_thp_kb=N
 * (14 MiB committed each way, unaligned; P, Q: in pieces below 1 MiB; H: reserved
 * at the program's hint; N: advised MADV_NOHUGEPAGE by the program once committed). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHECKS_PROG "commitheap"
#include "checks.h"
#include "smaps_kb.h"

#define KB 1024ul
#define MB (1024ul * KB)
#define RW (PROT_READ | PROT_WRITE)
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)

/* The byte the program writes at offset off of a reservation. */
static unsigned char pattern(size_t off, unsigned seed)
{
	return (unsigned char)((off >> 12) * 31 + (off & 0xfff) * 7 + seed);
}

static void fill(unsigned char *base, size_t from, size_t to, unsigned seed)
{
	for (size_t i = from; i < to; i++)
		base[i] = pattern(i, seed);
}

static bool holds(const unsigned char *base, size_t from, size_t to, unsigned seed)
{
	for (size_t i = from; i < to; i++)
		if (base[i] != pattern(i, seed))
			return false;
	return true;
}

static unsigned char *reserve(void *hint, size_t len)
{
	void *p = mmap(hint, len, PROT_NONE, ANON | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		die("mmap PROT_NONE");
	return p;
}

static void commit_fixed(unsigned char *at, size_t len)
{
	check(mmap(at, len, RW, ANON | MAP_FIXED, -1, 0) == at, "mmap MAP_FIXED read-write");
}

static void commit_mprotect(unsigned char *at, size_t len)
{
	check(mprotect(at, len, RW) == 0, "mprotect read-write");
}

/* The permissions ("rw-p") /proc/self/maps gives the page at p, or "none" (in one of
 * four buffers, for one printf). */
static const char *perms_at(const void *p)
{
	static char bufs[4][8];
	static unsigned next;
	char *out = bufs[next++ % 4];
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi;
	char perms[8];
	strcpy(out, "none");
	if (!f)
		die("open /proc/self/maps");
	while (fscanf(f, "%lx-%lx %7s%*[^\n]", &lo, &hi, perms) == 3)
		if ((uintptr_t)p >= lo && (uintptr_t)p < hi) {
			strcpy(out, perms);
			break;
		}
	fclose(f);
	return out;
}

/* The AnonHugePages kB of the mappings over the 2 MiB units wholly inside [lo, hi):
 * the caller keeps PROT_NONE pages on both sides, so that they are the range's own. */
static long thp_kb(const unsigned char *lo, const unsigned char *hi)
{
	uintptr_t a = ((uintptr_t)lo + 2 * MB - 1) & ~(2 * MB - 1), b = (uintptr_t)hi & ~(2 * MB - 1);
	return b > a ? smaps_kb(a, b, "AnonHugePages:") : 0;
}

enum how { BY_MPROTECT, BY_FIXED, BY_FIXED_PIECES, BY_MPROTECT_PIECES };

/* 14 MiB committed one way inside a reservation of 16, written and read back: the
 * AnonHugePages kB of it. */
static long commit_one_way(enum how how)
{
	const size_t len = 16 * MB, lo = 1 * MB + 20 * KB, hi = 15 * MB + 12 * KB;
	unsigned char *r = reserve(NULL, len);
	if (how == BY_MPROTECT)
		commit_mprotect(r + lo, hi - lo);
	else if (how == BY_FIXED)
		commit_fixed(r + lo, hi - lo);
	for (size_t at = lo, step = 1 * MB - 12 * KB; how >= BY_FIXED_PIECES && at < hi; at += step) {
		size_t n = at + step < hi ? step : hi - at;
		if (how == BY_FIXED_PIECES)
			commit_fixed(r + at, n);
		else
			commit_mprotect(r + at, n);
	}
	check(read_faults(r + lo - 1) && read_faults(r + hi), "the ends stay reserved");
	fill(r, lo, hi, 4 + how);
	check(holds(r, lo, hi, 4 + how), "every committed byte reads what was written");
	long kb = thp_kb(r + lo, r + hi);
	check(munmap(r, len) == 0, "munmap");
	return kb;
}

int main(void)
{
	catch_faults();

	/* A: 40 MiB reserved; [0, 12M+20K) by mprotect, [12M+20K, 24M+20K) by one
	 * MAP_FIXED, [24M+20K, 32M) by MAP_FIXED pieces of 1 MiB and less, [32M, 40M) by
	 * mprotect in pieces of 512 KiB. */
	const size_t len = 40 * MB, m1 = 12 * MB + 20 * KB, m2 = 24 * MB + 20 * KB, m3 = 32 * MB;
	unsigned char *a = reserve(NULL, len);
	check(read_faults(a) && read_faults(a + len - 1), "a reservation is not readable");
	printf("reserved %lu MiB: %s\n", len / MB, perms_at(a + 5 * MB));
	commit_mprotect(a, m1);
	commit_fixed(a + m1, m2 - m1);
	for (size_t at = m2, step = 1 * MB - 12 * KB; at < m3; at += step)
		commit_fixed(a + at, at + step < m3 ? step : m3 - at);
	for (size_t at = m3; at < len; at += 512 * KB)
		commit_mprotect(a + at, 512 * KB);
	fill(a, 0, len, 1);
	check(holds(a, 0, len, 1), "every committed byte reads what was written");
	printf("committed and wrote %lu MiB: %s %s %s %s\n", len / MB, perms_at(a),
	       perms_at(a + m1), perms_at(a + m2 + 4 * KB), perms_at(a + len - 1));
	/* Part of A back to PROT_NONE (unaligned, across a unit), then read-write again:
	 * it faults in between, and keeps what was written. */
	unsigned char *n0 = a + 5 * MB + 12 * KB, *n1 = a + 7 * MB + 8 * KB;
	check(mprotect(n0, (size_t)(n1 - n0), PROT_NONE) == 0, "mprotect back to PROT_NONE");
	check(read_faults(n0) && read_faults(n1 - 1), "PROT_NONE pages fault");
	check(!read_faults(n0 - 1) && !read_faults(n1), "their neighbours do not");
	check(holds(a, 0, (size_t)(n0 - a), 1) && holds(a, (size_t)(n1 - a), len, 1),
	      "the rest keeps its bytes");
	printf("re-protected a middle piece: %s %s %s\n", perms_at(n0 - 1), perms_at(n0),
	       perms_at(n1));
	check(mprotect(n0, (size_t)(n1 - n0), PROT_READ) == 0, "mprotect read-only");
	check(holds(a, (size_t)(n0 - a), (size_t)(n1 - a), 1), "read-only again: its bytes kept");
	printf("read-only again: %s\n", perms_at(n0));

	/* A middle piece unmapped: it faults, the rest keeps its bytes. */
	unsigned char *u0 = a + 20 * MB - 8 * KB, *u1 = a + 23 * MB;
	check(munmap(u0, (size_t)(u1 - u0)) == 0, "munmap a middle piece");
	check(read_faults(u0) && read_faults(u1 - 1), "an unmapped piece faults");
	check(holds(a, 0, (size_t)(n0 - a), 1) && holds(a, (size_t)(n1 - a), (size_t)(u0 - a), 1) &&
	      holds(a, (size_t)(u1 - a), len, 1), "the rest keeps its bytes after munmap");
	printf("unmapped a middle piece: %s %s %s\n", perms_at(u0 - 1), perms_at(u0),
	       perms_at(u1));
	/* Mapped over fixed again: zero, as new anonymous memory is. */
	commit_fixed(u0, (size_t)(u1 - u0));
	bool zero = true;
	for (unsigned char *p = u0; p < u1; p++)
		zero &= *p == 0;
	check(zero, "memory mapped again reads as zero");
	check(munmap(a, len) == 0, "munmap the reservation");
	check(read_faults(a + m2), "an unmapped reservation faults");

	/* B: the program's hint kept, committed by MAP_FIXED. */
	unsigned char *probe = reserve(NULL, 32 * MB);
	check(munmap(probe, 32 * MB) == 0, "munmap");
	unsigned char *hint = (unsigned char *)(((uintptr_t)probe + 2 * MB - 1) & ~(2 * MB - 1));
	unsigned char *b = reserve(hint, 16 * MB);
	check(b == hint, "a reservation at a free hint lands there");
	commit_fixed(b + 1 * MB, 14 * MB);
	fill(b, 1 * MB, 15 * MB, 2);
	check(holds(b, 1 * MB, 15 * MB, 2), "a hinted reservation keeps its bytes");
	long hint_thp = thp_kb(b + 1 * MB, b + 15 * MB);
	check(munmap(b, 16 * MB) == 0, "munmap");

	/* C: committed, then advised MADV_NOHUGEPAGE by the program: the wish stands. */
	unsigned char *c = reserve(NULL, 24 * MB), *c0 = c + 1 * MB, *c1 = c + 23 * MB;
	commit_mprotect(c0, 11 * MB);
	commit_fixed(c0 + 11 * MB, 11 * MB);
	check(madvise(c0, 22 * MB, MADV_NOHUGEPAGE) == 0, "madvise MADV_NOHUGEPAGE");
	check(mprotect(c0 + 2 * MB, 4 * MB, PROT_READ) == 0 && mprotect(c0 + 2 * MB, 4 * MB, RW) == 0,
	      "mprotect after MADV_NOHUGEPAGE");
	fill(c, 1 * MB, 23 * MB, 3);
	check(holds(c, 1 * MB, 23 * MB, 3), "every byte of the last one reads what was written");
	long nohuge_thp = thp_kb(c0, c1);
	check(munmap(c, 24 * MB) == 0, "munmap");

	long mprotect_thp = commit_one_way(BY_MPROTECT);
	long fixed_thp = commit_one_way(BY_FIXED);
	long pieces_thp = commit_one_way(BY_FIXED_PIECES);
	long mprotect_pieces_thp = commit_one_way(BY_MPROTECT_PIECES);

	fprintf(stderr, "mprotect_thp_kb=%ld fixed_thp_kb=%ld pieces_thp_kb=%ld "
		"mprotect_pieces_thp_kb=%ld hint_thp_kb=%ld nohuge_thp_kb=%ld\n", mprotect_thp,
		fixed_thp, pieces_thp, mprotect_pieces_thp, hint_thp, nohuge_thp);
	printf("commitheap: %u checks passed\n", checks);
	return 0;
}
