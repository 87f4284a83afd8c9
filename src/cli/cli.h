/* cli.h - what the superpage command's files share: the commands, messages, argument helpers. */
#ifndef SP_CLI_H
#define SP_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
int cmd_cdi(int argc, char **argv);
int cmd_version(int argc, char **argv);
/* libhugetlbfs' programs, chosen by the name superpage runs as (argv[0] is that name). */
int cmd_hugectl(int argc, char **argv);
int cmd_hugeadm(int argc, char **argv);

/* superpage stat --all (stat_all.c): argv as cmd_stat has it. */
int stat_all(int argc, char **argv);

void usage_status(void);
void usage_pool(void);
void usage_stat(void);
void usage_promote(void);
void usage_run(void);
void usage_bench(void);
void usage_export(void);
void usage_cdi(void);
void usage_version(void);
void usage_hugectl(void);
void usage_hugeadm(void);

/* Prints "superpage: MESSAGE" as one line on stderr (control characters shown as
 * '?', so a user's argument cannot break the line) and returns code. */
int cli_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same as a warning that does not end the command. */
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What the user types to run cmd, for a "see ... --help" pointer: "superpage pool";
 * for hugeadm and hugectl, which are no subcommands but the names superpage runs
 * by, the name it was run by as typed ("superpage-hugeadm", "./hugeadm"). main.c
 * sets that name. The string lasts until the next call. */
const char *cli_command(const char *cmd);
void cli_set_personality(const char *cmd, const char *typed);

/* True if argv has -h or --help before any "--". */
bool cli_wants_help(int argc, char **argv);
/* Matches "--name VALUE" (consuming the next argument) or "--name=VALUE".
 * Returns 1 and sets *val when arg i is that option, 0 when it is not, and -1
 * (after printing the error, which names argv[0], the command) when the value is
 * missing. */
int cli_opt_value(int argc, char **argv, int *i, const char *name, const char **val);

/* The runtime (libsuperpage-run.so) superpage run preloads, as an absolute path: next
 * to this executable (the build tree), else in ../lib (make install), else in
 * ../lib/superpage (the Debian package: the runtime is no library to link with, so it
 * stays out of the linker's directories). 0, or an exit status after an error that
 * names cmd ("run", "cdi"). */
int cli_find_runtime(const char *cmd, char *out, size_t len);

/* What superpage run is about to exec (image.c): a program the runtime can be
 * preloaded into (or one that cannot be read: it is tried), a set-id one the loader
 * will not preload into, or one to watch instead (static, another libc, another word
 * size). */
enum cli_image_how { CLI_IMAGE_PRELOAD = 0, CLI_IMAGE_SECURE, CLI_IMAGE_WATCH };
struct cli_image {
	enum cli_image_how how;
	enum sp_watch_why why;          /* CLI_IMAGE_WATCH: why */
	char what[2 * 4096 + 128];      /* "PATH is statically linked", "PATH is run by
	                                   INTERP, which is setuid" ("" to preload) */
	const char *tail;               /* after the line's verdict, or NULL */
};
void cli_image_of(const char *cmd, struct cli_image *img);
/* One line: CMD runs without superpage (img not CLI_IMAGE_PRELOAD). */
void cli_say_image(const struct cli_image *img);

/* "64.0 MiB", "512 B", "1.0 GiB": for amounts of memory. */
const char *cli_human(uint64_t bytes, char *buf, size_t len);
/* "2 MiB", "1 GiB": a whole number of units when exact, else as cli_human. */
const char *cli_units(uint64_t bytes, char *buf, size_t len);
/* "page" or "pages" for n. */
const char *cli_pages(long n);
/* "2M", "1G", "4K": for page sizes (sp_format_size). */
const char *cli_page(uint64_t bytes, char *buf, size_t len);

/* The pools kept across reboots (pools_conf.c): pools.conf, one pool a line,
 * "SIZE COUNT [node=N]", set at boot by superpage pool --apply. */
#define POOLS_CONF_DEFAULT "/etc/superpage/pools.conf"
#define POOLS_CONF_MAX 64

struct pools_conf_entry {
	uint64_t page_size;
	int node;            /* -1: system-wide */
	long count;
	int line;            /* where in the file */
};

struct pools_conf {
	bool present;        /* the file exists */
	int lines;           /* lines read */
	int n;
	struct pools_conf_entry e[POOLS_CONF_MAX];
};

/* The file: given (--config) if not NULL, else $SUPERPAGE_POOLS_CONF, else the default. */
const char *pools_conf_path(const char *given);
/* Reads and checks the file. 0 (a missing file is present false, no pools); -EINVAL
 * when a line is malformed, err then "FILE:LINE: what is wrong"; -errno when it
 * cannot be read, err saying so. */
int pools_conf_read(const char *path, struct pools_conf *c, char *err, size_t len);
/* Sets key's line ("2M 512", "1G 4 node=0") in the file, or drops it (remove),
 * keeping every other line; makes the file (with a comment header) and its directory
 * if need be, and replaces it atomically (a new file renamed over it). *found: the
 * pool had a line. 0, or -errno (-EINVAL: the file is malformed) with err set. */
int pools_conf_update(const char *path, const struct pools_conf_entry *key, bool remove,
		      bool *found, char *err, size_t len);
/* An entry as its line: "2M 512", "1G 4 node=0". */
const char *pools_conf_line(const struct pools_conf_entry *e, char *buf, size_t len);
/* nr_hugepages of the entry's pool in s, or -1 if this machine has no such pool. */
long pools_conf_running(const struct sp_system *s, const struct pools_conf_entry *e);

/* superpage promote's output (promote_print.c): a pass over one process as text or as
 * one line of JSON (round: 1, 2, ... under --watch). */
void promote_print_human(const struct sp_promote_result *r, const char *comm, bool dry,
			 int round);
void promote_print_json(const struct sp_promote_result *r, const char *comm, bool dry,
			int round);
/* The one-line error for a process that cannot be promoted at all (err: sp_promote's
 * -errno), with its cause as /proc tells it: a kernel thread, another owner, a
 * security policy (promote_why.c); cmd ("promote", "run") begins it. Its exit status. */
int promote_say_fatal(const char *cmd, pid_t pid, int err);

/* A process promote passes over again and again (promote_pass.c): what the kernel
 * refused for good is not asked again. */
struct promote_target {
	pid_t pid;
	bool alive;
	bool missing;             /* no such process at the first round */
	bool promoted;            /* some pass collapsed something, or had nothing to do */
	int n_avoid;
	struct sp_promote_skip avoid[SP_PROMOTE_MAX_SKIPS];
};
/* One pass (sp_promote with t's ranges to avoid; o's avoid list is its own after):
 * its value. */
int promote_pass(struct promote_target *t, struct sp_promote_options *o,
		 struct sp_promote_result *r);
/* --budget SIZE|PCT ("512M", "25%") into o: 0 or -EINVAL. */
int cli_parse_budget(const char *s, struct sp_promote_options *o);

/* superpage run on a program it cannot preload (run_watch.c): promote's passes over
 * it and the processes it starts, round after round, published for superpage stat. */
struct run_watch_setup {
	enum sp_watch_why why;
	enum sp_backing asked;               /* the backing asked for */
	struct sp_promote_options promote;   /* promote's defaults and the budget given */
	int verbose;                         /* > 0: a line for each pass that collapses */
};
/* Starts the watch of root (it has executed the program); stop is set when root ends
 * (a pass under way stops). The pause before the first round, in ns. */
uint64_t run_watch_begin(pid_t root, const struct run_watch_setup *s, volatile int *stop);
/* One round over every process watched, new ones found first: the pause before the
 * next, in ns (short after work, doubling while there is none). */
uint64_t run_watch_round(void);
/* --stats, once root has ended with status: the account of each process the watch
 * reached, a line of JSON appended to file, or a line on stderr (file NULL). */
void run_watch_accounts(int status, const char *file);

/* superpage run under an explicit --backing 2m or 1g (run_falls_watcher.c): the program's
 * tree counts its falls in a page, said in one line once the program has ended.
 * run_say_falls says them on stderr unless the program (at its exit) or another
 * did. run_falls_watch makes the page, leaves a watcher (nobody's child) that holds
 * it and says them after a program that could not, and names the page in the
 * environment (SUPERPAGE_RUN_PAGE): 0, or -errno (nothing will be said). */
void run_say_falls(void *page);
int run_falls_watch(void);

/* Appends len bytes to file in one write (a line of an account): 0 or -errno. */
int cli_append(const char *file, const char *buf, size_t len);

/* ---------- containers (container.c) ---------- */

#define CLI_NO_LIMIT UINT64_MAX
#define CLI_CG_PATH 512
#define CLI_CG_HUGE 2   /* 2M, 1G */

/* The memory and hugetlb cgroups of a process and their limits, as they can be seen
 * from here (inside a container, only the container's part of the hierarchy is
 * mounted, if any). A limit is the least from the cgroup up to the mount's top. */
struct cli_cgroups {
	int read_error;                 /* errno: /proc/PID/cgroup cannot be read */
	int mem_version;                /* 0: no memory controller */
	char mem_path[CLI_CG_PATH];     /* as /proc/PID/cgroup names it */
	bool mem_visible;               /* its files can be read here */
	uint64_t mem_limit, mem_usage;  /* (v2: the lower of memory.max and memory.high) */
	int huge_version;               /* 0: no hugetlb controller mounted here */
	char huge_path[CLI_CG_PATH];
	bool huge_visible, huge_root; /* (the root cgroup has no limit files) */
	struct { uint64_t page_size, limit, usage; bool present; } huge[CLI_CG_HUGE];
};
void cli_cgroups_of(pid_t pid, struct cli_cgroups *c);
/* Lines "INDENTmemory cgroup PATH (v1): limit 512.0 MiB (3.0 MiB in use)" and the
 * hugetlb one; or what cannot be seen. */
void cli_cgroups_print(const struct cli_cgroups *c, const char *indent);
struct json;
void cli_cgroups_json(struct json *j, const struct cli_cgroups *c);

/* The container this command runs in, if any. */
struct cli_container {
	bool inside;
	char how[48];           /* what said so: "/run/.containerenv", ... */
	char engine[64], name[128], id[80]; /* as far as known ("" if not) */
	bool sysfs_read_only;
	bool pid_ns;            /* in a PID namespace of its own */
};
void cli_container_here(struct cli_container *c);
/* The container a cgroup belongs to by its name, as podman (libpod-ID, also under
 * systemd as libpod-ID.scope), Docker (docker-ID) and containerd's or CRI-O's CRI
 * (cri-containerd-ID, crio-ID) name it: engine and the hex id; false if it names
 * none (conmon's cgroups are no container's). */
bool cli_container_of_cgroup(const char *path, char *engine, size_t elen, char *id, size_t ilen);
/* A running podman container's name by its full id, from its conmon's command line;
 * false if none is found. */
bool cli_podman_name(const char *id, char *name, size_t len);
/* What cannot be seen or done from inside it, a phrase each, into what; how many. */
int cli_container_blind(const struct cli_container *c, const struct cli_cgroups *g,
			const char **what, int max);

#endif
