-- q4 as a batch over all events (sqlite3): the reference's unbounded join;
-- AVG as a double (Flink's AVG of a BIGINT truncates to a BIGINT).
SELECT category, AVG(final) AS avgprice
FROM (SELECT a.id, a.category, MAX(b.price) AS final
      FROM auction a JOIN bid b ON a.id = b.auction
      WHERE b.datetime BETWEEN a.datetime AND a.expires
      GROUP BY a.id, a.category)
GROUP BY category;
