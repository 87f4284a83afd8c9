/* life.h - the runtime's life cycle (life.c): its one set of fork handlers, and the
 * steps of the other files it runs at start, around fork and at exit. */
#ifndef SP_LIFE_H
#define SP_LIFE_H

#include <stdbool.h>

#pragma GCC visibility push(hidden)

/* The runtime's fork handlers, registered once with pthread_atfork; clone without
 * CLONE_VM runs them itself (fork.c). */
void rt_fork_prepare(void);
void rt_fork_parent(void);
void rt_fork_child(void);

/* fork.c: private hugetlb memory across fork. prepare (last, under every lock) picks
 * how the child's share is kept and arms the SIGBUS guard; parent (first; failed: no
 * child was made) and child (first: the child's copy) undo it. fork_guard_copy is the
 * child's copy of that memory, once (from the guard or from the child handler). */
void fork_share_prepare(void);
void fork_share_parent(bool failed);
void fork_share_child(void);
void fork_guard_copy(void);

/* life.c: the runtime's fork handlers registered, once, before any other's (so that
 * its prepare runs last and its parent and child handlers first); from the
 * constructor and from interpose.c's __register_atfork. */
void life_register_fork(void);
/* Another's registration (glibc's __register_atfork's arguments and value), after the
 * runtime's own. */
int life_register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			 void *dso);

/* stacks.c: the lock of the stacks' slots, taken across fork; in the child a fresh
 * lock, and the forking thread's new id on the stack of ours it runs on. */
void stacks_fork_prepare(void);
void stacks_fork_parent(void);
void stacks_fork_child(void);

/* text.c: the program's text (and large data) moved to huge pages under --text. */
void text_init(void);

#pragma GCC visibility pop

#endif
