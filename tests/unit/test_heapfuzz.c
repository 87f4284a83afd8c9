/* test_heapfuzz.c - a randomized driver for the page heap and the fitted blocks, on the
 * fake kernel under 2m with a small pool, libFuzzer-style: an input is a string of
 * bytes (from a generator seeded with the input's number), read as a sequence of
 * operations (fuzz_one): runs of pages and blocks of whole units had, freed and
 * resized (pages_*), fitted blocks had from each arena, freed through the thread's
 * cache or past it, resized, the cache flushed (fit_*), the pool refusing maps and
 * madvise failing for a while. After every operation pages_check, fit_check and
 * central_check, and every block's tag bytes are checked before it is freed or
 * resized. Each input runs in a child forked from a started, empty heap: a crash (in
 * DEBUG, a checker's abort at a lock's release) is that input's, said with its seed.
 *
 * The budget is counted in operations, not seconds: SP_FUZZ_OPS (default 8000), in
 * inputs of OPS_PER_INPUT. `test_heapfuzz SEED [OPS]` replays one input. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "life.h"
#include "malloc/central.h"
#include "malloc/malloc.h"
#include "pageheap/pageheap.h"
#include "runtime.h"
#include "runtime/common/xorshift.h"

#define MB ((size_t)1 << 20)
#define POOL 40
#define NSLOT 64
#define OPS_PER_INPUT 400
#define DEFAULT_OPS 8000
#define OP_BYTES 5          /* an operation, its slot and its arguments */
#define MAX_OPS 4096        /* in one input */

__attribute__((constructor(101))) static void on_fake_kernel(void)
{
	fk_reset();
	fk_machine_default();
	fk_pool(2 * MB, POOL, POOL);
	fk_install();
	setenv("SUPERPAGE_BACKING", "2m", 1);
}

/* ---------- the input, read a few bytes at a time (zeros once it is used up) ---------- */

struct input {
	const uint8_t *p;
	size_t len, at;
};

static unsigned take8(struct input *in)
{
	return in->at < in->len ? in->p[in->at++] : 0;
}

static unsigned take16(struct input *in)
{
	unsigned lo = take8(in);
	return lo | take8(in) << 8;
}

/* ---------- the blocks ---------- */

enum { EMPTY = 0, SPAN, FITTED };
struct blk {
	int kind;
	struct span *s;      /* SPAN: its span */
	unsigned char *p;
	size_t len;
	unsigned char tag;
};
static struct blk slot[NSLOT];

static void mark(struct blk *b)
{
	for (size_t i = 0; i < b->len; i += PAGE_SIZE)
		b->p[i] = b->tag;
	b->p[b->len - 1] = b->tag;
}

static bool intact(const struct blk *b, size_t len)
{
	for (size_t i = 0; i < len; i += PAGE_SIZE)
		if (b->p[i] != b->tag)
			return false;
	return len < b->len || b->p[b->len - 1] == b->tag;
}

/* Memory the heap says reads as zero (a span's clean, a fitted block past its dirty
 * bytes) does: zero_unknown zeroes the rest, as calloc does, and then all of it must
 * read zero, the marks of the blocks that had these pages before included. */
static bool zero_as_said(unsigned char *p, size_t len, unsigned clean)
{
	zero_unknown(clean, p, len);
	return mem_is_zero(p, len);
}

static size_t span_bytes(const struct span *s)
{
	return s->npages * PAGE_SIZE;
}

/* ---------- the operations ---------- */

static const char *const op_names[] = {
	"run", "large", "free", "resize run", "resize large", "fit", "fit free",
	"fit release", "fit resize", "fit flush", "fault",
};
#define NOP (sizeof op_names / sizeof op_names[0])

static const char *bad_why;  /* what the last operation found changed */
/* Operations that did something, by kind, over every input (shared with the children). */
static unsigned long *did;

static void put_span(struct blk *b, struct span *s, unsigned tag, unsigned op)
{
	if (!s)
		return;
	did[op]++;
	*b = (struct blk){ SPAN, s, (unsigned char *)s->start, span_bytes(s), (unsigned char)(tag | 1) };
	if (!zero_as_said(b->p, b->len, s->clean))
		bad_why = "memory said to be clean was not zero";
	mark(b);
}

static void drop(struct blk *b)
{
	if (!intact(b, b->len))
		bad_why = "a block's bytes changed";
	if (b->kind == SPAN)
		pages_free(b->s);
	else
		fit_free(span_at((uintptr_t)b->p), b->p);
	b->kind = EMPTY;
}

/* One operation of the input on slot b. */
static void one_op(unsigned op, struct blk *b, struct input *in)
{
	unsigned x = take16(in), y = take8(in);
	size_t size;
	switch (op) {
	case 0: /* a run of pages, some aligned */
		if (b->kind == EMPTY)
			put_span(b, pages_alloc_run(1 + x % 700, y & 0x80 ? (size_t)1 << (y % 10) : 1,
						    SPAN_MEDIUM), y, op);
		break;
	case 1: /* whole units, or a block mapped on its own */
		if (b->kind == EMPTY)
			put_span(b, pages_alloc_large((1 + y % 6) * UNIT_SIZE + (x % 512) * PAGE_SIZE,
						      y & 0x40 ? UNIT_SIZE : PAGE_SIZE), y, op);
		break;
	case 2:
	case 6:
		if (b->kind != EMPTY) {
			did[op]++;
			drop(b);
		}
		break;
	case 3: /* a run grown or shrunk in place */
		if (b->kind == SPAN && b->s->kind == SPAN_MEDIUM) {
			size_t np = 1 + x % (MEDIUM_MAX / PAGE_SIZE);
			if (!intact(b, b->len))
				bad_why = "a block's bytes changed";
			else if (pages_resize_run(b->s, np)) {
				did[op]++;
				if (span_bytes(b->s) > b->len &&
				    !zero_as_said(b->p + b->len, span_bytes(b->s) - b->len, b->s->clean))
					bad_why = "memory said to be clean was not zero";
				b->len = span_bytes(b->s);
				mark(b);
			}
		}
		break;
	case 4: /* whole units grown or shrunk, in place or moved */
		if (b->kind == SPAN && (b->s->kind == SPAN_LARGE || b->s->kind == SPAN_OUTSIDE)) {
			size = MEDIUM_MAX + 1 + (size_t)(x % 2048) * (y % 4 + 1) * PAGE_SIZE;
			size_t keep = b->len < size ? b->len : size;
			if (pages_resize_large(b->s, size)) {
				did[op]++;
				b->p = (unsigned char *)b->s->start;
				if (!intact(b, keep & ~(PAGE_SIZE - 1)))
					bad_why = "a moved block's bytes changed";
				b->len = span_bytes(b->s);
				mark(b);
			}
		}
		break;
	case 5: /* a fitted block from arena y % FIT_ARENAS */
		if (b->kind == EMPTY) {
			size_t fresh, dirty;
			size = FIT_MIN + 1 + x % (FIT_MAX - FIT_MIN - 1);
			unsigned char *p = fit_alloc(size, y % FIT_ARENAS, &fresh, &dirty);
			if (p) {
				did[op]++;
				if (!zero_as_said(p + dirty, fresh - dirty, SPAN_CLEAN))
					bad_why = "a fitted block's clean bytes were not zero";
				*b = (struct blk){ FITTED, NULL, p, size, (unsigned char)(y | 1) };
				mark(b);
			}
		}
		break;
	case 7: /* freed past the thread's cache */
		if (b->kind == FITTED) {
			if (!intact(b, b->len))
				bad_why = "a block's bytes changed";
			fit_release(span_at((uintptr_t)b->p), b->p);
			b->kind = EMPTY;
			did[op]++;
		}
		break;
	case 8: /* a fitted block resized in place */
		if (b->kind == FITTED) {
			size_t now;
			size = FIT_MIN + 1 + x % (FIT_MAX - FIT_MIN - 1);
			if (!intact(b, b->len))
				bad_why = "a block's bytes changed";
			else if (fit_resize(span_at((uintptr_t)b->p), b->p, size, &now)) {
				did[op]++;
				b->len = size;
				mark(b);
			}
		}
		break;
	case 9:
		did[op] += fit_cache_flush(false) > 0;
		break;
	default: /* the pool refuses, madvise fails, or both stop */
		did[op]++;
		fk_mmap_fail_huge(2 * MB, y % 4 == 0 ? ENOMEM : 0);
		fk_madvise_fail(MADV_DONTNEED, y % 4 == 1 ? EAGAIN : 0);
		break;
	}
}

static const char *consistent(void)
{
	size_t where;
	const char *why = bad_why ? bad_why : pages_check(&where);
	if (!why)
		why = fit_check();
	if (!why)
		why = central_check();
	if (!why)
		why = malloc_cache_check();
	return why;
}

/* One input: its operations, every block freed, checked after each; 0, or the
 * operation that found something wrong (1 + its index) with *why. */
static size_t fuzz_one(const uint8_t *data, size_t len, const char **why, unsigned *op_out)
{
	struct input in = { data, len, 0 };
	size_t n = 0;
	while (in.at < in.len) {
		unsigned op = take8(&in) % NOP;
		one_op(op, &slot[take8(&in) % NSLOT], &in);
		n++;
		if ((*why = consistent())) {
			*op_out = op;
			return n;
		}
	}
	for (unsigned i = 0; i < NSLOT; i++)
		if (slot[i].kind != EMPTY)
			drop(&slot[i]);
	fit_cache_flush(false);
	fk_mmap_fail_huge(2 * MB, 0);
	fk_madvise_fail(MADV_DONTNEED, 0);
	*op_out = 2;
	if ((*why = consistent()))
		return n + 1;
	/* every block given back: the fitted chunks are all free */
	uint64_t chunk, free_bytes;
	fit_stats(&chunk, &free_bytes);
	if (chunk != free_bytes) {
		*why = "fitted bytes are still in use after every block was freed";
		return n + 1;
	}
	return 0;
}

/* ---------- the loop: inputs from seeds, each in a child ---------- */

static void make_input(uint64_t seed, uint8_t *buf, size_t len)
{
	uint64_t r = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	for (size_t i = 0; i < len; i++) {
		xorshift64(&r);
		buf[i] = (uint8_t)(r >> 24);
	}
}

/* Input seed of ops operations, in a child: true if it passed. */
static bool run_seed(uint64_t seed, size_t ops)
{
	static uint8_t buf[OP_BYTES * MAX_OPS];
	size_t len = OP_BYTES * (ops < MAX_OPS ? ops : MAX_OPS);
	make_input(seed, buf, len);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		const char *why = NULL;
		unsigned op = 0;
		size_t at = fuzz_one(buf, len, &why, &op);
		if (at) {
			printf("  input %llu: after operation %zu (%s): %s\n", (unsigned long long)seed,
			       at, op_names[op], why);
			fflush(stdout);
		}
		_exit(at ? 1 : 0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		printf("  input %llu: died of signal %d (stderr says why; replay: test_heapfuzz %llu)\n",
		       (unsigned long long)seed, WTERMSIG(st), (unsigned long long)seed);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static size_t budget(void)
{
	const char *e = getenv("SP_FUZZ_OPS");
	long n = e ? atol(e) : 0;
	return n > 0 ? (size_t)n : DEFAULT_OPS;
}

/* The counts shared with the children. */
static bool share_counts(void)
{
	void *m = mmap(NULL, NOP * sizeof *did, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	did = m == MAP_FAILED ? NULL : m;
	return did != NULL;
}

static void test_fuzz(void)
{
	size_t ops = budget(), done = 0;
	unsigned inputs = 0, failed = 0;
	CHECK(rt_init());
	CHECK(share_counts());
	if (!did)
		return;
	for (uint64_t seed = 1; done < ops && failed < 3; seed++) {
		size_t n = ops - done < OPS_PER_INPUT ? ops - done : OPS_PER_INPUT;
		failed += !run_seed(seed, n);
		done += n;
		inputs++;
	}
	printf("  %zu operations in %u inputs, %u failed; done:", done, inputs, failed);
	for (unsigned op = 0; op < NOP; op++)
		printf(" %s %lu%s", op_names[op], did[op], op + 1 < NOP ? "," : "\n");
	CHECK_EQ(failed, 0);
	CHECK_EQ(done, ops);
	/* every kind of operation did something (with the default budget and up) */
	for (unsigned op = 0; op < NOP && ops >= DEFAULT_OPS; op++)
		CHECK(did[op] > 0);
}

int main(int argc, char **argv)
{
	if (argc > 1) { /* one input replayed */
		CHECK(rt_init() && share_counts());
		size_t ops = argc > 2 ? strtoul(argv[2], NULL, 0) : OPS_PER_INPUT;
		bool ok = run_seed(strtoull(argv[1], NULL, 0), ops);
		printf("%s test_heapfuzz %s\n", ok ? "PASS" : "FAIL", argv[1]);
		return ok ? 0 : 1;
	}
	RUN(test_fuzz);
	fk_uninstall();
	return CHECK_DONE();
}
