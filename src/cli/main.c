/* main.c - the superpage command: picks the subcommand, prints the overall help. */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	void (*usage)(void);
};

static const struct command commands[] = {
	{ "status", cmd_status, usage_status },
	{ "pool", cmd_pool, usage_pool },
	{ "stat", cmd_stat, usage_stat },
	{ "promote", cmd_promote, usage_promote },
	{ "run", cmd_run, usage_run },
	{ "bench", cmd_bench, usage_bench },
	{ "export", cmd_export, usage_export },
	{ "cdi", cmd_cdi, usage_cdi },
	{ "version", cmd_version, usage_version },
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *f)
{
	fputs("usage: superpage COMMAND [ARGS]\n"
	      "\n"
	      "Huge pages for Linux programs: what the machine offers, its pools, how much of\n"
	      "a process sits on huge pages, and running a program with its memory on them.\n"
	      "\n"
	      "commands:\n"
	      "  status [--json]                       what this machine offers and what to fix\n"
	      "  pool [--size 2M|1G] [--node N] COUNT  set a huge page pool and read it back\n"
	      "  pool --persist ... | --apply          keep pools across reboots (pools.conf)\n"
	      "  stat [--json] PID                     how much of a process is on huge pages\n"
      "  stat --all [--cgroup] [--top N]       every process (or memory cgroup) at once\n"
	      "  promote [OPTIONS] PID...              collapse a running process's memory onto\n"
	      "                                        huge pages\n"
	      "  run [OPTIONS] [--] CMD [ARGS...]      run a program with its memory on huge pages\n"
	      "  bench [OPTIONS]                       run the benchmark kernels under each backing\n"
	      "  bench [OPTIONS] -- CMD [ARGS...]      run your program plain and under each\n"
	      "                                        backing: does it gain?\n"
	      "  export --textfile DIR | --listen ADDR huge page metrics for Prometheus\n"
	      "  cdi [--print | --output FILE]         a CDI spec: containers on huge pages through\n"
	      "                                        podman run --device superpage.io/run=auto\n"
	      "  version                               print the version\n"
	      "  help [COMMAND]                        print this help, or a command's\n"
	      "\n"
	      "Every command takes --help. Exit status: 0 done, 1 the kernel did less than\n"
	      "asked or could not be read, 2 bad arguments. See superpage(1).\n",
	      f);
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static int help(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		usage(stdout);
		return EXIT_OK;
	}
	if (argc > 2)
		return cli_error(EXIT_USAGE, "help: takes one command name (see superpage --help)");
	c = find_command(argv[1]);
	if (!c)
		return cli_error(EXIT_USAGE, "unknown command '%s' (see superpage --help)", argv[1]);
	c->usage();
	return EXIT_OK;
}

/* Run as superpage-hugectl or hugectl (a link to superpage): libhugetlbfs' program. */
static const struct command personalities[] = {
	{ "superpage-hugectl", cmd_hugectl, usage_hugectl },
	{ "hugectl", cmd_hugectl, usage_hugectl },
	{ "superpage-hugeadm", cmd_hugeadm, usage_hugeadm },
	{ "hugeadm", cmd_hugeadm, usage_hugeadm },
};

static const struct command *find_personality(const char *argv0)
{
	char copy[256];
	const char *base;

	snprintf(copy, sizeof copy, "%s", argv0);
	base = basename(copy);
	for (size_t i = 0; i < sizeof personalities / sizeof personalities[0]; i++)
		if (!strcmp(personalities[i].name, base))
			return &personalities[i];
	return NULL;
}

/* A full disk or a closed pipe must not look like success to a script. */
static int finish(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		int e = errno;
		if (rc == EXIT_OK)
			rc = EXIT_FAIL;
		cli_error(rc, "cannot write the output: %s", strerror(e));
	}
	return rc;
}

int main(int argc, char **argv)
{
	const struct command *c;
	const char *name;

	if (argc > 0 && (c = find_personality(argv[0])) != NULL) {
		/* Its errors say "hugeadm: ..." and point to its help by the name typed. */
		const char *cmd = strncmp(c->name, "superpage-", 10) ? c->name : c->name + 10;

		cli_set_personality(cmd, argv[0]);
		argv[0] = (char *)cmd;
		return finish(c->run(argc, argv));
	}
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h"))
		return finish(help(1, argv + 1));
	if (!strcmp(name, "help"))
		return finish(help(argc - 1, argv + 1));
	if (!strcmp(name, "--version"))
		name = "version";
	c = find_command(name);
	if (!c)
		return cli_error(EXIT_USAGE, "unknown command '%s' (see superpage --help)", name);
	/* run reads its own options: a --help after CMD is CMD's. */
	if (c->run != cmd_run && cli_wants_help(argc - 1, argv + 1)) {
		c->usage();
		return finish(EXIT_OK);
	}
	return finish(c->run(argc - 1, argv + 1));
}
