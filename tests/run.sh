#!/usr/bin/env bash
# run.sh - runs every test program and script, prints each result and the summary line.
# Usage: tests/run.sh BUILD_DIR. Test programs print "PASS name", "FAIL name" or
# "SKIP name: why"; a program that dies without saying FAIL counts as one failure.
set -u
B=${1:?usage: tests/run.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0 skip=0

# Pools and THP modes are put back whatever the tests do, even if one crashes.
declare -A saved
for f in /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages \
         /sys/kernel/mm/hugepages/hugepages-*/nr_overcommit_hugepages \
         /sys/kernel/mm/transparent_hugepage/enabled \
         /sys/kernel/mm/transparent_hugepage/defrag; do
	[ -r "$f" ] || continue
	v=$(cat "$f")
	case "$v" in *\[*) v=$(sed -n 's/.*\[\(.*\)\].*/\1/p' <<<"$v") ;; esac
	saved[$f]=$v
done
restore() {
	[ "$(id -u)" = 0 ] || return 0
	for f in "${!saved[@]}"; do
		cur=$(cat "$f")
		case "$cur" in *\[*) cur=$(sed -n 's/.*\[\(.*\)\].*/\1/p' <<<"$cur") ;; esac
		[ "$cur" = "${saved[$f]}" ] || echo "${saved[$f]}" >"$f" 2>/dev/null ||
			echo "run.sh: could not put back $f" >&2
	done
}
trap restore EXIT
trap 'exit 130' INT TERM

run_one() { # name, command...
	local name=$1 out rc line saw_fail=0
	shift
	out=$(mktemp)
	"$@" >"$out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case "$line" in
		"PASS "*) pass=$((pass + 1)); echo "$line" ;;
		"FAIL "*) fail=$((fail + 1)); saw_fail=1; echo "$line" ;;
		"SKIP "*) skip=$((skip + 1)); echo "$line" ;;
		*) echo "    $line" ;;
		esac
	done <"$out"
	rm -f "$out"
	if [ $rc -ne 0 ] && [ $saw_fail = 0 ]; then
		fail=$((fail + 1))
		echo "FAIL $name: exited with status $rc"
	fi
	restore
}

for t in "$B"/tests/unit/test_*; do
	[ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
for t in "$B"/tests/system/test_*; do
	[ -x "$t" ] && run_one "$(basename "$t")" "$t"
done
for t in "$here"/cli/test_*.sh; do
	[ -f "$t" ] && run_one "$(basename "$t")" bash "$t" "$B"
done

echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
