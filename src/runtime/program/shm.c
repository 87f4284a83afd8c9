/* shm.c - shared memory on 2 MiB hugetlb pages under --shm (SUPERPAGE_SHM=yes): when,
 * the counts and falls, and the SysV segments a program creates (its MAP_SHARED|
 * MAP_ANONYMOUS mappings: shm_anon.c). They go on pages reserved from the pool when it
 * can hold them; anything else, and every fall, stays exactly as the program asked.
 * memfd_create is left alone (see superpage-run(7)). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "life.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"
#include "shm.h"

#define EXPORT __attribute__((visibility("default")))

#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif

/* ---------- counts, and saying the falls ---------- */

static _Atomic uint64_t n_segments, n_segment_bytes;
struct shm_shared shm_shared = { .lock = PTHREAD_MUTEX_INITIALIZER };
SP_LOCK_RANK(shm_shared.lock, RANK_SHM, NULL);

const char *const shm_what[] = { "a SysV segment", "a shared anonymous mapping" };

/* (kind, reason) pairs said already. */
static struct rt_said said;

_Static_assert(2 * SP_FALL_COUNT <= 64, "one bit per (kind, reason)");

/* Counts a fall; true if it is to be said: once per kind and reason in each process
 * with --verbose, every time from -vv on. */
bool shm_fall(enum shm_kind k, enum sp_fall why)
{
	sp_fall(k == SHM_SYSV ? SP_SITE_SHM_SYSV : SP_SITE_SHM_ANON, SP_BACKING_2M, why);
	return rt_say_now(&said, rt_options()->verbose,
			  (unsigned)k * SP_FALL_COUNT + (unsigned)why);
}

void rt_shm_stats_get(struct rt_shm_stats *out)
{
	out->segments = atomic_load(&n_segments);
	out->segment_bytes = atomic_load(&n_segment_bytes);
	out->maps = atomic_load(&shm_shared.maps);
	out->map_bytes = atomic_load(&shm_shared.map_bytes);
	uint64_t falls[SP_BACKING_COUNT][SP_FALL_COUNT];

	sp_falls_get(SP_SITE_SHM_SYSV, falls);
	memcpy(out->segment_falls, falls[SP_BACKING_2M], sizeof out->segment_falls);
	sp_falls_get(SP_SITE_SHM_ANON, falls);
	memcpy(out->map_falls, falls[SP_BACKING_2M], sizeof out->map_falls);
}

/* ---------- when to ---------- */

/* Under auto, shared memory goes on 2 MiB hugetlb pages when the pool can hold it,
 * unless SUPERPAGE_SHM says otherwise: shared memory is never copied on write, so a
 * fork cannot take pages from the pool, and a pool with pages to spare was set up
 * to be used (postgres's shared buffers; SUPERPAGE_SHM=no keeps it for others). */
static bool shm_on(const struct sp_options *o)
{
	static int auto_on = -1;
	if (o->shm)
		return true;
	if (o->backing != SP_BACKING_AUTO)
		return false;
	if (auto_on < 0)
		auto_on = getenv("SUPERPAGE_SHM") == NULL;
	return auto_on;
}

/* --shm is on (or auto) and len is worth 2 MiB pages. Not under --backing 4k: that is
 * the baseline, base pages only. */
bool shm_wanted(size_t len)
{
	const struct sp_options *o;

	if (!rt_init())
		return false;
	o = rt_options();
	return shm_on(o) && o->backing != SP_BACKING_4K && o->min && len >= o->min;
}

bool shm_round_2m(size_t len, size_t *out)
{
	if (len > SIZE_MAX - (SP_2M_SIZE - 1))
		return false;
	*out = (len + SP_2M_SIZE - 1) & ~(size_t)(SP_2M_SIZE - 1);
	return true;
}

/* Whether the 2 MiB pool can hold bytes (a multiple of 2 MiB) now: -1 if it can,
 * else the reason (enum sp_fall). *room: the pages it has to spare, free and not
 * reserved plus those it may still overcommit. The kernel reserves them at map
 * time and refuses the map when another process took them first: never SIGBUS. */
int shm_pool_room(size_t bytes, long *room)
{
	*room = sp_rung_room(SP_BACKING_2M, true);
	if ((uint64_t)*room >= bytes / SP_2M_SIZE)
		return -1;
	return sp_rung_refusal(SP_BACKING_2M, -ENOMEM); /* no pool, or too few pages */
}

void shm_say_pool(enum shm_kind k, int why, size_t len, size_t rounded, long room)
{
	if (why == SP_FALL_NO_POOL)
		rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: no 2M hugetlb "
			   "pool (superpage pool --size 2M COUNT)", (int)getpid(), shm_what[k], len);
	else
		rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: the 2M pool "
			   "has %ld pages to spare, %zu needed", (int)getpid(), shm_what[k], len, room,
			   (size_t)(rounded / SP_2M_SIZE));
}

/* ---------- SysV segments ---------- */

/* The segments this process created on 2 MiB pages, by id, with the size the program
 * asked for: IPC_STAT shows that size, as it would have been. A removed segment's
 * entry stays (it may still be attached, and stat'ed) until its slot is needed. */
#define SEGMENTS 256
enum { SLOT_FREE = 0, SLOT_CLAIMED, SLOT_LIVE, SLOT_REMOVED };
struct segment {
	int state;
	int id;
	size_t asked, rounded;
};
static struct segment segs[SEGMENTS];

/* A fork while another thread holds the table must not leave the child a held lock
 * (called by fork.c's handlers). */
void shm_fork_prepare(void)
{
	pthread_mutex_lock(&shm_shared.lock);
	shm_shared.forks++;
}
void shm_fork_after(void) { pthread_mutex_unlock(&shm_shared.lock); }

/* A slot for a segment about to be created: a free one, else one of a removed
 * segment; -1 if every slot holds a live segment. */
static int slot_claim(void)
{
	int got = -1;

	pthread_mutex_lock(&shm_shared.lock);
	for (int i = 0; i < SEGMENTS && got < 0; i++)
		if (segs[i].state == SLOT_FREE)
			got = i;
	for (int i = 0; i < SEGMENTS && got < 0; i++)
		if (segs[i].state == SLOT_REMOVED)
			got = i;
	if (got >= 0)
		segs[got].state = SLOT_CLAIMED;
	pthread_mutex_unlock(&shm_shared.lock);
	return got;
}

static void slot_set(int slot, int state, int id, size_t asked, size_t rounded)
{
	pthread_mutex_lock(&shm_shared.lock);
	/* The id is the kernel's now, not an older segment's with the same id. */
	for (int i = 0; state == SLOT_LIVE && i < SEGMENTS; i++)
		if (i != slot && segs[i].state >= SLOT_LIVE && segs[i].id == id)
			segs[i].state = SLOT_FREE;
	segs[slot] = (struct segment){ state, id, asked, rounded };
	pthread_mutex_unlock(&shm_shared.lock);
}

/* The entry of segment id (live, or removed if any is true); false if there is none. */
static bool slot_find(int id, bool any, struct segment *out)
{
	bool found = false;

	pthread_mutex_lock(&shm_shared.lock);
	for (int i = 0; i < SEGMENTS && !found; i++)
		if (segs[i].id == id &&
		    (segs[i].state == SLOT_LIVE || (any && segs[i].state == SLOT_REMOVED))) {
			*out = segs[i];
			found = true;
		}
	pthread_mutex_unlock(&shm_shared.lock);
	return found;
}

static void slot_removed(int id)
{
	pthread_mutex_lock(&shm_shared.lock);
	for (int i = 0; i < SEGMENTS; i++)
		if (segs[i].state == SLOT_LIVE && segs[i].id == id)
			segs[i].state = SLOT_REMOVED;
	pthread_mutex_unlock(&shm_shared.lock);
}

/* Set once the kernel said EPERM to SHM_HUGETLB (not in vm.hugetlb_shm_group, no
 * CAP_IPC_LOCK): it would say it again, so it is not asked again. */
static atomic_bool sysv_denied;

/* Creates the segment the program asks for on 2 MiB pages, when it is one to take and
 * the pool can hold it: its id, or -1 if it was not taken or not had (the program's
 * own call is made then). errno is left as it was. */
static int sysv_huge(key_t key, size_t size, int flg)
{
	size_t rounded;
	long room;
	int why, slot, id;

	/* Only a call that may create a segment, with no huge page asked for already;
	 * SHM_NORESERVE would leave hugetlb pages unreserved (SIGBUS when the pool runs
	 * dry), so such a segment stays as asked. */
	if (flg & (SHM_HUGETLB | SHM_NORESERVE | HUGE_SIZE_BITS))
		return -1;
	if (key != IPC_PRIVATE && !(flg & IPC_CREAT))
		return -1;
	if (!shm_wanted(size) || !shm_round_2m(size, &rounded))
		return -1;
	if (atomic_load(&sysv_denied)) {
		if (shm_fall(SHM_SYSV, SP_FALL_SKIPPED))
			rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: "
				   "SHM_HUGETLB was refused before (EPERM)", (int)getpid(), shm_what[SHM_SYSV], size);
		return -1;
	}
	why = shm_pool_room(rounded, &room);
	if (why >= 0) {
		if (shm_fall(SHM_SYSV, why))
			shm_say_pool(SHM_SYSV, why, size, rounded, room);
		return -1;
	}
	slot = slot_claim();
	if (slot < 0) {
		if (shm_fall(SHM_SYSV, SP_FALL_SKIPPED))
			rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: %d segments "
				   "on huge pages are live already", (int)getpid(), shm_what[SHM_SYSV], size, SEGMENTS);
		return -1;
	}
	/* With a key, IPC_EXCL: a segment that exists already is the program's own call's
	 * to find (or refuse), as it would have been; only a new one is changed. */
	id = kern_shmget(key, rounded, flg | SHM_HUGETLB | HUGE_SIZE_2MB |
				       (key != IPC_PRIVATE ? IPC_CREAT | IPC_EXCL : 0));
	if (id < 0) {
		int err = -id;
		slot_set(slot, SLOT_FREE, 0, 0, 0);
		if (err == EEXIST && key != IPC_PRIVATE)
			return -1;
		if (err == EPERM)
			atomic_store(&sysv_denied, true);
		if (shm_fall(SHM_SYSV, err == ENOMEM ? SP_FALL_POOL_EMPTY : SP_FALL_MMAP)) {
			if (err == EPERM)
				rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: "
					   "SHM_HUGETLB not permitted (EPERM: not in vm.hugetlb_shm_group, "
					   "no CAP_IPC_LOCK)", (int)getpid(), shm_what[SHM_SYSV], size);
			else
				rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: "
					   "shmget with SHM_HUGETLB failed (errno %d)", (int)getpid(),
					   shm_what[SHM_SYSV], size, err);
		}
		return -1;
	}
	slot_set(slot, SLOT_LIVE, id, size, rounded);
	atomic_fetch_add(&n_segments, 1);
	atomic_fetch_add(&n_segment_bytes, rounded);
	rt_verbose(2, "pid %d: --shm: SysV segment %d of %zu bytes on 2 MiB hugetlb pages "
		   "(%zu reserved)", (int)getpid(), id, size, rounded);
	return id;
}

EXPORT int shmget(key_t key, size_t size, int flg)
{
	struct segment s;
	int id = sysv_huge(key, size, flg);

	if (id >= 0)
		return id;
	id = kern_shmget(key, size, flg);
	if (id < 0) {
		errno = -id;
		return -1;
	}
	/* One of ours, found by its key: the kernel checked size against the rounded
	 * size; the program's own segment would have been too small. */
	if (slot_find(id, false, &s) && size > s.asked) {
		errno = EINVAL;
		return -1;
	}
	return id;
}

EXPORT int shmctl(int id, int cmd, struct shmid_ds *buf)
{
	struct segment s;
	int r = kern_shmctl(id, cmd, buf);

	if (r < 0) {
		errno = -r;
		return -1;
	}
	switch (cmd) {
	case IPC_STAT:
	case SHM_STAT:
	case SHM_STAT_ANY:
		/* SHM_STAT's id is an index; the segment's id is what it returns. */
		if (slot_find(cmd == IPC_STAT ? id : r, true, &s) &&
		    buf->shm_segsz == s.rounded)
			buf->shm_segsz = s.asked;
		break;
	case IPC_RMID:
		slot_removed(id);
		break;
	}
	return r;
}
