/* test_watch.c - what superpage stat reads of run's watch, against the fake kernel: a
 * process's parent and start time from /proc/PID/stat, and the watch found among its
 * ancestors in a watcher's published page. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_kernel.h"
#include "internal.h"

static void setup(void)
{
	fk_reset();
	fk_machine_default();
	fk_install();
}

/* A /proc/PID/stat line with that comm, parent and start time. */
static void stat_file(pid_t pid, const char *comm, pid_t ppid, unsigned long long start)
{
	char path[64], text[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	snprintf(text, sizeof text, "%d (%s) S %d %d %d 34816 -1 4194560 120 0 0 0 1 2 0 0 20 0 "
		 "1 0 %llu 2445312 216 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0\n",
		 (int)pid, comm, (int)ppid, (int)pid, (int)pid, start);
	fk_file(path, text);
}

static void test_parent(void)
{
	pid_t ppid = 0;
	uint64_t start = 0;
	setup();
	/* A comm may hold spaces and parentheses: the last ')' ends it. */
	stat_file(77, "a) (b c) S 9", 5, 123456789ull);
	CHECK_EQ(sp_proc_parent(77, &ppid, &start), 0);
	CHECK_EQ(ppid, 5);
	CHECK(start == 123456789ull);
	CHECK_EQ(sp_proc_parent(78, &ppid, &start), -ESRCH);
	fk_file("/proc/79/stat", "79 (x S 1 2\n");
	CHECK_EQ(sp_proc_parent(79, &ppid, &start), -EPROTO);
	fk_file("/proc/80/stat", "80 (x) S 1 2 3\n");
	CHECK_EQ(sp_proc_parent(80, &ppid, &start), -EPROTO);
	fk_uninstall();
}

/* The watcher 50 publishes a page reaching 100 (its child) and 101 (a grandchild). */
static void test_find(void)
{
	static char page[8192];
	static struct sp_watch w, got;
	int i = -1;
	setup();
	stat_file(50, "superpage", 1, 1000);
	stat_file(100, "prog", 50, 2000);
	stat_file(101, "prog", 100, 3000);
	stat_file(102, "other", 100, 4000);
	memset(&w, 0, sizeof w);
	w.watcher = 50;
	w.root = 100;
	w.why = SP_WATCH_STATIC;
	w.asked = SP_BACKING_2M;
	w.rounds = 7;
	w.n = 2;
	w.procs[0].pid = 100;
	w.procs[0].start_time = 2000;
	w.procs[0].rounds = 7;
	w.procs[0].collapsed_bytes = 64 << 20;
	w.procs[1].pid = 101;
	w.procs[1].start_time = 3000;
	w.procs[1].rounds = 3;
	/* No page yet: no watch. */
	fk_file("/proc/50/maps", "00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/superpage\n");
	CHECK_EQ(sp_watch_find(100, &got, &i), -ENOENT);
	/* The page, mapped at 0 (the fake's /proc/50/mem is the page's bytes). */
	sp_watch_put(page, &w);
	fk_file("/proc/50/maps", "00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/superpage\n"
				 "00000000-00002000 rw-p 00000000 00:01 7 /memfd:superpage-watch (deleted)\n");
	fk_file_n("/proc/50/mem", page, sizeof page);
	CHECK_EQ(sp_watch_find(100, &got, &i), 0);
	CHECK_EQ(i, 0);
	CHECK_EQ(got.watcher, 50);
	CHECK_EQ(got.why, SP_WATCH_STATIC);
	CHECK_EQ(got.asked, SP_BACKING_2M);
	CHECK(got.procs[0].collapsed_bytes == 64 << 20);
	/* Two levels down. */
	CHECK_EQ(sp_watch_find(101, &got, &i), 0);
	CHECK_EQ(i, 1);
	CHECK_EQ(got.procs[1].rounds, 3);
	/* A process below that the watch has not reached (or a pid used again by another
	 * process since: another start time) is none of its. */
	CHECK_EQ(sp_watch_find(102, &got, &i), -ENOENT);
	stat_file(101, "prog", 100, 3001);
	CHECK_EQ(sp_watch_find(101, &got, &i), -ENOENT);
	stat_file(101, "prog", 100, 3000);
	/* A page left half written (an odd count) is read again, then given up on. */
	((struct sp_pub_head *)page)->seq |= 1;
	fk_file_n("/proc/50/mem", page, sizeof page);
	CHECK_EQ(sp_watch_find(100, &got, &i), -ENOENT);
	/* Its memory cannot be read: said as such. */
	fk_file_error("/proc/50/mem", EACCES);
	CHECK_EQ(sp_watch_find(101, &got, &i), -EACCES);
	fk_uninstall();
}

static void test_names(void)
{
	CHECK(!strcmp(sp_watch_why_name(SP_WATCH_STATIC), "static"));
	CHECK(!strcmp(sp_watch_why_name(SP_WATCH_LIBC), "libc"));
	CHECK(!strcmp(sp_watch_why_name(SP_WATCH_CLASS), "class"));
	CHECK(!strcmp(sp_watch_why_name(SP_WATCH_WHY_COUNT), "?"));
}

int main(void)
{
	RUN(test_parent);
	RUN(test_find);
	RUN(test_names);
	return CHECK_DONE();
}
