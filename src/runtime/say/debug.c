/* debug.c - the invariants make DEBUG=1 switches on (debug.h): a failed sp_assert, the
 * lock ranks of life.c's order checked as each lock is taken, and each room's checker
 * run as its lock is released. Inside other programs, perhaps inside malloc: no
 * malloc, no stdio; what it finds broken it says through rt_abort. Empty without
 * SP_DEBUG. */
#include <pthread.h>
#include <stdatomic.h>

#include "debug.h"
#include "runtime.h"

#ifdef SP_DEBUG

/* The mutex calls themselves, past debug.h's macros. */
#undef pthread_mutex_lock
#undef pthread_mutex_unlock
#undef pthread_mutex_init

static const char *const rank_names[RANK_COUNT] = {
	[RANK_NONE] = "an unranked lock",
	[RANK_STACKS] = "the stacks' lock",
	[RANK_SHM] = "the SysV table's lock",
	[RANK_PACK] = "the packed chunks' lock",
	[RANK_CENTRAL_SLOTS] = "the central slots' lock",
	[RANK_CENTRAL_SLOT] = "a central slot's lock",
	[RANK_CENTRAL_CLASS] = "a central class's lock",
	[RANK_FIT_ARENA] = "a fitted-block arena's lock",
	[RANK_FIT_META] = "the fitted blocks' meta lock",
	[RANK_PAGES] = "the page heap's lock",
	[RANK_BRK] = "the break's lock",
	[RANK_SEGMENTS] = "the segments' lock",
};

/* The locks the thread holds, counted by rank (a thread may hold many of one rank:
 * fork's prepare takes every slot's and class's). */
static __thread unsigned held[RANK_COUNT];

/* Every SP_LOCK_RANK of the runtime, gathered by the linker (weak: none linked in, a
 * test that takes no lock of the runtime's, leaves them 0). */
extern const struct sp_lock_rank __start_sp_lock_ranks[] __attribute__((weak, visibility("hidden")));
extern const struct sp_lock_rank __stop_sp_lock_ranks[] __attribute__((weak, visibility("hidden")));

static const struct sp_lock_rank *rank_of(const pthread_mutex_t *m)
{
	const char *a = (const char *)m;
	for (const struct sp_lock_rank *r = __start_sp_lock_ranks; r < __stop_sp_lock_ranks; r++)
		if (a >= (const char *)r->lo && a < (const char *)r->lo + r->len)
			return r;
	return NULL;
}

void sp_assert_failed(const char *cond, const char *file, int line)
{
	rt_abort("assertion failed: %s at %s:%d", cond, file, line);
}

bool sp_check_due(_Atomic size_t *credit, size_t cost)
{
	if (cost <= SP_CHECK_EVERY)
		return true;
	size_t c = atomic_fetch_add_explicit(credit, SP_CHECK_EVERY, memory_order_relaxed);
	if (c + SP_CHECK_EVERY < cost)
		return false;
	atomic_store_explicit(credit, 0, memory_order_relaxed);
	return true;
}

int sp_mutex_lock(pthread_mutex_t *m, const char *file, int line)
{
	const struct sp_lock_rank *r = rank_of(m);
	if (r)
		for (unsigned k = RANK_COUNT - 1; k > r->rank; k--)
			if (held[k])
				rt_abort("lock order broken: %s taken at %s:%d while %s is held "
					 "(life.c's order)", rank_names[r->rank], file, line,
					 rank_names[k]);
	int e = pthread_mutex_lock(m);
	if (r && e == 0)
		held[r->rank]++;
	return e;
}

int sp_mutex_unlock(pthread_mutex_t *m, const char *file, int line)
{
	const struct sp_lock_rank *r = rank_of(m);
	if (r && r->check) {
		const char *bad = r->check(m);
		if (bad)
			rt_abort("%s found broken as it is released at %s:%d: %s",
				 rank_names[r->rank], file, line, bad);
	}
	if (r && held[r->rank])
		held[r->rank]--;
	return pthread_mutex_unlock(m);
}

/* A lock made anew (a forked child's, in place of the one its prepare took) is
 * no longer held. */
int sp_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	const struct sp_lock_rank *r = rank_of(m);
	if (r && held[r->rank])
		held[r->rank]--;
	return pthread_mutex_init(m, a);
}

#endif
