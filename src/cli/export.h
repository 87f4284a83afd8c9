/* export.h - what superpage export's files share: the metrics of one scrape, HTTP, the server. */
#ifndef SP_CLI_EXPORT_H
#define SP_CLI_EXPORT_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "superpage.h"

/* What a scrape needs that is found once, at start. */
struct export_conf {
	unsigned long top;           /* per-process series for this many, by huge bytes */
	bool probed;                 /* sp_probe could read /sys: sizes and nodes are known */
	int n_sizes;                 /* huge page sizes, and the NUMA nodes with pools */
	uint64_t sizes[SP_MAX_PAGE_SIZES];
	int n_nodes;
	int nodes[SP_MAX_NODES];
};

/* Fills the sizes and nodes (sp_probe, once: its feature probes map memory and try a
 * collapse, which a scrape must not repeat). 0 or sp_probe's -errno. */
int export_conf_init(struct export_conf *c, unsigned long top);
/* Reads the machine and writes one scrape's metrics to f (metrics.c). */
void metrics_write(FILE *f, const struct export_conf *c);

/* A deadline ms milliseconds from now (CLOCK_MONOTONIC), and the time left until
 * one: false once it has passed (serve.c). */
void export_deadline(struct timespec *d, long ms);
bool export_time_left(const struct timespec *d, struct timespec *left);

/* Connections served at once; at the cap, the oldest one still sending its request
 * is closed for a new one (superpage(1) says so). Also the listen backlog. */
#define HTTP_CONN_MAX 64

/* The listening socket for "IPV4:PORT", "[IPV6]:PORT", "localhost:PORT" or ":PORT"
 * (every IPv4 address);
 * port 0 takes a free one. Returns the socket, or -1 after saying why on stderr with
 * *code set: EXIT_USAGE for an address that is not one (or not this machine's),
 * EXIT_FAIL for one that cannot be had (in use, not allowed). */
int http_listen(const char *addr, int *code);
/* "127.0.0.1:9100", "[::1]:9100": the address a socket is bound to. */
void http_bound(int fd, char *buf, size_t len);

/* What goes back for one request: the head, then the body (malloc'd; NULL for none). */
struct http_response {
	char head[512];
	size_t head_len;
	char *body;
	size_t body_len;
};
/* Where the request head in buf ends ("\r\n\r\n", or "\n\n" from a lax client), or
 * NULL while it has not come whole. */
const char *http_head_end(const char *buf, size_t len);
/* The response to the request whose head is in buf (NUL-ended; buf is changed): the
 * metrics for GET or HEAD /metrics, else the status that says what is wrong. */
void http_answer(char *buf, const struct export_conf *conf, struct http_response *r);
/* The response to a request head larger than the server reads (431). */
void http_answer_too_large(struct http_response *r);

/* Serves GET /metrics on the listening socket fd until *stop is set: up to
 * HTTP_CONN_MAX connections at once, each with its own deadline, none waited for by
 * another (serve.c). Signals that set *stop must be blocked by the caller; they are
 * let in only while it waits (wait_mask: the mask to wait with). */
void http_serve(int fd, const struct export_conf *c, volatile sig_atomic_t *stop,
		const sigset_t *wait_mask);

#endif
