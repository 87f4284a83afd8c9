/* test_stacks.c - thread stacks of ours under --stacks (stacks.c) on the fake kernel:
 * a thread the program starts gets a 2 MiB-aligned stack whose top unit stays on base
 * pages and whose units below are advised huge; a joined thread's stack is kept and
 * the next thread of that size runs on it; an ended detached thread's stack is found
 * free (its task gone, as the kernel says through the seam); a refused madvise leaves
 * the thread on glibc's stack, counted. Threads are real; their stacks are mapped
 * through the fake kernel. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"
#include "life.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"

#define MB ((uintptr_t)1 << 20)

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_setup(0, 0);
	setenv("SUPERPAGE_BACKING", "thp", 1);
	setenv("SUPERPAGE_STACKS", "yes", 1);
}

struct seen {
	uintptr_t local;        /* an address in the thread's frame */
	uintptr_t lo;           /* its stack, as glibc has it */
	size_t size;
	_Atomic pid_t tid;
};

static void *body(void *arg)
{
	struct seen *s = arg;
	pthread_attr_t a;
	void *lo = NULL;
	volatile char here = 0;
	s->local = (uintptr_t)&here;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getstack(&a, &lo, &s->size);
		pthread_attr_destroy(&a);
	}
	s->lo = (uintptr_t)lo;
	atomic_store(&s->tid, kern_tid());
	return NULL;
}

/* Runs body on a thread with attr, joined unless detached. 0 or the error. */
static int run(struct seen *s, const pthread_attr_t *attr, bool detached)
{
	pthread_t t;
	int r = pthread_create(&t, attr, body, s);
	if (r == 0 && !detached)
		r = pthread_join(t, NULL);
	return r;
}

static bool task_gone(pid_t tid)
{
	return sp_syscall_raw(SYS_tgkill, getpid(), tid, 0, 0, 0, 0) == -ESRCH;
}

static struct rt_stack_stats stats(void)
{
	struct rt_stack_stats st;
	rt_stack_stats_get(&st);
	return st;
}

static uintptr_t first_lo;

static void test_thread_on_our_stack(void)
{
	struct seen s = { 0 };
	struct fk_map_info m;
	CHECK(rt_init());
	CHECK_EQ(run(&s, NULL, false), 0);
	struct rt_stack_stats st = stats();
	CHECK_EQ(st.threads, 1);
	CHECK_EQ(st.maps, 1);
	CHECK_EQ(s.lo % (2 * MB), 0);
	CHECK(s.size >= 2 * MB && s.size % (2 * MB) == 0);
	CHECK(s.local >= s.lo && s.local < s.lo + s.size);
	/* The top unit on base pages, the rest advised huge. */
	CHECK(fk_map_find((void *)s.local, &m) == 0);
	CHECK_EQ(m.advice, -1);
	if (s.size > 2 * MB) {
		CHECK(fk_map_find((void *)s.lo, &m) == 0);
		CHECK_EQ(m.advice, 1);
	}
	/* Joined: kept for the next thread, none live. */
	st = stats();
	CHECK_EQ(st.live, 0);
	CHECK_EQ(st.cached, 1);
	first_lo = s.lo;
}

static void test_joined_stack_reused(void)
{
	struct seen s = { 0 };
	int maps = fk_mmap_calls();
	CHECK_EQ(run(&s, NULL, false), 0);
	struct rt_stack_stats st = stats();
	CHECK_EQ(st.threads, 2);
	CHECK_EQ(st.maps, 1);
	CHECK_EQ(st.reused, 1);
	CHECK_EQ(s.lo, first_lo);
	CHECK_EQ(fk_mmap_calls(), maps);
}

/* A detached thread's stack: free once its task is gone, and then the next thread of
 * its size runs on it. */
static void test_detached_stack_reaped(void)
{
	struct seen s = { 0 }, s2 = { 0 };
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 6 * MB);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	CHECK_EQ(run(&s, &a, true), 0);
	/* Its task gone (asked of the real kernel, a bounded number of times). */
	unsigned tries = 0;
	pid_t tid = 0;
	while (tries < 1000000 && (!(tid = atomic_load(&s.tid)) || !task_gone(tid))) {
		sched_yield();
		tries++;
	}
	if (!tid || !task_gone(tid))
		SKIP("the detached thread did not end after %u yields", tries);
	uint64_t maps = stats().maps, reused = stats().reused;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_JOINABLE);
	CHECK_EQ(run(&s2, &a, false), 0);
	pthread_attr_destroy(&a);
	CHECK_EQ(s2.lo, s.lo);
	CHECK_EQ(stats().maps, maps);
	CHECK_EQ(stats().reused, reused + 1);
}

/* madvise(MADV_HUGEPAGE) refused: the thread runs on glibc's stack (no mapping of the
 * fake kernel's), the fall counted as madvise_failed, nothing of ours left mapped. */
static void test_madvise_refused(void)
{
	struct seen s = { 0 };
	struct fk_map_info m;
	pthread_attr_t a;
	uint64_t falls = stats().falls[SP_FALL_MADVISE], threads = stats().threads;
	size_t bytes = fk_map_bytes();
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 10 * MB);
	fk_madvise_fail(MADV_HUGEPAGE, EAGAIN);
	CHECK_EQ(run(&s, &a, false), 0);
	fk_madvise_fail(MADV_HUGEPAGE, 0);
	pthread_attr_destroy(&a);
	CHECK(s.local != 0);
	CHECK(fk_map_find((void *)s.local, &m) < 0);
	CHECK_EQ(stats().falls[SP_FALL_MADVISE], falls + 1);
	CHECK_EQ(stats().threads, threads);
	CHECK_EQ(fk_map_bytes(), bytes);
}

int main(void)
{
	RUN(test_thread_on_our_stack);
	RUN(test_joined_stack_reused);
	RUN(test_detached_stack_reaped);
	RUN(test_madvise_refused);
	fk_uninstall();
	return CHECK_DONE();
}
