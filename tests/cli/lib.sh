# lib.sh - what the tests/cli/test_*.sh scripts share: tests/lib.sh (result lines,
# running the command, sysfs values put back), and the command's error contract.
# Sourced, not run (tests/run.sh runs test_*.sh only).
# shellcheck shell=bash disable=SC2154

# shellcheck source=tests/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# For the scripts that add to the 2M pool: tmp, a new directory removed at exit, when
# the pool is also put back (pool_add in tests/lib.sh).
tmp_with_pool() {
	tmp=$(mktemp -d)
	trap 'put_pool_back; rm -rf "$tmp"' EXIT
	trap 'exit 130' INT TERM HUP
}

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

# Starts $HOLD (hold_hugetlb) with its stdin on a fifo we hold open. Leaves hold_pid.
start_hold() {
	mkfifo "$tmp/hold_in"
	"$HOLD" <"$tmp/hold_in" >"$tmp/hold_out" 2>&1 &
	hold_pid=$!
	exec {hold_in}>"$tmp/hold_in"
	for _ in $(seq 100); do
		grep -qE '^(ready|nomem)$' "$tmp/hold_out" && break
		kill -0 "$hold_pid" 2>/dev/null || break
		sleep 0.1
	done
}

# Sets the 2M pool 32 pages above what it holds and starts $HOLD on them: 0 with
# hold_pid set; else 1, with SKIP (or FAIL) NAME said and everything put back.
hold_2m_pages() { # name
	local name=$1 want free
	if ! is_root; then
		skip "$name" "needs root to set the 2M pool"
		return 1
	fi
	if [ ! -d $P2M ]; then
		skip "$name" "no 2M hugetlb pages on this machine"
		return 1
	fi
	if [ ! -x "$HOLD" ]; then
		fail "$name" "$HOLD is missing"
		return 1
	fi
	want=$(($(cat $P2M/nr_hugepages) + 32))
	set_sysfs $P2M/nr_hugepages $want
	free=$(cat $P2M/free_hugepages)
	if [ "$(cat $P2M/nr_hugepages)" -lt "$want" ] || [ "$free" -lt 32 ]; then
		skip "$name" "the kernel gave $(cat $P2M/nr_hugepages) of $want 2M pages, $free free"
		restore
		return 1
	fi
	start_hold
	if grep -q '^nomem$' "$tmp/hold_out"; then
		skip "$name" "mmap of 64 MiB of 2M hugetlb failed with $free free pages"
		restore
		return 1
	fi
	if ! grep -q '^ready$' "$tmp/hold_out"; then
		fail "$name" "hold_hugetlb did not get ready: $(head -c 200 "$tmp/hold_out")"
		restore
		return 1
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
