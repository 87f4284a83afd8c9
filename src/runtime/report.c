/* report.c - what the runtime says: one-line messages, each fallback once, the account at exit.
 * It runs inside other programs, perhaps inside malloc: no malloc, no stdio (a small
 * formatter into a stack buffer, then one write), and errno left as it was. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "runtime.h"
#include "shm.h"
#include "stacks.h"
#include "text.h"

#define MSG_MAX 512      /* one message line */
#define REPORT_MAX 4096  /* the whole account: one write, so lines of processes do not mix */

void rt_report_at_exit(void);

/* ---------- a formatter that needs nothing but a buffer ---------- */

struct out {
	char *buf;
	size_t len, cap;
	bool cut;          /* something did not fit */
};

static void put_char(struct out *o, char c)
{
	if (o->len < o->cap)
		o->buf[o->len++] = c;
	else
		o->cut = true;
}

static void put_str(struct out *o, const char *s)
{
	if (!s)
		s = "(null)";
	while (*s)
		put_char(o, *s++);
}

static void put_uint(struct out *o, unsigned long long v, unsigned base)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (n)
		put_char(o, digits[--n]);
}

static void put_int(struct out *o, long long v)
{
	if (v < 0) {
		put_char(o, '-');
		put_uint(o, 0ull - (unsigned long long)v, 10);
	} else {
		put_uint(o, (unsigned long long)v, 10);
	}
}

/* %s %d %i %u %x %p %c %%, with the length modifiers l, ll and z; no widths. */
static void put_vfmt(struct out *o, const char *fmt, va_list ap)
{
	for (const char *p = fmt; *p; p++) {
		int lng = 0;
		bool z = false;

		if (*p != '%') {
			put_char(o, *p);
			continue;
		}
		p++;
		while (*p == 'l') {
			lng++;
			p++;
		}
		if (*p == 'z') {
			z = true;
			p++;
		}
		switch (*p) {
		case 'd':
		case 'i':
			if (z)
				put_int(o, va_arg(ap, ssize_t));
			else if (lng >= 2)
				put_int(o, va_arg(ap, long long));
			else if (lng)
				put_int(o, va_arg(ap, long));
			else
				put_int(o, va_arg(ap, int));
			break;
		case 'u':
		case 'x':
			if (z)
				put_uint(o, va_arg(ap, size_t), *p == 'x' ? 16 : 10);
			else if (lng >= 2)
				put_uint(o, va_arg(ap, unsigned long long), *p == 'x' ? 16 : 10);
			else if (lng)
				put_uint(o, va_arg(ap, unsigned long), *p == 'x' ? 16 : 10);
			else
				put_uint(o, va_arg(ap, unsigned), *p == 'x' ? 16 : 10);
			break;
		case 's':
			put_str(o, va_arg(ap, const char *));
			break;
		case 'c':
			put_char(o, (char)va_arg(ap, int));
			break;
		case 'p':
			put_str(o, "0x");
			put_uint(o, (uintptr_t)va_arg(ap, void *), 16);
			break;
		case '%':
			put_char(o, '%');
			break;
		case 0:
			put_char(o, '%');
			return;
		default:
			put_char(o, '%');
			put_char(o, *p);
			break;
		}
	}
}

static void put_fmt(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put_fmt(struct out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_vfmt(o, fmt, ap);
	va_end(ap);
}

/* "512 B", "64.0 MiB": as the command prints amounts of memory. */
static void put_human(struct out *o, uint64_t bytes)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	uint64_t tenths;
	int u = -1;

	if (bytes < 1024) {
		put_fmt(o, "%llu B", (unsigned long long)bytes);
		return;
	}
	while (v >= 1023.95 && u < 5) {
		v /= 1024;
		u++;
	}
	tenths = (uint64_t)(v * 10 + 0.5);
	put_fmt(o, "%llu.%llu %s", (unsigned long long)(tenths / 10),
		(unsigned long long)(tenths % 10), unit[u]);
}

/* part/whole as "98.5%". */
static void put_percent(struct out *o, uint64_t part, uint64_t whole)
{
	uint64_t tenths = whole ? (uint64_t)((double)part * 1000 / (double)whole + 0.5) : 0;

	put_fmt(o, "%llu.%llu%%", (unsigned long long)(tenths / 10),
		(unsigned long long)(tenths % 10));
}

/* A ratio in [0, 1] as "0.941176", the way the command's JSON writes it (%.6f). */
static void put_ratio(struct out *o, double r)
{
	uint64_t millionths = (uint64_t)(r * 1e6 + 0.5);
	char frac[7];

	for (int k = 5; k >= 0; k--) {
		frac[k] = (char)('0' + millionths % 10);
		millionths /= 10;
	}
	frac[6] = 0;
	put_fmt(o, "%llu.%s", (unsigned long long)millionths, frac);
}

/* Length of the UTF-8 sequence at s (at most n bytes), 0 if it is not valid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	/* No overlong forms, no surrogates, nothing above U+10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if ((s[k] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* A JSON string; bytes that are not UTF-8 (a name cut in the middle of a
 * character) become '?', so that every reader can parse the line. */
static void put_json_string(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	put_char(o, '"');
	while (n) {
		size_t len = utf8_len(p, n);

		if (len == 0) {
			put_char(o, '?');
			len = 1;
		} else if (*p == '"' || *p == '\\') {
			put_char(o, '\\');
			put_char(o, (char)*p);
		} else if (*p < 0x20 || *p == 0x7f) {
			put_fmt(o, "\\u00%c%c", "0123456789abcdef"[*p >> 4], "0123456789abcdef"[*p & 15]);
		} else {
			for (size_t k = 0; k < len; k++)
				put_char(o, (char)p[k]);
		}
		p += len;
		n -= len;
	}
	put_char(o, '"');
}

/* Control characters shown as '?', so that a message stays one line. */
static void one_line(struct out *o, size_t from)
{
	for (size_t k = from; k < o->len; k++)
		if ((unsigned char)o->buf[k] < 0x20 || o->buf[k] == 0x7f)
			o->buf[k] = '?';
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* ---------- messages ---------- */

/* "superpage: [pid N: ]MESSAGE\n" on stderr in one write. */
static void say(bool with_pid, const char *fmt, va_list ap)
{
	char buf[MSG_MAX];
	struct out o = { buf, 0, sizeof buf - 1, false };
	size_t from;

	put_str(&o, "superpage: ");
	if (with_pid)
		put_fmt(&o, "pid %d: ", (int)getpid());
	from = o.len;
	put_vfmt(&o, fmt, ap);
	one_line(&o, from);
	if (o.cut)
		memcpy(buf + o.len - 3, "...", 3);
	buf[o.len++] = '\n';
	write_all(2, buf, o.len);
}

void rt_say(const char *fmt, ...)
{
	int e = errno;
	va_list ap;

	va_start(ap, fmt);
	say(false, fmt, ap);
	va_end(ap);
	errno = e;
}

void rt_verbose(int level, const char *fmt, ...)
{
	int e = errno;
	const struct sp_options *opt = rt_options();
	va_list ap;

	if (opt && opt->verbose >= level) {
		va_start(ap, fmt);
		say(false, fmt, ap);
		va_end(ap);
	}
	errno = e;
}

_Static_assert(SP_BACKING_COUNT * SP_FALL_COUNT <= 64, "one bit per (rung, reason)");

/* The (rung, reason) pairs said already, and the process they were said in: a
 * forked child starts afresh. */
static _Atomic uint64_t falls_said;
static _Atomic int falls_pid;

/* The rung below on the ladder 1G -> 2M -> THP -> base pages. */
static const char *rung_below(enum sp_backing rung)
{
	switch (rung) {
	case SP_BACKING_1G:
		return "2m";
	case SP_BACKING_2M:
		return "thp";
	case SP_BACKING_THP:
		return "4k";
	default:
		return NULL;
	}
}

static void say_pid(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_pid(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(true, fmt, ap);
	va_end(ap);
}

void rt_fall(enum sp_backing rung, enum sp_fall why)
{
	int e = errno;
	const struct sp_options *opt = rt_options();
	uint64_t bit;
	int me;

	if (!opt || opt->verbose < 1 || (unsigned)rung >= SP_BACKING_COUNT ||
	    (unsigned)why >= SP_FALL_COUNT)
		goto out;
	me = (int)getpid();
	if (atomic_load_explicit(&falls_pid, memory_order_acquire) != me) {
		atomic_store(&falls_said, 0);
		atomic_store_explicit(&falls_pid, me, memory_order_release);
	}
	bit = 1ull << ((unsigned)rung * SP_FALL_COUNT + (unsigned)why);
	if (atomic_fetch_or(&falls_said, bit) & bit)
		goto out;
	if (rung_below(rung))
		say_pid("%s unavailable (%s), falling back to %s", sp_backing_name(rung),
			sp_fall_name(why), rung_below(rung));
	else
		say_pid("%s unavailable (%s), no rung below it", sp_backing_name(rung),
			sp_fall_name(why));
out:
	errno = e;
}

void rt_abort(const char *fmt, ...)
{
	struct sigaction sa;
	sigset_t set;
	va_list ap;

	va_start(ap, fmt);
	say(true, fmt, ap);
	va_end(ap);
	/* A program's SIGABRT handler must not run on a broken heap, nor a mask hide it. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGABRT);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	abort();
}

/* ---------- the account at exit ---------- */

struct account {
	int pid;
	char comm[17];
	struct rt_stats st;
	struct rt_shm_stats shm;  /* --shm: shared memory on hugetlb, and its falls */
	struct rt_text_stats text; /* --text: text and data moved to huge pages */
	struct rt_stack_stats stacks; /* --stacks: thread stacks on THP, and their falls */
	struct sp_coverage cov;
	int cov_err;         /* sp_coverage's error, 0 if the coverage was read */
	uint64_t hwm;        /* peak resident set (VmHWM; hugetlb is not in it), 0 if unknown */
};

/* VmHWM of /proc/self/status in bytes, 0 if it cannot be read: at exit a program
 * has often freed most of its memory, and the peak says how much it had. */
static uint64_t read_hwm(void)
{
	char buf[4096];
	size_t len = 0;
	ssize_t n;
	const char *p;
	uint64_t kb = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (len < sizeof buf - 1) {
		n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = 0;
	p = strstr(buf, "\nVmHWM:");
	if (!p)
		return 0;
	for (p += 7; *p == ' ' || *p == '\t'; p++)
		;
	for (; *p >= '0' && *p <= '9'; p++)
		kb = kb * 10 + (uint64_t)(*p - '0');
	return kb << 10;
}

static void account_read(struct account *a)
{
	memset(a, 0, sizeof *a);
	a->pid = (int)getpid();
	if (prctl(PR_GET_NAME, (unsigned long)a->comm, 0, 0, 0) < 0)
		a->comm[0] = 0;
	a->comm[16] = 0;
	rt_stats_get(&a->st);
	rt_shm_stats_get(&a->shm);
	rt_text_stats_get(&a->text);
	rt_stack_stats_get(&a->stacks);
	rt_brk_stats(&a->st);
	a->cov_err = sp_coverage(0, &a->cov);
	if (a->cov_err < 0)
		memset(&a->cov, 0, sizeof a->cov);
	a->hwm = read_hwm();
}

/* The rungs units can have, in the order of the JSON and the text. */
static const enum sp_backing unit_rungs[] = { SP_BACKING_4K, SP_BACKING_THP, SP_BACKING_2M,
					      SP_BACKING_1G };
#define N_UNIT_RUNGS (sizeof unit_rungs / sizeof unit_rungs[0])

/* Falls by rung and reason, as "rung/reason":N pairs (JSON) or " rung reason N"
 * (text); false if there were none. */
static bool put_rung_falls(struct out *o, const uint64_t (*falls)[SP_FALL_COUNT], bool json)
{
	bool any = false;

	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++) {
			if (!falls[b][f])
				continue;
			put_fmt(o, json ? "%s\"%s/%s\":%llu" : "%s %s %s %llu", any ? "," : "",
				sp_backing_name((enum sp_backing)b), sp_fall_name((enum sp_fall)f),
				(unsigned long long)falls[b][f]);
			any = true;
		}
	return any;
}

/* The falls of --shm or --stacks by reason, as "reason":N pairs (JSON) or " reason N" (text). */
static bool put_shm_falls(struct out *o, const uint64_t *falls, bool json)
{
	bool any = false;

	for (int f = 0; f < SP_FALL_COUNT; f++) {
		if (!falls[f])
			continue;
		put_fmt(o, json ? "%s\"%s\":%llu" : "%s %s %llu", any ? "," : "",
			sp_fall_name((enum sp_fall)f), (unsigned long long)falls[f]);
		any = true;
	}
	return any;
}

static void report_json(struct out *o, const struct account *a)
{
	const struct rt_stats *st = &a->st;
	bool first_rung = true;

	put_fmt(o, "{\"pid\":%d,\"comm\":", a->pid);
	put_json_string(o, a->comm);
	put_fmt(o, ",\"rss_bytes\":%llu,\"huge_bytes\":%llu,\"coverage\":",
		(unsigned long long)a->cov.rss_bytes, (unsigned long long)a->cov.huge_bytes);
	put_ratio(o, sp_coverage_ratio(&a->cov));
	put_str(o, ",\"regions\":{");
	for (int r = 0; r < SP_REGION_COUNT; r++) {
		const struct sp_usage *u = &a->cov.region[r];
		put_fmt(o, "%s\"%s\":{\"bytes\":%llu,\"huge_bytes\":%llu,\"not_huge\":{", r ? "," : "",
			sp_region_name((enum sp_region)r), (unsigned long long)u->bytes,
			(unsigned long long)u->huge_bytes);
		for (int w = 0, n = 0; w < SP_WHY_COUNT; w++)
			if (u->not_huge[w])
				put_fmt(o, "%s\"%s\":%llu", n++ ? "," : "", sp_why_name((enum sp_why)w),
					(unsigned long long)u->not_huge[w]);
		put_str(o, "}}");
	}
	put_fmt(o, "},\"hugetlb_bytes\":%llu,\"thp_bytes\":%llu,\"vm_hwm_bytes\":%llu",
		(unsigned long long)a->cov.hugetlb_bytes, (unsigned long long)a->cov.thp_bytes,
		(unsigned long long)a->hwm);
	if (a->cov_err < 0)
		put_fmt(o, ",\"coverage_errno\":%d", -a->cov_err);
	put_fmt(o, ",\"heap\":{\"in_use\":%llu,\"peak\":%llu,\"mallocs\":%llu,\"frees\":%llu,\"units\":{",
		(unsigned long long)st->in_use, (unsigned long long)st->peak_in_use,
		(unsigned long long)st->mallocs, (unsigned long long)st->frees);
	for (size_t k = 0; k < N_UNIT_RUNGS; k++)
		put_fmt(o, "%s\"%s\":%llu", k ? "," : "", sp_backing_name(unit_rungs[k]),
			(unsigned long long)st->units[unit_rungs[k]]);
	put_fmt(o, "},\"units_peak\":%llu,\"large_blocks\":%llu,\"large_bytes\":%llu,"
		"\"mremaps\":%llu,\"released_units\":%llu,\"reused_units\":%llu",
		(unsigned long long)st->units_peak, (unsigned long long)st->large_blocks,
		(unsigned long long)st->large_bytes, (unsigned long long)st->mremaps,
		(unsigned long long)st->released_units, (unsigned long long)st->reused_units);
	put_fmt(o, ",\"unit_used_bytes\":%llu,\"unit_free_bytes\":%llu,\"full_unit_bytes\":%llu,"
		"\"kept_units\":%llu",
		(unsigned long long)st->unit_used_bytes, (unsigned long long)st->unit_free_bytes,
		(unsigned long long)st->full_unit_bytes, (unsigned long long)st->kept_units);
	put_fmt(o, "},\"mmaps\":{\"small\":%llu,\"small_bytes\":%llu,\"large\":%llu,"
		"\"packed\":%llu,\"packed_collapsed\":%llu,\"packed_refused\":%llu}",
		(unsigned long long)st->small_mmaps, (unsigned long long)st->small_mmap_bytes,
		(unsigned long long)st->large_mmaps, (unsigned long long)st->packed,
		(unsigned long long)st->packed_collapsed, (unsigned long long)st->packed_refused);
	put_fmt(o, ",\"brk\":{\"bytes\":%llu,\"peak\":%llu,\"emulated\":%s},\"falls\":{",
		(unsigned long long)st->brk_bytes, (unsigned long long)st->brk_peak,
		st->brk_emulated ? "true" : "false");
	for (int b = 0; b < SP_BACKING_COUNT; b++) {
		bool first_why = true;

		for (int f = 0; f < SP_FALL_COUNT; f++) {
			if (!st->falls[b][f])
				continue;
			if (first_why)
				put_fmt(o, "%s\"%s\":{", first_rung ? "" : ",",
					sp_backing_name((enum sp_backing)b));
			put_fmt(o, "%s\"%s\":%llu", first_why ? "" : ",", sp_fall_name((enum sp_fall)f),
				(unsigned long long)st->falls[b][f]);
			first_why = first_rung = false;
		}
		if (!first_why)
			put_char(o, '}');
	}
	put_fmt(o, "},\"shm\":{\"segments\":%llu,\"segment_bytes\":%llu,\"maps\":%llu,"
		"\"map_bytes\":%llu,\"segment_falls\":{", (unsigned long long)a->shm.segments,
		(unsigned long long)a->shm.segment_bytes, (unsigned long long)a->shm.maps,
		(unsigned long long)a->shm.map_bytes);
	put_shm_falls(o, a->shm.segment_falls, true);
	put_str(o, "},\"map_falls\":{");
	put_shm_falls(o, a->shm.map_falls, true);
	put_fmt(o, "}},\"text\":{\"objects\":%llu,\"text_bytes\":%llu,\"text_moved\":%llu,"
		"\"text_hugetlb\":%llu,\"text_page_cache\":%llu,\"data_moved\":%llu,"
		"\"unaligned_segments\":%llu,\"perf_map_symbols\":%llu,\"falls\":{",
		(unsigned long long)a->text.objects, (unsigned long long)a->text.text_bytes,
		(unsigned long long)a->text.text_moved, (unsigned long long)a->text.text_hugetlb,
		(unsigned long long)a->text.text_cached, (unsigned long long)a->text.data_moved,
		(unsigned long long)a->text.unaligned, (unsigned long long)a->text.perf_map_symbols);
	put_rung_falls(o, a->text.falls, true);
	put_fmt(o, "}},\"stacks\":{\"threads\":%llu,\"bytes\":%llu,\"maps\":%llu,\"reused\":%llu,"
		"\"unmaps\":%llu,\"live\":%llu,\"cached\":%llu,\"falls\":{",
		(unsigned long long)a->stacks.threads, (unsigned long long)a->stacks.bytes,
		(unsigned long long)a->stacks.maps, (unsigned long long)a->stacks.reused,
		(unsigned long long)a->stacks.unmaps, (unsigned long long)a->stacks.live,
		(unsigned long long)a->stacks.cached);
	put_shm_falls(o, a->stacks.falls, true);
	put_str(o, "}}}\n");
}

/* Starts a line of the text report: "superpage: pid N (comm): ". */
static void line_start(struct out *o, const struct account *a)
{
	size_t from;

	put_fmt(o, "superpage: pid %d", a->pid);
	if (a->comm[0]) {
		put_str(o, " (");
		from = o->len;
		put_str(o, a->comm);
		one_line(o, from);
		put_char(o, ')');
	}
	put_str(o, ": ");
}

/* "not huge, why: anon 70.0 MiB small, 2.0 MiB partial; text 3.9 MiB file": every
 * resident byte not on huge pages, by region, with its reason (sp_why). */
static void report_why(struct out *o, const struct account *a)
{
	bool any = false;
	for (int r = 0; r < SP_REGION_COUNT; r++) {
		const struct sp_usage *u = &a->cov.region[r];
		bool first = true;
		for (int w = 0; w < SP_WHY_COUNT; w++) {
			if (!u->not_huge[w])
				continue;
			if (!any) {
				line_start(o, a);
				put_str(o, "not huge, why:");
			}
			put_fmt(o, "%s", first ? (any ? "; " : " ") : ", ");
			if (first)
				put_fmt(o, "%s ", sp_region_name((enum sp_region)r));
			put_human(o, u->not_huge[w]);
			put_fmt(o, " %s", sp_why_name((enum sp_why)w));
			first = false;
			any = true;
		}
	}
	if (any)
		put_char(o, '\n');
}

static void report_text(struct out *o, const struct account *a)
{
	const struct rt_stats *st = &a->st;
	bool any = false;
	/* 2m, 1g: the break and large mappings on hugetlb pages while the pool had them */
	bool tlb = rt_options()->backing == SP_BACKING_2M || rt_options()->backing == SP_BACKING_1G;

	line_start(o, a);
	if (a->cov_err < 0) {
		put_fmt(o, "cannot read /proc/self/smaps (errno %d): no coverage\n", -a->cov_err);
	} else {
		put_human(o, a->cov.rss_bytes);
		put_str(o, " resident, ");
		put_human(o, a->cov.huge_bytes);
		put_str(o, " on huge pages (");
		put_percent(o, a->cov.huge_bytes, a->cov.rss_bytes);
		put_str(o, "): hugetlb ");
		put_human(o, a->cov.hugetlb_bytes);
		put_str(o, ", THP ");
		put_human(o, a->cov.thp_bytes);
		if (a->hwm) {
			put_str(o, "; peak RSS ");
			put_human(o, a->hwm);
		}
		put_char(o, '\n');

		line_start(o, a);
		put_str(o, "resident by region:");
		for (int r = 0; r < SP_REGION_COUNT; r++) {
			const struct sp_usage *u = &a->cov.region[r];

			/* heap and anon always: they are what the runtime backs. */
			if (!u->bytes && r != SP_REGION_HEAP && r != SP_REGION_ANON)
				continue;
			put_fmt(o, "%s %s ", any ? "," : "", sp_region_name((enum sp_region)r));
			put_human(o, u->bytes);
			put_str(o, " (");
			put_percent(o, u->huge_bytes, u->bytes);
			put_str(o, " huge)");
			any = true;
		}
		put_char(o, '\n');
		report_why(o, a);
	}

	line_start(o, a);
	put_str(o, "malloc: ");
	put_human(o, st->in_use);
	put_str(o, " in use at exit, peak ");
	put_human(o, st->peak_in_use);
	put_fmt(o, "; %llu mallocs, %llu frees", (unsigned long long)st->mallocs,
		(unsigned long long)st->frees);
	if (st->brk_used) {
		put_str(o, "; program break ");
		put_human(o, st->brk_bytes);
		put_str(o, " (peak ");
		put_human(o, st->brk_peak);
		put_str(o, !st->brk_emulated ? ", the kernel's)"
			   : tlb ? ", emulated on hugetlb)" : ", emulated on THP)");
	}
	put_char(o, '\n');

	line_start(o, a);
	put_str(o, "2 MiB units:");
	any = false;
	for (size_t k = 0; k < N_UNIT_RUNGS; k++) {
		if (!st->units[unit_rungs[k]])
			continue;
		put_fmt(o, "%s %llu %s", any ? "," : "", (unsigned long long)st->units[unit_rungs[k]],
			sp_backing_name(unit_rungs[k]));
		any = true;
	}
	put_fmt(o, "%s (peak %llu, %llu given back, %llu reused); %llu large blocks (",
		any ? "" : " none", (unsigned long long)st->units_peak,
		(unsigned long long)st->released_units, (unsigned long long)st->reused_units,
		(unsigned long long)st->large_blocks);
	put_human(o, st->large_bytes);
	put_fmt(o, "), %llu mremaps; mmaps: %llu small from units (", (unsigned long long)st->mremaps,
		(unsigned long long)st->small_mmaps);
	put_human(o, st->small_mmap_bytes);
	put_fmt(o, " now), %llu large %s", (unsigned long long)st->large_mmaps,
		tlb ? "(on hugetlb units while the pool had pages)" : "aligned");
	if (st->packed)
		put_fmt(o, ", %llu packed (%llu units collapsed, %llu refused)",
			(unsigned long long)st->packed, (unsigned long long)st->packed_collapsed,
			(unsigned long long)st->packed_refused);
	put_char(o, '\n');

	/* The memory of the units: in use, free inside units in use, in full units. */
	line_start(o, a);
	put_str(o, "in units: ");
	put_human(o, st->unit_used_bytes);
	put_str(o, " in use, ");
	put_human(o, st->unit_free_bytes);
	put_str(o, " free inside units in use (");
	put_percent(o, st->unit_free_bytes, st->unit_used_bytes + st->unit_free_bytes);
	put_str(o, " of their memory), ");
	put_percent(o, st->full_unit_bytes, st->unit_used_bytes);
	put_fmt(o, " of what is in use in full units; %llu empty units kept\n",
		(unsigned long long)st->kept_units);

	if (rt_options()->shm) {
		line_start(o, a);
		put_fmt(o, "shm on 2 MiB hugetlb: %llu SysV segments (",
			(unsigned long long)a->shm.segments);
		put_human(o, a->shm.segment_bytes);
		put_fmt(o, "), %llu shared mappings (", (unsigned long long)a->shm.maps);
		put_human(o, a->shm.map_bytes);
		put_str(o, "); segments left on base pages:");
		if (!put_shm_falls(o, a->shm.segment_falls, false))
			put_str(o, " none");
		put_str(o, "; mappings:");
		if (!put_shm_falls(o, a->shm.map_falls, false))
			put_str(o, " none");
		put_char(o, '\n');
	}

	if (rt_options()->text != SP_TEXT_NO) {
		line_start(o, a);
		put_str(o, "text on huge pages: ");
		put_human(o, a->text.text_moved + a->text.text_cached);
		put_str(o, " of ");
		put_human(o, a->text.text_bytes);
		put_str(o, " (");
		put_human(o, a->text.text_hugetlb);
		put_str(o, " hugetlb, ");
		put_human(o, a->text.text_cached);
		put_fmt(o, " left in the page cache) in %llu objects, data ",
			(unsigned long long)a->text.objects);
		put_human(o, a->text.data_moved);
		put_fmt(o, " on THP; %llu segments unaligned; left as they were:",
			(unsigned long long)a->text.unaligned);
		if (!put_rung_falls(o, a->text.falls, false))
			put_str(o, " none");
		put_char(o, '\n');
	}

	if (rt_options()->stacks) {
		line_start(o, a);
		put_fmt(o, "thread stacks on THP: %llu threads (", (unsigned long long)a->stacks.threads);
		put_human(o, a->stacks.bytes);
		put_fmt(o, "), %llu mapped, %llu reused, %llu unmapped; left to glibc:",
			(unsigned long long)a->stacks.maps, (unsigned long long)a->stacks.reused,
			(unsigned long long)a->stacks.unmaps);
		if (!put_shm_falls(o, a->stacks.falls, false))
			put_str(o, " none");
		put_char(o, '\n');
	}

	line_start(o, a);
	put_str(o, "fallbacks:");
	put_str(o, put_rung_falls(o, st->falls, false) ? "\n" : " none\n");
}

void rt_report(int fd, bool json)
{
	int e = errno;
	struct account a;
	char buf[REPORT_MAX];
	struct out o = { buf, 0, sizeof buf, false };

	account_read(&a);
	if (json)
		report_json(&o, &a);
	else
		report_text(&o, &a);
	/* Cut short, it still ends in a newline; JSON cut short is no JSON, so say so. */
	if (o.cut) {
		o.len = o.cap - 1;
		buf[o.len++] = '\n';
		if (json) {
			o.len = 0;
			o.cut = false;
			put_fmt(&o, "{\"pid\":%d,\"error\":\"report too long\"}\n", a.pid);
		}
	}
	write_all(fd, buf, o.len);
	errno = e;
}

/* A copy of the stderr the program started with, for the account at exit: some
 * programs close stderr before they end (GNU coreutils do, in an atexit handler
 * that runs before this one). The copy is kept only with SUPERPAGE_STATS=yes, is
 * closed on exec, and is used only while it is still that same file. */
static int stderr_copy = -1;
static dev_t stderr_dev;
static ino_t stderr_ino;

static void keep_stderr(void)
{
	const char *v = getenv("SUPERPAGE_STATS");
	struct stat st;
	bool yes;
	int fd;

	if (!v || sp_parse_bool(v, &yes) < 0 || !yes || fstat(2, &st) < 0)
		return;
	/* High, out of the way of the numbers programs pick for themselves. */
	fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
	if (fd < 0)
		fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return;
	stderr_dev = st.st_dev;
	stderr_ino = st.st_ino;
	stderr_copy = fd;
}

/* Where the text account goes: the copy of stderr while it is still that file. */
static int report_stderr(void)
{
	struct stat st;

	if (stderr_copy >= 0 && fstat(stderr_copy, &st) == 0 && st.st_dev == stderr_dev &&
	    st.st_ino == stderr_ino)
		return stderr_copy;
	return 2;
}

/* At exit, once per process: the account on stderr, or appended to the stats file.
 * The allocator's destructor may call it too; only the first call writes. */
static _Atomic int reported_pid;

void rt_report_at_exit(void)
{
	int e = errno, me = (int)getpid(), fd;
	const struct sp_options *opt = rt_options();

	if (!opt || !opt->stats)
		goto out;
	if (atomic_exchange(&reported_pid, me) == me)
		goto out;
	if (!opt->stats_file[0]) {
		rt_report(report_stderr(), false);
		goto out;
	}
	fd = open(opt->stats_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		rt_say("pid %d: cannot write the account to %s (errno %d)", me, opt->stats_file, errno);
		goto out;
	}
	rt_report(fd, true);
	close(fd);
out:
	errno = e;
}

/* Registered from a constructor, not from inside malloc: atexit may allocate when
 * its first block of handlers is full, and this early it never is. */
__attribute__((constructor)) static void report_init(void)
{
	keep_stderr();
	atexit(rt_report_at_exit);
}

/* ---------- the account while the program runs ---------- */

#define LIVE_NS 100000000ull /* published every 0.1 s the heap is used, and when its
                                units change (the account walks nothing: cheap) */
static struct sp_live *live_page;
static int32_t live_pid;
static _Atomic bool live_busy;                 /* a thread publishes */
static _Atomic uint64_t live_at, live_events;  /* the last publication */

/* The page is had at start, before the program runs: a process under a seccomp
 * filter (it may kill on memfd_create) publishes nothing, and publishing itself
 * makes no system call (the clock is the vDSO's). */
void rt_live_init(void)
{
	if (sp_os->prctl(PR_GET_SECCOMP, 0) != 0) /* (in a mode, or cannot say) */
		return;
	live_pid = (int32_t)getpid();
	live_page = sp_live_map();
}

void rt_live_fork_child(void)
{
	if (live_page) {
		live_pid = (int32_t)getpid();
		atomic_store(&live_at, 0);
	}
}

void rt_live_tick(void)
{
	if (!live_page)
		return;
	uint64_t now = sp_os->now_ns(), events = pages_unit_events();
	/* Read first, so that threads share the flag's line only when it is time. */
	if ((now - atomic_load_explicit(&live_at, memory_order_relaxed) < LIVE_NS &&
	     events == atomic_load_explicit(&live_events, memory_order_relaxed)) ||
	    atomic_exchange_explicit(&live_busy, true, memory_order_acquire))
		return;
	atomic_store_explicit(&live_at, now, memory_order_relaxed);
	atomic_store_explicit(&live_events, events, memory_order_relaxed);
	struct rt_stats st;
	struct sp_live s;
	rt_stats_get(&st);
	memset(&s, 0, sizeof s);
	s.pid = live_pid;
	s.at_ns = now;
	s.in_use = st.in_use;
	s.peak_in_use = st.peak_in_use;
	s.mallocs = st.mallocs;
	s.frees = st.frees;
	memcpy(s.units, st.units, sizeof s.units);
	s.units_peak = st.units_peak;
	s.large_blocks = st.large_blocks;
	s.large_bytes = st.large_bytes;
	s.released_units = st.released_units;
	s.reused_units = st.reused_units;
	s.unit_used_bytes = st.unit_used_bytes;
	s.unit_free_bytes = st.unit_free_bytes;
	s.full_unit_bytes = st.full_unit_bytes;
	s.kept_units = st.kept_units;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++)
			s.falls += st.falls[b][f];
	sp_live_put(live_page, &s);
	atomic_store_explicit(&live_busy, false, memory_order_release);
}
