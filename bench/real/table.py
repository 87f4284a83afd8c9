#!/usr/bin/env python3
"""table.py - the realbench section of doc/BENCHMARKS.md from one make realbench.

Reads, for each workload named, what bench/real/realbench.sh left in --dir: NAME.meta
(title, metric, extras), NAME.json (superpage bench's JSON), NAME.log (every run's
stdout, bench --output) or NAME.skip (why it did not run), and writes the section
between the markers <!-- realbench:begin --> and <!-- realbench:end --> of --doc,
leaving everything outside them as it was (the markers go at the end of the file when
absent; the file is created when missing). Exit status 1 (the section written) if a
workload's check failed, 2 if nothing could be written.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import docfile  # noqa: E402

BEGIN, END = docfile.markers("realbench")

def read_meta(path):
    meta = {"extras": []}
    with open(path) as f:
        for line in f:
            key, _, val = line.rstrip("\n").partition("\t")
            if key == "extra":
                label, _, rx = val.partition("=")
                meta["extras"].append((label, rx))
            else:
                meta[key] = val
    return meta


def read_log(path):
    """Every run's stdout lines, by variant: {variant: [[lines of a run], ...]}."""
    runs = {}
    cur = None
    head = re.compile(r"^==> (\S+), round (\d+): (stdout|stderr) <==$")
    with open(path, errors="replace") as f:
        for line in f:
            m = head.match(line.rstrip("\n"))
            if m:
                cur = runs.setdefault(m.group(1), []) if m.group(3) == "stdout" else None
                if cur is not None:
                    cur.append([])
                continue
            if cur is not None:
                cur[-1].append(line.rstrip("\n"))
    return runs


def figure(lines, rx):
    r = re.compile(rx)
    for line in lines:
        m = r.search(line)
        if m:
            try:
                return float(m.group(1))
            except (IndexError, ValueError):
                return None
    return None


def fmt(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    a = abs(x)
    if a >= 1000:
        return "%.0f" % x
    if a >= 10:
        return "%.1f" % x
    if a >= 0.01:
        return "%.3g" % x
    return "%.3g" % x


def ratio_cell(v):
    if v.get("skipped"):
        return "skipped"
    r = v.get("ratio")
    if r is None:
        return "no result"
    ci = v.get("ci95")
    s = "%.2fx" % r
    if isinstance(ci, list) and len(ci) == 2 and None not in ci:
        s += " (%.2f-%.2f)" % (ci[0], ci[1])
    return s


def share(x):
    return "-" if x is None else "%.0f%%" % (100 * x)


def render(args):
    """The section's text, and the names of the workloads whose check failed."""
    out = [BEGIN, ""]
    out.append("## Real workloads (make realbench)")
    out.append("")
    machine = None
    rows, details, skipped, failed = [], [], [], []
    variants = []
    for name in args.names:
        base = os.path.join(args.dir, name)
        if not os.path.exists(base + ".meta"):
            continue
        meta = read_meta(base + ".meta")
        title = meta.get("title", name)
        if os.path.exists(base + ".skip"):
            with open(base + ".skip") as f:
                skipped.append((name, title, f.read().strip()))
            continue
        if not os.path.exists(base + ".json"):
            skipped.append((name, title, "no results (bench did not finish)"))
            continue
        with open(base + ".json") as f:
            rep = json.load(f)
        machine = machine or rep.get("machine")
        log = read_log(base + ".log") if os.path.exists(base + ".log") else {}
        vs = rep.get("variants", [])
        for v in vs:
            if v["name"] not in variants and v["name"] != "plain":
                variants.append(v["name"])
        byname = {v["name"]: v for v in vs}
        res = {r["backing"]: r for r in rep.get("results", [])}
        unit = "lower is better" if meta.get("lower") == "1" else "higher is better"
        plain = res.get("plain", {})
        bad = []
        if meta.get("expect"):
            rx = re.compile(meta["expect"])
            for var, rs in log.items():
                n = sum(1 for lines in rs if not any(rx.search(x) for x in lines))
                if n:
                    bad.append("%s: %d of %d" % (var, n, len(rs)))
        cmd = rep.get("command", {})
        check = "ok"
        if cmd.get("failures") or cmd.get("stdout_differs") or bad:
            check = "FAILED (%s)" % ", ".join(
                (["%d runs failed" % cmd["failures"]] if cmd.get("failures") else []) +
                (["%d stdouts differ from plain's" % cmd["stdout_differs"]] if cmd.get("stdout_differs") else []) +
                (["check missing in " + "; ".join(bad)] if bad else []))
            failed.append(name)
        rows.append((name, title, meta.get("metric", ""), unit, plain.get("metric"), byname, check,
                     cmd.get("rounds")))
        if meta["extras"] and log:
            details.append((title, meta["extras"], log, [v["name"] for v in vs]))

    if machine:
        t = machine.get("tlb", {})
        out.append("Generated by `%s` (`bench/real/realbench.sh`, `bench/real/table.py`) from the run "
                   "started %s; do not edit by hand: run it again." % (args.command, args.started))
        out.append("")
        out.append("- Machine: %s, %s CPUs, %s; L2 TLB %s of 4 KiB / %s of 2 MiB; THP `%s`" % (
            machine.get("cpu"), machine.get("cpus"), machine.get("kernel"),
            t.get("stlb", {}).get("4k"), t.get("stlb", {}).get("2m"), machine.get("thp_enabled")))
    else:
        out.append("Generated by `%s` from the run started %s." % (args.command, args.started))
        out.append("")
    try:
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        out.append("- Load average when this section was written: %s" % load)
    except OSError:
        pass
    if args.note:
        out.append("- Note: %s" % args.note)
    out.append("- Each workload is `superpage bench --backing %s --repeat %s%s "
               "--metric REGEX -- bash bench/real/workload.sh WORKLOAD DATA`: plain and each backing "
               "alternating, the order rotating each round; ratio = the workload's own figure "
               "against plain (geometric mean of the rounds' ratios, 95%% interval; > 1 is better "
               "for superpage whichever way the figure goes); huge = share of the measured "
               "process's anonymous memory on huge pages." % (
                   args.backing, args.rounds, "" if args.no_pools else " --setup-pools"))
    out.append("")
    if rows:
        hdr = ["workload", "its figure", "plain"]
        for v in variants:
            hdr += [v, v + " huge", v + " RSS"]
        hdr += ["rounds", "check"]
        out.append("| " + " | ".join(hdr) + " |")
        out.append("|" + "---|" * len(hdr))
        for name, title, metric, unit, pm, byname, check, rounds in rows:
            cells = [title, "`%s` (%s)" % (metric, unit), fmt(pm)]
            for v in variants:
                x = byname.get(v)
                if not x:
                    cells += ["-", "-", "-"]
                    continue
                rss = x.get("rss_ratio")
                cells += [ratio_cell(x), share(x.get("huge_share")), "-" if rss is None else "%.2fx" % rss]
            cells += [str(rounds), check]
            out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        out.append("")
        out.append("Verdicts, as `superpage bench` printed them:")
        out.append("")
        for name, title, metric, unit, pm, byname, check, rounds in rows:
            for v in variants:
                x = byname.get(v)
                if x and x.get("verdict"):
                    out.append("- %s: %s" % (name, x["verdict"]))
        out.append("")
    for title, extras, log, names in details:
        out.append("%s, medians of each figure over its runs:" % title)
        out.append("")
        hdr = ["figure"] + names
        out.append("| " + " | ".join(hdr) + " |")
        out.append("|" + "---|" * len(hdr))
        for label, rx in extras:
            meds = {}
            for var in names:
                xs = [figure(lines, rx) for lines in log.get(var, [])]
                xs = [x for x in xs if x is not None]
                meds[var] = statistics.median(xs) if xs else None
            cells = [label]
            for var in names:
                m, p = meds[var], meds.get("plain")
                c = fmt(m)
                if var != "plain" and m is not None and p:
                    c += " (%.2fx)" % (m / p)
                cells.append(c)
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    if skipped:
        out.append("Not run here:")
        out.append("")
        for name, title, why in skipped:
            out.append("- %s: %s" % (title, why))
        out.append("")
    out.append(END)
    return "\n".join(out) + "\n", failed


def main():
    p = argparse.ArgumentParser(description="the realbench section of doc/BENCHMARKS.md")
    p.add_argument("--dir", required=True)
    p.add_argument("--doc", required=True)
    p.add_argument("--started", required=True)
    p.add_argument("--rounds", required=True)
    p.add_argument("--command", default="make realbench")
    p.add_argument("--note")
    p.add_argument("--full", action="store_true")
    p.add_argument("--backing", default="auto,2m")
    p.add_argument("--no-pools", action="store_true")
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    try:
        section, failed = render(args)
        try:
            with open(args.doc) as f:
                doc = f.read()
        except FileNotFoundError:
            doc = ""
    except (OSError, ValueError) as e:
        print("table.py: %s" % e, file=sys.stderr)
        sys.exit(2)
    docfile.write_whole(args.doc, docfile.splice(doc, "realbench", section), ".realbench.")
    if failed:
        print("table.py: the check failed for %s (the table says how)" % ", ".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
