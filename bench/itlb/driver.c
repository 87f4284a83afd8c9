/* driver.c - the itlb kernel: calls the generated functions (bench/itlbgen.c) in a
 * data-dependent order; the time per call when the code is spread over more pages
 * than the instruction TLB holds. */
#include "kernel.h"
#include "itlb/itlb.h"

typedef uint64_t itlb_fn(uint64_t);

/* From the generated text (bench/itlbgen.c). */
extern itlb_fn *const itlb_table[];
extern const uint32_t itlb_nfuncs, itlb_slot_bytes, itlb_steps;

#define SEED 0x2545F4914F6CDD1Dull
#define CALLS_PER_REP (1ull << 20)
#define CHECK_CALLS (1ull << 17)

static const char usage[] =
	"Instruction TLB reach: a chain of calls through the program's generated functions\n"
	"(one per 4 KiB page, their entries on different cache lines, so that the code\n"
	"in use fits the caches), each picking the next from the value it returns, so\n"
	"that every call may land on a page the instruction TLB does not hold; ns/call.\n"
	"  --size N  bytes of text in use: the first N / slot functions (default: all)\n"
	"  --reps R  the timed chain makes R * 1M calls (default 8)\n"
	"First, untimed, 128K calls are checked against a C model of every function, and\n"
	"must reach every function in use (check=ok).\n";

/* noinline, and the value it ends with is printed: no call can be left out. */
__attribute__((noinline)) static uint64_t chain(uint32_t n, uint64_t v, uint64_t calls)
{
	while (calls--)
		v = itlb_table[itlb_next(v, n)](v);
	return v;
}

/* The model of the same chain, in C; counts the functions it reaches. */
static uint64_t model(uint32_t n, uint64_t v, uint64_t calls, uint32_t *reached)
{
	unsigned char *seen = calloc(n, 1);

	if (!seen) {
		fprintf(stderr, "itlb: out of memory\n");
		exit(1);
	}
	*reached = 0;
	while (calls--) {
		uint32_t i = itlb_next(v, n);

		*reached += !seen[i];
		seen[i] = 1;
		v = itlb_model(i, itlb_steps, v);
	}
	free(seen);
	return v;
}

/* The functions sit where the generator put them: function i in the i-th slot from
 * the first (which starts at its slot's start), so that --size bytes of text are the
 * first size / slot functions. */
static int table_in_slots(void)
{
	uintptr_t base = (uintptr_t)itlb_table[0];

	for (uint32_t i = 1; i < itlb_nfuncs; i++)
		if (((uintptr_t)itlb_table[i] - base) / itlb_slot_bytes != i)
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	uint64_t text = (uint64_t)itlb_nfuncs * itlb_slot_bytes, calls, check_calls, want, got, end;
	uint32_t n, reached;
	double t0, t1;
	int ok;

	bench_parse_args(argc, argv, usage, text, 8, &a);
	if (a.size < itlb_slot_bytes || a.size > text) {
		fprintf(stderr, "itlb: --size must be %u to %llu bytes (one function to all %u)\n",
			itlb_slot_bytes, (unsigned long long)text, itlb_nfuncs);
		return 2;
	}
	n = (uint32_t)(a.size / itlb_slot_bytes);
	calls = (uint64_t)a.reps * CALLS_PER_REP;
	check_calls = calls < CHECK_CALLS ? calls : CHECK_CALLS;

	/* The check also brings every function in use into memory before the timing. */
	want = model(n, SEED, check_calls, &reached);
	got = chain(n, SEED, check_calls);
	ok = got == want && table_in_slots();
	if (got != want)
		fprintf(stderr, "itlb: after %llu calls the code gives %016llx, the model %016llx\n",
			(unsigned long long)check_calls, (unsigned long long)got,
			(unsigned long long)want);
	else if (!ok)
		fprintf(stderr, "itlb: the functions are not one in each %u bytes\n", itlb_slot_bytes);
	/* 32 calls per function miss one of 4096 with a chance of 4096 e^-32 (1e-10), but a
	 * chain caught early in a short cycle would; the seed is fixed, so this holds or
	 * fails every time. */
	if (ok && (uint64_t)n * 32 <= check_calls && reached != n) {
		fprintf(stderr, "itlb: %llu calls reached %u of %u functions\n",
			(unsigned long long)check_calls, reached, n);
		ok = 0;
	}

	t0 = bench_now();
	end = chain(n, SEED ^ got, calls);
	t1 = bench_now();
	fprintf(stderr, "itlb: %u functions over %llu bytes of text, %llu calls in %.3f s, "
		"ending at %016llx\n", n, (unsigned long long)n * itlb_slot_bytes,
		(unsigned long long)calls, t1 - t0, (unsigned long long)end);
	bench_result(&a, "itlb", a.size, t1 - t0, (t1 - t0) * 1e9 / (double)calls, "ns/call", ok);
	return bench_exit(&a);
}
