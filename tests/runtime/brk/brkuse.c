/* brkuse.c - the program break as old programs and custom allocators use it: sbrk
 * and brk moving it up and down by odd amounts, memory above a lowered break gone
 * and zero when the break comes back, the errors, fork and threads. Under superpage
 * run the break is emulated, and every result must be the kernel's and glibc's.
 * Prints the same lines either way (no addresses); exits 1 at the first difference.
 * It never calls malloc (stdout has a static buffer): under plain glibc, malloc
 * moves the break too, and would take part of what this program gives back.
 * Usage: brkuse [--serial] [--huge]
 *   --serial  the threads take a lock around sbrk: glibc's sbrk is not thread-safe,
 *             so the plain run needs it (superpage run's sbrk is)
 *   --huge    only this: move the break up by 64 MiB, write it, and say on stderr
 *             "brk_huge_kb=N brk_hugetlb_kb=H brk_kb=M": the AnonHugePages and
 *             hugetlb (N), and the hugetlb alone (H), of the mappings that hold it,
 *             from /proc/self/smaps */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "smaps_kb.h"

#define KB 1024ul
#define MB (1024ul * KB)
#define PAGE 4096ul

static char outbuf[1 << 16];
static unsigned checks;
static uint64_t sum = 14695981039346656037ull;

static void die(const char *what)
{
	printf("brkuse: FAILED: %s (errno %d)\n", what, errno);
	exit(1);
}

static void check(bool ok, const char *what)
{
	if (!ok)
		die(what);
	checks++;
}

static char *now(void) { return sbrk(0); }
static uintptr_t page_up(const char *p) { return ((uintptr_t)p + PAGE - 1) & ~(PAGE - 1); }

/* The byte at offset off from the start of the break, in the pass salt. */
static unsigned char pat(size_t off, unsigned salt)
{
	uint64_t x = ((uint64_t)off + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)salt << 32);
	return (unsigned char)(x >> 57 ^ x >> 13);
}

static void fill(char *base, size_t from, size_t to, unsigned salt)
{
	for (size_t off = from; off < to; off++)
		base[off] = (char)pat(off, salt);
}

static bool holds(const char *base, size_t from, size_t to, unsigned salt)
{
	for (size_t off = from; off < to; off++)
		if ((unsigned char)base[off] != pat(off, salt))
			return false;
	return true;
}

static bool zero(const char *p, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (p[k])
			return false;
	return true;
}

static void fold(const char *p, size_t n)
{
	for (size_t k = 0; k < n; k++)
		sum = (sum ^ (unsigned char)p[k]) * 1099511628211ull;
}

/* ---------- faults ---------- */

static sigjmp_buf jb;
static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(jb, 1);
}

/* Reading the byte faults: it is not mapped, or not accessible. */
static bool faults(const volatile char *p)
{
	struct sigaction sa, old;
	bool f = false;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(jb, 1))
		f = true;
	else
		(void)*p;
	sigaction(SIGSEGV, &old, NULL);
	return f;
}

/* ---------- smaps ---------- */

/* After the break went down from old to brk: the page it is in stays, every whole
 * page above it up to old is gone. Where the break is on a hugetlb page (superpage
 * run --backing 2m), the rest of that 2 MiB page stays too: its mapping cannot be
 * cut. (One check each, whichever it is: the count printed is the same.) */
static void check_gone(const char *brk_now, const char *old)
{
	uintptr_t up = page_up(brk_now), gone = up;
	bool ok = true;
	if ((up & (2 * MB - 1)) && smaps_kb(up, up + 1, NULL) == 2048)
		gone = (up + 2 * MB - 1) & ~(2 * MB - 1);
	if ((uintptr_t)brk_now < up)
		check(!faults(brk_now) && !faults((const char *)up - 1),
		      "the page the lowered break is in cannot be read");
	for (uintptr_t a = gone; a < (uintptr_t)old; a += 256 * KB)
		ok = ok && faults((const char *)a);
	check(ok, "memory above a lowered break can be read");
	if (gone < (uintptr_t)old)
		check(faults(old - 1), "the last byte below the old break can still be read");
	else if (up < (uintptr_t)old)
		check(!faults(old - 1), "the old break's hugetlb page was cut");
}

/* ---------- the single-threaded part ---------- */

static char *start;     /* the break when the program started here */
static unsigned salt = 1;

static void grow_odd(void)
{
	static const size_t incs[] = { 1, 3, 4095, 4097, 1, 65537, 2 * MB + 1, 3 * MB + 7,
				       12345, 2 * MB - 3, 8 * MB + 13, 777 };
	check(now() == now(), "sbrk(0) twice gives two breaks");
	for (size_t k = 0; k < sizeof incs / sizeof *incs; k++) {
		char *before = now();
		char *p = sbrk((intptr_t)incs[k]);
		check(p == before, "sbrk does not return the old break");
		check(now() == p + incs[k], "sbrk(0) is not the old break plus the increment");
		fill(start, (size_t)(p - start), (size_t)(p - start) + incs[k], salt);
	}
	check(holds(start, 0, (size_t)(now() - start), salt), "memory below the break changed");
	printf("grow: %zu increments, %zu bytes\n", sizeof incs / sizeof *incs,
	       (size_t)(now() - start));
}

/* Down by amount, then up again by as much: whole pages above the lowered break come
 * back zero, the page the break was in keeps its bytes. */
static void shrink_grow(size_t amount)
{
	char *old = now();
	char *p = sbrk(-(intptr_t)amount);
	char *low = old - amount;
	check(p == old, "sbrk(-n) does not return the old break");
	check(now() == low, "sbrk(0) after sbrk(-n) is not the old break minus n");
	check(holds(start, 0, (size_t)(low - start), salt), "memory below a lowered break changed");
	check_gone(low, old);

	p = sbrk((intptr_t)amount);
	check(p == low && now() == old, "the break did not grow back");
	uintptr_t up = page_up(low) < (uintptr_t)old ? page_up(low) : (uintptr_t)old;
	check(holds(start, (size_t)(low - start), (size_t)((char *)up - start), salt),
	      "the page of the lowered break lost its bytes");
	check(zero((char *)up, (size_t)(old - (char *)up)), "memory that came back is not zero");
	fill(start, 0, (size_t)(old - start), ++salt);
	printf("shrink: %zu bytes down and up again\n", amount);
}

static void brk_to(void)
{
	char *old = now();
	char *low = old - 1 * MB - 5, *high = old + 3 * MB + 9;
	errno = EDOM;
	check(brk(low) == 0 && errno == EDOM, "brk to a lower address failed or set errno");
	check(now() == low, "sbrk(0) after brk(lower) is not that address");
	check_gone(low, old);
	check(brk(high) == 0 && errno == EDOM, "brk to a higher address failed or set errno");
	check(now() == high, "sbrk(0) after brk(higher) is not that address");
	check(holds(start, 0, (size_t)(low - start), salt), "memory below the break changed");
	check(zero((char *)page_up(low), (size_t)(high - (char *)page_up(low))),
	      "memory brk gave back is not zero");
	fill(start, (size_t)(low - start), (size_t)(high - start), salt);
	printf("brk: 1 MiB down, 4 MiB up\n");
}

static void errors(void)
{
	char *b = now();
	static const intptr_t absurd[] = { (intptr_t)1 << 60, INTPTR_MAX, INTPTR_MIN };
	for (size_t k = 0; k < sizeof absurd / sizeof *absurd; k++) {
		errno = 0;
		check(sbrk(absurd[k]) == (void *)-1 && errno == ENOMEM,
		      "an absurd sbrk did not fail with ENOMEM");
		check(now() == b, "a failed sbrk moved the break");
	}
	errno = 0;
	check(brk((void *)(UINTPTR_MAX & ~(PAGE - 1))) == -1 && errno == ENOMEM,
	      "brk to the top of the address space did not fail with ENOMEM");
	check(now() == b, "a failed brk moved the break");
	/* Below where the break starts: the kernel leaves it, and glibc calls that a
	 * success (sbrk gives the old break). */
	errno = EDOM;
	check(sbrk(-(intptr_t)((uintptr_t)b - PAGE)) == b && errno == EDOM,
	      "sbrk below the start is not glibc's");
	check(brk((void *)PAGE) == 0 && brk(NULL) == 0 && errno == EDOM,
	      "brk below the start is not glibc's");
	check(now() == b, "the break moved below its start");
	check(sbrk(1) == b && sbrk(-1) == b + 1 && now() == b && errno == EDOM,
	      "a good sbrk set errno");
	printf("errors: ENOMEM for 3 absurd increments and brk at the top; below the start "
	       "nothing moves\n");
}

/* The child sees the parent's memory below the break, writes its own copy and moves
 * its own break; the parent's stays as it was. */
static void forked(void)
{
	char *b = now();
	size_t n = (size_t)(b - start);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int bad = 0;
		if (now() != b || !holds(start, 0, n, salt))
			bad |= 1;
		memset(start, 0x5a, n / 2);
		if (sbrk((intptr_t)(5 * MB + 3)) != b)
			bad |= 2;
		memset(b, 0xa5, 5 * MB + 3);
		if (sbrk(-(intptr_t)(5 * MB + 3 + n / 3)) != b + 5 * MB + 3 || now() != b - n / 3)
			bad |= 4;
		if ((unsigned char)start[0] != 0x5a || !holds(start, n / 2, n - n / 3, salt))
			bad |= 8;
		_exit(bad);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("brkuse: FAILED: the child found its break wrong (status %#x)\n", status);
		exit(1);
	}
	check(now() == b, "the child moved the parent's break");
	check(holds(start, 0, n, salt), "the child's writes reached the parent");
	printf("fork: the child saw %zu bytes and wrote its own copy\n", n);
}

/* ---------- threads ---------- */

#define NTHREADS 4
#define NCALLS 1000

static bool serial;
static pthread_mutex_t serial_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t go, done;
static struct piece { char *p; size_t n; } pieces[NTHREADS][NCALLS];

static size_t piece_size(unsigned t, unsigned k) { return (t * 7919 + k * 104729) % 8111 + 1; }
static unsigned char piece_byte(unsigned t, unsigned k, size_t off)
{
	return (unsigned char)(t * 61 + k * 7 + off % 251 + 1);
}

/* The calls come as fast as they can, all threads at once; the pieces are written
 * when every thread is done, so that two threads given the same memory show. */
static void *thread_main(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	pthread_barrier_wait(&go);
	for (unsigned k = 0; k < NCALLS; k++) {
		size_t n = piece_size(t, k);
		if (serial)
			pthread_mutex_lock(&serial_lock);
		pieces[t][k].p = sbrk((intptr_t)n);
		if (serial)
			pthread_mutex_unlock(&serial_lock);
		pieces[t][k].n = n;
	}
	pthread_barrier_wait(&go);
	for (unsigned k = 0; k < NCALLS; k++) {
		char *p = pieces[t][k].p;
		if (p != (void *)-1)
			for (size_t off = 0; off < pieces[t][k].n; off++)
				p[off] = (char)piece_byte(t, k, off);
	}
	pthread_barrier_wait(&done);
	return NULL;
}

static void threads(void)
{
	pthread_t th[NTHREADS];
	size_t total = 0;
	uint64_t tsum = 0;

	pthread_barrier_init(&go, NULL, NTHREADS + 1);
	pthread_barrier_init(&done, NULL, NTHREADS + 1);
	for (unsigned t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, thread_main, (void *)(uintptr_t)t))
			die("pthread_create");
	/* (after pthread_create: under glibc it may have moved the break with malloc) */
	char *before = now();
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	char *after = now();
	for (unsigned t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	for (unsigned t = 0; t < NTHREADS; t++)
		for (unsigned k = 0; k < NCALLS; k++) {
			struct piece *a = &pieces[t][k];
			check(a->p != (void *)-1, "a thread's sbrk failed");
			check(a->p >= before && a->p + a->n <= after, "a thread's piece is outside the break");
			for (size_t off = 0; off < a->n; off++)
				if ((unsigned char)a->p[off] != piece_byte(t, k, off))
					die("a thread's piece was overwritten: two threads got the same memory");
			total += a->n;
			tsum = tsum * 31 + a->n;
		}
	for (unsigned t = 0; t < NTHREADS; t++)
		for (unsigned k = 0; k < NCALLS; k++)
			for (unsigned u = t; u < NTHREADS; u++)
				for (unsigned j = u == t ? k + 1 : 0; j < NCALLS; j++) {
					struct piece *a = &pieces[t][k], *b = &pieces[u][j];
					if (a->p < b->p + b->n && b->p < a->p + a->n)
						die("two threads' pieces overlap");
				}
	check(total == (size_t)(after - before), "the pieces do not add up to the break's growth");
	printf("threads: %d threads, %d sbrk calls each, %zu bytes, disjoint (%016llx)\n", NTHREADS,
	       NCALLS, total, (unsigned long long)tsum);
}

/* ---------- --huge ---------- */

static int huge(void)
{
	size_t n = 64 * MB;
	char *p = sbrk((intptr_t)n);
	if (p == (void *)-1)
		die("sbrk of 64 MiB");
	memset(p, 1, n);
	fold(p, n);
	uintptr_t lo = (uintptr_t)p, hi = lo + n;
	long tlb = smaps_kb(lo, hi, "Private_Hugetlb:") + smaps_kb(lo, hi, "Shared_Hugetlb:");
	fprintf(stderr, "brk_huge_kb=%ld brk_hugetlb_kb=%ld brk_kb=%lu\n",
		smaps_kb(lo, hi, "AnonHugePages:") + tlb, tlb, (unsigned long)(n / KB));
	printf("brkuse: 64 MiB written, checksum %016llx\n", (unsigned long long)sum);
	return 0;
}

int main(int argc, char **argv)
{
	bool want_huge = false;

	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--serial") == 0) {
			serial = true;
		} else if (strcmp(argv[i], "--huge") == 0) {
			want_huge = true;
		} else {
			fprintf(stderr, "usage: brkuse [--serial] [--huge]\n");
			return 2;
		}
	}
	if (want_huge)
		return huge();
	start = now();
	grow_odd();
	shrink_grow(5 * MB + 123);
	shrink_grow(3000);
	shrink_grow(2 * MB);
	brk_to();
	errors();
	forked();
	fold(start, (size_t)(now() - start));
	threads();
	printf("brkuse: %u checks, checksum %016llx\n", checks, (unsigned long long)sum);
	return 0;
}
