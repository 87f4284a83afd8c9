/* shm_anon.c - a program's MAP_SHARED|MAP_ANONYMOUS mappings on 2 MiB hugetlb pages
 * under --shm (a memfd of the pool's pages), and their mremap, munmap and moves. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"
#include "runtime.h"
#include "shm.h"

/* The mappings made here, for mremap: the kernel refuses to grow a hugetlb mapping
 * (its reservation cannot be split), where a shared anonymous one grows; growing it
 * needs its file again. As root that is /proc/self/map_files, and the memfd is closed
 * at once; otherwise the memfd is kept, close-on-exec, at a descriptor of 512 or more
 * (out of the way of select's), known by its inode: a program that closes descriptors
 * it did not open closes it, and the inode tells a descriptor it reused. Under
 * shm_shared.lock. A mapping is private to this process while no fork has been made since
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
	pthread_mutex_lock(&shm_shared.lock);
	for (int i = 0; i < N_ANON && !room; i++)
		room = anon[i].len == 0;
	pthread_mutex_unlock(&shm_shared.lock);
	return room;
}

/* Whether fd is still the memfd kept in m. */
static bool kept_fd(const struct anon_map *m)
{
	struct stat st;
	return m->fd >= 0 && fstat(m->fd, &st) == 0 && st.st_dev == m->dev && st.st_ino == m->ino;
}

/* An entry no longer tracked; under shm_shared.lock. Its memfd is closed if it is still
 * ours (another entry may share it: one moved from it). */
static void anon_drop(struct anon_map *m)
{
	if (!(m->len || m->asked || m->start))
		return;
	bool shared = false;
	for (int i = 0; i < N_ANON && m->fd >= 0; i++)
		shared |= &anon[i] != m && anon[i].len && anon[i].fd == m->fd;
	if (!shared && kept_fd(m))
		kern_close(m->fd);
	*m = (struct anon_map){ .fd = -1 };
	atomic_fetch_sub(&n_anon, 1);
}

/* fd: the memfd, kept (not root) or -1. */
static void anon_track(uintptr_t start, size_t len, size_t asked, int fd)
{
	struct stat st = { 0 };
	if (fd >= 0 && fstat(fd, &st) < 0) {
		kern_close(fd);
		fd = -1;
	}
	pthread_mutex_lock(&shm_shared.lock);
	for (int i = 0; i < N_ANON; i++)
		if (anon[i].len == 0) {
			anon[i] = (struct anon_map){ start, len, page_up(asked), getpid(), shm_shared.forks,
						     fd, st.st_dev, st.st_ino };
			atomic_fetch_add(&n_anon, 1);
			fd = -1;
			break;
		}
	pthread_mutex_unlock(&shm_shared.lock);
	if (fd >= 0)
		kern_close(fd);
}

void shm_whole(uintptr_t a, size_t *len)
{
	if (!atomic_load(&n_anon))
		return;
	pthread_mutex_lock(&shm_shared.lock);
	for (int i = 0; i < N_ANON; i++) {
		struct anon_map *m = &anon[i];
		if (m->len && a >= m->start && a < m->start + m->asked &&
		    a + page_up(*len) == m->start + m->asked)
			*len = m->start + m->len - a;
	}
	pthread_mutex_unlock(&shm_shared.lock);
}

/* The entry whose mapping starts at a; under shm_shared.lock. */
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
	pthread_mutex_lock(&shm_shared.lock);
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
	pthread_mutex_unlock(&shm_shared.lock);
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
		fd = kern_open(path, O_RDWR | O_CLOEXEC, 0);
		if (fd < 0)
			return fd;
	}
	int r = kern_map(to, new_len, PROT_READ | PROT_WRITE, MAP_SHARED | (to ? MAP_FIXED : 0),
			 fd, 0, out);
	if (fd != kept)
		kern_close(fd);
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
		r = kern_map(to, new_len, PROT_READ | PROT_WRITE,
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
	pthread_mutex_lock(&shm_shared.lock);
	struct anon_map *m = anon_at(s);
	have = m ? m->len : 0;
	size_t asked = m ? m->asked : 0;
	mine = m && m->pid == getpid() && m->forks == shm_shared.forks;
	int kept = m && kept_fd(m) ? m->fd : -1;
	pthread_mutex_unlock(&shm_shared.lock);
	/* Only growth of a whole mapping of ours is the kernel's to refuse (what it
	 * asked for, or what it was given). */
	if (have && page_up(old_len) == asked)
		old_len = have;
	if (!have || old_len != have || new_len <= old_len || !shm_round_2m(new_len, &want) ||
	    (flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED)) ||
	    (fixed && (!(flags & MREMAP_MAYMOVE) || ((uintptr_t)new_addr & (SP_2M_SIZE - 1)))))
		return 0;
	void *hold = NULL, *at = fixed ? new_addr : NULL;
	int r;
	if (!(flags & MREMAP_MAYMOVE)) {
		/* In place: only if what follows is free, held until the new mapping
		 * replaces it. */
		if (kern_map((void *)(s + have), want - have, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0,
			     &hold) < 0 || (uintptr_t)hold != s + have) {
			if (hold)
				kern_unmap(hold, want - have);
			return -ENOMEM;
		}
		at = old;
	}
	r = same_file(s, have, want, at, out, kept);
	if (r < 0 && mine && at != old)
		r = copy_of(s, have, want, at, out);
	if (r < 0) {
		if (hold)
			kern_unmap(hold, want - have);
		rt_verbose(1, "pid %d: --shm: %s at %p could not grow to %zu bytes: its hugetlb "
			   "file cannot be had again (its descriptor was closed by the program, "
			   "and /proc/self/map_files needs root)%s",
			   (int)getpid(), shm_what[SHM_ANON], old, new_len,
			   mine ? "" : " and may be shared with another process");
		return r == -ENOMEM ? r : -ENOMEM;
	}
	if (at != old)
		kern_unmap(old, have);
	shm_moved(s, have, (uintptr_t)*out, new_len);
	return 1;
}

void shm_moved(uintptr_t old, size_t old_len, uintptr_t to, size_t new_len)
{
	if (!atomic_load(&n_anon))
		return;
	pthread_mutex_lock(&shm_shared.lock);
	struct anon_map *m = anon_at(old);
	if (m && to != old && anon_at(to)) {
		anon_drop(m); /* moved into a mapping tracked already (a copy of shm_map's) */
	} else if (m && (m->len == old_len || m->asked == page_up(old_len))) {
		m->start = to;
		if (!shm_round_2m(new_len, &m->len))
			m->len = new_len; /* (the kernel would not have moved it) */
		m->asked = page_up(new_len);
	} else if (m) {
		anon_drop(m); /* part of it: left to the kernel from now on */
	}
	pthread_mutex_unlock(&shm_shared.lock);
}

/* Set once memfd_create said the kernel has no hugetlb memfd. */
static atomic_bool memfd_unsupported;

static void say_map_fall(const char *why, size_t len, int err)
{
	rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: %s (errno %d)",
		   (int)getpid(), shm_what[SHM_ANON], len, why, err);
}

void *shm_map(size_t len, int prot, int flags)
{
	const int allowed = MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE;
	long room;
	void *out;
	int fd, r, why;

	/* As mmap.c takes private mappings: read-write, placed by us, no flag that hugetlb
	 * would change the meaning of (MAP_NORESERVE: sparse memory; MAP_LOCKED, ...). */
	if (prot != (PROT_READ | PROT_WRITE) || (flags & ~allowed) ||
	    (flags & (MAP_SHARED | MAP_ANONYMOUS)) != (MAP_SHARED | MAP_ANONYMOUS) ||
	    !shm_wanted(len))
		return NULL;
	/* A length that is not a multiple of 2 MiB is rounded up when that costs at most
	 * 1/32 of it (the program's munmap, mprotect and mremap of its length are taken to
	 * the end of the mapping: shm_whole); a shorter one stays on base pages. */
	size_t asked = len;
	if (len & (SP_2M_SIZE - 1)) {
		size_t up;
		if (!shm_round_2m(len, &up) || (up - len) > len / 32) {
			if (shm_fall(SHM_ANON, SP_FALL_UNSUPPORTED))
				rt_verbose(1, "pid %d: --shm: %s of %zu bytes stays on base pages: its "
					   "length is not a multiple of 2 MiB, and 2 MiB pages would add "
					   "over 1/32 to it", (int)getpid(), shm_what[SHM_ANON], len);
			return NULL;
		}
		len = up;
	}
	if (atomic_load(&memfd_unsupported)) {
		shm_fall(SHM_ANON, SP_FALL_UNSUPPORTED);
		return NULL;
	}
	why = shm_pool_room(len, &room);
	if (why >= 0) {
		if (shm_fall(SHM_ANON, why))
			shm_say_pool(SHM_ANON, why, len, len, room);
		return NULL;
	}
	fd = kern_memfd("superpage-shm", MFD_HUGETLB | MFD_CLOEXEC | HUGE_SIZE_2MB);
	if (fd >= 0 && !anon_track_room()) {
		/* (Untracked, its mremap could not be answered.) */
		kern_close(fd);
		if (shm_fall(SHM_ANON, SP_FALL_SKIPPED))
			say_map_fall("too many shared anonymous mappings on hugetlb pages", len, 0);
		return NULL;
	}
	if (fd < 0) {
		bool unsupported = fd == -EINVAL || fd == -ENOSYS;
		if (unsupported)
			atomic_store(&memfd_unsupported, true);
		if (shm_fall(SHM_ANON, unsupported ? SP_FALL_UNSUPPORTED : SP_FALL_MMAP))
			say_map_fall("memfd_create(MFD_HUGETLB) failed", len, -fd);
		return NULL;
	}
	/* A hugetlbfs file is sized by ftruncate alone (it has no write); the pages are
	 * reserved by the mmap below, for the whole length. */
	r = kern_truncate(fd, (off_t)len);
	if (r == 0)
		r = kern_map(NULL, len, prot, MAP_SHARED | (flags & MAP_POPULATE), fd, 0, &out);
	/* Not root: kept, for mremap (above). */
	int kept = r == 0 && geteuid() != 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 512) : -1;
	kern_close(fd);
	if (r < 0) {
		if (shm_fall(SHM_ANON, r == -ENOMEM ? SP_FALL_POOL_EMPTY : SP_FALL_MMAP))
			say_map_fall("the hugetlb memfd could not be sized or mapped", len, -r);
		return NULL;
	}
	anon_track((uintptr_t)out, len, asked, kept);
	atomic_fetch_add(&shm_shared.maps, 1);
	atomic_fetch_add(&shm_shared.map_bytes, len);
	rt_verbose(2, "pid %d: --shm: shared anonymous mapping %p of %zu bytes on 2 MiB "
		   "hugetlb pages", (int)getpid(), out, len);
	return out;
}
