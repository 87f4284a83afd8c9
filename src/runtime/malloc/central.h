/* central.h - the central lists of small objects (central.c): spans with free objects,
 * by owner, between the threads' caches (malloc.c) and the page heap. */
#ifndef SP_CENTRAL_H
#define SP_CENTRAL_H


#pragma GCC visibility push(hidden)

/* A slot for a new thread: 1 + its index, or 0 if all are taken (the thread then
 * takes from and makes orphans). */
unsigned central_claim(void);
/* A thread leaves its slot (0: none): its spans become orphans. */
void central_release(unsigned slot);
/* Takes up to n objects of class cls for slot (0: none), linked through their first
 * word (mangled: link_encode, malloc.h); returns how many (0: out of memory). */
unsigned central_take(unsigned slot, unsigned cls, unsigned n, void **out);
/* Gives the objects of list (linked through their first word, mangled) back to their
 * spans; returns how many there were. Aborts on a link that is no object of cls. */
unsigned central_put(unsigned cls, void *list);
/* Every list recomputed (counts, back links, each span's objects) and every free
 * list's link checked to be its span's object, with no cycle (for the tests; in
 * DEBUG a list is checked as its lock is released): the first thing wrong, or NULL. */
const char *central_check(void);

#pragma GCC visibility pop

#endif
