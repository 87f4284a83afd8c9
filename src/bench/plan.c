/* plan.c - what a bench run will do: the ways to run a kernel (variants), and each kernel's sizes (items). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "parts.h"

static struct bench_variant *add_variant(struct bench *b, const char *name, enum bench_how how,
					 const char *backing)
{
	struct bench_variant *v;

	for (int i = 0; i < b->nvar; i++)
		if (!strcmp(b->var[i].name, name))
			return NULL;
	v = &b->var[b->nvar++];
	memset(v, 0, sizeof *v);
	snprintf(v->name, sizeof v->name, "%s", name);
	v->how = how;
	v->backing = backing;
	return v;
}

/* The first readable path of a shared library among the usual directories, or "". */
static void find_library(const char *name, char *out, size_t len)
{
	static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib",
					    "/usr/local/lib", "/lib/x86_64-linux-gnu" };

	out[0] = 0;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(out, len, "%s/%s", dirs[i], name);
		if (access(out, R_OK) == 0)
			return;
	}
	out[0] = 0;
}

/* A peer allocator preloaded from its library, skipped when it is not installed. */
static void add_allocator(struct bench *b, const char *name, const char *lib, const char *pkg,
			  const char *env0, const char *env1)
{
	struct bench_variant *v = add_variant(b, name, BENCH_HOW_PEER, NULL);

	if (!v)
		return;
	v->env[0] = env0;
	v->env[1] = env1;
	find_library(lib, v->lib, sizeof v->lib);
	if (!v->lib[0]) {
		v->skip = true;
		snprintf(v->why, sizeof v->why, "%s not installed (%s)", lib, pkg);
	}
}

void bench_plan_peers(struct bench *b)
{
	struct bench_variant *v;

	if ((v = add_variant(b, "glibc-hugetlb1", BENCH_HOW_PEER, NULL)))
		v->env[0] = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1";
	if ((v = add_variant(b, "glibc-hugetlb2", BENCH_HOW_PEER, NULL)))
		v->env[0] = "GLIBC_TUNABLES=glibc.malloc.hugetlb=2";
	add_allocator(b, "mimalloc", "libmimalloc.so.2", "libmimalloc2.0",
		      "MIMALLOC_ALLOW_LARGE_OS_PAGES=1", "MIMALLOC_LARGE_OS_PAGES=1");
	add_allocator(b, "jemalloc", "libjemalloc.so.2", "libjemalloc2",
		      "MALLOC_CONF=thp:always,metadata_thp:always", NULL);
	/* (gperftools' tcmalloc has no huge page option of its own.) */
	add_allocator(b, "tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", NULL, NULL);
	/* A user's command has no build of its own with sp_alloc arrays. */
	if (!b->command) {
		add_variant(b, "ideal-2m", BENCH_HOW_IDEAL, "2m");
		add_variant(b, "ideal-1g", BENCH_HOW_IDEAL, "1g");
	}
	/* The system's own THP "always": plain kernels, the mode set around each run. */
	if ((v = add_variant(b, "thp-always", BENCH_HOW_SYSFS, NULL)) && !b->allow_sysfs) {
		v->skip = true;
		snprintf(v->why, sizeof v->why, "changes a system setting: only with --allow-sysfs");
	} else if (v && geteuid() != 0) {
		v->skip = true;
		snprintf(v->why, sizeof v->why, "--allow-sysfs needs root to set THP 'always'");
	}
}

void bench_plan_promote(struct bench *b)
{
	for (int i = 0; i < b->nitems; i++)
		if (b->items[i].k->promote) {
			add_variant(b, "promote", BENCH_HOW_PROMOTE, NULL);
			return;
		}
}

/* One item of kernel k at the size p[0..n). */
static int plan_size(struct bench *b, const struct bench_kernel *k, const char *p, size_t n,
		     char *err, size_t len)
{
	static char names[BENCH_MAX_ITEMS][16];
	struct bench_item *it = &b->items[b->nitems];
	uint64_t v;

	if (b->nitems == BENCH_MAX_ITEMS) {
		snprintf(err, len, "too many kernel sizes (at most %d)", BENCH_MAX_ITEMS);
		return -1;
	}
	if (n == 0 || n >= sizeof names[0]) {
		snprintf(err, len, "bad size '%.*s' for %s", (int)n, p, k->name);
		return -1;
	}
	snprintf(names[b->nitems], sizeof names[0], "%.*s", (int)n, p);
	if (sp_parse_size(names[b->nitems], &v) < 0 || v == 0) {
		snprintf(err, len, "bad size '%s' for %s (a number, or bytes with K, M or G)",
			 names[b->nitems], k->name);
		return -1;
	}
	it->k = k;
	it->size = names[b->nitems];
	it->value = v;
	it->bytes = bench_kernel_bytes(k, v);
	snprintf(it->dec, sizeof it->dec, "%llu", (unsigned long long)v);
	b->nitems++;
	return 0;
}

/* Adds the items of kernel k, one per size of the list (separated by sep), or of
 * the run's own list when sizes is NULL. */
static int plan_kernel(struct bench *b, const struct bench_kernel *k, const char *sizes,
		       size_t slen, char sep, char *err, size_t len)
{
	const char *p = sizes ? sizes : b->quick && k->quick ? k->quick : k->sizes;
	const char *end = sizes ? sizes + slen : p + strlen(p);

	if (!sizes)
		sep = ' ';
	while (p < end) {
		size_t n = strcspn(p, sep == ' ' ? " " : "/,");

		if (n > (size_t)(end - p))
			n = (size_t)(end - p);
		if (plan_size(b, k, p, n, err, len))
			return -1;
		p += n;
		while (p < end && *p == sep)
			p++;
	}
	return 0;
}

int bench_plan_kernels(struct bench *b, const char *list, char *err, size_t len)
{
	const char *p = list;

	if (!*list) {
		snprintf(err, len, "--kernel needs a list of kernels");
		return -1;
	}
	while (*p) {
		/* K, or K=SIZE/SIZE/...: the kernel at the sizes given. */
		size_t n = strcspn(p, ","), kn = strcspn(p, ",=");
		const struct bench_kernel *k = bench_kernel_find(p, kn);
		int rc;

		if (!k) {
			snprintf(err, len, "unknown kernel '%.*s' (see superpage bench --help)", (int)kn, p);
			return -1;
		}
		for (int i = 0; i < b->nitems; i++)
			if (b->items[i].k == k) {
				snprintf(err, len, "kernel %s is named twice", k->name);
				return -1;
			}
		if (kn < n && p[kn] == '=')
			rc = plan_kernel(b, k, p + kn + 1, n - kn - 1, '/', err, len);
		else
			rc = plan_kernel(b, k, NULL, 0, ' ', err, len);
		if (rc)
			return rc;
		p += n;
		if (*p && !*++p) {
			snprintf(err, len, "--kernel list ends in ','");
			return -1;
		}
	}
	return 0;
}

int bench_plan_all(struct bench *b, char *err, size_t len)
{
	const struct bench_kernel *k;

	for (int i = 0; (k = bench_kernel_at(i)); i++)
		if ((!b->quick || k->quick) && plan_kernel(b, k, NULL, 0, ' ', err, len))
			return -1;
	return 0;
}

/* The backings of a list, each run through superpage run. */
static int plan_backing_list(struct bench *b, const char *list, char *err, size_t len)
{
	const char *p = list;
	enum sp_backing bk;
	char one[16];

	while (*p) {
		size_t n = strcspn(p, ",");

		snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
		if (n >= sizeof one || sp_backing_parse(one, &bk) < 0) {
			snprintf(err, len, "bad backing '%.*s' (4k, auto, thp, 2m or 1g)", (int)n, p);
			return -1;
		}
		add_variant(b, sp_backing_name(bk), BENCH_HOW_RUN, sp_backing_name(bk));
		p += n;
		if (*p && !*++p) {
			snprintf(err, len, "--backing list ends in ','");
			return -1;
		}
	}
	return 0;
}

int bench_plan_backings(struct bench *b, const char *list, char *err, size_t len)
{
	if (!*list) {
		snprintf(err, len, "--backing needs a list of backings");
		return -1;
	}
	add_variant(b, "4k", BENCH_HOW_RUN, "4k");
	return plan_backing_list(b, list, err, len);
}

int bench_plan_command(struct bench *b, const char *list, char *err, size_t len)
{
	if (!*list) {
		snprintf(err, len, "--backing needs a list of backings");
		return -1;
	}
	b->command = true;
	/* The program as it is: no runtime, THP as the machine has it. */
	add_variant(b, "plain", BENCH_HOW_PEER, NULL);
	if (plan_backing_list(b, list, err, len))
		return -1;
	if (b->peers)
		bench_plan_peers(b);
	return 0;
}
