/* hugectl.c - superpage-hugectl: libhugetlbfs' hugectl(8) options turned into a superpage run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void usage_hugectl(void)
{
	fputs("usage: superpage-hugectl [OPTIONS] [--] COMMAND [ARGS...]\n"
	      "\n"
	      "libhugetlbfs' hugectl(8) on superpage: runs COMMAND as superpage run does, with\n"
	      "the options turned into superpage run's. No relinking is needed.\n"
	      "\n"
	      "  --heap[=SIZE]        malloc's heap on hugetlb pages of SIZE (2M or 1G; default:\n"
	      "                       the default huge page size): superpage run --backing 2m|1g\n"
	      "  --thp                the heap on transparent huge pages: --backing thp\n"
	      "  --shm                shared memory on hugetlb pages: --shm\n"
	      "  --text[=SIZE]        the program's text (and its large data) on huge pages:\n"
	      "                       --text; SIZE 2M only\n"
	      "  --data, --bss        moved with the text by --text (given as --text)\n"
	      "  --dry-run            print the environment and the command, run nothing\n"
	      "  -v, --verbose LEVEL  say fallbacks (LEVEL 0 to 99, above 3 is 3); -q: quieter\n"
	      "  --no-reserve         accepted: superpage always reserves hugetlb pages\n"
	      "  --share-text, --no-preload, --force-preload, --library-use-path,\n"
	      "  --library-path PATH  accepted, each says why it does not apply\n"
	      "\n"
	      "Exit status: that of COMMAND, 127 if it is not found, 126 if it cannot be run,\n"
	      "2 for bad options. See superpage-hugectl(8) and superpage-run(7).\n",
	      stdout);
}

#define HUGECTL_MAX_RUN_ARGS 16

/* What the options ask of superpage run. */
struct hugectl_args {
	const char *backing;     /* "2m", "1g", "thp", or NULL */
	const char *heap_opt;    /* the option that chose the backing, for a clash */
	bool shm, text, dry_run;
	int verbose;             /* -1: not given */
};

/* The default huge page size as a backing: "2m" or "1g". */
static const char *default_backing(void)
{
	static struct sp_system sys;

	if (sp_probe(&sys) == 0 && sys.default_huge_size == 1ull << 30)
		return "1g";
	return "2m";
}

/* SIZE of --heap=SIZE or --text=SIZE as a backing. Returns 0 or an exit status. */
static int size_backing(const char *opt, const char *v, const char **backing)
{
	uint64_t size;
	int rc = sp_parse_size(v, &size);

	if (rc == 0 && size == 2ull << 20)
		*backing = "2m";
	else if (rc == 0 && size == 1ull << 30)
		*backing = "1g";
	else
		return cli_error(EXIT_USAGE, "hugectl: bad page size '%s' for %s (2M or 1G)", v, opt);
	return 0;
}

static int set_backing(struct hugectl_args *h, const char *opt, const char *backing)
{
	if (h->backing && strcmp(h->backing, backing))
		return cli_error(EXIT_USAGE, "hugectl: %s and %s both choose the heap's pages: give one",
				 h->heap_opt, opt);
	h->backing = backing;
	h->heap_opt = opt;
	return 0;
}

/* The options that only need saying: 1 when a is one (said), 0 when it is not. */
static int said_option(int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v;
	int m;

	if (!strcmp(a, "--no-reserve")) {
		cli_warn("hugectl: --no-reserve: superpage always reserves hugetlb pages when it "
			 "maps them, so a program is never killed by SIGBUS for want of one");
	} else if (!strcmp(a, "--share-text")) {
		cli_warn("hugectl: --share-text: not provided: superpage moves each process's text "
			 "onto its own huge pages, they are not shared between processes");
	} else if (!strcmp(a, "--no-preload")) {
		cli_warn("hugectl: --no-preload: not provided: superpage works only through its "
			 "preloaded runtime, which is always preloaded");
	} else if (!strcmp(a, "--force-preload")) {
		cli_warn("hugectl: --force-preload: superpage always preloads its runtime");
	} else if (!strcmp(a, "--library-use-path")) {
		cli_warn("hugectl: --library-use-path: superpage's runtime is the one installed "
			 "with this superpage, not one found on the library path");
	} else if ((m = cli_opt_value(argc, argv, i, "--library-path", &v)) != 0) {
		if (m < 0)
			return -1;
		cli_warn("hugectl: --library-path: not provided: superpage's runtime is the one "
			 "installed with this superpage, '%s' is not used", v);
	} else {
		return 0;
	}
	return 1;
}

/* -v, -vv, --verbose LEVEL, --verbose=LEVEL, -q: 1 when a is one, 0 when it is not, or
 * an exit status. */
static int verbose_option(int argc, char **argv, int *i, struct hugectl_args *h)
{
	const char *a = argv[*i], *v;
	uint64_t level;
	int m;

	if (a[1] == 'v' && strspn(a + 1, "v") == strlen(a + 1)) {
		h->verbose = (h->verbose < 0 ? 1 : h->verbose) + (int)strlen(a + 1);
	} else if (a[1] == 'q' && strspn(a + 1, "q") == strlen(a + 1)) {
		h->verbose = (h->verbose < 0 ? 1 : h->verbose) - (int)strlen(a + 1);
		if (h->verbose < 0)
			h->verbose = 0;
	} else if ((m = cli_opt_value(argc, argv, i, "--verbose", &v)) != 0) {
		if (m < 0)
			return EXIT_USAGE;
		if (sp_parse_count(v, &level) < 0 || level > 99)
			return cli_error(EXIT_USAGE, "hugectl: bad verbosity '%s' (0 to 99)", v);
		h->verbose = (int)level;
	} else {
		return 0;
	}
	return 1;
}

/* One option of hugectl into h: 0, or an exit status. */
static int hugectl_option(int argc, char **argv, int *i, struct hugectl_args *h)
{
	const char *a = argv[*i], *b = NULL;
	int rc;

	if (!strcmp(a, "--heap"))
		return set_backing(h, a, default_backing());
	if (!strncmp(a, "--heap=", 7)) {
		if ((rc = size_backing(a, a + 7, &b)) != 0)
			return rc;
		return set_backing(h, "--heap", b);
	}
	if (!strcmp(a, "--thp"))
		return set_backing(h, a, "thp");
	if (!strcmp(a, "--shm")) {
		h->shm = true;
	} else if (!strcmp(a, "--text")) {
		h->text = true;
	} else if (!strncmp(a, "--text=", 7)) {
		if ((rc = size_backing(a, a + 7, &b)) != 0)
			return rc;
		if (strcmp(b, "2m"))
			return cli_error(EXIT_USAGE, "hugectl: --text=%s: superpage moves text onto "
					 "2 MiB pages only", a + 7);
		h->text = true;
	} else if (!strcmp(a, "--data") || !strcmp(a, "--bss") || !strncmp(a, "--data=", 7) ||
		   !strncmp(a, "--bss=", 6)) {
		cli_warn("hugectl: %s: superpage moves the program's large data and bss with its "
			 "text: given as --text", a);
		h->text = true;
	} else if (!strcmp(a, "--dry-run")) {
		h->dry_run = true;
	} else if ((rc = said_option(argc, argv, i)) != 0) {
		return rc < 0 ? EXIT_USAGE : 0;
	} else if ((rc = verbose_option(argc, argv, i, h)) != 0) {
		return rc == 1 ? 0 : rc;
	} else {
		return cli_error(EXIT_USAGE, "hugectl: unknown option '%s' (see %s --help)", a,
				 cli_command("hugectl"));
	}
	return 0;
}

/* superpage run's arguments for h and the command at argv[cmd]; *count: how many. */
static char **run_argv(const struct hugectl_args *h, int argc, char **argv, int cmd, int *count)
{
	static char backing[32], verbose[16];
	char **r = calloc((size_t)(argc - cmd) + HUGECTL_MAX_RUN_ARGS, sizeof *r);
	int n = 0;

	if (!r)
		return NULL;
	r[n++] = "run";
	if (h->backing) {
		snprintf(backing, sizeof backing, "--backing=%s", h->backing);
		r[n++] = backing;
	}
	if (h->shm)
		r[n++] = "--shm";
	if (h->text)
		r[n++] = "--text";
	if (h->verbose >= 0) {
		snprintf(verbose, sizeof verbose, "--verbose=%d", h->verbose > 3 ? 3 : h->verbose);
		r[n++] = verbose;
	}
	if (h->dry_run)
		r[n++] = "--dry-run";
	r[n++] = "--";
	for (int i = cmd; i < argc; i++)
		r[n++] = argv[i];
	*count = n;
	return r;
}

int cmd_hugectl(int argc, char **argv)
{
	struct hugectl_args h = { .verbose = -1 };
	char **r;
	int i, n, rc;

	/* Options end at "--" or at COMMAND, the first word that is not one. */
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage_hugectl();
			return EXIT_OK;
		}
		if ((rc = hugectl_option(argc, argv, &i, &h)) != 0)
			return rc;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc)
		return cli_error(EXIT_USAGE, "hugectl: missing COMMAND, the program to run "
				 "(see %s --help)", cli_command("hugectl"));
	r = run_argv(&h, argc, argv, i, &n);
	if (!r)
		return cli_error(EXIT_FAIL, "hugectl: out of memory");
	/* cmd_run returns only when the exec fails, or after --dry-run. */
	rc = cmd_run(n, r);
	free(r);
	return rc;
}
