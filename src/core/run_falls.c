/* run_falls.c - the falls of a program's whole tree under an explicit --backing 2m or
 * 1g, gathered in superpage run's page as they happen (every process of the tree
 * that reaches the page adds its own), and the one line that says them once the
 * program has ended: by the program at its exit, or by superpage run after it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* ---------- written by the runtime, in any process of the tree ---------- */

static int hugetlb_index(enum sp_backing rung)
{
	return rung == SP_BACKING_2M ? 0 : rung == SP_BACKING_1G ? 1 : -1;
}

void sp_run_tree_fall(struct sp_run_page *p, enum sp_backing rung, enum sp_fall why)
{
	if (!p || __atomic_load_n(&p->tree.magic, __ATOMIC_ACQUIRE) != SP_RUN_TREE_MAGIC ||
	    (unsigned)rung >= SP_BACKING_COUNT || (unsigned)why >= SP_FALL_COUNT)
		return;
	struct sp_run_tree *t = &p->tree;
	__atomic_fetch_add(&t->falls[rung][why], 1, __ATOMIC_RELAXED);
	int h = hugetlb_index(rung);
	uint32_t none = 0;
	/* (Read after the refusal, as the heap reads it to take what is left.) */
	if (h >= 0 && why == SP_FALL_POOL_EMPTY &&
	    __atomic_compare_exchange_n(&t->empty_state[h], &none, 1, false, __ATOMIC_ACQ_REL,
					__ATOMIC_RELAXED)) {
		t->empty_free[h] = sp_rung_room(rung, false);
		__atomic_store_n(&t->empty_state[h], 2, __ATOMIC_RELEASE);
	}
}

void sp_run_tree_split(struct sp_run_page *p, uint64_t wanted, uint64_t had,
		       enum sp_backing rest, enum sp_fall why)
{
	if (!p || __atomic_load_n(&p->tree.magic, __ATOMIC_ACQUIRE) != SP_RUN_TREE_MAGIC)
		return;
	struct sp_run_tree *t = &p->tree;
	/* The refusal of the whole run, counted just before, is this split. */
	if ((unsigned)why < SP_FALL_COUNT &&
	    __atomic_load_n(&t->falls[SP_BACKING_2M][why], __ATOMIC_RELAXED) > 0)
		__atomic_fetch_sub(&t->falls[SP_BACKING_2M][why], 1, __ATOMIC_RELAXED);
	/* What the pool had then is the split's to say: a pool_empty fall of its own
	 * reads it afresh. */
	uint32_t kept = 2;
	if (!__atomic_load_n(&t->falls[SP_BACKING_2M][SP_FALL_POOL_EMPTY], __ATOMIC_RELAXED))
		__atomic_compare_exchange_n(&t->empty_state[0], &kept, 0, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED);
	__atomic_fetch_add(&t->splits, 1, __ATOMIC_RELAXED);
	uint32_t none = 0;
	if (!__atomic_compare_exchange_n(&t->split_state, &none, 1, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	t->split_wanted = wanted;
	t->split_had = had;
	t->split_rest = (int32_t)rest;
	t->split_pid = (int32_t)getpid();
	__atomic_store_n(&t->split_state, 2, __ATOMIC_RELEASE);
}

/* ---------- read by superpage run, and by the program at its exit ---------- */

void sp_run_page_tree_init(void *page, bool say)
{
	struct sp_run_tree *t = &((struct sp_run_page *)page)->tree;
	memset(t, 0, sizeof *t);
	t->say = say;
	__atomic_store_n(&t->magic, SP_RUN_TREE_MAGIC, __ATOMIC_RELEASE);
}

int sp_run_page_falls(const void *page, struct sp_run_falls *out)
{
	const struct sp_run_tree *t = &((const struct sp_run_page *)page)->tree;
	memset(out, 0, sizeof *out);
	out->empty_free[0] = out->empty_free[1] = -1;
	if (__atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) != SP_RUN_TREE_MAGIC)
		return -ENOENT;
	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++)
			out->by[b][f] = __atomic_load_n(&t->falls[b][f], __ATOMIC_RELAXED);
	out->splits = __atomic_load_n(&t->splits, __ATOMIC_RELAXED);
	if (__atomic_load_n(&t->split_state, __ATOMIC_ACQUIRE) == 2) {
		out->split_wanted = t->split_wanted;
		out->split_had = t->split_had;
		out->split_rest = (enum sp_backing)t->split_rest;
		out->split_pid = (pid_t)t->split_pid;
	} else {
		out->splits = 0; /* (one being written by a process killed meanwhile) */
	}
	for (int h = 0; h < 2; h++)
		if (__atomic_load_n(&t->empty_state[h], __ATOMIC_ACQUIRE) == 2)
			out->empty_free[h] = (long)t->empty_free[h];
	return 0;
}

bool sp_run_page_claim(void *page)
{
	struct sp_run_tree *t = &((struct sp_run_page *)page)->tree;
	return __atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) == SP_RUN_TREE_MAGIC &&
	       __atomic_load_n(&t->say, __ATOMIC_RELAXED) &&
	       !__atomic_exchange_n(&t->said, 1, __ATOMIC_ACQ_REL);
}

/* What each reason a hugetlb rung falls for means, for the line. */
static const char *fall_meaning(enum sp_fall why)
{
	switch (why) {
	case SP_FALL_NO_POOL: return "no pool of that page size is set up";
	case SP_FALL_POOL_EMPTY: return "the pool had too few free pages";
	case SP_FALL_UNSUPPORTED: return "the kernel offers no such pages";
	case SP_FALL_MMAP: return "mmap failed for another reason";
	case SP_FALL_SKIPPED: return "not asked again just after a refusal";
	case SP_FALL_PROGRAM_PAGES: return "the program changes the range at 4 KiB";
	case SP_FALL_CGROUP: return "the hugetlb cgroup's limit";
	default: return NULL;
	}
}

struct line {
	char *buf;
	size_t len, at;
};

static void add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	if (l->at >= l->len)
		return;
	va_start(ap, fmt);
	int n = vsnprintf(l->buf + l->at, l->len - l->at, fmt, ap);
	va_end(ap);
	if (n > 0)
		l->at = l->at + (size_t)n < l->len ? l->at + (size_t)n : l->len - 1;
}

size_t sp_run_falls_line(const struct sp_run_falls *f, char *buf, size_t len)
{
	struct line l = { buf, len, 0 };
	static const enum sp_backing rungs[] = { SP_BACKING_1G, SP_BACKING_2M };
	bool any = false;

	if (len < 2)
		return 0;
	buf[0] = 0;
	add(&l, "superpage: ");
	if (f->splits) {
		add(&l, "2m: %llu MiB wanted %llu pages of 2 MiB and the pool had %llu free: %llu on "
			"hugetlb pages, the other %llu on %s",
		    (unsigned long long)f->split_wanted * 2, (unsigned long long)f->split_wanted,
		    (unsigned long long)f->split_had, (unsigned long long)f->split_had,
		    (unsigned long long)(f->split_wanted - f->split_had), sp_backing_name(f->split_rest));
		if (f->splits > 1)
			add(&l, " (the first of %llu blocks split so)", (unsigned long long)f->splits);
		any = true;
	}
	for (size_t k = 0; k < sizeof rungs / sizeof rungs[0]; k++) {
		enum sp_backing rung = rungs[k];
		uint64_t n = 0;
		for (int w = 0; w < SP_FALL_COUNT; w++)
			if (fall_meaning((enum sp_fall)w))
				n += f->by[rung][w];
		if (!n)
			continue;
		add(&l, "%s%s: %llu request%s fell to %s:", any ? "; " : "", sp_backing_name(rung),
		    (unsigned long long)n, n == 1 ? "" : "s", rung == SP_BACKING_1G ? "2m" : "thp");
		bool first = true;
		for (int w = 0; w < SP_FALL_COUNT; w++) {
			const char *m = fall_meaning((enum sp_fall)w);
			if (!m || !f->by[rung][w])
				continue;
			add(&l, "%s %llu %s (%s", first ? "" : ",", (unsigned long long)f->by[rung][w],
			    sp_fall_name((enum sp_fall)w), m);
			long free = f->empty_free[rung == SP_BACKING_1G];
			if (w == SP_FALL_POOL_EMPTY && free >= 0)
				add(&l, ": %ld free at the first", free);
			add(&l, ")");
			first = false;
		}
		any = true;
	}
	if (!any) {
		buf[0] = 0;
		return 0;
	}
	add(&l, " (said once; -v says each as it happens)\n");
	/* Cut short, it still ends the line. */
	if (l.at == len - 1 && buf[l.at - 1] != '\n')
		buf[l.at - 1] = '\n';
	return l.at;
}
