/* test_parse.c - sizes, counts, booleans, backing names and SUPERPAGE_* options (no kernel needed). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal.h"

#define K 1024ull
#define M (1024ull * K)
#define G (1024ull * M)

static void size_ok(const char *s, uint64_t want)
{
	uint64_t v = 7;
	int r = sp_parse_size(s, &v);
	if (r != 0 || v != want)
		printf("  sp_parse_size(\"%s\"): %d, %llu (want 0, %llu)\n", s, r,
		       (unsigned long long)v, (unsigned long long)want);
	CHECK_EQ(r, 0);
	CHECK(v == want);
}

static void size_bad(const char *s, int err)
{
	uint64_t v = 7;
	int r = sp_parse_size(s, &v);
	if (r != err)
		printf("  sp_parse_size(\"%s\"): %d (want %d)\n", s, r, err);
	CHECK_EQ(r, err);
}

static void test_parse_size(void)
{
	size_ok("4096", 4096);
	size_ok("0", 0);
	size_ok("64K", 64 * K);
	size_ok("64k", 64 * K);
	size_ok("2M", 2 * M);
	size_ok("2MB", 2 * M);
	size_ok("2MiB", 2 * M);
	size_ok("1G", G);
	size_ok("1g", G);
	size_ok("1T", 1024 * G);
	size_ok("18446744073709551615", UINT64_MAX);
	const char *bad[] = { "", "2X", "-5", "+5", " 2M", "2M ", "M", "1.5G", "0x10", "2MM", "2Mi", "K2" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		size_bad(bad[i], -EINVAL);
	size_bad("99999999999G", -ERANGE);
	size_bad("18446744073709551616", -ERANGE);
	size_bad("16777216T", -ERANGE); /* 2^64 exactly */
}

static void count_is(const char *s, int err, uint64_t want)
{
	uint64_t v = 7;
	int r = sp_parse_count(s, &v);
	if (r != err)
		printf("  sp_parse_count(\"%s\"): %d (want %d)\n", s, r, err);
	CHECK_EQ(r, err);
	if (err == 0)
		CHECK(v == want);
}

static void test_parse_count(void)
{
	count_is("0", 0, 0);
	count_is("42", 0, 42);
	count_is("18446744073709551615", 0, UINT64_MAX);
	count_is("18446744073709551616", -ERANGE, 0);
	count_is("99999999999999999999999", -ERANGE, 0);
	const char *bad[] = { "", "-1", "+1", "1K", " 1", "1 ", "abc", "0x10", "1.0" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		count_is(bad[i], -EINVAL, 0);
}

static void bool_is(const char *s, int err, bool want)
{
	bool v = !want;
	int r = sp_parse_bool(s, &v);
	if (r != err)
		printf("  sp_parse_bool(\"%s\"): %d (want %d)\n", s, r, err);
	CHECK_EQ(r, err);
	if (err == 0)
		CHECK(v == want);
}

static void test_parse_bool(void)
{
	const char *yes[] = { "1", "yes", "YES", "Yes", "on", "ON", "true", "True", "tRuE" };
	const char *no[] = { "0", "no", "NO", "off", "Off", "false", "FALSE" };
	for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
		bool_is(yes[i], 0, true);
	for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
		bool_is(no[i], 0, false);
	const char *bad[] = { "2", "", "maybe", "yess", "10", " yes", "no " };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		bool_is(bad[i], -EINVAL, false);
}

static void test_backing_names(void)
{
	const char *names[] = { "auto", "4k", "thp", "2m", "1g" };
	enum sp_backing b;
	CHECK_EQ(SP_BACKING_COUNT, 5);
	for (int i = 0; i < SP_BACKING_COUNT; i++) {
		CHECK(!strcmp(sp_backing_name((enum sp_backing)i), names[i]));
		b = SP_BACKING_COUNT;
		CHECK_EQ(sp_backing_parse(names[i], &b), 0);
		CHECK_EQ(b, i);
		CHECK_EQ(sp_backing_parse(sp_backing_name((enum sp_backing)i), &b), 0);
		CHECK_EQ(b, i);
	}
	CHECK_EQ(sp_backing_parse("AUTO", &b), 0);
	CHECK_EQ(b, SP_BACKING_AUTO);
	CHECK_EQ(sp_backing_parse("Thp", &b), 0);
	CHECK_EQ(b, SP_BACKING_THP);
	CHECK_EQ(sp_backing_parse("2M", &b), 0);
	CHECK_EQ(b, SP_BACKING_2M);
	CHECK_EQ(sp_backing_parse("1G", &b), 0);
	CHECK_EQ(b, SP_BACKING_1G);
	CHECK_EQ(sp_backing_parse("4K", &b), 0);
	CHECK_EQ(b, SP_BACKING_4K);
	CHECK_EQ(sp_backing_parse("2g", &b), -EINVAL);
	CHECK_EQ(sp_backing_parse("", &b), -EINVAL);
	CHECK_EQ(sp_backing_parse("thpx", &b), -EINVAL);
	CHECK_EQ(sp_backing_parse("2m ", &b), -EINVAL);
	CHECK(!strcmp(sp_backing_name(SP_BACKING_COUNT), "?"));
	CHECK(!strcmp(sp_backing_name((enum sp_backing)99), "?"));
}

static void fmt_is(uint64_t bytes, const char *want)
{
	char buf[32];
	const char *r = sp_format_size(bytes, buf, sizeof buf);
	if (!r || strcmp(r, want))
		printf("  sp_format_size(%llu): \"%s\" (want \"%s\")\n", (unsigned long long)bytes,
		       r ? r : "(null)", want);
	CHECK(r == buf);
	CHECK(r && !strcmp(r, want));
}

static void test_format_size(void)
{
	fmt_is(2097152, "2M");
	fmt_is(1073741824, "1G");
	fmt_is(4096, "4K");
	fmt_is(1000, "1000");
	fmt_is(3 * M, "3M");
	fmt_is(64 * K, "64K");
	fmt_is(1536, "1536");
	fmt_is(2 * M + 4096, "2052K");
	/* and back: what is written parses to the same number */
	uint64_t sizes[] = { 4096, 2 * M, G, 1000, 5 * G, 2 * M + 4096 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char buf[32];
		uint64_t v = 0;
		CHECK_EQ(sp_parse_size(sp_format_size(sizes[i], buf, sizeof buf), &v), 0);
		CHECK(v == sizes[i]);
	}
}

/* ---- options ---- */

static int warnings;
static char last_warning[512];

static void on_warn(const char *msg, void *arg)
{
	warnings++;
	(*(int *)arg)++;
	snprintf(last_warning, sizeof last_warning, "%s", msg ? msg : "(null)");
}

static const char *vars[] = { "SUPERPAGE_BACKING", "SUPERPAGE_MIN",  "SUPERPAGE_HEAP",
			      "SUPERPAGE_STACKS",  "SUPERPAGE_SHM",  "SUPERPAGE_TEXT",
			      "SUPERPAGE_STATS",   "SUPERPAGE_VERBOSE", "SUPERPAGE_PERF_MAP" };

static void env_clear(void)
{
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
	warnings = 0;
	last_warning[0] = 0;
}

static void check_defaults(const struct sp_options *o)
{
	CHECK_EQ(o->backing, SP_BACKING_AUTO);
	CHECK(o->min == 2 * M);
	CHECK(o->heap == true);
	CHECK(o->stacks == false);
	CHECK(o->shm == false);
	CHECK_EQ(o->text, SP_TEXT_NO);
	CHECK(o->perf_map == false);
	CHECK(o->stats == false);
	CHECK(o->stats_file[0] == 0);
	CHECK_EQ(o->verbose, 0);
}

static int from_env(struct sp_options *o)
{
	int arg = 0;
	memset(o, 0x5a, sizeof *o);
	sp_options_default(o);
	int r = sp_options_from_env(o, on_warn, &arg);
	CHECK_EQ(arg, warnings); /* arg is passed through */
	return r;
}

static void test_options_defaults(void)
{
	struct sp_options o;
	env_clear();
	memset(&o, 0x5a, sizeof o);
	sp_options_default(&o);
	check_defaults(&o);
	CHECK_EQ(from_env(&o), 0);
	CHECK_EQ(warnings, 0);
	check_defaults(&o);
}

static void test_options_good(void)
{
	struct sp_options o;
	env_clear();
	setenv("SUPERPAGE_BACKING", "2m", 1);
	setenv("SUPERPAGE_MIN", "4M", 1);
	setenv("SUPERPAGE_HEAP", "no", 1);
	setenv("SUPERPAGE_STACKS", "yes", 1);
	setenv("SUPERPAGE_SHM", "on", 1);
	setenv("SUPERPAGE_TEXT", "main", 1);
	setenv("SUPERPAGE_PERF_MAP", "yes", 1);
	setenv("SUPERPAGE_STATS", "yes", 1);
	setenv("SUPERPAGE_VERBOSE", "2", 1);
	CHECK_EQ(from_env(&o), 0);
	CHECK_EQ(warnings, 0);
	CHECK_EQ(o.backing, SP_BACKING_2M);
	CHECK(o.min == 4 * M);
	CHECK(o.heap == false);
	CHECK(o.stacks == true);
	CHECK(o.shm == true);
	CHECK_EQ(o.text, SP_TEXT_MAIN);
	CHECK(o.perf_map == true);
	CHECK(o.stats == true);
	CHECK(!strcmp(o.stats_file, ""));
	CHECK_EQ(o.verbose, 2);

	setenv("SUPERPAGE_BACKING", "THP", 1);
	setenv("SUPERPAGE_TEXT", "all", 1);
	setenv("SUPERPAGE_STATS", "/tmp/x", 1);
	setenv("SUPERPAGE_VERBOSE", "3", 1);
	CHECK_EQ(from_env(&o), 0);
	CHECK_EQ(o.backing, SP_BACKING_THP);
	CHECK_EQ(o.text, SP_TEXT_ALL);
	CHECK(o.stats == true);
	CHECK(!strcmp(o.stats_file, "/tmp/x"));
	CHECK_EQ(o.verbose, 3);

	setenv("SUPERPAGE_TEXT", "no", 1);
	setenv("SUPERPAGE_STATS", "no", 1);
	CHECK_EQ(from_env(&o), 0);
	CHECK_EQ(o.text, SP_TEXT_NO);
	CHECK(o.stats == false);
	CHECK_EQ(warnings, 0);

	/* stderr is the account on stderr, as yes; a relative file is written ./FILE */
	setenv("SUPERPAGE_STATS", "stderr", 1);
	CHECK_EQ(from_env(&o), 0);
	CHECK(o.stats == true);
	CHECK(!strcmp(o.stats_file, ""));
	setenv("SUPERPAGE_STATS", "./stats.json", 1);
	CHECK_EQ(from_env(&o), 0);
	CHECK(o.stats == true);
	CHECK(!strcmp(o.stats_file, "./stats.json"));
	CHECK_EQ(warnings, 0);
	env_clear();
}

/* One bad variable: exactly one warning, one line, and the default stands. */
static void one_bad(const char *var, const char *value)
{
	struct sp_options o;
	env_clear();
	setenv(var, value, 1);
	int r = from_env(&o);
	if (warnings != 1)
		printf("  %s=%s gave %d warnings\n", var, value, warnings);
	CHECK_EQ(r, 1);
	CHECK_EQ(warnings, 1);
	CHECK(last_warning[0] != 0);
	char *nl = strchr(last_warning, '\n');
	CHECK(nl == NULL || nl[1] == 0);
	check_defaults(&o);
	env_clear();
}

static void test_options_bad(void)
{
	one_bad("SUPERPAGE_BACKING", "bogus");
	one_bad("SUPERPAGE_BACKING", "2g");
	one_bad("SUPERPAGE_MIN", "2X");
	one_bad("SUPERPAGE_MIN", "-1M");
	one_bad("SUPERPAGE_VERBOSE", "9");
	one_bad("SUPERPAGE_VERBOSE", "-1");
	one_bad("SUPERPAGE_VERBOSE", "loud");
	one_bad("SUPERPAGE_HEAP", "maybe");
	one_bad("SUPERPAGE_STACKS", "2");
	one_bad("SUPERPAGE_SHM", "sometimes");
	one_bad("SUPERPAGE_TEXT", "everything");
	one_bad("SUPERPAGE_PERF_MAP", "perhaps");
	/* a bare word is a slip, not a file to make in the working directory */
	one_bad("SUPERPAGE_STATS", "zz");
	one_bad("SUPERPAGE_STATS", "-1");
	one_bad("SUPERPAGE_STATS", "stdout");
	one_bad("SUPERPAGE_STATS", "stats.json");
	one_bad("SUPERPAGE_STATS", "");

	/* two bad values: two warnings, both defaults stand, good ones still apply */
	struct sp_options o;
	env_clear();
	setenv("SUPERPAGE_BACKING", "bogus", 1);
	setenv("SUPERPAGE_MIN", "2X", 1);
	setenv("SUPERPAGE_STACKS", "yes", 1);
	CHECK_EQ(from_env(&o), 2);
	CHECK_EQ(warnings, 2);
	CHECK_EQ(o.backing, SP_BACKING_AUTO);
	CHECK(o.min == 2 * M);
	CHECK(o.stacks == true);
	env_clear();
}

int main(void)
{
	RUN(test_parse_size);
	RUN(test_parse_count);
	RUN(test_parse_bool);
	RUN(test_backing_names);
	RUN(test_format_size);
	RUN(test_options_defaults);
	RUN(test_options_good);
	RUN(test_options_bad);
	return CHECK_DONE();
}
