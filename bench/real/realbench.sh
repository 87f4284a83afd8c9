#!/usr/bin/env bash
# realbench.sh - real programs' own speed: each workload of bench/real/work/ run plain
# and under superpage's backings by `superpage bench -- CMD` (alternating rounds, medians,
# verdicts with a 95% interval), its own throughput figure taken with --metric; the
# results become the generated section of doc/BENCHMARKS.md between the markers
# <!-- realbench:begin --> and <!-- realbench:end --> (bench/real/table.py).
#
# usage: bench/real/realbench.sh [OPTIONS] [BUILD_DIR]
#   --full           the full set too (default: the quick set)
#   --only W,...     these workloads only
#   --rounds N       rounds for each workload (default 5)
#   --peers          also bench's --peers (glibc hugetlb, mimalloc, jemalloc, tcmalloc)
#   --allow-sysfs    with --peers, also THP 'always' (bench's --allow-sysfs: root)
#   --backing B,...  the variants beside plain (default: auto,2m)
#   --work DIR       where the workloads are (default: bench/real/work)
#   --out DIR        results, logs and bench's JSON (default: BUILD_DIR/realbench)
#   --data DIR       datasets and servers' files (default: OUT/data)
#   --doc FILE       the file whose realbench section is replaced (default: doc/BENCHMARKS.md)
#   --no-pools       no --setup-pools (not root, or the pools are set by hand)
#   --note TEXT      a line for the table (the machine's state, say)
# A workload is a bash file of its own (see bench/real/work/README); the results, logs
# and bench's JSON are under OUT (a workload's replaced when it runs again, the others'
# kept). Exit status: 0; 1 if a workload's run
# or its check failed; 2 for bad options.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
full=0 only='' rounds=5 peers=0 backing=auto,2m work=$here/work data='' doc=$top/doc/BENCHMARKS.md
pools=1 note='' out='' sysfs=0
usage() { sed -n 's/^# usage: /usage: /p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--full) full=1 ;;
	--only) only=${2:?}; shift ;;
	--rounds) rounds=${2:?}; shift ;;
	--peers) peers=1 ;;
	--allow-sysfs) sysfs=1 ;;
	--backing) backing=${2:?}; shift ;;
	--work) work=${2:?}; shift ;;
	--data) data=${2:?}; shift ;;
	--out) out=${2:?}; shift ;;
	--doc) doc=${2:?}; shift ;;
	--no-pools) pools=0 ;;
	--note) note=${2:?}; shift ;;
	-h | --help) sed -n '2,25s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "realbench: no option $1" >&2; usage ;;
	*) break ;;
	esac
	shift
done
B=${1:-$top/build}
case $rounds in '' | *[!0-9]*) echo "realbench: --rounds takes a number" >&2; exit 2 ;; esac
cli=$B/superpage
[ -x "$cli" ] || { echo "realbench: $cli is missing (make builds it)" >&2; exit 2; }
[ -d "$work" ] || { echo "realbench: no workloads in $work" >&2; exit 2; }
out=${out:-$B/realbench}
data=${data:-$out/data}
mkdir -p "$out" "$data"
out=$(cd "$out" && pwd) data=$(cd "$data" && pwd)
# shellcheck source=bench/real/lib.sh
. "$here/lib.sh"

# One pool user at a time on the machine: with --setup-pools the lock is taken once for
# the whole run (as tests/run.sh does), so no other pool user comes between two
# workloads; each bench is told it is held (SP_POOL_LOCKED=1).
# shellcheck source=tests/pool_lock.sh
. "$top/tests/pool_lock.sh"
if [ $pools = 1 ] && [ "${SP_POOL_LOCKED:-}" != 1 ] && pool_lock_held_above; then
	export SP_POOL_LOCKED=1
fi
if [ $pools = 1 ] && [ "${SP_POOL_LOCKED:-}" != 1 ] && command -v flock >/dev/null &&
	{ [ -e /tmp/sp-pool.lock ] || : 2>/dev/null >>/tmp/sp-pool.lock; } &&
	{ exec 9</tmp/sp-pool.lock; } 2>/dev/null; then
	if ! flock -n 9; then
		echo "realbench: waiting for /tmp/sp-pool.lock (another pool user runs)" >&2
		flock 9
	fi
	export SP_POOL_LOCKED=1
fi

names=()
for f in "$work"/*.sh; do
	[ -e "$f" ] || continue
	n=$(basename "$f" .sh)
	if [ -n "$only" ]; then
		case ",$only," in *",$n,"*) ;; *) continue ;; esac
	fi
	names+=("$n")
done
[ ${#names[@]} -gt 0 ] || { echo "realbench: no workload matched" >&2; exit 2; }
for n in "${names[@]}"; do
	rm -f "$out/$n.json" "$out/$n.txt" "$out/$n.log" "$out/$n.skip"
done

# where the workloads find their helpers, in their description and their prepare (a
# variable set only for the . would be gone by the time prepare runs)
# shellcheck disable=SC2034
real=$here
status=0 started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
# the command line, for the table (the note is in the table already)
made=bench/real/realbench.sh
[ $full = 1 ] && made="$made --full"
[ -n "$only" ] && made="$made --only $only"
[ "$rounds" != 5 ] && made="$made --rounds $rounds"
[ "$backing" != auto,2m ] && made="$made --backing $backing"
[ $peers = 1 ] && made="$made --peers"
[ $sysfs = 1 ] && made="$made --allow-sysfs"
[ $pools = 0 ] && made="$made --no-pools"
# The section of doc/BENCHMARKS.md, written again after each workload: a run cut short
# leaves the table of what it finished.
table() {
	local a=(--dir "$out" --doc "$doc" --started "$started" --rounds "$rounds" --command "$made")
	[ -n "$note" ] && a+=(--note "$note")
	[ $full = 1 ] && a+=(--full)
	[ $pools = 0 ] && a+=(--no-pools)
	a+=(--backing "$backing")
	python3 "$here/table.py" "${a[@]}" "${names[@]}"
}
for n in "${names[@]}"; do
	# the workload's description: set, metric, lower, needs (cmd:package ...), title
	unset -f prepare run
	set_=quick metric='' lower=0 needs='' title=$n ignore='' extras='' expect=''
	# shellcheck disable=SC1090
	. "$work/$n.sh"
	set_=${set:-quick}
	unset set
	if [ "$set_" = full ] && [ $full = 0 ] && [ -z "$only" ]; then
		echo "realbench: $n: full set only (FULL=1)" >&2
		printf 'full set only: make realbench FULL=1\n' >"$out/$n.skip"
		printf 'title\t%s\n' "$title" >"$out/$n.meta"
		table || status=1
		continue
	fi
	skip=''
	for pair in $needs; do
		rb_need "${pair%%:*}" "${pair#*:}" || { skip=$rb_skip; break; }
	done
	wd=$data/$n
	mkdir -p "$wd"
	if [ -z "$skip" ] && declare -F prepare >/dev/null; then
		echo "realbench: $n: preparing its data (plain, not timed)" >&2
		# prepare prints why on stdout and fails when the workload cannot run here
		if ! reason=$(prepare "$wd" 2>"$out/$n.prepare.log"); then
			skip=${reason:-its preparation failed (see $out/$n.prepare.log)}
		fi
	fi
	if [ -n "$skip" ]; then
		echo "realbench: $n: SKIP: $skip" >&2
		printf '%s\n' "$skip" >"$out/$n.skip"
		printf 'title\t%s\n' "$title" >"$out/$n.meta"
		table || status=1
		continue
	fi
	args=(bench --backing "$backing" --repeat "$rounds" --json "$out/$n.json" --output "$out/$n.log")
	[ -n "$metric" ] && args+=(--metric "$metric")
	[ "$lower" = 1 ] && args+=(--metric-lower)
	[ -n "$ignore" ] && args+=(--ignore "$ignore")
	[ $peers = 1 ] && args+=(--peers)
	[ $sysfs = 1 ] && args+=(--allow-sysfs)
	[ $pools = 1 ] && args+=(--setup-pools)
	echo "realbench: $n: superpage ${args[*]} -- bash $here/workload.sh $work/$n.sh $wd" >&2
	"$cli" "${args[@]}" -- bash "$here/workload.sh" "$work/$n.sh" "$wd" >"$out/$n.txt"
	rc=$?
	cat "$out/$n.txt"
	if [ $rc -ne 0 ]; then
		echo "realbench: $n: bench exit status $rc (see $out/$n.log)" >&2
		status=1
	fi
	{
		printf 'title\t%s\n' "$title"
		printf 'metric\t%s\n' "$metric"
		printf 'lower\t%s\n' "$lower"
		[ -n "$expect" ] && printf 'expect\t%s\n' "$expect"
		[ -n "$extras" ] && printf '%s\n' "$extras" | sed 's/^/extra\t/'
	} >"$out/$n.meta"
	table || status=1
done
exit $status
