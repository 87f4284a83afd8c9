/* promote_why.c - why superpage promote cannot start on a process: the kernel's errno, and what /proc says caused it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define PF_KTHREAD 0x00200000UL /* include/linux/sched.h: the task is a kernel thread */
#define CAP_SYS_PTRACE 19

/* What /proc says of a process: enough to tell why the kernel refused it. */
struct proc_facts {
	char state;                  /* of /proc/PID/stat: 'R', 'S', 'Z', ...; 0: no such process */
	unsigned long flags;         /* PF_* */
	unsigned long uid[3], gid[3];  /* real, effective, saved */
	bool ids;                    /* uid and gid were read */
	unsigned long long cap_prm;  /* its permitted capabilities */
	bool caps;
};

/* The state and flags of /proc/PID/stat (fields 3 and 9, after the comm, which may
 * hold spaces and parentheses). */
static void read_stat(pid_t pid, struct proc_facts *p)
{
	char path[64], buf[1024];
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *end = strrchr(buf, ')');
	if (!end || sscanf(end + 1, " %c %*d %*d %*d %*d %*d %lu", &p->state, &p->flags) != 2)
		p->state = 0;
}

/* The hex value of a "Cap...:" line of a status file. */
static bool status_caps(const char *line, const char *key, unsigned long long *out)
{
	size_t k = strlen(key);
	return !strncmp(line, key, k) && sscanf(line + k, " %llx", out) == 1;
}

/* The ids and capabilities of /proc/PID/status (PID "self" for ours). */
static void read_status(const char *pid, struct proc_facts *p, const char *cap_key)
{
	char path[64], line[256];
	int got = 0;
	FILE *f;

	snprintf(path, sizeof path, "/proc/%s/status", pid);
	if (!(f = fopen(path, "re")))
		return;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "Uid: %lu %lu %lu", &p->uid[0], &p->uid[1], &p->uid[2]) == 3 ||
		    sscanf(line, "Gid: %lu %lu %lu", &p->gid[0], &p->gid[1], &p->gid[2]) == 3)
			got++;
		else if (status_caps(line, cap_key, &p->cap_prm))
			p->caps = true;
	}
	fclose(f);
	p->ids = got == 2;
}

static void read_facts(pid_t pid, struct proc_facts *p)
{
	char id[16];

	memset(p, 0, sizeof *p);
	read_stat(pid, p);
	snprintf(id, sizeof id, "%d", (int)pid);
	read_status(id, p, "CapPrm:");
}

/* ---------- no memory: -ESRCH of a process that is there ---------- */

static int say_no_memory(const char *cmd, pid_t pid)
{
	struct proc_facts p;
	char comm[64] = "";

	read_facts(pid, &p);
	sp_comm_read(pid, comm, sizeof comm);
	if (p.state && (p.flags & PF_KTHREAD))
		return cli_error(EXIT_USAGE, "%s: process %d (%s) is a kernel thread: it has "
				 "no user memory to promote", cmd, (int)pid, comm);
	if (p.state == 'Z')
		return cli_error(EXIT_USAGE, "%s: process %d (%s) has exited (a zombie its "
				 "parent has not reaped): it has no memory to promote", cmd, (int)pid, comm);
	return cli_error(EXIT_USAGE, "%s: no process %d", cmd, (int)pid);
}

/* ---------- ptrace read access refused: -EACCES ---------- */

/* The kernel's first test: our filesystem ids (our effective ones, unless changed)
 * are each of its real, effective and saved ids (kernel/ptrace.c). */
static bool same_owner(const struct proc_facts *p)
{
	for (int i = 0; i < 3; i++)
		if (p->uid[i] != (unsigned long)geteuid() || p->gid[i] != (unsigned long)getegid())
			return false;
	return true;
}

/* The kernel's second: a process that changed its ids or said PR_SET_DUMPABLE 0 is
 * not dumpable, and /proc shows its files as root's then (task_dump_owner); a
 * process of root's cannot be told this way. */
static bool not_dumpable(pid_t pid, const struct proc_facts *p)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	return p->ids && p->uid[1] != 0 && stat(path, &st) == 0 && st.st_uid == 0;
}

/* The name of a capability bit, for the few a process may hold that we lack. */
static const char *cap_name(int bit)
{
	static const char *const names[] = {
		"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID",
		"SETUID", "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST",
		"NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO",
		"SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
		"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE",
		"AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
		"BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
	};
	return bit >= 0 && bit < (int)(sizeof names / sizeof names[0]) ? names[bit] : "?";
}

/* "CAP_SYS_RESOURCE, CAP_SYS_NICE": the capabilities of mask, the first few. */
static void cap_list(unsigned long long mask, char *buf, size_t len)
{
	size_t used = 0;
	int shown = 0;

	buf[0] = '\0';
	for (int bit = 0; bit < 64 && mask; bit++) {
		if (!(mask & (1ULL << bit)))
			continue;
		mask &= ~(1ULL << bit);
		if (shown++ == 3) {
			snprintf(buf + used, len - used, ", ...");
			return;
		}
		used += (size_t)snprintf(buf + used, len - used, "%sCAP_%s", used ? ", " : "",
					 cap_name(bit));
		if (used >= len)
			return;
	}
}

/* Says why the kernel refused us read access to pid's memory (mm_access: the ptrace
 * check), from the tests it makes in order: ownership, dumpable, capabilities, then
 * the security modules, which leave no trace in /proc. */
static int say_no_access(const char *cmd, pid_t pid)
{
	struct proc_facts p, me;
	char caps[160];

	read_facts(pid, &p);
	memset(&me, 0, sizeof me);
	read_status("self", &me, "CapEff:");
	bool traces = me.caps && (me.cap_prm & (1ULL << CAP_SYS_PTRACE));
	bool own = p.ids && same_owner(&p);

	if (!traces && p.ids && !own)
		return cli_error(EXIT_FAIL, "%s: process %d runs as uid %lu gid %lu, not as us: "
				 "reading another user's memory needs CAP_SYS_PTRACE (root)", cmd,
				 (int)pid, p.uid[1], p.gid[1]);
	if (!traces && not_dumpable(pid, &p))
		return cli_error(EXIT_FAIL, "%s: process %d is not dumpable (it changed its "
				 "ids or set PR_SET_DUMPABLE 0): reading its memory needs "
				 "CAP_SYS_PTRACE", cmd, (int)pid);
	if (!traces && p.caps && me.caps && (p.cap_prm & ~me.cap_prm)) {
		cap_list(p.cap_prm & ~me.cap_prm, caps, sizeof caps);
		return cli_error(EXIT_FAIL, "%s: process %d holds capabilities we lack (%s): "
				 "reading its memory needs CAP_SYS_PTRACE", cmd, (int)pid, caps);
	}
	return cli_error(EXIT_FAIL, "%s: process %d: the kernel refuses access to its memory "
			 "though we%s%s: a security policy protects it (an LSM such as Landlock, "
			 "AppArmor, SELinux or a BPF program)", cmd, (int)pid,
			 own ? " own it" : "", traces ? (own ? " and hold CAP_SYS_PTRACE" :
							 " hold CAP_SYS_PTRACE") : " may read it");
}

int promote_say_fatal(const char *cmd, pid_t pid, int err)
{
	switch (err) {
	case -ESRCH:
		return say_no_memory(cmd, pid);
	case -EPERM:
		return cli_error(EXIT_FAIL, "%s: process %d: permission refused: collapsing "
				 "another process's memory needs CAP_SYS_NICE (run as root)", cmd, (int)pid);
	case -EACCES:
		return say_no_access(cmd, pid);
	case -ENOSYS:
		return cli_error(EXIT_FAIL, "%s: this kernel has no process_madvise(2) "
				 "(Linux 5.10 and later have it)", cmd);
	case -EINVAL:
		return cli_error(EXIT_FAIL, "%s: this kernel does not take MADV_COLLAPSE "
				 "through process_madvise(2) (Linux 6.1 and later do)", cmd);
	case -EPROTO:
		return cli_error(EXIT_FAIL, "%s: /proc/%d/smaps is not what smaps should be", cmd,
				 (int)pid);
	default:
		return cli_error(EXIT_FAIL, "%s: process %d: %s", cmd, (int)pid, strerror(-err));
	}
}
