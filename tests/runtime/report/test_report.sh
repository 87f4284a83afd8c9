#!/usr/bin/env bash
# test_report.sh - the account the runtime writes at a process's exit under superpage
# run --stats: its lines on stderr (also from a program that closed its stderr in an
# atexit handler), and with --stats=FILE one JSON line per process, every key there.
# Usage: tests/runtime/report/test_report.sh BUILD_DIR. Prints "PASS name", "FAIL name:
# why" or "SKIP name: why" per test. It changes no system setting.
set -u
B=${1:?usage: tests/runtime/report/test_report.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
RT=$B/libsuperpage-run.so
tmp=$(mktemp -d)
# shellcheck source=tests/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/../../lib.sh"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# What the tests see must come from superpage run, not from whoever started them.
unset LD_PRELOAD "${!SUPERPAGE_@}"

# ASan brings its own malloc and must come first: its runtime cannot be preloaded into
# other programs, so the tests that start a dynamic program under run are skipped.
no_preload=$(preload_blocker "$B" "$B/libsuperpage-run.so")

# ---------- helpers ----------

have_python() { command -v python3 >/dev/null 2>&1; }
oneline() { head -c 300 "$1" | tr '\n' '|'; }

# Says SKIP and fails when this build cannot preload its runtime into a program.
can_preload() { # name
	if [ -n "$no_preload" ]; then
		skip "$1" "$no_preload"
		return 1
	fi
	return 0
}

if [ ! -x "$SP" ]; then
	fail report_built "$SP is missing: build with make B=$B"
	exit 1
fi

# ---------- the account at exit ----------

test_stats_text() {
	local name=run_stats_text
	if ! can_preload $name; then
		skip run_stats_stderr_closed "$no_preload"
		return
	fi
	if [ ! -f "$RT" ]; then
		skip $name "$RT is not built"
		return
	fi
	sp run --stats -- /bin/true
	if [ "$rc" != 0 ] ||
		! grep -qE '^superpage: pid [0-9]+ \(true\): .* resident, .* on huge pages \([0-9.]+%\)' "$tmp/err" ||
		! grep -qE '^superpage: pid [0-9]+ \(true\): in units: .* in use, .* free inside units in use \([0-9.]+% of their memory\), [0-9.]+% of what is in use in full units; [0-9]+ empty units kept$' "$tmp/err" ||
		! grep -qE '^superpage: pid [0-9]+ \(true\): fallbacks: ' "$tmp/err"; then
		fail $name "exit $rc, stderr: $(oneline "$tmp/err")"
	else
		pass $name
	fi
	# GNU ls closes stderr in an atexit handler that runs before the account.
	sp run --stats -- ls -d /
	if [ "$rc" != 0 ] || ! grep -qE '^superpage: pid [0-9]+ \(ls\): fallbacks: ' "$tmp/err"; then
		fail run_stats_stderr_closed "exit $rc, stderr: $(oneline "$tmp/err")"
	else
		pass run_stats_stderr_closed
	fi
	# The same with SUPERPAGE_STATS=stderr set by hand (the preload alone).
	SUPERPAGE_STATS=stderr LD_PRELOAD=$RT ls -d / >/dev/null 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ] || ! grep -qE '^superpage: pid [0-9]+ \(ls\): fallbacks: ' "$tmp/err"; then
		fail run_stats_stderr_word_closed "exit $rc, stderr: $(oneline "$tmp/err")"
	else
		pass run_stats_stderr_word_closed
	fi
}

test_stats_json() {
	local name=run_stats_json why
	can_preload $name || return
	if [ ! -f "$RT" ]; then
		skip $name "$RT is not built"
		return
	fi
	if ! have_python; then
		skip $name "no python3 to parse JSON"
		return
	fi
	rm -f "$tmp/stats.json"
	# bash and two /bin/true: three processes, three lines. (Not sh: dash ends with
	# _exit, and a process that ends with _exit writes no account.)
	sp run --stats="$tmp/stats.json" -- bash -c '/bin/true; /bin/true; echo done'
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "done" ]; then
		fail $name "exit $rc, stdout '$(oneline "$tmp/out")', stderr: $(oneline "$tmp/err")"
		return
	fi
	why=$(python3 - "$tmp/stats.json" 2>&1 <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
if len(lines) != 3:
    print("%d lines, want 3 (bash and two true): %r" % (len(lines), lines)); sys.exit()
kinds = ("heap", "anon", "text", "data", "stack", "shm", "other")
pids = set()
for l in lines:
    d = json.loads(l)
    for k in ("pid", "comm", "rss_bytes", "huge_bytes", "coverage", "regions", "heap", "falls",
              "vm_hwm_bytes"):
        if k not in d: print("no key %s in %s" % (k, l)); sys.exit()
    pids.add(d["pid"])
    if d["rss_bytes"] <= 0 or not 0 <= d["huge_bytes"] <= d["rss_bytes"]:
        print("rss_bytes %d, huge_bytes %d" % (d["rss_bytes"], d["huge_bytes"])); sys.exit()
    if abs(d["coverage"] - d["huge_bytes"] / d["rss_bytes"]) > 1e-5:
        print("coverage %r is not huge/rss" % d["coverage"]); sys.exit()
    if set(d["regions"]) != set(kinds): print("regions %r" % sorted(d["regions"])); sys.exit()
    if sum(d["regions"][k]["bytes"] for k in kinds) != d["rss_bytes"]:
        print("regions do not add up to rss_bytes"); sys.exit()
    h = d["heap"]
    for k in ("in_use", "peak", "mallocs", "frees", "units", "large_blocks", "large_bytes",
              "mremaps", "released_units", "reused_units", "unit_used_bytes", "unit_free_bytes",
              "full_unit_bytes", "kept_units"):
        if not isinstance(h.get(k), (int, dict)): print("no heap key %s" % k); sys.exit()
    if h["full_unit_bytes"] > h["unit_used_bytes"] or h["unit_used_bytes"] % 4096 or \
       h["unit_free_bytes"] % 4096:
        print("unit bytes: used %d, free %d, in full units %d" % (h["unit_used_bytes"],
              h["unit_free_bytes"], h["full_unit_bytes"])); sys.exit()
    if set(h["units"]) != {"4k", "thp", "2m", "1g"}: print("units %r" % h["units"]); sys.exit()
    if h["peak"] < h["in_use"]: print("peak %d below in_use %d" % (h["peak"], h["in_use"])); sys.exit()
    for rung, whys in d["falls"].items():
        if rung not in ("auto", "4k", "thp", "2m", "1g") or not whys or \
           not all(isinstance(n, int) and n > 0 for n in whys.values()):
            print("falls %r" % d["falls"]); sys.exit()
if len(pids) != 3: print("pids %r are not three" % sorted(pids)); sys.exit()
comms = sorted(json.loads(l)["comm"] for l in lines)
if comms.count("true") != 2: print("comms %r, want two 'true'" % comms); sys.exit()
if max(json.loads(l)["heap"]["mallocs"] for l in lines) == 0: print("no process counted a malloc")
PY
)
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# Free places inside the chunks of fitted blocks are free inside units, not in use: the
# bytes in full units are never more than the bytes in use (they were 108% of them).
test_stats_fitted() {
	local name=run_stats_fitted why
	can_preload $name || return
	if ! have_python; then
		skip $name "no python3 to parse JSON"
		return
	fi
	rm -f "$tmp/fitted.json"
	sp run --stats="$tmp/fitted.json" -- "$B/tests/runtime/report/fitted" 4000
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "fitted: 4000 blocks, 2000 freed" ]; then
		fail $name "exit $rc, stdout '$(oneline "$tmp/out")', stderr: $(oneline "$tmp/err")"
		return
	fi
	why=$(python3 - "$tmp/fitted.json" 2>&1 <<'PY'
import json, sys
h = json.loads(open(sys.argv[1]).read().splitlines()[0])["heap"]
used, free, full = h["unit_used_bytes"], h["unit_free_bytes"], h["full_unit_bytes"]
if free < 2000 * 4096: print("only %d bytes free inside units after 2000 frees" % free)
elif not 0 < full <= used: print("in full units %d, in use %d" % (full, used))
PY
)
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

test_stats_text
test_stats_json
test_stats_fitted
exit $failed
