#!/usr/bin/env bash
# test_bench_cmd.sh - tests superpage bench -- CMD: a user's own program run plain and
# under each backing (its options, the verdict lines, the JSON, CSV and SVG, --metric,
# failing runs and runs whose output differs, the huge-page share of a random-update
# and a streaming program, and the pools it sets up and puts back). No test asserts a
# time: speed is reported, not asserted.
# Usage: tests/cli/test_bench_cmd.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Pools it changes are put back, also on failure.
set -u
B=${1:?usage: tests/cli/test_bench_cmd.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
GUPS=$B/tests/runtime/common/gups_malloc
STREAM=$B/bench/kernels/stream
HP=/sys/kernel/mm/hugepages
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
trap 'restore; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

unset LD_PRELOAD GLIBC_TUNABLES BENCH_IDEAL BENCH_SMAPS "${!SUPERPAGE_@}"

no_preload=$(preload_blocker "$B" "$B/libsuperpage-run.so")
oneline() { head -c 300 "$1" | tr '\n' '|'; }
have_python() { command -v python3 >/dev/null 2>&1; }

# Whether test $1 can run here: the preload built, python3 to read the JSON.
can_run() { # name [python]
	local name=$1
	if [ -n "$no_preload" ]; then
		skip "$name" "$no_preload"
		return 1
	fi
	if [ "${2:-}" = python ] && ! have_python; then
		skip "$name" "needs python3 to read the JSON"
		return 1
	fi
}

# The verdict lines of $tmp/out: one per variant but plain, each well-formed.
verdicts_ok() { # variants...
	local v line
	for v; do
		line=$(grep "^$v: " "$tmp/out")
		if [ "$(printf '%s\n' "$line" | grep -c .)" != 1 ]; then
			echo "no single verdict line for $v: $(oneline "$tmp/out")"
			return
		fi
		if ! printf '%s\n' "$line" | grep -Eq "^$v: (([0-9]+\.[0-9]{2}x faster|[0-9]+\.[0-9]{2}x, slower), 95% CI [0-9]+\.[0-9]{2}-[0-9]+\.[0-9]{2}|no measurable difference \([0-9]+\.[0-9]{2}x, 95% CI [0-9]+\.[0-9]{2}-[0-9]+\.[0-9]{2}\)), ([0-9]+% huge|huge n/a[^,]*), RSS [0-9]+\.[0-9]{2}x$"; then
			echo "malformed verdict: $line"
			return
		fi
	done
}

test_bad_args() {
	expect_usage_error bench_cmd_no_command bench --
	expect_usage_error bench_cmd_not_found bench -- /nonexistent/program
	expect_usage_error bench_cmd_kernel_opt bench --kernel gups -- /bin/true
	expect_usage_error bench_cmd_quick bench --quick -- /bin/true
	expect_usage_error bench_cmd_bad_backing bench --backing 3m -- /bin/true
	expect_usage_error bench_cmd_backing_comma bench --backing auto, -- /bin/true
	expect_usage_error bench_cmd_bad_repeat bench --repeat 0 -- /bin/true
	expect_usage_error bench_cmd_bad_max_time bench --max-time -1 -- /bin/true
	expect_usage_error bench_cmd_metric_no_group bench --metric 'rate=[0-9]+' -- /bin/true
	expect_usage_error bench_cmd_metric_bad_re bench --metric 'rate=([0-9]+' -- /bin/true
	expect_usage_error bench_cmd_metric_dir_alone bench --metric-lower -- /bin/true
	expect_usage_error bench_cmd_metric_no_cmd bench --metric 'x=([0-9]+)'
	expect_usage_error bench_cmd_output_no_cmd bench --output "$tmp/o"
	expect_usage_error bench_cmd_sysfs_alone bench --allow-sysfs -- /bin/true
	expect_usage_error bench_cmd_baseline_unknown bench --baseline 2m --backing auto -- /bin/true
	expect_usage_error bench_cmd_baseline_no_cmd bench --baseline 4k
	expect_usage_error bench_cmd_json_unwritable bench --json /nonexistent/dir/r.json -- /bin/true
}

# Any command: /bin/true under plain and auto, its verdict line, its JSON, CSV and SVG.
test_true_json() {
	local name=bench_cmd_true_json why
	can_run $name python || return
	sp bench --backing auto --repeat 3 --json "$tmp/t.json" --csv "$tmp/t.csv" --svg "$tmp/t.svg" \
		-- /bin/true
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
		return
	fi
	why=$(verdicts_ok auto)
	[ -n "$why" ] || grep -q '^output  *\/dev\/null' "$tmp/out" || why="it does not say where the output went"
	[ -n "$why" ] || grep -q 'the program.s output goes to /dev/null' "$tmp/err" ||
		why="stderr does not say where the output goes: $(oneline "$tmp/err")"
	[ -n "$why" ] || why=$(python3 - "$tmp/t.json" "$tmp/t.csv" "$tmp/t.svg" <<'PY'
import json, sys, xml.etree.ElementTree as ET
d = json.load(open(sys.argv[1]))
c = d.get("command", {})
if c.get("argv") != ["/bin/true"] or c.get("output") != "/dev/null" or c.get("baseline") != "plain":
    print("command %r" % c); sys.exit()
if not 1 <= c["rounds"] <= 3 or c["failures"] != 0: print("command %r" % c); sys.exit()
rs = d["results"]
if [r["backing"] for r in rs] != ["plain", "auto"]: print("rows %r" % rs); sys.exit()
for r in rs:
    for k in ("kernel", "size", "backing", "runs_s", "median_s", "metric", "unit", "coverage",
              "minflt", "speedup_vs_plain", "valid"):
        if k not in r: print("row lacks %s: %r" % (k, r)); sys.exit()
    if r["kernel"] != "true" or not r["median_s"] > 0 or r["valid"] is not True:
        print("row %r" % r); sys.exit()
if rs[0]["speedup_vs_plain"] != 1 or not rs[1]["speedup_vs_plain"] > 0: print("speedups %r" % rs); sys.exit()
vs = d["variants"]
if [v["name"] for v in vs] != ["plain", "auto"]: print("variants %r" % vs); sys.exit()
for v in vs:
    if v["runs_made"] != c["rounds"] or v["runs_good"] != c["rounds"]: print("runs %r" % v); sys.exit()
    for run in v["runs"]:
        for k in ("round", "wall_s", "user_s", "sys_s", "maxrss_bytes", "huge_share", "minflt",
                  "majflt", "exit_status", "failed"):
            if k not in run: print("run lacks %s: %r" % (k, run)); sys.exit()
        if run["exit_status"] != 0 or run["failed"] or not run["wall_s"] > 0 or not run["maxrss_bytes"] > 0:
            print("run %r" % run); sys.exit()
    for k in ("wall_s", "user_s", "sys_s", "maxrss_bytes", "minflt", "majflt"):
        if k not in v["summary"]: print("summary lacks %s" % k); sys.exit()
a = vs[1]
if not a["ratio"] > 0 or (c["rounds"] > 1 and len(a["ci95"]) != 2): print("auto %r" % a); sys.exit()
if d["verdicts"] != [a["verdict"]] or not a["verdict"].startswith("auto: "): print("verdicts %r" % d["verdicts"]); sys.exit()
lines = open(sys.argv[2]).read().splitlines()
if len(lines) != 3 or ",speedup_vs_plain," not in lines[0]: print("csv %r" % lines[:2]); sys.exit()
root = ET.parse(sys.argv[3]).getroot()
if not root.tag.endswith("svg"): print("svg root %s" % root.tag)
PY
)
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# --baseline 4k: the ratios against 4k, as the kernels' table has them; plain gets a
# verdict of its own.
test_baseline() {
	local name=bench_cmd_baseline why
	can_run $name python || return
	sp bench --backing 4k,auto --baseline 4k --repeat 2 --json "$tmp/b.json" -- /bin/true
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
		return
	fi
	why=$(verdicts_ok plain auto)
	[ -n "$why" ] || grep -q '^verdict against 4k, by wall time' "$tmp/out" || why="no 'verdict against 4k'"
	[ -n "$why" ] || ! grep -q '^4k: ' "$tmp/out" || why="a verdict for the baseline itself"
	[ -n "$why" ] || why=$(python3 - "$tmp/b.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
if d["command"]["baseline"] != "4k": print("baseline %r" % d["command"]); sys.exit()
r = {x["backing"]: x for x in d["results"]}
if r["4k"]["speedup_vs_4k"] != 1 or not r["plain"]["speedup_vs_4k"] > 0: print("rows %r" % r); sys.exit()
if [v.split(":")[0] for v in d["verdicts"]] != ["plain", "auto"]: print("verdicts %r" % d["verdicts"])
PY
)
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# A shell loop, its output kept in --output FILE under a head line per run.
test_shell_output() {
	local name=bench_cmd_shell_output why=''
	can_run $name || return
	sp bench --backing auto --repeat 2 --output "$tmp/prog.out" -- \
		sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; echo "loop $i"; echo warn >&2'
	if [ "$rc" != 0 ]; then
		why="exit $rc: $(oneline "$tmp/err")"
	elif [ -n "$(verdicts_ok auto)" ]; then
		why=$(verdicts_ok auto)
	elif ! grep -q "^output  *$tmp/prog.out" "$tmp/out"; then
		why="the report does not say where the output went: $(oneline "$tmp/out")"
	elif [ "$(grep -c '^loop 3000$' "$tmp/prog.out")" != 4 ] || [ "$(grep -c '^warn$' "$tmp/prog.out")" != 4 ]; then
		why="the output file lacks the runs' output: $(oneline "$tmp/prog.out")"
	elif ! grep -q '^==> plain, round 1: stdout <==$' "$tmp/prog.out" ||
		! grep -q '^==> auto, round 2: stderr <==$' "$tmp/prog.out"; then
		why="no head lines in the output file: $(oneline "$tmp/prog.out")"
	fi
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# --metric takes the program's figure; its line is not compared (it changes).
test_metric() {
	local name=bench_cmd_metric why
	can_run $name python || return
	sp bench --backing auto --repeat 2 --metric 'p99=([0-9.]+) ms' --metric-lower --json "$tmp/m.json" -- \
		sh -c 'echo same; echo "p99=12.5 ms at $(date +%N)"'
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
		return
	fi
	why=$(verdicts_ok auto)
	[ -n "$why" ] || grep -q '^figure .*lower is better' "$tmp/out" || why="the report does not name the figure"
	[ -n "$why" ] || why=$(python3 - "$tmp/m.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["command"]
if c["metric"] != "p99=([0-9.]+) ms" or c["higher_is_better"] is not False or c["judged_by"] != "metric":
    print("command %r" % c); sys.exit()
for v in d["variants"]:
    for r in v["runs"]:
        if r["metric"] != 12.5 or r["failed"]: print("run %r" % r); sys.exit()
    if v["summary"]["metric"]["median"] != 12.5: print("summary %r" % v["summary"]); sys.exit()
if d["variants"][1]["ratio"] != 1: print("ratio %r" % d["variants"][1]); sys.exit()
PY
)
	if [ -n "$why" ]; then fail $name "$why"; return; fi
	# No line with the figure: every run fails, and says so.
	sp bench --backing auto --repeat 2 --metric 'rate=([0-9.]+)' -- sh -c 'echo nothing'
	if [ "$rc" != 1 ]; then
		fail $name "no figure: exit $rc, want 1"
	elif ! grep -q '^  plain round 1: no figure on its stdout' "$tmp/out"; then
		fail $name "no figure: the notes do not say so: $(oneline "$tmp/out")"
	else
		pass $name
	fi
}

# A failing command: exit status 1, the runs' failures in the notes, and a verdict that
# says there is no result.
test_failing() {
	local name=bench_cmd_failing
	can_run $name || return
	sp bench --backing auto --repeat 3 -- sh -c 'echo oops >&2; exit 3'
	if [ "$rc" != 1 ]; then
		fail $name "exit $rc, want 1: $(oneline "$tmp/err")"
	elif ! grep -q '^  plain round 1: exit status 3: oops$' "$tmp/out"; then
		fail $name "the notes do not report the failure: $(oneline "$tmp/out")"
	elif ! grep -q '^auto: no result: ' "$tmp/out"; then
		fail $name "no 'no result' verdict: $(oneline "$tmp/out")"
	elif [ "$(tail -n 1 "$tmp/err" | grep -c '^superpage: bench: .*failed')" != 1 ]; then
		fail $name "the last line of stderr does not say runs failed: $(oneline "$tmp/err")"
	else
		pass $name
	fi
	# Failing under a variant only (the runtime's SUPERPAGE_BACKING is set there).
	sp bench --backing auto --repeat 2 -- sh -c '[ -z "$SUPERPAGE_BACKING" ]'
	if [ "$rc" != 1 ]; then
		fail bench_cmd_failing_variant "exit $rc, want 1: $(oneline "$tmp/err")"
	elif ! grep -q '^  auto round 1: exit status 1' "$tmp/out" || grep -q '^  plain round' "$tmp/out"; then
		fail bench_cmd_failing_variant "the notes should name auto's runs only: $(oneline "$tmp/out")"
	else
		pass bench_cmd_failing_variant
	fi
}

# A run whose stdout differs from plain's first run's is reported; --ignore leaves such
# lines out of the comparison.
test_differs() {
	local name=bench_cmd_differs
	can_run $name || return
	sp bench --backing auto --repeat 2 -- sh -c 'echo fixed; date +%s%N'
	if [ "$rc" != 1 ]; then
		fail $name "exit $rc, want 1: $(oneline "$tmp/err")"
	elif ! grep -q "^  auto round 1: its stdout differs from plain's first run's" "$tmp/out"; then
		fail $name "the notes do not report it: $(oneline "$tmp/out")"
	else
		sp bench --backing auto --repeat 2 --ignore '^[0-9]+$' -- sh -c 'echo fixed; date +%s%N'
		if [ "$rc" != 0 ]; then
			fail $name "with --ignore: exit $rc: $(oneline "$tmp/out")"
		else
			pass $name
		fi
	fi
}

# --max-time: no round starts that would end past it.
test_max_time() {
	local name=bench_cmd_max_time
	can_run $name || return
	sp bench --backing auto --repeat 50 --max-time 0.5 -- sleep 0.3
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
	elif ! grep -q '^rounds    1 of 50, .*stopped after 1 of 50 rounds: another would pass --max-time 0.5 s' "$tmp/out"; then
		fail $name "it did not stop after one round: $(grep '^rounds' "$tmp/out")"
	else
		pass $name
	fi
}

# It stops once the answer is clear: a program that sleeps 0.3 s under superpage run
# only (its SUPERPAGE_BACKING set) is clearly slower there, in 3 rounds on a quiet
# machine; a loaded one may take a round or two more, but not all 10.
test_early_stop() {
	local name=bench_cmd_early_stop
	can_run $name || return
	sp bench --backing auto --repeat 10 -- sh -c '[ -z "$SUPERPAGE_BACKING" ] || sleep 0.3'
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
	elif ! grep -Eq "^rounds    [3-9] of 10, .*stopped after [3-9] of 10 rounds: every ratio's 95% interval was clear" "$tmp/out"; then
		fail $name "it did not stop early: $(grep '^rounds' "$tmp/out")"
	elif ! grep -Eq '^auto: [0-9.]+x, slower, 95% CI ' "$tmp/out"; then
		fail $name "auto is not clearly slower: $(grep '^auto' "$tmp/out")"
	else
		pass $name
	fi
}

# What memory a run of SIZE needs here, or why not.
mem_blocker() { # bytes
	local avail
	avail=$(awk '/^MemAvailable:/ {print $2 * 1024}' /proc/meminfo)
	[ -n "$avail" ] && [ "$avail" -gt $(($1 * 3)) ] || echo "needs $(($1 * 3 >> 20)) MiB available"
}

thp_mode() { sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; }

# The random-update program over 1 GiB (gups_malloc): under auto, >= 90% of its
# anonymous memory on huge pages. Its figure and its speed are reported, not asserted.
test_gups() {
	local name=bench_cmd_gups why
	can_run $name python || return
	[ -x "$GUPS" ] || { fail $name "$GUPS is missing (make tests builds it)"; return; }
	case $(thp_mode) in madvise | always) ;; *) skip $name "THP is '$(thp_mode)': auto has no huge pages without a pool"; return ;; esac
	why=$(mem_blocker $((1 << 30)))
	[ -z "$why" ] || { skip $name "$why"; return; }
	sp bench --backing auto --repeat 2 --metric 'updates_per_s=([0-9.e+]+)' --json "$tmp/g.json" -- \
		"$GUPS" 1G 4M
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
		return
	fi
	why=$(verdicts_ok auto)
	[ -n "$why" ] || why=$(python3 - "$tmp/g.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
a = [v for v in d["variants"] if v["name"] == "auto"][0]
if not a["runs_good"] or a["huge_share"] is None or a["huge_share"] < 0.9:
    print("auto has %r of its memory on huge pages, want >= 0.9" % a["huge_share"]); sys.exit()
for r in a["runs"]:
    if r["anon_bytes"] < 1 << 30 or not r["metric"] > 0: print("run %r" % r); sys.exit()
PY
)
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# The streaming program (the stream kernel, a triad over malloc'd arrays, as a plain
# program): its share on huge pages under auto is reported, in the verdict and the JSON.
test_stream() {
	local name=bench_cmd_stream why
	can_run $name python || return
	[ -x "$STREAM" ] || { fail $name "$STREAM is missing (make kernels builds it)"; return; }
	why=$(mem_blocker $((512 << 20)))
	[ -z "$why" ] || { skip $name "$why"; return; }
	sp bench --backing auto --repeat 2 --metric 'metric=([0-9.]+)' --json "$tmp/s.json" -- \
		"$STREAM" --size 512M
	if [ "$rc" != 0 ]; then
		fail $name "exit $rc: $(oneline "$tmp/err")"
		return
	fi
	why=$(verdicts_ok auto)
	[ -n "$why" ] || grep -Eq '^auto: .*, [0-9]+% huge, ' "$tmp/out" || why="no huge share in the verdict: $(grep '^auto' "$tmp/out")"
	[ -n "$why" ] || why=$(python3 - "$tmp/s.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
a = [v for v in d["variants"] if v["name"] == "auto"][0]
if not isinstance(a["huge_share"], float) or not 0 <= a["huge_share"] <= 1:
    print("auto's huge share %r" % a["huge_share"]); sys.exit()
if not a["summary"]["metric"]["median"] > 0: print("no figure %r" % a["summary"]); sys.exit()
PY
)
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# --setup-pools: the 2M pool sized from plain's first run, the 2m runs on hugetlb
# pages, and the pool as it was afterwards.
test_setup_pools() {
	local name=bench_cmd_setup_pools d=$HP/hugepages-2048kB before after why
	can_run $name python || return
	is_root || { skip $name "needs root to set up pools"; return; }
	[ -d "$d" ] || { skip $name "no 2M hugetlb pages here"; return; }
	remember "$d/nr_hugepages"
	before=$(cat "$d/nr_hugepages")
	sp bench --backing 2m --setup-pools --repeat 2 --metric 'updates_per_s=([0-9.e+]+)' \
		--json "$tmp/p.json" -- "$GUPS" 128M 1M
	after=$(cat "$d/nr_hugepages")
	if [ "$rc" != 0 ]; then
		why="exit $rc: $(oneline "$tmp/err")"
	elif [ "$after" != "$before" ]; then
		why="the 2M pool was $before and is $after"
	elif grep -q 'skipping 2m' "$tmp/err"; then
		why="2m was skipped: $(grep 'skipping 2m' "$tmp/err")"
	else
		why=$(python3 - "$tmp/p.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = [v for v in d["variants"] if v["name"] == "2m"][0]
if not m["runs_good"] or m["huge_share"] is None or m["huge_share"] < 0.9:
    print("2m has %r of its memory on huge pages" % m["huge_share"])
PY
)
	fi
	restore
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

test_bad_args
test_true_json
test_baseline
test_shell_output
test_metric
test_failing
test_differs
test_max_time
test_early_stop
test_gups
test_stream
test_setup_pools
exit $failed
