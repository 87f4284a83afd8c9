/* pools.h - system-test fixture: save the hugetlb pools, set what a test needs, and put
 * them back at exit, on failure and on a fatal signal. */
#ifndef SP_TEST_POOLS_H
#define SP_TEST_POOLS_H

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "superpage.h"

static long pools_saved_[2] = { -1, -1 };
static const uint64_t pools_size_[2] = { 2ull << 20, 1ull << 30 };

static void pools_restore(void)
{
	for (int i = 0; i < 2; i++)
		if (pools_saved_[i] >= 0)
			sp_pool_set(pools_size_[i], -1, pools_saved_[i], NULL);
}

/* Async-signal-safe enough: writes sysfs with plain syscalls, then dies as it would have. */
static void pools_on_signal(int sig)
{
	static const char *const paths[2] = {
		"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
		"/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
	};
	for (int i = 0; i < 2; i++) {
		if (pools_saved_[i] < 0)
			continue;
		char num[24], *p = num + sizeof num;
		long v = pools_saved_[i];
		*--p = 0;
		do
			*--p = (char)('0' + v % 10);
		while ((v /= 10) && p > num);
		int fd = open(paths[i], O_WRONLY);
		if (fd >= 0) {
			ssize_t w = write(fd, p, strlen(p));
			(void)w;
			close(fd);
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Call once at the start of main. */
static void pools_save(void)
{
	struct sp_pool p;
	for (int i = 0; i < 2; i++)
		if (sp_pool_get(pools_size_[i], -1, &p) == 0)
			pools_saved_[i] = p.total;
	atexit(pools_restore);
	int sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGINT, SIGTERM, SIGFPE, SIGILL };
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		signal(sigs[i], pools_on_signal);
}

/* Makes the pool of page_size hold at least `want` free pages. 0, or -1 if the
 * kernel does not give them (the caller SKIPs). */
static inline int pools_want_free(uint64_t page_size, long want)
{
	struct sp_pool p;
	if (sp_pool_get(page_size, -1, &p) < 0)
		return -1;
	if (p.free >= want)
		return 0;
	long got;
	sp_pool_set(page_size, -1, p.total + (want - p.free), &got);
	if (sp_pool_get(page_size, -1, &p) < 0 || p.free < want)
		return -1;
	return 0;
}

/* Makes the pool have exactly `want` free pages (pages in use stay). */
static inline int pools_exact_free(uint64_t page_size, long want)
{
	struct sp_pool p;
	long got;
	if (sp_pool_get(page_size, -1, &p) < 0)
		return -1;
	long in_use = p.total - p.free;
	sp_pool_set(page_size, -1, in_use + want, &got);
	if (sp_pool_get(page_size, -1, &p) < 0 || p.free != want)
		return -1;
	return 0;
}

#endif
