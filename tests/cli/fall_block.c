/* fall_block.c - prints its pid, mallocs one block of MIB MiB and fills it, then
 * leaves as HOW says: "exit N" (exit(3), the runtime's handlers run), "_exit N"
 * (_exit(2): none run), or "kill" (SIGKILL to itself). test_run_falls.sh runs it
 * under superpage run --backing 2m with a pool too small for the block. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t mib = argc >= 3 ? strtoul(argv[1], NULL, 10) : 0;
	if (!mib || (strcmp(argv[2], "kill") && argc != 4)) {
		fprintf(stderr, "usage: fall_block MIB exit|_exit N, or fall_block MIB kill\n");
		return 2;
	}
	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	unsigned char *volatile p = malloc(mib << 20);
	if (!p)
		return 1;
	memset(p, 0x5a, mib << 20);
	int status = argc == 4 ? atoi(argv[3]) : 0;
	if (!strcmp(argv[2], "kill"))
		kill(getpid(), SIGKILL);
	if (!strcmp(argv[2], "_exit"))
		_exit(status);
	exit(status);
}
