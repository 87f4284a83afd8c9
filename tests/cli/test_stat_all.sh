#!/usr/bin/env bash
# test_stat_all.sh - superpage stat --all on the real machine: every process listed, a
# process's huge bytes as stat PID reads them, both scans agreeing, the sum of the
# processes against /proc/meminfo, hugetlb by page size, memory cgroups, and the
# errors. Usage: tests/cli/test_stat_all.sh BUILD_DIR. Prints "PASS name", "FAIL name:
# why" or "SKIP name: why" per test; every sysfs value it changes is put back.
set -u
B=${1:?usage: tests/cli/test_stat_all.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$B/superpage
HOLD=$B/tests/cli/hold_hugetlb
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"
thp_pid='' sleepers=()
cleanup() {
	[ -n "$thp_pid" ] && kill "$thp_pid" 2>/dev/null
	[ ${#sleepers[@]} -gt 0 ] && kill "${sleepers[@]}" 2>/dev/null
	restore
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if ! command -v python3 >/dev/null 2>&1; then
	skip stat_all "no python3 to hold memory and to parse JSON"
	exit 0
fi

# Waits up to 10 s for a line "ready" in a file.
wait_ready() {
	for _ in $(seq 100); do
		grep -q '^ready' "$1" && return 0
		sleep 0.1
	done
	return 1
}

# A process with 256 MiB on THP (its own madvise: no runtime needed), until killed.
start_thp() {
	python3 -c '
import mmap, sys, time
n = 256 << 20
m = mmap.mmap(-1, n + (2 << 20), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
m.madvise(mmap.MADV_HUGEPAGE)
for i in range(0, len(m), 4096): m[i] = 1
print("ready", flush=True)
time.sleep(60)' >"$tmp/thp_out" 2>&1 &
	thp_pid=$!
	wait_ready "$tmp/thp_out"
}

py_check() { # name python-code json-file args...: FAIL with what it prints, else PASS
	local name=$1 code=$2 why
	shift 2
	why=$(python3 -c "$code" "$@" 2>&1)
	if [ -n "$why" ]; then fail "$name" "$why"; else pass "$name"; fi
}

test_errors() {
	expect_usage_error stat_all_bad_option stat --all --bogus
	expect_usage_error stat_all_with_pid stat --all 1
	expect_usage_error stat_all_bad_top stat --all --top x
	expect_usage_error stat_all_bad_scan stat --all --scan fast
	expect_usage_error stat_all_top_alone stat --top 3 1
	expect_usage_error stat_all_cgroup_alone stat --cgroup
	expect_usage_error stat_all_cgroup_scan stat --all --cgroup --scan rollup
}

# Every process is listed (200 sleepers started for it), ours with its name; rows go
# by huge bytes; what could not be read is counted.
test_every_process() {
	for _ in $(seq 200); do
		sleep 60 &
		sleepers+=($!)
	done
	sp stat --all --json
	if [ "$rc" != 0 ]; then
		fail stat_all_every_process "exit $rc: $(cat "$tmp/err")"
	else
		py_check stat_all_every_process '
import json, sys
d = json.load(open(sys.argv[1]))
pids = {p["pid"]: p for p in d["processes"]}
want = [int(x) for x in sys.argv[2:]]
missing = [p for p in want if p not in pids]
if missing: print("%d of %d sleepers missing" % (len(missing), len(want))); sys.exit()
if pids[want[0]]["comm"] != "sleep": print("comm %r" % pids[want[0]]["comm"]); sys.exit()
h = [p["huge_bytes"] for p in d["processes"]]
if h != sorted(h, reverse=True): print("rows not sorted by huge bytes"); sys.exit()
for k in ("gone", "denied", "no_memory"):
    if not isinstance(d["skipped"].get(k), int): print("skipped has no " + k); sys.exit()
if d["scan"] not in ("pagemap", "rollup"): print("scan %r" % d["scan"])
' "$tmp/out" "${sleepers[@]}"
	fi
	sp stat --all --top 5
	if [ "$rc" != 0 ] || ! head -n 1 "$tmp/out" | grep -q '^machine: ' ||
		! grep -q 'PID .*RESIDENT .*HUGE' "$tmp/out" || ! grep -q 'more; --top 0 shows all' "$tmp/out"; then
		fail stat_all_human "exit $rc: $(head -n 4 "$tmp/out" | tr '\n' ' ')"
	else
		pass stat_all_human
	fi
	kill "${sleepers[@]}" 2>/dev/null
	wait "${sleepers[@]}" 2>/dev/null
	sleepers=()
}

# 256 MiB on THP: --all reads what stat PID reads, by either scan; the processes' THP
# adds up to what /proc/meminfo says (within 2% or 16 MiB: THP shared after a fork
# counts in each process, and others may start, grow or end between the reads; the
# holder alone has 256 MiB).
test_thp() {
	local name=stat_all_thp
	start_thp
	if ! grep -q '^ready' "$tmp/thp_out"; then
		fail $name "the holder did not start: $(head -c 200 "$tmp/thp_out")"
		return
	fi
	sp stat --json "$thp_pid"
	cp "$tmp/out" "$tmp/one.json"
	sp stat --all --json --scan pagemap
	local pm_rc=$rc
	cp "$tmp/out" "$tmp/pagemap.json"
	if grep -q 'no PAGEMAP_SCAN' "$tmp/err"; then
		skip stat_all_scans_agree "this kernel has no PAGEMAP_SCAN"
		pm_rc=skip
	fi
	sp stat --all --json --scan rollup
	cp "$tmp/out" "$tmp/rollup.json"
	if [ "$rc" != 0 ]; then
		fail $name "--scan rollup exit $rc: $(cat "$tmp/err")"
		return
	fi
	py_check $name '
import json, sys
one, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pid = int(sys.argv[3])
row = [p for p in d["processes"] if p["pid"] == pid]
if not row: print("pid %d not listed" % pid); sys.exit()
row = row[0]
if row["huge_bytes"] < 240 << 20: print("huge_bytes %d" % row["huge_bytes"]); sys.exit()
if abs(row["huge_bytes"] - one["huge_bytes"]) > 2 << 20:
    print("--all %d, stat PID %d" % (row["huge_bytes"], one["huge_bytes"])); sys.exit()
m = d["machine"]
thp = m["anon_thp_bytes"] + m["shmem_thp_bytes"] + m["file_thp_bytes"]
total = sum(p["thp_bytes"] for p in d["processes"])
if abs(total - thp) > max(0.02 * thp, 16 << 20): print("processes %d, meminfo %d" % (total, thp))
' "$tmp/one.json" "$tmp/rollup.json" "$thp_pid"
	if [ "$pm_rc" = 0 ]; then
		py_check stat_all_scans_agree '
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
pid = int(sys.argv[3])
ha = [p["huge_bytes"] for p in a["processes"] if p["pid"] == pid]
hb = [p["huge_bytes"] for p in b["processes"] if p["pid"] == pid]
if not ha or not hb or ha != hb: print("pagemap %r, rollup %r" % (ha, hb))
elif a["scan"] != "pagemap" or b["scan"] != "rollup": print("scans %r %r" % (a["scan"], b["scan"]))
' "$tmp/pagemap.json" "$tmp/rollup.json" "$thp_pid"
	elif [ "$pm_rc" != skip ]; then
		fail stat_all_scans_agree "--scan pagemap exit $pm_rc"
	fi
	# The memory cgroup the holder is in counts its THP (descendants included).
	local cg
	cg=$(awk -F: '$1 == "0" && $2 == "" { v2 = $3 } $2 ~ /(^|,)memory(,|$)/ { v1 = $3 }
		END { print (v1 != "" ? v1 : v2) }' /proc/$thp_pid/cgroup)
	sp stat --all --cgroup --json
	if [ "$rc" = 1 ] && grep -q 'no memory cgroup' "$tmp/err"; then
		skip stat_all_cgroup "no memory cgroup hierarchy is mounted"
	elif [ "$rc" != 0 ]; then
		fail stat_all_cgroup "exit $rc: $(cat "$tmp/err")"
	else
		py_check stat_all_cgroup '
import json, sys
d = json.load(open(sys.argv[1]))
cg = sys.argv[2] or "/"
rows = [c for c in d["cgroups"] if c["cgroup"] == cg]
if not rows: print("cgroup %r not listed (%d listed)" % (cg, len(d["cgroups"]))); sys.exit()
c = rows[0]
if c["anon_thp_bytes"] < 240 << 20: print("%s: anon_thp_bytes %d" % (cg, c["anon_thp_bytes"])); sys.exit()
if c["huge_bytes"] < c["anon_thp_bytes"] or c["memory_bytes"] < c["huge_bytes"]:
    print("huge %d, memory %d" % (c["huge_bytes"], c["memory_bytes"]))
' "$tmp/out" "$cg"
	fi
	kill "$thp_pid" 2>/dev/null
	wait "$thp_pid" 2>/dev/null
	thp_pid=''
}

# Under superpage run, a process's row carries its falls by reason.
test_falls() {
	local name=stat_all_falls no_preload pid
	no_preload=$(preload_blocker "$B" "$B/libsuperpage-run.so")
	if [ -n "$no_preload" ]; then
		skip $name "$no_preload"
		return
	fi
	"$SP" run -- python3 -c '
import time
x = [bytearray(1 << 20) for _ in range(8)]
print("ready", flush=True)
time.sleep(20)' >"$tmp/run_out" 2>&1 &
	pid=$!
	wait_ready "$tmp/run_out"
	sleep 0.3
	sp stat --all --json
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	py_check $name '
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
row = [p for p in d["processes"] if p["pid"] == pid]
if not row: print("pid %d not listed" % pid); sys.exit()
f = row[0]["falls"]
if not isinstance(f, dict) or "pool_empty" not in f: print("falls %r" % f); sys.exit()
others = [p for p in d["processes"] if p["comm"] == "bash" and p["falls"] is not None]
if others: print("a shell has falls: %r" % others[0])
' "$tmp/out" "$pid"
}

# 64 MiB of 2M hugetlb pages: the row says so by page size, and the processes' hugetlb
# adds up to the pages the pools have in use.
test_hugetlb() {
	local name=stat_all_hugetlb
	hold_2m_pages $name || return
	sp stat --all --json
	cp "$tmp/out" "$tmp/htlb.json"
	local pid=$hold_pid
	restore
	py_check $name '
import json, sys
d = json.load(open(sys.argv[1]))
pid = int(sys.argv[2])
row = [p for p in d["processes"] if p["pid"] == pid]
if not row: print("pid %d not listed" % pid); sys.exit()
row = row[0]
if row["hugetlb"] != {"2M": 64 << 20}: print("hugetlb %r" % row["hugetlb"]); sys.exit()
if row["huge_bytes"] < 64 << 20: print("huge_bytes %d" % row["huge_bytes"]); sys.exit()
used = d["machine"]["hugetlb_used_bytes"]
total = sum(p["hugetlb_bytes"] for p in d["processes"])
if abs(total - used) > 0.02 * used: print("processes %d, pools in use %d" % (total, used))
' "$tmp/htlb.json" "$pid"
}

test_errors
test_every_process
test_thp
test_falls
test_hugetlb
exit $failed
