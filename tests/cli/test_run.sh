#!/usr/bin/env bash
# test_run.sh - tests superpage run: exit statuses, signals, the environment and LD_PRELOAD
# the program gets, static programs and the 4k baseline (the --stats account the
# runtime writes: tests/runtime/report).
# Usage: tests/cli/test_run.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. It changes no system setting.
set -u
B=${1:?usage: tests/cli/test_run.sh BUILD_DIR}
B=${B%/}
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
RT=$B/libsuperpage-run.so
HP=/sys/kernel/mm/hugepages
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# What the tests see must come from superpage run, not from whoever started them.
unset LD_PRELOAD "${!SUPERPAGE_@}"

# ASan brings its own malloc and must come first: its runtime cannot be preloaded into
# other programs, so the tests that start a dynamic program under run are skipped.
no_preload=$(preload_blocker "$B" "$B/libsuperpage-run.so")

# ---------- helpers ----------

oneline() { head -c 300 "$1" | tr '\n' '|'; }

# Says SKIP and fails when this build cannot preload its runtime into a program.
can_preload() { # name
	if [ -n "$no_preload" ]; then
		skip "$1" "$no_preload"
		return 1
	fi
	return 0
}

# A pool of this size has free pages, or room to overcommit.
pool_has_room() { # dir
	local d=$1
	[ -d "$d" ] || return 1
	[ "$(cat "$d/free_hugepages")" -gt 0 ] ||
		[ "$(cat "$d/surplus_hugepages")" -lt "$(cat "$d/nr_overcommit_hugepages")" ]
}

if [ ! -x "$SP" ]; then
	fail run_built "$SP is missing: build with make B=$B"
	exit 1
fi
rt_abs=$(cd "$B" && pwd -P)/libsuperpage-run.so

# ---------- help and bad arguments ----------

test_help() {
	local args why=''
	for args in "run --help" "run -h" "help run" "run --backing 2m --help"; do
		# shellcheck disable=SC2086
		sp $args
		if [ "$rc" != 0 ] || ! grep -q '^usage: superpage run' "$tmp/out" || [ -s "$tmp/err" ]; then
			why="'superpage $args' exited $rc: $(oneline "$tmp/out") $(oneline "$tmp/err")"
			break
		fi
	done
	if [ -z "$why" ] && grep -q -- '(not yet acted on)' "$tmp/out"; then
		why="an option is still marked '(not yet acted on)': $(grep -- '(not yet acted on)' "$tmp/out")"
	fi
	if [ -z "$why" ]; then
		sp --help
		grep -qE '^ +run ' "$tmp/out" || why="superpage --help does not list run"
	fi
	if [ -n "$why" ]; then fail run_help "$why"; else pass run_help; fi
}

test_bad_args() {
	expect_usage_error run_bad_backing run --backing 3m -- true
	expect_usage_error run_bad_backing_missing run --backing
	expect_usage_error run_bad_min run --min 2X -- true
	expect_usage_error run_bad_min_overflow run --min 99999999999G -- true
	expect_usage_error run_bad_option run --bogus -- true
	expect_usage_error run_bad_short_option run -x true
	expect_usage_error run_bad_text run --text=some -- true
	expect_usage_error run_bad_verbose run --verbose=4 -- true
	expect_usage_error run_bad_stats_empty run --stats= -- true
	expect_usage_error run_bad_stats_dir run --stats="$tmp/no/such/dir/file" -- true
	expect_usage_error run_no_cmd run
	expect_usage_error run_no_cmd_after_dashes run --backing thp --
}

# ---------- exit statuses and signals ----------

test_status() { # name want args...
	local name=$1 want=$2
	shift 2
	can_preload "$name" || return
	sp run "$@"
	if [ "$rc" != "$want" ]; then
		fail "$name" "'superpage run $*' exited $rc, want $want: $(oneline "$tmp/err")"
	else
		pass "$name"
	fi
}

test_exec_errors() {
	sp run -- /nonexistent/program
	if [ "$rc" != 127 ] || [ "$(nlines "$tmp/err")" != 1 ] ||
		! grep -q '^superpage: cannot run /nonexistent/program: No such file or directory$' "$tmp/err"; then
		fail run_not_found "exit $rc, stderr: $(oneline "$tmp/err")"
	else
		pass run_not_found
	fi
	sp run superpage-no-such-command-anywhere
	if [ "$rc" != 127 ] || [ "$(nlines "$tmp/err")" != 1 ]; then
		fail run_not_in_path "exit $rc, stderr: $(oneline "$tmp/err")"
	else
		pass run_not_in_path
	fi
	printf 'not a program\n' >"$tmp/noexec"
	chmod 644 "$tmp/noexec"
	sp run -- "$tmp/noexec"
	if [ "$rc" != 126 ] || [ "$(nlines "$tmp/err")" != 1 ] ||
		! grep -q "^superpage: cannot run $tmp/noexec: Permission denied$" "$tmp/err"; then
		fail run_not_executable "exit $rc, want 126: $(oneline "$tmp/err")"
	else
		pass run_not_executable
	fi
}

# superpage run becomes the program (exec, no fork): a signal to its pid is the program's.
test_signals() {
	local name=run_signals pid why=''
	can_preload $name || return
	"$SP" run -- bash -c 'trap "exit 42" USR1; echo ready; while :; do sleep 0.05; done' \
		>"$tmp/sig_out" 2>"$tmp/sig_err" &
	pid=$!
	for _ in $(seq 100); do
		grep -q ready "$tmp/sig_out" && break
		sleep 0.05
	done
	if ! grep -q ready "$tmp/sig_out"; then
		why="the program did not start: $(oneline "$tmp/sig_err")"
	elif [ "$(cat /proc/$pid/comm 2>/dev/null)" != bash ]; then
		why="pid $pid is $(cat /proc/$pid/comm 2>/dev/null), not the program"
	else
		kill -USR1 $pid
	fi
	for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
	if kill -0 $pid 2>/dev/null; then
		[ -n "$why" ] || why="SIGUSR1 did not reach the program: it still runs"
		for c in $(cat /proc/$pid/task/*/children 2>/dev/null); do kill -KILL "$c"; done
		kill -KILL $pid 2>/dev/null
	fi
	wait $pid
	rc=$?
	[ -n "$why" ] || [ "$rc" = 42 ] || why="exited $rc, want 42 (the program's USR1 trap)"
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
}

# ---------- the program's environment ----------

test_preload() {
	local name=run_ld_preload got
	can_preload $name || return
	if ! gcc -shared -fPIC -o "$tmp/libempty.so" -x c - <<<'int superpage_test_empty;' 2>/dev/null; then
		skip $name "no gcc to build an empty library"
		return
	fi
	sp run -- sh -c 'echo "$LD_PRELOAD"'
	got=$(cat "$tmp/out")
	if [ "$rc" != 0 ] || [ "$got" != "$rt_abs" ]; then
		fail $name "without LD_PRELOAD: exit $rc, LD_PRELOAD='$got', want '$rt_abs'"
		return
	fi
	LD_PRELOAD=$tmp/libempty.so sp run -- sh -c 'echo "$LD_PRELOAD"'
	got=$(cat "$tmp/out")
	if [ "$rc" != 0 ] || [ "$got" != "$rt_abs:$tmp/libempty.so" ]; then
		fail $name "LD_PRELOAD='$got', want '$rt_abs:$tmp/libempty.so'"
		return
	fi
	# Already there (a nested run): not added twice.
	LD_PRELOAD="$tmp/libempty.so $rt_abs" sp run -- sh -c 'echo "$LD_PRELOAD"'
	got=$(cat "$tmp/out")
	if [ "$rc" != 0 ] || [ "$got" != "$rt_abs:$tmp/libempty.so" ]; then
		fail $name "with the runtime in LD_PRELOAD already: '$got', want '$rt_abs:$tmp/libempty.so'"
		return
	fi
	pass $name
}

# Prints the value of NAME in $tmp/out (env output), or "<unset>".
env_of() { grep "^$1=" "$tmp/out" | head -n 1 | cut -d= -f2- | grep . || echo '<unset>'; }

test_env() {
	local name=run_env why='' pair
	can_preload $name || return
	SUPERPAGE_MIN=8M SUPERPAGE_SHM=no sp run --backing thp --min 4M --stats -- env
	for pair in SUPERPAGE_BACKING=thp SUPERPAGE_MIN=4M SUPERPAGE_STATS=yes SUPERPAGE_SHM=no \
		SUPERPAGE_HEAP='<unset>' SUPERPAGE_TEXT='<unset>' SUPERPAGE_STACKS='<unset>' \
		SUPERPAGE_VERBOSE='<unset>'; do
		[ "$(env_of "${pair%%=*}")" = "${pair#*=}" ] ||
			why="$why ${pair%%=*} is '$(env_of "${pair%%=*}")', want '${pair#*=}';"
	done
	[ "$rc" = 0 ] || why="exit $rc: $(oneline "$tmp/err")"
	if [ -z "$why" ]; then
		sp run --no-heap --text=all --stacks --shm -vv --backing 2M -- env
		for pair in SUPERPAGE_HEAP=no SUPERPAGE_TEXT=all SUPERPAGE_STACKS=yes SUPERPAGE_SHM=yes \
			SUPERPAGE_VERBOSE=2 SUPERPAGE_BACKING=2m SUPERPAGE_STATS='<unset>'; do
			[ "$(env_of "${pair%%=*}")" = "${pair#*=}" ] ||
				why="$why ${pair%%=*} is '$(env_of "${pair%%=*}")', want '${pair#*=}';"
		done
	fi
	if [ -z "$why" ]; then
		sp run --text --verbose --verbose=1 -v -- env
		[ "$(env_of SUPERPAGE_TEXT)" = main ] && [ "$(env_of SUPERPAGE_VERBOSE)" = 2 ] ||
			why="--text --verbose --verbose=1 -v gave TEXT=$(env_of SUPERPAGE_TEXT) VERBOSE=$(env_of SUPERPAGE_VERBOSE)"
	fi
	if [ -z "$why" ]; then
		mkdir -p "$tmp/cwd"
		(cd "$tmp/cwd" && "$SP" run --stats=./rel.json -- env) >"$tmp/out" 2>"$tmp/err"
		[ "$(env_of SUPERPAGE_STATS)" = "$(cd "$tmp/cwd" && pwd -P)/rel.json" ] ||
			[ "$(env_of SUPERPAGE_STATS)" = "$tmp/cwd/rel.json" ] ||
			why="--stats=./rel.json gave SUPERPAGE_STATS=$(env_of SUPERPAGE_STATS), want it absolute"
	fi
	if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
	# A --help after CMD is CMD's.
	sp run printf '%s\n' --help
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "--help" ]; then
		fail run_help_after_cmd "'run printf %s --help' exited $rc and printed: $(oneline "$tmp/out")"
	else
		pass run_help_after_cmd
	fi
}

# The runtime of an installed tree: bin/superpage finds lib/libsuperpage-run.so, or
# lib/superpage/libsuperpage-run.so as the Debian package installs it.
test_find_runtime() {
	local name=run_installed_layout
	mkdir -p "$tmp/alone" "$tmp/inst/bin" "$tmp/inst/lib"
	cp "$SP" "$tmp/alone/superpage"
	"$tmp/alone/superpage" run -- true >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 2 ] || [ "$(nlines "$tmp/err")" != 1 ] || ! grep -q 'cannot find the runtime' "$tmp/err"; then
		fail run_no_runtime "exit $rc: $(oneline "$tmp/err")"
	else
		pass run_no_runtime
	fi
	can_preload $name || return
	if [ ! -f "$RT" ]; then
		skip $name "$RT is not built"
		return
	fi
	cp "$SP" "$tmp/inst/bin/superpage"
	cp "$RT" "$tmp/inst/lib/libsuperpage-run.so"
	"$tmp/inst/bin/superpage" run -- sh -c 'echo "$LD_PRELOAD"' >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "$(cd "$tmp/inst/lib" && pwd -P)/libsuperpage-run.so" ]; then
		fail $name "exit $rc, LD_PRELOAD '$(cat "$tmp/out")': $(oneline "$tmp/err")"
	else
		pass $name
	fi
	# The Debian package's layout: bin/superpage finds lib/superpage/libsuperpage-run.so.
	name=run_package_layout
	mkdir -p "$tmp/pkg/bin" "$tmp/pkg/lib/superpage"
	cp "$SP" "$tmp/pkg/bin/superpage"
	cp "$RT" "$tmp/pkg/lib/superpage/libsuperpage-run.so"
	"$tmp/pkg/bin/superpage" run -- sh -c 'echo "$LD_PRELOAD"' >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "$(cd "$tmp/pkg/lib/superpage" && pwd -P)/libsuperpage-run.so" ]; then
		fail $name "exit $rc, LD_PRELOAD '$(cat "$tmp/out")': $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

# ---------- what cannot be preloaded ----------

# A static program runs: kept promoted by the watch as root (tests/cli/test_run_static.sh
# tests the watch), or without superpage, which says why; one line either way.
test_static() {
	local name=run_static msg
	printf '#include <stdlib.h>\nint main(void) { return getenv("SUPERPAGE_STATS") ? 3 : 4; }\n' \
		>"$tmp/static.c"
	if ! gcc -static -o "$tmp/static" "$tmp/static.c" 2>/dev/null; then
		skip $name "cannot link a static program (no static libc)"
		return
	fi
	sp run -- "$tmp/static"
	msg="superpage: $tmp/static is statically linked: "
	if [ "$rc" != 4 ]; then
		fail $name "exit $rc, want 4 (the program's own): $(oneline "$tmp/err")"
	elif [ "$(nlines "$tmp/err")" != 1 ] || ! grep -q "^$msg" "$tmp/err"; then
		fail $name "stderr is not the one line: $(oneline "$tmp/err")"
	else
		pass $name
	fi
	# It gets the environment all the same (its children may be preloaded).
	sp run --stats="$tmp/static.json" -- "$tmp/static"
	if [ "$rc" != 3 ]; then
		fail run_static_env "exit $rc, want 3: SUPERPAGE_STATS not in its environment"
	else
		pass run_static_env
	fi
	# Found through PATH, as execvp finds it.
	PATH=$tmp:$PATH sp run static
	if [ "$rc" != 4 ] || ! grep -q "^$msg" "$tmp/err"; then
		fail run_static_in_path "exit $rc: $(oneline "$tmp/err")"
	else
		pass run_static_in_path
	fi
	# A script whose interpreter is static.
	printf '#!%s\n' "$tmp/static" >"$tmp/script"
	chmod 755 "$tmp/script"
	sp run -- "$tmp/script"
	if [ "$rc" != 4 ] || ! grep -q "^superpage: $tmp/script is run by $tmp/static, which is statically linked" "$tmp/err"; then
		fail run_static_interpreter "exit $rc: $(oneline "$tmp/err")"
	else
		pass run_static_interpreter
	fi
	# A dynamic program gets no such word.
	if can_preload run_dynamic_quiet; then
		sp run -- true
		if grep -q 'without superpage\|keeps it promoted' "$tmp/err"; then
			fail run_dynamic_quiet "true is said to run without superpage: $(oneline "$tmp/err")"
		else
			pass run_dynamic_quiet
		fi
	fi
}

# ---------- backings ----------

test_4k() {
	local name=run_4k_thp_disabled own
	can_preload $name || return
	own=$(grep '^THP_enabled:' /proc/self/status)
	if [ -z "$own" ]; then
		skip $name "this kernel does not show THP_enabled in /proc/PID/status"
		return
	fi
	sp run --backing 4k -- grep '^THP_enabled:' /proc/self/status
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "$(printf 'THP_enabled:\t0')" ]; then
		fail $name "with --backing 4k the program shows '$(cat "$tmp/out")' (exit $rc)"
		return
	fi
	sp run --backing thp -- grep '^THP_enabled:' /proc/self/status
	if [ "$(cat "$tmp/out")" != "$own" ]; then
		fail $name "with --backing thp the program shows '$(cat "$tmp/out")', this shell '$own'"
		return
	fi
	pass $name
}

# Where a backing cannot be had, one line says so with the fix, and the program runs.
test_unavailable() {
	local name=run_2m_unavailable
	if [ -n "$no_preload" ]; then
		skip $name "$no_preload"
		skip run_only_4k "$no_preload"
		return
	fi
	if pool_has_room $HP/hugepages-2048kB; then
		skip $name "the 2M pool has free pages here"
	else
		sp run --backing 2m -- true
		if [ "$rc" != 0 ] || [ "$(grep -c '^superpage: .*2m' "$tmp/err")" != 1 ] ||
			{ [ -d $HP/hugepages-2048kB ] && ! grep -q 'superpage pool 512' "$tmp/err"; }; then
			fail $name "exit $rc, stderr: $(oneline "$tmp/err")"
		else
			pass $name
		fi
	fi
	# THP disabled by an outer --backing 4k, and no pool: only base pages are left.
	name=run_only_4k
	if pool_has_room $HP/hugepages-2048kB || pool_has_room $HP/hugepages-1048576kB; then
		skip $name "a hugetlb pool has free pages here"
		return
	fi
	# (the outer run notes that superpage itself is static and runs unpreloaded)
	sp run --backing 4k -- "$SP" run --backing auto -- true
	grep -v 'is statically linked: it runs without superpage' "$tmp/err" >"$tmp/err2"
	mv "$tmp/err2" "$tmp/err"
	if [ "$rc" != 0 ] || [ "$(nlines "$tmp/err")" != 1 ] ||
		! grep -q '^superpage: only 4 KiB pages can be had here' "$tmp/err"; then
		fail $name "exit $rc, stderr: $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

# Where the account goes, for each SUPERPAGE_STATS a user may write, straight to the
# runtime and through superpage run --stats: stderr (the account on stderr, no file
# "stderr"), a bare word (a warning, no file of that name, no account), a path with a
# '/' (that file), and --stats=FILE made absolute (a bare name is a file of the current
# directory there). Each runs true in an empty directory and lists what it made.
test_stats_words() {
	local d=$tmp/words why w made rt n
	can_preload run_stats_words || return
	rt=$(cd "$B" && pwd)/libsuperpage-run.so
	for w in stderr zz -1 ./rel.json; do
		rm -rf "$d"
		mkdir -p "$d"
		(cd "$d" && SUPERPAGE_STATS=$w LD_PRELOAD=$rt /bin/true) \
			>"$tmp/out" 2>"$tmp/err"
		rc=$?
		made=$(ls -A "$d")
		why=''
		case $w in
		stderr)
			[ -z "$made" ] || why="made '$made'"
			grep -q '^superpage: pid [0-9]* (true): .* resident' "$tmp/err" ||
				why="$why; no account on stderr: $(oneline "$tmp/err")" ;;
		zz | -1)
			[ -z "$made" ] || why="made '$made'"
			[ "$(nlines "$tmp/err")" = 1 ] &&
				grep -qF "superpage: SUPERPAGE_STATS=$w is not valid" "$tmp/err" ||
				why="$why; want one warning line, stderr: $(oneline "$tmp/err")" ;;
		./rel.json)
			[ "$made" = rel.json ] && grep -q '^{"pid":' "$d/rel.json" ||
				why="made '$made'; stderr: $(oneline "$tmp/err")" ;;
		esac
		[ "$rc" = 0 ] || why="$why; exit $rc"
		n=run_stats_env_$w
		case $w in -1) n=run_stats_env_minus1 ;; ./*) n=run_stats_env_relative_path ;; esac
		if [ -n "$why" ]; then fail $n "${why#; }"; else pass $n; fi
	done
	for w in stderr out.json; do
		rm -rf "$d"
		mkdir -p "$d"
		(cd "$d" && "$SP" run --stats="$w" -- true) >"$tmp/out" 2>"$tmp/err"
		rc=$?
		made=$(ls -A "$d")
		why=''
		if [ $w = stderr ]; then
			[ -z "$made" ] || why="made '$made'"
			grep -q '^superpage: pid [0-9]* (true): .* resident' "$tmp/err" ||
				why="$why; no account on stderr: $(oneline "$tmp/err")"
		else
			[ "$made" = out.json ] && grep -q '^{"pid":' "$d/out.json" ||
				why="made '$made'; stderr: $(oneline "$tmp/err")"
		fi
		[ "$rc" = 0 ] || why="$why; exit $rc"
		n=run_stats_option_${w%.json}
		if [ -n "$why" ]; then fail $n "${why#; }"; else pass $n; fi
	done
}

test_help
test_bad_args
test_status run_true 0 -- true
test_status run_exit_status 7 -- sh -c 'exit 7'
test_status run_no_dashes 7 sh -c 'exit 7'
test_status run_killed_by_signal 143 -- sh -c 'kill -TERM $$'
test_exec_errors
test_signals
test_preload
test_env
test_stats_words
test_find_runtime
test_static
test_4k
test_unavailable
exit $failed
