/* field_kb.h - a "Key:   N kB" field of a /proc file (status, smaps_rollup), for the
 * programs in tests/runtime (header-only, as smaps_kb.h: each stays one file). */
#ifndef FIELD_KB_H
#define FIELD_KB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The value of the last line of path that starts with key ("VmRSS:"); -1 if the file
 * cannot be read or has none. */
static long field_kb(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char line[256];
	long v = -1;
	size_t k = strlen(key);

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (strncmp(line, key, k) == 0)
			v = atol(line + k);
	fclose(f);
	return v;
}

#endif
