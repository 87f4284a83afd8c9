/* promote_pass.c - one pass of promote over one process, as superpage promote and superpage run's watch take it: the budget as written, ranges refused for good not asked again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_parse_budget(const char *s, struct sp_promote_options *o)
{
	size_t n = strlen(s);
	if (n > 1 && s[n - 1] == '%') {
		char *end;
		if (strspn(s, "0123456789.") != n - 1)
			return -EINVAL;
		double v = strtod(s, &end);
		if (end != s + n - 1 || !(v > 0) || v > 100)
			return -EINVAL;
		o->budget_share = v / 100;
		return 0;
	}
	uint64_t b;
	if (sp_parse_size(s, &b) < 0 || b == 0)
		return -EINVAL;
	o->budget_bytes = b;
	return 0;
}

/* Nothing of its anonymous memory was left to collapse: already huge, or none. */
static bool nothing_left(const struct sp_promote_result *r)
{
	static const enum sp_promote_why left[] = {
		SP_PROMOTE_NOHUGEPAGE, SP_PROMOTE_THP_OFF, SP_PROMOTE_SPARSE, SP_PROMOTE_BUDGET,
		SP_PROMOTE_NO_MEMORY, SP_PROMOTE_BUSY, SP_PROMOTE_CHANGED, SP_PROMOTE_REFUSED,
		SP_PROMOTE_GONE, SP_PROMOTE_PERMISSION, SP_PROMOTE_UNSUPPORTED, SP_PROMOTE_STOPPED,
	};
	if (r->candidates)
		return false;
	for (size_t i = 0; i < sizeof left / sizeof *left; i++)
		if (r->not_done[left[i]])
			return false;
	return true;
}

int promote_pass(struct promote_target *t, struct sp_promote_options *o,
		 struct sp_promote_result *r)
{
	o->avoid = t->avoid;
	o->n_avoid = t->n_avoid;
	int n = sp_promote(t->pid, o, r);
	o->avoid = NULL;
	o->n_avoid = 0;
	if (n < 0)
		return n;
	if (n > 0 || o->dry_run || nothing_left(r))
		t->promoted = true;
	/* What the kernel refused for good is not asked again by the next pass. */
	for (int i = 0; i < r->n_skips && t->n_avoid < SP_PROMOTE_MAX_SKIPS; i++)
		if (r->skips[i].why == SP_PROMOTE_REFUSED)
			t->avoid[t->n_avoid++] = r->skips[i];
	return n;
}
