/* test_pages.c - the page heap under a random sequence of mallocs, reallocs and frees
 * of every kind of block (objects, medium runs, long runs across units, whole units),
 * with pages_check() recomputing its counts and lists after every step and every
 * block's pages checked for their owner's bytes before it is freed or resized. On the
 * real kernel, under the backing SUPERPAGE_BACKING names (tests/runtime/heap runs it under 2m
 * with a small pool, so that units fall to THP midway), and under ASan/UBSan too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "heapseq.h"
#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/pageheap.h"
#include "runtime.h"

#define NSLOT 64
#define STEPS 4000
#define MB ((size_t)1 << 20)

static uint64_t kept_units(uint64_t *released, uint64_t *reused)
{
	struct rt_stats st;
	rt_stats_get(&st);
	*released = st.released_units;
	*reused = st.reused_units;
	return st.kept_units;
}

/* Whether the heap's units are hugetlb ones (tests/runtime/heap runs this under 2m). */
static bool hugetlb_policy(void)
{
	const char *b = getenv("SUPERPAGE_BACKING");
	return b && (!strcmp(b, "2m") || !strcmp(b, "1g"));
}

/* Empty units kept for the next block are moved into a block they cannot hold where it
 * lies, in place of units it would fault in new: a hole of 2 units between two blocks
 * is kept when its block is freed, and its pages are moved into a block of 4 units
 * made elsewhere (dsize: whole units, or a run of pages across them), none given
 * back (under 2m or 1g they stay where they are, in their chunk: a hugetlb page is
 * not moved); that block, calloc'd, reads as zero all the same. (In a child forked first:
 * on a heap that holds nothing else.) */
static void kept_units_moved(size_t dsize)
{
	CHECK(rt_init());
	uint64_t r0, r1, r2, u0, u1, u2;
	unsigned char *a = rt_malloc(4 * MB), *b = rt_malloc(4 * MB), *c = rt_malloc(4 * MB);
	CHECK(a && b && c);
	if (!a || !b || !c)
		return;
	memset(b, 1, 4 * MB);
	uint64_t k0 = kept_units(&r0, &u0);
	rt_free(b);
	uint64_t k1 = kept_units(&r1, &u1);
	CHECK_EQ(k1, k0 + 2);
	unsigned char *d = rt_calloc(1, dsize);
	CHECK(d != NULL);
	if (!d)
		return;
	uint64_t k2 = kept_units(&r2, &u2);
	if (hugetlb_policy()) { /* kept in their chunk: neither moved nor given back */
		CHECK_EQ(k2, k1);
		CHECK_EQ(r2, r1);
		CHECK_EQ(u2, u1);
	} else {
		CHECK_EQ(k2, k0);
		CHECK_EQ(r2, r1);
		CHECK_EQ(u2 - u1, 2);
	}
	CHECK(d < b || d >= b + 4 * MB);
	size_t nonzero = 0;
	for (size_t i = 0; i < dsize; i += 64)
		nonzero += d[i] != 0;
	CHECK_EQ(nonzero, 0);
	/* and a block the kept units hold takes them where they are: none given back */
	rt_free(c);
	uint64_t k3 = kept_units(&r1, &u1);
	unsigned char *e = rt_malloc(4 * MB);
	CHECK(e != NULL);
	CHECK_EQ(kept_units(&r2, &u2), k3 - 2);
	CHECK_EQ(r2, r1);
	rt_free(a);
	rt_free(d);
	rt_free(e);
}

static void test_kept_units_moved(void)
{
	const size_t sizes[] = { 8 * MB, 7 * MB + 4096 };
	for (size_t i = 0; i < 2; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			kept_units_moved(sizes[i]);
			fflush(stdout);
			_exit(check_fails_ ? 1 : 0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

static void test_random_sequence(void)
{
	static struct blk slot[NSLOT];
	struct heapseq q = { slot, NSLOT, 0x9e3779b97f4a7c15ull, 13 * MB, 0, 0 };
	bool ok = true;
	CHECK(rt_init());
	for (unsigned step = 0; step < STEPS && ok; step++) {
		seq_step(&q);
		ok = seq_consistent(step);
	}
	seq_free_all(&q);
	CHECK(ok && seq_consistent(STEPS));
	CHECK_EQ(q.bad_bytes, 0);
	CHECK_EQ(q.failed, 0);
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
	RUN(test_kept_units_moved);
	RUN(test_long_runs_pack);
	RUN(test_random_sequence);
	return CHECK_DONE();
}
