#!/usr/bin/env bash
# test_realbench.sh - tests make realbench's plumbing (bench/real/realbench.sh and
# table.py) on tiny fake workloads: no apt-get, no server. Each workload runs under
# superpage bench -- CMD, and the table lands between the realbench markers of a
# doc whose other text is kept; a workload that cannot run, one of the full set and
# one whose check fails are reported as such. The real workload files' fields are
# checked as they are loaded (none of them runs), and the memcached client compiles
# without a warning. No test asserts a time.
# Usage: tests/cli/test_realbench.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test.
set -u
B=${1:?usage: tests/cli/test_realbench.sh BUILD_DIR}
B=$(cd "${B%/}" && pwd)
SP=$B/superpage
top=$(cd "$(dirname "$0")/../.." && pwd)
RB=$top/bench/real/realbench.sh
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
unset LD_PRELOAD GLIBC_TUNABLES "${!SUPERPAGE_@}"

# The workload files of bench/real/work: each, loaded as realbench.sh loads it, names
# a title, its set (quick or full), a --metric REGEX with a group, lower 0 or 1, needs
# as command:package pairs, extras as label=REGEX lines with a group, an expect REGEX
# that compiles, and defines run; the files they name beside them are there. No
# workload runs.
fields() { # workload file: its fields, a line each (python3 checks them)
	(
		# shellcheck disable=SC2034
		real=$top/bench/real
		metric='' lower=0 needs='' title='' ignore='' extras='' expect=''
		unset -f prepare run
		# shellcheck disable=SC1090
		. "$1" >/dev/null 2>&1
		printf 'title\t%s\nset\t%s\nmetric\t%s\nlower\t%s\nneeds\t%s\nexpect\t%s\nignore\t%s\n' \
			"$title" "${set:-quick}" "$metric" "$lower" "$needs" "$expect" "$ignore"
		[ -n "$extras" ] && printf '%s\n' "$extras" | sed 's/^/extra\t/'
		declare -F run >/dev/null && printf 'run\tyes\n'
		declare -F prepare >/dev/null && printf 'prepare\tyes\n'
		# the helpers a workload names by $real/FILE
		# shellcheck disable=SC2016
		grep -o '\$real/[A-Za-z0-9_./]*' "$1" | sed 's|^\$real/|helper\t|'
	)
}
# shellcheck disable=SC2016
check_fields() { # workload file
	fields "$1" | python3 -c '
import os, re, sys
real, errs, f = sys.argv[1], [], {"extra": [], "helper": []}
for line in sys.stdin:
    k, _, v = line.rstrip("\n").partition("\t")
    if k in ("extra", "helper"):
        f[k].append(v)
    else:
        f[k] = v
def rx(name, x, group):
    try:
        if re.compile(x).groups < group:
            errs.append("%s %r has no group" % (name, x))
    except re.error as e:
        errs.append("%s %r: %s" % (name, x, e))
if not f.get("title"):
    errs.append("no title")
if f.get("set") not in ("quick", "full"):
    errs.append("set %r" % f.get("set"))
if not f.get("metric"):
    errs.append("no metric")
else:
    rx("metric", f["metric"], 1)
if f.get("lower") not in ("0", "1"):
    errs.append("lower %r" % f.get("lower"))
for pair in f.get("needs", "").split():
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+:[a-z0-9][a-z0-9.+-]+", pair):
        errs.append("needs %r" % pair)
for x in ("expect", "ignore"):
    if f.get(x):
        rx(x, f[x], 0)
for e in f["extra"]:
    label, eq, x = e.partition("=")
    if not label or not eq:
        errs.append("extra %r" % e)
    else:
        rx("extra " + label, x, 1)
if f.get("run") != "yes":
    errs.append("no run function")
for h in f["helper"]:
    if not os.path.exists(os.path.join(real, h)):
        errs.append("names $real/%s, which is missing" % h)
print("; ".join(errs))
' "$top/bench/real"
}
if ! command -v python3 >/dev/null 2>&1; then
	skip realbench_fields "needs python3"
	skip realbench_full_set "needs python3"
else
	bad='' quick='' full=''
	for f in "$top"/bench/real/work/*.sh; do
		n=$(basename "$f" .sh)
		e=$(check_fields "$f")
		[ -n "$e" ] && bad="$bad $n: $e;"
		case $(fields "$f" | sed -n 's/^set\t//p') in
		full) full="$full $n" ;;
		*) quick="$quick $n" ;;
		esac
	done
	# a workload with a field broken by hand is caught: the check is not vacuous
	sed -e "s/^metric=.*/metric='^no group here'/" "$top/bench/real/work/zstd.sh" >"$tmp/broken.sh"
	e=$(check_fields "$tmp/broken.sh")
	if [ -z "$bad" ] && [[ $e == *"metric '^no group here' has no group"* ]]; then
		pass realbench_fields
	else
		fail realbench_fields "${bad:-a metric without a group was not caught ($e)}"
	fi
	# the full set is written: memcached, pgbench, the JVM, node, a gcc build, zstd
	want=' gcc jvm memcached node pgbench zstd'
	if [ "$(tr ' ' '\n' <<<"$full" | sed '/^$/d' | sort | tr '\n' ' ' | sed 's/^/ /; s/ $//')" = "$want" ] && [ -n "$quick" ]; then
		pass realbench_full_set
	else
		fail realbench_full_set "full set:$full, want$want; quick:$quick"
	fi
fi

# memc_load.c (the memcached workload's client, built there with gcc) compiles without
# a warning.
if ! command -v gcc >/dev/null 2>&1; then
	skip realbench_memc_client "needs gcc"
elif gcc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$tmp/memc_load" "$top/bench/real/memc_load.c" \
	-lpthread 2>"$tmp/cc.err"; then
	pass realbench_memc_client
else
	fail realbench_memc_client "$(head -c 300 "$tmp/cc.err")"
fi

# memc_load's check against a fake memcached (python3, the text protocol's set, mn,
# get and stats on loopback): with every value kept it exits 0 and says so; a server
# that hands back one wrong value, or loses a key, makes it exit 1 and count it.
fake_memcached() { # mode (good, wrong or lose): serves clients, prints its port first
	exec python3 -u -c '
import socket, sys
mode = sys.argv[1]
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
print(srv.getsockname()[1])
store, conns = {}, []
import threading
def serve(c):
    f = c.makefile("rb")
    while True:
        line = f.readline()
        if not line:
            return
        w = line.split()
        if w[0] == b"set":
            data = f.read(int(w[4]) + 2)[:-2]
            store[w[1]] = data
        elif w[0] == b"mn":
            c.sendall(b"MN\r\n")
        elif w[0] == b"get":
            out = []
            for k in w[1:]:
                v = store.get(k)
                if v is None or (mode == "lose" and k == b"k00000000007"):
                    continue
                if mode == "wrong" and k == b"k00000000005":
                    v = v[:-1] + b"#"
                out.append(b"VALUE %s 0 %d\r\n%s\r\n" % (k, len(v), v))
            c.sendall(b"".join(out) + b"END\r\n")
        elif w[0] == b"stats":
            c.sendall(b"STAT curr_items %d\r\nSTAT evictions 0\r\nEND\r\n" % len(store))
srv.settimeout(30)
try:
    while True:
        c, _ = srv.accept()
        t = threading.Thread(target=serve, args=(c,), daemon=True)
        t.start()
        conns.append(t)
except socket.timeout:
    pass
' "$1"
}
memc_try() { # mode: runs memc_load against a fake server; leaves mrc and mout
	local port fpid
	rm -f "$tmp/fake.port"
	fake_memcached "$1" >"$tmp/fake.port" 2>"$tmp/fake.err" &
	fpid=$!
	for _ in $(seq 100); do [ -s "$tmp/fake.port" ] && break; sleep 0.1; done
	port=$(head -n 1 "$tmp/fake.port")
	timeout 60 "$tmp/memc_load" "$port" 20 200 2 10 >"$tmp/memc.out" 2>&1
	mrc=$?
	mout=$(tr '\n' '|' <"$tmp/memc.out")
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
}
if [ ! -x "$tmp/memc_load" ] || ! command -v python3 >/dev/null 2>&1; then
	skip realbench_memc_check "needs python3 and memc_load built (gcc)"
else
	memc_try good
	good="$mrc $mout"
	memc_try wrong
	wrong="$mrc $mout"
	memc_try lose
	lose="$mrc $mout"
	if [[ $good == "0 check: 20 keys set, 200 gets, 200 values as written, 0 missing, 0 wrong,"* ]] &&
		[[ $good == *"check: curr_items 20, evictions 0|check: every value as written, none evicted|memcached: "*" gets/s, sets "* ]] &&
		[[ $wrong$lose != *"every value as written"* ]] &&
		[[ $wrong == "1 check: 20 keys set, 200 gets, "*", 0 missing, "[1-9]*" wrong,"* ]] &&
		[[ $lose == "1 check: 20 keys set, 200 gets, "*" values as written, "[1-9]*" missing, 0 wrong,"* ]]; then
		pass realbench_memc_check
	else
		fail realbench_memc_check "good '$good'; wrong '$wrong'; lose '$lose'"
	fi
fi

why=''
[ -x "$RB" ] || why="no $RB"
command -v python3 >/dev/null 2>&1 || why="needs python3 (table.py)"
[ -z "$why" ] && why=$(preload_blocker "$B" "$B/libsuperpage-run.so")
if [ -n "$why" ]; then
	for t in realbench_markers realbench_table realbench_skips realbench_check realbench_new_doc; do
		skip "$t" "$why"
	done
	exit 0
fi

# The fake workloads: one that works (its figure, a check line, an extra figure), one
# whose prepare says it cannot run, one of the full set, one whose check is missing.
w=$tmp/work
mkdir -p "$w"
cat >"$w/alpha.sh" <<'W'
title='fake alpha'
metric='^alpha: ([0-9]+) ops'
expect='^check: alpha ok'
extras='tenfold=^alpha: [0-9]+ ops, ([0-9]+)'
run() { echo "alpha ran in $1" >"$1/ran"; echo 'check: alpha ok'; echo 'alpha: 1000 ops, 10000'; }
W
cat >"$w/beta.sh" <<'W'
title='fake beta'
metric='^beta: ([0-9]+)'
prepare() { echo 'beta has nothing to run here'; return 1; }
run() { echo 'beta: 1'; }
W
cat >"$w/gamma.sh" <<'W'
title='fake gamma'
set=full
metric='^gamma: ([0-9]+)'
run() { echo 'gamma: 1'; }
W
cat >"$w/delta.sh" <<'W'
title='fake delta'
metric='^delta: ([0-9]+)'
expect='^check: delta ok'
run() { echo 'delta: 5'; }
W
doc=$tmp/doc.md
printf '# Before\n\nkept text above\n\n<!-- realbench:begin -->\nold table\n<!-- realbench:end -->\n\n## After\nkept text below\n' >"$doc"
bash "$RB" --work "$w" --data "$tmp/data" --out "$tmp/out" --doc "$doc" --rounds 2 \
	--backing auto --no-pools "$B" >"$tmp/rb.out" 2>"$tmp/rb.err"
rc=$?
oneline() { head -c 300 "$1" | tr '\n' '|'; }

# markers: the text outside them is as it was, the old table is gone
if [ "$(grep -c '^<!-- realbench:begin -->$' "$doc")" = 1 ] &&
	[ "$(grep -c '^<!-- realbench:end -->$' "$doc")" = 1 ] &&
	[ "$(sed -n '1,4p' "$doc")" = "$(printf '# Before\n\nkept text above\n')" ] &&
	[ "$(sed -n '/realbench:end/,$p' "$doc" | tail -n +2)" = "$(printf '\n## After\nkept text below')" ] &&
	! grep -q '^old table$' "$doc"; then
	pass realbench_markers
else
	fail realbench_markers "doc: $(oneline "$doc")"
fi

# table: alpha ran under bench (its data directory, plain and auto), its row has its
# figure, a ratio for auto and check ok, and its extra figure's medians
row=$(grep '^| fake alpha |' "$doc")
if [ -s "$tmp/data/alpha/ran" ] && [ -s "$tmp/out/alpha.json" ] &&
	[[ $row == *"| 1000 | "*x*"| 2 | ok |" ]] &&
	grep -q '^| tenfold | 10000 | 10000 (1.00x) |$' "$doc" &&
	grep -q '^- alpha: auto: ' "$doc" &&
	grep -q 'AMD\|Intel\|CPUs' "$doc"; then
	pass realbench_table
else
	fail realbench_table "rc $rc, row '$row'; $(oneline "$tmp/rb.err")"
fi

# skips: beta's own reason, gamma is of the full set, neither has a row
if grep -q '^- fake beta: beta has nothing to run here$' "$doc" &&
	grep -q '^- fake gamma: full set only' "$doc" &&
	! grep -q '^| fake beta \|^| fake gamma ' "$doc" && [ ! -e "$tmp/data/gamma/ran" ]; then
	pass realbench_skips
else
	fail realbench_skips "$(oneline "$doc")"
fi

# check: delta never printed its check line: its row says so, and the run's exit status
row=$(grep '^| fake delta |' "$doc")
if [[ $row == *"FAILED (check missing in "* ]] && [ "$rc" = 1 ] &&
	grep -q 'the check failed for delta' "$tmp/rb.err"; then
	pass realbench_check
else
	fail realbench_check "exit $rc, row '$row'; $(oneline "$tmp/rb.err")"
fi

# a doc without the markers gets them at its end, its text kept in front
printf '# Only\n\ntext\n' >"$doc"
bash "$RB" --work "$w" --only alpha --data "$tmp/data" --out "$tmp/out" --doc "$doc" --rounds 1 \
	--backing auto --no-pools "$B" >/dev/null 2>"$tmp/rb.err"
if [ "$(head -n 3 "$doc")" = "$(printf '# Only\n\ntext')" ] &&
	[ "$(sed -n 5p "$doc")" = '<!-- realbench:begin -->' ] &&
	[ "$(tail -n 1 "$doc")" = '<!-- realbench:end -->' ] && grep -q '^| fake alpha |' "$doc"; then
	pass realbench_new_doc
else
	fail realbench_new_doc "$(oneline "$doc"); $(oneline "$tmp/rb.err")"
fi
exit 0
