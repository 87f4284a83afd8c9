#!/usr/bin/env bash
# test_pool_lock.sh - the scripts (test scripts too, run by hand) and `superpage bench
# --setup-pools` take the pool lock (/tmp/sp-pool.lock) unless a process above them
# holds it already, as `flock /tmp/sp-pool.lock make compat` does: then they go on,
# where they used to wait for themselves for ever. Another holder (not above them) is still waited for.
# Usage: tests/cli/test_pool_lock.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Uses a lock file of its own (SP_POOL_LOCK_FILE), never the
# machine's, and changes no pool.
set -u
B=${1:?usage: tests/cli/test_pool_lock.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SP=$B/superpage
tmp=$(mktemp -d)
holder=''
trap '[ -z "$holder" ] || kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
pass() { echo "PASS $1${2:+: $2}"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
oneline() { head -c 300 "$1" | tr '\n' ' '; }

if ! command -v flock >/dev/null; then
	skip pool_lock "no flock (util-linux)"
	exit 0
fi
if [ ! -r /proc/locks ]; then
	skip pool_lock "no /proc/locks"
	exit 0
fi
lock=$tmp/lock
: >"$lock"
look=". '$top/tests/pool_lock.sh'; pool_lock_held_above '$lock' && echo above || echo not"

# The shell's look: held by its parent, by a grandparent, by nobody, by a sibling.
got="$(flock "$lock" bash -c "$look") $(flock "$lock" bash -c "bash -c \"$look\"") $(bash -c "$look")"
flock "$lock" sleep 60 &
holder=$!
for _ in $(seq 100); do grep -q FLOCK /proc/locks && [ -n "$(awk -v p=$holder '$5 == p' /proc/locks)" ] && break; sleep 0.1; done
got="$got $(bash -c "$look")"
if [ "$got" = "above above not not" ]; then
	pass pool_lock_shell "parent, grandparent, nobody, sibling: $got"
else
	fail pool_lock_shell "parent, grandparent, nobody, sibling: $got (want above above not not)"
fi

# A test script run by hand (tests/lib.sh) holds the lock: beside the holder it waits
# and says so; run by tests/run.sh (SP_POOL_LOCKED=1), or under the holder's flock, it
# runs at once.
script=$tmp/test_by_hand.sh
printf '. %q\necho ran\n' "$top/tests/lib.sh" >"$script"
timeout 3 env -u SP_POOL_LOCKED SP_POOL_LOCK_FILE="$lock" bash "$script" >"$tmp/script.out" 2>"$tmp/script.err"
waited="$? $(grep -c "test_by_hand.sh: waiting for $lock (another pool user runs)" "$tmp/script.err")"
got="$(SP_POOL_LOCKED=1 SP_POOL_LOCK_FILE="$lock" timeout 10 bash "$script" 2>&1)"
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
holder=''
got="$got $(env -u SP_POOL_LOCKED SP_POOL_LOCK_FILE="$lock" flock "$lock" timeout 10 bash "$script" 2>&1)"
if [ "$waited" != "124 1" ]; then
	fail pool_lock_script_waits "beside the holder: exit and 'waiting' lines $waited (want 124 1): $(oneline "$tmp/script.err")"
elif [ "$got" != "ran ran" ]; then
	fail pool_lock_script_waits "with SP_POOL_LOCKED=1, then under the holder's flock: $got (want ran ran)"
else
	pass pool_lock_script_waits "a script by hand waits beside the holder, runs under it or run.sh"
fi
flock "$lock" sleep 60 &
holder=$!
for _ in $(seq 100); do [ -n "$(awk -v p=$holder '$5 == p' /proc/locks)" ] && break; sleep 0.1; done

# superpage bench --setup-pools: under the holder's flock it runs on; beside another
# holder it waits and says so.
if [ "$(id -u)" != 0 ]; then
	skip pool_lock_bench "needs root (--setup-pools takes the lock only as root)"
	exit 0
fi
run_bench() { env -u SP_POOL_LOCKED SP_POOL_LOCK_FILE="$lock" "$SP" bench --kernel gups=8M --backing thp --setup-pools --repeat 1 "$@"; }
export SP lock
timeout 20 bash -c "$(declare -f run_bench); run_bench" >"$tmp/out" 2>"$tmp/err" &
b=$!
for _ in $(seq 100); do grep -q 'waiting for' "$tmp/err" && break; sleep 0.1; done
kill "$b" 2>/dev/null
wait "$b" 2>/dev/null
if ! grep -q "waiting for $lock (another pool user runs)" "$tmp/err"; then
	fail pool_lock_bench_waits "it did not wait for another holder: $(oneline "$tmp/err")"
else
	pass pool_lock_bench_waits
fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
holder=''
# (Its runs' own outcome is not judged: under a sanitizer's build the runtime cannot be
# preloaded and they fail. Past the lock is what counts: no wait, no time-out.)
flock "$lock" timeout 120 bash -c "$(declare -f run_bench); run_bench" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 124 ]; then
	fail pool_lock_bench_above "under the holder's flock it waited 120 s: $(oneline "$tmp/err")"
elif ! grep -q 'gups' "$tmp/out"; then
	fail pool_lock_bench_above "under the holder's flock it ran nothing (exit $rc): $(oneline "$tmp/err")"
elif grep -q 'waiting for' "$tmp/err"; then
	fail pool_lock_bench_above "it waited for the lock its parent holds: $(oneline "$tmp/err")"
else
	pass pool_lock_bench_above
fi
