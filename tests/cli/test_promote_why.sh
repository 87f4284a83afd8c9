#!/usr/bin/env bash
# test_promote_why.sh - superpage promote names the true cause when it cannot start on
# a process: a kernel thread or a zombie (no memory, though the process is there),
# another user's process, a process that is not dumpable, and a process the kernel
# protects from root itself (process 1 where a security policy guards it).
# Usage: tests/cli/test_promote_why.sh BUILD_DIR. Prints "PASS name", "FAIL name: why"
# or "SKIP name: why" per test. Nothing is collapsed: every run is refused, or a dry run.
set -u
B=${1:?usage: tests/cli/test_promote_why.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$(cd "$B" && pwd)/superpage
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

kids=()
stop_kids() {
	local p
	for p in "${kids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${kids[@]}"; do wait "$p" 2>/dev/null; done
	kids=()
}
trap 'stop_kids; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

if [ ! -x "$SP" ]; then
	fail promote_why_built "$SP is missing: build with make B=$B"
	exit 1
fi

# Field 9 of /proc/PID/stat (after the comm, which may hold spaces): the task's flags.
stat_flags() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $7}'; }
stat_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $1}'; }

# One line on stderr that matches a pattern, and the exit status wanted.
expect_line() { # name want-rc pattern what
	if [ "$rc" != "$2" ] || [ "$(nlines "$tmp/err")" != 1 ] || [ -s "$tmp/out" ]; then
		fail "$1" "$4: exit $rc (want $2): $(oneline "$tmp/out") $(oneline "$tmp/err")"
	elif ! grep -qE "$3" "$tmp/err"; then
		fail "$1" "$4 said: $(cat "$tmp/err")"
	else
		pass "$1" "$(cat "$tmp/err")"
	fi
}

# A kernel thread has no user memory: said so, not "no process" (exit 2, as for a
# process that is not there).
test_kernel_thread() {
	local pid='' p
	for p in 2 $(ls /proc | grep -E '^[0-9]+$' | sort -n | head -200); do
		[ -n "$(stat_flags "$p")" ] && [ $(($(stat_flags "$p") & 0x200000)) != 0 ] && { pid=$p; break; }
	done
	if [ -z "$pid" ]; then
		skip promote_kernel_thread "no kernel thread in /proc (a PID namespace?)"
		return
	fi
	sp promote "$pid"
	expect_line promote_kernel_thread 2 "^superpage: promote: process $pid \(.*\) is a kernel thread: it has no user memory to promote$" \
		"promote $pid ($(cat "/proc/$pid/comm" 2>/dev/null))"
}

# A zombie has no memory either: said so.
test_zombie() {
	local pid='' parent
	python3 -c 'import os, time
p = os.fork()
if p == 0:
    os._exit(0)
print(p, flush=True)
time.sleep(60)' >"$tmp/zombie" &
	parent=$!
	kids+=("$parent")
	for _ in $(seq 100); do
		pid=$(cat "$tmp/zombie")
		[ -n "$pid" ] && [ "$(stat_state "$pid")" = Z ] && break
		sleep 0.05
	done
	if [ -z "$pid" ] || [ "$(stat_state "$pid")" != Z ]; then
		fail promote_zombie "no zombie came of python3: '$pid' in state $(stat_state "$pid")"
		return
	fi
	sp promote "$pid"
	expect_line promote_zombie 2 "^superpage: promote: process $pid \(.*\) has exited \(a zombie its parent has not reaped\)" \
		"promote $pid (a zombie)"
	stop_kids
}

# As user 65534: another user's process names its owner; our own process that is not
# dumpable says so; both need CAP_SYS_PTRACE, which the line says.
test_not_ours() {
	local why pid
	if ! is_root; then
		skip promote_other_user "needs root to run as user 65534"
		skip promote_not_dumpable "needs root to run as user 65534"
		return
	fi
	why=$(nobody_blocker)
	if [ -n "$why" ]; then
		skip promote_other_user "$why"
		skip promote_not_dumpable "$why"
		return
	fi
	sleep 60 &
	pid=$!
	kids+=("$pid")
	"${as_nobody[@]}" "$SP" promote "$pid" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	expect_line promote_other_user 1 "^superpage: promote: process $pid runs as uid 0 gid 0, not as us: .*needs CAP_SYS_PTRACE" \
		"promote of root's process as user 65534"
	stop_kids
	"${as_nobody[@]}" "$PY" -c 'import ctypes, time
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
print("ready", flush=True)
time.sleep(60)' >"$tmp/nd" &
	pid=$!
	kids+=("$pid")
	for _ in $(seq 100); do grep -q ready "$tmp/nd" && break; sleep 0.05; done
	"${as_nobody[@]}" "$SP" promote "$pid" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	expect_line promote_not_dumpable 1 "^superpage: promote: process $pid is not dumpable .*needs CAP_SYS_PTRACE$" \
		"promote of user 65534's non-dumpable process as user 65534"
	stop_kids
}

# Process 1 as root: where the kernel refuses even root (same owner, CAP_SYS_PTRACE),
# the line says a security policy protects it, not that root or the owner is needed.
# A dry run: where process 1 can be read, nothing of it is changed.
test_protected() {
	if ! is_root; then
		skip promote_protected "needs root (a refusal of root is the point)"
		return
	fi
	sp promote --dry-run 1
	if [ "$rc" = 0 ]; then
		skip promote_protected "process 1 can be read here: nothing protects it from root"
		return
	fi
	expect_line promote_protected 1 "^superpage: promote: process 1: the kernel refuses access to its memory though we own it and hold CAP_SYS_PTRACE: a security policy protects it" \
		"promote --dry-run 1 as root"
}

test_kernel_thread
test_zombie
test_not_ours
test_protected
exit $failed
