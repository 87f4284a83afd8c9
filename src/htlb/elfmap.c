/* elfmap.c - HUGETLB_ELFMAP: the program's segments on huge pages from a hugetlbfs
 * mount, as libhugetlbfs puts them, for a program linked for huge pages (its segments
 * a huge page apart: -Wl,-zcommon-page-size=2097152 -Wl,-zmax-page-size=2097152, or
 * libhugetlbfs' ld scripts). R: its read-only segments (text, constants); W: its
 * writable ones (data, bss); RW: both.
 *
 * Before main, each read-only PT_LOAD segment of the program whose extent rounded out
 * to the huge page size holds no other mapping is copied into an unlinked file of the
 * mount, and a private mapping of the file takes the extent's place in one mremap: the
 * old pages are replaced with identical bytes, and a step that fails leaves the
 * segment as it was. Read-only, its huge pages are never copied on write, so a forked
 * child needs no pool page for them.
 *
 * A writable segment goes huge page by huge page: each one that holds nothing but the
 * segment's pages, all read-write (not its RELRO part, read-only once relocated), is
 * written into a private mapping of an unlinked file (reserved when mapped: a short
 * pool fails there, and the page is the mapping's own, with no file page beside it),
 * which then takes its place. A forked child would share those pages until one of the
 * two writes, the copy coming from the pool, and a dry pool would kill the child; so
 * each is first named to superpage's runtime (__superpage_segment_guard,
 * src/runtime/program/segments.c), which keeps it from the child as it does its own hugetlb
 * memory. Without the runtime in the process (HUGETLB_ELFMAP starts the program again
 * with it), the writable segments stay. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hugetlbfs.h"
#include "htlb.h"

#define PAGE 4096ul

struct seg {
	uintptr_t lo, hi;      /* the segment's pages */
	int prot;
};

struct segs {
	int n;
	struct seg s[16];
};

/* The runtime's call that keeps a writable segment's huge pages from a forked child. */
typedef int guard_fn(void *addr, size_t len, int prot);

static uintptr_t up(uintptr_t a, uintptr_t to) { return (a + to - 1) & ~(to - 1); }
static uintptr_t down(uintptr_t a, uintptr_t to) { return a & ~(to - 1); }
static uintptr_t max_of(uintptr_t a, uintptr_t b) { return a > b ? a : b; }
static uintptr_t min_of(uintptr_t a, uintptr_t b) { return a < b ? a : b; }

/* The PT_LOAD segments of the program (the first object), read-only ones first. */
static int program_segs(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct segs *g = arg;

	(void)size;
	for (int w = 0; w < 2; w++) {
		for (int i = 0; i < info->dlpi_phnum && g->n < (int)(sizeof g->s / sizeof *g->s);
		     i++) {
			const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
			uintptr_t at = info->dlpi_addr + ph->p_vaddr;
			if (ph->p_type != PT_LOAD || ph->p_memsz == 0 || !(ph->p_flags & PF_W) != !w)
				continue;
			g->s[g->n].lo = down(at, PAGE);
			g->s[g->n].hi = up(at + ph->p_memsz, PAGE);
			g->s[g->n].prot = (ph->p_flags & PF_R ? PROT_READ : 0) |
					  (ph->p_flags & PF_W ? PROT_WRITE : 0) |
					  (ph->p_flags & PF_X ? PROT_EXEC : 0);
			g->n++;
		}
	}
	return 1; /* the program only */
}

struct extent {
	uintptr_t lo, hi;        /* the extent: whole huge pages */
	uintptr_t plo, phi;      /* the segment's pages in it */
	int prot;
	uintptr_t covered;       /* those pages found so far, from plo */
};

/* A mapping of /proc/self/maps: one that meets the extent must be the next piece of
 * the segment's pages in it, private, with the protection wanted. 1 stops the walk: it
 * is not. */
static int one_mapping(const struct sp_smaps_map *m, void *arg)
{
	struct extent *e = arg;
	int prot;

	if (m->end <= e->lo || m->start >= e->hi)
		return 0;
	prot = (m->perms[0] == 'r' ? PROT_READ : 0) | (m->perms[1] == 'w' ? PROT_WRITE : 0) |
	       (m->perms[2] == 'x' ? PROT_EXEC : 0);
	if (m->start != e->covered || m->end > e->phi || prot != e->prot || m->perms[3] != 'p')
		return 1;
	e->covered = m->end;
	return 0;
}

/* Whether extent [lo, hi) holds the segment's pages [plo, phi), mapped private with
 * protection prot and without a gap, and nothing else. */
static bool extent_free(uintptr_t lo, uintptr_t hi, uintptr_t plo, uintptr_t phi, int prot)
{
	struct extent e = { lo, hi, plo, phi, prot, plo };
	int fd = sp_os->open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0), r;

	if (fd < 0)
		return false;
	r = sp_smaps_walk(fd, NULL, one_mapping, &e);
	sp_os->close(fd);
	return r == 0 && e.covered == phi;
}

/* An unlinked file of huge pages of size hs, len bytes long: its fd, or -errno. */
static int sized_file(long hs, size_t len)
{
	int fd = hugetlbfs_unlinked_fd_for_size(hs), r;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* A read-only segment onto huge pages of size hs: 0, or -errno (the segment as it
 * was). */
static int move_seg(const struct seg *s, long hs)
{
	uintptr_t lo = down(s->lo, (uintptr_t)hs), hi = up(s->hi, (uintptr_t)hs);
	size_t len = hi - lo;
	void *tmp, *priv, *out;
	int fd, r;

	if (!extent_free(lo, hi, s->lo, s->hi, s->prot))
		return -EEXIST;
	fd = sized_file(hs, len);
	if (fd < 0)
		return fd;
	/* The file's pages, reserved when mapped shared (a short pool fails here), then
	 * filled with the segment's bytes. */
	r = sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0, &tmp);
	if (r < 0) {
		close(fd);
		return r;
	}
	memcpy((char *)tmp + (s->lo - lo), (const void *)s->lo, s->hi - s->lo);
	sp_os->munmap(tmp, len);
	/* A private mapping of it (reserved too), put in the extent's place in one step. */
	r = sp_os->mmap(NULL, len, s->prot, MAP_PRIVATE, fd, 0, &priv);
	close(fd);
	if (r < 0)
		return r;
	r = sp_os->mremap(priv, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo, &out);
	if (r < 0)
		sp_os->munmap(priv, len);
	return r;
}

/* Huge page [lo, lo+hs) of writable segment s onto a huge page, guarded: 0, or -errno
 * (as it was). */
static int move_writable(const struct seg *s, uintptr_t lo, long hs, guard_fn *guard)
{
	uintptr_t hi = lo + (uintptr_t)hs, plo = max_of(lo, s->lo), phi = min_of(hi, s->hi);
	size_t len = (size_t)hs;
	void *priv, *out;
	int fd, r;

	if (!extent_free(lo, hi, plo, phi, PROT_READ | PROT_WRITE))
		return -EEXIST;
	fd = sized_file(hs, len);
	if (fd < 0)
		return fd;
	/* (reserved when mapped: a short pool fails here) */
	r = sp_os->mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0, &priv);
	close(fd);
	if (r < 0)
		return r;
	memcpy((char *)priv + (plo - lo), (const void *)plo, phi - plo);
	if (guard((void *)lo, len, PROT_READ | PROT_WRITE) < 0) {
		r = -errno;
		sp_os->munmap(priv, len);
		return r;
	}
	r = sp_os->mremap(priv, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo, &out);
	if (r < 0) {
		guard((void *)lo, len, -1);
		sp_os->munmap(priv, len);
	}
	return r;
}

static void say_seg(uintptr_t lo, uintptr_t hi, int r, const char *mount)
{
	if (r == 0)
		htlb_say(HTLB_INFO, "HUGETLB_ELFMAP: segment 0x%lx-0x%lx on huge pages of %s",
			 (unsigned long)lo, (unsigned long)hi, mount);
	else
		htlb_say(HTLB_INFO, "HUGETLB_ELFMAP: segment 0x%lx-0x%lx stays: %s",
			 (unsigned long)lo, (unsigned long)hi,
			 r == -EEXIST ? "its huge pages would hold other mappings or other "
					"protections (the program is not linked for huge pages, "
					"or this is its RELRO part)"
				      : strerror(-r));
}

/* The writable segments, huge page by huge page. */
static void move_writables(const struct segs *g, const struct htlb_size *size, const char *v)
{
	guard_fn *guard = (guard_fn *)dlsym(RTLD_DEFAULT, "__superpage_segment_guard");
	int moved = 0, asked = 0;

	for (int i = 0; i < g->n; i++) {
		const struct seg *s = &g->s[i];
		if (!(s->prot & PROT_WRITE))
			continue;
		asked++;
		if (!guard) {
			say_seg(s->lo, s->hi, -ENOTSUP, size->mount);
			continue;
		}
		for (uintptr_t lo = down(s->lo, (uintptr_t)size->size); lo < s->hi;
		     lo += (uintptr_t)size->size) {
			int r = move_writable(s, lo, size->size, guard);
			moved += r == 0;
			say_seg(max_of(lo, s->lo), min_of(lo + (uintptr_t)size->size, s->hi), r,
				size->mount);
		}
	}
	if (asked && !guard)
		htlb_say(HTLB_ERROR, "HUGETLB_ELFMAP=%.16s: the writable segments stay: superpage's "
			 "runtime is not in the process to keep their huge pages from a forked "
			 "child", v);
	else if (asked && !moved)
		htlb_say(HTLB_ERROR, "HUGETLB_ELFMAP=%.16s: no part of a writable segment could go "
			 "on the huge pages of %s (HUGETLB_VERBOSE=2 says why)", v, size->mount);
}

void htlb_elfmap(void)
{
	const struct htlb_state *st = htlb_state();
	const char *v = getenv("HUGETLB_ELFMAP");
	const struct htlb_size *size;
	struct segs g = { .n = 0 };
	bool ro, rw;
	int moved = 0, asked = 0;

	ro = v && strpbrk(v, "Rr");
	rw = v && strpbrk(v, "Ww");
	if ((!ro && !rw) || !htlb_may_map_segments())
		return;
	size = st->default_size ? htlb_size_of(st, st->default_size) : NULL;
	if (!size || !size->mount[0]) {
		htlb_say(HTLB_INFO, "HUGETLB_ELFMAP=%.16s: no hugetlbfs mount for the default huge "
			 "page size: the segments stay", v);
		return;
	}
	dl_iterate_phdr(program_segs, &g);
	for (int i = 0; i < g.n && ro; i++) {
		if (g.s[i].prot & PROT_WRITE)
			continue;
		int r = move_seg(&g.s[i], size->size);
		asked++;
		moved += r == 0;
		say_seg(g.s[i].lo, g.s[i].hi, r, size->mount);
	}
	if (ro && asked && !moved)
		htlb_say(HTLB_ERROR, "HUGETLB_ELFMAP=%.16s: no read-only segment could go on the "
			 "huge pages of %s (HUGETLB_VERBOSE=2 says why)", v, size->mount);
	if (rw)
		move_writables(&g, size, v);
}
