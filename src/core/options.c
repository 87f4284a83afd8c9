/* options.c - SUPERPAGE_* from the environment: a table of names, defaults and kinds;
 * a bad value is a warning and the default stands, so a typo never breaks a program. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

void sp_options_default(struct sp_options *o)
{
	memset(o, 0, sizeof *o);
	o->backing = SP_BACKING_AUTO;
	o->min = SP_2M_SIZE;
	o->arena_min = 64 << 10;
	o->heap = true;
}

enum opt_kind { OPT_BACKING, OPT_SIZE, OPT_BOOL, OPT_TEXT, OPT_STATS, OPT_LEVEL };

struct opt {
	const char *name;
	enum opt_kind kind;
	size_t offset;
	const char *expect; /* what a good value looks like, for the warning */
};

#define OFF(f) offsetof(struct sp_options, f)
static const struct opt opts[] = {
	{ "SUPERPAGE_BACKING", OPT_BACKING, OFF(backing), "auto, thp, 2m, 1g or 4k" },
	{ "SUPERPAGE_MIN", OPT_SIZE, OFF(min), "a size such as 2M" },
	{ "SUPERPAGE_ARENA_MIN", OPT_SIZE, OFF(arena_min), "a size such as 64K, or 0" },
	{ "SUPERPAGE_HEAP", OPT_BOOL, OFF(heap), "yes or no" },
	{ "SUPERPAGE_STACKS", OPT_BOOL, OFF(stacks), "yes or no" },
	{ "SUPERPAGE_SHM", OPT_BOOL, OFF(shm), "yes or no" },
	{ "SUPERPAGE_TEXT", OPT_TEXT, OFF(text), "no, main or all" },
	{ "SUPERPAGE_PERF_MAP", OPT_BOOL, OFF(perf_map), "yes or no" },
	{ "SUPERPAGE_STATS", OPT_STATS, OFF(stats), "yes, no, stderr or a path with a '/'" },
	{ "SUPERPAGE_VERBOSE", OPT_LEVEL, OFF(verbose), "0, 1, 2 or 3" },
	{ "SUPERPAGE_HONOUR_THP_DISABLE", OPT_BOOL, OFF(honour_thp_disable), "yes or no" },
	{ "SUPERPAGE_SHRINK", OPT_BOOL, OFF(shrink), "yes or no" },
	{ "SUPERPAGE_CHECK", OPT_BOOL, OFF(check), "yes or no" },
	{ "SUPERPAGE_DENSE_TOUCHED", OPT_BOOL, OFF(dense_touched), "yes or no" },
};

static int parse_text(const char *v, enum sp_text_mode *out)
{
	bool b;
	if (strcasecmp(v, "main") == 0)
		*out = SP_TEXT_MAIN;
	else if (strcasecmp(v, "all") == 0)
		*out = SP_TEXT_ALL;
	else if (sp_parse_bool(v, &b) == 0)
		*out = b ? SP_TEXT_MAIN : SP_TEXT_NO;
	else
		return -EINVAL;
	return 0;
}

/* yes or no (any boolean); "stderr", the account on stderr as with yes; else a file
 * to append it to, named as a path: with a '/' ("/var/tmp/sp.json", "./sp.json"). A
 * bare word ("zz", "-1", "stdout") is far likelier a slip than a file wanted in
 * whatever directory each process runs in, so it is refused, not created. */
static int parse_stats(const char *v, struct sp_options *o)
{
	bool b;
	if (strcasecmp(v, "stderr") == 0) {
		o->stats = true;
		o->stats_file[0] = 0;
		return 0;
	}
	if (sp_parse_bool(v, &b) == 0) {
		o->stats = b;
		o->stats_file[0] = 0;
		return 0;
	}
	if (!strchr(v, '/') || strlen(v) >= sizeof o->stats_file)
		return -EINVAL;
	o->stats = true;
	sp_strlcpy(o->stats_file, v, sizeof o->stats_file);
	return 0;
}

static int parse_one(const struct opt *opt, const char *v, struct sp_options *o)
{
	char *field = (char *)o + opt->offset;
	switch (opt->kind) {
	case OPT_BACKING:
		return sp_backing_parse(v, (enum sp_backing *)(void *)field);
	case OPT_SIZE: {
		uint64_t size;
		int r = sp_parse_size(v, &size);
		if (r == 0)
			*(uint64_t *)(void *)field = size;
		return r;
	}
	case OPT_BOOL:
		return sp_parse_bool(v, (bool *)field);
	case OPT_TEXT:
		return parse_text(v, (enum sp_text_mode *)(void *)field);
	case OPT_STATS:
		return parse_stats(v, o);
	case OPT_LEVEL:
		if (v[0] < '0' || v[0] > '3' || v[1])
			return -EINVAL;
		*(int *)(void *)field = v[0] - '0';
		return 0;
	}
	return -EINVAL;
}

int sp_options_from_env(struct sp_options *o, sp_warn_fn warn, void *arg)
{
	int warnings = 0;
	sp_options_default(o);
	for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
		const char *v = getenv(opts[i].name);
		if (!v)
			continue;
		struct sp_options trial = *o;
		if (parse_one(&opts[i], v, &trial) == 0) {
			*o = trial;
			continue;
		}
		warnings++;
		if (warn) {
			char msg[384];
			snprintf(msg, sizeof msg, "%s=%.128s is not valid (want %s); using the default",
				 opts[i].name, v, opts[i].expect);
			warn(msg, arg);
		}
	}
	return warnings;
}
