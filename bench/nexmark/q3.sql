-- q3, local item suggestion: auctions in category 10 with their sellers,
-- for sellers in Oregon, Idaho or California.  Flink's join is unbounded;
-- here it is bounded by 2 minutes of event time, far more than the 1010
-- people (50,500 events) back or 10 ahead that a seller can be, plus 3 s of
-- disorder, for event rates of 500 events/s and above (README.md).
SELECT p.name, p.city, p.state, a.id
FROM (SELECT id, seller, datetime FROM nexmark WHERE kind = 'auction' AND category = 10) a
JOIN (SELECT id, name, city, state, datetime FROM nexmark
      WHERE kind = 'person' AND state IN ('OR', 'ID', 'CA')) p
  ON a.seller = p.id WITHIN 2 MINUTES;
