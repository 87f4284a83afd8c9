#!/usr/bin/env bash
# test_text.sh - tests superpage run --text: the program's text moved to THP or 2 MiB
# hugetlb pages before main, with the same output as without (after fork, exec and
# dlopen too), only the aligned interior of an unaligned binary, superpage stat
# showing the text region huge, /tmp/perf-PID.map naming the moved functions, the
# original mapping kept intact when no huge page can be had, and text the page cache
# maps with huge pages already left there, and --text --stacks --shm together with
# superpage stat showing text, stack and shm on huge pages. The moves are tested on
# fresh copies of the programs: a binary read back from disk may come in PMD-sized
# page cache folios.
# Usage: tests/runtime/text/test_text.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. The 2M pool and THP mode are put back, even on failure.
set -u
B=${1:?usage: tests/runtime/text/test_text.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
RT=$B/libsuperpage-run.so
PROG=$(cd "$B" 2>/dev/null && pwd)/tests/runtime/text/textuse
PLAIN=$PROG-plain
tmp=$(mktemp -d)
# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/../../lib.sh"
copies=''
trap 'put_pool_back; rm -rf "$tmp" "$copies"' EXIT
trap 'exit 130' INT TERM HUP

unset LD_PRELOAD "${!SUPERPAGE_@}"
export LC_ALL=C
MIB16=16777216

why=$(preload_blocker "$B" "$RT")
if [ -n "$why" ]; then
	skip text "$why"
	exit 0
fi
if [ ! -x "$SP" ] || [ ! -f "$RT" ] || [ ! -x "$PROG" ] || [ ! -x "$PLAIN" ]; then
	fail text_built "$SP, $RT, $PROG or $PLAIN is missing: build with make B=$B tests"
	exit 1
fi

# Fresh copies, written here (their page cache folios come from the writes), in the
# build directory (a /tmp mounted noexec could not run them).
copies=$(mktemp -d "$B/tests/runtime/text/textcopies.XXXXXX")
cp "$PROG" "$copies/textuse" && cp "$PLAIN" "$copies/textuse-plain" || {
	fail text_copies "cannot copy the test programs to $copies"
	exit 1
}
ORIG=$PROG
PROG=$copies/textuse
PLAIN=$copies/textuse-plain


# The same mode run plainly, for what the output must be.
plain_of() { # mode
	[ -f "$tmp/plain-$1.out" ] || "$PROG" "$1" 300 >"$tmp/plain-$1.out" 2>/dev/null
}

# Sets why unless run name ended well with the plain run's output of mode.
same_as_plain() { # name mode
	why=''
	plain_of "$2"
	if [ "$rc" != 0 ]; then
		why="exited $rc: $(oneline "$tmp/$1.out") $(oneline "$tmp/$1.err")"
	elif ! grep -q ' ok$' "$tmp/$1.out"; then
		why="no checked chain in the output: $(oneline "$tmp/$1.out")"
	elif ! diff <(grep -v '^text=' "$tmp/plain-$2.out") <(grep -v '^text=' "$tmp/$1.out") >/dev/null; then
		why="stdout differs from the plain run: $(diff "$tmp/plain-$2.out" "$tmp/$1.out" | head -n 4 | tr '\n' ' ')"
	fi
	[ -z "$why" ]
}

# "text=N huge=N hugetlb=N" of the smaps mode, as variables.
read_text_line() { # name
	local line
	line=$(grep '^text=' "$tmp/$1.out")
	t_text=$(sed -n 's/.*text=\([0-9]*\).*/\1/p' <<<"$line")
	t_huge=$(sed -n 's/.*huge=\([0-9]*\).*/\1/p' <<<"$line")
	t_hugetlb=$(sed -n 's/.*hugetlb=\([0-9]*\).*/\1/p' <<<"$line")
	t_filepmd=$(sed -n 's/.*filepmd=\([0-9]*\).*/\1/p' <<<"$line")
	: "${t_text:=0}" "${t_huge:=0}" "${t_hugetlb:=0}" "${t_filepmd:=0}"
}

# ---------- the same output, with the text moved ----------

# Where the page cache gives even a fresh copy's text huge pages, a move is neither
# needed nor made: the tests that check a move then say so and skip.
run plain_smaps "$PROG" smaps 300
read_text_line plain_smaps
no_move=''
[ "$t_filepmd" = 0 ] ||
	no_move="the page cache maps $t_filepmd bytes of a fresh copy's text with huge pages already"

thp_mode=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
run thp "$SP" run --text --stats -- "$PROG" smaps 300
if ! same_as_plain thp smaps; then
	fail text_thp "$why"
else
	read_text_line thp
	if [ -n "$no_move" ]; then
		skip text_thp "$no_move"
	elif [ "$t_huge" -ge $MIB16 ] && [ "$t_hugetlb" = 0 ]; then
		pass text_thp "$t_huge of $t_text bytes of text on THP"
	elif [ -z "$thp_mode" ]; then
		skip text_thp "no THP on this machine ($t_huge bytes huge)"
	else
		fail text_thp "$t_huge bytes of the text on THP ($t_hugetlb hugetlb), want >= $MIB16: $(oneline "$tmp/thp.err" 4)"
	fi
fi
if grep -q 'text on huge pages: 16.0 MiB of ' "$tmp/thp.err"; then
	pass text_stats_line
else
	fail text_stats_line "--stats has no 'text on huge pages: 16.0 MiB of ...': $(grep 'text' "$tmp/thp.err" | head -n 2)"
fi

for mode in fork exec dlopen; do
	run "$mode" "$SP" run --text -- "$PROG" "$mode" 300
	if same_as_plain "$mode" "$mode"; then
		pass "text_$mode"
	else
		fail "text_$mode" "$why"
	fi
done

# An unaligned binary: only the 2 MiB-aligned interior of its text moves.
run unaligned "$SP" run --text -- "$PLAIN" smaps 300
if ! same_as_plain unaligned smaps; then
	fail text_unaligned "$why"
else
	read_text_line unaligned
	if [ -n "$no_move" ]; then
		skip text_unaligned "$no_move"
	elif [ "$t_huge" -gt 0 ] && [ "$t_huge" -lt "$t_text" ] && [ $((t_huge % 2097152)) = 0 ]; then
		pass text_unaligned "$t_huge of $t_text bytes moved"
	elif [ -z "$thp_mode" ]; then
		skip text_unaligned "no THP on this machine"
	else
		fail text_unaligned "$t_huge of $t_text bytes of text on huge pages, want whole 2 MiB units, not all"
	fi
fi

# Large data and bss move to THP, and keep their bytes, also across fork.
run data "$SP" run --text -- "$PROG" data
dhuge=$(sed -n 's/^data=[0-9]* datahuge=\([0-9]*\)$/\1/p' "$tmp/data.out")
if [ "$rc" != 0 ] || ! grep -q '^data ok$' "$tmp/data.out"; then
	fail text_data "exited $rc: $(oneline "$tmp/data.out") $(oneline "$tmp/data.err")"
elif [ "${dhuge:-0}" -ge 4194304 ]; then
	pass text_data "${dhuge} bytes of data and bss on THP"
elif [ -z "$thp_mode" ]; then
	skip text_data "no THP on this machine"
else
	fail text_data "${dhuge:-?} bytes of data and bss on THP, want >= 4 MiB"
fi

# --backing 4k is the baseline: nothing moves.
run base "$SP" run --backing 4k --text -- "$PROG" smaps 300
read_text_line base
if same_as_plain base smaps && [ "$t_huge" = 0 ]; then
	pass text_4k_untouched
else
	fail text_4k_untouched "${why:-$t_huge bytes of text huge under --backing 4k}"
fi

# ---------- 2 MiB hugetlb pages under --backing 2m ----------

if ! pool_add 9; then
	skip text_hugetlb "$why"
else
	run hugetlb "$SP" run --backing 2m --text -- "$PROG" smaps 300
	if ! same_as_plain hugetlb smaps; then
		fail text_hugetlb "$why"
	else
		read_text_line hugetlb
		if [ -n "$no_move" ]; then
			skip text_hugetlb "$no_move"
		elif [ "$t_hugetlb" -ge $MIB16 ]; then
			pass text_hugetlb "$t_hugetlb bytes of text on 2 MiB hugetlb pages"
		else
			fail text_hugetlb "$t_hugetlb bytes of text on hugetlb, want >= $MIB16: $(oneline "$tmp/hugetlb.err")"
		fi
	fi
	# A forked child runs the text the parent moved (never written: no pool page).
	run hugetlb_fork "$SP" run --backing 2m --text -- "$PROG" fork 300
	if same_as_plain hugetlb_fork fork; then
		pass text_hugetlb_fork
	else
		fail text_hugetlb_fork "$why"
	fi
	put_pool_back
fi

# ---------- no huge page to be had: the original text stays ----------

# THP disabled for the process (PR_SET_THP_DISABLE, which --backing 4k sets and the
# inner superpage run inherits) and no 2M pool room: both rungs fall.
pool_nums
if [ $((free - resv)) -ge 8 ]; then
	skip text_nothing_had "the 2M pool has $((free - resv)) free pages: --backing 2m would get them"
else
	run none "$SP" run --backing 4k -- "$SP" run --backing 2m --text --stats -- "$PROG" smaps 300
	read_text_line none
	if ! same_as_plain none smaps; then
		fail text_nothing_had "$why"
	elif [ "$t_huge" != 0 ]; then
		fail text_nothing_had "$t_huge bytes of text huge with THP disabled and no pool"
	elif ! grep 'text on huge pages: 0 B of ' "$tmp/none.err" | grep -qE 'thp not_huge [12]' ||
	     ! grep 'text on huge pages: 0 B of ' "$tmp/none.err" | grep -qE '2m (no_pool|pool_empty) 1'; then
		fail text_nothing_had "--stats does not give both falls: $(grep 'text on' "$tmp/none.err")"
	else
		pass text_nothing_had
	fi
fi

# ---------- text the page cache has on huge pages stays there ----------

# The binary make wrote may have been read back from disk in PMD-sized folios.
run orig_plain "$ORIG" smaps 300
read_text_line orig_plain
if [ "$t_filepmd" -lt $MIB16 ]; then
	skip text_page_cache "the page cache does not map $ORIG's text with huge pages here ($t_filepmd bytes)"
else
	run cached "$SP" run --text --stats -- "$ORIG" smaps 300
	read_text_line cached
	if [ "$rc" != 0 ]; then
		fail text_page_cache "exited $rc: $(oneline "$tmp/cached.err")"
	elif [ "$t_filepmd" -lt $MIB16 ] || [ $((t_huge - t_filepmd)) != 0 ]; then
		fail text_page_cache "text moved although the page cache had it huge: filepmd $t_filepmd, huge $t_huge"
	elif ! grep -q '16.0 MiB left in the page cache' "$tmp/cached.err"; then
		fail text_page_cache "--stats does not say it: $(grep 'text on' "$tmp/cached.err")"
	else
		pass text_page_cache "$t_filepmd bytes of text left on the page cache's huge pages"
	fi
fi

# ---------- superpage stat and the perf map ----------

fifo=$tmp/fifo
mkfifo "$fifo"
"$SP" run --text --perf-map -- "$PROG" wait 10 <"$fifo" >"$tmp/wait.out" 2>"$tmp/wait.err" &
wpid=$!
exec {hold}>"$fifo"
for _ in $(seq 100); do grep -q '^ready' "$tmp/wait.out" && break; sleep 0.1; done
if ! grep -q '^ready' "$tmp/wait.out"; then
	fail text_stat "the program did not start: $(oneline "$tmp/wait.err")"
else
	"$SP" stat --json "$wpid" >"$tmp/stat.json" 2>"$tmp/stat.err"
	huge=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["regions"]["text"]["huge_bytes"])' \
		"$tmp/stat.json" 2>/dev/null)
	if [ -n "$thp_mode" ] && [ "${huge:-0}" -ge $MIB16 ]; then
		pass text_stat "region text: $huge bytes huge"
	else
		fail text_stat "superpage stat gives text huge_bytes ${huge:-?}, want >= $MIB16: $(head -c 300 "$tmp/stat.json")"
	fi
	map=/tmp/perf-$wpid.map
	if [ -n "$no_move" ]; then
		skip text_perf_map "$no_move"
	elif [ ! -f "$map" ]; then
		fail text_perf_map "$map was not written"
	else
		n=$(grep -c ' tfn[0-9]*$' "$map")
		lo=$(awk '$3 == "tfn0" { print $1 }' "$map")
		# tfn0 is in the moved text: an anonymous executable mapping.
		in_moved=''
		while read -r range perms _ _ _ path; do
			[ "$perms" = r-xp ] && [ -z "$path" ] || continue
			[ $((16#${range%-*})) -le $((16#${lo:-0})) ] && [ $((16#${lo:-0})) -lt $((16#${range#*-})) ] &&
				in_moved=yes
		done </proc/"$wpid"/maps
		if [ "$n" -ge 28 ] && [ -n "$in_moved" ]; then
			pass text_perf_map "$n functions named in $map"
		else
			fail text_perf_map "$n of the functions in $map, tfn0 at ${lo:-?}"
		fi
	fi
fi
exec {hold}>&-
wait "$wpid" 2>/dev/null
rm -f "/tmp/perf-$wpid.map"

# ---------- --text --stacks --shm: one process, all of it on huge pages ----------

if ! pool_add 6; then
	skip text_stacks_shm "$why"
else
	echo | "$PROG" all 100 >"$tmp/plain-all.out" 2>&1
	"$SP" run --text --stacks --shm -- "$PROG" all 100 <"$fifo" >"$tmp/all.out" 2>"$tmp/all.err" &
	apid=$!
	exec {hold}>"$fifo"
	for _ in $(seq 100); do grep -q '^ready' "$tmp/all.out" && break; sleep 0.1; done
	"$SP" stat --json "$apid" >"$tmp/all.json" 2>"$tmp/all-stat.err"
	exec {hold}>&-
	wait "$apid"
	rc=$?
	regions=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))["regions"]
print(" ".join("%s=%d/%d" % (k, r[k]["huge_bytes"], r[k]["bytes"]) for k in ("text", "stack", "shm")))' \
		"$tmp/all.json" 2>/dev/null)
	why=''
	if [ "$rc" != 0 ] || ! diff "$tmp/plain-all.out" "$tmp/all.out" >/dev/null; then
		why="exited $rc or printed other than plain: $(diff "$tmp/plain-all.out" "$tmp/all.out" | head -n 3 | tr '\n' ' ') $(oneline "$tmp/all.err")"
	else
		for k in text stack shm; do
			h=$(sed -n "s/.*$k=\([0-9]*\)\/.*/\1/p" <<<"$regions")
			[ "${h:-0}" -ge 4194304 ] || why="$why $k has ${h:-?} bytes huge;"
		done
	fi
	if [ -z "$why" ]; then
		pass text_stacks_shm "superpage stat: $regions (huge/resident bytes)"
	else
		fail text_stacks_shm "$why (stat: ${regions:-$(head -c 200 "$tmp/all.json")})"
	fi
	put_pool_back
fi

# --text=all: every library with an aligned 2 MiB of text too; the program still runs.
run all "$SP" run --text=all --verbose -- "$PROG" dlopen 300
if same_as_plain all dlopen; then
	pass text_all
else
	fail text_all "$why"
fi

rm -f /tmp/perf-"$(pgrep -x textuse || echo none)".map 2>/dev/null
[ $failed = 0 ]
