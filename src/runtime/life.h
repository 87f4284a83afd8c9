/* life.h - the runtime's life cycle (life.c): its start, its one set of fork handlers,
 * and every room's steps that it runs at start, around fork and at exit. A fork hook
 * of any room is declared here, and called from life.c alone (in the lock order life.c
 * writes out). */
#ifndef SP_LIFE_H
#define SP_LIFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(hidden)

struct rt_stats;

/* ---- start-up (life.c) ---- */
/* Ready to serve: options read, range reserved. Idempotent, thread-safe. */
bool rt_init(void);
/* Whether the heap is serving (without starting it). */
bool rt_ready(void);

/* text.c: the program's text (and large data) moved to huge pages under --text. */
void text_init(void);

/* ---- the runtime's one set of fork handlers (life.c) ---- */
/* The runtime's fork handlers, registered once with pthread_atfork; clone without
 * CLONE_VM runs them itself (fork.c). */
void rt_fork_prepare(void);
void rt_fork_parent(void);
void rt_fork_child(void);

/* life.c: the runtime's fork handlers registered, once, before any other's (so that
 * its prepare runs last and its parent and child handlers first); from the
 * constructor and from interpose.c's __register_atfork. */
void life_register_fork(void);
/* Another's registration (glibc's __register_atfork's arguments and value), after the
 * runtime's own. */
int life_register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			 void *dso);

/* ---- fork and private hugetlb memory (fork.c) ----
 * The kernel's fork shares private hugetlb memory with the child, copy on write; the
 * child copies it into THP memory of its own as soon as it runs, reading only. Each
 * module that holds such memory names its ranges to fork.c (under its lock, in the
 * same order in prepare and in the child), and in the child, once fork.c has copied
 * them, marks them THP (copied: from fork.c's guard, a signal handler, or its child
 * handler; system calls and memory only, under the module's lock, which this thread
 * took in prepare). */
typedef void (*fork_range_fn)(uintptr_t a, size_t len, size_t page, void *arg);

/* fork.c: prepare (last, under every lock) picks how the child's share is kept and
 * arms the SIGBUS guard; parent (first; failed: no child was made) and child (first:
 * the child's copy) undo it. fork_guard_copy is the child's copy of that memory, once
 * (from the guard or from the child handler). */
void fork_share_prepare(void);
void fork_share_parent(bool failed);
void fork_share_child(void);
void fork_guard_copy(void);
/* Whether the pool can give n more pages of 2 MiB (1 GiB with giga) besides those
 * promised to forked children still copying theirs (any page taken from that room
 * could cost a child the page its parent writes). */
bool fork_pool_spares(bool giga, size_t n);
/* The forks' counts, into st (struct rt_stats). */
void fork_stats(struct rt_stats *st);

/* ---- the rooms' fork hooks, which life.c calls in its order ---- */
/* The page heap's part (pageheap/fork_units.c), under its lock: empty hugetlb units
 * given back (prepare), the runs of hugetlb units named, the pages of free units the
 * child shares and need not copy counted (held), free units of its chunks given back
 * for room in the pool (trim), some units moved to THP for room (demote), the units
 * marked THP once copied. */
void pages_fork_prepare(void);
void pages_fork_hugetlb(fork_range_fn fn, void *arg);
size_t pages_fork_held(void);
long pages_fork_trim(long want);
/* Whether the heap's 2 MiB page at a is known present (in a chunk, found present by a
 * walk before and never dropped since); faulted_at: a walk found it present. */
bool pages_fork_faulted(uintptr_t a);
void pages_fork_faulted_at(uintptr_t a);
size_t pages_fork_demote(long want[2]);
void pages_fork_copied(void);
void pages_fork_child(void);
/* pageheap/near_limit.c: in a forked child, the look at the limit another thread of the
 * parent may have been making is not this process's; the next look comes soon. */
void limits_fork_child(void);

/* malloc/central.c: lock takes the slots' lock, every slot's lock, then every
 * class's (slot first, class second, as the lists take them); unlock releases them.
 * In the child, with them and the page heap's lock held, orphan makes the spans of
 * every slot but keep (the forking thread's, 1 + index; 0: none) orphans. */
void central_fork_lock(void);
void central_fork_unlock(void);
void central_fork_orphan(unsigned keep);

/* The program's rooms: the break's hugetlb steps (program/brk.c, as pages_fork_*;
 * demote: 2 MiB pages moved to THP, *want counted down), the program's own segments
 * on hugetlb pages (program/segments.c, the same), the SysV table's lock
 * (program/shm.c), the packed reservations (program/pack.c). */
void brk_fork_prepare(void);
void brk_fork_hugetlb(fork_range_fn fn, void *arg);
size_t brk_fork_demote(long *want);
void brk_fork_parent(void);
void brk_fork_copied(void);
void brk_fork_child(void);
void segs_fork_prepare(void);
void segs_fork_hugetlb(fork_range_fn fn, void *arg);
size_t segs_fork_demote(long *want);
void segs_fork_parent(void);
void segs_fork_copied(void);
void segs_fork_child(void);
void shm_fork_prepare(void);
void shm_fork_after(void);
void pack_fork_prepare(void);
void pack_fork_parent(void);
void pack_fork_child(void);
/* program/stacks.c: the lock of the stacks' slots, taken across fork; in the child a
 * fresh lock, and the forking thread's new id on the stack of ours it runs on. */
void stacks_fork_prepare(void);
void stacks_fork_parent(void);
void stacks_fork_child(void);

#pragma GCC visibility pop

#endif
