/* stackuse.c - threads and their stacks as a program sees them: deep recursion in many
 * threads, each result checked against the same sum done without recursion; threads
 * blocked at their deepest frame while a test reads the process from outside; a stack
 * overflow that must end on the guard page; stacks reused across joined and detached
 * threads; fork from a thread; a stack of the program's own.
 * Usage: stackuse [nothp] deep | hold | bigdeep | bighold | guard | reuse | fork | own |
 *        attrs | sweep | idle N
 *   nothp  first sets PR_SET_THP_DISABLE and executes itself again with the rest
 *   deep   64 threads recurse 1 MiB deep and print their sums (the same output on any
 *          stack), plus 4 threads with a stack size of their own (3 MiB and 1.5 MiB)
 *   hold   the same, but each thread waits at its deepest frame; "ready PID" is printed
 *          and the threads go on when stdin ends
 *   guard  a forked child's thread recurses without end: prints how the child ended,
 *          whether a canary page mapped right below the guard page stayed intact, and
 *          whether the stack was 2 MiB-aligned and a multiple of 2 MiB
 *   reuse  200 threads joined, 100 created detached, 100 detached after they start, one
 *          at a time; prints how many more mappings the process has after them
 *   fork   a thread 256 KiB deep forks; the child recurses, starts and joins a thread
 *   own    a thread on a stack the program mapped itself: prints whether it ran there
 *   attrs  threads' attributes as asked: detach state, CPU affinity (set, and inherited),
 *          signal mask, guard size; return values of pthread_exit and cancellation
 *   bigdeep, bighold  as deep and hold with 4 threads on 8 MiB stacks, 6.3 MiB deep
 *   idle N N threads touch 16 KiB of their stacks and wait at a barrier; prints the
 *          resident and huge bytes of their stacks (smaps) and of the process, after
 *          one more thread has been started and joined
 *   sweep  a thread on an 8 MiB stack recurses 6.3 MiB deep and waits there; prints its
 *          stack's resident and huge bytes (smaps) before and after one more thread has
 *          been started and joined, and the process's resident bytes; then its stack's
 *          resident bytes once it has been joined
 * Exits 1 at the first result that is not what it must be. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define KB 1024ul
#define MB (1024ul * KB)
#define THREADS 64
#define FRAME 1000        /* bytes of each frame's buffer */
#define DEPTH 1100        /* frames: over 1 MiB of buffers, more of stack */
#define BIG_DEPTH 6300    /* frames: over 6 MiB of buffers, below three units of 2 MiB */
#define BIG_THREADS 4

static unsigned depth = DEPTH;

static void die(const char *what)
{
	printf("stackuse: FAILED: %s (errno %d)\n", what, errno);
	fflush(stdout);
	exit(1);
}

static void die_err(const char *what, int err)
{
	errno = err;
	die(what);
}

/* ---------- deep recursion, and the same sums without it ---------- */

static uint64_t next_seed(uint64_t s) { return s * 6364136223846793005ull + 1442695040888963407ull; }
static unsigned char byte_of(uint64_t s, unsigned k, unsigned d) { return (unsigned char)(s + 7u * k + d); }

static int hold_fd = -1; /* hold: the read end the deepest frames wait on */

/* Each frame fills a buffer and reads it back after the frames below it have run:
 * a stack that another thread or the runtime wrote over gives another sum. */
static uint64_t recurse(unsigned d, uint64_t s)
{
	volatile unsigned char buf[FRAME];
	uint64_t below = 0, sum = 0;

	for (unsigned k = 0; k < FRAME; k++)
		buf[k] = byte_of(s, k, d);
	if (d)
		below = recurse(d - 1, next_seed(s));
	else if (hold_fd >= 0) {
		char c;
		if (read(hold_fd, &c, 1) != 1)
			die("read the go-ahead");
	}
	for (unsigned k = 0; k < FRAME; k++)
		sum += buf[k];
	return (below * 31) ^ sum ^ d;
}

static uint64_t flat(unsigned frames, uint64_t s)
{
	static uint64_t seeds[BIG_DEPTH + 1];
	uint64_t h = 0;

	for (unsigned d = frames + 1; d-- > 0;) {
		seeds[d] = s;
		s = next_seed(s);
	}
	for (unsigned d = 0; d <= frames; d++) {
		uint64_t sum = 0;
		for (unsigned k = 0; k < FRAME; k++)
			sum += byte_of(seeds[d], k, d);
		h = (h * 31) ^ sum ^ d;
	}
	return h;
}

static void *deep_thread(void *arg)
{
	uintptr_t i = (uintptr_t)arg;

	return (void *)(uintptr_t)recurse(depth, 0x5350000000ull + i);
}

static void start(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	int r = pthread_create(t, attr, fn, arg);

	if (r)
		die_err("pthread_create", r);
}

static void deep(bool hold, bool big)
{
	pthread_t t[THREADS + 4];
	pthread_attr_t attr;
	int fds[2];
	int n = 0;

	if (hold) {
		if (pipe(fds) < 0)
			die("pipe");
		hold_fd = fds[0];
	}
	pthread_attr_init(&attr);
	if (big) {
		depth = BIG_DEPTH;
		int r = pthread_attr_setstacksize(&attr, 8 * MB);
		if (r)
			die_err("pthread_attr_setstacksize", r);
		for (uintptr_t i = 0; i < BIG_THREADS; i++)
			start(&t[n++], &attr, deep_thread, (void *)i);
	} else {
		for (uintptr_t i = 0; i < THREADS; i++)
			start(&t[n++], NULL, deep_thread, (void *)i);
	}
	/* Sizes of their own: one rounded up to 2 MiB, one that is not a multiple. */
	for (uintptr_t i = 0; i < 4 && !big; i++) {
		size_t size = i < 2 ? 3 * MB : 3 * MB / 2;
		int r = pthread_attr_setstacksize(&attr, size);
		if (r)
			die_err("pthread_attr_setstacksize", r);
		start(&t[n++], &attr, deep_thread, (void *)(THREADS + i));
	}
	pthread_attr_destroy(&attr);
	if (hold) {
		char buf[256];
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (read(0, buf, sizeof buf) > 0)
			;
		for (int i = 0; i < n; i++)
			if (write(fds[1], "g", 1) != 1)
				die("write the go-ahead");
	}
	for (int i = 0; i < n; i++) {
		void *ret;
		int r = pthread_join(t[i], &ret);
		if (r)
			die_err("pthread_join", r);
		uint64_t want = flat(depth, 0x5350000000ull + (uint64_t)i);
		if ((uintptr_t)ret != (uintptr_t)want) {
			printf("stackuse: FAILED: thread %d sums %016llx, want %016llx\n", i,
			       (unsigned long long)(uintptr_t)ret, (unsigned long long)want);
			exit(1);
		}
		printf("thread %d sum %016llx\n", i, (unsigned long long)want);
	}
	printf("deep: %d threads, %lu KiB of frames each, sums as without recursion\n", n,
	       (unsigned long)((depth + 1) * FRAME / KB));
}

/* ---------- the guard ---------- */

struct guard_info {
	uintptr_t lo, size;
	int guarded;      /* a PROT_NONE mapping ends where the stack starts */
	int placed;       /* the canary page is mapped right below the guard page */
};

#define CANARY 0xc5

static volatile int sink;

static void overflow(unsigned d)
{
	volatile unsigned char buf[512];

	for (unsigned k = 0; k < sizeof buf; k++)
		buf[k] = (unsigned char)(d + k);
	if (d < (1u << 30)) /* 512 GiB down: never */
		overflow(d + 1);
	sink += buf[d % sizeof buf];
}

static int canary_fd;

/* The size of the PROT_NONE mapping that ends at lo, 0 if there is none: a guard,
 * not a hole that something else may be mapped into later. */
static size_t guard_below(uintptr_t lo)
{
	char line[512], perms[8];
	unsigned long a, b;
	size_t found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		die("fopen /proc/self/maps");
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) == 3 && b == lo &&
		    !strcmp(perms, "---p"))
			found = b - a;
	fclose(f);
	return found;
}
static struct guard_info *info;

static void *overflow_thread(void *arg)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	uintptr_t at;

	(void)arg;
	if (pthread_getattr_np(pthread_self(), &attr))
		die("pthread_getattr_np");
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	info->lo = (uintptr_t)addr;
	info->size = size;
	info->guarded = guard_below(info->lo) != 0;
	/* The default guard is one page, right below the stack. */
	at = (uintptr_t)addr - 2 * 4096;
	info->placed = mmap((void *)at, 4096, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_FIXED_NOREPLACE, canary_fd, 0) == (void *)at;
	overflow(0);
	return NULL;
}

static void guard(void)
{
	unsigned char *canary;
	int status, bad = 0;
	pid_t pid;

	canary_fd = memfd_create("stackuse-canary", 0);
	if (canary_fd < 0 || ftruncate(canary_fd, 2 * 4096) < 0)
		die("memfd_create");
	canary = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, canary_fd, 0);
	if (canary == MAP_FAILED)
		die("mmap the canary");
	memset(canary, CANARY, 4096);
	info = (struct guard_info *)(void *)(canary + 4096);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		pthread_t t;
		start(&t, NULL, overflow_thread, NULL);
		pthread_join(t, NULL);
		_exit(3); /* never: the overflow ends the process */
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	for (int k = 0; k < 4096; k++)
		bad += canary[k] != CANARY;
	if (WIFSIGNALED(status))
		printf("guard: the child died of signal %d\n", WTERMSIG(status));
	else
		printf("guard: the child exited %d\n", WEXITSTATUS(status));
	printf("guard: %s\n", info->guarded ? "a PROT_NONE page right below the stack" : "no guard page below the stack");
	printf("guard: canary %s, %d bytes changed\n", !info->placed ? "not placed" : bad ? "changed" : "intact", bad);
	printf("guard: stack %s, %zu bytes\n",
	       info->lo % (2 * MB) == 0 && info->size % (2 * MB) == 0 ? "2m-aligned" : "not 2m-aligned",
	       (size_t)info->size);
}

/* ---------- reuse ---------- */

static sem_t done;

static int count_maps(void)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		die("fopen /proc/self/maps");
	while (fgets(line, sizeof line, f))
		n++;
	fclose(f);
	return n;
}

static void *short_thread(void *arg)
{
	volatile unsigned char buf[64 * KB];

	memset((void *)buf, (int)(uintptr_t)arg, sizeof buf);
	sem_post(&done);
	return (void *)(uintptr_t)(buf[1234] + 1);
}

static void reuse(void)
{
	pthread_attr_t attr;
	int before, after;
	pthread_t t;
	void *ret;

	if (sem_init(&done, 0, 0))
		die("sem_init");
	/* One of each first, so that what is mapped once is in "before". */
	start(&t, NULL, short_thread, (void *)1);
	pthread_join(t, NULL);
	sem_wait(&done);
	before = count_maps();
	for (uintptr_t i = 0; i < 200; i++) {
		start(&t, NULL, short_thread, (void *)(i & 0x7f));
		int r = pthread_join(t, &ret);
		if (r)
			die_err("pthread_join", r);
		if ((uintptr_t)ret != (i & 0x7f) + 1)
			die("a joined thread returned another value");
		sem_wait(&done);
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (uintptr_t i = 0; i < 100; i++) {
		start(&t, &attr, short_thread, (void *)i);
		sem_wait(&done);
	}
	pthread_attr_destroy(&attr);
	for (uintptr_t i = 0; i < 100; i++) {
		start(&t, NULL, short_thread, (void *)i);
		int r = pthread_detach(t);
		if (r)
			die_err("pthread_detach", r);
		sem_wait(&done);
	}
	usleep(100 * 1000); /* the last detached threads end */
	after = count_maps();
	printf("reuse: 400 threads ran; %d more mappings after them\n", after - before);
}

/* ---------- fork from a thread ---------- */

static void *child_thread(void *arg)
{
	return (void *)(uintptr_t)recurse(64, (uintptr_t)arg);
}

static void *fork_thread(void *arg)
{
	int status;
	pid_t pid;

	(void)arg;
	if (recurse(256, 7) != flat(256, 7))
		die("recursion before fork");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		pthread_t t;
		void *ret;
		if (recurse(512, 9) != flat(512, 9))
			_exit(1);
		if (pthread_create(&t, NULL, child_thread, (void *)11) || pthread_join(t, &ret))
			_exit(2);
		_exit((uintptr_t)ret == (uintptr_t)flat(64, 11) ? 0 : 3);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	return (void *)(intptr_t)status;
}

static void fork_from_thread(void)
{
	pthread_t t;
	void *ret;
	int status;

	start(&t, NULL, fork_thread, NULL);
	pthread_join(t, &ret);
	status = (int)(intptr_t)ret;
	if (WIFEXITED(status))
		printf("fork: the child exited %d\n", WEXITSTATUS(status));
	else
		printf("fork: the child died of signal %d\n", WTERMSIG(status));
}

/* ---------- a stack of the program's own ---------- */

static char *own_lo;
static size_t own_size = 256 * KB;

static void *own_thread(void *arg)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	char here;

	(void)arg;
	if (pthread_getattr_np(pthread_self(), &attr))
		die("pthread_getattr_np");
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	return (void *)(uintptr_t)(&here >= own_lo && &here < own_lo + own_size &&
				   addr == own_lo && size == own_size);
}

static void own(void)
{
	pthread_attr_t attr;
	pthread_t t;
	void *ret;

	own_lo = mmap(NULL, own_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (own_lo == MAP_FAILED)
		die("mmap");
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, own_lo, own_size);
	start(&t, &attr, own_thread, NULL);
	pthread_attr_destroy(&attr);
	pthread_join(t, &ret);
	printf("own stack: %s\n", ret ? "kept" : "not used");
}

/* ---------- attributes as asked ---------- */

static int one_cpu = -1; /* a CPU this process may run on */

static void *report_thread(void *arg)
{
	cpu_set_t set;
	sigset_t mask;
	pthread_attr_t attr;
	size_t size, guard;
	void *addr;
	int n = 0;

	if (pthread_getaffinity_np(pthread_self(), sizeof set, &set))
		die("pthread_getaffinity_np");
	for (int c = 0; c < CPU_SETSIZE; c++)
		n += CPU_ISSET(c, &set);
	pthread_sigmask(SIG_BLOCK, NULL, &mask);
	if (pthread_getattr_np(pthread_self(), &attr))
		die("pthread_getattr_np");
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	/* What pthread_getattr_np says of the guard is glibc's bookkeeping (0 for a
	 * stack glibc did not map): what is below the stack is what counts. */
	guard = guard_below((uintptr_t)addr);
	printf("attrs %s: %d cpus%s, SIGUSR1 %s, guard %s\n", (const char *)arg, n,
	       n == 1 && CPU_ISSET(one_cpu, &set) ? " (the one asked)" : "",
	       sigismember(&mask, SIGUSR1) ? "blocked" : "not blocked",
	       !guard ? "none" : guard >= 64 * KB ? "64 KiB or more" : "a page or more");
	if (!strcmp(arg, "detached"))
		sem_post(&done);
	if (!strcmp(arg, "exit"))
		pthread_exit((void *)42);
	if (!strcmp(arg, "cancel"))
		for (;;)
			pause();
	return (void *)7;
}

static void *join_one(const pthread_attr_t *attr, const char *name)
{
	pthread_t t;
	void *ret;
	int r;

	start(&t, attr, report_thread, (void *)name);
	if (!strcmp(name, "cancel")) {
		usleep(50 * 1000);
		pthread_cancel(t);
	}
	r = pthread_join(t, &ret);
	if (r)
		die_err("pthread_join", r);
	return ret;
}

static void attrs(void)
{
	pthread_attr_t attr;
	cpu_set_t set, mine;
	sigset_t mask;
	pthread_t t;
	void *ret;
	int r;

	if (sem_init(&done, 0, 0))
		die("sem_init");
	if (sched_getaffinity(0, sizeof mine, &mine))
		die("sched_getaffinity");
	for (int c = CPU_SETSIZE - 1; c >= 0; c--)
		if (CPU_ISSET(c, &mine))
			one_cpu = c;
	printf("attrs default returned %ld\n", (long)(intptr_t)join_one(NULL, "default"));
	ret = join_one(NULL, "exit");
	printf("attrs pthread_exit gave %ld\n", (long)(intptr_t)ret);
	ret = join_one(NULL, "cancel");
	printf("attrs cancelled: %s\n", ret == PTHREAD_CANCELED ? "PTHREAD_CANCELED" : "other");

	pthread_attr_init(&attr);
	CPU_ZERO(&set);
	CPU_SET(one_cpu, &set);
	if (pthread_attr_setaffinity_np(&attr, sizeof set, &set))
		die("pthread_attr_setaffinity_np");
	join_one(&attr, "affinity");
	pthread_attr_destroy(&attr);

	pthread_attr_init(&attr);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	if (pthread_attr_setsigmask_np(&attr, &mask))
		die("pthread_attr_setsigmask_np");
	pthread_attr_setguardsize(&attr, 64 * KB);
	join_one(&attr, "sigmask+guard");
	pthread_attr_destroy(&attr);

	pthread_attr_init(&attr);
	pthread_attr_setguardsize(&attr, 0);
	join_one(&attr, "noguard");
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	start(&t, &attr, report_thread, (void *)"detached");
	r = pthread_join(t, NULL);
	sem_wait(&done); /* its line first */
	printf("attrs joining a detached thread: %s\n", r == EINVAL ? "EINVAL" : "other");
	pthread_attr_destroy(&attr);

	/* A thread with no attributes inherits its creator's affinity. */
	if (sched_setaffinity(0, sizeof set, &set))
		die("sched_setaffinity");
	join_one(NULL, "inherited");
}

/* ---------- what a thread's stack costs: idle threads, one deep one ---------- */

/* Bytes resident and on huge pages (smaps' Rss, AnonHugePages) of the writable
 * mappings in [lo, hi): a thread's stack, as pthread_getattr_np gives it. */
static void stack_cost(uintptr_t lo, uintptr_t hi, uint64_t *rss, uint64_t *huge)
{
	char line[512], perms[8];
	unsigned long a, b, kb;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		die("fopen /proc/self/smaps");
	*rss = *huge = 0;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%lx-%lx %7s", &a, &b, perms) == 3)
			in = a < hi && b > lo && perms[1] == 'w';
		else if (in && sscanf(line, "Rss: %lu kB", &kb) == 1)
			*rss += kb * KB;
		else if (in && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			*huge += kb * KB;
	}
	fclose(f);
}

static uint64_t process_rss(void)
{
	char line[256];
	unsigned long kb = 0;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		die("fopen /proc/self/status");
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * KB;
}

/* The range of the calling thread's stack. */
static void my_stack(uintptr_t *lo, uintptr_t *hi)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &attr))
		die("pthread_getattr_np");
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	*lo = (uintptr_t)addr;
	*hi = (uintptr_t)addr + size;
}

static void *nothing_thread(void *arg) { return arg; }

/* One more thread started and joined: where a runtime may look at the stacks. */
static void one_more(void)
{
	pthread_t t;

	start(&t, NULL, nothing_thread, NULL);
	if (pthread_join(t, NULL))
		die("pthread_join");
}

#define IDLE_MAX 256
#define IDLE_TOUCH (16 * KB)

static pthread_barrier_t idle_in, idle_out;
static uintptr_t idle_lo[IDLE_MAX], idle_hi[IDLE_MAX];

static void *idle_thread(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	volatile unsigned char buf[IDLE_TOUCH];

	for (size_t k = 0; k < sizeof buf; k += 512)
		buf[k] = (unsigned char)(i + k);
	my_stack(&idle_lo[i], &idle_hi[i]);
	pthread_barrier_wait(&idle_in);
	pthread_barrier_wait(&idle_out);
	return (void *)(uintptr_t)buf[512];
}

static void idle(int n)
{
	pthread_t t[IDLE_MAX];
	uint64_t rss = 0, huge = 0, r, h, prss;

	if (n < 1 || n > IDLE_MAX)
		die("idle: 1 to 256 threads");
	if (pthread_barrier_init(&idle_in, NULL, (unsigned)n + 1) ||
	    pthread_barrier_init(&idle_out, NULL, (unsigned)n + 1))
		die("pthread_barrier_init");
	for (int i = 0; i < n; i++)
		start(&t[i], NULL, idle_thread, (void *)(uintptr_t)i);
	pthread_barrier_wait(&idle_in);
	one_more();
	for (int i = 0; i < n; i++) {
		stack_cost(idle_lo[i], idle_hi[i], &r, &h);
		rss += r;
		huge += h;
	}
	prss = process_rss();
	printf("idle: %d threads, %lu KiB touched each; stacks %llu KiB resident, %llu KiB huge; "
	       "process %llu KiB resident\n", n, (unsigned long)(IDLE_TOUCH / KB),
	       (unsigned long long)(rss / KB), (unsigned long long)(huge / KB),
	       (unsigned long long)(prss / KB));
	pthread_barrier_wait(&idle_out);
	for (int i = 0; i < n; i++)
		if (pthread_join(t[i], NULL))
			die("pthread_join");
}

static sem_t at_depth;
static int sweep_go[2];
static uintptr_t sweep_lo, sweep_hi;

static uint64_t sweep_down(unsigned d, uint64_t s)
{
	volatile unsigned char buf[FRAME];
	uint64_t below = 0, sum = 0;

	for (unsigned k = 0; k < FRAME; k++)
		buf[k] = byte_of(s, k, d);
	if (d)
		below = sweep_down(d - 1, next_seed(s));
	else {
		char c;
		sem_post(&at_depth);
		if (read(sweep_go[0], &c, 1) != 1)
			die("read the go-ahead");
	}
	for (unsigned k = 0; k < FRAME; k++)
		sum += buf[k];
	return (below * 31) ^ sum ^ d;
}

static void *sweep_thread(void *arg)
{
	my_stack(&sweep_lo, &sweep_hi);
	return (void *)(uintptr_t)sweep_down(BIG_DEPTH, (uintptr_t)arg);
}

static void sweep(void)
{
	pthread_attr_t attr;
	pthread_t t;
	uint64_t rss, huge, prss;
	void *ret;

	if (sem_init(&at_depth, 0, 0) || pipe(sweep_go))
		die("sem_init or pipe");
	pthread_attr_init(&attr);
	if (pthread_attr_setstacksize(&attr, 8 * MB))
		die("pthread_attr_setstacksize");
	start(&t, &attr, sweep_thread, (void *)77);
	pthread_attr_destroy(&attr);
	while (sem_wait(&at_depth) && errno == EINTR)
		;
	stack_cost(sweep_lo, sweep_hi, &rss, &huge);
	printf("sweep: %lu KiB of frames, stack %llu KiB resident, %llu KiB huge\n",
	       (unsigned long)((BIG_DEPTH + 1) * FRAME / KB), (unsigned long long)(rss / KB),
	       (unsigned long long)(huge / KB));
	one_more();
	stack_cost(sweep_lo, sweep_hi, &rss, &huge);
	prss = process_rss();
	printf("sweep: after one more thread, stack %llu KiB resident, %llu KiB huge; "
	       "process %llu KiB resident\n", (unsigned long long)(rss / KB),
	       (unsigned long long)(huge / KB), (unsigned long long)(prss / KB));
	if (write(sweep_go[1], "g", 1) != 1)
		die("write the go-ahead");
	if (pthread_join(t, &ret))
		die("pthread_join");
	if ((uintptr_t)ret != (uintptr_t)flat(BIG_DEPTH, 77))
		die("the deep thread's sum");
	printf("sweep: the sum as without recursion\n");
	/* Its stack, kept for the next thread (glibc's or the runtime's cache). */
	stack_cost(sweep_lo, sweep_hi, &rss, &huge);
	printf("sweep: joined, its stack %llu KiB resident\n", (unsigned long long)(rss / KB));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "nothp") && argc > 2) {
		/* Inherited across exec: the process starts with THP off for itself. */
		if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
			die("prctl PR_SET_THP_DISABLE");
		execv("/proc/self/exe", (char *[]){ argv[0], argv[2], NULL });
		die("execv");
	}
	if (!strcmp(mode, "deep"))
		deep(false, false);
	else if (!strcmp(mode, "hold"))
		deep(true, false);
	else if (!strcmp(mode, "bigdeep"))
		deep(false, true);
	else if (!strcmp(mode, "bighold"))
		deep(true, true);
	else if (!strcmp(mode, "idle") && argc > 2)
		idle(atoi(argv[2]));
	else if (!strcmp(mode, "sweep"))
		sweep();
	else if (!strcmp(mode, "guard"))
		guard();
	else if (!strcmp(mode, "reuse"))
		reuse();
	else if (!strcmp(mode, "fork"))
		fork_from_thread();
	else if (!strcmp(mode, "own"))
		own();
	else if (!strcmp(mode, "attrs"))
		attrs();
	else {
		fprintf(stderr, "usage: stackuse [nothp] deep|hold|bigdeep|bighold|guard|reuse|fork|"
			"own|attrs|sweep|idle N\n");
		return 2;
	}
	return 0;
}
