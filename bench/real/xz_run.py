#!/usr/bin/env python3
"""xz_run.py - the xz workload of make realbench (bench/real/work/xz.sh).

make FILE MIB      writes MIB MiB of seeded text-like data (words of a skewed vocabulary)
compress FILE MIB  compresses it with liblzma at preset 9, times that, decompresses to
                   check the round trip; prints the check and MB/s of input
"""
import hashlib
import lzma
import random
import sys
import time


def make(path, mib):
    rnd = random.Random(3)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(rnd.choice(letters) for _ in range(rnd.randint(2, 12))) for _ in range(50000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    want = mib << 20
    with open(path, "wb") as f:
        done = 0
        while done < want:
            line = (" ".join(rnd.choices(vocab, weights, k=4000)) + "\n").encode()
            line = line[: want - done]
            f.write(line)
            done += len(line)


def compress(path, mib):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) != mib << 20:
        sys.exit("xz_run.py: %s is not %d MiB" % (path, mib))
    t0 = time.perf_counter()
    packed = lzma.compress(data, preset=9)
    dt = time.perf_counter() - t0
    same = lzma.decompress(packed) == data
    print("check: %d bytes to %d, round trip %s, sha256 %s" %
          (len(data), len(packed), "ok" if same else "DIFFERS",
           hashlib.sha256(packed).hexdigest()[:16]))
    print("xz: %.3f MB/s" % (len(data) / dt / 1e6))
    sys.exit(0 if same else 1)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("make", "compress"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    (make if sys.argv[1] == "make" else compress)(sys.argv[2], int(sys.argv[3]))


if __name__ == "__main__":
    main()
