#!/usr/bin/env bash
# promote.sh - superpage promote measured: a random-update program (gups_live, 2 GiB of
# malloc'd memory) started plain and promoted in the middle of its run, against the same
# program under `superpage run --backing thp` from its start, and plain and never
# promoted; the variants alternate round by round. Reports medians; asserts nothing.
#
# usage: bash bench/promote.sh [BUILD_DIR [ROUNDS [SIZE [SECONDS [AT]]]]]
#   defaults: build 3 2G 20 4: each run updates for 20 s; the promoted one is promoted
#   4 s after its updates began; "during" is its rate while promote ran, "late" the rate
#   from 12 s on (for the promoted one, from 1 s after promote ended if that is later).
# Needs root (CAP_SYS_NICE) for promote. Changes no sysfs value.
set -u
B=${1:-build}
R=${2:-3}
SIZE=${3:-2G}
SECS=${4:-20}
AT=${5:-4}
LATE=$((AT + 8))
SP=$B/superpage
G=$B/tests/runtime/common/gups_live
# the runs' own output is kept there, for a look afterwards
out=$B/bench/promote
rm -rf "$out"
mkdir -p "$out"
[ -x "$SP" ] && [ -x "$G" ] || { echo "promote.sh: build $SP and $G first (make tests)" >&2; exit 2; }

# Median of the mups of lines with lo <= t < hi.
rate() { # file lo hi
	awk -v lo="$1" -v hi="$2" -F'[= ]' '/^t=/ && $2 >= lo && $2 < hi {print $4}' "$3" |
		sort -n | awk '{v[NR]=$1} END {if (NR) print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2); else print "nan"}'
}
# Share of the process's resident memory on huge pages, from smaps_rollup.
huge_share() { # pid
	awk '/^Rss:/ {r=$2} /^AnonHugePages:/ {h=$2} END {if (r) printf "%.4f", h/r; else print "nan"}' \
		"/proc/$1/smaps_rollup" 2>/dev/null
}
t_now() { date +%s.%N; }
wait_line() { # file pattern
	for _ in $(seq 600); do grep -q "$2" "$1" && return 0; sleep 0.05; done
	return 1
}
since() { # file: seconds of updates so far
	tail -n 1 "$1" | sed -n 's/^t=\([0-9.]*\) .*/\1/p'
}

one() { # variant round
	local v=$1 n=$2 f=$out/$1.$2 pid t0 t1 cov
	case $v in
	thp) "$SP" run --backing thp -- "$G" "$SIZE" "$SECS" >"$f" 2>&1 & ;;
	*) "$G" "$SIZE" "$SECS" >"$f" 2>&1 & ;;
	esac
	pid=$!
	wait_line "$f" '^ready' || { echo "promote.sh: $v did not start: $(cat "$f")" >&2; return; }
	# AT seconds into the updates: promote (or, for the others, read their share).
	until [ -n "$(since "$f")" ] && awk -v a="$(since "$f")" -v b="$AT" 'BEGIN {exit !(a >= b)}'; do
		sleep 0.05
	done
	if [ "$v" = promote ]; then
		t0=$(t_now)
		"$SP" promote --json "$pid" >"$f.json" 2>"$f.err"
		t1=$(t_now)
		cov=$(huge_share "$pid")
		echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b-a}') $cov" >"$f.promote"
	fi
	sleep 1
	huge_share "$pid" >"$f.share"
	wait "$pid"
	grep -q '^intact' "$f" || echo "promote.sh: $v round $n: $(tail -n 1 "$f")" >&2
}

variants=(promote thp plain)
for n in $(seq "$R"); do
	for k in 0 1 2; do
		v=${variants[$(( (k + n - 1) % 3 ))]}
		echo "round $n: $v" >&2
		one "$v" "$n"
	done
done

echo "gups_live $SIZE, $SECS s of updates, promoted at $AT s; rates are medians of 0.25 s"
echo "intervals (MUP/s), before: t < $AT s, late: t >= $LATE s; $R rounds, variants alternating"
echo "$(uname -r), THP $(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled)," \
	"$(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
printf '%-8s %5s %8s %8s %8s %7s %10s %10s %10s\n' variant round before during late huge promote_s promoted% ranges
for n in $(seq "$R"); do
	for v in "${variants[@]}"; do
		f=$out/$v.$n
		[ -f "$f" ] || continue
		p='-' pc='-' rg='-' during='-' late=$LATE
		if [ -f "$f.promote" ]; then
			read -r p pc <"$f.promote"
			rg=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%d/%d" % (d["collapsed"], d["candidates"]))' "$f.json" 2>/dev/null || echo '?')
			during=$(rate "$AT" "$(awk -v a="$AT" -v p="$p" 'BEGIN {print a + p}')" "$f")
			late=$(awk -v a="$AT" -v p="$p" -v l="$LATE" 'BEGIN {x = a + p + 1; print (x > l ? x : l)}')
		fi
		printf '%-8s %5s %8s %8s %8s %7s %10s %10s %10s\n' "$v" "$n" "$(rate 0.5 "$AT" "$f")" \
			"$during" "$(rate "$late" 1e9 "$f")" "$(cat "$f.share")" "$p" "$pc" "$rg"
	done
done | tee "$out/table"
echo
for v in "${variants[@]}"; do
	awk -v v="$v" '$1 == v {print $5}' "$out/table" | sort -n |
		awk -v v="$v" '{x[NR]=$1} END {if (NR) printf "median late rate %-8s %8.2f MUP/s\n", v, (NR%2 ? x[(NR+1)/2] : (x[NR/2]+x[NR/2+1])/2)}'
done
awk '$1 == "promote" {print $7}' "$out/table" | sort -n |
	awk '{x[NR]=$1} END {if (NR) printf "median promote wall time %.3f s\n", (NR%2 ? x[(NR+1)/2] : (x[NR/2]+x[NR/2+1])/2)}'
# the late rate of promote over thp, round by round, and their median
for n in $(seq "$R"); do
	a=$(awk -v n="$n" '$1 == "promote" && $2 == n {print $5}' "$out/table")
	b=$(awk -v n="$n" '$1 == "thp" && $2 == n {print $5}' "$out/table")
	[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN {printf "%.4f\n", a/b}'
done | sort -n | awk '{x[NR]=$1} END {if (NR) printf "median ratio promote/thp (late) %.3f\n", (NR%2 ? x[(NR+1)/2] : (x[NR/2]+x[NR/2+1])/2)}'
