#!/usr/bin/env bash
# test_bench.sh - tests the benchmark kernels (each checks its own answer at a tiny size,
# plain and built as the ideal) and superpage bench (options, the run, what it says a
# run got, its JSON, CSV and SVG, and the pools it sets up and puts back).
# Usage: tests/cli/test_bench.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Pools it changes are put back, also on failure.
set -u
B=${1:?usage: tests/cli/test_bench.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
K=$B/bench/kernels
I=$B/bench/ideal
HP=/sys/kernel/mm/hugepages
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
trap 'restore; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

unset LD_PRELOAD GLIBC_TUNABLES BENCH_IDEAL BENCH_SMAPS "${!SUPERPAGE_@}"

no_preload=$(preload_blocker "$B" "$B/libsuperpage-run.so")

have_python() { command -v python3 >/dev/null 2>&1; }

# Whether test $1 can run here: with the preload built, and what else it names (root to
# set up pools, python to read the JSON). Skips it with the reason where not.
can_run() { # name [root] [python]
	local name=$1 need
	shift
	if [ -n "$no_preload" ]; then
		skip "$name" "$no_preload"
		return 1
	fi
	for need; do
		case $need in
		root) is_root || { skip "$name" "needs root to set up pools"; return 1; } ;;
		python) have_python || { skip "$name" "needs python3 to read the JSON"; return 1; } ;;
		esac
	done
}

oneline() { head -c 300 "$1" | tr '\n' '|'; }

# Each kernel at a size that takes well under a second.
TINY=("trans:256 --reps 4" "trans2:256 --reps 4" "transf:256 --reps 4" "transw:256 --reps 4" mem2:4M gemmx:64 fft:1024 "himeno:1 --reps 2"
	gups:8M tlbreach:1M stream:4M fault:64M malloc:1 promote:8M "fork:4M --reps 20")

# Runs kernel $1 (a path) with args; checks exit 0, result lines all check=ok.
# Leaves its output in $tmp/kout. Echoes why it failed, or nothing.
kernel_ok() {
	local prog=$1
	shift
	"$prog" "$@" >"$tmp/kout" 2>"$tmp/kerr"
	local st=$?
	if [ $st != 0 ]; then
		echo "$prog $* exited $st: $(oneline "$tmp/kerr")"
	elif ! grep -q '^result name=[^ ]* size=[0-9]* seconds=[0-9.]* metric=[^ ]* unit=[^ ]* check=ok$' "$tmp/kout"; then
		echo "$prog $*: no result line: $(oneline "$tmp/kout")"
	elif grep -q 'check=FAIL' "$tmp/kout"; then
		echo "$prog $*: a check failed: $(oneline "$tmp/kout")"
	fi
}

# Ctrl-C in the middle of a run: the kernel is ended and the pools put back.
test_interrupt_restores() {
	local name=bench_interrupt_restores d=$HP/hugepages-2048kB before now pid st
	can_run $name root || return
	remember "$d/nr_hugepages"
	before=$(cat "$d/nr_hugepages")
	: >"$tmp/err" # (not a line an earlier test left, read before the job's redirection)
	"$SP" bench --kernel fault=256M --backing 2m --setup-pools --repeat 50 >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for _ in $(seq 100); do
		now=$(cat "$d/nr_hugepages")
		[ "$now" != "$before" ] && grep -q 'round' "$tmp/err" && break
		sleep 0.1
	done
	kill -INT $pid
	wait $pid
	st=$?
	now=$(cat "$d/nr_hugepages")
	if [ "$now" != "$before" ]; then
		fail $name "the 2M pool was $before and is $now after Ctrl-C"
	elif [ $st != 130 ]; then
		fail $name "exit status $st after SIGINT, want 130: $(oneline "$tmp/err")"
	elif ! grep -q 'interrupted; pools put back' "$tmp/err"; then
		fail $name "it did not say it put the pools back: $(oneline "$tmp/err")"
	else
		pass $name
	fi
	restore
}

# --allow-sysfs sets THP "always" around the thp-always runs only, and puts it back.
test_allow_sysfs() {
	local name=bench_allow_sysfs f=/sys/kernel/mm/transparent_hugepage/enabled before after
	can_run $name || return
	if ! is_root || [ ! -w $f ]; then
		skip $name "needs root to change THP's mode"
		return
	fi
	before=$(cat $f)
	sp bench --kernel gups=8M --backing thp --peers --allow-sysfs --repeat 1
	after=$(cat $f)
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
	elif [ "$after" != "$before" ]; then
		fail $name "THP enabled was '$before' and is '$after'"
	elif ! grep -q 'thp-always' "$tmp/out" || grep -q 'skipping thp-always' "$tmp/err"; then
		fail $name "no thp-always run: $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

test_kernels_tiny() {
	local t name size extra why=''
	for t in "${TINY[@]}"; do
		name=${t%%:*}
		size=${t#*:}
		extra=''
		case $size in *" "*) extra=${size#* }; size=${size%% *} ;; esac
		# shellcheck disable=SC2086
		why=$(kernel_ok "$K/$name" --size "$size" $extra)
		[ -z "$why" ] || break
		# With BENCH_SMAPS the kernel says what its data got.
		# shellcheck disable=SC2086
		BENCH_SMAPS=1 "$K/$name" --size "$size" $extra >"$tmp/kout" 2>/dev/null
		if ! grep -q '^memory data_bytes=[1-9][0-9]* thp_bytes=[0-9]* hugetlb_2m_bytes=[0-9]* hugetlb_1g_bytes=[0-9]* largest_bytes=[0-9]* text_bytes=[1-9][0-9]* text_huge_bytes=[0-9]* text_hugetlb_bytes=[0-9]*$' "$tmp/kout"; then
			why="$name: no memory line: $(oneline "$tmp/kout")"
			break
		fi
	done
	if [ -z "$why" ]; then
		"$K/trans" --size 256x >/dev/null 2>&1
		[ $? = 2 ] || why="trans --size 256x did not exit 2"
		"$K/fft" --size 1000 >/dev/null 2>&1
		[ $? = 2 ] || why="fft --size 1000 (not a power of two) did not exit 2"
		"$K/gups" --help >"$tmp/kout" 2>&1 && grep -q '^usage:' "$tmp/kout" ||
			why="gups --help printed no usage"
	fi
	if [ -n "$why" ]; then fail kernels_tiny "$why"; else pass kernels_tiny "${#TINY[@]} kernels"; fi
}

pool_free() { # dir
	echo $(($(cat "$1/free_hugepages") - $(cat "$1/resv_hugepages")))
}

# The ideal builds: strict 2m blocks, on hugetlb pages, or exit 3 without a pool.
test_kernels_ideal() {
	local d=$HP/hugepages-2048kB t name size extra why='' tlb
	if ! is_root; then
		skip kernels_ideal "needs root to set up a 2 MiB pool"
		return
	fi
	if [ ! -d "$d" ]; then
		skip kernels_ideal "no 2 MiB huge pages here"
		return
	fi
	if [ "$(pool_free "$d")" = 0 ]; then
		BENCH_IDEAL=2m "$I/gups" --size 8M >/dev/null 2>"$tmp/kerr"
		local st=$?
		if [ $st != 3 ] || ! grep -q 'ideal: no strict 2m block' "$tmp/kerr"; then
			fail kernels_ideal "with no free 2M page, ideal gups exited $st: $(oneline "$tmp/kerr")"
			return
		fi
	fi
	set_sysfs "$d/nr_hugepages" $(($(cat "$d/nr_hugepages") + 160))
	for t in "${TINY[@]}"; do
		name=${t%%:*}
		size=${t#*:}
		extra=''
		# No arrays: the allocator kernel has no ideal, nor fork, whose data is malloc's.
		[ "$name" = malloc ] || [ "$name" = fork ] && continue
		case $size in *" "*) extra=${size#* }; size=${size%% *} ;; esac
		# shellcheck disable=SC2086
		why=$(BENCH_IDEAL=2m BENCH_SMAPS=1 kernel_ok "$I/$name" --size "$size" $extra)
		[ -z "$why" ] || break
		tlb=$(sed -n 's/^memory .*hugetlb_2m_bytes=\([0-9]*\).*/\1/p' "$tmp/kout")
		if [ -z "$tlb" ] || [ "$tlb" -lt 2097152 ]; then
			why="ideal $name: ${tlb:-no} hugetlb bytes: $(oneline "$tmp/kout")"
			break
		fi
	done
	restore
	if [ -n "$why" ]; then fail kernels_ideal "$why"; else pass kernels_ideal; fi
}

# itlb (x86-64 only): checks its own calls at a tiny size, says how much of its text is
# resident, is linked with its text segment 2 MiB-aligned, and runs linked as usual too.
test_itlb() {
	local name=itlb why='' text seg
	if [ ! -x "$K/itlb" ]; then
		skip $name "no itlb kernel in $K (it is built on x86-64 only)"
		return
	fi
	why=$(kernel_ok "$K/itlb" --size 64K --reps 1)
	[ -n "$why" ] || why=$(kernel_ok "$B/bench/itlb/itlb-unaligned" --size 64K --reps 1)
	if [ -z "$why" ]; then
		BENCH_SMAPS=1 "$K/itlb" --size 64K --reps 1 >"$tmp/kout" 2>/dev/null
		text=$(sed -n 's/^memory .* text_bytes=\([0-9]*\) .*/\1/p' "$tmp/kout")
		# 16 functions in use, a page each: at least that much of its text is resident.
		[ "${text:-0}" -ge 65536 ] || why="itlb --size 64K: text_bytes ${text:-missing}: $(oneline "$tmp/kout")"
	fi
	if [ -z "$why" ]; then
		"$K/itlb" --size 64M >/dev/null 2>&1
		[ $? = 2 ] || why="itlb --size 64M (more than its text) did not exit 2"
	fi
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi

	name=itlb_text_aligned
	if ! command -v readelf >/dev/null 2>&1; then
		skip $name "no readelf (binutils)"
		return
	fi
	# The executable LOAD segment: "LOAD offset vaddr paddr filesz memsz R E align".
	read -ra seg < <(readelf -lW "$K/itlb" | awk '$1 == "LOAD" && $(NF-1) == "E"')
	if [ ${#seg[@]} != 9 ] || ((seg[1] % 2097152 || seg[2] % 2097152 || seg[8] % 2097152 ||
		seg[4] < 16777216)); then
		fail $name "itlb's text segment is not 16 MiB at a 2 MiB boundary: ${seg[*]}"
		return
	fi
	read -ra seg < <(readelf -lW "$B/bench/itlb/itlb-unaligned" | awk '$1 == "LOAD" && $(NF-1) == "E"')
	if [ ${#seg[@]} != 9 ] || ((seg[2] % 2097152 == 0)); then
		fail $name "itlb-unaligned's text segment is 2 MiB-aligned too: ${seg[*]}"
	else
		pass $name
	fi
}

# The bench runs itlb with --text, skips 1g for it with the reason, and has no ideal for it.
test_itlb_rows() {
	local name=bench_itlb_rows
	if [ ! -x "$K/itlb" ]; then
		skip $name "no itlb kernel in $K (it is built on x86-64 only)"
		return
	fi
	can_run $name || return
	sp bench --kernel itlb=1M --backing 1g --peers --repeat 1 --json "$tmp/i.json"
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
	elif ! grep -q '^itlb .* skip' "$tmp/out" ||
		! grep -q 'itlb 1M 1g: text is not put on 1 GiB pages' "$tmp/out"; then
		fail $name "the table does not skip 1g for itlb with its reason: $(oneline "$tmp/out")"
	elif have_python && ! python3 -c '
import json, sys
r = {x["backing"]: x for x in json.load(open(sys.argv[1]))["results"]}
sys.exit(0 if r["4k"]["valid"] and r["4k"]["coverage"] < 0.01 and not r["1g"]["valid"] and
         not [b for b in r if b.startswith("ideal")] else 1)' "$tmp/i.json"; then
		fail $name "want a valid 4k row on base pages, 1g not valid, no ideal: $(head -c 600 "$tmp/i.json")"
	else
		pass $name
	fi
}

# The promote case: under the promote column the kernel runs plain and is promoted
# between its passes: before on base pages, after on huge pages; under the others it
# runs as any kernel. Under THP "always" a plain kernel starts on huge pages: THP is
# set to madvise for the test, and put back.
test_promote_rows() {
	local name=bench_promote_rows why cap
	can_run $name python || return
	cap=$(sed -n 's/^CapEff:[[:space:]]*//p' /proc/self/status)
	if [ $(( 0x${cap:-0} >> 23 & 1 )) = 0 ]; then
		skip $name "needs CAP_SYS_NICE (root) to promote another process"
		return
	fi
	if ! sysfs_thp_not_always; then
		restore
		skip $name "THP is 'always' and cannot be set to madvise"
		return
	fi
	sp bench --kernel promote=64M --backing thp --repeat 1 --json "$tmp/pr.json"
	restore
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
		return
	fi
	why=$(python3 - "$tmp/pr.json" <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))["results"]
r = {(x["kernel"], x["backing"]): x for x in rs}
want = {(k, b) for k in ("promote/before", "promote/after") for b in ("4k", "thp", "promote")}
if set(r) != want: print("rows %r" % sorted(r)); sys.exit()
b, a = r[("promote/before", "promote")], r[("promote/after", "promote")]
if not (b["valid"] and b["coverage"] < 0.01): print("before: not a valid run on base pages: %r" % b); sys.exit()
if not (a["valid"] and a["coverage"] >= 0.9 and a["coverage"] > b["coverage"]):
    print("after: not promoted: %r" % a); sys.exit()
if not (b["metric"] > 0 and a["metric"] > 0 and len(a["runs_s"]) == 1): print("figures %r %r" % (b, a))
PY
)
	[ -n "$why" ] || grep -q '^bench: promoted: .*% of its data on huge pages -> .*%' "$tmp/err" ||
		why="stderr does not say what the promotion got: $(oneline "$tmp/err")"
	[ -n "$why" ] || grep -q '^promote/after  *64M ' "$tmp/out" ||
		why="the table has no promote/after line: $(oneline "$tmp/out")"
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# Without CAP_SYS_NICE the promote column is skipped and says why.
test_promote_no_cap() {
	local name=bench_promote_no_cap
	can_run $name || return
	if ! command -v setpriv >/dev/null 2>&1; then
		skip $name "no setpriv (util-linux) to drop CAP_SYS_NICE"
		return
	fi
	setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice "$SP" bench --kernel promote=8M \
		--backing thp --repeat 1 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc without CAP_SYS_NICE: $(oneline "$tmp/err")"
	elif ! grep -q 'skipping promote: promoting another process needs CAP_SYS_NICE' "$tmp/err"; then
		fail $name "it does not say why promote is skipped: $(oneline "$tmp/err")"
	elif ! grep -q '^promote/after .* skip' "$tmp/out"; then
		fail $name "the table does not show the skip: $(oneline "$tmp/out")"
	else
		pass $name
	fi
}

test_bad_args() {
	expect_usage_error bench_unknown_kernel bench --kernel nosuch
	expect_usage_error bench_bad_size bench --kernel trans=12Q
	expect_usage_error bench_zero_size bench --kernel gups=0
	expect_usage_error bench_kernel_twice bench --kernel trans,trans
	expect_usage_error bench_bad_backing bench --backing 3m
	expect_usage_error bench_repeat_zero bench --repeat 0
	expect_usage_error bench_repeat_big bench --repeat 51
	expect_usage_error bench_unknown_option bench --fast
	expect_usage_error bench_json_no_file bench --json
	expect_usage_error bench_kernels_dir bench --kernels /nonexistent
	expect_usage_error bench_sysfs_without_peers bench --allow-sysfs
}

# The 2-kernel, 2-backing, 1-round run: it completes, its JSON has DESIGN.md's fields,
# every run is judged by what it got.
test_run_json() {
	local name=bench_run_json why thp
	can_run $name python || return
	thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
	sp bench --kernel trans=256,gups=8M --backing thp --repeat 1 \
		--json "$tmp/r.json" --csv "$tmp/r.csv" --svg "$tmp/r.svg"
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
		return
	fi
	why=$(THP=$thp python3 - "$tmp/r.json" "$tmp/r.csv" "$tmp/r.svg" <<'PY'
import json, os, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
if not isinstance(d.get("machine"), dict): print("no machine object"); sys.exit()
rs = d.get("results")
if not isinstance(rs, list) or len(rs) != 4: print("want 4 results, got %r" % rs); sys.exit()
keys = ("kernel", "size", "backing", "runs_s", "median_s", "metric", "unit", "coverage",
        "minflt", "speedup_vs_4k", "valid")
seen = set()
for r in rs:
    miss = [k for k in keys if k not in r]
    if miss: print("result lacks %s: %r" % (miss, r)); sys.exit()
    seen.add((r["kernel"], r["backing"]))
    if len(r["runs_s"]) != 1 or not r["median_s"] > 0: print("runs %r" % r); sys.exit()
    if r["minflt"] <= 0: print("no minor faults counted: %r" % r); sys.exit()
    if r["backing"] == "4k":
        if not r["valid"] or r["coverage"] != 0 or r["speedup_vs_4k"] != 1:
            print("4k row %r" % r); sys.exit()
    elif os.environ["THP"] in ("madvise", "always"):
        if not r["valid"] or r["coverage"] < 0.9 or not r["speedup_vs_4k"] > 0:
            print("thp row did not get THP: %r" % r); sys.exit()
    elif r["valid"]:
        print("thp row valid with THP %s: %r" % (os.environ["THP"], r)); sys.exit()
if seen != {("trans", "4k"), ("trans", "thp"), ("gups", "4k"), ("gups", "thp")}:
    print("rows %r" % sorted(seen)); sys.exit()
lines = open(sys.argv[2]).read().splitlines()
if len(lines) != 5 or not lines[0].startswith("kernel,size,backing"): print("csv %r" % lines[:2]); sys.exit()
root = ET.parse(sys.argv[3]).getroot()
if not root.tag.endswith("svg"): print("svg root %s" % root.tag)
PY
)
	[ -n "$why" ] || grep -q '^trans  *256 .*4k' "$tmp/out" || grep -q '^trans' "$tmp/out" ||
		why="the table has no trans line: $(oneline "$tmp/out")"
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# A backing that cannot be had is skipped with its reason, and is no result.
test_skip_marked() {
	local name=bench_skip_marked d=$HP/hugepages-1048576kB
	can_run $name || return
	if [ ! -d "$d" ]; then
		skip $name "no 1 GiB huge pages here"
		return
	fi
	if [ "$(pool_free "$d")" != 0 ]; then
		if ! is_root; then
			skip $name "the 1G pool has free pages and only root can empty it"
			return
		fi
		set_sysfs "$d/nr_hugepages" 0
	fi
	sp bench --kernel gups=8M --backing 1g --repeat 1 --json "$tmp/s.json"
	restore
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
	elif ! grep -q 'skipping 1g: no free 1 GiB pages' "$tmp/err"; then
		fail $name "stderr does not say why 1g is skipped: $(oneline "$tmp/err")"
	elif ! grep -q '^gups .* skip' "$tmp/out"; then
		fail $name "the table does not show the skip: $(oneline "$tmp/out")"
	elif have_python && ! python3 -c '
import json, sys
r = [x for x in json.load(open(sys.argv[1]))["results"] if x["backing"] == "1g"]
sys.exit(0 if len(r) == 1 and r[0]["valid"] is False and r[0]["runs_s"] == [] else 1)' "$tmp/s.json"; then
		fail $name "the JSON does not mark the 1g row invalid: $(head -c 400 "$tmp/s.json")"
	else
		pass $name
	fi
}

# --setup-pools: a 2m run on hugetlb pages, and the pool as it was afterwards.
test_setup_pools() {
	local name=bench_setup_pools d=$HP/hugepages-2048kB before after
	can_run $name root python || return
	remember "$d/nr_hugepages"
	before=$(cat "$d/nr_hugepages")
	sp bench --kernel gups=8M --backing 2m --repeat 1 --setup-pools --json "$tmp/p.json"
	after=$(cat "$d/nr_hugepages")
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
	elif [ "$after" != "$before" ]; then
		fail $name "the 2M pool was $before and is $after after the bench"
	elif ! python3 -c '
import json, sys
r = [x for x in json.load(open(sys.argv[1]))["results"] if x["backing"] == "2m"]
sys.exit(0 if len(r) == 1 and r[0]["valid"] and r[0]["coverage_wanted"] >= 0.9 else 1)' "$tmp/p.json"; then
		fail $name "the 2m run did not get hugetlb pages: $(head -c 600 "$tmp/p.json")"
	else
		pass $name
	fi
	restore
}

# The fork kernel: its three rows under 4k and 2m, both on the pages they ask for,
# children right; the 2M pool set for twice its data; no ideal row.
test_fork_rows() {
	local name=bench_fork_rows d=$HP/hugepages-2048kB why
	can_run $name root python || return
	remember "$d/nr_hugepages"
	sp bench --kernel fork=64M --backing 2m --peers --setup-pools --repeat 1 --json "$tmp/f.json"
	restore
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
		return
	fi
	why=$(python3 - "$tmp/f.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rs = d["results"]
r = {(x["kernel"], x["backing"]): x for x in rs}
cases = ("fork/median", "fork/p90", "fork/child")
# 64 MiB held, 48 for the threads' blocks, 16 spare: 64 pages, twice over, and 64 more.
if d["machine"]["pool_2m_free"] < 192: print("2M pool %r" % d["machine"]); sys.exit()
# The ideal's data is one strict array (its threads' blocks glibc's, counted as data
# too: its coverage may fall short, its time stands).
for k in cases:
    x = r.get((k, "ideal-2m"))
    if not x: print("no %s row for the ideal" % k); sys.exit()
    if x["check"] != "ok" or x["unit"] != "ms/fork" or not x["metric"] > 0:
        print("%s ideal-2m: %r" % (k, x)); sys.exit()
for k in cases:
    for b in ("4k", "2m"):
        x = r.get((k, b))
        if not x: print("no %s row under %s" % (k, b)); sys.exit()
        if x["check"] != "ok" or x["unit"] != "ms/fork" or not x["metric"] > 0:
            print("%s %s: %r" % (k, b, x)); sys.exit()
        if not x["valid"]: print("%s %s not valid: %r" % (k, b, x)); sys.exit()
    if r[(k, "2m")]["coverage_wanted"] < 0.9: print("2m not on hugetlb: %r" % r[(k, "2m")])
PY
)
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# --setup-pools waits for /tmp/sp-pool.lock while another pool user holds it, and says
# so; it changes no pool meanwhile.
test_pool_lock() {
	local name=bench_pool_lock d=$HP/hugepages-2048kB before pid lock
	can_run $name root || return
	if ! command -v flock >/dev/null 2>&1; then
		skip $name "no flock (util-linux)"
		return
	fi
	# A process above this one holds it (flock /tmp/sp-pool.lock make check): the bench
	# would rightly go on without waiting.
	if (. "$(dirname "$0")/../pool_lock.sh" && pool_lock_held_above); then
		skip $name "a process above this test holds /tmp/sp-pool.lock"
		return
	fi
	# Under tests/run.sh this process holds the lock already (SP_POOL_LOCKED=1).
	if [ "${SP_POOL_LOCKED:-}" != 1 ]; then
		exec {lock}</tmp/sp-pool.lock || { skip $name "cannot open /tmp/sp-pool.lock"; return; }
		if ! flock -w 600 $lock; then
			skip $name "another pool user held /tmp/sp-pool.lock for 10 minutes"
			return
		fi
	fi
	before=$(cat "$d/nr_hugepages")
	: >"$tmp/err" # (not a line an earlier test left, read before the job's redirection)
	env -u SP_POOL_LOCKED "$SP" bench --kernel gups=8M --backing 2m --setup-pools --repeat 1 \
		>"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for _ in $(seq 600); do
		grep -q 'waiting for /tmp/sp-pool.lock' "$tmp/err" && break
		sleep 0.1
	done
	sleep 0.3
	if ! grep -q 'waiting for /tmp/sp-pool.lock (another pool user runs)' "$tmp/err"; then
		fail $name "it did not say it waits for the lock: $(oneline "$tmp/err")"
	elif [ "$(cat "$d/nr_hugepages")" != "$before" ]; then
		fail $name "the 2M pool changed from $before while another user held the lock"
	else
		pass $name
	fi
	kill -TERM $pid 2>/dev/null
	wait $pid 2>/dev/null
	[ -z "${lock:-}" ] || exec {lock}<&-
}

test_kernels_tiny
test_kernels_ideal
test_itlb
test_itlb_rows
test_promote_rows
test_promote_no_cap
test_bad_args
test_run_json
test_skip_marked
test_setup_pools
test_fork_rows
test_pool_lock
test_interrupt_restores
test_allow_sysfs
exit $failed
