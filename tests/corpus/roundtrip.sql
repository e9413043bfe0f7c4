-- Round-trip corpus for tests/unit/test_parser.c: every statement here must
-- parse, print, re-parse to an equal AST, and print the same text again.

-- ------------------------------------------------------------ CREATE STREAM
CREATE STREAM bids (auction BIGINT, bidder BIGINT, price DOUBLE, channel TEXT, ts TIMESTAMP)
  WITH (timestamp = 'ts', watermark = '2 seconds', source = 'tcp://127.0.0.1:9100', format = 'csv');
CREATE STREAM IF NOT EXISTS persons (id BIGINT, name VARCHAR, email STRING, city TEXT, state TEXT, ts TIMESTAMP);
CREATE STREAM auctions (id BIGINT, item TEXT, reserve INT, category INTEGER, expires TIMESTAMP(3), ts TIMESTAMP);
CREATE STREAM flags (ok BOOLEAN, also BOOL, f FLOAT, r REAL, v VARCHAR(255));
CREATE STREAM "Mixed Case" ("Key" BIGINT, "va""lue" TEXT);
CREATE STREAM s1 (size BIGINT, gap DOUBLE, key TEXT, value TEXT, timestamp TIMESTAMP, format TEXT, json TEXT);
CREATE STREAM s2 (a BIGINT) WITH (parallelism = 4, ft = replica, placement = nirvana);
CREATE STREAM s3 (a BIGINT) WITH (sink = 'file:/tmp/out.csv', format = json, watermark = '500 ms');
CREATE STREAM s4 (a BIGINT) WITH (x = -3, y = 2.5, z = TRUE, w = FALSE, q = 1e3);
CREATE STREAM s5 (window_start TIMESTAMP, window_end TIMESTAMP, streams BIGINT, nodes BIGINT);
create stream lower_case (a bigint, b double) with (source = 'stdin');

-- ------------------------------------------------------------ CREATE QUERY
CREATE QUERY hot AS
  SELECT auction, COUNT(*) AS bids, MAX(price) AS top, window_start, window_end
  FROM bids WINDOW TUMBLING (SIZE 10 SECONDS)
  WHERE price > 1.5 GROUP BY auction HAVING COUNT(*) >= 3
  EMIT FINAL;
CREATE QUERY IF NOT EXISTS q1 WITH (parallelism = 2) AS SELECT * FROM bids;
CREATE QUERY q2 WITH (ft = checkpoint, placement = 'round-robin') AS SELECT a, b FROM s EMIT CHANGES;
CREATE QUERY q3 AS SELECT bidder, SUM(price) total FROM bids WINDOW HOPPING (SIZE 1 MINUTE, ADVANCE BY 10 SECONDS) GROUP BY bidder;
CREATE QUERY q4 AS SELECT bidder, COUNT(*) FROM bids WINDOW SESSION (GAP 30 SECONDS) GROUP BY bidder EMIT FINAL;
CREATE QUERY q5 AS SELECT bidder, COUNT(*) FROM bids WINDOW SESSION (5 MINUTES) GROUP BY bidder;
CREATE QUERY q6 AS SELECT a FROM s WINDOW TUMBLING (SIZE 1 HOUR, GRACE PERIOD 10 MINUTES) GROUP BY a;
CREATE QUERY q7 AS SELECT a FROM s WINDOW TUMBLING (SIZE 1 DAY, GRACE 0 SECONDS) GROUP BY a;
CREATE QUERY q8 AS SELECT a FROM s WINDOW HOPPING (SIZE 10 SECONDS, ADVANCE BY 2 SECONDS, GRACE 1 SECOND) GROUP BY a;
CREATE QUERY q9 AS SELECT a FROM s WINDOW SESSION (GAP 1500 MILLISECONDS, GRACE PERIOD 250 MILLISECONDS) GROUP BY a;
CREATE QUERY q10 AS SELECT a FROM s WINDOW TUMBLING (SIZE INTERVAL '10' SECOND) GROUP BY a;
CREATE QUERY q11 AS SELECT a FROM s WINDOW TUMBLING (SIZE 1.5 SECONDS) GROUP BY a;
CREATE QUERY q12 AS SELECT a FROM s WINDOW TUMBLING (SIZE 90 MINUTES) GROUP BY a;
CREATE QUERY q13 AS SELECT a FROM s WINDOW TUMBLING (SIZE 48 HOURS) GROUP BY a;
CREATE QUERY q14 AS SELECT a FROM s WINDOW TUMBLING (SIZE 1 MILLISECOND) GROUP BY a;

-- ------------------------------------------------------------ joins and subqueries
SELECT b.auction, b.price, a.item FROM bids b JOIN auctions a ON b.auction = a.id WITHIN 5 SECONDS;
SELECT * FROM bids AS b JOIN auctions AS a ON b.auction = a.id AND b.price > a.reserve WITHIN 1 HOUR EMIT CHANGES;
SELECT p.name, a.item FROM persons p JOIN auctions a ON p.id = a.seller WITHIN INTERVAL '12' HOUR WHERE p.state = 'OR';
SELECT x.a, y.b FROM (SELECT a, k FROM s WHERE a > 0) AS x JOIN (SELECT b, k FROM t) y ON x.k = y.k WITHIN 0 SECONDS;
SELECT auction, price FROM (SELECT auction, MAX(price) AS price FROM bids WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY auction) AS m;
SELECT * FROM (SELECT * FROM (SELECT * FROM s) a) b;
SELECT t.* FROM s t;
SELECT t.*, u.* FROM s t JOIN u ON t.k = u.k WITHIN 2 MINUTES;
SELECT a.x, "B".y FROM s a JOIN s "B" ON a.id = "B".id WITHIN 3 DAYS;

-- ------------------------------------------------------------ plain selects
SELECT a FROM s;
SELECT a, b, c FROM s WHERE a = 1 AND b <> 2 OR c != 3;
SELECT a + b * c, (a + b) * c, a - b - c, a - (b - c), a / b / c, a % b FROM s;
SELECT -a, +a, - -a, -(-a), -(a + b), NOT a, NOT NOT a FROM s;
SELECT a || b || c, (a || b) || c, a || (b || c) FROM s;
SELECT a FROM s WHERE NOT (a = 1 OR b = 2) AND c IS NULL;
SELECT a FROM s WHERE a IS NOT NULL AND (b IS NULL) IS NULL;
SELECT a FROM s WHERE a BETWEEN 1 AND 10 AND b NOT BETWEEN 2 AND 3;
SELECT a FROM s WHERE a BETWEEN b + 1 AND c * 2;
SELECT a FROM s WHERE a IN (1, 2, 3) OR b NOT IN ('x', 'y');
SELECT a FROM s WHERE name LIKE 'a%' AND name NOT LIKE '%z';
SELECT a FROM s WHERE (a = b) = (c = d);
SELECT a FROM s WHERE a = b IS NULL;
SELECT a FROM s WHERE x = (y NOT LIKE 'z');
SELECT a FROM s WHERE (a BETWEEN 1 AND 2) BETWEEN FALSE AND TRUE;
SELECT a FROM s WHERE a < b AND b <= c AND c > d AND d >= e;
SELECT a FROM s WHERE NOT a IS NULL;
SELECT a FROM s WHERE (NOT a) IS NULL;
SELECT a FROM s WHERE a + 1 IN (b, c + 1, d * 2);
SELECT a FROM s WHERE a LIKE b || '%';
SELECT NULL, TRUE, FALSE, 0, 42, 9223372036854775807, 1.5, 0.1, 3.14159, 1e10, 2.5E-3, .5, 7. FROM s;
SELECT 'it''s', '', 'multi
line', 'ünïcödé' FROM s;
SELECT 10 SECONDS, 1 MINUTE, 2 HOURS, 3 DAYS, 250 MILLISECONDS, INTERVAL '7' DAY, 1.5 MINUTES FROM s;
SELECT ts + 5 SECONDS, ts - INTERVAL '1' HOUR FROM s;
SELECT TIMESTAMP '2024-01-02 03:04:05', TIMESTAMP '2024-02-29T23:59:59.999Z', TIMESTAMP '1969-12-31' FROM s;
SELECT TIMESTAMP '2024-06-01 12:00:00+02:00' FROM s WHERE ts > TIMESTAMP '2024-01-01';
SELECT timestamp, size, key, value, format FROM s;
SELECT a AS x, b y, c AS "Quoted Alias", d AS "select" FROM s;
SELECT "select", "from", "Upper", "with space", "a""b" FROM "my stream";
SELECT a AS int, b AS seconds, c AS final FROM s;
SELECT COUNT(*), COUNT(a), COUNT(DISTINCT a), SUM(a), AVG(b), MIN(c), MAX(d) FROM s;
SELECT ABS(a), LOWER(b), UPPER(c), LENGTH(d), COALESCE(a, b, 0), MOD(a, 3) FROM s;
SELECT now(), random(), "MyFunc"(a), f(g(h(x))) FROM s;
SELECT CAST(a AS BIGINT), CAST(b AS INT), CAST(c AS DOUBLE), CAST(d AS TEXT), CAST(e AS BOOLEAN), CAST(f AS TIMESTAMP) FROM s;
SELECT CAST(a AS VARCHAR(10)), CAST(b AS INTEGER), CAST(c AS FLOAT), CAST(d AS STRING) FROM s;
SELECT CASE WHEN a > 0 THEN 'pos' WHEN a < 0 THEN 'neg' ELSE 'zero' END FROM s;
SELECT CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' END AS name FROM s;
SELECT CASE WHEN a IS NULL THEN NULL ELSE CASE WHEN b THEN 1 ELSE 2 END END FROM s;
SELECT CASE a + 1 WHEN b * 2 THEN c || d ELSE -e END FROM s;
SELECT a FROM s LIMIT 10;
SELECT a FROM s EMIT CHANGES LIMIT 5;
SELECT a, COUNT(*) FROM s GROUP BY a HAVING COUNT(*) > 1 AND SUM(b) < 100;
SELECT a, b, COUNT(*) FROM s GROUP BY a, b;
SELECT a FROM s WINDOW TUMBLING (SIZE 5 SECONDS) WHERE a > 0 GROUP BY a HAVING MAX(b) > 1 EMIT FINAL LIMIT 100;
SELECT window_start, window_end, COUNT(*) FROM s WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY window_start, window_end;
SELECT ((((a)))) FROM s;
SELECT a FROM s WHERE ((a = 1) OR (b = 2)) AND ((c = 3) OR (d = 4));
SELECT a * -1, a - -1, a + +1 FROM s;
SELECT -5 SECONDS, -(5 SECONDS) FROM s;
SELECT 1 = 1, 'a' < 'b', 1.0 >= 2 FROM s;
SELECT x FROM s WHERE a NOT IN (1) AND NOT b IN (2);
SELECT x FROM s WHERE a LIKE 'x' LIKE 'y';
SELECT x FROM s WHERE a IS NULL IS NOT NULL;
SELECT x FROM s WHERE a = 1 AND (b = 2 OR c = 3) AND NOT (d = 4 AND e = 5);
SELECT x FROM s WHERE a OR b AND c OR NOT d;
SELECT x FROM s WHERE (a OR b) AND (c OR d);
SELECT 0.30000000000000004, 1e300, 2.2250738585072014e-308, 123456789012345.678 FROM s;
SELECT session, hopping, tumbling FROM s;

-- ------------------------------------------------------------ INSERT
INSERT INTO bids VALUES (1, 2, 3.5, 'web', TIMESTAMP '2024-01-01 00:00:00');
INSERT INTO bids (auction, bidder, price) VALUES (1, 2, 3.5), (4, 5, 6.25), (7, 8, NULL);
INSERT INTO s VALUES (-1, 'x', TRUE), (+2, 'it''s', FALSE);
INSERT INTO "Mixed Case" ("Key", "va""lue") VALUES (1 + 2, 'a' || 'b');
INSERT INTO s (a) VALUES (CAST('5' AS BIGINT));

-- ------------------------------------------------------------ other statements
DROP STREAM bids;
DROP STREAM IF EXISTS bids;
DROP QUERY hot;
DROP QUERY IF EXISTS "Hot Query";
ALTER QUERY hot REBALANCE;
alter query "Hot Query" rebalance;
SHOW STREAMS;
SHOW QUERIES;
SHOW NODES;
SHOW SETTINGS;
SHOW parallelism;
SHOW placement;
DESCRIBE bids;
DESCRIBE "Mixed Case";
SUBSCRIBE hot;
SUBSCRIBE "q with space";
EXPLAIN hot;
EXPLAIN PLACEMENT hot;
EXPLAIN (FORMAT JSON) hot;
EXPLAIN PLACEMENT (FORMAT JSON) hot;
EXPLAIN SELECT a FROM s WHERE a > 1;
EXPLAIN (FORMAT JSON) SELECT a, COUNT(*) FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY a;
EXPLAIN PLACEMENT SELECT * FROM s;
EXPLAIN "placement";
SET parallelism = 4;
SET placement = 'nirvana';
SET ft = replica;
SET debug = TRUE;
SET verbose = FALSE;
SET ratio = 0.75;
SET offset = -10;
SET neg = -2.5;
SET "Quoted" = 'v';
set lower = 'ok'
;
SELECT word, COUNT(*) AS n, window_start FROM lines CROSS JOIN UNNEST(split(line, ' ')) AS t(word) WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY word EMIT FINAL;
SELECT l.ts, w FROM lines l cross join unnest(split(lower(l.line), ',')) w WHERE w <> '';
SELECT * FROM (SELECT line, ts FROM lines) AS s CROSS JOIN UNNEST(split(s.line, ' ')) t ("Word")
;
CREATE STREAM IF NOT EXISTS per10 WITH (timestamp = 'wend', retention = '1 hour') AS SELECT k, COUNT(*) AS n, window_end AS wend FROM odd WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;
INSERT INTO u SELECT ts, k, v FROM ev WHERE k = 2
