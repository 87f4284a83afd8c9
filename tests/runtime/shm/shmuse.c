/* shmuse.c - shared memory as a program sees it: a SysV segment (IPC_PRIVATE, and one
 * found again by its key) and a MAP_SHARED|MAP_ANONYMOUS mapping, each written by a
 * forked child and read by the parent after waitpid. Prints the sizes IPC_STAT gives
 * and a checksum per region; with --huge, also whether each region is on hugetlb
 * pages (its mapping in /proc/self/smaps has KernelPageSize 2048 kB and hugetlb
 * memory). Exits 1 at the first difference from what the kernel promises. Each
 * segment's id is said on stderr, "shmuse: shmid ID pid PID", for a test to remove
 * it should this program be killed before it does.
 * Usage: shmuse [--huge] */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#define KB 1024ul
#define MB (1024ul * KB)
#define SHM_ASK (8 * MB + 4 * KB) /* not a multiple of 2 MiB */
#define ANON_LEN (8 * MB)
#define ODD_LEN (4 * MB + 4 * KB) /* a shared mapping whose length is not 2 MiB pages */

static void die(const char *what)
{
	printf("shmuse: FAILED: %s (errno %d)\n", what, errno);
	exit(1);
}

static unsigned char pattern(size_t i, unsigned seed)
{
	return (unsigned char)((i * 131 + (i >> 12) * 7 + seed) & 0xff);
}

/* The FNV-1a checksum of len bytes at p, each checked to be the pattern (the first
 * that is not ends the program, said with where: "of the grown mapping", say). */
static uint64_t checked_sum(const unsigned char *p, size_t len, unsigned seed, const char *where)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++) {
		if (p[i] != pattern(i, seed)) {
			printf("shmuse: FAILED: byte %zu%s is %u, want %u\n", i, where, p[i],
			       pattern(i, seed));
			exit(1);
		}
		h = (h ^ p[i]) * 0x100000001b3ull;
	}
	return h;
}

/* A child writes the pattern; the parent, once the child is gone, checks it and
 * returns its FNV-1a checksum. */
static uint64_t share(unsigned char *p, size_t len, unsigned seed)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		for (size_t i = 0; i < len; i++)
			p[i] = pattern(i, seed);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("shmuse: FAILED: the child that writes ended with status 0x%x\n", status);
		exit(1);
	}
	return checked_sum(p, len, seed, " (as the child wrote it)");
}

/* 1 if the mapping holding p is on 2 MiB hugetlb pages, 0 if not, -1 if not found. */
/* A shared anonymous mapping of len bytes: zero, shared with a child, and unmapped
 * whole by the length it was asked with. Prints its checksum; *huge (with --huge):
 * whether it was on hugetlb pages. */
static void shared_anon(const char *name, size_t len, unsigned seed, bool huge, int *hp);

/* A shared anonymous mapping grown by mremap (as Python's mmap.resize does), while a
 * forked child still has it: the grown mapping keeps what was written, and what the
 * parent writes after is what the child reads (one shared object, as the kernel keeps
 * it). The new part is not touched: the kernel's shared anonymous object keeps its
 * size, and a touch past it is SIGBUS. Prints its checksum; *hp as for shared_anon. */
static void grown(unsigned seed, bool huge, int *hp);

static int on_hugetlb(const void *p)
{
	char line[512];
	uintptr_t a = (uintptr_t)p, lo, hi;
	unsigned long kps = 0, hugetlb = 0, v;
	bool in = false, found = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		die("fopen /proc/self/smaps");
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = a >= lo && a < hi;
			found |= in;
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "KernelPageSize: %lu kB", &v) == 1)
			kps = v;
		else if (sscanf(line, "Shared_Hugetlb: %lu kB", &v) == 1 ||
			 sscanf(line, "Private_Hugetlb: %lu kB", &v) == 1)
			hugetlb += v;
	}
	fclose(f);
	if (!found)
		return -1;
	return kps == 2048 && hugetlb > 0;
}

/* shm_segsz of IPC_STAT, 0 if it fails (checked once the segment is removed). */
static size_t stat_size(int id)
{
	struct shmid_ds ds;

	return shmctl(id, IPC_STAT, &ds) < 0 ? 0 : ds.shm_segsz;
}

/* A segment found again by its key: the same id with or without IPC_CREAT, and a
 * larger size is refused (EINVAL), as for any segment. */
static int keyed(bool huge)
{
	key_t key = (key_t)(0x53500000 | (getpid() & 0xfffff));
	int id = shmget(key, SHM_ASK, IPC_CREAT | IPC_EXCL | 0600), h = 0;

	if (id < 0)
		die("shmget key IPC_CREAT|IPC_EXCL");
	fprintf(stderr, "shmuse: shmid %d pid %d\n", id, (int)getpid());
	int same = shmget(key, SHM_ASK, 0600);
	int creat = shmget(key, SHM_ASK, IPC_CREAT | 0600);
	int excl = shmget(key, SHM_ASK, IPC_CREAT | IPC_EXCL | 0600);
	int excl_errno = errno;
	int larger = shmget(key, SHM_ASK + 4 * KB, 0600);
	int larger_errno = errno;
	size_t got = stat_size(id);
	void *p = shmat(id, NULL, 0);
	if (p == (void *)-1) {
		shmctl(id, IPC_RMID, NULL);
		die("shmat key");
	}
	memset(p, 0x5a, SHM_ASK);
	if (huge)
		h = on_hugetlb(p);
	shmdt(p);
	if (shmctl(id, IPC_RMID, NULL) < 0)
		die("shmctl IPC_RMID key");
	if (same != id || creat != id)
		die("the key does not find its segment");
	if (excl != -1 || excl_errno != EEXIST)
		die("IPC_EXCL on an existing key is not EEXIST");
	if (larger != -1 || larger_errno != EINVAL)
		die("a larger size on an existing key is not EINVAL");
	if (!got)
		die("shmctl IPC_STAT key");
	printf("key size %zu stat %zu lookups ok\n", (size_t)SHM_ASK, got);
	return h;
}

int main(int argc, char **argv)
{
	bool huge = argc > 1 && !strcmp(argv[1], "--huge");
	int hk = keyed(huge), hs = 0, ha = 0, ho = 0;

	/* IPC_PRIVATE: attached, then removed at once, so that it goes when this
	 * process and its child end, whatever happens to them. */
	int id = shmget(IPC_PRIVATE, SHM_ASK, IPC_CREAT | 0600);
	if (id < 0)
		die("shmget IPC_PRIVATE");
	fprintf(stderr, "shmuse: shmid %d pid %d\n", id, (int)getpid());
	unsigned char *s = shmat(id, NULL, 0);
	if (s == (void *)-1) {
		shmctl(id, IPC_RMID, NULL);
		die("shmat");
	}
	size_t got = stat_size(id);
	if (shmctl(id, IPC_RMID, NULL) < 0)
		die("shmctl IPC_RMID");
	size_t got_removed = stat_size(id); /* attached still: Linux keeps it */
	if (!got || !got_removed)
		die("shmctl IPC_STAT");
	uint64_t sum = share(s, SHM_ASK, 1);
	if (huge)
		hs = on_hugetlb(s);
	if (shmdt(s) < 0)
		die("shmdt");
	printf("shm size %zu stat %zu removed %zu checksum %016llx\n", (size_t)SHM_ASK, got,
	       got_removed, (unsigned long long)sum);

	shared_anon("anon", ANON_LEN, 2, huge, &ha);
	shared_anon("odd", ODD_LEN, 3, huge, &ho);
	int hg = 0;
	grown(4, huge, &hg);
	if (huge)
		printf("shm hugetlb=%d key hugetlb=%d anon hugetlb=%d odd hugetlb=%d grow hugetlb=%d\n",
		       hs, hk, ha, ho, hg);
	return 0;
}

static void grown(unsigned seed, bool huge, int *hp)
{
	const size_t len = 4 * MB, big = 8 * MB;
	int go[2], status;
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || pipe(go) < 0)
		die("mmap MAP_SHARED|MAP_ANONYMOUS to grow");
	for (size_t i = 0; i < len; i++)
		m[i] = pattern(i, seed);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* the parent's writes after its mremap, seen here (a parent that dies
		 * first ends the wait: its end of the pipe closes) */
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		for (size_t i = 0; i < len; i++)
			if (m[i] != pattern(i, seed + 1))
				_exit(3);
		_exit(0);
	}
	close(go[0]);
	unsigned char *g = mremap(m, len, big, MREMAP_MAYMOVE);
	if (g == MAP_FAILED)
		die("mremap of a shared anonymous mapping, grown");
	uint64_t h = checked_sum(g, len, seed, " of the grown mapping");
	for (size_t i = 0; i < len; i++)
		g[i] = pattern(i, seed + 1);
	if (write(go[1], "x", 1) != 1 || waitpid(pid, &status, 0) != pid)
		die("the child of the grown mapping");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		printf("shmuse: FAILED: the child did not read what the parent wrote into the "
		       "grown mapping (status 0x%x)\n", status);
		exit(1);
	}
	if (huge)
		*hp = on_hugetlb(g);
	g = mremap(g, big, 2 * MB, 0);
	if (g == MAP_FAILED)
		die("mremap of a shared anonymous mapping, shrunk");
	if (g[0] != pattern(0, seed + 1))
		die("the shrunk mapping lost its first byte");
	if (munmap(g, 2 * MB) < 0)
		die("munmap of the grown mapping");
	close(go[1]);
	printf("grow size %zu to %zu checksum %016llx\n", len, big, (unsigned long long)h);
}

static void shared_anon(const char *name, size_t len, unsigned seed, bool huge, int *hp)
{
	unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("mmap MAP_SHARED|MAP_ANONYMOUS");
	for (size_t i = 0; i < len; i += 4096)
		if (m[i])
			die("a shared anonymous mapping does not read as zero");
	uint64_t sum = share(m, len, seed);
	if (huge)
		*hp = on_hugetlb(m);
	if (munmap(m, len) < 0)
		die("munmap of a whole shared mapping by its length");
	printf("%s size %zu checksum %016llx\n", name, len, (unsigned long long)sum);
}
