/* execheap.c - writable and executable heaps as a program sees them (SBCL's dynamic
 * space, a JIT's code cache): mapped by mmap and by syscall(SYS_mmap), at no address,
 * at a free hint and at a taken one, over a fixed place; code written into them and
 * run; a 4 KiB piece flipped to read-execute and back to read-write (W^X) and run and
 * written there; pieces unmapped; the code run again in a forked child. stdout: what
 * the program saw, the same plain and under superpage run. stderr, from
 * /proc/self/smaps and the addresses: "exec_advised=A of N exec_aligned=L of 3" (A of the
 * N mappings advised MADV_HUGEPAGE, L of the 3 the kernel or the runtime placed
 * freely on 2 MiB boundaries). Status 1 and a FAILED line at the first wrong result. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MB (1ul << 20)
#define RWX (PROT_READ | PROT_WRITE | PROT_EXEC)
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)

static unsigned checks;

static void check(bool ok, const char *what)
{
	if (!ok) {
		printf("execheap: FAILED: %s (errno %d)\n", what, errno);
		exit(1);
	}
	checks++;
}

/* Writes at p a function that returns v, and runs it. */
static int run_at(unsigned char *p, int v)
{
#if defined(__x86_64__)
	p[0] = 0xb8; /* mov eax, imm32; ret */
	memcpy(p + 1, &v, 4);
	p[5] = 0xc3;
#elif defined(__aarch64__)
	uint32_t code[2] = { 0x52800000u | ((uint32_t)v & 0xffff) << 5, 0xd65f03c0u };
	memcpy(p, code, sizeof code);
#else
#error "execheap: no code for this machine"
#endif
	__builtin___clear_cache((char *)p, (char *)p + 16);
	return ((int (*)(void))(uintptr_t)p)();
}

/* Runs the function already at p. */
static int call_at(unsigned char *p)
{
	return ((int (*)(void))(uintptr_t)p)();
}

/* Whether the mapping holding a has "hg" (MADV_HUGEPAGE) in its VmFlags; -1 unread. */
static int advised(const void *a)
{
	static char buf[4 << 20];
	FILE *f = fopen("/proc/self/smaps", "r");
	bool in = false;
	int r = -1;
	if (!f)
		return -1;
	while (fgets(buf, sizeof buf, f)) {
		uintptr_t lo, hi;
		if (sscanf(buf, "%lx-%lx ", &lo, &hi) == 2)
			in = (uintptr_t)a >= lo && (uintptr_t)a < hi;
		else if (in && !strncmp(buf, "VmFlags:", 8)) {
			r = strstr(buf, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return r;
}

static void fill(unsigned char *p, size_t len, unsigned char seed)
{
	for (size_t i = 0; i < len; i += 512)
		p[i] = (unsigned char)(seed + i / 512);
}

static bool holds(const unsigned char *p, size_t len, unsigned char seed)
{
	for (size_t i = 0; i < len; i += 512)
		if (p[i] != (unsigned char)(seed + i / 512))
			return false;
	return true;
}

static bool zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 256)
		if (p[i])
			return false;
	return true;
}

int main(void)
{
	int n_adv = 0, n_al = 0, n = 0;

	/* A: 32 MiB at no address, touched whole; code at its start, inside, at its end. */
	unsigned char *a = mmap(NULL, 32 * MB, RWX, ANON, -1, 0);
	check(a != MAP_FAILED, "mmap of 32 MiB rwx");
	check(zero(a, 32 * MB), "new rwx memory reads zero");
	fill(a, 32 * MB, 1);
	check(run_at(a + 8, 11) == 11, "code at the start runs");
	check(run_at(a + 5 * MB + 100, 12) == 12, "code inside runs");
	check(run_at(a + 32 * MB - 64, 13) == 13, "code at the end runs");
	n_al += ((uintptr_t)a & (2 * MB - 1)) == 0;
	n_adv += advised(a) == 1;
	n++;

	/* W^X: a 4 KiB page flipped to read-execute (its code runs), then read-write
	 * (written, not run), then back; its neighbours keep theirs. */
	unsigned char *w = a + 3 * MB + 4096;
	check(run_at(w + 16, 21) == 21, "code in the page to flip runs");
	check(mprotect(w, 4096, PROT_READ | PROT_EXEC) == 0, "mprotect of 4 KiB to r-x");
	check(call_at(w + 16) == 21, "code in the r-x page runs");
	check(mprotect(w, 4096, PROT_READ | PROT_WRITE) == 0, "mprotect of 4 KiB to rw-");
	memset(w + 1024, 0x5a, 1024);
	check(w[1024] == 0x5a && w[2047] == 0x5a, "the rw- page is written");
	check(mprotect(w, 4096, RWX) == 0, "mprotect of 4 KiB back to rwx");
	check(run_at(w + 64, 22) == 22, "code in the page flipped back runs");
	check(run_at(w - 64, 23) == 23 && run_at(w + 4096 + 8, 24) == 24,
	      "code beside the flipped page runs");
	/* The same across a 2 MiB boundary, 64 KiB of it. */
	check(mprotect(a + 4 * MB - 32768, 65536, PROT_READ | PROT_EXEC) == 0,
	      "mprotect of 64 KiB across a 2 MiB boundary to r-x");
	check(holds(a + 4 * MB - 32768 + 512, 512, (unsigned char)(1 + (4 * MB - 32768 + 512) / 512)),
	      "r-x pages keep their bytes");
	check(mprotect(a + 4 * MB - 32768, 65536, RWX) == 0, "and back to rwx");

	/* A piece unmapped: its neighbours keep their bytes and run. */
	check(munmap(a + 7 * MB + 8192, 4096) == 0, "munmap of 4 KiB inside");
	check(holds(a + 7 * MB, 8192, (unsigned char)(1 + 7 * MB / 512)) &&
	      holds(a + 7 * MB + 12288, 8192, (unsigned char)(1 + (7 * MB + 12288) / 512)),
	      "the pages beside the hole keep their bytes");

	/* B: by syscall(SYS_mmap), as SBCL maps its heap; changed and unmapped the same way. */
	long r = syscall(SYS_mmap, 0L, 16 * MB, RWX, ANON | MAP_NORESERVE, -1L, 0L);
	check(r != -1, "syscall(SYS_mmap) of 16 MiB rwx");
	unsigned char *b = (unsigned char *)r;
	check(zero(b, 16 * MB), "new rwx memory from syscall reads zero");
	fill(b, 16 * MB, 2);
	check(run_at(b + 2 * MB + 32, 31) == 31, "code in the syscall mapping runs");
	check(syscall(SYS_mprotect, b + 2 * MB, 4096L, PROT_READ | PROT_EXEC) == 0,
	      "syscall(SYS_mprotect) of 4 KiB to r-x");
	check(call_at(b + 2 * MB + 32) == 31, "code in it still runs");
	check(syscall(SYS_madvise, b + 8 * MB, 2 * MB, MADV_DONTNEED) == 0 &&
	      zero(b + 8 * MB, 2 * MB), "syscall(SYS_madvise) DONTNEED zeroes the range");
	check(syscall(SYS_mmap, 1L, 4096L, RWX, ANON | MAP_FIXED, -1L, 0L) == -1 && errno == EINVAL,
	      "syscall(SYS_mmap) at a bad fixed address: -1 and EINVAL");
	n_al += ((uintptr_t)b & (2 * MB - 1)) == 0;
	n_adv += advised(b) == 1;
	n++;

	/* C: at a free hint (found by reserving and letting go): honoured. */
	unsigned char *probe = mmap(NULL, 64 * MB, PROT_NONE, ANON | MAP_NORESERVE, -1, 0);
	check(probe != MAP_FAILED, "a probe reservation");
	unsigned char *hint = (unsigned char *)(((uintptr_t)probe + 2 * MB - 1) & ~(2 * MB - 1));
	check(munmap(probe, 64 * MB) == 0, "the probe let go");
	unsigned char *c = mmap(hint, 16 * MB, RWX, ANON | MAP_NORESERVE, -1, 0);
	check(c == hint, "an rwx mapping at a free hint lands there");
	fill(c, 16 * MB, 3);
	check(run_at(c + MB, 41) == 41, "code at the hinted mapping runs");
	n_adv += advised(c) == 1;
	n++;

	/* D: at a taken hint (A's address): placed elsewhere, A untouched. */
	unsigned char *d = mmap(a, 16 * MB, RWX, ANON, -1, 0);
	check(d != MAP_FAILED && d != a, "an rwx mapping at a taken hint lands elsewhere");
	check(d + 16 * MB <= a || d >= a + 32 * MB, "it does not overlap what holds the hint");
	check(holds(a, 3 * MB, 1) && call_at(a + 5 * MB + 100) == 12,
	      "the mapping at the hint keeps its bytes and code");
	fill(d, 16 * MB, 4);
	check(run_at(d + 3 * MB, 51) == 51, "code in it runs");
	n_al += ((uintptr_t)d & (2 * MB - 1)) == 0;
	n_adv += advised(d) == 1;
	n++;

	/* E: MAP_FIXED rwx over part of C, as SBCL maps its core over its heap. */
	unsigned char *e = mmap(c + 4 * MB, 4 * MB, RWX, ANON | MAP_FIXED, -1, 0);
	check(e == c + 4 * MB, "MAP_FIXED rwx over part of a mapping");
	check(zero(e, 4 * MB) && holds(c + 8 * MB, 4 * MB, (unsigned char)(3 + 8 * MB / 512)),
	      "the fixed part reads zero, the rest keeps its bytes");
	check(run_at(e + 100, 61) == 61, "code in the fixed part runs");

	/* A forked child runs the code and reads the bytes it inherited. */
	pid_t pid = fork();
	if (pid == 0)
		_exit(call_at(a + 5 * MB + 100) == 12 && call_at(b + 2 * MB + 32) == 31 &&
				      holds(d, 3 * MB, 4) && run_at(a + 9 * MB, 71) == 71
			      ? 0
			      : 1);
	int st;
	check(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "a forked child runs the code and reads the bytes");

	check(syscall(SYS_munmap, b, 16 * MB) == 0, "syscall(SYS_munmap) of B");
	check(munmap(d, 16 * MB) == 0 && munmap(c, 16 * MB) == 0, "munmap of C and D");
	fprintf(stderr, "exec_advised=%d of %d exec_aligned=%d of 3\n", n_adv, n, n_al);
	/* A stays, touched, for --stats to count. */
	printf("execheap: %u checks passed\n", checks);
	return 0;
}
