#!/usr/bin/env bash
# test_htlb_env.sh - libhugetlbfs.so.0's environment that needs superpage's runtime:
# a program linked with -lhugetlbfs (tests/htlb/heap_prog.c) started again with the
# runtime for HUGETLB_MORECORE (thp, and yes on a 2M pool set up and put back, with
# HUGETLB_MORECORE_SHRINK and without) and HUGETLB_SHM; HUGETLB_ELFMAP=R putting the
# read-only segments of a program linked for huge pages (tests/htlb/elfmap_prog.c) on a
# hugetlbfs mount made and unmounted here, and not those of a program not so linked or
# outside HUGETLB_RESTRICT_EXE; HUGETLB_ELFMAP=W and RW its writable segment too, with
# a forked child that writes it when the pool has no free page, and the program's
# mprotect of part of it; left alone without them, with HUGETLB_MORECORE=no and
# outside HUGETLB_RESTRICT_EXE; its messages said once over both starts; its children without
# the runtime. Usage: tests/cli/test_htlb_env.sh BUILD_DIR. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test.
set -u
B=${1:?usage: tests/cli/test_htlb_env.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
LIBDIR=$(cd "$B/libhugetlbfs" 2>/dev/null && pwd)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"
tmp_with_pool

names=(htlb_env_none htlb_env_morecore_no htlb_env_restrict htlb_env_thp htlb_env_said_once
	htlb_env_child htlb_env_dlopen
	htlb_env_preload_back htlb_env_2m htlb_env_shrink htlb_env_shm htlb_env_elfmap
	htlb_env_elfmap_unlinked htlb_env_elfmap_restrict htlb_env_elfmap_w htlb_env_elfmap_w_changed
	htlb_env_elfmap_rw)
skip_all() { # why
	for t in "${names[@]}"; do skip "$t" "$1"; done
	exit $failed
}
why=$(preload_blocker "$B" "$B/libsuperpage-run.so")
[ -z "$why" ] || skip_all "$why"
if [ ! -f "$LIBDIR/libhugetlbfs.so.0" ] || [ ! -f "$B/libsuperpage-run.so" ]; then
	fail htlb_env_built "$B/libhugetlbfs/libhugetlbfs.so.0 or $B/libsuperpage-run.so is missing"
	exit 1
fi

PROG=$tmp/heap_prog
if ! ${CC:-cc} -std=gnu11 -O1 -g -Wall -Wextra -Werror -I"$top/src/htlb/include" \
	-o "$PROG" "$top/tests/htlb/heap_prog.c" -L"$LIBDIR" -lhugetlbfs \
	-Wl,-rpath,"$LIBDIR" >"$tmp/cc.err" 2>&1; then
	fail htlb_env_link "the program does not build: $(oneline "$tmp/cc.err")"
	exit 1
fi

# Runs the program with env's assignments; leaves rc and $tmp/prog.out, .err.
prog() { # [VAR=value...] mode [MIB]
	local vars=()
	while [ $# -gt 0 ] && [[ $1 == *=* ]]; do vars+=("$1"); shift; done
	run_timed prog env -u LD_PRELOAD "${vars[@]}" "$PROG" "$@"
}
has() { grep -qx "$1" "$tmp/prog.out"; }
got() { echo "exited $rc: $(oneline "$tmp/prog.out" 4) $(oneline "$tmp/prog.err")"; }

# ---------- nothing asked: glibc's malloc, no runtime, no message ----------
# (THP "always" would put even glibc's heap on THP: madvise for these cases)
if ! sysfs_thp_not_always; then
	skip_all "THP is always and cannot be set to madvise here"
fi
prog heap 64
if [ $rc = 0 ] && has "runtime 0" && has "heap kps=4 thp_kb=0" && [ ! -s "$tmp/prog.err" ]; then
	pass htlb_env_none
else
	fail htlb_env_none "$(got)"
fi
prog HUGETLB_MORECORE=no HUGETLB_VERBOSE=3 heap 64
if [ $rc = 0 ] && has "runtime 0" && has "heap kps=4 thp_kb=0"; then
	pass htlb_env_morecore_no
else
	fail htlb_env_morecore_no "$(got)"
fi
prog HUGETLB_MORECORE=thp HUGETLB_RESTRICT_EXE=other:sh HUGETLB_VERBOSE=2 heap 64
if [ $rc = 0 ] && has "runtime 0" && has "heap kps=4 thp_kb=0" &&
	grep -q 'is not in HUGETLB_RESTRICT_EXE' "$tmp/prog.err"; then
	pass htlb_env_restrict
else
	fail htlb_env_restrict "$(got)"
fi

# ---------- HUGETLB_MORECORE=thp: the runtime, the heap on THP ----------
thp=$(sysfs_read /sys/kernel/mm/transparent_hugepage/enabled)
if [ "$thp" = never ] || [ -z "$thp" ]; then
	skip htlb_env_thp "THP is ${thp:-missing} here"
else
	prog HUGETLB_MORECORE=thp HUGETLB_RESTRICT_EXE=other:heap_prog heap 64
	# At least half of 64 MiB on THP (the ends of the block may be on base pages).
	thp_kb=$(sed -n 's/^heap kps=4 thp_kb=\([0-9]*\)$/\1/p' "$tmp/prog.out")
	if [ $rc = 0 ] && has "runtime 1" && [ "${thp_kb:-0}" -ge 32768 ]; then
		pass htlb_env_thp "$thp_kb kB on THP"
	else
		fail htlb_env_thp "$(got)"
	fi
fi

# What the first start says is not said again by the second.
prog HUGETLB_MORECORE=thp HUGETLB_SHARE=1 heap 4
if [ $rc = 0 ] && has "runtime 1" && [ "$(grep -c '^superpage libhugetlbfs: ' "$tmp/prog.err")" = 1 ] &&
	grep -q 'HUGETLB_SHARE=1 accepted but not acted on' "$tmp/prog.err"; then
	pass htlb_env_said_once
else
	fail htlb_env_said_once "want one line for HUGETLB_SHARE: $(got)"
fi

# ---------- loaded after the start (dlopen): never started again ----------
if ! ${CC:-cc} -std=gnu11 -O1 -Wall -Wextra -Werror -o "$tmp/dlopen_prog" \
	"$top/tests/htlb/dlopen_prog.c" >"$tmp/cc.err" 2>&1; then
	fail htlb_env_dlopen "the program does not build: $(oneline "$tmp/cc.err")"
else
	run_timed prog env -u LD_PRELOAD HUGETLB_MORECORE=thp "$tmp/dlopen_prog" \
		"$LIBDIR/libhugetlbfs.so.0"
	if [ $rc = 0 ] && [ "$(cat "$tmp/prog.out")" = "$(printf 'start\nloaded 1')" ] &&
		grep -q 'not acted on: this library was loaded after' "$tmp/prog.err"; then
		pass htlb_env_dlopen
	else
		fail htlb_env_dlopen "$(got)"
	fi
fi

# ---------- children: the runtime is not inherited, LD_PRELOAD is put back ----------
prog HUGETLB_MORECORE=thp child
if [ $rc = 0 ] && has "runtime 1" && has "child_runtime 0" && has "child_preload -"; then
	pass htlb_env_child
else
	fail htlb_env_child "$(got)"
fi
PRE=$(ldd /bin/sh | awk '/libc\.so/ { print $3 }')
prog HUGETLB_MORECORE=thp LD_PRELOAD="$PRE" child
if [ $rc = 0 ] && has "runtime 1" && has "child_runtime 0" && has "child_preload $PRE"; then
	pass htlb_env_preload_back
else
	fail htlb_env_preload_back "$(got)"
fi

# ---------- HUGETLB_MORECORE=yes and HUGETLB_SHM=yes on a 2M pool ----------
if ! pool_add 48; then
	for t in 2m shrink shm elfmap elfmap_unlinked elfmap_restrict elfmap_w elfmap_w_changed elfmap_rw; do
		skip htlb_env_$t "$why"
	done
	exit $failed
fi
prog HUGETLB_MORECORE=yes heap 64
if [ $rc = 0 ] && has "runtime 1" && has "heap kps=2048 thp_kb=0"; then
	pass htlb_env_2m
else
	fail htlb_env_2m "$(got)"
fi
# HUGETLB_MORECORE_SHRINK=yes: 16 MiB freed goes back to the pool at once; without it,
# its 8 units are kept for the next mallocs.
prog HUGETLB_MORECORE=yes heap 16
kept=$(sed -n 's/^freed kps=//p' "$tmp/prog.out")
prog HUGETLB_MORECORE=yes HUGETLB_MORECORE_SHRINK=yes heap 16
if [ $rc = 0 ] && has "heap kps=2048 thp_kb=0" && ! has "freed kps=2048" && [ "$kept" = 2048 ]; then
	pass htlb_env_shrink "freed: kps $(sed -n 's/^freed kps=//p' "$tmp/prog.out"), kept without it: $kept"
else
	fail htlb_env_shrink "kept without it: '$kept'; with it: $(got)"
fi
prog HUGETLB_SHM=yes shm 8
if [ $rc = 0 ] && has "runtime 1" && has "shm kps=2048"; then
	pass htlb_env_shm
else
	fail htlb_env_shm "$(got)"
fi
# ---------- HUGETLB_ELFMAP=R on a program linked for huge pages ----------
# Its read-only segments (constants, text) go on hugetlbfs pages of a mount, its data
# stays; a forked child runs on them. A program not so linked keeps its segments.
EPROG=$tmp/elfmap_prog
mnt=$tmp/mnt
if ! ${CC:-cc} -std=gnu11 -O1 -g -Wall -Wextra -Werror -I"$top/src/htlb/include" \
	-o "$EPROG" "$top/tests/htlb/elfmap_prog.c" -L"$LIBDIR" -lhugetlbfs -Wl,-rpath,"$LIBDIR" \
	-Wl,-zcommon-page-size=2097152 -Wl,-zmax-page-size=2097152 >"$tmp/cc.err" 2>&1; then
	fail htlb_env_elfmap "the program does not build: $(oneline "$tmp/cc.err")"
elif ! is_root; then
	for t in elfmap elfmap_unlinked elfmap_restrict elfmap_w elfmap_w_changed elfmap_rw; do
		skip htlb_env_$t "needs root to mount hugetlbfs"
	done
elif ! mkdir -p "$mnt" || ! mount -t hugetlbfs -o pagesize=2M none "$mnt" 2>"$tmp/mount.err"; then
	for t in elfmap elfmap_unlinked elfmap_restrict elfmap_w elfmap_w_changed elfmap_rw; do
		skip htlb_env_$t "cannot mount hugetlbfs: $(oneline "$tmp/mount.err")"
	done
else
	trap 'umount "$mnt" 2>/dev/null; put_pool_back; rm -rf "$tmp"' EXIT
	run_timed plain env -u LD_PRELOAD "$EPROG"
	PROG=$EPROG prog HUGETLB_PATH="$mnt" HUGETLB_ELFMAP=R HUGETLB_VERBOSE=2
	if [ $rc = 0 ] && has "const kps=2048 hugetlbfs=1" && has "text kps=2048 hugetlbfs=1" &&
		has "data kps=4 hugetlbfs=0" && has "child ok" && has "parent ok" &&
		grep -qx "const kps=4 hugetlbfs=0" "$tmp/plain.out"; then
		pass htlb_env_elfmap "$(grep -c 'on huge pages of' "$tmp/prog.err") segments moved"
	else
		fail htlb_env_elfmap "plain: $(oneline "$tmp/plain.out" 5); $(got)"
	fi
	prog HUGETLB_PATH="$mnt" HUGETLB_ELFMAP=R HUGETLB_VERBOSE=2 heap 4
	if [ $rc = 0 ] && grep -q 'stays: its huge pages would hold other mappings' "$tmp/prog.err" &&
		! grep -q 'on huge pages of' "$tmp/prog.err"; then
		pass htlb_env_elfmap_unlinked
	else
		fail htlb_env_elfmap_unlinked "$(got)"
	fi
	PROG=$EPROG prog HUGETLB_PATH="$mnt" HUGETLB_ELFMAP=R HUGETLB_RESTRICT_EXE=other
	if [ $rc = 0 ] && has "const kps=4 hugetlbfs=0" && has "text kps=4 hugetlbfs=0"; then
		pass htlb_env_elfmap_restrict
	else
		fail htlb_env_elfmap_restrict "outside HUGETLB_RESTRICT_EXE: $(got)"
	fi
	# HUGETLB_ELFMAP=W: the writable segment (data, bss) too, but its RELRO part. A
	# forked child gets a copy of its own on THP: it runs and writes even with every
	# free huge page taken before the fork (sharing its parent's private hugetlb page,
	# its first write would need one from the pool, and it would die of SIGBUS).
	PROG=$EPROG prog HUGETLB_PATH="$mnt" HUGETLB_ELFMAP=W HUGETLB_VERBOSE=2 drain
	drained=$(sed -n 's/^drained //p' "$tmp/prog.out")
	if [ $rc = 0 ] && has "data kps=2048 hugetlbfs=1" && has "const kps=4 hugetlbfs=0" &&
		has "child data kps=4 hugetlbfs=0" && has "child ok" && has "parent ok" &&
		[ "${drained:-0}" -gt 0 ]; then
		pass htlb_env_elfmap_w "$drained free huge pages taken before fork"
	else
		fail htlb_env_elfmap_w "$(got)"
	fi
	# The program's mprotect of 4 KiB of it: first copied to THP in place, then done.
	PROG=$EPROG prog HUGETLB_PATH="$mnt" HUGETLB_ELFMAP=W mprotect
	if [ $rc = 0 ] && has "data kps=2048 hugetlbfs=1" && has "mprotect 0 0" &&
		has "data after kps=4 hugetlbfs=0" && has "child ok" && has "parent ok"; then
		pass htlb_env_elfmap_w_changed
	else
		fail htlb_env_elfmap_w_changed "$(got)"
	fi
	PROG=$EPROG prog HUGETLB_PATH="$mnt" HUGETLB_ELFMAP=RW
	if [ $rc = 0 ] && has "data kps=2048 hugetlbfs=1" && has "const kps=2048 hugetlbfs=1" &&
		has "text kps=2048 hugetlbfs=1" && has "child ok" && has "parent ok"; then
		pass htlb_env_elfmap_rw
	else
		fail htlb_env_elfmap_rw "$(got)"
	fi
	umount "$mnt"
fi
put_pool_back
exit $failed
