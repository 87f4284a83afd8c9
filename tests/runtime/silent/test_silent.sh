#!/usr/bin/env bash
# test_silent.sh - what superpage run says that used to go unsaid: the account of a
# program that leaves by exit_group (tests/runtime/silent/leaves.c) or is killed,
# written by the command from what the program last published; an account the
# runtime could not write (/dev/full), a --stats file of the kernel's (/proc), said
# once; --text that will move nothing, said once without -v; a malloc named in
# LD_PRELOAD that superpage's displaces, named once, and kept with --keep-malloc
# (mallocfrom.c); a signal sent to superpage run reaches the program it watches.
# Usage: tests/runtime/silent/test_silent.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS
# name", "FAIL name: why" or "SKIP name: why" per test.
set -u
B=${1:?usage: tests/runtime/silent/test_silent.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start silent silent/leaves silent/mallocfrom

# Lines of the --stats file and of superpage's stderr that match a pattern.
count() { grep -c -- "$2" "$1" 2>/dev/null || true; }

# The left account in the --stats file: sets why unless exactly one line is the
# program's (its pid), with left=$1 and the mallocs it made.
left_json() { # left
	why=$("$PY" - "$tmp/stats.json" "$1" 2>&1 <<'PY'
import json, sys
path, left = sys.argv[1], sys.argv[2]
try:
    lines = [json.loads(l) for l in open(path) if l.strip()]
except (OSError, ValueError) as e:
    print("cannot read the --stats file: %s" % e)
    sys.exit()
mine = [d for d in lines if d.get("comm") == "leaves"]
if len(mine) != 1:
    print("%d lines for leaves in the --stats file, want 1: %r" % (len(mine), lines))
elif mine[0].get("left") != left:
    print("left=%r, want %r: %r" % (mine[0].get("left"), left, mine[0]))
elif mine[0].get("heap", {}).get("mallocs", 0) < 2000:
    print("the account holds %r mallocs, want >= 2000" % mine[0].get("heap"))
PY
)
	[ -z "$why" ]
}

test_exit_group() {
	local name=silent_exit_group
	need_run $name || return
	have_python || { skip $name "no python3 to read JSON"; return; }
	sprun_stats -- "$P/leaves" exit_group
	if [ "$src" != 3 ]; then
		fail $name "exited $src, want 3: $(oneline "$tmp/sp.err")"
	elif ! left_json exit_group; then
		fail $name "$why"
	else
		pass $name "the account written by superpage run, from the page it shares"
	fi
	name=silent_exit_group_stderr
	sprun --stats -- "$P/leaves" exit_group
	if [ "$src" != 3 ]; then
		fail $name "exited $src, want 3"
	elif [ "$(count "$tmp/sp.err" '(leaves): left by exit_group (status 3) without writing its account')" != 1 ]; then
		fail $name "no one line for it on stderr: $(oneline "$tmp/sp.err")"
	else
		pass $name
	fi
	name=silent_killed
	sprun_stats -- "$P/leaves" kill
	if [ "$src" != 137 ]; then
		fail $name "exited $src, want 137 (SIGKILL)"
	elif ! left_json signal; then
		fail $name "$why"
	else
		pass $name
	fi
	# The usual exit: the runtime's own account, and nothing more.
	name=silent_exit_one_account
	sprun_stats -- "$P/leaves" exit
	if [ "$src" != 3 ]; then
		fail $name "exited $src, want 3"
	elif [ "$(count "$tmp/stats.json" '"comm":"leaves"')" != 1 ] ||
		[ "$(count "$tmp/stats.json" '"left"')" != 0 ]; then
		fail $name "want the runtime's one line: $(head -c 300 "$tmp/stats.json")"
	else
		pass $name
	fi
}

test_stats_targets() {
	local name=silent_stats_proc
	need_run $name || return
	sprun --stats=/proc/version -- "$P/leaves" exit
	if [ "$src" != 2 ]; then
		fail $name "exited $src, want 2 (a bad option): $(oneline "$tmp/sp.err")"
	elif [ "$(count "$tmp/sp.err" 'cannot write the account to /proc/version')" != 1 ]; then
		fail $name "not said in one line: $(oneline "$tmp/sp.err")"
	else
		pass $name
	fi
	name=silent_stats_full
	if [ ! -w /dev/full ]; then
		skip $name "no /dev/full"
		return
	fi
	sprun --stats=/dev/full -- "$P/leaves" exit
	if [ "$src" != 3 ]; then
		fail $name "exited $src, want 3"
	elif [ "$(count "$tmp/sp.err" 'cannot write the account of pid [0-9]* (leaves) to /dev/full: No space left on device')" != 1 ]; then
		fail $name "not said in one line: $(oneline "$tmp/sp.err")"
	else
		pass $name
	fi
}

test_text_nothing() {
	local name=silent_text_nothing
	need_run $name || return
	sprun --text -- "$P/leaves" exit
	if [ "$src" != 3 ] || ! cmp -s <(echo leaving) "$tmp/sp.out"; then
		fail $name "exited $src: $(oneline "$tmp/sp.out")"
	elif [ "$(count "$tmp/sp.err" '^superpage: --text will move nothing')" != 1 ] ||
		[ "$(nlines "$tmp/sp.err")" != 1 ]; then
		fail $name "want one line: $(oneline "$tmp/sp.err")"
	else
		pass $name "$(cut -c 1-100 "$tmp/sp.err")"
	fi
	# A program whose text moves: nothing said.
	name=silent_text_moved
	if [ ! -x "$B/tests/runtime/text/textuse" ]; then
		skip $name "no $B/tests/runtime/text/textuse"
		return
	fi
	sprun --text -- "$B/tests/runtime/text/textuse"
	if [ "$src" != 0 ]; then
		fail $name "exited $src: $(oneline "$tmp/sp.err")"
	elif [ "$(count "$tmp/sp.err" 'move nothing')" != 0 ]; then
		fail $name "said it moved nothing: $(oneline "$tmp/sp.err")"
	else
		pass $name
	fi
}

test_preload_malloc() {
	local name=silent_preload_malloc lib=libjemalloc.so.2
	need_run $name || return
	if [ -z "$(ls /lib/*/$lib /usr/lib/*/$lib 2>/dev/null)" ]; then
		skip $name "no $lib here (apt-get install libjemalloc2)"
		return
	fi
	LD_PRELOAD=$lib sprun -- "$P/mallocfrom"
	if [ "$src" != 0 ] || ! grep -q "libsuperpage-run.so" "$tmp/sp.out"; then
		fail $name "exited $src: $(oneline "$tmp/sp.out")"
	elif [ "$(count "$tmp/sp.err" "LD_PRELOAD names $lib, a malloc")" != 1 ] ||
		[ "$(nlines "$tmp/sp.err")" != 1 ]; then
		fail $name "not named in one line: $(oneline "$tmp/sp.err")"
	else
		pass $name
	fi
	name=silent_keep_malloc
	LD_PRELOAD=$lib sprun --keep-malloc -- "$P/mallocfrom"
	if [ "$src" != 0 ] || ! grep -q "$lib" "$tmp/sp.out"; then
		fail $name "exited $src; want $lib's malloc: $(oneline "$tmp/sp.out")"
	elif [ -s "$tmp/sp.err" ]; then
		fail $name "said: $(oneline "$tmp/sp.err")"
	else
		pass $name "$(cat "$tmp/sp.out")"
	fi
}

# Watched (--stats), the program runs in a child: a signal sent to superpage
# run is passed on, and its status is the program's.
test_signal_passed() {
	local name=silent_signal_passed pid rc
	need_run $name || return
	: >"$tmp/out" # (not a line an earlier test left, read before the job's redirection)
	"$SP" run --stats="$tmp/stats.json" -- "$P/leaves" wait >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for _ in $(seq 100); do grep -q leaving "$tmp/out" 2>/dev/null && break; sleep 0.05; done
	kill -USR1 $pid
	wait $pid
	rc=$?
	if [ "$rc" != 7 ]; then
		fail $name "exited $rc, want 7 (the program's, on SIGUSR1): $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

run_some "$@"
test_exit_group
test_stats_targets
test_text_nothing
test_preload_malloc
test_signal_passed
exit $failed
