#!/usr/bin/env bash
# compare.sh - malloc throughput under glibc, superpage run, mimalloc and jemalloc side by
# side, then gups_malloc (random updates over 1 GiB of malloc'd memory) under superpage run
# against plain, then the memory each malloc pays for blocks of one size, from 16 B to
# 64 MiB (each power of two, and one byte more), and for a mixed heap (tests/runtime/common/sweep.c:
# resident growth against the data's size, and its share on huge pages). Reports; never
# asserts a speed or a size.
#
# usage: bash bench/compare.sh BUILD_DIR [--quick | --hardening]
# Needs BUILD_DIR/superpage, BUILD_DIR/bench/kernels/malloc,
# BUILD_DIR/tests/runtime/common/gups_malloc and .../common/sweep (make bench builds
# them). mimalloc and jemalloc are
# used where installed (apt-get install libmimalloc2.0 libjemalloc2). So is the runtime
# with its free lists' hardening compiled out, BUILD_DIR/unhardened (make unhardened;
# make bench builds it), in the column "unhardened": the hardening's cost is the
# median of the rounds' ratios superpage / unhardened, given under the table (each
# round runs the two one after the other). --hardening runs only those two, and
# superpage once more ("again": the same build, whose ratio to the first is the noise
# the hardening's figures carry), 11 rounds of the malloc kernels, and no gups_malloc
# or sizes. Where valgrind is installed, the hardening's cost is also given in
# instructions a call (callgrind, one thread, one batch of each kernel): a count the
# machine's load does not change, where the times vary by more than the cost. Each
# round runs
# every allocator once, the first one rotating; 7 rounds of 0.5 s runs of the malloc
# kernels (3 of 0.4 s with --quick: this machine's speed drifts from minute to minute,
# and many short alternating rounds see less of it than a few long ones), 3 of
# gups_malloc. Under the table, superpage's speed against mimalloc's is also given as
# the median of the rounds' ratios (each taken from runs seconds apart). As root, when
# the 2 MiB pool has fewer than 512 free pages, it is raised by 520 for `superpage run
# --backing 2m` and put back at exit, also on Ctrl-C. The report goes to stdout, progress to stderr.
# Exit status: 0, 1 if a run crashed or its checksum differed between allocators (the
# reason is on stderr), 2 on bad arguments.
# shellcheck disable=SC2015,SC2086,SC2317
# (A && B || continue is meant; lists of numbers are split on purpose; traps call on_exit.)
set -u

usage() {
	echo "usage: bash bench/compare.sh BUILD_DIR [--quick | --hardening]" >&2
	exit 2
}

case ${1:-} in
-h | --help)
	sed -n '2,/^# shellcheck/{/^# shellcheck/d; s/^# \{0,1\}//; p}' "$0"
	exit 0 ;;
esac
[ $# -ge 1 ] && [ $# -le 2 ] || usage
B=$1
ROUNDS=7
SECONDS_PER_RUN=0.5
HARDENING_ONLY=""
if [ $# -eq 2 ]; then
	case $2 in
	--quick) ROUNDS=3; SECONDS_PER_RUN=0.4 ;;
	--hardening) ROUNDS=11; HARDENING_ONLY=1 ;;
	*) usage ;;
	esac
fi
GUPS_ROUNDS=3
GUPS_SIZE=1G
KERNELS=(mixed larson realloc burst)
THREADS=(1 2)

SP=$B/superpage
MB=$B/bench/kernels/malloc
GUPS=$B/tests/runtime/common/gups_malloc
SWEEP=$B/tests/runtime/common/sweep
SWEEP_TOTAL=256M
[ "$ROUNDS" -eq 3 ] && SWEEP_TOTAL=128M
UNHARDENED=$B/unhardened/superpage
NEED=("$SP" "$MB" "$B/libsuperpage-run.so")
[ -n "$HARDENING_ONLY" ] && NEED+=("$UNHARDENED" "$B/unhardened/libsuperpage-run.so") ||
	NEED+=("$GUPS" "$SWEEP")
for f in "${NEED[@]}"; do
	if [ ! -x "$f" ] && [ ! -f "$f" ]; then
		echo "compare.sh: $f is missing (make bench builds it; make unhardened the runtime without the hardening)" >&2
		exit 2
	fi
done

TMP=$(mktemp -d /tmp/superpage-compare.XXXXXX) || exit 1
failures=()

# ---------- the 2 MiB pool, raised for the --backing 2m run and put back ----------

POOL_DIR=/sys/kernel/mm/hugepages/hugepages-2048kB
POOL_NEED=512
POOL_RAISE=520
pool_old=""
pool_added=0

# Takes back the pages we added (not an absolute write: a pool that someone else
# changed meanwhile keeps their change).
pool_restore() {
	[ -n "$pool_old" ] || return 0
	local old=$pool_old cur want now
	pool_old=""
	cur=$(cat "$POOL_DIR/nr_hugepages" 2>/dev/null) || cur=0
	want=$((cur - pool_added))
	[ $want -ge 0 ] || want=0
	echo "$want" >"$POOL_DIR/nr_hugepages" 2>/dev/null
	now=$(cat "$POOL_DIR/nr_hugepages" 2>/dev/null)
	if [ "$now" != "$want" ]; then
		echo "compare.sh: could not put the 2M pool back to $want (now ${now:-unknown})" >&2
	elif [ "$now" = "$old" ]; then
		echo "pools:   2M pool put back to $now"
	else
		echo "pools:   2M pool put back to $now (it was $old before: another program changed it meanwhile)"
	fi
}

on_exit() {
	pool_restore
	rm -rf "$TMP"
}
trap on_exit EXIT
trap 'printf "\ncompare.sh: interrupted\n" >&2; on_exit; trap - INT; kill -INT $$' INT
trap 'printf "\ncompare.sh: terminated\n" >&2; on_exit; exit 143' TERM

pool_free() {
	local free resv
	free=$(cat "$POOL_DIR/free_hugepages" 2>/dev/null) || { echo 0; return; }
	resv=$(cat "$POOL_DIR/resv_hugepages" 2>/dev/null) || resv=0
	echo $((free - resv))
}

pools_line() {
	local d out="" size
	for d in /sys/kernel/mm/hugepages/hugepages-*kB; do
		[ -d "$d" ] || continue
		size=${d##*hugepages-}
		size=${size%kB}
		case $size in
		2048) size=2M ;;
		1048576) size=1G ;;
		*) size=${size}K ;;
		esac
		out+="${out:+ | }$size total $(cat "$d/nr_hugepages") free $(cat "$d/free_hugepages")"
	done
	echo "${out:-no huge page sizes}"
}

# ---------- the allocators ----------

find_lib() {
	local name=$1 path
	path=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && /x86-64/ { print $NF; exit }')
	[ -n "$path" ] || path=/usr/lib/x86_64-linux-gnu/$name
	[ -f "$path" ] && echo "$path"
}

lib_version() {
	local pkg
	pkg=$(dpkg-query -S "$(readlink -f "$1")" 2>/dev/null | head -1 | cut -d: -f1)
	[ -n "$pkg" ] && dpkg-query -W -f='${Package} ${Version}' "$pkg" 2>/dev/null
}

MIMALLOC=$(find_lib libmimalloc.so.2)
JEMALLOC=$(find_lib libjemalloc.so.2)
ALLOCS=(glibc superpage unhardened mimalloc jemalloc)
[ -n "$HARDENING_ONLY" ] && ALLOCS=(superpage unhardened again)
HAVE_UNHARDENED=""
[ -x "$UNHARDENED" ] && [ -f "$B/unhardened/libsuperpage-run.so" ] && HAVE_UNHARDENED=1
declare -A HAVE=([glibc]=1 [superpage]=1 [unhardened]=$HAVE_UNHARDENED [mimalloc]=${MIMALLOC:+1}
	[jemalloc]=${JEMALLOC:+1} [again]=1)

# Runs "$@" under allocator $1, stdout to $TMP/out, stderr to $TMP/err; returns its
# status. (The redirections are on the command alone, so a trap that runs meanwhile
# still writes to the report.)
run_with() {
	local alloc=$1
	shift
	case $alloc in
	superpage | again) set -- "$SP" run -- "$@" ;;
	unhardened) set -- "$UNHARDENED" run -- "$@" ;;
	mimalloc) set -- env LD_PRELOAD="$MIMALLOC" MIMALLOC_ALLOW_LARGE_OS_PAGES=1 \
		MIMALLOC_LARGE_OS_PAGES=1 "$@" ;;
	jemalloc) set -- env LD_PRELOAD="$JEMALLOC" MALLOC_CONF=thp:always,metadata_thp:always "$@" ;;
	esac
	run_cmd "$@"
}

# Runs "$@" with its output in $TMP; LAST_CMD says how to run it again.
run_cmd() {
	LAST_CMD=$(printf '%q ' "$@")
	LAST_CMD=${LAST_CMD% }
	"$@" >"$TMP/out" 2>"$TMP/err"
}

# What went wrong with the run that returned $1: a cell for the table, and a reason.
failed_cell() {
	if [ "$1" -gt 128 ]; then
		echo "CRASHED sig $(($1 - 128))"
	elif [ "$1" -eq 1 ] && grep -q 'did not hold\|checksum\|not the expected\|took' "$TMP/err"; then
		echo "WRONG DATA"
	elif [ "$1" -ne 0 ]; then
		echo "FAILED exit $1"
	else
		echo "NO RESULT"
	fi
}

failed_reason() {
	local why="$LAST_CMD: exit status $1"
	[ "$1" -gt 128 ] && why+=" (signal $(($1 - 128)): $(kill -l $(($1 - 128)) 2>/dev/null))"
	[ "$1" -eq 0 ] && why+=" without its result line"
	[ -s "$TMP/err" ] && why+="; stderr: $(tail -n 3 "$TMP/err" | tr '\n' ' ')"
	echo "$why"
}

# field NAME LINE: the value of NAME=... in LINE
field() {
	local w
	for w in $2; do
		case $w in "$1"=*) echo "${w#*=}"; return ;; esac
	done
}

median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) exit
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ---------- header ----------

cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
if [ -n "$HARDENING_ONLY" ]; then
	echo "compare.sh --hardening: malloc throughput under superpage run, with and without its hardening"
else
	echo "compare.sh: malloc throughput and gups_malloc under glibc, superpage run, mimalloc, jemalloc"
fi
echo "machine: ${cpu:-unknown cpu}, $(nproc) cpus, $(uname -sr) $(uname -m), load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "thp:     enabled ${thp:-absent}"
echo "pools:   $(pools_line)"
echo "glibc:   $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)"
echo "superpage: $SP run ($("$SP" --version 2>/dev/null | head -1))"
if [ -n "$MIMALLOC" ]; then
	echo "mimalloc: $MIMALLOC ($(lib_version "$MIMALLOC")), MIMALLOC_ALLOW_LARGE_OS_PAGES=1 MIMALLOC_LARGE_OS_PAGES=1"
else
	echo "mimalloc: not installed (apt-get install libmimalloc2.0)"
fi
if [ -n "$JEMALLOC" ]; then
	echo "jemalloc: $JEMALLOC ($(lib_version "$JEMALLOC")), MALLOC_CONF=thp:always,metadata_thp:always"
else
	echo "jemalloc: not installed (apt-get install libjemalloc2)"
fi
if [ -n "$HAVE_UNHARDENED" ]; then
	echo "unhardened: $UNHARDENED run (the runtime built with SP_HARDEN=0: free lists' links plain, unchecked)"
else
	echo "unhardened: not built (make unhardened): the hardening's cost is not measured"
fi

# ---------- malloc kernels ----------

declare -A OPS SUM CMD BROKEN
n_allocs=${#ALLOCS[@]}
for ((r = 0; r < ROUNDS; r++)); do
	for k in "${KERNELS[@]}"; do
		for t in "${THREADS[@]}"; do
			for ((j = 0; j < n_allocs; j++)); do
				a=${ALLOCS[(j + r) % n_allocs]}
				[ -n "${HAVE[$a]}" ] || continue
				key=$k,$t,$a
				[ -z "${BROKEN[$key]:-}" ] || continue
				printf 'compare.sh: %-8s %s thread(s) %-9s round %d/%d' "$k" "$t" "$a" \
					$((r + 1)) "$ROUNDS" >&2
				run_with "$a" "$MB" "$k" "$t" "$SECONDS_PER_RUN"
				rc=$?
				line=$(grep -m1 '^kernel=' "$TMP/out")
				ops=$(field ops_per_s "$line")
				sum=$(field checksum "$line")
				if [ $rc -ne 0 ] || [ -z "$ops" ] || [ -z "$sum" ]; then
					echo "  exit $rc" >&2
					BROKEN[$key]=$(failed_cell $rc)
					failures+=("$(failed_reason $rc)")
					continue
				fi
				echo "  $(awk -v o="$ops" 'BEGIN { printf "%.2f M ops/s", o / 1e6 }')" >&2
				if [ -z "${SUM[$key]:-}" ]; then
					SUM[$key]=$sum
					CMD[$key]=$LAST_CMD
				elif [ "${SUM[$key]}" != "$sum" ]; then
					BROKEN[$key]="WRONG SUM"
					failures+=("$LAST_CMD: checksum $sum, ${SUM[$key]} in an earlier round")
					continue
				fi
				OPS[$key]+=" $ops"
			done
		done
	done
done

# Every malloc must read the same checksum: glibc's is the reference.
for k in "${KERNELS[@]}"; do
	for t in "${THREADS[@]}"; do
		ref=""
		for a in "${ALLOCS[@]}"; do
			[ -n "${SUM[$k,$t,$a]:-}" ] && [ -z "${BROKEN[$k,$t,$a]:-}" ] || continue
			[ -n "$ref" ] || { ref=${SUM[$k,$t,$a]}; ref_who=$a; continue; }
			if [ "${SUM[$k,$t,$a]}" != "$ref" ]; then
				BROKEN[$k,$t,$a]="WRONG SUM"
				failures+=("${CMD[$k,$t,$a]}: checksum ${SUM[$k,$t,$a]}, $ref under $ref_who")
			fi
		done
	done
done

echo
rounds_word=rounds
[ "$ROUNDS" -eq 1 ] && rounds_word=round
echo "malloc: $MB KERNEL THREADS $SECONDS_PER_RUN ($SECONDS_PER_RUN s a run), median of $ROUNDS $rounds_word"
echo "M ops/s: calls to malloc, free and realloc a second, all threads together; then the ratio to glibc"
echo "  mixed    random malloc/free of 8 B-64 KiB (mostly <= 1 KiB) over 4096 slots a thread"
echo "  larson   16 B-4 KiB blocks malloc'd by one thread, freed by the next"
echo "  realloc  strings of 64 B-6 MiB built by appends, grown by realloc"
echo "  burst    bursts of 25-1600 blocks of 16-64 B malloc'd and filled, then all freed"
declare -A MED
printf '%-8s %7s' kernel threads
for a in "${ALLOCS[@]}"; do printf ' %15s' "$a"; done
echo
for k in "${KERNELS[@]}"; do
	for t in "${THREADS[@]}"; do
		base=""
		[ -n "${OPS[$k,$t,glibc]:-}" ] && base=$(median ${OPS[$k,$t,glibc]})
		printf '%-8s %7s' "$k" "$t"
		for a in "${ALLOCS[@]}"; do
			key=$k,$t,$a
			if [ -z "${HAVE[$a]}" ]; then
				cell="not installed"
				[ "$a" = unhardened ] && cell="not built"
			elif [ -n "${BROKEN[$key]:-}" ]; then
				cell=${BROKEN[$key]}
			elif [ -z "${OPS[$key]:-}" ]; then
				cell="no result"
			else
				MED[$key]=$(median ${OPS[$key]})
				cell=$(awk -v m="${MED[$key]}" -v b="$base" 'BEGIN {
					if (b > 0) printf "%.2f %5.2fx", m / 1e6, m / b
					else printf "%.2f    -", m / 1e6 }')
			fi
			printf ' %15s' "$cell"
		done
		echo
	done
done

# Allocator $1 against $2 round by round (the two ran seconds apart in each round): the
# median of the rounds' ratios per kernel and threads, "" if no round has both. With
# $3 = cost, each also as what $1 costs against $2, in percent.
round_ratios() {
	local k t i line="" med s_ops m_ops ratios
	for k in "${KERNELS[@]}"; do
		for t in "${THREADS[@]}"; do
			read -ra s_ops <<<"${OPS[$k,$t,$1]:-}"
			read -ra m_ops <<<"${OPS[$k,$t,$2]:-}"
			[ ${#s_ops[@]} -gt 0 ] && [ ${#s_ops[@]} -eq ${#m_ops[@]} ] || continue
			ratios=()
			for ((i = 0; i < ${#s_ops[@]}; i++)); do
				ratios+=("$(awk -v a="${s_ops[i]}" -v b="${m_ops[i]}" 'BEGIN { print a / b }')")
			done
			med=$(median "${ratios[@]}")
			if [ "${3:-}" = cost ]; then
				line+="$(awk -v k="$k" -v t="$t" -v m="$med" 'BEGIN {
					printf "  %s %st %.3fx (%+.1f%%)", k, t, m, (1 / m - 1) * 100 }')"
			else
				line+="$(printf '  %s %st %.2fx' "$k" "$t" "$med")"
			fi
		done
	done
	echo "$line"
}

# superpage against mimalloc, and the hardening's cost: superpage against the runtime
# built without it.
line=$(round_ratios superpage mimalloc)
[ -z "$line" ] || echo "superpage / mimalloc, median of the rounds' ratios:$line"
line=$(round_ratios superpage unhardened cost)
[ -z "$line" ] || echo "hardening: superpage / unhardened, median of the rounds' ratios (time it adds):$line"
line=$(round_ratios superpage again cost)
[ -z "$line" ] || echo "noise:     superpage / superpage again (the same build), likewise:$line"

# Instructions a call of the program's to malloc, free and realloc (with all
# they call), counted by callgrind in one run of allocator $1's runtime preloaded
# (superpage's or unhardened's) on kernel $2 with one thread for one batch: the same
# calls under both builds, and a count no other program on the machine changes.
# "" if callgrind did not run.
instr_per_call() {
	local lib=$B/libsuperpage-run.so
	[ "$1" = unhardened ] && lib=$B/unhardened/libsuperpage-run.so
	rm -f "$TMP/callgrind"
	LD_PRELOAD=$lib valgrind --tool=callgrind --callgrind-out-file="$TMP/callgrind" \
		"$MB" "$2" 1 0.001 >/dev/null 2>&1 || return 0
	# (callgrind's file names each object and function once as "(id) name", then by
	# "(id)" alone; a call is "calls=N ..." followed by a line whose second field is
	# its inclusive cost.)
	awk '
	function named(kind, rest,   id) {
		id = rest; sub(/\).*/, "", id); sub(/^\(/, "", id)
		if (rest ~ /^\([0-9]+\) /) { sub(/^\([0-9]+\) /, "", rest); name[kind, id] = rest }
		return name[kind, id]
	}
	/^ob=/  { ob = named("ob", substr($0, 4)) }
	/^fn=/  { caller_ob = ob; named("fn", substr($0, 4)) }
	/^cob=/ { named("ob", substr($0, 5)) }
	/^cfn=/ { callee = named("fn", substr($0, 5)) }
	/^calls=/ {
		n = substr($1, 7); getline
		if (caller_ob ~ /kernels\/malloc$/ && callee ~ /^(malloc|free|realloc)$/) {
			ir += $2; calls += n
		}
	}
	END { if (calls) printf "%.2f", ir / calls }' "$TMP/callgrind"
}

if [ -n "$HAVE_UNHARDENED" ] && command -v valgrind >/dev/null 2>&1; then
	line=""
	for k in "${KERNELS[@]}"; do
		hard=$(instr_per_call superpage "$k")
		plain=$(instr_per_call unhardened "$k")
		[ -n "$hard" ] && [ -n "$plain" ] || continue
		line+=$(awk -v k="$k" -v h="$hard" -v p="$plain" 'BEGIN {
			printf "  %s 1t %s against %s (%+.1f%%)", k, h, p, (h / p - 1) * 100 }')
	done
	[ -z "$line" ] || echo "hardening: instructions a malloc/free/realloc call, superpage against unhardened (callgrind, one batch):$line"
fi
if [ -n "$HARDENING_ONLY" ]; then
	[ ${#failures[@]} -eq 0 ] && exit 0
	for f in "${failures[@]}"; do
		echo "compare.sh: $f" >&2
	done
	exit 1
fi

# ---------- gups_malloc: an unmodified malloc program ----------

echo
GUPS_VARIANTS=(plain superpage)
declare -A GUPS_LABEL=([plain]="plain" [superpage]="superpage run" [superpage-2m]="superpage run --backing 2m")
skip_2m=""
if [ ! -d "$POOL_DIR" ]; then
	skip_2m="no 2 MiB huge pages in this kernel"
elif [ "$(pool_free)" -ge $POOL_NEED ]; then
	:
elif [ "$(id -u)" -ne 0 ]; then
	skip_2m="the 2M pool has $(pool_free) free pages (< $POOL_NEED) and raising it needs root"
else
	old=$(cat "$POOL_DIR/nr_hugepages")
	pool_added=$POOL_RAISE   # until the kernel says how many it gave
	pool_old=$old
	echo $((old + POOL_RAISE)) >"$POOL_DIR/nr_hugepages" 2>/dev/null
	now=$(cat "$POOL_DIR/nr_hugepages")
	pool_added=$((now - old))
	echo "pools:   2M pool $old -> $now (asked +$POOL_RAISE) for --backing 2m"
	[ "$(pool_free)" -ge $POOL_NEED ] ||
		skip_2m="the kernel gave the 2M pool $((now - old)) of $POOL_RAISE pages asked (memory short or fragmented)"
fi
[ -n "$skip_2m" ] || GUPS_VARIANTS+=(superpage-2m)

declare -A GSECS GBROKEN GFIRST GCMD
n_var=${#GUPS_VARIANTS[@]}
for ((r = 0; r < GUPS_ROUNDS; r++)); do
	for ((j = 0; j < n_var; j++)); do
		v=${GUPS_VARIANTS[(j + r) % n_var]}
		[ -z "${GBROKEN[$v]:-}" ] || continue
		printf 'compare.sh: gups_malloc %s %-26s round %d/%d' "$GUPS_SIZE" "${GUPS_LABEL[$v]}" \
			$((r + 1)) "$GUPS_ROUNDS" >&2
		case $v in
		plain) run_cmd "$GUPS" "$GUPS_SIZE" ;;
		superpage) run_cmd "$SP" run -- "$GUPS" "$GUPS_SIZE" ;;
		superpage-2m) run_cmd "$SP" run --backing 2m -- "$GUPS" "$GUPS_SIZE" ;;
		esac
		rc=$?
		first=$(sed -n 1p "$TMP/out")
		secs=$(field seconds "$(sed -n 2p "$TMP/out")")
		if [ $rc -ne 0 ] || [ -z "$secs" ]; then
			echo "  exit $rc" >&2
			GBROKEN[$v]=$(failed_cell $rc)
			[ $rc -eq 1 ] && grep -q 'after two passes' "$TMP/err" && GBROKEN[$v]="WRONG DATA"
			failures+=("$(failed_reason $rc)")
			continue
		fi
		echo "  $secs s" >&2
		if [ -z "${GFIRST[$v]:-}" ]; then
			GFIRST[$v]=$first
			GCMD[$v]=$LAST_CMD
		elif [ "$first" != "${GFIRST[$v]}" ]; then
			GBROKEN[$v]="WRONG RESULT"
			failures+=("$LAST_CMD: printed \"$first\", \"${GFIRST[$v]}\" in an earlier round")
			continue
		fi
		GSECS[$v]+=" $secs"
	done
done
# Line 1 (the checksum) must be the same under every malloc: plain's is the reference.
gups_header=""
for v in plain superpage superpage-2m; do
	[ -n "${GFIRST[$v]:-}" ] && [ -z "${GBROKEN[$v]:-}" ] || continue
	[ -n "$gups_header" ] || { gups_header=${GFIRST[$v]}; ref_who=${GUPS_LABEL[$v]}; continue; }
	if [ "${GFIRST[$v]}" != "$gups_header" ]; then
		GBROKEN[$v]="WRONG RESULT"
		failures+=("${GCMD[$v]}: printed \"${GFIRST[$v]}\", \"$gups_header\" under $ref_who")
	fi
done

# ---------- sizes: what each malloc pays for blocks of one size ----------

SWEEP_SIZES=(mixed)
for ((e = 4; e <= 26; e++)); do SWEEP_SIZES+=($((1 << e)) $(((1 << e) + 1))); done
SWEEP_ALLOCS=(glibc superpage)
[ -n "$skip_2m" ] || SWEEP_ALLOCS+=(superpage-2m)
SWEEP_ALLOCS+=(mimalloc jemalloc)
declare -A SWEEP_CELL
for size in "${SWEEP_SIZES[@]}"; do
	for a in "${SWEEP_ALLOCS[@]}"; do
		case $a in
		superpage-2m) run_cmd "$SP" run --backing 2m -- "$SWEEP" "$size" "$SWEEP_TOTAL" ;;
		*) [ -n "${HAVE[$a]}" ] || continue
		   run_with "$a" "$SWEEP" "$size" "$SWEEP_TOTAL" ;;
		esac
		rc=$?
		line=$(grep -m1 '^size=' "$TMP/out")
		data=$(field data_kb "$line")
		rss=$(field rss_kb "$line")
		huge=$(field huge_kb "$line")
		if [ $rc -ne 0 ] || [ -z "$rss" ]; then
			SWEEP_CELL[$size,$a]=$(failed_cell $rc)
			[ $rc -eq 1 ] && grep -q 'lost its contents' "$TMP/err" && SWEEP_CELL[$size,$a]="WRONG DATA"
			failures+=("$(failed_reason $rc)")
			continue
		fi
		SWEEP_CELL[$size,$a]="$data $rss $huge"
	done
	printf 'compare.sh: sizes %s\n' "$size" >&2
done

pool_restore

updates=$(echo "$gups_header" | sed -n 's/.* \([0-9][0-9]*\) updates x 2.*/\1/p')
echo "gups: $GUPS $GUPS_SIZE (${updates:-?} random updates x 2 over one malloc'd ${GUPS_SIZE}), median of $GUPS_ROUNDS, alternating"
printf '%-28s %9s %9s %9s  %s\n' variant "median s" "best s" "MUP/s" "vs plain"
gbase=""
[ -n "${GSECS[plain]:-}" ] && gbase=$(median ${GSECS[plain]})
for v in plain superpage superpage-2m; do
	label=${GUPS_LABEL[$v]}
	if [ "$v" = superpage-2m ] && [ -n "$skip_2m" ]; then
		printf '%-28s skipped: %s\n' "$label" "$skip_2m"
	elif [ -n "${GBROKEN[$v]:-}" ]; then
		printf '%-28s %s\n' "$label" "${GBROKEN[$v]}"
	elif [ -z "${GSECS[$v]:-}" ]; then
		printf '%-28s no result\n' "$label"
	else
		med=$(median ${GSECS[$v]})
		bst=$(printf '%s\n' ${GSECS[$v]} | sort -g | head -1)
		awk -v l="$label" -v m="$med" -v b="$bst" -v g="$gbase" -v u="${updates:-0}" 'BEGIN {
			printf "%-28s %9.3f %9.3f %9.1f  ", l, m, b, (m > 0 ? 2 * u / m / 1e6 : 0)
			if (g > 0) printf "%.2fx\n", g / m; else print "-" }'
	fi
done

echo
echo "sizes: $SWEEP SIZE $SWEEP_TOTAL (blocks of SIZE bytes until they hold $SWEEP_TOTAL, each written"
echo "  whole once; mixed: 16 B-8 MiB log-uniform, filled, half freed, filled again)"
echo "  resident growth / data's size, share of it on huge pages; then superpage's resident / glibc's"
printf '%-9s %13s' size glibc
for a in "${SWEEP_ALLOCS[@]:1}"; do printf ' %20s' "$a"; done
echo
for size in "${SWEEP_SIZES[@]}"; do
	printf '%-9s' "$size"
	read -r _ g_rss _ <<<"${SWEEP_CELL[$size,glibc]:-}"
	for a in "${SWEEP_ALLOCS[@]}"; do
		w=20
		[ "$a" = glibc ] && w=13
		read -r d r h <<<"${SWEEP_CELL[$size,$a]:-}"
		if [ -z "${HAVE[$a]-1}" ]; then
			cell="not installed"
		elif [ -z "${SWEEP_CELL[$size,$a]:-}" ]; then
			cell="no result"
		elif [ -z "$h" ]; then
			cell=${SWEEP_CELL[$size,$a]}
		else
			cell=$(awk -v d="$d" -v r="$r" -v h="$h" -v g="${g_rss:-0}" -v sp="${a%%-*}" 'BEGIN {
				c = sprintf("%.2fx %3.0f%%", (d > 0 ? r / d : 0), (r > 0 ? 100 * h / r : 0))
				if (h < 0) c = sprintf("%.2fx", (d > 0 ? r / d : 0))
				if (sp == "superpage" && g > 0) c = c sprintf(" %.2fx", r / g)
				print c }')
		fi
		printf " %${w}s" "$cell"
	done
	echo
done
echo "pools:   $(pools_line) at the end"

if [ ${#failures[@]} -gt 0 ]; then
	for f in "${failures[@]}"; do
		echo "compare.sh: $f" >&2
	done
	exit 1
fi
exit 0
