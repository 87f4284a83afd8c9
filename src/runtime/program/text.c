/* text.c - the program's text (and large data) on huge pages under --text.
 *
 * File-backed text cannot become huge on this kind of kernel (no
 * CONFIG_READ_ONLY_THP_FOR_FS), so before main the 2 MiB-aligned interior of each
 * executable PT_LOAD segment of the program (with =all, of every loaded library too)
 * is copied into huge anonymous memory and put in place, at the same address and
 * with the same protections, by one mremap: the old pages are replaced atomically
 * with identical bytes, so no instruction ever finds its page missing, and a move
 * that fails at any step leaves the original mapping as it was. The mremap is made
 * from this library's own code (never moved: it is smaller than 2 MiB and skipped).
 *
 * Text goes on 2 MiB hugetlb pages under --backing 2m/1g (while the pool can hold it;
 * it is never written, so a forked child never needs a pool page for it), else THP.
 * Writable segments of at least one whole 2 MiB unit (large data and bss) go on THP
 * only, never hugetlb (a forked child's copy-on-write of a private hugetlb page needs
 * a free pool page), and only while the process has a single thread (a write racing
 * the copy would be lost). Their pages that are all zero are not copied, so bss the
 * program never touched stays untouched.
 *
 * Text the page cache already maps with huge pages (a filesystem with large folios
 * can give an aligned binary PMD-sized folios) is left where it is: a copy would only
 * cost memory.
 *
 * With --perf-map, /tmp/perf-PID.map gets a line per function in moved text, so perf
 * still names them (perf sees the moved range as anonymous memory). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "life.h"
#include "pageheap/pageheap.h"
#include "program/kern.h"
#include "program/program.h"
#include "runtime.h"

#define PAGE 4096ul
#define UNIT SP_2M_SIZE
#define MAX_MOVES 64
#define MAX_PIECES 16

struct move {
	uintptr_t lo, hi;        /* the aligned interior to move */
	bool exec;               /* text (else writable: data, bss) */
	uintptr_t bias;          /* the object's load bias, for its symbols */
	char path[SP_PATH_LEN];  /* the object's file, for its symbols */
};

/* A run of the range with one protection, from /proc/self/maps. */
struct piece {
	uintptr_t lo, hi;
	int prot;
};

static struct rt_text_stats stats;
static struct move moves[MAX_MOVES];
static int nmoves;

void rt_text_stats_get(struct rt_text_stats *out)
{
	*out = stats;
	sp_falls_get(SP_SITE_TEXT, out->falls);
}

static uintptr_t up(uintptr_t a, uintptr_t to) { return (a + to - 1) & ~(to - 1); }
static uintptr_t down(uintptr_t a, uintptr_t to) { return a & ~(to - 1); }

/* ---------- what to move ---------- */

struct scan {
	uintptr_t self;          /* an address in this library's code */
	enum sp_text_mode mode;
	bool data;               /* writable segments too (one thread only) */
	bool first;
};

static bool holds_self(const struct dl_phdr_info *info, uintptr_t self)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && self >= lo && self - lo < ph->p_memsz)
			return true;
	}
	return false;
}

static void add_move(uintptr_t lo, uintptr_t hi, bool exec, const struct dl_phdr_info *info,
		     const char *path)
{
	if (nmoves == MAX_MOVES) {
		rt_verbose(1, "--text: more than %d segments to move; %s left as it is", MAX_MOVES,
			   path);
		return;
	}
	struct move *m = &moves[nmoves++];
	m->lo = lo;
	m->hi = hi;
	m->exec = exec;
	m->bias = info->dlpi_addr;
	sp_strlcpy(m->path, path, sizeof m->path);
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *s = arg;
	bool main_program = s->first;
	const char *path = main_program ? "/proc/self/exe" : info->dlpi_name;

	(void)size;
	s->first = false;
	if (!main_program && s->mode != SP_TEXT_ALL)
		return 1; /* the main program is the first object: done */
	if (!path || !*path || strstr(path, "linux-vdso") || holds_self(info, s->self))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
			continue;
		uintptr_t lo = down(info->dlpi_addr + ph->p_vaddr, PAGE);
		uintptr_t hi = up(info->dlpi_addr + ph->p_vaddr + ph->p_memsz, PAGE);
		bool exec = (ph->p_flags & PF_X) && !(ph->p_flags & PF_W);
		if (exec)
			stats.text_bytes += hi - lo;
		else if (!(ph->p_flags & PF_W) || !s->data)
			continue;
		uintptr_t alo = up(lo, UNIT), ahi = down(hi, UNIT);
		if (ahi <= alo) {
			if (exec) {
				stats.unaligned++;
				rt_verbose(1, "--text: %s: its text (%zu KiB at 0x%lx) holds no whole "
					   "2 MiB-aligned unit: left on base pages (link with "
					   "-Wl,-zcommon-page-size=2097152 -Wl,-zmax-page-size=2097152)",
					   main_program ? "the program" : path, (size_t)((hi - lo) >> 10),
					   (unsigned long)lo);
			}
			continue;
		}
		add_move(alo, ahi, exec, info, path);
	}
	return 0;
}

/* The threads of this process, from /proc/self/status; 0 if it cannot be read. */
static long threads(void)
{
	char buf[4096];
	if (sp_read_file("/proc/self/status", buf, sizeof buf) < 0)
		return 0;
	const char *t = strstr(buf, "\nThreads:");
	uint64_t n;
	if (!t)
		return 0;
	t += 9;
	while (*t == ' ' || *t == '\t')
		t++;
	return sp_scan_u64(&t, &n) == 0 ? (long)n : 0;
}

/* ---------- the mappings now in the range ---------- */

static bool hex_field(const char **s, uintptr_t *out)
{
	const char *p = *s;
	uintptr_t v = 0;
	int n = 0;
	for (;; p++, n++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
		if (d < 0)
			break;
		v = v << 4 | (uintptr_t)d;
	}
	*s = p;
	*out = v;
	return n > 0 && n <= 16;
}

/* Splits [lo, hi) into runs of one protection, as /proc/self/maps shows them. The
 * number of runs, or -1 if the range is not movable: a hole, a shared or unreadable
 * mapping, too many pieces, maps unreadable. */
static int pieces_of(uintptr_t lo, uintptr_t hi, struct piece *p)
{
	static struct sp_lines l; /* large; text_init runs once, on one thread */
	const char *line;
	uintptr_t at = lo;
	int n = 0, fd = kern_open("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	sp_lines_init(&l, fd);
	while (at < hi && sp_lines_next(&l, &line) > 0) {
		uintptr_t a, b;
		const char *s = line;
		if (!hex_field(&s, &a) || *s++ != '-' || !hex_field(&s, &b) || *s++ != ' ' ||
		    strlen(s) < 4)
			break;
		if (b <= at)
			continue;
		if (a > at || n == MAX_PIECES || s[3] != 'p' || s[0] != 'r')
			break;
		p[n].lo = at;
		p[n].hi = b < hi ? b : hi;
		p[n].prot = PROT_READ | (s[1] == 'w' ? PROT_WRITE : 0) | (s[2] == 'x' ? PROT_EXEC : 0);
		at = p[n++].hi;
	}
	kern_close(fd);
	return at == hi ? n : -1;
}

/* ---------- the move ---------- */

static bool all_zero(const void *page)
{
	const uint64_t *w = page;
	for (size_t i = 0; i < PAGE / sizeof *w; i++)
		if (w[i])
			return false;
	return true;
}

/* Replaces [to, to+len) with the mapping at from, in one step. Made here, not in
 * libc: the code that makes the call must not be in a range being moved. */
static int move_in_place(uintptr_t from, size_t len, uintptr_t to)
{
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = MREMAP_MAYMOVE | MREMAP_FIXED;
	register long r8 __asm__("r8") = (long)to;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"((long)SYS_mremap), "D"(from), "S"(len), "d"(len), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret < 0 && ret > -4096 ? (int)ret : 0;
#else
	void *out;
	return kern_remap((void *)from, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)to,
			  &out);
#endif
}

/* New memory of the rung for len bytes, 2 MiB-aligned, writable; 0 and the fall's
 * reason in *why if it cannot be had (a hugetlb refusal counted already: *counted). */
static uintptr_t new_memory(enum sp_backing rung, size_t len, enum sp_fall *why, bool *counted)
{
	void *m;

	*counted = false;
	if (rung == SP_BACKING_2M) {
		struct sp_rung_ask ask = { .site = SP_SITE_TEXT, .rung = rung };
		int r = sp_rung_map(&ask, len, 0, &m);

		if (r < 0)
			return (uintptr_t)m;
		*why = (enum sp_fall)r;
		*counted = true;
		return 0;
	}
	if (sp_map_aligned(len, UNIT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, &m) < 0) {
		*why = SP_FALL_MMAP;
		return 0;
	}
	if (kern_want_huge(m, len, true) < 0) {
		kern_unmap(m, len);
		*why = SP_FALL_MADVISE;
		return 0;
	}
	return (uintptr_t)m;
}

/* THP memory that got no huge page is not worth the move (it would only trade shared
 * page cache for private base pages): what faulted in on base pages is collapsed; if
 * nothing is huge then, give up. Data with nothing resident yet (all-zero bss) is
 * worth it: it will fault in on THP. */
static bool thp_took(uintptr_t m, size_t len, bool exec)
{
	struct sp_verify v;

	if (sp_verify_range((void *)m, len, &v) < 0)
		return false;
	if (v.huge_bytes >= v.rss_bytes)
		return exec ? v.huge_bytes > 0 : true;
	kern_collapse((void *)m, len);
	return sp_verify_range((void *)m, len, &v) == 0 && v.huge_bytes > 0;
}

/* Whether the page cache maps all of the text range with huge pages already: one
 * byte of each 2 MiB unit is read first, so that a unit whose file folio is PMD-sized
 * gets mapped whole (an untouched one would not show in smaps). */
static bool huge_in_page_cache(const struct move *mv)
{
	struct sp_verify v;

	for (uintptr_t a = mv->lo; a < mv->hi; a += UNIT)
		(void)*(volatile const char *)a;
	return sp_verify_range((void *)mv->lo, mv->hi - mv->lo, &v) == 0 &&
	       v.huge_bytes >= mv->hi - mv->lo;
}

/* Moves one range on the first rung that can be had. True if it was moved. */
static bool move_range(const struct move *mv, const enum sp_backing *rungs, int nrungs)
{
	struct piece pieces[MAX_PIECES];
	size_t len = mv->hi - mv->lo;
	int np = pieces_of(mv->lo, mv->hi, pieces);

	if (np < 0) {
		rt_verbose(1, "--text: %s: 0x%lx-0x%lx is not one private readable mapping: left as it is",
			   mv->path, (unsigned long)mv->lo, (unsigned long)mv->hi);
		sp_fall(SP_SITE_TEXT, rungs[0], SP_FALL_UNSUPPORTED);
		return false;
	}
	for (int r = 0; r < nrungs; r++) {
		enum sp_fall why = SP_FALL_MMAP;
		bool counted;
		uintptr_t m = new_memory(rungs[r], len, &why, &counted);
		int err = 0;

		if (!m)
			goto fall;
		for (size_t off = 0; off < len; off += PAGE)
			if (mv->exec || !all_zero((const void *)(mv->lo + off)))
				memcpy((void *)(m + off), (const void *)(mv->lo + off), PAGE);
		if (rungs[r] == SP_BACKING_THP && !thp_took(m, len, mv->exec)) {
			why = SP_FALL_NOT_HUGE;
			goto unmap;
		}
		for (int i = 0; i < np && !err; i++)
			err = kern_protect((void *)(m + (pieces[i].lo - mv->lo)),
					   pieces[i].hi - pieces[i].lo, pieces[i].prot);
		if (!err)
			err = move_in_place(m, len, mv->lo);
		if (!err) {
			if (mv->exec) {
				stats.text_moved += len;
				if (rungs[r] == SP_BACKING_2M)
					stats.text_hugetlb += len;
			} else {
				stats.data_moved += len;
			}
			rt_verbose(1, "--text: %s: %zu MiB of %s at 0x%lx moved to %s", mv->path,
				   len >> 20, mv->exec ? "text" : "data", (unsigned long)mv->lo,
				   rungs[r] == SP_BACKING_2M ? "2 MiB hugetlb pages" : "THP");
			return true;
		}
		rt_verbose(1, "--text: %s: moving 0x%lx-0x%lx failed (errno %d): left as it is",
			   mv->path, (unsigned long)mv->lo, (unsigned long)mv->hi, -err);
	unmap:
		kern_unmap((void *)m, len);
	fall:
		if (!counted)
			sp_fall(SP_SITE_TEXT, rungs[r], why);
		rt_fall(rungs[r], why);
	}
	return false;
}

/* ---------- /tmp/perf-PID.map ---------- */

struct perf_out {
	int fd;
	size_t used;
	char buf[16384];
};

static void perf_flush(struct perf_out *o)
{
	size_t done = 0;
	while (done < o->used) {
		ssize_t n = kern_write(o->fd, o->buf + done, o->used - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	o->used = 0;
}

static void perf_line(struct perf_out *o, uintptr_t addr, uint64_t size, const char *name,
		      size_t name_len)
{
	if (name_len > 512)
		name_len = 512;
	if (sizeof o->buf - o->used < name_len + 48)
		perf_flush(o);
	int n = snprintf(o->buf + o->used, sizeof o->buf - o->used, "%lx %lx %.*s\n",
			 (unsigned long)addr, (unsigned long)size, (int)name_len, name);
	if (n > 0 && (size_t)n < sizeof o->buf - o->used)
		o->used += (size_t)n;
}

/* Names the functions of path that lie in [lo, hi): from its symbol table, or its
 * dynamic symbols if it is stripped. Everything read is bounds-checked: the file is
 * the program's, not ours to trust. */
static void perf_symbols(struct perf_out *o, const struct move *mv)
{
	struct stat st;
	void *map;
	int fd = kern_open(mv->path, O_RDONLY | O_CLOEXEC, 0);

	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(ElfW(Ehdr)) ||
	    kern_map(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0, &map) < 0) {
		kern_close(fd);
		return;
	}
	kern_close(fd);
	const unsigned char *f = map;
	size_t size = (size_t)st.st_size;
	const ElfW(Ehdr) *eh = map;
	const ElfW(Shdr) *sh = NULL, *sym = NULL;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    eh->e_shoff > size || eh->e_shnum > (size - eh->e_shoff) / sizeof(ElfW(Shdr)))
		goto out;
	sh = (const ElfW(Shdr) *)(f + eh->e_shoff);
	for (int pass = 0; pass < 2 && !sym; pass++)
		for (unsigned i = 0; i < eh->e_shnum && !sym; i++)
			if (sh[i].sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB))
				sym = &sh[i];
	if (!sym || sym->sh_link >= eh->e_shnum || sym->sh_offset > size ||
	    sym->sh_size > size - sym->sh_offset)
		goto out;
	const ElfW(Shdr) *str = &sh[sym->sh_link];
	if (str->sh_offset > size || str->sh_size > size - str->sh_offset)
		goto out;
	const ElfW(Sym) *s = (const ElfW(Sym) *)(f + sym->sh_offset);
	const char *names = (const char *)(f + str->sh_offset);
	for (size_t i = 0; i < sym->sh_size / sizeof *s; i++) {
		int type = ELF64_ST_TYPE(s[i].st_info);
		uintptr_t a = mv->bias + s[i].st_value;
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || s[i].st_shndx == SHN_UNDEF ||
		    !s[i].st_size || a < mv->lo || a >= mv->hi || s[i].st_name >= str->sh_size)
			continue;
		const char *name = names + s[i].st_name;
		size_t n = strnlen(name, str->sh_size - s[i].st_name);
		if (n == str->sh_size - s[i].st_name || n == 0)
			continue;
		perf_line(o, a, s[i].st_size, name, n);
		stats.perf_map_symbols++;
	}
out:
	kern_unmap(map, size);
}

static void write_perf_map(void)
{
	static struct perf_out o;
	char path[64];
	bool any = false;

	for (int i = 0; i < nmoves; i++)
		any |= moves[i].exec && moves[i].hi; /* hi is cleared for ranges not moved */
	if (!any || !rt_options()->perf_map)
		return;
	snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
	o.fd = kern_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (o.fd < 0) {
		rt_verbose(1, "--text: cannot write %s (errno %d): perf will not name moved functions",
			   path, -o.fd);
		return;
	}
	o.used = 0;
	for (int i = 0; i < nmoves; i++)
		if (moves[i].exec && moves[i].hi)
			perf_symbols(&o, &moves[i]);
	perf_flush(&o);
	kern_close(o.fd);
}

/* ---------- start ---------- */

/* Before main, from the runtime's constructor (life.c). */
void text_init(void)
{
	static const enum sp_backing hugetlb_first[] = { SP_BACKING_2M, SP_BACKING_THP };
	static const enum sp_backing thp_first[] = { SP_BACKING_THP, SP_BACKING_2M };
	static const enum sp_backing thp_only[] = { SP_BACKING_THP };
	const struct sp_options *o;
	struct scan s;
	const char *last = NULL;

	if (!rt_init())
		return;
	o = rt_options();
	if (o->text == SP_TEXT_NO)
		return;
	if (o->backing == SP_BACKING_4K) {
		rt_verbose(1, "--text does nothing under --backing 4k: text stays on base pages");
		return;
	}
	s.self = (uintptr_t)(void *)text_init;
	s.mode = o->text;
	s.first = true;
	s.data = threads() == 1;
	dl_iterate_phdr(scan_object, &s);
	for (int i = 0; i < nmoves; i++) {
		struct move *mv = &moves[i];
		bool moved;

		if (mv->exec && huge_in_page_cache(mv)) {
			stats.text_cached += mv->hi - mv->lo;
			rt_verbose(1, "--text: %s: %zu MiB of text at 0x%lx is on huge pages in the "
				   "page cache already: left there", mv->path,
				   (size_t)((mv->hi - mv->lo) >> 20), (unsigned long)mv->lo);
			mv->hi = 0;
			continue;
		}
		if (!mv->exec)
			moved = move_range(mv, thp_only, 1);
		else if (o->backing == SP_BACKING_2M || o->backing == SP_BACKING_1G)
			moved = move_range(mv, hugetlb_first, 2);
		else if (o->backing == SP_BACKING_THP)
			moved = move_range(mv, thp_only, 1);
		else
			moved = move_range(mv, thp_first, 2);
		if (moved && (!last || strcmp(mv->path, last))) {
			stats.objects++;
			last = mv->path;
		}
		if (!moved)
			mv->hi = 0;
	}
	write_perf_map();
}
