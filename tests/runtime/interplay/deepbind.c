/* deepbind.c - opens a library with RTLD_DEEPBIND and passes blocks both ways: the
 * library's strdup, malloc and realloc freed here, and blocks malloc'd here grown and
 * freed by the library. Prints "deepbind: ok N" with the bytes checked, or why not
 * (exit 1). Usage: deepbind LIBRARY. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: deepbind LIBRARY\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
	if (!h) {
		fprintf(stderr, "deepbind: %s\n", dlerror());
		return 2;
	}
	char *(*d_strdup)(const char *) = (char *(*)(const char *))dlsym(h, "deep_strdup");
	void *(*d_malloc)(size_t) = (void *(*)(size_t))dlsym(h, "deep_malloc");
	void *(*d_realloc)(void *, size_t) = (void *(*)(void *, size_t))dlsym(h, "deep_realloc");
	void (*d_free)(void *) = (void (*)(void *))dlsym(h, "deep_free");
	if (!d_strdup || !d_malloc || !d_realloc || !d_free) {
		fprintf(stderr, "deepbind: %s lacks its functions\n", argv[1]);
		return 2;
	}
	size_t checked = 0;
	for (int r = 0; r < 200; r++) {
		size_t n = (size_t)(r * 997 % 300000) + 1;
		/* the library's blocks, grown and freed here */
		char *s = d_strdup("superpage");
		unsigned char *m = d_malloc(n);
		if (!s || !m)
			return 1;
		memset(m, r & 0xff, n);
		m = realloc(m, n * 2);
		if (!m)
			return 1;
		for (size_t k = 0; k < n; k++, checked++)
			if (m[k] != (r & 0xff)) {
				printf("deepbind: wrong byte at %zu of a block from the library\n", k);
				return 1;
			}
		if (strcmp(s, "superpage"))
			return 1;
		free(s);
		free(m);
		/* ours, grown and freed by the library */
		unsigned char *p = malloc(n);
		if (!p)
			return 1;
		memset(p, (r + 1) & 0xff, n);
		p = d_realloc(p, n + 4096);
		if (!p)
			return 1;
		for (size_t k = 0; k < n; k++, checked++)
			if (p[k] != ((r + 1) & 0xff)) {
				printf("deepbind: wrong byte at %zu of a block grown by the library\n", k);
				return 1;
			}
		d_free(p);
	}
	dlclose(h);
	printf("deepbind: ok %zu\n", checked);
	return 0;
}
