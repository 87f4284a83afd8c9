/* dlopen_prog.c - a program that loads libhugetlbfs.so.0 only once it has started
 * (dlopen), for tests/cli/test_htlb_env.sh: the library must not start it again,
 * whatever its environment asks. usage: dlopen_prog LIBRARY */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	printf("start\n");
	fflush(stdout);
	void *h = dlopen(argv[1], RTLD_NOW);
	printf("loaded %d\n", h != NULL);
	return h ? 0 : 1;
}
