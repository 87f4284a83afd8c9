#!/usr/bin/env bash
# test_startup.sh - the runtime as superpage run loads it: the calls it defines, what it
# costs a program's start and its exit status, and bad SUPERPAGE_* values (one warning
# each, the program runs as without them).
# Usage: tests/runtime/startup/test_startup.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test; other lines are measurements, not
# results. Every sysfs value it changes is put back, even on failure or Ctrl-C.
set -u
B=${1:?usage: tests/runtime/startup/test_startup.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start startup common/torture

# ---------- the runtime ----------

test_runtime_exports() {
	local name=runtime_exports sym missing=''
	if ! command -v nm >/dev/null 2>&1; then
		skip $name "no nm to read the symbols"
		return
	fi
	nm -D --defined-only "$RT" >"$tmp/syms" 2>&1
	for sym in malloc free calloc realloc reallocarray memalign aligned_alloc \
		posix_memalign valloc pvalloc malloc_usable_size sbrk brk; do
		awk -v s="$sym" '$NF == s { found = 1 } END { exit !found }' "$tmp/syms" ||
			missing="$missing $sym"
	done
	if [ -n "$missing" ]; then
		fail $name "$RT does not define:$missing"
	else
		pass $name
	fi
}

# ---------- bad SUPERPAGE_* values ----------

test_bad_env() {
	local name=bad_env_values n v why=''
	plain "$C/torture" -e -n 800 -r 2 $SEED
	limited "$tmp/sp.out" "$tmp/sp.err" env SUPERPAGE_BACKING=bogus SUPERPAGE_MIN=2X \
		SUPERPAGE_HEAP=maybe LD_PRELOAD="$RT" "$C/torture" -n 800 -r 2 $SEED
	src=$rc
	if differs; then
		fail $name "$why"
		return
	fi
	# One warning per bad value for the whole run, though it forks (and does not exec).
	for v in SUPERPAGE_BACKING SUPERPAGE_MIN SUPERPAGE_HEAP; do
		n=$(grep -c "^superpage: .*$v" "$tmp/sp.err")
		[ "$n" = 1 ] || why="$why $v warned $n times;"
	done
	n=$(grep -c '^superpage: ' "$tmp/sp.err")
	[ "$n" = 3 ] || why="$why $n lines start with 'superpage: ', want 3;"
	[ -z "$(foreign_stderr "$tmp/sp.err")" ] || why="$why stderr: $(foreign_stderr "$tmp/sp.err")"
	if [ -n "$why" ]; then
		fail $name "${why%;}: $(oneline "$tmp/sp.err" 4)"
	else
		pass $name
	fi
}

# ---------- superpage run -- true ----------

median_ms() { # command... : the median wall time of 50 runs, in ms
	local t0 t1
	for _ in $(seq 50); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000))
	done | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", (a[25] + a[26]) / 2000 }'
}

test_run_true() {
	local name=run_true mt mp why=''
	need_run $name || return
	sprun -- true
	if [ "$src" != 0 ] || [ -s "$tmp/sp.out" ]; then
		fail $name "exit $src: $(oneline "$tmp/sp.err")"
		return
	fi
	sprun -- sh -c 'exit 3'
	[ "$src" = 3 ] || why="'sh -c \"exit 3\"' gave $src;"
	sprun -- sh -c 'kill -9 $$'
	[ "$src" = 137 ] || why="$why a child killed by signal 9 gave $src, want 137;"
	if [ -n "$why" ]; then
		fail run_exit_status "${why%;}"
	else
		pass run_exit_status
	fi
	# The program true, not the shell's builtin.
	mt=$(median_ms "$SP" run -- true)
	mp=$(median_ms "$(type -P true)")
	pass $name "$(awk -v t="$mt" -v p="$mp" 'BEGIN {
		printf "median of 50: %.2f ms under superpage run, %.2f ms plain (%+.2f ms)", t, p, t - p }')"
}

run_some "$@"
test_runtime_exports
test_run_true
test_bad_env
exit $failed
