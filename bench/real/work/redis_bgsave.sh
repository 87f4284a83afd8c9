# redis BGSAVE: p99 latency of 20 clients overwriting 1 KiB values while the server
# forks for a BGSAVE of 1M keys, and the peak RSS of the server and its child together
# (the fork's copy-on-write, which THP is said to make worse).
# shellcheck source=bench/real/work/redis.sh
# shellcheck shell=bash disable=SC2034,SC2154
. "$real/work/redis.sh"
title='redis p99 during BGSAVE under write load (1M x 1 KiB)'
metric='^bgsave: p99 ([0-9.]+) ms'
lower=1
expect='^check: bgsave ok'
extras='peak RSS server+child MiB=^bgsave: .* peak ([0-9.]+) MiB
copy-on-write MiB=^bgsave: .* cow ([0-9.]+) MiB'

# The summed RSS in KiB of a process and its children.
bgsave_rss() { # pid
	local t=0 p v
	for p in "$1" $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		v=$(awk '/^VmRSS:/ { print $2 }' /proc/"$p"/status 2>/dev/null)
		t=$((t + ${v:-0}))
	done
	echo $t
}

bgsave_client() { # port dir server-pid
	local p=$1 d=$2 pid=$3 peak=0 r csv p99 cow bpid
	unset LD_PRELOAD
	redis_up "$p" || return 1
	redis_fill "$redis_keys" | redis-cli -p "$p" --pipe >"$d/fill.log" 2>&1
	echo "check: dbsize $(redis-cli -p "$p" dbsize)"
	timeout 600 redis-benchmark -p "$p" -c 20 -r "$redis_keys" -n 300000 -d 1024 -t set --csv \
		>"$d/load.csv" 2>/dev/null &
	bpid=$!
	sleep 1
	redis-cli -p "$p" bgsave >/dev/null
	sleep 0.2
	# sample until the save is done
	while redis-cli -p "$p" info persistence | grep -q '^rdb_bgsave_in_progress:1'; do
		r=$(bgsave_rss "$pid")
		[ "$r" -gt "$peak" ] && peak=$r
		sleep 0.1
	done
	wait "$bpid"
	csv=$(cat "$d/load.csv")
	p99=$(echo "$csv" | awk -F'"' '$2 == "SET" { print $14 }')
	cow=$(redis-cli -p "$p" info persistence | awk -F: '/^rdb_last_cow_size:/ { print $2 }' | tr -d '\r')
	if redis-cli -p "$p" info persistence | grep -q '^rdb_last_bgsave_status:ok' && [ -s "$d/dump.rdb" ]; then
		echo "check: bgsave ok"
	fi
	rm -f "$d/dump.rdb"
	[ -n "$p99" ] && echo "bgsave: p99 $p99 ms, peak $((peak / 1024)) MiB, cow $(( ${cow:-0} / 1048576 )) MiB"
	redis-cli -p "$p" shutdown nosave >/dev/null 2>&1
}

run() { # dir
	local d=$1 p
	p=$(rb_port)
	bgsave_client "$p" "$d" $$ &
	exec redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$d" --logfile "$d/server.log" --dbfilename dump.rdb
}
