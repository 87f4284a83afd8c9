/* check.h - the test helpers: CHECK assertions, SKIP with a reason, one result line per test. */
#ifndef SP_CHECK_H
#define SP_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int check_fails_;
static int check_skipped_;
static char check_skip_why_[512];
static int check_total_fail_;

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			printf("  check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
			fflush(stdout);                                              \
			check_fails_++;                                              \
		}                                                                    \
	} while (0)

/* CHECK that two integers are equal, printing both when they are not. */
#define CHECK_EQ(a, b)                                                               \
	do {                                                                         \
		long long a_ = (long long)(a), b_ = (long long)(b);                  \
		if (a_ != b_) {                                                      \
			printf("  check failed: %s == %s (%lld != %lld) (%s:%d)\n", #a, #b, \
			       a_, b_, __FILE__, __LINE__);                          \
			fflush(stdout);                                              \
			check_fails_++;                                              \
		}                                                                    \
	} while (0)

static inline void check_skip_(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(check_skip_why_, sizeof check_skip_why_, fmt, ap);
	va_end(ap);
	check_skipped_ = 1;
}
/* Ends the current test as skipped, with the reason. */
#define SKIP(...)                          \
	do {                               \
		check_skip_(__VA_ARGS__);  \
		return;                    \
	} while (0)

static inline void check_run_(const char *name, void (*fn)(void))
{
	check_fails_ = 0;
	check_skipped_ = 0;
	check_skip_why_[0] = 0;
	fn();
	if (check_fails_) {
		printf("FAIL %s\n", name);
		check_total_fail_++;
	} else if (check_skipped_) {
		printf("SKIP %s: %s\n", name, check_skip_why_);
	} else {
		printf("PASS %s\n", name);
	}
	fflush(stdout);
}
#define RUN(fn) check_run_(#fn, fn)
#define CHECK_DONE() (check_total_fail_ ? 1 : 0)

#endif
