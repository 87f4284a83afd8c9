"""gen.py - deterministic data for make compat, on stdout.

usage: gen.py lines MIB   lines of words and numbers (about MIB MiB), from a fixed LCG
       gen.py fastimport COMMITS   a git fast-import stream: COMMITS commits over 40
                                   files, fixed authors and dates"""
import sys

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()


def lcg(seed):
    x = seed
    while True:
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        yield x >> 33


def lines(mib):
    out = sys.stdout
    r = lcg(42)
    size = 0
    want = mib << 20
    while size < want:
        buf = []
        for _ in range(1000):
            a, b, c = next(r), next(r), next(r)
            line = "%s %s %010d %s %d\n" % (WORDS[a % 24], WORDS[b % 24], c % 10000000000,
                                             WORDS[(a >> 8) % 24] * (1 + b % 3), a % 997)
            buf.append(line)
        s = "".join(buf)
        out.write(s)
        size += len(s)


def fastimport(commits):
    out = sys.stdout.buffer
    r = lcg(7)
    files = [[] for _ in range(40)]
    for n in range(commits):
        t = 1700000000 + n * 60
        msg = b"commit %d\n" % n
        out.write(b"commit refs/heads/main\nmark :%d\n" % (n + 1))
        out.write(b"author A U Thor <a@example.com> %d +0000\n" % t)
        out.write(b"committer C O Mitter <c@example.com> %d +0000\n" % t)
        out.write(b"data %d\n%s" % (len(msg), msg))
        if n:
            out.write(b"from :%d\n" % n)
        for _ in range(3):
            f = next(r) % len(files)
            body = files[f]
            for _ in range(20):
                body.insert(next(r) % (len(body) + 1), "%s %d" % (WORDS[next(r) % 24], next(r) % 100000))
            if len(body) > 2000:
                del body[:200]
            data = ("\n".join(body) + "\n").encode()
            out.write(b"M 644 inline dir%d/file%d.txt\ndata %d\n" % (f % 5, f, len(data)))
            out.write(data)
        out.write(b"\n")
    out.write(b"done\n")


if __name__ == "__main__":
    if sys.argv[1] == "lines":
        lines(int(sys.argv[2]))
    elif sys.argv[1] == "fastimport":
        fastimport(int(sys.argv[2]))
    else:
        sys.exit("usage: gen.py lines MIB | fastimport COMMITS")
