/* test_nomalloc.c - the allocation path never calls malloc (the runtime will *be*
 * malloc): this program's own malloc counts calls while sp_alloc/sp_free/verify run. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "pools.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#ifndef UNDER_ASAN
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static volatile int counting, calls;

void *malloc(size_t n)
{
	if (counting)
		calls++;
	return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
	if (counting)
		calls++;
	return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
	if (counting)
		calls++;
	return __libc_realloc(p, n);
}
int posix_memalign(void **out, size_t align, size_t n)
{
	if (counting)
		calls++;
	*out = __libc_memalign(align, n);
	return *out ? 0 : ENOMEM;
}

static void run_path(unsigned flags, size_t size)
{
	void *p = sp_alloc(size, flags);
	if (p) {
		struct sp_verify v;
		struct sp_block b;
		sp_verify_range(p, size, &v);
		sp_block_info(p, &b);
		sp_free(p, size);
	}
}

static void test_alloc_path_no_malloc(void)
{
	if (geteuid() == 0)
		pools_want_free(2ull << 20, 4);
	counting = 1;
	calls = 0;
	free(malloc(8)); /* the counter itself works */
	CHECK_EQ(calls, 1);
	calls = 0;
	sp_refresh(); /* the first probe: sysfs, procfs, feature probes */
	static const unsigned kinds[] = { SP_AUTO, SP_4K, SP_THP, SP_2M, SP_1G,
					  SP_2M | SP_STRICT, SP_THP | SP_POPULATE };
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
		run_path(kinds[i] | SP_POPULATE, 4ull << 20);
	struct sp_stats st;
	sp_stats_get(&st);
	struct sp_coverage c;
	sp_coverage(0, &c);
	counting = 0;
	CHECK_EQ(calls, 0);
	CHECK(st.blocks[SP_BACKING_4K] + st.blocks[SP_BACKING_THP] + st.blocks[SP_BACKING_2M] >= 6);
}
#endif

int main(void)
{
	pools_save();
#ifdef UNDER_ASAN
	printf("SKIP test_alloc_path_no_malloc: ASan owns malloc in this build\n");
#else
	RUN(test_alloc_path_no_malloc);
#endif
	return CHECK_DONE();
}
