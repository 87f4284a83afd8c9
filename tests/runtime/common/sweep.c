/* sweep.c - what a malloc pays for blocks of one size: allocates blocks of SIZE bytes
 * until they hold TOTAL bytes of data (at least 8 blocks), writes every byte of each
 * once, and prints how much the process's resident memory grew against the data's
 * size, and how much of that growth is on huge pages (THP or hugetlb). "mixed" draws
 * sizes from 16 B to 8 MiB, log-uniform (fixed seed), fills TOTAL, frees every other
 * block and fills TOTAL again: the memory a heap of many sizes that churns pays.
 * Plain C: run it under any malloc.
 *
 * usage: sweep SIZE|mixed [TOTAL [DRAW]]   (TOTAL default 256 MiB; sizes take K, M, G;
 *        DRAW, default 0: another sequence of mixed sizes, the seed xor-ed with DRAW
 *        times 0x9e3779b97f4a7c15)
 * prints: size=S blocks=N data_kb=D rss_kb=R huge_kb=H */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "xorshift.h"

struct mem { long rss, huge; };

/* Resident and huge kB from smaps_rollup: hugetlb pages are not in Rss. */
static struct mem mem_now(void)
{
	static char buf[8192];
	struct mem m = { -1, -1 };
	int fd = open("/proc/self/smaps_rollup", O_RDONLY);
	if (fd < 0)
		return m;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return m;
	buf[n] = 0;
	long rss = 0, thp = 0, htlb = 0;
	for (char *l = buf; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, "Rss:", 4))
			rss = strtol(l + 4, NULL, 10);
		else if (!strncmp(l, "AnonHugePages:", 14))
			thp = strtol(l + 14, NULL, 10);
		else if (!strncmp(l, "Private_Hugetlb:", 16) || !strncmp(l, "Shared_Hugetlb:", 15))
			htlb += strtol(strchr(l, ':') + 1, NULL, 10);
	}
	m.rss = rss + htlb;
	m.huge = thp + htlb;
	return m;
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	switch (*end) {
	case 'G': case 'g': v <<= 10; /* fall through */
	case 'M': case 'm': v <<= 10; /* fall through */
	case 'K': case 'k': v <<= 10; end++; break;
	default: break;
	}
	return *end || v == 0 ? 0 : (size_t)v;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_rand(void)
{
	return xorshift64(&rng);
}

/* Log-uniform in [16 B, 8 MiB]: a power of two from 2^4 to 2^22, times [1, 2). */
static size_t mixed_size(void)
{
	uint64_t r = next_rand();
	size_t b = (size_t)1 << (4 + r % 19);
	return b + (size_t)((r >> 8) % b);
}

static void fill(unsigned char *p, size_t n, size_t i)
{
	memset(p, (int)(i % 251) + 1, n);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: sweep SIZE|mixed [TOTAL [DRAW]]\n");
		return 2;
	}
	int mixed = !strcmp(argv[1], "mixed");
	size_t size = mixed ? 0 : parse_size(argv[1]);
	size_t total = argc > 2 ? parse_size(argv[2]) : (size_t)256 << 20;
	if ((!mixed && size == 0) || total == 0) {
		fprintf(stderr, "sweep: bad size '%s'\n", size == 0 && !mixed ? argv[1] : argv[2]);
		return 2;
	}
	if (argc > 3) {
		char *end;
		unsigned long long draw = strtoull(argv[3], &end, 10);
		if (*end || end == argv[3]) {
			fprintf(stderr, "sweep: bad draw '%s'\n", argv[3]);
			return 2;
		}
		rng ^= draw * 0x9e3779b97f4a7c15ull;
	}
	size_t cap = mixed ? (size_t)1 << 20 : total / size > 8 ? total / size : 8;
	unsigned char **blk = malloc(cap * sizeof *blk);
	size_t *len = malloc(cap * sizeof *len);
	if (!blk || !len) {
		fprintf(stderr, "sweep: no memory for %zu block pointers\n", cap);
		return 1;
	}
	/* (resident before the baseline: the blocks' memory alone is measured; not
	 * memset, which the compiler turns with the malloc into a calloc that touches
	 * nothing, so that the arrays were faulted in after the baseline) */
	explicit_bzero(blk, cap * sizeof *blk);
	explicit_bzero(len, cap * sizeof *len);
	free(malloc(1)); /* the allocator is set up before the baseline */
	struct mem before = mem_now();
	size_t n = 0, data = 0;
	for (int round = 0; round < (mixed ? 2 : 1); round++) {
		if (round == 1) {
			/* free every other block and pack the rest to the front */
			size_t k = 0;
			for (size_t i = 0; i < n; i++) {
				if (i % 2) {
					free(blk[i]);
					data -= len[i];
				} else {
					blk[k] = blk[i];
					len[k++] = len[i];
				}
			}
			n = k;
		}
		while (n < cap && (mixed ? data < total : n * size < total || n < 8)) {
			size_t s = mixed ? mixed_size() : size;
			unsigned char *p = malloc(s);
			if (!p) {
				fprintf(stderr, "sweep: malloc(%zu) failed after %zu blocks\n", s, n);
				return 1;
			}
			fill(p, s, n);
			blk[n] = p;
			len[n++] = s;
			data += s;
		}
	}
	struct mem after = mem_now();
	/* Check every block kept its bytes (a block's first and last). */
	for (size_t i = 0; i < n; i++) {
		unsigned char want = blk[i][0];
		if (want == 0 || blk[i][len[i] - 1] != want) {
			fprintf(stderr, "sweep: block %zu lost its contents\n", i);
			return 1;
		}
	}
	if (before.rss < 0 || after.rss < 0) {
		fprintf(stderr, "sweep: cannot read /proc/self/smaps_rollup\n");
		return 1;
	}
	/* (Memory resident before the baseline on small pages and put on huge ones since,
	 * as the arrays above are by an allocator that promotes its heap, counts as huge
	 * growth: the share is taken of the growth, at most all of it.) */
	long grew = after.rss - before.rss, huge = after.huge - before.huge;
	printf("size=%s blocks=%zu data_kb=%zu rss_kb=%ld huge_kb=%ld\n", argv[1], n, data >> 10,
	       grew, huge < grew ? huge : grew);
	return 0;
}
