/* foreign.c - free and realloc of a pointer the heap never handed out. malloc.c asks
 * the page heap first; a pointer it does not know comes here, on this slow path
 * only. What may be a block of glibc's malloc goes to glibc's free (or is moved into
 * the heap by realloc); what can be no allocator's block (an address nothing is
 * mapped at, a stack, a global or a mapped file, a page mapped while glibc's malloc
 * holds nothing) ends the process with one line, as glibc's free does; what cannot
 * be told for certain is left alone, as before: a false abort in a working program
 * would be far worse than a block left unfreed.
 *
 * Under LD_PRELOAD glibc's malloc serves nothing (its mallinfo2 reads 0 bytes in a
 * program under superpage run, CPython's included): ld.so's allocations before the
 * relocation come from its own minimal allocator, which it never hands to free (glibc's
 * free would abort on them too), and every malloc after it is ours. */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "internal.h"
#include "malloc/malloc.h"
#include "malloc/malloc_os.h"
#include "runtime.h"

enum foreign_kind {
	FOREIGN_UNSURE, /* left alone */
	FOREIGN_GLIBC,  /* may be glibc's: its free decides */
	FOREIGN_BAD,    /* no allocator's: abort */
};

struct foreign {
	enum foreign_kind kind;
	const char *why;        /* where it lies, for the message */
	char name[64];          /* the object or file it lies in, if any */
};

/* ---------- glibc's malloc, reached past ours ---------- */

static void *glibc_fn(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* Whether glibc's malloc holds any memory: its arenas or mapped blocks. */
static bool glibc_holds_memory(void)
{
	struct mallinfo2 (*mi2)(void) = (struct mallinfo2 (*)(void))glibc_fn("mallinfo2");
	if (mi2) {
		struct mallinfo2 m = mi2();
		return m.arena || m.hblkhd;
	}
	struct mallinfo (*mi)(void) = (struct mallinfo (*)(void))glibc_fn("mallinfo");
	if (mi) {
		struct mallinfo m = mi();
		return m.arena || m.hblkhd;
	}
	return true; /* (cannot ask: it may) */
}

/* Whether p, in the mapping [lo, hi), looks like a block of glibc's malloc: its
 * chunk's size word before it, sane, the chunk inside the mapping (a mapped chunk
 * starts it). Blocks of another copy of glibc (a dlmopen namespace's) look so too. */
static bool glibc_chunk_like(const void *p, uintptr_t lo, uintptr_t hi)
{
	uintptr_t a = (uintptr_t)p;
	if (a % 16 || a < lo + 16)
		return false;
	uint64_t size = ((const uint64_t *)p)[-1];
	uint64_t bytes = size & ~(uint64_t)7;
	if (bytes < 32 || bytes % 16 || bytes > hi - (a - 16))
		return false;
	return !(size & 2) || a - 16 == lo || (a - 16 - ((const uint64_t *)p)[-2]) == lo;
}

/* ---------- where a pointer lies ---------- */

struct in_image {
	uintptr_t a;
	uintptr_t ldso;         /* the dynamic linker's load address */
	bool found, is_ldso;
	const char *name;
};

static int image_of(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct in_image *w = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || w->a < lo || w->a >= lo + ph->p_memsz)
			continue;
		w->found = true;
		w->is_ldso = info->dlpi_addr == w->ldso;
		w->name = info->dlpi_name;
		return 1;
	}
	return 0;
}

static void name_from(struct foreign *f, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash && slash[1] ? slash + 1 : path;
	size_t n = strlen(base);
	if (n >= sizeof f->name)
		n = sizeof f->name - 1;
	memcpy(f->name, base, n);
	f->name[n] = 0;
}

/* A mapping of /proc/self/maps: its bounds, whether it can be read, and what follows
 * the inode. */
struct mapping {
	uintptr_t lo, hi;
	bool readable;
	const char *path;       /* "" for anonymous memory */
};

/* Parses a maps line; false if it is not one. */
static bool parse_mapping(const char *line, struct mapping *m)
{
	char *end;
	m->lo = strtoull(line, &end, 16);
	if (*end != '-')
		return false;
	m->hi = strtoull(end + 1, &end, 16);
	m->readable = end[0] == ' ' && end[1] == 'r';
	/* perms, offset, dev, inode, then the path after spaces */
	for (int field = 0; field < 4; field++) {
		while (*end == ' ')
			end++;
		if (!*end)
			return false;
		while (*end && *end != ' ')
			end++;
	}
	while (*end == ' ')
		end++;
	m->path = end;
	return true;
}

/* Names that are memory no file holds: anonymous as far as free is concerned. */
static bool anonymous_like(const char *path)
{
	static const char *const names[] = { "/dev/zero", "/anon_hugepage", "/memfd:", "/SYSV" };
	if (!path[0] || !strcmp(path, "[heap]") || !strncmp(path, "[anon:", 6))
		return true;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (!strncmp(path, names[i], strlen(names[i])))
			return true;
	return false;
}

/* What /proc/self/maps says of a; the line reader in a mapping of its own (12 KiB,
 * too much for a small thread's stack on an abort path). */
static void classify_mapped(uintptr_t a, struct foreign *f)
{
	struct sp_lines *l;
	void *m;
	if (malloc_map(sizeof *l, &m) < 0)
		return;
	l = m;
	int fd = malloc_maps_open();
	if (fd < 0) {
		malloc_unmap(m, sizeof *l);
		return;
	}
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	struct mapping map;
	const char *line;
	bool found = false;
	int r;
	sp_lines_init(l, fd);
	while ((r = sp_lines_next(l, &line)) > 0) {
		if (!parse_mapping(line, &map) || a < map.lo || a >= map.hi)
			continue;
		found = true;
		break;
	}
	malloc_close(fd);
	if (r < 0) {
		/* (an unread file says nothing) */
	} else if (!found) {
		f->kind = FOREIGN_BAD;
		f->why = "nothing is mapped there";
	} else if (!strncmp(map.path, "[stack", 6) || (here >= map.lo && here < map.hi)) {
		f->kind = FOREIGN_BAD;
		f->why = "on a stack";
	} else if (map.path[0] == '[' && strcmp(map.path, "[heap]") && strncmp(map.path, "[anon:", 6)) {
		f->kind = FOREIGN_BAD;
		f->why = "in the kernel's pages:";
		name_from(f, map.path);
	} else if (!anonymous_like(map.path)) {
		f->kind = FOREIGN_BAD;
		f->why = "in a mapped file:";
		name_from(f, map.path);
	} else if (map.readable && (glibc_holds_memory() ||
				    glibc_chunk_like((const void *)a, map.lo, map.hi))) {
		f->kind = FOREIGN_GLIBC;
	} else {
		f->kind = FOREIGN_BAD;
		f->why = !strcmp(map.path, "[heap]") ? "in the program break, which no malloc uses"
			: "in a mapping no malloc made";
	}
	malloc_unmap(m, sizeof *l);
}

/* Where p lies: a loaded object's image (its globals, text, constants), else what
 * /proc/self/maps says. */
static void classify(const void *p, struct foreign *f)
{
	struct in_image w = { .a = (uintptr_t)p, .ldso = getauxval(AT_BASE) };
	memset(f, 0, sizeof *f);
	f->kind = FOREIGN_UNSURE;
	dl_iterate_phdr(image_of, &w);
	if (w.found && w.is_ldso)
		return; /* (the dynamic linker's own memory: never freed, but not sure) */
	if (w.found) {
		f->kind = FOREIGN_BAD;
		f->why = "in the image of";
		name_from(f, w.name && w.name[0] ? w.name : "the program");
		return;
	}
	classify_mapped((uintptr_t)p, f);
}

static __attribute__((noreturn)) void refuse(const char *fn, const void *p, const struct foreign *f)
{
	if (f->name[0])
		rt_abort("%s(): invalid pointer %p (%s %s)", fn, p, f->why, f->name);
	rt_abort("%s(): invalid pointer %p (%s)", fn, p, f->why);
}

void foreign_free(void *p)
{
	struct foreign f;
	classify(p, &f);
	if (f.kind == FOREIGN_BAD)
		refuse("free", p, &f);
	if (f.kind == FOREIGN_GLIBC) {
		void (*gfree)(void *) = (void (*)(void *))glibc_fn("free");
		if (gfree) {
			rt_verbose(2, "free of %p, not the heap's: passed to glibc's free", p);
			gfree(p);
			return;
		}
	}
	rt_verbose(1, "ignoring a pointer from outside the heap: %p", p);
}

void *foreign_realloc(void *p, size_t size)
{
	struct foreign f;
	classify(p, &f);
	if (f.kind == FOREIGN_BAD)
		refuse("realloc", p, &f);
	size_t (*gusable)(void *) = (size_t (*)(void *))glibc_fn("malloc_usable_size");
	void (*gfree)(void *) = (void (*)(void *))glibc_fn("free");
	if (f.kind == FOREIGN_GLIBC && gusable && gfree) {
		/* glibc's block moves into the heap. */
		size_t have = gusable(p);
		void *q = rt_malloc(size);
		if (!q)
			return NULL; /* (errno: ENOMEM) */
		memcpy(q, p, have < size ? have : size);
		gfree(p);
		return q;
	}
	return NULL; /* not ours, its size unknown: nothing done (the caller sets ENOMEM) */
}
