# lib.sh - what the tests/runtime/*/test_*.sh scripts that run a program both ways
# share: plain and under `superpage run`, the same output wanted, the --stats account
# read, the 2M pool given pages and put back (tests/lib.sh underneath). Sourced, not
# run: the script sets B (its BUILD_DIR argument) and here (its folder), sources this,
# then calls both_start. failed, why, rc, prc and src are the caller's to read.
# shellcheck shell=bash disable=SC2034,SC2154

# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SP=$B/superpage
RT=$B/libsuperpage-run.so
P2M=/sys/kernel/mm/hugepages/hugepages-2048kB
SEED=42
export LC_ALL=C
running=''

# Readies a script of FEATURE: SRC is its folder, P the folder of its built programs,
# CSRC and C those of tests/runtime/common (programs several features run); B, SP, RT
# made absolute; tmp; every sysfs value put back on exit, even on Ctrl-C. Says SKIP
# FEATURE and exits where this build's runtime cannot be preloaded; says FAIL
# FEATURE_built and exits if a program (FEATURE/NAME or common/NAME) is not built.
both_start() { # feature program...
	local feature=$1 prog
	shift
	SRC=$here CSRC=$here/../common
	why=$(preload_blocker "$B" "$RT")
	if [ -n "$why" ]; then
		skip "$feature" "$why; the preload runs in the plain build"
		exit 0
	fi
	if [ ! -f "$RT" ]; then
		skip "$feature" "$RT is missing: build with make B=$B tests"
		exit 0
	fi
	for prog in "$@"; do
		if [ ! -x "$B/tests/runtime/$prog" ]; then
			fail "${feature}_built" "$B/tests/runtime/$prog is missing: build with make B=$B tests"
			exit 1
		fi
	done
	B=$(cd "$B" && pwd)
	SP=$B/superpage RT=$B/libsuperpage-run.so
	P=$B/tests/runtime/$feature C=$B/tests/runtime/common
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_$feature.XXXXXX")
	tmp=$(cd "$tmp" && pwd)
	trap 'restore; rm -rf "$tmp"' EXIT
	trap interrupted INT TERM HUP

	have_run=1
	run_why=''
	"$SP" run --help >/dev/null 2>"$tmp/err"
	rc=$?
	if [ $rc != 0 ]; then
		have_run=0
		run_why="'superpage run' is not there: 'superpage run --help' exited $rc $(oneline "$tmp/err" 1)"
	fi
}

# Some tests only, for a developer: test_heap.sh BUILD torture:2m churn_2m ... runs
# those (test_NAME ARG) and exits; with no test named, returns.
run_some() { # build_dir [test[:arg]...]
	local t
	[ $# -gt 1 ] || return 0
	shift
	for t in "$@"; do
		case "$t" in
		*:*) "test_${t%%:*}" "${t#*:}" ;;
		*) "test_$t" ;;
		esac
	done
	exit $failed
}

# ---------- putting things back ----------

# shellcheck disable=SC2317 # (called by the trap)
interrupted() {
	[ -z "$running" ] || kill "$running" 2>/dev/null
	exit 130
}

have_python() { [ -n "$PY" ]; }

# ---------- running a program both ways ----------

plain() { # command... : leaves prc, $tmp/plain.out, $tmp/plain.err
	limited "$tmp/plain.out" "$tmp/plain.err" "$@"
	prc=$rc
}
sprun() { # options... -- command... : leaves src, $tmp/sp.out, $tmp/sp.err
	limited "$tmp/sp.out" "$tmp/sp.err" "$SP" run "$@"
	src=$rc
}

# Sets why if the run under superpage differs from the plain one in status or stdout.
differs() {
	why=''
	if [ "$prc" != 0 ]; then
		why="the plain run exited $prc: $(oneline "$tmp/plain.err")"
	elif [ "$src" = 124 ]; then
		why="timed out after ${LIMIT}s under superpage run: $(oneline "$tmp/sp.err")"
	elif [ "$src" -gt 128 ]; then
		why="died of signal $((src - 128)) under superpage run: $(oneline "$tmp/sp.err")"
	elif [ "$src" != "$prc" ]; then
		why="exited $src under superpage run, $prc plain: $(oneline "$tmp/sp.err")"
	elif ! cmp -s "$tmp/plain.out" "$tmp/sp.out"; then
		why="stdout differs: $(diff "$tmp/plain.out" "$tmp/sp.out" | head -n 5 | tr '\n' ' ' |
			cut -c 1-300)"
	fi
	[ -n "$why" ]
}
judge() { # name [note]
	if differs; then fail "$1" "$why"; else pass "$1" "${2:-}"; fi
}

# The same, with --stats to a file: each process under superpage appends a JSON line.
sprun_stats() { # options... -- command...
	rm -f "$tmp/stats.json"
	sprun --stats="$tmp/stats.json" "$@"
}

# Reads the --stats file of the last sprun_stats. Sets why if a line is not JSON, if no
# process allocated through the runtime, if a named program did not report, or (with
# BACKING=4k or thp) if a process has memory on pages that backing must not use.
check_stats() { # comm...
	why=''
	have_python || return 1
	why=$("$PY" - "$tmp/stats.json" "$@" 2>&1 <<'PY'
import json, os, sys
path, want = sys.argv[1], sys.argv[2:]
backing = os.environ.get("BACKING", "")
try:
    lines = [l for l in open(path) if l.strip()]
except OSError as e:
    print("no --stats file: %s" % e.strerror)
    sys.exit()
seen = {}
for n, l in enumerate(lines, 1):
    try:
        d = json.loads(l)
    except ValueError as e:
        print("--stats line %d is not JSON (%s): %.100s" % (n, e, l))
        sys.exit()
    if d.get("heap", {}).get("mallocs", 0) > 0:
        seen[d.get("comm")] = seen.get(d.get("comm"), 0) + 1
    if backing == "4k" and d.get("huge_bytes") != 0:
        print("--backing 4k, but %s has %r bytes on huge pages" % (d.get("comm"), d.get("huge_bytes")))
        sys.exit()
    if backing == "thp" and d.get("hugetlb_bytes") != 0:
        print("--backing thp, but %s has %r bytes of hugetlb" % (d.get("comm"), d.get("hugetlb_bytes")))
        sys.exit()
if not seen:
    print("no process in the --stats file allocated through superpage (%d lines)" % len(lines))
    sys.exit()
missing = [c for c in want if c not in seen]
if missing:
    print("no --stats line with mallocs from %s (got %s)" % (
        ", ".join(missing), ", ".join(sorted(map(str, seen)))))
PY
)
	[ -n "$why" ]
}

# judge, and the named programs must have run with the runtime (see check_stats).
judge_stats() { # name note comm...
	local name=$1 note=$2
	shift 2
	if differs || check_stats "$@"; then fail "$name" "$why"; else pass "$name" "$note"; fi
}

# Lines on stderr that the program wrote, not superpage.
foreign_stderr() { grep -v '^superpage: ' "$1" | head -n 3 | tr '\n' ' '; }

need_run() { # name
	[ "$have_run" = 1 ] && return 0
	skip "$1" "$run_why"
	return 1
}

# The THP mode: always, madvise or never (nothing without THP).
thp_mode() { sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; }
