/* elfmap_prog.c - a program linked with -lhugetlbfs and for huge pages (its segments
 * 2 MiB apart: tests/cli/test_htlb_env.sh builds it with -zcommon-page-size and
 * -zmax-page-size of 2 MiB), for HUGETLB_ELFMAP: it prints, for a constant, a function
 * and a variable of its own, the KernelPageSize (kB) of their mapping and whether that
 * mapping is a file on hugetlbfs; then forks, and the child writes the variable,
 * checks the same bytes and says where its variable is.
 * usage: elfmap_prog [drain|mprotect]
 * drain: before fork, every free page of the default huge page size is taken (a
 * private mapping of each, touched), so that a child that shared a private hugetlb page
 * of its parent's would find none to copy it to on its first write (and die of SIGBUS).
 * mprotect: before fork, the variable's 4 KiB page is made read-only and read-write
 * again (the kernel cannot split a hugetlb page's mapping), and where it is then is
 * said. */
#include <hugetlbfs.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char constant[] = "a constant of the program's read-only data";
int variable = 42;

__attribute__((noinline)) int function(int x)
{
	return x * 3 + 1;
}

/* The mapping of p in /proc/self/smaps: its KernelPageSize and its path. */
static void where(const void *p, long *kps, char *path, size_t len)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi, a = (unsigned long)p;
	char line[512];
	int in = 0;

	*kps = -1;
	path[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		char name[256] = "";
		long v;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255[^\n]", &lo, &hi, name) >= 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a >= lo && a < hi;
			if (in)
				snprintf(path, len, "%s", name);
		} else if (in && sscanf(line, "KernelPageSize: %ld kB", &v) == 1) {
			*kps = v;
		}
	}
	fclose(f);
}

/* Whether path (as smaps names it, " (deleted)" after it or not) lies in a directory
 * that hugetlbfs_test_path says is hugetlbfs. */
static int on_hugetlbfs(const char *path)
{
	char dir[256];
	char *slash;

	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (dir[0] != '/' || !slash || slash == dir)
		return 0;
	*slash = 0;
	return hugetlbfs_test_path(dir) == 1;
}

static void report(const char *what, const void *p)
{
	char path[256];
	long kps;

	where(p, &kps, path, sizeof path);
	printf("%s kps=%ld hugetlbfs=%d\n", what, kps, on_hugetlbfs(path));
}

/* Takes the free pages of the default huge page size: how many. */
static int drain(void)
{
	long hs = gethugepagesize();
	int n = 0;

	while (hs > 0 && n < 4096) {
		char *p = mmap(NULL, (size_t)hs, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		if (p == MAP_FAILED)
			break;
		p[0] = 1;
		n++;
	}
	return n;
}

int main(int argc, char **argv)
{
	int status;
	pid_t pid;

	report("const", constant);
	report("text", (const void *)(uintptr_t)function);
	report("data", &variable);
	if (argc > 1 && !strcmp(argv[1], "drain"))
		printf("drained %d\n", drain());
	if (argc > 1 && !strcmp(argv[1], "mprotect")) {
		void *page = (void *)((uintptr_t)&variable & ~(uintptr_t)4095);
		int ro = mprotect(page, 4096, PROT_READ), back = mprotect(page, 4096,
									PROT_READ | PROT_WRITE);
		printf("mprotect %d %d\n", ro, back);
		report("data after", &variable);
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		variable++;
		report("child data", &variable);
		fflush(stdout);
		_exit(function(variable) == 130 && !strcmp(constant + 2, "constant of the program's "
						       "read-only data") ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	printf("child %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "failed");
	printf("parent %s\n", variable == 42 && function(3) == 10 ? "ok" : "failed");
	return 0;
}
