#!/usr/bin/env bash
# test_interplay.sh - the runtime inside programs that do what real programs do around
# malloc: libraries opened with RTLD_DEEPBIND (as PHP opens its extensions), the malloc
# API's edge cases (odd alignments: glibc 2.36's answers), THP turned off by the program
# (prctl, as Ruby does) or its parent, and fork
# by every path (glibc's name service and stdio in a threaded child, other libraries'
# fork handlers run before the runtime's, a signal handler, popen, system, posix_spawn,
# vfork, clone without CLONE_VM), under auto and under 2m, whose hugetlb memory is a
# hole in a forked child until the runtime has copied it in.
# Usage: tests/runtime/interplay/test_interplay.sh BUILD_DIR. Prints PASS, FAIL or SKIP lines; the
# 2M pool is put back, even on failure or Ctrl-C.
set -u
B=${1:?usage: tests/runtime/interplay/test_interplay.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$B/superpage
RT=$B/libsuperpage-run.so
P=$B/tests/runtime/interplay
export LC_ALL=C
running=''
# shellcheck source=tests/lib.sh
. "$here/../../lib.sh"

why=$(preload_blocker "$B" "$RT")
if [ -n "$why" ]; then
	skip interplay "$why; the preload runs in the plain build"
	exit 0
fi
for f in "$RT" "$P/forks" "$P/deepbind" "$P/deepbind-runpath" "$P/thpoff" "$P/apiedges" "$P/lib/deeplib.so" "$P/lib/atforklib.so"; do
	if [ ! -e "$f" ]; then
		fail interplay_built "$f is missing: build with make B=$B tests"
		exit 1
	fi
done
B=$(cd "$B" && pwd)
SP=$B/superpage P=$B/tests/runtime/interplay
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_interplay.XXXXXX")
# shellcheck disable=SC2317 # (called by the trap)
interrupted() {
	[ -z "$running" ] || kill "$running" 2>/dev/null
	exit 130
}
trap 'put_pool_back; rm -rf "$tmp"' EXIT
trap interrupted INT TERM HUP

# Runs the command plain and under superpage run with the options; passes if both
# exit 0 with the same stdout.
same_as_plain() { # name options... -- command...
	local name=$1 opts=()
	shift
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	limited "$tmp/plain.out" "$tmp/plain.err" "$@"
	local prc=$rc
	limited "$tmp/sp.out" "$tmp/sp.err" "$SP" run "${opts[@]}" -- "$@"
	if [ "$prc" != 0 ]; then
		skip "$name" "the plain run exited $prc: $(oneline "$tmp/plain.err")"
	elif [ "$rc" != 0 ]; then
		fail "$name" "exited $rc under superpage run ${opts[*]}$([ "$rc" -gt 128 ] &&
			echo " (signal $((rc - 128)))"): $(oneline "$tmp/sp.out") $(oneline "$tmp/sp.err")"
	elif ! cmp -s "$tmp/plain.out" "$tmp/sp.out"; then
		fail "$name" "stdout differs: $(diff "$tmp/plain.out" "$tmp/sp.out" | head -n 4 |
			tr '\n' ' ' | cut -c 1-300)"
	else
		pass "$name" "$(oneline "$tmp/sp.out" 1)"
	fi
}

# ---------- RTLD_DEEPBIND ----------

test_deepbind() {
	same_as_plain deepbind_auto -- "$P/deepbind" "$P/lib/deeplib.so"
	same_as_plain deepbind_4k_no_heap --backing 4k --no-heap -- "$P/deepbind" "$P/lib/deeplib.so"
	# by a bare name, through the program's RUNPATH: glibc's dlopen must see the
	# program as its caller, not the runtime
	same_as_plain deepbind_runpath -- "$P/deepbind-runpath" deeplib.so
	# said once under --verbose
	limited "$tmp/v.out" "$tmp/v.err" "$SP" run -v -- "$P/deepbind" "$P/lib/deeplib.so"
	if [ "$(grep -c 'RTLD_DEEPBIND' "$tmp/v.err")" = 1 ]; then
		pass deepbind_said
	else
		fail deepbind_said "want one line naming RTLD_DEEPBIND under -v: $(oneline "$tmp/v.err")"
	fi
}

# PHP opens its extensions with RTLD_DEEPBIND; its default ones call malloc and free.
php_script='$a = []; for ($i = 0; $i < 200000; $i++) { $a["k$i"] = str_repeat("x", $i % 64); }
echo count($a), " ", md5(json_encode(array_slice($a, 0, 1000))), " ",
     strlen(serialize($a)), " ", preg_replace("/x+/", "y", "axxxb"), "\n";'
test_php() {
	local b
	if ! command -v php >/dev/null 2>&1; then
		skip php "php is not installed (Debian: php-cli)"
		return
	fi
	for b in auto 4k; do
		same_as_plain "php_$b" --backing "$b" -- php -r "$php_script"
	done
	if pool_add 64; then
		same_as_plain php_2m --backing 2m -- php -r "$php_script"
		put_pool_back
	else
		skip php_2m "$why"
	fi
}

# ---------- the malloc API's edge cases, as glibc answers them ----------

test_api_edges() {
	same_as_plain api_edges -- "$P/apiedges"
	same_as_plain api_edges_no_heap --no-heap -- "$P/apiedges"
}

# ---------- a program that turns THP off for itself ----------

# thpoff prints what it reads of the switch (stdout, compared with plain) and its THP
# memory in KiB (stderr); --stats says the falls.
thp_case() { # name want(huge|none) how(set|inherited) options...
	local name=$1 want=$2 how=$3 kb
	shift 3
	local cmd=("$SP" run --stats "$@" -- "$P/thpoff")
	if [ "$how" = set ]; then
		cmd+=(set)
		limited "$tmp/plain.out" "$tmp/plain.err" "$P/thpoff" set
	else
		# the switch set by the parent, before exec
		cmd=("$PY" -c 'import ctypes, os, sys
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)
os.execv(sys.argv[1], sys.argv[1:])' "${cmd[@]}" keep)
		limited "$tmp/plain.out" "$tmp/plain.err" "${cmd[@]:0:3}" "$P/thpoff" keep
	fi
	limited "$tmp/sp.out" "$tmp/sp.err" "${cmd[@]}"
	kb=$(sed -n 's/^thp_kb=//p' "$tmp/sp.err")
	if [ "$rc" != 0 ] || ! cmp -s "$tmp/plain.out" "$tmp/sp.out"; then
		fail "$name" "exited $rc; stdout $(oneline "$tmp/sp.out" 1), plain $(oneline "$tmp/plain.out" 1)"
	elif [ "$want" = huge ] && ! [ "${kb:-0}" -gt 65536 ]; then
		fail "$name" "${kb:-?} KiB on THP, want the heap's (over 64 MiB): $(oneline "$tmp/sp.err")"
	elif [ "$want" = none ] && [ "${kb:-1}" != 0 ]; then
		fail "$name" "${kb:-?} KiB on THP, want none"
	elif [ "$want" = none ] && ! grep -q 'fallbacks:.*thp_off' "$tmp/sp.err"; then
		fail "$name" "the THP memory left on base pages is no counted fall: $(grep fallbacks "$tmp/sp.err")"
	else
		pass "$name" "$(oneline "$tmp/sp.out" 1) thp ${kb} KiB"
	fi
}

test_thp_off() {
	local thp
	thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
	if [ -z "$thp" ] || [ "$thp" = never ]; then
		skip thp_off "THP is ${thp:-absent} here"
		return
	fi
	if [ -z "$PY" ]; then
		skip thp_off "no python3 to set the switch before exec"
		return
	fi
	# Linux before 6.18 has no PR_THP_DISABLE_EXCEPT_ADVISED: the switch then holds
	# for all, as with --honour-thp-disable.
	if "$PY" -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).prctl(41, 1, 2, 0, 0) != 0)'; then
		thp_case thp_off_kept huge set
	else
		skip thp_off_kept "this kernel has no PR_THP_DISABLE_EXCEPT_ADVISED"
	fi
	thp_case thp_off_honoured none set --honour-thp-disable
	# set outside superpage: left as it is, and counted
	thp_case thp_off_inherited none inherited
	# --backing 4k's baseline has THP off for all: a program's own call keeps it so
	limited "$tmp/sp.out" "$tmp/sp.err" "$SP" run --backing 4k -- "$PY" -c 'import ctypes
ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)
print([l.split()[1] for l in open("/proc/self/status") if l.startswith("THP_enabled")])'
	if [ "$rc" = 0 ] && [ "$(cat "$tmp/sp.out")" = "['0']" ]; then
		pass thp_off_4k_baseline
	else
		fail thp_off_4k_baseline "exited $rc, THP_enabled $(cat "$tmp/sp.out"), want ['0']"
	fi
}

# ---------- fork ----------

fork_paths() { # name options...
	local name=$1
	shift
	limited "$tmp/f.out" "$tmp/f.err" "$SP" run "$@" -- "$P/forks" -m 64
	if [ "$rc" = 0 ]; then
		pass "$name" "$(tr '\n' ' ' <"$tmp/f.out" | cut -c 1-200)"
	else
		fail "$name" "exited $rc: $(grep -v 'exit 0$' "$tmp/f.out" | tr '\n' ' ' | cut -c 1-300) $(oneline "$tmp/f.err")"
	fi
}

test_fork() {
	limited "$tmp/f.out" "$tmp/f.err" "$P/forks" -m 64
	if [ "$rc" != 0 ]; then
		skip fork "the plain run exited $rc: $(oneline "$tmp/f.out")"
		return
	fi
	fork_paths fork_auto
	if ! pool_add 64; then
		skip fork_2m "$why"
		return
	fi
	fork_paths fork_2m --backing 2m
	# A library preloaded before the runtime registered its fork handlers first: its
	# child handler (which touches its malloc'd state, as jemalloc's does) runs before
	# the runtime's.
	LD_PRELOAD=$P/lib/atforklib.so fork_paths fork_2m_handler_first --backing 2m
	put_pool_back
	# The pool runs out under the heap (its last units are THP): a child that shared
	# the parent's hugetlb pages would find none to copy them into on its first write.
	if pool_add 24; then
		limited "$tmp/f.out" "$tmp/f.err" "$SP" run --backing 2m -- "$P/forks" -m 96 clone busy
		if [ "$rc" = 0 ]; then
			pass fork_2m_pool_empty "$(tr '\n' ' ' <"$tmp/f.out")"
		else
			fail fork_2m_pool_empty "exited $rc: $(tr '\n' ' ' <"$tmp/f.out") $(oneline "$tmp/f.err")"
		fi
		put_pool_back
	else
		skip fork_2m_pool_empty "$why"
	fi
}

test_deepbind
test_php
test_api_edges
test_thp_off
test_fork
exit $failed
