#!/usr/bin/env bash
# test_cli.sh - tests the superpage command on the real machine: output, exit codes, pools.
# Usage: tests/cli/test_cli.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Every sysfs value it changes is put back, even on failure.
set -u
B=${1:?usage: tests/cli/test_cli.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$B/superpage
HOLD=$B/tests/cli/hold_hugetlb
HP=/sys/kernel/mm/hugepages
THP=/sys/kernel/mm/transparent_hugepage
P2M=$HP/hugepages-2048kB
P1G=$HP/hugepages-1048576kB
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

# ---------- putting things back ----------

trap 'restore; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP


# ---------- helpers ----------


# Runs the command; leaves rc, and stdout/stderr in $tmp/out and $tmp/err.
bracketed() { sed -n 's/.*\[\(.*\)\].*/\1/p' "$1"; }
have_python() { command -v python3 >/dev/null 2>&1; }


if [ ! -x "$SP" ]; then
	fail cli_built "$SP is missing: build with make B=$B tests"
	exit 1
fi

# ---------- version and help ----------

test_version() {
	local want
	want=$(sed -n 's/^#define SP_VERSION_STRING "\(.*\)"/\1/p' "$here/../../include/superpage.h")
	sp version
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "superpage $want" ]; then
		fail version "exit $rc, printed '$(cat "$tmp/out")', want 'superpage $want'"
	else
		pass version
	fi
}

test_help() {
	local args why=''
	for args in "--help" "-h" "help" "help pool" "status --help" "pool --help" "pool -h" \
		"stat --help" "version --help" "stat --json --help" "pool --size 1G --help" \
		"bench --help" "help bench" "bench --quick --help"; do
		# shellcheck disable=SC2086
		sp $args
		if [ "$rc" != 0 ]; then
			why="'superpage $args' exited $rc"
		elif ! grep -q '^usage: superpage' "$tmp/out"; then
			why="'superpage $args' printed no usage line"
		elif [ -s "$tmp/err" ]; then
			why="'superpage $args' wrote to stderr"
		fi
		[ -z "$why" ] || break
	done
	if [ -z "$why" ]; then
		sp
		[ "$rc" = 2 ] || why="'superpage' alone exited $rc, want 2"
	fi
	if [ -z "$why" ]; then
		sp --help
		for c in status pool stat run bench version; do
			grep -qE "^ +$c\b" "$tmp/out" || why="--help does not list $c"
		done
	fi
	if [ -n "$why" ]; then fail help "$why"; else pass help; fi
}

# ---------- bad arguments ----------

test_bad_args() {
	local pid_max
	expect_usage_error bad_pool_size_2X pool --size 2X 1
	expect_usage_error bad_pool_count_negative pool -5
	expect_usage_error bad_pool_size_overflow pool --size 99999999999G 1
	expect_usage_error bad_pool_size_not_huge pool --size 4K 1
	expect_usage_error bad_pool_size_missing pool --size
	expect_usage_error bad_pool_count_missing pool
	expect_usage_error bad_pool_count_word pool many
	expect_usage_error bad_pool_count_too_large pool 99999999999999999999
	expect_usage_error bad_pool_count_above_long_max pool 9223372036854775808
	expect_usage_error bad_pool_two_counts pool 1 2
	expect_usage_error bad_pool_node pool --node 4096 1
	expect_usage_error bad_pool_option pool --bogus 1
	expect_usage_error bad_stat_word stat abc
	expect_usage_error bad_stat_missing stat
	expect_usage_error bad_stat_zero stat 0
	expect_usage_error bad_stat_negative stat -1
	expect_usage_error bad_stat_too_large stat 99999999999
	expect_usage_error bad_stat_sign stat +1
	expect_usage_error bad_stat_option stat --bogus 1
	expect_usage_error bad_command frobnicate
	expect_usage_error bad_command_newline $'frob\nnicate'
	expect_usage_error bad_status_option status --bogus
	expect_usage_error bad_status_argument status now
	expect_usage_error bad_version_argument version now
	pid_max=$(cat /proc/sys/kernel/pid_max)
	# The kernel hands out pids below pid_max only.
	expect_usage_error stat_no_such_pid stat "$pid_max"
	if [ "$rc" = 2 ] && ! grep -q "no process $pid_max" "$tmp/err"; then
		fail stat_no_such_pid_message "want 'no process $pid_max', got: $(cat "$tmp/err")"
	fi
}

test_write_error() {
	if [ ! -w /dev/full ]; then
		skip write_error "no /dev/full"
		return
	fi
	"$SP" status >/dev/full 2>"$tmp/err"
	rc=$?
	if [ "$rc" = 1 ] && [ "$(nlines "$tmp/err")" = 1 ]; then
		pass write_error
	else
		fail write_error "status >/dev/full exited $rc with: $(cat "$tmp/err")"
	fi
}

# ---------- status ----------

test_status_json() {
	local before after
	if ! have_python; then
		skip status_json "no python3 to parse JSON"
		return
	fi
	before=$(cat $HP/hugepages-*/nr_hugepages 2>/dev/null | tr '\n' ' ')
	sp status --json
	after=$(cat $HP/hugepages-*/nr_hugepages 2>/dev/null | tr '\n' ' ')
	if [ "$rc" != 0 ]; then
		fail status_json "exit $rc: $(cat "$tmp/err")"
		return
	fi
	# Pool counts are compared only if nobody changed them while status ran.
	if ! STABLE=$([ "$before" = "$after" ] && echo 1 || echo 0) \
		THP_ENABLED=$(bracketed $THP/enabled 2>/dev/null) \
		THP_DEFRAG=$(bracketed $THP/defrag 2>/dev/null) \
		python3 - "$tmp/out" >"$tmp/py" 2>&1 <<'PY'
import glob, json, os, re, sys
d = json.load(open(sys.argv[1]))
def need(cond, why):
    if not cond:
        print(why)
        sys.exit(1)
for k in ("page_sizes", "pools", "thp", "hugetlbfs_mounts", "features", "nodes"):
    need(k in d, "no key " + k)
ps = d["page_sizes"]
need(ps and ps[0] == 4096 and 4096 in ps, "page_sizes does not start with 4096: %r" % ps)
sysfs = {}
for p in glob.glob("/sys/kernel/mm/hugepages/hugepages-*kB"):
    size = int(re.search(r"-(\d+)kB$", p).group(1)) * 1024
    sysfs[size] = int(open(p + "/nr_hugepages").read())
need(sorted(ps[1:]) == sorted(sysfs), "page_sizes %r, sysfs has %r" % (ps, sorted(sysfs)))
need(sorted(p["page_size"] for p in d["pools"]) == sorted(sysfs),
     "pools' sizes %r, sysfs has %r" % ([p["page_size"] for p in d["pools"]], sorted(sysfs)))
for p in d["pools"]:
    for k in ("page_size", "total", "free", "reserved", "surplus", "overcommit"):
        need(isinstance(p.get(k), int), "pool key %s missing or not a number: %r" % (k, p))
    if os.environ["STABLE"] == "1":
        need(p["total"] == sysfs[p["page_size"]],
             "pool %d total %d, sysfs says %d" % (p["page_size"], p["total"], sysfs[p["page_size"]]))
t = d["thp"]
if os.environ["THP_ENABLED"]:
    need(t["enabled"] == os.environ["THP_ENABLED"],
         "thp.enabled %r, sysfs says %r" % (t["enabled"], os.environ["THP_ENABLED"]))
    need(t["defrag"] == os.environ["THP_DEFRAG"],
         "thp.defrag %r, sysfs says %r" % (t["defrag"], os.environ["THP_DEFRAG"]))
    need(isinstance(t.get("shmem_enabled"), str), "no thp.shmem_enabled")
    need(isinstance(t.get("pmd_size"), int) and t["pmd_size"] > 0, "bad thp.pmd_size")
    need(isinstance(t.get("mthp"), list) and isinstance(t.get("khugepaged"), dict),
         "thp.mthp or thp.khugepaged missing")
for k in ("madv_collapse", "madv_populate_write", "map_huge_2mb", "map_huge_1gb",
          "memfd_hugetlb", "thp_disable_prctl"):
    need(isinstance(d["features"].get(k), bool), "features.%s missing or not a bool" % k)
mounts = [l.split()[1] for l in open("/proc/mounts") if l.split()[2] == "hugetlbfs"]
need(len(d["hugetlbfs_mounts"]) == len(mounts),
     "hugetlbfs_mounts %r, /proc/mounts has %r" % (d["hugetlbfs_mounts"], mounts))
nodes = glob.glob("/sys/devices/system/node/node[0-9]*")
need(len(d["nodes"]) == len(nodes), "%d nodes, sysfs has %d" % (len(d["nodes"]), len(nodes)))
for n in d["nodes"]:
    need(isinstance(n.get("node"), int) and isinstance(n.get("pools"), list), "bad node %r" % n)
PY
	then
		fail status_json "$(tail -n 3 "$tmp/py" | tr '\n' ' ')"
	else
		pass status_json
	fi
}

test_status_human() {
	local why=''
	sp status
	if [ "$rc" != 0 ]; then
		why="exit $rc: $(cat "$tmp/err")"
	elif ! grep -q '^hints:' "$tmp/out"; then
		why="no hints section"
	elif ! grep -qE '^  thp: ' "$tmp/out" || ! grep -qE '^  4k: +always available' "$tmp/out"; then
		why="hints lack the thp or 4k line"
	elif [ -d $P2M ] && ! grep -qE '^  2m: ' "$tmp/out"; then
		why="no 2m hint"
	elif [ -d $P1G ] && ! grep -qE '^  1g: ' "$tmp/out"; then
		why="no 1g hint"
	elif [ -d $P2M ] && [ "$(cat $P2M/nr_hugepages)" = 0 ] &&
		[ "$(cat $P2M/nr_overcommit_hugepages)" = 0 ] &&
		! grep -qE '^  2m: +no 2 MiB pool: .*superpage pool 512' "$tmp/out"; then
		why="the 2M pool is empty but the hint does not say how to set it"
	elif [ -r $THP/enabled ] && [ "$(bracketed $THP/enabled)" = never ] &&
		[ "$(bracketed $THP/hugepages-2048kB/enabled 2>/dev/null)" != madvise ] &&
		[ "$(bracketed $THP/hugepages-2048kB/enabled 2>/dev/null)" != always ] &&
		! grep -qE '^  thp: +THP is never: echo madvise' "$tmp/out"; then
		why="THP is never but the hint does not say so"
	elif ! grep -q '^hugetlb pools' "$tmp/out" || ! grep -q '^transparent huge pages' "$tmp/out" ||
		! grep -q '^features:' "$tmp/out" || ! grep -q '^hugetlbfs mounts' "$tmp/out"; then
		why="a section is missing"
	elif [ -s "$tmp/err" ]; then
		why="wrote to stderr: $(cat "$tmp/err")"
	fi
	if [ -n "$why" ]; then fail status_human "$why"; else pass status_human; fi
}

# ---------- stat ----------

test_stat_self() {
	local why=''
	if ! have_python; then
		skip stat_json_shape "no python3 to parse JSON"
		return
	fi
	sp stat --json $$
	if [ "$rc" != 0 ]; then
		fail stat_json_shape "exit $rc: $(cat "$tmp/err")"
		return
	fi
	why=$(python3 - "$tmp/out" $$ 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
kinds = ("heap", "anon", "text", "data", "stack", "shm", "other")
if d.get("pid") != int(sys.argv[2]): print("pid %r" % d.get("pid")); sys.exit()
for k in ("rss_bytes", "huge_bytes"):
    if not isinstance(d.get(k), int): print("no " + k); sys.exit()
if not 0.0 <= d["coverage"] <= 1.0: print("coverage %r" % d["coverage"]); sys.exit()
if set(d["regions"]) != set(kinds): print("regions %r" % sorted(d["regions"])); sys.exit()
if d["rss_bytes"] <= 0: print("rss_bytes is 0 for a live shell"); sys.exit()
if d["huge_bytes"] > d["rss_bytes"]: print("huge_bytes above rss_bytes"); sys.exit()
total = sum(d["regions"][k]["bytes"] for k in kinds)
huge = sum(d["regions"][k]["huge_bytes"] for k in kinds)
if total != d["rss_bytes"] or huge != d["huge_bytes"]:
    print("regions add up to %d/%d, totals are %d/%d" % (total, huge, d["rss_bytes"], d["huge_bytes"]))
    sys.exit()
if abs(d["coverage"] - d["huge_bytes"] / d["rss_bytes"]) > 1e-5: print("coverage is not huge/rss")
PY
)
	if [ -n "$why" ]; then fail stat_json_shape "$why"; else pass stat_json_shape; fi
	sp stat $$
	if [ "$rc" != 0 ] || ! grep -q "^pid $$ " "$tmp/out" || ! grep -qE '^  heap ' "$tmp/out"; then
		fail stat_human "exit $rc: $(head -n 3 "$tmp/out" "$tmp/err" | tr '\n' ' ')"
	else
		pass stat_human
	fi
}

# A process under superpage run publishes its heap's account; stat reads it while the
# process runs: 48 MiB of blocks in use, in units, on THP; a forked child its own. A
# process not under superpage run has none (JSON heap null, no account line).
test_stat_live() {
	local name=stat_live pid child why no_preload
	if ! have_python; then
		skip $name "no python3 to run and to parse JSON"
		return
	fi
	if [ ! -f "$B/libsuperpage-run.so" ]; then
		skip $name "$B/libsuperpage-run.so is not built"
		return
	fi
	no_preload=$(preload_blocker "$B" "$B/libsuperpage-run.so")
	if [ -n "$no_preload" ]; then
		skip $name "$no_preload"
		return
	fi
	"$SP" run --backing thp -- python3 -c '
import os, sys, time
x = [bytearray(1 << 20) for _ in range(48)]
if os.fork() == 0:
    y = [bytearray(1 << 20) for _ in range(24)]
    print("child", os.getpid(), flush=True)
    time.sleep(8)
    os._exit(0)
time.sleep(8)' >"$tmp/live_out" 2>"$tmp/live_err" &
	pid=$!
	for _ in $(seq 50); do
		grep -q '^child ' "$tmp/live_out" && break
		sleep 0.1
	done
	sleep 0.5
	child=$(awk '/^child / { print $2 }' "$tmp/live_out")
	sp stat --json $pid
	cp "$tmp/out" "$tmp/live_parent.json"
	sp stat --json "${child:-0}"
	cp "$tmp/out" "$tmp/live_child.json"
	sp stat $pid
	cp "$tmp/out" "$tmp/live_parent.txt"
	sp stat --json $$
	cp "$tmp/out" "$tmp/live_shell.json"
	kill "$pid" "${child:-}" 2>/dev/null
	wait "$pid" 2>/dev/null
	why=$(python3 - "$tmp" <<'PY' 2>&1
import json, sys
t = sys.argv[1]
def load(n):
    try: return json.load(open(t + "/" + n))
    except Exception as e: print("%s: %s" % (n, e)); sys.exit()
p, c, sh = load("live_parent.json"), load("live_child.json"), load("live_shell.json")
MB = 1 << 20
for who, d, want in (("parent", p, 48 * MB), ("child", c, 72 * MB)):
    h = d.get("heap")
    if not h: print("%s: no heap account" % who); sys.exit()
    if not want <= h["in_use"] < want + 24 * MB: print("%s: in_use %d" % (who, h["in_use"])); sys.exit()
    if h["unit_used_bytes"] < want or h["units"]["thp"] * 2 * MB < h["unit_used_bytes"]:
        print("%s: units %r, %d in them" % (who, h["units"], h["unit_used_bytes"])); sys.exit()
    if not 0 <= h["age_s"] < 10: print("%s: age %r" % (who, h["age_s"])); sys.exit()
if sh.get("heap", 0) is not None: print("a shell not under superpage run: heap %r" % sh.get("heap"))
PY
)
	if [ -z "$why" ] && ! grep -qE '^  heap \(superpage run, [0-9.]+ s ago\): [0-9.]+ MiB in use' "$tmp/live_parent.txt"; then
		why="no account line: $(tail -n 3 "$tmp/live_parent.txt" | tr '\n' ' ')"
	fi
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

test_stat_hugetlb() {
	local name=stat_hugetlb why
	hold_2m_pages $name || return
	sp stat --json "$hold_pid"
	if [ "$rc" != 0 ]; then
		why="exit $rc: $(cat "$tmp/err")"
	elif have_python; then
		why=$(python3 - "$tmp/out" "$hold_pid" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
want = 64 << 20
if d["pid"] != int(sys.argv[2]): print("pid %r" % d["pid"])
elif d["huge_bytes"] < want: print("huge_bytes %d < %d" % (d["huge_bytes"], want))
elif d["regions"]["anon"]["huge_bytes"] < want:
    print("anon huge_bytes %d < %d" % (d["regions"]["anon"]["huge_bytes"], want))
elif d["rss_bytes"] < d["huge_bytes"]: print("rss_bytes %d < huge_bytes" % d["rss_bytes"])
elif not 0 < d["coverage"] <= 1: print("coverage %r" % d["coverage"])
PY
)
	else
		grep -q '"huge_bytes":[0-9]\{8,\}' "$tmp/out" || why="huge_bytes too small: $(cat "$tmp/out")"
	fi
	if [ -z "$why" ]; then
		sp stat "$hold_pid"
		[ "$rc" = 0 ] && grep -q 'hugetlb 64.0 MiB' "$tmp/out" ||
			why="human stat (exit $rc) does not show 64.0 MiB of hugetlb: $(head -n 2 "$tmp/out")"
	fi
	restore
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# ---------- pool ----------

test_pool_roundtrip() {
	local name=pool_roundtrip cur node_cur
	if ! is_root; then
		skip $name "needs root"
		return
	fi
	if [ ! -d $P2M ]; then
		skip $name "no 2M hugetlb pages on this machine"
		return
	fi
	cur=$(cat $P2M/nr_hugepages)
	remember $P2M/nr_hugepages
	sp pool "$cur"
	if [ "$rc" != 0 ] || ! grep -q "^2M pool: $cur pages .*(asked $cur)" "$tmp/out" ||
		[ "$(cat $P2M/nr_hugepages)" != "$cur" ]; then
		fail $name "'pool $cur' exited $rc: $(cat "$tmp/out" "$tmp/err" | tr '\n' ' ')"
		restore
		return
	fi
	pass $name
	node_cur=$(cat /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages 2>/dev/null)
	if [ -z "$node_cur" ]; then
		skip pool_roundtrip_node "no per-node 2M pool"
	else
		sp pool --node 0 --size 2M "$node_cur"
		if [ "$rc" = 0 ] && grep -q "^2M pool on node 0: $node_cur pages" "$tmp/out"; then
			pass pool_roundtrip_node
		else
			fail pool_roundtrip_node "exit $rc: $(cat "$tmp/out" "$tmp/err" | tr '\n' ' ')"
		fi
	fi
	restore
}

test_pool_set() {
	local name=pool_set cur want now
	if ! is_root; then
		skip $name "needs root"
		return
	fi
	if [ ! -d $P2M ]; then
		skip $name "no 2M hugetlb pages on this machine"
		return
	fi
	cur=$(cat $P2M/nr_hugepages)
	want=$((cur + 4))
	remember $P2M/nr_hugepages
	sp pool --size=2M "$want"
	now=$(cat $P2M/nr_hugepages)
	restore
	if [ "$now" -lt "$want" ]; then
		if [ "$rc" = 1 ]; then
			skip $name "the kernel gave $now of $want pages (and the command said so)"
		else
			fail $name "the kernel gave $now of $want pages but the command exited $rc"
		fi
	elif [ "$rc" != 0 ] || [ "$now" != "$want" ] ||
		! grep -q "^2M pool: $want pages .*(asked $want), free" "$tmp/out"; then
		fail $name "exit $rc, sysfs $now, printed: $(cat "$tmp/out" "$tmp/err" | tr '\n' ' ')"
	else
		pass $name
	fi
}

test_pool_shortfall() {
	local name=pool_shortfall cur ask got
	if ! is_root; then
		skip $name "needs root"
		return
	fi
	if [ ! -d $P1G ]; then
		skip $name "no 1G hugetlb pages on this machine"
		return
	fi
	cur=$(cat $P1G/nr_hugepages)
	# As many pages as MemTotal holds (more is refused before the kernel is asked):
	# the kernel, which needs some memory itself, cannot give them all.
	ask=$(awk '/^MemTotal:/ {print int($2 / 1048576)}' /proc/meminfo)
	if [ "$ask" -le "$cur" ]; then
		skip $name "the 1G pool holds $cur pages, all MemTotal could hold"
		return
	fi
	remember $P1G/nr_hugepages
	sp pool --size 1G "$ask"
	got=$(cat $P1G/nr_hugepages)
	# Give the memory back at once: the machine is nearly out of it now.
	restore
	if [ "$got" -ge "$ask" ]; then
		skip $name "the kernel gave all $ask pages of 1G"
	elif [ "$rc" != 1 ]; then
		fail $name "exit $rc, want 1: $(cat "$tmp/err")"
	elif [ "$(nlines "$tmp/err")" != 1 ] ||
		! grep -q "^superpage: asked for $ask pages of 1G, the kernel gave $got\b" "$tmp/err"; then
		fail $name "stderr does not say the shortfall ($got pages): $(cat "$tmp/err")"
	elif ! grep -q "^1G pool: $got pages .*(asked $ask)" "$tmp/out"; then
		fail $name "stdout does not show the pool: $(cat "$tmp/out")"
	else
		pass $name
	fi
}

test_not_root() {
	local name=pool_not_root why
	if ! is_root; then
		expect_usage_error $name pool 1
		return
	fi
	why=$(nobody_blocker)
	if [ -n "$why" ]; then
		skip $name "$why"
		return
	fi
	"${as_nobody[@]}" "$SP" pool 1 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 2 ] || [ "$(nlines "$tmp/err")" != 1 ] || ! grep -q 'needs root' "$tmp/err"; then
		fail $name "exit $rc: $(cat "$tmp/err")"
	else
		pass $name
	fi
	"${as_nobody[@]}" "$SP" stat 1 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 2 ] || [ "$(nlines "$tmp/err")" != 1 ]; then
		fail stat_not_allowed "stat 1 as user 65534 exited $rc: $(cat "$tmp/err")"
	else
		pass stat_not_allowed
	fi
}

test_version
test_help
test_bad_args
test_write_error
test_status_json
test_status_human
test_stat_self
test_stat_live
test_stat_hugetlb
test_pool_roundtrip
test_pool_set
test_pool_shortfall
test_not_root
exit $failed
