/* hugeadm.c - superpage-hugeadm: libhugetlbfs' hugeadm(8) pool, size, mount and THP options on the core. */
#include <errno.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void usage_hugeadm(void)
{
	fputs("usage: superpage-hugeadm OPTION...\n"
	      "\n"
	      "libhugetlbfs' hugeadm(8) on superpage: shows and sets the huge page pools and THP.\n"
	      "The options are done in the order given; setting needs root.\n"
	      "\n"
	      "  --pool-list                      Size Minimum Current Maximum Default, per size\n"
	      "  --pool-pages-min SIZE:[+|-]N     set (or adjust) the pool: nr_hugepages\n"
	      "  --pool-pages-max SIZE:[+|-]N     set (or adjust) the most pages the pool may\n"
	      "                                   grow to: nr_overcommit_hugepages = N - min\n"
	      "                                   (SIZE: 2M, 2MB, 1G, 1GB or DEFAULT; N pages, or\n"
	      "                                   an amount of memory such as 512M)\n"
	      "  --page-sizes                     the page sizes that have a pool, in bytes\n"
	      "  --page-sizes-all                 every huge page size of the kernel, in bytes\n"
	      "  --list-all-mounts                the hugetlbfs mounts: Mount Point, Options\n"
	      "  --explain                        the above, then superpage status's advice\n"
	      "  --thp-always, --thp-madvise, --thp-never\n"
	      "                                   set THP's mode\n"
	      "  --hard, --obey-numa-mempol, -v   accepted, each says what it does here\n"
	      "\n"
	      "The other options of hugeadm(8) (--create-mounts and the like, swap, zones,\n"
	      "sysctls, khugepaged) are not provided: each says why, exit status 2.\n"
	      "Exit status: 0 done, 1 the kernel gave fewer pages than asked, 2 bad arguments\n"
	      "or no root. See superpage-hugeadm(8).\n",
	      stdout);
}

enum action {
	ACT_LIST, ACT_MIN, ACT_MAX, ACT_SIZES, ACT_SIZES_ALL, ACT_MOUNTS, ACT_EXPLAIN,
	ACT_THP,
};

struct step {
	enum action act;
	const char *arg;        /* as given: "2M:+4", "never" */
	uint64_t size;          /* ACT_MIN, ACT_MAX: page size */
	char sign;              /* '+', '-' or 0 */
	long count;             /* pages */
};

#define HUGEADM_MAX_STEPS 64

/* The options of hugeadm(8) that have no counterpart here, and why. */
static const struct {
	const char *name;
	bool value;             /* takes a value */
	const char *why;
} not_provided[] = {
	{ "--create-mounts", false, "superpage maps huge pages without a hugetlbfs mount "
	  "(MAP_HUGETLB, memfd); mount one with: mount -t hugetlbfs -o pagesize=2M none DIR" },
	{ "--create-global-mounts", false, "superpage needs no hugetlbfs mount (see --create-mounts)" },
	{ "--create-user-mounts", true, "superpage needs no hugetlbfs mount (see --create-mounts)" },
	{ "--create-group-mounts", true, "superpage needs no hugetlbfs mount (see --create-mounts)" },
	{ "--max-size", true, "it limits mounts that --create-mounts does not make here" },
	{ "--max-inodes", true, "it limits mounts that --create-mounts does not make here" },
	{ "--set-recommended-min_free_kbytes", false, "superpage does not tune the page "
	  "allocator; set vm.min_free_kbytes with sysctl" },
	{ "--set-recommended-shmmax", false, "superpage does not set sysctls; set "
	  "kernel.shmmax with sysctl" },
	{ "--set-shm-group", true, "superpage does not set sysctls; set vm.hugetlb_shm_group "
	  "with sysctl" },
	{ "--enable-zone-movable", false, "the kernel no longer has hugepages_treat_as_movable" },
	{ "--disable-zone-movable", false, "the kernel no longer has hugepages_treat_as_movable" },
	{ "--add-temp-swap", false, "superpage does not add swap to grow a pool" },
	{ "--add-ramdisk-swap", false, "superpage does not add swap to grow a pool" },
	{ "--persist", false, "it keeps swap that is not added here (to keep pools across "
	  "boots: superpage pool --persist)" },
	{ "--thp-khugepaged-pages", true, "superpage does not tune khugepaged; write "
	  "/sys/kernel/mm/transparent_hugepage/khugepaged/pages_to_scan" },
	{ "--thp-khugepaged-scan-sleep", true, "superpage does not tune khugepaged; write "
	  "/sys/kernel/mm/transparent_hugepage/khugepaged/scan_sleep_millisecs" },
	{ "--thp-khugepaged-alloc-sleep", true, "superpage does not tune khugepaged; write "
	  "/sys/kernel/mm/transparent_hugepage/khugepaged/alloc_sleep_millisecs" },
};

static struct sp_system sys;

/* SIZE of SIZE:COUNT: a page size of this machine, or DEFAULT. 0 or an exit status. */
static int parse_page_size(const char *opt, const char *s, uint64_t *size)
{
	int rc;

	if (!strcasecmp(s, "DEFAULT")) {
		if (!sys.default_huge_size)
			return cli_error(EXIT_USAGE, "hugeadm: %s: this machine has no default huge page "
					 "size", opt);
		*size = sys.default_huge_size;
		return 0;
	}
	rc = sp_parse_size(s, size);
	if (rc < 0 || *size == 0)
		return cli_error(EXIT_USAGE, "hugeadm: %s: bad page size '%s' (2M, 2MB, 1G, 1GB or "
				 "DEFAULT)", opt, s);
	for (int i = 0; i < sys.n_sizes; i++)
		if (sys.page_sizes[i] == *size)
			return 0;
	return cli_error(EXIT_USAGE, "hugeadm: %s: '%s' is not a huge page size of this machine "
			 "(see --page-sizes-all)", opt, s);
}

/* COUNT of SIZE:COUNT: [+|-] pages, or an amount of memory (K, M, G) as the pages
 * that hold it. 0 or an exit status. */
static int parse_count(const char *opt, const char *s, struct step *st)
{
	uint64_t n;
	size_t len;
	int rc;

	if (*s == '+' || *s == '-')
		st->sign = *s++;
	len = strlen(s);
	if (len && strchr("kKmMgG", s[len - 1])) {
		rc = sp_parse_size(s, &n);
		if (rc == 0)
			n = (n + st->size - 1) / st->size;
	} else {
		rc = sp_parse_count(s, &n);
	}
	if (rc < 0 || n > LONG_MAX)
		return cli_error(EXIT_USAGE, "hugeadm: %s: bad count '%s' (pages, or memory such "
				 "as 512M)", opt, s);
	st->count = (long)n;
	return 0;
}

/* "SIZE:[+|-]COUNT" into st. 0 or an exit status. */
static int parse_pool_arg(const char *opt, const char *v, struct step *st)
{
	const char *colon = strchr(v, ':');
	char size[64];
	int rc;

	if (!colon || (size_t)(colon - v) >= sizeof size)
		return cli_error(EXIT_USAGE, "hugeadm: %s needs SIZE:[+|-]COUNT, as in 2M:64, not '%s'",
				 opt, v);
	memcpy(size, v, (size_t)(colon - v));
	size[colon - v] = 0;
	if ((rc = parse_page_size(opt, size, &st->size)) != 0)
		return rc;
	return parse_count(opt, colon + 1, st);
}

/* One option into steps (*n of them): 0, or an exit status. */
static int parse_option(int argc, char **argv, int *i, struct step *steps, int *n)
{
	static const struct { const char *name; enum action act; const char *arg; } plain[] = {
		{ "--pool-list", ACT_LIST, NULL }, { "--page-sizes", ACT_SIZES, NULL },
		{ "--page-sizes-all", ACT_SIZES_ALL, NULL }, { "--list-all-mounts", ACT_MOUNTS, NULL },
		{ "--explain", ACT_EXPLAIN, NULL }, { "--thp-always", ACT_THP, "always" },
		{ "--thp-madvise", ACT_THP, "madvise" }, { "--thp-never", ACT_THP, "never" },
	};
	const char *a = argv[*i], *v;
	struct step *st = &steps[*n];
	int m;

	if (*n >= HUGEADM_MAX_STEPS)
		return cli_error(EXIT_USAGE, "hugeadm: too many options (at most %d)", HUGEADM_MAX_STEPS);
	memset(st, 0, sizeof *st);
	for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++)
		if (!strcmp(a, plain[k].name)) {
			st->act = plain[k].act;
			st->arg = plain[k].arg;
			(*n)++;
			return 0;
		}
	if ((m = cli_opt_value(argc, argv, i, "--pool-pages-min", &v)) != 0 ||
	    (m = cli_opt_value(argc, argv, i, "--pool-pages-max", &v)) != 0) {
		if (m < 0)
			return EXIT_USAGE;
		st->act = strstr(a, "-min") ? ACT_MIN : ACT_MAX;
		st->arg = v;
		(*n)++;
		return parse_pool_arg(st->act == ACT_MIN ? "--pool-pages-min" : "--pool-pages-max", v, st);
	}
	if (!strcmp(a, "--hard")) {
		cli_warn("hugeadm: --hard: the pool is asked once; what the kernel gave is said");
		return 0;
	}
	if (!strcmp(a, "--obey-numa-mempol")) {
		cli_warn("hugeadm: --obey-numa-mempol: pools are set system-wide here (per node: "
			 "superpage pool --node N)");
		return 0;
	}
	if (a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1)) {
		cli_warn("hugeadm: %s: hugeadm here says what it does already", a);
		return 0;
	}
	for (size_t k = 0; k < sizeof not_provided / sizeof not_provided[0]; k++) {
		size_t len = strlen(not_provided[k].name);

		if (!strncmp(a, not_provided[k].name, len) && (!a[len] || a[len] == '='))
			return cli_error(EXIT_USAGE, "hugeadm: %s: not provided: %s", not_provided[k].name,
					 not_provided[k].why);
	}
	return cli_error(EXIT_USAGE, "hugeadm: unknown option '%s' (see %s --help)", a,
			 cli_command("hugeadm"));
}

/* ---------- showing ---------- */

static void pool_list(void)
{
	printf("%10s %8s %8s %8s %8s\n", "Size", "Minimum", "Current", "Maximum", "Default");
	for (int i = 0; i < sys.n_sizes; i++) {
		struct sp_pool p;
		long min, max;

		if (sp_pool_get(sys.page_sizes[i], -1, &p) < 0)
			p = sys.pools[i];
		min = p.total - p.surplus;
		max = min + (p.overcommit > 0 ? p.overcommit : 0);
		printf("%10llu %8ld %8ld %8ld %8s\n", (unsigned long long)sys.page_sizes[i], min,
		       p.total, max, sys.page_sizes[i] == sys.default_huge_size ? "*" : "");
	}
}

static void page_sizes(bool all)
{
	for (int i = 0; i < sys.n_sizes; i++) {
		struct sp_pool p;

		if (!all && (sp_pool_get(sys.page_sizes[i], -1, &p) < 0 ||
			     p.total - p.surplus + (p.overcommit > 0 ? p.overcommit : 0) <= 0))
			continue;
		printf("%llu\n", (unsigned long long)sys.page_sizes[i]);
	}
}

static int list_mounts(void)
{
	FILE *f = setmntent("/proc/mounts", "r");
	struct mntent *m;

	if (!f)
		return cli_error(EXIT_FAIL, "hugeadm: cannot read /proc/mounts: %s", strerror(errno));
	printf("%-20s %s\n", "Mount Point", "Options");
	while ((m = getmntent(f)) != NULL)
		if (!strcmp(m->mnt_type, "hugetlbfs"))
			printf("%-20s %s\n", m->mnt_dir, m->mnt_opts);
	endmntent(f);
	return EXIT_OK;
}

static int explain(void)
{
	char *status[] = { "status", NULL };
	int rc;

	puts("Huge page pools:");
	pool_list();
	puts("\nHuge page sizes with configured pools:");
	page_sizes(false);
	putchar('\n');
	if ((rc = list_mounts()) != 0)
		return rc;
	printf("\nTransparent huge pages: %s (defrag %s)\n\n",
	       sys.thp.present ? sp_thp_pmd_mode(&sys.thp) : "not in this kernel",
	       sys.thp.present ? sys.thp.defrag : "-");
	return cmd_status(1, status);
}

/* ---------- setting ---------- */

/* --pool-pages-min: nr_hugepages to COUNT, or adjusted by it. */
static int set_min(const struct step *st)
{
	struct sp_pool p;
	char page[32];
	long want, got = -1;
	int rc;

	cli_page(st->size, page, sizeof page);
	if ((rc = sp_pool_get(st->size, -1, &p)) < 0)
		return cli_error(EXIT_FAIL, "hugeadm: cannot read the %s pool: %s", page, strerror(-rc));
	want = st->sign == '+' ? p.total + st->count : st->sign == '-' ? p.total - st->count : st->count;
	if (want < 0)
		want = 0;
	rc = sp_pool_set(st->size, -1, want, &got);
	if (rc == -EACCES || rc == -EPERM)
		return cli_error(EXIT_USAGE, "hugeadm: not allowed to set the %s pool: %s", page,
				 strerror(-rc));
	if (rc == -ENOMEM)
		return cli_error(EXIT_FAIL, "hugeadm: asked for %ld pages of %s, the kernel gave %ld "
				 "(memory is fragmented or short)", want, page, got);
	if (rc == -EBUSY)
		return cli_error(EXIT_FAIL, "hugeadm: asked for %ld pages of %s, %ld stay while in use "
				 "(they go when freed)", want, page, got);
	if (rc < 0)
		return cli_error(EXIT_FAIL, "hugeadm: cannot set the %s pool: %s", page, strerror(-rc));
	return EXIT_OK;
}

/* Writes nr_overcommit_hugepages of a page size. 0 or -errno. */
static int write_overcommit(uint64_t size, long n)
{
	char path[128];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%llukB/nr_overcommit_hugepages",
		 (unsigned long long)(size >> 10));
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fprintf(f, "%ld\n", n) < 0)
		rc = -EIO;
	if (fclose(f) != 0 && rc == 0)
		rc = -errno;
	return rc;
}

/* --pool-pages-max: the most the pool may hold (Maximum) to COUNT, or adjusted by it:
 * nr_overcommit_hugepages = Maximum - Minimum. */
static int set_max(const struct step *st)
{
	struct sp_pool p;
	char page[32];
	long min, max, want;
	int rc;

	cli_page(st->size, page, sizeof page);
	if ((rc = sp_pool_get(st->size, -1, &p)) < 0)
		return cli_error(EXIT_FAIL, "hugeadm: cannot read the %s pool: %s", page, strerror(-rc));
	min = p.total - p.surplus;
	max = min + (p.overcommit > 0 ? p.overcommit : 0);
	want = st->sign == '+' ? max + st->count : st->sign == '-' ? max - st->count : st->count;
	if (want < min)
		return cli_error(EXIT_USAGE, "hugeadm: --pool-pages-max %s: the maximum %ld is below "
				 "the minimum %ld of the %s pool (lower --pool-pages-min first)",
				 st->arg, want, min, page);
	rc = write_overcommit(st->size, want - min);
	if (rc == -EACCES || rc == -EPERM)
		return cli_error(EXIT_USAGE, "hugeadm: not allowed to set the %s pool's maximum: %s",
				 page, strerror(-rc));
	if (rc < 0)
		return cli_error(EXIT_FAIL, "hugeadm: cannot set the %s pool's maximum: %s", page,
				 strerror(-rc));
	return EXIT_OK;
}

static int set_thp(const char *mode)
{
	int rc = sp_thp_set(mode);

	if (rc == -ENOENT)
		return cli_error(EXIT_FAIL, "hugeadm: this kernel has no THP");
	if (rc == -EACCES || rc == -EPERM)
		return cli_error(EXIT_USAGE, "hugeadm: not allowed to set THP: %s", strerror(-rc));
	if (rc < 0)
		return cli_error(EXIT_FAIL, "hugeadm: cannot set THP to %s: %s", mode, strerror(-rc));
	return EXIT_OK;
}

static int do_step(const struct step *st)
{
	switch (st->act) {
	case ACT_LIST:
		pool_list();
		return EXIT_OK;
	case ACT_SIZES:
	case ACT_SIZES_ALL:
		page_sizes(st->act == ACT_SIZES_ALL);
		return EXIT_OK;
	case ACT_MOUNTS:
		return list_mounts();
	case ACT_EXPLAIN:
		return explain();
	case ACT_MIN:
		return set_min(st);
	case ACT_MAX:
		return set_max(st);
	case ACT_THP:
		return set_thp(st->arg);
	}
	return EXIT_USAGE;
}

int cmd_hugeadm(int argc, char **argv)
{
	static struct step steps[HUGEADM_MAX_STEPS];
	int n = 0, rc;
	bool sets = false;

	if ((rc = sp_probe(&sys)) < 0)
		return cli_error(EXIT_FAIL, "hugeadm: cannot read the huge page setup of this machine: %s",
				 strerror(-rc));
	if (argc < 2)
		return cli_error(EXIT_USAGE, "hugeadm: no option given (see %s --help)",
				 cli_command("hugeadm"));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage_hugeadm();
			return EXIT_OK;
		}
		if (argv[i][0] != '-')
			return cli_error(EXIT_USAGE, "hugeadm: unexpected argument '%s' (see %s "
					 "--help)", argv[i], cli_command("hugeadm"));
		if ((rc = parse_option(argc, argv, &i, steps, &n)) != 0)
			return rc;
	}
	for (int k = 0; k < n; k++)
		sets |= steps[k].act == ACT_MIN || steps[k].act == ACT_MAX || steps[k].act == ACT_THP;
	if (sets && geteuid() != 0)
		return cli_error(EXIT_USAGE, "hugeadm: setting pools or THP needs root (try: sudo "
				 "%s ...)", cli_command("hugeadm"));
	for (int k = 0; k < n; k++)
		if ((rc = do_step(&steps[k])) != 0)
			return rc;
	return EXIT_OK;
}
