/* rung.c - the rung service: a hugetlb rung tried for a request, its refusal
 * classified and remembered, and every fall of the project counted in one table. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define SKIP_NS 1000000000ull /* how long a refused rung is not asked again */

static _Atomic uint64_t falls[SP_SITE_COUNT][SP_BACKING_COUNT][SP_FALL_COUNT];

void sp_fall(enum sp_site site, enum sp_backing rung, enum sp_fall why)
{
	if ((unsigned)site < SP_SITE_COUNT && (unsigned)rung < SP_BACKING_COUNT &&
	    (unsigned)why < SP_FALL_COUNT)
		atomic_fetch_add_explicit(&falls[site][rung][why], 1, memory_order_relaxed);
}

void sp_falls_get(enum sp_site site, uint64_t out[SP_BACKING_COUNT][SP_FALL_COUNT])
{
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++)
			out[b][f] = atomic_load_explicit(&falls[site][b][f], memory_order_relaxed);
}

void sp_falls_reset(enum sp_site site)
{
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++)
			atomic_store_explicit(&falls[site][b][f], 0, memory_order_relaxed);
}

static uint64_t page_size_of(enum sp_backing rung)
{
	return rung == SP_BACKING_1G ? SP_1G_SIZE : SP_2M_SIZE;
}

long sp_rung_room(enum sp_backing rung, bool overcommit)
{
	struct sp_offer_pool o = { 0 };
	long room;
	uint64_t cg = sp_limits_hugetlb(sp_limit_dirs_huge(), rung == SP_BACKING_1G, NULL, NULL);

	sp_offer_pool_read(page_size_of(rung), &o); /* (all zero if it cannot be read) */
	room = o.avail + (overcommit ? o.room : 0);
	if (cg != SP_LIMIT_NONE && (uint64_t)room > cg / page_size_of(rung))
		room = (long)(cg / page_size_of(rung));
	return room > 0 ? room : 0;
}

int sp_rung_cgroup_room(enum sp_backing rung, size_t len)
{
	const struct sp_limit_dirs *d = sp_limit_dirs_huge();

	if (!d->n_huge || sp_limits_hugetlb(d, rung == SP_BACKING_1G, NULL, NULL) >= len)
		return 0;
	return -EDQUOT;
}

int sp_rung_charge(enum sp_backing rung, void *p, size_t len)
{
	int r;

	(void)rung;
	if (!sp_limit_dirs_huge()->n_huge)
		return 0;
	/* The kernel charges a private hugetlb page to the cgroup when it is first
	 * touched: a touch past the limit would be a SIGBUS. Touched now, a page the
	 * limit refuses is an error here (EFAULT), never a signal. (A kernel before
	 * 5.14 has no MADV_POPULATE_WRITE: the room was looked at, that is all.) */
	r = sp_os->madvise(p, len, MADV_POPULATE_WRITE);
	return r == 0 || r == -EINVAL ? 0 : -EDQUOT;
}

enum sp_fall sp_rung_refusal(enum sp_backing rung, int err)
{
	struct sp_pool p;

	if (err == -EDQUOT)
		return SP_FALL_CGROUP;
	if (err == -EINVAL)
		return SP_FALL_UNSUPPORTED;
	if (err != -ENOMEM)
		return SP_FALL_MMAP;
	/* No pool: none of this size here, or none set up (no pages, no overcommit). */
	if (sp_pool_get(page_size_of(rung), -1, &p) < 0 || (p.total == 0 && p.overcommit <= 0))
		return SP_FALL_NO_POOL;
	return SP_FALL_POOL_EMPTY;
}

bool sp_rung_skipping(struct sp_rung_skip *k, uint64_t size)
{
	uint64_t until = atomic_load(&k->until_ns);

	return until && sp_os->now_ns() < until && size >= atomic_load(&k->min_size);
}

/* A refusal of a request of size bytes: requests as large are not asked again for
 * SKIP_NS (nor, while the last refusal's time runs, those as large as it). */
static void refused(struct sp_rung_skip *k, uint64_t size)
{
	uint64_t now = sp_os->now_ns();
	uint64_t until = atomic_load(&k->until_ns), min = atomic_load(&k->min_size);

	atomic_store(&k->min_size, until > now && min < size ? min : size);
	atomic_store(&k->until_ns, now + SKIP_NS);
}

void sp_rung_forget(struct sp_rung_skip *k)
{
	atomic_store(&k->until_ns, 0);
}

struct anywhere {
	enum sp_backing rung;
	size_t len;
	int flags;
	void **out;
};

static int map_anywhere(void *arg)
{
	struct anywhere *m = arg;
	int r = sp_rung_cgroup_room(m->rung, m->len);
	if (r == 0)
		r = sp_os->mmap(NULL, m->len, PROT_READ | PROT_WRITE, m->flags, -1, 0, m->out);
	if (r == 0 && (r = sp_rung_charge(m->rung, *m->out, m->len)) < 0)
		sp_os->munmap(*m->out, m->len);
	return r;
}

int sp_rung_map(const struct sp_rung_ask *a, size_t len, int extra, void **out)
{
	struct anywhere m = { .rung = a->rung, .len = len, .out = out,
		.flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | extra |
			 (a->rung == SP_BACKING_1G ? MAP_HUGE_1GB : MAP_HUGE_2MB) };
	return sp_rung_try(a, map_anywhere, &m);
}

int sp_rung_try(const struct sp_rung_ask *a, int (*map)(void *arg), void *arg)
{
	enum sp_fall why;
	int r;

	if (a->skip && !a->strict && sp_rung_skipping(a->skip, a->size)) {
		sp_fall(a->site, a->rung, SP_FALL_SKIPPED);
		return SP_FALL_SKIPPED;
	}
	r = map(arg);
	if (r == 0)
		return -1;
	why = sp_rung_refusal(a->rung, r);
	if (a->skip)
		refused(a->skip, a->size);
	sp_fall(a->site, a->rung, why);
	return why;
}
