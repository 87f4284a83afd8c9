/* report.c - the account of this process that --stats writes: gathered (the heap's
 * counts, --shm, --text, --stacks, the coverage smaps gives, the peak RSS) and
 * written in one write, as text or JSON. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"
#include "life.h"
#include "report.h"

#define REPORT_MAX 4096  /* the whole account: one write, so lines of processes do not mix */

/* VmHWM of /proc/self/status in bytes, 0 if it cannot be read: at exit a program
 * has often freed most of its memory, and the peak says how much it had. */
static uint64_t read_hwm(void)
{
	char buf[4096];
	size_t len = 0;
	ssize_t n;
	const char *p;
	uint64_t kb = 0;
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (len < sizeof buf - 1) {
		n = read(fd, buf + len, sizeof buf - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = 0;
	p = strstr(buf, "\nVmHWM:");
	if (!p)
		return 0;
	for (p += 7; *p == ' ' || *p == '\t'; p++)
		;
	for (; *p >= '0' && *p <= '9'; p++)
		kb = kb * 10 + (uint64_t)(*p - '0');
	return kb << 10;
}

static void account_read(struct account *a)
{
	memset(a, 0, sizeof *a);
	a->pid = (int)getpid();
	if (prctl(PR_GET_NAME, (unsigned long)a->comm, 0, 0, 0) < 0)
		a->comm[0] = 0;
	a->comm[16] = 0;
	rt_stats_get(&a->st);
	if (rt_ready()) {
		pack_stats(&a->st.packed, &a->st.packed_collapsed, &a->st.packed_refused);
		fork_stats(&a->st);
		limits_hugetlb_stats(&a->st);
	}
	rt_shm_stats_get(&a->shm);
	rt_text_stats_get(&a->text);
	rt_stack_stats_get(&a->stacks);
	rt_map_stats_get(&a->maps);
	rt_brk_stats(&a->st);
	a->cov_err = sp_coverage(0, &a->cov);
	if (a->cov_err < 0)
		memset(&a->cov, 0, sizeof a->cov);
	a->hwm = read_hwm();
}

const enum sp_backing unit_rungs[4] = { SP_BACKING_4K, SP_BACKING_THP, SP_BACKING_2M,
					SP_BACKING_1G };

bool put_rung_falls(struct out *o, const uint64_t (*falls)[SP_FALL_COUNT], bool json)
{
	bool any = false;

	for (int b = 0; b < SP_BACKING_COUNT; b++)
		for (int f = 0; f < SP_FALL_COUNT; f++) {
			if (!falls[b][f])
				continue;
			put_fmt(o, json ? "%s\"%s/%s\":%llu" : "%s %s %s %llu", any ? "," : "",
				sp_backing_name((enum sp_backing)b), sp_fall_name((enum sp_fall)f),
				(unsigned long long)falls[b][f]);
			any = true;
		}
	return any;
}

bool put_shm_falls(struct out *o, const uint64_t *falls, bool json)
{
	bool any = false;

	for (int f = 0; f < SP_FALL_COUNT; f++) {
		if (!falls[f])
			continue;
		put_fmt(o, json ? "%s\"%s\":%llu" : "%s %s %llu", any ? "," : "",
			sp_fall_name((enum sp_fall)f), (unsigned long long)falls[f]);
		any = true;
	}
	return any;
}


/* The account to fd; 0 or the errno of the write that failed. */
static int report_to(int fd, bool json)
{
	int e = errno;
	struct account a;
	char buf[REPORT_MAX];
	struct out o = { buf, 0, sizeof buf, false };

	account_read(&a);
	if (json)
		report_json(&o, &a);
	else
		report_text(&o, &a);
	/* Cut short, it still ends in a newline; JSON cut short is no JSON, so say so. */
	if (o.cut) {
		o.len = o.cap - 1;
		buf[o.len++] = '\n';
		if (json) {
			o.len = 0;
			o.cut = false;
			put_fmt(&o, "{\"pid\":%d,\"error\":\"report too long\"}\n", a.pid);
		}
	}
	int err = write_all(fd, buf, o.len);
	errno = e;
	return err;
}

void rt_report(int fd, bool json)
{
	/* (superpage run says, once the program has ended, an account it could not
	 * write, and writes the one a program that leaves by exit_group never does.) */
	rt_run_account(report_to(fd, json));
}

void rt_report_asked(int fd)
{
	report_to(fd, false);
}

