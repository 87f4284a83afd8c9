# redis: GET, SET and LRANGE_100 from redis-benchmark over 1M keys of 1 KiB (>= 1 GiB
# of data), one server on loopback, 20 clients.
# shellcheck shell=bash disable=SC2034,SC2154,SC2016
title='redis GET/SET/LRANGE_100 (1M x 1 KiB)'
set=quick
needs='redis-server:redis-server redis-benchmark:redis-tools redis-cli:redis-tools'
metric='^redis: ([0-9.]+) req/s'
extras='GET=^redis: .* GET ([0-9.]+)
SET=^redis: .* SET ([0-9.]+)
LRANGE_100=^redis: .* LRANGE_100 ([0-9.]+)'
redis_keys=${RB_REDIS_KEYS:-1000000}

# The dataset as RESP for redis-cli --pipe: key:000000000000 ... with 1 KiB values,
# the names redis-benchmark -r asks for.
redis_fill() { # keys
	python3 -c '
import sys
n = int(sys.argv[1])
out = sys.stdout.buffer
pad = b"v" * 1000
for i in range(n):
    k = b"key:%012d" % i
    v = (b"%024d" % i) + pad
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
' "$1"
}

redis_rps() { # port requests tests name: requests/s of the test named
	timeout 600 redis-benchmark -p "$1" -c 20 -r "$redis_keys" -n "$2" -d 1024 -t "$3" --csv 2>/dev/null |
		awk -F'"' -v t="$4" '$2 == t || index($2, t " ") == 1 { print $4 }'
}

# Waits for the server to answer on port $1; fails after ~20 s without it.
redis_up() {
	local i
	for i in $(seq 400); do
		redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	return 1
}

redis_client() { # port dir
	local p=$1 d=$2 get set lr v
	unset LD_PRELOAD
	redis_up "$p" || return 1
	redis_fill "$redis_keys" | redis-cli -p "$p" --pipe >"$d/fill.log" 2>&1
	# the check: every key of the dataset is there, one read back as written (before
	# SET overwrites them)
	echo "check: dbsize $(redis-cli -p "$p" dbsize)"
	v=$(redis-cli -p "$p" get key:000000000007 | cut -c1-24)
	[ "$v" = 000000000000000000000007 ] && echo "check: key:000000000007 as written"
	get=$(redis_rps "$p" 200000 get GET)
	set=$(redis_rps "$p" 200000 set SET)
	lr=$(redis_rps "$p" 20000 lpush,lrange_100 LRANGE_100)
	echo "check: dbsize after $(redis-cli -p "$p" dbsize)"
	if [ -n "$get" ] && [ -n "$set" ] && [ -n "$lr" ]; then
		python3 -c 'import sys, math
g, s, l = map(float, sys.argv[1:])
print("redis: %.1f req/s (geometric mean) GET %.1f SET %.1f LRANGE_100 %.1f" % ((g * s * l) ** (1 / 3), g, s, l))' \
			"$get" "$set" "$lr"
	fi
	redis-cli -p "$p" shutdown nosave >/dev/null 2>&1
}

run() { # dir
	local d=$1 p
	p=$(rb_port)
	redis_client "$p" "$d" &
	exec redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$d" --logfile "$d/server.log"
}
