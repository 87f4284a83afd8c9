/* mallocfrom.c - prints the file of the object whose malloc the program calls
 * ("malloc from PATH"), after a malloc and a free through it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	Dl_info info;
	void *(*m)(size_t) = malloc;
	void *p = m(100);

	free(p);
	if (!dladdr((void *)m, &info) || !info.dli_fname)
		return 1;
	printf("malloc from %s\n", info.dli_fname);
	return 0;
}
