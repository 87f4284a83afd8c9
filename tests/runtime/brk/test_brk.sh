#!/usr/bin/env bash
# test_brk.sh - sbrk and brk under superpage run (tests/runtime/brk/brkuse.c): the same
# output as the kernel's break, the break emulated under every backing but 4k and
# --no-heap, and 64 MiB of it on huge pages.
# Usage: tests/runtime/brk/test_brk.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test; other lines are measurements, not
# results. Every sysfs value it changes is put back, even on failure or Ctrl-C.
set -u
B=${1:?usage: tests/runtime/brk/test_brk.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start brk brk/brkuse

# ---------- the program break ----------

# Reads the --stats file of the last sprun_stats: brkuse's "brk" account must say the
# break it had (at least min bytes at exit) and whether it was emulated. Sets why.
check_brk_stats() { # emulated(true|false) min_bytes
	why=$("$PY" - "$tmp/stats.json" "$1" "$2" 2>&1 <<'PY'
import json, sys
path, emulated, least = sys.argv[1], sys.argv[2] == "true", int(sys.argv[3])
try:
    lines = [json.loads(l) for l in open(path) if l.strip()]
except (OSError, ValueError) as e:
    print("cannot read the --stats file: %s" % e)
    sys.exit()
mine = [d for d in lines if d.get("comm") == "brkuse"]
if len(mine) != 1:
    print("%d --stats lines from brkuse, want 1" % len(mine))
    sys.exit()
b = mine[0].get("brk")
if not isinstance(b, dict) or not all(isinstance(b.get(k), want) for k, want in
                                      (("bytes", int), ("peak", int), ("emulated", bool))):
    print("no brk account in --stats: %r" % b)
elif b["emulated"] != emulated:
    print("brk emulated is %r, want %r" % (b["emulated"], emulated))
elif b["bytes"] < least or b["peak"] < b["bytes"]:
    print("brk bytes %d, peak %d: want bytes >= %d <= peak" % (b["bytes"], b["peak"], least))
PY
)
	[ -n "$why" ]
}

# sbrk and brk as old programs use them (brkuse.c checks every result
# against the kernel's rules and prints no address): the same output as the kernel's
# break, the break emulated under every backing but 4k and --no-heap, and said so
# once with --verbose. The plain run serializes the program's threads around sbrk:
# glibc's sbrk is not thread-safe; the runtime's is, and is tested without the lock.
test_brk() { # backing | no_heap
	local backing=$1 name=brk_$1 emulated=true n extra opts
	need_run "$name" || return
	if ! have_python; then
		skip "$name" "no python3 to read JSON"
		return
	fi
	opts=(--backing "$backing")
	case $backing in
	4k) emulated=false ;;
	no_heap) emulated=false opts=(--no-heap) ;;
	esac
	[ "$(thp_mode)" = never ] && emulated=false
	if [ "$backing" = 2m ] && ! pool_2m 16; then
		skip "$name" "$why"
		return
	fi
	plain "$P/brkuse" --serial
	sprun_stats "${opts[@]}" --verbose -- "$P/brkuse"
	restore
	n=$(grep -c '^superpage: the program break is emulated' "$tmp/sp.err")
	extra=$(foreign_stderr "$tmp/sp.err")
	if differs || check_brk_stats $emulated 1; then
		fail "$name" "$why"
	elif [ $emulated = true ] && [ "$n" != 1 ]; then
		fail "$name" "--verbose said the break is emulated $n times, want once"
	elif [ $emulated = false ] && [ "$n" != 0 ]; then
		fail "$name" "the break was emulated under ${opts[*]}"
	elif [ -n "$extra" ]; then
		fail "$name" "stderr: $extra"
	else
		pass "$name" "$(tail -n 1 "$tmp/sp.out")"
	fi
}

# 64 MiB of break, written: at least 90% of it in AnonHugePages or hugetlb (brkuse
# reads its own smaps), where the kernel's break gets none under THP madvise; under
# 2m at least 90% of it hugetlb.
test_brk_huge() { # backing
	local backing=$1 name=brk_huge_$1 huge tlb kb plain_huge
	need_run "$name" || return
	if ! have_python; then
		skip "$name" "no python3 to read JSON"
		return
	fi
	if [ "$(thp_mode)" = never ]; then
		skip "$name" "THP is never here: the break cannot be on huge pages"
		return
	fi
	# (32 pages for the 64 MiB of break under 2m, and some for the heap)
	if [ "$backing" = 2m ] && ! pool_2m 40; then
		skip "$name" "$why"
		return
	fi
	plain "$P/brkuse" --huge
	plain_huge=$(sed -n 's/^brk_huge_kb=\([0-9]*\) .*/\1/p' "$tmp/plain.err")
	sprun_stats --backing "$backing" -- "$P/brkuse" --huge
	restore
	read -r huge tlb kb <<<"$(sed -n 's/^brk_huge_kb=\([0-9]*\) brk_hugetlb_kb=\([0-9]*\) brk_kb=\([0-9]*\)$/\1 \2 \3/p' "$tmp/sp.err")"
	if differs || check_brk_stats true $((64 << 20)); then
		fail "$name" "$why"
	elif ! [[ "$huge" =~ ^[0-9]+$ && "$tlb" =~ ^[0-9]+$ && "$kb" =~ ^[0-9]+$ ]] || [ "$kb" = 0 ]; then
		fail "$name" "brkuse --huge said no figure: $(oneline "$tmp/sp.err")"
	elif [ $((huge * 10)) -lt $((kb * 9)) ]; then
		fail "$name" "$((huge >> 10)) of $((kb >> 10)) MiB of break on huge pages, want >= 90%"
	elif [ "$backing" = 2m ] && [ $((tlb * 10)) -lt $((kb * 9)) ]; then
		fail "$name" "$((tlb >> 10)) of $((kb >> 10)) MiB of break on hugetlb pages under 2m, want >= 90%"
	else
		pass "$name" "$((huge >> 10)) of $((kb >> 10)) MiB of break on huge pages, $((tlb >> 10)) MiB hugetlb (${plain_huge:-?} KiB plain)"
	fi
}

run_some "$@"
for backing in auto thp 4k 2m; do
	test_brk $backing
done
test_brk no_heap
for backing in auto thp 2m; do
	test_brk_huge $backing
done
exit $failed
