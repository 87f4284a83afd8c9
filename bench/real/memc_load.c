/* memc_load.c - the memcached client of make realbench (bench/real/work/memcached.sh).
 *
 * usage: memc_load PORT KEYS GETS [CONNS [BATCH]]
 *
 * Over CONNS connections to 127.0.0.1:PORT (one thread each) it sets KEYS keys with
 * values of 1000-1063 bytes made from the key (noreply, pipelined), then reads GETS
 * keys chosen at random (a fixed seed per connection) in multi-gets of BATCH keys,
 * checking every value it gets back against the one it wrote. It prints a check of
 * what it read (the same in every run: the counts, a sum over the keys read, the
 * server's item count and evictions, and "check: every value as written, none evicted"
 * only when that is so) and the gets and sets per second; it exits 1 when a key is
 * missing, a value wrong or an item evicted.
 * It is the load, not what is measured: it runs without superpage's runtime.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 64
#define VALUE_MAX 1100

static int port;
static uint64_t nkeys, ngets;
static int nconns = 4, batch = 100;

struct conn {
	pthread_t tid;
	int fd, id;
	char *buf; /* the replies being read */
	size_t cap, len;
	uint64_t got, missing, wrong, sum;
	int failed;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The value of key i: its number, then bytes that follow from it. */
static size_t value_of(uint64_t i, char *v)
{
	size_t n = 1000 + (i * 7919) % 64, k;
	int h = snprintf(v, 32, "%016llx", (unsigned long long)i);
	for (k = (size_t)h; k < n; k++)
		v[k] = (char)('a' + (i + k * 31) % 26);
	return n;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads into c->buf until it ends with the given tail. */
static int read_until(struct conn *c, const char *tail)
{
	size_t tl = strlen(tail);
	c->len = 0;
	for (;;) {
		ssize_t r;
		if (c->cap - c->len < 65536) {
			c->cap = c->cap * 2 + 65536;
			c->buf = realloc(c->buf, c->cap);
			if (!c->buf)
				return -1;
		}
		r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->len += (size_t)r;
		if (c->len >= tl && memcmp(c->buf + c->len - tl, tail, tl) == 0)
			return 0;
	}
}

static int dial(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		perror("memc_load: connect");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return fd;
}

/* Sets this connection's share of the keys, 64 to a write, then waits for a no-op's
 * answer: every set before it has been read. */
static void *fill(void *arg)
{
	struct conn *c = arg;
	uint64_t lo = nkeys * c->id / nconns, hi = nkeys * (c->id + 1) / nconns, i;
	size_t cap = 64 * (VALUE_MAX + 64), len = 0;
	char *out = malloc(cap), v[VALUE_MAX];
	if (!out) {
		c->failed = 1;
		return NULL;
	}
	for (i = lo; i < hi; i++) {
		size_t n = value_of(i, v);
		len += (size_t)sprintf(out + len, "set k%011llu 0 0 %zu noreply\r\n", (unsigned long long)i, n);
		memcpy(out + len, v, n);
		memcpy(out + len + n, "\r\n", 2);
		len += n + 2;
		if (cap - len < VALUE_MAX + 64 || i + 1 == hi) {
			if (send_all(c->fd, out, len) < 0) {
				c->failed = 1;
				break;
			}
			len = 0;
		}
	}
	free(out);
	if (!c->failed && (send_all(c->fd, "mn\r\n", 4) < 0 || read_until(c, "MN\r\n") < 0))
		c->failed = 1;
	return NULL;
}

static uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Checks one multi-get's reply against the keys asked for, in their order. */
static int check_reply(struct conn *c, const uint64_t *keys, int n)
{
	char want[VALUE_MAX], name[32];
	size_t pos = 0;
	int k = 0;
	while (pos < c->len) {
		char *line = c->buf + pos, *eol = memmem(line, c->len - pos, "\r\n", 2);
		unsigned long long size;
		if (!eol)
			return -1;
		if (eol - line == 3 && memcmp(line, "END", 3) == 0)
			break;
		if (sscanf(line, "VALUE %31s %*u %llu", name, &size) != 2)
			return -1;
		/* keys the server does not have are left out of its reply */
		while (k < n) {
			char kn[32];
			snprintf(kn, sizeof kn, "k%011llu", (unsigned long long)keys[k]);
			if (strcmp(kn, name) == 0)
				break;
			c->missing++;
			k++;
		}
		if (k == n)
			return -1;
		pos = (size_t)(eol - c->buf) + 2;
		if (pos + size + 2 > c->len || size != value_of(keys[k], want) ||
		    memcmp(c->buf + pos, want, size) != 0)
			c->wrong++;
		else {
			c->got++;
			c->sum += keys[k];
		}
		pos += size + 2;
		k++;
	}
	c->missing += (uint64_t)(n - k);
	return 0;
}

static void *getter(void *arg)
{
	struct conn *c = arg;
	uint64_t lo = ngets * c->id / nconns, hi = ngets * (c->id + 1) / nconns, done;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(c->id + 1), *keys = malloc(sizeof *keys * batch);
	char *req = malloc((size_t)batch * 16 + 16);
	if (!keys || !req) {
		c->failed = 1;
		goto out;
	}
	for (done = lo; done < hi;) {
		int n = (int)(hi - done < (uint64_t)batch ? hi - done : (uint64_t)batch), j;
		size_t len = 3;
		memcpy(req, "get", 3);
		for (j = 0; j < n; j++) {
			keys[j] = next_rand(&seed) % nkeys;
			len += (size_t)sprintf(req + len, " k%011llu", (unsigned long long)keys[j]);
		}
		memcpy(req + len, "\r\n", 2);
		if (send_all(c->fd, req, len + 2) < 0 || read_until(c, "END\r\n") < 0 ||
		    check_reply(c, keys, n) < 0) {
			c->failed = 1;
			break;
		}
		done += (uint64_t)n;
	}
out:
	free(keys);
	free(req);
	return NULL;
}

/* The server's counter NAME from its stats, or -1. */
static long long stat_of(struct conn *c, const char *name)
{
	char key[64];
	char *p;
	if (send_all(c->fd, "stats\r\n", 7) < 0 || read_until(c, "END\r\n") < 0)
		return -1;
	snprintf(key, sizeof key, "STAT %s ", name);
	c->buf[c->len - 1] = '\0';
	p = strstr(c->buf, key);
	return p ? atoll(p + strlen(key)) : -1;
}

static int run_all(struct conn *cs, void *(*fn)(void *))
{
	int i, bad = 0;
	for (i = 0; i < nconns; i++)
		if (pthread_create(&cs[i].tid, NULL, fn, &cs[i]) != 0) {
			fprintf(stderr, "memc_load: pthread_create failed\n");
			exit(1);
		}
	for (i = 0; i < nconns; i++) {
		pthread_join(cs[i].tid, NULL);
		bad |= cs[i].failed;
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct conn cs[MAX_CONNS];
	uint64_t got = 0, missing = 0, wrong = 0, sum = 0;
	double t0, tfill, tget;
	long long items, evictions;
	int i, bad;
	if (argc < 4 || argc > 6) {
		fprintf(stderr, "usage: memc_load PORT KEYS GETS [CONNS [BATCH]]\n");
		return 2;
	}
	port = atoi(argv[1]);
	nkeys = strtoull(argv[2], NULL, 10);
	ngets = strtoull(argv[3], NULL, 10);
	if (argc > 4)
		nconns = atoi(argv[4]);
	if (argc > 5)
		batch = atoi(argv[5]);
	if (port <= 0 || nkeys == 0 || ngets == 0 || nconns < 1 || nconns > MAX_CONNS || batch < 1 ||
	    batch > 1000) {
		fprintf(stderr, "memc_load: bad arguments\n");
		return 2;
	}
	memset(cs, 0, sizeof cs);
	for (i = 0; i < nconns; i++) {
		cs[i].id = i;
		if ((cs[i].fd = dial()) < 0)
			return 1;
	}
	t0 = now();
	if (run_all(cs, fill)) {
		fprintf(stderr, "memc_load: the sets failed\n");
		return 1;
	}
	tfill = now() - t0;
	t0 = now();
	if (run_all(cs, getter)) {
		fprintf(stderr, "memc_load: a multi-get failed\n");
		return 1;
	}
	tget = now() - t0;
	items = stat_of(&cs[0], "curr_items");
	evictions = stat_of(&cs[0], "evictions");
	for (i = 0; i < nconns; i++) {
		got += cs[i].got;
		missing += cs[i].missing;
		wrong += cs[i].wrong;
		sum += cs[i].sum;
		close(cs[i].fd);
		free(cs[i].buf);
	}
	printf("check: %llu keys set, %llu gets, %llu values as written, %llu missing, %llu wrong, "
	       "key sum %llu\n",
	       (unsigned long long)nkeys, (unsigned long long)ngets, (unsigned long long)got,
	       (unsigned long long)missing, (unsigned long long)wrong, (unsigned long long)sum);
	printf("check: curr_items %lld, evictions %lld\n", items, evictions);
	bad = missing || wrong || evictions != 0 || items != (long long)nkeys;
	if (!bad)
		printf("check: every value as written, none evicted\n");
	printf("memcached: %.0f gets/s, sets %.0f per s\n", ngets / tget, nkeys / tfill);
	return bad;
}
