# sysfs.sh - the sysfs values tests change (pools, THP modes), put back whatever
# happens: each is remembered before its first write and written back by
# sysfs_restore (or sysfs_reset, which goes on remembering it). Sourced by
# tests/run.sh, tests/lib.sh and tests/compat/run.sh.
# shellcheck shell=bash

declare -A sysfs_saved # file -> its value before the first write (of "a [b] c": b)

# The value of a sysfs file; of one that lists choices, "a [b] c", the chosen one.
sysfs_read() { # file
	local v
	v=$(cat "$1" 2>/dev/null) || return 1
	case $v in *\[*\]*)
		v=${v#*\[}
		v=${v%%\]*}
		;;
	esac
	echo "$v"
}

sysfs_remember() { # file: its value now, unless remembered already
	[ -n "${sysfs_saved[$1]+x}" ] || sysfs_saved[$1]=$(sysfs_read "$1")
}

sysfs_write() { # file value: remembers the old value first; fails if the write does
	sysfs_remember "$1"
	echo "$2" >"$1" 2>/dev/null
}

sysfs_forget() { # file: not to be put back (someone else set it since)
	unset "sysfs_saved[$1]"
}

# Puts one remembered value back, and forgets it unless asked to keep it. A pool whose
# pages a process that just ended still holds shrinks a moment later: it is asked
# again for up to 10 s. Says on stderr what it could not put back.
sysfs_restore_one() { # file [keep]
	local f=$1 want=${sysfs_saved[$1]-}
	[ -n "${sysfs_saved[$1]+x}" ] || return 0
	[ "${2-}" = keep ] || unset "sysfs_saved[$f]"
	[ "$(sysfs_read "$f")" = "$want" ] && return 0
	echo "$want" >"$f" 2>/dev/null
	for _ in $(seq 100); do
		[ "$(sysfs_read "$f")" != "$want" ] || return 0
		case $f in */nr_hugepages) ;; *) break ;; esac
		sleep 0.1
		echo "$want" >"$f" 2>/dev/null
	done
	echo "${0##*/}: could not put back $f to $want (it is $(sysfs_read "$f"))" >&2
	return 1
}

# Every remembered value put back: forgotten (sysfs_restore), or still remembered
# (sysfs_reset: tests/run.sh, after each test).
sysfs_put_back() { # forget|keep
	local f
	for f in "${!sysfs_saved[@]}"; do
		sysfs_restore_one "$f" "$1"
	done
	return 0
}
sysfs_restore() { sysfs_put_back forget; }
sysfs_reset() { sysfs_put_back keep; }

# Under THP "always" a plain program's memory is huge from its first touch: tests that
# need it to start on base pages set THP to madvise (remembered, to be put back). Fails,
# with the value put back, where it cannot.
sysfs_thp_not_always() {
	local f=/sys/kernel/mm/transparent_hugepage/enabled
	[ "$(sysfs_read "$f")" = always ] || return 0
	sysfs_write "$f" madvise && [ "$(sysfs_read "$f")" = madvise ] && return 0
	sysfs_restore_one "$f"
	return 1
}
