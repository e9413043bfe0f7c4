-- q4, average price per category, as the reference defines it: the winning
-- bid of an auction is its highest bid between its start and its expiry,
-- and the average of the winning bids per category updates as they change.
-- A pipeline (docs/sql.md): a derived stream of the auctions' bids, a table
-- of each auction's highest bid so far (it updates with every higher bid),
-- and a table over that table, whose AVG retracts an auction's old winning
-- bid when a higher one comes, as Flink's updating aggregates do.  The join
-- is bounded by 10 s (an auction lasts at most 2 x 1666 events plus 3 s of
-- disorder: 9.7 s at 500 events/s; README.md).  The output is q4's
-- changelog (op first: +I, -U, +U); consolidated, it is the final answer.
CREATE STREAM q4_bids AS
  SELECT a.id AS id, a.category AS category, b.price AS price, a.datetime AS datetime
  FROM (SELECT id, category, datetime, expires FROM nexmark WHERE kind = 'auction') a
  JOIN (SELECT auction, price, datetime FROM nexmark WHERE kind = 'bid') b
    ON a.id = b.auction WITHIN 10 SECONDS
  WHERE b.datetime BETWEEN a.datetime AND a.expires;
CREATE TABLE q4_winners AS
  SELECT id, category, MAX(price) AS final FROM q4_bids GROUP BY id, category;
CREATE TABLE q4 AS
  SELECT category, AVG(final) AS avgprice FROM q4_winners GROUP BY category;
SUBSCRIBE q4;
