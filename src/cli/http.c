/* http.c - superpage export's HTTP server: GET /metrics, one connection at a time, every wait bounded. */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"
#include "prom.h"

/* A client cannot hold the server longer than these: the request head must come
 * whole within READ_MS, the response be taken within WRITE_MS. Prometheus sends
 * its request at once and reads at once; a scrape's default timeout is 10 s. */
#define REQUEST_MAX 8192
#define READ_MS 3000
#define WRITE_MS 10000
/* After the response, what the client still sends (a POST's body) is read for this
 * long before the close: closing on unread data resets the connection, and the
 * client could lose the response. */
#define DRAIN_MS 500
#define DRAIN_MAX 65536

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
		if (bind(fd, (struct sockaddr *)&ss, len) == 0 && listen(fd, 16) == 0)
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

/* ---------- one connection ---------- */

struct conn {
	int fd;
	struct timespec deadline;        /* CLOCK_MONOTONIC */
	volatile sig_atomic_t *stop;
	const sigset_t *mask;
};

void export_deadline(struct timespec *d, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, d);
	d->tv_sec += ms / 1000;
	d->tv_nsec += (ms % 1000) * 1000000L;
	if (d->tv_nsec >= 1000000000L) {
		d->tv_sec++;
		d->tv_nsec -= 1000000000L;
	}
}

bool export_time_left(const struct timespec *d, struct timespec *left)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	left->tv_sec = d->tv_sec - now.tv_sec;
	left->tv_nsec = d->tv_nsec - now.tv_nsec;
	if (left->tv_nsec < 0) {
		left->tv_sec--;
		left->tv_nsec += 1000000000L;
	}
	return left->tv_sec >= 0;
}

/* Waits until the connection is ready for events: true, or false when the deadline
 * passed, a stop came or the wait failed. */
static bool conn_wait(struct conn *c, short events)
{
	for (;;) {
		struct timespec left;
		struct pollfd pfd = { .fd = c->fd, .events = events };

		if (*c->stop || !export_time_left(&c->deadline, &left))
			return false;
		int r = ppoll(&pfd, 1, &left, c->mask);
		if (r > 0)
			return true;
		if (r < 0 && errno != EINTR)
			return false;
	}
}

static bool send_all(struct conn *c, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w < 0 && errno != EAGAIN && errno != EINTR) {
			return false;
		} else if (!conn_wait(c, POLLOUT)) {
			return false;
		}
	}
	return true;
}

static void respond(struct conn *c, const char *status, const char *type, const char *extra,
		    const char *body, size_t len, bool head_only)
{
	char head[512];
	int n = snprintf(head, sizeof head,
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			 "Connection: close\r\n\r\n", status, type, len, extra);

	export_deadline(&c->deadline, WRITE_MS);
	if (send_all(c, head, (size_t)n) && !head_only)
		send_all(c, body, len);
}

static void respond_text(struct conn *c, const char *status, const char *extra, const char *text)
{
	respond(c, status, "text/plain; charset=utf-8", extra, text, strlen(text), false);
}

/* Reads what the client still sends, a little, so that the close does not reset
 * the connection under the response. */
static void drain(struct conn *c)
{
	char buf[4096];
	size_t total = 0;

	shutdown(c->fd, SHUT_WR);
	export_deadline(&c->deadline, DRAIN_MS);
	while (total < DRAIN_MAX && conn_wait(c, POLLIN)) {
		ssize_t r = recv(c->fd, buf, sizeof buf, 0);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
			break;
		if (r > 0)
			total += (size_t)r;
	}
}

/* The end of the request head ("\r\n\r\n", or "\n\n" from a lax client), or NULL. */
static const char *head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] == '\n' && buf[i + 1] == '\n')
			return buf + i + 2;
		if (i + 3 < len && !memcmp(buf + i, "\r\n\r\n", 4))
			return buf + i + 4;
	}
	return NULL;
}

/* Reads the request head into buf (NUL-ended): its length, 0 if the client went away
 * or was too slow, -1 if it is larger than buf. */
static long read_head(struct conn *c, char *buf, size_t cap)
{
	size_t len = 0;

	export_deadline(&c->deadline, READ_MS);
	while (!head_end(buf, len)) {
		if (len == cap - 1)
			return -1;
		if (!conn_wait(c, POLLIN))
			return 0;
		ssize_t r = recv(c->fd, buf + len, cap - 1 - len, 0);
		if (r == 0)
			return 0;
		if (r < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return 0;
		}
		len += (size_t)r;
		buf[len] = '\0';
	}
	return (long)len;
}

static bool is_token(const char *s)
{
	return *s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			    "!#$%&'*+-.^_`|~") == strlen(s);
}

static void serve_metrics(struct conn *c, const struct export_conf *conf, bool head_only)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	if (f) {
		metrics_write(f, conf);
		if (fclose(f) == 0) {
			respond(c, "200 OK", PROM_CONTENT_TYPE, "", body, len, head_only);
			free(body);
			return;
		}
	}
	free(body);
	respond_text(c, "500 Internal Server Error", "", "out of memory for the metrics\n");
}

/* Answers the request whose head is in buf. */
static void answer(struct conn *c, const struct export_conf *conf, char *buf)
{
	char *method, *target, *version, *save;

	buf[strcspn(buf, "\r\n")] = '\0';
	method = strtok_r(buf, " ", &save);
	target = strtok_r(NULL, " ", &save);
	version = strtok_r(NULL, " ", &save);
	if (!method || !target || !version || strtok_r(NULL, " ", &save) || !is_token(method) ||
	    target[0] != '/' || strncmp(version, "HTTP/", 5)) {
		respond_text(c, "400 Bad Request", "", "bad request\n");
		return;
	}
	if (strcmp(version, "HTTP/1.0") && strcmp(version, "HTTP/1.1")) {
		respond_text(c, "505 HTTP Version Not Supported", "", "HTTP/1.0 or 1.1 only\n");
		return;
	}
	bool head = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head) {
		respond_text(c, "405 Method Not Allowed", "Allow: GET, HEAD\r\n",
			     "GET /metrics only\n");
		return;
	}
	target[strcspn(target, "?#")] = '\0';
	if (strcmp(target, "/metrics")) {
		respond_text(c, "404 Not Found", "", "not found: the metrics are at /metrics\n");
		return;
	}
	serve_metrics(c, conf, head);
}

/* Answers one request (the request line is all that is read of it); false if there
 * was none to answer. */
static bool serve_one(struct conn *c, const struct export_conf *conf)
{
	char buf[REQUEST_MAX];
	long n = read_head(c, buf, sizeof buf);

	if (n == 0)
		return false; /* gone, or too slow */
	if (n < 0)
		respond_text(c, "431 Request Header Fields Too Large", "", "request too large\n");
	else
		answer(c, conf, buf);
	return true;
}

void http_serve(int fd, const struct export_conf *conf, volatile sig_atomic_t *stop,
		const sigset_t *wait_mask)
{
	while (!*stop) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r = ppoll(&pfd, 1, NULL, wait_mask);

		if (r <= 0)
			continue; /* a signal: *stop says if it was the end */
		int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (cfd < 0) {
			/* Out of descriptors (or memory): wait a little rather than spin. */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				struct timespec ts = { 0, 100000000L };
				ppoll(NULL, 0, &ts, wait_mask);
			}
			continue;
		}
		struct conn c = { .fd = cfd, .stop = stop, .mask = wait_mask };
		if (serve_one(&c, conf))
			drain(&c);
		close(cfd);
	}
}
