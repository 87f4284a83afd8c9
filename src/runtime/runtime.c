/* runtime.c - the options every room of the runtime reads (runtime.h): one copy,
 * read from SUPERPAGE_* once, at the start of the heap (life.c). */
#include "runtime.h"

static struct sp_options options;

const struct sp_options *rt_options(void)
{
	return &options;
}

void rt_options_read(sp_warn_fn warn)
{
	sp_options_from_env(&options, warn, NULL);
}
