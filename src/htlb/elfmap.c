/* elfmap.c - HUGETLB_ELFMAP=R: the program's read-only segments (its text and
 * constants) on huge pages from a hugetlbfs mount, as libhugetlbfs puts them, for a
 * program linked for huge pages (its segments a huge page apart:
 * -Wl,-zcommon-page-size=2097152 -Wl,-zmax-page-size=2097152, or libhugetlbfs' ld
 * scripts).
 *
 * Before main, each read-only PT_LOAD segment of the program whose extent rounded out
 * to the huge page size holds no other mapping is copied into an unlinked file of the
 * mount, and a private mapping of the file takes the extent's place in one mremap: the
 * old pages are replaced with identical bytes, and a step that fails leaves the
 * segment as it was. Read-only, its huge pages are never copied on write, so a forked
 * child needs no pool page for them. Writable segments are left to superpage run
 * --text (THP): on private hugetlb pages, a child's first write to one would need a
 * free pool page, and a dry pool would kill it. */
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

static uintptr_t up(uintptr_t a, uintptr_t to) { return (a + to - 1) & ~(to - 1); }
static uintptr_t down(uintptr_t a, uintptr_t to) { return a & ~(to - 1); }

/* The read-only PT_LOAD segments of the program (the first object). */
static int program_segs(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct segs *g = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum && g->n < (int)(sizeof g->s / sizeof *g->s); i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t at = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || ph->p_memsz == 0 || (ph->p_flags & PF_W))
			continue;
		g->s[g->n].lo = down(at, PAGE);
		g->s[g->n].hi = up(at + ph->p_memsz, PAGE);
		g->s[g->n].prot = PROT_READ | (ph->p_flags & PF_X ? PROT_EXEC : 0);
		g->n++;
	}
	return 1; /* the program only */
}

struct extent {
	uintptr_t lo, hi;        /* the extent, rounded out to the huge page */
	const struct seg *s;
	uintptr_t covered;       /* the segment's pages found so far, from its start */
};

/* A mapping of /proc/self/maps: one that overlaps the extent must be the next piece
 * of the segment, private, with its protection. 1 stops the walk: it is not. */
static int one_mapping(const struct sp_smaps_map *m, void *arg)
{
	struct extent *e = arg;
	int prot;

	if (m->end <= e->lo || m->start >= e->hi)
		return 0;
	prot = (m->perms[0] == 'r' ? PROT_READ : 0) | (m->perms[1] == 'w' ? PROT_WRITE : 0) |
	       (m->perms[2] == 'x' ? PROT_EXEC : 0);
	if (m->start != e->covered || m->end > e->s->hi || prot != e->s->prot || m->perms[3] != 'p')
		return 1;
	e->covered = m->end;
	return 0;
}

/* Whether [lo, hi) holds the segment's pages, mapped private and readable with its
 * protection and without a gap, and nothing else. */
static bool extent_free(uintptr_t lo, uintptr_t hi, const struct seg *s)
{
	struct extent e = { lo, hi, s, s->lo };
	int fd = sp_os->open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0), r;

	if (fd < 0)
		return false;
	r = sp_smaps_walk(fd, NULL, one_mapping, &e);
	sp_os->close(fd);
	return r == 0 && e.covered == s->hi;
}

/* One segment onto huge pages of size hs from mount: 0, or -errno (the segment as it
 * was). */
static int move_seg(const struct seg *s, long hs)
{
	uintptr_t lo = down(s->lo, (uintptr_t)hs), hi = up(s->hi, (uintptr_t)hs);
	size_t len = hi - lo;
	void *tmp, *priv, *out;
	int fd, r;

	if (!extent_free(lo, hi, s))
		return -EEXIST;
	fd = hugetlbfs_unlinked_fd_for_size(hs);
	if (fd < 0)
		return -errno;
	/* The file's pages, reserved when mapped shared (a short pool fails here), then
	 * filled with the segment's bytes. */
	r = ftruncate(fd, (off_t)len) < 0 ? -errno : 0;
	if (!r)
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

void htlb_elfmap(void)
{
	const struct htlb_state *st = htlb_state();
	const char *v = getenv("HUGETLB_ELFMAP");
	const struct htlb_size *size;
	struct segs g = { .n = 0 };
	int moved = 0;

	if (!v || !strpbrk(v, "Rr") || !htlb_may_map_segments())
		return;
	size = st->default_size ? htlb_size_of(st, st->default_size) : NULL;
	if (!size || !size->mount[0]) {
		htlb_say(HTLB_INFO, "HUGETLB_ELFMAP=%.16s: no hugetlbfs mount for the default huge "
			 "page size: the read-only segments stay", v);
		return;
	}
	dl_iterate_phdr(program_segs, &g);
	for (int i = 0; i < g.n; i++) {
		int r = move_seg(&g.s[i], size->size);
		if (r == 0) {
			moved++;
			htlb_say(HTLB_INFO, "HUGETLB_ELFMAP: segment 0x%lx-0x%lx on huge pages of %s",
				 (unsigned long)g.s[i].lo, (unsigned long)g.s[i].hi, size->mount);
		} else {
			htlb_say(HTLB_INFO, "HUGETLB_ELFMAP: segment 0x%lx-0x%lx stays: %s",
				 (unsigned long)g.s[i].lo, (unsigned long)g.s[i].hi,
				 r == -EEXIST ? "its huge pages would hold other mappings (the "
						"program is not linked for huge pages)"
					      : strerror(-r));
		}
	}
	if (!moved && g.n)
		htlb_say(HTLB_ERROR, "HUGETLB_ELFMAP=%.16s: no read-only segment could go on the "
			 "huge pages of %s (HUGETLB_VERBOSE=2 says why)", v, size->mount);
}
