# lib.sh - what the tests/cli/test_*.sh scripts share: tests/lib.sh (result lines,
# running the command, sysfs values put back), and the command's error contract.
# Sourced, not run (tests/run.sh runs test_*.sh only).
# shellcheck shell=bash disable=SC2154

# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# The error contract of the command: status 2, nothing on stdout, one line on stderr
# starting "superpage: ".
expect_usage_error() { # name args...
	local name=$1
	shift
	sp "$@"
	if [ "$rc" != 2 ]; then
		fail "$name" "'superpage $*' exited $rc, want 2"
	elif [ "$(nlines "$tmp/err")" != 1 ]; then
		fail "$name" "'superpage $*' printed $(nlines "$tmp/err") lines on stderr, want 1"
	elif ! grep -q '^superpage: ' "$tmp/err"; then
		fail "$name" "stderr does not start with 'superpage: ': $(head -c 300 "$tmp/err")"
	elif [ -s "$tmp/out" ]; then
		fail "$name" "'superpage $*' printed on stdout: $(head -c 200 "$tmp/out")"
	else
		pass "$name"
	fi
}

# Runs a command as user 65534 (from a root shell): "${as_nobody[@]}" CMD... The
# blocker says why that cannot be here, or nothing.
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
nobody_blocker() {
	if ! command -v setpriv >/dev/null 2>&1; then
		echo "no setpriv to drop root"
	elif ! "${as_nobody[@]}" test -x "$SP"; then
		echo "user 65534 cannot run $SP"
	fi
}
