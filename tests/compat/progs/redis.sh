# redis: redis-server on loopback filled by DEBUG POPULATE (~300 MiB) and
# redis-benchmark (bounded -n, commands whose end state does not depend on order);
# DEBUG DIGEST, a BGSAVE (a fork), then a restart that loads the dump: its digest must
# be the same. Compared with plain: the digest. In the promote mode the first server is
# promoted while redis-benchmark runs.
# shellcheck shell=bash disable=SC2154
prep_redis() {
	need redis-server redis-server || prep_skip "$skip_reason"
	need redis-cli redis-tools || prep_skip "$skip_reason"
	need redis-benchmark redis-tools || prep_skip "$skip_reason"
}
redis_cli() { client redis-cli -h 127.0.0.1 -p "$port" "$@"; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; }
redis_start() { # tag
	local as=''
	is_root && as=redis
	AS=$as start_server "$1" redis-server --port "$port" --bind 127.0.0.1 --dir "$rdir" \
		--dbfilename dump.rdb --save '' --appendonly no --enable-debug-command local \
		--daemonize no --io-threads 1
	wait_until 60 "$server_pid" redis_up || check_fail "$1 did not answer PING within 60 s"
}
work_redis() {
	local d1 d2 n info why
	port=$(free_port)
	redis_start redis
	redis_cli debug populate 1000000 key 200 >/dev/null
	# (the promote mode: redis-server promoted while redis-benchmark runs)
	PROMOTE_AT=0.3 promote_start "$server_pid" "$server_tag"
	client redis-benchmark -h 127.0.0.1 -p "$port" -n 20000 -c 8 -P 8 -q \
		-t set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,zadd,lrange_100,mset >/dev/null
	promote_finish
	d1=$(redis_cli debug digest)
	echo "digest $d1 keys $(redis_cli dbsize)"
	redis_cli bgsave >/dev/null
	for n in $(seq 600); do
		info=$(redis_cli info persistence)
		grep -q '^rdb_bgsave_in_progress:0' <<<"$info" && break
		sleep 0.1
	done
	[ "$n" -lt 600 ] || check_fail "BGSAVE still running after 60 s"
	info=$(redis_cli info persistence)
	if ! grep -q '^rdb_last_bgsave_status:ok' <<<"$info"; then
		why=$(grep -i 'background\|error' "$rdir/redis.out" | tail -n 1)
		case "$why" in
		*"by signal"*) check_fail "CRASH the BGSAVE child: ${why#*# }" ;;
		*) check_fail "BGSAVE failed: $why" ;;
		esac
	fi
	redis_cli shutdown nosave >/dev/null || true
	wait_server 60 || check_fail "redis-server did not end after SHUTDOWN"
	redis_start redis2
	d2=$(redis_cli debug digest)
	[ "$d2" = "$d1" ] || check_fail "digest after reloading the BGSAVE dump is $d2, was $d1"
	echo "reloaded: same digest"
	redis_cli shutdown nosave >/dev/null || true
	wait_server 60 || check_fail "redis-server (reloaded) did not end after SHUTDOWN"
}
