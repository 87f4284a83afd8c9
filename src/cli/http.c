/* http.c - superpage export's HTTP: the listening socket, and the answer to a request head. */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"
#include "prom.h"

/* ---------- the listening socket ---------- */

/* Splits "HOST:PORT", "[V6]:PORT", ":PORT" into host (empty: every address) and
 * port. -EINVAL if it is none of these. */
static int split_addr(const char *addr, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon, *h = addr;
	size_t n;

	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return -EINVAL;
		h = addr + 1;
		n = (size_t)(close - h);
		colon = close + 1;
		if (n == 0)
			return -EINVAL;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - addr);
		if (memchr(addr, ':', n)) /* an IPv6 address without its brackets */
			return -EINVAL;
	}
	const char *p = colon + 1;
	size_t pn = strlen(p);
	if (n >= hlen || pn == 0 || pn >= plen || pn > 5 || strspn(p, "0123456789") != pn ||
	    atoi(p) > 65535)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	memcpy(port, p, pn + 1);
	return 0;
}

/* The socket address of host (a numeric IPv4 or IPv6 address, "localhost", or
 * empty: every address) and port. -EINVAL if host is none of these. The command is
 * linked statically, so names are not looked up (that takes glibc's NSS modules). */
static int host_addr(const char *host, unsigned port, struct sockaddr_storage *ss,
		     socklen_t *len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof *ss);
	if (!strcmp(host, "localhost"))
		host = "127.0.0.1";
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	*len = sizeof *in;
	if (!host[0]) {
		in->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	if (inet_pton(AF_INET, host, &in->sin_addr) == 1)
		return 0;
	memset(ss, 0, sizeof *ss);
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons((uint16_t)port);
	*len = sizeof *in6;
	return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1 ? 0 : -EINVAL;
}

int http_listen(const char *addr, int *code)
{
	char host[256], port[8];
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, fd;

	*code = EXIT_USAGE;
	if (split_addr(addr, host, sizeof host, port, sizeof port) < 0 ||
	    host_addr(host, (unsigned)atoi(port), &ss, &len) < 0) {
		cli_error(EXIT_USAGE, "export: bad --listen '%s' (IPV4:PORT, [IPV6]:PORT, "
			  "localhost:PORT or :PORT; a port from 0 to 65535)", addr);
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, (struct sockaddr *)&ss, len) == 0 && listen(fd, HTTP_CONN_MAX) == 0)
			return fd;
	}
	int err = errno;
	if (fd >= 0)
		close(fd);
	/* Not this machine's address is a bad argument; one in use or not allowed is not. */
	*code = err == EADDRNOTAVAIL || err == EAFNOSUPPORT ? EXIT_USAGE : EXIT_FAIL;
	cli_error(*code, "export: cannot listen on '%s': %s", addr, strerror(err));
	return -1;
}

void http_bound(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[INET6_ADDRSTRLEN];
	const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		snprintf(buf, len, "?");
	} else if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
		snprintf(buf, len, "[%s]:%u", host, (unsigned)ntohs(in6->sin6_port));
	} else {
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
		snprintf(buf, len, "%s:%u", host, (unsigned)ntohs(in->sin_port));
	}
}

/* ---------- the answer to a request ---------- */

/* Sets r to a response: the head, and body (malloc'd, r takes it; NULL when out of
 * memory: then nothing is promised) unless head_only. */
static void respond(struct http_response *r, const char *status, const char *type,
		    const char *extra, char *body, size_t len, bool head_only)
{
	if (!body)
		len = 0;
	int n = snprintf(r->head, sizeof r->head,
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n", status, type, len, extra);

	r->head_len = (size_t)n < sizeof r->head ? (size_t)n : sizeof r->head - 1;
	if (head_only) {
		free(body);
		body = NULL;
		len = 0;
	}
	r->body = body;
	r->body_len = len;
}

static void respond_text(struct http_response *r, const char *status, const char *extra,
			 const char *text)
{
	respond(r, status, "text/plain; charset=utf-8", extra, strdup(text), strlen(text), false);
}

const char *http_head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] == '\n' && buf[i + 1] == '\n')
			return buf + i + 2;
		if (i + 3 < len && !memcmp(buf + i, "\r\n\r\n", 4))
			return buf + i + 4;
	}
	return NULL;
}

static bool is_token(const char *s)
{
	return *s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			    "!#$%&'*+-.^_`|~") == strlen(s);
}

static void serve_metrics(struct http_response *r, const struct export_conf *conf,
			  bool head_only)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	if (f) {
		metrics_write(f, conf);
		if (fclose(f) == 0) {
			respond(r, "200 OK", PROM_CONTENT_TYPE, "", body, len, head_only);
			return;
		}
	}
	free(body);
	respond_text(r, "500 Internal Server Error", "", "out of memory for the metrics\n");
}

void http_answer(char *buf, const struct export_conf *conf, struct http_response *r)
{
	char *method, *target, *version, *save;

	buf[strcspn(buf, "\r\n")] = '\0';
	method = strtok_r(buf, " ", &save);
	target = strtok_r(NULL, " ", &save);
	version = strtok_r(NULL, " ", &save);
	if (!method || !target || !version || strtok_r(NULL, " ", &save) || !is_token(method) ||
	    target[0] != '/' || strncmp(version, "HTTP/", 5)) {
		respond_text(r, "400 Bad Request", "", "bad request\n");
		return;
	}
	if (strcmp(version, "HTTP/1.0") && strcmp(version, "HTTP/1.1")) {
		respond_text(r, "505 HTTP Version Not Supported", "", "HTTP/1.0 or 1.1 only\n");
		return;
	}
	bool head = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head) {
		respond_text(r, "405 Method Not Allowed", "Allow: GET, HEAD\r\n",
			     "GET /metrics only\n");
		return;
	}
	target[strcspn(target, "?#")] = '\0';
	if (strcmp(target, "/metrics")) {
		respond_text(r, "404 Not Found", "", "not found: the metrics are at /metrics\n");
		return;
	}
	serve_metrics(r, conf, head);
}

void http_answer_too_large(struct http_response *r)
{
	respond_text(r, "431 Request Header Fields Too Large", "", "request too large\n");
}
