/* affine.c - two threads, both alive throughout, take turns to allocate and free
 * blocks, and the program says whether each got back memory it had itself freed or
 * memory the other thread had: writing lines the other core wrote last costs a
 * transfer each (tests/runtime/heap/test_heap.sh, heap_affine).
 *
 * Steps, in this order (A's and B's blocks are alive together, so that neither
 * takes the other's place):
 *   1. A: a = malloc(4 MiB)            2. B: b = malloc(4 MiB)
 *   3. A frees a                       4. B frees b   (whole units, kept empty; b's newest)
 *   5. A: x = malloc(600 KiB)          (a run: in a unit of a's, or of b's)
 *   6. B: y = malloc(600 KiB)          (x's unit has room; so has one of b's)
 *      B: d = malloc(4 MiB)
 *   7. A: c = malloc(4 MiB), freed     8. B frees d
 *   9. A: e = malloc(4 MiB)            (c's units, or d's: both kept, d's lower)
 * Under glibc none of it is placed so: the lines say what each got, and the test
 * reads them under superpage run only.
 *
 * stdout: "run A: own|other|elsewhere", "run B: own|other|shared|elsewhere" and
 * "units A: own|other|elsewhere". */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG ((size_t)4 << 20)
#define RUN ((size_t)600 << 10)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved = PTHREAD_COND_INITIALIZER;
static int turn; /* the step to run next: even A's, odd B's */

static void *a, *b, *c, *d, *x, *y, *e;

static void wait_turn(int step)
{
	pthread_mutex_lock(&lock);
	while (turn != step)
		pthread_cond_wait(&moved, &lock);
	pthread_mutex_unlock(&lock);
}

static void next_turn(void)
{
	pthread_mutex_lock(&lock);
	turn++;
	pthread_cond_broadcast(&moved);
	pthread_mutex_unlock(&lock);
}

static void *take(size_t n)
{
	unsigned char *p = malloc(n);
	if (!p) {
		fprintf(stderr, "affine: malloc(%zu) failed\n", n);
		exit(1);
	}
	memset(p, 0x5a, n);
	return p;
}

static int in(const void *p, const void *block)
{
	return (uintptr_t)p >= (uintptr_t)block && (uintptr_t)p < (uintptr_t)block + BIG;
}

static void *thread_a(void *arg)
{
	(void)arg;
	wait_turn(0);
	a = take(BIG);
	next_turn();
	wait_turn(2);
	free(a);
	next_turn();
	wait_turn(4);
	x = take(RUN);
	next_turn();
	wait_turn(6);
	c = take(BIG);
	free(c);
	next_turn();
	wait_turn(8);
	e = take(BIG);
	next_turn();
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	wait_turn(1);
	b = take(BIG);
	next_turn();
	wait_turn(3);
	free(b);
	next_turn();
	wait_turn(5);
	y = take(RUN);
	d = take(BIG);
	next_turn();
	wait_turn(7);
	free(d);
	next_turn();
	return NULL;
}

int main(void)
{
	pthread_t ta, tb;
	if (pthread_create(&ta, NULL, thread_a, NULL) || pthread_create(&tb, NULL, thread_b, NULL)) {
		fprintf(stderr, "affine: pthread_create failed\n");
		return 1;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	printf("run A: %s\n", in(x, a) ? "own" : in(x, b) ? "other" : "elsewhere");
	/* (shared: in the units of the same block as A's run) */
	printf("run B: %s\n", (in(y, b) && in(x, b)) || (in(y, a) && in(x, a)) ? "shared" :
	       in(y, b) ? "own" : in(y, a) ? "other" : "elsewhere");
	printf("units A: %s\n", e == c ? "own" : e == d ? "other" : "elsewhere");
	free(x);
	free(y);
	free(e);
	return 0;
}
