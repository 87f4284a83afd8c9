/* stacks.h - thread stacks on huge pages under --stacks (stacks.c): the counts the
 * report prints, and the attributes copied for a thread (stackattr.c). */
#ifndef SP_STACKS_H
#define SP_STACKS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "superpage.h"

/* What --stacks did in this process. */
struct rt_stack_stats {
	uint64_t threads;      /* threads started on a stack of ours */
	uint64_t bytes;        /* the sizes of those stacks, added up */
	uint64_t maps;         /* stacks mapped (the rest were reused) */
	uint64_t reused;       /* threads given a stack a joined or ended thread left */
	uint64_t unmaps;       /* stacks given back to the kernel: more were free than kept */
	uint64_t live;         /* stacks held by threads now (joinable ones until joined) */
	uint64_t cached;       /* free stacks kept for the next threads now */
	/* Threads left on glibc's stack, by reason (enum sp_fall): thp_off (THP never or
	 * disabled), unsupported (no THP; explicit scheduling or an attribute that
	 * cannot be copied; the thread could not be started on our stack), mmap_failed,
	 * madvise_failed, skipped_recent_failure (too many stacks of ours live). */
	uint64_t falls[SP_FALL_COUNT];
};
void rt_stack_stats_get(struct rt_stack_stats *out);

/* The stack a thread is to have (stackattr.c). */
struct stack_want {
	size_t size, guard;  /* rounded: 2 MiB multiple; 4 KiB multiple, at least a page */
	bool detached;
};
/* The caller's attributes (glibc's defaults for NULL) into mine, but for the stack.
 * -1 when mine holds them, -2 when the caller gave a stack of its own (left alone),
 * else the reason to leave the thread to glibc (enum sp_fall). */
int stack_attr_copy(const pthread_attr_t *attr, pthread_attr_t *mine, struct stack_want *w)
	__attribute__((visibility("hidden")));

#endif
