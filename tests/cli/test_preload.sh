#!/usr/bin/env bash
# test_preload.sh - real programs under `superpage run`: the same output as without it,
# and their memory really on huge pages.
# Usage: tests/cli/test_preload.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test; other lines are measurements, not results. Every sysfs
# value it changes is put back, even on failure or Ctrl-C.
set -u
B=${1:?usage: tests/cli/test_preload.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SRC=$here/../preload
SP=$B/superpage
RT=$B/libsuperpage-run.so
P=$B/tests/preload
P2M=/sys/kernel/mm/hugepages/hugepages-2048kB
SEED=42
export LC_ALL=C
running=''
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

why=$(preload_blocker "$B" "$RT")
if [ -n "$why" ]; then
	skip preload "$why; the preload runs in the plain build"
	exit 0
fi
if [ ! -f "$RT" ]; then
	skip preload "$RT is missing: build with make B=$B tests"
	exit 0
fi
for prog in torture heapheavy gups_malloc gendata brkuse bigmap; do
	if [ ! -x "$P/$prog" ]; then
		fail preload_built "$P/$prog is missing: build with make B=$B tests"
		exit 1
	fi
done
B=$(cd "$B" && pwd)
SP=$B/superpage RT=$B/libsuperpage-run.so P=$B/tests/preload
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_preload.XXXXXX")
tmp=$(cd "$tmp" && pwd)

# ---------- putting things back ----------

# shellcheck disable=SC2317 # (called by the trap)
interrupted() {
	[ -z "$running" ] || kill "$running" 2>/dev/null
	exit 130
}
trap 'restore; rm -rf "$tmp"' EXIT
trap interrupted INT TERM HUP

have_python() { [ -n "$PY" ]; }

# Gives the 2M pool n more free pages than it has in use. Returns 1 (and puts it back)
# if the kernel does not give them or there is no 2M pool; says why in $why.
pool_2m() { # n
	local n=$1 nr free resv avail
	why=''
	if ! is_root; then
		why="needs root to set the 2M pool"
	elif [ ! -w $P2M/nr_hugepages ]; then
		why="no 2M hugetlb pages on this machine"
	fi
	[ -z "$why" ] || return 1
	nr=$(cat $P2M/nr_hugepages) free=$(cat $P2M/free_hugepages) resv=$(cat $P2M/resv_hugepages)
	set_sysfs $P2M/nr_hugepages $((nr - free + resv + n))
	free=$(cat $P2M/free_hugepages) resv=$(cat $P2M/resv_hugepages)
	avail=$((free - resv))
	if [ "$avail" -lt "$n" ]; then
		why="the kernel gave $avail of $n free 2M pages"
	elif [ "$avail" -gt $((2 * n)) ]; then
		why="the 2M pool keeps $avail free pages, want about $n"
	fi
	[ -z "$why" ] && return 0
	restore
	return 1
}

# ---------- running a program both ways ----------

plain() { # command... : leaves prc, $tmp/plain.out, $tmp/plain.err
	limited "$tmp/plain.out" "$tmp/plain.err" "$@"
	prc=$rc
}
sprun() { # options... -- command... : leaves src, $tmp/sp.out, $tmp/sp.err
	limited "$tmp/sp.out" "$tmp/sp.err" "$SP" run "$@"
	src=$rc
}
oneline() { tail -n "${2:-3}" "$1" | tr '\n' ' ' | cut -c 1-300; }

# Sets why if the run under superpage differs from the plain one in status or stdout.
differs() {
	why=''
	if [ "$prc" != 0 ]; then
		why="the plain run exited $prc: $(oneline "$tmp/plain.err")"
	elif [ "$src" = 124 ]; then
		why="timed out after ${LIMIT}s under superpage run: $(oneline "$tmp/sp.err")"
	elif [ "$src" -gt 128 ]; then
		why="died of signal $((src - 128)) under superpage run: $(oneline "$tmp/sp.err")"
	elif [ "$src" != "$prc" ]; then
		why="exited $src under superpage run, $prc plain: $(oneline "$tmp/sp.err")"
	elif ! cmp -s "$tmp/plain.out" "$tmp/sp.out"; then
		why="stdout differs: $(diff "$tmp/plain.out" "$tmp/sp.out" | head -n 5 | tr '\n' ' ' |
			cut -c 1-300)"
	fi
	[ -n "$why" ]
}
judge() { # name [note]
	if differs; then fail "$1" "$why"; else pass "$1" "${2:-}"; fi
}

# The same, with --stats to a file: each process under superpage appends a JSON line.
sprun_stats() { # options... -- command...
	rm -f "$tmp/stats.json"
	sprun --stats="$tmp/stats.json" "$@"
}

# Reads the --stats file of the last sprun_stats. Sets why if a line is not JSON, if no
# process allocated through the runtime, if a named program did not report, or (with
# BACKING=4k or thp) if a process has memory on pages that backing must not use.
check_stats() { # comm...
	why=''
	have_python || return 1
	why=$("$PY" - "$tmp/stats.json" "$@" 2>&1 <<'PY'
import json, os, sys
path, want = sys.argv[1], sys.argv[2:]
backing = os.environ.get("BACKING", "")
try:
    lines = [l for l in open(path) if l.strip()]
except OSError as e:
    print("no --stats file: %s" % e.strerror)
    sys.exit()
seen = {}
for n, l in enumerate(lines, 1):
    try:
        d = json.loads(l)
    except ValueError as e:
        print("--stats line %d is not JSON (%s): %.100s" % (n, e, l))
        sys.exit()
    if d.get("heap", {}).get("mallocs", 0) > 0:
        seen[d.get("comm")] = seen.get(d.get("comm"), 0) + 1
    if backing == "4k" and d.get("huge_bytes") != 0:
        print("--backing 4k, but %s has %r bytes on huge pages" % (d.get("comm"), d.get("huge_bytes")))
        sys.exit()
    if backing == "thp" and d.get("hugetlb_bytes") != 0:
        print("--backing thp, but %s has %r bytes of hugetlb" % (d.get("comm"), d.get("hugetlb_bytes")))
        sys.exit()
if not seen:
    print("no process in the --stats file allocated through superpage (%d lines)" % len(lines))
    sys.exit()
missing = [c for c in want if c not in seen]
if missing:
    print("no --stats line with mallocs from %s (got %s)" % (
        ", ".join(missing), ", ".join(sorted(map(str, seen)))))
PY
)
	[ -n "$why" ]
}

# judge, and the named programs must have run with the runtime (see check_stats).
judge_stats() { # name note comm...
	local name=$1 note=$2
	shift 2
	if differs || check_stats "$@"; then fail "$name" "$why"; else pass "$name" "$note"; fi
}

# Lines on stderr that the program wrote, not superpage.
foreign_stderr() { grep -v '^superpage: ' "$1" | head -n 3 | tr '\n' ' '; }

have_run=1
run_why=''
"$SP" run --help >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc != 0 ]; then
	have_run=0
	run_why="'superpage run' is not there: 'superpage run --help' exited $rc $(oneline "$tmp/err" 1)"
fi
need_run() { # name
	[ $have_run = 1 ] && return 0
	skip "$1" "$run_why"
	return 1
}

# ---------- the runtime ----------

test_runtime_exports() {
	local name=runtime_exports sym missing=''
	if ! command -v nm >/dev/null 2>&1; then
		skip $name "no nm to read the symbols"
		return
	fi
	nm -D --defined-only "$RT" >"$tmp/syms" 2>&1
	for sym in malloc free calloc realloc reallocarray memalign aligned_alloc \
		posix_memalign valloc pvalloc malloc_usable_size sbrk brk; do
		awk -v s="$sym" '$NF == s { found = 1 } END { exit !found }' "$tmp/syms" ||
			missing="$missing $sym"
	done
	if [ -n "$missing" ]; then
		fail $name "$RT does not define:$missing"
	else
		pass $name
	fi
}

# ---------- the torture test under each backing ----------

torture_args=(-n 4000 -r 4 "$SEED")
torture_plain_done=0
torture_plain() {
	[ $torture_plain_done = 1 ] && return
	# glibc leaves errno at ENOMEM on some successful calls (an arena that cannot grow,
	# then a retry in another): -e lets it; the runtime gets no such leave.
	plain "$P/torture" -e "${torture_args[@]}"
	cp "$tmp/plain.out" "$tmp/torture.out"
	tprc=$prc
	torture_plain_done=1
}

test_torture() { # backing
	local backing=$1 name=torture_$1 extra
	need_run "$name" || return
	if [ "$backing" = 2m ] && ! pool_2m 64; then
		skip "$name" "$why"
		return
	fi
	torture_plain
	sprun_stats --backing "$backing" -- "$P/torture" "${torture_args[@]}"
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

# ---------- the program break ----------

thp_mode() { sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; }

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

# sbrk and brk as old programs use them (tests/preload/brkuse.c checks every result
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

# ---------- large mappings (tests/preload/bigmap.c) ----------

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

# A block allocated and freed again and again under 2m: its empty hugetlb unit is kept
# for the next one, not given back to the pool and taken again each time (20,000
# times: 1.6 s, against 0.004 s kept), and what it gives out again reads as zero.
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

test_churn_2m() {
	local name=churn_2m counts released reused
	if ! have_python; then
		skip $name "python3 is not installed (Debian package python3), to read --stats"
		return
	fi
	if ! pool_2m 8; then
		skip $name "$why"
		return
	fi
	plain "$P/churn" 262144 2000
	sprun_stats --backing 2m -- "$P/churn" 262144 2000
	restore
	counts=$("$PY" - "$tmp/stats.json" 2>/dev/null <<'PY' || echo none
import json, sys
d = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]
h = d["heap"]
print("%d %d" % (h["released_units"], h["reused_units"]) if d["hugetlb_bytes"] > 0 else "none")
PY
)
	read -r released reused <<<"$counts"

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

# ---------- real programs ----------

test_python() {
	local name=python_workload
	need_run $name || return
	if ! have_python; then
		skip $name "python3 is not installed (Debian package python3)"
		return
	fi
	plain "$PY" "$SRC/workload.py" --size small
	sprun_stats -- "$PY" "$SRC/workload.py" --size small
	judge_stats $name "" "$(basename "$PY" | cut -c 1-15)"
}

test_gcc() {
	local name=gcc_compile
	need_run $name || return
	if ! command -v gcc >/dev/null 2>&1; then
		skip $name "gcc is not installed"
		return
	fi
	mkdir -p "$tmp/gcc"
	cat >"$tmp/gcc/hello.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void)
{
	size_t n = 0;
	for (int i = 1; i <= 1000; i++) {
		char *s = malloc((size_t)i);
		memset(s, 'a' + i % 26, (size_t)i - 1);
		s[i - 1] = 0;
		n += strlen(s);
		free(s);
	}
	printf("hello %zu\n", n);
	return 0;
}
EOF
	cp "$SRC/torture.c" "$tmp/gcc/"
	# Both runs compile the same file in the same folder (debug info names both); the
	# objects and the program's output must match.
	cat >"$tmp/gcc/build.sh" <<'EOF'
set -e
cd "$(dirname "$0")"
gcc -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -c -o "torture_$1.o" torture.c
gcc -O2 -o "hello_$1" hello.c
"./hello_$1"
sha256sum <"torture_$1.o"
EOF
	plain sh "$tmp/gcc/build.sh" plain
	sprun_stats -- sh "$tmp/gcc/build.sh" sp
	judge_stats $name "$(head -n 1 "$tmp/sp.out")" gcc cc1 as
}

test_sort() {
	local name=sort_200mb avail
	need_run $name || return
	avail=$(df -Pk "$tmp" | awk 'NR == 2 { print $4 }')
	if [ "${avail:-0}" -lt 800000 ]; then
		skip $name "less than 800 MB free in $tmp"
		return
	fi
	"$P/gendata" lines 200000000 7 >"$tmp/lines" || {
		fail $name "gendata failed"
		return
	}
	# shellcheck disable=SC2016
	plain sh -c 'sort "$0" | sha256sum' "$tmp/lines"
	# shellcheck disable=SC2016
	sprun_stats -- sh -c 'sort "$0" | sha256sum' "$tmp/lines"
	rm -f "$tmp/lines"
	judge_stats $name "" sort
}

test_shell() {
	local sh name
	need_run shell_forkexec || return
	for sh in sh bash; do
		name=shell_forkexec_$sh
		if ! command -v $sh >/dev/null 2>&1; then
			skip $name "no $sh"
			continue
		fi
		plain $sh "$SRC/forkexec.sh" 150
		sprun_stats -- $sh "$SRC/forkexec.sh" 150
		# (dash ends with _exit: no account from the shell itself)
		judge_stats $name "" expr tr awk
	done
}

test_sqlite() {
	local name=sqlite3 d
	need_run $name || return
	if ! command -v sqlite3 >/dev/null 2>&1; then
		skip $name "sqlite3 is not installed (Debian package sqlite3)"
		return
	fi
	for d in plain sp; do
		mkdir -p "$tmp/sql_$d"
		"$P/gendata" csv 100000 3 >"$tmp/sql_$d/people.csv"
	done
	cd "$tmp/sql_plain" && plain sqlite3 test.db <"$SRC/workload.sql"
	cd "$tmp/sql_sp" && sprun_stats -- sqlite3 test.db <"$SRC/workload.sql"
	cd "$here" || return
	if differs || check_stats sqlite3; then
		fail $name "$why"
	elif ! grep -qx ok "$tmp/sp.out"; then
		fail $name "integrity_check did not say ok: $(oneline "$tmp/sp.out")"
	else
		pass $name "$(head -n 2 "$tmp/sp.out" | tail -n 1)"
	fi
	rm -rf "$tmp/sql_plain" "$tmp/sql_sp"
}

test_make() {
	local name=make_j2 d
	need_run $name || return
	if ! command -v make >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1; then
		skip $name "make or gcc is not installed"
		return
	fi
	for d in plain sp; do
		mkdir -p "$tmp/make_$d"
		cat >"$tmp/make_$d/Makefile" <<'EOF'
# A tiny project: generated sources, two jobs at a time, a program that is run.
CC = gcc
CFLAGS = -O2 -Wall
PARTS = a b c d e f
prog: main.o $(PARTS:%=%.o)
	$(CC) -o $@ $^
main.c:
	{ echo '#include <stdio.h>'; \
	  for p in $(PARTS); do echo "int part_$$p(int);"; done; \
	  echo 'int main(void) { int s = 0;'; \
	  for p in $(PARTS); do echo "s += part_$$p(s + 1);"; done; \
	  echo 'printf("sum %d%c", s, 10); return 0; }'; } >$@
%.c:
	echo 'int part_$*(int x) { int s = 0; for (int i = 0; i < x + 100; i++) s += i % 7; return s; }' >$@
run: prog
	./prog
	cat *.c | cksum
	sha256sum *.o
.PHONY: run
EOF
	done
	plain make -j2 -s -C "$tmp/make_plain" run
	sprun_stats -- make -j2 -s -C "$tmp/make_sp" run
	judge_stats $name "$(head -n 1 "$tmp/sp.out")" make cc1 as prog
	rm -rf "$tmp/make_plain" "$tmp/make_sp"
}

# ---------- memory on huge pages ----------

# Starts "superpage run [options] -- command --hold" with its stdin on a fifo we hold
# open; waits for "holding pid=N" on its stderr. Leaves hold_pid and held (the pid of
# the program itself); returns 1 if it did not get there.
start_hold() { # options... -- command...
	rm -f "$tmp/hold_in"
	mkfifo "$tmp/hold_in"
	timeout -k 5 $LIMIT "$SP" run "$@" <"$tmp/hold_in" >"$tmp/sp.out" 2>"$tmp/sp.err" &
	hold_pid=$!
	exec {hold_in}>"$tmp/hold_in"
	held=''
	for _ in $(seq 1200); do
		held=$(sed -n 's/^holding pid=\([0-9]*\)$/\1/p' "$tmp/sp.err")
		[ -n "$held" ] && return 0
		kill -0 "$hold_pid" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
# Ends the held program: EOF on its stdin. Leaves src.
end_hold() {
	exec {hold_in}>&-
	hold_in=''
	wait "$hold_pid" 2>/dev/null
	src=$?
	hold_pid=''
}
rss_of() { sed -n 's/^rss_bytes=\([0-9]*\)$/\1/p' "$1" | tail -n 1; }

# The coverage of a held process from `superpage stat --json`: "huge rss" or an error.
coverage_of() { # pid
	"$SP" stat --json "$1" >"$tmp/stat.json" 2>"$tmp/stat.err" ||
		{ echo "stat failed: $(oneline "$tmp/stat.err")"; return 1; }
	"$PY" - "$tmp/stat.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["huge_bytes"], d["rss_bytes"])
PY
}

# Runs a program plain and held under superpage run; checks output, coverage >= want.
test_coverage() { # name want_percent command...
	local name=$1 want=$2 cov huge rss prss srss note
	shift 2
	need_run "$name" || return
	if ! have_python; then
		skip "$name" "no python3 to read JSON"
		return
	fi
	plain "$@"
	prss=$(rss_of "$tmp/plain.err")
	if ! start_hold -- "$@" --hold; then
		stop_hold
		fail "$name" "never said 'holding pid=N' under superpage run: $(oneline "$tmp/sp.err")"
		return
	fi
	cov=$(coverage_of "$held")
	end_hold
	srss=$(rss_of "$tmp/sp.err")
	if differs; then
		fail "$name" "$why"
		return
	fi
	read -r huge rss <<<"$cov"
	if ! [[ "$huge" =~ ^[0-9]+$ && "$rss" =~ ^[0-9]+$ ]] || [ "$rss" = 0 ]; then
		fail "$name" "no coverage: $cov"
		return
	fi
	note=$(awk -v h="$huge" -v r="$rss" -v p="${prss:-0}" -v s="${srss:-0}" 'BEGIN {
		printf "%.1f%% huge (%.0f of %.0f MiB)", 100 * h / r, h / 1048576, r / 1048576
		if (p > 0 && s > 0) printf ", rss %.3fx glibc (%.0f vs %.0f MiB)", s / p, s / 1048576, p / 1048576
	}')
	if [ $((huge * 1000)) -ge $((rss * want * 10)) ]; then
		pass "$name" "$note"
	else
		fail "$name" "$note, want >= $want%"
	fi
}

# The resident memory of a program with a small heap, plain and under superpage run.
report_small_heap() {
	local prss srss
	[ $have_run = 1 ] || return
	plain "$P/heapheavy" --div 115
	sprun -- "$P/heapheavy" --div 115
	prss=$(rss_of "$tmp/plain.err") srss=$(rss_of "$tmp/sp.err")
	if [ -n "$prss" ] && [ -n "$srss" ]; then
		awk -v p="$prss" -v s="$srss" 'BEGIN {
			printf "small heap (10 MiB): rss %.1f MiB under superpage run, %.1f MiB plain (%+.1f MiB)\n",
				s / 1048576, p / 1048576, (s - p) / 1048576 }'
	fi
}

# The random-update kernel: the same output, and how much faster (a report, not a test:
# the best of two alternating runs each way).
test_gups() {
	local name=gups_malloc ps='' ss='' t
	need_run $name || return
	for _ in 1 2; do
		plain "$P/gups_malloc" 1G 8M
		t=$(sed -n 's/^seconds=\([0-9.]*\) .*/\1/p' "$tmp/plain.out")
		ps=$(awk -v a="$ps" -v b="$t" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
		sprun -- "$P/gups_malloc" 1G 8M
		t=$(sed -n 's/^seconds=\([0-9.]*\) .*/\1/p' "$tmp/sp.out")
		ss=$(awk -v a="$ss" -v b="$t" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
		sed -i '/^seconds=/d' "$tmp/plain.out" "$tmp/sp.out"
		differs && break
	done
	judge $name "$(awk -v p="${ps:-0}" -v s="${ss:-0}" 'BEGIN {
		if (s > 0) printf "best %.3f s under superpage run, %.3f s plain: %.2fx", s, p, p / s }')"
}

# ---------- a pool that runs dry ----------

test_pool_exhaustion() {
	local name=pool_exhaustion extra cov huge rss note thp hugetlb
	need_run $name || return
	if ! have_python; then
		skip $name "no python3 to read JSON"
		return
	fi
	if ! pool_2m 16; then
		skip $name "$why"
		return
	fi
	# 576 MiB of heap against 32 MiB of pool: held, to see where the rest went.
	plain "$P/heapheavy" --div 2
	rm -f "$tmp/stats.json"
	if ! start_hold --backing 2m --stats="$tmp/stats.json" -- "$P/heapheavy" --div 2 --hold; then
		stop_hold
		restore
		fail $name "never said 'holding pid=N' under superpage run: $(oneline "$tmp/sp.err")"
		return
	fi
	cov=$(coverage_of "$held")
	hugetlb=$(awk '/^(Private|Shared)_Hugetlb:/ { kb += $2 } END { print kb / 1024 }' \
		"/proc/$held/smaps_rollup" 2>/dev/null)
	end_hold
	restore
	if differs; then
		fail $name "$why"
		return
	fi
	read -r huge rss <<<"$cov"
	if ! [[ "$huge" =~ ^[0-9]+$ && "$rss" =~ ^[0-9]+$ ]] || [ "$rss" = 0 ]; then
		fail $name "no coverage: $cov"
		return
	fi
	note=$(awk -v h="$huge" -v r="$rss" -v t="${hugetlb:-?}" 'BEGIN {
		printf "%.1f%% huge, %s MiB of it hugetlb from the 32 MiB pool", 100 * h / r, t }')
	# Where THP can be had, the memory the pool could not hold must be on THP.
	thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
	if [ -n "$thp" ] && [ "$thp" != never ] && [ $((huge * 10)) -lt $((rss * 9)) ]; then
		fail $name "$note with THP $thp: the rest fell to base pages"
		return
	fi
	why=$("$PY" - "$tmp/stats.json" 2>&1 <<'PY'
import json, sys
try:
    lines = [l for l in open(sys.argv[1]) if l.strip()]
except OSError as e:
    print("no stats file: %s" % e)
    sys.exit()
if not lines:
    print("the stats file is empty")
    sys.exit()
for l in lines:
    d = json.loads(l)
    f = d.get("falls", {}).get("2m")
    if isinstance(f, dict) and any(f.values()):
        sys.exit()
    if f and not isinstance(f, dict):
        sys.exit()
print("no fall from 2m in the stats: falls = %r" % [json.loads(l).get("falls") for l in lines])
PY
)
	if [ -n "$why" ]; then fail $name "$why"; else pass $name "$note"; fi

	# The same dry pool, with a program that forks while threads allocate: a child's
	# copy on write of hugetlb memory must never be a SIGBUS.
	name=pool_exhaustion_fork
	if ! pool_2m 16; then
		skip $name "$why"
		return
	fi
	plain "$P/torture" -e -n 1200 -r 2 $SEED
	sprun --backing 2m -- "$P/torture" -n 1200 -r 2 $SEED
	restore
	extra=$(foreign_stderr "$tmp/sp.err")
	if differs; then
		fail $name "$why"
	elif [ -n "$extra" ]; then
		fail $name "stderr: $extra"
	else
		pass $name
	fi
}

# ---------- bad SUPERPAGE_* values ----------

test_bad_env() {
	local name=bad_env_values n v why=''
	plain "$P/torture" -e -n 800 -r 2 $SEED
	limited "$tmp/sp.out" "$tmp/sp.err" env SUPERPAGE_BACKING=bogus SUPERPAGE_MIN=2X \
		SUPERPAGE_HEAP=maybe LD_PRELOAD="$RT" "$P/torture" -n 800 -r 2 $SEED
	src=$rc
	if differs; then
		fail $name "$why"
		return
	fi
	# One warning per bad value for the whole run, though it forks (and does not exec).
	for v in SUPERPAGE_BACKING SUPERPAGE_MIN SUPERPAGE_HEAP; do
		n=$(grep -c "^superpage: .*$v" "$tmp/sp.err")
		[ "$n" = 1 ] || why="$why $v warned $n times;"
	done
	n=$(grep -c '^superpage: ' "$tmp/sp.err")
	[ "$n" = 3 ] || why="$why $n lines start with 'superpage: ', want 3;"
	[ -z "$(foreign_stderr "$tmp/sp.err")" ] || why="$why stderr: $(foreign_stderr "$tmp/sp.err")"
	if [ -n "$why" ]; then
		fail $name "${why%;}: $(oneline "$tmp/sp.err" 4)"
	else
		pass $name
	fi
}

# ---------- superpage run -- true ----------

median_ms() { # command... : the median wall time of 50 runs, in ms
	local t0 t1
	for _ in $(seq 50); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000))
	done | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", (a[25] + a[26]) / 2000 }'
}

test_run_true() {
	local name=run_true mt mp why=''
	need_run $name || return
	sprun -- true
	if [ "$src" != 0 ] || [ -s "$tmp/sp.out" ]; then
		fail $name "exit $src: $(oneline "$tmp/sp.err")"
		return
	fi
	sprun -- sh -c 'exit 3'
	[ "$src" = 3 ] || why="'sh -c \"exit 3\"' gave $src;"
	sprun -- sh -c 'kill -9 $$'
	[ "$src" = 137 ] || why="$why a child killed by signal 9 gave $src, want 137;"
	if [ -n "$why" ]; then
		fail run_exit_status "${why%;}"
	else
		pass run_exit_status
	fi
	# The program true, not the shell's builtin.
	mt=$(median_ms "$SP" run -- true)
	mp=$(median_ms "$(type -P true)")
	pass $name "$(awk -v t="$mt" -v p="$mp" 'BEGIN {
		printf "median of 50: %.2f ms under superpage run, %.2f ms plain (%+.2f ms)", t, p, t - p }')"
}

# Some tests only, for a developer: test_preload.sh BUILD torture:2m pool_exhaustion ...
if [ $# -gt 1 ]; then
	shift
	for t in "$@"; do
		case "$t" in
		*:*) "test_${t%%:*}" "${t#*:}" ;;
		*) "test_$t" ;;
		esac
	done
	exit $failed
fi

test_runtime_exports
test_run_true
test_bad_env
for backing in auto thp 4k 2m; do
	test_torture $backing
	test_mmap_semantics $backing
	test_bigmap $backing
	test_brk $backing
done
test_bigmap_2m
test_churn_2m
test_pages_2m
test_brk no_heap
for backing in auto thp 2m; do
	test_brk_huge $backing
done
test_python
test_gcc
test_sort
test_shell
test_sqlite
test_make
test_coverage heapheavy_coverage 99 "$P/heapheavy"
if have_python; then
	test_coverage python_coverage 90 "$PY" "$SRC/workload.py" --size full
else
	skip python_coverage "python3 is not installed (Debian package python3)"
fi
report_small_heap
test_gups
test_pool_exhaustion
exit $failed
