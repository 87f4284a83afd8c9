-- workload.sql - make compat: an in-memory SQLite database built, indexed, changed and
-- queried; the output (and .sha3sum of the database) depends only on the arithmetic.
PRAGMA cache_size=-600000;
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v TEXT, n INTEGER);
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 599999)
INSERT INTO t SELECT i, printf('k%07d', (i * 7919) % 600000), printf('%.*c', 120 + i % 160, 'v'), i * i % 1000003 FROM s;
CREATE INDEX t_k ON t(k);
CREATE INDEX t_n ON t(n);
DELETE FROM t WHERE id % 3 = 1;
UPDATE t SET n = n + 1 WHERE id % 5 = 0;
SELECT count(*), sum(n), sum(length(v)) FROM t;
SELECT k, n FROM t ORDER BY k LIMIT 3 OFFSET 200000;
SELECT n % 10, count(*), sum(id) FROM t GROUP BY n % 10 ORDER BY 1;
.sha3sum
