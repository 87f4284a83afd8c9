/* staging.c - fork with hugetlb units: staged before, copied into the child after.
 *
 * Private hugetlb pages are copied on write after fork, from the pool: a child
 * that writes one while the pool is empty dies of SIGBUS, and a parent that writes
 * one then takes it from its child. So hugetlb units are never shared with a
 * child: before fork their contents go to a staging copy and they are marked
 * MADV_DONTFORK; the child maps THP memory in their place and fills it from the
 * copy. The parent keeps its units untouched. Only --backing 2m has such units,
 * and only its forks pay for the copy. */
#include <string.h>
#include <sys/mman.h>

#include "bits.h"
#include "internal.h"
#include "units.h"

static struct {
	char *copy;   /* the staging copy, NULL for none */
	size_t units; /* units copied into it */
} staging;

static bool is_hugetlb_unit(size_t u)
{
	return (pg.units[u].state == U_HEAP || pg.units[u].state == U_LARGE) &&
	       is_hugetlb(pg.units[u].backing);
}

/* The fork advice for unit u: 2 MiB units one by one, 1 GiB pages whole (at the
 * first unit of each; the kernel refuses to split their mapping). */
static void fork_advice(size_t u, int advice)
{
	if (pg.units[u].backing == SP_BACKING_2M)
		sp_os->madvise((void *)unit_addr(u), UNIT_SIZE, advice);
	else if (u % GIGA_UNITS == 0)
		sp_os->madvise((void *)unit_addr(u), GIGA_UNITS << UNIT_SHIFT, advice);
}

/* Empty units kept on hugetlb pages go back to the pool before fork: a child must not
 * share them (it would take them for its heap and write them, copied from the pool).
 * Under the lock. */
static void release_kept_hugetlb(void)
{
	for (int32_t u = pg.cache_head, next; u != NO_UNIT; u = next) {
		next = pg.units[u].next;
		if (!is_hugetlb(pg.units[u].backing))
			continue;
		cache_remove(u);
		pg.units[u].state = U_RELEASING;
		struct release rel = { .u = (size_t)u, .n = 1, .extra = NO_EXTRA };
		mark_released(&rel, give_back_units(&rel));
	}
}

/* Under the lock, before fork. */
void pages_fork_prepare(void)
{
	release_kept_hugetlb();
	size_t n = pg.st.units[SP_BACKING_2M] + pg.st.units[SP_BACKING_1G];
	void *m;
	staging.copy = NULL;
	staging.units = 0;
	if (!n || sp_os->mmap(NULL, n << UNIT_SHIFT, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0, &m) < 0)
		return;
	staging.copy = m;
	for (size_t u = 0; u < pg.frontier && staging.units < n; u++) {
		if (!is_hugetlb_unit(u))
			continue;
		memcpy(staging.copy + (staging.units << UNIT_SHIFT), (void *)unit_addr(u), UNIT_SIZE);
		fork_advice(u, MADV_DONTFORK);
		staging.units++;
	}
}

void pages_fork_parent(void)
{
	if (!staging.copy)
		return;
	for (size_t u = 0, k = 0; u < pg.frontier && k < staging.units; u++)
		if (is_hugetlb_unit(u)) {
			fork_advice(u, MADV_DOFORK);
			k++;
		}
	sp_os->munmap(staging.copy, (pg.st.units[SP_BACKING_2M] + pg.st.units[SP_BACKING_1G]) << UNIT_SHIFT);
	staging.copy = NULL;
}

bool pages_fork_staged(void)
{
	return staging.copy != NULL;
}

/* In the child, before anything else touches the units: from fork.c's guard (a signal
 * handler: system calls and memcpy only, under the lock this thread took in prepare)
 * or its child handler. Once: the units it copies are THP after it. */
void pages_fork_fixup(void)
{
	size_t total = pg.st.units[SP_BACKING_2M] + pg.st.units[SP_BACKING_1G], k = 0;
	if (!total)
		return;
	for (size_t u = 0; u < pg.frontier && k < total;) {
		if (!is_hugetlb_unit(u)) {
			u++;
			continue;
		}
		/* A 1 GiB page's units are staged one after another and copied as one. */
		size_t n = pg.units[u].backing == SP_BACKING_1G ? GIGA_UNITS : 1;
		/* Without a staging copy (it could not be mapped) the units were shared
		 * with this child, and are copied from where they are. */
		const void *src = staging.copy ? staging.copy + (k << UNIT_SHIFT) : (const void *)unit_addr(u);
		if ((staging.copy && k + n > staging.units) || !units_from_copy(u, n, src))
			rt_abort("after fork, the heap's hugetlb memory at %p could not be copied "
				 "into this process", (void *)unit_addr(u));
		for (size_t i = u; i < u + n; i++) {
			pg.st.units[pg.units[i].backing]--;
			pg.units[i].backing = SP_BACKING_THP;
		}
		k += n;
		u += n;
	}
	pg.st.units[SP_BACKING_THP] += k;
	if (staging.copy)
		sp_os->munmap(staging.copy, total << UNIT_SHIFT);
	staging.copy = NULL;
}

void pages_fork_child(void)
{
	pages_fork_fixup();
	release_emptied(0, pg.frontier);
}
