# pool_lock.sh - sourced by the scripts that hold /tmp/sp-pool.lock while they use the
# hugetlb pools (tests/run.sh, every test script through tests/lib.sh, make compat,
# make realbench, bench/mbench.sh).
# shellcheck shell=bash

# True if a process above this shell (its parent, or one further up) holds the lock,
# as `flock /tmp/sp-pool.lock make compat` does: taking it again would wait for
# ourselves for ever. (A caller that says so with SP_POOL_LOCKED=1 needs no look.)
pool_lock_held_above() { # [lock file]
	local f=${1:-${SP_POOL_LOCK_FILE:-/tmp/sp-pool.lock}} dev ino key holders p
	[ -r /proc/locks ] && [ -e "$f" ] || return 1
	read -r dev ino < <(stat -L -c '%d %i' "$f" 2>/dev/null) || return 1
	# /proc/locks names a file major:minor:inode, the device numbers in hex.
	key=$(printf '%02x:%02x:%s' $(((dev >> 8) & 0xfff)) $(((dev & 0xff) | ((dev >> 12) & 0xfff00))) "$ino")
	holders=" $(awk -v k="$key" '$2 == "FLOCK" && $6 == k { printf "%s ", $5 }' /proc/locks)"
	[ "$holders" != " " ] || return 1
	p=$PPID
	while [ "${p:-0}" -gt 1 ]; do
		case $holders in *" $p "*) return 0 ;; esac
		p=$(awk '$1 == "PPid:" { print $2 }' "/proc/$p/status" 2>/dev/null)
	done
	return 1
}

# Holds the lock (SP_POOL_LOCK_FILE, else /tmp/sp-pool.lock) on fd 9 for the rest of
# this shell and its children, waiting (and saying so, as who) while another pool user
# runs; nothing if the caller says it holds it (SP_POOL_LOCKED=1) or a process above
# holds it. Exports SP_POOL_LOCKED=1 for the scripts it runs. Without flock, or a lock
# file it can open, it goes on unlocked.
pool_lock_take() { # who
	local f=${SP_POOL_LOCK_FILE:-/tmp/sp-pool.lock}
	[ "${SP_POOL_LOCKED:-}" = 1 ] && return 0
	if pool_lock_held_above "$f"; then
		export SP_POOL_LOCKED=1
		return 0
	fi
	command -v flock >/dev/null || return 0
	{ [ -e "$f" ] || : 2>/dev/null >>"$f"; } && { exec 9<"$f"; } 2>/dev/null || return 0
	if ! flock -n 9; then
		echo "$1: waiting for $f (another pool user runs)" >&2
		flock 9
	fi
	export SP_POOL_LOCKED=1
}
