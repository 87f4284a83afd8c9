/* heap_prog.c - a program linked with -lhugetlbfs for tests/cli/test_htlb_env.sh: it
 * gets memory the way libhugetlbfs' users do (malloc, shmget) and prints what smaps
 * says it is on (and, for the heap, what is left at its place once freed), whether
 * superpage's runtime is in it, and in a child it starts.
 * usage: heap_prog heap MIB | shm MIB | child */
#include <hugetlbfs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#define RUNTIME "libsuperpage-run.so"

/* Over the mappings of /proc/self/smaps that overlap [p, p + len): the smallest
 * KernelPageSize (kB) and the sum of AnonHugePages (kB). */
static void smaps_of(const char *p, size_t len, long *kps, long *thp_kb)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi, a = (unsigned long)p, z = a + len;
	char line[512];
	long v;
	int in = 0;

	*kps = -1;
	*thp_kb = 0;
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = lo < z && hi > a;
		else if (in && sscanf(line, "KernelPageSize: %ld kB", &v) == 1)
			*kps = *kps < 0 || v < *kps ? v : *kps;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &v) == 1)
			*thp_kb += v;
	}
	fclose(f);
}

/* The runtime is in this process (child: false), or in a child the shell starts
 * (cat, of its own maps). */
static int runtime_in(int child)
{
	FILE *f = child ? popen("cat /proc/self/maps", "r") : fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		n += strstr(line, RUNTIME) != NULL;
	if (child)
		pclose(f);
	else
		fclose(f);
	return n > 0;
}

static void touch(char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (char)i;
}

int main(int argc, char **argv)
{
	size_t len = (argc > 2 ? strtoul(argv[2], NULL, 0) : 64) << 20;
	long kps, thp_kb;
	char *p;

	if (argc < 2)
		return 2;
	/* A call into the library, so that it is needed whatever the linker's defaults. */
	printf("hugepagesize %ld\n", gethugepagesize());
	printf("runtime %d\n", runtime_in(0));
	if (!strcmp(argv[1], "heap")) {
		p = malloc(len);
		if (!p)
			return 1;
		touch(p, len);
		smaps_of(p, len, &kps, &thp_kb);
		printf("heap kps=%ld thp_kb=%ld\n", kps, thp_kb);
		/* (volatile: the address alone is looked up, the block is not used) */
		volatile uintptr_t at = (uintptr_t)p;
		free(p);
		/* What is left at its place: huge pages kept for the next malloc, or not
		 * (-1: nothing mapped there). */
		smaps_of((const char *)at, len, &kps, &thp_kb);
		printf("freed kps=%ld\n", kps);
	} else if (!strcmp(argv[1], "shm")) {
		int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
		if (id < 0 || (p = shmat(id, NULL, 0)) == (void *)-1) {
			perror("shm");
			return 1;
		}
		shmctl(id, IPC_RMID, NULL);
		touch(p, len);
		smaps_of(p, len, &kps, &thp_kb);
		printf("shm kps=%ld\n", kps);
		shmdt(p);
	} else if (!strcmp(argv[1], "child")) {
		printf("child_runtime %d\n", runtime_in(1));
		printf("child_preload %s\n", getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "-");
	} else {
		return 2;
	}
	return 0;
}
