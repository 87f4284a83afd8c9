/* fault.c - first-touch cost: how fast page faults make fresh memory resident. */
#include <sys/resource.h>

#include "kernel.h"

#define PAGE 4096

static const char usage[] =
	"First touch: writes one byte in each 4 KiB page of a fresh block, so the time is\n"
	"that of the page faults; metric GB/s (10^9 bytes) of memory made resident.\n"
	"  --size N  bytes of the block (default 4G)\n"
	"  --reps R  blocks, each fresh and never freed: R * N bytes in all (default 1)\n"
	"The process's minor faults during the touch go to stderr.\n";

/* The byte for each page: never 0, so a page the touch missed (still zero) shows. */
static uint8_t mark(uint64_t page)
{
	return (uint8_t)(1 + page % 255);
}

/* Byte `page` lies in the page-th 4 KiB page the block overlaps, at its start or at the
 * block's start; the block need not start on a page. */
static uint8_t *page_byte(uint8_t *p, uint64_t page)
{
	uint8_t *first_page = (uint8_t *)((uintptr_t)p & ~(uintptr_t)(PAGE - 1));

	return page ? first_page + page * PAGE : p;
}

static uint64_t pages_of(const uint8_t *p, uint64_t size)
{
	uintptr_t start = (uintptr_t)p & ~(uintptr_t)(PAGE - 1);

	return ((uintptr_t)p + size - start + PAGE - 1) / PAGE;
}

/* noinline: the writes are the measurement and must happen here, not be merged with
 * the reads of the check. */
__attribute__((noinline)) static void touch(uint8_t *p, uint64_t pages)
{
	for (uint64_t i = 0; i < pages; i++)
		*page_byte(p, i) = mark(i);
}

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	uint64_t pages_total = 0, bad = 0;
	double seconds = 0;
	long faults = 0;

	bench_parse_args(argc, argv, usage, 4ull << 30, 1, &a);
	for (unsigned r = 0; r < a.reps; r++) {
		uint8_t *p = bench_alloc(a.size);
		uint64_t pages = pages_of(p, a.size);
		long f0 = minor_faults();
		double t0 = bench_now();

		touch(p, pages);
		seconds += bench_now() - t0;
		faults += minor_faults() - f0;
		pages_total += pages;
		for (uint64_t i = 0; i < pages; i++)
			bad += *page_byte(p, i) != mark(i);
	}
	if (bad)
		fprintf(stderr, "fault: %llu pages do not hold the byte written\n",
			(unsigned long long)bad);
	fprintf(stderr, "fault: %ld minor faults while touching %llu pages of 4 KiB (%.4f per page)\n",
		faults, (unsigned long long)pages_total, (double)faults / (double)pages_total);
	bench_result(&a, "fault", a.size, seconds, (double)a.size * a.reps / seconds / 1e9, "GB/s",
		     bad == 0);
	return bench_exit(&a);
}
