#!/usr/bin/env bash
# test_mmap.sh - the program's own private anonymous mappings under superpage run,
# small (tests/runtime/mmap/mmapsem.c) and large (bigmap.c): the same results as the
# kernel's own mappings under each backing, and under 2m on hugetlb pages, forked with
# the pool nearly empty, changed by threads while the program forks, and fallen to THP
# from an empty pool.
# Usage: tests/runtime/mmap/test_mmap.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test; other lines are measurements, not
# results. Every sysfs value it changes is put back, even on failure or Ctrl-C.
set -u
B=${1:?usage: tests/runtime/mmap/test_mmap.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start mmap mmap/mmapsem mmap/bigmap

# Private anonymous mappings (served from the heap's units under auto, thp, 4k):
# zeroed, partly unmapped, re-protected, mapped over, resized, advised; the same
# results as the kernel's own mappings.
test_mmap_semantics() { # backing
	local backing=$1 name=mmap_semantics_$1
	need_run "$name" || return
	if [ "$backing" = 2m ] && ! pool_2m 64; then
		skip "$name" "$why"
		return
	fi
	plain "$P/mmapsem"
	sprun --backing "$backing" -- "$P/mmapsem"
	if differs; then
		fail "$name" "$why"
	else
		pass "$name" "$(cat "$tmp/sp.out")"
	fi
	restore
}

# ---------- large mappings (bigmap.c) ----------

# Large private anonymous mappings partly unmapped, re-protected, advised, mapped
# over, resized, moved and forked: the same results as the kernel's own mappings.
# Under 2m they are on hugetlb units, which the kernel cannot split.
test_bigmap() { # backing
	local backing=$1 name=bigmap_semantics_$1 extra
	need_run "$name" || return
	if [ "$backing" = 2m ] && ! pool_2m 64; then
		skip "$name" "$why"
		return
	fi
	plain "$P/bigmap"
	sprun --backing "$backing" -- "$P/bigmap"
	restore
	extra=$(foreign_stderr "$tmp/sp.err")
	if differs; then
		fail "$name" "$why"
	elif [ -n "$extra" ]; then
		fail "$name" "stderr: $extra"
	else
		pass "$name" "$(tail -n 1 "$tmp/sp.out")"
	fi
}

# Reads "map_hugetlb_kb=H map_thp_kb=T map_kb=K" from bigmap's stderr: sets tlb thp kb.
bigmap_figures() {
	read -r tlb thp kb <<<"$(sed -n 's/^map_hugetlb_kb=\([0-9]*\) map_thp_kb=\([0-9]*\) map_kb=\([0-9]*\)$/\1 \2 \3/p' "$tmp/sp.err")"
	[[ "$tlb" =~ ^[0-9]+$ && "$thp" =~ ^[0-9]+$ && "$kb" =~ ^[0-9]+$ ]] && [ "$kb" != 0 ]
}

# Reads the --stats file: sets why unless some process counted a fall from 2m.
want_2m_fall() {
	why=$("$PY" - "$tmp/stats.json" 2>&1 <<'PY'
import json, sys
try:
    lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
except (OSError, ValueError) as e:
    print("cannot read the --stats file: %s" % e)
    sys.exit()
if not any(sum(d.get("falls", {}).get("2m", {}).values()) for d in lines):
    print("no fall from 2m in --stats: %r" % [d.get("falls") for d in lines])
PY
)
	[ -n "$why" ]
}

# Under 2m: a 64 MiB mapping is on hugetlb pages (bigmap reads Private_Hugetlb in its
# own smaps); with the pool holding little more than it, a fork where the child and
# the parent both write all of it gives each its own data, and no SIGBUS (the child
# would need as many free pool pages again to copy them on write); with the pool
# empty it falls to THP, counted.
test_bigmap_2m() {
	local name=bigmap_hugetlb_2m tlb thp kb
	need_run $name || return
	if ! have_python; then
		skip $name "no python3 to read JSON"
		return
	fi
	if ! pool_2m 40; then
		skip $name "$why"
		return
	fi
	plain "$P/bigmap" --huge 64
	sprun_stats --backing 2m -- "$P/bigmap" --huge 64
	restore
	if differs; then
		fail $name "$why"
	elif ! bigmap_figures; then
		fail $name "bigmap --huge said no figure: $(oneline "$tmp/sp.err")"
	elif [ $((tlb * 10)) -lt $((kb * 9)) ]; then
		fail $name "$((tlb >> 10)) of $((kb >> 10)) MiB of the mapping on hugetlb pages, want >= 90%"
	else
		pass $name "$((tlb >> 10)) of $((kb >> 10)) MiB of the mapping on hugetlb pages"
	fi

	# 32 units of mapping and a unit or two of heap, from 34 free pages.
	name=bigmap_fork_pool_nearly_empty
	if ! pool_2m 34; then
		skip $name "$why"
		return
	fi
	plain "$P/bigmap" --fork 64
	sprun --backing 2m -- "$P/bigmap" --fork 64
	restore
	if differs; then
		fail $name "$why"
	elif ! bigmap_figures; then
		fail $name "bigmap --fork said no figure: $(oneline "$tmp/sp.err")"
	elif [ $((tlb * 10)) -lt $((kb * 9)) ]; then
		fail $name "only $((tlb >> 10)) of $((kb >> 10)) MiB on hugetlb pages before the fork"
	else
		pass $name "$((tlb >> 10)) MiB of hugetlb mapping forked, written by both, from a pool of 34 pages"
	fi

	# Threads mapping, resizing, re-protecting and unmapping mappings of their own
	# while the main thread forks, the pool short: no SIGBUS, no data lost (a unit
	# given back while a fork shared it with the child once ended in a SIGBUS).
	name=bigmap_threads_fork
	if ! pool_2m 40; then
		skip $name "$why"
		return
	fi
	plain "$P/bigmap" --threads
	sprun --backing 2m -- "$P/bigmap" --threads
	restore
	if differs; then
		fail $name "$why"
	elif [ -n "$(foreign_stderr "$tmp/sp.err")" ]; then
		fail $name "stderr: $(foreign_stderr "$tmp/sp.err")"
	else
		pass $name "$(tail -n 1 "$tmp/sp.out")"
	fi

	name=bigmap_pool_empty
	if ! pool_2m 0; then
		skip $name "$why"
		return
	fi
	sprun_stats --backing 2m -- "$P/bigmap" --huge 64
	restore
	plain "$P/bigmap" --huge 64
	if differs || want_2m_fall; then
		fail $name "$why"
	elif ! bigmap_figures; then
		fail $name "bigmap --huge said no figure: $(oneline "$tmp/sp.err")"
	elif [ "$tlb" != 0 ]; then
		fail $name "$tlb KiB on hugetlb pages from an empty pool"
	elif [ "$(thp_mode)" != never ] && [ $((thp * 10)) -lt $((kb * 9)) ]; then
		fail $name "only $((thp >> 10)) of $((kb >> 10)) MiB on THP with the pool empty"
	else
		pass $name "$((thp >> 10)) of $((kb >> 10)) MiB on THP, the fall counted"
	fi
}
run_some "$@"
for backing in auto thp 4k 2m; do
	test_mmap_semantics $backing
	test_bigmap $backing
done
test_bigmap_2m
exit $failed
