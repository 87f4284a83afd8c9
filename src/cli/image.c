/* image.c - what superpage run is about to exec: found on PATH, an ELF of this machine, dynamic with glibc's loader, not set-id. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "cli.h"

/* CMD as execvp finds it, or false if it finds none. */
static bool resolve(const char *cmd, char *out, size_t len)
{
	const char *path = getenv("PATH"), *p;
	struct stat st;

	if (strchr(cmd, '/')) {
		snprintf(out, len, "%s", cmd);
		return true;
	}
	if (!path)
		path = "/bin:/usr/bin";
	for (p = path;; p++) {
		size_t n = strcspn(p, ":");
		int w = n ? snprintf(out, len, "%.*s/%s", (int)n, p, cmd) : snprintf(out, len, "%s", cmd);

		if (w > 0 && (size_t)w < len && access(out, X_OK) == 0 && stat(out, &st) == 0 &&
		    S_ISREG(st.st_mode))
			return true;
		p += n;
		if (!*p)
			return false;
	}
}

enum image { IMAGE_UNKNOWN, IMAGE_DYNAMIC, IMAGE_STATIC, IMAGE_OTHER_CLASS, IMAGE_OTHER_LIBC,
	     IMAGE_SCRIPT };

#if __SIZEOF_POINTER__ == 8
#define NATIVE_CLASS ELFCLASS64
#else
#define NATIVE_CLASS ELFCLASS32
#endif

/* Whether a program's loader is glibc's (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1,
 * ld64.so.2, ld.so.1), which reads LD_PRELOAD and runs a runtime built against glibc;
 * musl's (ld-musl-x86_64.so.1) and others would load it against their own libc. */
static bool glibc_loader(const char *interp)
{
	const char *base = strrchr(interp, '/');

	base = base ? base + 1 : interp;
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld64.so.", 8) ||
	       !strncmp(base, "ld.so.", 6);
}

/* Does the ELF file have a PT_INTERP (a dynamic loader that will read LD_PRELOAD)?
 * loader: its path, for a dynamic program. */
static enum image elf_kind(int fd, const unsigned char *id, char *loader, size_t len)
{
	uint64_t phoff, off, size;
	unsigned phnum, phentsize, type;
	bool wide = id[EI_CLASS] == ELFCLASS64;
	union {
		Elf64_Ehdr e64;
		Elf32_Ehdr e32;
		Elf64_Phdr p64;
		Elf32_Phdr p32;
	} u;

	if ((id[EI_CLASS] != ELFCLASS64 && id[EI_CLASS] != ELFCLASS32) || id[EI_DATA] != ELFDATA2LSB)
		return IMAGE_UNKNOWN;
	if (pread(fd, &u, wide ? sizeof u.e64 : sizeof u.e32, 0) != (ssize_t)(wide ? sizeof u.e64 : sizeof u.e32))
		return IMAGE_UNKNOWN;
	phoff = wide ? u.e64.e_phoff : u.e32.e_phoff;
	phnum = wide ? u.e64.e_phnum : u.e32.e_phnum;
	phentsize = wide ? u.e64.e_phentsize : u.e32.e_phentsize;
	type = wide ? u.e64.e_type : u.e32.e_type;
	if ((type != ET_EXEC && type != ET_DYN) || phnum == 0 || phnum == PN_XNUM ||
	    phentsize < (wide ? sizeof u.p64 : sizeof u.p32))
		return IMAGE_UNKNOWN;
	for (unsigned k = 0; k < phnum; k++) {
		size_t want = wide ? sizeof u.p64 : sizeof u.p32;

		if (pread(fd, &u, want, (off_t)(phoff + (uint64_t)k * phentsize)) != (ssize_t)want)
			return IMAGE_UNKNOWN;
		if ((wide ? u.p64.p_type : u.p32.p_type) != PT_INTERP)
			continue;
		if (id[EI_CLASS] != NATIVE_CLASS)
			return IMAGE_OTHER_CLASS;
		off = wide ? u.p64.p_offset : u.p32.p_offset;
		size = wide ? u.p64.p_filesz : u.p32.p_filesz;
		if (size == 0 || size >= len || pread(fd, loader, size, (off_t)off) != (ssize_t)size)
			return IMAGE_DYNAMIC; /* (unreadable: as before, preloaded) */
		loader[size] = 0;
		return glibc_loader(loader) ? IMAGE_DYNAMIC : IMAGE_OTHER_LIBC;
	}
	return IMAGE_STATIC;
}

/* What the file is; for a script, *interp is its interpreter; for a dynamic program,
 * its loader. */
static enum image image_kind(const char *path, char *interp, size_t len)
{
	unsigned char head[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	enum image kind = IMAGE_UNKNOWN;
	ssize_t n;

	if (fd < 0)
		return IMAGE_UNKNOWN;
	n = read(fd, head, sizeof head - 1);
	if (n >= EI_NIDENT && !memcmp(head, ELFMAG, SELFMAG)) {
		kind = elf_kind(fd, head, interp, len);
	} else if (n > 2 && head[0] == '#' && head[1] == '!') {
		char *s = (char *)head + 2;

		head[n] = 0;
		s += strspn(s, " \t");
		s[strcspn(s, " \t\n")] = 0;
		snprintf(interp, len, "%s", s);
		kind = IMAGE_SCRIPT;
	}
	close(fd);
	return kind;
}

/* Would the kernel start it in secure mode, where ld.so ignores LD_PRELOAD paths? */
static const char *secure_exec(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return NULL;
	if ((st.st_mode & S_ISUID) && st.st_uid != getuid())
		return "setuid";
	if ((st.st_mode & S_ISGID) && st.st_gid != getgid())
		return "setgid";
	if (getuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0)
		return "given file capabilities";
	return NULL;
}

void cli_image_of(const char *cmd, struct cli_image *img)
{
	char path[PATH_MAX], interp[PATH_MAX] = "", loader[PATH_MAX] = "";
	const char *why, *by = NULL, *exe;
	enum image kind;

	memset(img, 0, sizeof *img);
	if (!resolve(cmd, path, sizeof path))
		return;
	kind = image_kind(path, interp, sizeof interp);
	if (kind == IMAGE_DYNAMIC || kind == IMAGE_OTHER_LIBC)
		snprintf(loader, sizeof loader, "%s", interp);
	if (kind == IMAGE_SCRIPT) {
		if (interp[0] != '/')
			return;
		by = interp;
		kind = image_kind(interp, loader, sizeof loader);
	}
	exe = by ? by : path;
	int n = by ? snprintf(img->what, sizeof img->what, "%s is run by %s, which is ", path, by)
		   : snprintf(img->what, sizeof img->what, "%s is ", path);
	char *at = img->what + (n > 0 && (size_t)n < sizeof img->what ? n : 0);
	size_t room = sizeof img->what - (size_t)(at - img->what);
	if ((why = secure_exec(exe))) {
		img->how = CLI_IMAGE_SECURE;
		snprintf(at, room, "%s", why);
		if (!by)
			img->tail = " (the loader ignores LD_PRELOAD for it)";
		return;
	}
	img->how = CLI_IMAGE_WATCH;
	switch (kind) {
	case IMAGE_STATIC:
		img->why = SP_WATCH_STATIC;
		snprintf(at, room, "statically linked");
		return;
	case IMAGE_OTHER_LIBC:
		img->why = SP_WATCH_LIBC;
		snprintf(at, room, "linked with another libc than glibc (its loader is %s)", loader);
		return;
	case IMAGE_OTHER_CLASS:
		img->why = SP_WATCH_CLASS;
		snprintf(at, room, "a %d-bit program and the runtime is not",
			 NATIVE_CLASS == ELFCLASS64 ? 32 : 64);
		return;
	default:
		img->how = CLI_IMAGE_PRELOAD;
		img->what[0] = 0;
		return;
	}
}

void cli_say_image(const struct cli_image *img)
{
	if (img->how != CLI_IMAGE_PRELOAD)
		cli_warn("%s: it runs without superpage%s", img->what, img->tail ? img->tail : "");
}
