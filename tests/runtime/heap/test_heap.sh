#!/usr/bin/env bash
# test_heap.sh - the heap under superpage run: the torture test (threads, forks, every
# malloc call) under each backing with the same output as without it, and under 2m
# empty hugetlb units kept for the next block and the page heap's random sequence on a
# pool that runs out midway; and the memory a mixed heap pays against glibc's.
# Usage: tests/runtime/heap/test_heap.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test; other lines are measurements, not
# results. Every sysfs value it changes is put back, even on failure or Ctrl-C.
set -u
B=${1:?usage: tests/runtime/heap/test_heap.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start heap common/torture common/sweep heap/churn heap/affine heap/bigblock heap/spread \
	heap/blocks heap/sparse heap/callocs heap/userns

# ---------- the torture test under each backing ----------

torture_args=(-n 4000 -r 4 "$SEED")
torture_plain_done=0
torture_plain() {
	[ $torture_plain_done = 1 ] && return
	# glibc leaves errno at ENOMEM on some successful calls (an arena that cannot grow,
	# then a retry in another): -e lets it; the runtime gets no such leave.
	plain "$C/torture" -e "${torture_args[@]}"
	cp "$tmp/plain.out" "$tmp/torture.out"
	tprc=$prc
	torture_plain_done=1
}

test_torture() { # backing [touched]
	local backing=$1 name=torture_$1${2:+_$2} extra
	# (touched: auto with SUPERPAGE_DENSE_TOUCHED, its looks' thread beside the
	# program's threads and forks.)
	if [ -n "${2:-}" ]; then
		local -x SUPERPAGE_DENSE_TOUCHED=yes
	fi
	need_run "$name" || return
	if [ "$backing" = 2m ] && ! pool_2m 64; then
		skip "$name" "$why"
		return
	fi
	torture_plain
	sprun_stats --backing "$backing" -- "$C/torture" "${torture_args[@]}"
	cp "$tmp/torture.out" "$tmp/plain.out"
	prc=$tprc
	extra=$(foreign_stderr "$tmp/sp.err")
	if differs || BACKING=$backing check_stats torture; then
		fail "$name" "$why"
	elif [ -n "$extra" ]; then
		fail "$name" "stderr: $extra"
	else
		pass "$name" "$(cat "$tmp/sp.out")"
	fi
	restore
}

# The page heap's random sequence (tests/unit/test_pages: its counts recomputed after
# every step, every block's bytes checked) on 2 MiB hugetlb units from a pool of 24
# pages that runs out midway: units kept, given back and fallen to THP side by side.
test_pages_2m() {
	local name=pages_2m
	if ! pool_2m 24; then
		skip $name "$why"
		return
	fi
	SUPERPAGE_BACKING=2m limited "$tmp/sp.out" "$tmp/sp.err" "$B/tests/unit/test_pages"
	restore
	if [ "$rc" -ne 0 ]; then
		fail $name "exit $rc: $(grep -m3 'check failed\|step\|FAIL' "$tmp/sp.out" "$tmp/sp.err" | tr '\n' ' ')"
	elif ! grep -q '^PASS test_random_sequence' "$tmp/sp.out"; then
		fail $name "no PASS line: $(oneline "$tmp/sp.out")"
	else
		pass $name "random mallocs, reallocs and frees on a pool of 24 pages: consistent"
	fi
}

# Runs churn (2000 blocks of 256 KiB, each freed before the next) under --backing 2m
# and the options given; leaves the units given back and reused in $released and
# $reused ("none" if the account had none, or no hugetlb memory). 1 after a skip.
churn_2m() { # name option...
	local name=$1 counts
	shift
	if ! have_python; then
		skip "$name" "python3 is not installed (Debian package python3), to read --stats"
		return 1
	fi
	if ! pool_2m 8; then
		skip "$name" "$why"
		return 1
	fi
	plain "$P/churn" 262144 2000
	sprun_stats --backing 2m "$@" -- "$P/churn" 262144 2000
	restore
	counts=$("$PY" - "$tmp/stats.json" 2>/dev/null <<'PY' || echo none
import json, sys
d = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
h = d["heap"]
print("%d %d" % (h["released_units"], h["reused_units"]) if d["hugetlb_bytes"] > 0 else "none")
PY
)
	read -r released reused <<<"$counts"
}

# A block allocated and freed again and again under 2m: its empty hugetlb unit is kept
# for the next one, not given back to the pool and taken again each time (20,000
# times: 1.6 s, against 0.004 s kept), and what it gives out again reads as zero.
test_churn_2m() {
	local name=churn_2m released reused
	churn_2m $name || return
	if differs; then
		fail $name "$why"
	elif [ "$released" = none ]; then
		fail $name "no hugetlb memory at exit: $(oneline "$tmp/sp.err")"
	elif [ "$released" -gt 10 ] || [ "$reused" -lt 1000 ]; then
		fail $name "$released units given back and $reused reused for 2000 blocks freed"
	else
		pass $name "2000 blocks of 256 KiB: $released units given back, $reused reused"
	fi
}

# The same churn under --shrink (SUPERPAGE_SHRINK, libhugetlbfs' HUGETLB_MORECORE_SHRINK):
# no empty unit is kept, each goes back to the pool as its block is freed.
test_churn_shrink() {
	local name=churn_shrink released reused
	churn_2m $name --shrink || return
	if differs; then
		fail $name "$why"
	elif [ "$released" = none ]; then
		fail $name "no hugetlb memory at exit: $(oneline "$tmp/sp.err")"
	elif [ "$released" -lt 1990 ]; then
		fail $name "$released units given back and $reused reused for 2000 blocks freed"
	else
		pass $name "2000 blocks of 256 KiB: $released units given back, $reused reused"
	fi
}

# The sweep's mixed heap (16 B-8 MiB log-uniform, filled to 256 MiB, every other
# block freed, filled again): what auto pays against glibc (1.08x when spans of small
# objects shared units with blocks and blocks took the first free place that held
# them, 1.06x with spans apart, 1.04x with the best fit too; glibc maps blocks over
# 128 KiB on their own). A memory bound, not a speed: the figures do not change run to run.
test_mixed_memory() {
	local name=mixed_memory pk sk sh
	need_run "$name" || return
	plain "$C/sweep" mixed 256M
	sprun -- "$C/sweep" mixed 256M
	pk=$(sed -n 's/.* rss_kb=\([0-9]*\).*/\1/p' "$tmp/plain.out")
	sk=$(sed -n 's/.* rss_kb=\([0-9]*\).*/\1/p' "$tmp/sp.out")
	sh=$(sed -n 's/.* huge_kb=\([0-9]*\).*/\1/p' "$tmp/sp.out")
	sed -i 's/ rss_kb=.*//' "$tmp/plain.out" "$tmp/sp.out"
	if differs; then
		fail $name "$why"
	elif [ -z "$pk" ] || [ -z "$sk" ] || [ "$pk" -le 0 ]; then
		fail $name "sweep printed no figures: $(oneline "$tmp/sp.out")"
	elif [ $((sk * 100)) -gt $((pk * 105)) ]; then
		fail $name "$sk kB resident under superpage run, $pk kB under glibc: over 1.05x"
	else
		pass $name "$sk kB resident ($((sh * 100 / sk))% huge) against glibc's $pk kB"
	fi
}

# Blocks of 300,000 bytes, each written once (heap/blocks.c), under auto against glibc:
# a unit is made huge only when three quarters of it are given out, so a small heap
# (10 blocks: 3 MB) costs at most 1 MiB more in all (the runtime's own memory too;
# it cost 3.8 MiB more when every unit went huge on its first touch), a larger one
# (100 blocks) at most 1.03x, with its full units on huge pages (all but the last,
# partly used unit: 14 of 15; 90% of the data, where THP is not off).
blocks_run() { # n : leaves pk sk sh, or why
	plain "$P/blocks" "$1" 300000
	sprun -- "$P/blocks" "$1" 300000
	pk=$(sed -n 's/^rss_kb=\([0-9]*\) .*/\1/p' "$tmp/plain.out")
	sk=$(sed -n 's/^rss_kb=\([0-9]*\) .*/\1/p' "$tmp/sp.out")
	sh=$(sed -n 's/.* huge_kb=\([0-9]*\).*/\1/p' "$tmp/sp.out")
	sed -i '/^rss_kb=/d' "$tmp/plain.out" "$tmp/sp.out"
	why=''
	if differs; then
		:
	elif [ -z "$pk" ] || [ -z "$sk" ] || [ -z "$sh" ] || [ "$pk" -le 0 ]; then
		why="blocks printed no figures: $(oneline "$tmp/sp.out")"
	fi
	[ -z "$why" ]
}

test_small_heap_memory() {
	local name=small_heap_memory
	need_run "$name" || return
	if ! blocks_run 10; then
		fail $name "$why"
	elif [ $((sk - pk)) -gt 1024 ]; then
		fail $name "10 blocks: $sk kB resident under auto, $pk kB under glibc: over 1 MiB more"
	else
		pass $name "10 blocks of 300,000 B: $sk kB resident under auto ($sh kB huge), glibc $pk kB"
	fi
}

test_dense_heap_memory() {
	local name=dense_heap_memory
	need_run "$name" || return
	if ! blocks_run 100; then
		fail $name "$why"
	elif [ $((sk * 100)) -gt $((pk * 103)) ]; then
		fail $name "100 blocks: $sk kB resident under auto, $pk kB under glibc: over 1.03x"
	elif [ "$(thp_mode)" != never ] && [ $((sh * 10)) -lt $((29296 * 9)) ]; then
		fail $name "100 blocks: $sh kB on huge pages, want 90% of the 29,296 kB of data"
	else
		pass $name "100 blocks of 300,000 B: $sk kB resident under auto ($sh kB huge), glibc $pk kB"
	fi
}

# A block of 64 MiB written at one page in 64 (heap/sparse.c), malloc'd, mapped or made
# writable in a reservation (as MariaDB's buffer pool is), in a
# heap already past auto's promotion: dense by touch (SUPERPAGE_DENSE_TOUCHED), it adds
# about the 1 MiB it touched, not 64 MiB on huge pages; written whole, it goes on huge
# pages (90% of it) as it is filled, or after the blocks malloc'd after it (the looks'
# thread, or where there is none, the allocations).
sparse_run() { # mode : leaves added huge calls, or why
	plain "$P/sparse" "$1"
	SUPERPAGE_DENSE_TOUCHED=yes sprun -- "$P/sparse" "$1"
	read -r added huge calls < <(sed -n 's/^added_kb=\([0-9-]*\) huge_kb=\([0-9-]*\) calls=\([0-9]*\)$/\1 \2 \3/p' "$tmp/sp.out")
	sed -i '/^added_kb=/d' "$tmp/plain.out" "$tmp/sp.out"
	why=''
	if differs; then
		:
	elif [ -z "$added" ] || [ -z "$huge" ] || [ -z "$calls" ]; then
		why="sparse printed no figures: $(oneline "$tmp/sp.out")"
	fi
	[ -z "$why" ]
}

test_sparse_block() { # sparse|mmap|reserve
	local name=sparse_block_$1
	need_run "$name" || return
	if ! sparse_run "$1"; then
		fail $name "$why"
	elif [ "$added" -gt 8192 ]; then
		fail $name "64 MiB written at 1 page in 64 added $added kB ($huge kB huge): over 8 MiB"
	else
		pass $name "64 MiB written at 1 page in 64 added $added kB ($huge kB huge)"
	fi
}

test_touched_block_huge() {
	local name=touched_block_huge
	need_run "$name" || return
	if [ "$(thp_mode)" = never ]; then
		skip $name "THP is never here: nothing is made huge"
	elif ! sparse_run dense; then
		fail $name "$why"
	elif [ $((huge * 10)) -lt $((65536 * 9)) ]; then
		fail $name "64 MiB written whole: $huge kB on huge pages after $calls small blocks, want 90%"
	else
		pass $name "64 MiB written whole: $huge kB on huge pages after $calls small blocks"
	fi
}

# A block whose units were made huge one by one as they were touched (its second half),
# moved by realloc (heap/sparse.c moved: a block after it is in the way): each unit
# moves with its own backing, and the heap's count of units by backing stays true (the
# move used to give every unit the first one's: the count of 4k units went below 0
# once the block was freed).
test_touched_block_moved() {
	local name=touched_block_moved
	need_run "$name" || return
	if [ "$(thp_mode)" = never ]; then
		skip $name "THP is never here: nothing is made huge"
		return
	fi
	have_python || { skip $name "$why"; return; }
	plain "$P/sparse" moved
	SUPERPAGE_DENSE_TOUCHED=yes sprun_stats -- "$P/sparse" moved
	sed -i '/^added_kb=/d' "$tmp/plain.out" "$tmp/sp.out"
	if differs || check_stats sparse; then
		fail $name "$why"
		return
	fi
	why=$("$PY" - "$tmp/stats.json" <<'PY'
import json, sys
d = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]["heap"]
units, peak = d["units"], d["units_peak"]
if d["mremaps"] < 1:
    print("the block was not moved (mremaps %d): nothing tested" % d["mremaps"])
elif any(v > peak for v in units.values()) or d["dense_units"] < 1:
    print("units by backing %r, peak %d, %d made huge when dense" % (units, peak, d["dense_units"]))
else:
    print("ok units by backing %r, peak %d, %d made huge when dense" % (units, peak, d["dense_units"]))
PY
)
	if [[ $why == ok* ]]; then pass $name "moved: ${why#ok }"; else fail $name "$why"; fi
}

# unshare(CLONE_NEWUSER) needs the process single-threaded: under auto, dense by touch,
# the runtime's looks' thread runs while a block is watched (heap/userns.c), and is
# ended for the call (program/userns.c), by libc's unshare or by syscall().
test_touched_unshare() { # libc|syscall
	local name=touched_unshare_$1
	need_run "$name" || return
	plain "$P/userns" "$1"
	if [ "$prc" != 0 ]; then
		skip $name "unshare(CLONE_NEWUSER) fails here without superpage: $(grep '^unshare=' "$tmp/plain.out")"
		return
	fi
	SUPERPAGE_DENSE_TOUCHED=yes sprun -- "$P/userns" "$1"
	local before
	before=$(sed -n 's/^threads_before=//p' "$tmp/sp.out")
	if [ "$src" != 0 ]; then
		fail $name "exit $src with the runtime's thread ($before threads): $(grep '^unshare=' "$tmp/sp.out") $(oneline "$tmp/sp.err")"
	elif [ "${before:-0}" -lt 2 ]; then
		fail $name "the looks' thread was not running ($before threads): nothing tested"
	else
		pass $name "unshare(CLONE_NEWUSER) ok with the looks' thread running before ($before threads)"
	fi
}

# calloc of a block that lies across units (heap/callocs.c): only its end units, which
# the heap had in use, are zeroed by hand; the units between, fresh from the kernel,
# stay untouched (a 17 MB calloc after a few blocks used to be written whole: 16.6 MB
# resident under --backing 4k for nothing). And every byte a calloc gives is 0, where
# the blocks freed before it were written, under each backing that places it.
test_calloc_sparse() {
	local name=calloc_sparse added
	need_run "$name" || return
	plain "$P/callocs" sparse
	sprun --backing 4k -- "$P/callocs" sparse
	added=$(sed -n 's/^added_kb=\([0-9-]*\)$/\1/p' "$tmp/sp.out")
	sed -i '/^added_kb=/d' "$tmp/plain.out" "$tmp/sp.out"
	if differs; then
		fail $name "$why"
	elif [ -z "$added" ] || [ "$added" -gt 4096 ]; then
		fail $name "an untouched calloc of 17 MB added ${added:-no} kB under --backing 4k: over its two end units"
	else
		pass $name "an untouched calloc of 17 MB added $added kB under --backing 4k"
	fi
}

test_calloc_reuse() {
	local name=calloc_reuse b
	need_run "$name" || return
	plain "$P/callocs" reuse
	for b in auto thp 4k; do
		sprun --backing $b -- "$P/callocs" reuse
		if differs; then
			fail $name "--backing $b: $why"
			return
		fi
	done
	pass $name "callocs over freed, written blocks read 0 under auto, thp and 4k"
}

# Two threads take turns to free blocks and allocate again (heap/affine.c): each gets
# back memory it freed itself, not memory the other just wrote, where the heap has
# both (the runs of pages, the whole units kept empty). Writing lines the other core
# wrote last cost 2-2.6x as long; bench/kernels/malloc realloc with 2 threads ran at
# 0.82x mimalloc's speed when 17% of the bytes it was given were the other thread's
# last, 1.09x with 0.1%. Under glibc, whatever it prints: the placement is ours.
test_heap_affine() {
	local name=heap_affine got
	need_run "$name" || return
	plain "$P/affine"
	sprun -- "$P/affine"
	got=$(tr '\n' ' ' <"$tmp/sp.out")
	if [ "$prc" != 0 ] || [ "$src" != 0 ]; then
		fail $name "exit $prc plain, $src under superpage run: $(oneline "$tmp/sp.err")"
	elif [ "$got" != "run A: own run B: own units A: own " ]; then
		fail $name "a thread was given the other's memory: $got"
	else
		pass $name "runs and kept units went back to the thread that freed them"
	fi
}

# Under --backing 2m a block the pool cannot hold whole takes the pages the pool has
# and THP for the rest, and --verbose says so once.
test_block_pool_short() {
	local name=block_pool_short got n
	if ! have_python; then
		skip $name "python3 is not installed (Debian package python3), to read --stats"
		return
	fi
	if ! pool_2m 32; then
		skip $name "$why"
		return
	fi
	plain "$P/bigblock" 128
	sprun_stats --backing 2m --verbose -- "$P/bigblock" 128
	restore
	n=$(grep -c '^superpage: 2m: 128 MiB wanted 64 pages of 2 MiB and the pool had' "$tmp/sp.err")
	got=$("$PY" -c 'import json,sys; print([json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]["hugetlb_bytes"] >> 20)' "$tmp/stats.json" 2>/dev/null)
	if differs; then
		fail $name "$why"
	elif [ "$n" != 1 ]; then
		fail $name "said the split $n times, want once: $(oneline "$tmp/sp.err")"
	elif [ -z "$got" ] || [ "$got" -lt 48 ] || [ "$got" -ge 128 ]; then
		fail $name "${got:-no} MiB of hugetlb from a pool of 32 free pages, want most of 64 MiB"
	else
		pass $name "128 MiB block: $got MiB on hugetlb pages, the rest THP"
	fi
}

# Large blocks of one size malloc'd one after another do not lie a multiple of
# 256 MiB apart (a triad over three such arrays ran at half speed: large.c), under
# each backing that places them; the blocks are not touched.
test_large_spread() {
	local name=large_spread b out
	for b in auto thp 4k; do
		sprun --backing $b -- "$P/spread" 4 256
		out=$(oneline "$tmp/sp.out" 1)
		if [ "$src" != 0 ]; then
			fail $name "under $b: exit $src: $out $(oneline "$tmp/sp.err")"
			return
		fi
	done
	pass $name "$out"
}

run_some "$@"
for backing in auto thp 4k 2m; do
	test_torture $backing
done
test_torture auto touched
test_churn_2m
test_churn_shrink
test_pages_2m
test_mixed_memory
test_small_heap_memory
test_dense_heap_memory
test_sparse_block sparse
test_sparse_block mmap
test_sparse_block reserve
test_touched_block_huge
test_touched_block_moved
test_touched_unshare libc
test_touched_unshare syscall
test_heap_affine
test_block_pool_short
test_large_spread
test_calloc_sparse
test_calloc_reuse
exit $failed
