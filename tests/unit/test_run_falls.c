/* test_run_falls.c - the falls of a program's tree in superpage run's page, and the
 * one line said of them (core's run_falls.c), against the fake kernel's pools: a
 * split told with what the pool had, its refusal not counted again, other falls by
 * reason, nothing without falls, the line taken once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

static struct sp_run_page *page_new(bool say)
{
	struct sp_run_page *p = aligned_alloc(4096, 4096);
	memset(p, 0, 4096);
	sp_run_page_tree_init(p, say);
	return p;
}

static void setup(long total_2m, long free_2m)
{
	fk_reset();
	fk_machine_default();
	fk_pool(SP_2M_SIZE, total_2m, free_2m);
	fk_install();
}

static void line_of(const struct sp_run_page *p, char *buf, size_t len)
{
	struct sp_run_falls f;
	buf[0] = 0;
	CHECK_EQ(sp_run_page_falls(p, &f), 0);
	sp_run_falls_line(&f, buf, len);
}

/* A block that took 63 of its 128 pages from the pool: said with what the pool had,
 * and its refusal (pool_empty) not said again as a fall of its own. */
static void test_split(void)
{
	char line[1024];
	struct sp_run_page *p = page_new(true);
	setup(100, 63);
	sp_run_tree_fall(p, SP_BACKING_2M, SP_FALL_POOL_EMPTY);
	sp_run_tree_split(p, 128, 63, SP_BACKING_THP, SP_FALL_POOL_EMPTY);
	line_of(p, line, sizeof line);
	CHECK(!strcmp(line, "superpage: 2m: 256 MiB wanted 128 pages of 2 MiB and the pool had 63 "
		      "free: 63 on hugetlb pages, the other 65 on thp (said once; -v says each as "
		      "it happens)\n"));
	/* A second split counts; the first is the one told. */
	sp_run_tree_fall(p, SP_BACKING_2M, SP_FALL_SKIPPED);
	sp_run_tree_split(p, 64, 10, SP_BACKING_THP, SP_FALL_SKIPPED);
	line_of(p, line, sizeof line);
	CHECK(strstr(line, "the other 65 on thp (the first of 2 blocks split so) (said once") != NULL);
	CHECK(strstr(line, "fell to") == NULL);
	/* A fall of its own after the splits: what the pool had is read for it. */
	fk_pool(SP_2M_SIZE, 100, 0);
	sp_run_tree_fall(p, SP_BACKING_2M, SP_FALL_POOL_EMPTY);
	line_of(p, line, sizeof line);
	CHECK(strstr(line, "; 2m: 1 request fell to thp: 1 pool_empty (the pool had too few free "
			   "pages: 0 free at the first) (said once") != NULL);
	fk_uninstall();
	free(p);
}

/* Falls from 2m and 1g by reason, the pool's free pages at the first pool_empty. */
static void test_reasons(void)
{
	char line[1024];
	struct sp_run_page *p = page_new(true);
	setup(16, 0);
	sp_run_tree_fall(p, SP_BACKING_2M, SP_FALL_POOL_EMPTY);
	sp_run_tree_fall(p, SP_BACKING_2M, SP_FALL_POOL_EMPTY);
	sp_run_tree_fall(p, SP_BACKING_2M, SP_FALL_SKIPPED);
	sp_run_tree_fall(p, SP_BACKING_1G, SP_FALL_NO_POOL);
	sp_run_tree_fall(p, SP_BACKING_THP, SP_FALL_THP_OFF); /* (not hugetlb: not said) */
	line_of(p, line, sizeof line);
	CHECK(!strcmp(line, "superpage: 1g: 1 request fell to 2m: 1 no_pool (no pool of that page "
		      "size is set up); 2m: 3 requests fell to thp: 2 pool_empty (the pool had too "
		      "few free pages: 0 free at the first), 1 skipped_recent_failure (not asked "
		      "again just after a refusal) (said once; -v says each as it happens)\n"));
	struct sp_run_falls f;
	sp_run_page_falls(p, &f);
	CHECK_EQ(f.by[SP_BACKING_2M][SP_FALL_POOL_EMPTY], 2);
	CHECK_EQ(f.by[SP_BACKING_THP][SP_FALL_THP_OFF], 1);
	CHECK_EQ(f.empty_free[0], 0);
	CHECK_EQ(f.empty_free[1], -1);
	fk_uninstall();
	free(p);
}

/* No fall from a hugetlb rung: no line; a page not set up counts nothing. */
static void test_none(void)
{
	char line[256];
	struct sp_run_falls f;
	struct sp_run_page *p = page_new(true);
	setup(16, 16);
	sp_run_tree_fall(p, SP_BACKING_THP, SP_FALL_NOT_HUGE);
	CHECK_EQ(sp_run_page_falls(p, &f), 0);
	CHECK_EQ(sp_run_falls_line(&f, line, sizeof line), 0);
	CHECK_EQ(line[0], 0);
	memset(p, 0, 4096);
	sp_run_tree_fall(p, SP_BACKING_2M, SP_FALL_POOL_EMPTY);
	CHECK_EQ(sp_run_page_falls(p, &f), -ENOENT);
	CHECK_EQ(f.by[SP_BACKING_2M][SP_FALL_POOL_EMPTY], 0);
	sp_run_tree_fall(NULL, SP_BACKING_2M, SP_FALL_POOL_EMPTY);
	fk_uninstall();
	free(p);
}

/* The line is taken once, and only where superpage run asked for it. */
static void test_claim(void)
{
	struct sp_run_page *p = page_new(true);
	CHECK(sp_run_page_claim(p));
	CHECK(!sp_run_page_claim(p));
	sp_run_page_tree_init(p, false);
	CHECK(!sp_run_page_claim(p));
	free(p);
}

/* Cut short, the line still ends in a newline. */
static void test_cut(void)
{
	char line[40];
	struct sp_run_page *p = page_new(true);
	setup(16, 0);
	sp_run_tree_fall(p, SP_BACKING_2M, SP_FALL_CGROUP);
	struct sp_run_falls f;
	sp_run_page_falls(p, &f);
	size_t n = sp_run_falls_line(&f, line, sizeof line);
	CHECK_EQ(n, sizeof line - 1);
	CHECK_EQ(line[n - 1], '\n');
	CHECK_EQ(line[n], 0);
	fk_uninstall();
	free(p);
}

int main(void)
{
	RUN(test_split);
	RUN(test_reasons);
	RUN(test_none);
	RUN(test_claim);
	RUN(test_cut);
	return CHECK_DONE();
}
