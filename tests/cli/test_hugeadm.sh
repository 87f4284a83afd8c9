#!/usr/bin/env bash
# test_hugeadm.sh - tests superpage-hugeadm and superpage-hugectl (superpage run by those
# names) on the real machine: pools, THP, output, refusals, and programs they run.
# Usage: tests/cli/test_hugeadm.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Every sysfs value it changes is put back, even on failure.
set -u
B=${1:?usage: tests/cli/test_hugeadm.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$(cd "$B" && pwd)/superpage
THP=/sys/kernel/mm/transparent_hugepage
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

trap 'restore; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

if [ ! -x "$SP" ]; then
	fail hugeadm_built "$SP is missing: build with make B=$B"
	exit 1
fi
# The command by the names it answers to, as make install links them.
ln -s "$SP" "$tmp/superpage-hugeadm"
ln -s "$SP" "$tmp/superpage-hugectl"
ADM=$tmp/superpage-hugeadm
CTL=$tmp/superpage-hugectl
adm() { "$ADM" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
ctl() { "$CTL" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

# The row of SIZE (bytes) in --pool-list: "Size Minimum Current Maximum Default".
pool_row() { awk -v s="$1" '$1 == s' "$tmp/out"; }

# Needs root and the 2M pool; says SKIP NAME and returns 1 otherwise.
need_pool() { # name
	if ! is_root; then
		skip "$1" "needs root to set the 2M pool"
		return 1
	elif [ ! -w $P2M/nr_hugepages ]; then
		skip "$1" "no 2M hugetlb pages on this machine"
		return 1
	fi
}

# One line on stderr starting "superpage: ", status 2, nothing on stdout.
usage_error() { # name what
	if [ "$rc" != 2 ]; then
		fail "$1" "$2 exited $rc, want 2"
	elif [ "$(nlines "$tmp/err")" != 1 ] || ! grep -q '^superpage: ' "$tmp/err"; then
		fail "$1" "$2 said, on stderr: $(head -c 300 "$tmp/err")"
	elif [ -s "$tmp/out" ]; then
		fail "$1" "$2 printed on stdout: $(head -c 200 "$tmp/out")"
	else
		return 0
	fi
	return 1
}

# ---------- hugeadm ----------

test_pool_min() {
	local name=hugeadm_pool_min before row
	need_pool $name || return
	remember $P2M/nr_hugepages
	before=$(cat $P2M/nr_hugepages)
	adm --pool-pages-min 2M:$((before + 64)) --pool-list
	if [ "$(cat $P2M/nr_hugepages)" -lt $((before + 64)) ]; then
		skip $name "the kernel gave $(cat $P2M/nr_hugepages) of $((before + 64)) 2M pages"
		restore
		return
	fi
	row=$(pool_row 2097152)
	# Minimum and Current are the static pool; Maximum adds the overcommit.
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
	elif ! head -1 "$tmp/out" | grep -qE '^ *Size +Minimum +Current +Maximum +Default$'; then
		fail $name "no header: $(head -1 "$tmp/out")"
	elif [ "$(echo "$row" | awk '{print $2, $3}')" != "$((before + 64)) $((before + 64))" ]; then
		fail $name "row '$row', want Minimum and Current $((before + 64))"
	else
		pass $name
	fi
	adm --pool-pages-min 2MB:+4
	local plus=$(cat $P2M/nr_hugepages) plus_rc=$rc
	adm --pool-pages-min DEFAULT:-4
	if [ "$plus_rc" != 0 ] || [ "$plus" != $((before + 68)) ]; then
		fail hugeadm_pool_relative "+4 gave $plus (exit $plus_rc), want $((before + 68))"
	elif [ "$rc" != 0 ] || [ "$(cat $P2M/nr_hugepages)" != $((before + 64)) ]; then
		fail hugeadm_pool_relative "-4 gave $(cat $P2M/nr_hugepages) (exit $rc), want $((before + 64))"
	else
		pass hugeadm_pool_relative
	fi
	adm --pool-pages-min 2M:$before
	if [ "$rc" != 0 ] || [ "$(cat $P2M/nr_hugepages)" != "$before" ]; then
		fail hugeadm_pool_back "setting $before gave $(cat $P2M/nr_hugepages), exit $rc"
	else
		pass hugeadm_pool_back
	fi
	restore
}

test_pool_max() {
	local name=hugeadm_pool_max min over
	need_pool $name || return
	remember $P2M/nr_overcommit_hugepages
	min=$(($(cat $P2M/nr_hugepages) - $(cat $P2M/surplus_hugepages)))
	adm --pool-pages-max 2M:$((min + 16)) --pool-list
	over=$(cat $P2M/nr_overcommit_hugepages)
	if [ "$rc" != 0 ] || [ "$over" != 16 ]; then
		fail $name "exit $rc, nr_overcommit_hugepages $over, want 16: $(oneline "$tmp/err")"
	elif [ "$(pool_row 2097152 | awk '{print $4}')" != $((min + 16)) ]; then
		fail $name "Maximum in '$(pool_row 2097152)', want $((min + 16))"
	else
		pass $name
	fi
	adm --pool-pages-max 2M:-16
	if [ "$rc" != 0 ] || [ "$(cat $P2M/nr_overcommit_hugepages)" != 0 ]; then
		fail hugeadm_pool_max_relative "-16 left $(cat $P2M/nr_overcommit_hugepages), exit $rc"
	else
		pass hugeadm_pool_max_relative
	fi
	restore
}

test_sizes() {
	local name=hugeadm_page_sizes want=() s
	for s in /sys/kernel/mm/hugepages/hugepages-*kB; do
		[ -d "$s" ] || continue
		s=${s##*-}
		want+=($((${s%kB} * 1024)))
	done
	adm --page-sizes-all
	if [ "$rc" != 0 ] || [ "$(sort -n "$tmp/out" | tr '\n' ' ')" != "$(printf '%s\n' "${want[@]}" | sort -n | tr '\n' ' ')" ]; then
		fail $name "--page-sizes-all printed '$(tr '\n' ' ' <"$tmp/out")', want '${want[*]}'"
		return
	fi
	adm --page-sizes
	# A size is listed when its pool may hold pages (Maximum above 0).
	for s in "${want[@]}"; do
		local d=/sys/kernel/mm/hugepages/hugepages-$((s / 1024))kB
		local max=$(($(cat "$d/nr_hugepages") - $(cat "$d/surplus_hugepages") + $(cat "$d/nr_overcommit_hugepages")))
		if [ "$max" -gt 0 ] && ! grep -qx "$s" "$tmp/out"; then
			fail $name "--page-sizes leaves out $s (maximum $max)"
			return
		elif [ "$max" = 0 ] && grep -qx "$s" "$tmp/out"; then
			fail $name "--page-sizes lists $s, which has no pool"
			return
		fi
	done
	adm --list-all-mounts
	if [ "$rc" != 0 ] || ! head -1 "$tmp/out" | grep -q '^Mount Point  *Options$' ||
		[ "$(($(nlines "$tmp/out") - 1))" != "$(awk '$3 == "hugetlbfs"' /proc/mounts | wc -l)" ]; then
		fail $name "--list-all-mounts: exit $rc: $(oneline "$tmp/out")"
		return
	fi
	pass $name
}

test_thp() {
	local name=hugeadm_thp before
	if ! is_root || [ ! -w $THP/enabled ]; then
		skip $name "needs root and THP"
		return
	fi
	remember $THP/enabled
	before=$(sysfs_read $THP/enabled)
	adm --thp-never
	if [ "$rc" != 0 ] || [ "$(sysfs_read $THP/enabled)" != never ]; then
		fail $name "--thp-never: exit $rc, enabled is $(sysfs_read $THP/enabled)"
		restore
		return
	fi
	adm "--thp-$before"
	if [ "$rc" != 0 ] || [ "$(sysfs_read $THP/enabled)" != "$before" ]; then
		fail $name "--thp-$before: exit $rc, enabled is $(sysfs_read $THP/enabled)"
	else
		pass $name
	fi
	restore
}

test_bad_args() {
	local name=hugeadm_bad_args args
	for args in "" "--pool-pages-min" "--pool-pages-min 2M" "--pool-pages-min 3M:4" \
		"--pool-pages-min 2M:x" "--pool-pages-min=2M:+-4" "--pool-pages-max 2M:9999999999999999999999" \
		"--no-such-option" "--pool-list extra" "--create-mounts" "--set-shm-group=0"; do
		# shellcheck disable=SC2086
		adm $args
		usage_error $name "hugeadm '$args'" || return
	done
	adm --pool-pages-min 2M:0 --bogus
	[ "$rc" = 2 ] || { fail $name "a bad option after a good one exited $rc"; return; }
	adm --help
	if [ "$rc" != 0 ] || ! grep -q '^usage: superpage-hugeadm' "$tmp/out"; then
		fail $name "--help: exit $rc"
	else
		pass $name
	fi
}

test_not_root() {
	local name=hugeadm_not_root why before
	why=$(nobody_blocker)
	if ! is_root || [ -n "$why" ]; then
		skip $name "${why:-needs root to become another user}"
		return
	fi
	before=$(cat $P2M/nr_hugepages 2>/dev/null)
	for args in "--pool-pages-min 2M:1" "--pool-pages-max 2M:1" "--thp-never"; do
		# shellcheck disable=SC2086
		"${as_nobody[@]}" "$ADM" $args >"$tmp/out" 2>"$tmp/err"
		rc=$?
		usage_error $name "hugeadm $args as user 65534" || return
		grep -q 'needs root' "$tmp/err" || { fail $name "no 'needs root': $(cat "$tmp/err")"; return; }
	done
	"${as_nobody[@]}" "$ADM" --pool-list >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ] || [ "$(cat $P2M/nr_hugepages 2>/dev/null)" != "$before" ]; then
		fail $name "--pool-list as user 65534 exited $rc, or the pool changed"
	else
		pass $name
	fi
}

# ---------- hugectl ----------

test_hugectl_dry_run() {
	local name=hugectl_dry_run
	ctl --dry-run --heap --shm ./prog arg
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
	elif ! grep -qx "export SUPERPAGE_BACKING='2m'" "$tmp/out" ||
		! grep -qx "export SUPERPAGE_SHM='yes'" "$tmp/out" ||
		! grep -q "^export LD_PRELOAD='.*libsuperpage-run.so" "$tmp/out" ||
		[ "$(tail -1 "$tmp/out")" != "exec './prog' 'arg'" ]; then
		fail $name "printed: $(oneline "$tmp/out" 5)"
	else
		pass $name
	fi
}

test_hugectl_said() {
	local name=hugectl_said opt
	for opt in --no-reserve --data --bss --share-text --no-preload --library-use-path \
		"--library-path /x"; do
		# shellcheck disable=SC2086
		ctl --dry-run $opt true
		if [ "$rc" != 0 ] || [ "$(grep -c "hugectl: ${opt%% *}" "$tmp/err")" != 1 ]; then
			fail $name "$opt: exit $rc, stderr: $(oneline "$tmp/err")"
			return
		fi
	done
	ctl --dry-run --data true
	grep -q "SUPERPAGE_TEXT='main'" "$tmp/out" || { fail $name "--data is not --text"; return; }
	for args in "--heap=3M true" "--heap --thp true" "--bogus true" "--heap" "--verbose"; do
		# shellcheck disable=SC2086
		ctl $args
		usage_error $name "hugectl '$args'" || return
	done
	pass $name
}

test_hugectl_runs() {
	local name=hugectl_runs why
	why=$(preload_blocker "$B" "$B/libsuperpage-run.so")
	if [ -n "$why" ]; then
		skip $name "$why"
		return
	fi
	ctl --heap true
	if [ "$rc" != 0 ]; then
		fail $name "--heap true exited $rc: $(oneline "$tmp/err")"
		return
	fi
	ctl --heap false
	[ "$rc" = 1 ] || { fail $name "--heap false exited $rc, want 1"; return; }
	ctl --heap no-such-program-here
	[ "$rc" = 127 ] || { fail $name "a missing program exited $rc, want 127"; return; }
	pass $name
}

# The heap's large allocations on THP (--thp) and on the 2M pool (--heap), as the
# runtime's --stats account reports them.
test_hugectl_backing() {
	local name=hugectl_thp why thp hugetlb
	local prog="b = bytearray(64 << 20); b[::4096] = b'x' * (len(b) // 4096)"
	why=$(preload_blocker "$B" "$B/libsuperpage-run.so")
	[ -n "$why" ] || [ -n "$PY" ] || why="no python3"
	if [ -n "$why" ]; then
		skip $name "$why"
		skip hugectl_heap "$why"
		skip hugectl_heap_shm "$why"
		return
	fi
	if [ "$(sysfs_read $THP/enabled 2>/dev/null)" = never ]; then
		skip $name "THP is never here"
	else
		SUPERPAGE_STATS=$tmp/thp.json "$CTL" --thp "$PY" -c "$prog" >"$tmp/out" 2>"$tmp/err"
		rc=$?
		read -r thp hugetlb < <("$PY" -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); print(d["thp_bytes"], d["hugetlb_bytes"])' "$tmp/thp.json" 2>/dev/null)
		if [ "$rc" != 0 ] || [ "${thp:-0}" -lt $((4 << 20)) ] || [ "${hugetlb:-1}" != 0 ]; then
			fail $name "exit $rc, thp_bytes ${thp:-?}, hugetlb_bytes ${hugetlb:-?}: $(oneline "$tmp/err")"
		else
			pass $name "$((thp >> 20)) MiB on THP"
		fi
	fi
	if ! need_pool hugectl_heap; then
		skip hugectl_heap_shm "needs root and 2M pages"
		return
	fi
	remember $P2M/nr_hugepages
	adm --pool-pages-min 2M:+64
	if [ "$rc" != 0 ]; then
		skip hugectl_heap "the kernel did not give 64 more 2M pages: $(oneline "$tmp/err")"
		skip hugectl_heap_shm "the kernel did not give 64 more 2M pages"
		restore
		return
	fi
	SUPERPAGE_STATS=$tmp/heap.json "$CTL" --heap=2M "$PY" -c "$prog" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	read -r thp hugetlb < <("$PY" -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); print(d["thp_bytes"], d["hugetlb_bytes"])' "$tmp/heap.json" 2>/dev/null)
	if [ "$rc" != 0 ] || [ "${hugetlb:-0}" -lt $((2 << 20)) ]; then
		fail hugectl_heap "exit $rc, hugetlb_bytes ${hugetlb:-?}: $(oneline "$tmp/err")"
	else
		pass hugectl_heap "$((hugetlb >> 20)) MiB on 2M hugetlb"
	fi
	# --heap --shm: the heap's block and a shared anonymous mapping (python's
	# mmap(-1, ...)) on 2 MiB pages while the program runs; plain, on 4 KiB pages.
	cat >"$tmp/heap_shm.py" <<'PY'
import ctypes, mmap
b = bytearray(64 << 20); b[::4096] = b'x' * (len(b) // 4096)
m = mmap.mmap(-1, 8 << 20); m[::4096] = b'y' * 2048
def kps(addr):
    cur = None
    for l in open('/proc/self/smaps'):
        f = l.split()
        if '-' in f[0] and not f[0].endswith(':'):
            lo, hi = (int(x, 16) for x in f[0].split('-'))
            cur = lo <= addr < hi
        elif cur and f[0] == 'KernelPageSize:':
            return int(f[1])
print('heap', kps(ctypes.addressof(ctypes.c_char.from_buffer(b)) + (32 << 20)), b[4096])
print('shm', kps(ctypes.addressof(ctypes.c_char.from_buffer(m))), m[4096])
PY
	"$CTL" --heap --shm "$PY" "$tmp/heap_shm.py" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	"$PY" "$tmp/heap_shm.py" >"$tmp/plain.out" 2>&1
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "$(printf 'heap 2048 120\nshm 2048 121')" ] ||
		[ "$(cat "$tmp/plain.out")" != "$(printf 'heap 4 120\nshm 4 121')" ]; then
		fail hugectl_heap_shm "exit $rc: $(oneline "$tmp/out") $(oneline "$tmp/err"); plain: $(oneline "$tmp/plain.out")"
	else
		pass hugectl_heap_shm
	fi
	restore
}

test_pool_min
test_pool_max
test_sizes
test_thp
test_bad_args
test_not_root
test_hugectl_dry_run
test_hugectl_said
test_hugectl_runs
test_hugectl_backing
exit $failed
