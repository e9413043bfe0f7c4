-- tpch_join.sql as a batch over the tables orders and lineitem (times as
-- INTEGER epoch ms): the join bound inclusive on both sides, the window on
-- the lineitem's time.
SELECT o.custkey AS custkey, COUNT(*) AS lines, SUM(l.quantity) AS quantity, MAX(l.extendedprice) AS top_price,
       strftime('%Y-%m-%dT%H:%M:%S', (l.ts - l.ts % 10000) / 1000, 'unixepoch') || '.000Z' AS window_start
FROM lineitem l JOIN orders o ON l.orderkey = o.orderkey AND l.ts BETWEEN o.ts - 3000 AND o.ts + 3000
GROUP BY l.ts - l.ts % 10000, o.custkey;
