/* textuse.c - a program with 18 MiB of text for superpage run --text: 32 generated
 * functions, called in an order that depends on the values they return, each checked
 * against a C model of what it computes; so the output says the moved code ran and
 * ran right. Built twice: textuse, linked with 2 MiB segment alignment, and
 * textuse-plain, linked as usual (only the aligned interior of its text can move).
 *
 * Usage: textuse MODE [CALLS]
 *   calls    the call chain; prints its value and "ok" (exit 1 if the model differs)
 *   fork     the chain in a forked child, then in the parent
 *   exec     the chain, then exec of itself with "calls"
 *   dlopen   dlopen libm, call cos through it, then the chain
 *   wait     the chain, "ready", then blocks until stdin ends (for superpage stat)
 *   smaps    the chain, then the bytes of the functions' mappings that are resident
 *            and on huge pages: "text=N huge=N hugetlb=N filepmd=N" (filepmd: huge
 *            pages of the page cache, mapped from the file)
 *   all      the chain, 4 threads that recurse 2.5 MiB deep (--stacks makes a stack
 *            huge below its top 2 MiB), a 4 MiB SysV segment
 *            and a 4 MiB MAP_SHARED|MAP_ANONYMOUS mapping shared with a child that
 *            writes them; "ready" while the threads wait at their deepest frame,
 *            until stdin ends (for superpage stat of text, stack and shm at once)
 *   data     checks 5 MiB of initialized data and 8 MiB of bss (which --text moves
 *            to THP), writes them, forks a child that checks and writes its copy,
 *            checks the parent's is its own; then "data=N datahuge=N" from smaps */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NFN 32
#define REPS 65535
#define DATA_SIZE (5u << 20)
#define BSS_SIZE (8u << 20)

/* Mostly zero, so the file stays readable; the nonzero bytes are what is checked. */
static unsigned char big_data[DATA_SIZE] = { [0] = 1, [4096] = 2, [3u << 20] = 7,
					     [DATA_SIZE - 1] = 9 };
static unsigned char big_bss[BSS_SIZE];

/* Function n: REPS times x = rol(x + 7n + 1, n % 13 + 1). */
__asm__("	.text\n"
	"	.macro tfn n\n"
	"	.globl tfn\\n\n"
	"	.type tfn\\n,@function\n"
	"	.p2align 6\n"
	"tfn\\n:\n"
	"	mov %rdi, %rax\n"
	"	.rept 65535\n"
	"	add $(\\n*7+1), %rax\n"
	"	rol $((\\n % 13) + 1), %rax\n"
	"	.endr\n"
	"	ret\n"
	"	.size tfn\\n, .-tfn\\n\n"
	"	.endm\n"
	"	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,"
	"28,29,30,31\n"
	"	tfn \\n\n"
	"	.endr\n");

#define DECL(n) uint64_t tfn##n(uint64_t);
DECL(0) DECL(1) DECL(2) DECL(3) DECL(4) DECL(5) DECL(6) DECL(7) DECL(8) DECL(9) DECL(10)
DECL(11) DECL(12) DECL(13) DECL(14) DECL(15) DECL(16) DECL(17) DECL(18) DECL(19) DECL(20)
DECL(21) DECL(22) DECL(23) DECL(24) DECL(25) DECL(26) DECL(27) DECL(28) DECL(29) DECL(30)
DECL(31)

static uint64_t (*const fns[NFN])(uint64_t) = {
	tfn0, tfn1, tfn2, tfn3, tfn4, tfn5, tfn6, tfn7, tfn8, tfn9, tfn10, tfn11, tfn12, tfn13,
	tfn14, tfn15, tfn16, tfn17, tfn18, tfn19, tfn20, tfn21, tfn22, tfn23, tfn24, tfn25,
	tfn26, tfn27, tfn28, tfn29, tfn30, tfn31,
};

static uint64_t model(unsigned n, uint64_t x)
{
	unsigned r = n % 13 + 1;
	for (int i = 0; i < REPS; i++) {
		x += 7ull * n + 1;
		x = x << r | x >> (64 - r);
	}
	return x;
}

/* The chain: each call's result picks the next function. 0 if the code and the
 * model agree all along, else 1; the value in *out. */
static int chain(unsigned calls, uint64_t *out)
{
	uint64_t x = 0x243F6A8885A308D3ull, m = x;
	for (unsigned i = 0; i < calls; i++) {
		unsigned n = (unsigned)(x >> 7) % NFN;
		x = fns[n](x) ^ i;
		m = model(n, m) ^ i;
		if (x != m) {
			fprintf(stderr, "textuse: call %u (tfn%u) gave %llx, the model %llx\n", i, n,
				(unsigned long long)x, (unsigned long long)m);
			return 1;
		}
	}
	*out = x;
	return 0;
}

static int run_chain(unsigned calls)
{
	uint64_t v;
	if (chain(calls, &v))
		return 1;
	printf("chain %u %016llx ok\n", calls, (unsigned long long)v);
	fflush(stdout);
	return 0;
}

/* Sets the data and bss to a pattern of seed, or checks they hold it. */
static int data_pattern(unsigned seed, int check)
{
	for (unsigned i = 0; i < DATA_SIZE; i += 512) {
		unsigned char want = (unsigned char)(i * 31 + seed);
		if (!check)
			big_data[i] = want;
		else if (big_data[i] != want)
			return 1;
	}
	for (unsigned i = 0; i < BSS_SIZE; i += 1024) {
		unsigned char want = (unsigned char)(i * 17 + seed);
		if (!check)
			big_bss[i] = want;
		else if (big_bss[i] != want)
			return 1;
	}
	return 0;
}

static int data_test(void)
{
	int st;
	pid_t pid;

	for (unsigned i = 0; i < DATA_SIZE; i++) {
		unsigned char want = i == 0 ? 1 : i == 4096 ? 2 : i == 3u << 20 ? 7 :
				     i == DATA_SIZE - 1 ? 9 : 0;
		if (big_data[i] != want) {
			fprintf(stderr, "textuse: data[%u] is %u at start, want %u\n", i, big_data[i], want);
			return 1;
		}
	}
	for (unsigned i = 0; i < BSS_SIZE; i++)
		if (big_bss[i]) {
			fprintf(stderr, "textuse: bss[%u] is %u at start\n", i, big_bss[i]);
			return 1;
		}
	data_pattern(1, 0);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		if (data_pattern(1, 1))
			_exit(3);
		data_pattern(2, 0);
		_exit(data_pattern(2, 1) ? 4 : 0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "textuse: the child's data was wrong (status %#x)\n", st);
		return 1;
	}
	if (data_pattern(1, 1)) {
		fprintf(stderr, "textuse: the parent's data changed with the child's\n");
		return 1;
	}
	printf("data ok\n");
	return 0;
}

/* ---------- all: text, thread stacks and shared memory at once ---------- */

#define SHM_BYTES (4u << 20)
#define DEPTH 2600 /* frames of 1 KiB */

static pthread_barrier_t deep, done;

/* Recurses DEPTH frames, each with 1 KiB of its own; at the bottom waits until the
 * main thread has been looked at. Returns a sum that needs every frame. */
static unsigned recurse(unsigned d, unsigned seed)
{
	volatile unsigned char frame[1024];
	unsigned sum = 0;
	for (unsigned i = 0; i < sizeof frame; i++)
		frame[i] = (unsigned char)(seed + d + i);
	if (d + 1 < DEPTH)
		sum = recurse(d + 1, seed);
	else {
		pthread_barrier_wait(&deep);
		pthread_barrier_wait(&done);
	}
	for (unsigned i = 0; i < sizeof frame; i += 64)
		sum += frame[i];
	return sum;
}

static void *thread_main(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	return (void *)(uintptr_t)recurse(0, seed);
}

/* A child writes both regions; the parent reads what it wrote. */
static int shared_test(unsigned char *seg, unsigned char *map)
{
	int st;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		for (unsigned i = 0; i < SHM_BYTES; i += 4096) {
			seg[i] = (unsigned char)(i >> 12);
			map[i] = (unsigned char)(~i >> 12);
		}
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	for (unsigned i = 0; i < SHM_BYTES; i += 4096)
		if (seg[i] != (unsigned char)(i >> 12) || map[i] != (unsigned char)(~i >> 12))
			return 1;
	return 0;
}

static int all_test(unsigned calls)
{
	enum { NT = 4 };
	pthread_t t[NT];
	char buf[64];
	int id = shmget(IPC_PRIVATE, SHM_BYTES, IPC_CREAT | 0600);
	unsigned char *seg = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
	unsigned char *map = mmap(NULL, SHM_BYTES, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int bad = 0;

	if (id >= 0)
		shmctl(id, IPC_RMID, NULL); /* gone when detached, whatever happens */
	if (seg == (void *)-1 || map == MAP_FAILED) {
		perror("textuse: shared memory");
		return 1;
	}
	if (run_chain(calls))
		return 1;
	if (shared_test(seg, map)) {
		fprintf(stderr, "textuse: the parent does not see what the child wrote\n");
		return 1;
	}
	printf("shared ok\n");
	pthread_barrier_init(&deep, NULL, NT + 1);
	pthread_barrier_init(&done, NULL, NT + 1);
	for (int i = 0; i < NT; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)(uintptr_t)(i + 1)))
			return 1;
	pthread_barrier_wait(&deep);
	printf("ready\n");
	fflush(stdout);
	while (fread(buf, 1, sizeof buf, stdin) > 0)
		;
	pthread_barrier_wait(&done);
	for (int i = 0; i < NT; i++) {
		void *r;
		pthread_join(t[i], &r);
		printf("thread %d sum %u\n", i, (unsigned)(uintptr_t)r);
		bad |= r == NULL;
	}
	shmdt(seg);
	munmap(map, SHM_BYTES);
	return bad;
}

/* Resident and huge bytes of the mappings that hold the functions, or (data) the
 * initialized data and bss. */
static int text_smaps(int data)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	unsigned long lo = 0, hi = 0, kb;
	unsigned long long text = 0, huge = 0, hugetlb = 0, filepmd = 0;
	int in = 0;

	if (!f)
		return 1;
	while (fgets(line, sizeof line, f)) {
		/* A mapping's header; no field name is hex digits and a '-'. */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
			in = 0;
			for (int n = 0; n < NFN && !data; n++) {
				unsigned long a = (unsigned long)(uintptr_t)fns[n];
				in |= a >= lo && a < hi;
			}
			for (unsigned i = 0; i < DATA_SIZE + BSS_SIZE && data; i += 4096) {
				unsigned long a = (unsigned long)(uintptr_t)(i < DATA_SIZE ?
					big_data + i : big_bss + (i - DATA_SIZE));
				in |= a >= lo && a < hi;
			}
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Rss: %lu kB", &kb) == 1)
			text += kb << 10;
		else if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			huge += kb << 10;
		else if (sscanf(line, "FilePmdMapped: %lu kB", &kb) == 1) {
			huge += kb << 10;
			filepmd += kb << 10;
		}
		else if (sscanf(line, "Private_Hugetlb: %lu kB", &kb) == 1) {
			huge += kb << 10;
			hugetlb += kb << 10;
			text += kb << 10; /* hugetlb is not in Rss */
		}
	}
	fclose(f);
	if (data)
		printf("data=%llu datahuge=%llu\n", text, huge);
	else
		printf("text=%llu huge=%llu hugetlb=%llu filepmd=%llu\n", text, huge, hugetlb, filepmd);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "calls";
	unsigned calls = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 200;

	if (!strcmp(mode, "calls"))
		return run_chain(calls);
	if (!strcmp(mode, "fork")) {
		int st;
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(run_chain(calls));
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "textuse: the child ended with status %#x\n", st);
			return 1;
		}
		return run_chain(calls);
	}
	if (!strcmp(mode, "exec")) {
		char n[16];
		if (run_chain(calls))
			return 1;
		snprintf(n, sizeof n, "%u", calls);
		execl("/proc/self/exe", argv[0], "calls", n, (char *)NULL);
		perror("textuse: exec");
		return 1;
	}
	if (!strcmp(mode, "dlopen")) {
		void *m = dlopen("libm.so.6", RTLD_NOW);
		double (*c)(double) = m ? (double (*)(double))dlsym(m, "cos") : NULL;
		if (!c || c(0.0) != 1.0) {
			fprintf(stderr, "textuse: dlopen libm: %s\n", dlerror());
			return 1;
		}
		printf("cos(0) = %g\n", c(0.0));
		return run_chain(calls);
	}
	if (!strcmp(mode, "wait")) {
		char buf[64];
		if (run_chain(calls))
			return 1;
		printf("ready\n");
		fflush(stdout);
		while (fread(buf, 1, sizeof buf, stdin) > 0)
			;
		return 0;
	}
	if (!strcmp(mode, "smaps"))
		return run_chain(calls) || text_smaps(0);
	if (!strcmp(mode, "all"))
		return all_test(calls);
	if (!strcmp(mode, "data"))
		return data_test() || text_smaps(1);
	fprintf(stderr, "usage: textuse calls|fork|exec|dlopen|wait|smaps|data|all [CALLS]\n");
	return 2;
}
