#!/usr/bin/env bash
# test_fork.sh - fork as the kernel forks under every backing (tests/runtime/fork/
# forksnap.c): a thread writing while another forks, every child must see a snapshot
# (a later write seen means every earlier one is); a forking thread with its alternate
# signal stack in the heap, a second thread, the name service used and a FILE open,
# no child may die. Under 2m and 1g with room in the pool, with the pool empty at the
# fork (the heap makes room), and without the privilege to make it (said once). Under 2m,
# a heap's hugetlb mappings counted as it grows (tests/runtime/fork/forkmaps.c), and
# the huge pages forks ask the kernel about counted over many forks.
# Usage: tests/runtime/fork/test_fork.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test. Every sysfs value it changes is put
# back, even on failure or Ctrl-C. The forks are counted, never timed.
set -u
B=${1:?usage: tests/runtime/fork/test_fork.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start fork fork/forksnap fork/forkmaps
P1G=/sys/kernel/mm/hugepages/hugepages-1048576kB

# Reads the parent's --stats line of the last sprun_stats: its "fork" account must say
# shared forks (at least 1), units moved to make room (none, or some: want "none" or
# "some") and forks short of room (the same). Sets why; "skip: ..." if the heap had
# no 1 GiB page to share (the kernel refused it: a fall from 1g).
check_fork_stats() { # moved short
	why=$("$PY" - "$tmp/stats.json" "$1" "$2" 2>&1 <<'PY'
import json, sys
path, moved, short = sys.argv[1:4]
try:
    lines = [json.loads(l) for l in open(path) if l.strip()]
except (OSError, ValueError) as e:
    print("cannot read the --stats file: %s" % e)
    sys.exit()
mine = [d for d in lines if d.get("comm") == "forksnap"]
if len(mine) != 1:
    print("%d --stats lines from forksnap, want 1 (the parent's)" % len(mine))
    sys.exit()
f = mine[0].get("fork")
if not isinstance(f, dict):
    print("no fork account in --stats: %r" % f)
elif mine[0].get("falls", {}).get("1g") and f.get("moved_units", 0) == 0:
    print("skip: the 1 GiB block fell from 1g: %r" % mine[0]["falls"]["1g"])
elif f.get("shared", 0) < 1:
    print("no fork shared hugetlb memory: %r" % f)
elif (f.get("moved_units", 0) > 0) != (moved == "some"):
    print("units moved to make room: %r, want %s" % (f.get("moved_units"), moved))
elif (f.get("short", 0) > 0) != (short == "some"):
    print("forks short of room: %r, want %s" % (f.get("short"), short))
PY
)
	[ -n "$why" ]
}

# forksnap's line, run plain and under superpage run with backing: the same line
# ("N forks, 0 children wrong, 0 died; parent's heap right") both ways.
test_fork() { # mode:backing
	local mode=${1%%:*} backing=${1#*:} forks=200
	local name=fork_${mode}_$backing
	need_run "$name" || return
	[ "$mode" = nss ] && forks=50
	plain "$P/forksnap" "$mode" $forks 40
	sprun --backing "$backing" -- "$P/forksnap" "$mode" $forks 40
	judge "$name" "$(oneline "$tmp/sp.out" 1)"
}

# The same under 2m: with room in the pool for every huge page the child shares
# (room), with the pool taken whole by the heap before the fork (empty: the heap
# makes room), and as a user who may not use userfaultfd (short: said once, and the
# parent's heap right; its children are not judged, as superpage-run(7) says).
test_fork_2m() { # mode:room|empty|short
	local mode=${1%%:*} pool=${1#*:} forks=200 mib=40 moved=none short=none
	local name=fork_${mode}_2m_$pool
	local as=()
	need_run "$name" || return
	if ! have_python; then
		skip "$name" "no python3 to read JSON"
		return
	fi
	[ "$mode" = nss ] && forks=40
	case $pool in
	room) pool_2m 64 || { skip "$name" "$why"; return; } ;;
	empty) mib=80 moved=some
		pool_2m 16 || { skip "$name" "$why"; return; } ;;
	short) mib=80 short=some
		if ! command -v setpriv >/dev/null; then
			skip "$name" "no setpriv to run as another user"
			return
		fi
		if [ "$(cat /proc/sys/vm/unprivileged_userfaultfd 2>/dev/null)" != 0 ]; then
			skip "$name" "vm.unprivileged_userfaultfd is not 0: any user may make room"
			return
		fi
		as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		pool_2m 16 || { skip "$name" "$why"; return; }
		chmod 755 "$tmp" ;;
	esac
	plain "$P/forksnap" "$mode" $forks $mib
	rm -f "$tmp/stats.json"
	: >"$tmp/stats.json"
	chmod 666 "$tmp/stats.json" # (short: written as another user)
	limited "$tmp/sp.out" "$tmp/sp.err" "${as[@]}" "$SP" run --stats="$tmp/stats.json" \
		--backing 2m --verbose -- "$P/forksnap" "$mode" $forks $mib
	src=$rc
	restore
	local said
	said=$(grep -c '^superpage: fork: ' "$tmp/sp.err")
	if [ "$pool" = short ]; then
		if [ "$said" != 1 ]; then
			fail "$name" "said the fork was short of room $said times, want once: $(oneline "$tmp/sp.err")"
		elif ! grep -q " 0 children wrong, .*parent's heap right" "$tmp/sp.out"; then
			fail "$name" "a child or the parent saw a wrong byte: $(oneline "$tmp/sp.out") $(oneline "$tmp/sp.err")"
		elif check_fork_stats $moved $short; then
			fail "$name" "$why"
		else
			pass "$name" "$(oneline "$tmp/sp.out" 1)"
		fi
		return
	fi
	if differs || check_fork_stats $moved $short; then
		fail "$name" "$why"
	elif [ "$pool" = empty ] && [ "$said" != 1 ]; then
		fail "$name" "said the room it made $said times, want once: $(oneline "$tmp/sp.err")"
	else
		pass "$name" "$(oneline "$tmp/sp.out" 1)"
	fi
}

# Under 1g, a block of 1 GiB on a 1 GiB page: with a free 1 GiB page for the copy on
# write (room), and with none (empty: the page is moved to THP to make room).
test_fork_1g() { # mode:room|empty
	local mode=${1%%:*} pool=${1#*:} moved=none n
	local name=fork_${mode}_1g_$pool
	need_run "$name" || return
	if ! is_root; then
		skip "$name" "needs root to set the 1G pool"
		return
	elif [ ! -w $P1G/nr_hugepages ]; then
		skip "$name" "no 1G hugetlb pages on this machine"
		return
	elif ! have_python; then
		skip "$name" "no python3 to read JSON"
		return
	fi
	n=2
	[ "$pool" = empty ] && n=1 moved=some
	set_sysfs $P1G/nr_hugepages $(($(cat $P1G/nr_hugepages) - $(cat $P1G/free_hugepages) + n))
	if [ "$(cat $P1G/free_hugepages)" -lt $n ]; then
		skip "$name" "the kernel gave $(cat $P1G/free_hugepages) of $n free 1G pages"
		restore
		return
	fi
	pool_2m 48 || { skip "$name" "$why"; restore; return; }
	plain "$P/forksnap" "$mode" 8 8 1024
	sprun_stats --backing 1g -- "$P/forksnap" "$mode" 8 8 1024
	restore
	if differs; then
		fail "$name" "$why"
	elif check_fork_stats $moved none; then
		case $why in
		skip:*) skip "$name" "${why#skip: }" ;;
		*) fail "$name" "$why" ;;
		esac
	else
		pass "$name" "$(oneline "$tmp/sp.out" 1)"
	fi
}

# Under 2m the heap's hugetlb mappings grow far slower than the heap (fork copies each
# mapping's page tables apart): forkmaps holds 32, then 128, then 256 MiB of blocks of
# 16 KiB to 4 MiB (freeing some on the way) and forks at each. From 32 to 256 MiB the
# mappings of 2 MiB pages may grow by at most 24 (a mapping per unit or block: about
# 100 more), and hold 3/4 of the blocks' memory or more; each child sees every block.
test_fork_maps() {
	local name=fork_maps_2m lo hi mib size maps
	need_run "$name" || return
	pool_2m 400 || { skip "$name" "$why"; return; }
	sprun --backing 2m -- "$P/forkmaps" 32 128 256
	restore
	read -r size lo mib < <(head -n 1 "$tmp/sp.out")
	read -r size hi mib < <(tail -n 1 "$tmp/sp.out")
	if [ "$src" != 0 ]; then
		fail "$name" "exited $src: $(oneline "$tmp/sp.err")"
	elif [ "${size:-}" != 256 ] || [ -z "${lo:-}" ]; then
		fail "$name" "no lines for 32 and 256 MiB: $(oneline "$tmp/sp.out")"
	elif [ "${mib:-0}" -lt 192 ]; then
		fail "$name" "only ${mib:-0} MiB on 2 MiB hugetlb pages with 256 MiB held: $(oneline "$tmp/sp.err")"
	elif [ $((hi - lo)) -gt 24 ]; then
		fail "$name" "$lo hugetlb mappings at 32 MiB, $hi at 256 MiB (MiB held, mappings, MiB on them): $(tr '\n' ' ' <"$tmp/sp.out")"
	else
		pass "$name" "MiB held, mappings, MiB on them: $(tr '\n' ' ' <"$tmp/sp.out")"
	fi
}

# Under 2m a fork asks the kernel which of the heap's huge pages are present only for
# those it has not learned before (a page stays present in its chunk while its unit
# is in use): forkmaps grows a heap to 64 MiB, then forks 12 more times holding 128
# MiB. The pages asked about (--stats fork.scanned_pages) stay within twice the huge
# pages the heap holds at the end; a fork that asked about every page again would
# ask about 13 times as many.
test_fork_scan() {
	local name=fork_scan_2m size maps mib
	need_run "$name" || return
	if ! have_python; then
		skip "$name" "no python3 to read JSON"
		return
	fi
	pool_2m 400 || { skip "$name" "$why"; return; }
	sprun_stats --backing 2m -- "$P/forkmaps" 64 128 128 128 128 128 128 128 128 128 128 128 128
	restore
	read -r size maps mib < <(tail -n 1 "$tmp/sp.out")
	if [ "$src" != 0 ]; then
		fail "$name" "exited $src: $(oneline "$tmp/sp.err")"
	elif [ "${size:-}" != 128 ] || [ "$(wc -l <"$tmp/sp.out")" != 13 ]; then
		fail "$name" "want 13 lines, the last for 128 MiB: $(oneline "$tmp/sp.out")"
	elif [ "${mib:-0}" -lt 96 ]; then
		fail "$name" "only ${mib:-0} MiB on 2 MiB hugetlb pages with 128 MiB held: $(oneline "$tmp/sp.err")"
	else
		why=$("$PY" - "$tmp/stats.json" "$((mib / 2))" 2>&1 <<'PY'
import json, sys
path, pages = sys.argv[1], int(sys.argv[2])
mine = [json.loads(l) for l in open(path) if l.strip()]
mine = [d for d in mine if d.get("comm") == "forkmaps"]
if len(mine) != 1:
    print("%d --stats lines from forkmaps, want 1 (the parent's)" % len(mine))
    sys.exit()
f = mine[0].get("fork", {})
if f.get("shared", 0) != 13:
    print("%r forks shared hugetlb memory, want 13: %r" % (f.get("shared"), f))
elif "scanned_pages" not in f:
    print("no scanned_pages in the fork account: %r" % f)
elif f["scanned_pages"] > 2 * pages:
    print("13 forks asked the kernel about %d huge pages, the heap holding %d: more than "
          "twice over (each fork asked again?)" % (f["scanned_pages"], pages))
else:
    print("ok %d huge pages asked about in 13 forks, %d held" % (f["scanned_pages"], pages))
PY
)
		case $why in
		ok*) pass "$name" "${why#ok }" ;;
		*) fail "$name" "$why" ;;
		esac
	fi
}

run_some "$@"
test_fork_maps
test_fork_scan
for mode in snap nss; do
	for b in auto thp 4k; do
		test_fork "$mode:$b"
	done
	for pool in room empty short; do
		test_fork_2m "$mode:$pool"
	done
	for pool in room empty; do
		test_fork_1g "$mode:$pool"
	done
done
exit $failed
