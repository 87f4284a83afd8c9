/* unlinked.c - hugetlbfs_unlinked_fd(3): a new file of huge pages with no name, in the
 * mount for the size (O_TMPFILE, or a name unlinked at once on a kernel without it),
 * or a memfd_create(MFD_HUGETLB) where no mount serves the size. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hugetlbfs.h"
#include "htlb.h"

#define MFD_HUGE_SHIFT 26
#define NAME_TRIES 64

/* Fails with -errno; the fd otherwise (close-on-exec, as all the seam's opens). */
static int named_then_unlinked(const char *dir)
{
	static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char name[SP_PATH_LEN + 32];
	uint64_t seed = sp_os->now_ns() ^ ((uint64_t)getpid() << 32);
	int fd = -EEXIST;

	for (int i = 0; i < NAME_TRIES && fd == -EEXIST; i++) {
		char tail[7];
		for (int k = 0; k < 6; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			tail[k] = digits[(seed >> 33) % (sizeof digits - 1)];
		}
		tail[6] = 0;
		snprintf(name, sizeof name, "%s/libhugetlbfs.tmp.%s", dir, tail);
		fd = sp_os->open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	}
	if (fd >= 0)
		sp_os->unlink(name);
	return fd;
}

static int from_mount(const char *dir)
{
	int fd = sp_os->open(dir, O_TMPFILE | O_RDWR, 0600);

	/* A kernel whose hugetlbfs has no O_TMPFILE answers with one of these. */
	if (fd == -EOPNOTSUPP || fd == -EISDIR || fd == -EINVAL)
		fd = named_then_unlinked(dir);
	/* A program may hand the fd to a program it runs, as mkstemp's. */
	if (fd >= 0)
		sp_os->fcntl(fd, F_SETFD, 0);
	return fd;
}

static unsigned log2_of(long size)
{
	unsigned shift = 0;
	while ((1ul << shift) < (unsigned long)size)
		shift++;
	return shift;
}

HTLB_EXPORT int hugetlbfs_unlinked_fd_for_size(long page_size)
{
	const struct htlb_size *s = htlb_size_of(htlb_state(), page_size);
	int fd;

	if (!s) {
		errno = EINVAL;
		return -1;
	}
	if (s->mount[0]) {
		fd = from_mount(s->mount);
		if (fd < 0)
			htlb_say(HTLB_ERROR, "no file for huge pages in %s: %s", s->mount,
				 strerror(-fd));
	} else if (!s->memfd) {
		htlb_say(HTLB_ERROR, "no hugetlbfs mount for %ld-byte pages in /proc/mounts, "
			 "though the kernel has one", page_size);
		fd = -ENOENT;
	} else {
		fd = sp_os->memfd_create("libhugetlbfs",
					 MFD_HUGETLB | (log2_of(page_size) << MFD_HUGE_SHIFT));
		if (fd < 0)
			htlb_say(HTLB_ERROR, "no hugetlbfs mount for %ld-byte pages, and "
				 "memfd_create(MFD_HUGETLB) failed: %s", page_size, strerror(-fd));
		else
			htlb_say(HTLB_DEBUG, "no hugetlbfs mount for %ld-byte pages: a memfd",
				 page_size);
	}
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

HTLB_EXPORT int hugetlbfs_unlinked_fd(void)
{
	long size = gethugepagesize();

	return size < 0 ? -1 : hugetlbfs_unlinked_fd_for_size(size);
}
