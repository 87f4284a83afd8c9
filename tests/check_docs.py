#!/usr/bin/env python3
# check_docs.py - every link and path the docs name resolves: in the Markdown files
# (README.md, doc/*.md, any *.md of the tree), each relative link [text](path) or
# ![alt](path) must name a file or directory from the file's own folder, and each path
# of the tree named in their text (src/..., tests/..., bench/..., ...), and each
# relative file named in code (`dir/name.ext`), must exist from the top; in the man pages (man/*.[1-8]), each such path must exist, and each
# superpage page they name, such as superpage-run(7), must be a page in man/.
#
# usage: python3 tests/check_docs.py [TOP]   (TOP: the tree, default: this file's ../)
# Prints one line per broken link or path ("FILE:LINE: why") and exits 1 if there is
# one, 0 if none, 2 on bad arguments. Names built by make (build/...), placeholders in
# capitals (tests/runtime/FEATURE/) and links with a scheme (https:, mailto:) are not
# checked; a path names a program built from a source of the same name when that
# source exists (bench/kernels/malloc: bench/kernels/malloc.c).
import glob
import os
import re
import sys

TREE_DIRS = ("src", "tests", "bench", "doc", "man", "deploy", "dist", "debian", "include", ".ci")
# A path of the tree: one of the top folders, then name characters and slashes.
PATH_RE = re.compile(r"(?<![\w/.~$-])(?:\./)?((?:%s)/[\w.+/*{}-]*)" %
                     "|".join(re.escape(d) for d in TREE_DIRS))
LINK_RE = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
MANREF_RE = re.compile(r"\b(superpage(?:-[a-z]+)?)\\?\((\d)\)")
SOURCE_SUFFIXES = ("", ".c", ".sh", ".py", ".in")
# In Markdown, a file named in code (`dir/name.ext`) outside those folders too.
CODE_FILE_RE = re.compile(r"`((?:\./)?[A-Za-z0-9_][\w.+-]*(?:/[\w.+-]+)+\.[a-z0-9]+)`")


def exists(top, path):
    """True if the tree has the path: as named, as a glob or brace pattern with at least
    one match, or as a program built from a source of that name."""
    path = path.rstrip(".,:;")
    if "{" in path:
        m = re.match(r"^(.*)\{([^}]*)\}(.*)$", path)
        if m:
            return all(exists(top, m.group(1) + alt + m.group(3)) for alt in m.group(2).split(","))
    full = os.path.join(top, path)
    if any(c in path for c in "*?["):
        return bool(glob.glob(full))
    return any(os.path.exists(full + s) for s in SOURCE_SUFFIXES)


def placeholder(path):
    """A name such as tests/runtime/FEATURE/ or DIR/x.prom stands for many: not a path to
    check. (A file may be in capitals: doc/DESIGN.md, debian/README.source.)"""
    parts = [p for p in path.split("/") if p]
    folders = parts if path.endswith("/") else parts[:-1]
    last = [] if path.endswith("/") else [p for p in parts[-1:] if "." not in p]
    return any(p.isupper() and len(p) > 1 for p in folders + last)


def tree_paths(line):
    for m in PATH_RE.finditer(line):
        p = m.group(1)
        if p.endswith("/") and p.count("/") == 1 and p[:-1] in TREE_DIRS:
            yield p
            continue
        if not placeholder(p):
            yield p


def check_markdown(top, f, problems):
    here = os.path.dirname(f)
    with open(f, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            for m in LINK_RE.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue
                target = target.split("#", 1)[0]
                if not os.path.exists(os.path.normpath(os.path.join(here, target))):
                    problems.append("%s:%d: link to %s: no such file" %
                                    (os.path.relpath(f, top), n, target))
            # link targets were checked from the file's folder; the rest of the text
            # names paths from the top of the tree
            text = LINK_RE.sub("", line)
            for p in tree_paths(text):
                if not exists(top, p):
                    problems.append("%s:%d: %s: no such path in the tree" %
                                    (os.path.relpath(f, top), n, p))
            for m in CODE_FILE_RE.finditer(text):
                p = m.group(1)
                if p.startswith(("build/", "./build/")) or placeholder(p) or PATH_RE.match(p):
                    continue
                if not exists(top, p) and not exists(here, p):
                    problems.append("%s:%d: %s: no such file" % (os.path.relpath(f, top), n, p))


def man_text(line):
    """A roff line as it reads: escapes and font changes dropped."""
    line = re.sub(r"\\f[BIRP]", "", line)
    return line.replace("\\-", "-").replace("\\ ", " ").replace("\\&", "")


def check_man(top, f, pages, problems):
    with open(f, encoding="utf-8") as fh:
        for n, raw in enumerate(fh, 1):
            if raw.startswith('.\\"'):
                continue
            line = man_text(raw)
            for p in tree_paths(line):
                if not exists(top, p):
                    problems.append("%s:%d: %s: no such path in the tree" %
                                    (os.path.relpath(f, top), n, p))
            # ".BR superpage-run (7)" names a page as well as "superpage-run(7)"
            joined = re.sub(r"^\.[BI]R?\s+(\S+)\s+\((\d)\)", r"\1(\2)", line)
            for m in MANREF_RE.finditer(joined):
                page = "%s.%s" % (m.group(1), m.group(2))
                if page not in pages:
                    problems.append("%s:%d: %s(%s): no such page in man/" %
                                    (os.path.relpath(f, top), n, m.group(1), m.group(2)))


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        print("usage: python3 tests/check_docs.py [TOP]", file=sys.stderr)
        sys.exit(2)
    top = os.path.abspath(sys.argv[1] if len(sys.argv) == 2 else
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    if not os.path.isdir(top):
        print("check_docs.py: %s is no directory" % top, file=sys.stderr)
        sys.exit(2)
    problems = []
    mds = []
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d not in (".git", "build") and not d.startswith("build")]
        mds += [os.path.join(dirpath, x) for x in filenames if x.endswith(".md")]
    for f in sorted(mds):
        check_markdown(top, f, problems)
    mans = sorted(glob.glob(os.path.join(top, "man", "*.[1-8]")))
    pages = {os.path.basename(m) for m in mans}
    for f in mans:
        check_man(top, f, pages, problems)
    for p in problems:
        print(p)
    print("check_docs: %d Markdown files, %d man pages, %d broken" % (len(mds), len(mans), len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
