"""workload.py - a Python program whose memory is mostly small objects: a dict of tuples
and strings, changed and summed. The output is the same under every malloc.

usage: python3 workload.py [--size small|full|N] [--hold]
  --size   entries in the dict: small = 50000 (for make check), full = 2000000 (default)
  --hold   after the work, print the resident memory and "holding pid=N" on stderr and
           wait for EOF on stdin, so a test can look at the process meanwhile
stderr also gets "rss_bytes=N" (Rss + hugetlb from /proc/self/smaps_rollup)."""
import os
import sys
import zlib

WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
         "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa")


def resident():
    total = 0
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("Rss", "Private_Hugetlb", "Shared_Hugetlb"):
                    total += int(rest.split()[0]) * 1024
    except OSError:
        return -1
    return total


def main(argv):
    n, hold = 2000000, False
    i = 1
    while i < len(argv):
        if argv[i] == "--hold":
            hold = True
        elif argv[i] == "--size" and i + 1 < len(argv):
            i += 1
            n = {"small": 50000, "full": 2000000}.get(argv[i]) or int(argv[i])
        else:
            sys.stderr.write(__doc__)
            return 2
        i += 1

    # A linear congruential generator (31 bits: small ints are fast): the same numbers
    # everywhere, unlike hash() or random.
    x = 12345
    table = {}
    for k in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        w = WORDS[x >> 27]
        table["%s-%d-%x" % (w, k, x & 0xFFF)] = (k, w + str(x >> 9), x & 0x3FF, (x & 0xFF) / 7.0)

    # Change a third of it: delete, then put back changed values under new keys.
    removed = [key for k, key in enumerate(table) if k % 3 == 0]
    for key in removed:
        value = table.pop(key)
        table[key.upper()] = (value[0], value[1][::-1], value[2] + 1, value[3])

    crc, total = 0, 0
    for key, value in table.items():
        crc = zlib.crc32(value[1].encode(), zlib.crc32(key.encode(), crc))
        total += value[0] * 3 + value[2] + int(value[3] * 1000)
    top = max(table.values(), key=lambda v: (v[2], v[0]))
    print("workload: %d entries, crc %08x, total %d, top %r" % (len(table), crc, total, top))
    sys.stdout.flush()

    sys.stderr.write("rss_bytes=%d\n" % resident())
    if hold:
        sys.stderr.write("holding pid=%d\n" % os.getpid())
        sys.stderr.flush()
        sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
