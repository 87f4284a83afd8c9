/* tlbreach.c - load latency of a pointer chase over a random ring of cache lines: the cost of a TLB miss. */
#include "kernel.h"

#define LINE 64
#define LOADS_PER_REP (1ull << 21)
#define WALKERS 64 /* cursors the check moves at once, so that their misses overlap */

static const char usage[] =
	"Pointer chase: each load reads the address of the next cache line of a ring that\n"
	"visits every 64-byte line of the working set once, in a pseudo-random order, so at\n"
	"large sizes nearly every load misses the TLB; metric ns/load.\n"
	"  --size N  bytes of the working set (default 1G)\n"
	"  --reps R  the timed chase makes R * 2M loads (default 1), whatever the size\n"
	"The ring is built and checked untimed; the setup time goes to stderr.\n";

struct line {
	struct line *next;
	char pad[LINE - sizeof(struct line *)];
};

/* The visit order: position k on the ring holds line line_at(k), a bijection of [0, n).
 * A shuffled index array (Sattolo's algorithm) needs n/16 more bytes and two passes of
 * random accesses, most of a second more at 1 GiB here; a keyed Feistel network on
 * 2 * half bits is as unpredictable to the prefetchers, needs no memory, and runs
 * backwards, so the ring can be written in address order. Values past n are sent on
 * through the network until they fall inside ("cycle walking"), which keeps it a
 * bijection of [0, n). */
struct order {
	uint64_t n;
	unsigned half; /* bits in each half; 2 * half >= bits of n - 1 */
};

static const uint64_t round_keys[] = { 0x243F6A8885A308D3ull, 0x13198A2E03707344ull,
				       0xA4093822299F31D0ull, 0x082EFA98EC4E6C89ull };
#define ROUNDS (sizeof round_keys / sizeof round_keys[0])

static uint64_t round_fn(const struct order *o, uint64_t half_value, unsigned r)
{
	uint64_t z = (half_value ^ round_keys[r]) * 0x9E3779B97F4A7C15ull;

	z = (z ^ (z >> 29)) * 0xBF58476D1CE4E5B9ull;
	return z >> (64 - o->half);
}

static uint64_t feistel(const struct order *o, uint64_t x, int backwards)
{
	uint64_t mask = (1ull << o->half) - 1, l = x >> o->half, r = x & mask, t;

	for (unsigned i = 0; i < ROUNDS; i++) {
		if (!backwards) {
			t = l ^ round_fn(o, r, i);
			l = r;
			r = t;
		} else {
			t = r ^ round_fn(o, l, ROUNDS - 1 - i);
			r = l;
			l = t;
		}
	}
	return l << o->half | r;
}

static uint64_t line_at(const struct order *o, uint64_t k)
{
	do
		k = feistel(o, k, 0);
	while (k >= o->n);
	return k;
}

static uint64_t position_of(const struct order *o, uint64_t line)
{
	do
		line = feistel(o, line, 1);
	while (line >= o->n);
	return line;
}

/* Each line points at the line that follows it in the visit order. */
static void build_ring(struct line *line, const struct order *o)
{
	for (uint64_t i = 0; i < o->n; i++) {
		uint64_t k = position_of(o, i) + 1;

		line[i].next = &line[line_at(o, k == o->n ? 0 : k)];
	}
}

/* One full turn of the ring as WALKERS segments walked side by side: each segment must
 * end where the next begins, and the start line must come up only at the very end, so
 * n hops from the start come back to it and visit every line once on the way. A
 * pointer out of the array fails the check instead of being followed. */
static int check_ring(struct line *line, const struct order *o)
{
	uint64_t n = o->n, left[WALKERS], longest = 0, starts_seen = 0;
	unsigned w = n < WALKERS ? (unsigned)n : WALKERS;
	struct line *at[WALKERS], *start = &line[line_at(o, 0)];

	for (unsigned c = 0; c < w; c++) {
		at[c] = &line[line_at(o, c * n / w)];
		left[c] = (c + 1) * n / w - c * n / w;
		if (left[c] > longest)
			longest = left[c];
	}
	for (uint64_t step = 0; step < longest; step++) {
		for (unsigned c = 0; c < w; c++) {
			uintptr_t off;

			if (step >= left[c])
				continue;
			at[c] = at[c]->next;
			off = (uintptr_t)at[c] - (uintptr_t)line;
			if (off >= n * LINE || off % LINE)
				return 0;
			starts_seen += at[c] == start;
		}
	}
	for (unsigned c = 0; c < w; c++)
		if (at[c] != &line[line_at(o, (c + 1) * n / w % n)])
			return 0;
	return starts_seen == 1;
}

/* noinline, and where the chase ends is checked, so no load can be dropped. */
__attribute__((noinline)) static struct line *chase(struct line *p, uint64_t loads)
{
	while (loads--)
		p = p->next;
	return p;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	struct order o;
	struct line *line;
	uint64_t loads;
	double t0, t1, t2, t3 = 0;
	int ok;

	bench_parse_args(argc, argv, usage, 1ull << 30, 1, &a);
	o.n = a.size / LINE;
	if (o.n < 2) {
		fprintf(stderr, "tlbreach: --size must be at least 128 bytes\n");
		return 2;
	}
	o.half = 1;
	while ((o.n - 1) >> (2 * o.half))
		o.half++;
	loads = (uint64_t)a.reps * LOADS_PER_REP;

	t0 = bench_now();
	/* Not aligned to 64: asking for more than --size would cost the ideal a whole huge
	 * page more, and an 8-aligned pointer every 64 bytes is alone in its cache line anyway. */
	line = bench_alloc(o.n * LINE);
	build_ring(line, &o);
	t1 = bench_now();
	/* Checked before the chase, which would follow a bad pointer out of the array. */
	ok = check_ring(line, &o);
	t2 = bench_now();
	if (ok) {
		struct line *end = chase(&line[line_at(&o, 0)], loads);

		t3 = bench_now() - t2;
		ok = end == &line[line_at(&o, loads % o.n)];
		if (!ok)
			fprintf(stderr, "tlbreach: the chase ended at the wrong line\n");
	} else {
		fprintf(stderr, "tlbreach: the ring does not visit each of its %llu lines once\n",
			(unsigned long long)o.n);
	}
	fprintf(stderr, "tlbreach: %llu lines, setup %.3f s, check %.3f s, %llu loads in %.3f s\n",
		(unsigned long long)o.n, t1 - t0, t2 - t1, (unsigned long long)loads, t3);
	bench_result(&a, "tlbreach", a.size, t3, t3 * 1e9 / (double)loads, "ns/load", ok);
	return bench_exit(&a);
}
