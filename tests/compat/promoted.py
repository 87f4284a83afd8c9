"""promoted.py - what superpage promote got for a run of the promote mode.

usage: promoted.py FILE...
Each FILE holds the JSON objects superpage promote --json printed for the processes of
one command of the program (a line each). For the command whose processes held the most
private anonymous memory (heap, anonymous mappings, stacks) when promoted, prints
"BEFORE AFTER N": the share of that memory on huge pages before and after, in percent to
one decimal, and the number of its processes promoted; "-" if no process was."""
import json
import sys

REGIONS = ("heap", "anon", "stack")


def command(path):
    """(anonymous bytes, huge before, huge after, processes) of one file."""
    total = before = after = n = 0
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line)
            except ValueError:
                continue
            if d.get("error") or d.get("gone") or not isinstance(d.get("regions"), dict):
                continue
            n += 1
            for r in REGIONS:
                g = d["regions"].get(r, {})
                total += g.get("bytes", 0)
                before += g.get("huge_bytes_before", 0)
                after += g.get("huge_bytes_after", 0)
    return total, before, after, n


def main():
    best = None
    for path in sys.argv[1:]:
        try:
            c = command(path)
        except OSError:
            continue
        if c[3] and (best is None or c[0] > best[0]):
            best = c
    if not best or not best[0]:
        print("-")
        return
    total, before, after, n = best
    print("%.1f %.1f %d" % (100.0 * min(before, total) / total, 100.0 * min(after, total) / total, n))


main()
