#!/usr/bin/env bash
# test_commit.sh - tests heaps a program reserves PROT_NONE and commits itself, by
# mprotect and mmap(MAP_FIXED), as a JVM or V8 does (tests/runtime/commit/commitheap.c):
# under superpage run their 2 MiB units are on THP (auto, thp; 2m too, as a counted
# fall), the program sees what it sees without superpage, its MADV_NOHUGEPAGE stands,
# and nothing changes under --backing 4k or below --min; and small reservations, as
# V8 makes one per heap page (packres.c), packed so that what the
# program commits of them is huge.
# Usage: tests/runtime/commit/test_commit.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Nothing on the machine is changed (no pool is set).
set -u
B=${1:?usage: tests/runtime/commit/test_commit.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
RT=$B/libsuperpage-run.so
PROG=$(cd "$B" 2>/dev/null && pwd)/tests/runtime/commit/commitheap
PACK=$(cd "$B" 2>/dev/null && pwd)/tests/runtime/commit/packres
THP=/sys/kernel/mm/transparent_hugepage/enabled
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
	skip commit "$why"
	exit 0
fi
if [ ! -x "$SP" ] || [ ! -f "$RT" ] || [ ! -x "$PROG" ] || [ ! -x "$PACK" ]; then
	fail commit_built "$SP, $RT, $PROG or $PACK is missing: build with make B=$B tests"
	exit 1
fi

mode=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$THP" 2>/dev/null)
case "$mode" in
'') thp_why="this kernel has no THP" ;;
never) thp_why="THP is never here" ;;
*) thp_why='' ;;
esac

# commitheap's figures from run name's stderr: sets mp fx pc mpc hint nohuge.
figures() { # name
	local line
	line=$(grep '^mprotect_thp_kb=' "$tmp/$1.err")
	read -r mp fx pc mpc hint nohuge <<<"$(sed 's/[a-z_]*=//g' <<<"$line")"
	for v in "$mp" "$fx" "$pc" "$mpc" "$hint" "$nohuge"; do
		[[ "$v" =~ ^[0-9]+$ ]] || return 1
	done
}
# Sets why unless every way of committing has huge pages and the NOHUGEPAGE range none.
want_huge() { # name
	why=''
	if ! figures "$1"; then
		why="no figures on stderr: $(oneline "$tmp/$1.err")"
	elif [ "$mp" = 0 ] || [ "$fx" = 0 ] || [ "$pc" = 0 ] || [ "$mpc" = 0 ] || [ "$hint" = 0 ]; then
		why="some 2 MiB units of a committed range are not huge: $(grep '^mprotect_thp' "$tmp/$1.err")"
	elif [ "$nohuge" != 0 ]; then
		why="the program's MADV_NOHUGEPAGE was not kept: nohuge_thp_kb=$nohuge"
	fi
	[ -z "$why" ]
}
# Sets why unless no committed range has huge pages.
want_none() { # name
	why=''
	if ! figures "$1"; then
		why="no figures on stderr: $(oneline "$tmp/$1.err")"
	elif [ "$((mp + fx + pc + mpc + hint + nohuge))" != 0 ]; then
		why="huge pages where none were asked for: $(grep '^mprotect_thp' "$tmp/$1.err")"
	fi
	[ -z "$why" ]
}
# Sets why if run name did not end well or printed other than the plain run.
same_as_plain() { # name
	why=''
	if [ "$rc" = 124 ]; then
		why="timed out after ${LIMIT}s: $(oneline "$tmp/$1.err")"
	elif [ "$rc" != 0 ]; then
		why="exited $rc: $(oneline "$tmp/$1.out") $(oneline "$tmp/$1.err")"
	elif ! diff "$tmp/plain.out" "$tmp/$1.out" >/dev/null; then
		why="stdout differs from the plain run: $(diff "$tmp/plain.out" "$tmp/$1.out" | head -n 4 |
			tr '\n' ' ' | cut -c 1-300)"
	fi
	[ -z "$why" ]
}
# The count of falls from 2m for program_managed_pages in the --stats file, or "none".
managed_falls() { # file
	python3 - "$1" 2>/dev/null <<'PY' || echo none
import json, sys
n = 0
for l in open(sys.argv[1]):
    if l.strip():
        n += json.loads(l).get("falls", {}).get("2m", {}).get("program_managed_pages", 0)
print(n)
PY
}

run plain "$PROG"
if [ "$rc" != 0 ]; then
	fail commit_plain "commitheap fails without superpage: $(oneline "$tmp/plain.out")"
	exit 1
fi

# Without superpage (THP madvise), nothing commitheap maps is huge: what the runs
# below find is the runtime's doing.
if [ "$mode" = madvise ]; then
	if want_none plain; then pass commit_plain_not_huge; else fail commit_plain_not_huge "$why"; fi
else
	skip commit_plain_not_huge "THP is ${mode:-absent} here, not madvise"
fi

for backing in auto thp; do
	run "$backing" "$SP" run --backing "$backing" -- "$PROG"
	if ! same_as_plain "$backing"; then
		fail "commit_$backing" "$why"
	elif [ -n "$thp_why" ]; then
		skip "commit_$backing" "the program's view is right; huge pages not checked: $thp_why"
	elif want_huge "$backing"; then
		pass "commit_$backing" "committed ${mp}+${fx}+${pc}+${mpc}+${hint} kB huge"
	else
		fail "commit_$backing" "$why"
	fi
done

# 2m: the program changes these ranges at 4 KiB, which a hugetlb page cannot follow:
# THP, and a fall counted with its reason. (No pool is needed or set.)
run 2m "$SP" run --backing 2m --stats="$tmp/stats.json" -- "$PROG"
if ! same_as_plain 2m; then
	fail commit_2m "$why"
elif [ -n "$thp_why" ]; then
	skip commit_2m "the program's view is right; huge pages not checked: $thp_why"
elif ! want_huge 2m; then
	fail commit_2m "$why"
else
	falls=$(managed_falls "$tmp/stats.json")
	if [ "$falls" = none ]; then
		skip commit_2m "THP as asked; cannot read the --stats file to see the fall (python3)"
	elif [ "$falls" -lt 1 ]; then
		fail commit_2m "THP without a fall counted: $(head -c 300 "$tmp/stats.json")"
	else
		pass commit_2m "THP, 2m program_managed_pages $falls"
	fi
fi

# 4k, and ranges below --min: left as the kernel has them.
run 4k "$SP" run --backing 4k -- "$PROG"
if ! same_as_plain 4k; then
	fail commit_4k "$why"
elif ! want_none 4k; then
	fail commit_4k "$why"
else
	pass commit_4k
fi
run min "$SP" run --min 64M -- "$PROG"
if ! same_as_plain min; then
	fail commit_below_min "$why"
elif [ "$mode" != madvise ]; then
	skip commit_below_min "the program's view is right; THP is ${mode:-absent} here, not madvise"
elif ! want_none min; then
	fail commit_below_min "$why"
else
	pass commit_below_min
fi

# ---------- small reservations, packed (V8's heap pages) ----------
# packres's figure from run name's stderr: the AnonHugePages kB of its 32 MiB of pages.
pack_kb() { # name [field]
	sed -n "s/^${2:-pages_thp_kb}=\([0-9-]*\)$/\1/p" "$tmp/$1.err"
}
run plain "$PACK"
if [ "$rc" != 0 ]; then
	fail pack_plain "packres fails without superpage: $(oneline "$tmp/plain.out")"
	exit 1
fi
if [ "$mode" != madvise ]; then
	skip pack_plain_not_huge "THP is ${mode:-absent} here, not madvise"
elif [ "$(pack_kb plain)" != 0 ]; then
	fail pack_plain_not_huge "plain, THP madvise: pages_thp_kb=$(pack_kb plain)"
else
	pass pack_plain_not_huge
fi
for backing in auto thp; do
	run "pack_$backing" "$SP" run --backing "$backing" -- "$PACK"
	kb=$(pack_kb "pack_$backing")
	lkb=$(pack_kb "pack_$backing" late_thp_kb)
	rkb=$(pack_kb "pack_$backing" rpages_thp_kb)
	rss=$(pack_kb "pack_$backing" rpages_rss_kb)
	sparse=$(pack_kb "pack_$backing" sparse_rss_kb)
	if ! same_as_plain "pack_$backing"; then
		fail "pack_$backing" "$why"
	elif [ -n "$thp_why" ]; then
		skip "pack_$backing" "the program's view is right; huge pages not checked: $thp_why"
	elif [ -z "$kb" ] || [ "$kb" -lt 24576 ]; then
		# (32 MiB committed in 16 whole units; a collapse the kernel refuses for a
		# moment may leave one or two on base pages)
		fail "pack_$backing" "${kb:-no} kB of 32768 committed on huge pages: $(oneline "$tmp/pack_$backing.err")"
	elif [ -z "$lkb" ] || [ "$lkb" -lt 12288 ]; then
		# (pages touched while apart must still make one mapping with the rest)
		fail "pack_$backing" "${lkb:-no} kB of 16384 committed out of order on huge pages"
	elif [ -z "$rkb" ] || [ "$rkb" -lt 24576 ]; then
		fail "pack_$backing" "${rkb:-no} kB of Ruby's 32768 kB of pages on huge pages"
	elif [ -z "$rss" ] || [ "$rss" -lt 0 ] || [ "$rss" -gt $((32768 + 2048)) ]; then
		# (what Ruby unmaps to align its pages must not stay resident between them)
		fail "pack_$backing" "${rss:-no} kB resident over Ruby's 32768 kB of pages"
	elif [ -z "$sparse" ] || [ "$sparse" -lt 0 ] || [ "$sparse" -gt $((2048 * 2)) ]; then
		# (nor what it frees, beyond a quarter of a unit in each)
		fail "pack_$backing" "${sparse:-no} kB resident over 2048 kB of Ruby's pages kept of 32768"
	else
		pass "pack_$backing" "$kb of 32768 kB committed huge ($lkb of 16384 out of order); Ruby's pages $rkb kB huge, $rss kB resident"
	fi
done
# 2m: the arenas (small read-write mappings, which auto serves from the heap's units)
# cannot be on hugetlb units: packed, whole units on THP, each mapping a counted fall.
# (No pool is needed or set.)
run pack_2m "$SP" run --backing 2m --stats="$tmp/pack2m.json" -- "$PACK"
akb=$(sed -n 's/^arenas_thp_kb=\([0-9]*\)$/\1/p' "$tmp/pack_2m.err")
if ! same_as_plain pack_2m; then
	fail pack_2m "$why"
elif [ -n "$thp_why" ]; then
	skip pack_2m "the program's view is right; huge pages not checked: $thp_why"
elif [ -z "$akb" ] || [ "$akb" -lt 24576 ]; then
	fail pack_2m "${akb:-no} kB of 32768 of arenas on huge pages: $(oneline "$tmp/pack_2m.err")"
else
	falls=$(managed_falls "$tmp/pack2m.json")
	if [ "$falls" = none ]; then
		skip pack_2m "arenas THP ($akb kB); cannot read the --stats file to see the fall (python3)"
	elif [ "$falls" -lt 32 ]; then
		fail pack_2m "arenas on THP with $falls falls counted, not one for each of 32"
	else
		pass pack_2m "$akb of 32768 kB of arenas huge, program_managed_pages $falls"
	fi
fi
for off in 4k arena0; do
	if [ "$off" = 4k ]; then
		run pack_4k "$SP" run --backing 4k -- "$PACK"
	else
		run pack_arena0 env SUPERPAGE_ARENA_MIN=0 "$SP" run -- "$PACK"
	fi
	kb=$(pack_kb "pack_$off")
	if ! same_as_plain "pack_$off"; then
		fail "pack_$off" "$why"
	elif [ "$mode" = madvise ] && [ "$kb" != 0 ]; then
		fail "pack_$off" "huge pages where none were asked for: pages_thp_kb=$kb"
	elif [ "$mode" = madvise ] && [ "$(pack_kb "pack_$off" rpages_thp_kb)" != 0 ]; then
		fail "pack_$off" "huge pages where none were asked for: $(oneline "$tmp/pack_$off.err")"
	else
		pass "pack_$off"
	fi
done
exit 0
