SELECT word, COUNT(*) AS n, window_start FROM lines CROSS JOIN UNNEST(split(line, ' ')) AS t(word) WINDOW TUMBLING (SIZE 10 SECONDS) WHERE t.word <> '' GROUP BY word EMIT FINAL;
SELECT * FROM (SELECT line FROM l) AS x cross join unnest(split(lower(x.line), ',')) w;
