/* run.c - superpage run: starts a program with the superpage runtime preloaded and the
 * SUPERPAGE_* environment set from the options, waits for it and exits with its status. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "preload.h"

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41
#define PR_GET_THP_DISABLE 42
#endif

void usage_run(void)
{
	fputs("usage: superpage run [OPTIONS] [--] CMD [ARGS...]\n"
	      "\n"
	      "Runs CMD with the superpage runtime (libsuperpage-run.so) preloaded, so that its\n"
	      "malloc heap and its large anonymous mappings are put on huge pages without\n"
	      "changing it. Programs that CMD starts inherit the runtime and the options.\n"
	      "\n"
	      "  --backing B        auto (default), thp, 2m, 1g or 4k: the pages to back memory\n"
	      "                     with; 4k also disables THP for CMD (an honest baseline)\n"
	      "  --min SIZE         the smallest mapping to put on huge pages (default 2M)\n"
	      "  --no-heap          leave the malloc heap on base pages\n"
	      "  --text[=main|all]  before main, move the program's text (all: and every\n"
	      "                     library's) and large data onto huge pages; only whole\n"
	      "                     2 MiB-aligned units of each segment move\n"
	      "  --perf-map         with --text, name the moved functions in /tmp/perf-PID.map\n"
	      "                     for perf report\n"
	      "  --stacks           thread stacks on huge pages (THP, 2 MiB-aligned, a guard\n"
	      "                     page below)\n"
	      "  --shm              shared memory (SysV shmget, MAP_SHARED|MAP_ANONYMOUS) on 2 MiB\n"
	      "                     hugetlb pages when the pool can hold it\n"
	      "  --honour-thp-disable\n"
	      "                     a program that turns THP off for itself (prctl\n"
	      "                     PR_SET_THP_DISABLE) turns it off for the runtime's memory\n"
	      "                     too; by default only for its own\n"
	      "  --shrink           memory the heap frees goes back to the kernel at once, in\n"
	      "                     whole 2 MiB units (by default some empty units are kept\n"
	      "                     for the next mallocs)\n"
	      "  --keep-malloc      a malloc named in LD_PRELOAD (jemalloc, tcmalloc...) keeps\n"
	      "                     serving the program; superpage only advises its large\n"
	      "                     mappings for THP (no superpage malloc)\n"
	      "  --check            the checking mode: canaries past blocks, freed blocks\n"
	      "                     filled and held back; a write past a block's end or after\n"
	      "                     its free ends the program with one line (slower)\n"
	      "  --stats[=FILE]     at exit, each process prints an account of its memory to\n"
	      "                     stderr, or appends it to FILE as one line of JSON\n"
	      "                     (FILE \"stderr\": stderr)\n"
	      "  --budget SIZE|PCT  for a program kept promoted (below): each pass collapses\n"
	      "                     at most SIZE (512M) or PCT (25%) of each process's resident\n"
	      "                     memory, as superpage promote --budget; default: no limit\n"
	      "  -v, --verbose[=N]  say each fallback once, when it happens; repeat for more\n"
	      "                     (N from 0 to 3); without it, under --backing 2m or 1g,\n"
	      "                     what the pool could not give is said once, after CMD\n"
	      "  --dry-run          print the environment CMD would get and CMD, run nothing\n"
	      "\n"
	      "The \"--\" may be left out when CMD does not start with '-'.\n"
	      "\n"
	      "A statically linked program (Go without cgo, musl), one whose loader is another\n"
	      "libc's, or one of the other word size cannot be preloaded: superpage keeps it\n"
	      "and the processes it starts promoted instead, as superpage promote --watch: its\n"
	      "private anonymous memory is collapsed onto 2 MiB transparent huge pages as it\n"
	      "grows (not hugetlb: --backing 2m and 1g fall to THP), and one line says so;\n"
	      "superpage stat PID and --stats say how each process was reached. This needs\n"
	      "CAP_SYS_NICE (root); under --backing 4k, or without it, such a program runs\n"
	      "as it is. Setuid programs run without superpage. Either way it is said.\n"
	      "\n"
	      "Exit status: that of CMD (128+N if it died of signal N), 127 if CMD is not\n"
	      "found, 126 if it cannot be run, 2 for bad options. See superpage-run(7).\n",
	      stdout);
}

struct run_options {
	const char *backing;     /* canonical name, or NULL: not given */
	const char *min;         /* as given, checked */
	bool no_heap, stacks, shm, stats, perf_map, honour_thp_disable, shrink, check, dry_run;
	bool keep_malloc;        /* a malloc named in LD_PRELOAD serves the program */
	const char *text;        /* "main" or "all", or NULL */
	const char *stats_file;  /* as given, or NULL for stderr */
	int verbose;             /* -1: not given */
	const char *budget;      /* as given (the watch's), or NULL */
	struct sp_promote_options promote; /* the watch's: promote's defaults, the budget */
};

/* ---------- the options ---------- */

static int bad_option(const char *a)
{
	return cli_error(EXIT_USAGE, "run: unknown option '%s' (see superpage run --help)", a);
}

/* The options that stand alone (no value in the next argument): 0 when a is one, -1
 * when it is not, or an exit status. */
static int flag_option(const char *a, struct run_options *o)
{
	if (!strcmp(a, "--no-heap")) {
		o->no_heap = true;
	} else if (!strcmp(a, "--text")) {
		o->text = "main";
	} else if (!strncmp(a, "--text=", 7)) {
		if (strcmp(a + 7, "main") && strcmp(a + 7, "all"))
			return cli_error(EXIT_USAGE, "run: bad --text '%s' (main or all)", a + 7);
		o->text = a + 7;
	} else if (!strcmp(a, "--perf-map")) {
		o->perf_map = true;
	} else if (!strcmp(a, "--stacks")) {
		o->stacks = true;
	} else if (!strcmp(a, "--shm")) {
		o->shm = true;
	} else if (!strcmp(a, "--dry-run")) {
		o->dry_run = true;
	} else if (!strcmp(a, "--honour-thp-disable")) {
		o->honour_thp_disable = true;
	} else if (!strcmp(a, "--shrink")) {
		o->shrink = true;
	} else if (!strcmp(a, "--check")) {
		o->check = true;
	} else if (!strcmp(a, "--keep-malloc")) {
		o->keep_malloc = true;
	} else if (!strcmp(a, "--stats")) {
		o->stats = true;
		o->stats_file = NULL;
	} else if (!strncmp(a, "--stats=", 8)) {
		if (!a[8])
			return cli_error(EXIT_USAGE, "run: --stats= needs a file name");
		o->stats = true;
		/* As SUPERPAGE_STATS=stderr: no file of that name made by a slip. */
		o->stats_file = strcmp(a + 8, "stderr") ? a + 8 : NULL;
	} else if (!strcmp(a, "--verbose")) {
		o->verbose = o->verbose < 0 ? 1 : o->verbose + 1;
	} else if (!strncmp(a, "--verbose=", 10)) {
		const char *v = a + 10;

		if (v[0] < '0' || v[0] > '3' || v[1])
			return cli_error(EXIT_USAGE, "run: bad verbosity '%s' (0, 1, 2 or 3)", v);
		o->verbose = v[0] - '0';
	} else if (a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1)) {
		o->verbose = (o->verbose < 0 ? 0 : o->verbose) + (int)strlen(a + 1);
	} else {
		return -1;
	}
	return 0;
}

/* Parses the options; *cmd is the index of CMD. Returns 0, -1 after printing the
 * help, or an exit status. */
static int parse_options(int argc, char **argv, struct run_options *o, int *cmd)
{
	enum sp_backing b;
	uint64_t size;
	const char *v;
	int i, m, rc;

	memset(o, 0, sizeof *o);
	o->verbose = -1;
	sp_promote_options_default(&o->promote);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_run();
			return -1;
		}
		if ((m = cli_opt_value(argc, argv, &i, "--backing", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			if (sp_backing_parse(v, &b) < 0)
				return cli_error(EXIT_USAGE, "run: bad backing '%s' (auto, thp, 2m, 1g or 4k)", v);
			o->backing = sp_backing_name(b);
		} else if ((m = cli_opt_value(argc, argv, &i, "--min", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			rc = sp_parse_size(v, &size);
			if (rc == -ERANGE)
				return cli_error(EXIT_USAGE, "run: size '%s' is too large", v);
			if (rc < 0)
				return cli_error(EXIT_USAGE, "run: bad size '%s' for --min (a size such as 2M)", v);
			o->min = v;
		} else if ((m = cli_opt_value(argc, argv, &i, "--budget", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			if (cli_parse_budget(v, &o->promote) < 0)
				return cli_error(EXIT_USAGE, "run: bad budget '%s' (a size like 512M or 2G, "
						 "or a share like 25%%)", v);
			o->budget = v;
		} else if ((rc = flag_option(a, o)) != 0) {
			if (rc > 0)
				return rc;
			return bad_option(a);
		}
	}
	if (o->verbose > 3)
		o->verbose = 3;
	if (i >= argc)
		return cli_error(EXIT_USAGE, "run: missing CMD, the program to run (see superpage run --help)");
	*cmd = i;
	return 0;
}

/* ---------- the environment of CMD ---------- */

static int put_env(const char *name, const char *value)
{
	if (setenv(name, value, 1) == 0)
		return 0;
	return cli_error(EXIT_USAGE, "run: cannot set %s: %s", name, strerror(errno));
}

/* FILE made absolute, so that children in other directories append to the same file.
 * The runtime takes paths shorter than SP_PATH_LEN. Returns 0 or an exit status. */
static int stats_path(const char *file, char *out, size_t len)
{
	char cwd[PATH_MAX];
	int n, fd;

	if (file[0] == '/') {
		n = snprintf(out, len, "%s", file);
	} else {
		if (!getcwd(cwd, sizeof cwd))
			return cli_error(EXIT_USAGE, "run: cannot find the current directory for --stats=%s: %s",
					 file, strerror(errno));
		while (file[0] == '.' && file[1] == '/') {
			file += 2;
			while (*file == '/')
				file++;
		}
		n = snprintf(out, len, "%s%s%s", cwd, strcmp(cwd, "/") ? "/" : "", file);
	}
	if (n < 0 || (size_t)n >= len)
		return cli_error(EXIT_USAGE, "run: the --stats file's path is too long (at most %zu bytes)",
				 len - 1);
	/* Say now, not at the end of a long run, that the file cannot be written. */
	fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return cli_error(EXIT_USAGE, "run: cannot write %s: %s", out, strerror(errno));
	/* A file of the kernel's opens for writing (as root) and takes no account: each
	 * write would fail at exit, unseen. */
	struct statfs fs;
	bool kernel = fstatfs(fd, &fs) == 0 && (fs.f_type == 0x9fa0 /* proc */ ||
						 fs.f_type == 0x62656572 /* sysfs */ ||
						 fs.f_type == 0x64626720 /* debugfs */ ||
						 fs.f_type == 0x63677270 /* cgroup2 */ ||
						 fs.f_type == 0x27e0eb /* cgroup */);
	close(fd);
	if (kernel)
		return cli_error(EXIT_USAGE, "run: cannot write the account to %s: a file of the "
				 "kernel's, which takes no lines appended", out);
	return 0;
}

static bool is_readable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, R_OK) == 0;
}

int cli_find_runtime(const char *cmd, char *out, size_t len)
{
	char dir[PATH_MAX], cand[PATH_MAX + 64], *slash;
	ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);

	if (n <= 0)
		return cli_error(EXIT_USAGE, "%s: cannot find the superpage executable (/proc/self/exe): %s",
				 cmd, n < 0 ? strerror(errno) : "empty link");
	dir[n] = 0;
	slash = strrchr(dir, '/');
	if (!slash)
		return cli_error(EXIT_USAGE, "%s: /proc/self/exe is not a path: %s", cmd, dir);
	*slash = 0;
	snprintf(cand, sizeof cand, "%s/" SP_RUNTIME_NAME, dir);
	if (is_readable_file(cand) && strlen(cand) < len) {
		memcpy(out, cand, strlen(cand) + 1);
		return 0;
	}
	snprintf(cand, sizeof cand, "%s/../lib/" SP_RUNTIME_NAME, dir);
	if (len >= PATH_MAX && is_readable_file(cand) && realpath(cand, out))
		return 0;
	snprintf(cand, sizeof cand, "%s/../lib/superpage/" SP_RUNTIME_NAME, dir);
	if (len >= PATH_MAX && is_readable_file(cand) && realpath(cand, out))
		return 0;
	return cli_error(EXIT_USAGE, "%s: cannot find the runtime: none of %s/%s, %s/../lib/%s, "
			 "%s/../lib/superpage/%s exists", cmd, dir, SP_RUNTIME_NAME, dir, SP_RUNTIME_NAME,
			 dir, SP_RUNTIME_NAME);
}

/* ---------- a malloc of the program's own in LD_PRELOAD ---------- */

/* Whether the ELF object at path defines malloc (a malloc library: jemalloc,
 * tcmalloc, mimalloc, a sanitizer's runtime): its dynamic symbols, read from the
 * section headers. 64-bit objects only. */
static bool defines_malloc(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, str;
	bool found = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof sh || eh.e_shnum > 4096)
		goto out;
	for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
		off_t at = (off_t)(eh.e_shoff + (uint64_t)i * sizeof sh);
		if (pread(fd, &sh, sizeof sh, at) != (ssize_t)sizeof sh || sh.sh_type != SHT_DYNSYM ||
		    sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= eh.e_shnum ||
		    pread(fd, &str, sizeof str, (off_t)(eh.e_shoff + (uint64_t)sh.sh_link * sizeof str)) !=
			    (ssize_t)sizeof str)
			continue;
		for (uint64_t k = 1; k < sh.sh_size / sizeof(Elf64_Sym) && k < 1 << 20 && !found; k++) {
			Elf64_Sym sym;
			char name[8];
			if (pread(fd, &sym, sizeof sym, (off_t)(sh.sh_offset + k * sizeof sym)) !=
			    (ssize_t)sizeof sym)
				break;
			if (sym.st_shndx == SHN_UNDEF || sym.st_name >= str.sh_size ||
			    (ELF64_ST_TYPE(sym.st_info) != STT_FUNC &&
			     ELF64_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
				continue;
			if (pread(fd, name, sizeof name, (off_t)(str.sh_offset + sym.st_name)) > 6 &&
			    !memcmp(name, "malloc", 7))
				found = true;
		}
	}
out:
	close(fd);
	return found;
}

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#else
#define MULTIARCH "."
#endif

/* The file the dynamic linker would load for an LD_PRELOAD entry of n bytes: itself
 * if it has a '/', else found in LD_LIBRARY_PATH's and the usual directories (ld.so's
 * cache aside). False if none is found. */
static bool preload_file(const char *entry, size_t n, char *out, size_t len)
{
	static const char *const dirs[] = { "/lib/" MULTIARCH, "/usr/lib/" MULTIARCH, "/lib64",
					    "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib" };
	const char *llp = getenv("LD_LIBRARY_PATH");

	if (memchr(entry, '/', n))
		return (size_t)snprintf(out, len, "%.*s", (int)n, entry) < len && is_readable_file(out);
	for (const char *p = llp ? llp : ""; *p;) {
		size_t d = strcspn(p, ":;");
		if (d && (size_t)snprintf(out, len, "%.*s/%.*s", (int)d, p, (int)n, entry) < len &&
		    is_readable_file(out))
			return true;
		p += d;
		if (*p)
			p++;
	}
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if ((size_t)snprintf(out, len, "%s/%.*s", dirs[i], (int)n, entry) < len &&
		    is_readable_file(out))
			return true;
	return false;
}

/* The first LD_PRELOAD entry (not superpage's runtime, not libc) that defines malloc,
 * into name; false if there is none. */
static bool preloaded_malloc(const char *rt, char *name, size_t len)
{
	const char *v = getenv("LD_PRELOAD");
	char path[PATH_MAX];

	for (const char *p = v ? v : ""; *p;) {
		size_t n = strcspn(p, ": ");
		const char *base = p;
		for (size_t k = 0; k < n; k++)
			if (p[k] == '/')
				base = p + k + 1;
		if (n && !sp_preload_is_runtime(p, n, rt) && strncmp(base, "libc.so", 7) &&
		    preload_file(p, n, path, sizeof path) && defines_malloc(path)) {
			snprintf(name, len, "%.*s", (int)n, p);
			return true;
		}
		p += n;
		if (*p)
			p++;
	}
	return false;
}

/* LD_PRELOAD with the runtime in front; a runtime already in the list (this one, or
 * another copy, as under a nested superpage run) is dropped (src/common/preload.c).
 * With keep (--keep-malloc, and a malloc in the list), the runtime goes last: the
 * program's malloc is the one it named, and its mappings are still the runtime's. */
static int set_preload(const char *rt, bool keep)
{
	char *val;
	int rc;

	if (strpbrk(rt, ": "))
		return cli_error(EXIT_USAGE, "run: the runtime's path %s has a ':' or a space, which "
				 "LD_PRELOAD cannot hold", rt);
	val = sp_preload_with_runtime(rt, getenv("LD_PRELOAD"));
	if (!val)
		return cli_error(EXIT_USAGE, "run: out of memory");
	size_t n = strlen(rt);
	if (keep && val[n] == ':') {
		/* "rt:a:b" -> "a:b:rt" */
		memmove(val, val + n + 1, strlen(val + n + 1) + 1);
		strcat(val, ":");
		strcat(val, rt);
	}
	rc = put_env("LD_PRELOAD", val);
	free(val);
	return rc;
}

/* The environment CMD gets; with preload, LD_PRELOAD holds the runtime. */
static int set_environment(const struct run_options *o, const char *rt, bool preload)
{
	char path[SP_PATH_LEN], level[2], other[256];
	int rc;
	bool keep = false;

	/* A malloc the user preloaded is one superpage's would silently displace.
	 * (Without preload, for another libc's loader, which would load the runtime
	 * built against glibc, LD_PRELOAD stays as it was.) */
	if (preload && preloaded_malloc(rt, other, sizeof other)) {
		keep = o->keep_malloc;
		if (!keep)
			cli_warn("LD_PRELOAD names %s, a malloc: superpage's malloc replaces it (to keep "
				 "it, with THP advice for its large mappings only: superpage run "
				 "--keep-malloc)", other);
		else if ((rc = put_env("SUPERPAGE_HEAP", "no")))
			return rc;
	} else if (preload && o->keep_malloc) {
		cli_warn("--keep-malloc: LD_PRELOAD names no malloc to keep: superpage's malloc "
			 "serves the program");
	}

	if (o->backing && (rc = put_env("SUPERPAGE_BACKING", o->backing)))
		return rc;
	if (o->min && (rc = put_env("SUPERPAGE_MIN", o->min)))
		return rc;
	if (o->no_heap && (rc = put_env("SUPERPAGE_HEAP", "no")))
		return rc;
	if (o->text && (rc = put_env("SUPERPAGE_TEXT", o->text)))
		return rc;
	if (o->perf_map && (rc = put_env("SUPERPAGE_PERF_MAP", "yes")))
		return rc;
	if (o->stacks && (rc = put_env("SUPERPAGE_STACKS", "yes")))
		return rc;
	if (o->shm && (rc = put_env("SUPERPAGE_SHM", "yes")))
		return rc;
	if (o->honour_thp_disable && (rc = put_env("SUPERPAGE_HONOUR_THP_DISABLE", "yes")))
		return rc;
	if (o->check && (rc = put_env("SUPERPAGE_CHECK", "yes")))
		return rc;
	if (o->shrink && (rc = put_env("SUPERPAGE_SHRINK", "yes")))
		return rc;
	if (o->stats) {
		if (o->stats_file && (rc = stats_path(o->stats_file, path, sizeof path)))
			return rc;
		if ((rc = put_env("SUPERPAGE_STATS", o->stats_file ? path : "yes")))
			return rc;
	}
	if (o->verbose >= 0) {
		level[0] = (char)('0' + o->verbose);
		level[1] = 0;
		if ((rc = put_env("SUPERPAGE_VERBOSE", level)))
			return rc;
	}
	return preload ? set_preload(rt, keep) : 0;
}

/* ---------- what the machine can give ---------- */

/* What run needs to know, read cheaply: sp_probe's feature probes cost a millisecond,
 * more than the whole run of a small program should. */
struct offer {
	struct sp_thp thp;       /* present, enabled, pmd_size and the PMD size's mTHP mode */
	bool thp_off_here;       /* PR_SET_THP_DISABLE is set (and CMD inherits it) */
	bool has_2m, has_1g;     /* the page size exists */
	bool free_2m, free_1g;   /* its pool has free pages, or room to overcommit */
};

static void read_offer(struct offer *f, enum sp_backing b)
{
	struct sp_offer o;
	unsigned parts = 0;

	/* Only what the backing needs: this runs before every program. */
	if (b == SP_BACKING_2M)
		parts = SP_OFFER_2M;
	else if (b == SP_BACKING_1G)
		parts = SP_OFFER_1G;
	else if (b == SP_BACKING_AUTO || b == SP_BACKING_THP)
		parts = SP_OFFER_THP;
	sp_offer_get(parts, &o);
	memset(f, 0, sizeof *f);
	f->thp = o.thp;
	f->thp_off_here = o.thp_disable > 0;
	f->has_2m = o.pool_2m.present;
	f->free_2m = o.pool_2m.free > 0 || o.pool_2m.room > 0;
	f->has_1g = o.pool_1g.present;
	f->free_1g = o.pool_1g.free > 0 || o.pool_1g.room > 0;
}

/* Why THP cannot be had, or NULL if it can. */
static const char *thp_why_not(const struct offer *f)
{
	if (!f->thp.present)
		return "this kernel has no THP";
	if (!strcmp(sp_thp_pmd_mode(&f->thp), "never"))
		return "THP is never";
	if (f->thp_off_here)
		return "THP is disabled for this process by PR_SET_THP_DISABLE";
	return NULL;
}

/* The command that turns THP on, where "never" is what keeps it off. */
static const char *thp_fix(const struct offer *f)
{
	static char fix[160];

	if (f->thp.n_mthp && strcmp(f->thp.mthp[0].enabled, "inherit"))
		snprintf(fix, sizeof fix, "echo madvise >" THP_DIR "/hugepages-%llukB/enabled",
			 (unsigned long long)(f->thp.pmd_size >> 10));
	else
		snprintf(fix, sizeof fix, "echo madvise >" THP_DIR "/enabled");
	return fix;
}

/* One line when the backing asked for (or every backing but 4k) cannot be had here.
 * The program runs all the same: the runtime falls down the ladder and counts it. */
static void say_offer(enum sp_backing b)
{
	struct offer f;
	const char *thp;

	if (b == SP_BACKING_4K)
		return;
	read_offer(&f, b);
	thp = b == SP_BACKING_AUTO || b == SP_BACKING_THP ? thp_why_not(&f) : NULL;
	switch (b) {
	case SP_BACKING_AUTO:
		/* auto puts the heap on THP (see superpage-run(7)): pools do not help it. */
		if (!thp)
			return;
		cli_warn("only 4 KiB pages can be had here (%s): the program runs on base pages "
			 "(see superpage status)", thp);
		return;
	case SP_BACKING_THP:
		if (!thp)
			return;
		if (!f.thp.present)
			cli_warn("--backing thp: %s: memory falls back to base pages", thp);
		else if (f.thp_off_here && strcmp(sp_thp_pmd_mode(&f.thp), "never"))
			cli_warn("--backing thp: %s (inherited from the parent): memory falls back to "
				 "base pages", thp);
		else
			cli_warn("--backing thp: %s: memory falls back to base pages (to fix: %s)", thp,
				 thp_fix(&f));
		return;
	case SP_BACKING_2M:
		if (!f.has_2m)
			cli_warn("--backing 2m: this machine has no 2 MiB huge pages: memory falls back to "
				 "the next backing");
		else if (!f.free_2m)
			cli_warn("--backing 2m: the 2M pool has no free pages: memory falls back to the next "
				 "backing (to fix: superpage pool 512)");
		return;
	case SP_BACKING_1G:
		if (!f.has_1g)
			cli_warn("--backing 1g: this machine has no 1 GiB huge pages: memory falls back to "
				 "the next backing");
		else if (!f.free_1g)
			cli_warn("--backing 1g: the 1G pool has no free pages: memory falls back to the next "
				 "backing (to fix: superpage pool --size 1G 4)");
		return;
	default:
		return;
	}
}

/* ---------- running it ---------- */

/* s in single quotes for sh, a quote inside as '\''. */
static void print_quoted(const char *s)
{
	putchar('\'');
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	putchar('\'');
}

/* --dry-run: what CMD would get, as lines a launcher script can hold. */
static void print_dry_run(char **cmd)
{
	extern char **environ;

	for (char **e = environ; *e; e++) {
		const char *eq = strchr(*e, '=');

		if (!eq || (strncmp(*e, "SUPERPAGE_", 10) && strncmp(*e, "LD_PRELOAD=", 11)))
			continue;
		printf("export %.*s=", (int)(eq - *e), *e);
		print_quoted(eq + 1);
		putchar('\n');
	}
	fputs("exec", stdout);
	for (; *cmd; cmd++) {
		putchar(' ');
		print_quoted(*cmd);
	}
	putchar('\n');
}

/* Becomes CMD (no fork: one process less to start, and CMD's exit status or the
 * signal that ends it is seen by the caller exactly as if CMD had run alone).
 * Returns only when exec fails, with a shell's status: 126 or 127. hint follows
 * the error (a value given to an option that takes none, as in "--stats out.json"). */
static int start(char **cmd, const char *hint)
{
	fflush(NULL);
	execvp(cmd[0], cmd);
	int err = errno;
	return cli_error(err == EACCES ? 126 : 127, "cannot run %s: %s%s", cmd[0], strerror(err),
			 hint);
}

/* ---------- watching it: --stats ---------- */

static volatile sig_atomic_t watched_pid;

/* A signal a process sent to superpage is the program's: passed on. One the kernel
 * sent (the terminal's Ctrl-C, a hangup) went to the program's process group too. */
static void pass_on(int sig, siginfo_t *si, void *ctx)
{
	(void)ctx;
	if (si->si_code != SI_KERNEL && watched_pid > 0)
		kill(watched_pid, sig);
}

static const int passed_on[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
				 SIGALRM, SIGWINCH, SIGCONT };

/* The account a program that left without writing one (exit_group, _exit, a signal)
 * had published last: one JSON line appended to file, or a text line on stderr. */
static void write_left_account(const struct sp_run_report *r, const char *file, int status)
{
	const struct sp_account *a = &r->account;
	char *buf = NULL, h1[32], h2[32];
	size_t len = 0;
	FILE *f = file ? open_memstream(&buf, &len) : stderr;
	if (!f)
		return;
	if (file) {
		struct json j;
		json_init(&j, f);
		json_object_begin(&j);
		json_key(&j, "pid");
		json_int(&j, r->pid);
		json_key(&j, "comm");
		json_string(&j, r->comm);
		json_key(&j, "left");
		json_string(&j, WIFSIGNALED(status) ? "signal" : "exit_group");
		json_key(&j, WIFSIGNALED(status) ? "signal" : "status");
		json_int(&j, WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		json_key(&j, "heap");
		json_object_begin(&j);
		json_key(&j, "in_use");
		json_uint(&j, a->in_use);
		json_key(&j, "peak");
		json_uint(&j, a->peak_in_use);
		json_key(&j, "mallocs");
		json_uint(&j, a->mallocs);
		json_key(&j, "frees");
		json_uint(&j, a->frees);
		json_key(&j, "units");
		json_object_begin(&j);
		for (int b = 0; b < SP_BACKING_COUNT; b++)
			if (b != SP_BACKING_AUTO) {
				json_key(&j, sp_backing_name((enum sp_backing)b));
				json_uint(&j, a->units[b]);
			}
		json_object_end(&j);
		json_key(&j, "units_peak");
		json_uint(&j, a->units_peak);
		json_key(&j, "large_blocks");
		json_uint(&j, a->large_blocks);
		json_key(&j, "large_bytes");
		json_uint(&j, a->large_bytes);
		json_object_end(&j);
		json_key(&j, "falls_by");
		json_object_begin(&j);
		for (int k = 0; k < SP_FALL_COUNT; k++)
			if (a->falls_by[k]) {
				json_key(&j, sp_fall_name((enum sp_fall)k));
				json_uint(&j, a->falls_by[k]);
			}
		json_object_end(&j);
		json_object_end(&j);
		json_end(&j);
		fclose(f);
		int rc = cli_append(file, buf, len);
		if (rc < 0)
			cli_warn("cannot write the account of pid %d (%s) to %s: %s", (int)r->pid, r->comm,
				 file, strerror(-rc));
		free(buf);
		return;
	}
	char how[48];
	if (WIFSIGNALED(status))
		snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(how, sizeof how, "left by exit_group (status %d)", WEXITSTATUS(status));
	fprintf(stderr, "superpage: pid %d (%s): %s without writing its account; its heap as last "
		"published: malloc %s in use, peak %s; %llu mallocs, %llu frees; %llu units "
		"(peak %llu), %llu large blocks; %llu fallbacks\n", (int)r->pid, r->comm, how,
		cli_human(a->in_use, h1, sizeof h1), cli_human(a->peak_in_use, h2, sizeof h2),
		(unsigned long long)a->mallocs, (unsigned long long)a->frees,
		(unsigned long long)(a->units[SP_BACKING_4K] + a->units[SP_BACKING_THP] +
				     a->units[SP_BACKING_2M] + a->units[SP_BACKING_1G]),
		(unsigned long long)a->units_peak, (unsigned long long)a->large_blocks,
		(unsigned long long)a->falls);
}

/* What the program left in the page, said once it has ended: its tree's falls, an
 * account it could not write, or the one it never wrote. */
static void after_end(pid_t pid, void *page, const struct run_options *o,
		      const char *stats_file, int status)
{
	struct sp_run_report r;
	run_say_falls(page);
	if (sp_run_page_read(page, pid, &r) < 0)
		return;
	if (o->stats && r.stats_errno)
		cli_warn("cannot write the account of pid %d (%s) to %s: %s", (int)pid, r.comm,
			 stats_file ? stats_file : "stderr", strerror(r.stats_errno));
	else if (o->stats && !r.account_written && r.has_account)
		write_left_account(&r, stats_file, status);
}

static volatile int root_ended;

static void on_child(int sig)
{
	(void)sig;
	root_ended = 1;
}

/* Waits for the child pid, with a watch a round at a time, the first ns from now:
 * its status. A pidfd wakes the pause between rounds when the child ends. */
static int wait_child(pid_t pid, bool watch, uint64_t ns, int *st)
{
	int pidfd = watch ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;

	for (bool paused = false;; paused = true) {
		pid_t w = waitpid(pid, st, watch ? WNOHANG : 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			int err = errno;
			if (pidfd >= 0)
				close(pidfd);
			return -err;
		}
		if (w != 0)
			continue;
		if (paused)
			ns = run_watch_round();
		if (pidfd >= 0) {
			struct pollfd p = { pidfd, POLLIN, 0 };
			poll(&p, 1, (int)(ns / 1000000));
		} else if (!root_ended) {
			struct timespec ts = { (time_t)(ns / 1000000000), (long)(ns % 1000000000) };
			nanosleep(&ts, NULL); /* (SIGCHLD ends it) */
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	return 0;
}

/* Runs CMD in a child and waits for it: what it leaves in the page they share (with
 * --stats) is said once it has ended (after_end); with ws, the watch keeps it and the
 * processes it starts promoted meanwhile. Signals sent to superpage are passed on; if
 * it is killed, the child is too (PR_SET_PDEATHSIG). Returns CMD's status, or dies of
 * its signal. Without a page or a child, CMD is executed as by start. */
static int run_watched(char **cmd, const char *hint, const struct run_options *o,
		       const char *stats_file, const struct run_watch_setup *ws, bool falls)
{
	void *page = NULL;
	int fd = o->stats ? sp_run_page_new(&page) : -1, st, sync[2] = { -1, -1 };
	pid_t me = getpid(), pid;
	char val[64];

	if (fd < 0 && !ws)
		return start(cmd, hint);
	if (fd >= 0) {
		/* Out of the way of the low numbers the program's own files get; the same
		 * number here, where it stays open for the processes the program starts
		 * (they open it as /proc/ME/fd/FD), and in the program, which inherits
		 * it for its next image. */
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 100);
		if (high >= 0) {
			close(fd);
			fd = high;
		}
		sp_run_page_tree_init(page, falls);
	}
	/* The watch starts once CMD is executed: the end of a pipe closed on exec. */
	if (ws && pipe2(sync, O_CLOEXEC) < 0)
		sync[0] = sync[1] = -1;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	if (ws)
		sigaction(SIGCHLD, &sa, NULL);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		if (fd >= 0)
			close(fd);
		return start(cmd, hint);
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() != me)
			_exit(128 + SIGKILL);
		if (sync[0] >= 0)
			close(sync[0]);
		if (ws)
			signal(SIGCHLD, SIG_DFL);
		if (fd >= 0) {
			snprintf(val, sizeof val, "%d:%d:%d", fd, (int)getpid(), (int)me);
			if (fcntl(fd, F_SETFD, 0) < 0 || setenv(SP_RUN_PAGE_ENV, val, 1) < 0)
				unsetenv(SP_RUN_PAGE_ENV);
		}
		_exit(start(cmd, hint));
	}
	watched_pid = pid;
	sa.sa_sigaction = pass_on;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	for (size_t i = 0; i < sizeof passed_on / sizeof passed_on[0]; i++)
		sigaction(passed_on[i], &sa, NULL);
	uint64_t first = 0;
	if (ws) {
		char c;
		if (sync[1] >= 0) {
			close(sync[1]);
			while (read(sync[0], &c, 1) < 0 && errno == EINTR)
				;
			close(sync[0]);
		}
		first = run_watch_begin(pid, ws, &root_ended);
	}
	int rc = wait_child(pid, ws != NULL, first, &st);
	if (rc < 0)
		return cli_error(1, "run: lost %s (pid %d): %s", cmd[0], (int)pid, strerror(-rc));
	if (page)
		after_end(pid, page, o, stats_file, st);
	if (fd >= 0)
		close(fd);
	if (ws && o->stats)
		run_watch_accounts(st, stats_file);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	/* Dead of a signal: so is superpage, as if it had been the program (no core of
	 * its own). */
	int sig = WTERMSIG(st);
	struct rlimit no_core = { 0, 0 };
	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	fflush(NULL);
	kill(getpid(), sig);
	return 128 + sig;
}

/* ---------- --text with nothing to move ---------- */

/* The file execvp would run for cmd, into out; false if none is found. */
static bool command_file(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH");

	if (strchr(cmd, '/'))
		return (size_t)snprintf(out, len, "%s", cmd) < len && is_readable_file(out);
	for (const char *p = path ? path : "/usr/local/bin:/bin:/usr/bin"; *p;) {
		size_t d = strcspn(p, ":");
		if ((size_t)snprintf(out, len, "%.*s%s%s", (int)d, p, d ? "/" : "", cmd) < len &&
		    is_readable_file(out) && access(out, X_OK) == 0)
			return true;
		p += d;
		if (*p)
			p++;
	}
	return false;
}

/* Whether no executable segment of the ELF program at file can hold a whole 2 MiB-
 * aligned 2 MiB wherever it is loaded: exactly for a program at a fixed address or
 * one aligned to 2 MiB (its load bias keeps the alignment), else only when every
 * executable segment is smaller than 2 MiB. *bytes: the executable segments' size. */
static bool text_unmovable(const char *file, uint64_t *bytes)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[64];
	const uint64_t unit = 2ull << 20;
	bool unmovable = false;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	*bytes = 0;
	if (fd < 0)
		return false;
	if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof ph[0] ||
	    eh.e_phnum > 64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    pread(fd, ph, eh.e_phnum * sizeof ph[0], (off_t)eh.e_phoff) !=
		    (ssize_t)(eh.e_phnum * sizeof ph[0]))
		goto out;
	uint64_t align = 0;
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_align > align)
			align = ph[i].p_align;
	bool exact = eh.e_type == ET_EXEC || align >= unit;
	unmovable = true;
	for (int i = 0; i < eh.e_phnum && unmovable; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X) || (ph[i].p_flags & PF_W))
			continue;
		uint64_t lo = ph[i].p_vaddr & ~4095ull, hi = (ph[i].p_vaddr + ph[i].p_memsz + 4095) & ~4095ull;
		*bytes += hi - lo;
		if (exact ? ((lo + unit - 1) & ~(unit - 1)) + unit <= hi : hi - lo >= unit)
			unmovable = false;
	}
out:
	close(fd);
	return unmovable;
}

/* --text (main): one line when the program's text can hold no whole unit, so that
 * nothing will move (most distributions' binaries; the runtime says why for each
 * segment only under -v). */
static void say_text_unmovable(const char *cmd)
{
	char file[PATH_MAX], h[32];
	uint64_t bytes;

	if (command_file(cmd, file, sizeof file) && text_unmovable(file, &bytes))
		cli_warn("--text will move nothing: the text of %s (%s) holds no whole 2 MiB-aligned "
			 "2 MiB (to have it moved, link it with -Wl,-zcommon-page-size=2097152 "
			 "-Wl,-zmax-page-size=2097152)", cmd, cli_human(bytes, h, sizeof h));
}

/* The backing CMD will run with: the option, else a good inherited value, else auto. */
static enum sp_backing effective_backing(const struct run_options *o)
{
	enum sp_backing b = SP_BACKING_AUTO;
	const char *env = o->backing ? o->backing : getenv("SUPERPAGE_BACKING");

	if (env && sp_backing_parse(env, &b) < 0)
		b = SP_BACKING_AUTO;
	return b;
}

/* The verbosity CMD will run with: the option, else an inherited SUPERPAGE_VERBOSE
 * (the runtime's reading: a level from 0 to 3), else 0. */
static int effective_verbose(const struct run_options *o)
{
	const char *env = getenv("SUPERPAGE_VERBOSE");

	if (o->verbose >= 0)
		return o->verbose;
	return env && env[0] >= '0' && env[0] <= '3' && !env[1] ? env[0] - '0' : 0;
}

/* ---------- a program the runtime cannot be preloaded into ---------- */

/* Whether this process may collapse another's memory: CAP_SYS_NICE in its effective
 * set (/proc/self/status CapEff). */
static bool can_collapse(void)
{
	char line[256];
	unsigned long long caps = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof line, f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	fclose(f);
	return (caps >> 23) & 1; /* CAP_SYS_NICE */
}

/* The options given that are the runtime's, which do nothing for such a program:
 * "--text and --stacks", or "". */
static const char *runtime_options(const struct run_options *o)
{
	static char out[256];
	const struct { bool on; const char *name; } opts[] = {
		{ o->min != NULL, "--min" }, { o->no_heap, "--no-heap" }, { o->text != NULL, "--text" },
		{ o->perf_map, "--perf-map" }, { o->stacks, "--stacks" }, { o->shm, "--shm" },
		{ o->honour_thp_disable, "--honour-thp-disable" }, { o->shrink, "--shrink" },
		{ o->keep_malloc, "--keep-malloc" }, { o->check, "--check" },
	};
	const char *given[sizeof opts / sizeof *opts];
	int n = 0;

	for (size_t k = 0; k < sizeof opts / sizeof *opts; k++)
		if (opts[k].on)
			given[n++] = opts[k].name;
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		size_t at = strlen(out);
		snprintf(out + at, sizeof out - at, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ",
			 given[i]);
	}
	return out;
}

/* The one line that says what superpage does for a program it cannot preload. */
static void say_watch(const struct cli_image *img, enum sp_backing b, const struct run_options *o)
{
	char fall[128] = "", opts[300] = "";
	const char *given = runtime_options(o);

	if (b == SP_BACKING_2M || b == SP_BACKING_1G)
		snprintf(fall, sizeof fall, "; --backing %s falls to THP (hugetlb pages need the runtime)",
			 sp_backing_name(b));
	if (given[0])
		snprintf(opts, sizeof opts, "; %s %s nothing for it", given, strchr(given, ' ') ? "do" : "does");
	cli_warn("%s: superpage's runtime cannot be preloaded into it, so superpage keeps it promoted "
		 "instead (promote --watch on it and the processes it starts): its private anonymous "
		 "memory is collapsed onto 2 MiB transparent huge pages as it grows, none of it on "
		 "hugetlb%s%s", img->what, fall, opts);
}

int cmd_run(int argc, char **argv)
{
	struct run_options o;
	struct cli_image img;
	char rt[PATH_MAX], hint[PATH_MAX + 64] = "";
	enum sp_backing b;
	int cmd = 0, rc;

	rc = parse_options(argc, argv, &o, &cmd);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	if ((rc = cli_find_runtime("run", rt, sizeof rt)))
		return rc;
	cli_image_of(argv[cmd], &img);
	b = effective_backing(&o);
	/* Under 4k, the baseline, such a program runs on base pages as it is. */
	bool watch = img.how == CLI_IMAGE_WATCH && b != SP_BACKING_4K && can_collapse();
	/* (Another libc's loader would load the runtime, built against glibc.) */
	if ((rc = set_environment(&o, rt, img.how != CLI_IMAGE_WATCH || img.why != SP_WATCH_LIBC)))
		return rc;
	if (b == SP_BACKING_4K && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		cli_warn("cannot disable THP for %s (PR_SET_THP_DISABLE: %s): the 4k baseline may "
			 "get huge pages where THP is always", argv[cmd], strerror(errno));
	if (watch) {
		say_offer(SP_BACKING_AUTO);
		say_watch(&img, b, &o);
	} else {
		say_offer(b);
		if (img.how == CLI_IMAGE_WATCH && b != SP_BACKING_4K)
			img.tail = " (superpage's runtime cannot be preloaded into it, and keeping it "
				   "promoted instead needs CAP_SYS_NICE: run as root)";
		cli_say_image(&img);
		if (o.budget)
			cli_warn("--budget does nothing here: it is the budget of the watch that keeps a "
				 "program superpage cannot preload promoted");
	}
	if (o.dry_run) {
		print_dry_run(argv + cmd);
		return EXIT_OK;
	}
	if (!strcmp(argv[cmd - 1], "--stats") || !strcmp(argv[cmd - 1], "--text"))
		snprintf(hint, sizeof hint, " (to give %s a value, write %s=%s)", argv[cmd - 1],
			 argv[cmd - 1], argv[cmd]);
	if (!watch && o.text && b == SP_BACKING_4K)
		cli_warn("--text does nothing under --backing 4k: the text stays on base pages");
	if (!watch && o.text && !strcmp(o.text, "main") && b != SP_BACKING_4K)
		say_text_unmovable(argv[cmd]);
	/* (As the runtime will see it: the environment holds the path made absolute.) */
	const char *stats_file = o.stats_file ? getenv("SUPERPAGE_STATS") : NULL;
	if (watch) {
		struct run_watch_setup ws = { img.why, b, o.promote, o.verbose > 0 ? o.verbose : 0 };
		return run_watched(argv + cmd, hint, &o, stats_file, &ws, false);
	}
	/* The hugetlb pages the user named: where they could not be had is said once,
	 * after the program (with -v, the runtime says each fall as it happens). */
	bool falls = img.how == CLI_IMAGE_PRELOAD && (b == SP_BACKING_2M || b == SP_BACKING_1G) &&
		     effective_verbose(&o) < 1;
	if (o.stats)
		return run_watched(argv + cmd, hint, &o, stats_file, NULL, falls);
	if (falls)
		run_falls_watch();
	return start(argv + cmd, hint);
}
