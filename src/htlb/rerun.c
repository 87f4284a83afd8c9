/* rerun.c - HUGETLB_MORECORE, HUGETLB_SHM and HUGETLB_ELFMAP: glibc has no morecore
 * hook, so the program is started again, before main, with superpage's runtime
 * preloaded and its SUPERPAGE_* options set from them (src/common/preload.h). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "htlb.h"

#define HTLB_NAME "libhugetlbfs.so"
#include "preload.h"

/* What the program asked for, as SUPERPAGE_* values; NULL: not asked. */
struct ask {
	const char *backing;   /* HUGETLB_MORECORE */
	const char *shrink;    /* HUGETLB_MORECORE_SHRINK, with HUGETLB_MORECORE */
	const char *shm;       /* HUGETLB_SHM */
	const char *text;      /* HUGETLB_ELFMAP */
};

/* HUGETLB_MORECORE: yes (the default huge page size), 2M, 1G or thp; no, or unset,
 * leaves the heap to glibc. */
static const char *morecore_backing(const struct htlb_state *st)
{
	const char *v = getenv("HUGETLB_MORECORE");
	uint64_t size;
	bool b;

	if (!v || !*v)
		return NULL;
	if (!strcasecmp(v, "thp"))
		return "thp";
	if (sp_parse_bool(v, &b) == 0)
		return !b ? NULL : st->default_size == 1L << 30 ? "1g" : "2m";
	if (sp_parse_size(v, &size) == 0 && (size == 2u << 20 || size == 1u << 30))
		return size == 2u << 20 ? "2m" : "1g";
	htlb_say(HTLB_ERROR, "HUGETLB_MORECORE=%.64s is not yes, no, 2M, 1G or thp; ignored", v);
	return NULL;
}

/* HUGETLB_ELFMAP: R, W or RW (with or without "=size" parts) all move the text and
 * large data (superpage run --text); no, or unset, nothing. */
static const char *elfmap_text(void)
{
	const char *v = getenv("HUGETLB_ELFMAP");
	bool b;

	if (!v || !*v || (sp_parse_bool(v, &b) == 0 && !b))
		return NULL;
	if (strpbrk(v, "RrWw"))
		return "main";
	htlb_say(HTLB_ERROR, "HUGETLB_ELFMAP=%.64s is not R, W, RW or no; ignored", v);
	return NULL;
}

static bool read_ask(const struct htlb_state *st, struct ask *a)
{
	const char *v;
	bool b;

	a->backing = morecore_backing(st);
	v = getenv("HUGETLB_MORECORE_SHRINK");
	a->shrink = a->backing && v && sp_parse_bool(v, &b) == 0 && b ? "yes" : NULL;
	if (v && !a->backing && !(sp_parse_bool(v, &b) == 0 && !b))
		htlb_say(HTLB_ERROR, "HUGETLB_MORECORE_SHRINK=%.64s accepted but not acted on: "
			 "the heap is glibc's without HUGETLB_MORECORE", v);
	v = getenv("HUGETLB_SHM");
	a->shm = v && sp_parse_bool(v, &b) == 0 && b ? "yes" : NULL;
	if (v && sp_parse_bool(v, &b) < 0)
		htlb_say(HTLB_ERROR, "HUGETLB_SHM=%.64s is not yes or no; ignored", v);
	a->text = elfmap_text();
	return a->backing || a->shm || a->text;
}

static int find_runtime_cb(struct dl_phdr_info *info, size_t size, void *found)
{
	const char *name = info->dlpi_name;

	(void)size;
	if (name && *name && sp_preload_is_runtime(name, strlen(name), ""))
		*(bool *)found = true;
	return 0;
}

static bool runtime_loaded(void)
{
	bool found = false;

	dl_iterate_phdr(find_runtime_cb, &found);
	return found;
}

/* "libhugetlbfs.so.0" (as distributions build it), or "libhugetlbfs.so" (as
 * upstream's own build names itself), or another version of it. */
static bool is_htlb_name(const char *name)
{
	size_t n = strlen(HTLB_NAME);
	return !strncmp(name, HTLB_NAME, n) && (name[n] == 0 || name[n] == '.');
}

/* Whether the program itself names this library (its DT_NEEDED), or LD_PRELOAD does:
 * then this constructor runs before main. A library loaded later (dlopen, or as
 * another library's dependency, which may be dlopen'd too) must not start the program
 * again: what it did so far would be done twice. */
static int needed_cb(struct dl_phdr_info *info, size_t size, void *found)
{
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t strtab = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB)
			strtab = d->d_un.d_ptr;
	/* (The loader may have relocated the entry in place, or not.) */
	if (strtab && strtab < info->dlpi_addr)
		strtab += info->dlpi_addr;
	for (const ElfW(Dyn) *d = dyn; d && strtab && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_NEEDED && is_htlb_name((const char *)(strtab + d->d_un.d_val)))
			*(bool *)found = true;
	return 1; /* the first object is the program: the only one looked at */
}

static bool named_by_program(void)
{
	const char *pre = getenv("LD_PRELOAD");
	bool found = false;

	dl_iterate_phdr(needed_cb, &found);
	return found || (pre && strstr(pre, "libhugetlbfs.so"));
}

/* HUGETLB_RESTRICT_EXE: unset, or a colon-separated list that names this executable
 * (its basename, as /proc/self/exe gives it). */
static bool exe_allowed(char *exe, size_t len)
{
	const char *v = getenv("HUGETLB_RESTRICT_EXE"), *base;
	ssize_t n = readlink("/proc/self/exe", exe, len - 1);

	exe[n > 0 ? n : 0] = 0;
	if (!v)
		return true;
	base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	while (*v) {
		size_t k = strcspn(v, ":");
		if (k && k == strlen(base) && !memcmp(v, base, k))
			return true;
		v += k + (v[k] == ':');
	}
	return false;
}

bool htlb_may_map_segments(void)
{
	char exe[PATH_MAX];

	if (getauxval(AT_SECURE) || !named_by_program())
		return false;
	if (!exe_allowed(exe, sizeof exe)) {
		htlb_say(HTLB_INFO, "%s is not in HUGETLB_RESTRICT_EXE: its segments stay", exe);
		return false;
	}
	return true;
}

/* The runtime beside this library: ../ in the build tree ($(B)/libhugetlbfs/) and
 * the package (/usr/lib/superpage/libhugetlbfs/), ../../ under make install
 * ($(PREFIX)/lib/superpage/libhugetlbfs/ and $(PREFIX)/lib). */
static bool find_runtime(char *out)
{
	static const char *const up[] = { "/../", "/../../" };
	char dir[PATH_MAX], cand[PATH_MAX + 32];
	Dl_info info;

	if (!dladdr((void *)find_runtime, &info) || !info.dli_fname ||
	    !realpath(info.dli_fname, dir) || !strrchr(dir, '/'))
		return false;
	*strrchr(dir, '/') = 0;
	for (size_t i = 0; i < sizeof up / sizeof *up; i++) {
		snprintf(cand, sizeof cand, "%s%s" SP_RUNTIME_NAME, dir, up[i]);
		if (access(cand, R_OK) == 0 && realpath(cand, out))
			return true;
	}
	htlb_say(HTLB_ERROR, "superpage's runtime (" SP_RUNTIME_NAME ") is not in %s/.. or "
		 "%s/../..", dir, dir);
	return false;
}

/* entry ("NAME=...") sets a variable that one of set[0..n) sets, or the saved
 * LD_PRELOAD (set only when there is one to save). */
static bool replaced(const char *entry, char *const *set, size_t n)
{
	size_t len = strcspn(entry, "=");

	if (len == strlen(SP_HTLB_PRELOAD_ENV) && !strncmp(entry, SP_HTLB_PRELOAD_ENV, len))
		return true;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(entry, set[i], len) && set[i][len] == '=')
			return true;
	return false;
}

/* environ with the variables below replaced; NULL if out of memory. The strings are
 * not freed: they are needed until execve, and only once if it fails. */
static char **new_environment(const struct ask *a, const char *rt)
{
	const char *old = getenv("LD_PRELOAD");
	char *preload = sp_preload_with_runtime(rt, old), *set[10];
	size_t n = 0, k = 0, m = 0;
	char **env;
	int bad = !preload;

	if (preload) {
		bad |= asprintf(&set[m++], "LD_PRELOAD=%s", preload) < 0;
		free(preload);
	}
	if (a->backing)
		bad |= asprintf(&set[m++], "SUPERPAGE_BACKING=%s", a->backing) < 0;
	if (a->shrink)
		bad |= asprintf(&set[m++], "SUPERPAGE_SHRINK=%s", a->shrink) < 0;
	bad |= asprintf(&set[m++], "SUPERPAGE_HEAP=%s", a->backing ? "yes" : "no") < 0;
	if (a->shm)
		bad |= asprintf(&set[m++], "SUPERPAGE_SHM=%s", a->shm) < 0;
	if (a->text)
		bad |= asprintf(&set[m++], "SUPERPAGE_TEXT=%s", a->text) < 0;
	bad |= asprintf(&set[m++], SP_HTLB_EXEC_ENV "=1") < 0;
	if (old)
		bad |= asprintf(&set[m++], SP_HTLB_PRELOAD_ENV "=%s", old) < 0;
	while (environ[n])
		n++;
	env = bad ? NULL : calloc(n + m + 1, sizeof *env);
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!replaced(environ[i], set, m))
			env[k++] = environ[i];
	memcpy(env + k, set, m * sizeof *set);
	return env;
}

/* In the process started again: the program's own LD_PRELOAD back, and the guard gone,
 * so that its children get the runtime only if they link this library themselves and
 * their environment asks for it. */
static void put_back(void)
{
	const char *saved = getenv(SP_HTLB_PRELOAD_ENV);

	if (!runtime_loaded())
		htlb_say(HTLB_ERROR, "superpage's runtime did not load (the dynamic loader says "
			 "why): the program runs without huge pages for its heap");
	if (saved ? setenv("LD_PRELOAD", saved, 1) < 0 : unsetenv("LD_PRELOAD") < 0)
		htlb_say(HTLB_ERROR, "cannot put LD_PRELOAD back: %s", strerror(errno));
	unsetenv(SP_HTLB_PRELOAD_ENV);
	unsetenv(SP_HTLB_EXEC_ENV);
}

void htlb_rerun(char **argv)
{
	const struct htlb_state *st = htlb_state();
	char exe[PATH_MAX], rt[PATH_MAX];
	struct ask a;
	char **env;

	if (getenv(SP_HTLB_EXEC_ENV)) {
		put_back();
		return;
	}
	if (!read_ask(st, &a))
		return;
	if (getauxval(AT_SECURE)) {
		htlb_say(HTLB_ERROR, "HUGETLB_MORECORE, HUGETLB_SHM and HUGETLB_ELFMAP are not acted "
			 "on in a setuid or setgid program (its library path is not trusted)");
		return;
	}
	if (!exe_allowed(exe, sizeof exe)) {
		htlb_say(HTLB_INFO, "%s is not in HUGETLB_RESTRICT_EXE: no huge pages for it", exe);
		return;
	}
	if (runtime_loaded()) {
		htlb_say(HTLB_INFO, "superpage's runtime is already in this process (superpage "
			 "run): its options stand");
		return;
	}
	if (!named_by_program()) {
		htlb_say(HTLB_ERROR, "HUGETLB_MORECORE, HUGETLB_SHM and HUGETLB_ELFMAP are not acted "
			 "on: this library was loaded after %s started (dlopen, or another library's "
			 "dependency); link the program with -lhugetlbfs or preload the library", exe);
		return;
	}
	if (!argv || !argv[0] || !exe[0] || !find_runtime(rt))
		return;
	if (strpbrk(rt, ": ")) {
		htlb_say(HTLB_ERROR, "the runtime's path %s has a ':' or a space, which LD_PRELOAD "
			 "cannot hold", rt);
		return;
	}
	env = new_environment(&a, rt);
	if (!env) {
		htlb_say(HTLB_ERROR, "out of memory: no huge pages for the program");
		return;
	}
	htlb_say(HTLB_INFO, "starting %s again with %s (heap %s%s%s)", exe, rt,
		 a.backing ? a.backing : "not moved", a.shm ? ", shm" : "", a.text ? ", text" : "");
	execve("/proc/self/exe", argv, env);
	htlb_say(HTLB_ERROR, "cannot start %s again with superpage's runtime: %s; it runs "
		 "without huge pages", exe, strerror(errno));
	free(env);
}
