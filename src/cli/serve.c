/* serve.c - superpage export's server loop: many connections at once, each read and written as it is ready, each with a deadline. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"

/* A client holds a slot no longer than these: its request head must come whole
 * within READ_MS of its connect (as long as Prometheus' default scrape timeout: a
 * client slower than that has given up), the response be taken within WRITE_MS. A
 * slow client costs its slot only: the others are served meanwhile. */
#define REQUEST_MAX 8192
#define READ_MS 10000
#define WRITE_MS 10000
/* After the response, what the client still sends (a POST's body) is read for this
 * long before the close: closing on unread data resets the connection, and the
 * client could lose the response. */
#define DRAIN_MS 500
#define DRAIN_MAX 65536
/* Out of descriptors: accept nothing for this long rather than spin on the backlog. */
#define FULL_PAUSE_MS 100

enum conn_state { CONN_FREE, CONN_READING, CONN_WRITING, CONN_DRAINING };

struct conn {
	enum conn_state state;
	int fd;
	unsigned long long serial;   /* accept order: at the cap the oldest reader goes */
	struct timespec deadline;    /* CLOCK_MONOTONIC: the end of this state */
	size_t got;                  /* bytes of the request read, or drained */
	size_t sent;                 /* bytes of the response sent (head, then body) */
	struct http_response resp;
	char req[REQUEST_MAX];
};

struct server {
	int fd;
	const struct export_conf *conf;
	int open;                    /* connections not CONN_FREE */
	unsigned long long serial;
	bool paused;                 /* out of descriptors: accept again at pause_end */
	struct timespec pause_end;
	struct conn conns[HTTP_CONN_MAX];
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

static bool earlier(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* ---------- one connection ---------- */

static void conn_close(struct server *s, struct conn *c)
{
	close(c->fd);
	free(c->resp.body);
	c->resp.body = NULL;
	c->state = CONN_FREE;
	c->fd = -1;
	s->open--;
}

static void conn_start_drain(struct conn *c)
{
	free(c->resp.body);
	c->resp.body = NULL;
	shutdown(c->fd, SHUT_WR);
	c->state = CONN_DRAINING;
	c->got = 0;
	export_deadline(&c->deadline, DRAIN_MS);
}

/* Sends what the socket takes of the response; false once the connection is done for. */
static bool conn_write(struct conn *c)
{
	size_t total = c->resp.head_len + c->resp.body_len;

	while (c->sent < total) {
		struct iovec v[2];
		struct msghdr m = { .msg_iov = v };

		if (c->sent < c->resp.head_len) {
			v[m.msg_iovlen++] = (struct iovec){ c->resp.head + c->sent,
							    c->resp.head_len - c->sent };
			if (c->resp.body_len)
				v[m.msg_iovlen++] = (struct iovec){ c->resp.body, c->resp.body_len };
		} else {
			size_t off = c->sent - c->resp.head_len;
			v[m.msg_iovlen++] = (struct iovec){ c->resp.body + off, c->resp.body_len - off };
		}
		ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0)
			c->sent += (size_t)w;
		else if (w < 0 && errno == EINTR)
			continue;
		else
			return w < 0 && errno == EAGAIN; /* wait for room; else the client is gone */
	}
	conn_start_drain(c);
	return true;
}

/* The request head is in: the answer is made, and sent as far as the socket takes it. */
static bool conn_answer(struct conn *c, const struct export_conf *conf, bool too_large)
{
	if (too_large)
		http_answer_too_large(&c->resp);
	else
		http_answer(c->req, conf, &c->resp);
	c->state = CONN_WRITING;
	c->sent = 0;
	export_deadline(&c->deadline, WRITE_MS);
	return conn_write(c);
}

/* Reads what has come of the request; false once the connection is done for. */
static bool conn_read(struct conn *c, const struct export_conf *conf)
{
	for (;;) {
		if (c->got == sizeof c->req - 1)
			return conn_answer(c, conf, true);
		ssize_t r = recv(c->fd, c->req + c->got, sizeof c->req - 1 - c->got, MSG_DONTWAIT);
		if (r == 0)
			return false; /* gone before its request was whole */
		if (r < 0)
			return errno == EAGAIN || errno == EINTR;
		c->got += (size_t)r;
		c->req[c->got] = '\0';
		if (http_head_end(c->req, c->got))
			return conn_answer(c, conf, false);
	}
}

/* Reads and drops what the client still sends; false when it is time to close. */
static bool conn_drain(struct conn *c)
{
	char buf[4096];

	while (c->got < DRAIN_MAX) {
		ssize_t r = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
		if (r == 0)
			return false;
		if (r < 0)
			return errno == EAGAIN || errno == EINTR;
		c->got += (size_t)r;
	}
	return false;
}

/* The connection is ready for what its state waits for. */
static void conn_step(struct server *s, struct conn *c)
{
	bool keep = false;

	switch (c->state) {
	case CONN_READING:
		keep = conn_read(c, s->conf);
		break;
	case CONN_WRITING:
		keep = conn_write(c);
		break;
	case CONN_DRAINING:
		keep = conn_drain(c);
		break;
	case CONN_FREE:
		return;
	}
	if (!keep)
		conn_close(s, c);
}

/* ---------- the connections together ---------- */

/* The connection accepted first of those still sending their request, or NULL. */
static struct conn *oldest_reader(struct server *s)
{
	struct conn *old = NULL;

	for (int i = 0; i < HTTP_CONN_MAX; i++) {
		struct conn *c = &s->conns[i];
		if (c->state == CONN_READING && (!old || c->serial < old->serial))
			old = c;
	}
	return old;
}

/* A free slot, made at the cap by closing the oldest reader: a client that has not
 * sent its request yet is the one that loses least. NULL if every slot is answering. */
static struct conn *free_slot(struct server *s)
{
	if (s->open == HTTP_CONN_MAX) {
		struct conn *old = oldest_reader(s);
		if (!old)
			return NULL;
		conn_close(s, old);
	}
	for (int i = 0; i < HTTP_CONN_MAX; i++)
		if (s->conns[i].state == CONN_FREE)
			return &s->conns[i];
	return NULL;
}

/* Accepts every connection waiting; each starts reading its request. */
static void accept_all(struct server *s)
{
	for (;;) {
		/* Every slot answering: the rest wait in the backlog. */
		if (s->open == HTTP_CONN_MAX && !oldest_reader(s))
			return;
		int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				s->paused = true;
				export_deadline(&s->pause_end, FULL_PAUSE_MS);
			}
			return; /* EAGAIN: none left; ECONNABORTED and such: the next poll */
		}
		struct conn *c = free_slot(s);
		c->state = CONN_READING;
		c->fd = fd;
		c->serial = ++s->serial;
		c->got = c->sent = 0;
		export_deadline(&c->deadline, READ_MS);
		s->open++;
	}
}

/* Whether a new connection could be taken now (the listening socket is polled). */
static bool can_accept(struct server *s)
{
	struct timespec left;

	if (s->paused && export_time_left(&s->pause_end, &left))
		return false;
	s->paused = false;
	return s->open < HTTP_CONN_MAX || oldest_reader(s);
}

/* Fills pfd (the listening socket first, if it is polled, then the connections, their
 * slots in slot) and sets *next to the earliest deadline; returns how many. */
static int poll_set(struct server *s, struct pollfd *pfd, struct conn **slot, bool *listening,
		    struct timespec *next, bool *has_next)
{
	int n = 0;

	*has_next = false;
	*listening = can_accept(s);
	if (*listening)
		pfd[n++] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
	if (s->paused) {
		*next = s->pause_end;
		*has_next = true;
	}
	for (int i = 0; i < HTTP_CONN_MAX; i++) {
		struct conn *c = &s->conns[i];
		if (c->state == CONN_FREE)
			continue;
		slot[n] = c;
		pfd[n++] = (struct pollfd){ .fd = c->fd,
					    .events = c->state == CONN_WRITING ? POLLOUT : POLLIN };
		if (!*has_next || earlier(&c->deadline, next)) {
			*next = c->deadline;
			*has_next = true;
		}
	}
	return n;
}

/* Closes every connection whose deadline has passed. */
static void expire(struct server *s)
{
	struct timespec left;

	for (int i = 0; i < HTTP_CONN_MAX; i++) {
		struct conn *c = &s->conns[i];
		if (c->state != CONN_FREE && !export_time_left(&c->deadline, &left))
			conn_close(s, c);
	}
}

void http_serve(int fd, const struct export_conf *conf, volatile sig_atomic_t *stop,
		const sigset_t *wait_mask)
{
	struct server *s = calloc(1, sizeof *s);

	if (!s) {
		cli_warn("export: out of memory for the connections");
		return;
	}
	s->fd = fd;
	s->conf = conf;
	for (int i = 0; i < HTTP_CONN_MAX; i++)
		s->conns[i].fd = -1;
	while (!*stop) {
		struct pollfd pfd[HTTP_CONN_MAX + 1];
		struct conn *slot[HTTP_CONN_MAX + 1];
		struct timespec next, left;
		bool listening, has_next;
		int n = poll_set(s, pfd, slot, &listening, &next, &has_next);

		if (has_next && !export_time_left(&next, &left))
			left = (struct timespec){ 0, 0 };
		if (ppoll(pfd, (nfds_t)n, has_next ? &left : NULL, wait_mask) < 0) {
			if (errno == EINTR)
				continue; /* a signal: *stop says if it was the end */
			cli_warn("export: cannot wait for clients: %s", strerror(errno));
			break;
		}
		for (int i = listening ? 1 : 0; i < n; i++)
			if (pfd[i].revents)
				conn_step(s, slot[i]);
		expire(s);
		if (listening && (pfd[0].revents & POLLIN))
			accept_all(s);
	}
	for (int i = 0; i < HTTP_CONN_MAX; i++)
		if (s->conns[i].state != CONN_FREE)
			conn_close(s, &s->conns[i]);
	free(s);
}
