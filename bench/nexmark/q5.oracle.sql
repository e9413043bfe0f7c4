-- q5 as a batch over all events (sqlite3): a bid at time t is in the five
-- 10 s windows that start at floor(t / 2 s) * 2 s - k * 2 s, k = 0..4.
WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 4),
counts AS (
  SELECT auction, ws, COUNT(*) AS num
  FROM (SELECT auction, datetime - datetime % 2000 - n * 2000 AS ws FROM bid, k)
  GROUP BY auction, ws),
maxes AS (SELECT ws, MAX(num) AS maxn FROM counts GROUP BY ws)
SELECT c.auction, c.num,
       strftime('%Y-%m-%dT%H:%M:%S', c.ws / 1000, 'unixepoch') || '.000Z' AS starttime,
       strftime('%Y-%m-%dT%H:%M:%S', (c.ws + 10000) / 1000, 'unixepoch') || '.000Z' AS endtime
FROM counts c JOIN maxes m ON c.ws = m.ws
WHERE c.num >= m.maxn;
