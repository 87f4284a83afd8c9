/* test_smaps.c - the smaps parser and coverage: captured files, range filters, hostile input. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define KB 1024ull
#define M2 (2ull << 20)
#define PID 4242

/* ---- helpers ---- */

/* Finds tests/unit/data/NAME from the source path or by walking up from the binary. */
static int load_data(const char *fake_path, const char *name)
{
	char path[PATH_MAX + 64], exe[PATH_MAX];
	const char *src = __FILE__, *slash = strrchr(src, '/');
	snprintf(path, sizeof path, "%.*sdata/%s", slash ? (int)(slash - src + 1) : 0, src, name);
	if (fk_file_load(fake_path, path) == 0)
		return 0;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	for (int up = 0; up < 8; up++) {
		char *s = strrchr(exe, '/');
		if (!s)
			break;
		*s = 0;
		snprintf(path, sizeof path, "%s/tests/unit/data/%s", exe, name);
		if (fk_file_load(fake_path, path) == 0)
			return 0;
	}
	printf("  cannot find tests/unit/data/%s\n", name);
	return -ENOENT;
}

static void setup(void)
{
	fk_reset();
	fk_machine_default();
	fk_pid_add(PID);
	fk_install();
}

/* Parses text as /proc/PID/smaps through the seam. */
static int parse(const char *text, size_t len, struct sp_coverage *cov, uintptr_t lo,
		 uintptr_t hi, struct sp_verify *v)
{
	fk_file_n("/proc/4242/smaps", text, len);
	int fd = sp_os->open("/proc/4242/smaps", O_RDONLY, 0);
	CHECK(fd >= 0);
	if (cov)
		memset(cov, 0, sizeof *cov);
	if (v)
		memset(v, 0, sizeof *v);
	int r = sp_smaps_parse(fd, cov, lo, hi, v);
	sp_os->close(fd);
	return r;
}

static uint64_t region_sum(const struct sp_coverage *c, bool huge)
{
	uint64_t s = 0;
	for (int i = 0; i < SP_REGION_COUNT; i++)
		s += huge ? c->region[i].huge_bytes : c->region[i].bytes;
	return s;
}

/* One smaps record in the kernel's format. Sizes in kB. */
static void rec(char *out, size_t len, const char *range, const char *perms, const char *path,
		unsigned size, unsigned kps, unsigned rss, unsigned anon_huge, unsigned hugetlb)
{
	char head[256];
	int n = snprintf(head, sizeof head, "%s %s 00000000 00:00 0", range, perms);
	size_t at = strlen(out);
	snprintf(out + at, len - at,
		 "%s%*s%s\n"
		 "Size:           %8u kB\nKernelPageSize: %8u kB\nMMUPageSize:    %8u kB\n"
		 "Rss:            %8u kB\nPss:            %8u kB\nPss_Dirty:      %8u kB\n"
		 "Shared_Clean:          0 kB\nShared_Dirty:          0 kB\n"
		 "Private_Clean:         0 kB\nPrivate_Dirty:  %8u kB\nReferenced:     %8u kB\n"
		 "Anonymous:      %8u kB\nKSM:                   0 kB\nLazyFree:              0 kB\n"
		 "AnonHugePages:  %8u kB\nShmemPmdMapped:        0 kB\nFilePmdMapped:         0 kB\n"
		 "Shared_Hugetlb:        0 kB\nPrivate_Hugetlb:%8u kB\nSwap:                  0 kB\n"
		 "SwapPss:               0 kB\nLocked:                0 kB\nTHPeligible:           0\n"
		 "ProtectionKey:         0\nVmFlags: rd wr mr mw me ac \n",
		 head, path[0] ? (n < 73 ? 73 - n : 1) : 1, "", path, size, kps, kps, rss, rss, rss,
		 rss, rss, rss, anon_huge, hugetlb);
}

/* ---- captured files ---- */

static void test_captured_huge(void)
{
	struct sp_coverage c;
	setup();
	if (load_data("/proc/4242/smaps", "smaps_huge.txt"))
		CHECK(!"test data missing");
	memset(&c, 0x5a, sizeof c);
	CHECK_EQ(sp_coverage(PID, &c), 0);
	/* totals worked out with awk from the file */
	CHECK_EQ(c.pid, PID);
	CHECK_EQ(c.mappings, 30);
	CHECK_EQ(c.rss_bytes, 14516 * KB);
	CHECK_EQ(c.huge_bytes, 12288 * KB);
	CHECK_EQ(c.hugetlb_bytes, 4096 * KB);
	CHECK_EQ(c.thp_bytes, 8192 * KB);
	CHECK_EQ(c.region[SP_REGION_HEAP].bytes, 4 * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].bytes, 13348 * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].huge_bytes, 12288 * KB);
	CHECK_EQ(c.region[SP_REGION_TEXT].bytes, 768 * KB);
	CHECK_EQ(c.region[SP_REGION_DATA].bytes, 248 * KB);
	CHECK_EQ(c.region[SP_REGION_STACK].bytes, 16 * KB);
	CHECK_EQ(c.region[SP_REGION_SHM].bytes, 128 * KB);
	CHECK_EQ(c.region[SP_REGION_OTHER].bytes, 4 * KB);
	CHECK_EQ(region_sum(&c, false), c.rss_bytes);
	CHECK_EQ(region_sum(&c, true), c.huge_bytes);
	double r = sp_coverage_ratio(&c);
	CHECK(r > 12288.0 / 14516 - 1e-9 && r < 12288.0 / 14516 + 1e-9);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_captured_self(void)
{
	struct sp_coverage c;
	setup();
	if (load_data("/proc/4242/smaps", "smaps_self.txt"))
		CHECK(!"test data missing");
	CHECK_EQ(sp_coverage(PID, &c), 0);
	CHECK_EQ(c.mappings, 38);
	CHECK_EQ(c.rss_bytes, 1612 * KB);
	CHECK_EQ(c.huge_bytes, 0);
	CHECK_EQ(c.hugetlb_bytes, 0);
	CHECK_EQ(c.thp_bytes, 0);
	CHECK_EQ(c.region[SP_REGION_HEAP].bytes, 16 * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].bytes, 40 * KB);
	CHECK_EQ(c.region[SP_REGION_TEXT].bytes, 928 * KB);
	CHECK_EQ(c.region[SP_REGION_DATA].bytes, 584 * KB);
	CHECK_EQ(c.region[SP_REGION_STACK].bytes, 12 * KB);
	CHECK_EQ(c.region[SP_REGION_SHM].bytes, 28 * KB); /* r--s gconv-modules.cache */
	CHECK_EQ(c.region[SP_REGION_OTHER].bytes, 4 * KB);
	CHECK(sp_coverage_ratio(&c) == 0.0);
}

static void verify_range(uintptr_t lo, uintptr_t hi, struct sp_verify *v, struct sp_coverage *c)
{
	char *text;
	setup();
	load_data("/proc/4242/smaps", "smaps_huge.txt");
	text = strdup(fk_file_get("/proc/4242/smaps"));
	CHECK_EQ(parse(text, strlen(text), c, lo, hi, v), 0);
	free(text);
}

static void test_range_filter(void)
{
	struct sp_verify v;
	struct sp_coverage c;
	/* the hugetlb mapping */
	verify_range(0x7f718f600000, 0x7f718fa00000, &v, &c);
	CHECK_EQ(v.page_size, M2);
	CHECK_EQ(v.rss_bytes, 4096 * KB);
	CHECK_EQ(v.huge_bytes, 4096 * KB);
	CHECK_EQ(c.mappings, 30); /* cov takes everything whatever the range */
	CHECK_EQ(c.rss_bytes, 14516 * KB);
	/* the THP mapping */
	verify_range(0x7f718ea00000, 0x7f718f200000, &v, &c);
	CHECK_EQ(v.page_size, 4096);
	CHECK_EQ(v.rss_bytes, 8192 * KB);
	CHECK_EQ(v.huge_bytes, 8192 * KB);
	/* one page inside it: the whole mapping counts */
	verify_range(0x7f718ea01000, 0x7f718ea02000, &v, &c);
	CHECK_EQ(v.rss_bytes, 8192 * KB);
	/* the THP mapping and the untouched one after it: all resident bytes are huge */
	verify_range(0x7f718f000000, 0x7f718f400000, &v, &c);
	CHECK_EQ(v.rss_bytes, 8192 * KB);
	CHECK_EQ(v.huge_bytes, 8192 * KB);
	/* end is exclusive: [end of THP, ...) does not take the THP mapping */
	verify_range(0x7f718f200000, 0x7f718f600000, &v, &c);
	CHECK_EQ(v.rss_bytes, 0);
	CHECK_EQ(v.huge_bytes, 0);
	/* malloc's 1 MiB mapping: base pages */
	verify_range(0x7f718fadd000, 0x7f718fbde000, &v, &c);
	CHECK_EQ(v.page_size, 4096);
	CHECK_EQ(v.rss_bytes, 1028 * KB);
	CHECK_EQ(v.huge_bytes, 0);
	/* nothing there */
	verify_range(0x1000, 0x2000, &v, &c);
	CHECK_EQ(v.rss_bytes, 0);
	CHECK_EQ(v.huge_bytes, 0);
	CHECK_EQ(c.mappings, 30);
}

/* sp_verify_range over the captured file standing in for /proc/self/smaps. */
static void verify_self(uintptr_t lo, size_t len, struct sp_verify *v)
{
	setup();
	load_data("/proc/self/smaps", "smaps_huge.txt");
	memset(v, 0x5a, sizeof *v);
	CHECK_EQ(sp_verify_range((void *)lo, len, v), 0);
}

static void test_verify_range(void)
{
	struct sp_verify v;
	verify_self(0x7f718f600000, 4 << 20, &v); /* hugetlb 2M */
	CHECK_EQ(v.backing, SP_BACKING_2M);
	CHECK_EQ(v.page_size, M2);
	CHECK_EQ(v.rss_bytes, 4096 * KB);
	CHECK_EQ(v.huge_bytes, 4096 * KB);
	verify_self(0x7f718ea00000, 8 << 20, &v); /* THP, all of it */
	CHECK_EQ(v.backing, SP_BACKING_THP);
	CHECK_EQ(v.page_size, 4096);
	CHECK_EQ(v.rss_bytes, 8192 * KB);
	CHECK_EQ(v.huge_bytes, 8192 * KB);
	verify_self(0x7f718ea01000, 4096, &v); /* one page of it */
	CHECK_EQ(v.backing, SP_BACKING_THP);
	verify_self(0x7f718f000000, 4 << 20, &v); /* THP and an untouched mapping */
	CHECK_EQ(v.backing, SP_BACKING_THP);
	verify_self(0x7f718fadd000, 0x101000, &v); /* malloc's mapping: base pages */
	CHECK_EQ(v.backing, SP_BACKING_4K);
	CHECK_EQ(v.page_size, 4096);
	CHECK_EQ(v.rss_bytes, 1028 * KB);
	CHECK_EQ(v.huge_bytes, 0);
	verify_self(0x55b54705b000, 4096, &v); /* [heap] */
	CHECK_EQ(v.backing, SP_BACKING_4K);
	CHECK_EQ(v.rss_bytes, 4 * KB);
}

/* ---- classification ---- */

static void test_classify(void)
{
	CHECK_EQ(sp_region_classify("rw-p", "[heap]"), SP_REGION_HEAP);
	CHECK_EQ(sp_region_classify("rw-p", "[stack]"), SP_REGION_STACK);
	CHECK_EQ(sp_region_classify("rw-p", ""), SP_REGION_ANON);
	CHECK_EQ(sp_region_classify("---p", ""), SP_REGION_ANON);
	CHECK_EQ(sp_region_classify("rw-p", "/anon_hugepage (deleted)"), SP_REGION_ANON);
	CHECK_EQ(sp_region_classify("rw-s", "/SYSV00000000 (deleted)"), SP_REGION_SHM);
	CHECK_EQ(sp_region_classify("rw-s", "/memfd:x (deleted)"), SP_REGION_SHM);
	CHECK_EQ(sp_region_classify("rw-s", "/dev/zero (deleted)"), SP_REGION_SHM);
	CHECK_EQ(sp_region_classify("rw-s", "/anon_hugepage (deleted)"), SP_REGION_SHM);
	CHECK_EQ(sp_region_classify("rw-s", "/dev/hugepages/buf"), SP_REGION_SHM);
	CHECK_EQ(sp_region_classify("rw-s", ""), SP_REGION_SHM);
	CHECK_EQ(sp_region_classify("r-xp", "/usr/lib/x86_64-linux-gnu/libc.so.6"), SP_REGION_TEXT);
	CHECK_EQ(sp_region_classify("r-xp", "/tmp/a b (deleted)"), SP_REGION_TEXT);
	/* moved text and sealed JIT code are text; a writable executable heap is not */
	CHECK_EQ(sp_region_classify("r-xp", ""), SP_REGION_TEXT);
	CHECK_EQ(sp_region_classify("rwxp", ""), SP_REGION_ANON);
	CHECK_EQ(sp_region_classify("rwxp", "[anon:sbcl]"), SP_REGION_ANON);
	CHECK_EQ(sp_region_classify("rwxp", "/usr/lib/sbcl/sbcl.core"), SP_REGION_TEXT);
	CHECK_EQ(sp_region_classify("r--p", "/usr/lib/x86_64-linux-gnu/libc.so.6"), SP_REGION_DATA);
	CHECK_EQ(sp_region_classify("rw-p", "/usr/bin/cat"), SP_REGION_DATA);
	CHECK_EQ(sp_region_classify("r-xp", "[vdso]"), SP_REGION_OTHER);
	CHECK_EQ(sp_region_classify("r--p", "[vvar]"), SP_REGION_OTHER);
	CHECK_EQ(sp_region_classify("--xp", "[vsyscall]"), SP_REGION_OTHER);
	CHECK_EQ(sp_region_classify("r--p", "[vvar_vclock]"), SP_REGION_OTHER);
	for (int r = 0; r < SP_REGION_COUNT; r++)
		CHECK(sp_region_name((enum sp_region)r) != NULL);
	CHECK(!strcmp(sp_region_name(SP_REGION_HEAP), "heap"));
	CHECK(!strcmp(sp_region_name(SP_REGION_ANON), "anon"));
	CHECK(!strcmp(sp_region_name(SP_REGION_TEXT), "text"));
	CHECK(!strcmp(sp_region_name(SP_REGION_DATA), "data"));
	CHECK(!strcmp(sp_region_name(SP_REGION_STACK), "stack"));
	CHECK(!strcmp(sp_region_name(SP_REGION_SHM), "shm"));
}

/* Each kind of region through the parser, one record each. */
static void test_regions_parsed(void)
{
	static char t[16384];
	struct sp_coverage c;
	setup();
	t[0] = 0;
	rec(t, sizeof t, "1000-2000", "rw-p", "[heap]", 4, 4, 4, 0, 0);
	rec(t, sizeof t, "2000-4000", "rw-p", "[stack]", 8, 4, 8, 0, 0);
	rec(t, sizeof t, "200000-600000", "rw-p", "", 4096, 4, 4096, 2048, 0);
	rec(t, sizeof t, "600000-a00000", "rw-p", "/anon_hugepage (deleted)", 4096, 2048, 0, 0, 4096);
	rec(t, sizeof t, "a00000-a10000", "rw-s", "/SYSV00000000 (deleted)", 64, 4, 16, 0, 0);
	rec(t, sizeof t, "a10000-a20000", "rw-s", "/memfd:x (deleted)", 64, 4, 32, 0, 0);
	rec(t, sizeof t, "a20000-a30000", "rw-s", "/dev/zero (deleted)", 64, 4, 64, 0, 0);
	rec(t, sizeof t, "b00000-b10000", "r-xp", "/usr/bin/prog", 64, 4, 40, 0, 0);
	rec(t, sizeof t, "b10000-b20000", "r--p", "/usr/bin/prog", 64, 4, 12, 0, 0);
	rec(t, sizeof t, "c00000-c01000", "r-xp", "[vdso]", 4, 4, 4, 0, 0);
	CHECK_EQ(parse(t, strlen(t), &c, 0, 0, NULL), 0);
	CHECK_EQ(c.mappings, 10);
	CHECK_EQ(c.region[SP_REGION_HEAP].bytes, 4 * KB);
	CHECK_EQ(c.region[SP_REGION_STACK].bytes, 8 * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].bytes, (4096 + 4096) * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].huge_bytes, (2048 + 4096) * KB);
	CHECK_EQ(c.region[SP_REGION_SHM].bytes, 112 * KB);
	CHECK_EQ(c.region[SP_REGION_TEXT].bytes, 40 * KB);
	CHECK_EQ(c.region[SP_REGION_DATA].bytes, 12 * KB);
	CHECK_EQ(c.region[SP_REGION_OTHER].bytes, 4 * KB);
	CHECK_EQ(c.rss_bytes, (4 + 8 + 4096 + 4096 + 112 + 40 + 12 + 4) * KB);
	CHECK_EQ(c.huge_bytes, 6144 * KB);
	CHECK_EQ(c.hugetlb_bytes, 4096 * KB);
	CHECK_EQ(c.thp_bytes, 2048 * KB);
}

/* ---- why memory is not huge: a reason per mapping, the first that holds ---- */

static void test_why(void)
{
	static const char t[] =
		/* shared, not hugetlb */
		"7f0000000000-7f0000400000 rw-s 00000000 00:01 1234 /dev/zero (deleted)\n"
		"Rss: 100 kB\nVmFlags: rd wr sh mr mw me ms sd\n"
		/* a file's pages */
		"7f0000400000-7f0000800000 r-xp 00000000 08:01 99 /usr/lib/libx.so\n"
		"Rss: 200 kB\nVmFlags: rd ex mr mw me sd\n"
		/* advised NOHUGEPAGE, room for units */
		"7f0000800000-7f0001000000 rw-p 00000000 00:00 0\n"
		"Rss: 300 kB\nAnonHugePages: 0 kB\nVmFlags: rd wr mr mw me ac sd nh\n"
		/* advised, but no whole aligned 2 MiB inside */
		"7f0001001000-7f0001201000 rw-p 00000000 00:00 0\n"
		"Rss: 400 kB\nVmFlags: rd wr mr mw me ac sd hg\n"
		/* room, not advised */
		"7f0001400000-7f0001c00000 rw-p 00000000 00:00 0\n"
		"Rss: 4096 kB\nAnonHugePages: 2048 kB\nVmFlags: rd wr mr mw me ac sd\n"
		/* room, advised, partly huge */
		"7f0001c00000-7f0002400000 rw-p 00000000 00:00 0\n"
		"Rss: 6144 kB\nAnonHugePages: 4096 kB\nVmFlags: rd wr mr mw me ac sd hg\n";
	struct sp_coverage c;
	setup();
	CHECK_EQ(parse(t, strlen(t), &c, 0, 0, NULL), 0);
	CHECK_EQ(c.mappings, 6);
	CHECK_EQ(c.region[SP_REGION_SHM].not_huge[SP_WHY_SHARED], 100 * KB);
	CHECK_EQ(c.region[SP_REGION_TEXT].not_huge[SP_WHY_FILE], 200 * KB);
	const struct sp_usage *a = &c.region[SP_REGION_ANON];
	CHECK_EQ(a->not_huge[SP_WHY_NOHUGEPAGE], 300 * KB);
	CHECK_EQ(a->not_huge[SP_WHY_SMALL], 400 * KB);
	CHECK_EQ(a->not_huge[SP_WHY_NOT_ADVISED], 2048 * KB);
	CHECK_EQ(a->not_huge[SP_WHY_PARTIAL], 2048 * KB);
	/* every byte that is not huge has a reason */
	uint64_t why = 0;
	for (int r = 0; r < SP_REGION_COUNT; r++)
		for (int w = 0; w < SP_WHY_COUNT; w++)
			why += c.region[r].not_huge[w];
	CHECK_EQ(why, c.rss_bytes - c.huge_bytes);
	/* THP always: nothing needs advice; THP off for the process: that first */
	memset(&c, 0, sizeof c);
	c.thp_always = true;
	fk_file_n("/proc/4242/smaps", t, strlen(t));
	int fd = sp_os->open("/proc/4242/smaps", O_RDONLY, 0);
	CHECK_EQ(sp_smaps_parse(fd, &c, 0, 0, NULL), 0);
	sp_os->close(fd);
	CHECK_EQ(c.region[SP_REGION_ANON].not_huge[SP_WHY_NOT_ADVISED], 0);
	CHECK_EQ(c.region[SP_REGION_ANON].not_huge[SP_WHY_PARTIAL], 4096 * KB);
	memset(&c, 0, sizeof c);
	c.thp_off = true;
	fd = sp_os->open("/proc/4242/smaps", O_RDONLY, 0);
	CHECK_EQ(sp_smaps_parse(fd, &c, 0, 0, NULL), 0);
	sp_os->close(fd);
	CHECK_EQ(c.region[SP_REGION_ANON].not_huge[SP_WHY_THP_OFF], (300 + 400 + 2048 + 2048) * KB);
	CHECK_EQ(c.region[SP_REGION_SHM].not_huge[SP_WHY_SHARED], 100 * KB);
	CHECK(strcmp(sp_why_name(SP_WHY_NOT_ADVISED), "not_advised") == 0);
}

/* ---- thread stacks: anonymous memory that holds a thread's stack pointer ---- */

static void task(const char *tid, const char *syscall_text)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/4242/task/%s/syscall", tid);
	fk_file(path, syscall_text);
}

static void test_thread_stacks(void)
{
	static char t[32768];
	struct sp_coverage c;
	struct sp_threads th;
	setup();
	t[0] = 0;
	/* a thread stack (glibc's or ours): guard, then the stack, huge at its top */
	rec(t, sizeof t, "7f0000000000-7f0000001000", "---p", "", 4, 4, 0, 0, 0);
	rec(t, sizeof t, "7f0000001000-7f0000801000", "rw-p", "", 8192, 4, 2048, 2048, 0);
	/* a thread out of a system call ("-1 SP PC"), on a stack with a bigger guard */
	rec(t, sizeof t, "7f0001000000-7f0001010000", "---p", "", 64, 4, 0, 0, 0);
	rec(t, sizeof t, "7f0001010000-7f0001110000", "rw-p", "", 1024, 4, 16, 0, 0);
	/* a stack the program malloc'ed: the SP is in it, but no guard is below */
	rec(t, sizeof t, "7f0002000000-7f0002400000", "rw-p", "", 4096, 4, 4096, 4096, 0);
	/* a guard and memory above it that no thread's SP is in */
	rec(t, sizeof t, "7f0003000000-7f0003001000", "---p", "", 4, 4, 0, 0, 0);
	rec(t, sizeof t, "7f0003001000-7f0003101000", "rw-p", "", 1024, 4, 64, 0, 0);
	/* a running thread's stack (nothing to read), and one not permitted */
	rec(t, sizeof t, "7f0004000000-7f0004001000", "---p", "", 4, 4, 0, 0, 0);
	rec(t, sizeof t, "7f0004001000-7f0004101000", "rw-p", "", 1024, 4, 8, 0, 0);
	rec(t, sizeof t, "7f0005000000-7f0005001000", "---p", "", 4, 4, 0, 0, 0);
	rec(t, sizeof t, "7f0005001000-7f0005101000", "rw-p", "", 1024, 4, 12, 0, 0);
	/* a shared mapping with an SP in it is shm, whatever is below */
	rec(t, sizeof t, "7f0006000000-7f0006001000", "---p", "", 4, 4, 0, 0, 0);
	rec(t, sizeof t, "7f0006001000-7f0006101000", "rw-s", "", 1024, 4, 20, 0, 0);
	rec(t, sizeof t, "7ffc00000000-7ffc00021000", "rw-p", "[stack]", 132, 4, 24, 0, 0);
	fk_file("/proc/4242/smaps", t);
	task("4242", "7 0x7ffc1f4a8c20 0x1 0xffffffff 0x0 0x0 0x0 0x7ffc00020ef8 0x7f1e2a0c53ad\n");
	task("4243", "202 0x7f0000800910 0x80 0x0 0x0 0x0 0x0 0x7f00007ffe28 0x7f1e2a04c4c6\n");
	task("4244", "-1 0x7f00010ff000 0x5555d0a01189\n");
	task("4245", "0 0x3 0x7f1e29a00000 0x20000 0x0 0x0 0x0 0x7f00023ff000 0x7f1e2a0c4a2d\n");
	task("4246", "running\n");
	task("4247", "202 0x7f0005100910 0x80 0x0 0x0 0x0 0x0 0x7f00051ffe28 0x7f1e2a04c4c6\n");
	fk_file_error("/proc/4242/task/4247/syscall", EACCES);
	task("4248", "202 0x0 0x0 0x0 0x0 0x0 0x0 0x7f0006100000 0x7f1e2a04c4c6\n");
	/* what is not the file's format is left out */
	task("4249", "202 0x7f0003000010\n");
	task("4250", "x 0x7f0003000010 0x1\n");
	task("4251", "202 7f0003000010 0x1 0x2 0x3 0x4 0x5 0x7f0003000010 0x1\n");

	CHECK_EQ(sp_threads_read(PID, &th), 5);
	for (int i = 1; i < th.n; i++)
		CHECK(th.sp[i - 1] <= th.sp[i]);
	CHECK_EQ(sp_coverage(PID, &c), 0);
	CHECK_EQ(c.region[SP_REGION_STACK].bytes, (2048 + 16 + 24) * KB);
	CHECK_EQ(c.region[SP_REGION_STACK].huge_bytes, 2048 * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].bytes, (4096 + 64 + 8 + 12) * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].huge_bytes, 4096 * KB);
	CHECK_EQ(c.region[SP_REGION_SHM].bytes, 20 * KB);
	CHECK_EQ(region_sum(&c, false), c.rss_bytes);
	CHECK_EQ(fk_open_fds(), 0);

	/* No task directory (not permitted, or no such kernel): as before. */
	fk_file_remove_tree("/proc/4242/task/");
	fk_file("/proc/4242/smaps", t);
	CHECK_EQ(sp_threads_read(PID, &th), -ENOENT);
	CHECK_EQ(th.n, 0);
	CHECK_EQ(sp_coverage(PID, &c), 0);
	CHECK_EQ(c.region[SP_REGION_STACK].bytes, 24 * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].bytes, (2048 + 16 + 4096 + 64 + 8 + 12) * KB);
	CHECK_EQ(fk_open_fds(), 0);
}

/* ---- hostile input ---- */

static const char *two_maps(char *t, size_t len)
{
	t[0] = 0;
	rec(t, len, "1000-3000", "rw-p", "[heap]", 8, 4, 8, 0, 0);
	rec(t, len, "200000-600000", "rw-p", "", 4096, 4, 4096, 4096, 0);
	return t;
}

static void test_truncated_last_line(void)
{
	static char t[8192];
	struct sp_coverage c;
	setup();
	two_maps(t, sizeof t);
	size_t n = strlen(t);
	t[n - 2] = 0; /* "VmFlags: rd wr mr mw me a" without its newline */
	CHECK_EQ(parse(t, n - 2, &c, 0, 0, NULL), 0);
	CHECK_EQ(c.mappings, 2);
	CHECK_EQ(c.rss_bytes, (8 + 4096) * KB);
	CHECK_EQ(c.huge_bytes, 4096 * KB);
	CHECK_EQ(c.region[SP_REGION_HEAP].bytes, 8 * KB);
}

static void test_cut_in_number(void)
{
	static char t[8192];
	struct sp_coverage c;
	setup();
	two_maps(t, sizeof t);
	/* cut the second record inside "Rss:                4096 kB" after "40" */
	char *second = strstr(t, "200000-600000");
	char *rss = strstr(second, "Rss:");
	size_t n = (rss - t) + strlen("Rss:                40");
	int r = parse(t, n, &c, 0, 0, NULL);
	CHECK_EQ(r, 0);
	CHECK_EQ(c.mappings, 2);
	/* the first record is whole; the cut number is either dropped or taken as it reads */
	CHECK(c.rss_bytes == 8 * KB || c.rss_bytes == 48 * KB);
	CHECK_EQ(c.region[SP_REGION_HEAP].bytes, 8 * KB);
	CHECK_EQ(c.huge_bytes, 0);
}

static void test_number_too_big(void)
{
	static char t[8192];
	struct sp_coverage c;
	setup();
	two_maps(t, sizeof t);
	char *rss = strstr(t, "Rss:            ");
	char bad[9000];
	snprintf(bad, sizeof bad, "%.*sRss: 99999999999999999999999 kB%s", (int)(rss - t), t,
		 strchr(rss, '\n'));
	CHECK_EQ(parse(bad, strlen(bad), &c, 0, 0, NULL), -EPROTO);
	/* fits in 64 bits, but not once it is turned into bytes */
	snprintf(bad, sizeof bad, "%.*sRss: 18446744073709551615 kB%s", (int)(rss - t), t,
		 strchr(rss, '\n'));
	CHECK_EQ(parse(bad, strlen(bad), &c, 0, 0, NULL), -EPROTO);
	/* and through sp_coverage */
	fk_file("/proc/4242/smaps", bad);
	CHECK_EQ(sp_coverage(PID, &c), -EPROTO);
}

static void test_missing_fields(void)
{
	struct sp_coverage c;
	struct sp_verify v;
	const char *t = "00400000-00800000 rw-p 00000000 00:00 0 \n"
			"Size:               4096 kB\n"
			"Rss:                1024 kB\n"
			"VmFlags: rd wr mr mw me ac \n"
			"00800000-00801000 rw-p 00000000 00:00 0 \n"
			"Size:                  4 kB\n";
	setup();
	CHECK_EQ(parse(t, strlen(t), &c, 0x400000, 0x401000, &v), 0);
	CHECK_EQ(c.mappings, 2);
	CHECK_EQ(c.rss_bytes, 1024 * KB);
	CHECK_EQ(c.huge_bytes, 0);
	CHECK_EQ(c.region[SP_REGION_ANON].bytes, 1024 * KB);
	CHECK_EQ(v.rss_bytes, 1024 * KB);
	CHECK_EQ(v.huge_bytes, 0);
}

static void test_garbage(void)
{
	struct sp_coverage c;
	const char *t = "hello world\nthis is not smaps\nRss 12\n";
	setup();
	CHECK_EQ(parse(t, strlen(t), &c, 0, 0, NULL), -EPROTO);
	fk_file("/proc/4242/smaps", "\x01\x02\x03 binary \xff\xfe\n\n");
	CHECK_EQ(sp_coverage(PID, &c), -EPROTO);
	fk_file("/proc/4242/smaps", "Rss:                1024 kB\nSize:      4 kB\n");
	CHECK_EQ(sp_coverage(PID, &c), -EPROTO); /* fields but never a mapping header */
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_empty(void)
{
	struct sp_coverage c;
	struct sp_verify v;
	setup();
	memset(&c, 0x5a, sizeof c);
	CHECK_EQ(parse("", 0, &c, 0, UINTPTR_MAX, &v), 0);
	CHECK_EQ(c.mappings, 0);
	CHECK_EQ(c.rss_bytes, 0);
	CHECK_EQ(c.huge_bytes, 0);
	CHECK_EQ(v.rss_bytes, 0);
	fk_file("/proc/4242/smaps", "");
	memset(&c, 0x5a, sizeof c);
	CHECK_EQ(sp_coverage(PID, &c), 0);
	CHECK_EQ(c.mappings, 0);
	CHECK_EQ(c.rss_bytes, 0);
	CHECK_EQ(c.hugetlb_bytes, 0);
	CHECK_EQ(region_sum(&c, false), 0);
	CHECK(sp_coverage_ratio(&c) == 0.0);
}

static void test_long_path(void)
{
	static char t[32768], path[6000];
	struct sp_coverage c;
	setup();
	path[0] = '/';
	memset(path + 1, 'a', 5000);
	path[5001] = 0;
	t[0] = 0;
	rec(t, sizeof t, "1000-3000", "r-xp", path, 8, 4, 8, 0, 0);
	rec(t, sizeof t, "3000-5000", "rw-p", "[heap]", 8, 4, 4, 0, 0);
	rec(t, sizeof t, "200000-600000", "rw-p", "", 4096, 4, 4096, 4096, 0);
	CHECK(strlen(t) > 5000);
	CHECK_EQ(parse(t, strlen(t), &c, 0, 0, NULL), 0);
	CHECK_EQ(c.mappings, 3);
	CHECK_EQ(c.region[SP_REGION_TEXT].bytes, 8 * KB);
	CHECK_EQ(c.region[SP_REGION_HEAP].bytes, 4 * KB);
	CHECK_EQ(c.region[SP_REGION_ANON].huge_bytes, 4096 * KB);
	CHECK_EQ(c.rss_bytes, (8 + 4 + 4096) * KB);
	/* a path far longer than any line buffer */
	static char huge_path[20000];
	huge_path[0] = '/';
	memset(huge_path + 1, 'b', sizeof huge_path - 2);
	t[0] = 0;
	rec(t, sizeof t, "1000-3000", "rw-p", huge_path, 8, 4, 8, 0, 0);
	rec(t, sizeof t, "3000-5000", "rw-p", "[stack]", 8, 4, 4, 0, 0);
	CHECK_EQ(parse(t, strlen(t), &c, 0, 0, NULL), 0);
	CHECK_EQ(c.mappings, 2);
	CHECK_EQ(c.region[SP_REGION_DATA].bytes, 8 * KB);
	CHECK_EQ(c.region[SP_REGION_STACK].bytes, 4 * KB);
}

static void test_crlf_tabs(void)
{
	static char t[8192], out[16384];
	struct sp_coverage c;
	setup();
	two_maps(t, sizeof t);
	size_t o = 0;
	for (const char *s = t; *s; s++) { /* every newline becomes CRLF */
		if (*s == '\n')
			out[o++] = '\r';
		out[o++] = *s;
	}
	out[o] = 0;
	CHECK_EQ(parse(out, o, &c, 0, 0, NULL), 0);
	CHECK_EQ(c.mappings, 2);
	CHECK_EQ(c.rss_bytes, (8 + 4096) * KB);
	CHECK_EQ(c.huge_bytes, 4096 * KB);
	CHECK_EQ(region_sum(&c, false), c.rss_bytes);

	o = 0; /* runs of spaces after a field name become a tab */
	for (const char *s = t; *s; s++) {
		if (s > t && s[-1] == ':' && *s == ' ') {
			out[o++] = '\t';
			while (s[1] == ' ')
				s++;
			continue;
		}
		out[o++] = *s;
	}
	out[o] = 0;
	CHECK(strstr(out, "Rss:\t8 kB") != NULL);
	CHECK_EQ(parse(out, o, &c, 0, 0, NULL), 0);
	CHECK_EQ(c.mappings, 2);
	CHECK_EQ(c.rss_bytes, (8 + 4096) * KB);
	CHECK_EQ(c.huge_bytes, 4096 * KB);
}

/* ---- sp_coverage: pids and errors ---- */

static void test_coverage_errors(void)
{
	struct sp_coverage c;
	setup();
	CHECK_EQ(sp_coverage(4343, &c), -ESRCH); /* no such process, no smaps */
	fk_pid_add(4344);
	CHECK_EQ(sp_coverage(4344, &c), -ESRCH); /* it exited before its smaps was read */
	fk_pid_add(4345);
	fk_file("/proc/4345/smaps", "");
	fk_file_error("/proc/4345/smaps", EACCES);
	CHECK_EQ(sp_coverage(4345, &c), -EACCES);
	CHECK_EQ(fk_open_fds(), 0);
}

/* pid 0 reads this process's smaps, here made by the fake from its mappings. */
static void test_coverage_self(void)
{
	struct sp_coverage c;
	struct sp_verify v;
	void *tlb, *thp, *plain;
	setup();
	fk_pool(M2, 2, 2);
	CHECK_EQ(sp_os->mmap(NULL, 2 * M2, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_2MB | MAP_POPULATE,
			     -1, 0, &tlb), 0);
	CHECK_EQ(sp_os->mmap(NULL, M2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0,
			     &thp), 0);
	CHECK_EQ(sp_os->madvise(thp, M2, MADV_HUGEPAGE), 0);
	CHECK_EQ(sp_os->madvise(thp, M2, MADV_POPULATE_WRITE), 0);
	CHECK_EQ(sp_os->mmap(NULL, 64 * KB, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0, &plain), 0);
	CHECK_EQ(sp_coverage(0, &c), 0);
	CHECK_EQ(c.mappings, 3);
	CHECK_EQ(c.hugetlb_bytes, 2 * M2);
	CHECK_EQ(c.rss_bytes, 3 * M2 + 64 * KB);
	CHECK_EQ(c.huge_bytes, 3 * M2);
	CHECK_EQ(c.thp_bytes, M2);
	CHECK_EQ(c.region[SP_REGION_ANON].bytes, 3 * M2 + 64 * KB);

	CHECK_EQ(sp_verify_range(tlb, 2 * M2, &v), 0);
	CHECK_EQ(v.backing, SP_BACKING_2M);
	CHECK_EQ(v.page_size, M2);
	CHECK_EQ(v.rss_bytes, 2 * M2);
	CHECK_EQ(sp_verify_range(thp, M2, &v), 0);
	CHECK_EQ(v.backing, SP_BACKING_THP);
	CHECK_EQ(v.page_size, 4096);
	CHECK_EQ(v.huge_bytes, M2);
	CHECK_EQ(sp_verify_range(plain, 4096, &v), 0);
	CHECK_EQ(v.backing, SP_BACKING_4K);
	CHECK_EQ(v.rss_bytes, 64 * KB);
	CHECK_EQ(v.huge_bytes, 0);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_ratio(void)
{
	struct sp_coverage c;
	memset(&c, 0, sizeof c);
	CHECK(sp_coverage_ratio(&c) == 0.0);
	c.rss_bytes = 400;
	c.huge_bytes = 100;
	CHECK(sp_coverage_ratio(&c) == 0.25);
	c.huge_bytes = 400;
	CHECK(sp_coverage_ratio(&c) == 1.0);
}

int main(void)
{
	RUN(test_captured_huge);
	RUN(test_captured_self);
	RUN(test_range_filter);
	RUN(test_verify_range);
	RUN(test_classify);
	RUN(test_regions_parsed);
	RUN(test_why);
	RUN(test_thread_stacks);
	RUN(test_truncated_last_line);
	RUN(test_cut_in_number);
	RUN(test_number_too_big);
	RUN(test_missing_fields);
	RUN(test_garbage);
	RUN(test_empty);
	RUN(test_long_path);
	RUN(test_crlf_tabs);
	RUN(test_coverage_errors);
	RUN(test_coverage_self);
	RUN(test_ratio);
	fk_reset();
	return CHECK_DONE();
}
