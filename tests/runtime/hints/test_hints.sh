#!/usr/bin/env bash
# test_hints.sh - mappings at the program's address hint (tests/runtime/hints/hints.c,
# libgc's way: each heap chunk asked for at a taken place) under superpage run: the
# program sees what it sees plain under every backing; a free hint is honoured; a
# hint the kernel would not honour is placed as an unhinted mapping is, so every
# 8 MiB chunk starts on a 2 MiB boundary (plain, the kernel does not align a hinted
# mapping), a piece asked for at a chunk's end is not put in the gap the alignment
# left (the kernel would have had it taken), and --stats counts them.
# Usage: tests/runtime/hints/test_hints.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test. The 2M pool it sets is put back.
set -u
B=${1:?usage: tests/runtime/hints/test_hints.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start hints hints/hints

# Reads "chunks_aligned=A of N pieces_at_ends=E" from stderr (plain's or
# superpage's): sets al n ends.
hint_figures() { # file
	read -r al n ends <<<"$(sed -n 's/^chunks_aligned=\([0-9]*\) of \([0-9]*\) pieces_at_ends=\([0-9]*\)$/\1 \2 \3/p' "$1")"
	[[ "$al" =~ ^[0-9]+$ && "$n" =~ ^[0-9]+$ && "$ends" =~ ^[0-9]+$ ]] && [ "$n" != 0 ]
}

# The hints_moved count of the --stats file, or "none".
hints_moved() {
	"$PY" - "$tmp/stats.json" 2>/dev/null <<'PY' || echo none
import json, sys
d = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
print(d.get("heap", {}).get("mmaps", d.get("mmaps", {}))["hints_moved"])
PY
}

test_hints() { # backing
	local backing=$1 name=hints_$1 moved pal
	need_run "$name" || return
	if ! have_python; then
		skip "$name" "no python3 to read JSON"
		return
	fi
	if [ "$backing" = 2m ] && ! pool_2m 128; then
		skip "$name" "$why"
		return
	fi
	plain "$P/hints"
	hint_figures "$tmp/plain.err"
	pal=${al:-?}
	sprun_stats --backing "$backing" -- "$P/hints"
	restore
	moved=$(hints_moved)
	if differs; then
		fail "$name" "$why"
	elif ! hint_figures "$tmp/sp.err"; then
		fail "$name" "hints said no figure: $(oneline "$tmp/sp.err")"
	elif [ "$backing" != 4k ] && [ "$al" != "$n" ]; then
		fail "$name" "$al of $n chunks at taken hints on 2 MiB boundaries (plain: $pal)"
	elif [ "$backing" != 4k ] && [ "$ends" != 0 ]; then
		fail "$name" "$ends of 8 pieces at the ends of aligned chunks landed in the gap above them"
	elif [ "$backing" != 4k ] && { [ "$moved" = none ] || [ "$moved" -lt "$n" ]; }; then
		fail "$name" "--stats counts $moved hints placed, want at least $n"
	else
		pass "$name" "$al of $n chunks on 2 MiB boundaries (plain: $pal), $moved hints placed"
	fi
}

run_some "$@"
for backing in auto thp 2m 1g 4k; do
	test_hints "$backing"
done
exit $failed
