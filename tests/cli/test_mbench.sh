#!/usr/bin/env bash
# test_mbench.sh - bench/mbench.sh against a fake mimalloc-bench checkout: stand-in
# programs (shell scripts) that print what the real ones print, one of them a
# different time under superpage run, one (in a second checkout) a different result.
# The runner must read the programs' own times, put the ratios in its table, count
# every run's check, refuse a wrong output and a bad command line, and print again
# from its --out file. Runs glibc and sp only (no pool, no peers needed).
# Usage: tests/cli/test_mbench.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test.
set -u
B=${1:?usage: tests/cli/test_mbench.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
B=$(cd "$B" && pwd)
MB=$here/../../bench/mbench.sh
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

if [ ! -x "$B/superpage" ] || [ ! -f "$B/libsuperpage-run.so" ]; then
	fail mbench_built "$B/superpage or $B/libsuperpage-run.so is missing: build with make B=$B"
	exit 1
fi
if ! /usr/bin/time -f %e true >/dev/null 2>&1; then
	skip mbench "no GNU time (/usr/bin/time) to run bench/mbench.sh with"
	exit 0
fi
why=$(preload_blocker "$B" "$B/libsuperpage-run.so")
if [ -n "$why" ]; then
	skip mbench "$why"
	exit 0
fi

# A fake checkout: DIR/out/bench/NAME scripts. Under superpage run (its runtime in
# LD_PRELOAD), larson reports half glibc's relative time; with wrong=1, cfrac's
# factors differ under superpage run.
fake() { # dir wrong
	local d=$1/out/bench
	mkdir -p "$d" "$1/bench"
	cat >"$d/cfrac" <<EOF
#!/bin/sh
case "\${LD_PRELOAD:-}" in
*libsuperpage-run*) [ "$2" = 1 ] && { echo "\$1 = 3 * 5"; exit 0; } ;;
esac
echo "\$1 = 856070387728264 * 20495027946319472471219512627"
EOF
	cat >"$d/larson" <<'EOF'
#!/bin/sh
t=4.000
case "${LD_PRELOAD:-}" in *libsuperpage-run*) t=2.000 ;; esac
echo "Throughput =  1000 operations per second, relative time: ${t}s."
EOF
	# shellcheck disable=SC2016
	printf '#!/bin/sh\necho "start with $1 threads"\n' >"$d/mstress"
	printf '#!/bin/sh\necho "1000000000 iterations"\n' >"$d/glibc-thread"
	chmod +x "$d"/*
}
fake "$tmp/good" 0
fake "$tmp/bad" 0
fake "$tmp/bad" 1

run_mb() { # args...: leaves rc, $tmp/out, $tmp/err
	bash "$MB" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

PROGS=cfrac,larsonN,mstressN,glibc-thread
run_mb -r 2 -a glibc,sp -p $PROGS -b "$B" -o "$tmp/runs" "$tmp/good"
# larsonN's row: glibc's median relative time, then sp's ratio to it.
larson_row=$(grep -m1 '^larsonN ' "$tmp/out")
if [ "$rc" != 0 ]; then
	fail mbench_runs "exit status $rc, want 0: $(tail -5 "$tmp/err")"
elif ! grep -q '^checks: 16 of 16 runs correct$' "$tmp/out"; then
	fail mbench_runs "no 'checks: 16 of 16 runs correct' (4 programs, 2 allocators, 2 rounds): $(tail -3 "$tmp/out")"
elif ! grep -q 'AMD\|Intel\|CPUs' "$tmp/out" || ! grep -q 'started [0-9-]* [0-9:]* UTC' "$tmp/out"; then
	fail mbench_runs "the heading names no machine or date: $(head -3 "$tmp/out")"
else
	pass mbench_runs
fi
if [[ $larson_row != *"4.000s"*"0.500/"* ]]; then
	fail mbench_own_time "larsonN's row should read glibc 4.000s and sp 0.500 of it (the programs' own times): $larson_row"
else
	pass mbench_own_time
fi
if [ "$(grep -vc '^#' "$tmp/runs")" != 16 ] || ! grep -q '^# machine: ' "$tmp/runs"; then
	fail mbench_out "--out should hold the heading and 16 runs: $(head -c 400 "$tmp/runs")"
else
	cp "$tmp/out" "$tmp/first"
	run_mb --from "$tmp/runs"
	if [ "$rc" != 0 ] || ! cmp -s "$tmp/first" "$tmp/out"; then
		fail mbench_out "--from should print the same (status $rc): $(diff "$tmp/first" "$tmp/out" | head -5)"
	else
		pass mbench_out
	fi
fi

# A result that differs from glibc's fails its runs, and the runner says which.
run_mb -r 1 -a glibc,sp -p cfrac,mstressN -b "$B" "$tmp/bad"
if [ "$rc" != 1 ]; then
	fail mbench_wrong_output "exit status $rc, want 1 for cfrac's wrong factors under sp"
elif ! grep -q 'cfrac under sp (round 1) failed: its output differs from glibc' "$tmp/err"; then
	fail mbench_wrong_output "stderr does not name the failed run: $(tail -3 "$tmp/err")"
elif ! grep -q '^checks: 1 of 4 runs FAILED' "$tmp/out" || ! grep -q '^cfrac .*FAILED' "$tmp/out"; then
	fail mbench_wrong_output "the table should mark cfrac's sp runs FAILED, 1 of 4: $(cat "$tmp/out")"
else
	pass mbench_wrong_output
fi

# Usage errors: status 2, a line that says what is wrong, nothing run.
ok=1
for args in "" "--rounds 0 $tmp/good" "--allocators nosuch $tmp/good" "--programs nosuch $tmp/good" \
	"$tmp/nosuch" "$tmp" "--bogus $tmp/good"; do
	# shellcheck disable=SC2086
	run_mb $args
	if [ "$rc" != 2 ] || ! grep -q '^mbench.sh: ' "$tmp/err" || [ -s "$tmp/out" ]; then
		fail mbench_usage "'mbench.sh $args': status $rc (want 2), stderr: $(head -2 "$tmp/err")"
		ok=0
		break
	fi
done
[ $ok = 1 ] && pass mbench_usage
run_mb --help
if [ "$rc" != 0 ] || ! grep -q '^usage: bash bench/mbench.sh' "$tmp/out"; then
	fail mbench_help "--help: status $rc, $(head -2 "$tmp/out")"
else
	pass mbench_help
fi
exit 0
