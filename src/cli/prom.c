/* prom.c - the Prometheus text exposition writer: one HELP and TYPE per family, escaped labels. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>

#include "json.h"
#include "prom.h"

void prom_init(struct prom *p, FILE *f)
{
	p->f = f;
	p->family = NULL;
}

/* HELP text escapes only \ and newline (the format's rule for it). */
static void help_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

void prom_family(struct prom *p, const char *name, const char *type, const char *help)
{
	p->family = name;
	fprintf(p->f, "# HELP %s ", name);
	help_text(p->f, help);
	fprintf(p->f, "\n# TYPE %s %s\n", name, type);
}

/* A label value inside its quotes: \, " and newline escaped; a byte that is not
 * UTF-8 (a comm or a cgroup name can hold any) replaced, as the format wants UTF-8. */
static void label_value(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		int n;

		if (*s == '\\' || *s == '"') {
			fputc('\\', f);
			fputc(*s++, f);
			continue;
		}
		if (*s == '\n') {
			fputs("\\n", f);
			s++;
			continue;
		}
		n = json_utf8_len(s);
		if (n == 0) {
			fputs("\xef\xbf\xbd", f);
			s++;
			continue;
		}
		fwrite(s, 1, (size_t)n, f);
		s += (size_t)n;
	}
}

static void sample_head(struct prom *p, va_list ap)
{
	const char *name, *sep = "{";

	assert(p->family);
	fputs(p->family, p->f);
	while ((name = va_arg(ap, const char *)) != NULL) {
		fprintf(p->f, "%s%s=\"", sep, name);
		label_value(p->f, va_arg(ap, const char *));
		fputc('"', p->f);
		sep = ",";
	}
	if (*sep == ',')
		fputc('}', p->f);
	fputc(' ', p->f);
}

void prom_u64(struct prom *p, uint64_t v, ...)
{
	va_list ap;

	va_start(ap, v);
	sample_head(p, ap);
	va_end(ap);
	fprintf(p->f, "%llu\n", (unsigned long long)v);
}

void prom_double(struct prom *p, double v, ...)
{
	va_list ap;

	va_start(ap, v);
	sample_head(p, ap);
	va_end(ap);
	if (isnan(v))
		fputs("NaN\n", p->f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf\n" : "-Inf\n", p->f);
	else
		fprintf(p->f, "%.9g\n", v);
}
