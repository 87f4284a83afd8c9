/* life.h - the runtime's life cycle (life.c): its one set of fork handlers, and the
 * steps of the other files it runs at start, around fork and at exit. */
#ifndef SP_LIFE_H
#define SP_LIFE_H

#pragma GCC visibility push(hidden)

/* The runtime's fork handlers, registered once with pthread_atfork; clone without
 * CLONE_VM runs them itself (fork.c). */
void rt_fork_prepare(void);
void rt_fork_parent(void);
void rt_fork_child(void);

/* fork.c: the SIGSEGV guard that stands across a fork while hugetlb memory is staged
 * (arm in prepare, disarm in parent and child), and the child's copy of that memory
 * (from the guard at the first touch of a hole, or from the child handler; once). */
void fork_guard_arm(void);
void fork_guard_disarm(void);
void fork_guard_copy(void);

/* stacks.c: the lock of the stacks' slots, taken across fork; in the child a fresh
 * lock, and the forking thread's new id on the stack of ours it runs on. */
void stacks_fork_prepare(void);
void stacks_fork_parent(void);
void stacks_fork_child(void);

/* text.c: the program's text (and large data) moved to huge pages under --text. */
void text_init(void);

#pragma GCC visibility pop

#endif
