/* heapheavy.c - a heap-heavy unmodified program: one 512 MiB array, 256 MiB of 64 KiB-1 MiB
 * blocks, 2 threads each allocating 192 MiB of 16 B-4 KiB objects, all written and summed.
 *
 * usage: heapheavy [--div N] [--hold]
 * --div N divides every amount by N (a small version for quick tests); --hold waits for
 * EOF on stdin before freeing and exiting, so a test can look at the process meanwhile.
 * stdout: the checksum line (the same under every malloc). stderr: the resident memory,
 * "rss_bytes=N" (Rss + Private_Hugetlb + Shared_Hugetlb from /proc/self/smaps_rollup, as
 * VmRSS leaves hugetlb out) and "vmrss_bytes=N", then "holding pid=N" with --hold. */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)

struct objects {
	size_t total;  /* bytes to allocate */
	uint64_t seed;
	unsigned char **p;
	size_t *size;
	size_t n;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "heapheavy: malloc(%zu) failed\n", n);
		exit(1);
	}
	return p;
}

/* Writes every byte of p[0..n) with values from seed. */
static void fill(unsigned char *p, size_t n, uint64_t seed)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = seed + i * 0x9e3779b97f4a7c15ull;
		v ^= v >> 29;
		memcpy(p + i, &v, 8);
	}
	for (; i < n; i++)
		p[i] = (unsigned char)(seed >> (i & 7));
}

static uint64_t sum(const unsigned char *p, size_t n)
{
	uint64_t s = 0, v;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&v, p + i, 8);
		s += v ^ (s >> 17);
	}
	for (; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

static void *allocate_objects(void *arg)
{
	struct objects *o = arg;
	size_t cap = o->total / 16 + 1, used = 0;
	uint64_t r = o->seed;
	o->p = xmalloc(cap * sizeof *o->p);
	o->size = xmalloc(cap * sizeof *o->size);
	o->n = 0;
	while (used < o->total) {
		r = mix64(r);
		size_t n = 16 + r % (4096 - 16 + 1);
		o->p[o->n] = xmalloc(n);
		o->size[o->n] = n;
		fill(o->p[o->n], n, r);
		used += n;
		o->n++;
	}
	return NULL;
}

/* Rss + hugetlb from smaps_rollup, and VmRSS from status; -1 if unreadable. */
static void resident(long long *rss, long long *vmrss)
{
	char line[256];
	long long kb;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	*rss = *vmrss = -1;
	if (f) {
		*rss = 0;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "Rss: %lld kB", &kb) == 1 ||
			    sscanf(line, "Private_Hugetlb: %lld kB", &kb) == 1 ||
			    sscanf(line, "Shared_Hugetlb: %lld kB", &kb) == 1)
				*rss += kb * 1024;
		fclose(f);
	}
	f = fopen("/proc/self/status", "r");
	if (f) {
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "VmRSS: %lld kB", &kb) == 1)
				*vmrss = kb * 1024;
		fclose(f);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: heapheavy [--div N] [--hold]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t div = 1;
	int hold = 0;
	for (int i = 1; i < argc; i++) {
		char *end;
		if (strcmp(argv[i], "--hold") == 0) {
			hold = 1;
		} else if (strcmp(argv[i], "--div") == 0 && i + 1 < argc) {
			div = strtoul(argv[++i], &end, 10);
			if (*end || div < 1 || div > 4096)
				usage();
		} else {
			usage();
		}
	}
	size_t array_bytes = 512 * MIB / div, blocks_total = 256 * MIB / div;
	struct objects obj[2] = {
		{ .total = 192 * MIB / div, .seed = 1 },
		{ .total = 192 * MIB / div, .seed = 2 },
	};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, allocate_objects, &obj[i])) {
			fprintf(stderr, "heapheavy: pthread_create failed\n");
			return 1;
		}

	unsigned char *array = xmalloc(array_bytes);
	fill(array, array_bytes, 3);
	size_t cap = blocks_total / (64 << 10) + 1, nblocks = 0, used = 0;
	unsigned char **block = xmalloc(cap * sizeof *block);
	size_t *bsize = xmalloc(cap * sizeof *bsize);
	uint64_t r = 4;
	while (used < blocks_total) {
		r = mix64(r);
		size_t n = (64 << 10) + r % (MIB - (64 << 10) + 1);
		block[nblocks] = xmalloc(n);
		bsize[nblocks] = n;
		fill(block[nblocks], n, r);
		used += n;
		nblocks++;
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);

	uint64_t check = sum(array, array_bytes);
	for (size_t i = 0; i < nblocks; i++)
		check = check * 3 + sum(block[i], bsize[i]);
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < obj[k].n; i++)
			check = check * 3 + sum(obj[k].p[i], obj[k].size[i]);
	printf("heapheavy: %zu MiB array, %zu blocks, %zu + %zu objects, checksum %016" PRIx64 "\n",
	       array_bytes / MIB, nblocks, obj[0].n, obj[1].n, check);
	fflush(stdout);

	long long rss, vmrss;
	resident(&rss, &vmrss);
	fprintf(stderr, "rss_bytes=%lld\nvmrss_bytes=%lld\n", rss, vmrss);
	if (hold) {
		char buf[256];
		fprintf(stderr, "holding pid=%ld\n", (long)getpid());
		while (fread(buf, 1, sizeof buf, stdin) > 0)
			;
	}

	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; i < obj[k].n; i++)
			free(obj[k].p[i]);
		free(obj[k].p);
		free(obj[k].size);
	}
	for (size_t i = 0; i < nblocks; i++)
		free(block[i]);
	free(block);
	free(bsize);
	free(array);
	return 0;
}
