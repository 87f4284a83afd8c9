/* kernels.c - the benchmark kernels: every fact of one (sizes, data, judging, prose) in one row. */
#include <string.h>

#include "parts.h"

#define C BENCH_WALK_COLUMNS
#define R BENCH_WALK_RANDOM
#define S BENCH_WALK_STREAM

static const struct bench_kernel kernels[] = {
	{ "trans", "1000 4096 8192", "1000 8192", BENCH_EST_MATRIX, 2, .walk = C,
	  .about = "the seed's trans.c: b = a transposed, n x n doubles, a read along its "
		   "rows and b written down its columns, a store n*8 bytes after the last" },
	{ "trans2", "1000 8192", NULL, BENCH_EST_MATRIX, 2, .walk = C,
	  .about = "the seed's trans2.c: the same transpose in its two loop orders, a read by "
		   "rows (strided stores) and by columns (strided loads)" },
	{ "transf", "1000 4096 8192 8200", "8192", BENCH_EST_MATRIX, 2, .walk = C,
	  .about = "the seed's trans.f: a transpose of column-major arrays, a load n*8 bytes "
		   "after the last, the column walk of a Fortran program" },
	{ "transw", "8192", NULL, BENCH_EST_MATRIX, 2, .walk = C,
	  .about = "the seed's transw.c (vm_align): a large transpose with its arrays on the "
		   "2 MiB grid (aligned) and off it (offset)" },
	{ "mem2", "512M", "64M", BENCH_EST_BYTES, 2, .walk = S,
	  .about = "the seed's mem2.c: stores into mmap and sbrk memory, a page apart (stride) "
		   "or one after another (cont)" },
	/* 4096: its column walk (4096 pages of 4K) outgrows an L2 TLB of 3072 entries,
	 * where 2000 does not. */
	{ "gemmx", "1000 2000 4096", "1000 2000", BENCH_EST_MATRIX, 3, .walk = C,
	  .about = "the seed's gemmx.c: C = A*B on n x n doubles, naive (B walked down its "
		   "columns, a page a load) and blocked (packed blocks sized to the caches)" },
	{ "fft", "131072 4M", "131072 4M", BENCH_EST_POINTS, 2, .walk = S,
	  .about = "the seed's FFT: radix-2 complex transforms of n points, repeated; strides "
		   "that double from pass to pass" },
	{ "himeno", "1 2 3", "2", BENCH_EST_GRID, 1, .walk = S,
	  .about = "the Himeno benchmark: Jacobi sweeps of a 19-point stencil over a 3-D grid "
		   "(1, 2, 3: sizes S, M, L)" },
	{ "gups", "1G", "1G", BENCH_EST_BYTES, 1, .walk = R,
	  .about = "random read-modify-write updates of 64-bit words over one table" },
	{ "tlbreach", "8M 64M 512M 1G 2G 4G", "64M 1G", BENCH_EST_BYTES, 1, .walk = R,
	  .curve = true,
	  .about = "a pointer chase through a random ring of cache lines: the latency of a "
		   "load whose page is anywhere in the working set" },
	{ "stream", "256M", "256M", BENCH_EST_BYTES, 3, .walk = S,
	  .about = "the STREAM triad, a[i] = b[i] + s*c[i]: memory bandwidth" },
	{ "fault", "4G", "1G", BENCH_EST_BYTES, 1, .walk = S,
	  .about = "the first touch of fresh memory: the cost of its page faults (a 2M page is "
		   "one fault where 4K pages are 512)" },
	/* Not in --quick unless named: each run is two passes and a promotion. */
	{ "promote", "1G", NULL, BENCH_EST_BYTES, 1, .walk = R, .promote = true,
	  .about = "gups's updates timed before and after superpage promote collapsed the "
		   "running kernel's table onto huge pages (the promote column: run plain, "
		   "promoted between its passes)" },
	/* 4G: a hugetlb heap 100 times the size of 40M's, whose fork should cost about as
	 * much (src/runtime/fork.c); in a full run only, a minute or more a run under 2m
	 * and 1g, where each child copies the heap it shares before it can _exit. */
	{ "fork", "40M 512M 4G", "40M", BENCH_EST_HEAP, 1, .forks = true, .walk = S,
	  .about = "fork() timed in the parent while 2 threads malloc, write and free blocks of "
		   "16 B-4 MiB; each child checks it sees the parent's data and _exits. size: the "
		   "data held besides, filled; median and p90 of the call, and child: until it "
		   "is reaped (judged by the pages its data had when the forks began)" },
	/* Not in --quick: make bench puts mallocs side by side with bench/compare.sh. */
	{ "malloc", "1 2", NULL, BENCH_EST_POINTS, 0, .allocator = true, .walk = S,
	  .about = "malloc and free themselves (mixed sizes, hand-offs, realloc)" },
	/* Bytes of text in use: within the L2 instruction TLB's reach on 4 KiB pages (here
	 * 512 entries, 2 MiB), and 8 times past it, where 2 MiB pages need only 8 entries. */
	{ "itlb", "1M 4M 16M", "1M 16M", BENCH_EST_BYTES, 1, .text = true, .x86_64 = true,
	  .walk = S,
	  .about = "calls through generated code, a function per 4 KiB page: the instruction "
		   "TLB (run with --text, judged by its code's pages)" },
};
#define N_KERNELS ((int)(sizeof kernels / sizeof kernels[0]))

static bool runs_here(const struct bench_kernel *k)
{
#ifdef __x86_64__
	(void)k;
	return true;
#else
	return !k->x86_64;
#endif
}

const struct bench_kernel *bench_kernel_find(const char *name, size_t n)
{
	for (int i = 0; i < N_KERNELS; i++)
		if (strlen(kernels[i].name) == n && !memcmp(kernels[i].name, name, n) &&
		    runs_here(&kernels[i]))
			return &kernels[i];
	return NULL;
}

const struct bench_kernel *bench_kernel_of(const char *case_name)
{
	size_t n = strcspn(case_name, "/");

	for (int i = 0; i < N_KERNELS; i++)
		if (strlen(kernels[i].name) == n && !memcmp(kernels[i].name, case_name, n))
			return &kernels[i];
	return NULL;
}

const struct bench_kernel *bench_kernel_at(int i)
{
	for (int k = 0; k < N_KERNELS; k++)
		if (runs_here(&kernels[k]) && i-- == 0)
			return &kernels[k];
	return NULL;
}

/* A high guess costs only pool pages; a low one makes 2m runs fall (and be marked so). */
uint64_t bench_kernel_bytes(const struct bench_kernel *k, uint64_t size)
{
	uint64_t b;

	switch (k->est) {
	case BENCH_EST_MATRIX:
		b = size * size * 8;
		break;
	case BENCH_EST_POINTS:
		b = size * 16;
		break;
	case BENCH_EST_GRID: /* Himeno S, M, L: 14 float arrays over the grid */
		b = size == 1 ? 65ull * 65 * 129 : size == 2 ? 129ull * 129 * 257 : 257ull * 257 * 513;
		b *= 14 * 4;
		break;
	case BENCH_EST_HEAP: /* the data held, and the threads' blocks: tens of MiB at peak */
		b = size + 48 * MIB;
		break;
	default:
		b = size;
	}
	return b * k->mult + 16 * MIB;
}

uint64_t bench_kernel_pool_pages(const struct bench_kernel *k, uint64_t size, uint64_t page)
{
	uint64_t b = bench_kernel_bytes(k, size);

	if (page >= GIB)
		/* Of a kernel that forks, its array (bench/kernels/fork.c); of the others, any
		 * data of a GiB or more may be an array that large. */
		b = k->forks ? (size >= 2 * GIB ? size / 2 / GIB * GIB : 0) : b >= GIB ? b : 0;
	/* The room a fork needs: every huge page the child shares, free in the pool. */
	return (k->forks ? 2 : 1) * ((b + page - 1) / page);
}
