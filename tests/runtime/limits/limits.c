/* limits.c - malloc under the limits a program may run under (ulimit -v, ulimit -d,
 * a memory cgroup): the same program runs plain and under superpage run, and must
 * get as far under each. Every byte it is given is written and checked.
 * Usage: limits mix MIB      blocks of a dozen sizes (16 B to 12 MiB) until MIB MiB
 *                            are asked for, filled; then reallocs that grow, shrink
 *                            and change kind, frees, callocs, aligned blocks, a fork
 *                            (the child checks and writes its own copy), every byte
 *                            checked at each step; then one block of MIB/2 MiB.
 *                            Prints "mix ok N blocks"; exits 1 at the first fault.
 *        limits need MIB     blocks of the same dozen sizes, never more than MIB MiB
 *                            of them at once: filled up to MIB, then rounds that free
 *                            half of them and fill the room again with other sizes,
 *                            and reallocs that keep within MIB; every byte checked
 *                            at each step (no fork: a program that needs MIB MiB).
 *                            Prints "need ok N blocks"; exits 1 at the first fault.
 *        limits max KIB      mallocs of KIB KiB until one fails, then the largest
 *                            single malloc (to 1 MiB): "max_mib=M largest_mib=L".
 *        limits huge N GIB   N mallocs of GIB GiB, untouched but for a word at each
 *                            end; one grown by realloc; all freed: "huge ok N", or
 *                            "huge failed at I" (exit 2) when malloc says no. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define KB 1024ul
#define MB (1024ul * KB)

struct block {
	unsigned char *p;
	size_t size;
	unsigned seed;
};

/* What a block holds: word j of it (blocks start 16-aligned) is word(seed, j), in
 * the machine's byte order. */
static uint64_t word(unsigned seed, size_t j)
{
	return (j + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)seed << 32 ^ j >> 9;
}

static unsigned char val(unsigned seed, size_t i)
{
	uint64_t w = word(seed, i / 8);
	return ((const unsigned char *)&w)[i % 8];
}

static void fill(struct block *b, size_t from)
{
	size_t i = from, end = b->size;
	for (; i < end && i % 8; i++)
		b->p[i] = val(b->seed, i);
	for (uint64_t *w = (uint64_t *)(void *)(b->p + i); i + 8 <= end; i += 8)
		*w++ = word(b->seed, i / 8);
	for (; i < end; i++)
		b->p[i] = val(b->seed, i);
}

static int check(const struct block *b, size_t upto, const char *when)
{
	size_t i = 0;
	const uint64_t *w = (const uint64_t *)(const void *)b->p;
	while (i + 8 <= upto && *w == word(b->seed, i / 8)) {
		w++;
		i += 8;
	}
	for (; i < upto; i++)
		if (b->p[i] != val(b->seed, i)) {
			printf("FAIL limits: %s: block of %zu bytes, byte %zu is %u, not %u\n", when,
			       b->size, i, b->p[i], val(b->seed, i));
			return 1;
		}
	return 0;
}

static int check_all(struct block *bs, size_t n, const char *when)
{
	for (size_t k = 0; k < n; k++)
		if (bs[k].p && check(&bs[k], bs[k].size, when))
			return 1;
	return 0;
}

static const size_t sizes[] = { 16, 1000, 40000, 100 * KB, 700 * KB, MB + 1, 3 * MB / 2,
				2 * MB, 3 * MB + 1, 5 * MB, 8 * MB, 12 * MB + 4096 };
#define NSIZES (sizeof sizes / sizeof *sizes)

static int mix(size_t total)
{
	size_t cap = 1 << 16, n = 0, asked = 0;
	struct block *bs = calloc(cap, sizeof *bs);
	if (!bs)
		return printf("FAIL limits: no table\n"), 1;
	/* Blocks of every size in turn until total is asked for. */
	while (asked < total && n < cap) {
		struct block *b = &bs[n];
		b->size = sizes[n % NSIZES];
		b->seed = (unsigned)n;
		if (!(b->p = malloc(b->size)))
			return printf("FAIL limits: malloc(%zu) failed with %zu MiB asked for\n",
				      b->size, asked >> 20), 1;
		fill(b, 0);
		asked += b->size;
		n++;
	}
	if (check_all(bs, n, "after malloc"))
		return 1;
	/* Every third block to another size (grow, shrink, small <-> large). */
	for (size_t k = 0; k < n; k += 3) {
		struct block *b = &bs[k];
		size_t to = sizes[(k * 7 + 5) % NSIZES];
		unsigned char *q = realloc(b->p, to);
		if (!q)
			return printf("FAIL limits: realloc(%zu -> %zu) failed\n", b->size, to), 1;
		b->p = q;
		size_t keep = to < b->size ? to : b->size;
		b->size = keep;
		if (check(b, keep, "after realloc"))
			return 1;
		b->size = to;
		fill(b, keep);
	}
	/* Every other block freed; callocs and aligned blocks in their place. */
	for (size_t k = 0; k < n; k += 2) {
		struct block *b = &bs[k];
		size_t size = b->size;
		free(b->p);
		b->p = NULL;
		if (k % 4 == 0) {
			if (!(b->p = calloc(1, size)))
				return printf("FAIL limits: calloc(%zu) failed\n", size), 1;
			for (size_t i = 0; i < size; i += i % 8 || i + 8 > size ? 1 : 8)
				if (i % 8 || i + 8 > size ? b->p[i] != 0 : *(uint64_t *)(void *)(b->p + i) != 0)
					return printf("FAIL limits: calloc(%zu) not zero at %zu\n", size, i), 1;
		} else {
			size_t align = k % 8 == 2 ? 2 * MB : 64 * KB;
			if (posix_memalign((void **)&b->p, align, size))
				return printf("FAIL limits: posix_memalign(%zu, %zu) failed\n", align,
					      size), 1;
			if ((uintptr_t)b->p % align)
				return printf("FAIL limits: %p is not aligned to %zu\n", (void *)b->p,
					      align), 1;
		}
		b->size = size;
		b->seed = (unsigned)(k * 31 + 7);
		fill(b, 0);
	}
	if (check_all(bs, n, "after free and calloc"))
		return 1;
	/* A forked child sees the same bytes, and its writes stay its own. */
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return printf("FAIL limits: fork failed\n"), 1;
	if (pid == 0) {
		if (check_all(bs, n, "in the child"))
			_exit(1);
		for (size_t k = 0; k < n; k++)
			memset(bs[k].p, 0xa5, bs[k].size);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return printf("FAIL limits: the child failed (status %d)\n", st), 1;
	if (check_all(bs, n, "after the child wrote its copy"))
		return 1;
	/* Grow every block in turn by realloc, then all back. */
	for (size_t k = 1; k < n; k += 4) {
		struct block *b = &bs[k];
		size_t to = b->size + b->size / 3 + 1;
		unsigned char *q = realloc(b->p, to);
		if (!q)
			break; /* (near the limit: the block stays as it was) */
		b->p = q;
		if (check(b, b->size, "after a realloc that grows"))
			return 1;
		size_t was = b->size;
		b->size = to;
		fill(b, was);
	}
	if (check_all(bs, n, "at the end"))
		return 1;
	for (size_t k = 0; k < n; k++)
		free(bs[k].p);
	/* All given back: half the total again, in one block. */
	struct block big = { malloc(total / 2), total / 2, 99 };
	if (!big.p)
		return printf("FAIL limits: malloc(%zu) after freeing all failed\n", total / 2), 1;
	fill(&big, 0);
	if (check(&big, big.size, "one big block"))
		return 1;
	free(big.p);
	free(bs);
	printf("mix ok %zu blocks\n", n);
	return 0;
}

/* A number from k and r that looks random enough to pick blocks by. */
static unsigned pick(size_t k, unsigned r)
{
	uint64_t x = (k + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)r * 0xc2b2ae3d27d4eb4full;
	return (unsigned)(x >> 33 ^ x >> 17);
}

static int need(size_t total, unsigned rounds)
{
	size_t cap = 1 << 14, n = 0, live = 0, blocks = 0;
	struct block *bs = calloc(cap, sizeof *bs);
	if (!bs)
		return printf("FAIL limits: no table\n"), 1;
	/* Filled up to total, in sizes in turn. */
	for (size_t k = 0; n < cap; k++) {
		size_t size = sizes[k % NSIZES];
		if (live + size > total) {
			if (size <= sizes[0] || k > 16 * cap)
				break;
			continue;
		}
		struct block *b = &bs[n++];
		b->size = size;
		b->seed = (unsigned)k;
		if (!(b->p = malloc(size)))
			return printf("FAIL limits: malloc(%zu) failed with %zu MiB in use\n", size,
				      live >> 20), 1;
		fill(b, 0);
		live += size;
		blocks++;
	}
	if (check_all(bs, n, "after malloc"))
		return 1;
	/* Rounds: half the blocks freed, picked at random, and the room filled again
	 * with blocks of other sizes: what stays behind holes of every size. */
	for (unsigned r = 1; r <= rounds; r++) {
		for (size_t k = 0; k < n; k++)
			if (bs[k].p && pick(k, r) % 2) {
				free(bs[k].p);
				bs[k].p = NULL;
				live -= bs[k].size;
			}
		for (size_t k = 0, tries = 0; tries < 4 * n; tries++, k = (k + 1) % n) {
			struct block *b = &bs[k];
			size_t size = sizes[pick(k, r + 100) % NSIZES];
			if (b->p || live + size > total)
				continue;
			b->size = size;
			b->seed = (unsigned)(k * 131 + r);
			if (!(b->p = malloc(size)))
				return printf("FAIL limits: malloc(%zu) failed with %zu MiB in use "
					      "(round %u)\n", size, live >> 20, r), 1;
			fill(b, 0);
			live += size;
			blocks++;
		}
		/* Some blocks to another size, within the total. */
		for (size_t k = r % 4; k < n; k += 4) {
			struct block *b = &bs[k];
			size_t to = sizes[pick(k, r + 200) % NSIZES];
			if (!b->p || live - b->size + to > total)
				continue;
			unsigned char *q = realloc(b->p, to);
			if (!q)
				return printf("FAIL limits: realloc(%zu -> %zu) failed\n", b->size, to), 1;
			b->p = q;
			size_t keep = to < b->size ? to : b->size;
			if (check(&(struct block){ q, keep, b->seed }, keep, "after realloc"))
				return 1;
			live = live - b->size + to;
			b->size = to;
			fill(b, keep);
		}
		if (check_all(bs, n, "after a round"))
			return 1;
	}
	for (size_t k = 0; k < n; k++)
		free(bs[k].p);
	free(bs);
	printf("need ok %zu blocks\n", blocks);
	return 0;
}

static int max(size_t step)
{
	size_t cap = 1 << 20, n = 0;
	void **ps = malloc(cap * sizeof *ps);
	if (!ps)
		return 1;
	while (n < cap && (ps[n] = malloc(step)))
		n++;
	for (size_t k = 0; k < n; k++)
		free(ps[k]);
	free(ps);
	size_t lo = 0, hi = (size_t)1 << 30; /* lo MiB mallocs, hi does not */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		void *p = malloc(mid * MB);
		if (p)
			lo = mid;
		else
			hi = mid;
		free(p);
	}
	printf("max_mib=%zu largest_mib=%zu\n", n * step >> 20, lo);
	return 0;
}

static int huge(size_t n, size_t gib)
{
	size_t size = gib << 30;
	uint64_t **ps = calloc(n, sizeof *ps);
	if (!ps)
		return 1;
	for (size_t k = 0; k < n; k++) {
		if (!(ps[k] = malloc(size))) {
			printf("huge failed at %zu\n", k);
			return 2;
		}
		ps[k][0] = k;
		ps[k][size / 8 - 1] = ~k;
	}
	uint64_t *q = realloc(ps[n - 1], size + (1ul << 30));
	if (!q)
		return printf("FAIL limits: realloc of the last block failed\n"), 1;
	ps[n - 1] = q;
	for (size_t k = 0; k < n; k++)
		if (ps[k][0] != k || ps[k][size / 8 - 1] != ~k)
			return printf("FAIL limits: block %zu lost its words\n", k), 1;
	for (size_t k = 0; k < n; k++)
		free(ps[k]);
	free(ps);
	printf("huge ok %zu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 3 && !strcmp(argv[1], "mix"))
		return mix(strtoul(argv[2], NULL, 0) * MB);
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "need"))
		return need(strtoul(argv[2], NULL, 0) * MB, argc == 4 ? (unsigned)atoi(argv[3]) : 6);
	if (argc == 3 && !strcmp(argv[1], "max"))
		return max(strtoul(argv[2], NULL, 0) * KB);
	if (argc == 4 && !strcmp(argv[1], "huge"))
		return huge(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
	fprintf(stderr, "usage: limits mix MIB | need MIB | max KIB | huge N GIB\n");
	return 2;
}
