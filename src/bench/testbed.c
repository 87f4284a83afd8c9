/* testbed.c - the machine a bench runs on: what it offers, what it is, its memory warmed before runs. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../../bench/cpu.h"
#include "parts.h"

/* THP's "enabled" and "defrag" modes, "?" where they cannot be read. */
static void read_thp_modes(char *enabled, char *defrag, size_t len)
{
	struct sp_offer o;

	sp_offer_get(SP_OFFER_THP, &o);
	snprintf(enabled, len, "%.*s", (int)len - 1, o.thp.enabled[0] ? o.thp.enabled : "?");
	snprintf(defrag, len, "%.*s", (int)len - 1, o.thp.defrag[0] ? o.thp.defrag : "?");
}

void bench_check_offer(struct bench *b)
{
	char thp[16], defrag[16];

	read_thp_modes(thp, defrag, sizeof thp);
	for (int i = 0; i < b->nvar; i++) {
		struct bench_variant *v = &b->var[i];
		struct sp_pool p;
		uint64_t ps;

		if (!v->skip && v->how == BENCH_HOW_PROMOTE && bench_promote_unavailable()) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "%s", bench_promote_unavailable());
		}
		if (v->skip || !v->backing)
			continue;
		if (!strcmp(v->backing, "thp") && !strcmp(thp, "never")) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "THP is 'never' on this machine");
			continue;
		}
		if (strcmp(v->backing, "2m") && strcmp(v->backing, "1g"))
			continue;
		/* A 1g run without free 1 GiB pages would be a 2m run: no result for 1g. */
		ps = !strcmp(v->backing, "1g") ? GIB : 2 * MIB;
		if (sp_pool_get(ps, -1, &p) < 0 || p.free - p.reserved <= 0) {
			v->skip = true;
			snprintf(v->why, sizeof v->why, "no free %s pages (superpage pool, or --setup-pools as root)",
				 ps == GIB ? "1 GiB" : "2 MiB");
		}
	}
}

void bench_read_machine(const struct bench *b, struct bench_machine *m)
{
	struct bench_cpu c;
	struct utsname u;
	struct sp_pool p;
	time_t t = time(NULL);
	struct tm tm;

	memset(m, 0, sizeof *m);
	bench_cpu_probe(&c);
	snprintf(m->cpu, sizeof m->cpu, "%s", c.model);
	m->cpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	m->l1d = c.l1d;
	m->l2 = c.l2;
	m->l3 = c.l3;
	m->dtlb_4k = c.dtlb_4k;
	m->dtlb_2m = c.dtlb_2m;
	m->dtlb_1g = c.dtlb_1g;
	m->stlb_4k = c.stlb_4k;
	m->stlb_2m = c.stlb_2m;
	m->stlb_1g = c.stlb_1g;
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof m->kernel, "%.16s %.80s %.16s", u.sysname, u.release, u.machine);
	read_thp_modes(m->thp_enabled, m->thp_defrag, sizeof m->thp_enabled);
	m->pool_2m_total = m->pool_2m_free = m->pool_1g_total = m->pool_1g_free = -1;
	if (sp_pool_get(2 * MIB, -1, &p) == 0) {
		m->pool_2m_total = p.total;
		m->pool_2m_free = p.free;
	}
	if (sp_pool_get(GIB, -1, &p) == 0) {
		m->pool_1g_total = p.total;
		m->pool_1g_free = p.free;
	}
	gmtime_r(&t, &tm);
	strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
	m->quick = b->quick;
	m->repeat = b->repeat;
}

/* Touches `bytes` of fresh memory (THP where it can, to be quick) and gives it back,
 * so the run that follows gets memory the host really backs. A guest that reports its
 * free memory to the host (virtio-balloon free page reporting: this one does, 2 s
 * after a free) has it taken back, and the next fault of it is the host's too: here
 * 1 GiB under auto faulted in 1.5-2.8 s after a 4 s pause against 0.1 s right after
 * another run's exit, and a run's predecessor decided which it got. Pages freed just
 * now are the first the allocator hands out again. One pass after a pause still left
 * 0.1-0.7 s, a second pass 0.10-0.21 s: so two. At most half the free memory. */
void bench_warm_memory(uint64_t bytes)
{
	struct sysinfo si;

	if (sysinfo(&si) == 0 && bytes > (uint64_t)si.freeram * si.mem_unit / 2)
		bytes = (uint64_t)si.freeram * si.mem_unit / 2;
	bytes &= ~(2 * MIB - 1);
	for (int pass = 0; bytes && pass < 2; pass++) {
		char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			return;
		madvise(p, bytes, MADV_HUGEPAGE);
		for (uint64_t off = 0; off < bytes; off += 4096)
			p[off] = 1;
		munmap(p, bytes);
	}
}

/* The same for the pools' free pages, once before the rounds: a pool page is backed
 * by the host from its first use on (a freed hugetlb page stays in the pool, unreported),
 * so without this the first 2m and 1g runs alone pay the host's faults. */
void bench_warm_pools(void)
{
	static const struct { uint64_t size; int shift; } sizes[] = { { 2 * MIB, 21 }, { GIB, 30 } };

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct sp_pool p;
		uint64_t bytes;
		char *m;

		if (sp_pool_get(sizes[i].size, -1, &p) < 0)
			continue;
		if (p.reserved > 0)
			p.free -= p.reserved; /* promised to mappings already made */
		if (p.free <= 0)
			continue;
		bytes = (uint64_t)p.free * sizes[i].size;
		m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (sizes[i].shift << MAP_HUGE_SHIFT),
			 -1, 0);
		if (m == MAP_FAILED)
			continue;
		for (uint64_t off = 0; off < bytes; off += sizes[i].size)
			m[off] = 1;
		munmap(m, bytes);
	}
}

