/* view.c - a preload library that shows a program another machine, the way
 * libhugetlbfs' own tests do: open(2) of /proc/meminfo or /proc/mounts opens
 * $VIEW_MEMINFO or $VIEW_MOUNTS instead, and opendir(3) of the sysfs directory of huge
 * page sizes opens $VIEW_SIZES instead ("none": it fails with ENOENT). Unset variables
 * change nothing. Built by tests/cli/test_htlb.sh with cc -shared -fPIC. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *instead(const char *path)
{
	const char *v = NULL;

	if (!strcmp(path, "/proc/meminfo"))
		v = getenv("VIEW_MEMINFO");
	else if (!strcmp(path, "/proc/mounts"))
		v = getenv("VIEW_MOUNTS");
	return v ? v : path;
}

int open(const char *path, int flags, ...)
{
	static int (*next)(const char *, int, ...);
	mode_t mode = 0;

	if (!next)
		next = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return next(instead(path), flags, mode);
}

DIR *opendir(const char *path)
{
	static DIR *(*next)(const char *);
	const char *v = getenv("VIEW_SIZES");
	size_t n = strlen(path);

	if (!next)
		next = (DIR * (*)(const char *)) dlsym(RTLD_NEXT, "opendir");
	/* "/sys/kernel/mm/hugepages", with or without its last slash */
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (v && n == 24 && !strncmp(path, "/sys/kernel/mm/hugepages", 24)) {
		if (!strcmp(v, "none")) {
			errno = ENOENT;
			return NULL;
		}
		return next(v);
	}
	return next(path);
}
