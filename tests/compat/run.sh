#!/usr/bin/env bash
# run.sh - make compat: real programs with deterministic work, plain and under superpage
# run in each mode, each mode's output compared with the plain run's; prints a table
# program x mode and "N passed, N failed, N skipped". See --help.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
ALL_MODES=(auto thp 2m 1g 4k all always promote)
PROGRAMS=(python-heap python-tests cpython-fork perl ruby lua php node java redis postgres
	memcached mariadb sqlite3 git gcc-build clang-build xz zstd sort sbcl guile go-static)

usage() {
	cat <<EOF
usage: tests/compat/run.sh [OPTIONS] [BUILD_DIR]
       make compat [ONLY=prog,...] [MODES=mode,...]

Runs real programs with deterministic work, plain and under build/superpage run in
each mode, and compares each mode's output with the plain run's (a hash of it, or a
data check for servers). Missing programs are installed with apt-get when root, else
their rows are skipped. Modes:
  auto  superpage run            thp  --backing thp      2m  --backing 2m
  1g    --backing 1g             4k   --backing 4k       all --text=all --stacks --shm
        (1g: regions of 1 GiB or more on 1 GiB pages, the rest as 2m; SKIP without a
        free 1 GiB page)
  always  plain, with the kernel's THP set to "always" for the run (root; put back):
        what the kernel's own huge pages give and cost, to set the others against
  promote  plain, its processes promoted with superpage promote while it works (root):
        a command PROMOTE_AT (1) seconds into its run, a server under the load its
        work names (redis, postgres; the other servers name none yet: SKIP); THP
        "always" is set to madvise for the run (put back)
A cell reads STATUS COVERAGE RSS: STATUS is OK, DIFF (output differs from plain),
CRASH (a signal), HANG (timed out), ERROR (non-zero exit or a failed check), KNOWN (a
failure listed in tests/compat/known-failures); COVERAGE the share of the program's
private anonymous memory on huge pages (THP and hugetlb), read from smaps_rollup
every 0.2 s over its processes at the moment they held the most (peak.py), and for
promote that share before>after the promotion, of the command whose processes held the
most (promoted.py; SKIP if it ended before it was promoted); RSS the peak RSS
(/usr/bin/time %M, the largest of the program's commands) over plain's (hugetlb pages
are not in RSS, so 2m reads low). The run holds /tmp/sp-pool.lock and, as root, sets
up a 2 MiB hugetlb pool (POOL_PAGES, default 768 = 1.5 GiB) and, for 1g, sees that
the 1 GiB pool has POOL_1G_PAGES (default 2) free, both put back at exit.

options:
  --only LIST    comma-separated programs (default: all)
  --modes LIST   comma-separated modes (default: all of them)
  --list         print the programs and exit
  --keep         keep the temporary directory (its path is printed)
  -h, --help     this help
programs: ${PROGRAMS[*]}
EOF
}

only=${ONLY:-} modes=${MODES:-} keep=0 B=''
while [ $# -gt 0 ]; do
	case "$1" in
	--only) only=${2:?--only needs a list}; shift 2 ;;
	--only=*) only=${1#*=}; shift ;;
	--modes) modes=${2:?--modes needs a list}; shift 2 ;;
	--modes=*) modes=${1#*=}; shift ;;
	--list) printf '%s\n' "${PROGRAMS[@]}"; exit 0 ;;
	--keep) keep=1; shift ;;
	-h | --help) usage; exit 0 ;;
	-*) echo "compat: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) B=$1; shift ;;
	esac
done
B=${B:-$here/../../build}
B=$(cd "$B" && pwd)
SP=$B/superpage
RT_SO=$B/libsuperpage-run.so
for f in "$SP" "$RT_SO"; do
	[ -e "$f" ] || { echo "compat: $f missing: run make first" >&2; exit 2; }
done

IFS=, read -r -a progs <<<"${only:-$(IFS=,; echo "${PROGRAMS[*]}")}"
IFS=, read -r -a run_modes <<<"${modes:-$(IFS=,; echo "${ALL_MODES[*]}")}"
for p in "${progs[@]}"; do
	[ -f "$here/progs/$p.sh" ] || { echo "compat: no program $p (see --list)" >&2; exit 2; }
done
for m in "${run_modes[@]}"; do
	case " ${ALL_MODES[*]} " in *" $m "*) ;; *) echo "compat: no mode $m" >&2; exit 2 ;; esac
done

# One suite at a time on the machine's pools: the whole run holds the lock.
# shellcheck source=tests/pool_lock.sh
. "$(dirname "$0")/../pool_lock.sh"
if [ "${SP_COMPAT_LOCKED:-}" != 1 ] && [ "${SP_POOL_LOCKED:-}" != 1 ] && ! pool_lock_held_above; then
	again=(--only "$(IFS=,; echo "${progs[*]}")" --modes "$(IFS=,; echo "${run_modes[*]}")")
	[ "$keep" = 0 ] || again+=(--keep)
	echo "compat: taking /tmp/sp-pool.lock (held while another pool user runs)" >&2
	exec env SP_COMPAT_LOCKED=1 flock /tmp/sp-pool.lock bash "$0" "${again[@]}" "$B"
fi

# Debian's Python, not one a version manager puts first on PATH (and its shims).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

start=$(date +%s)
tmp=$(mktemp -d /tmp/sp-compat.XXXXXX)
chmod 711 "$tmp"  # servers run as their own users reach their directories below it
: >"$tmp/servers"
# shellcheck source=tests/compat/lib.sh
. "$here/lib.sh"

# ---------- the 2 MiB pool and the kernel's THP setting, put back at exit ----------
# shellcheck source=tests/sysfs.sh
. "$here/../sysfs.sh"
POOL_PAGES=${POOL_PAGES:-768}
nr=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
pool_note=''
thp=/sys/kernel/mm/transparent_hugepage/enabled
thp_why=''
thp_always() { # sets THP to always, or thp_why and fails (not in a subshell: it
	# remembers what to put back)
	thp_why=''
	if ! is_root; then
		thp_why="not root: cannot set $thp"
		return 1
	fi
	if ! sysfs_write "$thp" always || [ "$(sysfs_read "$thp")" != always ]; then
		thp_restore
		thp_why="cannot set $thp to always"
		return 1
	fi
}
# The promote mode's programs start on base pages, as this machine has them.
thp_not_always() {
	thp_why=''
	sysfs_thp_not_always && return 0
	thp_why="THP is always and $thp cannot be set to madvise"
	return 1
}
thp_restore() { sysfs_restore_one "$thp"; }
cleanup() {
	stop_servers
	sysfs_restore
	if [ "$keep" = 1 ]; then
		echo "compat: kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case " ${run_modes[*]} " in
*" 2m "* | *" 1g "* | *" all "*)
	if ! is_root; then
		pool_note="not root: no 2 MiB pool set up (2m falls back to THP)"
	elif [ ! -w "$nr" ]; then
		pool_note="$nr not writable: no pool set up"
	else
		was=$(cat "$nr")
		sysfs_write "$nr" $((was + POOL_PAGES)) || true
		got=$(($(cat "$nr") - was))
		pool_note="2 MiB pool: $got pages added for the suite (asked $POOL_PAGES), put back to $was at exit"
	fi
	;;
esac
# 1g: regions of 1 GiB or more on 1 GiB pages, smaller ones on the 2 MiB pool's.
POOL_1G_PAGES=${POOL_1G_PAGES:-2}
nr1g=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
free1g=${nr1g%/*}/free_hugepages
pool1g_note=''
case " ${run_modes[*]} " in
*" 1g "*)
	if [ ! -e "$nr1g" ]; then
		pool1g_note="no 1 GiB pages on this machine"
	elif [ "$(cat "$free1g")" -ge "$POOL_1G_PAGES" ]; then
		pool1g_note="1 GiB pool: $(cat "$free1g") pages free"
	elif ! is_root || [ ! -w "$nr1g" ]; then
		pool1g_note="1 GiB pool: $(cat "$free1g") pages free, not root to add more"
	else
		was=$(cat "$nr1g")
		sysfs_write "$nr1g" $((was + POOL_1G_PAGES - $(cat "$free1g"))) || true
		pool1g_note="1 GiB pool: $(($(cat "$nr1g") - was)) pages added for the suite, $(cat "$free1g") free, put back to $was at exit"
	fi
	;;
esac

# ---------- known failures ----------
declare -A known
while read -r kp km kwhy; do
	case "$kp" in '' | '#'*) continue ;; esac
	known["$kp $km"]=$kwhy
done <"$here/known-failures"
known_reason() { # prog mode
	if [ -n "${known["$1 $2"]+x}" ]; then
		echo "${known["$1 $2"]}"
	elif [ -n "${known["$1 *"]+x}" ]; then
		echo "${known["$1 *"]}"
	else
		return 1
	fi
}

mode_words() { # mode -> superpage run options
	case "$1" in
	auto) ;;
	thp) echo "--backing thp" ;;
	2m) echo "--backing 2m" ;;
	1g) echo "--backing 1g" ;;
	4k) echo "--backing 4k" ;;
	all) echo "--text=all --stacks --shm" ;;
	esac
}

# The peak RSS of a run in KiB: the largest of its commands'.
run_rss() { # rdir
	local f v max=0
	for f in "$1"/*.rss; do
		[ -e "$f" ] || continue
		v=$(tail -n 1 "$f")
		case "$v" in '' | *[!0-9]*) continue ;; esac
		[ "$v" -le "$max" ] || max=$v
	done
	echo "$max"
}

# Why a run failed, from its tagged commands' statuses and stderr, or its own note.
# Prints "STATUS reason".
run_verdict() { # rdir rc
	local d=$1 rc=$2 f tag st last
	for f in "$d"/*.rc; do
		[ -e "$f" ] || continue
		tag=$(basename "$f" .rc)
		while read -r st; do
			[ "$st" != 0 ] || continue
			last=$(grep -v '^Command ' "$d/$tag.err" 2>/dev/null | tail -n 2 | tr '\n' ' ' | cut -c 1-200)
			if [ "$st" = 124 ] || [ "$st" = 137 ]; then
				echo "HANG $tag: timed out (${LIMIT}s)${last:+; stderr: $last}"
			elif [ "$st" -gt 128 ]; then
				echo "CRASH $tag: SIG$(kill -l $((st - 128)) 2>/dev/null || echo $((st - 128)))${last:+; stderr: $last}"
			else
				echo "ERROR $tag: exit status $st${last:+; stderr: $last}"
			fi
			return
		done <"$f"
	done
	if [ -s "$d/why" ]; then
		# A check may name its status (a forked child's signal is a CRASH).
		case "$(head -n 1 "$d/why")" in
		CRASH\ * | HANG\ * | DIFF\ *) head -n 1 "$d/why" ;;
		*) echo "ERROR $(head -n 1 "$d/why")" ;;
		esac
	else
		echo "ERROR the workload failed (status $rc)"
	fi
}

# A promote run's coverage "BEFORE>AFTER%" (promoted.py), or, status 1, why there is
# none: what superpage promote said, or that nothing was promoted.
promote_cell() { # rdir
	local got why b a n
	got=$("$PY" "$here/promoted.py" "$1"/*.promote 2>/dev/null || echo -)
	if [ "$got" != - ]; then
		read -r b a n <<<"$got"
		echo "$b>$a%"
		[ "$n" -gt 0 ]
		return
	fi
	why=$(cat "$1"/*.promote.err 2>/dev/null | grep -v '^$' | tail -n 1 | cut -c 1-160)
	echo "nothing promoted: ${why:-no promotion point in its work}"
	return 1
}

# Runs one program in one mode; leaves $tmp/PROG/MODE with out (what plain's is
# compared with), stats.json, *.rss, *.peak, *.rc, *.err; prints nothing; returns its
# status.
run_one() { # prog mode
	local p=$1 mode=$2 id=${1//-/_}
	rdir=$tmp/$p/$mode
	mkdir -p "$rdir"
	chmod 1777 "$rdir"
	# Writable by every user: servers that drop root (memcached -u, mariadbd --user)
	# append their accounts to it at exit.
	install -m 666 /dev/null "$rdir/stats.json"
	SPRUN=()
	run_mode=$mode
	if [ "$mode" != plain ] && [ "$mode" != always ] && [ "$mode" != promote ]; then
		# shellcheck disable=SC2207
		SPRUN=("$SP" run $(mode_words "$mode") --stats="$rdir/stats.json" --)
	fi
	(
		set -euo pipefail
		trap 'stop_servers; wait' EXIT # (wait: the samplers of servers)
		trap 'exit 130' INT TERM
		cd "$rdir"
		"work_$id" "$mode" >"$rdir/out"
	)
}

for p in "${progs[@]}"; do
	# shellcheck source=/dev/null
	. "$here/progs/$p.sh"
done

declare -A cell
failures=() notes=()
npass=0 nfail=0 nskip=0 nknown=0
echo "compat: ${progs[*]} x plain ${run_modes[*]}; work in $tmp${pool_note:+; $pool_note}${pool1g_note:+; $pool1g_note}"
for p in "${progs[@]}"; do
	id=${p//-/_}
	pdir=$tmp/$p
	mkdir -p "$pdir"
	chmod 711 "$pdir"
	t0=$(date +%s)
	set +e
	( set -euo pipefail; cd "$pdir"; "prep_$id" ) >"$pdir/prep.log" 2>&1
	rc=$?
	set -e
	if [ "$rc" != 0 ]; then
		if [ -s "$pdir/skip" ]; then
			why=$(head -n 1 "$pdir/skip")
			cell["$p plain"]="SKIP"
			echo "SKIP $p: $why"
			notes+=("$p: skipped: $why")
			nskip=$((nskip + ${#run_modes[@]}))
		else
			cell["$p plain"]="ERROR"
			why="preparing failed (status $rc): $(tail -n 2 "$pdir/prep.log" | tr '\n' ' ' | cut -c 1-200)"
			echo "FAIL $p: $why"
			failures+=("$p prep: $why")
			nfail=$((nfail + 1))
		fi
		continue
	fi
	# Not in an if: set -e must stay on in the workload's subshell.
	set +e
	run_one "$p" plain
	rc=$?
	set -e
	if [ "$rc" = 3 ] && [ -s "$tmp/$p/plain/skip" ]; then
		why=$(head -n 1 "$tmp/$p/plain/skip")
		cell["$p plain"]="SKIP"
		echo "SKIP $p: $why"
		notes+=("$p: skipped: $why")
		nskip=$((nskip + ${#run_modes[@]}))
		continue
	fi
	if [ "$rc" != 0 ]; then
		v=$(run_verdict "$tmp/$p/plain" "$rc")
		cell["$p plain"]="ERROR"
		echo "FAIL $p plain: ${v#* }"
		failures+=("$p plain: ${v#* } (the plain run: a harness or machine problem)")
		nfail=$((nfail + 1))
		continue
	fi
	plain_rss=$(run_rss "$tmp/$p/plain")
	plain_sum=$(sha256sum <"$tmp/$p/plain/out" | cut -c 1-16)
	cell["$p plain"]="OK $((plain_rss / 1024))M $(($(date +%s) - t0))s"
	for m in "${run_modes[@]}"; do
		d=$tmp/$p/$m
		t1=$(date +%s)
		if [ "$m" = always ] && ! thp_always; then
			cell["$p $m"]="SKIP"
			echo "SKIP $p $m: $thp_why"
			nskip=$((nskip + 1))
			continue
		fi
		if [ "$m" = 1g ] && { [ ! -e "$free1g" ] || [ "$(cat "$free1g")" = 0 ]; }; then
			cell["$p $m"]="SKIP"
			echo "SKIP $p $m: no free 1 GiB page${pool1g_note:+ ($pool1g_note)}"
			nskip=$((nskip + 1))
			continue
		fi
		if [ "$m" = promote ] && ! is_root; then
			cell["$p $m"]="SKIP"
			echo "SKIP $p $m: not root: superpage promote needs CAP_SYS_NICE"
			nskip=$((nskip + 1))
			continue
		fi
		if [ "$m" = promote ] && ! thp_not_always; then
			cell["$p $m"]="SKIP"
			echo "SKIP $p $m: $thp_why"
			nskip=$((nskip + 1))
			continue
		fi
		set +e
		run_one "$p" "$m"
		rc=$?
		set -e
		case $m in always | promote) thp_restore ;; esac
		if [ "$rc" = 0 ]; then
			sum=$(sha256sum <"$d/out" | cut -c 1-16)
			if [ "$sum" = "$plain_sum" ]; then
				v="OK"
			else
				v="DIFF output $sum, plain $plain_sum: $(diff "$tmp/$p/plain/out" "$d/out" | grep '^[<>]' | head -n 2 | tr '\n' ' ' | cut -c 1-160 || true)"
			fi
		else
			v=$(run_verdict "$d" "$rc")
		fi
		st=${v%% *}
		cov=$("$PY" "$here/peak.py" --sum "$d"/*.peak 2>/dev/null || echo -)
		[ "$cov" = - ] || cov="$cov%"
		if [ "$m" = promote ] && [ "$st" = OK ]; then
			if ! promoted=$(promote_cell "$d"); then
				cell["$p $m"]="SKIP"
				echo "SKIP $p $m: $promoted"
				notes+=("$p $m: skipped: $promoted")
				nskip=$((nskip + 1))
				continue
			fi
			cov=$promoted
		fi
		rss=$(run_rss "$d")
		ratio=-
		[ "$plain_rss" -le 0 ] || ratio=$(awk -v a="$rss" -v b="$plain_rss" 'BEGIN { printf "%.2fx", a / b }')
		secs=$(($(date +%s) - t1))
		if kwhy=$(known_reason "$p" "$m"); then
			if [ "$st" = OK ]; then
				npass=$((npass + 1))
				notes+=("$p $m: now passes, remove from known-failures ($kwhy)")
				echo "PASS $p $m ($cov, ${secs}s): now passes, remove from known-failures"
			else
				nknown=$((nknown + 1))
				st=KNOWN
				notes+=("$p $m: KNOWN ($kwhy): ${v#* }")
				echo "KNOWN $p $m: ${v#* } [$kwhy]"
			fi
		elif [ "$st" = OK ]; then
			npass=$((npass + 1))
			echo "PASS $p $m ($cov, ${secs}s)"
		else
			nfail=$((nfail + 1))
			failures+=("$p $m: ${v#* }")
			echo "FAIL $p $m: $v"
		fi
		cell["$p $m"]="$st $cov $ratio"
	done
done

# ---------- the table ----------
echo
printf '%-12s %-14s' program plain
for m in "${run_modes[@]}"; do printf ' %-20s' "$m"; done
echo
for p in "${progs[@]}"; do
	printf '%-12s %-14s' "$p" "${cell["$p plain"]:-}"
	for m in "${run_modes[@]}"; do printf ' %-20s' "${cell["$p $m"]:--}"; done
	echo
done
echo "(cells: status, share of anonymous memory on huge pages at its peak (promote: before>after the promotion), peak RSS over plain's; plain: peak RSS, seconds)"
if [ ${#failures[@]} -gt 0 ]; then
	echo
	echo "failures:"
	printf '  %s\n' "${failures[@]}"
fi
if [ ${#notes[@]} -gt 0 ]; then
	echo
	echo "notes:"
	printf '  %s\n' "${notes[@]}"
fi
[ -z "$pool_note" ] || echo "$pool_note"
[ -z "$pool1g_note" ] || echo "$pool1g_note"
el=$(($(date +%s) - start))
echo "elapsed: $((el / 60)) min $((el % 60)) s; $nknown known failures (tests/compat/known-failures) not counted"
echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" = 0 ]
