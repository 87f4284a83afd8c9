/* bench/kernel.h - what every benchmark kernel shares: its command line, its big
 * arrays, its clock and its result lines, the contract `superpage bench` reads.
 *
 * A kernel is a plain C program. Its big arrays come from bench_alloc, which is
 * malloc (so `superpage run` decides the backing, as for any unmodified program),
 * or, built with -DBENCH_IDEAL and linked with libsuperpage, a strict sp_alloc of
 * the backing named by BENCH_IDEAL (2m, the default, or 1g; 1g serves blocks of at
 * least 1 GiB, smaller ones get 2m): the "ideal" of `superpage bench --peers`.
 * Arrays are never freed: the runtime's account at exit (--stats) must still see them.
 *
 * Command line: KERNEL [--size N] [--reps R] [--help]. N takes K/M/G suffixes (powers
 * of two); what it means is the kernel's own (matrix order, bytes, points...).
 * Output: one line per measured case on stdout,
 *   result name=NAME size=N seconds=S metric=M unit=U check=ok|FAIL
 * with NAME "kernel" or "kernel/case", S the seconds of the timed part only (the same
 * work under every backing: the runner's speedups are ratios of S; a kernel that runs
 * for a set time instead gives the seconds of a set amount of work, as malloc.c does),
 * M in the seed's units (MB/s, MFLOPS, ns/load, ...). Anything else a kernel prints goes to
 * stderr. Exit 0 if every check passed, 1 if one failed, 2 for bad usage, 3 if the
 * ideal backing could not be had. */
#ifndef BENCH_KERNEL_H
#define BENCH_KERNEL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef BENCH_IDEAL
#include <superpage.h>
#endif

/* The largest array bench_alloc gave, for the memory line. */
static size_t bench_largest;

struct bench_args {
	uint64_t size;  /* --size, or the kernel's default */
	unsigned reps;  /* --reps, or the kernel's default */
	int failed;     /* set by bench_result when a check fails */
};

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Parses N with an optional K/M/G suffix (powers of two). 0 on success. */
static inline int bench_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end == 'i' && shift)
		end++;
	if (*end == 'B' && shift)
		end++;
	if (*end || v == 0 || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

/* Reads the command line into a; prints usage and exits 0 for --help, 2 for bad input. */
static inline void bench_parse_args(int argc, char **argv, const char *usage,
				    uint64_t def_size, unsigned def_reps, struct bench_args *a)
{
	a->size = def_size;
	a->reps = def_reps;
	a->failed = 0;
	for (int i = 1; i < argc; i++) {
		uint64_t v;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: %s [--size N] [--reps R]\n%s", argv[0], usage);
			exit(0);
		}
		if ((!strcmp(argv[i], "--size") || !strcmp(argv[i], "--reps")) && i + 1 < argc) {
			if (bench_parse_size(argv[i + 1], &v) < 0 ||
			    (argv[i][2] == 'r' && v > 1000000)) {
				fprintf(stderr, "%s: bad value for %s: '%s'\n", argv[0], argv[i],
					argv[i + 1]);
				exit(2);
			}
			if (argv[i][2] == 's')
				a->size = v;
			else
				a->reps = (unsigned)v;
			i++;
			continue;
		}
		fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", argv[0], argv[i]);
		exit(2);
	}
}

/* Repetitions of an n x n pass that do the work of one pass at order n_ref (at least
 * 1, at most 1000000): a small matrix, in cache, still runs long enough to time. */
static inline unsigned bench_square_reps(uint64_t n, uint64_t n_ref)
{
	uint64_t r = n_ref * n_ref / (n * n);

	return r < 1 ? 1 : r > 1000000 ? 1000000 : (unsigned)r;
}

/* Prints one result line; a failed check makes the kernel exit 1 at the end. */
static inline void bench_result(struct bench_args *a, const char *name, uint64_t size,
				double seconds, double metric, const char *unit, int ok)
{
	printf("result name=%s size=%llu seconds=%.6f metric=%.6g unit=%s check=%s\n", name,
	       (unsigned long long)size, seconds, metric, unit, ok ? "ok" : "FAIL");
	fflush(stdout);
	if (!ok)
		a->failed = 1;
}

/* Prints to out what the kernel's data and text got, read from /proc/self/smaps while
 * its arrays are still mapped (bench_exit prints it to stdout with BENCH_SMAPS set,
 * as superpage bench sets it; the last such line on stdout is the one judged):
 *   memory data_bytes=N thp_bytes=N hugetlb_2m_bytes=N hugetlb_1g_bytes=N largest_bytes=N
 *          text_bytes=N text_huge_bytes=N text_hugetlb_bytes=N   (one line)
 * data is every anonymous mapping but the stack and code (the heap, mmaps, hugetlb),
 * resident (Rss, plus *_Hugetlb which Rss leaves out); largest is the largest
 * bench_alloc array, which says how much of the data 1 GiB pages could hold. text is
 * the program's own code, resident: its executable's executable mappings and the
 * anonymous executable ones, where superpage run --text puts the code it moves;
 * text_huge is the part on huge pages of any kind (THP, PMD-mapped page cache,
 * hugetlb), text_hugetlb the part on hugetlb pages. */
static inline void bench_print_memory_to(FILE *out)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512], exe[256];
	unsigned long long data = 0, thp = 0, tlb2m = 0, tlb1g = 0, kps = 4, v;
	unsigned long long text = 0, text_huge = 0, text_tlb = 0;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	int anon = 0, code = 0;

	exe[n > 0 ? n : 0] = 0;
	if (!f) {
		fprintf(out, "memory unknown=%d\n", errno);
		return;
	}
	while (fgets(line, sizeof line, f)) {
		char name[32];

		if (sscanf(line, "%31[A-Za-z_]: %llu kB", name, &v) != 2) {
			/* A mapping's first line: "start-end perms offset dev inode [path]". */
			char perms[8] = "", *path;
			unsigned long long inode = 0;
			int at = -1;

			if (sscanf(line, "%*x-%*x %7s %*x %*s %llu %n", perms, &inode, &at) < 2 || at < 0)
				continue;
			path = line + at;
			path[strcspn(path, "\n")] = 0;
			anon = !strchr(perms, 'x') &&
			       ((inode == 0 && (path[0] == 0 || !strcmp(path, "[heap]"))) ||
				!strncmp(path, "/anon_hugepage", 14));
			code = strchr(perms, 'x') && path[0] != '[' &&
			       (inode == 0 || !strncmp(path, "/anon_hugepage", 14) ||
				!strncmp(path, "/memfd:", 7) || (exe[0] && !strcmp(path, exe)));
			continue;
		}
		if (code) {
			if (!strcmp(name, "Rss"))
				text += v;
			else if (!strcmp(name, "AnonHugePages") || !strcmp(name, "FilePmdMapped"))
				text_huge += v;
			else if (!strcmp(name, "Private_Hugetlb") || !strcmp(name, "Shared_Hugetlb")) {
				text += v;
				text_huge += v;
				text_tlb += v;
			}
			continue;
		}
		if (!anon)
			continue;
		if (!strcmp(name, "KernelPageSize"))
			kps = v;
		else if (!strcmp(name, "Rss"))
			data += v;
		else if (!strcmp(name, "AnonHugePages"))
			thp += v;
		else if (!strcmp(name, "Private_Hugetlb") || !strcmp(name, "Shared_Hugetlb")) {
			data += v;
			if (kps >= (1u << 20))
				tlb1g += v;
			else
				tlb2m += v;
		}
	}
	fclose(f);
	fprintf(out, "memory data_bytes=%llu thp_bytes=%llu hugetlb_2m_bytes=%llu hugetlb_1g_bytes=%llu "
		"largest_bytes=%llu text_bytes=%llu text_huge_bytes=%llu text_hugetlb_bytes=%llu\n",
		data << 10, thp << 10, tlb2m << 10, tlb1g << 10, (unsigned long long)bench_largest,
		text << 10, text_huge << 10, text_tlb << 10);
	fflush(out);
}

static inline void bench_print_memory(void)
{
	bench_print_memory_to(stdout);
}

/* The kernel's exit status; call it last, with the arrays still allocated. */
static inline int bench_exit(const struct bench_args *a)
{
	if (getenv("BENCH_SMAPS"))
		bench_print_memory();
	return a->failed ? 1 : 0;
}

/* A big array, never freed. Exits 3 if it cannot be had (the ideal's strict backing)
 * and 1 if malloc fails. */
static inline void *bench_alloc(size_t bytes)
{
	void *p;
#ifdef BENCH_IDEAL
	const char *want = getenv("BENCH_IDEAL");
	unsigned flags = SP_STRICT | SP_2M;

	if (want && !strcmp(want, "1g") && bytes >= ((size_t)1 << 30))
		flags = SP_STRICT | SP_1G;
	else if (want && strcmp(want, "2m") && strcmp(want, "1g")) {
		fprintf(stderr, "BENCH_IDEAL must be 2m or 1g, not '%s'\n", want);
		exit(2);
	}
	p = sp_alloc(bytes, flags);
	if (!p) {
		fprintf(stderr, "ideal: no strict %s block of %zu bytes: %s\n",
			(flags & SP_1G) ? "1g" : "2m", bytes, strerror(errno));
		exit(3);
	}
#else
	p = malloc(bytes);
	if (!p) {
		fprintf(stderr, "malloc(%zu) failed\n", bytes);
		exit(1);
	}
#endif
	if (bytes > bench_largest)
		bench_largest = bytes;
	return p;
}

#endif
