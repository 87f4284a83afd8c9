/* version.c - superpage version: the library's version string. */
#include <stdio.h>

#include "cli.h"

void usage_version(void)
{
	fputs("usage: superpage version\n"
	      "\n"
	      "Prints the version of superpage.\n",
	      stdout);
}

int cmd_version(int argc, char **argv)
{
	if (argc > 1)
		return cli_error(EXIT_USAGE, "version: unexpected argument '%s' (see superpage version --help)",
				 argv[1]);
	printf("superpage %s\n", sp_version());
	return EXIT_OK;
}
