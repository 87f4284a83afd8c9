/* test_benchout.c - superpage bench's readers and writers: result and memory lines,
 * medians and speedups, and the table, JSON, CSV and SVG they make (no kernel needed). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "bench.h"

/* ---- helpers ---- */

/* What a writer printed, as one string (free it). */
#define CAPTURE(buf, call)                                        \
	do {                                                      \
		size_t len_;                                      \
		FILE *f = open_memstream(&(buf), &len_);          \
		CHECK(f != NULL);                                 \
		if (!f)                                           \
			return;                                   \
		call;                                             \
		fclose(f);                                        \
	} while (0)

static int count_of(const char *hay, const char *needle)
{
	int k = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		k++;
	return k;
}

/* No NaN or infinity written as a number, in any spelling printf or a script uses. */
static bool no_bad_numbers(const char *text)
{
	const char *bad[] = { "nan", "NaN", "NAN", ":inf", ",inf", "[inf", "-inf", "\"inf",
			      "Infinity", "INF" };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (strstr(text, bad[i])) {
			printf("  found \"%s\"\n", bad[i]);
			return false;
		}
	return true;
}

static bool have_python(void)
{
	return system("command -v python3 >/dev/null 2>&1") == 0;
}

/* Feeds text to `python3 -c SCRIPT` (no single quotes in it); its exit status. */
static int python_check(const char *script, const char *text)
{
	char cmd[4096];
	FILE *p;

	snprintf(cmd, sizeof cmd, "python3 -c '%s'", script);
	p = popen(cmd, "w");
	if (!p)
		return -1;
	fputs(text, p);
	return pclose(p);
}

/* A row of three rounds around secs and metric. */
static struct bench_row mk(const char *name, const char *size, const char *backing,
			   const char *unit, double secs, double metric)
{
	static const double jitter[] = { 1.0, 1.04, 0.97 };
	struct bench_row r;

	memset(&r, 0, sizeof r);
	snprintf(r.name, sizeof r.name, "%s", name);
	snprintf(r.size, sizeof r.size, "%s", size);
	snprintf(r.backing, sizeof r.backing, "%s", backing);
	snprintf(r.unit, sizeof r.unit, "%s", unit);
	r.n = 3;
	for (int i = 0; i < 3; i++) {
		r.runs_s[i] = secs * jitter[i];
		r.metric[i] = metric / jitter[i];
	}
	r.valid = true;
	r.coverage = r.cov_wanted = strcmp(backing, "4k") ? 1.0 : 0.0;
	r.minflt = 1000;
	return r;
}

static void machine(struct bench_machine *m)
{
	memset(m, 0, sizeof *m);
	snprintf(m->cpu, sizeof m->cpu, "Test CPU 9000");
	snprintf(m->kernel, sizeof m->kernel, "6.1.0-test");
	m->cpus = 8;
	m->l1d = 48 << 10;
	m->l2 = 1280 << 10;
	m->l3 = 30 << 20;
	m->dtlb_4k = 64, m->dtlb_2m = 32, m->dtlb_1g = 8;
	m->stlb_4k = 2048, m->stlb_2m = 2048, m->stlb_1g = 1024;
	snprintf(m->thp_enabled, sizeof m->thp_enabled, "madvise");
	snprintf(m->thp_defrag, sizeof m->thp_defrag, "madvise");
	m->pool_2m_total = 512, m->pool_2m_free = 500;
	m->pool_1g_total = -1, m->pool_1g_free = -1;
	snprintf(m->date, sizeof m->date, "2025-01-02 03:04");
	m->repeat = 3;
}

static const char *const backings[] = { "4k", "auto", "thp", "2m", "1g" };
#define NB 5

/* A small run: gups with every backing (1g skipped, thp not valid), a case without a
 * 4k row, and tlbreach at two sizes. Returns the count. */
static int sample(struct bench_row *rows)
{
	int n = 0;

	rows[n++] = mk("gups", "1073741824", "4k", "MUP/s", 2.0, 100);
	rows[n++] = mk("gups", "1073741824", "auto", "MUP/s", 1.0, 200);
	rows[n] = mk("gups", "1073741824", "thp", "MUP/s", 1.6, 125);
	rows[n].valid = false;
	rows[n].coverage = 0.42;
	snprintf(rows[n++].why, sizeof rows[0].why, "only 42%% on huge pages, khugepaged late");
	rows[n++] = mk("gups", "1073741824", "2m", "MUP/s", 0.8, 250);
	rows[n] = mk("gups", "1073741824", "1g", "MUP/s", 0, 0);
	rows[n].n = 0;
	rows[n].valid = false;
	snprintf(rows[n++].why, sizeof rows[0].why, "no 1G pool, \"nr_hugepages\" is 0");
	rows[n++] = mk("lonely", "5", "2m", "MB/s", 1.0, 10);
	rows[n++] = mk("tlbreach", "8388608", "4k", "ns/load", 0.5, 2.0);
	rows[n++] = mk("tlbreach", "8388608", "2m", "ns/load", 0.5, 2.0);
	rows[n++] = mk("tlbreach", "1073741824", "4k", "ns/load", 3.0, 12.0);
	rows[n++] = mk("tlbreach", "1073741824", "2m", "ns/load", 1.0, 4.0);
	return n;
}

/* ---- parsing ---- */

static void result_ok(const char *line, const char *name, unsigned long long size,
		      double secs, double metric, const char *unit, bool ok)
{
	struct bench_line r;
	int got = bench_parse_result(line, &r);

	if (got != 1)
		printf("  bench_parse_result(\"%s\"): %d (want 1)\n", line, got);
	CHECK_EQ(got, 1);
	if (got != 1)
		return;
	CHECK(!strcmp(r.name, name));
	CHECK(r.size == size);
	CHECK(fabs(r.seconds - secs) < 1e-12);
	CHECK(fabs(r.metric - metric) < 1e-9 * fabs(metric) + 1e-12);
	CHECK(!strcmp(r.unit, unit));
	CHECK(r.ok == ok);
}

static void result_is(const char *line, int want)
{
	struct bench_line r;
	int got;

	memset(&r, 0x5a, sizeof r);
	got = bench_parse_result(line, &r);
	if (got != want)
		printf("  bench_parse_result(\"%s\"): %d (want %d)\n", line, got, want);
	CHECK_EQ(got, want);
	/* A line that is no result leaves *out as it was. */
	if (want != 1)
		CHECK((unsigned char)r.name[0] == 0x5a);
}

static void test_parse_result_good(void)
{
	result_ok("result name=gups size=1073741824 seconds=1.234567 metric=217.5 unit=MUP/s check=ok",
		  "gups", 1073741824ull, 1.234567, 217.5, "MUP/s", true);
	result_ok("result name=trans size=8192 seconds=0.500000 metric=1.5e+06 unit=MB/s check=FAIL\n",
		  "trans", 8192, 0.5, 1.5e6, "MB/s", false);
	result_ok("result name=mem2/brk-stride size=1 seconds=0.000000 metric=-3 unit=x check=ok\r\n",
		  "mem2/brk-stride", 1, 0, -3, "x", true);
	result_ok("result name=tlbreach size=18446744073709551615 seconds=12 metric=0.000123 "
		  "unit=ns/load check=ok",
		  "tlbreach", 18446744073709551615ull, 12, 0.000123, "ns/load", true);
	/* The longest name and unit that fit. */
	result_ok("result name=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU size=1 seconds=1 "
		  "metric=1 unit=abcdefghijklmno check=ok",
		  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU", 1, 1, 1, "abcdefghijklmno", true);
	/* The kernels' own printf gives a line that reads back. */
	{
		char line[256];

		snprintf(line, sizeof line,
			 "result name=%s size=%llu seconds=%.6f metric=%.6g unit=%s check=%s\n", "fft",
			 131072ull, 0.25, 1234.5678, "MFLOPS", "ok");
		result_ok(line, "fft", 131072, 0.25, 1234.57, "MFLOPS", true);
	}
}

static void test_parse_result_bad(void)
{
	const char *good = "result name=g size=1 seconds=1 metric=1 unit=u check=ok";
	const char *bad[] = {
		"result",
		"result ",
		"result\n",
		/* a key missing, each in turn */
		"result size=1 seconds=1 metric=1 unit=u check=ok",
		"result name=g seconds=1 metric=1 unit=u check=ok",
		"result name=g size=1 metric=1 unit=u check=ok",
		"result name=g size=1 seconds=1 unit=u check=ok",
		"result name=g size=1 seconds=1 metric=1 check=ok",
		"result name=g size=1 seconds=1 metric=1 unit=u",
		/* keys out of order, misspelt, doubled */
		"result size=1 name=g seconds=1 metric=1 unit=u check=ok",
		"result name=g size=1 metric=1 seconds=1 unit=u check=ok",
		"result nam=g size=1 seconds=1 metric=1 unit=u check=ok",
		"result name=g name=g size=1 seconds=1 metric=1 unit=u check=ok",
		/* empty and overlong words */
		"result name= size=1 seconds=1 metric=1 unit=u check=ok",
		"result name=abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV size=1 seconds=1 metric=1 unit=u check=ok",
		"result name=g size=1 seconds=1 metric=1 unit= check=ok",
		"result name=g size=1 seconds=1 metric=1 unit=abcdefghijklmnop check=ok",
		/* sizes that are not plain counts */
		"result name=g size= seconds=1 metric=1 unit=u check=ok",
		"result name=g size=-1 seconds=1 metric=1 unit=u check=ok",
		"result name=g size=+1 seconds=1 metric=1 unit=u check=ok",
		"result name=g size=1G seconds=1 metric=1 unit=u check=ok",
		"result name=g size=0x10 seconds=1 metric=1 unit=u check=ok",
		"result name=g size=1.5 seconds=1 metric=1 unit=u check=ok",
		"result name=g size=18446744073709551616 seconds=1 metric=1 unit=u check=ok",
		/* seconds that are not a time */
		"result name=g size=1 seconds=-0.5 metric=1 unit=u check=ok",
		"result name=g size=1 seconds=nan metric=1 unit=u check=ok",
		"result name=g size=1 seconds=-nan metric=1 unit=u check=ok",
		"result name=g size=1 seconds=inf metric=1 unit=u check=ok",
		"result name=g size=1 seconds=1e999 metric=1 unit=u check=ok",
		"result name=g size=1 seconds= metric=1 unit=u check=ok",
		"result name=g size=1 seconds=1s metric=1 unit=u check=ok",
		"result name=g size=1 seconds=0x1p3 metric=1 unit=u check=ok",
		"result name=g size=1 seconds=.5 metric=1 unit=u check=ok",
		"result name=g size=1 seconds=1..2 metric=1 unit=u check=ok",
		/* metrics that are not numbers */
		"result name=g size=1 seconds=1 metric=nan unit=u check=ok",
		"result name=g size=1 seconds=1 metric=inf unit=u check=ok",
		"result name=g size=1 seconds=1 metric=fast unit=u check=ok",
		"result name=g size=1 seconds=1 metric= unit=u check=ok",
		/* checks that are neither */
		"result name=g size=1 seconds=1 metric=1 unit=u check=OK",
		"result name=g size=1 seconds=1 metric=1 unit=u check=fail",
		"result name=g size=1 seconds=1 metric=1 unit=u check=",
		"result name=g size=1 seconds=1 metric=1 unit=u check=okay",
		/* blanks and trailing text */
		"result  name=g size=1 seconds=1 metric=1 unit=u check=ok",
		"result name=g  size=1 seconds=1 metric=1 unit=u check=ok",
		"result\tname=g size=1 seconds=1 metric=1 unit=u check=ok",
		"result name=g\tsize=1 seconds=1 metric=1 unit=u check=ok",
		"result name=g size=1 seconds=1 metric=1 unit=u check=ok ",
		"result name=g size=1 seconds=1 metric=1 unit=u check=ok extra=1",
		"result name=g size=1 seconds=1 metric=1 unit=u check=ok\n\n",
		"result name=g size=1 seconds=1 metric=1 unit=u check=ok\rx",
	};

	result_is(good, 1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		result_is(bad[i], -1);
	/* Lines that are not result lines at all. */
	result_is("", 0);
	result_is("hello", 0);
	result_is("results name=g size=1 seconds=1 metric=1 unit=u check=ok", 0);
	result_is(" result name=g size=1 seconds=1 metric=1 unit=u check=ok", 0);
	result_is("memory data_bytes=1 thp_bytes=0 hugetlb_2m_bytes=0 hugetlb_1g_bytes=0", 0);
	CHECK_EQ(bench_parse_result(NULL, NULL), 0);
	CHECK_EQ(bench_parse_result(good, NULL), 1);
}

static void memory_is(const char *line, int want)
{
	struct bench_memory m = { 7, 7, 7, 7, 7 };
	int got = bench_parse_memory(line, &m);

	if (got != want)
		printf("  bench_parse_memory(\"%s\"): %d (want %d)\n", line, got, want);
	CHECK_EQ(got, want);
	if (want != 1)
		CHECK(m.data == 7 && m.thp == 7 && m.tlb2m == 7 && m.tlb1g == 7);
}

static void test_parse_memory(void)
{
	struct bench_memory m;
	const char *bad[] = {
		"memory",
		"memory ",
		"memory data_bytes=1 thp_bytes=2 hugetlb_2m_bytes=3",
		"memory thp_bytes=2 data_bytes=1 hugetlb_2m_bytes=3 hugetlb_1g_bytes=4",
		"memory data_bytes=1 thp_bytes=2 hugetlb_1g_bytes=4 hugetlb_2m_bytes=3",
		"memory data_bytes=-1 thp_bytes=2 hugetlb_2m_bytes=3 hugetlb_1g_bytes=4",
		"memory data_bytes=1k thp_bytes=2 hugetlb_2m_bytes=3 hugetlb_1g_bytes=4",
		"memory data_bytes= thp_bytes=2 hugetlb_2m_bytes=3 hugetlb_1g_bytes=4",
		"memory data_bytes=1 thp_bytes=2 hugetlb_2m_bytes=3 hugetlb_1g_bytes=4 x=5",
		"memory data_bytes=1 thp_bytes=2 hugetlb_2m_bytes=3 hugetlb_1g_bytes=99999999999999999999",
		"memory  data_bytes=1 thp_bytes=2 hugetlb_2m_bytes=3 hugetlb_1g_bytes=4",
		"memory unknown=abc",
		"memory unknown=2 data_bytes=1",
	};

	CHECK_EQ(bench_parse_memory("memory data_bytes=1073741824 thp_bytes=1071644672 "
				    "hugetlb_2m_bytes=0 hugetlb_1g_bytes=0\n",
				    &m),
		 1);
	CHECK(m.data == 1073741824ull && m.thp == 1071644672ull && m.tlb2m == 0 && m.tlb1g == 0);
	CHECK_EQ(bench_parse_memory("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 "
				    "hugetlb_1g_bytes=18446744073709551615",
				    &m),
		 1);
	CHECK(m.data == 5 && m.thp == 4 && m.tlb2m == 3 && m.tlb1g == 18446744073709551615ull);
	CHECK(m.largest == 0);
	CHECK_EQ(bench_parse_memory("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 "
				    "hugetlb_1g_bytes=2 largest_bytes=1073741824",
				    &m),
		 1);
	CHECK(m.tlb1g == 2 && m.largest == 1073741824ull);
	memory_is("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 hugetlb_1g_bytes=2 "
		  "largest_bytes=", -1);
	memory_is("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 hugetlb_1g_bytes=2 "
		  "largest_bytes=1 x=2", -1);
	/* The kernel's code, after largest_bytes: all three figures, in order, or none. */
	CHECK(m.text == 0 && m.text_huge == 0 && m.text_hugetlb == 0);
	CHECK_EQ(bench_parse_memory("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 "
				    "hugetlb_1g_bytes=2 largest_bytes=0 text_bytes=16789504 "
				    "text_huge_bytes=16777216 text_hugetlb_bytes=2097152\n",
				    &m),
		 1);
	CHECK(m.largest == 0 && m.text == 16789504ull && m.text_huge == 16777216ull &&
	      m.text_hugetlb == 2097152ull && m.data == 5);
	CHECK_EQ(bench_parse_memory("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 "
				    "hugetlb_1g_bytes=2 largest_bytes=1",
				    &m),
		 1);
	CHECK(m.text == 0 && m.text_huge == 0 && m.text_hugetlb == 0);
	memory_is("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 hugetlb_1g_bytes=2 "
		  "largest_bytes=1 text_bytes=9 text_huge_bytes=8", -1);
	memory_is("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 hugetlb_1g_bytes=2 "
		  "largest_bytes=1 text_huge_bytes=8 text_bytes=9 text_hugetlb_bytes=0", -1);
	memory_is("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 hugetlb_1g_bytes=2 "
		  "largest_bytes=1 text_bytes=9 text_huge_bytes=8 text_hugetlb_bytes=x", -1);
	memory_is("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 hugetlb_1g_bytes=2 "
		  "largest_bytes=1 text_bytes=9 text_huge_bytes=8 text_hugetlb_bytes=0 y=1", -1);
	memory_is("memory data_bytes=5 thp_bytes=4 hugetlb_2m_bytes=3 hugetlb_1g_bytes=2 "
		  "text_bytes=9 text_huge_bytes=8 text_hugetlb_bytes=0", -1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		memory_is(bad[i], -1);
	/* The kernel could not read smaps: no figure, not a broken line. */
	memory_is("memory unknown=13\n", 0);
	memory_is("", 0);
	memory_is("memorys data_bytes=1", 0);
	memory_is("result name=g size=1 seconds=1 metric=1 unit=u check=ok", 0);
}

/* A run of the text kernel under backing, with these MiB of text, huge and hugetlb:
 * whether it is a result, and its coverage and coverage wanted (in %). */
static void text_judged(const char *backing, uint64_t text, uint64_t huge, uint64_t tlb,
			bool want_ok, int want_cov, int want_wanted, const char *want_why)
{
	struct bench_memory m = { .data = 64ull << 20, .thp = 64ull << 20 }; /* not the text */
	double cov = -1, wanted = -1;
	char why[160];
	bool ok;

	m.text = text << 20;
	m.text_huge = huge << 20;
	m.text_hugetlb = tlb << 20;
	ok = bench_judge_text(backing, &m, &cov, &wanted, why, sizeof why);
	if (ok != want_ok || (int)lround(100 * cov) != want_cov ||
	    (int)lround(100 * wanted) != want_wanted || !strstr(why, want_why) ||
	    (ok && why[0]))
		printf("  %s, text %llu MiB, huge %llu, hugetlb %llu: %s %.2f %.2f \"%s\"\n",
		       backing ? backing : "(peer)", (unsigned long long)text,
		       (unsigned long long)huge, (unsigned long long)tlb, ok ? "ok" : "not ok", cov,
		       wanted, why);
	CHECK(ok == want_ok);
	CHECK_EQ(lround(100 * cov), want_cov);
	CHECK_EQ(lround(100 * wanted), want_wanted);
	CHECK(strstr(why, want_why) != NULL);
	CHECK(!ok || !why[0]);
}

/* itlb's runs are judged by where its text is, whatever its data got. */
static void test_judge_text(void)
{
	/* 4k: none of the text huge (the data's THP does not count). */
	text_judged("4k", 16, 0, 0, true, 0, 100, "");
	text_judged("4k", 16, 14, 0, false, 88, 13, "88% of the text on huge pages");
	/* thp: 90% on THP; PMD-mapped page cache is THP too, hugetlb is not. */
	text_judged("thp", 16, 16, 0, true, 100, 100, "");
	text_judged("thp", 20, 18, 0, true, 90, 90, "");
	text_judged("thp", 16, 14, 0, false, 88, 88, "88% of the text on THP");
	text_judged("thp", 16, 16, 16, false, 100, 0, "0% of the text on THP");
	/* 2m: 90% on hugetlb pages. */
	text_judged("2m", 16, 16, 16, true, 100, 100, "");
	text_judged("2m", 16, 16, 0, false, 100, 0, "0% of the text on 2M hugetlb pages (THP 100%)");
	text_judged("2m", 16, 0, 0, false, 0, 0, "0% of the text on 2M hugetlb pages");
	/* auto: 90% on huge pages of either kind; no exception for a small text. */
	text_judged("auto", 16, 16, 0, true, 100, 100, "");
	text_judged("auto", 16, 16, 16, true, 100, 100, "");
	text_judged("auto", 16, 1, 0, false, 6, 6, "only 6% of 16 MiB of text on huge pages");
	/* 1g is never asked for text; a peer asks for nothing and is always a result. */
	text_judged("1g", 16, 16, 16, false, 100, 0, "text is not put on 1g pages");
	text_judged(NULL, 16, 8, 0, true, 50, 50, "");
	/* No text figures (an older kernel): no result, whatever the backing. */
	text_judged("4k", 0, 0, 0, false, 0, 0, "did not say where its text was");
	text_judged(NULL, 0, 0, 0, false, 0, 0, "did not say where its text was");
	/* Counts that do not add up never give more than all of it. */
	text_judged("thp", 16, 32, 0, true, 100, 100, "");
}

/* ---- the order of the runs ---- */

#define ORDER_MAX 16

/* Counts, over rounds [0, rounds), how often b runs right after a within a round
 * (after[a][b]), how often b runs first (first[b]) and how often a round ends with a
 * and the next starts with b (across[a][b]); false if a round is not a permutation. */
static bool order_counts(int n, int rounds, int after[ORDER_MAX][ORDER_MAX], int *first,
			 int across[ORDER_MAX][ORDER_MAX])
{
	int o[ORDER_MAX], prev_last = -1;

	memset(after, 0, sizeof(int) * ORDER_MAX * ORDER_MAX);
	memset(across, 0, sizeof(int) * ORDER_MAX * ORDER_MAX);
	memset(first, 0, sizeof(int) * ORDER_MAX);
	for (int r = 0; r < rounds; r++) {
		bool seen[ORDER_MAX] = { false };

		for (int k = 0; k < n; k++)
			o[k] = -1;
		bench_round_order(n, r, o);
		for (int k = 0; k < n; k++) {
			if (o[k] < 0 || o[k] >= n || seen[o[k]])
				return false;
			seen[o[k]] = true;
			if (k)
				after[o[k - 1]][o[k]]++;
		}
		first[o[0]]++;
		if (prev_last >= 0)
			across[prev_last][o[0]]++;
		prev_last = o[n - 1];
	}
	return true;
}

static void test_round_order(void)
{
	int after[ORDER_MAX][ORDER_MAX], across[ORDER_MAX][ORDER_MAX], first[ORDER_MAX];
	int o[4];

	/* --quick's four backings (4k, auto, 2m, 1g): the rows of the square. */
	bench_round_order(4, 0, o);
	CHECK(o[0] == 0 && o[1] == 1 && o[2] == 3 && o[3] == 2);
	bench_round_order(4, 1, o);
	CHECK(o[0] == 1 && o[1] == 2 && o[2] == 0 && o[3] == 3);
	bench_round_order(4, 5, o);
	CHECK(o[0] == 1 && o[1] == 2 && o[2] == 0 && o[3] == 3);
	/* In 3 rounds of 4 (make bench), auto (1) comes right after 4k (0) once. */
	CHECK(order_counts(4, 3, after, first, across));
	CHECK_EQ(after[0][1] + across[0][1], 1);
	bench_round_order(1, 7, o);
	CHECK_EQ(o[0], 0);

	for (int n = 2; n <= ORDER_MAX; n++) {
		/* A full design: n rounds for even n, 2n (the square and its mirror) for odd. */
		int cycle = n % 2 ? 2 * n : n, times = cycle / n;
		bool ok = order_counts(n, n, after, first, across);

		/* Already in the first n rounds, every backing runs first once. */
		for (int a = 0; ok && a < n; a++)
			CHECK_EQ(first[a], 1);
		ok = order_counts(n, cycle, after, first, across);

		CHECK(ok);
		if (!ok) {
			printf("  n=%d: a round is not a permutation\n", n);
			continue;
		}
		for (int a = 0; a < n; a++) {
			CHECK_EQ(first[a], times);
			CHECK_EQ(after[a][a], 0);
			for (int b = 0; b < n; b++) {
				if (a != b && after[a][b] != times)
					printf("  n=%d: %d after %d %d times\n", n, b, a, after[a][b]);
				CHECK(a == b || after[a][b] == times);
				/* No pair twice across boundaries, and (n > 2) no backing twice in
				 * a row. */
				CHECK(across[a][b] <= 1);
				CHECK(n == 2 || a != b || across[a][b] == 0);
			}
		}
		/* Going on into the next cycle repeats the first: the same design again. */
		ok = order_counts(n, 2 * cycle, after, first, across);
		CHECK(ok);
		for (int a = 0; ok && a < n; a++)
			for (int b = 0; b < n; b++)
				CHECK(a == b || after[a][b] == 2 * times);
		for (int a = 0; a < n; a++)
			for (int b = 0; b < n; b++)
				CHECK(n == 2 || a != b || across[a][b] == 0);
	}
}

/* ---- medians, bests, speedups ---- */

static void test_median(void)
{
	double odd[] = { 3, 1, 2 }, even[] = { 4, 1, 3, 2 }, one[] = { 7.5 };
	double dup[] = { 5, 1, 5, 1, 5 }, neg[] = { -1, -3 };

	CHECK(bench_median(odd, 3) == 2);
	CHECK(odd[0] == 1 && odd[1] == 2 && odd[2] == 3);
	CHECK(bench_median(even, 4) == 2.5);
	CHECK(even[0] == 1 && even[1] == 2 && even[2] == 3 && even[3] == 4);
	CHECK(bench_median(one, 1) == 7.5);
	CHECK(bench_median(dup, 5) == 5);
	CHECK(bench_median(neg, 2) == -2);
	CHECK(isnan(bench_median(odd, 0)));
}

static void test_finish(void)
{
	struct bench_row rows[12];
	int n = 0;

	rows[n] = mk("gups", "1G", "4k", "MUP/s", 0, 0); /* 0 */
	rows[n].runs_s[0] = 3, rows[n].runs_s[1] = 2, rows[n].runs_s[2] = 4;
	rows[n].metric[0] = 10, rows[n].metric[1] = 30, rows[n++].metric[2] = 20;
	rows[n] = mk("gups", "1G", "2m", "MUP/s", 0, 0); /* 1 */
	rows[n].n = 4;
	rows[n].runs_s[0] = 1, rows[n].runs_s[1] = 1.5, rows[n].runs_s[2] = 0.5, rows[n].runs_s[3] = 0.5;
	rows[n].metric[0] = 40, rows[n].metric[1] = 45, rows[n].metric[2] = 60, rows[n++].metric[3] = 50;
	rows[n++] = mk("gups", "2G", "2m", "MUP/s", 1, 1);         /* 2: no 4k of that size */
	rows[n] = mk("gups", "1G", "1g", "MUP/s", 1, 1);           /* 3: no rounds */
	rows[n++].n = 0;
	rows[n++] = mk("tlbreach", "8M", "4k", "ns/load", 6, 9);   /* 4 */
	rows[n] = mk("tlbreach", "8M", "2m", "ns/load", 0, 0);     /* 5 */
	rows[n].runs_s[0] = 2, rows[n].runs_s[1] = 3, rows[n].runs_s[2] = 1;
	rows[n].metric[0] = 3, rows[n].metric[1] = 1, rows[n++].metric[2] = 2;
	rows[n] = mk("trans", "1000", "4k", "MB/s", 2, 1);         /* 6: 4k not valid */
	rows[n++].valid = false;
	rows[n++] = mk("trans", "1000", "thp", "MB/s", 1, 2);      /* 7 */
	rows[n] = mk("fft", "64", "4k", "MFLOPS", 2, 1);           /* 8: 4k without rounds */
	rows[n++].n = 0;
	rows[n++] = mk("fft", "64", "thp", "MFLOPS", 1, 2);        /* 9 */
	rows[n] = mk("himeno", "2", "auto", "MFLOPS", 1, 2);       /* 10: not valid, still a speedup */
	rows[n++].valid = false;
	rows[n++] = mk("himeno", "2", "4k", "MFLOPS", 1.5, 1);     /* 11: 4k after the others */
	bench_finish(rows, n);

	CHECK(rows[0].median_s == 3 && rows[0].best_s == 2);
	CHECK(rows[0].median_metric == 20 && rows[0].best_metric == 30);
	CHECK(rows[0].higher_is_better);
	CHECK(rows[0].speedup == 1.0);
	/* The rounds stay in the order they ran. */
	CHECK(rows[0].runs_s[0] == 3 && rows[0].runs_s[1] == 2 && rows[0].metric[0] == 10);
	CHECK(rows[1].median_s == 0.75 && rows[1].best_s == 0.5);
	CHECK(rows[1].median_metric == 47.5 && rows[1].best_metric == 60);
	CHECK(fabs(rows[1].speedup - 4.0) < 1e-12);
	CHECK(rows[2].speedup == 0);
	CHECK(rows[3].speedup == 0);
	/* A time per load: less is better, the best is the smallest. */
	CHECK(!rows[4].higher_is_better && !rows[5].higher_is_better);
	CHECK(rows[5].median_metric == 2 && rows[5].best_metric == 1);
	CHECK(rows[5].median_s == 2 && rows[5].best_s == 1);
	CHECK(fabs(rows[5].speedup - 6.0 / 2.0) < 1e-12);
	CHECK(rows[6].speedup == 1.0); /* its own, valid or not */
	CHECK(rows[7].speedup == 0);
	CHECK(rows[9].speedup == 0);
	CHECK(fabs(rows[10].speedup - 1.5) < 1e-12);
	CHECK(rows[11].speedup == 1.0);
}

static void test_finish_units(void)
{
	const char *more[] = { "MB/s", "MFLOPS", "MUP/s", "GB/s", "ops/s", "steps/s", "x" };
	const char *less[] = { "ns/load", "ns", "s", "s/iter", "ms", "us/op", "cycles/load" };
	struct bench_row r;

	for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
		r = mk("k", "1", "4k", more[i], 1, 1);
		r.metric[0] = 1, r.metric[1] = 5, r.metric[2] = 3;
		bench_finish(&r, 1);
		CHECK(r.higher_is_better);
		CHECK(r.best_metric == 5);
	}
	for (size_t i = 0; i < sizeof less / sizeof less[0]; i++) {
		r = mk("k", "1", "4k", less[i], 1, 1);
		r.metric[0] = 4, r.metric[1] = 2, r.metric[2] = 3;
		bench_finish(&r, 1);
		CHECK(!r.higher_is_better);
		CHECK(r.best_metric == 2);
	}
}

/* ---- writers ---- */

static void test_json(void)
{
	struct bench_row rows[16];
	struct bench_machine m;
	int n = sample(rows);
	char *out = NULL;
	const char *keys[] = { "\"machine\":", "\"results\":", "\"kernel\":", "\"size\":",
			       "\"backing\":", "\"runs_s\":", "\"median_s\":", "\"metric\":",
			       "\"unit\":", "\"coverage\":", "\"minflt\":", "\"speedup_vs_4k\":",
			       "\"valid\":", "\"best_s\":", "\"best_metric\":", "\"metrics\":",
			       "\"coverage_wanted\":", "\"check\":", "\"tlb\":", "\"spread\":" };

	machine(&m);
	bench_finish(rows, n);
	CAPTURE(out, bench_write_json(f, &m, rows, n));
	CHECK(out[0] == '{');
	CHECK(out[strlen(out) - 1] == '\n');
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		if (!strstr(out, keys[i]))
			printf("  no %s in the JSON\n", keys[i]);
		CHECK(strstr(out, keys[i]) != NULL);
	}
	CHECK_EQ(count_of(out, "{\"kernel\":"), n);
	CHECK(no_bad_numbers(out));
	/* why only where there is one; no speedup is null, not 0. */
	CHECK_EQ(count_of(out, "\"why\":"), 2);
	CHECK(strstr(out, "\"why\":\"no 1G pool, \\\"nr_hugepages\\\" is 0\"") != NULL);
	CHECK(strstr(out, "\"speedup_vs_4k\":null") != NULL);
	CHECK(strstr(out, "\"size\":1073741824,") != NULL);
	CHECK(strstr(out, "\"valid\":false") != NULL);
	CHECK(strstr(out, "\"pool_1g_total\":null") != NULL);

	if (!have_python()) {
		free(out);
		SKIP("no python3 to parse the JSON with");
	}
	CHECK_EQ(python_check(
			 "import json, sys\n"
			 "d = json.load(sys.stdin)\n"
			 "r = d[\"results\"]\n"
			 "assert len(r) == 10, len(r)\n"
			 "assert d[\"machine\"][\"cpu\"] == \"Test CPU 9000\"\n"
			 "assert d[\"machine\"][\"tlb\"][\"stlb\"][\"2m\"] == 2048\n"
			 "assert d[\"machine\"][\"pool_2m_total\"] == 512\n"
			 "g = r[1]\n"
			 "assert g[\"kernel\"] == \"gups\" and g[\"backing\"] == \"auto\"\n"
			 "assert g[\"size\"] == 1073741824 and len(g[\"runs_s\"]) == 3\n"
			 "assert abs(g[\"speedup_vs_4k\"] - 2.0) < 1e-6, g\n"
			 "assert abs(g[\"spread\"] - 1.04 / 0.97) < 1e-6, g\n"
			 "assert g[\"valid\"] is True and g[\"check\"] == \"ok\"\n"
			 "s = r[4]\n"
			 "assert s[\"runs_s\"] == [] and s[\"median_s\"] is None\n"
			 "assert s[\"speedup_vs_4k\"] is None and s[\"valid\"] is False\n"
			 "assert s[\"spread\"] is None\n"
			 "assert r[5][\"speedup_vs_4k\"] is None\n"
			 "assert r[7][\"unit\"] == \"ns/load\"\n",
			 out),
		 0);
	free(out);
}

static void test_json_hostile(void)
{
	struct bench_row r = mk("we\"ird\\na\tme\x01\xff", "12x", "4k", "u", 1, 1);
	char *out = NULL;

	bench_finish(&r, 1);
	snprintf(r.why, sizeof r.why, "line\nbreak");
	CAPTURE(out, bench_write_json(f, NULL, &r, 1));
	CHECK(strstr(out, "\"size\":\"12x\"") != NULL);
	CHECK(!strchr(out, '\t') && !strchr(out, '\x01'));
	CHECK_EQ(count_of(out, "\n"), 1);
	if (!have_python()) {
		free(out);
		SKIP("no python3 to parse the JSON with");
	}
	CHECK_EQ(python_check("import json, sys\n"
			      "d = json.load(sys.stdin)\n"
			      "assert d[\"results\"][0][\"kernel\"].startswith(\"we\\\"ird\\\\na\\tme\")\n"
			      "assert d[\"results\"][0][\"why\"] == \"line\\nbreak\"\n",
			      out),
		 0);
	free(out);
}

static void test_csv(void)
{
	struct bench_row rows[16];
	int n = sample(rows);
	char *out = NULL;

	bench_finish(rows, n);
	CAPTURE(out, bench_write_csv(f, rows, n));
	CHECK(!strncmp(out, "kernel,size,backing,unit,rounds,median_s,best_s,metric,best_metric,"
			    "coverage,coverage_wanted,minflt,speedup_vs_4k,valid,check,why,spread\n",
		       strlen("kernel,size,backing,unit,rounds,median_s,best_s,metric,best_metric,"
			      "coverage,coverage_wanted,minflt,speedup_vs_4k,valid,check,why,"
			      "spread\n")));
	CHECK_EQ(count_of(out, "\n"), n + 1);
	/* No rounds: no spread either. */
	CHECK(strstr(out, ",\"no 1G pool, \"\"nr_hugepages\"\" is 0\",\n") != NULL);
	/* The thp row: a why with a comma, speedup 2.0/1.6, runs 1.04/0.97 apart. */
	CHECK(strstr(out, "gups,1073741824,thp,MUP/s,3,") != NULL);
	CHECK(strstr(out, ",1.25,false,ok,\"only 42% on huge pages, khugepaged late\",1.07216495\n") !=
	      NULL);
	/* No rounds: empty figures, not nan. */
	CHECK(strstr(out, "gups,1073741824,1g,MUP/s,0,,,,,") != NULL);
	CHECK(no_bad_numbers(out));
	if (!have_python()) {
		free(out);
		SKIP("no python3 to read the CSV with");
	}
	CHECK_EQ(python_check("import csv, sys\n"
			      "r = list(csv.reader(sys.stdin))\n"
			      "assert len(r) == 11 and all(len(x) == 17 for x in r), r\n"
			      "assert r[5][15] == \"no 1G pool, \\\"nr_hugepages\\\" is 0\", r[5]\n"
			      "assert r[2][12] and float(r[2][12]) == 2.0\n"
			      "assert r[6][12] == \"\"\n",
			      out),
		 0);
	free(out);
}

/* The bars an SVG should hold: rows not on 4k with a speedup and a passed check. */
static int bars_wanted(const struct bench_row *rows, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += strcmp(rows[i].backing, "4k") && rows[i].n > 0 && rows[i].speedup > 0 &&
		     !rows[i].check_failed;
	return k;
}

static void svg_checks(const char *out, int bars)
{
	const char *p = out;
	size_t len = strlen(out);

	if (!strncmp(p, "<?xml", 5)) {
		p = strstr(p, "?>");
		CHECK(p != NULL);
		if (!p)
			return;
		p += 2;
		while (*p == '\n')
			p++;
	}
	CHECK(!strncmp(p, "<svg", 4));
	CHECK(len > 7 && !strcmp(out + len - 7, "</svg>\n"));
	CHECK_EQ(count_of(out, "<rect class=\"bar\""), bars);
	CHECK(!strstr(out, "<script") && !strstr(out, "@import") && !strstr(out, "href="));
	CHECK(no_bad_numbers(out));
}

static void test_svg(void)
{
	struct bench_row rows[20];
	struct bench_machine m;
	int n = sample(rows);
	char *out = NULL;

	machine(&m);
	snprintf(m.cpu, sizeof m.cpu, "Fast & <Cheap> \"CPU\"");
	rows[n++] = mk("a&b<c", "64", "4k", "MB/s", 2, 1);
	rows[n++] = mk("a&b<c", "64", "2m", "MB/s", 1, 2);
	rows[n] = mk("broken", "64", "4k", "MB/s", 2, 1);
	rows[n++].check_failed = true;
	rows[n] = mk("broken", "64", "2m", "MB/s", 1, 2);
	rows[n++].check_failed = true;
	bench_finish(rows, n);
	CAPTURE(out, bench_write_svg(f, &m, rows, n, backings, NB));
	/* gups auto, thp (hatched), 2m; lonely has no 4k; tlbreach 2m twice; a&b<c. */
	CHECK_EQ(bars_wanted(rows, n), 6);
	svg_checks(out, 6);
	CHECK(strstr(out, "a&amp;b&lt;c") != NULL);
	CHECK(!strstr(out, "a&b<c"));
	CHECK(strstr(out, "Fast &amp; &lt;Cheap&gt; &quot;CPU&quot;") != NULL);
	CHECK(strstr(out, "url(#hatch") != NULL);
	CHECK(strstr(out, ">FAIL<") != NULL);
	CHECK(strstr(out, ">skip<") != NULL);
	/* tlbreach: a line for 4k and one for 2m, and the working-set axis. */
	CHECK_EQ(count_of(out, "<polyline"), 2);
	CHECK(strstr(out, ">8M<") != NULL && strstr(out, ">1G<") != NULL);
	if (!have_python()) {
		free(out);
		SKIP("no python3 to parse the SVG with");
	}
	CHECK_EQ(python_check("import sys, xml.etree.ElementTree as E\n"
			      "t = E.fromstring(sys.stdin.buffer.read())\n"
			      "assert t.tag == \"{http://www.w3.org/2000/svg}svg\", t.tag\n"
			      "b = [r for r in t.iter(\"{http://www.w3.org/2000/svg}rect\")"
			      " if r.get(\"class\") == \"bar\"]\n"
			      "assert len(b) == 6, len(b)\n"
			      "s = \"\".join(t.itertext())\n"
			      "assert \"a&b<c\" in s and \"Fast & <Cheap>\" in s\n",
			      out),
		 0);
	free(out);
}

static void test_svg_many(void)
{
	struct bench_row rows[200];
	int n = 0;
	char *out = NULL, name[32];

	/* Forty cases, no tlbreach, no machine: one bar each for thp and 2m. */
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "case-with-a-long-name-%d", i);
		rows[n++] = mk(name, "1024", "4k", "MB/s", 2, 1);
		rows[n++] = mk(name, "1024", "thp", "MB/s", 1.0 + i / 10.0, 1);
		rows[n++] = mk(name, "1024", "2m", "MB/s", 1.0, 1);
	}
	bench_finish(rows, n);
	CAPTURE(out, bench_write_svg(f, NULL, rows, n, NULL, 0));
	svg_checks(out, 80);
	CHECK(!strstr(out, "<polyline"));
	free(out);
	/* Nothing at all is still a picture. */
	CAPTURE(out, bench_write_svg(f, NULL, rows, 0, backings, NB));
	svg_checks(out, 0);
	free(out);
}

/* The column where the header's word ends, in the table's header line. */
static int header_end(const char *hdr, const char *word)
{
	char pat[32];
	const char *p;

	snprintf(pat, sizeof pat, " %s", word);
	for (p = strstr(hdr, pat); p; p = strstr(p + 1, pat))
		if (p[strlen(pat)] == ' ' || p[strlen(pat)] == '\n')
			return (int)(p - hdr + strlen(pat)) - 1;
	return -1;
}

static void test_table(void)
{
	struct bench_row rows[20];
	struct bench_machine m;
	int n = sample(rows);
	char *out = NULL, *hdr, *p;
	int lines = 0;

	machine(&m);
	rows[n] = mk("broken", "64", "4k", "MB/s", 2, 1);
	rows[n++].check_failed = true;
	bench_finish(rows, n);
	CAPTURE(out, bench_write_table(f, &m, rows, n, backings, NB));
	CHECK(strstr(out, "Test CPU 9000 (8 cpus)") != NULL);
	CHECK(strstr(out, "L2 TLB    2048 x 4K = 8 MiB reach, 2048 x 2M = 4 GiB, 1024 x 1G = 1 TiB\n"));
	CHECK(strstr(out, "L1 dTLB   64 x 4K = 256 KiB reach, 32 x 2M = 64 MiB, 8 x 1G = 8 GiB\n"));
	CHECK(strstr(out, "L1d 48 KiB, L2 1.25 MiB, L3 30 MiB") != NULL);
	CHECK(strstr(out, "6.1.0-test") != NULL && strstr(out, "madvise") != NULL);
	CHECK(strstr(out, "2M: 512 pages (500 free), 1G: none") != NULL);
	CHECK(strstr(out, "3 per backing, full run") != NULL);
	CHECK(strstr(out, "2025-01-02 03:04") != NULL);

	hdr = strstr(out, "\ncase ");
	CHECK(hdr != NULL);
	if (!hdr)
		goto done;
	hdr++;
	/* Every line of the table ends each backing's cell where its name ends. */
	for (p = strchr(hdr, '\n') + 1; *p && *p != '\n'; p = strchr(p, '\n') + 1) {
		size_t len = (size_t)(strchr(p, '\n') - p);

		lines++;
		if (*p == '-')
			continue;
		for (int b = 0; b < NB; b++) {
			int e = header_end(hdr, backings[b]);

			CHECK(e > 0 && (size_t)e < len);
			if (e <= 0 || (size_t)e >= len)
				continue;
			CHECK(p[e] != ' ');
			CHECK(p[e + 1] == ' ' || p[e + 1] == '!' || p[e + 1] == '\n');
		}
	}
	CHECK_EQ(lines, 1 + 5); /* the rule, gups, lonely, tlbreach twice, broken */
	CHECK(strstr(out, "\ngups        1G  MUP/s    100.0   2.00x 100%   1.25x  42%!  2.50x 100%   skip\n"));
	CHECK(strstr(out, "\nlonely       5  MB/s        --           --           --     n/a 100%     --\n"));
	CHECK(strstr(out, "\ntlbreach    8M  ns/load   2.00           --           --   1.00x 100%     --\n"));
	CHECK(strstr(out, "\ntlbreach    1G  ns/load  12.00           --           --   3.00x 100%     --\n"));
	CHECK(strstr(out, "\nbroken      64  MB/s      FAIL           --           --           --     --\n"));
	/* The legend, then a note for each row without a result. */
	CHECK(strstr(out, "median time on 4k / median time on that backing") != NULL);
	CHECK(strstr(out, "\nnotes:\n") != NULL);
	CHECK(strstr(out, "  gups 1G thp: only 42% on huge pages, khugepaged late\n") != NULL);
	CHECK(strstr(out, "  gups 1G 1g: no 1G pool, \"nr_hugepages\" is 0\n") != NULL);
	CHECK(strstr(out, "  broken 64 4k: the kernel's check of its answer failed\n") != NULL);
	/* No matrix among the cases: nothing said of column walks. */
	CHECK(strstr(out, "over 1G go past it on 4K pages.") != NULL);
	CHECK(!strstr(out, "column walk") && !strstr(out, "power-of-two"));
	CHECK(!strstr(out, " \n"));
done:
	free(out);
}

/* text with each line break and the 10 blanks of indent after it made one blank:
 * the folded paragraphs of the table as one line each. */
static char *unfolded(const char *text)
{
	char *u = strdup(text), *o = u;

	for (const char *p = text; u && *p; p++) {
		if (!strncmp(p, "\n          ", 11)) {
			*o++ = ' ';
			p += 10;
		} else {
			*o++ = *p;
		}
	}
	if (u)
		*o = 0;
	return u;
}

/* The kernels the run had, each said once, and where the TLB's reach (2048 pages of
 * 4K in machine()) falls among their sizes, folded to 80 columns. */
static void test_table_reach(void)
{
	struct bench_row rows[20];
	struct bench_machine m;
	int n = 0;
	char *out = NULL, *sec, *u = NULL;

	machine(&m);
	rows[n++] = mk("trans", "1000", "4k", "MB/s", 1.0, 10);
	rows[n++] = mk("transf", "8192", "4k", "MB/s", 1.0, 10);
	rows[n++] = mk("gemmx/naive", "2000", "4k", "MFLOPS", 1.0, 10);
	rows[n++] = mk("gemmx/blocked", "2000", "4k", "MFLOPS", 1.0, 10);
	rows[n++] = mk("gemmx/naive", "4096", "4k", "MFLOPS", 1.0, 10);
	rows[n++] = mk("tlbreach", "8388608", "4k", "ns/load", 0.5, 2.0);
	rows[n++] = mk("tlbreach", "8388609", "4k", "ns/load", 0.5, 2.0);
	rows[n++] = mk("gups", "1073741824", "4k", "MUP/s", 2.0, 100);
	rows[n++] = mk("tlbreach", "1073741824", "4k", "ns/load", 3.0, 12.0);
	bench_finish(rows, n);
	CAPTURE(out, bench_write_table(f, &m, rows, n, backings, NB));
	sec = out ? strstr(out, "\nkernels:\n") : NULL;
	CHECK(sec != NULL);
	if (!sec)
		goto done;
	for (char *p = sec + 1, *e; (e = strchr(p, '\n')); p = e + 1)
		CHECK(e - p <= 80);
	CHECK(!strstr(out, " \n"));
	u = unfolded(sec);
	CHECK(u != NULL);
	if (!u)
		goto done;
	CHECK_EQ(count_of(u, "\ngemmx     the seed's gemmx.c"), 1);
	CHECK_EQ(count_of(u, "\ntlbreach  a pointer chase"), 1);
	CHECK(strstr(u, "\ntrans     the seed's trans.c") != NULL);
	CHECK(strstr(u, "\ntransf    the seed's trans.f") != NULL);
	CHECK(strstr(u, "\ngups      random") != NULL);
	CHECK(!strstr(u, "\nstream ") && !strstr(u, "\nhimeno "));
	CHECK(strstr(u, "\nwhy       the L2 TLB holds 2048 translations of 4K pages: 8 MiB of data "
			"(2048 of 2M pages: 4 GiB).") != NULL);
	/* A byte past the reach is past it; 1G is said once for gups and tlbreach. */
	CHECK(strstr(u, "Random accesses (gups, tlbreach) over 8388609, 1G go past it") != NULL);
	CHECK(strstr(u, "Over 8M they stay within it") != NULL);
	CHECK(strstr(u, "at n = 4096, 8192 that is past the TLB's reach;") != NULL);
	CHECK(strstr(u, "at n = 1000, 2000 it is within it") != NULL);
	CHECK(strstr(u, "(the seed's n = 1000") != NULL);
	CHECK(strstr(u, "At a power-of-two n every load of a column falls in one set") != NULL);
done:
	free(u);
	free(out);
}

/* A row whose slowest run took over 1.5 times its fastest is marked '~' and noted,
 * unless it is marked '!' already; a steady one, or one of a single run, is not. */
static void test_table_unsteady(void)
{
	struct bench_row rows[8];
	int n = 0;
	char *out = NULL;

	rows[n++] = mk("transf", "8192", "4k", "MB/s", 1.0, 10);
	rows[n] = mk("transf", "8192", "2m", "MB/s", 0.6, 16);
	rows[n].runs_s[1] = 1.365;
	rows[n++].runs_s[2] = 1.296;
	rows[n] = mk("transf", "8192", "1g", "MB/s", 0.6, 16);
	rows[n].runs_s[1] = 1.5;
	rows[n].valid = false;
	snprintf(rows[n++].why, sizeof rows[0].why, "only 10%% on 1G pages");
	rows[n] = mk("transf", "8192", "auto", "MB/s", 0.6, 16);
	rows[n].n = 1;
	rows[n++].runs_s[0] = 0.7;
	rows[n] = mk("gups", "1073741824", "4k", "MUP/s", 2.0, 100);
	rows[n].runs_s[1] = 3.0; /* exactly 1.5 times: steady enough */
	rows[n++].runs_s[2] = 2.0;
	bench_finish(rows, n);
	CHECK(fabs(rows[1].spread - 1.365 / 0.6) < 1e-9);
	CHECK(bench_unsteady(&rows[1]) && !bench_unsteady(&rows[0]));
	CHECK(!bench_unsteady(&rows[3]) && !bench_unsteady(&rows[4]));
	CAPTURE(out, bench_write_table(f, NULL, rows, n, backings, NB));
	CHECK(strstr(out, "\ntransf  8192  MB/s   10.00   1.43x 100%    --   0.77x 100%~  "
			  "1.67x 100%!\n") != NULL);
	CHECK(strstr(out, "\ngups      1G  MUP/s  100.0           --    --           --           --\n"));
	CHECK_EQ(count_of(out, "%~"), 1);
	CHECK_EQ(count_of(out, "%!"), 1);
	CHECK(strstr(out, "\n~        the runs were not steady: the slowest took over 1.5 times as "
			  "long as\n") != NULL);
	CHECK(!strstr(out, "\n\n\n"));
	CHECK(strstr(out, "\n  transf 8192 2m: not steady, its runs took 0.6 to 1.36 s (2.27 times "
			  "as long)\n") != NULL);
	CHECK(strstr(out, "\n  transf 8192 1g: only 10% on 1G pages\n") != NULL);
	CHECK(!strstr(out, "transf 8192 1g: not steady"));
	CHECK(!strstr(out, "gups 1G 4k: not steady"));
	free(out);
}

static void test_table_empty(void)
{
	char *out = NULL;

	CAPTURE(out, bench_write_table(f, NULL, NULL, 0, backings, NB));
	CHECK(strstr(out, "(no results)") != NULL);
	CHECK(!strstr(out, "notes:"));
	free(out);
}

/* ---- a user's command: paired ratios, their intervals, the verdicts and the JSON ---- */

static void cmd_runs(struct bench_cmd_variant *v, const double *wall, int n)
{
	v->n = v->good = n;
	for (int i = 0; i < n; i++) {
		memset(&v->run[i], 0, sizeof v->run[i]);
		v->run[i].round = i;
		v->run[i].wall = wall[i];
		v->run[i].user = wall[i] / 2;
		v->run[i].metric = NAN;
		v->run[i].maxrss = 100 << 20;
		v->run[i].sampled = true;
		v->run[i].anon = 64 << 20;
		v->run[i].huge = 32 << 20;
		v->run[i].minflt = 1000;
	}
}

static void test_cmd_stats(void)
{
	static struct bench b;
	static struct bench_cmd c;
	static const double plain[] = { 2.0, 2.1, 1.9, 2.05, 1.95 };
	static const double fast[] = { 1.0, 1.05, 0.95, 1.02, 0.98 }; /* twice as fast, steadily */
	static const double same[] = { 2.0, 2.1, 1.9, 2.05, 1.95 };   /* plain's own times */
	static const double noisy[] = { 1.0, 4.0, 1.9, 3.0, 1.0 };
	static char *argv[] = { "prog", "a b", NULL };
	const char *names[] = { "plain", "auto", "2m", "thp", "jemalloc" };
	struct bench_ratio r;
	char *out = NULL;

	CHECK(fabs(bench_t95(1) - 12.706) < 1e-9);
	CHECK(fabs(bench_t95(4) - 2.776) < 1e-9);
	CHECK(bench_t95(100) > 1.96 && bench_t95(100) < 1.99);
	CHECK(isnan(bench_t95(0)));

	memset(&b, 0, sizeof b);
	memset(&c, 0, sizeof c);
	b.nvar = 5;
	b.repeat = 5;
	for (int i = 0; i < b.nvar; i++)
		snprintf(b.var[i].name, sizeof b.var[i].name, "%s", names[i]);
	b.var[4].skip = true;
	snprintf(b.var[4].why, sizeof b.var[4].why, "libjemalloc.so.2 not installed");
	c.argv = argv;
	snprintf(c.label, sizeof c.label, "prog");
	c.metric_higher = true;
	c.rounds = 5;
	snprintf(c.stopped, sizeof c.stopped, "all 5 rounds run");
	cmd_runs(&c.v[0], plain, 5);
	cmd_runs(&c.v[1], fast, 5);
	cmd_runs(&c.v[2], same, 5);
	cmd_runs(&c.v[3], noisy, 5);
	/* A failed run is no pair: the ratio stands on the other four. */
	c.v[1].run[2].failed = true;
	c.v[1].good = 4;
	snprintf(c.v[1].run[2].why, sizeof c.v[1].run[2].why, "exit status 1");

	bench_cmd_ratio(&c, 1, &r);
	CHECK_EQ(r.n, 4);
	CHECK(r.ratio > 1.95 && r.ratio < 2.05);
	CHECK(r.lo > 1.9 && r.hi < 2.1 && r.lo < r.ratio && r.ratio < r.hi);
	CHECK(bench_ratio_clear(&r));
	bench_cmd_ratio(&c, 2, &r);
	CHECK_EQ(r.n, 5);
	CHECK(fabs(r.ratio - 1) < 1e-9 && fabs(r.lo - 1) < 1e-9 && fabs(r.hi - 1) < 1e-9);
	CHECK(bench_ratio_clear(&r)); /* within 0.98-1.02: clearly no difference */
	bench_cmd_ratio(&c, 3, &r);
	CHECK(r.lo < 1 && r.hi > 1);
	CHECK(!bench_ratio_clear(&r));
	r.n = 1;
	r.lo = r.hi = NAN;
	CHECK(!bench_ratio_clear(&r));

	bench_cmd_finish(&b, &c);
	CHECK(strncmp(c.v[1].verdict, "auto: 2.0", 9) == 0 || strncmp(c.v[1].verdict, "auto: 1.9", 9) == 0);
	CHECK(strstr(c.v[1].verdict, "x faster, 95% CI ") != NULL);
	CHECK(strstr(c.v[1].verdict, "50% huge, RSS 1.00x; 1 of 5 runs failed") != NULL);
	CHECK(strstr(c.v[2].verdict, "2m: no measurable difference (1.00x, 95% CI 1.00-1.00)") != NULL);
	CHECK(strstr(c.v[3].verdict, "thp: no measurable difference") != NULL);
	CHECK(strcmp(c.v[4].verdict, "jemalloc: skipped: libjemalloc.so.2 not installed") == 0);
	CHECK_EQ(b.nrows, 5);
	CHECK(fabs(b.rows[0].speedup - 1) < 1e-9);
	CHECK(b.rows[1].speedup > 1.95 && b.rows[1].n == 4 && b.rows[1].check_failed && !b.rows[1].valid);
	CHECK(b.rows[4].n == 0 && !b.rows[4].valid);

	CAPTURE(out, bench_write_cmd_json(f, &b, &c));
	CHECK(no_bad_numbers(out));
	if (have_python())
		CHECK_EQ(python_check(
				 "import json, sys\n"
				 "d = json.load(sys.stdin)\n"
				 "c = d[\"command\"]\n"
				 "assert c[\"argv\"] == [\"prog\", \"a b\"] and c[\"baseline\"] == \"plain\"\n"
				 "assert c[\"judged_by\"] == \"wall_s\" and c[\"rounds\"] == 5\n"
				 "r = d[\"results\"]\n"
				 "assert len(r) == 5 and r[1][\"backing\"] == \"auto\"\n"
				 "assert 1.95 < r[1][\"speedup_vs_plain\"] < 2.05\n"
				 "v = d[\"variants\"]\n"
				 "assert v[1][\"pairs\"] == 4 and len(v[1][\"ci95\"]) == 2\n"
				 "assert v[1][\"runs\"][2][\"failed\"] is True\n"
				 "assert v[1][\"summary\"][\"maxrss_bytes\"][\"median\"] == 104857600\n"
				 "assert v[0][\"huge_share\"] == 0.5 and v[0][\"verdict\"] is None\n"
				 "assert v[4][\"skipped\"] is True and v[4][\"runs\"] == []\n"
				 "assert len(d[\"verdicts\"]) == 4\n",
				 out),
			 0);
	free(out);
	out = NULL;
	CAPTURE(out, bench_write_cmd_table(f, &b, &c));
	CHECK(strstr(out, "superpage bench -- prog 'a b'\n") != NULL);
	CHECK(strstr(out, "\nauto: ") != NULL && strstr(out, "\njemalloc: skipped: ") != NULL);
	CHECK(strstr(out, "  auto round 3: exit status 1\n") != NULL);
	free(out);
	out = NULL;
	CAPTURE(out, bench_write_csv_vs(f, b.rows, b.nrows, "plain"));
	CHECK(strstr(out, ",speedup_vs_plain,") != NULL);
	CHECK_EQ(count_of(out, "\n"), 6);
	free(out);
}

int main(void)
{
	RUN(test_parse_result_good);
	RUN(test_parse_result_bad);
	RUN(test_parse_memory);
	RUN(test_judge_text);
	RUN(test_round_order);
	RUN(test_median);
	RUN(test_finish);
	RUN(test_finish_units);
	RUN(test_json);
	RUN(test_json_hostile);
	RUN(test_csv);
	RUN(test_svg);
	RUN(test_svg_many);
	RUN(test_table);
	RUN(test_table_reach);
	RUN(test_table_unsteady);
	RUN(test_table_empty);
	RUN(test_cmd_stats);
	return CHECK_DONE();
}
