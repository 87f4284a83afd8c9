/* debug.h - the invariants `make DEBUG=1` switches on (SP_DEBUG, debug.c): sp_assert,
 * the runtime's locks ranked in life.c's order, and each room's checker run as its
 * lock is released. Without SP_DEBUG it all compiles away: sp_assert evaluates
 * nothing, a rank is a static assertion, the locks are pthread's own calls.
 *
 * A lock's rank is declared where the lock is defined (SP_LOCK_RANK); in DEBUG the
 * Makefile includes this header first in every file of the runtime, so that its
 * pthread_mutex_lock, _unlock and _init are the checked ones below. */
#ifndef SP_DEBUG_H
#define SP_DEBUG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#pragma GCC visibility push(hidden)

/* The order life.c writes out, the first taken first: a thread that holds a lock
 * may take one of the same rank or a later one, never an earlier one. */
enum sp_rank {
	RANK_NONE = 0,
	RANK_STACKS,          /* 1. the stacks' slots (program/stacks.c) */
	RANK_SHM,             /* 2. the SysV table (program/shm.c) */
	RANK_PACK,            /* 3. the packed chunks (program/pack.c) */
	RANK_CENTRAL_SLOTS,   /* 4. the central lists: the slots' lock, */
	RANK_CENTRAL_SLOT,    /*    each slot's, */
	RANK_CENTRAL_CLASS,   /*    each class's (malloc/central.c) */
	RANK_FIT_ARENA,       /* 5. the fitted blocks: the arenas, */
	RANK_FIT_META,        /*    then the meta lock (malloc/fit_chunk.c) */
	RANK_PAGES,           /* 6. the page heap (pageheap/units.c) */
	RANK_BRK,             /* 7. the break (program/brk.c) */
	RANK_SEGMENTS,        /* 8. the program's segments (program/segments.c) */
	RANK_COUNT
};

/* A ranked lock: the lock itself, or an array of records each holding one (every
 * mutex in [lo, lo + len) has the rank); check, if not NULL, is run as such a lock
 * is released, still held: NULL, or what it found broken. */
struct sp_lock_rank {
	const void *lo;
	size_t len;
	enum sp_rank rank;
	const char *(*check)(pthread_mutex_t *m);
};

#define SP_CAT2_(a, b) a##b
#define SP_CAT_(a, b) SP_CAT2_(a, b)

#ifdef SP_DEBUG

/* Says "assertion failed: COND at FILE:LINE" and aborts (rt_abort: no malloc, no
 * stdio). */
#define sp_assert(cond) \
	((cond) ? (void)0 : sp_assert_failed(#cond, __FILE__, __LINE__))
__attribute__((noreturn, cold)) void sp_assert_failed(const char *cond, const char *file,
						      int line);

/* The rank of obj (a mutex, or an array of records holding mutexes), and the checker
 * run as one of them is released (or NULL); in a section of their own, which debug.c
 * reads: no constructor, so a lock taken before any constructor ran is ranked too. */
#define SP_LOCK_RANK(obj, rank, check)                                                  \
	static const struct sp_lock_rank SP_CAT_(sp_lock_rank_, __LINE__)              \
	__attribute__((section("sp_lock_ranks"), used, aligned(sizeof(void *)))) =     \
		{ &(obj), sizeof(obj), rank, check }

/* Whether a checker that walks cost items is due at this release (*credit, the
 * checker's, counts releases): at every one while cost is at most SP_CHECK_EVERY
 * items, else at one release in cost / SP_CHECK_EVERY, so that a big heap costs
 * about SP_CHECK_EVERY items a release, counted, not timed. */
#define SP_CHECK_EVERY 1024
bool sp_check_due(_Atomic size_t *credit, size_t cost);

int sp_mutex_lock(pthread_mutex_t *m, const char *file, int line);
int sp_mutex_unlock(pthread_mutex_t *m, const char *file, int line);
int sp_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);
#define pthread_mutex_lock(m) sp_mutex_lock(m, __FILE__, __LINE__)
#define pthread_mutex_unlock(m) sp_mutex_unlock(m, __FILE__, __LINE__)
#define pthread_mutex_init(m, a) sp_mutex_init(m, a)

#else

#define sp_assert(cond) ((void)sizeof(!(cond)))
#define SP_LOCK_RANK(obj, rank, check) \
	_Static_assert(sizeof(obj) > 0 && (rank) > RANK_NONE && (rank) < RANK_COUNT, #obj)

#endif

#pragma GCC visibility pop

#endif
