/* misuse.c - a program that misuses malloc on purpose, one way per run, for
 * test_misuse.sh: a write after free into a freed block's first words, free and
 * realloc of pointers no malloc gave out, writes past a block's end and after its
 * free (found by the checking mode), posix_memalign out of memory, and blocks of
 * glibc's own malloc given to the program's free and realloc.
 *
 * usage: misuse uaf [SIZE_MAX]        for each size 16..SIZE_MAX (4096) by 16, in a
 *                                     child: two blocks freed, the address of a global
 *                                     written into the last one freed, then mallocs of
 *                                     that size; prints how many children aborted, how
 *                                     many ran on without the address, and how many
 *                                     were given it (exit 3 if any was)
 *        misuse uaf-random [SIZE_MAX]  the same with 16 random bytes written
 *        misuse uaf-aligned           the same for sizes 4352..65536 by 4 KiB, the blocks
 *                                     from memalign(256) (the size classes above 4 KiB,
 *                                     which malloc itself does not use)
 *        misuse free-stack | free-global | free-mmap | free-wild
 *        misuse realloc-stack | realloc-global | realloc-mmap | realloc-wild
 *                                     the bad call; "survived" and exit 0 if it returns
 *        misuse overflow SIZE         a byte written just past a block of SIZE, then free
 *        misuse after-free SIZE       a byte written into a freed block of SIZE, then
 *                                     mallocs and frees of other blocks
 *        misuse memalign-enomem       posix_memalign of SIZE_MAX/2: its result and errno
 *        misuse glibc-block           a block from glibc's own malloc (reached by
 *                                     dlsym), given to free, and another to realloc
 * Exit status: 0 as said, 1 on a wrong result, 2 on bad arguments, 3 if a write
 * after free gave the program the address it wrote. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "xorshift.h"

/* (the misuse is the point: the compiler's warnings of it are not) */
#pragma GCC diagnostic ignored "-Wuse-after-free"

static char target[4096] __attribute__((aligned(64)));
static char global_block[256] __attribute__((aligned(64)));

/* The compiler must not see through the misuse (nor warn of it). */
static void *opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static uint64_t next_random(uint64_t *x)
{
	return xorshift64(x);
}

static size_t uaf_align; /* 0: malloc, else memalign of it */

static void *block(size_t size)
{
	return uaf_align ? memalign(uaf_align, size) : malloc(size);
}

/* In a child: two blocks of size freed, the last one written after its free, then
 * mallocs of that size. 3 if one of them is the address written, else 0. */
static int uaf_child(size_t size, bool random_bytes)
{
	void *keep = block(size); /* (the two below are not the first of a fresh span) */
	void *a = block(size), *b = block(size);
	if (!a || !b || !keep)
		return 1;
	free(a);
	free(b);
	uint64_t *w = opaque(b);
	if (random_bytes) {
		uint64_t x = 0x9e3779b97f4a7c15ull ^ size;
		w[0] = next_random(&x);
		w[1] = next_random(&x);
	} else {
		w[0] = (uintptr_t)target;
	}
	for (int i = 0; i < 600; i++) {
		char *q = block(size);
		if (q >= target && q < target + sizeof target)
			return 3;
		if (q)
			memset(q, 0x5a, size);
	}
	return 0;
}

static int uaf(size_t min, size_t max, size_t step, bool random_bytes)
{
	unsigned aborted = 0, ran_on = 0, given = 0, other = 0;
	for (size_t size = min; size <= max; size += step) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid == 0)
			_exit(uaf_child(size, random_bytes));
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			return 1;
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT)
			aborted++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			ran_on++;
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
			given++;
		else
			other++;
	}
	printf("uaf: sizes %zu-%zu: %u aborted, %u ran on without the address, %u given it, "
	       "%u other\n", min, max, aborted, ran_on, given, other);
	return given ? 3 : other ? 1 : 0;
}

/* A pointer no malloc gave out, of the kind named. */
static void *bad_pointer(const char *kind)
{
	static char *page;
	if (!strcmp(kind, "stack")) {
		char local[64];
		memset(local, 1, sizeof local);
		return opaque(local + 16);
	}
	if (!strcmp(kind, "global"))
		return opaque(global_block + 64);
	if (!strcmp(kind, "mmap")) {
		page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return page == MAP_FAILED ? NULL : opaque(page + 64);
	}
	if (!strcmp(kind, "wild"))
		return opaque((void *)(uintptr_t)0x5a5a5a5a5a50ull);
	return NULL;
}

static int bad_call(const char *what)
{
	bool is_free = !strncmp(what, "free-", 5);
	void *p = bad_pointer(what + (is_free ? 5 : 8));
	if (!p)
		return 2;
	if (is_free) {
		free(p);
	} else {
		void *q = realloc(p, 100);
		printf("realloc returned %p, errno %d\n", q, errno);
	}
	printf("survived\n");
	return 0;
}

static int overflow(size_t size)
{
	char *p = malloc(size);
	if (!p)
		return 1;
	memset(p, 1, size);
	((volatile char *)opaque(p))[size] = 0; /* one byte past the end */
	free(p);
	printf("survived\n");
	return 0;
}

static int after_free(size_t size)
{
	char *p = malloc(size);
	if (!p)
		return 1;
	memset(p, 1, size);
	free(p);
	((volatile char *)opaque(p))[size / 2] = 7; /* written after its free */
	/* Enough other blocks made and freed for p to be checked and reused. */
	for (int i = 0; i < 20000; i++) {
		char *q = opaque(malloc(16 + (size_t)(i % 64) * 16));
		if (q)
			memset(q, 2, 16);
		free(opaque(q));
	}
	printf("survived\n");
	return 0;
}

/* errno read where the compiler cannot see it: GCC takes posix_memalign to leave
 * errno alone (POSIX does not have it set), and would print the 0 stored before. */
static __attribute__((noipa)) int errno_now(void)
{
	return errno;
}

static int memalign_enomem(void)
{
	void *p = NULL;
	errno = 0;
	int r = posix_memalign(&p, 64, SIZE_MAX / 2);
	int e = errno_now();
	printf("posix_memalign: %d (%s), errno %d\n", r, strerror(r), e);
	return r == ENOMEM && e == ENOMEM ? 0 : 1;
}

/* glibc's own malloc and free, reached in libc.so.6 itself. */
static int glibc_block(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *(*gmalloc)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
	if (!gmalloc)
		return 2;
	char *a = gmalloc(100), *b = gmalloc(200);
	if (!a || !b)
		return 1;
	memset(a, 3, 100);
	memset(b, 4, 200);
	free(a);
	char *c = realloc(b, 5000);
	if (!c || c[0] != 4 || c[199] != 4)
		return 1;
	free(c);
	printf("glibc's blocks freed and reallocated\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	const char *what = argv[1];
	size_t arg = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(what, "uaf") || !strcmp(what, "uaf-random"))
		return uaf(16, arg ? arg : 4096, 16, what[3] == '-');
	if (!strcmp(what, "uaf-aligned")) {
		uaf_align = 256;
		return uaf(4352, 65536, 4096, false);
	}
	if (!strncmp(what, "free-", 5) || !strncmp(what, "realloc-", 8))
		return bad_call(what);
	if (!strcmp(what, "overflow") && arg)
		return overflow(arg);
	if (!strcmp(what, "after-free") && arg)
		return after_free(arg);
	if (!strcmp(what, "memalign-enomem"))
		return memalign_enomem();
	if (!strcmp(what, "glibc-block"))
		return glibc_block();
	return 2;
}
