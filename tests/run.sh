#!/usr/bin/env bash
# run.sh - runs the test programs and scripts of a tier, or all, prints each result and
# the summary line. Test programs print "PASS name", "FAIL name" or "SKIP name: why";
# a program that dies without saying FAIL counts as one failure.
#
# usage: tests/run.sh [BUILD_DIR] [TIER [NAME...]]
#   BUILD_DIR  where make put the tests (default: build)
#   TIER       all (default: unit, system, runtime, cli), unit (against the fake
#              kernel or the real one, no root needed, seconds), system (the library
#              on this machine), runtime (the runtime inside programs under superpage
#              run: tests/runtime/FEATURE/test_FEATURE.sh), or cli (the command's
#              contract: tests/cli/test_*.sh)
#   NAME       only these tests of the tier: test_fit, test_shm (or fit, shm)
# Exit status: 0 if nothing failed, 1 if something did, 2 on bad arguments.
set -u
usage() {
	sed -n 's/^# usage: /usage: /p' "$0" >&2
	exit 2
}
B=build
if [ $# -gt 0 ] && [ -d "$1" ]; then
	B=$1
	shift
fi
tier=${1:-all}
[ $# -gt 0 ] && shift
case $tier in
all | unit | system | runtime | cli) ;;
-h | --help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
*/*) echo "run.sh: no directory $tier" >&2; exit 2 ;;
*) echo "run.sh: no tier '$tier' (all, unit, system, runtime, cli; --help says more)" >&2; exit 2 ;;
esac
[ "$tier" = all ] && [ $# -gt 0 ] && { echo "run.sh: names need a tier" >&2; usage; }
[ -d "$B/tests" ] || { echo "run.sh: $B/tests is missing (make tests builds it)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
pass=0 fail=0 skip=0

# One pool user at a time on the machine (make compat, make bench, another make
# check): every tier but unit (which runs on the fake kernel) holds the lock while it
# runs. SP_POOL_LOCKED=1 says the caller holds it already.
# shellcheck source=tests/pool_lock.sh
. "$(dirname "$0")/pool_lock.sh"
[ "$tier" = unit ] || pool_lock_take run.sh

# Pools and THP modes are put back after each test, whatever it does, even if it
# crashes (tests/sysfs.sh).
# shellcheck source=tests/sysfs.sh
. "$here/sysfs.sh"
for f in /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages \
         /sys/kernel/mm/hugepages/hugepages-*/nr_overcommit_hugepages \
         /sys/kernel/mm/transparent_hugepage/enabled \
         /sys/kernel/mm/transparent_hugepage/defrag; do
	[ -r "$f" ] && sysfs_remember "$f"
done
restore() { sysfs_reset; }
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

# The tests to run, in order: unit programs, system programs, runtime scripts, cli
# scripts; of one tier, and only those named if names were given (each must name a
# test of the tier).
tests=()
add() { # tier, files... (programs must be executable: not their .d files)
	local want=$1 t
	shift
	[ "$tier" = all ] || [ "$tier" = "$want" ] || return 0
	for t in "$@"; do
		case $t in
		*.sh) [ -f "$t" ] && tests+=("$t") ;;
		*) [ -f "$t" ] && [ -x "$t" ] && tests+=("$t") ;;
		esac
	done
}
add unit "$B"/tests/unit/test_*
add system "$B"/tests/system/test_*
add runtime "$here"/runtime/*/test_*.sh
add cli "$here"/cli/test_*.sh
if [ $# -gt 0 ]; then
	all=("${tests[@]}")
	tests=()
	for n in "$@"; do
		found=
		for t in "${all[@]}"; do
			base=$(basename "$t" .sh)
			if [ "$base" = "$n" ] || [ "$base" = "test_$n" ]; then
				tests+=("$t")
				found=1
			fi
		done
		[ -n "$found" ] || { echo "run.sh: no $tier test '$n'" >&2; exit 2; }
	done
fi
if [ ${#tests[@]} -eq 0 ]; then
	echo "run.sh: no $tier test in $B (make tests builds them)" >&2
	exit 2
fi
for t in "${tests[@]}"; do
	case $t in
	*.sh) run_one "$(basename "$t")" bash "$t" "$B" ;;
	*) run_one "$(basename "$t")" "$t" ;;
	esac
done

echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
