# postgres: PostgreSQL 15 in a temporary cluster on loopback (not as root: as the
# postgres user): initdb, pgbench -i -s 20, pgbench -c 4 -t 2000 with a fixed random
# seed (its updates add, so the end state does not depend on the clients' order), then
# checksum queries over every table (the sum of the balances against the history's
# deltas among them). In the promote mode the server and its backends are promoted
# while pgbench runs.
# shellcheck shell=bash disable=SC2154
PG_BIN=/usr/lib/postgresql/15/bin
prep_postgres() {
	need "$PG_BIN/postgres" postgresql-15 || prep_skip "$skip_reason"
	need "$PG_BIN/pgbench" postgresql-15 || prep_skip "$skip_reason"
	need "$PG_BIN/psql" postgresql-client-15 || prep_skip "$skip_reason"
	if is_root; then
		id postgres >/dev/null 2>&1 || prep_skip "no user postgres to run the server as"
	fi
}
pg_up() { "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port"; }
work_postgres() {
	local as='' data=$rdir/pgdata pid bench sums
	local pg=(-h 127.0.0.1 -p 0 -U postgres)
	is_root && as=postgres
	port=$(free_port)
	pg[3]=$port
	AS=$as PROMOTE_AT=no sprun initdb "$PG_BIN/initdb" -D "$data" -A trust -U postgres -E UTF8 --locale=C \
		--no-sync >/dev/null
	# huge_pages off: plain stays on base pages, and --shm is what puts shared memory on
	# hugetlb; fsync off: the disk is not what is tested.
	cat >>"$data/postgresql.conf" <<-CONF
		listen_addresses = '127.0.0.1'
		port = $port
		unix_socket_directories = '$rdir'
		huge_pages = off
		shared_buffers = 256MB
		fsync = off
		synchronous_commit = off
		max_wal_size = 2GB
	CONF
	AS=$as start_server postgres "$PG_BIN/postgres" -D "$data"
	wait_until 60 "$server_pid" pg_up || check_fail "postgres did not accept connections within 60 s"
	client "$PG_BIN/pgbench" "${pg[@]}" -i -s 20 -q postgres >/dev/null 2>&1 ||
		check_fail "pgbench -i failed: $(tail -n 1 "$rdir/client.err")"
	# (the promote mode: every process of the server, its backends too, promoted while
	# pgbench runs)
	client "$PG_BIN/pgbench" "${pg[@]}" -c 4 -j 2 -t 2000 --random-seed=7 postgres >"$rdir/pgbench.log" &
	bench=$!
	PROMOTE_AT=1 promote_start "$server_pid" "$server_tag"
	wait "$bench" || check_fail "pgbench failed: $(tail -n 1 "$rdir/client.err")"
	promote_finish
	grep -E '^number of (transactions actually processed|failed)' "$rdir/pgbench.log"
	client "$PG_BIN/psql" "${pg[@]}" -X -A -t -v ON_ERROR_STOP=1 postgres <<-SQL
		SELECT count(*), sum(abalance), md5(string_agg(aid || ':' || abalance, ',' ORDER BY aid)) FROM pgbench_accounts;
		SELECT count(*), sum(bbalance) FROM pgbench_branches;
		SELECT count(*), sum(tbalance), md5(string_agg(tid || ':' || tbalance, ',' ORDER BY tid)) FROM pgbench_tellers;
		SELECT count(*), sum(delta), sum(aid::bigint * delta) FROM pgbench_history;
		SELECT md5(string_agg(filler, '' ORDER BY aid)) FROM pgbench_accounts WHERE aid % 1000 = 0;
	SQL
	# pgbench's tables start at 0 and each transaction adds its delta to an account, a
	# teller and a branch and writes it to the history: the sums must agree.
	sums=$(client "$PG_BIN/psql" "${pg[@]}" -X -A -t -v ON_ERROR_STOP=1 postgres -c "
		SELECT (SELECT sum(abalance) FROM pgbench_accounts) = h AND
		       (SELECT sum(tbalance) FROM pgbench_tellers) = h AND
		       (SELECT sum(bbalance) FROM pgbench_branches) = h
		FROM (SELECT sum(delta) AS h FROM pgbench_history) x")
	[ "$sums" = t ] || check_fail "the balances do not add up to the history's deltas ($sums)"
	echo "balances add up to the history"
	pid=$(head -n 1 "$data/postmaster.pid")
	kill -INT "$pid"  # fast shutdown
	wait_server 60 || check_fail "postgres did not end after SIGINT"
}
