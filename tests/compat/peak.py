"""peak.py - the huge-page coverage of a program's anonymous memory at its peak.

usage: peak.py PGID OUT
       peak.py --sum FILE...
The first form samples, every 0.2 s while process PGID lives (timeout(1), which
leads its own process group), every process of process group PGID and every
descendant of those (a server's workers that made sessions of their own, as
postgres's backends do): from each one's
/proc/PID/smaps_rollup, private anonymous memory (Anonymous + Private_Hugetlb) and the
part of it on huge pages (AnonHugePages + Private_Hugetlb), summed over the group.
At its end it writes "ANON_KIB HUGE_KIB" of the sample that held the most anonymous
memory to OUT (nothing if no sample read any). Shared memory (a server's shared
buffers) is not in these counts; hugetlb pages are, which RSS leaves out.
The second form prints "PCT" for the largest of the given samples (a run's commands),
the share of its anonymous memory on huge pages to one decimal, or "-" if none."""
import os
import sys
import time

FIELDS = ("Anonymous:", "AnonHugePages:", "Private_Hugetlb:")


def group_members(pgid):
    """The processes of group pgid, and their descendants in any group."""
    parent = {}
    members = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses
        rest = stat[stat.rfind(b")") + 2:].split()
        if len(rest) > 2:
            parent[name] = rest[1].decode()
            if int(rest[2]) == pgid:
                members.add(name)
    grew = True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in members and pid not in members:
                members.add(pid)
                grew = True
    return sorted(members)


def rollup(pid):
    got = dict.fromkeys(FIELDS, 0)
    try:
        with open("/proc/%s/smaps_rollup" % pid, encoding="ascii", errors="replace") as f:
            for line in f:
                parts = line.split()
                if parts and parts[0] in got:
                    got[parts[0]] = int(parts[1])
    except (OSError, ValueError):
        return 0, 0
    hugetlb = got["Private_Hugetlb:"]
    return got["Anonymous:"] + hugetlb, got["AnonHugePages:"] + hugetlb


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] != b"Z"


def sample(pgid, out):
    best = (0, 0)
    while alive(pgid):
        anon = huge = 0
        for pid in group_members(pgid):
            a, h = rollup(pid)
            anon += a
            huge += h
        if anon > best[0]:
            best = (anon, huge)
        time.sleep(0.2)
    if best[0]:
        with open(out, "w", encoding="ascii") as f:
            f.write("%d %d\n" % best)


def summarize(paths):
    best = (0, 0)
    for path in paths:
        try:
            with open(path, encoding="ascii") as f:
                anon, huge = (int(x) for x in f.read().split()[:2])
        except (OSError, ValueError):
            continue
        if anon > best[0]:
            best = (anon, huge)
    print("%.1f" % (100.0 * best[1] / best[0]) if best[0] else "-")


def main(argv):
    if len(argv) >= 1 and argv[0] == "--sum":
        summarize(argv[1:])
    elif len(argv) == 2:
        sample(int(argv[0]), argv[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
