"""heap.py - a heap-heavy Python program for make compat: about 400 MiB of small
objects (dicts, tuples, strings, lists) built, changed, partly freed and summed. Its
output depends on nothing but the arithmetic: the same under every malloc."""
import hashlib
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 600000

table = {}
for i in range(N):
    k = "k%07d" % ((i * 7919) % N)
    table[k] = (i, str(i * i), [i & 255, (i >> 8) & 255])
h = hashlib.sha256()
# change a third, drop a third (the heap frees in the middle of live data)
for i in range(0, N, 3):
    k = "k%07d" % i
    v = table[k]
    table[k] = (v[0] + 1, v[1] + "x", v[2] + [1])
for i in range(1, N, 3):
    del table["k%07d" % i]
chunks = [bytes([i & 255]) * (64 + i % 900) for i in range(N // 4)]
total = 0
for k in sorted(table):
    v = table[k]
    total += v[0] + len(v[1]) + sum(v[2])
    h.update(k.encode())
for c in chunks:
    h.update(c[:8])
    total += len(c)
print("entries", len(table), "chunks", len(chunks))
print("total", total)
print("sha256", h.hexdigest())
