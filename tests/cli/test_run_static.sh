#!/usr/bin/env bash
# test_run_static.sh - superpage run on a statically linked program, which it cannot
# preload: it keeps it and the processes it starts promoted by a watch (promote's
# passes, round after round), says so in one line, and superpage stat and --stats say
# how it was reached; exit statuses and signals pass through; --backing 2m falls to
# THP and says so, --backing 4k runs it as it is; --budget holds each pass.
# Usage: tests/cli/test_run_static.sh BUILD_DIR. Changes no sysfs value, but for THP
# "always", which it sets to madvise for its run and puts back.
set -u
B=${1:?usage: tests/cli/test_run_static.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$(cd "$B" && pwd)/superpage
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

# (restore ends a program still running: stop_hold, tests/lib.sh)
hold_pid='' hold_in=''
trap 'restore; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
unset LD_PRELOAD "${!SUPERPAGE_@}"

PROG=$tmp/prog
WATCHING="superpage's runtime cannot be preloaded into it, so superpage keeps it promoted instead"

# Starts superpage run OPTIONS -- PROG ARGS in the background with its stdin on a pipe
# we hold: hold_pid (superpage run), hold_in; its stdout in $tmp/p.out, stderr in
# $tmp/p.err. Returns 1 if the program did not say ready.
start_prog() { # run options and the command...
	: >"$tmp/p.out"
	exec {hold_in}> >(exec "$SP" run "$@" >"$tmp/p.out" 2>"$tmp/p.err")
	hold_pid=$!
	for _ in $(seq 300); do
		grep -q '^ready' "$tmp/p.out" && return 0
		kill -0 "$hold_pid" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}
# Ends the program (its stdin closed) and waits for superpage run: rc.
end_prog() {
	exec {hold_in}>&-
	hold_in=''
	wait "$hold_pid"
	rc=$?
	hold_pid=''
}

# kB of AnonHugePages of process pid (smaps_rollup).
huge_kb() { awk '/^AnonHugePages:/ { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null; }
# The watch's passes over pid, as superpage stat --json says them (-1: none).
passes() {
	"$SP" stat --json "$1" 2>/dev/null |
		"$PY" -c 'import json,sys; w=json.load(sys.stdin)["watch"]; print(w["passes"] if w else -1)' 2>/dev/null ||
		echo -1
}

# Waits until pid has want kB on huge pages, counting the watch's passes: 0 when it
# has; 1 when 6 passes went by without (or none came in 100 looks). Leaves got, seen.
wait_huge() { # pid want_kb
	local pid=$1 want=$2 first p still=0
	first=$(passes "$pid")
	seen=$first
	while :; do
		got=$(huge_kb "$pid")
		if [ "${got:-0}" -ge "$want" ]; then
			seen=$(passes "$pid")
			return 0
		fi
		p=$(passes "$pid")
		if [ "$p" = "$seen" ]; then
			still=$((still + 1))
			[ "$still" -lt 100 ] || return 1
		else
			still=0
			seen=$p
		fi
		[ "$seen" -lt $((first + 6)) ] || return 1
		sleep 0.05
	done
}

precheck() {
	if ! ${CC:-gcc} -O2 -static -o "$PROG" "$here/static/prog.c" 2>"$tmp/cc.err"; then
		skip run_static_watch "cannot link a static program (no libc.a?): $(oneline "$tmp/cc.err")"
		exit 0
	fi
	if [ -z "$PY" ]; then
		skip run_static_watch "no python3 to read superpage stat --json"
		exit 0
	fi
	if ! is_root; then
		# Without CAP_SYS_NICE no watch: the program runs as it is, and it is said.
		sp run -- "$PROG" exit 3
		if [ "$rc" != 3 ] || ! grep -q "statically linked: it runs without superpage.*CAP_SYS_NICE" "$tmp/err"; then
			fail run_static_not_root "exit $rc, want 3: $(oneline "$tmp/err")"
		else
			pass run_static_not_root
		fi
		skip run_static_watch "needs root (CAP_SYS_NICE) to collapse another process's memory"
		exit 0
	fi
	if ! grep -q '\[\(always\|madvise\)\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; then
		skip run_static_watch "THP is never or missing here: nothing can be collapsed"
		exit 0
	fi
	# The program's memory must start on base pages: under THP "always" it is huge
	# without any watch.
	remember /sys/kernel/mm/transparent_hugepage/enabled
	if ! sysfs_thp_not_always; then
		skip run_static_watch "THP is 'always' and cannot be set to madvise"
		exit 0
	fi
}

# The heap of a static program reaches 90% huge pages, its data intact; stat and
# --stats say how.
test_heap() {
	local name=run_static_heap pid want=$((256 * 1024 * 9 / 10))
	if ! start_prog --stats="$tmp/stats.json" -- "$PROG" heap 256; then
		fail $name "the program did not start: $(oneline "$tmp/p.err")"
		stop_hold
		return
	fi
	pid=$(awk '/^ready/ { print $2 }' "$tmp/p.out")
	if ! wait_huge "$pid" "$want"; then
		fail $name "after the watch's passes $seen, ${got:-?} kB of its 256 MiB heap on huge pages, want $want kB"
		stop_hold
		return
	fi
	# One more pass, whole, before it ends: the account is of the last whole pass.
	local after=$seen
	for _ in $(seq 200); do
		[ "$(passes "$pid")" -le "$after" ] || break
		sleep 0.05
	done
	"$SP" stat "$pid" >"$tmp/stat.txt" 2>&1
	end_prog
	if [ "$rc" != 0 ] || [ "$(tail -n 1 "$tmp/p.out")" != ok ]; then
		fail $name "exit $rc, output $(oneline "$tmp/p.out"): its data did not survive"
	elif [ "$(grep -c "^superpage: $PROG is statically linked: $WATCHING" "$tmp/p.err")" != 1 ]; then
		fail $name "the watch is not said once: $(oneline "$tmp/p.err")"
	else
		pass $name "$got kB huge after $seen passes"
	fi
	if ! grep -q "reached by the watch of superpage run (pid [0-9]*), not preloaded (statically linked)" "$tmp/stat.txt"; then
		fail run_static_stat "superpage stat does not say the watch: $(oneline "$tmp/stat.txt" 20)"
	else
		pass run_static_stat
	fi
	"$PY" - "$tmp/stats.json" "$pid" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mine = [r for r in rows if r.get("pid") == int(sys.argv[2])]
assert len(mine) == 1, rows
r = mine[0]
assert r["reached"] == "watch" and r["why"] == "static", r
assert r["left"] == "exit" and r["status"] == 0, r
assert r["passes"] >= 1 and r["coverage"] >= 0.9, r
if r["collapsed_bytes"] == 0:
    sys.exit(3)  # huge without the watch
assert r["collapsed_bytes"] >= 200 << 20, r
PY
	case $? in
	0) pass run_static_stats ;;
	3) skip run_static_stats "its heap was huge with nothing collapsed: THP was 'always' meanwhile (another user of this machine)" ;;
	*) fail run_static_stats "the --stats account: $(head -c 400 "$tmp/stats.json")" ;;
	esac
}

# A process the program starts is reached too.
test_child() {
	local name=run_static_child pid
	if ! start_prog -- "$PROG" spawn "$PROG" heap 64; then
		fail $name "the program did not start: $(oneline "$tmp/p.err")"
		stop_hold
		return
	fi
	pid=$(awk '/^ready/ { print $2 }' "$tmp/p.out")
	if ! wait_huge "$pid" $((64 * 1024 * 9 / 10)); then
		fail $name "after the watch's passes $seen, ${got:-?} kB of the child's 64 MiB on huge pages"
	elif [ "$(passes "$pid")" -lt 1 ]; then
		fail $name "superpage stat does not say the watch reaches the child: $("$SP" stat --json "$pid" | head -c 300)"
	else
		pass $name "$got kB huge, $(passes "$pid") passes"
	fi
	end_prog
	[ "$rc" = 0 ] || fail run_static_child_status "exit $rc, want 0: $(oneline "$tmp/p.err")"
}

# Exit statuses and signals, as if the program had run alone.
test_status() {
	sp run -- "$PROG" exit 7
	if [ "$rc" != 7 ]; then fail run_static_exit "exit $rc, want 7"; else pass run_static_exit; fi
	sp run -- "$PROG" kill 15
	if [ "$rc" != 143 ]; then fail run_static_killed "exit $rc, want 143"; else pass run_static_killed; fi
	# A signal sent to superpage run is the program's.
	local name=run_static_signal_passed
	if ! start_prog -- "$PROG" usr1; then
		fail $name "the program did not start: $(oneline "$tmp/p.err")"
		stop_hold
		return
	fi
	kill -USR1 "$hold_pid"
	for _ in $(seq 100); do kill -0 "$hold_pid" 2>/dev/null || break; sleep 0.05; done
	end_prog
	if [ "$rc" != 42 ]; then fail $name "exit $rc, want 42 (the program's SIGUSR1)"; else pass $name; fi
}

# --backing 2m cannot be had without the runtime: the watch, and the fall said in
# the same line. --backing 4k: the baseline, the program as it is.
test_backings() {
	sp run --backing 2m -- "$PROG" exit 5
	if [ "$rc" != 5 ] || [ "$(nlines "$tmp/err")" != 1 ] ||
		! grep -q "$WATCHING.*--backing 2m falls to THP (hugetlb pages need the runtime)" "$tmp/err"; then
		fail run_static_2m "exit $rc, stderr: $(oneline "$tmp/err")"
	else
		pass run_static_2m
	fi
	sp run --backing 4k -- "$PROG" exit 5
	if [ "$rc" != 5 ] || [ "$(cat "$tmp/err")" != "superpage: $PROG is statically linked: it runs without superpage" ]; then
		fail run_static_4k "exit $rc, stderr: $(oneline "$tmp/err")"
	else
		pass run_static_4k
	fi
	sp run --stacks --text -- "$PROG" exit 0
	if ! grep -q "$WATCHING.*; --text and --stacks do nothing for it$" "$tmp/err"; then
		fail run_static_runtime_options "stderr: $(oneline "$tmp/err")"
	else
		pass run_static_runtime_options
	fi
	expect_usage_error run_static_bad_budget run --budget 0 -- "$PROG" exit 0
}

# Each pass collapses at most the budget.
test_budget() {
	local name=run_static_budget pid
	if ! start_prog --budget 8M -- "$PROG" heap 128; then
		fail $name "the program did not start: $(oneline "$tmp/p.err")"
		stop_hold
		return
	fi
	pid=$(awk '/^ready/ { print $2 }' "$tmp/p.out")
	# Until a pass has collapsed something.
	for _ in $(seq 200); do
		"$SP" stat --json "$pid" >"$tmp/stat.json" 2>/dev/null
		"$PY" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["watch"]["collapsed_bytes"] == 0)' \
			"$tmp/stat.json" 2>/dev/null && break
		sleep 0.05
	done
	"$PY" - "$tmp/stat.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w = d["watch"]
assert w["budget_bytes"] == 8 << 20, w
if w["collapsed_bytes"] == 0 and d["huge_bytes"] > 64 << 20:
    sys.exit(3)  # huge without the watch
assert 0 < w["collapsed_bytes"] <= w["passes"] * (8 << 20), w
PY
	case $? in
	0) pass $name ;;
	3) skip $name "its memory was huge with nothing collapsed: THP was 'always' meanwhile (another user of this machine)" ;;
	*) fail $name "superpage stat --json: $(head -c 400 "$tmp/stat.json")" ;;
	esac
	end_prog
}

# A program whose loader is musl's: its loader would load the runtime (built against
# glibc) and fail; it is watched instead, its LD_PRELOAD left as it was.
test_musl() {
	local name=run_static_musl
	if ! command -v musl-gcc >/dev/null 2>&1; then
		skip $name "no musl-gcc (apt-get install musl-tools)"
		return
	fi
	if ! musl-gcc -O2 -o "$tmp/prog_musl" "$here/static/prog.c" 2>"$tmp/cc.err"; then
		skip $name "musl-gcc cannot build: $(oneline "$tmp/cc.err")"
		return
	fi
	sp run -- "$tmp/prog_musl" exit 3
	if [ "$rc" != 3 ] || [ "$(nlines "$tmp/err")" != 1 ] ||
		! grep -q "^superpage: $tmp/prog_musl is linked with another libc than glibc (its loader is .*): $WATCHING" "$tmp/err"; then
		fail $name "exit $rc, want 3: $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

precheck
test_musl
test_heap
test_child
test_status
test_backings
test_budget
