/* central.h - the central lists of small objects (central.c): spans with free objects,
 * by owner, between the threads' caches (malloc.c) and the page heap. */
#ifndef SP_CENTRAL_H
#define SP_CENTRAL_H


#pragma GCC visibility push(hidden)

/* The most threads with a slot at once (central_claim). */
#define CENTRAL_SLOTS 256

/* A slot for a new thread: 1 + its index, or 0 if all are taken (the thread then
 * takes from and makes orphans). */
unsigned central_claim(void);
/* A thread leaves its slot (0: none): its spans become orphans. */
void central_release(unsigned slot);
/* Takes up to n objects of class cls for slot (0: none) into out[0..n), the one to
 * give out first last; returns how many (0: out of memory). */
unsigned central_take(unsigned slot, unsigned cls, unsigned n, void **out);
/* Gives the n objects of objs[] (of class cls, from the cache of the thread of slot
 * me, 0: none) back to their spans, or to the inbox of the live thread that owns their
 * span (it puts them back at its next central_take). Aborts on one that is no object
 * of a span of cls (the cache was written over). */
void central_put(unsigned me, unsigned cls, void *const *objs, unsigned n);
/* Every list recomputed (counts, back links, each span's objects) and every free
 * list's link checked to be its span's object, with no cycle (for the tests; in
 * DEBUG a list is checked as its lock is released): the first thing wrong, or NULL. */
const char *central_check(void);
/* The objects waiting in slot o's inbox of class cls (for the tests: only while no
 * thread gives objects to it or takes them out). */
unsigned central_inbox_count(unsigned o, unsigned cls);

#pragma GCC visibility pop

#endif
