# lib.sh - what the programs of tests/compat/progs/ share: running a command of the
# program under test (plain or under superpage run), servers stopped whatever happens,
# free ports, and packages installed when missing.
# Sourced by tests/compat/run.sh, which sets SP, RT_SO, tmp, PY and the mode's
# SPRUN (the superpage run words, empty for plain) and rdir (this run's directory).
# shellcheck shell=bash disable=SC2034,SC2154

LIMIT=${COMPAT_LIMIT:-240}  # seconds for one command of a program (servers: their life)
CLIENT_LIMIT=120            # seconds for one client or helper command

# Runs a command of the program under test, for at most LIMIT seconds, under the mode:
# its stderr is appended to $rdir/TAG.err, its exit status to $rdir/TAG.rc, its peak
# RSS (KiB, from /usr/bin/time) to $rdir/TAG.rss, its anonymous memory at its peak and
# the part on huge pages to $rdir/TAG.peak. stdout and stdin are the caller's.
# AS=USER runs it as that user (runuser, outside superpage run: the runtime is in the
# user's program, not in runuser).
sprun() { # tag command...
	local tag=$1 rc=0
	shift
	local as=()
	[ -z "${AS:-}" ] || as=(runuser -u "$AS" --)
	# (In the background, for its peak to be sampled; stdin stays the caller's.)
	timeout -k 5 "$LIMIT" /usr/bin/time -f %M -o "$rdir/$tag.rss" \
		"${as[@]}" "${SPRUN[@]}" "$@" <&0 2>>"$rdir/$tag.err" &
	local pid=$!
	sample_peak "$pid" "$tag"
	# (promote mode: its processes promoted PROMOTE_AT seconds into its run)
	promote_start "$pid" "$tag"
	wait "$pid" || rc=$?
	wait "$sampler_pid" || true
	promote_finish
	echo "$rc" >>"$rdir/$tag.rc"
	return "$rc"
}

# Samples the anonymous memory of the process group that timeout(1) leads (pid) while
# it runs, into $rdir/TAG.peak (tests/compat/peak.py), in the background; leaves the
# sampler's pid in sampler_pid (it ends when that process group's leader has).
sampler_pid=''
sample_peak() { # pid tag
	"$PY" "$here/peak.py" "$1" "$rdir/$2.peak" </dev/null >/dev/null 2>&1 &
	sampler_pid=$!
}

# ---------- the promote mode: a program promoted while it runs ----------
# In the promote mode (run_mode promote) the program runs plain, and its processes are
# promoted with superpage promote while it works: a command of it PROMOTE_AT seconds
# (default 1) into its run (sprun does it), a server at the point of its work that
# calls promote_start SERVER_PID TAG before its load and promote_finish after it
# (PROMOTE_AT=no: a command not to promote). Elsewhere both do nothing.

# The processes below pid: its descendants, also those that made a session of their
# own (postgres's backends do).
descendants() { # pid
	ps -eo pid=,ppid= | awk -v root="$1" '{ up[$1] = $2 }
		END { for (p in up) { q = p; while (q in up && q != root) q = up[q]; if (q == root && p != root) print p } }'
}

# Promotes every process below pid (timeout(1), which runs each command) but the
# harness's own (time, runuser), in one superpage promote --json: a JSON object per
# process appended to $rdir/TAG.promote, its stderr to TAG.promote.err, its exit
# status to TAG.promote.rc.
promote_group() { # pid tag
	local pids=() p comm
	for p in $(descendants "$1"); do
		comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
		case "$comm" in timeout | time | runuser) continue ;; esac
		pids+=("$p")
	done
	if [ ${#pids[@]} = 0 ]; then
		echo "it ended before it was promoted" >>"$rdir/$2.promote.err"
		return 0
	fi
	local rc=0
	"$SP" promote --json "${pids[@]}" >>"$rdir/$2.promote" 2>>"$rdir/$2.promote.err" || rc=$?
	echo "$rc" >>"$rdir/$2.promote.rc"
}
promoter_pid=''
promote_start() { # pid tag
	promoter_pid=''
	[ "${run_mode:-}" = promote ] && [ "${PROMOTE_AT:-}" != no ] || return 0
	(sleep "${PROMOTE_AT:-1}"; promote_group "$1" "$2") </dev/null >/dev/null 2>&1 &
	promoter_pid=$!
}
promote_finish() {
	[ -z "$promoter_pid" ] || wait "$promoter_pid" || true
	promoter_pid=''
}

# A client or helper: plain, bounded, its stderr kept in $rdir/client.err.
client() {
	timeout -k 5 "$CLIENT_LIMIT" "$@" 2>>"$rdir/client.err"
}

# Starts a server under the mode in the background, as sprun runs a command, and
# remembers it so that stop_servers ends it. Leaves its pid (that of timeout, which
# passes TERM on to the server) in server_pid and its tag in server_tag.
server_pid='' server_tag=''
start_server() { # tag command...
	local tag=$1
	shift
	local as=()
	[ -z "${AS:-}" ] || as=(runuser -u "$AS" --)
	timeout -k 5 "$LIMIT" /usr/bin/time -f %M -o "$rdir/$tag.rss" \
		"${as[@]}" "${SPRUN[@]}" "$@" </dev/null >>"$rdir/$tag.out" 2>>"$rdir/$tag.err" &
	server_pid=$! server_tag=$tag
	sample_peak "$server_pid" "$tag"
	echo "$server_pid" >>"$tmp/servers"
}

# Waits for the server started last to end (after the caller asked it to), at most N
# seconds, then TERM, then KILL; records its exit status. 0 if it ended by itself.
wait_server() { # [seconds]
	local n=$(( ${1:-60} * 10 )) rc=0 ended=0
	while [ "$n" -gt 0 ]; do
		kill -0 "$server_pid" 2>/dev/null || { ended=1; break; }
		sleep 0.1
		n=$((n - 1))
	done
	if [ "$ended" = 0 ]; then
		kill -TERM "$server_pid" 2>/dev/null
		sleep 3
		kill -KILL "$server_pid" 2>/dev/null
	fi
	wait "$server_pid" 2>/dev/null || rc=$?
	[ "$ended" = 1 ] || rc=124
	echo "$rc" >>"$rdir/$server_tag.rc"
	[ "$rc" = 0 ]
}

# Ends every server still running (timeout passes TERM on to its program; KILL after
# 10 seconds). Called at the end of every run, and from the suite's exit trap.
stop_servers() {
	local pid left
	[ -s "$tmp/servers" ] || return 0
	while read -r pid; do
		kill -TERM "$pid" 2>/dev/null || true
	done <"$tmp/servers"
	for _ in $(seq 100); do
		left=0
		while read -r pid; do
			if kill -0 "$pid" 2>/dev/null; then left=1; fi
		done <"$tmp/servers"
		[ "$left" = 1 ] || break
		sleep 0.1
	done
	while read -r pid; do
		kill -KILL "$pid" 2>/dev/null || true
	done <"$tmp/servers"
	: >"$tmp/servers"
}

# Waits until a command succeeds (a server answers), at most N seconds, while the
# server's pid lives. 0 when it answered.
wait_until() { # seconds pid command...
	local n=$(( $1 * 10 )) pid=$2
	shift 2
	while [ "$n" -gt 0 ]; do
		if "$@" >/dev/null 2>&1; then return 0; fi
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	"$PY" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

is_root() { [ "$(id -u)" = 0 ]; }

# Makes sure a command (a name on PATH, or an absolute path) is there: installs its
# Debian package when it is missing and we are root (apt-get update once a suite);
# otherwise says why in skip_reason and returns 1.
skip_reason=''
need() { # command package
	local cmd=$1 pkg=$2
	have "$cmd" && return 0
	if ! is_root; then
		skip_reason="$cmd missing (apt-get install $pkg as root)"
		return 1
	fi
	if [ ! -e "$tmp/apt-updated" ]; then
		echo "compat: apt-get update" >&2
		DEBIAN_FRONTEND=noninteractive timeout 600 apt-get update -q >"$tmp/apt.log" 2>&1 || true
		: >"$tmp/apt-updated"
	fi
	echo "compat: apt-get install $pkg" >&2
	if ! DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q --no-install-recommends \
		"$pkg" >>"$tmp/apt.log" 2>&1; then
		skip_reason="apt-get install $pkg failed: $(tail -n 1 "$tmp/apt.log")"
		return 1
	fi
	have "$cmd" && return 0
	skip_reason="$cmd still missing after apt-get install $pkg"
	return 1
}
have() {
	case "$1" in
	/*) [ -e "$1" ] ;;
	*) command -v "$1" >/dev/null 2>&1 ;;
	esac
}

# The first status a tagged command of this run exited with that was not 0 (or 0).
tag_status() { # tag
	[ -s "$rdir/$1.rc" ] || { echo 0; return; }
	awk '$1 != 0 { print $1; found = 1; exit } END { if (!found) print 0 }' "$rdir/$1.rc"
}

# In a program's prep: says why it is skipped and ends the prep.
prep_skip() { # reason
	echo "$1" >"$pdir/skip"
	exit 3
}
# In a program's work: says what check failed and ends the run.
check_fail() { # reason
	echo "$1" >"$rdir/why"
	exit 1
}
W=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/work
