/* pool.c - superpage pool: set a hugetlb pool, read back what the kernel gave, say any shortfall. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void usage_pool(void)
{
	fputs("usage: superpage pool [--size 2M|1G] [--node N] COUNT\n"
	      "\n"
	      "Sets the hugetlb pool of one page size to COUNT pages (system-wide, or on NUMA\n"
	      "node N), then reads back what the kernel gave. Needs root.\n"
	      "\n"
	      "  --size SIZE   a huge page size of this machine (default 2M)\n"
	      "  --node N      set the pool of NUMA node N only\n"
	      "\n"
	      "Exit status 1 if the kernel gave fewer pages than asked (memory short or\n"
	      "fragmented: set 1G pools early, after boot), 2 for bad arguments or no root.\n",
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
static int check_size(uint64_t size, const struct sp_system *s)
{
	char page[32], sizes[128];

	for (int i = 0; i < s->n_sizes; i++)
		if (s->page_sizes[i] == size)
			return 0;
	cli_page(size, page, sizeof page);
	if (s->n_sizes == 0)
		return cli_error(EXIT_USAGE, "pool: this machine has no huge page sizes, so no %s pool",
				 page);
	list_sizes(s, sizes, sizeof sizes);
	return cli_error(EXIT_USAGE, "pool: %s is not a huge page size of this machine (it has %s)",
			 page, sizes);
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
	const char *size_arg, *node_arg, *count_arg;
	uint64_t size, count;
	int node;            /* -1: system-wide */
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
			if ((m = cli_opt_value(argc, argv, &i, "--size", &v)) != 0) {
				if (m < 0)
					return EXIT_USAGE;
				a->size_arg = v;
			} else if ((m = cli_opt_value(argc, argv, &i, "--node", &v)) != 0) {
				if (m < 0)
					return EXIT_USAGE;
				a->node_arg = v;
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

/* Reads the count, the node and the size. */
static int read_args(struct pool_args *a)
{
	uint64_t node_u;
	int rc;

	if (!a->count_arg)
		return cli_error(EXIT_USAGE, "pool: missing COUNT, the number of pages (see superpage pool --help)");
	rc = sp_parse_count(a->count_arg, &a->count);
	if (rc == -ERANGE || (rc == 0 && a->count > LONG_MAX))
		return cli_error(EXIT_USAGE, "pool: count '%s' is too large", a->count_arg);
	if (rc < 0)
		return cli_error(EXIT_USAGE, "pool: bad count '%s' (a number of pages: 0, 1, 2, ...)",
				 a->count_arg);
	if (a->node_arg) {
		rc = sp_parse_count(a->node_arg, &node_u);
		if (rc < 0 || node_u > INT_MAX)
			return cli_error(EXIT_USAGE, "pool: bad node '%s' (a NUMA node number: 0, 1, ...)",
					 a->node_arg);
		a->node = (int)node_u;
	}
	if (a->size_arg && (rc = parse_size(a->size_arg, &a->size)) != 0)
		return rc;
	return 0;
}

/* Whether this machine has that pool, and we may set it. */
static int check_pool(struct pool_args *a)
{
	static struct sp_system sys;
	int rc = sp_probe(&sys);

	if (rc < 0)
		return cli_error(EXIT_FAIL, "cannot read the huge page setup of this machine: %s",
				 strerror(-rc));
	if ((rc = check_size(a->size, &sys)) != 0)
		return rc;
	cli_page(a->size, a->page, sizeof a->page);
	if (a->node >= 0) {
		const struct sp_node_pools *np = node_of(&sys, a->node);

		if (!np)
			return cli_error(EXIT_USAGE, "pool: no NUMA node %d on this machine", a->node);
		if (!node_has_size(np, a->size))
			return cli_error(EXIT_USAGE, "pool: node %d has no %s pool", a->node, a->page);
		snprintf(a->where, sizeof a->where, " on node %d", a->node);
	}
	if (geteuid() != 0)
		return cli_error(EXIT_USAGE, "setting a pool needs root (try: sudo superpage pool%s%s%s%s %s)",
				 a->size_arg ? " --size " : "", a->size_arg ? a->size_arg : "",
				 a->node_arg ? " --node " : "", a->node_arg ? a->node_arg : "", a->count_arg);
	return 0;
}

/* Sets the pool and says what the kernel made of it. */
static int set_pool(const struct pool_args *a)
{
	long got = -1, count = (long)a->count;
	int rc = sp_pool_set(a->size, a->node, count, &got);

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

int cmd_pool(int argc, char **argv)
{
	struct pool_args a = { .size = 2ull << 20, .node = -1 };
	int rc;

	if ((rc = collect_args(argc, argv, &a)) || (rc = read_args(&a)) || (rc = check_pool(&a)))
		return rc;
	return set_pool(&a);
}
