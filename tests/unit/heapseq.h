/* heapseq.h - a random sequence of mallocs, callocs, reallocs and frees over slots of
 * blocks of every kind (objects, medium runs, long runs across units, whole units):
 * the first byte of each page of a block, and its last byte, carry the block's tag,
 * checked before it is freed or resized. For test_pages (the real kernel) and
 * test_pages_fake (the fake one); header-only. */
#ifndef HEAPSEQ_H
#define HEAPSEQ_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "malloc/malloc.h"
#include "pageheap/pageheap.h"

struct blk { unsigned char *p; size_t len; unsigned char tag; };

struct heapseq {
	struct blk *slot;
	unsigned nslot;
	uint64_t rng;
	size_t long_max;              /* long blocks: 1 MiB + 1 B to this */
	unsigned bad_bytes, failed;   /* blocks found changed; calls that returned NULL */
};

static uint64_t seq_rnd(struct heapseq *q)
{
	q->rng ^= q->rng << 13;
	q->rng ^= q->rng >> 7;
	q->rng ^= q->rng << 17;
	return q->rng;
}

/* Objects, medium runs, long runs (odd sizes between whole units) and whole units. */
static size_t seq_size(struct heapseq *q)
{
	uint64_t r = seq_rnd(q), k = r % 100;
	if (k < 45)
		return 1 + (r >> 8) % SMALL_MAX;
	if (k < 70)
		return SMALL_MAX + 1 + (r >> 8) % (MEDIUM_MAX - SMALL_MAX);
	if (k < 92)
		return MEDIUM_MAX + 1 + (r >> 8) % (q->long_max - MEDIUM_MAX);
	return ((r >> 8) % 8 + 1) * UNIT_SIZE;
}

static void seq_mark(struct blk *b)
{
	for (size_t i = 0; i < b->len; i += 4096)
		b->p[i] = b->tag;
	b->p[b->len - 1] = b->tag;
}

static bool seq_intact(const struct blk *b, size_t len)
{
	for (size_t i = 0; i < len; i += 4096)
		if (b->p[i] != b->tag)
			return false;
	return len < b->len || b->p[b->len - 1] == b->tag;
}

/* One call on a random slot: an empty one gets a block (malloc, or calloc checked to
 * read as zero); a full one is freed, or grown or shrunk by a little (in place across
 * units, or moved) or to another size. */
static void seq_step(struct heapseq *q)
{
	struct blk *b = &q->slot[seq_rnd(q) % q->nslot];
	uint64_t op = seq_rnd(q) % 10;
	if (!b->p) {
		b->len = seq_size(q);
		b->tag = (unsigned char)(1 + seq_rnd(q) % 255);
		b->p = op < 2 ? rt_calloc(1, b->len) : rt_malloc(b->len);
		if (!b->p) {
			q->failed++;
			return;
		}
		if (op < 2)
			for (size_t i = 0; i < b->len; i += 4096)
				q->bad_bytes += b->p[i] != 0;
		seq_mark(b);
	} else if (op < 5) {
		q->bad_bytes += !seq_intact(b, b->len);
		rt_free(b->p);
		b->p = NULL;
	} else {
		size_t len = op < 8 ? b->len + (seq_rnd(q) % 2 ? 1 : -1) *
						       (seq_rnd(q) % (b->len / 4 + 2))
				    : seq_size(q);
		if (len == 0 || len > 64 * UNIT_SIZE)
			len = 1;
		unsigned char *p = rt_realloc(b->p, len);
		if (!p) {
			q->failed++;
			return;
		}
		b->p = p;
		q->bad_bytes += !seq_intact(b, len < b->len ? len : b->len);
		b->len = len;
		seq_mark(b);
	}
}

/* Every block checked and freed. */
static void seq_free_all(struct heapseq *q)
{
	for (unsigned i = 0; i < q->nslot; i++) {
		struct blk *b = &q->slot[i];
		if (b->p) {
			q->bad_bytes += !seq_intact(b, b->len);
			rt_free(b->p);
			b->p = NULL;
		}
	}
}

/* The page heap's counts (pages_check) and the fitted blocks' (fit_check) recomputed
 * after step: false, and said on
 * stderr, at the first difference. */
static bool seq_consistent(unsigned step)
{
	size_t where;
	const char *why = pages_check(&where);
	if (why) {
		fprintf(stderr, "  after step %u: %s (unit %zu)\n", step, why, where);
		return false;
	}
	why = fit_check();
	if (why)
		fprintf(stderr, "  after step %u: %s (fitted blocks)\n", step, why);
	return !why;
}

#endif
