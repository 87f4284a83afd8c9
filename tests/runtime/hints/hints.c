/* hints.c - mappings at the program's address hint, as libgc (Guile, Boehm GC) makes
 * them: each 8 MiB heap chunk asked for at a place the kernel does not give (it is
 * taken), and 64 KiB ones at the end of the last one; one at a free
 * hint, which must land there; a hint inside a mapping of the program's, which must
 * not harm it; an unaligned hint and a reservation at a taken hint. stdout: what the
 * program saw, the same plain and under superpage run. stderr: "chunks_aligned=A of
 * N pieces_at_ends=E" (the 8 MiB chunks that start on a 2 MiB boundary; the 64 KiB
 * pieces asked for at the end of one of the last 8 chunks that landed there). Status 1 and a FAILED line
 * at the first wrong result. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MB (1ul << 20)
#define KB (1ul << 10)
#define RW (PROT_READ | PROT_WRITE)
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)
#define CHUNKS 24
#define SMALL 64

static unsigned checks;

static void check(bool ok, const char *what)
{
	if (!ok) {
		printf("hints: FAILED: %s (errno %d)\n", what, errno);
		exit(1);
	}
	checks++;
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i += 1024)
		p[i] = (unsigned char)(seed * 7 + i / 1024);
}

static bool holds(const unsigned char *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i += 1024)
		if (p[i] != (unsigned char)(seed * 7 + i / 1024))
			return false;
	return true;
}

static bool zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 256)
		if (p[i])
			return false;
	return true;
}

int main(void)
{
	static unsigned char *chunk[CHUNKS], *small[SMALL];
	int aligned = 0;

	/* The chunks, each at a taken place: the first at a small mapping's, each next one
	 * at the last one's (with a hint the kernel does not align what it places). */
	unsigned char *want = mmap(NULL, 12 * KB, RW, ANON, -1, 0);
	check(want != MAP_FAILED, "a 12 KiB mapping");
	for (int i = 0; i < CHUNKS; i++) {
		chunk[i] = mmap(want, 8 * MB, RW, ANON, -1, 0);
		check(chunk[i] != MAP_FAILED, "an 8 MiB chunk at a hint");
		check(zero(chunk[i], 8 * MB), "a new chunk reads zero");
		for (int j = 0; j < i; j++)
			check(chunk[i] + 8 * MB <= chunk[j] || chunk[i] >= chunk[j] + 8 * MB,
			      "chunks do not overlap");
		fill(chunk[i], 8 * MB, (unsigned)i);
		aligned += ((uintptr_t)chunk[i] & (2 * MB - 1)) == 0;
		want = chunk[i];
	}
	for (int i = 0; i < CHUNKS; i++)
		check(holds(chunk[i], 8 * MB, (unsigned)i), "every chunk keeps its bytes");

	/* A 64 KiB piece at the end of each of the last chunks, as libgc asks for them:
	 * where the kernel put the chunk, that place is taken (the chunk above); where
	 * the runtime aligned it, it may be free, and pieces there would fill no unit. */
	int at_ends = 0;
	unsigned char *piece[8];
	for (int i = 0; i < 8; i++) {
		piece[i] = mmap(chunk[CHUNKS - 8 + i] + 8 * MB, 64 * KB, RW, ANON, -1, 0);
		check(piece[i] != MAP_FAILED && zero(piece[i], 64 * KB), "a piece at a chunk's end");
		at_ends += piece[i] == chunk[CHUNKS - 8 + i] + 8 * MB;
		fill(piece[i], 64 * KB, 300u + (unsigned)i);
	}
	for (int i = 0; i < 8; i++)
		check(holds(piece[i], 64 * KB, 300u + (unsigned)i), "every piece keeps its bytes");

	/* Small ones, each at the end of the last; every other one unmapped, the rest
	 * keep their bytes. */
	want = chunk[0];
	for (int i = 0; i < SMALL; i++) {
		small[i] = mmap(want, 64 * KB, RW, ANON, -1, 0);
		check(small[i] != MAP_FAILED, "a 64 KiB mapping at a hint");
		check(zero(small[i], 64 * KB), "a new 64 KiB mapping reads zero");
		fill(small[i], 64 * KB, 100u + (unsigned)i);
		want = small[i] + 64 * KB;
	}
	for (int i = 0; i < SMALL; i += 2)
		check(munmap(small[i], 64 * KB) == 0, "munmap of a 64 KiB mapping");
	for (int i = 1; i < SMALL; i += 2)
		check(holds(small[i], 64 * KB, 100u + (unsigned)i), "the others keep their bytes");
	for (int i = 0; i < SMALL; i += 2) {
		small[i] = mmap(small[i], 64 * KB, RW, ANON, -1, 0);
		check(small[i] != MAP_FAILED && zero(small[i], 64 * KB),
		      "a 64 KiB mapping again, zero");
	}
	/* A piece of one protected and unprotected, as libgc's GC_unmap does. */
	check(mprotect(small[1] + 16 * KB, 16 * KB, PROT_NONE) == 0 &&
	      mprotect(small[1] + 16 * KB, 16 * KB, RW) == 0 &&
	      holds(small[1], 64 * KB, 101), "mprotect inside a 64 KiB mapping");

	/* A free hint (found by reserving and letting go) is honoured. */
	unsigned char *probe = mmap(NULL, 64 * MB, PROT_NONE, ANON | MAP_NORESERVE, -1, 0);
	check(probe != MAP_FAILED, "a probe reservation");
	unsigned char *hint = (unsigned char *)(((uintptr_t)probe + 2 * MB - 1) & ~(2 * MB - 1)) +
			      12 * KB;
	check(munmap(probe, 64 * MB) == 0, "the probe let go");
	unsigned char *f = mmap(hint, 4 * MB, RW, ANON, -1, 0);
	check(f == hint, "a mapping at a free hint lands there");
	unsigned char *f2 = mmap(hint + 8 * MB, 256 * KB, RW, ANON, -1, 0);
	check(f2 == hint + 8 * MB, "a small mapping at a free hint lands there");
	fill(f, 4 * MB, 200);
	fill(f2, 256 * KB, 201);

	/* A hint inside a mapping of the program's, and one overlapping its end: placed
	 * elsewhere, and what is there keeps its bytes. */
	unsigned char *g = mmap(f + MB, 4 * MB, RW, ANON, -1, 0);
	check(g != MAP_FAILED && (g + 4 * MB <= f || g >= f + 4 * MB), "a hint inside a mapping");
	unsigned char *g2 = mmap(f + 3 * MB, 2 * MB, RW, ANON, -1, 0);
	check(g2 != MAP_FAILED && (g2 + 2 * MB <= f || g2 >= f + 4 * MB),
	      "a hint over a mapping's end");
	check(holds(f, 4 * MB, 200) && holds(f2, 256 * KB, 201), "the hinted-over mappings keep their bytes");
	fill(g, 4 * MB, 202);
	fill(g2, 2 * MB, 203);

	/* An unaligned hint: the kernel's to round; a reservation at a taken hint. */
	unsigned char *u = mmap(chunk[3] + 123, 3 * MB, RW, ANON, -1, 0);
	check(u != MAP_FAILED && zero(u, 3 * MB), "a mapping at an unaligned hint");
	unsigned char *r = mmap(chunk[5], 32 * MB, PROT_NONE, ANON | MAP_NORESERVE, -1, 0);
	check(r != MAP_FAILED, "a reservation at a taken hint");
	check(mprotect(r + 4 * MB, 8 * MB, RW) == 0, "a part of it made read-write");
	fill(r + 4 * MB, 8 * MB, 204);

	for (int i = 0; i < CHUNKS; i++)
		check(holds(chunk[i], 8 * MB, (unsigned)i), "every chunk still keeps its bytes");
	check(holds(g, 4 * MB, 202) && holds(g2, 2 * MB, 203) && holds(r + 4 * MB, 8 * MB, 204),
	      "the rest keep theirs");
	for (int i = 0; i < CHUNKS; i += 3)
		check(munmap(chunk[i], 8 * MB) == 0, "munmap of a chunk");
	fprintf(stderr, "chunks_aligned=%d of %d pieces_at_ends=%d\n", aligned, CHUNKS, at_ends);
	printf("hints: %u checks passed\n", checks);
	return 0;
}
