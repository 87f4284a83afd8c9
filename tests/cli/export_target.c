/* export_target.c - a process for superpage export to find: holds MIB on THP, idle, until its stdin ends.
 *
 * usage: export_target MIB [NAME]
 *   MIB   memory mapped 2 MiB-aligned, given MADV_HUGEPAGE and written (on THP where
 *         the kernel has free huge pages)
 *   NAME  its command name (prctl PR_SET_NAME): a test of label escaping
 * Prints "ready PID" when the memory is written (superpage run starts it as a child),
 * then waits for EOF on stdin: its huge memory stays as it is meanwhile. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define SZ_2M (2ul << 20)

int main(int argc, char **argv)
{
	size_t len = (argc > 1 ? strtoul(argv[1], NULL, 10) : 64) << 20;
	char buf[64];

	if (argc > 2)
		prctl(PR_SET_NAME, argv[2], 0, 0, 0);
	char *raw = mmap(NULL, len + SZ_2M, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	char *p = (char *)(((uintptr_t)raw + SZ_2M - 1) & ~(uintptr_t)(SZ_2M - 1));
	if (madvise(p, len, MADV_HUGEPAGE) != 0)
		perror("madvise"); /* no THP here: the test sees no huge bytes and says so */
	for (size_t i = 0; i < len; i += 4096)
		p[i] = (char)i;
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	while (read(0, buf, sizeof buf) > 0)
		;
	return p[4096] == (char)4096 ? 0 : 1;
}
