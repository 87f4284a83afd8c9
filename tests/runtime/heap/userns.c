/* userns.c - a program that must be single-threaded for unshare(CLONE_NEWUSER): after
 * 300 MiB of blocks written whole (the heap past auto's promotion), a block of 64 MiB
 * of which one page is written (under auto, dense by touch, it is watched: the
 * runtime's looks' thread runs), then blocks made and freed; it counts its threads,
 * and calls unshare(CLONE_NEWUSER), by libc's unshare or (with "syscall") by
 * syscall(SYS_unshare). Prints "threads_before=N" and "unshare=ok" or the error on
 * lines of their own; exits 0 if unshare succeeded, 1 if not. */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

static int threads(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	int by_syscall = argc > 1 && strcmp(argv[1], "syscall") == 0;
	char *keep[100], *block;
	for (int i = 0; i < 100; i++) {
		if (!(keep[i] = malloc(3 * MIB)))
			return 2;
		memset(keep[i], 1, 3 * MIB);
	}
	if (!(block = malloc(64 * MIB)))
		return 2;
	block[0] = 1;
	for (int i = 0; i < 50; i++)
		free(malloc(4 * MIB));
	printf("threads_before=%d\n", threads());
	int r = by_syscall ? (int)syscall(SYS_unshare, CLONE_NEWUSER) : unshare(CLONE_NEWUSER);
	if (r == 0)
		printf("unshare=ok\n");
	else
		printf("unshare=%s\n", strerror(errno));
	return r == 0 && keep[99][MIB] == 1 && block[0] == 1 ? 0 : 1;
}
