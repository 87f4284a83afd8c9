#!/usr/bin/env bash
# test_docs.sh - the docs hold together: every link of the Markdown files and every path
# and superpage page the man pages name resolves (tests/check_docs.py on this tree), and
# the checker does find a broken one of each kind in a tree made for it; make bench's
# doc/BENCHMARKS.md writer (bench/benchmarks.py) names the machine, the date and the
# command, and its headline counts the cases under 0.98x of 4k from the JSON it is given.
# Usage: tests/cli/test_docs.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Reads the tree; writes only under a temporary directory.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
pass() { echo "PASS $1${2:+: $2}"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

if ! command -v python3 >/dev/null; then
	skip docs "python3 is not installed (apt-get install python3)"
	exit 0
fi

# This tree's docs.
python3 "$top/tests/check_docs.py" "$top" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
	pass docs_links "$(tail -1 "$tmp/out")"
else
	fail docs_links "$(grep -v '^check_docs:' "$tmp/out" | head -5 | tr '\n' ' ')(exit $rc)"
fi

# A tree with one broken thing of each kind, and one good thing of each: the checker
# names exactly the broken ones.
t=$tmp/tree
mkdir -p "$t/doc" "$t/man" "$t/src/core" "$t/bench/kernels"
: >"$t/src/core/alloc.c"
: >"$t/bench/kernels/gups.c"
cat >"$t/README.md" <<'EOF'
See [the design](doc/DESIGN.md) and [gone](doc/GONE.md); `src/core/alloc.c` is the ladder,
src/core/missing.c is not, bench/kernels/gups is built from its source,
tests/runtime/FEATURE/ is a placeholder, and `notes/plan.txt` is named in code.
EOF
cat >"$t/doc/DESIGN.md" <<'EOF'
Back to the [README](../README.md#set-up), [a site](https://example.org/x.md).
EOF
cat >"$t/man/superpage.1" <<'EOF'
.TH SUPERPAGE 1
.SH SEE ALSO
.BR superpage-run (7),
superpage\-gone(8), and
.I src/core/alloc.c
and
.I src/core/lost.c
EOF
: >"$t/man/superpage-run.7"
python3 "$top/tests/check_docs.py" "$t" >"$tmp/out" 2>&1
rc=$?
want="README.md:1: link to doc/GONE.md: no such file
README.md:2: src/core/missing.c: no such path in the tree
README.md:3: notes/plan.txt: no such file
man/superpage.1:4: superpage-gone(8): no such page in man/
man/superpage.1:7: src/core/lost.c: no such path in the tree"
got=$(grep -v '^check_docs:' "$tmp/out")
if [ $rc -eq 1 ] && [ "$got" = "$want" ]; then
	pass docs_links_broken "the 5 broken links and paths named, the good ones not"
else
	fail docs_links_broken "exit $rc (want 1), said: $(tr '\n' '|' <"$tmp/out")"
fi

# The BENCHMARKS.md writer, on a made-up run.
cat >"$tmp/report.json" <<'EOF'
{"machine":{"cpu":"Test CPU 9000","cpus":2,"kernel":"Linux 6.1.0-test x86_64","l1d":32768,
"l2":524288,"l3":0,"tlb":{"dtlb":{"4k":64,"2m":64,"1g":0},"stlb":{"4k":3072,"2m":3072,"1g":0}},
"thp_enabled":"madvise","thp_defrag":"madvise","pool_2m_total":768,"pool_2m_free":700,
"pool_1g_total":2,"pool_1g_free":2,"date":"2026-12-06T09:00:00Z","quick":true,"repeat":3},
"results":[
{"kernel":"gups","size":"1G","backing":"4k","rounds":3,"speedup_vs_4k":1.0,"valid":true,"check":"ok"},
{"kernel":"gups","size":"1G","backing":"auto","rounds":3,"speedup_vs_4k":1.42,"valid":true,"check":"ok"},
{"kernel":"stream","size":"256M","backing":"auto","rounds":3,"speedup_vs_4k":0.9,"valid":true,"check":"ok"},
{"kernel":"fft","size":"4M","backing":"auto","rounds":3,"speedup_vs_4k":0.5,"valid":false,"check":"ok"},
{"kernel":"gups","size":"1G","backing":"2m","rounds":3,"speedup_vs_4k":1.5,"valid":true,"check":"ok"}]}
EOF
echo "case  size  unit  4k  auto  2m" >"$tmp/report.txt"
echo "kernel   threads   glibc" >"$tmp/malloc.txt"
echo '{"page_sizes":[4096,2097152,1073741824]}' >"$tmp/status.json"
python3 "$top/bench/benchmarks.py" --json "$tmp/report.json" --text "$tmp/report.txt" \
	--malloc "$tmp/malloc.txt" --status "$tmp/status.json" --svg bench.svg \
	--command 'make bench' --out "$tmp/B.md" 2>"$tmp/err"
rc=$?
missing=
for s in 'Test CPU 9000, 2 CPUs online' 'Page sizes: 4 KiB, 2 MiB, 1 GiB' \
	'L2: 3072 of 4 KiB, 3072 of 2 MiB' '12 MiB with 4 KiB pages' 'Linux 6.1.0-test x86_64' \
	'2026-12-06T09:00:00Z' 'make bench' '`--quick`, 3 rounds' \
	'`auto`: 1 of 2 cases at 0.98x of `4k` or better; best gups 1G 1.42x; below: stream 256M 0.90x' \
	'`2m`: 1 of 1 cases' '![the speedups of this run](bench.svg)' \
	'case  size  unit  4k  auto  2m' 'kernel   threads   glibc'; do
	grep -qF -- "$s" "$tmp/B.md" 2>/dev/null || missing="$missing [$s]"
done
if [ $rc -eq 0 ] && [ -z "$missing" ]; then
	pass benchmarks_md "machine, date, command, headline and both reports written"
else
	fail benchmarks_md "exit $rc, missing:$missing $(head -c 300 "$tmp/err")"
fi
# Another tool's marked section (make realbench's) outlives a new make bench.
printf 'old text\n<!-- realbench:begin -->\nREAL TABLE\n<!-- realbench:end -->\nafter\n' >"$tmp/K.md"
python3 "$top/bench/benchmarks.py" --json "$tmp/report.json" --text "$tmp/report.txt" \
	--out "$tmp/K.md" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && grep -qx 'REAL TABLE' "$tmp/K.md" && grep -qx '<!-- realbench:end -->' "$tmp/K.md" &&
	! grep -qx 'old text' "$tmp/K.md" && grep -qF 'make bench' "$tmp/K.md"; then
	pass benchmarks_md_sections "a marked section kept, the rest written anew"
else
	fail benchmarks_md_sections "exit $rc: $(head -c 300 "$tmp/K.md")"
fi
# A report it cannot read leaves the old file as it was.
echo old >"$tmp/keep.md"
python3 "$top/bench/benchmarks.py" --json "$tmp/none.json" --text "$tmp/report.txt" \
	--out "$tmp/keep.md" 2>"$tmp/err"
rc=$?
if [ $rc -eq 2 ] && [ "$(cat "$tmp/keep.md")" = old ]; then
	pass benchmarks_md_unreadable "exit 2, the old file kept"
else
	fail benchmarks_md_unreadable "exit $rc (want 2), file now: $(head -c 80 "$tmp/keep.md")"
fi
