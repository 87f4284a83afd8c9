"""docfile.py - what the writers of doc/BENCHMARKS.md share: the file written whole or
not at all, and the marked sections ("<!-- NAME:begin -->" ... "<!-- NAME:end -->") that
one writer owns and the others carry over (make bench's bench/benchmarks.py, make
realbench's bench/real/table.py, bench/mbench.sh's table)."""

import os
import re
import tempfile

SECTION_RE = re.compile(r"^<!-- ([a-z]+):begin -->\n.*?^<!-- \1:end -->\n?", re.M | re.S)


def markers(name):
    """The begin and end lines of section name."""
    return "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name


def sections(doc):
    """Every marked section of doc, each ending in one newline, in order."""
    return [m.group(0).rstrip("\n") + "\n" for m in SECTION_RE.finditer(doc)]


def splice(doc, name, section):
    """doc with section in place of section name's (at the end if doc has none)."""
    begin, end = markers(name)
    b, e = doc.find(begin), doc.find(end)
    if b >= 0 and e > b:
        return doc[:b] + section.rstrip("\n") + doc[e + len(end):]
    if doc and not doc.endswith("\n"):
        doc += "\n"
    return doc + ("\n" if doc else "") + section


def write_whole(path, text, prefix):
    """path holds text, or (on any error) what it held: written beside it, then renamed."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=prefix)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
