/* promote_target.c - a process for superpage promote to work on: mallocs and touches memory, then waits.
 *
 * usage: promote_target MIB [nohuge MIB] [thp-off] [exit-after SECONDS] [dontneed]
 *   MIB          memory malloc'ed and written, page by page (on base pages: the
 *                program asks nothing of THP)
 *   nohuge MIB   that much of it (2 MiB-aligned, at its start) given MADV_NOHUGEPAGE
 *   thp-off      prctl(PR_SET_THP_DISABLE) before anything is touched
 *   exit-after S ends after S seconds instead of at EOF on stdin
 * Prints "ready ADDR LEN [NOHUGE_ADDR NOHUGE_LEN]" when the memory is touched, then
 * waits for its stdin to end (or the time). On SIGUSR1 it drops the first 2 MiB-aligned
 * 4 MiB of the block with MADV_DONTNEED and writes them again (they come back on small
 * pages), then prints "dropped ADDR". At exit it checks the block kept its contents. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41
#endif

static volatile sig_atomic_t drop;

static void on_usr1(int sig)
{
	(void)sig;
	drop = 1;
}

static uint64_t pattern(size_t i)
{
	return (uint64_t)i * 0x9e3779b97f4a7c15ull;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64, nohuge = 0;
	int exit_after = 0;
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "nohuge") && i + 1 < argc)
			nohuge = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "thp-off"))
			prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
		else if (!strcmp(argv[i], "exit-after") && i + 1 < argc)
			exit_after = atoi(argv[++i]);
	}
	size_t len = mib << 20;
	uint64_t *p = malloc(len);
	if (!p) {
		perror("malloc");
		return 1;
	}
	uintptr_t a2 = ((uintptr_t)p + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1);
	if (nohuge && madvise((void *)a2, nohuge << 20, MADV_NOHUGEPAGE) != 0) {
		perror("madvise");
		return 1;
	}
	size_t n = len / sizeof *p;
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(i);
	signal(SIGUSR1, on_usr1);
	if (nohuge)
		printf("ready %p %zu %#lx %zu\n", (void *)p, len, (unsigned long)a2, nohuge << 20);
	else
		printf("ready %p %zu\n", (void *)p, len);
	fflush(stdout);
	for (int waited = 0; !exit_after || waited < exit_after * 10; waited++) {
		if (drop) {
			drop = 0;
			madvise((void *)a2, 4u << 20, MADV_DONTNEED);
			uint64_t *q = (uint64_t *)a2;
			for (size_t i = 0; i < (4u << 20) / sizeof *q; i++)
				q[i] = pattern((size_t)(q + i - p));
			printf("dropped %#lx\n", (unsigned long)a2);
			fflush(stdout);
		}
		if (!exit_after) {
			fd_set in;
			struct timeval tv = { 0, 100000 };
			FD_ZERO(&in);
			FD_SET(0, &in);
			if (select(1, &in, NULL, NULL, &tv) > 0) {
				char c;
				if (read(0, &c, 1) <= 0)
					break;
			}
		} else {
			usleep(100000);
		}
	}
	for (size_t i = 0; i < n; i++)
		if (p[i] != pattern(i)) {
			printf("corrupt at %zu\n", i);
			free(p);
			return 3;
		}
	printf("intact\n");
	free(p);
	return 0;
}
