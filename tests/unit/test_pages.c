/* test_pages.c - the page heap under a random sequence of mallocs, reallocs and frees
 * of every kind of block (objects, medium runs, long runs across units, whole units),
 * with pages_check() recomputing its counts and lists after every step and every
 * block's pages checked for their owner's bytes before it is freed or resized. On the
 * real kernel, under the backing SUPERPAGE_BACKING names (tests/cli runs it under 2m
 * with a small pool, so that units fall to THP midway), and under ASan/UBSan too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "heap.h"

#define NSLOT 64
#define STEPS 4000
#define MB ((size_t)1 << 20)

struct blk { unsigned char *p; size_t len; unsigned char tag; };
static struct blk slot[NSLOT];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Objects, medium runs, long runs (odd sizes between whole units) and whole units. */
static size_t some_size(void)
{
	uint64_t r = rnd(), k = r % 100;
	if (k < 45)
		return 1 + (r >> 8) % SMALL_MAX;
	if (k < 70)
		return SMALL_MAX + 1 + (r >> 8) % (MEDIUM_MAX - SMALL_MAX);
	if (k < 92)
		return MEDIUM_MAX + 1 + (r >> 8) % (12 * MB);
	return ((r >> 8) % 8 + 1) * 2 * MB;
}

/* The first byte of every page, and the last byte, carry the block's tag. */
static void mark(struct blk *b)
{
	for (size_t i = 0; i < b->len; i += 4096)
		b->p[i] = b->tag;
	b->p[b->len - 1] = b->tag;
}

static bool intact(const struct blk *b, size_t len)
{
	for (size_t i = 0; i < len; i += 4096)
		if (b->p[i] != b->tag)
			return false;
	return len < b->len || b->p[b->len - 1] == b->tag;
}

static void test_random_sequence(void)
{
	CHECK(rt_init());
	unsigned bad_bytes = 0, bad_state = 0, failed = 0;
	const char *why = NULL;
	size_t where = 0;
	for (unsigned step = 0; step < STEPS; step++) {
		struct blk *b = &slot[rnd() % NSLOT];
		uint64_t op = rnd() % 10;
		if (!b->p) {
			b->len = some_size();
			b->tag = (unsigned char)(1 + rnd() % 255);
			b->p = op < 2 ? rt_calloc(1, b->len) : rt_malloc(b->len);
			if (!b->p) {
				failed++;
				continue;
			}
			if (op < 2)
				for (size_t i = 0; i < b->len; i += 4096)
					bad_bytes += b->p[i] != 0;
			mark(b);
		} else if (op < 5) {
			bad_bytes += !intact(b, b->len);
			rt_free(b->p);
			b->p = NULL;
		} else {
			/* Grown or shrunk, often by a little (in place across units, or moved). */
			size_t len = op < 8 ? b->len + (rnd() % 2 ? 1 : -1) * (rnd() % (b->len / 4 + 2))
					    : some_size();
			if (len == 0 || len > 64 * MB)
				len = 1;
			unsigned char *q = rt_realloc(b->p, len);
			if (!q) {
				failed++;
				continue;
			}
			b->p = q;
			bad_bytes += !intact(b, len < b->len ? len : b->len);
			b->len = len;
			mark(b);
		}
		if (!why && (why = pages_check(&where)) != NULL) {
			bad_state++;
			fprintf(stderr, "  step %u: %s (unit %zu)\n", step, why, where);
		}
	}
	for (unsigned i = 0; i < NSLOT; i++) {
		if (slot[i].p) {
			bad_bytes += !intact(&slot[i], slot[i].len);
			rt_free(slot[i].p);
			slot[i].p = NULL;
		}
	}
	if (!why && (why = pages_check(&where)) != NULL) {
		bad_state++;
		fprintf(stderr, "  at the end: %s (unit %zu)\n", why, where);
	}
	CHECK_EQ(bad_bytes, 0);
	CHECK_EQ(bad_state, 0);
	CHECK_EQ(failed, 0);
}

/* Long runs pack against each other: 40 blocks of 1 MiB + 1 B take 21 units, not
 * 40; and each is found, resized and freed whole. */
static void test_long_runs_pack(void)
{
	CHECK(rt_init());
	static unsigned char *p[40];
	struct rt_stats st;
	rt_stats_get(&st);
	uint64_t before = 0, after = 0, used = st.unit_used_bytes;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		before += st.units[b];
	for (int i = 0; i < 40; i++) {
		p[i] = rt_malloc(MB + 1);
		CHECK(p[i] != NULL);
		if (!p[i])
			return;
		memset(p[i], i + 1, MB + 1);
		CHECK_EQ(rt_usable_size(p[i]), MB + 4096);
	}
	rt_stats_get(&st);
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		after += st.units[b];
	CHECK(after - before <= 22);
	/* --stats' account: the blocks' pages in use, the rest of the units free. */
	CHECK_EQ(st.unit_used_bytes - used, 40 * (MB + 4096));
	CHECK_EQ(st.unit_used_bytes + st.unit_free_bytes, after * 2 * MB);
	CHECK(st.full_unit_bytes <= st.unit_used_bytes);
	size_t where;
	CHECK(pages_check(&where) == NULL);
	/* One shrinks in place; grown past 1 MiB, it moves to whole units (room to
	 * grow in place), its bytes kept. */
	unsigned char *q = rt_realloc(p[39], 300000);
	CHECK(q == p[39]);
	CHECK_EQ(rt_usable_size(q), 74 * 4096);
	q = rt_realloc(p[39], 3 * MB + 5);
	CHECK(q != NULL);
	CHECK_EQ(rt_usable_size(q), 4 * MB);
	CHECK(q && q[299999] == 40 && q[0] == 40);
	p[39] = q;
	for (int i = 0; i < 40; i++) {
		CHECK(p[i][0] == i + 1 && p[i][i < 39 ? MB : 0] == i + 1);
		rt_free(p[i]);
	}
	CHECK(pages_check(&where) == NULL);
}

int main(void)
{
	RUN(test_long_runs_pack);
	RUN(test_random_sequence);
	return CHECK_DONE();
}
