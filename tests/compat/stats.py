"""stats.py - the coverage of one run from its --stats=FILE JSON lines (one line a process).

usage: stats.py FILE...
Prints "PCT NPROC": PCT the share of the resident memory that is on huge pages, summed
over every process that wrote a line (sum of huge_bytes over sum of rss_bytes, as
src/runtime/report.c writes them), to one decimal; NPROC the number of lines read.
Prints "- 0" when no process wrote an account (or none could read its smaps)."""
import json
import sys


def main(paths):
    rss = huge = nproc = 0
    for path in paths:
        try:
            f = open(path, encoding="utf-8", errors="replace")
        except OSError:
            continue
        with f:
            for line in f:
                try:
                    acc = json.loads(line)
                except ValueError:
                    continue
                if "rss_bytes" not in acc or "coverage_errno" in acc:
                    continue
                rss += acc["rss_bytes"]
                huge += acc["huge_bytes"]
                nproc += 1
    if nproc == 0 or rss == 0:
        print("- %d" % nproc)
    else:
        print("%.1f %d" % (100.0 * huge / rss, nproc))


if __name__ == "__main__":
    main(sys.argv[1:])
