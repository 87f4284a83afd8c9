/* test_invariants.c - a broken invariant is caught (make DEBUG=1, src/runtime/say/debug.h):
 * on the fake kernel, each case in a child that breaks one thing (a unit's page
 * counted free twice, a central list's link outside its span, a fitted-block arena's
 * count, a lock taken against life.c's order, an sp_assert), then makes an ordinary
 * call; in DEBUG the child dies of SIGABRT with the checker's message on stderr.
 * Without DEBUG the checkers the tests call (pages_check, central_check, fit_check)
 * find the same breaks, and sp_assert evaluates nothing. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "life.h"
#include "malloc/central.h"
#include "malloc/fit.h"
#include "malloc/malloc.h"
#include "pageheap/units.h"
#include "runtime.h"

#ifdef SP_DEBUG
#define DEBUG_BUILD 1
#else
#define DEBUG_BUILD 0
#endif

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_reset();
	fk_machine_default();
	fk_install();
}

/* Runs fn in a child, its stderr into buf: true if it died of SIGABRT (in DEBUG) or
 * exited 0 (without: fn checks what it can and exits 1 if that fails). */
static bool in_child(void (*fn)(void), char *buf, size_t cap)
{
	int fd[2];
	if (pipe(fd) < 0)
		return false;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		dup2(fd[1], 2);
		fn();
		_exit(DEBUG_BUILD ? 3 : 0); /* in DEBUG, fn must not come back */
	}
	close(fd[1]);
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(fd[0], buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = 0;
	close(fd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFSIGNALED(st) && (!WIFEXITED(st) || WEXITSTATUS(st) != 0))
		printf("  child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (DEBUG_BUILD)
		return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* In DEBUG, fn's child aborted saying who and what; without, it exited 0. */
static void expect(void (*fn)(void), const char *who, const char *what)
{
	char buf[2048];
	bool died = in_child(fn, buf, sizeof buf);
	bool said = strstr(buf, who) && strstr(buf, what);
	if (!died || (DEBUG_BUILD && !said))
		printf("  child said: %s\n", buf[0] ? buf : "(nothing)\n");
	CHECK(died);
	if (DEBUG_BUILD)
		CHECK(said);
}

/* A page of a block is counted free in its unit a second time (its count one too
 * many); the next block's pages are had under the page heap's lock. */
static void unit_counted_free_twice(void)
{
	size_t where;
	void *p = rt_malloc(200000);
	struct span *s = p ? span_at((uintptr_t)p) : NULL;
	if (!s)
		_exit(2);
	pg.units[page_of(s->start) / PAGES_PER_UNIT].nfree++;
	if (!DEBUG_BUILD) {
		const char *why = pages_check(&where);
		_exit(why && !strcmp(why, "a unit's count of free pages is wrong") ? 0 : 1);
	}
	/* (a heap of more than SP_CHECK_EVERY pages is checked at some releases only) */
	for (int i = 0; i < 64; i++)
		rt_free(rt_malloc(300000));
}

static void test_unit_counted_free_twice(void)
{
	CHECK(rt_init());
	expect(unit_counted_free_twice, "the page heap's lock found broken as it is released at "
					"src/runtime/pageheap/", "a unit's count of free pages is wrong");
}

/* A span's free list leads outside it; the next objects of another class are taken
 * under the same slot's lock. */
static void link_outside_span(void)
{
	/* (a thread's first spans are short: its batch may take all of one) */
	struct span *s = NULL;
	for (int i = 0; i < 4096 && !(s && s->listed); i++) {
		void *p = rt_malloc(48);
		s = p ? span_at((uintptr_t)p) : NULL;
	}
	if (!s || !s->listed)
		_exit(2);
	s->freelist = (void *)(s->end + 4096);
	if (!DEBUG_BUILD) {
		const char *why = central_check();
		_exit(why && !strcmp(why, "a free list's link is outside its span's objects") ? 0 : 1);
	}
	rt_malloc(1000);
}

static void test_link_outside_span(void)
{
	CHECK(rt_init());
	expect(link_outside_span, "a central slot's lock found broken as it is released at "
				  "src/runtime/malloc/central.c",
	       "a free list's link is outside its span's objects");
}

/* An arena counts a grain free that no block holds; the next fitted block is cut
 * under its lock. */
static void arena_count_wrong(void)
{
	void *p = rt_malloc(20000);
	if (!p)
		_exit(2);
	for (unsigned i = 0; i < FIT_ARENAS; i++)
		fit_arenas[i].free_grains++;
	if (!DEBUG_BUILD)
		_exit(fit_check() && !strcmp(fit_check(), "the count of free grains is wrong") ? 0 : 1);
	for (int i = 0; i < 64; i++)
		rt_malloc(30000);
}

static void test_arena_count_wrong(void)
{
	CHECK(rt_init());
	expect(arena_count_wrong, "a fitted-block arena's lock found broken as it is released",
	       "the count of free grains is wrong");
}

/* The page heap's lock, then an arena's: life.c puts the arenas first. */
static void lock_out_of_order(void)
{
	pages_lock();
	fit_lock();
	fit_unlock();
	pages_unlock();
}

static void test_lock_out_of_order(void)
{
	if (!DEBUG_BUILD)
		SKIP("lock ranks are checked in DEBUG builds only (make DEBUG=1)");
	CHECK(rt_init());
	expect(lock_out_of_order, "lock order broken: a fitted-block arena's lock taken at "
				  "src/runtime/malloc/fit.c",
	       "while the page heap's lock is held (life.c's order)");
	/* and in the order, nothing is said */
	pages_lock();
	pages_unlock();
	fit_lock();
	pages_lock();
	pages_unlock();
	fit_unlock();
}

static int evaluated;
static int count_evaluation(void) { return ++evaluated; }

static void assert_fails(void)
{
	sp_assert(count_evaluation() == 5);
}

static void test_assert(void)
{
	char buf[512];
	if (!DEBUG_BUILD) {
		/* compiled away: its condition is not even evaluated */
		sp_assert(count_evaluation() == 5);
		CHECK_EQ(evaluated, 0);
		return;
	}
	sp_assert(count_evaluation() == 1);
	CHECK_EQ(evaluated, 1);
	CHECK(in_child(assert_fails, buf, sizeof buf));
	CHECK(strstr(buf, "assertion failed: count_evaluation() == 5 at tests/unit/test_invariants.c:") != NULL);
}

int main(void)
{
	RUN(test_unit_counted_free_twice);
	RUN(test_link_outside_span);
	RUN(test_arena_count_wrong);
	RUN(test_lock_out_of_order);
	RUN(test_assert);
	fk_uninstall();
	return CHECK_DONE();
}
