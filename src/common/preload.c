/* preload.c - LD_PRELOAD with superpage's runtime in front (see preload.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preload.h"

bool sp_preload_is_runtime(const char *entry, size_t n, const char *rt)
{
	const char *base = entry;

	if (n == strlen(rt) && !memcmp(entry, rt, n))
		return true;
	for (size_t k = 0; k < n; k++)
		if (entry[k] == '/')
			base = entry + k + 1;
	return (size_t)(entry + n - base) == strlen(SP_RUNTIME_NAME) &&
	       !memcmp(base, SP_RUNTIME_NAME, strlen(SP_RUNTIME_NAME));
}

char *sp_preload_with_runtime(const char *rt, const char *old)
{
	size_t len = strlen(rt) + (old ? strlen(old) : 0) + 2;
	char *val = malloc(len), *w;
	const char *p;

	if (!val) {
		errno = ENOMEM;
		return NULL;
	}
	w = val + sprintf(val, "%s", rt);
	for (p = old ? old : ""; *p;) {
		size_t n = strcspn(p, ": ");

		if (n && !sp_preload_is_runtime(p, n, rt)) {
			*w++ = ':';
			memcpy(w, p, n);
			w += n;
		}
		p += n;
		if (*p)
			p++;
	}
	*w = 0;
	return val;
}
