/* stackattr.c - the attributes of a thread the program starts, copied for --stacks
 * (stacks.c) to a thread started on a stack of ours: all but the stack. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>

#include "pageheap/pageheap.h"
#include "stacks.h"

#define AFFINITY_MAX 1024 /* bytes of a cpuset copied from an attribute (8192 CPUs) */

/* The caller's attributes (glibc's defaults for NULL) into mine, but for the stack.
 * -1 when mine holds them, -2 when the caller gave a stack of its own (left alone),
 * else the reason to leave the thread to glibc. */
int stack_attr_copy(const pthread_attr_t *attr, pthread_attr_t *mine, struct stack_want *w)
{
	_Alignas(8) unsigned char cpus[AFFINITY_MAX];
	const pthread_attr_t *from = attr;
	size_t size, guard, ssize;
	int detach, inherit, scope, r;
	void *addr;
	sigset_t mask;

	if (!attr) {
		/* A copy of the defaults is what glibc starts a NULL-attr thread with. */
		if (pthread_getattr_default_np(mine) != 0)
			return SP_FALL_UNSUPPORTED;
		from = mine;
	}
	/* glibc 2.36 gives "stackaddr - size" for a stack address never set. */
	pthread_attr_getstack(from, &addr, &ssize);
	if (addr && (uintptr_t)addr + ssize != 0) {
		if (!attr)
			pthread_attr_destroy(mine);
		return -2;
	}
	pthread_attr_getstacksize(from, &size);
	pthread_attr_getguardsize(from, &guard);
	pthread_attr_getdetachstate(from, &detach);
	pthread_attr_getinheritsched(from, &inherit);
	r = pthread_attr_getscope(from, &scope);
	w->detached = detach == PTHREAD_CREATE_DETACHED;
	if (size > SIZE_MAX - UNIT_SIZE || guard > SIZE_MAX - UNIT_SIZE)
		goto no;
	w->size = (size + UNIT_SIZE - 1) & ~(size_t)(UNIT_SIZE - 1);
	w->guard = guard ? (guard + PAGE_SIZE - 1) & ~(size_t)(PAGE_SIZE - 1) : PAGE_SIZE;
	/* Explicit scheduling takes glibc's flags of which values were set, and these
	 * cannot be read back: such a thread keeps glibc's stack. */
	if (inherit != PTHREAD_INHERIT_SCHED || r != 0)
		goto no;
	if (!attr)
		return -1;
	if (pthread_attr_init(mine) != 0)
		return SP_FALL_UNSUPPORTED;
	if (pthread_attr_setdetachstate(mine, detach) || pthread_attr_setguardsize(mine, guard) ||
	    pthread_attr_setscope(mine, scope))
		goto no_mine;
	/* An affinity: asked with no room, glibc says EINVAL when one is set with any
	 * CPU in it; with none set it fills the room with ones, where an empty one set
	 * gives zeros. Without one, the thread inherits its creator's, which a copy of
	 * "all ones" would not do. */
	if (pthread_attr_getaffinity_np(from, 0, (cpu_set_t *)(void *)cpus) == 0) {
		r = pthread_attr_getaffinity_np(from, sizeof(cpu_set_t), (cpu_set_t *)(void *)cpus);
		if (r == 0 && cpus[0] == 0 &&
		    pthread_attr_setaffinity_np(mine, sizeof(cpu_set_t), (cpu_set_t *)(void *)cpus))
			goto no_mine;
	} else {
		for (r = EINVAL, ssize = sizeof(cpu_set_t); r && ssize <= sizeof cpus; ssize *= 2)
			r = pthread_attr_getaffinity_np(from, ssize, (cpu_set_t *)(void *)cpus);
		if (r || pthread_attr_setaffinity_np(mine, ssize / 2, (cpu_set_t *)(void *)cpus))
			goto no_mine;
	}
	r = pthread_attr_getsigmask_np(from, &mask);
	if (r == 0 && pthread_attr_setsigmask_np(mine, &mask))
		goto no_mine;
	if (r != 0 && r != PTHREAD_ATTR_NO_SIGMASK_NP)
		goto no_mine;
	return -1;
no_mine:
	pthread_attr_destroy(mine);
	return SP_FALL_UNSUPPORTED;
no:
	if (!attr)
		pthread_attr_destroy(mine);
	return SP_FALL_UNSUPPORTED;
}
