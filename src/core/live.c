/* live.c - pages a process publishes for superpage stat to read while it runs (the
 * heap's account of a process under superpage run, superpage run's watch): each a
 * private mapping of a named memfd (so that it shows by name in /proc/PID/maps, and a
 * forked child writes its own copy), read through /proc/PID/mem. A sequence count,
 * odd while the page is written, lets the reader take a consistent copy without a
 * lock. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define LIVE_MAGIC 0x53504c56u /* "SPLV" */
#define LIVE_PAGE 4096

/* ---------- a page published for other processes to read ---------- */

_Static_assert(offsetof(struct sp_live, seq) == offsetof(struct sp_pub_head, seq) &&
		       offsetof(struct sp_live, version) == offsetof(struct sp_pub_head, version),
	       "the live page starts with a published page's head");

void *sp_pub_map(const char *name, size_t len)
{
	static const char zero[LIVE_PAGE];
	int fd = sp_os->memfd_create(name, MFD_CLOEXEC);
	void *p = NULL;
	if (fd < 0)
		return NULL;
	for (size_t done = 0; done < len; done += sizeof zero)
		if (sp_os->write(fd, zero, sizeof zero) != (ssize_t)sizeof zero) {
			sp_os->close(fd);
			return NULL;
		}
	if (sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0, &p) < 0)
		p = NULL;
	sp_os->close(fd);
	return p;
}

void sp_pub_put(void *page, const void *snap, size_t len)
{
	struct sp_pub_head *h = page;
	const struct sp_pub_head *from = snap;
	uint64_t seq = __atomic_load_n(&h->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&h->seq, seq | 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	h->magic = from->magic;
	h->version = from->version;
	memcpy((char *)page + sizeof *h, (const char *)snap + sizeof *h, len - sizeof *h);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&h->seq, (seq | 1) + 1, __ATOMIC_RELAXED);
}

/* The start of the mapping of a memfd named name in /proc/PID/maps, or -errno. */
static int pub_find(pid_t pid, const char *name, uint64_t *at)
{
	char path[64], want[80];
	struct sp_lines l;
	const char *line;
	int r, found = -ENOENT;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	snprintf(want, sizeof want, "/memfd:%s", name);
	int fd = sp_os->open(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	sp_lines_init(&l, fd);
	while (found == -ENOENT && (r = sp_lines_next(&l, &line)) > 0) {
		char *end;
		*at = strtoull(line, &end, 16);
		if (end > line && *end == '-' && strstr(line, want))
			found = 0;
	}
	sp_os->close(fd);
	return found;
}

int sp_pub_read(pid_t pid, const char *name, void *out, size_t len, uint32_t magic,
		uint32_t version)
{
	struct sp_pub_head *h = out;
	uint64_t at;
	char path[64];
	int r = pub_find(pid, name, &at);
	if (r < 0)
		return r;
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	int fd = sp_os->open(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	r = -EAGAIN;
	for (int tries = 0; tries < 16 && r == -EAGAIN; tries++) {
		uint64_t seq;
		ssize_t n = sp_os->pread(fd, out, len, (off_t)at);
		if (n < 0) {
			r = (int)n;
			break;
		}
		if (n != (ssize_t)len || h->magic != magic || h->version != version) {
			r = -ENOENT;
			break;
		}
		/* The count again: unchanged and even, the copy is whole. */
		if ((h->seq & 1) == 0 &&
		    sp_os->pread(fd, &seq, sizeof seq, (off_t)(at + offsetof(struct sp_pub_head, seq))) ==
			    (ssize_t)sizeof seq && seq == h->seq)
			r = 0;
	}
	sp_os->close(fd);
	return r;
}

/* ---------- the heap's account ---------- */

struct sp_live *sp_live_map(void)
{
	return sp_pub_map(SP_LIVE_NAME, LIVE_PAGE);
}

void sp_live_put(struct sp_live *page, const struct sp_live *snap)
{
	struct sp_live body = *snap;
	body.magic = LIVE_MAGIC;
	body.version = SP_LIVE_VERSION;
	sp_pub_put(page, &body, sizeof body);
}

int sp_live_read(pid_t pid, struct sp_live *out)
{
	int r = sp_pub_read(pid, SP_LIVE_NAME, out, sizeof *out, LIVE_MAGIC, SP_LIVE_VERSION);
	/* (A forked child that has not published yet holds its parent's copy.) */
	if (r == 0 && out->pid != (int32_t)pid)
		r = -ENOENT;
	return r;
}

/* The account in a published page l, published age_ns ago. */
static void account_from(const struct sp_live *lp, uint64_t age_ns, struct sp_account *out)
{
	const struct sp_live l = *lp;
	memset(out, 0, sizeof *out);
	out->pid = (pid_t)l.pid;
	out->age_ns = age_ns;
	out->in_use = l.in_use;
	out->peak_in_use = l.peak_in_use;
	out->mallocs = l.mallocs;
	out->frees = l.frees;
	memcpy(out->units, l.units, sizeof out->units);
	out->units_peak = l.units_peak;
	out->large_blocks = l.large_blocks;
	out->large_bytes = l.large_bytes;
	out->released_units = l.released_units;
	out->reused_units = l.reused_units;
	out->unit_used_bytes = l.unit_used_bytes;
	out->unit_free_bytes = l.unit_free_bytes;
	out->full_unit_bytes = l.full_unit_bytes;
	out->kept_units = l.kept_units;
	out->falls = l.falls;
	memcpy(out->falls_by, l.falls_by, sizeof out->falls_by);
}

int sp_account_read(pid_t pid, struct sp_account *out)
{
	struct sp_live l;
	int r = sp_live_read(pid, &l);
	memset(out, 0, sizeof *out);
	if (r < 0)
		return r;
	uint64_t now = sp_os->now_ns();
	account_from(&l, now > l.at_ns ? now - l.at_ns : 0, out);
	return 0;
}

/* ---------- superpage run's page ---------- */

int sp_run_page_new(void **page)
{
	static const char zero[LIVE_PAGE];
	_Static_assert(sizeof(struct sp_run_page) <= LIVE_PAGE, "the run page is one page");
	int fd = sp_os->memfd_create(SP_RUN_NAME, MFD_CLOEXEC);
	if (fd < 0)
		return fd;
	int r = sp_os->write(fd, zero, sizeof zero) == (ssize_t)sizeof zero ? 0 : -EIO;
	if (r == 0)
		r = sp_os->mmap(NULL, LIVE_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0, page);
	if (r < 0) {
		sp_os->close(fd);
		return r;
	}
	return fd;
}

int sp_run_page_read(const void *page, pid_t pid, struct sp_run_report *out)
{
	struct sp_run_page p;
	memcpy(&p, page, sizeof p);
	memset(out, 0, sizeof *out);
	if (p.magic != SP_RUN_MAGIC || p.version != SP_RUN_VERSION || p.pid != (int32_t)pid)
		return -ENOENT;
	out->pid = (pid_t)p.pid;
	memcpy(out->comm, p.comm, sizeof p.comm);
	out->comm[16] = 0;
	out->account_written = p.account_written != 0;
	out->stats_errno = p.stats_errno;
	/* (The writer is gone: no count to wait on; a page it left half written says
	 * no account.) */
	out->has_account = p.live.magic == LIVE_MAGIC && p.live.version == SP_LIVE_VERSION &&
			   (p.live.seq & 1) == 0 && p.live.pid == p.pid;
	if (out->has_account)
		account_from(&p.live, 0, &out->account);
	return 0;
}

/* "FD:PID" or "FD:PID:HOLDER" from the environment (holder 0: none), or false. */
static bool run_page_env(int *fd, long *pid, long *holder)
{
	const char *v = getenv(SP_RUN_PAGE_ENV);
	char *end;
	if (!v)
		return false;
	long f = strtol(v, &end, 10);
	if (end == v || *end != ':' || f < 0 || f > 1 << 20)
		return false;
	const char *q = end + 1;
	*pid = strtol(q, &end, 10);
	*fd = (int)f;
	*holder = 0;
	if (end == q)
		return false;
	if (*end == ':') {
		q = end + 1;
		*holder = strtol(q, &end, 10);
		if (end == q || *holder <= 0)
			return false;
	}
	return !*end;
}

/* Whether fd of process pid (0: this one) is the run page's memfd (an fd of that
 * number may have been closed and reused in between). */
static bool is_run_fd(long pid, int fd)
{
	char path[64], link[64];
	if (pid)
		snprintf(path, sizeof path, "/proc/%ld/fd/%d", pid, fd);
	else
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, link, sizeof link - 1);
	if (n <= 0)
		return false;
	link[n] = 0;
	return !strncmp(link, "/memfd:" SP_RUN_NAME " ", sizeof "/memfd:" SP_RUN_NAME " " - 1);
}

/* The page through the holder's fd (superpage run, or the watcher it left), which
 * no process of the program holds: opened, mapped and closed again. */
static struct sp_run_page *run_page_from(long holder, int fd)
{
	char path[64];
	void *p;
	if (!is_run_fd(holder, fd))
		return NULL;
	snprintf(path, sizeof path, "/proc/%ld/fd/%d", holder, fd);
	int f = sp_os->open(path, O_RDWR | O_CLOEXEC, 0);
	if (f < 0)
		return NULL;
	int r = sp_os->mmap(NULL, LIVE_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0, &p);
	sp_os->close(f);
	return r < 0 ? NULL : p;
}

struct sp_run_page *sp_run_page_attach(bool *root)
{
	int fd;
	long pid, holder;
	void *p = NULL;
	*root = false;
	if (!run_page_env(&fd, &pid, &holder))
		return NULL;
	bool mine = pid == (long)getpid(), own = is_run_fd(0, fd);
	if (own && sp_os->mmap(NULL, LIVE_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0, &p) < 0)
		p = NULL;
	/* An fd of the page that is not this process's to keep: mapped for the tree's
	 * falls, and closed. */
	if (own && !mine)
		sp_os->close(fd);
	if (!p && holder)
		p = run_page_from(holder, fd);
	if (!p || !mine)
		return p;
	/* The fd (if it came that way) stays open for this process's next image (a
	 * wrapper that execs the program); its children close it at their start. */
	struct sp_run_page *page = p;
	*root = true;
	/* (An image before this one, which executed this program, left its own; the
	 * tree's part is everyone's.) */
	memset(page, 0, offsetof(struct sp_run_page, tree));
	page->pid = (int32_t)pid;
	page->version = SP_RUN_VERSION;
	page->magic = SP_RUN_MAGIC;
	return page;
}

int sp_comm_read(pid_t pid, char *buf, size_t len)
{
	char path[64];
	if (len == 0)
		return -EINVAL;
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	ssize_t n = sp_read_file(path, buf, len);
	if (n < 0) {
		buf[0] = 0;
		return (int)n;
	}
	buf[strcspn(buf, "\n")] = 0;
	return (int)strlen(buf);
}
