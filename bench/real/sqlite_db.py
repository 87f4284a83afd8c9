#!/usr/bin/env python3
"""sqlite_db.py - the SQLite workload of make realbench (bench/real/work/sqlite.sh).

make DB ROWS   writes a database of ROWS rows of ~300 bytes with an index on k
query DB ROWS  loads it whole into SQLite's page cache (mmap off), then times seeded
               random point reads by the index and short range sums; prints a check
               of what they read (the same in every run) and the queries per second
"""
import random
import sqlite3
import sys
import time


def make(path, rows):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, n INTEGER, v TEXT)")
    rnd = random.Random(1)
    batch = []
    for i in range(rows):
        k = (i * 2654435761) % (1 << 32)
        batch.append((i, k, rnd.randrange(1000), "%032x" % k * 9))
        if len(batch) == 50000:
            db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", batch)
            batch = []
    db.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", batch)
    db.execute("CREATE INDEX tk ON t(k)")
    db.commit()
    db.close()


def query(path, rows):
    db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    db.execute("PRAGMA mmap_size=0")
    db.execute("PRAGMA cache_size=-2000000")
    # every page of the table and the index into the cache
    total = db.execute("SELECT count(*), sum(length(v)) FROM t").fetchone()
    db.execute("SELECT count(*) FROM t INDEXED BY tk WHERE k >= 0").fetchone()
    rnd = random.Random(2)
    n = 200000
    keys = [((rnd.randrange(rows)) * 2654435761) % (1 << 32) for _ in range(n)]
    point = "SELECT n FROM t WHERE k = ?"
    ranged = "SELECT sum(n) FROM t WHERE id BETWEEN ? AND ?"
    starts = [rnd.randrange(rows - 100) for _ in range(n // 10)]
    t0 = time.perf_counter()
    acc = 0
    for k in keys:
        acc += db.execute(point, (k,)).fetchone()[0]
    for s in starts:
        acc += db.execute(ranged, (s, s + 100)).fetchone()[0]
    dt = time.perf_counter() - t0
    print("check: %d rows, %d bytes, sum %d" % (total[0], total[1], acc))
    print("sqlite: %.1f queries/s" % ((len(keys) + len(starts)) / dt))


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("make", "query"):
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    (make if sys.argv[1] == "make" else query)(sys.argv[2], int(sys.argv[3]))


if __name__ == "__main__":
    main()
