/* util.c - the command's one-line messages, option matching, human-readable sizes, a line appended to a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void say(const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof msg, fmt, ap);
	/* One line, whatever the user typed into the arguments we quote. */
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	fflush(stdout);
	fprintf(stderr, "superpage: %s\n", msg);
}

int cli_error(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
	return code;
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

/* libhugetlbfs' program superpage runs as ("hugeadm"), and the name it was run by as
 * typed ("superpage-hugeadm", "/usr/bin/hugeadm"); NULL under superpage itself. */
static const char *personality_cmd, *personality_typed;

void cli_set_personality(const char *cmd, const char *typed)
{
	personality_cmd = cmd;
	personality_typed = typed;
}

const char *cli_command(const char *cmd)
{
	static char buf[320];

	if (personality_cmd && !strcmp(cmd, personality_cmd))
		snprintf(buf, sizeof buf, "%s", personality_typed);
	else
		snprintf(buf, sizeof buf, "superpage %s", cmd);
	return buf;
}

bool cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	const char *arg = argv[*i];
	size_t n = strlen(name);

	if (strncmp(arg, name, n))
		return 0;
	if (arg[n] == '=') {
		*val = arg + n + 1;
		return 1;
	}
	if (arg[n])
		return 0;
	if (*i + 1 >= argc) {
		cli_error(EXIT_USAGE, "%s: %s needs a value (see %s --help)", argv[0], name,
			  cli_command(argv[0]));
		return -1;
	}
	*val = argv[++*i];
	return 1;
}

const char *cli_human(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	/* Stop where the value prints below 1024.0 after rounding to one decimal. */
	while (v >= 1023.95 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

const char *cli_units(uint64_t bytes, char *buf, size_t len)
{
	static const char *const unit[] = { "EiB", "PiB", "TiB", "GiB", "MiB", "KiB" };

	for (int u = 0; u < 6; u++) {
		unsigned shift = 10u * (6 - (unsigned)u);

		if (bytes && bytes % (1ull << shift) == 0) {
			snprintf(buf, len, "%llu %s", (unsigned long long)(bytes >> shift), unit[u]);
			return buf;
		}
	}
	return cli_human(bytes, buf, len);
}

const char *cli_pages(long n)
{
	return n == 1 ? "page" : "pages";
}

const char *cli_page(uint64_t bytes, char *buf, size_t len)
{
	return sp_format_size(bytes, buf, len);
}


int cli_append(const char *file, const char *buf, size_t len)
{
	int fd = open(file, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, buf, len);
	int err = n < 0 ? errno : EIO;
	close(fd);
	return n == (ssize_t)len ? 0 : -err;
}
