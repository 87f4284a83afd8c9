/* settings.c - system settings a command saves, changes and puts back, also from a signal handler. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"

int sp_thp_save(struct sp_setting *s)
{
	char buf[256];
	ssize_t n = sp_read_file(THP_ENABLED, buf, sizeof buf);
	if (n < 0)
		return (int)n;
	sp_mode_selected(buf, s->old, sizeof s->old);
	if (!s->old[0])
		return -EPROTO;
	sp_strlcpy(s->path, THP_ENABLED, sizeof s->path);
	s->held = 1;
	return 0;
}

int sp_pool_save(struct sp_setting *s, uint64_t page_size, int node)
{
	char dir[SP_PATH_LEN];
	long total;
	int r = sp_pool_dir(page_size, node, dir, sizeof dir);
	if (r < 0)
		return r;
	if (snprintf(s->path, sizeof s->path, "%s/nr_hugepages", dir) >= (int)sizeof s->path)
		return -ENAMETOOLONG;
	r = sp_read_long(s->path, &total);
	if (r < 0)
		return r == -ENOENT || r == -ENOTDIR ? -ENOENT : r;
	snprintf(s->old, sizeof s->old, "%ld", total);
	s->held = 1;
	return 0;
}

int sp_thp_set(const char *mode)
{
	if (strcmp(mode, "always") && strcmp(mode, "madvise") && strcmp(mode, "never"))
		return -EINVAL;
	return sp_write_file(THP_ENABLED, mode);
}

/* Only open, write and close through the seam (raw system calls that keep errno), and
 * strlen: what a signal handler may call. Disarmed first, so that a handler that comes
 * while this runs does not write it too (and if it came just before, this writes the
 * same value again). */
int sp_setting_restore(struct sp_setting *s)
{
	if (!s->held)
		return 0;
	s->held = 0;
	return sp_write_file(s->path, s->old);
}
