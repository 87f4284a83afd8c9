/* prog.c - a statically linked program for tests/cli/test_run_static.sh, built there
 * with gcc -static: what superpage run keeps promoted by its watch.
 *
 * usage: prog heap MIB     mallocs MIB and writes a pattern on every page, prints
 *                          "ready PID ADDR", waits for its stdin to end, then checks
 *                          every word: exit 0 and "ok", or 1 and "bad"
 *        prog exit N       exits with status N
 *        prog kill SIG     dies of signal SIG
 *        prog usr1         prints "ready PID", exits 42 at SIGUSR1
 *        prog spawn ARGS   runs ARGS (a path, then its arguments) in a child, exits
 *                          with its status
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t pattern(size_t i)
{
	return (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
}

static int heap(size_t mib)
{
	size_t words = (mib << 20) / sizeof(uint64_t);
	uint64_t *p = malloc(words * sizeof *p);
	char c;

	if (!p) {
		puts("bad: malloc");
		return 1;
	}
	for (size_t i = 0; i < words; i++)
		p[i] = pattern(i);
	printf("ready %d %p\n", (int)getpid(), (void *)p);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	for (size_t i = 0; i < words; i++)
		if (p[i] != pattern(i)) {
			printf("bad: word %zu\n", i);
			return 1;
		}
	puts("ok");
	return 0;
}

static volatile sig_atomic_t got_usr1;

static void on_usr1(int sig)
{
	(void)sig;
	got_usr1 = 1;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "heap"))
		return heap(strtoul(argv[2], NULL, 10));
	if (argc > 2 && !strcmp(argv[1], "exit"))
		return atoi(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "kill")) {
		kill(getpid(), atoi(argv[2]));
		return 1;
	}
	if (argc > 1 && !strcmp(argv[1], "usr1")) {
		sigset_t none;
		signal(SIGUSR1, on_usr1);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		sigemptyset(&none);
		while (!got_usr1)
			sigsuspend(&none);
		return 42;
	}
	if (argc > 2 && !strcmp(argv[1], "spawn")) {
		int st;
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			execv(argv[2], argv + 2);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return 1;
		return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	}
	fputs("usage: prog heap MIB | exit N | kill SIG | usr1 | spawn PATH ARGS...\n", stderr);
	return 2;
}
