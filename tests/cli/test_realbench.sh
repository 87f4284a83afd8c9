#!/usr/bin/env bash
# test_realbench.sh - tests make realbench's plumbing (bench/real/realbench.sh and
# table.py) on tiny fake workloads: no apt-get, no server. Each workload runs under
# superpage bench -- CMD, and the table lands between the realbench markers of a
# doc whose other text is kept; a workload that cannot run, one of the full set and
# one whose check fails are reported as such. No test asserts a time.
# Usage: tests/cli/test_realbench.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test.
set -u
B=${1:?usage: tests/cli/test_realbench.sh BUILD_DIR}
B=$(cd "${B%/}" && pwd)
SP=$B/superpage
top=$(cd "$(dirname "$0")/../.." && pwd)
RB=$top/bench/real/realbench.sh
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
unset LD_PRELOAD GLIBC_TUNABLES "${!SUPERPAGE_@}"

why=''
[ -x "$RB" ] || why="no $RB"
command -v python3 >/dev/null 2>&1 || why="needs python3 (table.py)"
[ -z "$why" ] && why=$(preload_blocker "$B" "$B/libsuperpage-run.so")
if [ -n "$why" ]; then
	for t in realbench_markers realbench_table realbench_skips realbench_check realbench_new_doc; do
		skip "$t" "$why"
	done
	exit 0
fi

# The fake workloads: one that works (its figure, a check line, an extra figure), one
# whose prepare says it cannot run, one of the full set, one whose check is missing.
w=$tmp/work
mkdir -p "$w"
cat >"$w/alpha.sh" <<'W'
title='fake alpha'
metric='^alpha: ([0-9]+) ops'
expect='^check: alpha ok'
extras='tenfold=^alpha: [0-9]+ ops, ([0-9]+)'
run() { echo "alpha ran in $1" >"$1/ran"; echo 'check: alpha ok'; echo 'alpha: 1000 ops, 10000'; }
W
cat >"$w/beta.sh" <<'W'
title='fake beta'
metric='^beta: ([0-9]+)'
prepare() { echo 'beta has nothing to run here'; return 1; }
run() { echo 'beta: 1'; }
W
cat >"$w/gamma.sh" <<'W'
title='fake gamma'
set=full
metric='^gamma: ([0-9]+)'
run() { echo 'gamma: 1'; }
W
cat >"$w/delta.sh" <<'W'
title='fake delta'
metric='^delta: ([0-9]+)'
expect='^check: delta ok'
run() { echo 'delta: 5'; }
W
doc=$tmp/doc.md
printf '# Before\n\nkept text above\n\n<!-- realbench:begin -->\nold table\n<!-- realbench:end -->\n\n## After\nkept text below\n' >"$doc"
bash "$RB" --work "$w" --data "$tmp/data" --out "$tmp/out" --doc "$doc" --rounds 2 \
	--backing auto --no-pools "$B" >"$tmp/rb.out" 2>"$tmp/rb.err"
rc=$?
oneline() { head -c 300 "$1" | tr '\n' '|'; }

# markers: the text outside them is as it was, the old table is gone
if [ "$(grep -c '^<!-- realbench:begin -->$' "$doc")" = 1 ] &&
	[ "$(grep -c '^<!-- realbench:end -->$' "$doc")" = 1 ] &&
	[ "$(sed -n '1,4p' "$doc")" = "$(printf '# Before\n\nkept text above\n')" ] &&
	[ "$(sed -n '/realbench:end/,$p' "$doc" | tail -n +2)" = "$(printf '\n## After\nkept text below')" ] &&
	! grep -q '^old table$' "$doc"; then
	pass realbench_markers
else
	fail realbench_markers "doc: $(oneline "$doc")"
fi

# table: alpha ran under bench (its data directory, plain and auto), its row has its
# figure, a ratio for auto and check ok, and its extra figure's medians
row=$(grep '^| fake alpha |' "$doc")
if [ -s "$tmp/data/alpha/ran" ] && [ -s "$tmp/out/alpha.json" ] &&
	[[ $row == *"| 1000 | "*x*"| 2 | ok |" ]] &&
	grep -q '^| tenfold | 10000 | 10000 (1.00x) |$' "$doc" &&
	grep -q '^- alpha: auto: ' "$doc" &&
	grep -q 'AMD\|Intel\|CPUs' "$doc"; then
	pass realbench_table
else
	fail realbench_table "rc $rc, row '$row'; $(oneline "$tmp/rb.err")"
fi

# skips: beta's own reason, gamma is of the full set, neither has a row
if grep -q '^- fake beta: beta has nothing to run here$' "$doc" &&
	grep -q '^- fake gamma: full set only' "$doc" &&
	! grep -q '^| fake beta \|^| fake gamma ' "$doc" && [ ! -e "$tmp/data/gamma/ran" ]; then
	pass realbench_skips
else
	fail realbench_skips "$(oneline "$doc")"
fi

# check: delta never printed its check line: its row says so
row=$(grep '^| fake delta |' "$doc")
if [[ $row == *"FAILED (check missing in "* ]]; then
	pass realbench_check
else
	fail realbench_check "row '$row'"
fi

# a doc without the markers gets them at its end, its text kept in front
printf '# Only\n\ntext\n' >"$doc"
bash "$RB" --work "$w" --only alpha --data "$tmp/data" --out "$tmp/out" --doc "$doc" --rounds 1 \
	--backing auto --no-pools "$B" >/dev/null 2>"$tmp/rb.err"
if [ "$(head -n 3 "$doc")" = "$(printf '# Only\n\ntext')" ] &&
	[ "$(sed -n 5p "$doc")" = '<!-- realbench:begin -->' ] &&
	[ "$(tail -n 1 "$doc")" = '<!-- realbench:end -->' ] && grep -q '^| fake alpha |' "$doc"; then
	pass realbench_new_doc
else
	fail realbench_new_doc "$(oneline "$doc"); $(oneline "$tmp/rb.err")"
fi
exit 0
