/* forksnap.c - fork as the kernel forks: the child's memory is the parent's at the
 * instant of fork(), and nothing that runs in the child before the program's own code
 * can fault. Run plain and under superpage run (test_fork.sh).
 *
 *   forksnap snap N MIB [BIG]
 *       a thread writes X (in a 4 MiB block), then Y (in a block MIB MiB further on),
 *       then F (a global), each a release store of the same rising count, while the
 *       main thread forks N times; each child checks F <= Y <= X: a later write seen
 *       means every earlier one is seen too.
 *   forksnap nss N MIB [BIG]
 *       the forking thread has an alternate signal stack in malloc'd memory and a
 *       SIGSEGV handler on it (as CPython's faulthandler), a second thread allocates
 *       and frees, the name service has been used (getpwnam, getaddrinfo) and a FILE
 *       is open; each child allocates, writes, checks the heap's bytes and exits.
 *
 * MIB MiB of the heap are filled with a pattern first, in blocks of 1 MiB, and BIG MiB
 * more in one block if BIG is given (under --backing 1g a block of 1 GiB or more is on
 * 1 GiB pages); every child checks the pattern too. Prints one line with the counts;
 * exits 0 when every child was right and none died, 1 otherwise. The number of forks
 * is counted, never timed. */
#include <netdb.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1ul << 20)

static _Atomic uint64_t *x, *y;
static _Atomic uint64_t f;
static _Atomic int stop, started;
static unsigned char **fill;
static size_t nfill;
static unsigned char *big;
static size_t nbig;

static void *writer(void *arg)
{
	(void)arg;
	atomic_store(&started, 1);
	for (uint64_t i = 1; !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		atomic_store_explicit(x, i, memory_order_release);
		atomic_store_explicit(y, i, memory_order_release);
		atomic_store_explicit(&f, i, memory_order_release);
	}
	return NULL;
}

/* A second thread that allocates and frees, as a program's worker would. */
static void *churn(void *arg)
{
	(void)arg;
	atomic_store(&started, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		char *p = malloc(1000);
		if (p)
			memset(p, 7, 1000);
		free(p);
	}
	return NULL;
}

/* The heap's pattern: 1 MiB blocks, byte j of block i is (i * 31 + j) & 0xff. */
static void fill_heap(size_t mib)
{
	nfill = mib;
	fill = malloc(mib * sizeof *fill);
	for (size_t i = 0; fill && i < mib; i++) {
		fill[i] = malloc(MIB);
		if (!fill[i])
			exit(2);
		for (size_t j = 0; j < MIB; j++)
			fill[i][j] = (unsigned char)(i * 31 + j);
	}
}

static int heap_right(void)
{
	for (size_t i = 0; i < nfill; i++)
		for (size_t j = 0; j < MIB; j += 4093)
			if (fill[i][j] != (unsigned char)(i * 31 + j))
				return 0;
	for (size_t j = 0; j < nbig; j += 4093)
		if (big[j] != (unsigned char)(j * 7))
			return 0;
	return 1;
}

static void on_segv(int sig)
{
	(void)sig;
	static const char m[] = "forksnap: SIGSEGV\n";
	(void)!write(2, m, sizeof m - 1);
	_exit(3);
}

/* What a child does: checks, and exits 0 if all is right. */
static int child(int snap)
{
	if (snap) {
		uint64_t fv = atomic_load(&f), yv = atomic_load(y), xv = atomic_load(x);
		if (!(fv <= yv && yv <= xv)) {
			fprintf(stderr, "forksnap: torn: X=%lu Y=%lu F=%lu\n", (unsigned long)xv,
				(unsigned long)yv, (unsigned long)fv);
			return 1;
		}
	} else {
		char *p = malloc(200000), *q = malloc(100);
		if (!p || !q)
			return 4;
		memset(p, 1, 200000);
		snprintf(q, 100, "child %d", (int)getpid());
		free(p);
		free(q);
	}
	return heap_right() ? 0 : 5;
}

int main(int argc, char **argv)
{
	if ((argc != 4 && argc != 5) || (strcmp(argv[1], "snap") && strcmp(argv[1], "nss"))) {
		fprintf(stderr, "usage: forksnap snap|nss FORKS MIB [BIG]\n");
		return 2;
	}
	int snap = !strcmp(argv[1], "snap"), n = atoi(argv[2]);
	size_t mib = strtoul(argv[3], NULL, 10);
	FILE *held = NULL;
	pthread_t t;

	x = malloc(4 * MIB);
	fill_heap(mib);
	if (argc == 5) {
		nbig = strtoul(argv[4], NULL, 10) * MIB;
		if (!(big = malloc(nbig)))
			return 2;
		for (size_t j = 0; j < nbig; j++)
			big[j] = (unsigned char)(j * 7);
	}
	y = malloc(4 * MIB);
	if (!x || !y)
		return 2;
	atomic_store(x, 0);
	atomic_store(y, 0);
	if (!snap) {
		stack_t ss = { .ss_sp = malloc(64 << 10), .ss_size = 64 << 10 };
		struct sigaction sa = { .sa_handler = on_segv, .sa_flags = SA_ONSTACK };
		struct addrinfo *ai = NULL;
		if (!ss.ss_sp || sigaltstack(&ss, NULL) < 0 || sigaction(SIGSEGV, &sa, NULL) < 0)
			return 2;
		(void)getpwnam("root");
		if (getaddrinfo("localhost", "80", NULL, &ai) == 0)
			freeaddrinfo(ai);
		held = fopen("/proc/self/status", "r");
		if (held)
			(void)fgetc(held);
	}
	if (pthread_create(&t, NULL, snap ? writer : churn, NULL))
		return 2;
	while (!atomic_load(&started))
		;
	int wrong = 0, died = 0;
	for (int i = 0; i < n; i++) {
		fflush(NULL);
		pid_t c = fork();
		if (c < 0) {
			perror("forksnap: fork");
			return 2;
		}
		if (c == 0)
			_exit(child(snap));
		int st;
		if (waitpid(c, &st, 0) < 0)
			return 2;
		if (WIFSIGNALED(st))
			died++;
		else if (WEXITSTATUS(st))
			wrong++;
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	if (held)
		fclose(held);
	printf("%s: %d forks, %d children wrong, %d died; parent's heap %s\n", argv[1], n, wrong,
	       died, heap_right() ? "right" : "WRONG");
	return wrong || died || !heap_right();
}
