#!/usr/bin/env bash
# test_exec.sh - writable and executable heaps (SBCL's dynamic space, a JIT's code
# cache) under superpage run (tests/runtime/exec/execheap.c): the program sees what
# it sees plain (code written and run; 4 KiB pieces flipped between r-x and rw- and
# back, W^X; pieces unmapped; mapped by mmap and by syscall(SYS_mmap); at hints and
# fixed places; forked), under every backing; each mapping advised for THP (under
# 2m and 1g too, a fall counted: the program re-protects it at 4 KiB, which a
# hugetlb page cannot follow), none under 4k; --stats counts them as mappings, and
# files their memory under "anon", not "text".
# Usage: tests/runtime/exec/test_exec.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test.
set -u
B=${1:?usage: tests/runtime/exec/test_exec.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start exec exec/execheap

# Reads "exec_advised=A of N exec_aligned=L of 3" from execheap's stderr: sets adv n.
exec_figures() {
	read -r adv n <<<"$(sed -n 's/^exec_advised=\([0-9]*\) of \([0-9]*\) .*/\1 \2/p' "$tmp/sp.err")"
	[[ "$adv" =~ ^[0-9]+$ && "$n" =~ ^[0-9]+$ ]] && [ "$n" != 0 ]
}

# Reads the --stats file: sets why unless it counts the executable mappings (at least
# want of them), files the one left (32 MiB, touched) under anon and not text, and
# (2m, 1g) counts a fall from 2m for program_managed_pages.
exec_stats() { # want backing
	why=$("$PY" - "$tmp/stats.json" "$1" "$2" 2>&1 <<'PY'
import json, sys
path, want, backing = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    d = [json.loads(l) for l in open(path) if l.strip()][-1]
except (OSError, ValueError, IndexError) as e:
    print("cannot read the --stats file: %s" % e)
    sys.exit()
m = d.get("heap", {}).get("mmaps", d.get("mmaps", {}))
reg = d.get("regions", {})
anon, text = reg.get("anon", {}).get("bytes", 0), reg.get("text", {}).get("bytes", 0)
if m.get("exec", 0) < want:
    print("--stats counts %r executable mappings, want %d: %r" % (m.get("exec"), want, m))
elif anon < 32 << 20:
    print("anon holds %d bytes, less than the 32 MiB rwx mapping left: %r" % (anon, reg))
elif text >= 16 << 20:
    print("text holds %d bytes: the rwx heap is filed as text: %r" % (text, reg))
elif backing in ("2m", "1g") and not d.get("falls", {}).get("2m", {}).get("program_managed_pages"):
    print("no 2m program_managed_pages fall counted: %r" % d.get("falls"))
PY
)
	[ -z "$why" ]
}

test_exec() { # backing
	local backing=$1 name=exec_heap_$1 want
	need_run "$name" || return
	if ! have_python; then
		skip "$name" "no python3 to read JSON"
		return
	fi
	plain "$P/execheap"
	sprun_stats --backing "$backing" -- "$P/execheap"
	want=4
	[ "$backing" = 4k ] && want=0
	if differs; then
		fail "$name" "$why"
	elif ! exec_figures; then
		fail "$name" "execheap said no figure: $(oneline "$tmp/sp.err")"
	elif [ "$adv" != $((want ? n : 0)) ]; then
		fail "$name" "$adv of $n rwx mappings advised for THP, want $((want ? n : 0))"
	elif ! exec_stats "$want" "$backing"; then
		fail "$name" "$why"
	else
		pass "$name" "$adv of $n rwx mappings advised for THP; $(tail -n 1 "$tmp/sp.out")"
	fi
}

run_some "$@"
for backing in auto thp 2m 1g 4k; do
	test_exec "$backing"
done
exit $failed
