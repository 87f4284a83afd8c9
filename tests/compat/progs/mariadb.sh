# mariadb: MariaDB in a temporary data directory on loopback: a table of 300000
# generated rows (the Sequence engine) in InnoDB, changed, indexed and checksummed.
# If the plain server does not start within a minute, the row is skipped.
# shellcheck shell=bash disable=SC2154
prep_mariadb() {
	need mariadbd mariadb-server || prep_skip "$skip_reason"
	need mariadb-install-db mariadb-server || prep_skip "$skip_reason"
	need mariadb mariadb-client || prep_skip "$skip_reason"
	if is_root; then
		id mysql >/dev/null 2>&1 || prep_skip "no user mysql to run the server as"
	fi
}
maria_up() { mariadb-admin --no-defaults -S "$rdir/mdb.sock" -u root ping; }
work_mariadb() {
	local user=() mode=$1
	is_root && user=(--user=mysql)
	port=$(free_port)
	sprun install mariadb-install-db --no-defaults "${user[@]}" --datadir="$rdir/mdb" \
		--auth-root-authentication-method=normal --skip-test-db >/dev/null
	start_server mariadb mariadbd --no-defaults "${user[@]}" --datadir="$rdir/mdb" \
		--socket="$rdir/mdb.sock" --port="$port" --bind-address=127.0.0.1 \
		--pid-file="$rdir/mdb.pid" --skip-grant-tables --skip-log-bin \
		--innodb-buffer-pool-size=512M --innodb-flush-log-at-trx-commit=0 \
		--log-error="$rdir/mariadb.log"
	if ! wait_until 60 "$server_pid" maria_up; then
		if [ "$mode" = plain ] && kill -0 "$server_pid" 2>/dev/null; then
			echo "mariadbd did not start within a minute" >"$rdir/skip"
			exit 3
		fi
		check_fail "mariadbd did not answer within 60 s: $(tail -n 1 "$rdir/mariadb.log")"
	fi
	client mariadb --no-defaults -S "$rdir/mdb.sock" -u root -N -B <<-SQL ||
		CREATE DATABASE c;
		USE c;
		CREATE TABLE t (id INT PRIMARY KEY, k CHAR(8), v VARCHAR(200), n BIGINT) ENGINE=InnoDB;
		INSERT INTO t SELECT seq, CONCAT('k', LPAD((seq * 7919) % 300000, 7, '0')),
			REPEAT('v', 20 + seq % 80), seq * seq % 1000003 FROM seq_0_to_299999;
		CREATE INDEX t_k ON t (k);
		DELETE FROM t WHERE id % 3 = 1;
		UPDATE t SET n = n + 1 WHERE id % 5 = 0;
		SELECT COUNT(*), SUM(n), SUM(LENGTH(v)) FROM t;
		SELECT k, n FROM t ORDER BY k LIMIT 3 OFFSET 100000;
		SELECT n % 10, COUNT(*), SUM(id) FROM t GROUP BY n % 10 ORDER BY 1;
		SELECT MD5(GROUP_CONCAT(CONCAT(id, ':', n) ORDER BY id SEPARATOR ',')) FROM t WHERE id % 97 = 0;
		CHECKSUM TABLE t EXTENDED;
	SQL
		check_fail "the SQL failed: $(tail -n 1 "$rdir/client.err")"
	client mariadb-admin --no-defaults -S "$rdir/mdb.sock" -u root shutdown >/dev/null ||
		kill -TERM "$(cat "$rdir/mdb.pid")"
	wait_server 60 || check_fail "mariadbd did not end after shutdown"
}
