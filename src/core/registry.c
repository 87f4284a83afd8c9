/* registry.c - the live blocks of sp_alloc, by address: an open-addressing table in
 * memory of its own (mmap, never malloc), grown by doubling. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

struct slot {
	uintptr_t addr; /* 0: empty, 1: deleted */
	struct sp_block b;
};
#define EMPTY 0u
#define DELETED 1u

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot *table;
static size_t cap, used, live; /* used counts live and deleted slots */

static size_t hash(uintptr_t a, size_t mask)
{
	uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & mask;
}

static struct slot *probe(struct slot *t, size_t c, uintptr_t a, bool for_insert)
{
	size_t mask = c - 1;
	struct slot *tomb = NULL;
	for (size_t i = hash(a, mask), n = 0; n < c; i = (i + 1) & mask, n++) {
		struct slot *s = &t[i];
		if (s->addr == a)
			return s;
		if (s->addr == DELETED && !tomb)
			tomb = s;
		if (s->addr == EMPTY)
			return for_insert ? (tomb ? tomb : s) : NULL;
	}
	return for_insert ? tomb : NULL;
}

/* Rehashes into a table of new_cap slots. Called with the lock held; growth is rare
 * (each doubling serves as many blocks as all before it). */
static int grow(size_t new_cap)
{
	void *mem;
	int r = sp_os->mmap(NULL, new_cap * sizeof(struct slot), PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, &mem);
	if (r < 0)
		return r;
	struct slot *nt = mem;
	for (size_t i = 0; i < cap; i++)
		if (table[i].addr > DELETED)
			*probe(nt, new_cap, table[i].addr, true) = table[i];
	if (table)
		sp_os->munmap(table, cap * sizeof(struct slot));
	table = nt;
	cap = new_cap;
	used = live;
	return 0;
}

int sp_registry_add(const struct sp_block *b)
{
	uintptr_t a = (uintptr_t)b->addr;
	if (a <= DELETED)
		return -EINVAL;
	pthread_mutex_lock(&lock);
	int r = 0;
	if ((used + 1) * 2 > cap)
		r = grow(cap ? (live + 1) * 2 > cap ? cap * 2 : cap : 256);
	if (r == 0) {
		struct slot *s = probe(table, cap, a, true);
		if (s->addr == a) {
			r = -EEXIST;
		} else {
			if (s->addr == EMPTY)
				used++;
			s->addr = a;
			s->b = *b;
			live++;
		}
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* Copies out the block at addr, and forgets it if remove. */
static int lookup(const void *addr, struct sp_block *out, bool remove)
{
	uintptr_t a = (uintptr_t)addr;
	int r = -EINVAL;
	if (a <= DELETED)
		return r;
	pthread_mutex_lock(&lock);
	struct slot *s = table ? probe(table, cap, a, false) : NULL;
	if (s) {
		if (out)
			*out = s->b;
		if (remove) {
			s->addr = DELETED;
			live--;
		}
		r = 0;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

int sp_registry_find(const void *addr, struct sp_block *out)
{
	return lookup(addr, out, false);
}

int sp_registry_remove(const void *addr, struct sp_block *out)
{
	return lookup(addr, out, true);
}

void sp_registry_lock_for_fork(void)
{
	pthread_mutex_lock(&lock);
}

void sp_registry_unlock_after_fork(void)
{
	pthread_mutex_unlock(&lock);
}
