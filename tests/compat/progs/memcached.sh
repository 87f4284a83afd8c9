# memcached: 250000 keys of 1 KiB (with their slabs ~300 MiB) set and read back over
# loopback by a bounded client, which verifies every value; then the item counts.
# shellcheck shell=bash disable=SC2154
prep_memcached() { need memcached memcached || prep_skip "$skip_reason"; }
memc_up() { "$PY" "$W/memc.py" "$port" ping; }
work_memcached() {
	local user=()
	is_root && user=(-u memcache)
	port=$(free_port)
	start_server memcached memcached "${user[@]}" -l 127.0.0.1 -p "$port" -U 0 -m 1024 -t 2 -c 64 -A
	wait_until 60 "$server_pid" memc_up || check_fail "memcached did not answer within 60 s"
	client "$PY" "$W/memc.py" "$port" run 250000 || check_fail "the client failed: $(tail -n 1 "$rdir/client.err")"
	client "$PY" "$W/memc.py" "$port" shutdown || true
	wait_server 60 || check_fail "memcached did not end after shutdown"
}
