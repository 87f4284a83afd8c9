# sqlite3: an in-memory database of 600000 rows (~350 MiB with its page cache),
# indexed, changed and queried; .sha3sum of the whole database.
# shellcheck shell=bash disable=SC2154
prep_sqlite3() { need sqlite3 sqlite3 || prep_skip "$skip_reason"; }
work_sqlite3() { sprun sqlite3 sqlite3 :memory: <"$W/workload.sql"; }
