/* mem2.c - the seed's mem2.c: store rate into mmap and brk memory, page-stride and sequential. */
#include <sys/mman.h>
#include <unistd.h>

#include "kernel.h"

#define DEFAULT_SIZE ((uint64_t)512 << 20)
#define CONT_BYTES ((uint64_t)1 << 30) /* a continuous case's default passes store this much */
#define PAGE 4096
#define WORDS_PER_PAGE (PAGE / sizeof(uint64_t))
#define GOLDEN64 0x9E3779B97F4A7C15ull

static const char usage[] =
	"Stores 8-byte words into two buffers, one from mmap (private, anonymous) and one\n"
	"from sbrk (the program break), in two orders, one result line each:\n"
	"  mem2/mmap-stride, mem2/brk-stride  one store every 4096 bytes across the buffer,\n"
	"                                     then the next word of each page, until every\n"
	"                                     word is written (a new page every store)\n"
	"  mem2/mmap-cont, mem2/brk-cont      every word in address order\n"
	"A first-touch pass faults every page in before the clock starts, so the timings\n"
	"are stores only, not page faults. Reports MB/s (10^6 bytes/s) of bytes stored.\n"
	"Built as the ideal (-DBENCH_IDEAL), both buffers come from bench_alloc instead.\n"
	"  --size N  bytes in each buffer, rounded down to 4 KiB (default 512M; the seed's\n"
	"            size is not known)\n"
	"  --reps R  passes over the buffer timed per case (default: 1 for the stride cases;\n"
	"            for the continuous ones, which run 20-30 times as fast, as many as store\n"
	"            1 GiB, 2 at 512M, so that their time is tens of ms and not a few)\n";

#ifdef BENCH_IDEAL
static uint64_t *buffer_mmap(size_t bytes)
{
	return bench_alloc(bytes);
}

static uint64_t *buffer_brk(size_t bytes)
{
	return bench_alloc(bytes);
}
#else
static uint64_t *buffer_mmap(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		fprintf(stderr, "mem2: mmap of %zu bytes failed: %s\n", bytes, strerror(errno));
		exit(1);
	}
	return p;
}

/* Moves the break on by bytes and a page, so the buffer can start on a page
 * boundary whatever malloc has left the break at. */
static uint64_t *buffer_brk(size_t bytes)
{
	void *p = sbrk((intptr_t)(bytes + PAGE));

	if (p == (void *)-1) {
		fprintf(stderr, "mem2: sbrk of %zu bytes failed: %s\n", bytes, strerror(errno));
		exit(1);
	}
	return (uint64_t *)(((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1));
}
#endif

/* What word k holds after a pass with this salt: differs by word and by pass, so the
 * check sees both a missed store and a stale one. */
static inline uint64_t word(size_t k, uint64_t salt)
{
	return (uint64_t)k ^ salt;
}

static void store_stride(uint64_t *buf, size_t words, uint64_t salt)
{
	size_t pages = words / WORDS_PER_PAGE;

	for (size_t w = 0; w < WORDS_PER_PAGE; w++)
		for (size_t p = 0; p < pages; p++) {
			size_t k = p * WORDS_PER_PAGE + w;

			buf[k] = word(k, salt);
		}
}

static void store_cont(uint64_t *buf, size_t words, uint64_t salt)
{
	for (size_t k = 0; k < words; k++)
		buf[k] = word(k, salt);
}

/* Reads every word back and folds it into a checksum, set beside the checksum of the
 * words that should be there. */
static int check(const char *name, const uint64_t *buf, size_t words, uint64_t salt)
{
	uint64_t got = 0, want = 0;

	for (size_t k = 0; k < words; k++) {
		/* Multiplying by an odd weight makes the sum see words in the wrong place. */
		got += buf[k] * (2 * k + 1);
		want += word(k, salt) * (2 * k + 1);
	}
	if (got != want)
		fprintf(stderr, "%s: checksum %#llx, want %#llx\n", name, (unsigned long long)got,
			(unsigned long long)want);
	return got == want;
}

static void run_case(struct bench_args *args, const char *name, int stride, uint64_t *buf,
		     size_t bytes, unsigned id)
{
	size_t words = bytes / sizeof(uint64_t);
	uint64_t salt = 0;
	double t0, secs;
	unsigned reps = args->reps;

	if (!reps) /* not given */
		reps = stride || bytes >= CONT_BYTES ? 1 : (unsigned)(CONT_BYTES / bytes);
	t0 = bench_now();
	for (unsigned r = 0; r < reps; r++) {
		salt = GOLDEN64 * (id * 1000003u + r + 1);
		if (stride)
			store_stride(buf, words, salt);
		else
			store_cont(buf, words, salt);
		/* Only the last pass is read back: keep the compiler from dropping the others. */
		__asm__ volatile("" ::: "memory");
	}
	secs = bench_now() - t0;

	bench_result(args, name, bytes, secs, (double)bytes * reps / secs / 1e6, "MB/s",
		     check(name, buf, words, salt));
}

/* One store a page: the faults happen here, not in the timed passes. */
static void first_touch(uint64_t *buf, size_t bytes)
{
	for (size_t k = 0; k < bytes / sizeof(uint64_t); k += WORDS_PER_PAGE)
		buf[k] = 0;
}

int main(int argc, char **argv)
{
	struct bench_args args;
	size_t bytes;
	uint64_t *by_mmap, *by_brk;

	/* reps 0 cannot come from the command line: it means "not given". */
	bench_parse_args(argc, argv, usage, DEFAULT_SIZE, 0, &args);
	if (args.size < PAGE || args.size > (SIZE_MAX >> 2)) {
		fprintf(stderr, "mem2: --size %llu is out of range (4K or more)\n",
			(unsigned long long)args.size);
		return 2;
	}
	bytes = (size_t)args.size & ~(size_t)(PAGE - 1);

	by_mmap = buffer_mmap(bytes);
	by_brk = buffer_brk(bytes);
	first_touch(by_mmap, bytes);
	first_touch(by_brk, bytes);

	run_case(&args, "mem2/mmap-stride", 1, by_mmap, bytes, 0);
	run_case(&args, "mem2/mmap-cont", 0, by_mmap, bytes, 1);
	run_case(&args, "mem2/brk-stride", 1, by_brk, bytes, 2);
	run_case(&args, "mem2/brk-cont", 0, by_brk, bytes, 3);
	return bench_exit(&args);
}
