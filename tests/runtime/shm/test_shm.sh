#!/usr/bin/env bash
# test_shm.sh - tests superpage run --shm: SysV segments and MAP_SHARED|MAP_ANONYMOUS
# mappings on 2 MiB hugetlb pages when the pool can hold them, the program's output and
# IPC_STAT sizes as without it, and the fall back to base pages when they cannot be had.
# Usage: tests/runtime/shm/test_shm.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. The 2M pool is changed only relative to what it holds
# (other processes may be using it) and put back, even on failure or Ctrl-C; the
# segments of a killed test program are removed.
set -u
B=${1:?usage: tests/runtime/shm/test_shm.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
RT=$B/libsuperpage-run.so
PROG=$(cd "$B" 2>/dev/null && pwd)/tests/runtime/shm/shmuse
tmp=$(mktemp -d)
# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/../../lib.sh"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# What the tests see must come from superpage run, not from whoever started them.
unset LD_PRELOAD "${!SUPERPAGE_@}"
export LC_ALL=C

why=$(preload_blocker "$B" "$RT")
if [ -n "$why" ]; then
	skip shm "$why"
	exit 0
fi
if [ ! -x "$SP" ] || [ ! -f "$RT" ] || [ ! -x "$PROG" ]; then
	fail shm_built "$SP, $RT or $PROG is missing: build with make B=$B tests"
	exit 1
fi

# ---------- segments: shmuse removes its own at once; these are a killed one's ----------

# Removes every segment a run said it made ("shmuse: shmid ID pid PID") that is still
# there and still that process's (an id can be another's by now).
remove_segments() {
	local f id pid
	for f in "$tmp"/*.err; do
		[ -f "$f" ] || continue
		while read -r _ _ id _ pid; do
			ipcs -m -p 2>/dev/null | awk -v id="$id" -v pid="$pid" \
				'$1 == id && $3 == pid { found = 1 } END { exit !found }' &&
				ipcrm -m "$id" 2>/dev/null
		done < <(grep '^shmuse: shmid [0-9]* pid [0-9]*$' "$f")
	done
}

trap 'put_pool_back; remove_segments; rm -rf "$tmp"' EXIT

# ---------- running the program ----------

run() { # name command... : run_timed, then the segments a killed run left go
	run_timed "$@"
	remove_segments
}
huge_line() { grep '^shm hugetlb=' "$tmp/$1.out"; }
# stdout without the --huge line, to compare with the plain run's.
body() { grep -v '^shm hugetlb=' "$tmp/$1.out"; }

# Sets why if run name did not end well or printed other than the plain run.
same_as_plain() { # name
	why=''
	if [ "$rc" = 124 ]; then
		why="timed out after ${LIMIT}s: $(oneline "$tmp/$1.err")"
	elif [ "$rc" != 0 ]; then
		why="exited $rc: $(oneline "$tmp/$1.out") $(oneline "$tmp/$1.err")"
	elif ! diff <(body plain) <(body "$1") >/dev/null; then
		why="stdout differs from the plain run: $(diff <(body plain) <(body "$1") | head -n 4 |
			tr '\n' ' ' | cut -c 1-300)"
	fi
	[ -z "$why" ]
}

# Sets why unless the --huge line of run name is want.
huge_is() { # name want
	local got
	got=$(huge_line "$1")
	[ "$got" = "$2" ] || why="$got, want $2"
	[ -z "$why" ]
}

# Sets why unless every IPC_STAT size printed is the size asked.
stat_as_asked() { # name
	local f=$tmp/$1.out
	why=''
	awk '$1 == "key" && $3 != $5 { bad = 1 } $1 == "shm" && $2 == "size" && ($3 != $5 || $3 != $7) { bad = 1 }
		END { exit bad }' "$f" || why="IPC_STAT's shm_segsz is not the size asked: $(grep -E '^(key|shm) size' "$f" | tr '\n' ' ')"
	grep -q '^shm size' "$f" && grep -q '^key size' "$f" || why="no size lines: $(oneline "$f")"
	[ -z "$why" ]
}

run plain "$PROG"
if [ "$rc" != 0 ]; then
	fail shm_plain "$PROG exited $rc without superpage: $(oneline "$tmp/plain.out") $(oneline "$tmp/plain.err")"
	exit 1
fi

# ---------- (a) the same output under --shm, whatever the pool ----------

test_same_output() {
	run same "$SP" run --shm -- "$PROG"
	if same_as_plain same; then pass shm_same_output; else fail shm_same_output "$why"; fi
}

# ---------- (d) without --shm under thp, or with SUPERPAGE_SHM=no, nothing shared is
# on hugetlb; under auto, what the pool can hold is ----------

test_off() {
	local all0="shm hugetlb=0 key hugetlb=0 anon hugetlb=0 odd hugetlb=0 grow hugetlb=0" note=''
	local want="shm hugetlb=1 key hugetlb=1 anon hugetlb=1 odd hugetlb=0 grow hugetlb=1"
	# With a pool that could hold it, so that "not on hugetlb" is the option's doing.
	pool_add 16 || note="(no pool set up: $why)"
	run off "$SP" run --backing thp -- "$PROG" --huge
	if same_as_plain off && huge_is off "$all0"; then
		pass shm_off_not_huge "$note"
	else
		fail shm_off_not_huge "$why"
	fi
	SUPERPAGE_SHM=no run no "$SP" run -- "$PROG" --huge
	if same_as_plain no && huge_is no "$all0"; then
		pass shm_no_not_huge "$note"
	else
		fail shm_no_not_huge "$why"
	fi
	if [ -n "$note" ]; then
		skip shm_auto_hugetlb "$note"
	else
		run auto "$SP" run -- "$PROG" --huge
		if same_as_plain auto && huge_is auto "$want"; then
			pass shm_auto_hugetlb
		else
			fail shm_auto_hugetlb "$why"
		fi
	fi
	put_pool_back
}

# ---------- (b, e) with a pool: on hugetlb, sizes as asked ----------

test_huge() {
	local want="shm hugetlb=1 key hugetlb=1 anon hugetlb=1 odd hugetlb=0 grow hugetlb=1"
	if ! pool_add 16; then
		skip shm_hugetlb "$why"
		skip shm_stat_size "$why"
		return
	fi
	run huge "$SP" run --shm -vv -- "$PROG" --huge
	put_pool_back
	if same_as_plain huge && huge_is huge "$want"; then
		pass shm_hugetlb
	else
		fail shm_hugetlb "$why (pool: $(cat $P2M/free_hugepages) free, $(cat $P2M/resv_hugepages) reserved; $(oneline "$tmp/huge.err" 2))"
	fi
	# odd: a length that is not a multiple of 2 MiB stays on base pages, and says so.
	if ! grep -q 'length is not a multiple of 2 MiB' "$tmp/huge.err"; then
		fail shm_odd_said "-vv does not say why the odd mapping stayed on base pages: $(oneline "$tmp/huge.err")"
	else
		pass shm_odd_said
	fi
	if [ "$(huge_line huge)" = "$want" ] && stat_as_asked huge; then
		pass shm_stat_size
	elif [ "$(huge_line huge)" != "$want" ]; then
		fail shm_stat_size "the segments were not on hugetlb pages: $(huge_line huge)"
	else
		fail shm_stat_size "$why"
	fi
}

# ---------- (c) the pool cannot hold it: base pages, same output, the fall said ----------

# A pool of 0 pages is used as it is. A pool that holds pages may be another process's
# (a benchmark's --setup-pools): it is left alone, and the program sees it empty through
# a private mount namespace (the runtime decides from sysfs, so that is the same test).
# Without unshare, a pool nobody holds pages of is emptied for real, relative to what it
# holds, and put back.
test_pool_empty() {
	local all0="shm hugetlb=0 key hugetlb=0 anon hugetlb=0 odd hugetlb=0 grow hugetlb=0" note fake f
	if ! is_root; then
		skip shm_pool_empty "needs root to empty the 2M pool"
		return
	elif [ ! -w $P2M/nr_hugepages ]; then
		skip shm_pool_empty "no 2M hugetlb pages on this machine"
		return
	fi
	pool_nums
	if [ "$nr" = 0 ] && [ "$(cat $P2M/nr_overcommit_hugepages)" = 0 ]; then
		note="(the 2M pool is empty)"
		run empty "$SP" run --shm -v -- "$PROG" --huge
	elif command -v unshare >/dev/null && command -v mount >/dev/null; then
		note="(the 2M pool holds $nr pages: the program sees it empty in a private mount namespace)"
		fake=$tmp/pool
		mkdir -p "$fake"
		for f in nr_hugepages free_hugepages resv_hugepages surplus_hugepages nr_overcommit_hugepages; do
			echo 0 >"$fake/$f"
		done
		# shellcheck disable=SC2016
		run empty unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
			sh "$fake" $P2M "$SP" run --shm -v -- "$PROG" --huge
	elif [ "$nr" = "$free" ] && [ "$resv" = 0 ] && [ "$(cat $P2M/surplus_hugepages)" = 0 ]; then
		pool_write $((nr - free + resv))
		note="(the 2M pool emptied)"
		pool_nums
		if [ $((free - resv)) -ne 0 ]; then
			put_pool_back
			skip shm_pool_empty "the 2M pool keeps $((free - resv)) free pages when set to 0"
			return
		fi
		run empty "$SP" run --shm -v -- "$PROG" --huge
		put_pool_back
	else
		skip shm_pool_empty "the 2M pool is in use by another process, and there is no unshare to hide it"
		return
	fi
	if ! same_as_plain empty || ! huge_is empty "$all0"; then
		fail shm_pool_empty "$why"
	elif ! grep -q 'stays on base pages: no 2M hugetlb pool\|stays on base pages: the 2M pool has 0 pages' "$tmp/empty.err"; then
		fail shm_pool_empty "--verbose does not say the fall back: $(oneline "$tmp/empty.err")"
	else
		pass shm_pool_empty "$note"
	fi
}

# ---------- SHM_HUGETLB refused (EPERM): the segments fall back, the mapping does not ----------

test_eperm() {
	local want="shm hugetlb=0 key hugetlb=0 anon hugetlb=1 odd hugetlb=0 grow hugetlb=1"
	local group
	group=$(cat /proc/sys/vm/hugetlb_shm_group 2>/dev/null)
	if ! command -v setpriv >/dev/null; then
		skip shm_eperm "no setpriv to run the program as nobody"
		return
	elif [ "$group" = 65534 ]; then
		skip shm_eperm "vm.hugetlb_shm_group is nobody's group"
		return
	elif ! pool_add 16; then
		skip shm_eperm "$why"
		return
	fi
	run eperm setpriv --reuid=65534 --regid=65534 --clear-groups "$SP" run --shm -v -- "$PROG" --huge
	put_pool_back
	if [ "$rc" = 127 ] || [ "$rc" = 126 ]; then
		skip shm_eperm "nobody cannot run $PROG: $(oneline "$tmp/eperm.err")"
	elif ! same_as_plain eperm || ! huge_is eperm "$want"; then
		fail shm_eperm "$why"
	elif ! grep -q 'SHM_HUGETLB not permitted (EPERM' "$tmp/eperm.err"; then
		fail shm_eperm "--verbose does not say the EPERM: $(oneline "$tmp/eperm.err")"
	else
		pass shm_eperm
	fi
}

test_same_output
test_off
test_huge
test_pool_empty
test_eperm
exit "$failed"
