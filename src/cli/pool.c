/* pool.c - superpage pool: set a hugetlb pool, read back what the kernel gave, say any shortfall. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void usage_pool(void)
{
	fputs("usage: superpage pool [--persist [--config FILE]] [--size 2M|1G] [--node N] COUNT\n"
	      "       superpage pool --persist --remove [--config FILE] [--size 2M|1G] [--node N]\n"
	      "       superpage pool --apply [--config FILE]\n"
	      "\n"
	      "Sets the hugetlb pool of one page size to COUNT pages (system-wide, or on NUMA\n"
	      "node N), then reads back what the kernel gave. Needs root.\n"
	      "\n"
	      "  --size SIZE   a huge page size of this machine (default 2M)\n"
	      "  --node N      set the pool of NUMA node N only\n"
	      "  --persist     also record the pool in the config file, for every boot: its\n"
	      "                line for that size and node is replaced, the others are kept;\n"
	      "                COUNT is recorded even if the kernel gives fewer now\n"
	      "  --remove      with --persist: drop the pool's line from the config file\n"
	      "                (the running pool stays as it is)\n"
	      "  --apply       set every pool of the config file, 1G first (what\n"
	      "                superpage-pools.service runs at boot); no default config\n"
	      "                file: nothing to do, exit 0; no --config FILE: exit 2\n"
	      "  --config FILE the config file (default $SUPERPAGE_POOLS_CONF, else\n"
	      "                " POOLS_CONF_DEFAULT "); lines are SIZE COUNT [node=N]\n"
	      "\n"
	      "Exit status 1 if the kernel gave fewer pages than asked (memory short or\n"
	      "fragmented: set 1G pools early, after boot) or the config file could not be\n"
	      "written, 2 for bad arguments, a malformed config file, or no root.\n",
	      stdout);
}

/* The huge sizes of the machine as "2M, 1G", for an error message. */
static void list_sizes(const struct sp_system *s, char *buf, size_t len)
{
	char page[32];
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < s->n_sizes && used < len; i++) {
		cli_page(s->page_sizes[i], page, sizeof page);
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? ", " : "", page);
	}
}

static const struct sp_node_pools *node_of(const struct sp_system *s, int node)
{
	for (int n = 0; n < s->n_nodes; n++)
		if (s->nodes[n].node == node)
			return &s->nodes[n];
	return NULL;
}

static bool node_has_size(const struct sp_node_pools *np, uint64_t size)
{
	for (int i = 0; i < np->n_pools; i++)
		if (np->pools[i].page_size == size)
			return true;
	return false;
}

/* Parses SIZE into *size. Returns 0 or an exit status. */
static int parse_size(const char *arg, uint64_t *size)
{
	int rc = sp_parse_size(arg, size);

	if (rc == -ERANGE)
		return cli_error(EXIT_USAGE, "pool: size '%s' is too large", arg);
	if (rc < 0 || *size == 0)
		return cli_error(EXIT_USAGE, "pool: bad size '%s' (a page size such as 2M or 1G)", arg);
	return 0;
}

/* Is size one of the machine's huge page sizes? Returns 0 or an exit status. */
static int check_size(const char *who, uint64_t size, const struct sp_system *s)
{
	char page[32], sizes[128];

	for (int i = 0; i < s->n_sizes; i++)
		if (s->page_sizes[i] == size)
			return 0;
	cli_page(size, page, sizeof page);
	if (s->n_sizes == 0)
		return cli_error(EXIT_USAGE, "%s: this machine has no huge page sizes, so no %s pool",
				 who, page);
	list_sizes(s, sizes, sizeof sizes);
	return cli_error(EXIT_USAGE, "%s: %s is not a huge page size of this machine (it has %s)",
			 who, page, sizes);
}

/* Says what the pool holds now. */
static void print_pool(uint64_t size, int node, long count, long got)
{
	struct sp_pool now;
	char page[32], where[32] = "", mem[32];
	int rc = sp_pool_get(size, node, &now);

	cli_page(size, page, sizeof page);
	if (node >= 0)
		snprintf(where, sizeof where, " on node %d", node);
	cli_human((uint64_t)(got > 0 ? got : 0) * size, mem, sizeof mem);
	if (rc < 0) {
		printf("%s pool%s: %ld pages = %s (asked %ld)\n", page, where, got, mem, count);
		cli_warn("cannot read the %s pool back: %s", page, strerror(-rc));
		return;
	}
	printf("%s pool%s: %ld pages = %s (asked %ld), free %ld\n", page, where, got, mem, count,
	       now.free);
}

/* What pool was asked: the arguments as given, and read. */
struct pool_args {
	const char *size_arg, *node_arg, *count_arg, *config_arg;
	bool persist, remove, apply;
	uint64_t size, count;
	int node;            /* -1: system-wide */
	const char *who;     /* what errors about the pool start with: "pool", "FILE:LINE" */
	char page[32], where[32];
};

/* Sorts argv into a, unread. */
static int collect_args(int argc, char **argv, struct pool_args *a)
{
	bool options = true;
	const char *v;
	int m;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (options && !strcmp(arg, "--")) {
			options = false;
			continue;
		}
		/* "-5" is a bad count, not an unknown option. */
		if (options && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9')) {
			if (!strcmp(arg, "--persist")) {
				a->persist = true;
			} else if (!strcmp(arg, "--remove")) {
				a->remove = true;
			} else if (!strcmp(arg, "--apply")) {
				a->apply = true;
			} else if ((m = cli_opt_value(argc, argv, &i, "--size", &v)) != 0) {
				if (m < 0)
					return EXIT_USAGE;
				a->size_arg = v;
			} else if ((m = cli_opt_value(argc, argv, &i, "--node", &v)) != 0) {
				if (m < 0)
					return EXIT_USAGE;
				a->node_arg = v;
			} else if ((m = cli_opt_value(argc, argv, &i, "--config", &v)) != 0) {
				if (m < 0)
					return EXIT_USAGE;
				a->config_arg = v;
			} else {
				return cli_error(EXIT_USAGE, "pool: unknown option '%s' (see superpage pool --help)",
						 arg);
			}
			continue;
		}
		if (a->count_arg)
			return cli_error(EXIT_USAGE, "pool: unexpected argument '%s' (see superpage pool --help)",
					 arg);
		a->count_arg = arg;
	}
	return 0;
}

/* Which options go together. */
static int check_modes(const struct pool_args *a)
{
	if (a->apply && (a->persist || a->remove))
		return cli_error(EXIT_USAGE, "pool: --apply takes no --persist or --remove (see superpage pool --help)");
	if (a->apply && (a->count_arg || a->size_arg || a->node_arg))
		return cli_error(EXIT_USAGE, "pool: --apply sets the pools of the config file: it takes "
				 "no COUNT, --size or --node (see superpage pool --help)");
	if (a->remove && !a->persist)
		return cli_error(EXIT_USAGE, "pool: --remove needs --persist (it drops a pool from the "
				 "config file)");
	if (a->remove && a->count_arg)
		return cli_error(EXIT_USAGE, "pool: --persist --remove takes no COUNT, only --size and --node");
	if (a->config_arg && !a->persist && !a->apply)
		return cli_error(EXIT_USAGE, "pool: --config needs --persist or --apply");
	if (a->config_arg && !*a->config_arg)
		return cli_error(EXIT_USAGE, "pool: --config needs a file name");
	return 0;
}

/* Reads the count, the node and the size. */
static int read_args(struct pool_args *a)
{
	uint64_t node_u;
	int rc;

	if ((rc = check_modes(a)) != 0 || a->apply)
		return rc;
	if (!a->count_arg && !a->remove)
		return cli_error(EXIT_USAGE, "pool: missing COUNT, the number of pages (see superpage pool --help)");
	if (a->count_arg) {
		rc = sp_parse_count(a->count_arg, &a->count);
		if (rc == -ERANGE || (rc == 0 && a->count > LONG_MAX))
			return cli_error(EXIT_USAGE, "pool: count '%s' is too large", a->count_arg);
		if (rc < 0)
			return cli_error(EXIT_USAGE, "pool: bad count '%s' (a number of pages: 0, 1, 2, ...)",
					 a->count_arg);
	}
	if (a->node_arg) {
		rc = sp_parse_count(a->node_arg, &node_u);
		if (rc < 0 || node_u > INT_MAX)
			return cli_error(EXIT_USAGE, "pool: bad node '%s' (a NUMA node number: 0, 1, ...)",
					 a->node_arg);
		a->node = (int)node_u;
	}
	if (a->size_arg && (rc = parse_size(a->size_arg, &a->size)) != 0)
		return rc;
	cli_page(a->size, a->page, sizeof a->page);
	if (a->node >= 0)
		snprintf(a->where, sizeof a->where, " on node %d", a->node);
	return 0;
}

/* MemTotal of NUMA node (its sysfs meminfo), in bytes; 0 if it cannot be read. */
static uint64_t node_memory(int node)
{
	char path[80], line[256];
	unsigned long long kb;
	uint64_t bytes = 0;
	FILE *f;

	snprintf(path, sizeof path, "/sys/devices/system/node/node%d/meminfo", node);
	if (!(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "Node %*d MemTotal: %llu kB", &kb) == 1) {
			bytes = kb << 10;
			break;
		}
	fclose(f);
	return bytes;
}

/* The memory a pool of a->node (or the machine's) could at most be made of; what
 * names it. */
static int memory_for(const struct pool_args *a, uint64_t *bytes, char *what, size_t len)
{
	struct sp_meminfo m;
	int rc;

	snprintf(what, len, "this machine's memory");
	if (a->node >= 0 && (*bytes = node_memory(a->node)) != 0) {
		snprintf(what, len, "node %d's memory", a->node);
		return 0;
	}
	if ((rc = sp_meminfo_read(&m)) < 0)
		return rc;
	*bytes = m.total;
	return 0;
}

/* A count the memory could never hold is refused before the kernel is asked (it
 * would take every free page trying) or the count recorded for every boot. */
static int check_count(const struct pool_args *a)
{
	uint64_t mem, most;
	char asked[32], have[32], what[48];

	if (memory_for(a, &mem, what, sizeof what) < 0)
		return 0; /* unknown: the kernel says what it gives */
	most = mem / a->size;
	if (a->count <= most)
		return 0;
	if (a->count > UINT64_MAX / a->size)
		snprintf(asked, sizeof asked, "more than 16 EiB");
	else
		cli_human(a->count * a->size, asked, sizeof asked);
	cli_human(mem, have, sizeof have);
	return cli_error(EXIT_USAGE, "%s: %llu pages of %s (%s) are more than %s (%s: at most "
			 "%llu such pages)", a->who, (unsigned long long)a->count, a->page, asked,
			 what, have, (unsigned long long)most);
}

/* Whether this machine has that pool, and the memory for its count. */
static int check_machine(const struct pool_args *a, const struct sp_system *sys)
{
	int rc;

	if ((rc = check_size(a->who, a->size, sys)) != 0)
		return rc;
	if (a->node >= 0) {
		const struct sp_node_pools *np = node_of(sys, a->node);

		if (!np)
			return cli_error(EXIT_USAGE, "%s: no NUMA node %d on this machine", a->who, a->node);
		if (!node_has_size(np, a->size))
			return cli_error(EXIT_USAGE, "%s: node %d has no %s pool", a->who, a->node, a->page);
	}
	return check_count(a);
}

static int probe(struct sp_system *sys)
{
	int rc = sp_probe(sys);

	if (rc < 0)
		return cli_error(EXIT_FAIL, "cannot read the huge page setup of this machine: %s",
				 strerror(-rc));
	return 0;
}

/* Whether this machine has that pool, and we may set it. */
static int check_pool(const struct pool_args *a)
{
	static struct sp_system sys;
	int rc;

	if ((rc = probe(&sys)) != 0 || (rc = check_machine(a, &sys)) != 0)
		return rc;
	if (geteuid() != 0)
		return cli_error(EXIT_USAGE, "setting a pool needs root (try: sudo superpage pool%s%s%s%s%s %s)",
				 a->persist ? " --persist" : "",
				 a->size_arg ? " --size " : "", a->size_arg ? a->size_arg : "",
				 a->node_arg ? " --node " : "", a->node_arg ? a->node_arg : "", a->count_arg);
	return 0;
}

/* Sets the pool and says what the kernel made of it. *taken: the kernel took the
 * count (it may have given fewer or kept more). */
static int set_pool(const struct pool_args *a, bool *taken)
{
	long got = -1, count = (long)a->count;
	int rc = sp_pool_set(a->size, a->node, count, &got);

	*taken = false;
	switch (rc) {
	case 0:
	case -ENOMEM:
	case -EBUSY:
		break;
	case -EACCES:
	case -EPERM:
		return cli_error(EXIT_USAGE, "not allowed to set the %s pool%s: %s", a->page, a->where,
				 strerror(-rc));
	case -ENOENT:
		return cli_error(EXIT_USAGE, "no %s pool%s on this machine", a->page, a->where);
	default:
		return cli_error(EXIT_FAIL, "cannot set the %s pool%s: %s", a->page, a->where,
				 strerror(-rc));
	}
	*taken = true;
	if (rc == -ENOMEM || got < count) {
		cli_warn("asked for %llu pages of %s%s, the kernel gave %ld "
			 "(memory is fragmented or short)", (unsigned long long)a->count, a->page,
			 a->where, got);
		print_pool(a->size, a->node, count, got);
		return EXIT_FAIL;
	}
	if (got > count) {
		/* Pages in use cannot leave the pool; the kernel turns them into surplus
		 * pages that go when they are freed. */
		cli_warn("asked for %llu pages of %s%s, %ld stay in the pool while in use "
			 "(they go when freed)", (unsigned long long)a->count, a->page, a->where, got);
		print_pool(a->size, a->node, count, got);
		return EXIT_FAIL;
	}
	print_pool(a->size, a->node, count, got);
	return EXIT_OK;
}

/* The config file read and checked before anything is set. Returns 0 or an exit status. */
static int read_conf(const char *path, struct pools_conf *c)
{
	char err[PATH_MAX + 256];
	int rc = pools_conf_read(path, c, err, sizeof err);

	if (rc == -EINVAL)
		return cli_error(EXIT_USAGE, "%s", err);
	if (rc < 0)
		return cli_error(EXIT_FAIL, "%s", err);
	return 0;
}

/* --persist COUNT: sets the pool, then records what was asked. */
static int persist_pool(const struct pool_args *a)
{
	static struct pools_conf conf;
	const char *path = pools_conf_path(a->config_arg);
	struct pools_conf_entry key = { .page_size = a->size, .node = a->node,
					.count = (long)a->count };
	char err[PATH_MAX + 256], line[64];
	bool taken, found;
	int rc, wrc;

	if ((rc = check_pool(a)) != 0 || (rc = read_conf(path, &conf)) != 0)
		return rc;
	rc = set_pool(a, &taken);
	if (!taken)
		return rc;
	wrc = pools_conf_update(path, &key, false, &found, err, sizeof err);
	if (wrc < 0)
		return cli_error(wrc == -EINVAL ? EXIT_USAGE : EXIT_FAIL,
				 "the pool is set but not recorded: %s", err);
	printf("%s in %s: %s%s\n", found ? "replaced" : "recorded", path,
	       pools_conf_line(&key, line, sizeof line),
	       rc == EXIT_OK ? "" : " (asked again at boot by superpage pool --apply)");
	return rc;
}

/* --persist --remove: drops the pool's line; the running pool stays. */
static int forget_pool(const struct pool_args *a)
{
	const char *path = pools_conf_path(a->config_arg);
	struct pools_conf_entry key = { .page_size = a->size, .node = a->node };
	char err[PATH_MAX + 256];
	bool found;
	int rc = pools_conf_update(path, &key, true, &found, err, sizeof err);

	if (rc < 0)
		return cli_error(rc == -EINVAL ? EXIT_USAGE : EXIT_FAIL, "%s", err);
	if (found)
		printf("removed from %s: the %s pool%s (the running pool is left as it is)\n", path,
		       a->page, a->where);
	else
		printf("%s has no line for the %s pool%s: nothing to remove\n", path, a->page,
		       a->where);
	return EXIT_OK;
}

/* Larger pages first (1 GiB pages need memory that is not fragmented yet), the
 * system-wide pool before its nodes', then in file order. */
static int apply_order(const void *x, const void *y)
{
	const struct pools_conf_entry *a = x, *b = y;

	if (a->page_size != b->page_size)
		return a->page_size < b->page_size ? 1 : -1;
	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	return a->line - b->line;
}

/* --apply: sets every pool of the config file. */
static int apply_conf(const struct pool_args *given)
{
	static struct pools_conf conf;
	static struct sp_system sys;
	const char *path = pools_conf_path(given->config_arg);
	int rc, ok = 0;

	if ((rc = read_conf(path, &conf)) != 0)
		return rc;
	/* No file where none was named is nothing configured (the boot unit runs
	 * everywhere); a file named by --config must be there. */
	if (!conf.present && given->config_arg)
		return cli_error(EXIT_USAGE, "cannot read %s: %s", path,
				 strerror(ENOENT));
	if (!conf.present) {
		printf("nothing to apply: %s does not exist\n", path);
		return EXIT_OK;
	}
	if (conf.n == 0) {
		printf("nothing to apply: %s lists no pools\n", path);
		return EXIT_OK;
	}
	if (geteuid() != 0)
		return cli_error(EXIT_USAGE, "setting pools needs root (try: sudo superpage pool --apply%s%s)",
				 given->config_arg ? " --config " : "",
				 given->config_arg ? given->config_arg : "");
	if ((rc = probe(&sys)) != 0)
		return rc;
	qsort(conf.e, (size_t)conf.n, sizeof conf.e[0], apply_order);
	for (int i = 0; i < conf.n; i++) {
		struct pool_args a = { .size = conf.e[i].page_size, .node = conf.e[i].node,
				       .count = (uint64_t)conf.e[i].count };
		char who[PATH_MAX + 16];
		bool taken;

		snprintf(who, sizeof who, "%s:%d", path, conf.e[i].line);
		a.who = who;
		cli_page(a.size, a.page, sizeof a.page);
		if (a.node >= 0)
			snprintf(a.where, sizeof a.where, " on node %d", a.node);
		if (check_machine(&a, &sys) == 0 && set_pool(&a, &taken) == EXIT_OK)
			ok++;
	}
	printf("applied %s: %d of %d %s got their count\n", path, ok, conf.n,
	       conf.n == 1 ? "pool" : "pools");
	return ok == conf.n ? EXIT_OK : EXIT_FAIL;
}

int cmd_pool(int argc, char **argv)
{
	struct pool_args a = { .size = 2ull << 20, .node = -1, .who = "pool" };
	int rc;

	if ((rc = collect_args(argc, argv, &a)) || (rc = read_args(&a)))
		return rc;
	if (a.apply)
		return apply_conf(&a);
	if (a.remove)
		return forget_pool(&a);
	if (a.persist)
		return persist_pool(&a);
	if ((rc = check_pool(&a)) != 0)
		return rc;
	return set_pool(&a, &(bool){ false });
}
