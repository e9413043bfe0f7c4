SELECT s.ts, s.k, t.name FROM s LEFT OUTER JOIN t AS x ON s.k = x.k AND x.v > 2 WHERE s.q IS NOT NULL;
SELECT * FROM s INNER JOIN t ON s.k = t.k;
