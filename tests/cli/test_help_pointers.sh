#!/usr/bin/env bash
# test_help_pointers.sh - every usage error that points to a help ("see X --help") points
# to a command the user can type: run as the pointer says, from where the user was, it
# prints its usage and exits 0. The command runs by the names make install gives it
# (superpage, superpage-hugeadm, superpage-hugectl) and the plain hugeadm and hugectl a
# user may link, found on PATH, by a full path and by a relative one.
# Usage: tests/cli/test_help_pointers.sh BUILD_DIR. Prints "PASS name", "FAIL name: why"
# or "SKIP name: why" per test. Every command here is refused before it does anything.
set -u
B=${1:?usage: tests/cli/test_help_pointers.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$(cd "$B" && pwd)/superpage
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

if [ ! -x "$SP" ]; then
	fail help_pointers_built "$SP is missing: build with make B=$B"
	exit 1
fi
bin=$tmp/bin
mkdir -p "$bin"
for n in superpage superpage-hugeadm superpage-hugectl hugeadm hugectl; do
	ln -s "$SP" "$bin/$n"
done
# The names resolve to this build, whatever else is installed.
export PATH="$bin:$PATH"

# Runs a command line as typed (words split at spaces) in directory dir; leaves rc,
# $tmp/out, $tmp/err.
typed() { # dir words...
	local dir=$1
	shift
	(cd "$dir" && "$@") >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# The usage error of a command line, and the help its pointer names.
check() { # name dir words...
	local name=$1 dir=$2 pointer words
	shift 2
	typed "$dir" "$@"
	if [ "$rc" != 2 ] || [ "$(nlines "$tmp/err")" != 1 ]; then
		fail "$name" "'$*' exited $rc with: $(oneline "$tmp/err")"
		return
	fi
	pointer=$(grep -o '(see [^()]* --help)' "$tmp/err" | sed 's/^(see //; s/)$//')
	if [ -z "$pointer" ]; then
		fail "$name" "'$*' points to no help: $(cat "$tmp/err")"
		return
	fi
	read -r -a words <<<"$pointer"
	typed "$dir" "${words[@]}"
	if [ "$rc" != 0 ] || ! head -n 1 "$tmp/out" | grep -q '^usage: ' || [ -s "$tmp/err" ]; then
		fail "$name" "'$*' points to '$pointer', which exits $rc: $(oneline "$tmp/out") $(oneline "$tmp/err")"
	else
		pass "$name" "$pointer"
	fi
}

# superpage's own commands, from anywhere (superpage is on PATH).
check pointer_unknown_command "$tmp" superpage bogus
check pointer_help_unknown "$tmp" superpage help bogus
check pointer_help_two "$tmp" superpage help pool stat
check pointer_status "$tmp" superpage status --bogus
check pointer_pool_option "$tmp" superpage pool --bogus
check pointer_pool_missing "$tmp" superpage pool
check pointer_pool_value "$tmp" superpage pool --size
check pointer_pool_apply "$tmp" superpage pool --apply --persist
check pointer_stat "$tmp" superpage stat --bogus
check pointer_stat_missing "$tmp" superpage stat
check pointer_stat_all_value "$tmp" superpage stat --all --top
check pointer_promote "$tmp" superpage promote --bogus 1
check pointer_promote_value "$tmp" superpage promote --budget
check pointer_run "$tmp" superpage run --bogus
check pointer_run_value "$tmp" superpage run --backing
check pointer_run_missing "$tmp" superpage run
check pointer_bench "$tmp" superpage bench --bogus
check pointer_bench_value "$tmp" superpage bench --kernel
check pointer_export "$tmp" superpage export --bogus
check pointer_export_value "$tmp" superpage export --listen
check pointer_version "$tmp" superpage version extra

# hugeadm and hugectl by each name, on PATH.
for n in superpage-hugeadm hugeadm; do
	check "pointer_${n}_none" "$tmp" $n
	check "pointer_${n}_option" "$tmp" $n --bogus
	check "pointer_${n}_argument" "$tmp" $n extra
	check "pointer_${n}_value" "$tmp" $n --pool-pages-min
done
for n in superpage-hugectl hugectl; do
	check "pointer_${n}_none" "$tmp" $n
	check "pointer_${n}_option" "$tmp" $n --bogus
	check "pointer_${n}_value" "$tmp" $n --library-path
	check "pointer_${n}_verbose" "$tmp" $n --verbose
done
# By a full path and by a path relative to where the user is.
check pointer_hugeadm_full_path "$tmp" "$bin/superpage-hugeadm" --pool-pages-max
check pointer_hugectl_relative "$bin" ./superpage-hugectl --bogus
check pointer_hugeadm_relative "$tmp" bin/hugeadm --bogus
exit $failed
