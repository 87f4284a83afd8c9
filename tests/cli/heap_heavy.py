# heap_heavy.py - a plain Python program for the container test: a dict of a million
# small lists and strings (obmalloc's arenas and malloc), checked; prints a line that
# depends on the work only, then on stderr "anon KB huge KB" from its smaps_rollup.
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
d = {}
for i in range(n):
    d[i] = [i, str(i) * 3, (i * 7919) % 1000003]
s = 0
for k, v in d.items():
    s = (s * 31 + v[2] + len(v[1])) % (1 << 61)
print("sum", s, "items", len(d), flush=True)
anon = huge = 0
with open("/proc/self/smaps_rollup") as f:
    for line in f:
        w = line.split()
        if w[0] in ("Anonymous:", "Private_Hugetlb:", "Shared_Hugetlb:"):
            anon += int(w[1])
        if w[0] in ("AnonHugePages:", "Private_Hugetlb:", "Shared_Hugetlb:"):
            huge += int(w[1])
print("anon", anon, "huge", huge, file=sys.stderr)
