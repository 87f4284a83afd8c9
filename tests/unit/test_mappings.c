/* test_mappings.c - the program's large mappings on hugetlb units (mappings.c,
 * demote.c) on the fake kernel (fake_kernel.c), under 2m with a pool of 8 pages: the
 * pages_* calls that mmap.c makes, called directly, with pages_check() after every
 * step. A model keeps, per page of the range, whether the program owns it (and in
 * which span, changed by it or not) and the byte it holds (at the page's first and
 * last byte); ownership, contents, the units in use, their backing (as the fake
 * kernel has it mapped) and the pool's pages are compared with it. The fake kernel is
 * in place before the runtime starts: a constructor of a higher priority than the
 * runtime's. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"
#include "fake_kernel.h"
#include "life.h"
#include "malloc/malloc.h"
#include "pageheap/units.h"
#include "runtime/common/xorshift.h"

#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

#define MB ((size_t)1 << 20)
#define POOL 8
#define PPU PAGES_PER_UNIT
#define MAXU 64                 /* units of the range the model follows */
#define MAXP (MAXU * PPU)
#define MAXID (1u << 20)        /* model span ids */
#define STEPS 2500
#define SECOND 1000000000ull

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_reset();
	fk_machine_default();
	fk_pool(2 * MB, POOL, POOL);
	fk_install();
	setenv("SUPERPAGE_BACKING", "2m", 1);
}

/* ---------- the range, the heap's checks ---------- */

static unsigned char *pa(size_t p) { return (unsigned char *)(pg.base + (p << PAGE_SHIFT)); }
static size_t pidx(const void *a) { return page_of((uintptr_t)a); }

static bool heap_ok_(const char *what, int line)
{
	size_t u;
	const char *why = pages_check(&u);
	if (why)
		printf("  pages_check after %s (line %d): %s (unit %zu)\n", what, line, why, u);
	return !why;
}
#define HEAP_OK(what) CHECK(heap_ok_(what, __LINE__))

/* The hugetlb page size the fake kernel has at address a: 0 for base pages or THP,
 * -1 if nothing is mapped there. */
static long long kernel_hpage(const void *a)
{
	struct fk_map_info mi;
	return fk_map_find(a, &mi) < 0 ? -1 : (long long)mi.hpage;
}

static uint64_t falls_2m(enum sp_fall why)
{
	struct rt_stats st;
	rt_stats_get(&st);
	return st.falls[SP_BACKING_2M][why];
}

static bool all_zero(const unsigned char *p, size_t len)
{
	static const unsigned char zero[4096];
	for (size_t i = 0; i < len; i += sizeof zero)
		if (memcmp(p + i, zero, len - i < sizeof zero ? len - i : sizeof zero))
			return false;
	return true;
}

/* ---------- the model ---------- */

static struct {
	unsigned char own[MAXP];  /* 1: the program's */
	int16_t data[MAXP];       /* the byte its first and last byte hold, -1: unknown */
	uint32_t span[MAXP];      /* which span of the runtime's holds it (0: none) */
	uint32_t next_id;
	unsigned char foreign[MAXID]; /* per span: the program changed some of it */
} mdl;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	return xorshift64(&rng);
}

static void m_reset(void)
{
	memset(mdl.own, 0, sizeof mdl.own);
	memset(mdl.span, 0, sizeof mdl.span);
	memset(mdl.data, 0xff, sizeof mdl.data);
}

static uint32_t m_new_id(bool foreign)
{
	if (++mdl.next_id >= MAXID)
		mdl.next_id = 1; /* (never reached: a few ids a step) */
	mdl.foreign[mdl.next_id] = foreign;
	return mdl.next_id;
}

static bool in_model(size_t p, size_t n) { return p + n <= MAXP; }

/* Pages [p, p+n) mapped by the program: zero, a span per unit. */
static void m_map(size_t p, size_t n)
{
	uint32_t id = 0;
	for (size_t i = p; i < p + n; i++) {
		if (i == p || i % PPU == 0)
			id = m_new_id(false);
		mdl.own[i] = 1;
		mdl.data[i] = 0;
		mdl.span[i] = id;
	}
}

/* Each run of one span id in unit u that follows another run of it in the unit (a
 * hole was unmapped in between) is a span of its own now. */
static void m_resplit(size_t u)
{
	uint32_t seen[PPU];
	size_t nseen = 0;
	for (size_t i = u * PPU; i < (u + 1) * PPU;) {
		uint32_t id = mdl.span[i];
		size_t e = i + 1;
		while (e < (u + 1) * PPU && mdl.span[e] == id)
			e++;
		if (id) {
			bool again = false;
			for (size_t k = 0; k < nseen && !again; k++)
				again = seen[k] == id;
			if (again) {
				uint32_t to = m_new_id(mdl.foreign[id]);
				for (size_t k = i; k < e; k++)
					mdl.span[k] = to;
				id = to;
			}
			seen[nseen++] = id;
		}
		i = e;
	}
}

static void m_unmap(size_t p, size_t n)
{
	if (p >= MAXP)
		return;
	if (p + n > MAXP)
		n = MAXP - p;
	for (size_t i = p; i < p + n; i++) {
		mdl.own[i] = 0;
		mdl.span[i] = 0;
		mdl.data[i] = -1;
	}
	if (n)
		for (size_t u = p / PPU; u <= (p + n - 1) / PPU; u++)
			m_resplit(u);
}

static bool m_unit_used(size_t u)
{
	for (size_t i = u * PPU; i < (u + 1) * PPU; i++)
		if (mdl.own[i])
			return true;
	return false;
}

static bool m_all_own(size_t p, size_t n)
{
	for (size_t i = p; i < p + n; i++)
		if (!mdl.own[i])
			return false;
	return n > 0;
}

/* A page of [p, p+n) in a unit the program has pages of, that is not its own: where
 * the kernel would find nothing mapped. */
static bool m_hole(size_t p, size_t n)
{
	for (size_t i = p; i < p + n; i++)
		if (!mdl.own[i] && m_unit_used(i / PPU))
			return true;
	return false;
}

static bool m_foreign(size_t p, size_t n)
{
	for (size_t i = p; i < p + n; i++)
		if (mdl.own[i] && mdl.foreign[mdl.span[i]])
			return true;
	return false;
}

/* The program writes a fresh byte (never 0) to each page it owns in [p, p+n). */
static void m_write(size_t p, size_t n)
{
	for (size_t i = p; i < p + n; i++) {
		if (!mdl.own[i])
			continue;
		unsigned char b = (unsigned char)(1 + rnd() % 255);
		pa(i)[0] = b;
		pa(i)[PAGE_SIZE - 1] = b;
		mdl.data[i] = b;
	}
}

/* Owned pages of [p, p+n) whose bytes differ from the model's (the first one said). */
static unsigned m_bad_data(size_t p, size_t n)
{
	unsigned bad = 0;
	for (size_t i = p; i < p + n && i < MAXP; i++) {
		if (!mdl.own[i] || mdl.data[i] < 0)
			continue;
		if (pa(i)[0] != mdl.data[i] || pa(i)[PAGE_SIZE - 1] != mdl.data[i]) {
			if (!bad)
				printf("  page %zu (unit %zu, +%zu) holds %u/%u, not %d\n", i, i / PPU,
				       i % PPU, pa(i)[0], pa(i)[PAGE_SIZE - 1], mdl.data[i]);
			bad++;
		}
	}
	return bad;
}

/* pages_program_owns for each page of [p, p+n) against the model: the mismatches. */
static unsigned owns_bad(size_t p, size_t n)
{
	unsigned bad = 0;
	for (size_t i = p; i < p + n; i++) {
		bool want = i < MAXP && mdl.own[i], got = pages_program_owns((uintptr_t)pa(i), PAGE_SIZE);
		if (want != got) {
			if (!bad)
				printf("  page %zu (unit %zu, +%zu): owns says %d, model %d\n", i,
				       i / PPU, i % PPU, got, want);
			bad++;
		}
	}
	return bad;
}

/* k random windows below the frontier: pages_program_owns of the window is true
 * exactly when the model owns all of it, pages_has_foreign when some owned page of it
 * is in a changed span. The mismatches. */
static unsigned windows_bad(unsigned k)
{
	size_t top = pg.frontier * PPU < MAXP ? pg.frontier * PPU : MAXP;
	unsigned bad = 0;
	for (unsigned j = 0; j < k && top; j++) {
		size_t p = rnd() % top, n = 1 + rnd() % (rnd() % 4 ? 64 : 2 * PPU);
		if (p + n > top)
			n = top - p;
		bool owns = pages_program_owns((uintptr_t)pa(p), n << PAGE_SHIFT);
		bool foreign = pages_has_foreign((uintptr_t)pa(p), n << PAGE_SHIFT);
		if (owns != m_all_own(p, n) || foreign != m_foreign(p, n)) {
			if (!bad)
				printf("  window %zu+%zu: owns %d (model %d), foreign %d (model %d)\n",
				       p, n, owns, m_all_own(p, n), foreign, m_foreign(p, n));
			bad++;
		}
	}
	return bad;
}

/* The units below the frontier: in use exactly when the program owns a page of them
 * (an emptied unit goes back), each in use a mapping unit whose backing is what the
 * fake kernel has mapped there; and every pool page out is in a 2m unit. */
static unsigned units_bad(void)
{
	unsigned bad = 0;
	for (size_t u = 0; u < pg.frontier && u < MAXU; u++) {
		const struct unit *x = &pg.units[u];
		bool used = m_unit_used(u), in_use = x->state != U_FREE;
		long long hp = kernel_hpage((void *)unit_addr(u));
		bool huge = x->backing == SP_BACKING_2M;
		if (used != in_use || (in_use && (!x->mapping || x->state != U_HEAP ||
						  huge != (hp == (long long)(2 * MB))))) {
			if (!bad)
				printf("  unit %zu: state %u mapping %u backing %u, kernel's page %lld,"
				       " model %s\n", u, x->state, x->mapping, x->backing, hp,
				       used ? "used" : "empty");
			bad++;
		}
	}
	for (size_t u = MAXU; u < pg.frontier; u++)
		if (pg.units[u].state != U_FREE) {
			printf("  unit %zu, past the model, is in use\n", u);
			bad++;
		}
	struct rt_stats st;
	rt_stats_get(&st);
	if ((uint64_t)(POOL - fk_pool_free(2 * MB)) != st.units[SP_BACKING_2M]) {
		printf("  pool: %ld pages out, %llu 2m units\n", POOL - fk_pool_free(2 * MB),
		       (unsigned long long)st.units[SP_BACKING_2M]);
		bad++;
	}
	return bad;
}

/* Everything the model has checked: the heap, ownership page by page up to the
 * frontier (and a unit past it), random windows, contents, units and the pool. */
#define ALL_OK(what)                                                                \
	do {                                                                        \
		HEAP_OK(what);                                                      \
		CHECK_EQ(owns_bad(0, (pg.frontier + 1) * PPU < MAXP ? (pg.frontier + 1) * PPU \
								     : MAXP), 0); \
		CHECK_EQ(windows_bad(32), 0);                                        \
		CHECK_EQ(m_bad_data(0, MAXP), 0);                                    \
		CHECK_EQ(units_bad(), 0);                                            \
	} while (0)

/* Maps through the runtime and the model; NULL (and a failed check) if not mapped. */
static unsigned char *map_units(size_t np)
{
	int err = -1;
	fk_clock_advance(2 * SECOND); /* (no 2m refusal of before is remembered) */
	unsigned char *a = pages_map_program(np << PAGE_SHIFT, 0, true, &err);
	CHECK(a != NULL);
	CHECK_EQ(err, 0);
	if (a && !in_model(pidx(a), np)) {
		printf("  mapped at unit %zu, past the model's %u\n", pidx(a) / PPU, MAXU);
		CHECK(0);
		return NULL;
	}
	if (a) {
		CHECK(all_zero(a, np << PAGE_SHIFT));
		m_map(pidx(a), np);
		m_write(pidx(a), np);
	}
	return a;
}

static void unmap_pages(size_t p, size_t n)
{
	pages_unmap((uintptr_t)pa(p), n << PAGE_SHIFT);
	m_unmap(p, n);
}

/* Every mapping unmapped: every unit free, every pool page back. */
static void unmap_all(void)
{
	pages_unmap(pg.base, pg.frontier << UNIT_SHIFT);
	m_reset();
	HEAP_OK("unmapping everything");
	CHECK_EQ(units_bad(), 0);
	CHECK_EQ(fk_pool_free(2 * MB), POOL);
	struct rt_stats st;
	rt_stats_get(&st);
	CHECK_EQ(st.units[SP_BACKING_2M] + st.units[SP_BACKING_THP] + st.units[SP_BACKING_4K], 0);
}

/* ---------- the tests ---------- */

/* 3 units and a tail land on 2m units while the pool holds them; 6 more with 4 left in
 * the pool, 4 on 2m and the rest on THP (one fall, counted); with the pool empty, none
 * at all (NULL, counted). Their memory reads zero and keeps what is written. */
static void test_map_2m_then_thp_then_none(void)
{
	CHECK(rt_init());
	m_reset();
	uint64_t empty0 = falls_2m(SP_FALL_POOL_EMPTY);
	size_t na = 3 * PPU + 100;
	unsigned char *a = map_units(na);
	if (!a)
		return;
	CHECK((uintptr_t)a % UNIT_SIZE == 0);
	ALL_OK("mapping 3 units and a tail");
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 4);
	for (size_t u = 0; u < 4; u++)
		CHECK_EQ(kernel_hpage(a + u * UNIT_SIZE), 2 * MB);
	CHECK_EQ(falls_2m(SP_FALL_POOL_EMPTY), empty0);
	CHECK(pages_program_owns((uintptr_t)a, na << PAGE_SHIFT));
	CHECK(!pages_program_owns((uintptr_t)a, (na + 1) << PAGE_SHIFT));
	CHECK(!pages_program_owns((uintptr_t)a + (na << PAGE_SHIFT), PAGE_SIZE));
	CHECK(!pages_program_owns(pg.base - PAGE_SIZE, 2 * PAGE_SIZE));
	CHECK(!pages_has_foreign((uintptr_t)a, na << PAGE_SHIFT));

	unsigned char *b = map_units(6 * PPU);
	if (!b)
		return;
	ALL_OK("mapping 6 units with 4 in the pool");
	CHECK_EQ(fk_pool_free(2 * MB), 0);
	for (size_t u = 0; u < 6; u++) {
		struct fk_map_info mi;
		CHECK_EQ(fk_map_find(b + u * UNIT_SIZE, &mi), 0);
		CHECK_EQ(mi.hpage, u < 4 ? 2 * MB : 0);
		if (u >= 4)
			CHECK_EQ(mi.advice, 1); /* THP: advised huge */
	}
	CHECK_EQ(falls_2m(SP_FALL_POOL_EMPTY), empty0 + 1);
	struct rt_stats st;
	rt_stats_get(&st);
	CHECK_EQ(st.units[SP_BACKING_2M], POOL);
	CHECK_EQ(st.units[SP_BACKING_THP], 2);

	/* The pool is empty: no hugetlb page at all, the kernel's mapping serves it. */
	int err = -1;
	fk_clock_advance(2 * SECOND);
	CHECK(pages_map_program(2 * UNIT_SIZE, 0, true, &err) == NULL);
	CHECK_EQ(err, 0);
	CHECK_EQ(falls_2m(SP_FALL_POOL_EMPTY), empty0 + 2);
	ALL_OK("a mapping refused");

	/* Without hugetlb (where mremap moves pages): units of plain memory. */
	unsigned char *c = pages_map_program(UNIT_SIZE + PAGE_SIZE, 0, false, &err);
	CHECK(c != NULL);
	if (c) {
		CHECK_EQ(kernel_hpage(c), 0);
		CHECK_EQ(kernel_hpage(c + UNIT_SIZE), 0);
		CHECK(all_zero(c, UNIT_SIZE + PAGE_SIZE));
		m_map(pidx(c), PPU + 1);
		m_write(pidx(c), PPU + 1);
		ALL_OK("a mapping of plain memory");
		CHECK_EQ(falls_2m(SP_FALL_POOL_EMPTY), empty0 + 2);
	}

	/* Unmapped: the pool pages go back with their units. */
	unmap_pages(pidx(b), 6 * PPU);
	ALL_OK("unmapping the 6 units");
	CHECK_EQ(fk_pool_free(2 * MB), 4);
	CHECK_EQ(kernel_hpage(b), 0);
	unmap_all();
}

/* Parts unmapped: of the middle (the span cut in two), the head, the tail, across
 * units, a whole unit; ownership page by page and over random windows as the model
 * says, data kept, emptied units given back with their pool pages. */
static void test_unmap_parts(void)
{
	m_reset();
	unsigned char *a = map_units(3 * PPU);
	if (!a)
		return;
	size_t p0 = pidx(a);
	ALL_OK("mapping 3 units");
	unmap_pages(p0 + 100, 100);
	ALL_OK("unmapping a middle part");
	CHECK(pages_program_owns((uintptr_t)pa(p0), 100 << PAGE_SHIFT));
	CHECK(!pages_program_owns((uintptr_t)pa(p0 + 99), 2 << PAGE_SHIFT));
	CHECK(pages_program_owns((uintptr_t)pa(p0 + 200), (PPU - 200) << PAGE_SHIFT));
	CHECK_EQ(kernel_hpage(a), 2 * MB); /* (a part of a unit: it stays) */
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 3);
	/* The right part is a span of its own: it can be unmapped in turn. */
	unmap_pages(p0 + 300, 10);
	ALL_OK("unmapping inside the right part");
	unmap_pages(p0, 50);
	ALL_OK("unmapping the head");
	unmap_pages(p0 + 3 * PPU - 64, 64);
	ALL_OK("unmapping the tail");
	unmap_pages(p0 + PPU - 10, 20);
	ALL_OK("unmapping across units");
	/* Pages never mapped, and pages unmapped already: nothing changes. */
	unmap_pages(p0 + 3 * PPU, PPU);
	unmap_pages(p0 + 100, 100);
	ALL_OK("unmapping pages not the program's");
	unmap_pages(p0 + PPU, PPU);
	ALL_OK("unmapping a whole unit");
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 2);
	CHECK_EQ(pg.units[p0 / PPU + 1].state, U_FREE);
	CHECK_EQ(kernel_hpage(a + UNIT_SIZE), 0);
	/* Ownership over many random windows of what is left. */
	CHECK_EQ(windows_bad(500), 0);
	unmap_pages(p0 + 2 * PPU, PPU - 64);
	ALL_OK("unmapping the rest of the last unit");
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 1);
	unmap_all();
}

/* Many units emptied by one unmap (more than it gathers to give back after its
 * lock): every one given back. */
static void test_unmap_many_units(void)
{
	m_reset();
	int err = -1;
	struct rt_stats st0, st;
	rt_stats_get(&st0);
	unsigned char *a = pages_map_program(12 * UNIT_SIZE, 0, false, &err);
	CHECK(a != NULL);
	if (!a || !in_model(pidx(a), 12 * PPU))
		return;
	m_map(pidx(a), 12 * PPU);
	m_write(pidx(a), 12 * PPU);
	ALL_OK("mapping 12 units of plain memory");
	unmap_pages(pidx(a) + 10, 12 * PPU - 20);
	ALL_OK("unmapping all but the ends");
	rt_stats_get(&st);
	CHECK_EQ(st.released_units - st0.released_units, 10);
	for (size_t u = pidx(a) / PPU + 1; u < pidx(a) / PPU + 11; u++)
		CHECK(pg.units[u].state == U_FREE && !pg.units[u].resident && !pg.units[u].mapping);
	unmap_all();
}

/* Grown in place: into the free rest of its unit (pages that held data before read
 * zero), into a hole it had unmapped, into free units after it; refused from a place
 * that is not its end, into pages that are not free, into units that are not. */
static void test_grow(void)
{
	m_reset();
	size_t na = PPU + 300;
	unsigned char *a = map_units(na);
	if (!a)
		return;
	size_t p0 = pidx(a), e = p0 + na;
	CHECK(pages_grow_mapping((uintptr_t)pa(e), 100 << PAGE_SHIFT));
	m_map(e, 100);
	for (size_t i = e; i < e + 100; i++)
		mdl.span[i] = mdl.span[e - 1];
	ALL_OK("growing into the rest of the unit");
	m_write(e, 100);
	e += 100;
	/* Not from the end of the mapping. */
	CHECK(!pages_grow_mapping((uintptr_t)pa(p0 + 10), PAGE_SIZE));
	CHECK(!pages_grow_mapping((uintptr_t)pa(e), 0));
	ALL_OK("growing refused from the middle");
	/* Pages that held the program's data: zero when grown into again. */
	unmap_pages(e - 50, 50);
	CHECK(pa(e - 50)[0] != 0 && pa(e - 1)[PAGE_SIZE - 1] != 0); /* (still there) */
	CHECK(pages_grow_mapping((uintptr_t)pa(e - 50), 50 << PAGE_SHIFT));
	CHECK(all_zero(pa(e - 50), 50 << PAGE_SHIFT));
	m_map(e - 50, 50);
	for (size_t i = e - 50; i < e; i++)
		mdl.span[i] = mdl.span[e - 51];
	ALL_OK("growing over pages that held data");
	m_write(e - 50, 50);
	/* Into a hole: as far as it goes, not past it. */
	unmap_pages(p0 + 200, 10);
	CHECK(pa(p0 + 200)[0] != 0);
	CHECK(!pages_grow_mapping((uintptr_t)pa(p0 + 200), 20 << PAGE_SHIFT));
	ALL_OK("growing refused over owned pages");
	CHECK(pages_grow_mapping((uintptr_t)pa(p0 + 200), 10 << PAGE_SHIFT));
	CHECK(all_zero(pa(p0 + 200), 10 << PAGE_SHIFT));
	m_map(p0 + 200, 10);
	for (size_t i = p0 + 200; i < p0 + 210; i++)
		mdl.span[i] = mdl.span[p0 + 199];
	ALL_OK("growing into a hole");
	/* Into the rest of its unit and a free unit after it (on the pool's pages). */
	size_t rest = 2 * PPU - (e - p0), add = rest + 7;
	CHECK_EQ(pg.units[p0 / PPU + 2].state, U_FREE);
	CHECK(pages_grow_mapping((uintptr_t)pa(e), add << PAGE_SHIFT));
	CHECK(all_zero(pa(e), add << PAGE_SHIFT));
	m_map(e, add);
	for (size_t i = e; i < e + rest; i++)
		mdl.span[i] = mdl.span[e - 1];
	ALL_OK("growing into a free unit");
	CHECK_EQ(kernel_hpage(pa(p0 + 2 * PPU)), 2 * MB);
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 3);
	m_write(e, add);
	e += add;
	/* The unit after the next one is taken (a fixed mapping over it, free): growing
	 * into the next one only is allowed, into both is refused. */
	size_t t = (p0 / PPU + 4) * PPU;
	CHECK_EQ(pages_fixed_into((uintptr_t)pa(t), PAGE_SIZE), 0);
	m_map(t, 1);
	mdl.foreign[mdl.span[t]] = 1;
	ALL_OK("a fixed mapping in a free unit");
	CHECK(!pages_grow_mapping((uintptr_t)pa(e), (PPU - 7 + PPU + 1) << PAGE_SHIFT));
	ALL_OK("growing refused into a unit taken");
	CHECK(pages_grow_mapping((uintptr_t)pa(e), (PPU - 7 + PPU) << PAGE_SHIFT));
	m_map(e, PPU - 7 + PPU);
	for (size_t i = e; i < e + PPU - 7; i++)
		mdl.span[i] = mdl.span[e - 1];
	CHECK(all_zero(pa(e), (PPU - 7 + PPU) << PAGE_SHIFT));
	ALL_OK("growing up to a unit taken");
	unmap_all();
}

/* Demoted: part of a hugetlb unit copied to THP in place, its data (and its
 * neighbours') intact; refused where a page of a mapping's unit is not the
 * program's, or where the copy cannot be made (nothing changed). Fixed mappings: over
 * unmapped pages of a mapping's unit and free units (the pages the program's again,
 * changed), not past the frontier nor onto the heap's own pages; changed spans
 * marked (the mark on a hugetlb unit is no change); unmapped, plain memory back. */
static void test_demote_and_fixed(void)
{
	m_reset();
	unsigned char *a = map_units(2 * PPU);
	if (!a)
		return;
	size_t p0 = pidx(a);
	CHECK_EQ(pages_demote((uintptr_t)pa(p0 + 10), 10 << PAGE_SHIFT), 0);
	ALL_OK("demoting part of a unit");
	CHECK_EQ(kernel_hpage(a), 0);
	CHECK_EQ(kernel_hpage(a + UNIT_SIZE), 2 * MB);
	CHECK_EQ(fk_pool_free(2 * MB), POOL - 1);
	/* A change noted on a hugetlb unit changes nothing; on the demoted one, its span. */
	pages_note_foreign((uintptr_t)pa(p0 + PPU), 10 << PAGE_SHIFT);
	CHECK(!pages_has_foreign((uintptr_t)pa(p0 + PPU), PPU << PAGE_SHIFT));
	pages_note_foreign((uintptr_t)pa(p0 + 10), 10 << PAGE_SHIFT);
	mdl.foreign[mdl.span[p0]] = 1;
	CHECK(pages_has_foreign((uintptr_t)pa(p0 + 500), PAGE_SIZE));
	ALL_OK("changes noted");

	/* A hole in unit 1: a window over it is refused (the unit left on its page); one
	 * beside it gets as far as the copy. */
	size_t u1 = p0 + PPU;
	unmap_pages(u1 + 100, 10);
	CHECK_EQ(pages_demote((uintptr_t)pa(u1 + 95), 10 << PAGE_SHIFT), -ENOMEM);
	CHECK_EQ(kernel_hpage(pa(u1)), 2 * MB);
	ALL_OK("a demote refused over a hole");
	/* The copy cannot be made (its hold and its map refused): refused, unchanged, the
	 * data intact. */
	int calls = fk_mmap_calls();
	fk_mmap_fail_next(2, ENOMEM);
	CHECK_EQ(pages_demote((uintptr_t)pa(u1), 50 << PAGE_SHIFT), -ENOMEM);
	CHECK_EQ(fk_mmap_calls() - calls, 2);
	fk_mmap_fail_next(0, 0);
	CHECK_EQ(kernel_hpage(pa(u1)), 2 * MB);
	ALL_OK("a demote whose copy failed");

	/* Where fixed mappings may land. */
	CHECK(pages_fixed_allowed((uintptr_t)pa(u1 + 100), 10 << PAGE_SHIFT));
	CHECK(pages_fixed_allowed((uintptr_t)pa(u1 + 90), 30 << PAGE_SHIFT));
	CHECK(pages_fixed_allowed((uintptr_t)pa(p0 + 2 * PPU), PPU << PAGE_SHIFT));
	CHECK(!pages_fixed_allowed(pg.base - PAGE_SIZE, 2 * PAGE_SIZE));
	CHECK(!pages_fixed_allowed(unit_addr(pg.frontier) - PAGE_SIZE, 2 * PAGE_SIZE));
	CHECK_EQ(pages_fixed_into(unit_addr(pg.frontier) - PAGE_SIZE, 2 * PAGE_SIZE), -EINVAL);
	ALL_OK("fixed mappings refused past the frontier");

	/* Into a hugetlb unit whose copy fails: the hole is unmapped again. */
	calls = fk_mmap_calls();
	fk_mmap_fail_next(2, ENOMEM);
	CHECK_EQ(pages_fixed_into((uintptr_t)pa(u1 + 90), 30 << PAGE_SHIFT), -ENOMEM);
	CHECK_EQ(fk_mmap_calls() - calls, 2);
	fk_mmap_fail_next(0, 0);
	CHECK_EQ(kernel_hpage(pa(u1)), 2 * MB);
	ALL_OK("a fixed mapping whose copy failed");
	/* Over the hole and its neighbours: the unit demoted, the hole the program's
	 * again and changed, the rest as it was (data intact). */
	CHECK_EQ(pages_fixed_into((uintptr_t)pa(u1 + 90), 30 << PAGE_SHIFT), 0);
	CHECK_EQ(kernel_hpage(pa(u1)), 0);
	CHECK_EQ(fk_pool_free(2 * MB), POOL);
	m_map(u1 + 100, 10); /* (one span of its own, changed) */
	mdl.foreign[mdl.span[u1 + 100]] = 1;
	/* (What the pages hold is the program's fixed mapping's, to come.) */
	for (size_t i = u1 + 100; i < u1 + 110; i++)
		mdl.data[i] = -1;
	ALL_OK("a fixed mapping over a hole");
	CHECK(pages_has_foreign((uintptr_t)pa(u1 + 105), PAGE_SIZE));
	CHECK(!pages_has_foreign((uintptr_t)pa(u1 + 90), 10 << PAGE_SHIFT));
	m_write(u1 + 100, 10);

	/* Into a free unit (pages of it: the rest stays free in a unit of mappings). */
	size_t f = p0 + 3 * PPU;
	CHECK_EQ(pg.units[f / PPU].state, U_FREE);
	CHECK_EQ(pages_fixed_into((uintptr_t)pa(f + 8), 16 << PAGE_SHIFT), 0);
	m_map(f + 8, 16);
	mdl.foreign[mdl.span[f + 8]] = 1;
	ALL_OK("a fixed mapping in a free unit");
	CHECK_EQ(pg.units[f / PPU].mapping, 1);
	CHECK(pages_fixed_allowed((uintptr_t)pa(f), PPU << PAGE_SHIFT));
	/* The program maps there and changes the protection; unmapped, the heap's plain
	 * read-write memory is back, and the unit goes. */
	CHECK_EQ(fk_os.mprotect(pa(f + 8), 16 << PAGE_SHIFT, PROT_READ), 0);
	unmap_pages(f + 8, 16);
	ALL_OK("unmapping a changed span");
	struct fk_map_info mi;
	CHECK_EQ(fk_map_find(pa(f + 8), &mi), 0);
	CHECK_EQ(mi.prot, PROT_READ | PROT_WRITE);
	CHECK_EQ(pg.units[f / PPU].state, U_FREE);
	/* The same within a unit of a mapping: the changed part is put back. */
	CHECK_EQ(fk_os.mprotect(pa(u1 + 100), 10 << PAGE_SHIFT, PROT_READ), 0);
	unmap_pages(u1 + 100, 5);
	CHECK_EQ(fk_map_find(pa(u1 + 100), &mi), 0);
	CHECK_EQ(mi.prot, PROT_READ | PROT_WRITE);
	ALL_OK("unmapping part of a changed span");
	CHECK_EQ(fk_os.mprotect(pa(u1 + 105), 5 << PAGE_SHIFT, PROT_READ | PROT_WRITE), 0);

	/* Demoted over owned pages of a hugetlb unit, as a fixed mapping does. */
	unsigned char *c = map_units(PPU);
	if (!c)
		return;
	CHECK_EQ(pages_fixed_into((uintptr_t)c + 10 * PAGE_SIZE, 5 << PAGE_SHIFT), 0);
	CHECK_EQ(kernel_hpage(c), 0);
	CHECK(!pages_has_foreign((uintptr_t)c, PPU << PAGE_SHIFT));
	ALL_OK("a fixed mapping over owned pages");
	unmap_all();
}

/* madvise on a hugetlb unit: DONTNEED zeroes exactly its part (the unit stays on its
 * hugetlb page), a hint changes nothing (not even asked of the kernel), a hole gives
 * ENOMEM (the pages around it zeroed still); on a demoted unit the kernel does it; a
 * change (DONTFORK) demotes the unit first. */
static void test_advise(void)
{
	m_reset();
	unsigned char *a = map_units(2 * PPU);
	if (!a)
		return;
	size_t p0 = pidx(a);
	CHECK_EQ(pages_advise((uintptr_t)pa(p0 + 10), 20 << PAGE_SHIFT, MADV_DONTNEED), 0);
	CHECK(all_zero(pa(p0 + 10), 20 << PAGE_SHIFT));
	for (size_t i = p0 + 10; i < p0 + 30; i++)
		mdl.data[i] = 0;
	CHECK(pa(p0 + 9)[PAGE_SIZE - 1] != 0 && pa(p0 + 30)[0] != 0);
	CHECK_EQ(kernel_hpage(a), 2 * MB);
	ALL_OK("DONTNEED on part of a unit");
	CHECK_EQ(pages_advise((uintptr_t)pa(p0 + PPU - 3), 6 << PAGE_SHIFT, MADV_DONTNEED), 0);
	CHECK(all_zero(pa(p0 + PPU - 3), 6 << PAGE_SHIFT));
	for (size_t i = p0 + PPU - 3; i < p0 + PPU + 3; i++)
		mdl.data[i] = 0;
	ALL_OK("DONTNEED across units");

	int will = fk_madvise_calls(MADV_WILLNEED);
	CHECK_EQ(pages_advise((uintptr_t)a, 2 * UNIT_SIZE, MADV_WILLNEED), 0);
	CHECK_EQ(fk_madvise_calls(MADV_WILLNEED), will);
	CHECK_EQ(kernel_hpage(a), 2 * MB);
	ALL_OK("a hint");

	/* A hole: ENOMEM, the mapped pages around it advised all the same. */
	unmap_pages(p0 + PPU + 100, 10);
	CHECK_EQ(pages_advise((uintptr_t)pa(p0 + PPU + 90), 30 << PAGE_SHIFT, MADV_DONTNEED), -ENOMEM);
	CHECK(all_zero(pa(p0 + PPU + 90), 10 << PAGE_SHIFT));
	CHECK(all_zero(pa(p0 + PPU + 110), 10 << PAGE_SHIFT));
	for (size_t i = p0 + PPU + 90; i < p0 + PPU + 120; i++)
		if (mdl.own[i])
			mdl.data[i] = 0;
	CHECK_EQ(pages_advise((uintptr_t)pa(p0 + PPU + 90), 30 << PAGE_SHIFT, MADV_WILLNEED), -ENOMEM);
	ALL_OK("DONTNEED over a hole");

	/* A demoted unit: the kernel's DONTNEED, exactly its part. */
	CHECK_EQ(pages_demote((uintptr_t)a, PAGE_SIZE), 0);
	CHECK_EQ(kernel_hpage(a), 0);
	m_write(p0, PPU);
	int dn = fk_madvise_calls(MADV_DONTNEED);
	CHECK_EQ(pages_advise((uintptr_t)pa(p0 + 40), 8 << PAGE_SHIFT, MADV_DONTNEED), 0);
	CHECK(fk_madvise_calls(MADV_DONTNEED) > dn);
	CHECK(all_zero(pa(p0 + 40), 8 << PAGE_SHIFT));
	for (size_t i = p0 + 40; i < p0 + 48; i++)
		mdl.data[i] = 0;
	ALL_OK("DONTNEED on a demoted unit");

	/* A change: the hugetlb unit demoted first, then the kernel's. */
	unsigned char *c = map_units(PPU);
	if (!c)
		return;
	int df = fk_madvise_calls(MADV_DONTFORK);
	CHECK_EQ(pages_advise((uintptr_t)c + PAGE_SIZE, 4 << PAGE_SHIFT, MADV_DONTFORK), 0);
	CHECK_EQ(fk_madvise_calls(MADV_DONTFORK), df + 1);
	CHECK_EQ(kernel_hpage(c), 0);
	ALL_OK("DONTFORK");

	CHECK_EQ(pages_advise_how(MADV_DONTNEED), ADV_ZERO);
	CHECK_EQ(pages_advise_how(MADV_DONTNEED_LOCKED), ADV_ZERO);
	CHECK_EQ(pages_advise_how(MADV_WILLNEED), ADV_NOTHING);
	CHECK_EQ(pages_advise_how(MADV_FREE), ADV_NOTHING);
	CHECK_EQ(pages_advise_how(MADV_HUGEPAGE), ADV_NOTHING);
	CHECK_EQ(pages_advise_how(MADV_DOFORK), ADV_NOTHING);
	CHECK_EQ(pages_advise_how(MADV_DONTFORK), ADV_CHANGE);
	CHECK_EQ(pages_advise_how(MADV_WIPEONFORK), ADV_CHANGE);
	CHECK_EQ(pages_advise_how(MADV_DONTDUMP), ADV_CHANGE);
	CHECK_EQ(pages_advise_how(MADV_POPULATE_WRITE), ADV_KERNEL);
	CHECK_EQ(pages_advise_how(MADV_REMOVE), ADV_KERNEL);
	CHECK_EQ(pages_advise_how(12345), ADV_KERNEL);
	unmap_all();
}

/* A change (DONTFORK) over a window with a hole in a 2m unit: the kernel advises the
 * mapped pages of it (the unit demoted first) and says ENOMEM. */
static void test_advise_change_over_hole(void)
{
	m_reset();
	unsigned char *a = map_units(PPU);
	if (!a)
		return;
	size_t p0 = pidx(a);
	unmap_pages(p0 + 100, 10);
	int df = fk_madvise_calls(MADV_DONTFORK);
	CHECK_EQ(pages_advise((uintptr_t)pa(p0 + 90), 30 << PAGE_SHIFT, MADV_DONTFORK), -ENOMEM);
	ALL_OK("DONTFORK over a hole");
	/* One call for the pages before the hole, one for those after it: none for it. */
	CHECK_EQ(fk_madvise_calls(MADV_DONTFORK) - df, 2);
	CHECK_EQ(kernel_hpage(a), 0);
	unmap_all();
}

/* ---------- the random sequence ---------- */

/* The pages a step changed, for the checks after it. */
static size_t touch_lo, touch_hi;

static void touch(size_t p, size_t n)
{
	touch_lo = p;
	touch_hi = p + n;
}

/* A random window of the range below the frontier (or a unit past it): of up to 32
 * pages, a unit or 3 units, the longer ones from 0 to 7 in 8 (big). */
static void window(size_t *p, size_t *n, bool past, unsigned big)
{
	size_t top = (pg.frontier + (past ? 1 : 0)) * PPU;
	if (top > MAXP)
		top = MAXP;
	*p = rnd() % top;
	uint64_t k = rnd() % 8;
	*n = k >= big ? 1 + rnd() % 32 : k % 2 ? 1 + rnd() % PPU : 1 + rnd() % (3 * PPU);
	if (*p + *n > top)
		*n = top - *p;
}

static unsigned step_map(void)
{
	size_t np = rnd() % 4 == 0 ? (1 + rnd() % 3) * PPU : PPU + rnd() % (3 * PPU);
	int err = -1;
	if (rnd() % 4 == 0)
		fk_clock_advance(2 * SECOND);
	unsigned char *a = pages_map_program(np << PAGE_SHIFT, 0, true, &err);
	if (!a)
		return err != 0; /* (the pool empty: the kernel's then) */
	if ((uintptr_t)a % UNIT_SIZE) {
		printf("  a mapping of %zu pages at page %zu: not aligned\n", np, pidx(a));
		return 1;
	}
	if (!in_model(pidx(a), np)) { /* (the range is fragmented: past the model's end) */
		pages_unmap((uintptr_t)a, np << PAGE_SHIFT);
		return 0;
	}
	m_map(pidx(a), np);
	if (m_bad_data(pidx(a), np)) /* (zero) */
		return 1;
	m_write(pidx(a), np);
	touch(pidx(a), np);
	return 0;
}

static unsigned step_grow(void)
{
	size_t top = pg.frontier * PPU < MAXP ? pg.frontier * PPU : MAXP, e = rnd() % top + 1;
	while (e < top && !(mdl.own[e - 1] && (!mdl.own[e] || e % PPU == 0)))
		e++;
	if (!mdl.own[e - 1])
		return 0;
	size_t np = 1 + rnd() % (rnd() % 2 ? 64 : 2 * PPU);
	size_t off = (e - 1) % PPU + 1, here = PPU - off < np ? PPU - off : np;
	size_t more = np - here, nu = (more + PPU - 1) / PPU, u1 = (e - 1) / PPU + 1;
	if (u1 + nu > MAXU - 2)
		return 0; /* (the model's end) */
	bool want = true;
	for (size_t i = e; i < e + here; i++)
		want = want && !mdl.own[i];
	for (size_t u = u1; u < u1 + nu; u++)
		want = want && !m_unit_used(u);
	bool got = pages_grow_mapping((uintptr_t)pa(e), np << PAGE_SHIFT);
	if (got != want) {
		printf("  growing at page %zu by %zu: %d, the model says %d\n", e, np, got, want);
		return 1;
	}
	if (!got)
		return 0;
	uint32_t id = mdl.span[e - 1];
	m_map(e, np);
	for (size_t i = e; i < e + here; i++)
		mdl.span[i] = id;
	if (m_bad_data(e, np)) { /* (zero) */
		printf("  grown pages at %zu+%zu are not zero\n", e, np);
		return 1;
	}
	touch(e - 1, np + 1);
	m_write(e, np);
	return 0;
}

static unsigned step_demote(void)
{
	size_t p, n;
	window(&p, &n, true, 4);
	touch(p, n);
	int want = m_hole(p, n) ? -ENOMEM : 0;
	int got = pages_demote((uintptr_t)pa(p), n << PAGE_SHIFT);
	if (got != want) {
		printf("  demoting %zu+%zu: %d, the model says %d\n", p, n, got, want);
		return 1;
	}
	for (size_t u = p / PPU; got == 0 && u <= (p + n - 1) / PPU && u < pg.frontier; u++)
		if (pg.units[u].state != U_FREE && is_hugetlb(pg.units[u].backing)) {
			printf("  unit %zu still hugetlb after a demote\n", u);
			return 1;
		}
	return 0;
}

/* A fixed mapping as mmap.c makes it: the pages made ready, the program's mapping
 * over them (fresh zero pages, read-write), its change noted. */
static unsigned step_fixed(void)
{
	size_t p, n;
	window(&p, &n, rnd() % 8 == 0, 2);
	/* (Mostly where the program has mappings: in free units, a unit each.) */
	for (unsigned k = 0; k < 4 && rnd() % 4 && !m_unit_used(p / PPU); k++)
		window(&p, &n, false, 2);
	touch(p, n);
	bool past = (p + n) > pg.frontier * PPU;
	if (pages_fixed_allowed((uintptr_t)pa(p), n << PAGE_SHIFT) == past) {
		printf("  fixed mapping allowed at %zu+%zu: %d\n", p, n, !past);
		return 1;
	}
	int got = pages_fixed_into((uintptr_t)pa(p), n << PAGE_SHIFT);
	if (got != (past ? -EINVAL : 0)) {
		printf("  fixed mapping at %zu+%zu: %d\n", p, n, got);
		return 1;
	}
	if (past)
		return 0;
	/* The pages it did not own: a changed span per run of them within a unit. */
	for (size_t i = p; i < p + n;) {
		if (mdl.own[i]) {
			i++;
			continue;
		}
		uint32_t id = m_new_id(true);
		do {
			mdl.own[i] = 1;
			mdl.span[i] = id;
			i++;
		} while (i < p + n && !mdl.own[i] && i % PPU);
	}
	void *out;
	if (fk_os.mmap(pa(p), n << PAGE_SHIFT, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0, &out) < 0) {
		printf("  the program's fixed mapping at %zu+%zu failed\n", p, n);
		return 1;
	}
	pages_note_foreign((uintptr_t)pa(p), n << PAGE_SHIFT);
	for (size_t i = p; i < p + n; i++) {
		mdl.foreign[mdl.span[i]] = 1;
		mdl.data[i] = 0;
	}
	m_write(p, n);
	return 0;
}

static unsigned step_dontneed(void)
{
	size_t p, n;
	window(&p, &n, false, 1);
	touch(p, n);
	int want = m_hole(p, n) ? -ENOMEM : 0;
	int got = pages_advise((uintptr_t)pa(p), n << PAGE_SHIFT, MADV_DONTNEED);
	if (got != want) {
		printf("  DONTNEED on %zu+%zu: %d, the model says %d\n", p, n, got, want);
		return 1;
	}
	for (size_t i = p; i < p + n; i++)
		if (mdl.own[i])
			mdl.data[i] = 0;
	return 0;
}

/* A few thousand random steps (map, unmap a window, grow, demote a window, a fixed
 * mapping, DONTNEED) against the model, everything checked after each; at the end
 * every pool page is back. */
static void test_random_sequence(void)
{
	unsigned bad = 0, counts[6] = { 0 }, crowded = 0;
	m_reset();
	rng = 0x2545f4914f6cdd1dull;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned step = 0; step < STEPS && !bad; step++) {
		unsigned op = (unsigned)(rnd() % 12);
		size_t used = 0;
		for (size_t u = 0; u < MAXU; u++)
			used += m_unit_used(u);
		if (used > MAXU * 5 / 8 && (op < 2 || op == 4 || op == 5 || op == 8 || op == 9)) {
			op = 2; /* (room for more) */
			crowded++;
		}
		size_t p, n;
		touch_lo = touch_hi = 0;
		switch (op) {
		case 0:
		case 1:
			bad += step_map();
			counts[0]++;
			break;
		case 2:
		case 3:
			window(&p, &n, true, op == 2 ? 8 : 4);
			unmap_pages(p, n);
			touch(p, n);
			counts[1]++;
			break;
		case 4:
		case 5:
			bad += step_grow();
			counts[2]++;
			break;
		case 6:
		case 7:
			bad += step_demote();
			counts[3]++;
			break;
		case 8:
		case 9:
			bad += step_fixed();
			counts[4]++;
			break;
		default:
			bad += step_dontneed();
			counts[5]++;
			break;
		}
		size_t where;
		const char *why = pages_check(&where);
		if (why) {
			printf("  after step %u: %s (unit %zu)\n", step, why, where);
			bad++;
		}
		/* Page by page around what the step touched; everywhere now and then. */
		size_t lo = touch_lo > PPU ? touch_lo - PPU : 0;
		size_t hi = touch_hi + PPU < MAXP ? touch_hi + PPU : MAXP;
		if (step % 128 == 0)
			lo = 0, hi = MAXP;
		bad += windows_bad(4) + m_bad_data(lo, hi - lo) + owns_bad(lo, hi - lo) + units_bad();
		if (bad)
			printf("  at step %u (op %u)\n", step, op);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(owns_bad(0, MAXP), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("  %u maps, %u unmaps (%u for room), %u grows, %u demotes, %u fixed, %u DONTNEED"
	       " in %.2f s\n", counts[0], counts[1], crowded, counts[2], counts[3], counts[4], counts[5],
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	/* Pages were had from the pool, and it ran short. */
	struct rt_stats st;
	rt_stats_get(&st);
	CHECK(st.units_peak > POOL);
	unmap_all();
}

/* The heap's own pages (a malloc'd block's) are never the program's. Last: the heap
 * then has units of its own, which the model does not follow. */
static void test_fixed_refused_on_heap_pages(void)
{
	void *b = rt_malloc(100);
	CHECK(b != NULL);
	if (!b)
		return;
	uintptr_t at = (uintptr_t)b & ~(PAGE_SIZE - 1);
	CHECK(!pages_program_owns(at, PAGE_SIZE));
	CHECK(!pages_fixed_allowed(at, PAGE_SIZE));
	CHECK_EQ(pages_fixed_into(at, PAGE_SIZE), -EINVAL);
	CHECK_EQ(pages_demote(at, PAGE_SIZE), 0);
	pages_unmap(at, PAGE_SIZE);
	CHECK(span_at(at) != NULL);
	HEAP_OK("calls on the heap's pages");
	rt_free(b);
	HEAP_OK("the block freed");
}

/* A changed span unmapped where plain memory cannot be put back (the map refused):
 * the unmap is refused (ENOMEM, as the kernel's when out of mappings), the span
 * stays whole and the program's, the heap consistent; asked again, it goes. */
static void test_unmap_restore_fails(void)
{
	size_t u = 0;
	while (u < pg.frontier && pg.units[u].state != U_FREE)
		u++;
	CHECK(u < pg.frontier);
	if (u >= pg.frontier)
		return;
	uintptr_t at = unit_addr(u) + 8 * PAGE_SIZE;
	CHECK_EQ(pages_fixed_into(at, 16 << PAGE_SHIFT), 0);
	CHECK(pages_has_foreign(at, 16 << PAGE_SHIFT));
	HEAP_OK("a fixed mapping in a free unit");
	int calls = fk_mmap_calls();
	fk_mmap_fail_next(1, ENOMEM);
	CHECK_EQ(pages_unmap(at + PAGE_SIZE, 4 << PAGE_SHIFT), -ENOMEM);
	fk_mmap_fail_next(0, 0);
	CHECK_EQ(fk_mmap_calls() - calls, 1);
	CHECK(pages_program_owns(at, 16 << PAGE_SHIFT));
	CHECK(pages_has_foreign(at, 16 << PAGE_SHIFT));
	HEAP_OK("an unmap refused");
	CHECK_EQ(pages_unmap(at, 16 << PAGE_SHIFT), 0);
	CHECK(!pages_program_owns(at, PAGE_SIZE));
	CHECK(!pages_has_foreign(at, 16 << PAGE_SHIFT));
	HEAP_OK("the unmap asked again");
	CHECK(pg.units[u].state == U_FREE);
}

int main(void)
{
	RUN(test_map_2m_then_thp_then_none);
	RUN(test_unmap_parts);
	RUN(test_unmap_many_units);
	RUN(test_grow);
	RUN(test_demote_and_fixed);
	RUN(test_advise);
	RUN(test_advise_change_over_hole);
	RUN(test_random_sequence);
	RUN(test_fixed_refused_on_heap_pages);
	RUN(test_unmap_restore_fails);
	fk_uninstall();
	return CHECK_DONE();
}
