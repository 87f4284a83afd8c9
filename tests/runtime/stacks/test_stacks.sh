#!/usr/bin/env bash
# test_stacks.sh - tests superpage run --stacks: threads on stacks of the runtime's (2 MiB-
# aligned, a guard page below) give the program's output as without it; idle threads'
# stacks cost the pages they touch, a deep thread's are huge and show as region stack
# on huge pages in superpage stat; an overflow ends on the guard; stacks are reused;
# fork from a thread, and a stack of the program's own, work.
# Usage: tests/runtime/stacks/test_stacks.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Nothing on the machine is changed.
set -u
B=${1:?usage: tests/runtime/stacks/test_stacks.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
RT=$B/libsuperpage-run.so
PROG=$(cd "$B" 2>/dev/null && pwd)/tests/runtime/stacks/stackuse
THP=/sys/kernel/mm/transparent_hugepage/enabled
tmp=$(mktemp -d)
# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/../../lib.sh"
held=''
trap '[ -n "$held" ] && kill "$held" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# What the tests see must come from superpage run, not from whoever started them.
unset LD_PRELOAD "${!SUPERPAGE_@}"
export LC_ALL=C

why=$(preload_blocker "$B" "$RT")
if [ -n "$why" ]; then
	skip stacks "$why"
	exit 0
fi
if [ ! -x "$SP" ] || [ ! -f "$RT" ] || [ ! -x "$PROG" ]; then
	fail stacks_built "$SP, $RT or $PROG is missing: build with make B=$B tests"
	exit 1
fi

MB=1048576
THREADS=68 # stackuse deep/hold: 64 with the default size, 4 with sizes of their own

# A value from the first JSON line of a file: a dotted path such as stacks.maps.
json() { # file path
	if command -v jq >/dev/null; then
		head -n 1 "$1" | jq -r ".$2" 2>/dev/null
	elif command -v python3 >/dev/null; then
		python3 -c 'import json, sys
d = json.loads(open(sys.argv[1]).readline())
for k in sys.argv[2].split("."): d = d[k]
print(d)' "$1" "$2" 2>/dev/null
	else
		echo none
	fi
}
have_json() { command -v jq >/dev/null || command -v python3 >/dev/null; }
thp_mode() { sed -n 's/.*\[\(.*\)\].*/\1/p' "$THP" 2>/dev/null; }


# Sets why if run name did not end well or printed other than the plain run.
same_as_plain() { # name
	why=''
	if [ "$rc" = 124 ]; then
		why="timed out after ${LIMIT}s: $(oneline "$tmp/$1.err")"
	elif [ "$rc" != 0 ]; then
		why="exited $rc: $(oneline "$tmp/$1.out") $(oneline "$tmp/$1.err")"
	elif ! diff "$tmp/plain.out" "$tmp/$1.out" >/dev/null; then
		why="stdout differs from the plain run: $(diff "$tmp/plain.out" "$tmp/$1.out" | head -n 4 |
			tr '\n' ' ' | cut -c 1-300)"
	fi
	[ -z "$why" ]
}

mode=$(thp_mode)
if [ -z "$mode" ]; then
	thp_why="this kernel has no THP"
elif [ "$mode" = never ]; then
	thp_why="THP is never here"
else
	thp_why=''
fi

run plain "$PROG" deep
if [ "$rc" != 0 ]; then
	fail stacks_plain "$PROG deep exited $rc without superpage: $(oneline "$tmp/plain.out") $(oneline "$tmp/plain.err")"
	exit 1
fi

# ---------- (a) 68 threads recursing 1 MiB deep: the same output on our stacks ----------

test_same_output() {
	local got
	run deep "$SP" run --stacks --stats="$tmp/deep.json" -- "$PROG" deep
	if ! same_as_plain deep; then
		fail stacks_same_output "$why"
	elif [ -n "$thp_why" ] || ! have_json; then
		pass stacks_same_output "(${thp_why:-no jq or python3}: not checked that the stacks were ours)"
	elif got=$(json "$tmp/deep.json" stacks.threads) && [ "$got" != "$THREADS" ]; then
		fail stacks_same_output "$got threads on stacks of ours, want $THREADS: $(head -c 600 "$tmp/deep.json")"
	else
		pass stacks_same_output
	fi
}

# ---------- (b) while the threads are blocked, superpage stat shows their stacks ----------

# Runs stackuse hold (or bighold) under superpage run with options, and superpage
# stat --json on it once its threads are all waiting at their deepest frame:
# $tmp/name.stat. Its output is to be the plain run's ($tmp/plain.out, or bigplain.out).
stat_held() { # name hold|bighold superpage-run-options...
	local name=$1 mode=$2 pid='' fifo=$tmp/$1.fifo ref=$tmp/plain.out enough=$((128 * MB))
	shift 2
	if [ "$mode" = bighold ]; then
		ref=$tmp/bigplain.out
		enough=$((24 * MB))
	fi
	why=''
	mkfifo "$fifo" || { why="mkfifo failed"; return 1; }
	"$SP" run "$@" -- "$PROG" "$mode" <"$fifo" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	held=$!
	exec {hold_fd}>"$fifo"
	for _ in $(seq 300); do
		pid=$(awk '$1 == "ready" { print $2 }' "$tmp/$name.out")
		[ -n "$pid" ] || ! kill -0 "$held" 2>/dev/null && break
		sleep 0.1
	done
	if [ -n "$pid" ]; then
		# A thread that is on a CPU at that moment (just past the barrier, on its
		# way to sleep) shows no stack pointer: look again, up to 10 times, and
		# keep the look that found the most stack.
		local try best=-1 bytes
		for try in $(seq 10); do
			"$SP" stat --json "$pid" >"$tmp/$name.try" 2>"$tmp/$name.staterr" || {
				why="superpage stat --json $pid failed: $(oneline "$tmp/$name.staterr")"
				break
			}
			bytes=$(json "$tmp/$name.try" regions.stack.bytes)
			if [ "${bytes:-0}" -gt "$best" ]; then
				best=${bytes:-0}
				cp "$tmp/$name.try" "$tmp/$name.stat"
			fi
			[ "$best" -ge "$enough" ] && break
			sleep 0.2
		done
	else
		why="the program never said it was ready: $(oneline "$tmp/$name.out") $(oneline "$tmp/$name.err")"
	fi
	exec {hold_fd}>&-
	wait "$held"
	rc=$?
	held=''
	if [ -z "$why" ] && [ "$rc" != 0 ]; then
		why="exited $rc: $(oneline "$tmp/$name.out") $(oneline "$tmp/$name.err")"
	fi
	if [ -z "$why" ] && ! diff <(grep -v '^ready' "$tmp/$name.out") "$ref" >/dev/null; then
		why="stdout differs from the plain deep run: $(diff <(grep -v '^ready' "$tmp/$name.out") "$ref" | head -n 4 | tr '\n' ' ')"
	fi
	[ -z "$why" ]
}

# 4 threads 6.3 MiB deep in stacks of 8 MiB: the two units below the top one that each
# has gone through (and the deepest, partly used) are huge; the top units are not
# looked at while the threads are there (no thread is started or joined).
test_stat_huge() {
	local huge bytes want=$((4 * 2 * 2 * MB))
	if [ -n "$thp_why" ]; then
		skip stacks_stat_huge "$thp_why"
		return
	elif ! have_json; then
		skip stacks_stat_huge "no jq or python3 to read JSON"
		return
	fi
	run bigplain "$PROG" bigdeep
	if [ "$rc" != 0 ]; then
		fail stacks_stat_huge "$PROG bigdeep exited $rc without superpage: $(oneline "$tmp/bigplain.out") $(oneline "$tmp/bigplain.err")"
		return
	fi
	if ! stat_held held bighold --stacks; then
		fail stacks_stat_huge "$why"
		return
	fi
	huge=$(json "$tmp/held.stat" regions.stack.huge_bytes)
	bytes=$(json "$tmp/held.stat" regions.stack.bytes)
	if [ -z "$huge" ] || [ "$huge" -lt "$want" ]; then
		fail stacks_stat_huge "region stack has ${huge:-no} huge bytes, want at least $want (4 threads x 2 units of 2 MiB): $(head -c 400 "$tmp/held.stat")"
	else
		pass stacks_stat_huge "(stack $((bytes / MB)) MiB resident, $((huge / MB)) MiB huge)"
	fi
}

# ---------- (b2) idle threads cost what they touch; a deep one is huge ----------

# 36 threads that touch 16 KiB of their stacks and wait: their stacks (smaps of the
# mappings each thread's stack lies in) have no huge page and at most 64 KiB resident
# each (the 16 KiB, glibc's descriptor and TLS, the first frames), after one more
# thread was started and joined (where the runtime looks at stacks); the process has
# at most that much more resident than without --stacks.
test_idle() {
	local n=36 each=$((64 * 1024)) line stk huge proc plain_proc threads
	if [ -n "$thp_why" ]; then
		skip stacks_idle "$thp_why"
		return
	fi
	run idle_plain "$SP" run -- "$PROG" idle $n
	plain_proc=$(sed -n 's/^idle: .* process \([0-9]*\) KiB resident$/\1/p' "$tmp/idle_plain.out")
	run idle "$SP" run --stacks --stats="$tmp/idle.json" -- "$PROG" idle $n
	line=$(grep '^idle: ' "$tmp/idle.out")
	read -r stk huge proc < <(sed -n 's/^idle: .*; stacks \([0-9]*\) KiB resident, \([0-9]*\) KiB huge; process \([0-9]*\) KiB resident$/\1 \2 \3/p' "$tmp/idle.out")
	why=''
	if [ "$rc" != 0 ] || [ -z "$proc" ] || [ -z "$plain_proc" ]; then
		why="exited $rc: $(oneline "$tmp/idle.out") $(oneline "$tmp/idle.err") / $(oneline "$tmp/idle_plain.out")"
	elif [ "$huge" != 0 ]; then
		why="$huge KiB of idle threads' stacks huge, want none: $line"
	elif [ "$stk" -gt $((n * each / 1024)) ]; then
		why="$stk KiB of idle threads' stacks resident, want at most $((n * each / 1024)) ($n x 64 KiB): $line"
	elif [ $((proc - plain_proc)) -gt $((n * each / 1024)) ]; then
		why="the process has $proc KiB resident, $plain_proc KiB without --stacks: more than $n x 64 KiB apart"
	elif have_json && threads=$(json "$tmp/idle.json" stacks.threads) && [ "$threads" != $((n + 1)) ]; then
		why="$threads threads on stacks of ours, want $((n + 1)): $(head -c 600 "$tmp/idle.json")"
	fi
	if [ -z "$why" ]; then
		pass stacks_idle "(stacks $stk KiB resident, 0 huge; process $proc KiB, $plain_proc KiB without --stacks)"
	else
		fail stacks_idle "$why"
	fi
}

# A thread 6.3 MiB deep in an 8 MiB stack: the units below the top are huge as it
# reaches them (at least 4 MiB of them before any look), and when one more thread is
# started, the top unit is looked at, found dense (at least 3/4 of its pages) and
# collapsed (-vv says which; a collapse the kernel refuses for want of a free huge
# page is said so, and not counted against the rule). Joined, its stack is kept with
# no more than its top unit resident.
test_sweep() {
	local before after said pages joined
	if [ -n "$thp_why" ]; then
		skip stacks_sweep "$thp_why"
		return
	fi
	run sweep "$SP" run --stacks -vv -- "$PROG" sweep
	before=$(sed -n 's/^sweep: [0-9]* KiB of frames, stack [0-9]* KiB resident, \([0-9]*\) KiB huge$/\1/p' "$tmp/sweep.out")
	after=$(sed -n 's/^sweep: after one more thread, stack [0-9]* KiB resident, \([0-9]*\) KiB huge;.*/\1/p' "$tmp/sweep.out")
	said=$(grep -c 'top unit of a thread.s stack at .* pages resident: \(collapsed\|the collapse was refused\)' "$tmp/sweep.err")
	pages=$(sed -n 's/.*top unit of a thread.s stack at .* has \([0-9]*\) of 512 pages resident.*/\1/p' "$tmp/sweep.err" | head -n 1)
	joined=$(sed -n 's/^sweep: joined, its stack \([0-9]*\) KiB resident$/\1/p' "$tmp/sweep.out")
	why=''
	if [ "$rc" != 0 ] || [ -z "$after" ] || ! grep -q '^sweep: the sum as without recursion$' "$tmp/sweep.out"; then
		why="exited $rc: $(oneline "$tmp/sweep.out") $(oneline "$tmp/sweep.err")"
	elif [ "$before" -lt 4096 ]; then
		why="$before KiB of the deep thread's stack huge, want at least 4096: $(oneline "$tmp/sweep.out" 3)"
	elif [ "$said" != 1 ] || [ "${pages:-0}" -lt 384 ]; then
		why="the deep thread's top unit was not found dense once ($said times, ${pages:-no} pages): $(grep -- '--stacks' "$tmp/sweep.err" | head -n 3 | tr '\n' ' ')"
	elif [ "$after" -lt "$before" ]; then
		why="$after KiB huge after the look, $before before"
	elif [ "${joined:-99999}" -gt 2048 ]; then
		why="the deep thread's stack, joined and kept, has ${joined:-?} KiB resident, want at most its top 2048"
	fi
	if [ -z "$why" ]; then
		pass stacks_sweep "($before KiB huge, $after KiB after the look at $pages resident pages of the top unit; $joined KiB once joined)"
	else
		fail stacks_sweep "$why"
	fi
}

# Without --stacks the threads' stacks are glibc's: region stack all the same (the
# classification is superpage stat's, for any process), and none of it huge.
test_stat_off() {
	local huge bytes want=$((64 * MB))
	if ! have_json; then
		skip stacks_stat_off "no jq or python3 to read JSON"
		return
	fi
	if ! stat_held off hold; then
		fail stacks_stat_off "$why"
		return
	fi
	huge=$(json "$tmp/off.stat" regions.stack.huge_bytes)
	bytes=$(json "$tmp/off.stat" regions.stack.bytes)
	if [ -z "$bytes" ] || [ "$bytes" -lt "$want" ]; then
		fail stacks_stat_off "region stack has ${bytes:-no} bytes, want at least $want (64 threads 1 MiB deep): $(head -c 400 "$tmp/off.stat")"
	elif [ "$huge" != 0 ] && [ "$mode" != always ]; then
		fail stacks_stat_off "region stack has $huge huge bytes without --stacks, want 0"
	else
		pass stacks_stat_off "(stack $((bytes / MB)) MiB resident, $((huge / MB)) MiB huge)"
	fi
}

# ---------- (c) an overflow ends on the guard page ----------

test_guard() {
	if [ -n "$thp_why" ]; then
		skip stacks_guard "$thp_why"
		return
	fi
	# The canary goes right below the guard page, where another mapping may lie in
	# this run's layout: then run again (the layout changes from run to run).
	for _ in 1 2 3 4 5; do
		run guard "$SP" run --stacks -- "$PROG" guard
		grep -q '^guard: canary not placed' "$tmp/guard.out" || break
	done
	why=''
	if [ "$rc" != 0 ]; then
		why="exited $rc: $(oneline "$tmp/guard.out") $(oneline "$tmp/guard.err")"
	elif ! grep -q '^guard: the child died of signal 11$' "$tmp/guard.out"; then
		why="the overflowing child did not die of SIGSEGV: $(oneline "$tmp/guard.out" 4)"
	elif ! grep -q '^guard: a PROT_NONE page right below the stack$' "$tmp/guard.out"; then
		why="no guard page below the stack: $(oneline "$tmp/guard.out" 4)"
	elif ! grep -q '^guard: canary intact, 0 bytes changed$' "$tmp/guard.out"; then
		why="the memory below the guard: $(oneline "$tmp/guard.out" 4)"
	elif ! grep -q '^guard: stack 2m-aligned' "$tmp/guard.out"; then
		why="the thread was not on a stack of ours: $(oneline "$tmp/guard.out" 4)"
	fi
	if [ -z "$why" ]; then pass stacks_guard; else fail stacks_guard "$why"; fi
}

# ---------- (d) stacks are reused: joined, created detached, detached later ----------

test_reuse() {
	local more maps reused threads
	if [ -n "$thp_why" ]; then
		skip stacks_reuse "$thp_why"
		return
	elif ! have_json; then
		skip stacks_reuse "no jq or python3 to read JSON"
		return
	fi
	run reuse "$SP" run --stacks --stats="$tmp/reuse.json" -- "$PROG" reuse
	more=$(sed -n 's/^reuse: 400 threads ran; \(-*[0-9]*\) more mappings after them$/\1/p' "$tmp/reuse.out")
	threads=$(json "$tmp/reuse.json" stacks.threads)
	maps=$(json "$tmp/reuse.json" stacks.maps)
	reused=$(json "$tmp/reuse.json" stacks.reused)
	why=''
	if [ "$rc" != 0 ] || [ -z "$more" ]; then
		why="exited $rc: $(oneline "$tmp/reuse.out") $(oneline "$tmp/reuse.err")"
	elif [ "$threads" != 401 ]; then
		why="$threads threads on stacks of ours, want 401: $(head -c 600 "$tmp/reuse.json")"
	elif [ "$maps" -gt 16 ] || [ "$reused" -lt 385 ]; then
		why="$maps stacks mapped, $reused reused for 401 threads one at a time: $(head -c 600 "$tmp/reuse.json")"
	elif [ "$more" -gt 32 ]; then
		why="the process has $more more mappings after 400 threads"
	fi
	if [ -z "$why" ]; then
		pass stacks_reuse "($maps mapped, $reused reused, $more more mappings)"
	else
		fail stacks_reuse "$why"
	fi
}

# ---------- (e) fork from a thread on a huge stack ----------

test_fork() {
	run fork "$SP" run --stacks --stats="$tmp/fork.json" -- "$PROG" fork
	why=''
	if [ "$rc" != 0 ] || ! grep -q '^fork: the child exited 0$' "$tmp/fork.out"; then
		why="exited $rc: $(oneline "$tmp/fork.out") $(oneline "$tmp/fork.err")"
	elif [ -z "$thp_why" ] && have_json && [ "$(json "$tmp/fork.json" stacks.threads)" != 1 ]; then
		why="the forking thread was not on a stack of ours: $(head -c 600 "$tmp/fork.json")"
	fi
	if [ -z "$why" ]; then pass stacks_fork; else fail stacks_fork "$why"; fi
}

# ---------- (f) a stack of the program's own is left alone ----------

test_own() {
	run own "$SP" run --stacks --stats="$tmp/own.json" -- "$PROG" own
	why=''
	if [ "$rc" != 0 ] || ! grep -q '^own stack: kept$' "$tmp/own.out"; then
		why="exited $rc: $(oneline "$tmp/own.out") $(oneline "$tmp/own.err")"
	elif have_json && [ "$(json "$tmp/own.json" stacks.threads)" != 0 ]; then
		why="a thread with its own stack was counted on one of ours: $(head -c 600 "$tmp/own.json")"
	fi
	if [ -z "$why" ]; then pass stacks_own; else fail stacks_own "$why"; fi
}

# ---------- the attributes asked for are the thread's ----------

# Detach state, affinity (set, and inherited), signal mask, pthread_exit and
# cancellation: as without --stacks. The guard below each stack of ours is what was
# asked, and a page when 0 was asked (below glibc's stacks is what glibc's cache of
# stacks makes it: not compared).
test_attrs() {
	local got
	run attrs_plain "$PROG" attrs
	run attrs "$SP" run --stacks --stats="$tmp/attrs.json" -- "$PROG" attrs
	why=''
	if [ "$rc" != 0 ]; then
		why="exited $rc: $(oneline "$tmp/attrs.out") $(oneline "$tmp/attrs.err")"
	elif ! diff <(sed 's/, guard .*//' "$tmp/attrs_plain.out") <(sed 's/, guard .*//' "$tmp/attrs.out") >/dev/null; then
		why="stdout differs from the plain run: $(diff "$tmp/attrs_plain.out" "$tmp/attrs.out" |
			head -n 6 | tr '\n' ' ' | cut -c 1-400)"
	elif [ -n "$thp_why" ]; then
		:
	elif ! grep -q '^attrs sigmask+guard: .*, guard 64 KiB or more$' "$tmp/attrs.out" ||
		[ "$(grep -c ', guard a page or more$' "$tmp/attrs.out")" != 7 ]; then
		why="the guards below the stacks are not as asked: $(grep ', guard' "$tmp/attrs.out" | tr '\n' ' ' | cut -c 1-400)"
	elif have_json && got=$(json "$tmp/attrs.json" stacks.threads) && [ "$got" != 8 ]; then
		why="$got threads on stacks of ours, want 8: $(head -c 600 "$tmp/attrs.json")"
	fi
	if [ -z "$why" ]; then pass stacks_attrs; else fail stacks_attrs "$why"; fi
}

# ---------- THP off for the process: glibc's stacks, counted and said once ----------
# (--honour-thp-disable: by default the program's own PR_SET_THP_DISABLE leaves THP on
# for the runtime's memory, stacks included; test_interplay.sh tests that)

test_thp_off() {
	local falls said
	if ! have_json; then
		skip stacks_thp_off "no jq or python3 to read JSON"
		return
	fi
	run nothp "$SP" run --stacks --honour-thp-disable -v --stats="$tmp/nothp.json" -- "$PROG" nothp deep
	falls=$(json "$tmp/nothp.json" stacks.falls.thp_off)
	said=$(grep -c -- "--stacks: a thread's stack stays glibc's, on base pages: THP is never" "$tmp/nothp.err")
	if ! same_as_plain nothp; then
		fail stacks_thp_off "$why"
	elif [ "$(json "$tmp/nothp.json" stacks.threads)" != 0 ] || [ "$falls" != "$THREADS" ]; then
		fail stacks_thp_off "want 0 threads on our stacks and $THREADS thp_off falls: $(head -c 600 "$tmp/nothp.json")"
	elif [ "$said" != 1 ]; then
		fail stacks_thp_off "--verbose said the fall $said times, want once: $(oneline "$tmp/nothp.err")"
	else
		pass stacks_thp_off
	fi
}

# ---------- --backing 4k: nothing done ----------

test_4k() {
	if ! have_json; then
		skip stacks_4k "no jq or python3 to read JSON"
		return
	fi
	run b4k "$SP" run --backing 4k --stacks --stats="$tmp/b4k.json" -- "$PROG" deep
	if ! same_as_plain b4k; then
		fail stacks_4k "$why"
	elif [ "$(json "$tmp/b4k.json" stacks.threads)" != 0 ] ||
		[ "$(json "$tmp/b4k.json" stacks.falls)" != "{}" ]; then
		fail stacks_4k "--backing 4k put threads on stacks of ours or counted falls: $(head -c 600 "$tmp/b4k.json")"
	else
		pass stacks_4k
	fi
}

test_same_output
test_stat_huge
test_stat_off
test_idle
test_sweep
test_guard
test_reuse
test_fork
test_own
test_attrs
test_thp_off
test_4k
exit "$failed"
