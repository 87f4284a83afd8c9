/* pools_conf.c - the pools kept across reboots: pools.conf read, checked and rewritten. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* A line longer than this is no line of ours (the longest real one is ~30 bytes). */
#define LINE_MAX_LEN 256

static const char header[] =
	"# superpage pools.conf: the hugetlb pools set at boot by superpage-pools.service\n"
	"# (superpage pool --apply). One pool a line: SIZE COUNT [node=N], for example\n"
	"# \"2M 512\" (system-wide) or \"1G 4 node=0\" (NUMA node 0 only); '#' starts a\n"
	"# comment. Written by superpage pool --persist; see superpage(1).\n";

const char *pools_conf_path(const char *given)
{
	const char *env;

	if (given && *given)
		return given;
	env = getenv("SUPERPAGE_POOLS_CONF");
	return env && *env ? env : POOLS_CONF_DEFAULT;
}

const char *pools_conf_line(const struct pools_conf_entry *e, char *buf, size_t len)
{
	char page[32];

	cli_page(e->page_size, page, sizeof page);
	if (e->node >= 0)
		snprintf(buf, len, "%s %ld node=%d", page, e->count, e->node);
	else
		snprintf(buf, len, "%s %ld", page, e->count);
	return buf;
}

/* One line: 0 for a blank or comment line, 1 for a pool (in *e), -1 when it is neither
 * (why says what is wrong). line is changed (cut at '#', split into words). */
static int parse_line(char *line, struct pools_conf_entry *e, char *why, size_t len)
{
	char *words[4], *save = NULL, *w;
	uint64_t v;
	int n = 0, rc;

	line[strcspn(line, "#")] = 0;
	for (w = strtok_r(line, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == 3) {
			snprintf(why, len, "unexpected '%s' (a line is SIZE COUNT [node=N])", w);
			return -1;
		}
		words[n++] = w;
	}
	if (n == 0)
		return 0;
	if (n == 1) {
		snprintf(why, len, "'%s' has no COUNT (a line is SIZE COUNT [node=N])", words[0]);
		return -1;
	}
	rc = sp_parse_size(words[0], &v);
	if (rc < 0 || v == 0) {
		snprintf(why, len, "bad size '%s' (a page size such as 2M or 1G)", words[0]);
		return -1;
	}
	e->page_size = v;
	rc = sp_parse_count(words[1], &v);
	if (rc < 0 || v > LONG_MAX) {
		snprintf(why, len, "bad count '%s' (a number of pages: 0, 1, 2, ...)", words[1]);
		return -1;
	}
	e->count = (long)v;
	e->node = -1;
	if (n == 3) {
		if (strncmp(words[2], "node=", 5) || sp_parse_count(words[2] + 5, &v) < 0 ||
		    v > INT_MAX) {
			snprintf(why, len, "bad '%s' (node=N, a NUMA node number)", words[2]);
			return -1;
		}
		e->node = (int)v;
	}
	return 1;
}

/* The entry of c for that pool, or NULL. */
static struct pools_conf_entry *find(struct pools_conf *c, uint64_t page_size, int node)
{
	for (int i = 0; i < c->n; i++)
		if (c->e[i].page_size == page_size && c->e[i].node == node)
			return &c->e[i];
	return NULL;
}

/* Reads the next line of f into buf (without checking it). 1, 0 at the end, -1 if
 * it is too long. */
static int next_line(FILE *f, char *buf, size_t len)
{
	size_t n;

	if (!fgets(buf, (int)len, f))
		return 0;
	n = strlen(buf);
	if (n == len - 1 && buf[n - 1] != '\n' && !feof(f))
		return -1;
	return 1;
}

int pools_conf_read(const char *path, struct pools_conf *c, char *err, size_t len)
{
	char line[LINE_MAX_LEN + 2], why[160];
	struct pools_conf_entry e, *seen;
	FILE *f = fopen(path, "re");
	int rc = 0, r;

	memset(c, 0, sizeof *c);
	err[0] = 0;
	if (!f) {
		if (errno == ENOENT)
			return 0;
		rc = -errno;
		snprintf(err, len, "cannot read %s: %s", path, strerror(-rc));
		return rc;
	}
	c->present = true;
	while ((r = next_line(f, line, sizeof line)) != 0) {
		c->lines++;
		if (r < 0) {
			snprintf(why, sizeof why, "line longer than %d characters", LINE_MAX_LEN);
			goto malformed;
		}
		r = parse_line(line, &e, why, sizeof why);
		if (r < 0)
			goto malformed;
		if (r == 0)
			continue;
		e.line = c->lines;
		if ((seen = find(c, e.page_size, e.node)) != NULL) {
			snprintf(why, sizeof why, "this pool is on line %d already", seen->line);
			goto malformed;
		}
		if (c->n == POOLS_CONF_MAX) {
			snprintf(why, sizeof why, "more than %d pools", POOLS_CONF_MAX);
			goto malformed;
		}
		c->e[c->n++] = e;
	}
	if (ferror(f)) {
		rc = -EIO;
		snprintf(err, len, "cannot read %s: %s", path, strerror(EIO));
	}
	fclose(f);
	return rc;
malformed:
	fclose(f);
	snprintf(err, len, "%s:%d: %s", path, c->lines, why);
	return -EINVAL;
}

long pools_conf_running(const struct sp_system *s, const struct pools_conf_entry *e)
{
	const struct sp_pool *pools = s->pools;
	int n = s->n_sizes;

	if (e->node >= 0) {
		n = 0;
		for (int k = 0; k < s->n_nodes; k++)
			if (s->nodes[k].node == e->node) {
				pools = s->nodes[k].pools;
				n = s->nodes[k].n_pools;
			}
	}
	for (int i = 0; i < n; i++)
		if (pools[i].page_size == e->page_size)
			return pools[i].total;
	return -1;
}

/* mkdir -p of the directory that holds path. */
static int make_dirs(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The rename itself on disk (best effort: the file is in place either way). */
static void sync_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd;

	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
		return;
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Copies the old file (if any) to out with the pool's line replaced by want (or
 * dropped: want NULL), or want appended when there was none. Sets *found. */
static void copy_lines(const char *path, FILE *out, const struct pools_conf_entry *key,
		      const char *want, bool *found)
{
	char line[LINE_MAX_LEN + 2], copy[LINE_MAX_LEN + 2], why[160];
	struct pools_conf_entry e;
	FILE *in = fopen(path, "re");

	*found = false;
	if (!in)
		fputs(header, out);
	while (in && next_line(in, line, sizeof line) > 0) {
		memcpy(copy, line, sizeof line);
		if (parse_line(copy, &e, why, sizeof why) == 1 && e.page_size == key->page_size &&
		    e.node == key->node) {
			*found = true;
			if (want)
				fprintf(out, "%s\n", want);
			continue;
		}
		fputs(line, out);
		/* A last line without its newline gets one before what follows. */
		if (line[strlen(line) - 1] != '\n')
			fputc('\n', out);
	}
	if (in)
		fclose(in);
	if (want && !*found)
		fprintf(out, "%s\n", want);
}

int pools_conf_update(const char *path, const struct pools_conf_entry *key, bool remove,
		      bool *found, char *err, size_t len)
{
	static struct pools_conf old;
	char tmp[PATH_MAX], want[64];
	mode_t mode = 0644;
	FILE *out = NULL;
	bool made = false;
	struct stat st;
	int rc, fd;

	/* A file someone edited into something we cannot read is not overwritten. */
	rc = pools_conf_read(path, &old, err, len);
	if (rc < 0)
		return rc;
	*found = find(&old, key->page_size, key->node) != NULL;
	if (remove && !*found)
		return 0;
	if ((rc = make_dirs(path)) < 0) {
		snprintf(err, len, "cannot make the directory of %s: %s", path, strerror(-rc));
		return rc;
	}
	if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", path) >= (int)sizeof tmp) {
		snprintf(err, len, "cannot write %s: %s", path, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	/* The new file keeps the old one's mode (mkostemp makes it 0600). */
	if (stat(path, &st) == 0)
		mode = st.st_mode & 07777;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		goto failed;
	made = true;
	if (fchmod(fd, mode) < 0 || !(out = fdopen(fd, "w"))) {
		close(fd);
		goto failed;
	}
	copy_lines(path, out, key, remove ? NULL : pools_conf_line(key, want, sizeof want), found);
	/* On disk before it takes the old file's name: a crash leaves one or the other. */
	if (fflush(out) != 0 || ferror(out) || fsync(fileno(out)) < 0) {
		rc = errno;
		fclose(out);
		errno = rc;
		goto failed;
	}
	if (fclose(out) != 0 || rename(tmp, path) < 0)
		goto failed;
	sync_dir(path);
	return 0;
failed:
	rc = errno ? -errno : -EIO;
	if (made)
		unlink(tmp);
	snprintf(err, len, "cannot write %s: %s", path, strerror(-rc));
	return rc;
}
