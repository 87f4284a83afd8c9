/* cdi.c - superpage cdi: a Container Device Interface spec with one device per backing,
 * so that podman run --device superpage.io/run=auto runs a container's program as
 * superpage run --backing auto would. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "preload.h"

#define CDI_DEFAULT "/etc/cdi/superpage.yaml"
/* The newest version podman 4.3 (Debian 12) reads; containerd 1.7 and CRI-O read it too. */
#define CDI_VERSION "0.5.0"
#define CDI_KIND "superpage.io/run"
/* Where the container sees the runtime and the command (a static program: it runs in
 * any image). */
#define CT_RUNTIME "/usr/lib/superpage/" SP_RUNTIME_NAME
#define CT_COMMAND "/usr/local/bin/superpage"

static const char *const devices[] = { "auto", "thp", "2m", "1g", "4k" };
#define N_DEVICES (sizeof devices / sizeof devices[0])

void usage_cdi(void)
{
	fputs("usage: superpage cdi [--print | --output FILE]\n"
	      "\n"
	      "Writes a Container Device Interface spec (" CDI_DEFAULT ") with one device\n"
	      "per backing, " CDI_KIND "=auto, thp, 2m, 1g and 4k, so that\n"
	      "  podman run --device " CDI_KIND "=auto IMAGE CMD\n"
	      "runs CMD as superpage run --backing auto CMD would: the runtime is mounted\n"
	      "read-only at " CT_RUNTIME ", LD_PRELOAD and SUPERPAGE_BACKING\n"
	      "are set, and the command is mounted at " CT_COMMAND " (superpage status\n"
	      "and stat inside the container). The image needs the glibc the runtime was built\n"
	      "against or a later one; programs of musl or static images are promoted from the\n"
	      "host instead (superpage promote PID). Says once what it finds that a device\n"
	      "cannot give here.\n"
	      "\n"
	      "  --print        write the spec to stdout instead\n"
	      "  --output FILE  write it to FILE (its directory is made if need be)\n",
	      stdout);
}

/* ---------- what the runtime needs of the image ---------- */

/* "2.34" > "2.4": compares dotted version numbers, part by part. */
static int version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		char *ea, *eb;
		unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);

		if (x != y)
			return x < y ? -1 : 1;
		a = *ea == '.' ? ea + 1 : ea;
		b = *eb == '.' ? eb + 1 : eb;
		if (ea == a && eb == b) /* neither moved: not digits */
			break;
	}
	return 0;
}

static bool read_at(int fd, void *buf, size_t len, uint64_t off)
{
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* The newest GLIBC_x.y the runtime (a 64-bit ELF) asks of libc.so.6, from its
 * .gnu.version_r, into out; false if it cannot be read. */
static bool glibc_needed(const char *path, char *out, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Shdr vr, strs;
	bool found = false;
	char *str = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	out[0] = 0;
	if (fd < 0)
		return false;
	if (!read_at(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr))
		goto done;
	for (unsigned i = 0; i < eh.e_shnum && !found; i++)
		if (read_at(fd, &vr, sizeof vr, eh.e_shoff + (uint64_t)i * sizeof vr) &&
		    vr.sh_type == SHT_GNU_verneed)
			found = true;
	if (!found || vr.sh_link >= eh.e_shnum ||
	    !read_at(fd, &strs, sizeof strs, eh.e_shoff + (uint64_t)vr.sh_link * sizeof strs) ||
	    strs.sh_size == 0 || strs.sh_size > (1u << 20) || !(str = malloc(strs.sh_size + 1)) ||
	    !read_at(fd, str, strs.sh_size, strs.sh_offset))
		goto done;
	str[strs.sh_size] = 0;
	found = false;
	uint64_t at = vr.sh_offset;
	for (unsigned n = 0; n < 64; n++) {
		Elf64_Verneed vn;

		if (!read_at(fd, &vn, sizeof vn, at) || vn.vn_file >= strs.sh_size)
			break;
		uint64_t aux = at + vn.vn_aux;
		for (unsigned k = 0; k < vn.vn_cnt && k < 256; k++) {
			Elf64_Vernaux va;

			if (!read_at(fd, &va, sizeof va, aux) || va.vna_name >= strs.sh_size)
				break;
			const char *v = str + va.vna_name;
			if (!strcmp(str + vn.vn_file, "libc.so.6") && !strncmp(v, "GLIBC_", 6) &&
			    v[6] >= '0' && v[6] <= '9' && (!out[0] || version_cmp(v + 6, out) > 0)) {
				snprintf(out, len, "%s", v + 6);
				found = true;
			}
			if (!va.vna_next)
				break;
			aux += va.vna_next;
		}
		if (!vn.vn_next)
			break;
		at += vn.vn_next;
	}
done:
	free(str);
	close(fd);
	return found;
}

/* ---------- the spec ---------- */

/* s as a YAML double-quoted string. */
static void yaml_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void yaml_mount(FILE *f, const char *indent, const char *host, const char *ct)
{
	fprintf(f, "%s- hostPath: ", indent);
	yaml_string(f, host);
	fprintf(f, "\n%s  containerPath: ", indent);
	yaml_string(f, ct);
	fprintf(f, "\n%s  options: [\"ro\", \"nosuid\", \"nodev\", \"bind\"]\n", indent);
}

static void write_spec(FILE *f, const char *rt, const char *exe, const char *glibc)
{
	fprintf(f, "# superpage.yaml - superpage's Container Device Interface spec, written by\n"
		   "# \"superpage cdi\" (superpage %s). A container given a device,\n"
		   "#   podman run --device " CDI_KIND "=auto IMAGE CMD\n"
		   "# runs CMD as \"superpage run --backing auto CMD\" would: the runtime mounted\n"
		   "# read-only, LD_PRELOAD and SUPERPAGE_BACKING set; one device per backing.\n"
		   "# The image needs glibc %s or later; the command is mounted for\n"
		   "# \"superpage status\" and \"superpage stat\" inside. Device 4k cannot turn THP\n"
		   "# off as \"superpage run --backing 4k\" does. See superpage(1), cdi.\n",
		sp_version(), glibc[0] ? glibc : "(the version the runtime was built with)");
	fputs("cdiVersion: \"" CDI_VERSION "\"\n"
	      "kind: \"" CDI_KIND "\"\n"
	      "containerEdits:\n"
	      "  mounts:\n", f);
	yaml_mount(f, "    ", exe, CT_COMMAND);
	fputs("devices:\n", f);
	for (size_t i = 0; i < N_DEVICES; i++) {
		fprintf(f, "  - name: \"%s\"\n"
			   "    containerEdits:\n"
			   "      env:\n"
			   "        - \"LD_PRELOAD=" CT_RUNTIME "\"\n"
			   "        - \"SUPERPAGE_BACKING=%s\"\n"
			   "      mounts:\n", devices[i], devices[i]);
		yaml_mount(f, "        ", rt, CT_RUNTIME);
	}
}

/* Writes the spec to path through a new file renamed over it (a container started
 * meanwhile reads the old spec or the new one, never half of one). */
static int write_file(const char *path, const char *rt, const char *exe, const char *glibc)
{
	char tmp[PATH_MAX], dir[PATH_MAX], *slash;
	FILE *f;
	int fd;

	if (snprintf(tmp, sizeof tmp, "%s.new.%d", path, (int)getpid()) >= (int)sizeof tmp)
		return cli_error(EXIT_USAGE, "cdi: the path %s is too long", path);
	snprintf(dir, sizeof dir, "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		/* One level: /etc/cdi under /etc. */
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return cli_error(EXIT_FAIL, "cdi: cannot make %s: %s", dir, strerror(errno));
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return cli_error(EXIT_FAIL, "cdi: cannot write %s: %s", path, strerror(errno));
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return cli_error(EXIT_FAIL, "cdi: cannot write %s: %s", path, strerror(errno));
	}
	write_spec(f, rt, exe, glibc);
	if (fflush(f) != 0 || ferror(f) || fsync(fd) < 0) {
		int e = errno;
		fclose(f);
		unlink(tmp);
		return cli_error(EXIT_FAIL, "cdi: cannot write %s: %s", path, strerror(e));
	}
	fclose(f);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return cli_error(EXIT_FAIL, "cdi: cannot write %s: %s", path, strerror(e));
	}
	return EXIT_OK;
}

/* ---------- what it checks ---------- */

/* A container may run as any user: the files it mounts must be readable by all. */
static void say_unreadable(const char *path, const char *what)
{
	struct stat st;

	if (stat(path, &st) == 0 && !(st.st_mode & S_IROTH))
		cli_warn("cdi: %s %s is not readable by others: a container that runs as a user "
			 "other than its owner cannot load it (chmod o+r)", what, path);
}

/* One line each for what a device cannot give here; the spec is the same whatever
 * this machine has now (pools and modes change, the spec stays). */
static void say_machine(void)
{
	struct sp_offer o;

	sp_offer_get(SP_OFFER_THP | SP_OFFER_2M | SP_OFFER_1G, &o);
	if (!o.thp.present || !strcmp(sp_thp_pmd_mode(&o.thp), "never"))
		cli_warn("cdi: THP is %s here: devices auto and thp put memory on base pages "
			 "(see superpage status)", o.thp.present ? "never" : "not in this kernel");
	if (!o.pool_2m.present)
		cli_warn("cdi: this machine has no 2 MiB hugetlb pages: device 2m falls back");
	else if (o.pool_2m.free <= 0 && o.pool_2m.room <= 0)
		cli_warn("cdi: the 2M pool has no free pages: device 2m falls back until it has "
			 "(superpage pool 512; in Kubernetes, request hugepages-2Mi)");
	if (!o.pool_1g.present)
		cli_warn("cdi: this machine has no 1 GiB hugetlb pages: device 1g falls back");
	else if (o.pool_1g.free <= 0 && o.pool_1g.room <= 0)
		cli_warn("cdi: the 1G pool has no free pages: device 1g falls back to 2M pages "
			 "(superpage pool --size 1G 4)");
}

int cmd_cdi(int argc, char **argv)
{
	const char *output = NULL, *v;
	char rt[PATH_MAX], exe[PATH_MAX], glibc[32];
	bool print = false;
	ssize_t n;
	int m, rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--print")) {
			print = true;
		} else if ((m = cli_opt_value(argc, argv, &i, "--output", &v)) != 0) {
			if (m < 0)
				return EXIT_USAGE;
			if (!v[0])
				return cli_error(EXIT_USAGE, "cdi: --output needs a file name");
			output = v;
		} else if (argv[i][0] == '-') {
			return cli_error(EXIT_USAGE, "cdi: unknown option '%s' (see superpage cdi --help)",
					 argv[i]);
		} else {
			return cli_error(EXIT_USAGE, "cdi: unexpected argument '%s' (see superpage cdi --help)",
					 argv[i]);
		}
	}
	if (print && output)
		return cli_error(EXIT_USAGE, "cdi: --print and --output exclude each other");
	if ((rc = cli_find_runtime("cdi", rt, sizeof rt)))
		return rc;
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return cli_error(EXIT_FAIL, "cdi: cannot find the superpage executable (/proc/self/exe): %s",
				 n < 0 ? strerror(errno) : "empty link");
	exe[n] = 0;
	if (!glibc_needed(rt, glibc, sizeof glibc))
		cli_warn("cdi: cannot read which glibc %s needs: the image needs the glibc it was "
			 "built against or a later one", rt);
	if (print) {
		write_spec(stdout, rt, exe, glibc);
	} else {
		if (!output)
			output = CDI_DEFAULT;
		if ((rc = write_file(output, rt, exe, glibc)))
			return rc;
		printf("wrote %s: devices", output);
		for (size_t i = 0; i < N_DEVICES; i++)
			printf("%s " CDI_KIND "=%s", i ? "," : "", devices[i]);
		printf("\n  runtime %s, command %s\n", rt, exe);
	}
	/* Said once, for every device: what the spec cannot check, the image. */
	if (glibc[0])
		cli_warn("cdi: the runtime needs glibc %s or later in the image; in musl or static "
			 "images it is not loaded: promote their processes from the host "
			 "(superpage promote PID)", glibc);
	say_unreadable(rt, "the runtime");
	say_unreadable(exe, "the command");
	say_machine();
	return EXIT_OK;
}
