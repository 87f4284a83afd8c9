-- workload.sql - builds and queries a database in sqlite3, for the preload tests.
-- Run in a folder holding people.csv (from `gendata csv ROWS`): sqlite3 DB <workload.sql
-- The output is the same under every malloc.
PRAGMA journal_mode = WAL;
PRAGMA cache_size = -65536;
CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT, city TEXT, age INTEGER, score REAL);
.mode csv
.import people.csv people
.mode list
CREATE INDEX people_city_age ON people(city, age);
CREATE INDEX people_name ON people(name);

-- Derived tables, updates and deletes, so pages are split, freed and reused.
CREATE TABLE cities AS
	SELECT city, count(*) AS n, round(avg(age), 3) AS mean_age, round(sum(score), 2) AS total
	FROM people GROUP BY city;
UPDATE people SET score = score * 1.5 WHERE age BETWEEN 30 AND 39;
DELETE FROM people WHERE id % 7 = 3;
INSERT INTO people(name, city, age, score)
	SELECT upper(name), city, age + 1, score / 2 FROM people WHERE id % 11 = 0;
CREATE TABLE words AS
	WITH RECURSIVE split(word, rest) AS (
		SELECT '', name || ' ' FROM people WHERE id % 5 = 0
		UNION ALL
		SELECT substr(rest, 1, instr(rest, ' ') - 1), substr(rest, instr(rest, ' ') + 1)
		FROM split WHERE rest <> '')
	SELECT word, count(*) AS n FROM split WHERE word <> '' GROUP BY word;

SELECT 'rows', count(*), sum(age), printf('%.2f', sum(score)) FROM people;
SELECT city, n, mean_age, printf('%.2f', total) FROM cities ORDER BY city;
SELECT p.city, count(*), printf('%.3f', avg(p.score)), max(p.age)
	FROM people p JOIN cities c ON c.city = p.city
	WHERE p.age > c.mean_age GROUP BY p.city ORDER BY 2 DESC, 1;
SELECT name, count(*) FROM people GROUP BY name ORDER BY 2 DESC, 1 LIMIT 10;
SELECT word, n FROM words ORDER BY n DESC, word LIMIT 10;
SELECT group_concat(id, ',') FROM (SELECT id FROM people ORDER BY score DESC, id LIMIT 20);
SELECT age / 10 * 10 AS decade, count(*), printf('%.2f', avg(score))
	FROM people GROUP BY decade ORDER BY decade;
VACUUM;
PRAGMA integrity_check;
SELECT 'after vacuum', count(*), sum(id) FROM people;
