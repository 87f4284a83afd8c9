#!/usr/bin/env bash
# test_htlb.sh - libhugetlbfs.so.0 on the real machine: its exports and version nodes,
# a program built against our hugetlbfs.h and linked with -lhugetlbfs (tests/htlb/
# htlb_prog.c) getting hugetlb memory from a 2M pool set up and put back, strict
# failure and GHR_FALLBACK when the pool cannot serve, an unlinked hugetlb fd, and what
# HUGETLB_* variables it does not act on said once, and the machine as the program sees
# it (its /proc/meminfo, /proc/mounts and sysfs sizes faked). Usage: tests/cli/test_htlb.sh
# BUILD_DIR. Prints "PASS name", "FAIL name: why" or "SKIP name: why" per test.
set -u
B=${1:?usage: tests/cli/test_htlb.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SP=$B/superpage
LIBDIR=$(cd "$B/libhugetlbfs" 2>/dev/null && pwd)
LIB=$LIBDIR/libhugetlbfs.so.0
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"
tmp_with_pool

if [ ! -f "$LIB" ]; then
	fail htlb_built "$B/libhugetlbfs/libhugetlbfs.so.0 is missing (make builds it)"
	exit 1
fi

# ---------- the library's exports ----------
want="__tp_kernel_default_hugepage_size_reset@@HTLBFS_2.1
free_huge_pages@@HTLBFS_2.0
free_hugepage_region@@HTLBFS_2.1
get_huge_pages@@HTLBFS_2.0
get_hugepage_region@@HTLBFS_2.1
gethugepagesize@@VERS_1.0
gethugepagesizes@@HTLBFS_2.1
getpagesizes@@HTLBFS_2.1
hugetlbfs_find_path@@VERS_1.0
hugetlbfs_find_path_for_size@@HTLBFS_2.1
hugetlbfs_test_path@@VERS_1.0
hugetlbfs_unlinked_fd@@VERS_1.0
hugetlbfs_unlinked_fd_for_size@@HTLBFS_2.1"
got=$(nm -D --defined-only "$LIB" | awk '$2 == "T" { print $3 }' | LC_ALL=C sort)
others=$(nm -D --defined-only "$LIB" | awk '$2 != "T" && $2 != "A" { print $3 }')
nodes=$(objdump -T "$LIB" | awk '$2 == "g" && $4 == "*ABS*" { print $NF }' | LC_ALL=C sort | tr '\n' ' ')
soname=$(objdump -p "$LIB" | awk '$1 == "SONAME" { print $2 }')
if [ "$got" != "$(LC_ALL=C sort <<<"$want")" ]; then
	fail htlb_exports "nm -D shows: $(tr '\n' ' ' <<<"$got")"
elif [ -n "$others" ]; then
	fail htlb_exports "exports more than functions: $(tr '\n' ' ' <<<"$others")"
elif [ "$nodes" != "HTLBFS_2.0 HTLBFS_2.1 VERS_1.0 " ]; then
	fail htlb_exports "version nodes in objdump -T: '$nodes'"
elif [ "$soname" != libhugetlbfs.so.0 ]; then
	fail htlb_exports "soname '$soname'"
else
	pass htlb_exports
fi

# ---------- a program linked with -lhugetlbfs ----------
PROG=$tmp/htlb_prog
# A sanitized library needs the sanitizer's runtime first: the program is built with it.
san=()
if objdump -p "$LIB" | grep -q 'NEEDED.*libasan'; then
	san=(-fsanitize=address,undefined)
fi
if ! ${CC:-cc} -std=gnu11 -O1 -g -Wall -Wextra -Werror "${san[@]}" -I"$top/src/htlb/include" \
	-o "$PROG" "$top/tests/htlb/htlb_prog.c" -L"$LIBDIR" -lhugetlbfs \
	-Wl,-rpath,"$LIBDIR" >"$tmp/cc.err" 2>&1; then
	fail htlb_link "the program does not build: $(oneline "$tmp/cc.err")"
	exit 1
fi
refs=$(objdump -T "$PROG" | awk '/UND/ && /(VERS_1.0|HTLBFS_2.0|HTLBFS_2.1)/' | wc -l)
if ! ldd "$PROG" | grep -q "libhugetlbfs.so.0 => $LIB"; then
	fail htlb_link "the program does not load $LIB: $(ldd "$PROG" | grep huge)"
elif [ "$refs" -lt 6 ]; then
	fail htlb_link "the program binds $refs versioned libhugetlbfs symbols, want 6 or more"
else
	pass htlb_link
fi

prog() { run_timed prog "$PROG" "$@"; }
P2M=/sys/kernel/mm/hugepages/hugepages-2048kB
kernel_default_kb=$(awk '/^Hugepagesize:/ { print $2 }' /proc/meminfo)

prog sizes
if [ $rc != 0 ]; then
	fail htlb_sizes "exited $rc: $(oneline "$tmp/prog.err")"
elif [ -z "$kernel_default_kb" ]; then
	grep -q '^default -1$' "$tmp/prog.out" && pass htlb_sizes ||
		fail htlb_sizes "no huge pages here, but: $(oneline "$tmp/prog.out")"
elif ! grep -q "^default $((kernel_default_kb * 1024))\$" "$tmp/prog.out"; then
	fail htlb_sizes "want default $((kernel_default_kb * 1024)): $(oneline "$tmp/prog.out")"
elif ! grep -q "^pagesizes $(getconf PAGESIZE) $((kernel_default_kb * 1024))" "$tmp/prog.out"; then
	fail htlb_sizes "want base then default size first: $(oneline "$tmp/prog.out")"
else
	pass htlb_sizes
fi

# What the library does not act on is said once; HUGETLB_VERBOSE=0 says nothing.
# (HUGETLB_MORECORE, SHM and ELFMAP are acted on: tests/cli/test_htlb_env.sh.)
HUGETLB_SHARE=1 HUGETLB_NO_PREFAULT=1 HUGETLB_NO_RESERVE=yes run_timed said "$PROG" sizes
n_said=$(grep -c '^superpage libhugetlbfs: ' "$tmp/said.err")
HUGETLB_SHARE=1 HUGETLB_VERBOSE=0 run_timed quiet "$PROG" sizes
if [ "$n_said" != 3 ] || ! grep -q 'HUGETLB_SHARE=1 accepted but not acted on' "$tmp/said.err" ||
	! grep -q 'HUGETLB_NO_RESERVE=yes accepted but not acted on: huge pages are always reserved' \
		"$tmp/said.err"; then
	fail htlb_env_said "want 3 lines, for HUGETLB_SHARE, _NO_PREFAULT and _NO_RESERVE: $(oneline "$tmp/said.err")"
elif [ -s "$tmp/quiet.err" ]; then
	fail htlb_env_said "HUGETLB_VERBOSE=0 printed: $(oneline "$tmp/quiet.err")"
else
	pass htlb_env_said
fi

# ---------- the machine as the program sees it ----------
# The library reads /proc/meminfo, /proc/mounts and the sysfs sizes through libc, so a
# program that interposes open(2) and opendir(3) (tests/htlb/view.c, as libhugetlbfs'
# own tests do) shows it another machine.
VIEW=$tmp/view.so
if ! ${CC:-cc} -std=gnu11 -O1 -Wall -Wextra -Werror -shared -fPIC -o "$VIEW" \
	"$top/tests/htlb/view.c" -ldl >"$tmp/cc.err" 2>&1; then
	fail htlb_view_built "tests/htlb/view.c does not build: $(oneline "$tmp/cc.err")"
	exit 1
fi
# (A sanitized program wants the sanitizer's runtime first of all libraries: a preload
# goes after it.)
pre=$VIEW
if [ ${#san[@]} -gt 0 ]; then
	pre="$(${CC:-cc} -print-file-name=libasan.so):$VIEW"
fi
view() { LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$pre" "$@"; }
grep -vi '^hugepage' /proc/meminfo >"$tmp/meminfo"
base=$(getconf PAGESIZE)
VIEW_MEMINFO=$tmp/meminfo VIEW_SIZES=none VIEW_MOUNTS=/dev/null HUGETLB_DEFAULT_PAGE_SIZE=2M \
	view run_timed prog "$PROG" sizes
if [ $rc = 0 ] && [ "$(cat "$tmp/prog.out")" = "default -1
pagesizes $base
path none" ]; then
	pass htlb_view_nohuge
else
	fail htlb_view_nohuge "exited $rc: $(oneline "$tmp/prog.out") $(oneline "$tmp/prog.err")"
fi
mkdir -p "$tmp/sizes/hugepages-64kB" "$tmp/sizes/hugepages-1024kB" "$tmp/sizes/hugepages-2048kB"
printf 'MemTotal: 1000 kB\nHugepagesize: 2048 kB\n' >"$tmp/meminfo2m"
VIEW_MEMINFO=$tmp/meminfo2m VIEW_SIZES=$tmp/sizes view run_timed prog "$PROG" sizes
if [ $rc = 0 ] && grep -qx "pagesizes $base 2097152 65536 1048576" "$tmp/prog.out"; then
	pass htlb_view_sizes
else
	fail htlb_view_sizes "want the default then the others ascending: exited $rc:" \
		"$(oneline "$tmp/prog.out") $(oneline "$tmp/prog.err")"
fi
# A hugetlbfs mount the program is not shown: no fd (as libhugetlbfs' empty_mounts
# test wants), where with no mount at all the library makes a memfd.
mnt=$tmp/mnt
if [ "$(id -u)" != 0 ] || [ "$kernel_default_kb" != 2048 ]; then
	skip htlb_view_empty_mounts "needs root and 2M huge pages to mount hugetlbfs"
elif ! mkdir -p "$mnt" || ! mount -t hugetlbfs -o pagesize=2M none "$mnt" 2>"$tmp/mount.err"; then
	skip htlb_view_empty_mounts "cannot mount hugetlbfs: $(oneline "$tmp/mount.err")"
else
	trap 'umount "$mnt" 2>/dev/null; put_pool_back; rm -rf "$tmp"' EXIT
	VIEW_MOUNTS=/dev/null view run_timed hidden "$PROG" sizes
	VIEW_MOUNTS=/dev/null view run_timed prog "$PROG" fd
	run_timed shown "$PROG" sizes
	umount "$mnt"
	if ! grep -qx 'path none' "$tmp/hidden.out"; then
		fail htlb_view_empty_mounts "hidden mount found: $(oneline "$tmp/hidden.out")"
	elif ! grep -q '^null errno=' "$tmp/prog.out"; then
		fail htlb_view_empty_mounts "want no fd: $(oneline "$tmp/prog.out") $(oneline "$tmp/prog.err")"
	elif ! grep -qx "path $mnt" "$tmp/shown.out"; then
		fail htlb_view_empty_mounts "the mount shown is not used: $(oneline "$tmp/shown.out")"
	else
		pass htlb_view_empty_mounts
	fi
fi

if [ "$kernel_default_kb" != 2048 ] || [ ! -d $P2M ]; then
	for t in ghp_huge ghp_strict region_fallback unlinked_fd; do
		skip htlb_$t "the default huge page size here is not 2M"
	done
	exit $failed
fi

# Pages a new mapping can get now (others may hold some).
avail() { echo $(($(cat $P2M/free_hugepages) - $(cat $P2M/resv_hugepages))); }

# The pool cannot serve the request: strict fails with ENOMEM, GHR_FALLBACK works.
want_pages=$(($(avail) + 1))
prog strict $want_pages
if grep -q '^null errno=12$' "$tmp/prog.out"; then
	pass htlb_ghp_strict
elif grep -q '^ok' "$tmp/prog.out" && [ "$(avail)" -ge "$want_pages" ]; then
	skip htlb_ghp_strict "others added pages to the 2M pool meanwhile"
else
	fail htlb_ghp_strict "$want_pages pages from a pool with fewer: $(oneline "$tmp/prog.out")"
fi
prog fallback $(($(avail) + 1))
if [ $rc = 0 ] && grep -q '^ok kps=' "$tmp/prog.out"; then
	pass htlb_region_fallback "$(cat "$tmp/prog.out")"
else
	fail htlb_region_fallback "exited $rc: $(oneline "$tmp/prog.out") $(oneline "$tmp/prog.err")"
fi

if ! pool_add 4; then
	skip htlb_ghp_huge "$why"
	skip htlb_unlinked_fd "$why"
	exit $failed
fi
prog ghp 2
if [ $rc = 0 ] && grep -q '^ok kps=2048$' "$tmp/prog.out"; then
	pass htlb_ghp_huge
else
	fail htlb_ghp_huge "exited $rc: $(oneline "$tmp/prog.out") $(oneline "$tmp/prog.err")"
fi
prog fd
if [ $rc = 0 ] && grep -q '^ok kps=2048$' "$tmp/prog.out"; then
	pass htlb_unlinked_fd
else
	fail htlb_unlinked_fd "exited $rc: $(oneline "$tmp/prog.out") $(oneline "$tmp/prog.err")"
fi
put_pool_back
exit $failed
