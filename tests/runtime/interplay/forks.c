/* forks.c - forks a process whose heap holds known bytes, by every path a program
 * has: fork after the name service (getpwnam) in a threaded process, with a stream
 * open, while other threads malloc and free, from a signal handler, through popen,
 * system, posix_spawn and vfork, and clone without CLONE_VM. Each child checks every
 * byte of the heap it was given, writes to it, mallocs and frees, and exits 0; the
 * parent checks its heap again after each child. Prints one line per path, and exits
 * 1 if any child died or found a wrong byte.
 * Usage: forks [-m MIB] [PATH...]; paths: nss stream busy signal popen system spawn
 * vfork clone atfork. */
#include <errno.h>
#include <pwd.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define NBLK 64
static unsigned char *blk[NBLK];
static size_t blen[NBLK];
static atomic_int stop;

static unsigned char pat(size_t i, size_t k) { return (unsigned char)(i * 131 + k * 7 + 1); }

static void fill(size_t total)
{
	for (size_t i = 0; i < NBLK; i++) {
		/* sizes from small objects to blocks of several units */
		blen[i] = i % 4 == 0 ? total / (NBLK / 4) : (size_t)(16 << (i % 12));
		blk[i] = malloc(blen[i]);
		if (!blk[i]) {
			perror("malloc");
			exit(2);
		}
		for (size_t k = 0; k < blen[i]; k++)
			blk[i][k] = pat(i, k);
	}
}

/* 0 when every byte is as filled. */
static int check(void)
{
	for (size_t i = 0; i < NBLK; i++)
		for (size_t k = 0; k < blen[i]; k++)
			if (blk[i][k] != pat(i, k))
				return 1;
	return 0;
}

/* What every child does: check, write, allocate; its exit status says how it went. */
static int child_work(void)
{
	if (check())
		return 3;
	for (size_t i = 0; i < NBLK; i++)
		memset(blk[i], 0x5a, blen[i]);
	for (int r = 0; r < 1000; r++) {
		char *p = malloc((size_t)(r % 50) * 97 + 1);
		if (!p)
			return 4;
		p[0] = 1;
		free(p);
	}
	char *big = malloc(8 << 20);
	if (!big)
		return 4;
	memset(big, 1, 8 << 20);
	free(big);
	return 0;
}

static int status_ok(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static const char *say(int st)
{
	static char b[64];
	if (WIFSIGNALED(st))
		snprintf(b, sizeof b, "killed by signal %d", WTERMSIG(st));
	else if (WIFEXITED(st))
		snprintf(b, sizeof b, "exit %d", WEXITSTATUS(st));
	else
		snprintf(b, sizeof b, "status %#x", st);
	return b;
}

static int fork_and_wait(void)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0)
		_exit(child_work());
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

static void *busy(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		void *p[32];
		for (int i = 0; i < 32; i++)
			p[i] = malloc((size_t)(i * 61 + 8));
		for (int i = 0; i < 32; i++)
			free(p[i]);
	}
	return NULL;
}

static pthread_t helper;
static void threaded(void)
{
	if (!helper && pthread_create(&helper, NULL, busy, NULL) != 0) {
		perror("pthread_create");
		exit(2);
	}
}

static int path_nss(void)
{
	threaded();
	struct passwd *pw = getpwnam("root");
	(void)pw;
	return fork_and_wait();
}

static int path_stream(void)
{
	threaded();
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	if (!fgets(line, sizeof line, f))
		line[0] = 0;
	int st = fork_and_wait();
	fclose(f);
	return st;
}

static int path_busy(void)
{
	threaded();
	int worst = 0;
	for (int i = 0; i < 20; i++) {
		int st = fork_and_wait();
		if (!status_ok(st))
			return st;
		worst |= st;
	}
	return worst;
}

static volatile sig_atomic_t sig_status = -1;
static void on_usr1(int sig)
{
	(void)sig;
	int e = errno;
	pid_t pid = fork();
	if (pid == 0)
		_exit(child_work());
	int st = -1;
	if (pid > 0)
		waitpid(pid, &st, 0);
	sig_status = st;
	errno = e;
}

static int path_signal(void)
{
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	return sig_status;
}

static int path_popen(void)
{
	FILE *p = popen("echo popen-child", "r");
	if (!p)
		return -1;
	char line[64] = "";
	if (!fgets(line, sizeof line, p))
		line[0] = 0;
	int st = pclose(p);
	return strcmp(line, "popen-child\n") ? 1 << 8 : st;
}

static int path_system(void)
{
	return system("exit 0");
}

static int path_spawn(void)
{
	pid_t pid;
	char *argv[] = { "sh", "-c", "exit 0", NULL };
	if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ) != 0)
		return -1;
	int st;
	waitpid(pid, &st, 0);
	return st;
}

static int path_vfork(void)
{
	pid_t pid = vfork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	return st;
}

static int clone_child(void *arg)
{
	(void)arg;
	return child_work();
}

static int path_clone(void)
{
	size_t sz = 1 << 20;
	char *stack = malloc(sz);
	if (!stack)
		return -1;
	pid_t pid = clone(clone_child, stack + sz, SIGCHLD, NULL);
	if (pid < 0) {
		free(stack);
		return -1;
	}
	int st;
	waitpid(pid, &st, 0);
	free(stack);
	return st;
}

/* The child handler of a library loaded before the runtime's (LD_PRELOAD'd first, as
 * jemalloc is in redis) touches its malloc'd state: forks' child must survive it. */
static int path_atfork(void)
{
	return fork_and_wait();
}

static const struct {
	const char *name;
	int (*run)(void);
} paths[] = {
	{ "nss", path_nss },       { "stream", path_stream }, { "busy", path_busy },
	{ "signal", path_signal }, { "popen", path_popen },   { "system", path_system },
	{ "spawn", path_spawn },   { "vfork", path_vfork },   { "clone", path_clone },
	{ "atfork", path_atfork },
};

int main(int argc, char **argv)
{
	size_t mib = 64;
	int a = 1, bad = 0;
	if (a + 1 < argc && !strcmp(argv[a], "-m")) {
		mib = strtoul(argv[a + 1], NULL, 10);
		a += 2;
	}
	fill(mib << 20);
	for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
		int want = a == argc;
		for (int j = a; j < argc; j++)
			want |= !strcmp(argv[j], paths[i].name);
		if (!want)
			continue;
		int st = paths[i].run();
		int ok = st >= 0 && status_ok(st);
		int parent = check();
		printf("%s: %s%s\n", paths[i].name, st < 0 ? "could not start" : say(st),
		       parent ? ", parent's heap changed" : "");
		bad |= !ok || parent;
	}
	atomic_store(&stop, 1);
	if (helper)
		pthread_join(helper, NULL);
	return bad;
}
