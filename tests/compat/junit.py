"""junit.py - what a CPython regression test module did, from regrtest's --junit-xml.

usage: junit.py NAME XML
Prints "NAME: N cases: P passed, F failed, E errors, S skipped" and, when some case
did not pass, "NAME: failed ID" (or "error ID") a line each, sorted; with "U other"
in the first line when U cases ended with no result of their own (regrtest's XML
names none of them: a subTest failed or a success was unexpected). Status 1 if the
file cannot be read (regrtest died before it wrote it): the caller says so."""
import sys
import xml.etree.ElementTree as ET


def main():
    name, path = sys.argv[1:3]
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return 1
    cases = root.iter("testcase")
    n = passed = skipped = other = 0
    bad = []
    for case in cases:
        n += 1
        cid = case.get("name")
        if cid is None:
            other += 1
        elif case.find("failure") is not None:
            bad.append("failed " + cid)
        elif case.find("error") is not None:
            bad.append("error " + cid)
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1  # (an expected failure too)
    nfail = sum(b.startswith("failed ") for b in bad)
    line = "%s: %d cases: %d passed, %d failed, %d errors, %d skipped" % (
        name, n, passed, nfail, len(bad) - nfail, skipped)
    if other:
        line += ", %d other" % other
    print(line)
    for b in sorted(bad):
        print("%s: %s" % (name, b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
