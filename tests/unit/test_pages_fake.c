/* test_pages_fake.c - the page heap on the fake kernel (fake_kernel.c), under 2m with a
 * pool of 40 pages: a random sequence of mallocs, reallocs and frees with
 * pages_check() after every step, while the fake pool runs out, refuses every map for
 * a while (units fall to THP) and gives MADV_DONTNEED errors (units given back stay
 * marked resident). The fake kernel is in place before the runtime starts: a
 * constructor of a higher priority than the runtime's. At the end every page of the
 * fake's pool is back in it, or in a unit the heap uses or keeps. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "fake_kernel.h"
#include "heap.h"

#define NSLOT 48
#define STEPS 3000
#define MB ((size_t)1 << 20)
#define POOL 40

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_reset();
	fk_machine_default();
	fk_pool(2 * MB, POOL, POOL);
	fk_install();
	setenv("SUPERPAGE_BACKING", "2m", 1);
}

struct blk { unsigned char *p; size_t len; unsigned char tag; };
static struct blk slot[NSLOT];
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return rng >> 11;
}

static size_t some_size(void)
{
	uint64_t r = rnd(), k = r % 100;
	if (k < 45)
		return 1 + (r >> 8) % SMALL_MAX;
	if (k < 75)
		return SMALL_MAX + 1 + (r >> 8) % (MEDIUM_MAX - SMALL_MAX);
	if (k < 95)
		return MEDIUM_MAX + 1 + (r >> 8) % (6 * MB);
	return ((r >> 8) % 4 + 1) * 2 * MB;
}

static bool intact(const struct blk *b, size_t len)
{
	for (size_t i = 0; i < len; i += 4096)
		if (b->p[i] != b->tag)
			return false;
	return len < b->len || b->p[b->len - 1] == b->tag;
}

static void mark(struct blk *b)
{
	for (size_t i = 0; i < b->len; i += 4096)
		b->p[i] = b->tag;
	b->p[b->len - 1] = b->tag;
}

static void test_random_on_fake_pool(void)
{
	CHECK(rt_init());
	unsigned bad_bytes = 0, failed = 0;
	const char *why = NULL;
	size_t where = 0, fell = 0;
	for (unsigned step = 0; step < STEPS && !why; step++) {
		/* The pool refuses every map for a while; then madvise fails for a while. */
		if (step == STEPS / 3)
			fk_mmap_fail_huge(2 * MB, ENOMEM);
		if (step == STEPS / 2) {
			fk_mmap_fail_huge(2 * MB, 0);
			fk_madvise_fail(MADV_DONTNEED, EAGAIN);
		}
		if (step == 2 * STEPS / 3)
			fk_madvise_fail(MADV_DONTNEED, 0);
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
			size_t len = op < 8 ? b->len + (rnd() % (b->len / 4 + 2)) : some_size();
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
		if ((why = pages_check(&where)) != NULL)
			fprintf(stderr, "  step %u: %s (unit %zu)\n", step, why, where);
	}
	struct rt_stats st;
	rt_stats_get(&st);
	for (int f = 0; f < SP_FALL_COUNT; f++)
		fell += st.falls[SP_BACKING_2M][f];
	for (unsigned i = 0; i < NSLOT; i++) {
		if (slot[i].p) {
			bad_bytes += !intact(&slot[i], slot[i].len);
			rt_free(slot[i].p);
			slot[i].p = NULL;
		}
	}
	if (!why && (why = pages_check(&where)) != NULL)
		fprintf(stderr, "  at the end: %s (unit %zu)\n", why, where);
	CHECK(why == NULL);
	CHECK_EQ(bad_bytes, 0);
	CHECK_EQ(failed, 0);
	/* Units were had from the pool, and the pool ran out or refused. */
	CHECK(st.units_peak > 0);
	CHECK(fell > 0);
	/* Every pool page is back, or in a unit of the heap's: in use or kept. */
	rt_stats_get(&st);
	long out = POOL - fk_pool_free(2 * MB);
	uint64_t held = st.units[SP_BACKING_2M] + st.kept_units;
	if (out < 0 || (uint64_t)out > held)
		fprintf(stderr, "  pool: %ld pages out, %llu 2m units, %llu kept\n", out,
			(unsigned long long)st.units[SP_BACKING_2M], (unsigned long long)st.kept_units);
	CHECK(out >= 0 && (uint64_t)out <= held);
}

int main(void)
{
	RUN(test_random_on_fake_pool);
	fk_uninstall();
	return CHECK_DONE();
}
