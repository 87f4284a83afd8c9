/* container.c - what status and stat say of containers: whether the command runs in
 * one (and which), the memory and hugetlb cgroups a process is in with their limits as
 * far as they can be seen from here, and what cannot be seen. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"

/* v1 shows "no limit" as the largest multiple of the page below 2^63. */
#define V1_NONE (1ull << 62)

/* A whole small file into buf, NUL-terminated; its length or -1. */
static ssize_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t have = 0;
	ssize_t n;

	if (fd < 0)
		return -1;
	while (have + 1 < len && (n = read(fd, buf + have, len - 1 - have)) > 0)
		have += (size_t)n;
	close(fd);
	buf[have] = 0;
	return (ssize_t)have;
}

/* A file of one number or "max": the value, CLI_NO_LIMIT for none; false if unreadable. */
static bool read_value(const char *dir, const char *name, uint64_t *out)
{
	char path[CLI_CG_PATH + 64], buf[64], *end;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if (slurp(path, buf, sizeof buf) <= 0)
		return false;
	if (!strncmp(buf, "max", 3)) {
		*out = CLI_NO_LIMIT;
		return true;
	}
	errno = 0;
	*out = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return false;
	if (*out >= V1_NONE)
		*out = CLI_NO_LIMIT;
	return true;
}

/* ---------- where the hierarchies are mounted here ---------- */

struct mount_of {
	char dir[CLI_CG_PATH], root[CLI_CG_PATH];
	bool found;
};

struct mounts {
	struct mount_of mem1, huge1, v2;
};

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == 0 || p[n] == ','))
			return true;
	return false;
}

/* mountinfo's octal escapes (\040) undone, in place. */
static void unescape(char *s)
{
	char *w = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*w++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*w++ = *s;
		}
	}
	*w = 0;
}

static void read_mounts(struct mounts *m)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	memset(m, 0, sizeof *m);
	while (f && fgets(line, sizeof line, f)) {
		char *w[6], *save, *t, *fstype = NULL, *super = NULL;
		int n = 0;

		line[strcspn(line, "\n")] = 0;
		for (t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
			if (n < 6) {
				w[n++] = t;
			} else if (!strcmp(t, "-")) {
				fstype = strtok_r(NULL, " ", &save);
				if (fstype && strtok_r(NULL, " ", &save))
					super = strtok_r(NULL, " ", &save);
				break;
			}
		}
		if (n < 6 || !fstype)
			continue;
		struct mount_of *h = NULL;
		if (!strcmp(fstype, "cgroup2"))
			h = &m->v2;
		else if (!strcmp(fstype, "cgroup") && super && has_word(super, "memory"))
			h = &m->mem1;
		else if (!strcmp(fstype, "cgroup") && super && has_word(super, "hugetlb"))
			h = &m->huge1;
		if (!h || h->found)
			continue;
		unescape(w[3]);
		unescape(w[4]);
		snprintf(h->root, sizeof h->root, "%s", w[3]);
		snprintf(h->dir, sizeof h->dir, "%s", w[4]);
		h->found = true;
	}
	if (f)
		fclose(f);
}

/* The directory here of cgroup path in the hierarchy mounted at m; false when the
 * path is not below what the mount shows. */
static bool dir_of(const struct mount_of *m, const char *path, char *out, size_t len)
{
	size_t r = strlen(m->root);
	const char *rel = path;

	if (strcmp(m->root, "/")) {
		if (strncmp(path, m->root, r) || (path[r] != '/' && path[r] != 0))
			return false;
		rel = path + r;
	}
	if (!strcmp(rel, "/"))
		rel = "";
	return (size_t)snprintf(out, len, "%s%s", m->dir, rel) < len;
}

/* Does the v2 cgroup at dir have the controller (its parent's cgroup.subtree_control
 * gives it; the root has every one of cgroup.controllers)? */
static bool v2_has(const char *dir, const char *controller)
{
	char path[CLI_CG_PATH + 32], buf[512];
	char *save, *t;

	snprintf(path, sizeof path, "%s/cgroup.controllers", dir);
	if (slurp(path, buf, sizeof buf) < 0)
		return false;
	for (t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
		if (!strcmp(t, controller))
			return true;
	return false;
}

/* The least limit in name from dir up to the mount's directory (top). */
static uint64_t least_limit(const char *dir, const char *top, const char *name)
{
	char d[CLI_CG_PATH];
	uint64_t least = CLI_NO_LIMIT, v;

	snprintf(d, sizeof d, "%s", dir);
	for (;;) {
		if (read_value(d, name, &v) && v < least)
			least = v;
		char *slash = strrchr(d, '/');
		if (strlen(d) <= strlen(top) || !slash)
			break;
		*slash = 0;
	}
	return least;
}

static const struct { const char *v1, *v2; uint64_t size; } huge_files[CLI_CG_HUGE] = {
	{ "2MB", "2MB", 2ull << 20 },
	{ "1GB", "1GB", 1ull << 30 },
};

void cli_cgroups_of(pid_t pid, struct cli_cgroups *c)
{
	struct mounts m;
	char path[64], line[CLI_CG_PATH + 64], v2path[CLI_CG_PATH] = "", mem1[CLI_CG_PATH] = "",
							    huge1[CLI_CG_PATH] = "";
	FILE *f;

	memset(c, 0, sizeof *c);
	c->mem_limit = CLI_NO_LIMIT;
	for (int k = 0; k < CLI_CG_HUGE; k++) {
		c->huge[k].page_size = huge_files[k].size;
		c->huge[k].limit = CLI_NO_LIMIT;
	}
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		c->read_error = errno;
		return;
	}
	while (fgets(line, sizeof line, f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;

		if (!b)
			continue;
		*b++ = 0;
		b[strcspn(b, "\n")] = 0;
		if (!strcmp(line, "0:") && a[1] == 0)
			snprintf(v2path, sizeof v2path, "%s", b);
		if (has_word(a + 1, "memory"))
			snprintf(mem1, sizeof mem1, "%s", b);
		if (has_word(a + 1, "hugetlb"))
			snprintf(huge1, sizeof huge1, "%s", b);
	}
	fclose(f);
	read_mounts(&m);

	/* memory: v1 where it is bound there, else v2 */
	char dir[CLI_CG_PATH];
	const struct mount_of *mm = NULL;
	if (mem1[0]) {
		c->mem_version = 1;
		snprintf(c->mem_path, sizeof c->mem_path, "%s", mem1);
		mm = m.mem1.found ? &m.mem1 : NULL;
	} else if (v2path[0] && m.v2.found && dir_of(&m.v2, v2path, dir, sizeof dir) &&
		   v2_has(dir, "memory")) {
		c->mem_version = 2;
		snprintf(c->mem_path, sizeof c->mem_path, "%s", v2path);
		mm = &m.v2;
	}
	if (mm && dir_of(mm, c->mem_path, dir, sizeof dir)) {
		bool v1 = c->mem_version == 1;
		uint64_t high;

		c->mem_visible = read_value(dir, v1 ? "memory.usage_in_bytes" : "memory.current",
					    &c->mem_usage);
		c->mem_limit = least_limit(dir, mm->dir, v1 ? "memory.limit_in_bytes" : "memory.max");
		if (!v1 && (high = least_limit(dir, mm->dir, "memory.high")) < c->mem_limit)
			c->mem_limit = high;
	}

	/* hugetlb: the same way */
	const struct mount_of *hm = NULL;
	if (huge1[0]) {
		c->huge_version = 1;
		snprintf(c->huge_path, sizeof c->huge_path, "%s", huge1);
		hm = m.huge1.found ? &m.huge1 : NULL;
	} else if (v2path[0] && m.v2.found && dir_of(&m.v2, v2path, dir, sizeof dir) &&
		   v2_has(dir, "hugetlb")) {
		c->huge_version = 2;
		snprintf(c->huge_path, sizeof c->huge_path, "%s", v2path);
		hm = &m.v2;
	}
	if (hm && dir_of(hm, c->huge_path, dir, sizeof dir) && !strcmp(dir, hm->dir) &&
	    !strcmp(c->huge_path, "/")) {
		c->huge_visible = c->huge_root = true; /* the root cgroup: no files, no limit */
	} else if (hm && dir_of(hm, c->huge_path, dir, sizeof dir)) {
		for (int k = 0; k < CLI_CG_HUGE; k++) {
			char name[64];
			bool v1 = c->huge_version == 1;

			snprintf(name, sizeof name, "hugetlb.%s.%s", v1 ? huge_files[k].v1 : huge_files[k].v2,
				 v1 ? "usage_in_bytes" : "current");
			if (!read_value(dir, name, &c->huge[k].usage))
				continue;
			c->huge_visible = true;
			c->huge[k].present = true;
			snprintf(name, sizeof name, "hugetlb.%s.%s", v1 ? huge_files[k].v1 : huge_files[k].v2,
				 v1 ? "limit_in_bytes" : "max");
			c->huge[k].limit = least_limit(dir, hm->dir, name);
		}
	}
}

/* ---------- the container this command runs in ---------- */

/* KEY="VALUE" of podman's /run/.containerenv. */
static void env_value(const char *text, const char *key, char *out, size_t len)
{
	size_t n = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, n) || p[n] != '=')
			continue;
		p += n + 1;
		if (*p == '"')
			p++;
		size_t k = strcspn(p, "\"\n");
		snprintf(out, len, "%.*s", (int)k, p);
		return;
	}
}

/* The value of container= in a process's environment (systemd's convention, which
 * podman, LXC and systemd-nspawn follow). */
static bool environ_container(const char *pid, char *out, size_t len)
{
	char path[64], buf[16384];
	ssize_t n;

	snprintf(path, sizeof path, "/proc/%s/environ", pid);
	if ((n = slurp(path, buf, sizeof buf)) <= 0)
		return false;
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (!strncmp(p, "container=", 10) && p[10]) {
			snprintf(out, len, "%s", p + 10);
			return true;
		}
	return false;
}

bool cli_container_of_cgroup(const char *path, char *engine, size_t elen, char *id, size_t ilen)
{
	static const struct { const char *prefix, *engine; } kinds[] = {
		{ "libpod-conmon-", NULL }, /* podman's monitor, not the container */
		{ "libpod-", "podman" },
		{ "docker-", "docker" },
		{ "cri-containerd-", "containerd" },
		{ "crio-conmon-", NULL },
		{ "crio-", "cri-o" },
	};
	const char *leaf = strrchr(path, '/');

	leaf = leaf ? leaf + 1 : path;
	for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		size_t n = strlen(kinds[k].prefix), m;

		if (strncmp(leaf, kinds[k].prefix, n))
			continue;
		if (!kinds[k].engine)
			return false;
		m = strspn(leaf + n, "0123456789abcdef");
		if (m < 12)
			return false;
		snprintf(engine, elen, "%s", kinds[k].engine);
		snprintf(id, ilen, "%.*s", (int)m, leaf + n);
		return true;
	}
	return false;
}

/* podman's monitor, conmon, runs as "conmon ... -c ID ... -n NAME ...", one for each
 * running container: its command line maps the id to the name without asking podman
 * (a podman ps takes a tenth of a second and the engine's lock). */
bool cli_podman_name(const char *id, char *name, size_t len)
{
	static char (*ids)[65], (*names)[128];
	static int n, scanned;
	DIR *d;
	struct dirent *e;

	if (!scanned) {
		scanned = 1;
		d = opendir("/proc");
		while (d && (e = readdir(d))) {
			char path[300], buf[8192], *id_at = NULL, *name_at = NULL;
			ssize_t got;

			if (e->d_name[0] < '1' || e->d_name[0] > '9')
				continue;
			snprintf(path, sizeof path, "/proc/%s/comm", e->d_name);
			if (slurp(path, buf, sizeof buf) <= 0 || strcmp(buf, "conmon\n"))
				continue;
			snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
			if ((got = slurp(path, buf, sizeof buf)) <= 0)
				continue;
			for (char *a = buf; a < buf + got; a += strlen(a) + 1) {
				char *v = a + strlen(a) + 1;

				if (v >= buf + got)
					break;
				if (!strcmp(a, "-c") || !strcmp(a, "--cid"))
					id_at = v;
				else if (!strcmp(a, "-n") || !strcmp(a, "--name"))
					name_at = v;
			}
			if (!id_at || !name_at)
				continue;
			void *ni = realloc(ids, (size_t)(n + 1) * sizeof *ids);
			if (!ni)
				break;
			ids = ni;
			void *nn = realloc(names, (size_t)(n + 1) * sizeof *names);
			if (!nn)
				break;
			names = nn;
			snprintf(ids[n], sizeof ids[n], "%s", id_at);
			snprintf(names[n], sizeof names[n], "%s", name_at);
			n++;
		}
		if (d)
			closedir(d);
	}
	for (int i = 0; i < n; i++)
		if (!strcmp(ids[i], id)) {
			snprintf(name, len, "%s", names[i]);
			return true;
		}
	return false;
}

void cli_container_here(struct cli_container *c)
{
	char buf[4096];
	struct statvfs sv;

	memset(c, 0, sizeof *c);
	/* In the first PID namespace, pid 2 is the kernel's kthreadd; a namespace of its
	 * own shows no kernel thread. */
	c->pid_ns = slurp("/proc/2/comm", buf, sizeof buf) < 0 || strcmp(buf, "kthreadd\n");
	if (slurp("/run/.containerenv", buf, sizeof buf) >= 0) {
		c->inside = true;
		snprintf(c->how, sizeof c->how, "/run/.containerenv");
		env_value(buf, "engine", c->engine, sizeof c->engine);
		env_value(buf, "name", c->name, sizeof c->name);
		env_value(buf, "id", c->id, sizeof c->id);
		if (!c->engine[0])
			snprintf(c->engine, sizeof c->engine, "podman");
		/* (podman writes name and id there for --privileged containers only) */
	} else if (environ_container("1", c->engine, sizeof c->engine) ||
		   environ_container("self", c->engine, sizeof c->engine)) {
		c->inside = true;
		snprintf(c->how, sizeof c->how, "container= in the environment");
	} else if (c->pid_ns && access("/.dockerenv", F_OK) == 0) {
		/* (A machine whose root was made from a Docker image has the file too: only
		 * in a PID namespace of its own is it a container.) */
		c->inside = true;
		snprintf(c->how, sizeof c->how, "/.dockerenv");
		snprintf(c->engine, sizeof c->engine, "docker");
	} else if (getenv("KUBERNETES_SERVICE_HOST")) {
		c->inside = true;
		snprintf(c->how, sizeof c->how, "KUBERNETES_SERVICE_HOST");
		snprintf(c->engine, sizeof c->engine, "kubernetes");
	}
	c->sysfs_read_only = statvfs("/sys/kernel/mm", &sv) == 0 && (sv.f_flag & ST_RDONLY);
}

/* ---------- saying it ---------- */

/* "512.0 MiB (3.1 MiB in use)", "none (3.1 MiB in use)". */
static const char *limit_text(uint64_t limit, uint64_t usage, char *buf, size_t len)
{
	char a[32], b[32];

	if (limit == CLI_NO_LIMIT)
		snprintf(buf, len, "no limit (%s in use)", cli_human(usage, b, sizeof b));
	else
		snprintf(buf, len, "limit %s (%s in use)", cli_human(limit, a, sizeof a),
			 cli_human(usage, b, sizeof b));
	return buf;
}

void cli_cgroups_print(const struct cli_cgroups *c, const char *indent)
{
	char buf[128], pg[16];

	if (c->read_error) {
		printf("%smemory cgroup: cannot read its cgroups (%s)\n", indent, strerror(c->read_error));
		return;
	}
	if (!c->mem_version)
		printf("%smemory cgroup: none (no memory controller)\n", indent);
	else if (!c->mem_visible)
		printf("%smemory cgroup %s (v%d): its files are not visible here\n", indent,
		       c->mem_path, c->mem_version);
	else
		printf("%smemory cgroup %s (v%d): %s\n", indent, c->mem_path, c->mem_version,
		       limit_text(c->mem_limit, c->mem_usage, buf, sizeof buf));
	if (!c->huge_version) {
		printf("%shugetlb cgroup: no hugetlb controller is mounted here: a hugetlb limit, if "
		       "one is set, cannot be seen\n", indent);
		return;
	}
	if (!c->huge_visible) {
		printf("%shugetlb cgroup %s (v%d): its files are not visible here\n", indent,
		       c->huge_path, c->huge_version);
		return;
	}
	if (c->huge_root) {
		printf("%shugetlb cgroup / (v%d): the root, which has no limit\n", indent, c->huge_version);
		return;
	}
	printf("%shugetlb cgroup %s (v%d):", indent, c->huge_path, c->huge_version);
	for (int k = 0; k < CLI_CG_HUGE; k++)
		if (c->huge[k].present)
			printf("%s %s %s", k ? ";" : "", cli_page(c->huge[k].page_size, pg, sizeof pg),
			       limit_text(c->huge[k].limit, c->huge[k].usage, buf, sizeof buf));
	putchar('\n');
}

static void json_limit(struct json *j, uint64_t limit)
{
	if (limit == CLI_NO_LIMIT)
		json_null(j);
	else
		json_uint(j, limit);
}

void cli_cgroups_json(struct json *j, const struct cli_cgroups *c)
{
	char pg[16];

	json_object_begin(j);
	json_key(j, "memory");
	if (!c->mem_version) {
		json_null(j);
	} else {
		json_object_begin(j);
		json_key(j, "cgroup");
		json_string(j, c->mem_path);
		json_key(j, "version");
		json_int(j, c->mem_version);
		json_key(j, "visible");
		json_bool(j, c->mem_visible);
		json_key(j, "limit_bytes");
		json_limit(j, c->mem_visible ? c->mem_limit : CLI_NO_LIMIT);
		json_key(j, "usage_bytes");
		json_uint(j, c->mem_usage);
		json_object_end(j);
	}
	json_key(j, "hugetlb");
	if (!c->huge_version) {
		json_null(j);
	} else {
		json_object_begin(j);
		json_key(j, "cgroup");
		json_string(j, c->huge_path);
		json_key(j, "version");
		json_int(j, c->huge_version);
		json_key(j, "visible");
		json_bool(j, c->huge_visible);
		for (int k = 0; k < CLI_CG_HUGE; k++) {
			if (!c->huge[k].present)
				continue;
			json_key(j, cli_page(c->huge[k].page_size, pg, sizeof pg));
			json_object_begin(j);
			json_key(j, "limit_bytes");
			json_limit(j, c->huge[k].limit);
			json_key(j, "usage_bytes");
			json_uint(j, c->huge[k].usage);
			json_object_end(j);
		}
		json_object_end(j);
	}
	json_object_end(j);
}

/* What cannot be seen or done from inside, one phrase each; how many. */
int cli_container_blind(const struct cli_container *c, const struct cli_cgroups *g,
			const char **what, int max)
{
	int n = 0;

	if (!c->inside)
		return 0;
	if (c->sysfs_read_only && n < max)
		what[n++] = "/sys is read-only: pools and THP modes cannot be set from here (on the "
			    "host: superpage pool)";
	if (n < max)
		what[n++] = "the pools and THP modes shown are the host's, shared with everything on it";
	if (!g->huge_version && n < max)
		what[n++] = "no hugetlb controller here: the container's hugetlb limit cannot be seen";
	if (g->mem_version && !g->mem_visible && n < max)
		what[n++] = "the memory cgroup's files are not mounted here: its limit cannot be seen";
	if (c->pid_ns && n < max)
		what[n++] = "processes outside the container (its own PID namespace): stat --all "
			    "lists the container's only";
	return n;
}
