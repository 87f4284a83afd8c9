/* stat_all.c - superpage stat --all: every process (or every memory cgroup) and how
 * much of it sits on huge pages, the machine's totals on top. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "json.h"

struct all_opts {
	bool json, cgroups;
	long top;              /* rows shown, 0: all */
	enum sp_scan scan;
};

struct skipped {
	long read, gone, denied, empty;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double ratio(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0.0;
}

static int by_huge(const void *a, const void *b)
{
	const struct sp_proc *x = a, *y = b;
	if (x->huge_bytes != y->huge_bytes)
		return x->huge_bytes < y->huge_bytes ? 1 : -1;
	if (x->rss_bytes != y->rss_bytes)
		return x->rss_bytes < y->rss_bytes ? 1 : -1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int cg_by_huge(const void *a, const void *b)
{
	const struct sp_cgroup *x = a, *y = b;
	uint64_t hx = sp_cgroup_huge(x), hy = sp_cgroup_huge(y);
	if (hx != hy)
		return hx < hy ? 1 : -1;
	uint64_t mx = sp_cgroup_bytes(x), my = sp_cgroup_bytes(y);
	if (mx != my)
		return mx < my ? 1 : -1;
	return strcmp(x->path, y->path);
}

/* Every process read; *n of them; what could not be read counted in *sk. */
static struct sp_proc *read_all(enum sp_scan scan, size_t *n, struct skipped *sk)
{
	pid_t *pids;
	long np = sp_pids(&pids);
	if (np < 0) {
		errno = (int)-np;
		return NULL;
	}
	struct sp_proc *v = calloc((size_t)np + 1, sizeof *v);
	if (!v) {
		free(pids);
		errno = ENOMEM;
		return NULL;
	}
	size_t k = 0;
	for (long i = 0; i < np; i++) {
		int r = sp_proc_read(pids[i], scan, &v[k]);
		if (r == 0)
			k++, sk->read++;
		else if (r == -ESRCH)
			sk->gone++;
		else if (r == -ENODATA)
			sk->empty++;
		else if (r == -ENOTTY) /* --scan pagemap, and the kernel has none */
			break;
		else
			sk->denied++; /* -EACCES, -EPERM, or a read that failed */
	}
	free(pids);
	if (np && sk->read + sk->gone + sk->empty + sk->denied < np) {
		free(v);
		errno = ENOTTY;
		return NULL;
	}
	*n = k;
	return v;
}

/* The user's name from /etc/passwd (not NSS: the command is linked statically), or
 * the uid; the file is read again only for another uid than the row before's (rows of
 * one user are many: root's). */
static const char *user_name(uid_t uid)
{
	static uid_t last = (uid_t)-1;
	static char name[32];
	if (uid != last) {
		snprintf(name, sizeof name, "%u", (unsigned)uid);
		FILE *f = fopen("/etc/passwd", "re");
		char line[512];
		while (f && fgets(line, sizeof line, f)) {
			char *save, *n = strtok_r(line, ":", &save), *pw = strtok_r(NULL, ":", &save),
				    *id = strtok_r(NULL, ":", &save);
			if (n && pw && id && strtoul(id, NULL, 10) == uid) {
				snprintf(name, sizeof name, "%s", n);
				break;
			}
		}
		if (f)
			fclose(f);
		last = uid;
	}
	return name;
}

/* "pool_empty 3, no_pool 1", or "none". */
static void falls_text(const struct sp_account *a, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int f = 0; f < SP_FALL_COUNT && used < len; f++)
		if (a->falls_by[f])
			used += (size_t)snprintf(buf + used, len - used, "%s%s %llu", used ? ", " : "",
						 sp_fall_name((enum sp_fall)f),
						 (unsigned long long)a->falls_by[f]);
	if (!buf[0])
		snprintf(buf, len, "none");
}

static void machine_text(const struct sp_meminfo *m)
{
	char a[32], b[32], c[32], d[32], e[32], f[32];
	printf("machine: %s memory, %s available; THP %s (anon %s, shmem %s, file %s); ",
	       cli_human(m->total, a, sizeof a), cli_human(m->available, b, sizeof b),
	       cli_human(m->anon_thp + m->shmem_thp + m->file_thp, c, sizeof c),
	       cli_human(m->anon_thp, d, sizeof d), cli_human(m->shmem_thp, e, sizeof e),
	       cli_human(m->file_thp, f, sizeof f));
	printf("hugetlb %s in use of %s in pools\n", cli_human(m->hugetlb_used, a, sizeof a),
	       cli_human(m->hugetlb, b, sizeof b));
}

static void machine_json(struct json *j, const struct sp_meminfo *m)
{
	json_key(j, "machine");
	json_object_begin(j);
	const struct { const char *k; uint64_t v; } f[] = {
		{ "memory_bytes", m->total }, { "available_bytes", m->available },
		{ "anon_thp_bytes", m->anon_thp }, { "shmem_thp_bytes", m->shmem_thp },
		{ "file_thp_bytes", m->file_thp }, { "hugetlb_pool_bytes", m->hugetlb },
		{ "hugetlb_used_bytes", m->hugetlb_used },
	};
	for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
		json_key(j, f[k].k);
		json_uint(j, f[k].v);
	}
	json_object_end(j);
}

static void procs_text(const struct sp_proc *v, size_t n, const struct skipped *sk, long top,
		       enum sp_scan scan, double secs)
{
	char a[32], b[32], c[32], u[32];
	uint64_t rss = 0, huge = 0, thp = 0, htlb = 0;
	for (size_t i = 0; i < n; i++) {
		rss += v[i].rss_bytes;
		huge += v[i].huge_bytes;
		thp += v[i].thp_bytes;
		htlb += v[i].hugetlb_bytes;
	}
	printf("processes: %ld read (%s, %.2f s), %ld gone meanwhile, %ld not readable, %ld with no "
	       "memory (kernel threads)\n", sk->read, sp_scan_name(scan), secs, sk->gone, sk->denied,
	       sk->empty);
	printf("their sum: %s resident, %s on huge pages (%.1f%%): THP %s, hugetlb %s\n\n",
	       cli_human(rss, a, sizeof a), cli_human(huge, b, sizeof b), 100 * ratio(huge, rss),
	       cli_human(thp, c, sizeof c), cli_human(htlb, u, sizeof u));
	printf("%8s %-10s %11s %11s %6s %11s  %s\n", "PID", "USER", "RESIDENT", "HUGE", "HUGE%",
	       "HUGETLB", "COMMAND");
	size_t rows = top > 0 && (size_t)top < n ? (size_t)top : n;
	for (size_t i = 0; i < rows; i++) {
		const struct sp_proc *p = &v[i];
		char sizes[96] = "-";
		size_t used = 0;
		for (int k = 0; k < SP_PROC_HUGETLB_SIZES && p->hugetlb[k].page_size; k++) {
			char pg[16];
			used += (size_t)snprintf(sizes + used, sizeof sizes - used, "%s%s:%s",
						 used ? "," : "", cli_page(p->hugetlb[k].page_size, pg, sizeof pg),
						 cli_human(p->hugetlb[k].bytes, a, sizeof a));
		}
		if (!used && p->hugetlb_bytes)
			cli_human(p->hugetlb_bytes, sizes, sizeof sizes);
		printf("%8d %-10.10s %11s %11s %5.1f%% %11s  %s", (int)p->pid,
		       user_name(p->uid), cli_human(p->rss_bytes, a, sizeof a),
		       cli_human(p->huge_bytes, b, sizeof b), 100 * ratio(p->huge_bytes, p->rss_bytes),
		       sizes, p->comm);
		if (p->account_rc == 0) {
			char falls[256];
			falls_text(&p->account, falls, sizeof falls);
			printf("  [superpage run: falls %s]", falls);
		}
		putchar('\n');
	}
	if (rows < n)
		printf("(%zu more; --top 0 shows all)\n", n - rows);
}

static void procs_json(struct json *j, const struct sp_proc *v, size_t n, long top)
{
	size_t rows = top > 0 && (size_t)top < n ? (size_t)top : n;
	json_key(j, "processes");
	json_array_begin(j);
	for (size_t i = 0; i < rows; i++) {
		const struct sp_proc *p = &v[i];
		json_object_begin(j);
		json_key(j, "pid");
		json_int(j, p->pid);
		json_key(j, "comm");
		json_string(j, p->comm);
		json_key(j, "cgroup");
		json_string(j, p->cgroup);
		json_key(j, "coverage");
		json_double(j, ratio(p->huge_bytes, p->rss_bytes));
		const struct { const char *k; uint64_t v; } u[] = {
			{ "uid", p->uid }, { "rss_bytes", p->rss_bytes },
			{ "huge_bytes", p->huge_bytes }, { "thp_bytes", p->thp_bytes },
			{ "hugetlb_bytes", p->hugetlb_bytes },
		};
		for (size_t k = 0; k < sizeof u / sizeof *u; k++) {
			json_key(j, u[k].k);
			json_uint(j, u[k].v);
		}
		json_key(j, "hugetlb");
		json_object_begin(j);
		for (int k = 0; k < SP_PROC_HUGETLB_SIZES && p->hugetlb[k].page_size; k++) {
			char pg[16];
			json_key(j, cli_page(p->hugetlb[k].page_size, pg, sizeof pg));
			json_uint(j, p->hugetlb[k].bytes);
		}
		json_object_end(j);
		/* Under superpage run: its falls by reason (null: not under it, or unreadable). */
		json_key(j, "falls");
		if (p->account_rc != 0) {
			json_null(j);
		} else {
			json_object_begin(j);
			for (int f = 0; f < SP_FALL_COUNT; f++) {
				json_key(j, sp_fall_name((enum sp_fall)f));
				json_uint(j, p->account.falls_by[f]);
			}
			json_object_end(j);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

/* The container a cgroup is, by its name: engine, id and (podman) name; false if none. */
struct ct_of {
	char engine[32], id[80], name[128];
};

static bool container_of(const struct sp_cgroup *g, struct ct_of *c)
{
	memset(c, 0, sizeof *c);
	if (!cli_container_of_cgroup(g->path, c->engine, sizeof c->engine, c->id, sizeof c->id))
		return false;
	if (!strcmp(c->engine, "podman"))
		cli_podman_name(c->id, c->name, sizeof c->name);
	return true;
}

static void cgroups_text(const struct sp_cgroup *v, size_t n, long top)
{
	char a[32], b[32], c[32], d[32], e[32], f[32];
	printf("memory cgroups: %zu (cgroup v%d; each counts its descendants)\n\n", n,
	       n ? v[0].version : 0);
	printf("%11s %11s %6s %11s %11s %11s %11s  %s\n", "MEMORY", "HUGE", "HUGE%", "ANON_THP",
	       "FILE_THP", "SHMEM_THP", "HUGETLB", "CGROUP");
	size_t rows = top > 0 && (size_t)top < n ? (size_t)top : n;
	for (size_t i = 0; i < rows; i++) {
		const struct sp_cgroup *g = &v[i];
		bool v1 = g->version == 1;
		struct ct_of ct;
		char named[256] = "";
		if (container_of(g, &ct))
			snprintf(named, sizeof named, "  [%s %s%s%.12s]", ct.engine, ct.name,
				 ct.name[0] ? " " : "", ct.id);
		printf("%11s %11s %5.1f%% %11s %11s %11s %11s  %s%s\n",
		       cli_human(sp_cgroup_bytes(g), a, sizeof a), cli_human(sp_cgroup_huge(g), b, sizeof b),
		       100 * ratio(sp_cgroup_huge(g), sp_cgroup_bytes(g)), cli_human(g->anon_thp, c, sizeof c),
		       v1 ? "-" : cli_human(g->file_thp, d, sizeof d),
		       v1 ? "-" : cli_human(g->shmem_thp, e, sizeof e),
		       g->hugetlb_known ? cli_human(g->hugetlb_bytes, f, sizeof f) : "-", g->path,
		       named);
	}
	if (rows < n)
		printf("(%zu more; --top 0 shows all)\n", n - rows);
	if (n && v[0].version == 1)
		puts("(cgroup v1 counts no file or shmem THP: '-')");
}

static void cgroups_json(struct json *j, const struct sp_cgroup *v, size_t n, long top)
{
	size_t rows = top > 0 && (size_t)top < n ? (size_t)top : n;
	json_key(j, "cgroups");
	json_array_begin(j);
	for (size_t i = 0; i < rows; i++) {
		const struct sp_cgroup *g = &v[i];
		json_object_begin(j);
		json_key(j, "cgroup");
		json_string(j, g->path);
		json_key(j, "version");
		json_int(j, g->version);
		json_key(j, "memory_bytes");
		json_uint(j, sp_cgroup_bytes(g));
		json_key(j, "huge_bytes");
		json_uint(j, sp_cgroup_huge(g));
		json_key(j, "coverage");
		json_double(j, ratio(sp_cgroup_huge(g), sp_cgroup_bytes(g)));
		const struct { const char *k; uint64_t v; } f[] = {
			{ "anon_bytes", g->anon }, { "anon_thp_bytes", g->anon_thp },
			{ "file_bytes", g->file }, { "file_thp_bytes", g->file_thp },
			{ "shmem_bytes", g->shmem }, { "shmem_thp_bytes", g->shmem_thp },
		};
		for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
			json_key(j, f[k].k);
			json_uint(j, f[k].v);
		}
		json_key(j, "hugetlb_bytes");
		if (g->hugetlb_known)
			json_uint(j, g->hugetlb_bytes);
		else
			json_null(j);
		/* The container the cgroup is (by its name), or null. */
		struct ct_of ct;
		json_key(j, "container");
		if (container_of(g, &ct)) {
			json_object_begin(j);
			json_key(j, "engine");
			json_string(j, ct.engine);
			json_key(j, "id");
			json_string(j, ct.id);
			json_key(j, "name");
			if (ct.name[0])
				json_string(j, ct.name);
			else
				json_null(j);
			json_object_end(j);
		} else {
			json_null(j);
		}
		json_object_end(j);
	}
	json_array_end(j);
}

static int stat_cgroups(const struct all_opts *o, const struct sp_meminfo *m)
{
	struct sp_cgroup *v;
	long n = sp_cgroups_read(&v);
	if (n == -ENOENT)
		return cli_error(EXIT_FAIL, "stat: no memory cgroup hierarchy is mounted here");
	if (n < 0)
		return cli_error(EXIT_FAIL, "stat: cannot read the memory cgroups: %s", strerror((int)-n));
	qsort(v, (size_t)n, sizeof *v, cg_by_huge);
	if (o->json) {
		struct json j;
		json_init(&j, stdout);
		json_object_begin(&j);
		machine_json(&j, m);
		cgroups_json(&j, v, (size_t)n, o->top);
		json_object_end(&j);
		json_end(&j);
	} else {
		machine_text(m);
		cgroups_text(v, (size_t)n, o->top);
	}
	free(v);
	return EXIT_OK;
}

static int stat_procs(const struct all_opts *o, const struct sp_meminfo *m)
{
	struct skipped sk = { 0 };
	size_t n;
	double t0 = now_s();
	struct sp_proc *v = read_all(o->scan, &n, &sk);
	double secs = now_s() - t0;
	if (!v && errno == ENOTTY)
		return cli_error(EXIT_FAIL, "stat: this kernel has no PAGEMAP_SCAN (Linux 6.7); "
				 "--scan rollup reads smaps_rollup");
	if (!v)
		return cli_error(EXIT_FAIL, "stat: cannot list /proc: %s", strerror(errno));
	enum sp_scan used = o->scan;
	if (used == SP_SCAN_AUTO && n)
		used = v[0].scan;
	qsort(v, n, sizeof *v, by_huge);
	if (o->json) {
		struct json j;
		json_init(&j, stdout);
		json_object_begin(&j);
		machine_json(&j, m);
		json_key(&j, "scan");
		json_string(&j, sp_scan_name(used));
		json_key(&j, "seconds");
		json_double(&j, secs);
		json_key(&j, "skipped");
		json_object_begin(&j);
		json_key(&j, "gone");
		json_int(&j, sk.gone);
		json_key(&j, "denied");
		json_int(&j, sk.denied);
		json_key(&j, "no_memory");
		json_int(&j, sk.empty);
		json_object_end(&j);
		procs_json(&j, v, n, o->top);
		json_object_end(&j);
		json_end(&j);
	} else {
		machine_text(m);
		procs_text(v, n, &sk, o->top, used, secs);
	}
	free(v);
	return EXIT_OK;
}

int stat_all(int argc, char **argv)
{
	struct all_opts o = { 0 };
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val;
		int r;
		if (!strcmp(a, "--all")) {
			continue;
		} else if (!strcmp(a, "--json")) {
			o.json = true;
		} else if (!strcmp(a, "--cgroup")) {
			o.cgroups = true;
		} else if ((r = cli_opt_value(argc, argv, &i, "--top", &val)) != 0) {
			uint64_t t;
			if (r < 0)
				return EXIT_USAGE;
			if (sp_parse_count(val, &t) < 0 || t > 1000000)
				return cli_error(EXIT_USAGE, "stat: bad --top '%s' (a count of rows, 0 for all)",
						 val);
			o.top = (long)t;
		} else if ((r = cli_opt_value(argc, argv, &i, "--scan", &val)) != 0) {
			if (r < 0)
				return EXIT_USAGE;
			if (!strcmp(val, "auto"))
				o.scan = SP_SCAN_AUTO;
			else if (!strcmp(val, "pagemap"))
				o.scan = SP_SCAN_PAGEMAP;
			else if (!strcmp(val, "rollup"))
				o.scan = SP_SCAN_ROLLUP;
			else
				return cli_error(EXIT_USAGE, "stat: bad --scan '%s' (auto, pagemap or rollup)",
						 val);
		} else if (a[0] == '-') {
			return cli_error(EXIT_USAGE, "stat: unknown option '%s' (see superpage stat --help)", a);
		} else {
			return cli_error(EXIT_USAGE, "stat: --all takes no PID ('%s')", a);
		}
	}
	if (o.cgroups && o.scan != SP_SCAN_AUTO)
		return cli_error(EXIT_USAGE, "stat: --scan is for processes, not --cgroup");
	struct sp_meminfo m;
	int r = sp_meminfo_read(&m);
	if (r < 0)
		return cli_error(EXIT_FAIL, "stat: cannot read /proc/meminfo: %s", strerror(-r));
	return o.cgroups ? stat_cgroups(&o, &m) : stat_procs(&o, &m);
}
