# pgbench: PostgreSQL at scale 50 (5M accounts, ~750 MB: far past the reach of the
# TLB's 4 KiB entries) held whole in shared_buffers (1 GB, huge_pages=try: on the 2 MiB
# pool where it has room, for plain too, as PostgreSQL does by default), prewarmed;
# then pgbench's select-only and tpcb-like runs, 4 clients, a fixed number of
# transactions each. The check: every transaction done, none failed, and the
# balances of accounts, tellers and branches add up to the history's deltas. The
# database is made once (prepare) and put back after each run.
# shellcheck shell=bash disable=SC2034,SC2154
title='PostgreSQL pgbench select-only and tpcb-like, scale 50'
set=full
needs='pgbench:postgresql psql:postgresql-client setpriv:util-linux runuser:util-linux'
metric='^pgbench: ([0-9.]+) tps'
expect='^check: balances add up to the history$'
extras='select-only tps=^pgbench: .* select-only ([0-9.]+)
tpcb-like tps=^pgbench: .* tpcb-like ([0-9.]+)
shared memory on hugetlb MiB=^pgbench: .* hugetlb ([0-9]+) MiB'
pg_scale=${RB_PG_SCALE:-50}
pg_buffers=${RB_PG_SHARED_BUFFERS:-1GB}
pg_huge=${RB_PG_HUGE_PAGES:-try}
pg_select=${RB_PG_SELECT_TX:-100000}
pg_tpcb=${RB_PG_TPCB_TX:-8000}
# the newest server Debian installed
pg_bin=$(find /usr/lib/postgresql -maxdepth 3 -path '*/bin/postgres' 2>/dev/null | sort -V | tail -n 1)
pg_bin=${pg_bin%/postgres}

# Runs a command as the server's user (postgres when we are root).
pg_as() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_sql() { # port sql...
	local p=$1
	shift
	"$pg_bin/psql" -h 127.0.0.1 -p "$p" -U postgres -X -A -t -q -v ON_ERROR_STOP=1 postgres "$@"
}

# Waits for the server to take connections on port $1; fails after ~60 s without it.
pg_up() {
	local i
	for i in $(seq 600); do
		"$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$1" -U postgres && return 0
		sleep 0.1
	done
	return 1
}

prepare() { # dir
	local d=$1 p
	[ -n "$pg_bin" ] || { echo "no PostgreSQL server in /usr/lib/postgresql/*/bin (apt-get install postgresql)"; return 1; }
	if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
		echo "no user postgres to run the server as"
		return 1
	fi
	[ -s "$d/pgdata/PG_VERSION" ] && [ "$(cat "$d/pg.made" 2>/dev/null)" = "$pg_bin $pg_scale $pg_buffers $pg_huge" ] &&
		return 0
	rm -rf "$d/pgdata" "$d/pg.made"
	mkdir -p "$d/pgdata"
	[ "$(id -u)" = 0 ] && chown postgres: "$d/pgdata"
	chmod 700 "$d/pgdata"
	pg_as "$pg_bin/initdb" -D "$d/pgdata" -A trust -U postgres -E UTF8 --locale=C --no-sync >&2 ||
		{ echo "initdb failed"; return 1; }
	# the disk is not what is measured: no fsync; no autovacuum or JIT coming and going
	# between the runs; TCP on loopback only
	cat >>"$d/pgdata/postgresql.conf" <<-CONF
		listen_addresses = '127.0.0.1'
		unix_socket_directories = ''
		shared_buffers = $pg_buffers
		huge_pages = $pg_huge
		fsync = off
		synchronous_commit = off
		full_page_writes = off
		max_wal_size = 8GB
		checkpoint_timeout = 1h
		autovacuum = off
		jit = off
	CONF
	p=$(rb_port)
	pg_as "$pg_bin/pg_ctl" -D "$d/pgdata" -o "-p $p" -l "$d/pgdata/prepare.log" -w -t 120 start >&2 ||
		{ echo "the server did not start (see $d/pgdata/prepare.log)"; return 1; }
	if ! "$pg_bin/pgbench" -h 127.0.0.1 -p "$p" -U postgres -i -s "$pg_scale" -q postgres >&2 ||
		! pg_sql "$p" -c 'CREATE EXTENSION IF NOT EXISTS pg_prewarm' -c 'VACUUM ANALYZE' -c CHECKPOINT >&2; then
		pg_as "$pg_bin/pg_ctl" -D "$d/pgdata" -m fast stop >&2
		echo "pgbench -i -s $pg_scale failed"
		return 1
	fi
	pg_as "$pg_bin/pg_ctl" -D "$d/pgdata" -m fast -w stop >&2 || { echo "the server did not stop"; return 1; }
	echo "$pg_bin $pg_scale $pg_buffers $pg_huge" >"$d/pg.made"
}

# pgbench's tps (without the connection time) from its log.
pg_tps() { sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$1"; }

pg_client() { # port dir server-pid
	local p=$1 d=$2 pid=$3 sel tpcb huge c=4 sums
	unset LD_PRELOAD
	pg_up "$p" || return 1
	# every block of the tables and their indexes into shared_buffers
	pg_sql "$p" -c "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c
		WHERE c.relname LIKE 'pgbench%' AND c.relkind IN ('r', 'i')" >"$d/prewarm.log" || return 1
	# the size of the server's mappings of hugetlb pages (its shared memory when
	# huge_pages got them), not the pages it touched itself
	huge=$(awk '/^Size:/ { s = $2 } /^KernelPageSize:/ && $2 >= 2048 { t += s }
		END { print int(t / 1024) }' "/proc/$pid/smaps")
	"$pg_bin/pgbench" -h 127.0.0.1 -p "$p" -U postgres -n -S -c $c -j 2 -t $((pg_select / c)) \
		--random-seed=7 postgres >"$d/select.log" 2>&1 || return 1
	"$pg_bin/pgbench" -h 127.0.0.1 -p "$p" -U postgres -n -c $c -j 2 -t $((pg_tpcb / c)) \
		--random-seed=7 postgres >"$d/tpcb.log" 2>&1 || return 1
	for f in select tpcb; do
		echo "check: $f $(grep -E '^number of (transactions actually processed|failed transactions)' "$d/$f.log" |
			sed 's/ (.*//' | tr '\n' ' ')"
	done
	# each transaction adds its delta to an account, a teller and a branch and writes it
	# to the history; the tables start each run at 0 and an empty history
	sums=$(pg_sql "$p" -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts) = h AND
		(SELECT sum(tbalance) FROM pgbench_tellers) = h AND (SELECT sum(bbalance) FROM pgbench_branches) = h
		FROM (SELECT coalesce(sum(delta), 0) AS h FROM pgbench_history) x")
	[ "$sums" = t ] && echo "check: balances add up to the history"
	echo "check: history rows $(pg_sql "$p" -c 'SELECT count(*) FROM pgbench_history')"
	sel=$(pg_tps "$d/select.log") tpcb=$(pg_tps "$d/tpcb.log")
	if [ -n "$sel" ] && [ -n "$tpcb" ]; then
		python3 -c 'import sys
s, t, h = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
print("pgbench: %.1f tps (geometric mean) select-only %.1f tpcb-like %.1f, hugetlb %s MiB" % ((s * t) ** 0.5, s, t, h))' \
			"$sel" "$tpcb" "$huge"
	fi
	# the database as it was for the next run
	pg_sql "$p" -c 'UPDATE pgbench_accounts SET abalance = 0 WHERE aid IN (SELECT aid FROM pgbench_history)' \
		-c 'UPDATE pgbench_tellers SET tbalance = 0' -c 'UPDATE pgbench_branches SET bbalance = 0' \
		-c 'TRUNCATE pgbench_history' -c 'VACUUM pgbench_accounts, pgbench_tellers, pgbench_branches' >/dev/null
}

run() { # dir
	local d=$1 p
	p=$(rb_port)
	# the client is the server's child once it execs: it must end with status 0 (the
	# postmaster takes another status of a child for a crashed backend); it stops the
	# server (SIGINT: a fast shutdown) whatever happened
	{ pg_client "$p" "$d" $$; kill -INT $$; exit 0; } &
	local as=()
	[ "$(id -u)" = 0 ] && as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
	exec "${as[@]}" "$pg_bin/postgres" -D "$d/pgdata" -p "$p"
}
