/* test_offer.c - what a command asks the core: the machine's offer, settings saved and put back, a process's name. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

#define M2 (2ull << 20)
#define G1 (1ull << 30)
#define THP "/sys/kernel/mm/transparent_hugepage"
#define NR_2M "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"

static void setup(void)
{
	fk_reset();
	fk_machine_default();
	fk_install();
}

static void test_offer_parts(void)
{
	struct sp_offer o;

	setup();
	fk_pool(M2, 16, 10);
	fk_file(THP "/enabled", "always [madvise] never\n");
	fk_file(THP "/defrag", "always defer defer+madvise [madvise] never\n");
	fk_prctl_thp(3);
	CHECK_EQ(sp_offer_get(SP_OFFER_THP | SP_OFFER_2M, &o), 0);
	CHECK(o.thp.present);
	CHECK(!strcmp(o.thp.enabled, "madvise"));
	CHECK(!strcmp(o.thp.defrag, "madvise"));
	CHECK_EQ(o.thp.pmd_size, M2);
	CHECK_EQ(o.thp_disable, 3);
	CHECK(o.pool_2m.present);
	CHECK_EQ(o.pool_2m.total, 16);
	CHECK_EQ(o.pool_2m.free, 10);
	CHECK_EQ(o.pool_2m.avail, 10);
	CHECK_EQ(o.pool_2m.room, 0);
	CHECK(!o.pool_1g.present); /* not asked */
	CHECK_EQ(sp_offer_get(0x100, &o), -EINVAL);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_offer_missing(void)
{
	struct sp_offer o;

	setup();
	fk_file_remove_tree(THP);
	fk_pool_remove(G1);
	CHECK_EQ(sp_offer_get(SP_OFFER_ALL, &o), 0);
	CHECK(!o.thp.present);
	CHECK(!o.thp.enabled[0]);
	CHECK(!o.pool_1g.present);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_thp_save_restore(void)
{
	struct sp_setting s;

	setup();
	fk_file(THP "/enabled", "always [madvise] never\n");
	memset(&s, 0, sizeof s);
	CHECK_EQ(sp_setting_restore(&s), 0); /* nothing held: nothing written */
	CHECK_EQ(sp_thp_save(&s), 0);
	CHECK(s.held);
	CHECK(!strcmp(s.old, "madvise"));
	CHECK_EQ(sp_thp_set("always"), 0);
	CHECK(!strcmp(fk_file_get(THP "/enabled"), "[always] madvise never\n"));
	CHECK_EQ(sp_thp_set("sometimes"), -EINVAL);
	errno = 1234;
	CHECK_EQ(sp_setting_restore(&s), 0);
	CHECK_EQ(errno, 1234);
	CHECK(!s.held);
	CHECK(!strcmp(fk_file_get(THP "/enabled"), "always [madvise] never\n"));
	/* Disarmed: a second put-back (a signal handler after the program's) writes nothing. */
	CHECK_EQ(sp_thp_set("never"), 0);
	CHECK_EQ(sp_setting_restore(&s), 0);
	CHECK(!strcmp(fk_file_get(THP "/enabled"), "always madvise [never]\n"));
	fk_file_remove_tree(THP);
	CHECK_EQ(sp_thp_save(&s), -ENOENT);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_pool_save_restore(void)
{
	struct sp_setting s;
	long got = -1;

	setup();
	fk_pool(M2, 4, 4);
	CHECK_EQ(sp_pool_save(&s, M2, -1), 0);
	CHECK(!strcmp(s.old, "4"));
	CHECK(!strcmp(s.path, NR_2M));
	CHECK_EQ(sp_pool_set(M2, -1, 64, &got), 0);
	CHECK_EQ(fk_pool_total(M2), 64);
	CHECK_EQ(sp_setting_restore(&s), 0);
	CHECK_EQ(fk_pool_total(M2), 4);
	/* A write refused (not root) is said, and the setting is not held any more. */
	CHECK_EQ(sp_pool_save(&s, M2, -1), 0);
	fk_write_error(EACCES);
	CHECK_EQ(sp_setting_restore(&s), -EACCES);
	fk_write_error(0);
	CHECK(!s.held);
	CHECK_EQ(sp_pool_save(&s, 3ull << 20, -1), -ENOENT);
	CHECK_EQ(fk_open_fds(), 0);
}

static void test_comm(void)
{
	char buf[64];

	setup();
	fk_file("/proc/42/comm", "python3\n");
	CHECK_EQ(sp_comm_read(42, buf, sizeof buf), 7);
	CHECK(!strcmp(buf, "python3"));
	CHECK(sp_comm_read(43, buf, sizeof buf) < 0);
	CHECK(!buf[0]);
	CHECK_EQ(fk_open_fds(), 0);
}

int main(void)
{
	RUN(test_offer_parts);
	RUN(test_offer_missing);
	RUN(test_thp_save_restore);
	RUN(test_pool_save_restore);
	RUN(test_comm);
	fk_reset();
	return CHECK_DONE();
}
