#!/usr/bin/env bash
# test_run_falls.sh - under an explicit --backing 2m, a block the pool cannot hold whole
# is said once without -v, after the program, with what the pool had: by the program
# at its exit (in order with its output), by a watcher superpage run leaves behind
# after a program killed or gone by _exit; nothing when the pool holds it; the
# program keeps superpage run's pid and its exit status. The 2M pool is set to hold
# few free pages and put back (tests/run.sh holds /tmp/sp-pool.lock).
# Usage: tests/cli/test_run_falls.sh BUILD_DIR. Prints "PASS name", "FAIL name: why"
# or "SKIP name: why" per test.
set -u
B=${1:?usage: tests/cli/test_run_falls.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
FB=$(cd "$B" 2>/dev/null && pwd)/tests/cli/fall_block
# shellcheck source=tests/cli/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
tmp_with_pool
unset LD_PRELOAD "${!SUPERPAGE_@}"

LINE='^superpage: 2m: 128 MiB wanted 64 pages of 2 MiB and the pool had [0-9]+ free: [0-9]+ on hugetlb pages, the other [0-9]+ on (thp|4k)'

blocker=$(preload_blocker "$B" "$B/libsuperpage-run.so")
if [ -n "$blocker" ]; then
	skip run_falls "$blocker"
	exit 0
fi
if [ ! -x "$FB" ]; then
	fail run_falls_built "$FB is missing (make tests builds it)"
	exit 1
fi

# Runs fall_block in the background as the shell would, the caller's pid kept: leaves
# rc, bgpid (the pid the caller saw), $tmp/out and $tmp/err (stderr as it was when the
# caller saw the program end).
bg_run() { # args for fall_block...
	"$SP" run --backing 2m -- "$FB" "$@" >"$tmp/out" 2>"$tmp/err" &
	bgpid=$!
	# (the guard ends its sleep when it is killed: a sleep left behind would hold the
	# pool lock's descriptor for LIMIT seconds after the test)
	(
		sleep "$LIMIT" &
		s=$!
		trap 'kill $s; exit 0' TERM
		wait $s && kill -9 "$bgpid"
	) 2>/dev/null &
	local guard=$!
	wait "$bgpid"
	rc=$?
	# (What the caller writes once it has seen the program end comes after.)
	echo "caller: seen the end" >>"$tmp/err"
	kill "$guard" 2>/dev/null
	wait "$guard" 2>/dev/null
}

# Runs it with stderr into a pipe that cat drains to $tmp/err: the pipeline ends only
# when every writer has closed it, the watcher too (it must end after the program).
piped_run() { # superpage run options... -- fall_block args...
	{ timeout -k 5 "$LIMIT" "$SP" run "$@" >"$tmp/out"; echo $? >"$tmp/rc"; } 2>&1 | cat >"$tmp/err"
	rc=$(cat "$tmp/rc")
}

# A 128 MiB block, 32 free pages: one line, said by the program as it exits (in
# stderr before what the caller writes once it sees the end), its pid and exit status
# as plain.
test_said_at_exit() {
	local name=run_falls_said_at_exit pid n
	if ! pool_2m 32; then
		skip $name "$why"
		return
	fi
	bg_run 128 exit 3
	restore
	pid=$(sed -n 's/^pid //p' "$tmp/out")
	n=$(grep -cE "$LINE" "$tmp/err")
	if [ "$rc" != 3 ]; then
		fail $name "exit status $rc, want the program's 3: $(oneline "$tmp/err")"
	elif [ "$pid" != "$bgpid" ]; then
		fail $name "the program ran as pid ${pid:-none}, the caller started $bgpid"
	elif [ "$n" != 1 ]; then
		fail $name "said the split $n times, want once: $(oneline "$tmp/err")"
	elif ! head -n 1 "$tmp/err" | grep -qE "$LINE" || [ "$(nlines "$tmp/err")" != 2 ]; then
		fail $name "not the line, then the caller's, on stderr: $(oneline "$tmp/err")"
	else
		pass $name "$(head -c 120 "$tmp/err")..."
	fi
}

# Killed (SIGKILL) or gone by _exit, the program says nothing: the watcher does,
# once, and ends (the pipe it holds closes); the status is the program's.
test_said_after() {
	local name how want
	for how in kill _exit; do
		name=run_falls_said_after_$how
		if ! pool_2m 32; then
			skip $name "$why"
			continue
		fi
		if [ $how = kill ]; then
			piped_run --backing 2m -- "$FB" 128 kill
			want=137
		else
			piped_run --backing 2m -- "$FB" 128 _exit 4
			want=4
		fi
		restore
		n=$(grep -cE "$LINE" "$tmp/err")
		if [ "$rc" != "$want" ]; then
			fail $name "exit status $rc, want $want: $(oneline "$tmp/err")"
		elif [ "$n" != 1 ]; then
			fail $name "said the split $n times, want once: $(oneline "$tmp/err")"
		else
			pass $name
		fi
	done
}

# Room in the pool for the whole block: nothing said, and the program's status.
test_quiet_with_room() {
	local name=run_falls_quiet_with_room
	if ! pool_2m 80; then
		skip $name "$why"
		return
	fi
	piped_run --backing 2m -- "$FB" 128 exit 0
	restore
	if [ "$rc" != 0 ]; then
		fail $name "exit status $rc: $(oneline "$tmp/err")"
	elif [ -s "$tmp/err" ]; then
		fail $name "said with room for the block: $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

# With -v the runtime says the split as it happens; the line after is not said too.
# With --stats, superpage run waits: said once, the account after it.
test_verbose_and_stats() {
	local name=run_falls_verbose n
	if ! pool_2m 32; then
		skip $name "$why"
		skip run_falls_stats "$why"
		return
	fi
	piped_run --backing 2m -v -- "$FB" 128 exit 0
	n=$(grep -cE "$LINE \(said once\)$" "$tmp/err")
	if [ "$rc" != 0 ] || [ "$n" != 1 ] || grep -q -- '-v says each' "$tmp/err"; then
		fail $name "exit $rc, said $n times: $(oneline "$tmp/err")"
	else
		pass $name
	fi
	name=run_falls_stats
	piped_run --backing 2m --stats -- "$FB" 128 kill
	restore
	n=$(grep -cE "$LINE" "$tmp/err")
	if [ "$rc" != 137 ] || [ "$n" != 1 ]; then
		fail $name "exit $rc, said $n times: $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

test_said_at_exit
test_said_after
test_quiet_with_room
test_verbose_and_stats
exit $failed
