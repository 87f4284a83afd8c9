#!/usr/bin/env bash
# mbench.sh - runs the programs of a local mimalloc-bench checkout (daanx/mimalloc-bench,
# built with its cmake: DIR/out/bench) under glibc, `superpage run` (sp), `superpage run
# --backing 2m` (sp2m) and the peers that are installed: mimalloc (mi), jemalloc with
# thp:always (je-thp) and gperftools' tcmalloc (tc). The programs take bench.sh's
# arguments with THREADS threads. Each round runs every program under every allocator,
# the allocators' order rotating from round to round (glibc first in the first round);
# each run's output is checked. Prints a table of medians: time and peak memory, each
# against glibc and against mimalloc, their geomeans, the date and the machine.
#
# usage: bash bench/mbench.sh [OPTIONS] DIR   or   bash bench/mbench.sh --from FILE
#   DIR              the mimalloc-bench checkout (its out/bench holds the programs; gs,
#                    lua and redis also need extern/large.pdf, extern/lua and
#                    extern/redis-6.2.7/src as build-bench-env.sh puts them)
#   -r, --rounds N   rounds (default 3)
#   -t, --threads N  threads for the multi-threaded programs (default 2)
#   -p, --programs LIST   only these programs (comma-separated names as in the table)
#   -a, --allocators LIST only these allocators (glibc,sp,sp2m,mi,je-thp,tc)
#   -b, --build B    the superpage build to use (default: build next to bench/)
#   -o, --out FILE   also write each run as a line to FILE (round program allocator
#                    seconds peak_kib ok)
#   -w, --pool-wait S  wait at most S seconds for /tmp/sp-pool.lock at the first sp2m
#                    run (default: as long as it takes); if it stays taken, sp2m is
#                    left out of the rest of the runs, and said so
#   -f, --from FILE  print the table of a FILE that --out wrote, run nothing (no
#                    DIR then)
#   -l, --list       list the programs and the allocators found, run nothing
#   -h, --help       this text
# Time is the run's elapsed time, or the program's own figure where bench.sh takes it
# (larson, xmalloc-test, rptest, glibc-thread, redis: their relative times). Peak memory
# is the peak resident set (GNU time's %M, all processes of the run); for sp2m the
# pages it takes from the 2 MiB hugetlb pool (which are not in the resident set) are
# added: the pool's pages in use, sampled every 20 ms during the run. From the first
# sp2m run to its end the script holds /tmp/sp-pool.lock (unless SP_POOL_LOCKED=1 says
# the caller does), as `superpage bench --setup-pools` does, and, as root, raises the
# 2 MiB pool before each sp2m run to hold an eighth more than glibc's peak plus 64
# pages; the pages it added are taken back at the end (also on Ctrl-C). LD_PRELOAD, MALLOC_CONF and SUPERPAGE_* are cleared for
# the runs. Progress goes to stderr, the table to stdout.
# Exit status: 0, 1 if a run failed its check (the reason is on stderr), 2 on bad
# arguments or a DIR without programs.
# shellcheck disable=SC2046,SC2086,SC2317
# (command lines and lists of paths are split on purpose; traps call on_exit.)
set -u

help() { sed -n '2,/^# shellcheck/{/^# shellcheck/d; s/^# \{0,1\}//; p}' "$0"; }
usage() {
	[ $# -gt 0 ] && echo "mbench.sh: $*" >&2
	echo "usage: bash bench/mbench.sh [--rounds N] [--threads N] [--programs LIST] [--allocators LIST] [--build B] [--out FILE] DIR (--help says more)" >&2
	exit 2
}

# ---------- the table ----------

# Prints the tables of RES (lines: round program allocator seconds peak_kib ok) for
# the allocators ALLOCS and programs NAMES, and the checks' count (failed); exits.
report() {
	awk -v allocs="$ALLOCS" -v progs="${NAMES[*]}" '
function median(key,   n, i, j, t, v) {
	n = cnt[key]
	if (n == 0) return ""
	for (i = 1; i <= n; i++) v[i] = val[key, i]
	for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function spread(key,   n, i, lo, hi) {
	n = cnt[key]
	if (n < 2) return ""
	lo = hi = val[key, 1]
	for (i = 2; i <= n; i++) { if (val[key, i] < lo) lo = val[key, i]; if (val[key, i] > hi) hi = val[key, i] }
	return lo > 0 ? hi / lo : ""
}
/^#/ { next }
{
	if ($6 != "ok") { bad[$2, $3]++; next }
	k = "t" SUBSEP $2 SUBSEP $3; cnt[k]++; val[k, cnt[k]] = $4
	k = "m" SUBSEP $2 SUBSEP $3; cnt[k]++; val[k, cnt[k]] = $5
}
function table(what, title, unit,   i, j, p, a, g, m, x, y, line, ok) {
	printf "\n%s: median %s under glibc; for each allocator its median against glibc / against mi\n", title, unit
	printf "%-15s %10s", "program", "glibc"
	for (j = 1; j <= na; j++) if (A[j] != "glibc") printf " %15s", A[j]
	printf "\n"
	for (i = 1; i <= np; i++) {
		p = P[i]
		g = median(what SUBSEP p SUBSEP "glibc"); m = median(what SUBSEP p SUBSEP "mi")
		if (g == "") line = sprintf("%10s", "-")
		else line = sprintf(what == "t" ? "%9.3fs" : "%7.0fMiB", what == "t" ? g : g / 1024)
		for (j = 1; j <= na; j++) {
			a = A[j]
			if (a == "glibc") continue
			x = median(what SUBSEP p SUBSEP a)
			if (x == "") { line = line sprintf(" %15s", bad[p, a] ? "FAILED" : "-"); continue }
			line = line sprintf(" %7s/%-7s", g > 0 ? sprintf("%.3f", x / g) : "-", a == "mi" ? "" : (m > 0 ? sprintf("%.3f", x / m) : "-"))
			if (g > 0) { lg[a] += log(x / g); ng[a]++ }
			if (m > 0 && a != "mi") { lm[a] += log(x / m); nm[a]++ }
		}
		printf "%-15s %s\n", p, line
	}
	line = sprintf("%10s", "")
	for (j = 1; j <= na; j++) {
		a = A[j]
		if (a == "glibc") continue
		line = line sprintf(" %7s/%-7s", ng[a] ? sprintf("%.3f", exp(lg[a] / ng[a])) : "-", nm[a] ? sprintf("%.3f", exp(lm[a] / nm[a])) : "")
		delete lg[a]; delete ng[a]; delete lm[a]; delete nm[a]
	}
	printf "%-15s %s\n", "geomean", line
}
END {
	na = split(allocs, A, " "); np = split(progs, P, " ")
	table("t", "time", "seconds")
	table("m", "peak memory", "MiB")
	printf "\nround-to-round spread of the time (slowest / fastest round)\n%-15s", "program"
	for (j = 1; j <= na; j++) printf " %7s", A[j]
	printf "\n"
	for (i = 1; i <= np; i++) {
		printf "%-15s", P[i]
		for (j = 1; j <= na; j++) { s = spread("t" SUBSEP P[i] SUBSEP A[j]); printf " %7s", s == "" ? "-" : sprintf("%.3f", s) }
		printf "\n"
	}
}' "$RES"
	total=$(grep -vc '^#' "$RES")
	echo
	if [ "$failed" -gt 0 ]; then
		echo "checks: $failed of $total runs FAILED (the reasons are on stderr)"
		exit 1
	fi
	echo "checks: $total of $total runs correct"
	exit 0
}

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/pool_lock.sh
. "$HERE/../tests/pool_lock.sh"
ROUNDS=3
THREADS=2
ONLY_PROGS=""
ONLY_ALLOCS=""
B=$HERE/../build
OUT=""
FROM=""
POOL_WAIT=""
LIST=""
DIR=""
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) help; exit 0 ;;
	-r | --rounds) [ $# -ge 2 ] || usage "$1 needs a number"; ROUNDS=$2; shift ;;
	--rounds=*) ROUNDS=${1#*=} ;;
	-t | --threads) [ $# -ge 2 ] || usage "$1 needs a number"; THREADS=$2; shift ;;
	--threads=*) THREADS=${1#*=} ;;
	-p | --programs) [ $# -ge 2 ] || usage "$1 needs a list"; ONLY_PROGS=$2; shift ;;
	--programs=*) ONLY_PROGS=${1#*=} ;;
	-a | --allocators) [ $# -ge 2 ] || usage "$1 needs a list"; ONLY_ALLOCS=$2; shift ;;
	--allocators=*) ONLY_ALLOCS=${1#*=} ;;
	-b | --build) [ $# -ge 2 ] || usage "$1 needs a directory"; B=$2; shift ;;
	--build=*) B=${1#*=} ;;
	-o | --out) [ $# -ge 2 ] || usage "$1 needs a file"; OUT=$2; shift ;;
	--out=*) OUT=${1#*=} ;;
	-w | --pool-wait) [ $# -ge 2 ] || usage "$1 needs seconds"; POOL_WAIT=$2; shift ;;
	--pool-wait=*) POOL_WAIT=${1#*=} ;;
	-f | --from) [ $# -ge 2 ] || usage "$1 needs a file"; FROM=$2; shift ;;
	--from=*) FROM=${1#*=} ;;
	-l | --list) LIST=1 ;;
	--) shift; [ $# -eq 1 ] || usage; DIR=$1 ;;
	-*) usage "unknown option $1" ;;
	*) [ -z "$DIR" ] || usage "one DIR only"; DIR=$1 ;;
	esac
	shift
done
if [ -n "$FROM" ]; then
	[ -r "$FROM" ] || usage "cannot read $FROM"
	RES=$FROM
	sed -n 's/^# //p' "$FROM"
	ALLOCS=$(awk -v all="glibc sp sp2m mi je-thp tc" '!/^#/ { has[$3] = 1 } END { n = split(all, a, " ");
		for (i = 1; i <= n; i++) if (has[a[i]]) printf "%s ", a[i] }' "$FROM")
	mapfile -t NAMES < <(awk '!/^#/ && !seen[$2]++ { print $2 }' "$FROM")
	failed=$(awk '!/^#/ && $6 != "ok"' "$FROM" | wc -l)
	report
fi
[ -n "$DIR" ] || usage "no DIR"
case $ROUNDS in '' | *[!0-9]* | 0) usage "--rounds wants a whole number from 1" ;; esac
case $THREADS in '' | *[!0-9]* | 0) usage "--threads wants a whole number from 1" ;; esac
case $POOL_WAIT in *[!0-9]*) usage "--pool-wait wants whole seconds" ;; esac
[ -d "$DIR" ] || usage "no directory $DIR"
DIR=$(cd "$DIR" && pwd)
BIN=$DIR/out/bench
[ -x "$BIN/cfrac" ] || [ -x "$BIN/larson" ] || {
	echo "mbench.sh: $BIN has no programs: build them first (cmake -B out/bench -S bench && cmake --build out/bench in $DIR)" >&2
	exit 2
}
TIME=/usr/bin/time
"$TIME" -f %e true >/dev/null 2>&1 || { echo "mbench.sh: GNU time is missing ($TIME; apt-get install time)" >&2; exit 2; }

unset LD_PRELOAD MALLOC_CONF
for v in $(compgen -e | grep '^SUPERPAGE_'); do unset "$v"; done

# ---------- allocators ----------

find_lib() { # first existing file among the arguments
	local f
	for f in "$@"; do [ -f "$f" ] && { echo "$f"; return 0; }; done
	return 1
}
LIBDIRS="/usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib"
libs() { local d; for d in $LIBDIRS; do printf '%s/%s ' "$d" "$1"; done; }
SP=$B/superpage
MI=$(find_lib $(libs libmimalloc.so.2) $(libs libmimalloc.so)) || MI=""
JE=$(find_lib $(libs libjemalloc.so.2) $(libs libjemalloc.so)) || JE=""
TC=$(find_lib $(libs libtcmalloc_minimal.so.4) $(libs libtcmalloc_minimal.so)) || TC=""

ALL_ALLOCS="glibc sp sp2m mi je-thp tc"
ALLOCS=""
why_not() { # the reason allocator $1 cannot run here, or nothing
	case $1 in
	sp | sp2m) [ -x "$SP" ] && [ -f "$B/libsuperpage-run.so" ] || echo "no $SP (make)" ;;
	mi) [ -n "$MI" ] || echo "no libmimalloc.so.2 (apt-get install libmimalloc2.0)" ;;
	je-thp) [ -n "$JE" ] || echo "no libjemalloc.so.2 (apt-get install libjemalloc2)" ;;
	tc) [ -n "$TC" ] || echo "no libtcmalloc_minimal.so.4 (apt-get install libgoogle-perftools4)" ;;
	esac
}
want_allocs=${ONLY_ALLOCS//,/ }
[ -n "$want_allocs" ] || want_allocs=$ALL_ALLOCS
for a in $want_allocs; do
	case " $ALL_ALLOCS " in *" $a "*) ;; *) usage "no allocator '$a' (glibc, sp, sp2m, mi, je-thp, tc)" ;; esac
	r=$(why_not "$a")
	if [ -n "$r" ]; then
		echo "mbench.sh: leaving out $a: $r" >&2
		[ -n "$ONLY_ALLOCS" ] && exit 2
	else
		ALLOCS="$ALLOCS $a"
	fi
done
ALLOCS=${ALLOCS# }
[ -n "$ALLOCS" ] || { echo "mbench.sh: no allocator to run" >&2; exit 2; }

# The command prefix of allocator $1, in the array PRE.
set_prefix() {
	case $1 in
	glibc) PRE=(env) ;;
	sp) PRE=("$SP" run --) ;;
	sp2m) PRE=("$SP" run --backing 2m --) ;;
	mi) PRE=(env "LD_PRELOAD=$MI") ;;
	je-thp) PRE=(env "LD_PRELOAD=$JE" MALLOC_CONF=thp:always) ;;
	tc) PRE=(env "LD_PRELOAD=$TC") ;;
	esac
}

# ---------- programs (bench.sh's names and arguments) ----------

T=$THREADS
EXT=$DIR/extern
REDIS=""
for d in "$EXT"/redis-*/src; do [ -x "$d/redis-server" ] && REDIS=$d; done
# name | command (run in a scratch directory; @BIN@ and @DIR@ are replaced) | check
# The check: "exit" (status 0 only), "same" (stdout as under glibc, byte for byte),
# or an extended regular expression stdout must match.
PROGRAMS="
cfrac|@BIN@/cfrac 17545186520507317056371138836327483792789528|same
espresso|@BIN@/espresso @DIR@/bench/espresso/largest.espresso|same
barnes|@BIN@/barnes <@DIR@/bench/barnes/input|^COMPUTETIME
larsonN-sized|@BIN@/larson-sized 5 8 1000 5000 100 4141 $T|relative time: [0-9.]+s
mstressN|@BIN@/mstress $T 50 25|exit
rptestN|@BIN@/rptest $T 0 1 2 500 1000 100 8 16000|[0-9]+ memory ops
gs|gs -dBATCH -dNODISPLAY @DIR@/extern/large.pdf|^Page 77
lua|make -C @DIR@/extern/lua -j $T|exit
redis|redis|requests per second
alloc-test1|@BIN@/alloc-test 1|made 100000000 alloc/dealloc operations
alloc-testN|@BIN@/alloc-test $T|made [0-9]+ alloc/dealloc operations
xmalloc-testN|@BIN@/xmalloc-test -w $T -t 5 -s 64|^rtime: [0-9.]+
cache-scratch1|@BIN@/cache-scratch 1 1000 1 2000000 $T|exit
cache-scratchN|@BIN@/cache-scratch $T 1000 1 2000000 $T|exit
glibc-simple|@BIN@/glibc-simple|exit
glibc-thread|@BIN@/glibc-thread $T|^[0-9]+ iterations
larsonN|@BIN@/larson 5 8 1000 5000 100 4141 $T|relative time: [0-9.]+s
malloc-large|@BIN@/malloc-large|exit
mleak10|@BIN@/mleak 5|exit
mleak100|@BIN@/mleak 50|exit
rbstress1|ruby @DIR@/bench/rbstress/stress_mem.rb 1|^duration: [0-9.]+
rbstressN|ruby @DIR@/bench/rbstress/stress_mem.rb $T|^duration: [0-9.]+
cache-thrash1|@BIN@/cache-thrash 1 1000 1 2000000 $T|exit
cache-thrashN|@BIN@/cache-thrash $T 1000 1 2000000 $T|exit
"

prog_missing() { # name command: why it cannot run here, or nothing
	case $1 in
	gs) command -v gs >/dev/null || { echo "no gs (apt-get install ghostscript)"; return; }
	    [ -f "$EXT/large.pdf" ] || echo "no $EXT/large.pdf" ;;
	lua) [ -f "$EXT/lua/makefile" ] || echo "no $EXT/lua (lua 5.4 sources)" ;;
	redis) [ -n "$REDIS" ] && [ -x "$REDIS/redis-benchmark" ] && [ -x "$REDIS/redis-cli" ] ||
	       echo "no $EXT/redis-*/src/redis-server, redis-cli, redis-benchmark" ;;
	rbstress*) command -v ruby >/dev/null || { echo "no ruby"; return; }
	           [ -f "$DIR/bench/rbstress/stress_mem.rb" ] || echo "no $DIR/bench/rbstress/stress_mem.rb" ;;
	*) local exe=${2%% *}; exe=${exe//@BIN@/$BIN}
	   [ -x "$exe" ] || echo "no $exe" ;;
	esac
}

NAMES=() CMDS=() CHECKS=()
declare -A seen=()
while IFS='|' read -r name cmd check; do
	[ -n "$name" ] || continue
	seen[$name]=1
	if [ -n "$ONLY_PROGS" ]; then
		case ",$ONLY_PROGS," in *",$name,"*) ;; *) continue ;; esac
	fi
	r=$(prog_missing "$name" "$cmd")
	if [ -n "$r" ]; then
		echo "mbench.sh: leaving out $name: $r" >&2
		continue
	fi
	cmd=${cmd//@BIN@/$BIN}
	NAMES+=("$name") CMDS+=("${cmd//@DIR@/$DIR}") CHECKS+=("$check")
done <<<"$PROGRAMS"
for p in ${ONLY_PROGS//,/ }; do
	[ -n "${seen[$p]:-}" ] || usage "no program '$p' (--list names them)"
done

if [ -n "$LIST" ]; then
	echo "allocators: $ALLOCS"
	for i in "${!NAMES[@]}"; do printf '%-15s %s\n' "${NAMES[$i]}" "${CMDS[$i]}"; done
	exit 0
fi
[ ${#NAMES[@]} -gt 0 ] || { echo "mbench.sh: no program to run" >&2; exit 2; }

TMP=$(mktemp -d /tmp/superpage-mbench.XXXXXX) || exit 1
RES=$TMP/results
: >"$RES"

# ---------- the 2 MiB pool and its lock, for sp2m runs ----------

POOL_DIR=/sys/kernel/mm/hugepages/hugepages-2048kB
pool_added=0
lock_fd=""
sampler=""

pool_read() { # total free resv
	local t f r
	t=$(cat "$POOL_DIR/nr_hugepages" 2>/dev/null) || t=0
	f=$(cat "$POOL_DIR/free_hugepages" 2>/dev/null) || f=0
	r=$(cat "$POOL_DIR/resv_hugepages" 2>/dev/null) || r=0
	echo "$t $f $r"
}

# Takes back the pages we added (not an absolute write: a change by someone else
# meanwhile stays).
pool_restore() {
	[ "$pool_added" -gt 0 ] || return 0
	local t f r want now
	read -r t f r < <(pool_read)
	want=$((t - pool_added))
	[ $want -ge 0 ] || want=0
	pool_added=0
	echo "$want" >"$POOL_DIR/nr_hugepages" 2>/dev/null
	now=$(cat "$POOL_DIR/nr_hugepages" 2>/dev/null)
	[ "$now" = "$want" ] || echo "mbench.sh: could not put the 2M pool back to $want (now ${now:-unknown})" >&2
}

# Takes the lock (once: it is held until the script ends, as `superpage bench
# --setup-pools` holds it), then raises the pool to hold that many free pages.
pool_take() { # pages
	local need=$1 t f r want got
	if [ "${SP_POOL_LOCKED:-}" != 1 ] && [ -z "$lock_fd" ] && ! pool_lock_held_above; then
		: 2>/dev/null >>/tmp/sp-pool.lock
		exec {lock_fd}</tmp/sp-pool.lock
		if ! flock -n "$lock_fd"; then
			echo "mbench.sh: waiting ${POOL_WAIT:+at most $POOL_WAIT s }for /tmp/sp-pool.lock (another pool user runs)" >&2
			if ! flock ${POOL_WAIT:+-w "$POOL_WAIT"} "$lock_fd"; then
				exec {lock_fd}<&-
				lock_fd=""
				return 1
			fi
		fi
	fi
	[ -d "$POOL_DIR" ] || return 0
	read -r t f r < <(pool_read)
	[ $((f - r)) -lt "$need" ] || return 0
	if [ "$(id -u)" != 0 ]; then
		echo "mbench.sh: the 2M pool has $((f - r)) free pages, sp2m may want $need (root raises it)" >&2
		return 0
	fi
	want=$((t + need - (f - r)))
	echo "$want" >"$POOL_DIR/nr_hugepages" 2>/dev/null
	got=$(cat "$POOL_DIR/nr_hugepages" 2>/dev/null) || got=$t
	[ "$got" -gt "$t" ] && pool_added=$((pool_added + got - t))
	[ "$got" -ge "$want" ] || echo "mbench.sh: the 2M pool reached $got of $want pages" >&2
}

pool_give() {
	pool_restore
	if [ -n "$lock_fd" ]; then
		exec {lock_fd}<&-
		lock_fd=""
	fi
}

# Writes the largest count of the pool's pages in use (total - free + reserved) to
# $1, every 20 ms, until killed. No process is started per sample.
pool_sampler() {
	local out=$1 t f r u max=0 fd
	exec {fd}<> <(:)
	while :; do
		read -r t <"$POOL_DIR/nr_hugepages"
		read -r f <"$POOL_DIR/free_hugepages"
		read -r r <"$POOL_DIR/resv_hugepages"
		u=$((${t:-0} - ${f:-$t} + ${r:-0}))
		if [ $u -gt $max ]; then
			max=$u
			echo "$max" >"$out"
		fi
		read -r -t 0.02 -u "$fd" _
	done
}

redis_pid=""
on_exit() {
	[ -n "$sampler" ] && kill "$sampler" 2>/dev/null
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null
	pool_give
	rm -rf "$TMP"
}
trap on_exit EXIT
trap 'echo "mbench.sh: interrupted" >&2; exit 130' INT
trap 'echo "mbench.sh: terminated" >&2; exit 143' TERM

# ---------- one run ----------

# Runs redis-server under the allocator (PRE) on a port of its own, redis-benchmark
# against it (bench.sh's arguments), then shuts the server down.
run_redis() { # tfile out err
	local port=$((20000 + $$ % 20000)) i
	"$TIME" -o "$1" -f '%e %M %x' "${PRE[@]}" "$REDIS/redis-server" --port "$port" \
		--save '' --appendonly no --dir "$TMP/work" >"$3.server" 2>&1 &
	redis_pid=$!
	for i in $(seq 100); do
		"$REDIS/redis-cli" -p "$port" ping 2>/dev/null | grep -q PONG && break
		sleep 0.1
	done
	"$REDIS/redis-cli" -p "$port" flushall >/dev/null 2>&1
	"$REDIS/redis-benchmark" -p "$port" -r 1000000 -n 100000 -q -P 16 lpush a 1 2 3 4 5 lrange a 1 5 \
		2>>"$3" | tr '\r' '\n' | grep 'requests per second' >"$2"
	"$REDIS/redis-cli" -p "$port" shutdown nosave >/dev/null 2>&1
	wait "$redis_pid"
	redis_pid=""
	cat "$3.server" >>"$3"
}

# The time a program reports itself, as bench.sh takes it; empty for elapsed time.
own_time() { # name out
	case $1 in
	larson*) sed -n 's/.*relative time: \([0-9.]*\)s.*/\1/p' "$2" | head -1 ;;
	xmalloc*) sed -n 's/^rtime: \([0-9.]*\).*/\1/p' "$2" | head -1 ;;
	rptest*) sed -n 's/.*\.\.\.*\([0-9][0-9]*\) memory ops.*/\1/p' "$2" | head -1 |
	         awk '$1 > 0 { printf "%.4f", 2000000 / $1 }' ;;
	glibc-thread) sed -n 's/^\([0-9][0-9]*\) iterations.*/\1/p' "$2" | head -1 |
	              awk '$1 > 0 { printf "%.4f", 1000000000 / $1 }' ;;
	redis) tail -1 "$2" | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' |
	       awk '$1 > 0 { printf "%.4f", 2000000 / $1 }' ;;
	esac
}

declare -A glibc_peak=()
failed=0
no_sp2m=""

run_one() { # round index allocator
	local round=$1 i=$2 a=$3 name=${NAMES[$2]} cmd=${CMDS[$2]} check=${CHECKS[$2]}
	local f=$TMP/run.$name.$a.$round status secs kib ok=ok why="" hugepeak=0 base=0 need t fr r
	set_prefix "$a"
	rm -rf "$TMP/work" && mkdir "$TMP/work"
	[ "$name" = lua ] && make -C "$EXT/lua" clean >/dev/null 2>&1
	if [ "$a" = sp2m ]; then
		local peak=${glibc_peak[$name]:-}
		[ -n "$peak" ] || peak=$(awk '$4 > m { m = $4 } END { print m + 0 }' "$RES")
		need=$(((peak * 1024 + peak * 128 + 2097151) / 2097152 + 64))
		if ! pool_take "$need"; then
			echo "mbench.sh: /tmp/sp-pool.lock stayed taken: sp2m is left out from here on" >&2
			no_sp2m=1
			return 0
		fi
		if [ -d "$POOL_DIR" ]; then
			read -r t fr r < <(pool_read)
			base=$((t - fr + r))
			echo "$base" >"$f.pool"
			pool_sampler "$f.pool" &
			sampler=$!
		fi
	fi
	if [ "$name" = redis ]; then
		(cd "$TMP/work" && run_redis "$f.time" "$f.out" "$f.err")
	else
		(cd "$TMP/work" && eval "\"\$TIME\" -o \"\$f.time\" -f '%e %M %x' \"\${PRE[@]}\" $cmd" \
			>"$f.out" 2>"$f.err")
	fi
	if [ -n "$sampler" ]; then
		kill "$sampler" 2>/dev/null
		wait "$sampler" 2>/dev/null
		sampler=""
		hugepeak=$(($(cat "$f.pool") - base))
	fi
	read -r secs kib status < <(tail -1 "$f.time" 2>/dev/null)
	case $status in
	0) ;;
	'') ok=FAIL why="no time from $TIME" ;;
	*) ok=FAIL why="exit status $status" ;;
	esac
	if [ "$ok" = ok ]; then
		case $check in
		exit) ;;
		same) [ "$a" = glibc ] && cp "$f.out" "$TMP/ref.$name" ;;
		*) grep -Eq -- "$check" "$f.out" || { ok=FAIL why="no line matching /$check/ in its output"; } ;;
		esac
	fi
	local own
	case $name in
	larson* | xmalloc* | rptest* | glibc-thread | redis)
		own=$(own_time "$name" "$f.out")
		if [ -n "$own" ]; then
			secs=$own
		elif [ "$ok" = ok ]; then
			ok=FAIL why="no time in its output"
		fi ;;
	esac
	[ "$hugepeak" -gt 0 ] && kib=$((${kib:-0} + hugepeak * 2048))
	[ "$a" = glibc ] && [ "$ok" = ok ] && glibc_peak[$name]=$kib
	echo "$round $name $a ${secs:-0} ${kib:-0} $ok" >>"$RES"
	[ -n "$OUT" ] && echo "$round $name $a ${secs:-0} ${kib:-0} $ok" >>"$OUT"
	if [ "$ok" != ok ]; then
		failed=$((failed + 1))
		echo "mbench.sh: $name under $a (round $round) failed: $why; its stderr:" >&2
		tail -5 "$f.err" | sed 's/^/    /' >&2
	fi
	printf '  %-15s %-7s %8.3f s %9s KiB %s\n' "$name" "$a" "${secs:-0}" "${kib:-0}" "$ok" >&2
	[ "$check" = same ] || rm -f "$f.out"
	rm -f "$f.err" "$f.err.server" "$f.time" "$f.pool"
}

# ---------- the rounds ----------

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
mem=$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)
ver() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null || echo '?'; }
HEAD="mimalloc-bench ($DIR), $THREADS threads, $ROUNDS rounds, medians; started $(date -u '+%Y-%m-%d %H:%M UTC')
machine: $(uname -n), ${cpu:-unknown CPU}, $(nproc) CPUs, $mem, Linux $(uname -r); load average at start $(cut -d' ' -f1-3 /proc/loadavg)
allocators: $ALLOCS$([ -n "$MI" ] && echo "; mi $(ver libmimalloc2.0)")$([ -n "$JE" ] && echo ", je $(ver libjemalloc2)")$([ -n "$TC" ] && echo ", tc $(ver libgoogle-perftools4)")"
[ -n "$OUT" ] && printf '# %s\n' "${HEAD//$'\n'/$'\n'# }" >>"$OUT"
read -r -a order <<<"$ALLOCS"
n=${#order[@]}
echo "mbench.sh: ${#NAMES[@]} programs x ${n} allocators x $ROUNDS rounds, $THREADS threads" >&2
for ((round = 1; round <= ROUNDS; round++)); do
	echo "round $round of $ROUNDS" >&2
	for i in "${!NAMES[@]}"; do
		for ((k = 0; k < n; k++)); do
			a=${order[$(((k + round - 1) % n))]}
			[ "$a" = sp2m ] && [ -n "$no_sp2m" ] && continue
			run_one "$round" "$i" "$a"
		done
	done
done

# Outputs that must be glibc's, byte for byte.
for i in "${!NAMES[@]}"; do
	name=${NAMES[$i]}
	[ "${CHECKS[$i]}" = same ] || continue
	for f in "$TMP"/run."$name".*.out; do
		[ -f "$f" ] || continue
		if [ ! -f "$TMP/ref.$name" ]; then
			echo "mbench.sh: $name: no glibc output to compare with (glibc not run or failed)" >&2
			break
		fi
		cmp -s "$f" "$TMP/ref.$name" && continue
		x=${f##*/run."$name".}
		x=${x%.out}
		a=${x%.*} round=${x##*.}
		echo "mbench.sh: $name under $a (round $round) failed: its output differs from glibc's" >&2
		awk -v n="$name" -v a="$a" -v r="$round" '$1 == r && $2 == n && $3 == a { $6 = "FAIL" } { print }' \
			"$RES" >"$RES.new" && mv "$RES.new" "$RES"
		failed=$((failed + 1))
	done
done

end="ended $(date -u '+%Y-%m-%d %H:%M UTC')"
[ -n "$OUT" ] && echo "# $end" >>"$OUT"
echo "$HEAD"
echo "$end"
report
