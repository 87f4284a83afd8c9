/* membench.c - the first benchmark: gups and seq on one sp_alloc block per backing, side by side. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <superpage.h>

#define MIB (1ull << 20)
#define GIB (1ull << 30)
#define MAX_ROUNDS 1000
#define SEQ_PASSES 4
#define GOLDEN64 0x9E3779B97F4A7C15ull
#define GUPS_SEED 0x5DEECE66Dull
#define SAMPLES 4096

enum kernel { K_GUPS = 0, K_SEQ, K_COUNT };
static const char *const kernel_names[K_COUNT] = { "gups", "seq" };

/* The backings this benchmark compares, in the order of the tables. */
static const enum sp_backing all_backings[] = { SP_BACKING_4K, SP_BACKING_THP, SP_BACKING_2M,
						SP_BACKING_1G };
#define N_BACKINGS 4

struct block {
	enum sp_backing backing;
	bool have;                 /* allocated (else skip says why) */
	bool verified;             /* sp_verify_range agreed with the backing asked */
	char skip[256];
	char why_not[256];         /* why verification failed */
	uint64_t *a;
	size_t size;               /* as asked */
	size_t mapped;
	struct sp_verify v, v_after;
	int v_after_rc;
	double populate_s;
	int runs[K_COUNT];
	double secs[K_COUNT][MAX_ROUNDS];
	long minflt[K_COUNT][MAX_ROUNDS];
	uint64_t sum[K_COUNT][MAX_ROUNDS];
	bool result_ok[K_COUNT];
	char result_why[K_COUNT][160];
};

struct config {
	bool setup_pools;
	uint64_t rounds;
	uint64_t size;
	int n_backings;
	enum sp_backing backings[N_BACKINGS];
	int n_kernels;
	enum kernel kernels[K_COUNT];
};

/* ---------- pools changed by --setup-pools, and how to put them back ---------- */

/* What the signal handler needs, prepared beforehand: it may only make
 * async-signal-safe calls, so it writes sysfs itself instead of calling
 * sp_pool_set (whose safety in a handler the header does not promise). */
struct pool_change {
	uint64_t page_size;
	const char *name;          /* "2M", "1G" */
	volatile sig_atomic_t touched; /* set before the first sp_pool_set */
	long old_total;
	char path[128];            /* the system-wide nr_hugepages file */
};

static struct pool_change pool_changes[2] = {
	{ .page_size = 2 * MIB, .name = "2M" },
	{ .page_size = GIB, .name = "1G" },
};

struct live_map { void *addr; size_t len; };
static struct live_map live[N_BACKINGS];
static volatile sig_atomic_t n_live;
static volatile sig_atomic_t cleaned_up;
static struct block blocks[N_BACKINGS];
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };
#define N_CLEANUP_SIGNALS ((int)(sizeof cleanup_signals / sizeof cleanup_signals[0]))

static void safe_write_str(int fd, const char *s)
{
	ssize_t r = write(fd, s, strlen(s));
	(void)r;
}

/* Async-signal-safe: unmap what we hold, write the old pool totals back, die of sig. */
static void on_fatal_signal(int sig)
{
	if (!cleaned_up) {
		cleaned_up = 1;
		/* Hugetlb pages in use cannot leave the pool: unmap first. */
		for (int i = 0; i < n_live; i++)
			munmap(live[i].addr, live[i].len);
		n_live = 0;
		for (int i = 0; i < 2; i++) {
			struct pool_change *c = &pool_changes[i];
			if (!c->touched)
				continue;
			char num[32];
			int n = 0;
			long v = c->old_total;
			char rev[24];
			do {
				rev[n++] = (char)('0' + v % 10);
				v /= 10;
			} while (v > 0 && n < (int)sizeof rev);
			for (int k = 0; k < n; k++)
				num[k] = rev[n - 1 - k];
			num[n] = '\n';
			int fd = open(c->path, O_WRONLY);
			if (fd < 0 || write(fd, num, (size_t)n + 1) != n + 1) {
				safe_write_str(2, "membench: could not put back ");
				safe_write_str(2, c->path);
				safe_write_str(2, "\n");
			}
			if (fd >= 0)
				close(fd);
		}
		if (sig != SIGPIPE)
			safe_write_str(2, "\nmembench: interrupted; blocks unmapped, pools put back\n");
	}
	/* SA_RESETHAND gave back the default action; the signal stays blocked until
	 * the handler returns, then kills us as it would have. */
	raise(sig);
}

static void block_signals(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	for (int i = 0; i < N_CLEANUP_SIGNALS; i++)
		sigaddset(&set, cleanup_signals[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

/* Frees the blocks, then puts the pools back; prints what it did if out is set. */
static void cleanup(FILE *out)
{
	sigset_t old;
	block_signals(&old);
	if (!cleaned_up) {
		for (int i = 0; i < N_BACKINGS; i++) {
			struct block *b = &blocks[i];
			if (!b->have || !b->a)
				continue;
			int r = sp_free(b->a, b->size);
			if (r < 0)
				fprintf(stderr, "membench: sp_free(%s block): %s\n",
					sp_backing_name(b->backing), strerror(-r));
			b->a = NULL;
		}
		n_live = 0;
		for (int i = 0; i < 2; i++) {
			struct pool_change *c = &pool_changes[i];
			if (!c->touched)
				continue;
			long got = -1;
			int r = sp_pool_set(c->page_size, -1, c->old_total, &got);
			struct sp_pool now;
			int rg = sp_pool_get(c->page_size, -1, &now);
			if (r < 0 || rg < 0 || now.total != c->old_total)
				fprintf(stderr, "membench: could not put the %s pool back to %ld: %s (now %ld)\n",
					c->name, c->old_total, r < 0 ? strerror(-r) : "read back differs",
					rg == 0 ? now.total : -1L);
			else if (out)
				fprintf(out, "pools:   %s pool put back to %ld\n", c->name, now.total);
		}
		cleaned_up = 1;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static void cleanup_at_exit(void)
{
	cleanup(NULL);
}

static void install_cleanup(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < N_CLEANUP_SIGNALS; i++)
		sigaddset(&sa.sa_mask, cleanup_signals[i]);
	for (int i = 0; i < N_CLEANUP_SIGNALS; i++)
		sigaction(cleanup_signals[i], &sa, NULL);
	atexit(cleanup_at_exit);
}

/* ---------- small helpers ---------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long minflt_now(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static const char *fmt_size(uint64_t v, char *buf, size_t len)
{
	return sp_format_size(v, buf, len);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

static double median(const double *v, int n)
{
	double tmp[MAX_ROUNDS];
	memcpy(tmp, v, (size_t)n * sizeof *v);
	qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static double best(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

static uint64_t xorshift64s(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545F4914F6CDD1Dull;
}

/* An index in [0, n) from the high bits of a random word. */
static inline uint64_t pick(uint64_t r, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)r * n) >> 64);
}

static uint64_t backing_page_size(enum sp_backing b)
{
	switch (b) {
	case SP_BACKING_2M: return 2 * MIB;
	case SP_BACKING_1G: return GIB;
	default: return (uint64_t)sysconf(_SC_PAGESIZE);
	}
}

/* ---------- the kernels ---------- */

static uint64_t gups_initial(uint64_t i)
{
	return i * GOLDEN64 + 1;
}

static void gups_init(uint64_t *a, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		a[i] = gups_initial(i);
}

/* updates random read-modify-writes; the same seed twice leaves a as it was.
 * Returns the sum of the words read, which depends only on a's contents. */
__attribute__((noinline)) static uint64_t gups_run(uint64_t *a, uint64_t n, uint64_t updates)
{
	uint64_t x = GUPS_SEED, sum = 0;
	for (uint64_t k = 0; k < updates; k++) {
		uint64_t r = xorshift64s(&x);
		uint64_t i = pick(r, n);
		uint64_t old = a[i];
		sum += old;
		a[i] = old ^ r;
	}
	return sum;
}

/* Checks that a holds its initial pattern: everywhere if full, else at samples. */
static bool gups_check(const uint64_t *a, uint64_t n, bool full, uint64_t *bad_at)
{
	if (full) {
		for (uint64_t i = 0; i < n; i++)
			if (a[i] != gups_initial(i)) {
				*bad_at = i;
				return false;
			}
		return true;
	}
	uint64_t x = 0x1234567ull;
	for (int s = 0; s < SAMPLES + 2; s++) {
		uint64_t i = s == SAMPLES ? 0 : s == SAMPLES + 1 ? n - 1 : pick(xorshift64s(&x), n);
		if (a[i] != gups_initial(i)) {
			*bad_at = i;
			return false;
		}
	}
	return true;
}

static uint64_t seq_base(uint64_t tag, int pass)
{
	return ((tag << 8) | (uint64_t)pass) * 0xD6E8FEB86659FD93ull;
}

/* SEQ_PASSES passes of sequential stores; pass p stores seq_base(tag, p) + i * STEP. */
__attribute__((noinline)) static uint64_t seq_run(uint64_t *a, uint64_t n, uint64_t tag)
{
	uint64_t sum = 0;
	for (int p = 0; p < SEQ_PASSES; p++) {
		uint64_t v = seq_base(tag, p);
		for (uint64_t i = 0; i < n; i++) {
			a[i] = v;
			v += GOLDEN64;
		}
		/* Each pass is stored for real, not folded into the last one. */
		__asm__ volatile("" ::: "memory");
		sum += a[(n - 1) * (uint64_t)p / SEQ_PASSES] + a[n - 1];
	}
	return sum;
}

static bool seq_check(const uint64_t *a, uint64_t n, uint64_t tag, uint64_t *bad_at)
{
	uint64_t base = seq_base(tag, SEQ_PASSES - 1), x = 0x7654321ull;
	for (int s = 0; s < SAMPLES + 2; s++) {
		uint64_t i = s == SAMPLES ? 0 : s == SAMPLES + 1 ? n - 1 : pick(xorshift64s(&x), n);
		if (a[i] != base + i * GOLDEN64) {
			*bad_at = i;
			return false;
		}
	}
	return true;
}

/* ---------- arguments ---------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: membench [--setup-pools] [--rounds N] [--size SIZE] [--backing B,...]\n"
		"                [--kernel K,...] [--help]\n"
		"Runs two memory kernels on one block per backing, taken with\n"
		"sp_alloc(SIZE, SP_STRICT|SP_POPULATE|backing) and checked with sp_verify_range:\n"
		"  gups  random read-modify-write (xor) updates of 64-bit words, SIZE/128 per run\n"
		"  seq   %d passes of sequential 64-bit stores over the whole block\n"
		"Each round runs every backing once per kernel, the first backing rotating.\n"
		"  --setup-pools    (root) add SIZE/2M free pages to the 2 MiB pool and\n"
		"                   SIZE/1G pages to the 1 GiB pool; put both back at exit\n"
		"  --rounds N       runs per kernel and backing (default 5, at most %d)\n"
		"  --size SIZE      block size, e.g. 256M, 1G (default 1G; a multiple of 4K)\n"
		"  --backing B,...  from 4k,thp,2m,1g (default all four)\n"
		"  --kernel K,...   from gups,seq (default both)\n"
		"The report goes to stdout, progress to stderr. Exit status: 0 if it ran\n"
		"(skipped or unverified backings included), 1 if a result check failed,\n"
		"2 on bad arguments.\n",
		SEQ_PASSES, MAX_ROUNDS);
}

__attribute__((format(printf, 1, 2), noreturn)) static void bad_arg(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "membench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (try --help)\n");
	va_end(ap);
	exit(2);
}

static void parse_backings(const char *s, struct config *c)
{
	char buf[256];
	if (strlen(s) >= sizeof buf)
		bad_arg("--backing: list too long");
	strcpy(buf, s);
	c->n_backings = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		enum sp_backing b;
		if (sp_backing_parse(tok, &b) < 0)
			bad_arg("--backing: unknown backing '%s' (4k, thp, 2m, 1g)", tok);
		if (b == SP_BACKING_AUTO)
			bad_arg("--backing: '%s' is not one backing (4k, thp, 2m, 1g)", tok);
		bool dup = false;
		for (int i = 0; i < c->n_backings; i++)
			dup |= c->backings[i] == b;
		if (!dup)
			c->backings[c->n_backings++] = b;
	}
	if (c->n_backings == 0)
		bad_arg("--backing: empty list");
}

static void parse_kernels(const char *s, struct config *c)
{
	char buf[256];
	if (strlen(s) >= sizeof buf)
		bad_arg("--kernel: list too long");
	strcpy(buf, s);
	c->n_kernels = 0;
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int k;
		for (k = 0; k < K_COUNT; k++)
			if (strcasecmp(tok, kernel_names[k]) == 0)
				break;
		if (k == K_COUNT)
			bad_arg("--kernel: unknown kernel '%s' (gups, seq)", tok);
		bool dup = false;
		for (int i = 0; i < c->n_kernels; i++)
			dup |= c->kernels[i] == (enum kernel)k;
		if (!dup)
			c->kernels[c->n_kernels++] = (enum kernel)k;
	}
	if (c->n_kernels == 0)
		bad_arg("--kernel: empty list");
}

static void parse_args(int argc, char **argv, struct config *c)
{
	memset(c, 0, sizeof *c);
	c->rounds = 5;
	c->size = GIB;
	c->n_backings = N_BACKINGS;
	memcpy(c->backings, all_backings, sizeof all_backings);
	c->n_kernels = K_COUNT;
	c->kernels[0] = K_GUPS;
	c->kernels[1] = K_SEQ;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;
		char name[32];
		const char *eq = strchr(arg, '=');
		size_t nl = eq ? (size_t)(eq - arg) : strlen(arg);
		if (strncmp(arg, "--", 2) != 0 || nl >= sizeof name)
			bad_arg("unexpected argument '%s'", arg);
		memcpy(name, arg, nl);
		name[nl] = 0;
		if (!strcmp(name, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (!strcmp(name, "--setup-pools")) {
			if (eq)
				bad_arg("%s takes no value", name);
			c->setup_pools = true;
			continue;
		}
		if (strcmp(name, "--rounds") && strcmp(name, "--size") && strcmp(name, "--backing") &&
		    strcmp(name, "--kernel"))
			bad_arg("unknown option '%s'", name);
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			bad_arg("%s needs a value", name);

		if (!strcmp(name, "--rounds")) {
			int r = sp_parse_count(val, &c->rounds);
			if (r < 0 || c->rounds < 1 || c->rounds > MAX_ROUNDS)
				bad_arg("--rounds: '%s' is not a count from 1 to %d", val, MAX_ROUNDS);
		} else if (!strcmp(name, "--size")) {
			int r = sp_parse_size(val, &c->size);
			if (r < 0)
				bad_arg("--size: bad size '%s' (%s)", val, strerror(-r));
			if (c->size < 64 * 1024 || c->size % 4096 || c->size > (uint64_t)SIZE_MAX / 2)
				bad_arg("--size: '%s' must be a multiple of 4K from 64K up", val);
		} else if (!strcmp(name, "--backing")) {
			parse_backings(val, c);
		} else {
			parse_kernels(val, c);
		}
	}
}

/* ---------- machine, pools ---------- */

static void cpu_model(char *buf, size_t len)
{
	snprintf(buf, len, "unknown cpu");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *p = strchr(line, ':');
			if (p) {
				p++;
				while (*p == ' ' || *p == '\t')
					p++;
				p[strcspn(p, "\n")] = 0;
				snprintf(buf, len, "%s", p);
			}
			break;
		}
	}
	fclose(f);
}

static const struct sp_pool *find_pool(const struct sp_system *sys, uint64_t page_size)
{
	for (int i = 0; i < sys->n_sizes; i++)
		if (sys->page_sizes[i] == page_size)
			return &sys->pools[i];
	return NULL;
}

static void print_pools(FILE *f, const char *label, const struct sp_system *sys)
{
	char sz[32];
	fprintf(f, "%-9s", label);
	if (sys->n_sizes == 0)
		fprintf(f, "no huge page sizes");
	for (int i = 0; i < sys->n_sizes; i++) {
		const struct sp_pool *p = &sys->pools[i];
		fprintf(f, "%s%s total %ld free %ld resv %ld surplus %ld", i ? " | " : "",
			fmt_size(p->page_size, sz, sizeof sz), p->total, p->free, p->reserved,
			p->surplus);
	}
	fprintf(f, "\n");
}

static void print_header(const struct config *c, const struct sp_system *sys)
{
	char cpu[256], sz[32];
	struct utsname u;
	cpu_model(cpu, sizeof cpu);
	if (uname(&u) < 0)
		memset(&u, 0, sizeof u);
	printf("membench (libsuperpage %s): gups and seq on blocks from sp_alloc, per backing\n",
	       sp_version());
	printf("machine: %s, %ld cpus, %s %s %s\n", cpu, sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
	       u.release, u.machine);
	if (sys->thp.present)
		printf("thp:     enabled %s, defrag %s, pmd %s\n", sys->thp.enabled, sys->thp.defrag,
		       fmt_size(sys->thp.pmd_size, sz, sizeof sz));
	else
		printf("thp:     not in this kernel\n");
	print_pools(stdout, "pools:", sys);
	printf("run:     size %s, %llu rounds, backings", fmt_size(c->size, sz, sizeof sz),
	       (unsigned long long)c->rounds);
	for (int i = 0; i < c->n_backings; i++)
		printf("%s%s", i ? "," : " ", sp_backing_name(c->backings[i]));
	printf(", kernels");
	for (int i = 0; i < c->n_kernels; i++)
		printf("%s%s", i ? "," : " ", kernel_names[c->kernels[i]]);
	printf("\n");
}

static bool wants(const struct config *c, enum sp_backing b)
{
	for (int i = 0; i < c->n_backings; i++)
		if (c->backings[i] == b)
			return true;
	return false;
}

static void setup_pools(const struct config *c)
{
	if (geteuid() != 0) {
		printf("setup:   --setup-pools skipped: not root (euid %u); using the pools as they are\n",
		       (unsigned)geteuid());
		return;
	}
	install_cleanup();
	for (int i = 0; i < 2; i++) {
		struct pool_change *pc = &pool_changes[i];
		enum sp_backing b = pc->page_size == GIB ? SP_BACKING_1G : SP_BACKING_2M;
		if (!wants(c, b))
			continue;
		struct sp_pool p;
		int r = sp_pool_get(pc->page_size, -1, &p);
		if (r < 0) {
			printf("setup:   %s pool not set up: %s\n", pc->name,
			       r == -ENOENT ? "no such page size in this kernel" : strerror(-r));
			continue;
		}
		long need = (long)((c->size + pc->page_size - 1) / pc->page_size);
		long target = p.total + need;
		snprintf(pc->path, sizeof pc->path,
			 "/sys/kernel/mm/hugepages/hugepages-%llukB/nr_hugepages",
			 (unsigned long long)(pc->page_size >> 10));
		pc->old_total = p.total;
		pc->touched = true;
		long got = -1;
		double t0 = now_s();
		r = sp_pool_set(pc->page_size, -1, target, &got);
		double dt = now_s() - t0;
		if (r == 0)
			printf("setup:   %s pool %ld -> %ld (+%ld) in %.2f s\n", pc->name, p.total, got,
			       need, dt);
		else if (r == -ENOMEM)
			printf("setup:   %s pool %ld -> %ld: asked %ld, the kernel gave %ld fewer\n",
			       pc->name, p.total, got, target, target - got);
		else
			printf("setup:   %s pool not set up: %s\n", pc->name, strerror(-r));
	}
}

/* ---------- blocks ---------- */

static unsigned backing_flag(enum sp_backing b)
{
	switch (b) {
	case SP_BACKING_4K: return SP_4K;
	case SP_BACKING_THP: return SP_THP;
	case SP_BACKING_2M: return SP_2M;
	case SP_BACKING_1G: return SP_1G;
	default: return SP_AUTO;
	}
}

/* Why a strict allocation was refused, from what sp_probe sees now and the library's
 * own count of falls for that rung. */
static void explain_refusal(enum sp_backing b, uint64_t size, int err, const struct sp_stats *s0,
			    const struct sp_stats *s1, char *buf, size_t len)
{
	struct sp_system sys;
	char sz[32];
	int pr = sp_probe(&sys);
	size_t off = 0;
#define ADD(...) off += (size_t)snprintf(buf + off, off < len ? len - off : 0, __VA_ARGS__)
	buf[0] = 0;
	if (pr < 0) {
		ADD("mmap refused (%s); sp_probe failed: %s", strerror(err), strerror(-pr));
	} else if (b == SP_BACKING_2M || b == SP_BACKING_1G) {
		uint64_t ps = backing_page_size(b);
		const struct sp_pool *p = find_pool(&sys, ps);
		long need = (long)((size + ps - 1) / ps);
		fmt_size(ps, sz, sizeof sz);
		if (!p)
			ADD("no %s page size in this kernel", sz);
		else if (p->total == 0)
			ADD("%s pool total 0 (try --setup-pools as root)", sz);
		else if (p->free - (p->reserved > 0 ? p->reserved : 0) < need)
			ADD("%s pool free %ld (resv %ld) < %ld needed", sz, p->free, p->reserved,
			    need);
		else if (b == SP_BACKING_1G ? !sys.features.map_huge_1gb : !sys.features.map_huge_2mb)
			ADD("mmap(MAP_HUGETLB|MAP_HUGE_%s) refused by the kernel", sz);
		else
			ADD("mmap refused (%s)", strerror(err));
	} else if (b == SP_BACKING_THP) {
		if (!sys.thp.present)
			ADD("no THP in this kernel");
		else if (strcmp(sys.thp.enabled, "never") == 0)
			ADD("THP is never");
		else if (sys.features.thp_disabled_here)
			ADD("THP disabled for this process by prctl(PR_SET_THP_DISABLE)");
		else
			ADD("mmap refused (%s)", strerror(err));
	} else {
		ADD("mmap refused (%s)", strerror(err));
	}
	/* The library's own reasons for leaving this rung, if it counted any. */
	bool first = true;
	for (int f = 0; f < SP_FALL_COUNT; f++) {
		uint64_t d = s1->falls[b][f] - s0->falls[b][f];
		if (d) {
			ADD("%s%s", first ? "; library: " : ",", sp_fall_name((enum sp_fall)f));
			first = false;
		}
	}
#undef ADD
}

/* Does what the kernel reports match the backing asked, the whole block resident? */
static bool check_verify(enum sp_backing b, const struct sp_verify *v, uint64_t size, char *why,
			 size_t len)
{
	char s1[32], s2[32];
	uint64_t ps = backing_page_size(b);
	if (v->backing != b)
		snprintf(why, len, "kernel says %s, not %s", sp_backing_name(v->backing),
			 sp_backing_name(b));
	else if (v->page_size != ps)
		snprintf(why, len, "page size %s, not %s", fmt_size(v->page_size, s1, sizeof s1),
			 fmt_size(ps, s2, sizeof s2));
	else if (v->rss_bytes < size)
		snprintf(why, len, "only %s of %s resident after SP_POPULATE",
			 fmt_size(v->rss_bytes, s1, sizeof s1), fmt_size(size, s2, sizeof s2));
	else if (b == SP_BACKING_4K ? v->huge_bytes != 0 : v->huge_bytes != v->rss_bytes)
		snprintf(why, len, "%s of %s resident on huge pages",
			 fmt_size(v->huge_bytes, s1, sizeof s1), fmt_size(v->rss_bytes, s2, sizeof s2));
	else
		return true;
	return false;
}

static double coverage_pct(const struct sp_verify *v)
{
	return v->rss_bytes ? 100.0 * (double)v->huge_bytes / (double)v->rss_bytes : 0.0;
}

static void allocate_blocks(const struct config *c)
{
	char s1[32], s2[32], s3[32], s4[32];
	printf("blocks:  sp_alloc(%s, SP_STRICT|SP_POPULATE|backing), then sp_verify_range\n",
	       fmt_size(c->size, s1, sizeof s1));
	for (int i = 0; i < c->n_backings; i++) {
		struct block *b = &blocks[i];
		memset(b, 0, sizeof *b);
		b->backing = c->backings[i];
		const char *name = sp_backing_name(b->backing);
		fprintf(stderr, "membench: allocating and populating the %s block\n", name);
		struct sp_stats s0, s1s;
		sp_stats_get(&s0);
		sigset_t old;
		/* No signal between the map and our note of it, so a handler frees it. */
		block_signals(&old);
		double t0 = now_s();
		void *p = sp_alloc(c->size, SP_STRICT | SP_POPULATE | backing_flag(b->backing));
		int err = errno;
		b->populate_s = now_s() - t0;
		struct sp_block info;
		int ri = p ? sp_block_info(p, &info) : -EINVAL;
		if (ri == 0) {
			live[n_live].addr = p;
			live[n_live].len = info.mapped;
			n_live = n_live + 1;
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
		sp_stats_get(&s1s);
		if (!p) {
			explain_refusal(b->backing, c->size, err, &s0, &s1s, b->skip, sizeof b->skip);
			printf("  %-4s skipped: %s\n", name, b->skip);
			continue;
		}
		b->have = true;
		b->a = p;
		b->size = c->size;
		b->mapped = ri == 0 ? info.mapped : 0;
		if (ri < 0 || info.backing != b->backing || info.size != c->size ||
		    info.mapped < c->size) {
			/* SP_STRICT promises the rung asked for; say so loudly if not. */
			printf("  %-4s LIBRARY: sp_block_info gives %s (rc %d) for a strict %s block\n",
			       name, ri < 0 ? "nothing" : sp_backing_name(info.backing), ri, name);
		}
		uint64_t align = b->backing == SP_BACKING_1G ? GIB :
				 b->backing == SP_BACKING_4K ? 4096 : 2 * MIB;
		if ((uintptr_t)p % align)
			printf("  %-4s LIBRARY: block at %p is not aligned to %s as the header says\n",
			       name, p, fmt_size(align, s1, sizeof s1));
		int r = sp_verify_range(p, c->size, &b->v);
		if (r < 0) {
			snprintf(b->why_not, sizeof b->why_not, "sp_verify_range: %s", strerror(-r));
		} else {
			b->verified = check_verify(b->backing, &b->v, c->size, b->why_not,
						   sizeof b->why_not);
		}
		if (r < 0)
			printf("  %-4s NOT VERIFIED: %s\n", name, b->why_not);
		else
			printf("  %-4s %-12s kernel: %-3s page %-3s rss %-5s huge %-5s %5.1f%%  "
			       "mapped %s  populate %.2f s\n",
			       name, b->verified ? "verified" : "NOT VERIFIED",
			       sp_backing_name(b->v.backing), fmt_size(b->v.page_size, s1, sizeof s1),
			       fmt_size(b->v.rss_bytes, s2, sizeof s2),
			       fmt_size(b->v.huge_bytes, s3, sizeof s3), coverage_pct(&b->v),
			       fmt_size(b->mapped, s4, sizeof s4), b->populate_s);
		if (r == 0 && !b->verified)
			printf("       (%s: its times are invalid)\n", b->why_not);
	}
	fflush(stdout);
}

/* ---------- running ---------- */

static uint64_t gups_updates(uint64_t size)
{
	return size / 128;
}

/* Runs one kernel on all blocks for all rounds; checks results. Returns false on a
 * failed check. */
static bool run_kernel(const struct config *c, enum kernel k)
{
	uint64_t n = c->size / 8, updates = gups_updates(c->size), bad;
	int R = (int)c->rounds, nb = c->n_backings;
	bool ok = true;

	if (k == K_GUPS)
		for (int j = 0; j < nb; j++)
			if (blocks[j].have)
				gups_init(blocks[j].a, n);
	for (int r = 0; r < R; r++) {
		for (int j = 0; j < nb; j++) {
			struct block *b = &blocks[(j + r) % nb];
			if (!b->have)
				continue;
			fprintf(stderr, "membench: %-4s %-3s round %d/%d", kernel_names[k],
				sp_backing_name(b->backing), r + 1, R);
			long f0 = minflt_now();
			double t0 = now_s();
			uint64_t sum = k == K_GUPS ? gups_run(b->a, n, updates) : seq_run(b->a, n, (uint64_t)r + 1);
			double dt = now_s() - t0;
			long f1 = minflt_now();
			b->secs[k][r] = dt;
			b->minflt[k][r] = f1 - f0;
			b->sum[k][r] = sum;
			b->runs[k] = r + 1;
			fprintf(stderr, "  %.3f s\n", dt);
			bool good = true;
			if (k == K_GUPS && r % 2 == 1)
				good = gups_check(b->a, n, false, &bad);
			else if (k == K_SEQ)
				good = seq_check(b->a, n, (uint64_t)r + 1, &bad);
			if (!good && b->result_why[k][0] == 0)
				snprintf(b->result_why[k], sizeof b->result_why[k],
					 "round %d: word %llu is not the expected pattern", r + 1,
					 (unsigned long long)bad);
		}
	}
	for (int j = 0; j < nb; j++) {
		struct block *b = &blocks[j];
		if (!b->have)
			continue;
		if (k == K_GUPS) {
			/* Undo an odd run, then every word must be back. */
			if (R % 2)
				gups_run(b->a, n, updates);
			if (!gups_check(b->a, n, true, &bad) && b->result_why[k][0] == 0)
				snprintf(b->result_why[k], sizeof b->result_why[k],
					 "after %d runs undone, word %llu is not its initial value",
					 R + R % 2, (unsigned long long)bad);
		}
		/* Same data, same sequence: every backing must read the same sums. */
		for (int m = 0; m < nb && !b->result_why[k][0]; m++) {
			struct block *o = &blocks[m];
			if (!o->have || o == b)
				continue;
			for (int r = 0; r < R; r++)
				if (o->sum[k][r] != b->sum[k][r]) {
					snprintf(b->result_why[k], sizeof b->result_why[k],
						 "round %d: checksum %016llx differs from %s's %016llx",
						 r + 1, (unsigned long long)b->sum[k][r],
						 sp_backing_name(o->backing),
						 (unsigned long long)o->sum[k][r]);
					break;
				}
		}
		b->result_ok[k] = b->result_why[k][0] == 0;
		ok &= b->result_ok[k];
	}
	return ok;
}

/* ---------- report ---------- */

static const struct block *block_of(const struct config *c, enum sp_backing bk)
{
	for (int j = 0; j < c->n_backings; j++)
		if (blocks[j].backing == bk)
			return &blocks[j];
	return NULL;
}

static bool valid(const struct block *b, enum kernel k)
{
	return b && b->have && b->verified && b->result_ok[k] && b->runs[k] > 0;
}

static double metric(const struct config *c, enum kernel k, double secs)
{
	if (k == K_GUPS)
		return (double)gups_updates(c->size) / secs / 1e6;
	return (double)c->size * SEQ_PASSES / secs / 1e9;
}

static void print_table(const struct config *c, enum kernel k)
{
	char sz[32];
	const struct block *base = block_of(c, SP_BACKING_4K);
	double base_med = valid(base, k) ? median(base->secs[k], base->runs[k]) : 0;
	printf("\n");
	if (k == K_GUPS)
		printf("gups: %llu random xor updates of 64-bit words in %s per run, median of %llu\n",
		       (unsigned long long)gups_updates(c->size), fmt_size(c->size, sz, sizeof sz),
		       (unsigned long long)c->rounds);
	else
		printf("seq: %d passes of sequential 64-bit stores over %s per run, median of %llu\n",
		       SEQ_PASSES, fmt_size(c->size, sz, sizeof sz), (unsigned long long)c->rounds);
	printf("%-8s %-12s %9s %9s %9s %7s  %s\n", "backing", "verified", "median s", "best s",
	       k == K_GUPS ? "MUP/s" : "GB/s", "minflt", "vs 4k");
	for (int j = 0; j < c->n_backings; j++) {
		const struct block *b = &blocks[j];
		const char *name = sp_backing_name(b->backing);
		if (!b->have) {
			printf("%-8s skipped: %s\n", name, b->skip);
			continue;
		}
		char ver[32], speed[256];
		if (b->verified)
			snprintf(ver, sizeof ver, "%s %.1f%%", sp_backing_name(b->v.backing),
				 coverage_pct(&b->v));
		else
			snprintf(ver, sizeof ver, "NOT VERIFIED");
		double med = median(b->secs[k], b->runs[k]);
		long maxflt = 0;
		for (int r = 0; r < b->runs[k]; r++)
			if (b->minflt[k][r] > maxflt)
				maxflt = b->minflt[k][r];
		if (!b->result_ok[k])
			snprintf(speed, sizeof speed, "RESULT WRONG: %s", b->result_why[k]);
		else if (!b->verified)
			snprintf(speed, sizeof speed, "invalid (%s)", b->why_not);
		else if (base_med > 0)
			snprintf(speed, sizeof speed, "%.2fx", base_med / med);
		else
			snprintf(speed, sizeof speed, "n/a (no valid 4k)");
		printf("%-8s %-12s %9.3f %9.3f %9.1f %7ld  %s\n", name, ver, med,
		       best(b->secs[k], b->runs[k]), metric(c, k, med), maxflt, speed);
	}
}

static void print_summary(const struct config *c)
{
	const struct block *base = block_of(c, SP_BACKING_4K);
	bool gups = false;
	for (int i = 0; i < c->n_kernels; i++)
		gups |= c->kernels[i] == K_GUPS;
	printf("\nsummary: ");
	if (!gups) {
		printf("gups not run\n");
		return;
	}
	if (!valid(base, K_GUPS)) {
		printf("gups has no valid 4k baseline (%s)\n",
		       !base ? "not asked for" : !base->have ? base->skip : "its runs are invalid");
		return;
	}
	double base_med = median(base->secs[K_GUPS], base->runs[K_GUPS]);
	static const enum sp_backing show[] = { SP_BACKING_2M, SP_BACKING_1G };
	printf("gups over 4k:");
	for (int i = 0; i < 2; i++) {
		const struct block *b = block_of(c, show[i]);
		const char *name = sp_backing_name(show[i]);
		printf("%s", i ? "," : "");
		if (!b)
			printf(" %s not asked for", name);
		else if (!b->have)
			printf(" %s skipped", name);
		else if (!valid(b, K_GUPS))
			printf(" %s invalid", name);
		else {
			double s = base_med / median(b->secs[K_GUPS], b->runs[K_GUPS]);
			printf(" %s %.2fx (%+.0f%%)", name, s, (s - 1) * 100);
		}
	}
	printf(" (ratio of median times)\n");
}

int main(int argc, char **argv)
{
	struct config c;
	struct sp_system sys;
	parse_args(argc, argv, &c);
	double t_start = now_s();

	int r = sp_probe(&sys);
	if (r < 0) {
		fprintf(stderr, "membench: sp_probe: %s\n", strerror(-r));
		return 1;
	}
	print_header(&c, &sys);
	if (c.setup_pools) {
		setup_pools(&c);
		if (geteuid() == 0 && sp_probe(&sys) == 0)
			print_pools(stdout, "now:", &sys);
	}
	fflush(stdout);
	sp_stats_reset();
	allocate_blocks(&c);

	bool ok = true;
	for (int i = 0; i < c.n_kernels; i++)
		ok &= run_kernel(&c, c.kernels[i]);

	/* The backing must have held for the whole run (no split, no migration). */
	for (int j = 0; j < c.n_backings; j++) {
		struct block *b = &blocks[j];
		if (!b->have || !b->verified)
			continue;
		char why[200];
		b->v_after_rc = sp_verify_range(b->a, c.size, &b->v_after);
		if (b->v_after_rc < 0 || !check_verify(b->backing, &b->v_after, c.size, why, sizeof why)) {
			b->verified = false;
			snprintf(b->why_not, sizeof b->why_not, "after the runs: %s",
				 b->v_after_rc < 0 ? strerror(-b->v_after_rc) : why);
		}
	}
	for (int i = 0; i < c.n_kernels; i++)
		print_table(&c, c.kernels[i]);
	print_summary(&c);

	struct sp_stats st;
	sp_stats_get(&st);
	printf("library: blocks");
	for (int b = SP_BACKING_4K; b < SP_BACKING_COUNT; b++)
		printf(" %s=%llu", sp_backing_name((enum sp_backing)b), (unsigned long long)st.blocks[b]);
	printf(", falls");
	bool any = false;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++)
			if (st.falls[b][f]) {
				printf(" %s:%s=%llu", sp_backing_name((enum sp_backing)b),
				       sp_fall_name((enum sp_fall)f), (unsigned long long)st.falls[b][f]);
				any = true;
			}
	printf("%s\n", any ? "" : " none");

	cleanup(stdout);
	printf("time:    %.1f s in all\n", now_s() - t_start);
	if (!ok)
		fprintf(stderr, "membench: a result check failed (see the tables)\n");
	return ok ? 0 : 1;
}
