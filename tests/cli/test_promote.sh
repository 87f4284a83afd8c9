#!/usr/bin/env bash
# test_promote.sh - superpage promote on the real kernel: a running target's memory collapsed,
# and every refusal said: MADV_NOHUGEPAGE, THP disabled by prctl, a target that ends
# mid-way, a caller that is not root; --dry-run, --budget, --watch, bad arguments.
# Usage: tests/cli/test_promote.sh BUILD_DIR. Changes no sysfs value, but for THP
# "always", which it sets to madvise for its run and puts back.
set -u
B=${1:?usage: tests/cli/test_promote.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$B/superpage
TARGET=$B/tests/cli/promote_target
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

tpid='' tin='' tout='' nt=0
stop_target() {
	if [ -n "$tin" ]; then
		exec {tin}>&-
		tin=''
	fi
	if [ -n "$tpid" ]; then
		for _ in $(seq 100); do kill -0 "$tpid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$tpid" 2>/dev/null
		tpid=''
	fi
}
trap 'stop_target; restore; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# Starts the target (its stdin held open, as user 65534 if AS is set); tpid, tout.
# Returns 1 if it did not say ready.
start_target() { # args...
	nt=$((nt + 1))
	tout=$tmp/target.$nt.out
	: >"$tout"
	chmod 666 "$tout"
	# shellcheck disable=SC2086
	exec {tin}> >(exec ${AS:-} "$TARGET" "$@" >"$tout" 2>&1)
	tpid=$!
	for _ in $(seq 200); do
		grep -q '^ready' "$tout" && return 0
		kill -0 "$tpid" 2>/dev/null || break
		sleep 0.05
	done
	return 1
}

# kB of AnonHugePages of the target (all of it, or the mapping holding an address).
huge_kb() { awk '/^AnonHugePages:/ {print $2}' "/proc/$tpid/smaps_rollup"; }
huge_kb_at() { # hex address
	python3 - "$tpid" "$1" <<'PY'
import sys
pid, at = sys.argv[1], int(sys.argv[2], 16)
inside = False
for line in open("/proc/%s/smaps" % pid):
    f = line.split()
    if "-" in f[0] and len(f) >= 5 and ":" not in f[0]:
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        inside = lo <= at < hi
    elif inside and f[0] == "AnonHugePages:":
        print(f[1]); break
PY
}

# A value of the JSON in $tmp/out (a Python expression over d), one object per line: the last.
jq_() { python3 -c 'import json,sys; d=[json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]; print(eval(sys.argv[2]))' "$tmp/out" "$1"; }

precheck() {
	if [ ! -x "$TARGET" ]; then
		fail promote_built "$TARGET is missing: build with make B=$B tests"
		exit 1
	fi
	if ! command -v python3 >/dev/null; then
		skip promote "no python3 to read the JSON"
		exit 0
	fi
	if ! is_root; then
		skip promote "needs root (CAP_SYS_NICE) to collapse another process's memory"
		exit 0
	fi
	# The target's memory must start on base pages: under THP "always" it would be huge
	# from its first touch.
	if ! sysfs_thp_not_always; then
		skip promote "THP is 'always' and cannot be set to madvise: the target would start on huge pages"
		exit 0
	fi
	start_target 4 || { fail promote_target "the target did not start: $(oneline "$tout")"; exit 1; }
	sp promote --dry-run "$tpid"
	stop_target
	if grep -q 'this kernel' "$tmp/err"; then
		skip promote "$(cat "$tmp/err")"
		exit 0
	fi
}

test_help_and_args() {
	sp promote --help
	if [ "$rc" != 0 ] || ! grep -q '^usage: superpage promote' "$tmp/out"; then
		fail promote_help "exit $rc: $(oneline "$tmp/out")"
	else
		pass promote_help
	fi
	expect_usage_error promote_missing_pid promote
	expect_usage_error promote_bad_pid promote abc
	expect_usage_error promote_zero_pid promote 0
	expect_usage_error promote_bad_budget promote --budget 0 1
	expect_usage_error promote_bad_share promote --budget 120% 1
	expect_usage_error promote_bad_watch promote --watch -1 1
	expect_usage_error promote_bad_option promote --bogus 1
	expect_usage_error promote_watch_dry promote --watch 1 --dry-run 1
	local pid_max
	pid_max=$(cat /proc/sys/kernel/pid_max)
	expect_usage_error promote_no_such_pid promote "$pid_max"
	if [ "$rc" = 2 ] && ! grep -q "no process $pid_max" "$tmp/err"; then
		fail promote_no_such_pid_message "$(cat "$tmp/err")"
	fi
}

test_basic() {
	local before after
	start_target 64 || { fail promote_basic "target: $(oneline "$tout")"; return; }
	before=$(huge_kb)
	sp promote --json "$tpid"
	after=$(huge_kb)
	if [ "$rc" != 0 ]; then
		fail promote_basic "exit $rc: $(cat "$tmp/err")"
	elif [ "$after" -lt $((before + 48 * 1024)) ]; then
		fail promote_basic "AnonHugePages $before -> $after kB, want 48 MiB more"
	elif [ "$(jq_ 'd["collapsed"] > 0 and d["huge_bytes_after"] > d["huge_bytes_before"]')" != True ]; then
		fail promote_basic "the JSON does not say it: $(head -c 300 "$tmp/out")"
	elif [ "$(jq_ 'd["regions"]["anon"]["huge_bytes_after"] >= 48 << 20')" != True ]; then
		fail promote_basic "regions.anon.huge_bytes_after too small: $(jq_ 'd["regions"]["anon"]')"
	else
		pass promote_basic "AnonHugePages $before -> $after kB"
	fi
	stop_target
	if ! grep -q '^intact' "$tout"; then
		fail promote_keeps_data "the target says: $(oneline "$tout")"
	else
		pass promote_keeps_data
	fi
}

test_nohugepage() {
	local nh
	start_target 64 nohuge 8 || { fail promote_nohugepage "target: $(oneline "$tout")"; return; }
	nh=$(awk '/^ready/ {print $4}' "$tout")
	sp promote --json "$tpid"
	if [ "$rc" != 0 ]; then
		fail promote_nohugepage "exit $rc: $(cat "$tmp/err")"
	elif [ "$(jq_ "any(k['why'] == 'nohugepage' and int(k['start'], 16) == $nh for k in d['skipped'])")" != True ]; then
		fail promote_nohugepage "no nohugepage skip at $nh: $(jq_ 'd["skipped"]')"
	elif [ "$(huge_kb_at "$nh")" != 0 ]; then
		fail promote_nohugepage "the MADV_NOHUGEPAGE range has $(huge_kb_at "$nh") kB huge"
	elif [ "$(huge_kb)" -lt $((40 * 1024)) ]; then
		fail promote_nohugepage "the rest was not collapsed: $(huge_kb) kB"
	else
		pass promote_nohugepage
	fi
	stop_target
}

test_thp_off() {
	start_target 32 thp-off || { fail promote_thp_off "target: $(oneline "$tout")"; return; }
	sp promote --json "$tpid"
	if [ "$rc" != 1 ]; then
		fail promote_thp_off "exit $rc, want 1 (nothing could be promoted): $(cat "$tmp/err")"
	elif [ "$(jq_ 'd["not_collapsed"].get("thp_off", 0) >= 28 << 20 and d["collapsed"] == 0')" != True ]; then
		fail promote_thp_off "not said: $(jq_ 'd["not_collapsed"]')"
	elif [ "$(huge_kb)" != 0 ]; then
		fail promote_thp_off "AnonHugePages $(huge_kb) kB"
	else
		pass promote_thp_off
	fi
	stop_target
}

test_dry_run_and_budget() {
	start_target 64 || { fail promote_dry_run "target: $(oneline "$tout")"; return; }
	sp promote --dry-run --json "$tpid"
	if [ "$rc" != 0 ] || [ "$(huge_kb)" != 0 ] ||
		[ "$(jq_ 'd["tried"] >= 24 and d["collapsed"] == 0 and d["dry_run"]')" != True ]; then
		fail promote_dry_run "exit $rc, AnonHugePages $(huge_kb) kB: $(head -c 300 "$tmp/out")"
	else
		pass promote_dry_run
	fi
	sp promote --budget 8M --json "$tpid"
	if [ "$rc" != 0 ] || [ "$(huge_kb)" != 8192 ] ||
		[ "$(jq_ 'd["collapsed"] == 4 and d["not_collapsed"]["budget"] > 0')" != True ]; then
		fail promote_budget "exit $rc, AnonHugePages $(huge_kb) kB: $(head -c 300 "$tmp/out")"
	else
		pass promote_budget
	fi
	stop_target
}

# The target ends while it is being promoted: killed once its first range is huge.
test_exits_midway() {
	local spid n=0 gone
	start_target 512 || { fail promote_exits_midway "target: $(oneline "$tout")"; return; }
	"$SP" promote --json "$tpid" >"$tmp/out" 2>"$tmp/err" &
	spid=$!
	while [ "$n" -lt 2000 ] && [ "$(huge_kb 2>/dev/null || echo 0)" = 0 ]; do
		n=$((n + 1))
		sleep 0.005
	done
	kill -9 "$tpid"
	wait "$spid"
	rc=$?
	tpid=''
	stop_target
	gone=$(jq_ 'd["gone"] or d["not_collapsed"].get("gone", 0) > 0' 2>/dev/null)
	if [ "$gone" != True ] && [ "$rc" = 0 ]; then
		skip promote_exits_midway "the promotion was over before the target ended"
	elif [ "$rc" != 0 ] || [ "$gone" != True ]; then
		fail promote_exits_midway "exit $rc, gone $gone: $(cat "$tmp/err") $(head -c 300 "$tmp/out")"
	else
		pass promote_exits_midway "$(jq_ '"%d of %d ranges collapsed" % (d["collapsed"], d["candidates"])')"
	fi
}

test_not_root() {
	local as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	if ! command -v setpriv >/dev/null; then
		skip promote_not_root "no setpriv to drop root"
		return
	fi
	if ! "${as[@]}" test -x "$SP" || ! "${as[@]}" test -x "$TARGET"; then
		skip promote_not_root "user 65534 cannot run $SP"
		return
	fi
	# another user's process: its memory map is not ours to read
	start_target 16 || { fail promote_not_root "target: $(oneline "$tout")"; return; }
	"${as[@]}" "$SP" promote "$tpid" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 1 ] || [ "$(nlines "$tmp/err")" != 1 ] || ! grep -q 'not as us: .*CAP_SYS_PTRACE' "$tmp/err"; then
		fail promote_not_root "exit $rc: $(cat "$tmp/err")"
	else
		pass promote_not_root "$(cat "$tmp/err")"
	fi
	stop_target
	# its own process: readable, but process_madvise needs CAP_SYS_NICE
	AS="${as[*]}" start_target 16 || { fail promote_no_cap "target: $(oneline "$tout")"; return; }
	"${as[@]}" "$SP" promote --json "$tpid" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 1 ] || [ "$(nlines "$tmp/err")" != 1 ] || ! grep -q 'CAP_SYS_NICE' "$tmp/err" ||
		[ "$(jq_ 'd["error"]')" != permission ] || [ "$(huge_kb)" != 0 ]; then
		fail promote_no_cap "exit $rc: $(cat "$tmp/err")"
	else
		pass promote_no_cap
	fi
	stop_target
}

# --watch: what falls back to small pages (MADV_DONTNEED, touched again) is collapsed
# again; the watch ends with the target; Ctrl-C ends it too.
test_watch() {
	local spid full n
	start_target 64 || { fail promote_watch "target: $(oneline "$tout")"; return; }
	"$SP" promote --watch 0.2 --json "$tpid" >"$tmp/out" 2>"$tmp/err" &
	spid=$!
	for _ in $(seq 100); do [ "$(huge_kb)" -gt 0 ] && break; sleep 0.05; done
	sleep 0.3
	full=$(huge_kb)
	kill -USR1 "$tpid"
	for _ in $(seq 100); do grep -q '^dropped' "$tout" && break; sleep 0.05; done
	n=0
	for _ in $(seq 100); do
		n=$(grep -c '"round"' "$tmp/out")
		[ "$(huge_kb)" -ge "$full" ] && [ "$n" -ge 2 ] && break
		sleep 0.05
	done
	stop_target
	for _ in $(seq 100); do kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
	if kill -0 "$spid" 2>/dev/null; then
		kill "$spid"
		fail promote_watch "the watch did not end with its process"
	fi
	wait "$spid"
	rc=$?
	if [ "$rc" != 0 ] || [ "$n" -lt 2 ] ||
		[ "$(python3 -c 'import json,sys; print(sum(json.loads(l)["collapsed"] for l in open(sys.argv[1]) if l.strip() and json.loads(l)["round"] > 1))' "$tmp/out")" -lt 2 ]; then
		fail promote_watch "exit $rc, $n rounds, huge $full kB before the drop: $(cat "$tmp/err") $(tail -c 300 "$tmp/out")"
	else
		pass promote_watch "$n rounds"
	fi
	start_target 8 || return
	"$SP" promote --watch 30 "$tpid" >"$tmp/out" 2>"$tmp/err" &
	spid=$!
	# after the first round (a SIGINT during it would leave nothing promoted: exit 1)
	for _ in $(seq 200); do [ -s "$tmp/out" ] && break; sleep 0.05; done
	sleep 0.2
	kill -INT "$spid"
	for _ in $(seq 60); do kill -0 "$spid" 2>/dev/null || break; sleep 0.05; done
	if kill -0 "$spid" 2>/dev/null; then
		kill "$spid"
		fail promote_watch_interrupt "SIGINT did not end the watch"
	else
		wait "$spid"
		rc=$?
		if [ "$rc" != 0 ]; then fail promote_watch_interrupt "exit $rc"; else pass promote_watch_interrupt; fi
	fi
	stop_target
}

precheck
test_help_and_args
test_basic
test_nohugepage
test_thp_off
test_dry_run_and_budget
test_exits_midway
test_not_root
test_watch
exit $failed
