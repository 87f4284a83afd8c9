#!/usr/bin/env bash
# test_coverage.sh - how much of a program's memory superpage run puts on huge pages
# (heapheavy.c, a Python workload), the resident memory of a small heap, how much faster
# the random-update kernel runs, and a 2M pool that runs dry: the rest on THP, the fall
# counted, and no SIGBUS in a forked child.
# Usage: tests/runtime/coverage/test_coverage.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test; other lines are measurements, not
# results. Every sysfs value it changes is put back, even on failure or Ctrl-C.
set -u
B=${1:?usage: tests/runtime/coverage/test_coverage.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start coverage coverage/heapheavy common/gups_malloc common/torture

# ---------- memory on huge pages ----------

# Starts "superpage run [options] -- command --hold" with its stdin on a fifo we hold
# open; waits for "holding pid=N" on its stderr. Leaves hold_pid and held (the pid of
# the program itself); returns 1 if it did not get there.
start_hold() { # options... -- command...
	rm -f "$tmp/hold_in"
	mkfifo "$tmp/hold_in"
	# (Emptied here, not only by the run's own redirection: that comes when the
	# background job gets to it, and the look below would read the "holding" line the
	# last held program left, a pid that is gone.)
	: >"$tmp/sp.err"
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
		# (What became of the held program says why its stat failed.)
		fail "$name" "no coverage: $cov; superpage run exited $src: $(oneline "$tmp/sp.err")"
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
		plain "$C/gups_malloc" 1G 8M
		t=$(sed -n 's/^seconds=\([0-9.]*\) .*/\1/p' "$tmp/plain.out")
		ps=$(awk -v a="$ps" -v b="$t" 'BEGIN { print (a == "" || b + 0 < a + 0) ? b : a }')
		sprun -- "$C/gups_malloc" 1G 8M
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
	plain "$C/torture" -e -n 1200 -r 2 $SEED
	sprun --backing 2m -- "$C/torture" -n 1200 -r 2 $SEED
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

run_some "$@"
test_coverage heapheavy_coverage 99 "$P/heapheavy"
if have_python; then
	test_coverage python_coverage 90 "$PY" "$CSRC/workload.py" --size full
else
	skip python_coverage "python3 is not installed (Debian package python3)"
fi
report_small_heap
test_gups
test_pool_exhaustion
exit $failed
