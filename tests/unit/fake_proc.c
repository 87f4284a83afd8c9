/* fake_proc.c - other processes in the fake kernel, for promote: mappings, 2 MiB ranges, pidfds, process_madvise, PAGEMAP_SCAN. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_kernel.h"
#include "internal.h"

#define MAX_PROCS 8
#define MAX_PMAPS 32
#define MAX_UNITS 4096
#define MAX_CALLS 4096
#define PAGE 4096ull
#define TWO_M (2ull << 20)

struct pmap { uintptr_t start, end; char perms[5]; char path[64]; int flags; };
struct unit { uintptr_t a; int present; bool huge, hot, referenced; int err; uint64_t cost; };
struct proc {
	pid_t pid;
	bool live, thp_off, refs_cleared;
	int exit_after;            /* collapses before it ends (0: never) */
	int after_n;               /* collapses before after_fn is called (0: never) */
	void (*after_fn)(pid_t pid);
	struct pmap maps[MAX_PMAPS];
	int n_maps;
	struct unit units[MAX_UNITS];
	int n_units;
};

static struct {
	struct proc procs[MAX_PROCS];
	int n_procs;
	int madvise_err, pidfd_err;
	bool no_scan;
	uint64_t cost, slept;
	int calls, syscalls;
	uintptr_t order[MAX_CALLS];
} fp;

static struct proc *proc_of(pid_t pid)
{
	for (int i = 0; i < fp.n_procs; i++)
		if (fp.procs[i].pid == pid)
			return &fp.procs[i];
	return NULL;
}

static struct unit *unit_of(struct proc *p, uintptr_t a, bool make)
{
	a &= ~(TWO_M - 1);
	for (int i = 0; i < p->n_units; i++)
		if (p->units[i].a == a)
			return &p->units[i];
	if (!make || p->n_units == MAX_UNITS)
		return NULL;
	p->units[p->n_units] = (struct unit){ .a = a };
	return &p->units[p->n_units++];
}

static struct pmap *pmap_of(struct proc *p, uintptr_t a)
{
	for (int i = 0; i < p->n_maps; i++)
		if (p->maps[i].start <= a && a < p->maps[i].end)
			return &p->maps[i];
	return NULL;
}

/* ---------- controls ---------- */

void fkp_reset(void)
{
	memset(&fp, 0, sizeof fp);
}

void fk_proc(pid_t pid)
{
	struct proc *p = proc_of(pid);
	if (!p && fp.n_procs < MAX_PROCS)
		p = &fp.procs[fp.n_procs++];
	if (!p)
		return;
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->live = true;
	fk_pid_add(pid);
}

void fk_proc_exit(pid_t pid)
{
	struct proc *p = proc_of(pid);
	if (p)
		p->live = false;
	fk_pid_remove(pid);
}

void fk_proc_thp_off(pid_t pid, bool off)
{
	struct proc *p = proc_of(pid);
	if (p)
		p->thp_off = off;
}

void fk_proc_exit_after(pid_t pid, int n)
{
	struct proc *p = proc_of(pid);
	if (p)
		p->exit_after = n;
}

void fk_proc_after(pid_t pid, int n, void (*fn)(pid_t pid))
{
	struct proc *p = proc_of(pid);
	if (p) {
		p->after_n = n;
		p->after_fn = fn;
	}
}

void fk_proc_map(pid_t pid, uintptr_t start, size_t len, const char *perms, const char *path,
		 int flags)
{
	struct proc *p = proc_of(pid);
	if (!p || p->n_maps == MAX_PMAPS)
		return;
	struct pmap *m = &p->maps[p->n_maps++];
	*m = (struct pmap){ .start = start, .end = start + len, .flags = flags };
	snprintf(m->perms, sizeof m->perms, "%s", perms);
	snprintf(m->path, sizeof m->path, "%s", path);
	/* in address order, as smaps lists them */
	for (int i = p->n_maps - 1; i > 0 && p->maps[i].start < p->maps[i - 1].start; i--) {
		struct pmap t = p->maps[i];
		p->maps[i] = p->maps[i - 1];
		p->maps[i - 1] = t;
	}
}

void fk_proc_unmap(pid_t pid, uintptr_t start)
{
	struct proc *p = proc_of(pid);
	for (int i = 0; p && i < p->n_maps; i++)
		if (p->maps[i].start == start) {
			memmove(&p->maps[i], &p->maps[i + 1], (size_t)(p->n_maps - i - 1) * sizeof *p->maps);
			p->n_maps--;
			return;
		}
}

void fk_proc_range(pid_t pid, uintptr_t a, int present, bool huge, bool hot)
{
	struct proc *p = proc_of(pid);
	struct unit *u = p ? unit_of(p, a, true) : NULL;
	if (!u)
		return;
	u->present = huge ? 512 : present;
	u->huge = huge;
	u->hot = hot;
	u->referenced = present > 0;
}

void fk_proc_collapse_err(pid_t pid, uintptr_t a, int err)
{
	struct proc *p = proc_of(pid);
	struct unit *u = p ? unit_of(p, a, true) : NULL;
	if (u)
		u->err = err;
}

void fk_proc_collapse_cost_at(pid_t pid, uintptr_t a, uint64_t ns)
{
	struct proc *p = proc_of(pid);
	struct unit *u = p ? unit_of(p, a, true) : NULL;
	if (u)
		u->cost = ns;
}

void fk_proc_collapse_cost(uint64_t ns) { fp.cost = ns; }
void fk_process_madvise_error(int err) { fp.madvise_err = err; }
void fk_pidfd_error(int err) { fp.pidfd_err = err; }
void fk_pagemap_scan(bool on) { fp.no_scan = !on; }
int fk_collapse_calls(void) { return fp.calls; }
int fk_process_madvise_calls(void) { return fp.syscalls; }
uintptr_t fk_collapse_at(int i) { return i >= 0 && i < fp.calls && i < MAX_CALLS ? fp.order[i] : 0; }
uint64_t fk_slept_ns(void) { return fp.slept; }

bool fk_proc_huge(pid_t pid, uintptr_t a)
{
	struct proc *p = proc_of(pid);
	struct unit *u = p ? unit_of(p, a, false) : NULL;
	return u && u->huge;
}

/* ---------- generated files ---------- */

/* Bytes of [lo, hi) that the units hold: present (first pages of each unit), huge, referenced. */
static void usage_in(struct proc *p, uintptr_t lo, uintptr_t hi, uint64_t *rss, uint64_t *huge,
		     uint64_t *ref)
{
	*rss = *huge = *ref = 0;
	for (int i = 0; i < p->n_units; i++) {
		const struct unit *u = &p->units[i];
		uintptr_t s = u->a > lo ? u->a : lo, e = u->a + (uint64_t)u->present * PAGE;
		if (e > hi)
			e = hi;
		if (s >= e)
			continue;
		*rss += e - s;
		if (u->huge && u->a >= lo && u->a + TWO_M <= hi)
			*huge += TWO_M;
		if (u->referenced)
			*ref += e - s;
	}
}

struct text { char *p; size_t len, cap; };

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	char line[512];
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = (t->len + (size_t)n + 1) * 2;
		t->p = realloc(t->p, t->cap);
	}
	memcpy(t->p + t->len, line, (size_t)n + 1);
	t->len += (size_t)n;
}

static void gen_maps(struct proc *p, struct text *t, bool smaps)
{
	for (int i = 0; i < p->n_maps; i++) {
		const struct pmap *m = &p->maps[i];
		bool file = m->flags & FK_FILE;
		uint64_t rss, huge, ref;
		put(t, "%lx-%lx %s 00000000 %s %lu %s\n", (unsigned long)m->start,
		    (unsigned long)m->end, m->perms, file ? "08:01" : "00:00",
		    file ? 1234ul + (unsigned long)i : 0ul, m->path);
		if (!smaps)
			continue;
		usage_in(p, m->start, m->end, &rss, &huge, &ref);
		put(t, "Size:           %8llu kB\n", (unsigned long long)(m->end - m->start) >> 10);
		put(t, "KernelPageSize: %8llu kB\n", (m->flags & FK_HUGETLB) ? 2048ull : 4ull);
		put(t, "Rss:            %8llu kB\n", (unsigned long long)rss >> 10);
		put(t, "Referenced:     %8llu kB\n", (unsigned long long)ref >> 10);
		put(t, "Anonymous:      %8llu kB\n", file ? 0ull : (unsigned long long)rss >> 10);
		put(t, "AnonHugePages:  %8llu kB\n",
		    (m->flags & FK_HUGETLB) ? 0ull : (unsigned long long)huge >> 10);
		put(t, "Private_Hugetlb: %7llu kB\n",
		    (m->flags & FK_HUGETLB) ? (unsigned long long)rss >> 10 : 0ull);
		put(t, "VmFlags: rd wr mr mw me ac%s\n", (m->flags & FK_NH) ? " nh" : "");
	}
}

/* /proc/PID/status (the counters: resident and hugetlb kB) or smaps_rollup. */
static void gen_totals(struct proc *p, struct text *t, bool status)
{
	uint64_t rss = 0, thp = 0, htlb = 0;
	for (int i = 0; i < p->n_maps; i++) {
		uint64_t r, h, ref;
		usage_in(p, p->maps[i].start, p->maps[i].end, &r, &h, &ref);
		if (p->maps[i].flags & FK_HUGETLB)
			htlb += r;
		else
			rss += r, thp += h;
	}
	if (status)
		put(t, "Name:\tfake\nPid:\t%d\nUid:\t1000\t1000\t1000\t1000\nVmRSS:\t%llu kB\n"
		    "HugetlbPages:\t%llu kB\nTHP_enabled:\t%d\n", (int)p->pid,
		    (unsigned long long)rss >> 10, (unsigned long long)htlb >> 10, !p->thp_off);
	else
		put(t, "Rss:            %8llu kB\nAnonHugePages:  %8llu kB\n"
		    "Private_Hugetlb: %7llu kB\n", (unsigned long long)rss >> 10,
		    (unsigned long long)thp >> 10, (unsigned long long)htlb >> 10);
}

/* Contents of /proc/PID/{smaps,maps,status} of a fake process: 1 and *out, 0 if path
 * is not one, -ENOENT for a process that ended. */
int fkp_open(const char *path, char **out, size_t *len)
{
	int pid, n = 0;
	char what[32];
	if (sscanf(path, "/proc/%d/%31s%n", &pid, what, &n) != 2 || path[n])
		return 0;
	struct proc *p = proc_of(pid);
	if (!p)
		return 0;
	if (!p->live)
		return -ENOENT;
	struct text t = { 0 };
	put(&t, "%s", "");
	if (!strcmp(what, "smaps") || !strcmp(what, "maps"))
		gen_maps(p, &t, what[0] == 's');
	else if (!strcmp(what, "status") || !strcmp(what, "smaps_rollup"))
		gen_totals(p, &t, what[1] == 't');
	else if (strcmp(what, "pagemap") && strcmp(what, "clear_refs"))
		return free(t.p), 0;
	*out = t.p;
	*len = t.len;
	return 1;
}

/* A write to /proc/PID/clear_refs: "1" clears the accessed bits. 1 if handled. */
int fkp_write(const char *path, const char *buf, size_t len)
{
	int pid, n = 0;
	if (sscanf(path, "/proc/%d/clear_refs%n", &pid, &n) != 1 || path[n])
		return 0;
	struct proc *p = proc_of(pid);
	if (!p || !p->live)
		return -ESRCH;
	if (len < 1 || buf[0] != '1')
		return -EINVAL;
	for (int i = 0; i < p->n_units; i++)
		p->units[i].referenced = false;
	p->refs_cleared = true;
	return 1;
}

/* Time passes: the hot ranges are touched. */
void fkp_sleep(uint64_t ns)
{
	fp.slept += ns;
	for (int k = 0; k < fp.n_procs; k++)
		for (int i = 0; i < fp.procs[k].n_units; i++)
			if (fp.procs[k].units[i].hot)
				fp.procs[k].units[i].referenced = true;
}

int fkp_pidfd_check(pid_t pid)
{
	if (fp.pidfd_err)
		return -fp.pidfd_err;
	struct proc *p = proc_of(pid);
	return p && p->live ? 0 : -ESRCH;
}

/* process_madvise(MADV_COLLAPSE) of a fake process, as Linux 6.18 answers: each 2 MiB
 * of a range in turn; past a refusal of a range's pages (EINVAL, EAGAIN) it goes on,
 * at one for want of memory (ENOMEM, EBUSY) it stops; the last refusal is the answer. */
ssize_t fkp_process_madvise(pid_t pid, const struct iovec *iov, size_t n, int advice,
			    uint64_t *clock)
{
	struct proc *p = proc_of(pid);
	fp.syscalls++;
	if (fp.madvise_err)
		return -fp.madvise_err;
	if (!p || !p->live)
		return -ESRCH;
	if (advice != MADV_COLLAPSE)
		return -EINVAL;
	ssize_t done = 0;
	for (size_t i = 0; i < n; i++) {
		uintptr_t lo = (uintptr_t)iov[i].iov_base, hi = lo + iov[i].iov_len;
		struct pmap *m = pmap_of(p, lo);
		int last = 0;
		if (!iov[i].iov_len)
			continue;
		if (!m || m->end < hi)
			return done ? done : -ENOMEM;
		if ((m->flags & (FK_NH | FK_FILE)) || p->thp_off || m->perms[3] == 's')
			return done ? done : -EINVAL;
		for (uintptr_t a = lo; a < hi && p->live; a += TWO_M) {
			struct unit *u = unit_of(p, a, true);
			if (fp.calls < MAX_CALLS)
				fp.order[fp.calls] = a;
			fp.calls++;
			*clock += u && u->cost ? u->cost : fp.cost;
			if (u && u->err) {
				last = u->err;
				if (last == ENOMEM || last == EBUSY)
					break;
				continue;
			}
			if (u) {
				u->huge = true;
				u->present = 512;
			}
			if (p->after_n && --p->after_n == 0)
				p->after_fn(pid);
			if (p->exit_after && --p->exit_after == 0) {
				p->live = false;
				fk_pid_remove(pid);
			}
		}
		if (last)
			return done ? done : -last;
		done += (ssize_t)iov[i].iov_len;
	}
	return done;
}

/* PAGEMAP_SCAN over /proc/PID/pagemap: present pages, huge or not, in runs. */
struct scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
struct scan_region { uint64_t start, end, categories; };

int fkp_pagemap_scan(pid_t pid, void *argp)
{
	struct scan_arg *a = argp;
	struct proc *p = proc_of(pid);
	if (fp.no_scan)
		return -ENOTTY;
	if (!p || !p->live)
		return -ESRCH;
	struct scan_region *vec = (struct scan_region *)(uintptr_t)a->vec;
	uint64_t n = 0, at = a->start;
	/* Units in address order: at most one run each, small enough for tests. */
	while (at < a->end) {
		struct unit *u = unit_of(p, at, false);
		uint64_t unit_end = (at & ~(TWO_M - 1)) + TWO_M;
		if (unit_end > a->end)
			unit_end = a->end;
		uint64_t present_end = u ? (at & ~(TWO_M - 1)) + (uint64_t)u->present * PAGE : 0;
		uint64_t cat = (1ull << 3) | (u && u->huge ? 1ull << 6 : 0);
		if (u && present_end > at && (cat & a->category_mask) == a->category_mask) {
			if (n == a->vec_len)
				break;
			vec[n++] = (struct scan_region){ at, present_end < unit_end ? present_end : unit_end,
							  cat & a->return_mask };
		}
		at = unit_end;
		/* on to the next range that has one (a scan of all of user space) */
		uint64_t next = a->end;
		for (int i = 0; i < p->n_units; i++)
			if (p->units[i].a >= at && p->units[i].a < next)
				next = p->units[i].a;
		at = next;
	}
	a->walk_end = at;
	return (int)n;
}
