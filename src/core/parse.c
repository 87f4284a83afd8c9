/* parse.c - names and numbers: sizes like 2M/1G, counts, yes/no, backing and region names. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

static const char *const backing_names[SP_BACKING_COUNT] = {
	[SP_BACKING_AUTO] = "auto", [SP_BACKING_4K] = "4k", [SP_BACKING_THP] = "thp",
	[SP_BACKING_2M] = "2m",     [SP_BACKING_1G] = "1g",
};

static const char *const fall_names[SP_FALL_COUNT] = {
	[SP_FALL_NO_POOL] = "no_pool",         [SP_FALL_POOL_EMPTY] = "pool_empty",
	[SP_FALL_UNSUPPORTED] = "unsupported", [SP_FALL_THP_OFF] = "thp_off",
	[SP_FALL_MADVISE] = "madvise_failed",  [SP_FALL_NOT_HUGE] = "not_huge",
	[SP_FALL_MMAP] = "mmap_failed",        [SP_FALL_SKIPPED] = "skipped_recent_failure",
	[SP_FALL_PROGRAM_PAGES] = "program_managed_pages", [SP_FALL_CGROUP] = "cgroup_limit",
};

static const char *const region_names[SP_REGION_COUNT] = {
	[SP_REGION_HEAP] = "heap", [SP_REGION_ANON] = "anon",   [SP_REGION_TEXT] = "text",
	[SP_REGION_DATA] = "data", [SP_REGION_STACK] = "stack", [SP_REGION_SHM] = "shm",
	[SP_REGION_OTHER] = "other",
};

static const char *const why_names[SP_WHY_COUNT] = {
	[SP_WHY_SHARED] = "shared",         [SP_WHY_FILE] = "file",
	[SP_WHY_THP_OFF] = "thp_off",       [SP_WHY_NOHUGEPAGE] = "nohugepage",
	[SP_WHY_SMALL] = "small",           [SP_WHY_NOT_ADVISED] = "not_advised",
	[SP_WHY_PARTIAL] = "partial",
};

const char *sp_why_name(enum sp_why w)
{
	return (unsigned)w < SP_WHY_COUNT ? why_names[w] : "?";
}

const char *sp_version(void)
{
	return SP_VERSION_STRING;
}

const char *sp_backing_name(enum sp_backing b)
{
	return (unsigned)b < SP_BACKING_COUNT ? backing_names[b] : "?";
}

const char *sp_fall_name(enum sp_fall f)
{
	return (unsigned)f < SP_FALL_COUNT ? fall_names[f] : "?";
}

const char *sp_region_name(enum sp_region r)
{
	return (unsigned)r < SP_REGION_COUNT ? region_names[r] : "?";
}

int sp_backing_parse(const char *s, enum sp_backing *out)
{
	if (!s)
		return -EINVAL;
	for (int b = 0; b < SP_BACKING_COUNT; b++) {
		if (strcasecmp(s, backing_names[b]) == 0) {
			*out = (enum sp_backing)b;
			return 0;
		}
	}
	return -EINVAL;
}

size_t sp_strlcpy(char *dst, const char *src, size_t len)
{
	size_t n = strlen(src);
	if (len) {
		size_t c = n < len - 1 ? n : len - 1;
		memcpy(dst, src, c);
		dst[c] = 0;
	}
	return n;
}

int sp_scan_u64(const char **s, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	bool overflow = false;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	*s = p;
	if (overflow)
		return -ERANGE;
	*out = v;
	return 0;
}

int sp_parse_count(const char *s, uint64_t *out)
{
	if (!s)
		return -EINVAL;
	uint64_t v;
	int r = sp_scan_u64(&s, &v);
	if (r < 0)
		return r;
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

int sp_parse_size(const char *s, uint64_t *out)
{
	if (!s)
		return -EINVAL;
	uint64_t v;
	int r = sp_scan_u64(&s, &v);
	if (r == -EINVAL)
		return r;
	unsigned shift = 0;
	switch (*s) {
	case 'k': case 'K': shift = 10; break;
	case 'm': case 'M': shift = 20; break;
	case 'g': case 'G': shift = 30; break;
	case 't': case 'T': shift = 40; break;
	case 0: break;
	default:
		/* "12B" is bytes; anything else is not a size. */
		if ((*s == 'b' || *s == 'B') && s[1] == 0)
			break;
		return -EINVAL;
	}
	if (shift) {
		s++;
		if (strcasecmp(s, "b") != 0 && strcasecmp(s, "ib") != 0 && *s)
			return -EINVAL;
	}
	if (r == -ERANGE)
		return r;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int sp_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "yes", "on", "true", "y" };
	static const char *const no[] = { "0", "no", "off", "false", "n" };
	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

const char *sp_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;
	uint64_t v = bytes;
	while (v && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u]);
	return buf;
}
