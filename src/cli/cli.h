/* cli.h - what the superpage command's files share: the commands, messages, argument helpers. */
#ifndef SP_CLI_H
#define SP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "superpage.h"

/* Exit statuses of the command (see superpage(1)). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,  /* the machine did less than asked, or could not be read */
	EXIT_USAGE = 2, /* bad arguments, or asked for something not allowed */
};

/* Each command gets argv without the program name: argv[0] is the command's name. */
int cmd_status(int argc, char **argv);
int cmd_pool(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_promote(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_version(int argc, char **argv);

/* superpage stat --all (stat_all.c): argv as cmd_stat has it. */
int stat_all(int argc, char **argv);

void usage_status(void);
void usage_pool(void);
void usage_stat(void);
void usage_promote(void);
void usage_run(void);
void usage_bench(void);
void usage_export(void);
void usage_version(void);

/* Prints "superpage: MESSAGE" as one line on stderr (control characters shown as
 * '?', so a user's argument cannot break the line) and returns code. */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same as a warning that does not end the command. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* True if argv has -h or --help before any "--". */
bool cli_wants_help(int argc, char **argv);
/* Matches "--name VALUE" (consuming the next argument) or "--name=VALUE".
 * Returns 1 and sets *val when arg i is that option, 0 when it is not, and -1
 * (after printing the error) when the value is missing. */
int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **val);

/* superpage run: one line when CMD will not get the runtime (a static, setuid or
 * foreign program); it runs all the same (image.c). */
void cli_say_image(const char *cmd);

/* "64.0 MiB", "512 B", "1.0 GiB": for amounts of memory. */
const char *cli_human(uint64_t bytes, char *buf, size_t len);
/* "2 MiB", "1 GiB": a whole number of units when exact, else as cli_human. */
const char *cli_units(uint64_t bytes, char *buf, size_t len);
/* "page" or "pages" for n. */
const char *cli_pages(long n);
/* "2M", "1G", "4K": for page sizes (sp_format_size). */
const char *cli_page(uint64_t bytes, char *buf, size_t len);

/* superpage promote's output (promote_print.c): a pass over one process as text or as
 * one line of JSON (round: 1, 2, ... under --watch); the one-line error for a process
 * that cannot be promoted at all (err: sp_promote's -errno), and its exit status. */
void promote_print_human(const struct sp_promote_result *r, const char *comm, bool dry,
			 int round);
void promote_print_json(const struct sp_promote_result *r, const char *comm, bool dry,
			int round);
int promote_say_fatal(pid_t pid, int err);

#endif
