# sqlite: random point reads and range sums over a ~1 GiB database held in SQLite's
# own page cache (python3's sqlite3), the process whose heap holds it.
# shellcheck shell=bash disable=SC2034,SC2154
title='SQLite point reads, 1 GiB db in its cache'
set=quick
needs='python3:python3'
metric='^sqlite: ([0-9.]+) queries/s'
rows=${RB_SQLITE_ROWS:-3000000}

prepare() { # dir
	local d=$1
	[ -s "$d/db.sqlite" ] && [ "$(cat "$d/db.rows" 2>/dev/null)" = "$rows" ] && return 0
	rm -f "$d/db.sqlite" "$d/db.rows"
	python3 "$real/sqlite_db.py" make "$d/db.sqlite" "$rows" >&2 || { echo "could not make the database"; return 1; }
	echo "$rows" >"$d/db.rows"
}

run() { # dir
	exec python3 "$real/sqlite_db.py" query "$1/db.sqlite" "$rows"
}
