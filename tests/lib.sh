# lib.sh - what the test scripts of tests/cli and tests/runtime share: result lines,
# running the command, and sysfs values (and a held helper program) put back whatever
# happens. Sourced, not run (tests/run.sh runs test_*.sh only). The caller sets tmp and
# SP; failed and rc are the caller's to read, running (the pid limited waits for) its
# trap's.
# shellcheck shell=bash disable=SC2034,SC2154

failed=0
hold_pid='' hold_in=''
# shellcheck source=tests/sysfs.sh
. "$(dirname "${BASH_SOURCE[0]}")/sysfs.sh"
# A script run by hand holds the pool lock as tests/run.sh does (which holds it for
# the scripts it runs): its tests set pools and read their free pages.
# shellcheck source=tests/pool_lock.sh
. "$(dirname "${BASH_SOURCE[0]}")/pool_lock.sh"
pool_lock_take "$(basename "$0")"

pass() { echo "PASS $1${2:+: $2}"; }
fail() { echo "FAIL $1: $2"; failed=1; }
skip() { echo "SKIP $1: $2"; }

# Runs the command; leaves rc, and stdout/stderr in $tmp/out and $tmp/err.
sp() { "$SP" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

# The real python3, not a wrapper script that finds it.
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)

# Every run gets a time limit: a deadlock in the runtime must fail, not hang make check.
# It runs in the background and is waited for, so that Ctrl-C ends it (timeout passes
# the signal to the whole run) and the traps put sysfs back at once.
limited() { # out err command... : leaves rc
	local out=$1 err=$2
	shift 2
	timeout -k 5 $LIMIT "$@" <&0 >"$out" 2>"$err" &
	running=$!
	# (2>/dev/null: bash's own "Segmentation fault" line; the test says what happened)
	wait $running 2>/dev/null
	rc=$?
	running=''
}

# Runs a command for at most LIMIT seconds; leaves rc, $tmp/name.out and $tmp/name.err.
LIMIT=120
run_timed() { # name command...
	local name=$1
	shift
	timeout -k 5 "$LIMIT" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	rc=$?
}
run() { run_timed "$@"; }
# The last lines (3, or N) of a file on one line, cut short.
oneline() { tail -n "${2:-3}" "$1" | tr '\n' ' ' | cut -c 1-300; }
nlines() { wc -l <"$1" | tr -d ' '; }
is_root() { [ "$(id -u)" = 0 ]; }

# Remembers a sysfs value to put back, unless it is remembered already.
remember() { sysfs_remember "$1"; }
# Writes a sysfs value, remembering the old one first.
set_sysfs() { sysfs_write "$1" "$2"; }

# Ends the helper program a test holds open (EOF on its stdin; a stuck one is killed).
stop_hold() {
	if [ -n "$hold_in" ]; then
		exec {hold_in}>&-
		hold_in=''
	fi
	if [ -n "$hold_pid" ]; then
		for _ in $(seq 100); do kill -0 "$hold_pid" 2>/dev/null || break; sleep 0.1; done
		kill "$hold_pid" 2>/dev/null
		wait "$hold_pid" 2>/dev/null
		hold_pid=''
	fi
}

# Puts back every sysfs value written since the last restore.
restore() {
	stop_hold
	sysfs_restore
}

# Why this build's runtime cannot be preloaded into other programs, or nothing: the
# SANITIZE build's runtime brings ASan, which must come first and owns malloc (found by
# the build directory's name or by the library itself).
preload_blocker() { # build_dir runtime
	case "/${1%/}" in
	*/san) ;;
	*) grep -qa 'libasan\.so' "$2" 2>/dev/null || return 0 ;;
	esac
	echo "the SANITIZE build's runtime cannot be preloaded (ASan owns malloc)"
}

# ---------- the 2M pool, relative to what it holds ----------
# (others may be using it: a test adds pages to it and puts back what it held)

P2M=/sys/kernel/mm/hugepages/hugepages-2048kB

pool_set_to='' # nr_hugepages as it read after this script set it
pool_nums() { nr=$(cat $P2M/nr_hugepages) free=$(cat $P2M/free_hugepages) resv=$(cat $P2M/resv_hugepages); }

# Sets the pool and remembers what it read back.
pool_write() { # count
	set_sysfs $P2M/nr_hugepages "$1"
	pool_set_to=$(cat $P2M/nr_hugepages)
}

# Puts back what the pool held, unless another process (a benchmark's --setup-pools)
# has set it since: then its value stands, and that is said.
put_pool_back() {
	local f=$P2M/nr_hugepages now
	if [ -n "$pool_set_to" ] && [ -n "${sysfs_saved[$f]+x}" ]; then
		now=$(cat $f)
		if [ "$now" != "$pool_set_to" ]; then
			echo "${0##*/}: $f is $now, not $pool_set_to as set here: another" \
				"process set it; left as it is" >&2
			sysfs_forget "$f"
		fi
	fi
	pool_set_to=''
	restore
}

# Returns 1, with why, unless this process may set the 2M pool.
pool_2m_settable() {
	why=''
	if ! is_root; then
		why="needs root to set the 2M pool"
	elif [ ! -w $P2M/nr_hugepages ]; then
		why="no 2M hugetlb pages on this machine"
	fi
	[ -z "$why" ]
}

# Gives the 2M pool n more free pages than it has in use. Returns 1 (and puts it back)
# if the kernel does not give them or there is no 2M pool; says why in $why.
pool_2m() { # n
	local n=$1 nr free resv avail
	pool_2m_settable || return 1
	nr=$(cat $P2M/nr_hugepages) free=$(cat $P2M/free_hugepages) resv=$(cat $P2M/resv_hugepages)
	set_sysfs $P2M/nr_hugepages $((nr - free + resv + n))
	free=$(cat $P2M/free_hugepages) resv=$(cat $P2M/resv_hugepages)
	avail=$((free - resv))
	if [ "$avail" -lt "$n" ]; then
		why="the kernel gave $avail of $n free 2M pages"
	elif [ "$avail" -gt $((2 * n)) ]; then
		why="the 2M pool keeps $avail free pages, want about $n"
	fi
	[ -z "$why" ] && return 0
	restore
	return 1
}

# Gives the 2M pool n more pages than it has (it may be in use by others: their free
# pages stay theirs). Returns 1, with why, if that cannot be.
pool_add() { # n
	local n=$1
	pool_2m_settable || return 1
	pool_nums
	pool_write $((nr + n))
	pool_nums
	if [ "$nr" -lt "$pool_set_to" ] || [ $((free - resv)) -lt "$n" ]; then
		why="the kernel gave $((nr - ${sysfs_saved[$P2M/nr_hugepages]})) of $n more 2M pages ($free free, $resv reserved)"
		put_pool_back
		return 1
	fi
	return 0
}
