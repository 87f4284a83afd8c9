/* deeplib.c - a library opened with RTLD_DEEPBIND (as PHP opens its extensions) that
 * allocates and frees across the boundary with the program that opened it. */
#include <stdlib.h>
#include <string.h>

char *deep_strdup(const char *s) { return strdup(s); }
void *deep_malloc(size_t n) { return malloc(n); }
void *deep_realloc(void *p, size_t n) { return realloc(p, n); }
void deep_free(void *p) { free(p); }
