# memcached: 2M keys of ~1 KiB (~2.4 GiB of items) set over loopback, then 4M of them
# read at random in multi-gets of 100 over 4 connections, every value checked against
# the one written (bench/real/memc_load.c, a client written here, built with gcc).
# shellcheck shell=bash disable=SC2034,SC2154
title='memcached multi-get over 2M x 1 KiB'
set=full
needs='memcached:memcached gcc:gcc'
metric='^memcached: ([0-9.]+) gets/s'
expect='^check: every value as written, none evicted$'
extras='sets/s=^memcached: .* sets ([0-9.]+) per s'
memc_keys=${RB_MEMC_KEYS:-2000000}
memc_gets=${RB_MEMC_GETS:-4000000}

prepare() { # dir
	local d=$1
	gcc -O2 -Wall -o "$d/memc_load" "$real/memc_load.c" -lpthread >&2 ||
		{ echo "could not build bench/real/memc_load.c"; return 1; }
	if [ "$(id -u)" = 0 ] && ! id memcache >/dev/null 2>&1; then
		echo "no user memcache to run memcached as"
		return 1
	fi
}

# Waits for the server to answer on port $1; fails after ~20 s without it.
memc_up() {
	local i
	for i in $(seq 400); do
		{ exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null && { exec 3>&-; return 0; }
		sleep 0.05
	done
	return 1
}

memc_client() { # port dir server-pid
	local p=$1 d=$2
	unset LD_PRELOAD
	memc_up "$p" && "$d/memc_load" "$p" "$memc_keys" "$memc_gets" 4 100
	# -A lets the shutdown command end the server (exit status 0); a server that does
	# not answer is killed (no result), so that the run ends either way
	if { exec 3<>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null; then
		printf 'shutdown\r\n' >&3
		exec 3>&-
	else
		kill "$3"
	fi
}

run() { # dir
	local d=$1 p user=()
	p=$(rb_port)
	[ "$(id -u)" = 0 ] && user=(-u memcache)
	memc_client "$p" "$d" $$ &
	# the item memory with room to spare: no eviction may happen (the check)
	exec memcached "${user[@]}" -l 127.0.0.1 -p "$p" -U 0 -t 2 -c 256 -A \
		-m $((memc_keys * 13 / 10240 + 256))
}
