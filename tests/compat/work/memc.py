"""memc.py - the memcached client of make compat: bounded, over 127.0.0.1.

usage: memc.py PORT ping | run N | shutdown
run sets N keys (values of 1000-1023 bytes made from the key), reads them all back
with multi-gets, fails on any missing or wrong value, and prints the counts, a hash
of the values and the server's item counters."""
import hashlib
import socket
import sys


def value(i):
    return (b"%08d" % i) * (125 + i % 3) + b"v" * (i % 8)


def recv_until(s, buf, end):
    while not buf.endswith(end):
        chunk = s.recv(1 << 20)
        if not chunk:
            raise SystemExit("connection closed")
        buf += chunk
    return buf


def main(port, cmd, n=0):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    if cmd == "ping":
        s.sendall(b"version\r\n")
        if not recv_until(s, b"", b"\r\n").startswith(b"VERSION"):
            raise SystemExit("no VERSION")
        return
    if cmd == "shutdown":
        s.sendall(b"shutdown\r\n")
        return
    for lo in range(0, n, 1000):
        req = b"".join(b"set k%07d 0 0 %d noreply\r\n%s\r\n" % (i, len(value(i)), value(i))
                       for i in range(lo, min(n, lo + 1000)))
        s.sendall(req)
    s.sendall(b"mn\r\n")  # meta no-op: every set before it has been read
    recv_until(s, b"", b"MN\r\n")
    h = hashlib.sha256()
    got = 0
    for lo in range(0, n, 500):
        keys = range(lo, min(n, lo + 500))
        s.sendall(b"get " + b" ".join(b"k%07d" % i for i in keys) + b"\r\n")
        buf = recv_until(s, b"", b"END\r\n")
        pos = 0
        for i in keys:
            head_end = buf.index(b"\r\n", pos)
            head = buf[pos:head_end].split()
            if head[0] != b"VALUE" or head[1] != b"k%07d" % i:
                raise SystemExit("key k%07d: got %r" % (i, buf[pos:head_end][:60]))
            size = int(head[3])
            data = buf[head_end + 2:head_end + 2 + size]
            if data != value(i):
                raise SystemExit("key k%07d: wrong value" % i)
            h.update(data)
            got += 1
            pos = head_end + 2 + size + 2
    s.sendall(b"stats\r\n")
    stats = dict(line.split()[1:3] for line in
                 recv_until(s, b"", b"END\r\n").decode().splitlines() if line.startswith("STAT"))
    print("values", got, "sha256", h.hexdigest())
    print("curr_items", stats["curr_items"], "total_items", stats["total_items"],
          "evictions", stats["evictions"])


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
