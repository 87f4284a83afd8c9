/* shm.c - shared memory on 2 MiB hugetlb pages under --shm (SUPERPAGE_SHM=yes): the SysV
 * segments a program creates and its MAP_SHARED|MAP_ANONYMOUS mappings go on pages
 * reserved from the pool when it can hold them; anything else, and every fall, stays
 * exactly as the program asked. memfd_create is left alone (see superpage-run(7)). */
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
#include <sys/syscall.h>
#include <unistd.h>

#include "heap.h"
#include "internal.h"
#include "shm.h"

#define EXPORT __attribute__((visibility("default")))

#define HUGE_SIZE_SHIFT 26                       /* SHM_HUGE_SHIFT, MFD_HUGE_SHIFT */
#define HUGE_SIZE_BITS (0x3f << HUGE_SIZE_SHIFT) /* the page size asked, log2 */
#define HUGE_SIZE_2MB (21 << HUGE_SIZE_SHIFT)
#ifndef SHM_STAT_ANY
#define SHM_STAT_ANY 15
#endif

/* ---------- counts, and saying the falls ---------- */

static _Atomic uint64_t n_segments, n_segment_bytes, n_maps, n_map_bytes;

enum kind { SYSV = 0, ANON = 1 };
static const char *const what[] = { "a SysV segment", "a shared anonymous mapping" };

/* (kind, reason) pairs said already. */
static struct rt_said said;

_Static_assert(2 * SP_FALL_COUNT <= 64, "one bit per (kind, reason)");

/* Counts a fall; true if it is to be said: once per kind and reason in each process
 * with --verbose, every time from -vv on. */
static bool fall(enum kind k, enum sp_fall why)
{
	sp_fall(k == SYSV ? SP_SITE_SHM_SYSV : SP_SITE_SHM_ANON, SP_BACKING_2M, why);
	return rt_say_now(&said, rt_options()->verbose, (unsigned)k * SP_FALL_COUNT + (unsigned)why);
}

void rt_shm_stats_get(struct rt_shm_stats *out)
{
	out->segments = atomic_load(&n_segments);
	out->segment_bytes = atomic_load(&n_segment_bytes);
	out->maps = atomic_load(&n_maps);
	out->map_bytes = atomic_load(&n_map_bytes);
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
static bool wanted(size_t len)
{
	const struct sp_options *o;

	if (!rt_init())
		return false;
	o = rt_options();
	return shm_on(o) && o->backing != SP_BACKING_4K && o->min && len >= o->min;
}

static bool round_2m(size_t len, size_t *out)
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
static int pool_room(size_t bytes, long *room)
{
	*room = sp_rung_room(SP_BACKING_2M, true);
	if ((uint64_t)*room >= bytes / SP_2M_SIZE)
		return -1;
	return sp_rung_refusal(SP_BACKING_2M, -ENOMEM); /* no pool, or too few pages */
}

static void say_pool(enum kind k, int why, size_t len, size_t rounded, long room)
{
	if (why == SP_FALL_NO_POOL)
		rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: no 2M hugetlb "
			   "pool (superpage pool --size 2M COUNT)", (int)getpid(), what[k], len);
	else
		rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: the 2M pool "
			   "has %ld pages to spare, %zu needed", (int)getpid(), what[k], len, room,
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
static pthread_mutex_t segs_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fork while another thread holds the table must not leave the child a held lock
 * (called by fork.c's handlers). */
static uint64_t forks; /* forks and clones this process made; under segs_lock */
void shm_fork_prepare(void)
{
	pthread_mutex_lock(&segs_lock);
	forks++;
}
void shm_fork_after(void) { pthread_mutex_unlock(&segs_lock); }

/* A slot for a segment about to be created: a free one, else one of a removed
 * segment; -1 if every slot holds a live segment. */
static int slot_claim(void)
{
	int got = -1;

	pthread_mutex_lock(&segs_lock);
	for (int i = 0; i < SEGMENTS && got < 0; i++)
		if (segs[i].state == SLOT_FREE)
			got = i;
	for (int i = 0; i < SEGMENTS && got < 0; i++)
		if (segs[i].state == SLOT_REMOVED)
			got = i;
	if (got >= 0)
		segs[got].state = SLOT_CLAIMED;
	pthread_mutex_unlock(&segs_lock);
	return got;
}

static void slot_set(int slot, int state, int id, size_t asked, size_t rounded)
{
	pthread_mutex_lock(&segs_lock);
	/* The id is the kernel's now, not an older segment's with the same id. */
	for (int i = 0; state == SLOT_LIVE && i < SEGMENTS; i++)
		if (i != slot && segs[i].state >= SLOT_LIVE && segs[i].id == id)
			segs[i].state = SLOT_FREE;
	segs[slot] = (struct segment){ state, id, asked, rounded };
	pthread_mutex_unlock(&segs_lock);
}

/* The entry of segment id (live, or removed if any is true); false if there is none. */
static bool slot_find(int id, bool any, struct segment *out)
{
	bool found = false;

	pthread_mutex_lock(&segs_lock);
	for (int i = 0; i < SEGMENTS && !found; i++)
		if (segs[i].id == id &&
		    (segs[i].state == SLOT_LIVE || (any && segs[i].state == SLOT_REMOVED))) {
			*out = segs[i];
			found = true;
		}
	pthread_mutex_unlock(&segs_lock);
	return found;
}

static void slot_removed(int id)
{
	pthread_mutex_lock(&segs_lock);
	for (int i = 0; i < SEGMENTS; i++)
		if (segs[i].state == SLOT_LIVE && segs[i].id == id)
			segs[i].state = SLOT_REMOVED;
	pthread_mutex_unlock(&segs_lock);
}

/* Set once the kernel said EPERM to SHM_HUGETLB (not in vm.hugetlb_shm_group, no
 * CAP_IPC_LOCK): it would say it again, so it is not asked again. */
static atomic_bool sysv_denied;

/* The real system calls (never dlsym: it may call malloc, and the runtime is malloc). */
static long sys_shmget(key_t key, size_t size, int flg)
{
	return syscall(SYS_shmget, key, size, flg);
}

/* Creates the segment the program asks for on 2 MiB pages, when it is one to take and
 * the pool can hold it: its id, or -1 if it was not taken or not had (the program's
 * own call is made then). errno is left as it was. */
static int sysv_huge(key_t key, size_t size, int flg)
{
	size_t rounded;
	long room, id;
	int why, slot, err, e = errno;

	/* Only a call that may create a segment, with no huge page asked for already;
	 * SHM_NORESERVE would leave hugetlb pages unreserved (SIGBUS when the pool runs
	 * dry), so such a segment stays as asked. */
	if (flg & (SHM_HUGETLB | SHM_NORESERVE | HUGE_SIZE_BITS))
		return -1;
	if (key != IPC_PRIVATE && !(flg & IPC_CREAT))
		return -1;
	if (!wanted(size) || !round_2m(size, &rounded))
		return -1;
	if (atomic_load(&sysv_denied)) {
		if (fall(SYSV, SP_FALL_SKIPPED))
			rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: "
				   "SHM_HUGETLB was refused before (EPERM)", (int)getpid(), what[SYSV], size);
		return -1;
	}
	why = pool_room(rounded, &room);
	if (why >= 0) {
		if (fall(SYSV, why))
			say_pool(SYSV, why, size, rounded, room);
		return -1;
	}
	slot = slot_claim();
	if (slot < 0) {
		if (fall(SYSV, SP_FALL_SKIPPED))
			rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: %d segments "
				   "on huge pages are live already", (int)getpid(), what[SYSV], size, SEGMENTS);
		return -1;
	}
	/* With a key, IPC_EXCL: a segment that exists already is the program's own call's
	 * to find (or refuse), as it would have been; only a new one is changed. */
	id = sys_shmget(key, rounded, flg | SHM_HUGETLB | HUGE_SIZE_2MB |
				      (key != IPC_PRIVATE ? IPC_CREAT | IPC_EXCL : 0));
	err = errno;
	errno = e;
	if (id < 0) {
		slot_set(slot, SLOT_FREE, 0, 0, 0);
		if (err == EEXIST && key != IPC_PRIVATE)
			return -1;
		if (err == EPERM)
			atomic_store(&sysv_denied, true);
		if (fall(SYSV, err == ENOMEM ? SP_FALL_POOL_EMPTY : SP_FALL_MMAP)) {
			if (err == EPERM)
				rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: "
					   "SHM_HUGETLB not permitted (EPERM: not in vm.hugetlb_shm_group, "
					   "no CAP_IPC_LOCK)", (int)getpid(), what[SYSV], size);
			else
				rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: "
					   "shmget with SHM_HUGETLB failed (errno %d)", (int)getpid(),
					   what[SYSV], size, err);
		}
		return -1;
	}
	slot_set(slot, SLOT_LIVE, (int)id, size, rounded);
	atomic_fetch_add(&n_segments, 1);
	atomic_fetch_add(&n_segment_bytes, rounded);
	rt_verbose(2, "pid %d: --shm: SysV segment %ld of %zu bytes on 2 MiB hugetlb pages "
		   "(%zu reserved)", (int)getpid(), id, size, rounded);
	return (int)id;
}

EXPORT int shmget(key_t key, size_t size, int flg)
{
	struct segment s;
	int id = sysv_huge(key, size, flg);

	if (id >= 0)
		return id;
	id = (int)sys_shmget(key, size, flg);
	/* One of ours, found by its key: the kernel checked size against the rounded
	 * size; the program's own segment would have been too small. */
	if (id >= 0 && slot_find(id, false, &s) && size > s.asked) {
		errno = EINVAL;
		return -1;
	}
	return id;
}

EXPORT int shmctl(int id, int cmd, struct shmid_ds *buf)
{
	struct segment s;
	long r = syscall(SYS_shmctl, id, cmd, buf);

	if (r < 0)
		return -1;
	switch (cmd) {
	case IPC_STAT:
	case SHM_STAT:
	case SHM_STAT_ANY:
		/* SHM_STAT's id is an index; the segment's id is what it returns. */
		if (slot_find(cmd == IPC_STAT ? id : (int)r, true, &s) &&
		    buf->shm_segsz == s.rounded)
			buf->shm_segsz = s.asked;
		break;
	case IPC_RMID:
		slot_removed(id);
		break;
	}
	return (int)r;
}

/* ---------- shared anonymous mappings ---------- */

/* The mappings made here, for mremap: the kernel refuses to grow a hugetlb mapping
 * (its reservation cannot be split), where a shared anonymous one grows; growing it
 * needs its file again. As root that is /proc/self/map_files, and the memfd is closed
 * at once; otherwise the memfd is kept, close-on-exec, at a descriptor of 512 or more
 * (out of the way of select's), known by its inode: a program that closes descriptors
 * it did not open closes it, and the inode tells a descriptor it reused. Under
 * segs_lock. A mapping is private to this process while no fork has been made since
 * it was mapped, in this process (only a fork could share it then). */
#define N_ANON 128
static struct anon_map {
	uintptr_t start;
	size_t len;         /* mapped, a multiple of 2 MiB */
	size_t asked;       /* as the program asked, page-rounded */
	pid_t pid;
	uint64_t forks;
	int fd;             /* the memfd kept (not root), or -1 */
	dev_t dev;
	ino_t ino;
} anon[N_ANON];
static _Atomic int n_anon; /* entries in use: munmap, mprotect and mremap look only
                             when there are some */

static bool anon_track_room(void)
{
	bool room = false;
	pthread_mutex_lock(&segs_lock);
	for (int i = 0; i < N_ANON && !room; i++)
		room = anon[i].len == 0;
	pthread_mutex_unlock(&segs_lock);
	return room;
}

/* Whether fd is still the memfd kept in m. */
static bool kept_fd(const struct anon_map *m)
{
	struct stat st;
	return m->fd >= 0 && fstat(m->fd, &st) == 0 && st.st_dev == m->dev && st.st_ino == m->ino;
}

/* An entry no longer tracked; under segs_lock. Its memfd is closed if it is still
 * ours (another entry may share it: one moved from it). */
static void anon_drop(struct anon_map *m)
{
	if (!(m->len || m->asked || m->start))
		return;
	bool shared = false;
	for (int i = 0; i < N_ANON && m->fd >= 0; i++)
		shared |= &anon[i] != m && anon[i].len && anon[i].fd == m->fd;
	if (!shared && kept_fd(m))
		sp_os->close(m->fd);
	*m = (struct anon_map){ .fd = -1 };
	atomic_fetch_sub(&n_anon, 1);
}

/* fd: the memfd, kept (not root) or -1. */
static void anon_track(uintptr_t start, size_t len, size_t asked, int fd)
{
	struct stat st = { 0 };
	if (fd >= 0 && fstat(fd, &st) < 0) {
		sp_os->close(fd);
		fd = -1;
	}
	pthread_mutex_lock(&segs_lock);
	for (int i = 0; i < N_ANON; i++)
		if (anon[i].len == 0) {
			anon[i] = (struct anon_map){ start, len, page_up(asked), getpid(), forks,
						     fd, st.st_dev, st.st_ino };
			atomic_fetch_add(&n_anon, 1);
			fd = -1;
			break;
		}
	pthread_mutex_unlock(&segs_lock);
	if (fd >= 0)
		sp_os->close(fd);
}

void shm_whole(uintptr_t a, size_t *len)
{
	if (!atomic_load(&n_anon))
		return;
	pthread_mutex_lock(&segs_lock);
	for (int i = 0; i < N_ANON; i++) {
		struct anon_map *m = &anon[i];
		if (m->len && a >= m->start && a < m->start + m->asked &&
		    a + page_up(*len) == m->start + m->asked)
			*len = m->start + m->len - a;
	}
	pthread_mutex_unlock(&segs_lock);
}

/* The entry whose mapping starts at a; under segs_lock. */
static struct anon_map *anon_at(uintptr_t a)
{
	for (int i = 0; i < N_ANON; i++)
		if (anon[i].len && anon[i].start == a)
			return &anon[i];
	return NULL;
}

void shm_unmapped(uintptr_t a, size_t len)
{
	uintptr_t end = a + len;
	if (!atomic_load(&n_anon))
		return;
	pthread_mutex_lock(&segs_lock);
	for (int i = 0; i < N_ANON; i++) {
		struct anon_map *m = &anon[i];
		uintptr_t s = m->start, e = s + m->len;
		if (!m->len || end <= s || a >= e)
			continue;
		if (a <= s && end >= e)
			anon_drop(m);            /* all of it */
		else if (a <= s)
			*m = (struct anon_map){ end, e - end, s + m->asked > end ? s + m->asked - end : 0,
						m->pid, m->forks, m->fd, m->dev, m->ino };
		else
			m->len = a - s;          /* its tail, or a hole: what follows is left
			                            untracked */
		if (m->asked > m->len)
			m->asked = m->len;
		if (!m->len)
			anon_drop(m);
	}
	pthread_mutex_unlock(&segs_lock);
}

/* A new mapping of the same hugetlb file, of new_len bytes (a multiple of 2 MiB), at
 * to (MAP_FIXED) or anywhere: the file is reopened through /proc/self/map_files (the
 * memfd is closed; root only). (hugetlbfs grows the file to the mapping: the new part
 * reads as zero, where the kernel's shared anonymous object, which keeps its size,
 * would give SIGBUS; a program that runs plain never touches it.) 0, or -errno. */
static int same_file(uintptr_t s, size_t len, size_t new_len, void *to, void **out, int kept)
{
	char path[64];
	int fd = kept;
	if (fd < 0) {
		snprintf(path, sizeof path, "/proc/self/map_files/%lx-%lx", (unsigned long)s,
			 (unsigned long)(s + len));
		fd = sp_os->open(path, O_RDWR | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
	}
	int r = sp_os->mmap(to, new_len, PROT_READ | PROT_WRITE, MAP_SHARED | (to ? MAP_FIXED : 0),
			    fd, 0, out);
	if (fd != kept)
		sp_os->close(fd);
	return r;
}

/* A copy of the len bytes at s in new shared memory of new_len bytes, at to (fixed) or
 * anywhere: on hugetlb pages when they can be had, else as the kernel's shared
 * anonymous memory. For a mapping no other process shares. 0, or -errno. */
static int copy_of(uintptr_t s, size_t len, size_t new_len, void *to, void **out)
{
	void *p = to ? NULL : shm_map(new_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS);
	int r = 0;
	if (p)
		*out = p;
	else
		r = sp_os->mmap(to, new_len, PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS | (to ? MAP_FIXED : 0), -1, 0, out);
	if (r == 0)
		memcpy(*out, (const void *)s, len < new_len ? len : new_len);
	return r;
}

int shm_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr, void **out)
{
	uintptr_t s = (uintptr_t)old;
	size_t have, want;
	bool fixed = flags & MREMAP_FIXED, mine;
	if (!atomic_load(&n_anon))
		return 0;
	pthread_mutex_lock(&segs_lock);
	struct anon_map *m = anon_at(s);
	have = m ? m->len : 0;
	size_t asked = m ? m->asked : 0;
	mine = m && m->pid == getpid() && m->forks == forks;
	int kept = m && kept_fd(m) ? m->fd : -1;
	pthread_mutex_unlock(&segs_lock);
	/* Only growth of a whole mapping of ours is the kernel's to refuse (what it
	 * asked for, or what it was given). */
	if (have && page_up(old_len) == asked)
		old_len = have;
	if (!have || old_len != have || new_len <= old_len || !round_2m(new_len, &want) ||
	    (flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED)) ||
	    (fixed && (!(flags & MREMAP_MAYMOVE) || ((uintptr_t)new_addr & (SP_2M_SIZE - 1)))))
		return 0;
	void *hold = NULL, *at = fixed ? new_addr : NULL;
	int r;
	if (!(flags & MREMAP_MAYMOVE)) {
		/* In place: only if what follows is free, held until the new mapping
		 * replaces it. */
		if (sp_os->mmap((void *)(s + have), want - have, PROT_NONE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0,
				&hold) < 0 || (uintptr_t)hold != s + have) {
			if (hold)
				sp_os->munmap(hold, want - have);
			return -ENOMEM;
		}
		at = old;
	}
	r = same_file(s, have, want, at, out, kept);
	if (r < 0 && mine && at != old)
		r = copy_of(s, have, want, at, out);
	if (r < 0) {
		if (hold)
			sp_os->munmap(hold, want - have);
		rt_verbose(1, "pid %d: --shm: %s at %p could not grow to %zu bytes: its hugetlb "
			   "file cannot be had again (its descriptor was closed by the program, "
			   "and /proc/self/map_files needs root)%s",
			   (int)getpid(), what[ANON], old, new_len,
			   mine ? "" : " and may be shared with another process");
		return r == -ENOMEM ? r : -ENOMEM;
	}
	if (at != old)
		sp_os->munmap(old, have);
	shm_moved(s, have, (uintptr_t)*out, new_len);
	return 1;
}

void shm_moved(uintptr_t old, size_t old_len, uintptr_t to, size_t new_len)
{
	if (!atomic_load(&n_anon))
		return;
	pthread_mutex_lock(&segs_lock);
	struct anon_map *m = anon_at(old);
	if (m && to != old && anon_at(to)) {
		anon_drop(m); /* moved into a mapping tracked already (a copy of shm_map's) */
	} else if (m && (m->len == old_len || m->asked == page_up(old_len))) {
		m->start = to;
		if (!round_2m(new_len, &m->len))
			m->len = new_len; /* (the kernel would not have moved it) */
		m->asked = page_up(new_len);
	} else if (m) {
		anon_drop(m); /* part of it: left to the kernel from now on */
	}
	pthread_mutex_unlock(&segs_lock);
}

/* Set once memfd_create said the kernel has no hugetlb memfd. */
static atomic_bool memfd_unsupported;

static void say_map_fall(const char *why, size_t len, int err)
{
	rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: %s (errno %d)",
		   (int)getpid(), what[ANON], len, why, err);
}

void *shm_map(size_t len, int prot, int flags)
{
	const int allowed = MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE;
	long room, t;
	void *out;
	int fd, r, why, e;

	/* As mmap.c takes private mappings: read-write, placed by us, no flag that hugetlb
	 * would change the meaning of (MAP_NORESERVE: sparse memory; MAP_LOCKED, ...). */
	if (prot != (PROT_READ | PROT_WRITE) || (flags & ~allowed) ||
	    (flags & (MAP_SHARED | MAP_ANONYMOUS)) != (MAP_SHARED | MAP_ANONYMOUS) || !wanted(len))
		return NULL;
	/* A length that is not a multiple of 2 MiB is rounded up when that costs at most
	 * 1/32 of it (the program's munmap, mprotect and mremap of its length are taken to
	 * the end of the mapping: shm_whole); a shorter one stays on base pages. */
	size_t asked = len;
	if (len & (SP_2M_SIZE - 1)) {
		size_t up;
		if (!round_2m(len, &up) || (up - len) > len / 32) {
			if (fall(ANON, SP_FALL_UNSUPPORTED))
				rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: its "
					   "length is not a multiple of 2 MiB, and 2 MiB pages would add "
					   "over 1/32 to it", (int)getpid(), what[ANON], len);
			return NULL;
		}
		len = up;
	}
	if (atomic_load(&memfd_unsupported)) {
		fall(ANON, SP_FALL_UNSUPPORTED);
		return NULL;
	}
	why = pool_room(len, &room);
	if (why >= 0) {
		if (fall(ANON, why))
			say_pool(ANON, why, len, len, room);
		return NULL;
	}
	fd = sp_os->memfd_create("superpage-shm", MFD_HUGETLB | MFD_CLOEXEC | HUGE_SIZE_2MB);
	if (fd >= 0 && !anon_track_room()) {
		/* (Untracked, its mremap could not be answered.) */
		sp_os->close(fd);
		if (fall(ANON, SP_FALL_SKIPPED))
			say_map_fall("too many shared anonymous mappings on hugetlb pages", len, 0);
		return NULL;
	}
	if (fd < 0) {
		bool unsupported = fd == -EINVAL || fd == -ENOSYS;
		if (unsupported)
			atomic_store(&memfd_unsupported, true);
		if (fall(ANON, unsupported ? SP_FALL_UNSUPPORTED : SP_FALL_MMAP))
			say_map_fall("memfd_create(MFD_HUGETLB) failed", len, -fd);
		return NULL;
	}
	/* A hugetlbfs file is sized by ftruncate alone (it has no write); the pages are
	 * reserved by the mmap below, for the whole length. */
	e = errno;
	t = syscall(SYS_ftruncate, fd, (off_t)len);
	r = t < 0 ? -errno : 0;
	errno = e;
	if (r == 0)
		r = sp_os->mmap(NULL, len, prot, MAP_SHARED | (flags & MAP_POPULATE), fd, 0, &out);
	/* Not root: kept, for mremap (above). */
	int kept = r == 0 && geteuid() != 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 512) : -1;
	sp_os->close(fd);
	if (r < 0) {
		if (fall(ANON, r == -ENOMEM ? SP_FALL_POOL_EMPTY : SP_FALL_MMAP))
			say_map_fall("the hugetlb memfd could not be sized or mapped", len, -r);
		return NULL;
	}
	anon_track((uintptr_t)out, len, asked, kept);
	atomic_fetch_add(&n_maps, 1);
	atomic_fetch_add(&n_map_bytes, len);
	rt_verbose(2, "pid %d: --shm: shared anonymous mapping %p of %zu bytes on 2 MiB "
		   "hugetlb pages", (int)getpid(), out, len);
	return out;
}
