/* export.c - superpage export: huge page metrics for Prometheus, as a textfile or over HTTP. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"

#define TOP_DEFAULT 20
#define TOP_MAX 100000

void usage_export(void)
{
	fputs("usage: superpage export --textfile DIR [--interval SECONDS] [--top N]\n"
	      "       superpage export --listen HOST:PORT [--top N]\n"
	      "\n"
	      "Prometheus metrics about huge pages: the machine's memory on THP and hugetlb,\n"
	      "the pools per page size and node, the THP and khugepaged counters of\n"
	      "/proc/vmstat and sysfs, the resident and huge bytes of processes, and the\n"
	      "memory and huge bytes of every memory cgroup. Read afresh for every write or\n"
	      "scrape.\n"
	      "\n"
	      "  --textfile DIR     write DIR/superpage.prom for node_exporter's textfile\n"
	      "                     collector (through a temporary file, fsync'ed, renamed),\n"
	      "                     once\n"
	      "  --interval SECONDS with --textfile: write it again every SECONDS until\n"
	      "                     SIGTERM or SIGINT\n"
	      "  --listen HOST:PORT serve GET /metrics over HTTP until SIGTERM or SIGINT;\n"
	      "                     [::1]:PORT for IPv6, :PORT for every IPv4 address, port 0\n"
	      "                     for a free one (the address is said on stderr)\n"
	      "  --top N            per-process series for the N processes with the most\n"
	      "                     memory on huge pages (default 20), and for every process\n"
	      "                     under superpage run\n",
	      stdout);
}

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* SIGINT and SIGTERM are held off but while waiting (a write or a response is never
 * cut short, and a temporary file never left); *wait_mask is the mask to wait with. */
static void catch_stop(sigset_t *wait_mask)
{
	struct sigaction sa;
	sigset_t stop;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* A client that goes away mid-response is an error of send, not the end. */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, wait_mask);
	sigdelset(wait_mask, SIGINT);
	sigdelset(wait_mask, SIGTERM);
}

/* "15", "0.5": seconds, above 0 and at most a day, as milliseconds. */
static int parse_interval(const char *s, long *ms)
{
	char *end;
	double v;

	if (!*s || strspn(s, "0123456789.") != strlen(s))
		return -EINVAL;
	v = strtod(s, &end);
	if (*end || v < 0.001 || v > 86400)
		return -EINVAL;
	*ms = (long)(v * 1000 + 0.5);
	return 0;
}

/* Writes DIR/superpage.prom whole or not at all. 0 or -errno. */
static int write_textfile(const char *dir, const struct export_conf *c)
{
	char tmp[PATH_MAX], dst[PATH_MAX];
	FILE *f;
	int fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof tmp, "%s/.superpage.prom.tmp.%d", dir, (int)getpid()) >=
		    sizeof tmp ||
	    (size_t)snprintf(dst, sizeof dst, "%s/superpage.prom", dir) >= sizeof dst)
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	/* node_exporter runs as another user: readable whatever our umask. */
	if (fchmod(fd, 0644) < 0 || !(f = fdopen(fd, "w"))) {
		err = errno;
		close(fd);
		unlink(tmp);
		return -err;
	}
	metrics_write(f, c);
	if (fflush(f) != 0 || ferror(f) || fsync(fd) < 0)
		err = errno ? errno : EIO;
	if (fclose(f) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, dst) < 0)
		err = errno;
	if (err) {
		unlink(tmp);
		return -err;
	}
	/* The rename itself on disk, so that a crash leaves the old file or the new. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

static int run_textfile(const char *dir, long interval_ms, const struct export_conf *c,
			const sigset_t *wait_mask)
{
	struct timespec next, left;

	export_deadline(&next, 0);
	while (!stop_flag) {
		int rc = write_textfile(dir, c);

		if (rc < 0 && !interval_ms)
			return cli_error(EXIT_FAIL, "export: cannot write %s/superpage.prom: %s", dir,
					 strerror(-rc));
		if (rc < 0)
			cli_warn("export: cannot write %s/superpage.prom: %s (trying again in the "
				 "next interval)", dir, strerror(-rc));
		if (!interval_ms)
			break;
		/* The next write an interval after the last one began, however long it took. */
		next.tv_sec += interval_ms / 1000;
		next.tv_nsec += interval_ms % 1000 * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_sec++;
			next.tv_nsec -= 1000000000L;
		}
		if (!export_time_left(&next, &left))
			export_deadline(&next, 0); /* late: start again from now */
		while (!stop_flag && export_time_left(&next, &left))
			ppoll(NULL, 0, &left, wait_mask);
	}
	return EXIT_OK;
}

static int run_listen(const char *addr, const struct export_conf *c, const sigset_t *wait_mask)
{
	char bound[128];
	int code, fd = http_listen(addr, &code);

	if (fd < 0)
		return code;
	http_bound(fd, bound, sizeof bound);
	cli_warn("export: serving http://%s/metrics", bound);
	http_serve(fd, c, &stop_flag, wait_mask);
	close(fd);
	return EXIT_OK;
}

int cmd_export(int argc, char **argv)
{
	const char *dir = NULL, *listen_at = NULL, *v;
	unsigned long long top = TOP_DEFAULT;
	long interval_ms = 0;
	struct export_conf conf;
	sigset_t wait_mask;
	struct stat st;
	int k;

	for (int i = 1; i < argc; i++) {
		if ((k = cli_opt_value(argc, argv, &i, "--textfile", &v)) != 0) {
			if (k < 0)
				return EXIT_USAGE;
			dir = v;
		} else if ((k = cli_opt_value(argc, argv, &i, "--listen", &v)) != 0) {
			if (k < 0)
				return EXIT_USAGE;
			listen_at = v;
		} else if ((k = cli_opt_value(argc, argv, &i, "--interval", &v)) != 0) {
			if (k < 0)
				return EXIT_USAGE;
			if (parse_interval(v, &interval_ms) < 0)
				return cli_error(EXIT_USAGE, "export: bad --interval '%s' (seconds, "
						 "from 0.001 to 86400)", v);
		} else if ((k = cli_opt_value(argc, argv, &i, "--top", &v)) != 0) {
			uint64_t n;

			if (k < 0)
				return EXIT_USAGE;
			if (sp_parse_count(v, &n) < 0 || n > TOP_MAX)
				return cli_error(EXIT_USAGE, "export: bad --top '%s' (a count from 0 "
						 "to %d)", v, TOP_MAX);
			top = n;
		} else if (argv[i][0] == '-') {
			return cli_error(EXIT_USAGE, "export: unknown option '%s' (see superpage "
					 "export --help)", argv[i]);
		} else {
			return cli_error(EXIT_USAGE, "export: unexpected argument '%s' (see "
					 "superpage export --help)", argv[i]);
		}
	}
	if (!dir == !listen_at)
		return cli_error(EXIT_USAGE, "export: give one of --textfile DIR and --listen "
				 "HOST:PORT (see superpage export --help)");
	if (interval_ms && !dir)
		return cli_error(EXIT_USAGE, "export: --interval goes with --textfile (a scrape "
				 "reads the metrics afresh)");
	if (dir && (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)))
		return cli_error(EXIT_USAGE, "export: --textfile '%s' is not a directory", dir);

	export_conf_init(&conf, (unsigned long)top);
	catch_stop(&wait_mask);
	if (dir)
		return run_textfile(dir, interval_ms, &conf, &wait_mask);
	return run_listen(listen_at, &conf, &wait_mask);
}
