/* leaves.c - a program that mallocs and then leaves in the way its argument says:
 * "exit_group" (the system call itself, as Go with cgo does: no atexit, no
 * destructor), "kill" (SIGKILL to itself), "exit" (exit(3), the usual way), or
 * "wait" (waits for SIGUSR1, then exits with status 7). stdout: "leaving". */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	(void)sig;
	got = 1;
}

int main(int argc, char **argv)
{
	static void *keep[2000];
	const char *how = argc > 1 ? argv[1] : "exit";

	for (int i = 0; i < 2000; i++) {
		keep[i] = malloc(1000 + (size_t)i);
		if (!keep[i])
			return 1;
		memset(keep[i], 1, 1000);
	}
	/* (The heap publishes its account every 0.1 s it is used.) */
	usleep(150000);
	for (int i = 0; i < 1000; i++)
		free(keep[i]);
	signal(SIGUSR1, on_usr1);
	printf("leaving\n");
	fflush(stdout);
	if (!strcmp(how, "exit_group"))
		syscall(SYS_exit_group, 3);
	if (!strcmp(how, "kill"))
		raise(SIGKILL);
	if (!strcmp(how, "wait")) {
		for (int i = 0; i < 600 && !got; i++)
			usleep(10000);
		return got ? 7 : 1;
	}
	exit(3);
}
