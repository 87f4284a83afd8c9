/* mounts.c - hugetlbfs_test_path(3), hugetlbfs_find_path(3): which path is hugetlbfs,
 * and the mount used for a page size (HUGETLB_PATH's, else the first usable one of
 * /proc/mounts). */
#include <errno.h>

#include "hugetlbfs.h"
#include "htlb.h"

HTLB_EXPORT int hugetlbfs_test_path(const char *mount)
{
	struct statfs sf;
	int r;

	if (!mount) {
		errno = EFAULT;
		return -1;
	}
	r = sp_os->statfs(mount, &sf);
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return (unsigned long)sf.f_type == HUGETLBFS_MAGIC;
}

HTLB_EXPORT const char *hugetlbfs_find_path_for_size(long page_size)
{
	const struct htlb_size *s = htlb_size_of(htlb_state(), page_size);

	return s && s->mount[0] ? s->mount : NULL;
}

HTLB_EXPORT const char *hugetlbfs_find_path(void)
{
	const struct htlb_state *st = htlb_state();

	return st->default_size ? hugetlbfs_find_path_for_size(st->default_size) : NULL;
}
