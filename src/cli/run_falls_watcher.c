/* run_falls_watcher.c - superpage run under an explicit --backing 2m or 1g: the
 * falls of the program's tree from the hugetlb pages asked for, said once in one line
 * when the program has ended. The program says it at its exit (the runtime, in order with
 * what it wrote); a program that cannot (killed, gone by _exit) has it said by a
 * watcher superpage run leaves behind, nobody's child, which holds the page the
 * tree counts its falls in: the program keeps superpage run's pid, and its stderr
 * is its own while it runs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

void run_say_falls(void *page)
{
	struct sp_run_falls f;
	char line[1024];
	size_t n;

	if (sp_run_page_falls(page, &f) < 0 || !(n = sp_run_falls_line(&f, line, sizeof line)) ||
	    !sp_run_page_claim(page))
		return;
	if (write(2, line, n) < 0)
		return; /* (no stderr left to say it on) */
}

/* Whether process pid, started at start, has ended (a zombie has: its parent
 * reaps it when it likes). */
static bool ended(pid_t pid, uint64_t start)
{
	char path[64], buf[512];
	pid_t parent;
	uint64_t at;

	if (sp_proc_parent(pid, &parent, &at) < 0 || at != start)
		return true;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *paren = strrchr(buf, ')');
	return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

/* Every fd but stderr and the two kept closed: the watcher holds none of the
 * caller's files open (a pipe the caller waits on to end, a terminal). */
static void close_others(int keep1, int keep2)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int mine = d ? dirfd(d) : -1;

	if (!d) {
		for (int fd = 3; fd < 1024; fd++)
			if (fd != keep1 && fd != keep2)
				close(fd);
		return;
	}
	while ((e = readdir(d))) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (end != e->d_name && !*end && fd > 2 && fd != keep1 && fd != keep2 && fd != mine)
			close((int)fd);
	}
	closedir(d);
}

/* The watcher: waits for the program (root, started at start) to end, says its
 * tree's falls if it did not, and ends. Not stopped by the terminal's signals, out
 * of the caller's process group and files: it ends as soon as the program has. */
static void watch(pid_t root, uint64_t start, int pidfd, int fd, void *page)
{
	static const int ignored[] = { SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU };
	for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
		signal(ignored[i], SIG_IGN);
	setsid();
	prctl(PR_SET_NAME, (unsigned long)"superpage-falls", 0, 0, 0);
	/* (Not the caller's directory kept busy; failing, it is, a moment longer.) */
	int moved = chdir("/");
	(void)moved;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
	}
	close_others(fd, pidfd);
	if (pidfd >= 0) {
		struct pollfd p = { pidfd, POLLIN, 0 };
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
	} else {
		/* (A kernel before 5.3: looked at five times a second.) */
		struct timespec ts = { 0, 200000000 };
		while (!ended(root, start))
			nanosleep(&ts, NULL);
	}
	run_say_falls(page);
}

int run_falls_watch(void)
{
	void *page = NULL;
	int fd = sp_run_page_new(&page), pipefd[2];
	pid_t me = getpid(), parent, holder = -1;
	uint64_t start = 0;
	char val[64];

	if (fd < 0)
		return fd;
	/* Out of the way of the low numbers programs open; the watcher keeps this
	 * number, which the program's processes open as /proc/WATCHER/fd/FD. */
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	sp_run_page_tree_init(page, true);
	int pidfd = (int)syscall(SYS_pidfd_open, me, 0); /* (close-on-exec) */
	if (pidfd < 0 && sp_proc_parent(me, &parent, &start) < 0)
		goto out;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		goto out;
	fflush(NULL);
	pid_t first = fork();
	if (first == 0) {
		close(pipefd[0]);
		/* Nobody's child once the first has ended: the program cannot reap it,
		 * nor be told of its end. */
		pid_t w = fork();
		if (w == 0) {
			close(pipefd[1]);
			watch(me, start, pidfd, fd, page);
			_exit(0);
		}
		if (write(pipefd[1], &w, sizeof w) != (ssize_t)sizeof w)
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	if (first > 0) {
		pid_t w;
		ssize_t n;
		while ((n = read(pipefd[0], &w, sizeof w)) < 0 && errno == EINTR)
			;
		if (n == (ssize_t)sizeof w && w > 0)
			holder = w;
		while (waitpid(first, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close(pipefd[0]);
out:
	if (pidfd >= 0)
		close(pidfd);
	munmap(page, (size_t)sysconf(_SC_PAGESIZE));
	close(fd);
	if (holder <= 0) {
		unsetenv(SP_RUN_PAGE_ENV);
		return -ECHILD;
	}
	snprintf(val, sizeof val, "%d:%d:%d", fd, (int)me, (int)holder);
	if (setenv(SP_RUN_PAGE_ENV, val, 1) < 0)
		return -errno;
	return 0;
}
