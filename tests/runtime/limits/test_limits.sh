#!/usr/bin/env bash
# test_limits.sh - what runs plain must run under superpage run, under the limits a
# program may be given: ulimit -v (RLIMIT_AS), prlimit --data (RLIMIT_DATA), a memory
# cgroup's limit, and the heap's own range (40 blocks of 10 GiB). Each case runs the
# program plain first: where plain fails, the case is skipped, saying so.
# Usage: tests/runtime/limits/test_limits.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. The cgroups it makes (a memory cgroup under this shell's
# own, a hugetlb cgroup) are removed; for the hugetlb case it adds pages to the 2M
# pool and, under cgroup v2, enables the hugetlb controller for the children of this
# shell's cgroup, and puts both back.
set -u
B=${1:?usage: tests/runtime/limits/test_limits.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
L=$B/tests/runtime/limits/limits
tmp=$(mktemp -d)
cg='' hcg='' hcg_enabled=''
# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/../../lib.sh"
cleanup() {
	[ -n "$cg" ] && [ -d "$cg" ] && rmdir "$cg" 2>/dev/null
	[ -n "$hcg" ] && [ -d "$hcg" ] && rmdir "$hcg" 2>/dev/null
	[ -n "$hcg_enabled" ] && echo -hugetlb >"$hcg_enabled/cgroup.subtree_control" 2>/dev/null
	put_pool_back
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
unset LD_PRELOAD "${!SUPERPAGE_@}"

no_preload=$(preload_blocker "$B" "$B/libsuperpage-run.so")
if [ -n "$no_preload" ]; then
	skip limits "$no_preload"
	exit 0
fi
if [ ! -x "$SP" ] || [ ! -x "$L" ]; then
	fail limits_built "$SP or $L is missing: build with make B=$B tests"
	exit 1
fi
VLIM=1000000 # KiB, as ulimit -v takes it
PY='x = [bytearray(3 << 20) for _ in range(100)]
assert all(len(b) == 3 << 20 and b.count(0) == 3 << 20 for b in x)'

# Runs a case plain then under superpage run (with the options in $opts), in a
# subshell with the limit set by $pre (a shell command); leaves $tmp/plain.* and
# $tmp/sp.*, and plain_rc, sp_rc.
both() { # command...
	(eval "$pre" && exec timeout -k 5 "$LIMIT" "$@") >"$tmp/plain.out" 2>"$tmp/plain.err"
	plain_rc=$?
	# shellcheck disable=SC2086
	(eval "$pre" && exec timeout -k 5 "$LIMIT" "$SP" run $opts -- "$@") >"$tmp/sp.out" 2>"$tmp/sp.err"
	sp_rc=$?
}

# PASS if superpage run succeeded as plain did (or SKIP if plain did not).
same() { # name what
	if [ "$plain_rc" != 0 ]; then
		skip "$1" "$2 fails plain here too (status $plain_rc: $(oneline "$tmp/plain.err"))"
	elif [ "$sp_rc" != 0 ]; then
		fail "$1" "$2: plain succeeds, superpage run exits $sp_rc: $(oneline "$tmp/sp.out") $(oneline "$tmp/sp.err")"
	else
		pass "$1" "$(oneline "$tmp/sp.out" 1)"
	fi
}

# PASS if the last account in $tmp/stats.json (--stats=FILE) makes cond true: a
# Python expression of j (the account) and l (its "limits").
stats_say() { # name what cond
	local got
	if ! command -v python3 >/dev/null 2>&1; then
		skip "$1" "no python3 to read the account"
		return
	fi
	got=$(python3 -c "import json, sys
j = json.loads(open(sys.argv[1]).read().splitlines()[-1]); l = j['limits']
print('yes' if $3 else 'no', json.dumps(l), json.dumps(j['falls']))" "$tmp/stats.json" 2>&1)
	case $got in
	yes*) pass "$1" "$2: ${got#yes }" ;;
	*) fail "$1" "$2: the account does not say it ($3): ${got#no }" ;;
	esac
}

# ---------- ulimit -v ----------

pre="ulimit -v $VLIM" opts=''
if command -v python3 >/dev/null 2>&1; then
	both python3 -c "$PY"
	same limits_as_python "under ulimit -v $VLIM, 100 bytearrays of 3 MiB"
	pre="ulimit -v 500000"
	both python3 -c pass
	same limits_as_python_starts "under ulimit -v 500000, python3 -c pass"
else
	skip limits_as_python "no python3"
fi

pre="ulimit -v $VLIM"
for b in auto 4k 2m; do
	opts="--backing $b"
	both "$L" mix 700
	same "limits_as_mix_$b" "under ulimit -v $VLIM, 700 MiB of mixed blocks (--backing $b)"
done

# As much as plain can have, to within 1% of the limit (the runtime's own tables).
max_case() { # name what step_kib
	opts=''
	both "$L" max "$3"
	if [ "$plain_rc" != 0 ] || [ "$sp_rc" != 0 ]; then
		fail "$1" "$2: status $plain_rc plain, $sp_rc under run: $(oneline "$tmp/sp.out")"
		return
	fi
	local pm pl sm sl slack=$((VLIM / 1024 / 100))
	pm=$(sed -n 's/.*max_mib=\([0-9]*\).*/\1/p' "$tmp/plain.out")
	pl=$(sed -n 's/.*largest_mib=\([0-9]*\).*/\1/p' "$tmp/plain.out")
	sm=$(sed -n 's/.*max_mib=\([0-9]*\).*/\1/p' "$tmp/sp.out")
	sl=$(sed -n 's/.*largest_mib=\([0-9]*\).*/\1/p' "$tmp/sp.out")
	if [ -z "$pm" ] || [ -z "$sm" ]; then
		fail "$1" "no figures: $(oneline "$tmp/plain.out") / $(oneline "$tmp/sp.out")"
	elif [ "$sm" -lt $((pm - slack)) ] || [ "$sl" -lt $((pl - slack)) ]; then
		fail "$1" "$2: plain has $pm MiB in blocks (one of $pl MiB), superpage run $sm (one of $sl)"
	else
		pass "$1" "$2: plain $pm MiB (one block $pl), superpage run $sm MiB (one block $sl)"
	fi
}
max_case limits_as_max "ulimit -v $VLIM, blocks of 3 MiB + 1 KiB" 3073
max_case limits_as_max_1m "ulimit -v $VLIM, blocks of 1 MiB" 1024

# ---------- RLIMIT_DATA ----------

pre="ulimit -d $VLIM" opts=''
both "$L" mix 700
same limits_data_mix "under ulimit -d $VLIM, 700 MiB of mixed blocks"
max_case limits_data_max "ulimit -d $VLIM, blocks of 3 MiB + 1 KiB" 3073

# ---------- the heap's range: 40 blocks of 10 GiB, untouched ----------

pre=':' opts=''
both "$L" huge 40 10
if grep -q "huge failed" "$tmp/plain.out"; then
	skip limits_range_huge "plain malloc refuses 40 blocks of 10 GiB here" \
		"($(oneline "$tmp/plain.out" 1); vm.overcommit_memory $(cat /proc/sys/vm/overcommit_memory))"
else
	same limits_range_huge "40 mallocs of 10 GiB"
fi

# ---------- a memory cgroup's limit ----------
# A child of this shell's own memory cgroup (v2: memory.max; v1: memory.limit_in_bytes),
# limited to 512 MiB; the case moves itself into it.

cg_make() {
	local rel parent
	rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
	parent=/sys/fs/cgroup${rel%/}
	if [ -n "$rel" ] && grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null; then
		cg=$parent/sp-limits-$$
		mkdir "$cg" 2>/dev/null && echo $((512 << 20)) >"$cg/memory.max" 2>/dev/null &&
			{ echo 0 >"$cg/memory.swap.max" 2>/dev/null || :; } && return 0
	else
		rel=$(sed -n 's/^[0-9]*:memory:\(.*\)/\1/p' /proc/self/cgroup)
		parent=/sys/fs/cgroup/memory${rel%/}
		[ -n "$rel" ] && [ -w "$parent" ] || return 1
		cg=$parent/sp-limits-$$
		mkdir "$cg" 2>/dev/null && echo $((512 << 20)) >"$cg/memory.limit_in_bytes" 2>/dev/null &&
			return 0
	fi
	return 1
}
if ! is_root; then
	skip limits_cgroup "not root: no memory cgroup to make"
elif ! cg_make; then
	skip limits_cgroup "no writable memory cgroup here (v2 with memory in subtree_control, or v1)"
else
	pre="echo \$BASHPID >$cg/cgroup.procs" opts=''
	both "$L" mix 150
	same limits_cgroup_mix "in a cgroup of 512 MiB, 150 MiB of mixed blocks, forked"
	if command -v python3 >/dev/null 2>&1; then
		both python3 -c "$PY"
		same limits_cgroup_python "in a cgroup of 512 MiB, 100 bytearrays of 3 MiB"
	fi
	# 502 MiB of blocks of a dozen sizes, allocated and filled: plain fits. On THP a
	# unit is resident whole from its first touch; near the limit the heap must
	# give back what that costs (and say so in --stats). Under 2m, units on hugetlb
	# pages are not the memory cgroup's (v1): with a pool the heap may never come
	# near the limit (within its margin, 32 MiB).
	for b in auto thp 2m; do
		opts="--backing $b --stats=$tmp/stats.json"
		rm -f "$tmp/stats.json"
		both "$L" need 502 0
		same "limits_cgroup_need_$b" "in a cgroup of 512 MiB, 502 MiB of blocks (--backing $b)"
		said="l['near'] >= 1"
		[ $b = 2m ] && said="(l['near'] >= 1 or l['least_room'] >= 32 << 20)"
		[ "$plain_rc" = 0 ] && [ "$sp_rc" = 0 ] &&
			stats_say "limits_cgroup_need_${b}_said" "--backing $b" \
				"l['memory_limit'] == 512 << 20 and $said"
	done
	# Half the blocks freed and the room filled again with other sizes, 6 times.
	opts="--stats=$tmp/stats.json"
	both "$L" need 450 6
	same limits_cgroup_churn "in a cgroup of 512 MiB, 450 MiB of blocks, half freed and refilled 6 times"
fi

# ---------- the hugetlb controller's limit ----------
# A hugetlb cgroup of 40 MiB (v1 hugetlb.2MB.limit_in_bytes; v2 hugetlb.2MB.max) and
# 64 pages in the pool: the kernel charges a private hugetlb page when it is first
# touched, and a touch past the limit is a SIGBUS. Under --backing 2m a program of
# 100 MiB must run as plain, its heap on hugetlb pages up to the limit and on THP
# past it, the fall said as cgroup_limit.

hcg_make() {
	local m rel parent
	m=$(awk '$3 == "cgroup" && $4 ~ /(^|,)hugetlb(,|$)/ { print $2; exit }' /proc/mounts)
	if [ -n "$m" ]; then
		rel=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}hugetlb\(,[^:]*\)\{0,1\}:\(.*\)/\3/p' /proc/self/cgroup)
		hcg=$m${rel%/}/sp-limits-h-$$
		mkdir "$hcg" 2>/dev/null && echo $((40 << 20)) >"$hcg/hugetlb.2MB.limit_in_bytes" 2>/dev/null
		return
	fi
	m=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
	parent=$m${rel%/}
	[ -n "$m" ] && grep -qw hugetlb "$parent/cgroup.controllers" 2>/dev/null || return 1
	if ! grep -qw hugetlb "$parent/cgroup.subtree_control"; then
		echo +hugetlb >"$parent/cgroup.subtree_control" 2>/dev/null || return 1
		hcg_enabled=$parent
	fi
	hcg=$parent/sp-limits-h-$$
	mkdir "$hcg" 2>/dev/null && echo $((40 << 20)) >"$hcg/hugetlb.2MB.max" 2>/dev/null
}
if ! is_root; then
	skip limits_hugetlb_cgroup "not root: no hugetlb cgroup to make"
elif ! hcg_make; then
	skip limits_hugetlb_cgroup "no hugetlb controller to limit here (a v1 mount of it, or v2's)"
elif ! pool_add 64; then
	skip limits_hugetlb_cgroup "$why"
else
	pre="echo \$BASHPID >$hcg/cgroup.procs" opts="--backing 2m --stats=$tmp/stats.json"
	rm -f "$tmp/stats.json"
	both "$L" need 100 0
	same limits_hugetlb_cgroup "in a hugetlb cgroup of 40 MiB, 100 MiB of blocks (--backing 2m)"
	[ "$plain_rc" = 0 ] && [ "$sp_rc" = 0 ] &&
		stats_say limits_hugetlb_cgroup_said "--backing 2m" \
			"l['hugetlb_2m_limit'] == 40 << 20 and j['falls']['2m'].get('cgroup_limit', 0) >= 1 and j['hugetlb_bytes'] > 0"
	put_pool_back
fi
exit $failed
