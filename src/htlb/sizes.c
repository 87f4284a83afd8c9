/* sizes.c - gethugepagesize(3), gethugepagesizes(3), getpagesizes(3): the sizes the
 * machine offers, read once (and again by the test probe). */
#include <errno.h>

#include "hugetlbfs.h"
#include "htlb.h"

HTLB_EXPORT long gethugepagesize(void)
{
	const struct htlb_state *st = htlb_state();

	if (!st->default_size) {
		errno = ENOSYS;
		return -1;
	}
	return st->default_size;
}

HTLB_EXPORT int gethugepagesizes(long pagesizes[], int n_elem)
{
	const struct htlb_state *st = htlb_state();
	int n = 0;

	if (n_elem < 0 || (n_elem > 0 && !pagesizes)) {
		errno = EINVAL;
		return -1;
	}
	if (!pagesizes)
		return st->n_sizes;
	for (; n < st->n_sizes && n < n_elem; n++)
		pagesizes[n] = st->sizes[n].size;
	return n;
}

HTLB_EXPORT int getpagesizes(long pagesizes[], int n_elem)
{
	const struct htlb_state *st = htlb_state();

	if (n_elem < 0 || (n_elem > 0 && !pagesizes)) {
		errno = EINVAL;
		return -1;
	}
	if (!pagesizes)
		return st->n_sizes + 1;
	if (n_elem == 0)
		return 0;
	pagesizes[0] = st->base_page;
	return 1 + gethugepagesizes(pagesizes + 1, n_elem - 1);
}

/* libhugetlbfs' test probe (its tests/gethugepagesizes.c): forget the sizes read, so
 * that the next call reads them again. */
HTLB_EXPORT void __tp_kernel_default_hugepage_size_reset(void);
void __tp_kernel_default_hugepage_size_reset(void)
{
	htlb_reload();
}
