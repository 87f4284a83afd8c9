/* bench/cpu.h - what the benchmarks know of the CPU they run on: model, caches, TLBs, page size.
 *
 * Header only and allocation free (no malloc, no stdio streams), so the bench runner and
 * every kernel can include it as it is. bench_cpu_probe fills a struct bench_cpu; a field
 * it cannot learn stays 0 (or "unknown" for the model). Off x86 only the caches and the
 * page size are found. TLB counts are entries a page of that size can use: a TLB shared
 * by several page sizes is counted for each (Intel's STLB holds 4K and 2M pages alike). */
#ifndef BENCH_CPU_H
#define BENCH_CPU_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define BENCH_CPU_X86 1
#endif

struct bench_cpu {
	char model[64];
	unsigned line;                        /* L1 data cache line, bytes */
	uint64_t l1d, l2, l3;                 /* bytes, 0 unknown */
	unsigned dtlb_4k, dtlb_2m, dtlb_1g;   /* L1 data TLB entries, 0 unknown */
	unsigned stlb_4k, stlb_2m, stlb_1g;   /* L2/shared TLB entries, 0 unknown */
	long page_size;
};

/* Reads a small text file (sysfs) into buf without its trailing newline; -1 if it cannot. */
static inline int bench_cpu_read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -1;
	got = read(fd, buf, len - 1);
	close(fd);
	if (got <= 0)
		return -1;
	while (got > 0 && (buf[got - 1] == '\n' || buf[got - 1] == ' '))
		got--;
	buf[got] = '\0';
	return 0;
}

/* "32K", "512K", "32768K", "1M" or plain bytes, as sysfs writes cache sizes; 0 if not that. */
static inline uint64_t bench_cpu_parse_bytes(const char *s)
{
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	switch (*s) {
	case 'K': return v << 10;
	case 'M': return v << 20;
	case 'G': return v << 30;
	case '\0': return v;
	default: return 0;
	}
}

/* The caches cpu0 sees, from the kernel's own reading of them. Preferred to sysconf:
 * glibc 2.36 on AMD Zen reports the whole socket's L3 (256 MiB on an EPYC Milan),
 * where the kernel reports the 32 MiB one core shares. */
static inline void bench_cpu_caches_sysfs(struct bench_cpu *c)
{
	for (int i = 0; i < 16; i++) {
		char path[96], level[8], type[16], size[32], line[16];
		uint64_t bytes;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (bench_cpu_read_text(path, level, sizeof(level)) < 0)
			break;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if (bench_cpu_read_text(path, type, sizeof(type)) < 0 || !strcmp(type, "Instruction"))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (bench_cpu_read_text(path, size, sizeof(size)) < 0)
			continue;
		bytes = bench_cpu_parse_bytes(size);
		if (level[0] == '1' && !level[1]) {
			c->l1d = bytes;
			snprintf(path, sizeof(path),
				 "/sys/devices/system/cpu/cpu0/cache/index%d/coherency_line_size", i);
			if (bench_cpu_read_text(path, line, sizeof(line)) == 0)
				c->line = (unsigned)bench_cpu_parse_bytes(line);
		} else if (level[0] == '2' && !level[1]) {
			c->l2 = bytes;
		} else if (level[0] == '3' && !level[1]) {
			c->l3 = bytes;
		}
	}
}

/* Whatever sysfs left unknown (containers may hide it), as glibc's sysconf sees it. */
static inline void bench_cpu_caches_sysconf(struct bench_cpu *c)
{
	long v;

	if (!c->l1d && (v = sysconf(_SC_LEVEL1_DCACHE_SIZE)) > 0)
		c->l1d = (uint64_t)v;
	if (!c->line && (v = sysconf(_SC_LEVEL1_DCACHE_LINESIZE)) > 0)
		c->line = (unsigned)v;
	if (!c->l2 && (v = sysconf(_SC_LEVEL2_CACHE_SIZE)) > 0)
		c->l2 = (uint64_t)v;
	if (!c->l3 && (v = sysconf(_SC_LEVEL3_CACHE_SIZE)) > 0)
		c->l3 = (uint64_t)v;
}

#ifdef BENCH_CPU_X86
/* The brand string of leaves 0x80000002-4, without the blanks vendors pad it with. */
static inline void bench_cpu_model(struct bench_cpu *c)
{
	unsigned r[12];
	char s[49], *p = s;
	size_t n;

	/* __get_cpuid fails, touching nothing, for a leaf beyond the CPU's last. */
	for (unsigned i = 0; i < 3; i++)
		if (!__get_cpuid(0x80000002 + i, &r[4 * i], &r[4 * i + 1], &r[4 * i + 2],
				 &r[4 * i + 3]))
			return;
	memcpy(s, r, 48);
	s[48] = '\0';
	while (*p == ' ')
		p++;
	n = strlen(p);
	while (n > 0 && p[n - 1] == ' ')
		n--;
	if (n >= sizeof(c->model))
		n = sizeof(c->model) - 1;
	if (n) {
		memcpy(c->model, p, n);
		c->model[n] = '\0';
	}
}

/* An L1 TLB byte pair of leaf 0x80000005 (associativity in the high byte, entries in
 * the low one): associativity 0 is reserved, so nothing is known. */
static inline unsigned bench_cpu_amd_l1(unsigned assoc_entries)
{
	return (assoc_entries >> 8) & 0xff ? assoc_entries & 0xff : 0;
}

/* A 16-bit L2 TLB field of leaves 0x80000006 and 0x80000019: associativity in the top
 * 4 bits, entries in the low 12. Associativity 0 means that TLB is off (or absent), and
 * its entry count then means nothing. */
static inline unsigned bench_cpu_amd_l2(unsigned assoc_entries)
{
	return (assoc_entries >> 12) & 0xf ? assoc_entries & 0xfff : 0;
}

/* AMD (and Hygon): the data halves (high 16 bits) of the TLB leaves. 0x80000005 and
 * 0x80000006 give 2M entries in EAX and 4K in EBX; 0x80000019 gives 1G, L1 in EAX and
 * L2 in EBX. The L1 fields are bytes, the L2 ones 4-bit associativity + 12-bit count. */
static inline void bench_cpu_tlb_amd(struct bench_cpu *c)
{
	unsigned a, b, cx, d;

	if (__get_cpuid(0x80000005, &a, &b, &cx, &d)) {
		c->dtlb_2m = bench_cpu_amd_l1(a >> 16);
		c->dtlb_4k = bench_cpu_amd_l1(b >> 16);
	}
	if (__get_cpuid(0x80000006, &a, &b, &cx, &d)) {
		c->stlb_2m = bench_cpu_amd_l2(a >> 16);
		c->stlb_4k = bench_cpu_amd_l2(b >> 16);
	}
	if (__get_cpuid(0x80000019, &a, &b, &cx, &d)) {
		c->dtlb_1g = bench_cpu_amd_l2(a >> 16);
		c->stlb_1g = bench_cpu_amd_l2(b >> 16);
	}
}

static inline void bench_cpu_max(unsigned *field, unsigned entries)
{
	if (entries > *field)
		*field = entries;
}

/* Intel leaf 0x18, one sub-leaf per TLB: EBX bits 0/1/3 say which page sizes (4K, 2M,
 * 1G) it holds and bits 31:16 its ways, ECX its sets, EDX bits 4:0 its type (0 none,
 * 1 data, 2 instruction, 3 unified, 4 load-only, 5 store-only) and 7:5 its level.
 * Loads are what the kernels wait on, so store-only TLBs are left out. 0 if absent. */
static inline int bench_cpu_tlb_leaf18(struct bench_cpu *c)
{
	unsigned a, b, cx, d, last, found = 0;

	if (!__get_cpuid_count(0x18, 0, &a, &b, &cx, &d))
		return 0;
	last = a;
	for (unsigned sub = 0; sub <= last && sub < 64; sub++) {
		unsigned type, level, entries;

		if (!__get_cpuid_count(0x18, sub, &a, &b, &cx, &d))
			break;
		type = d & 0x1f;
		level = (d >> 5) & 0x7;
		entries = (b >> 16) * cx;
		if (type != 1 && type != 3 && type != 4)
			continue;
		found = 1;
		if (level == 1) {
			if (b & 1)
				bench_cpu_max(&c->dtlb_4k, entries);
			if (b & 2)
				bench_cpu_max(&c->dtlb_2m, entries);
			if (b & 8)
				bench_cpu_max(&c->dtlb_1g, entries);
		} else if (level == 2) {
			if (b & 1)
				bench_cpu_max(&c->stlb_4k, entries);
			if (b & 2)
				bench_cpu_max(&c->stlb_2m, entries);
			if (b & 8)
				bench_cpu_max(&c->stlb_1g, entries);
		}
	}
	return found;
}

/* One leaf-2 descriptor byte, for the data TLBs of the Intel cores that predate leaf
 * 0x18 (the SDM's table "Encoding of CPUID Leaf 2 Descriptors"). 4M entries hold 2M
 * pages in 64-bit mode, so "2M/4M" and "4M" descriptors count as 2M. */
static inline void bench_cpu_leaf2_desc(struct bench_cpu *c, unsigned char desc)
{
	switch (desc) {
	case 0x03: bench_cpu_max(&c->dtlb_4k, 64); break;
	case 0x04: bench_cpu_max(&c->dtlb_2m, 8); break;
	case 0x05: bench_cpu_max(&c->dtlb_2m, 32); break;
	case 0x56: bench_cpu_max(&c->dtlb_2m, 16); break;
	case 0x57: bench_cpu_max(&c->dtlb_4k, 16); break;
	case 0x59: bench_cpu_max(&c->dtlb_4k, 16); break;
	case 0x5a: bench_cpu_max(&c->dtlb_2m, 32); break;
	case 0x5b: bench_cpu_max(&c->dtlb_4k, 64); bench_cpu_max(&c->dtlb_2m, 64); break;
	case 0x5c: bench_cpu_max(&c->dtlb_4k, 128); bench_cpu_max(&c->dtlb_2m, 128); break;
	case 0x5d: bench_cpu_max(&c->dtlb_4k, 256); bench_cpu_max(&c->dtlb_2m, 256); break;
	case 0x63: bench_cpu_max(&c->dtlb_2m, 32); bench_cpu_max(&c->dtlb_1g, 4); break;
	case 0x64: bench_cpu_max(&c->dtlb_4k, 512); break;
	case 0x6b: bench_cpu_max(&c->dtlb_4k, 256); break;
	case 0x6c: bench_cpu_max(&c->dtlb_2m, 128); break;
	case 0x6d: bench_cpu_max(&c->dtlb_1g, 16); break;
	case 0xa0: bench_cpu_max(&c->dtlb_4k, 32); break;
	case 0xb3: bench_cpu_max(&c->dtlb_4k, 128); break;
	case 0xb4: bench_cpu_max(&c->dtlb_4k, 256); break;
	case 0xba: bench_cpu_max(&c->dtlb_4k, 64); break;
	case 0xc0: bench_cpu_max(&c->dtlb_4k, 8); bench_cpu_max(&c->dtlb_2m, 8); break;
	case 0xc1: bench_cpu_max(&c->stlb_4k, 1024); bench_cpu_max(&c->stlb_2m, 1024); break;
	case 0xc2: bench_cpu_max(&c->dtlb_2m, 16); break;
	case 0xc3:
		bench_cpu_max(&c->stlb_4k, 1536);
		bench_cpu_max(&c->stlb_2m, 1536);
		bench_cpu_max(&c->stlb_1g, 16);
		break;
	case 0xc4: bench_cpu_max(&c->dtlb_2m, 32); break;
	case 0xca: bench_cpu_max(&c->stlb_4k, 512); break;
	default: break;
	}
}

/* Leaf 2: up to 15 descriptor bytes in EAX..EDX (EAX's low byte is a count, always 1);
 * a register with bit 31 set holds no descriptors. */
static inline void bench_cpu_tlb_leaf2(struct bench_cpu *c)
{
	unsigned r[4];

	if (!__get_cpuid(2, &r[0], &r[1], &r[2], &r[3]))
		return;
	for (int i = 0; i < 4; i++) {
		if (r[i] & 0x80000000u)
			continue;
		for (int byte = i == 0 ? 1 : 0; byte < 4; byte++)
			bench_cpu_leaf2_desc(c, (unsigned char)(r[i] >> (8 * byte)));
	}
}

static inline void bench_cpu_tlbs(struct bench_cpu *c)
{
	unsigned a, vendor[3];
	char name[13];

	if (!__get_cpuid(0, &a, &vendor[0], &vendor[2], &vendor[1]))
		return;
	memcpy(name, vendor, 12);
	name[12] = '\0';
	if (!strcmp(name, "AuthenticAMD") || !strcmp(name, "HygonGenuine"))
		bench_cpu_tlb_amd(c);
	else if (!bench_cpu_tlb_leaf18(c))
		bench_cpu_tlb_leaf2(c);
}
#endif

static inline void bench_cpu_probe(struct bench_cpu *c)
{
	memset(c, 0, sizeof(*c));
	strcpy(c->model, "unknown");
	c->page_size = sysconf(_SC_PAGESIZE);
	if (c->page_size < 0)
		c->page_size = 0;
	bench_cpu_caches_sysfs(c);
	bench_cpu_caches_sysconf(c);
#ifdef BENCH_CPU_X86
	bench_cpu_model(c);
	bench_cpu_tlbs(c);
#endif
}

#endif
