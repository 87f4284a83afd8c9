/* env.c - the HUGETLB_* environment and the machine's sizes and mounts, read once into
 * the library's state; what it does not act on is said once, at load. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "hugetlbfs.h"
#include "htlb.h"
#include "preload.h"

#define VERBOSE_DEFAULT 1
#define VERBOSE_MAX 99

static struct htlb_state state;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t fill_lock = PTHREAD_MUTEX_INITIALIZER;

void htlb_say(int level, const char *fmt, ...)
{
	int e = errno;
	char buf[512];
	va_list ap;
	int n;

	if (level > state.verbose)
		return;
	n = snprintf(buf, sizeof buf, HTLB_PREFIX "[%d] ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 2)
		n = (int)sizeof buf - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0) {
		/* nowhere else to say it */
	}
	errno = e;
}

const struct htlb_size *htlb_size_of(const struct htlb_state *st, long size)
{
	for (int i = 0; i < st->n_sizes; i++)
		if (st->sizes[i].size == size)
			return &st->sizes[i];
	return NULL;
}

/* The same while the state is filled. */
static struct htlb_size *size_slot(struct htlb_state *st, long size)
{
	for (int i = 0; i < st->n_sizes; i++)
		if (st->sizes[i].size == size)
			return &st->sizes[i];
	return NULL;
}

static void read_verbose(struct htlb_state *st)
{
	const char *v = getenv("HUGETLB_VERBOSE");
	uint64_t level;

	st->verbose = VERBOSE_DEFAULT;
	if (getenv("HUGETLB_DEBUG")) {
		st->verbose = VERBOSE_MAX;
		return;
	}
	if (!v || !*v)
		return;
	if (sp_parse_count(v, &level) == 0) {
		st->verbose = level > VERBOSE_MAX ? VERBOSE_MAX : (int)level;
		return;
	}
	htlb_say(HTLB_ERROR, "HUGETLB_VERBOSE=%.64s is not a level from 0 to 99; using %d", v,
		 VERBOSE_DEFAULT);
}

/* The machine as the program sees it: /proc/meminfo, /proc/mounts and the sysfs
 * directory of sizes read through libc's open(2) and opendir(3), which a program may
 * interpose (libhugetlbfs' own tests do, to show the library another machine). */
static int libc_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int libc_list(const char *dir, void (*fn)(const char *name, void *arg), void *arg)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			fn(e->d_name, arg);
	closedir(d);
	return 0;
}

static const struct sp_files libc_files = { libc_open, libc_list };

/* The kernel's sizes, its default (Hugepagesize of /proc/meminfo) first; with no
 * Hugepagesize line, no default: the kernel has no hugetlb support to speak of. */
static void read_sizes(struct htlb_state *st, const struct sp_system *sys)
{
	st->base_page = (long)sys->base_page_size;
	st->kernel_default = (long)sys->default_huge_size;
	if (st->kernel_default)
		st->sizes[st->n_sizes++].size = st->kernel_default;
	for (int i = 0; i < sys->n_sizes && st->n_sizes < SP_MAX_PAGE_SIZES; i++)
		if ((long)sys->page_sizes[i] != st->kernel_default)
			st->sizes[st->n_sizes++].size = (long)sys->page_sizes[i];
}

static void read_default(struct htlb_state *st)
{
	const char *v = getenv("HUGETLB_DEFAULT_PAGE_SIZE");
	uint64_t size;
	char have[96] = "", one[24];

	st->default_size = st->kernel_default;
	/* (No Hugepagesize line: no hugetlb support to choose a size of.) */
	if (!v || !*v || !st->kernel_default)
		return;
	if (sp_parse_size(v, &size) == 0 && htlb_size_of(st, (long)size)) {
		st->default_size = (long)size;
		return;
	}
	for (int i = 0; i < st->n_sizes; i++) {
		sp_format_size((uint64_t)st->sizes[i].size, one, sizeof one);
		snprintf(have + strlen(have), sizeof have - strlen(have), "%s%s", i ? ", " : "",
			 one);
	}
	sp_format_size((uint64_t)st->default_size, one, sizeof one);
	htlb_say(HTLB_ERROR, "HUGETLB_DEFAULT_PAGE_SIZE=%.64s is not a huge page size of this "
		 "machine (%s); using %s", v, st->n_sizes ? have : "none",
		 st->default_size ? one : "none");
}

/* Whether the program may make files in hugetlbfs mount path: 0 or -errno. */
static int usable(const char *path)
{
	return sp_os->access(path, R_OK | W_OK | X_OK);
}

/* A hugetlbfs mount for its page size, if it is one, the size is the kernel's, and no
 * earlier mount took the size. user: named by HUGETLB_PATH (its refusals are said). */
static void add_mount(struct htlb_state *st, const char *path, bool user)
{
	struct statfs sf;
	struct htlb_size *s;
	int r;

	if (strlen(path) >= SP_PATH_LEN) {
		htlb_say(HTLB_ERROR, "mount path too long, ignored: %.64s...", path);
		return;
	}
	r = sp_os->statfs(path, &sf);
	if (r < 0 || (unsigned long)sf.f_type != HUGETLBFS_MAGIC) {
		if (user)
			htlb_say(HTLB_ERROR, "HUGETLB_PATH: %s is not a hugetlbfs mount (%s); "
				 "ignored", path, r < 0 ? strerror(-r) : "statfs");
		return;
	}
	r = usable(path);
	if (r < 0) {
		htlb_say(user ? HTLB_ERROR : HTLB_DEBUG, "%s%s: %s; ignored",
			 user ? "HUGETLB_PATH: " : "hugetlbfs mount ", path, strerror(-r));
		return;
	}
	s = size_slot(st, (long)sf.f_bsize);
	if (!s) {
		htlb_say(user ? HTLB_ERROR : HTLB_DEBUG, "%s: page size %ld is not the kernel's; "
			 "ignored", path, (long)sf.f_bsize);
		return;
	}
	if (s->mount[0]) {
		htlb_say(user ? HTLB_ERROR : HTLB_DEBUG, "%s: %s already serves page size %ld; "
			 "ignored", path, s->mount, s->size);
		return;
	}
	sp_strlcpy(s->mount, path, sizeof s->mount);
}

static void read_mounts(struct htlb_state *st, const struct sp_system *sys)
{
	const char *v = getenv("HUGETLB_PATH");

	st->path_set = v != NULL;
	if (!v) {
		for (int i = 0; i < sys->n_mounts; i++)
			add_mount(st, sys->mounts[i].path, false);
		return;
	}
	while (*v) {
		char path[SP_PATH_LEN + 1];
		size_t n = strcspn(v, ":");
		if (n > SP_PATH_LEN)
			n = SP_PATH_LEN; /* (add_mount says it is too long) */
		memcpy(path, v, n);
		path[n] = 0;
		if (n)
			add_mount(st, path, true);
		v += strcspn(v, ":");
		if (*v == ':')
			v++;
	}
}

/* For each size with no mount the program can use, whether the kernel has none either
 * (read through the seam, not as the program sees it): then, and only then,
 * hugetlbfs_unlinked_fd makes a memfd. A program shown no mount where the kernel has
 * one gets none, as libhugetlbfs' empty_mounts test wants. seen: the machine as read
 * for the program, the kernel's own view already if files was NULL; the kernel is
 * read again only when a size has no mount and seen came through libc. */
static void read_memfd(struct htlb_state *st, const struct sp_system *seen,
		       const struct sp_files *files)
{
	static struct sp_system kernel; /* large: not on the stack; under fill_lock */
	const struct sp_system *k = seen;
	bool probed = !files;

	for (int i = 0; i < st->n_sizes; i++) {
		struct htlb_size *s = &st->sizes[i];
		s->memfd = !s->mount[0];
		if (s->memfd && !probed) {
			sp_probe_hugetlb(&kernel);
			k = &kernel;
			probed = true;
		}
		for (int m = 0; m < k->n_mounts && s->memfd; m++)
			if ((long)k->mounts[m].page_size == s->size && usable(k->mounts[m].path) == 0)
				s->memfd = false;
	}
}

static void fill(struct htlb_state *st)
{
	static struct sp_system sys; /* large: not on the stack; under fill_lock */
	/* (On the unit tests' fake kernel, through its seam.) */
	const struct sp_files *files = sp_os == &sp_os_real ? &libc_files : NULL;
	const char *v;
	bool b;

	int verbose;

	memset(st, 0, sizeof *st);
	read_verbose(st);
	/* In the program started again (rerun.c), what the first start said stays unsaid. */
	verbose = st->verbose;
	if (getenv(SP_HTLB_EXEC_ENV))
		st->verbose = 0;
	sp_probe_hugetlb_via(&sys, files);
	read_sizes(st, &sys);
	read_default(st);
	read_mounts(st, &sys);
	read_memfd(st, &sys, files);
	v = getenv("HUGETLB_NO_RESERVE");
	st->no_reserve = v && sp_parse_bool(v, &b) == 0 && b;
	st->verbose = verbose;
}

static void fill_once(void)
{
	pthread_mutex_lock(&fill_lock);
	fill(&state);
	pthread_mutex_unlock(&fill_lock);
}

const struct htlb_state *htlb_state(void)
{
	pthread_once(&once, fill_once);
	return &state;
}

void htlb_reload(void)
{
	htlb_state();
	fill_once();
}

/* Variables of libhugetlbfs(7) this library accepts and does not act on, and why. */
static const struct {
	const char *name, *why;
} unacted[] = {
	{ "HUGETLB_NO_RESERVE", "huge pages are always reserved when mapped, so that touching "
				"them never kills the program" },
	{ "HUGETLB_FORCE_ELFMAP", "obsolete: superpage run --text needs no relinking" },
	{ "HUGETLB_MINIMAL_COPY", "HUGETLB_ELFMAP copies a segment's pages as they are" },
	{ "HUGETLB_SHARE", "each process maps its own copy of its segments (HUGETLB_ELFMAP), "
			   "shared with no other" },
	{ "HUGETLB_SHARE_PATH", "each process maps its own copy of its segments "
				"(HUGETLB_ELFMAP), shared with no other" },
	{ "HUGETLB_MORECORE_HEAPBASE", "obsolete (glibc has no morecore hook since 2.34)" },
	{ "HUGETLB_NO_PREFAULT", "obsolete: huge pages are reserved when mapped and faulted "
				 "when touched" },
	{ "HUGETLB_FEATURES", "obsolete: kernel features are probed, not overridden" },
};

/* Each variable set that is not acted on, said once. */
static void say_unacted(void)
{
	for (size_t i = 0; i < sizeof unacted / sizeof *unacted; i++) {
		const char *v = getenv(unacted[i].name);
		bool b;
		if (!v || (sp_parse_bool(v, &b) == 0 && !b))
			continue;
		htlb_say(HTLB_ERROR, "%s=%.64s accepted but not acted on: %s", unacted[i].name, v,
			 unacted[i].why);
	}
}

/* At load: the state read, what is not acted on said (not again in the program started
 * again), then the program started again with superpage's runtime if its environment
 * asks for it (rerun.c), and in the process that runs on, its read-only segments on
 * hugetlbfs pages if HUGETLB_ELFMAP asks (elfmap.c). glibc passes ELF constructors the
 * program's arguments. */
__attribute__((constructor)) static void htlb_init(int argc, char **argv, char **envp)
{
	(void)argc;
	(void)envp;
	htlb_state();
	if (!getenv(SP_HTLB_EXEC_ENV))
		say_unacted();
	htlb_rerun(argv);
	htlb_elfmap();
}
