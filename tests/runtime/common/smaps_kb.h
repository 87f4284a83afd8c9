/* smaps_kb.h - what /proc/self/smaps says of an address range, for the programs in
 * tests/runtime (plain C, no superpage calls; header-only: each is one file). */
#ifndef SMAPS_KB_H
#define SMAPS_KB_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char smaps_buf[8 << 20];

/* The kB of field ("AnonHugePages:") summed over the mappings in /proc/self/smaps
 * that overlap [lo, hi); or, with field NULL, the KernelPageSize of the one that
 * holds lo. -1 if smaps cannot be read. */
static long smaps_kb(uintptr_t lo, uintptr_t hi, const char *field)
{
	int fd = open("/proc/self/smaps", O_RDONLY);
	size_t len = 0;
	ssize_t n;
	long kb = 0;
	bool in = false;

	if (fd < 0)
		return -1;
	while (len < sizeof smaps_buf - 1 &&
	       (n = read(fd, smaps_buf + len, sizeof smaps_buf - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	smaps_buf[len] = 0;
	for (char *line = smaps_buf; line && *line;) {
		char *end = strchr(line, '\n'), *e1, *e2 = NULL;
		if (end)
			*end = 0;
		/* A mapping's header: "lo-hi perms offset dev inode path" */
		uintptr_t a = strtoul(line, &e1, 16), b = *e1 == '-' ? strtoul(e1 + 1, &e2, 16) : 0;
		if (*e1 == '-' && e1 > line && e2 > e1 + 1 && *e2 == ' ')
			in = a < hi && b > lo;
		else if (in && field && strncmp(line, field, strlen(field)) == 0)
			kb += strtol(line + strlen(field), NULL, 10);
		else if (in && !field && strncmp(line, "KernelPageSize:", 15) == 0)
			return strtol(line + 15, NULL, 10);
		line = end ? end + 1 : NULL;
	}
	return kb;
}

#endif
