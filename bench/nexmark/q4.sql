-- q4, average price per category: the winning bid of an auction is its
-- highest bid between its start and its expiry; average those per category.
-- Flink's query is an updating aggregate over an unbounded join.  Here the
-- join is bounded by 10 s (an auction lasts at most 2 x 1666 events plus
-- 3 s of disorder: 9.7 s at 500 events/s), and both aggregates are EMIT
-- FINAL without a window: one row per category when the input ends (README.md).
SELECT category, AVG(final) AS avgprice
FROM (SELECT a.id AS id, a.category AS category, MAX(b.price) AS final
      FROM (SELECT id, category, datetime, expires FROM nexmark WHERE kind = 'auction') a
      JOIN (SELECT auction, price, datetime FROM nexmark WHERE kind = 'bid') b
        ON a.id = b.auction WITHIN 10 SECONDS
      WHERE b.datetime BETWEEN a.datetime AND a.expires
      GROUP BY a.id, a.category
      EMIT FINAL) q
GROUP BY category
EMIT FINAL;
