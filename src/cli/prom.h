/* prom.h - the Prometheus text exposition writer (format 0.0.4): families, labels, samples. */
#ifndef SP_CLI_PROM_H
#define SP_CLI_PROM_H

#include <stdint.h>
#include <stdio.h>

/* The content type of what prom writes, for an HTTP response. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct prom {
	FILE *f;
	const char *family;   /* the family being written: samples take its name */
};

void prom_init(struct prom *p, FILE *f);
/* Starts a family: its "# HELP" and "# TYPE" lines (type: "gauge" or "counter").
 * Every sample of a family must follow its start, before the next family. */
void prom_family(struct prom *p, const char *name, const char *type, const char *help);
/* A sample of the current family, its labels as NULL-ended name, value pairs (names
 * are the caller's identifiers; values are escaped: \\, \", \n, and a byte that is
 * not UTF-8 becomes U+FFFD). */
void prom_u64(struct prom *p, uint64_t v, ...) __attribute__((sentinel));
void prom_double(struct prom *p, double v, ...) __attribute__((sentinel));

#endif
