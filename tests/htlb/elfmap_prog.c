/* elfmap_prog.c - a program linked with -lhugetlbfs and for huge pages (its segments
 * 2 MiB apart: tests/cli/test_htlb_env.sh builds it with -zcommon-page-size and
 * -zmax-page-size of 2 MiB), for HUGETLB_ELFMAP: it prints, for a constant, a function
 * and a variable of its own, the KernelPageSize (kB) of their mapping and whether that
 * mapping is a file on hugetlbfs; then forks, and the child checks the same bytes.
 * usage: elfmap_prog */
#include <hugetlbfs.h>
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

int main(void)
{
	int status;
	pid_t pid;

	report("const", constant);
	report("text", (const void *)(uintptr_t)function);
	report("data", &variable);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		variable++;
		_exit(function(variable) == 130 && !strcmp(constant + 2, "constant of the program's "
						       "read-only data") ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	printf("child %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "failed");
	printf("parent %s\n", variable == 42 && function(3) == 10 ? "ok" : "failed");
	return 0;
}
