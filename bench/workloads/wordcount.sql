-- The windowed word count (the paper's first workload): a stream of
-- sentences (bench/workloads/words_gen), split into words, counted per word
-- in 10-second tumbling windows of the sentence's event time.
-- Input: words_gen --rows N --seed S [--rate R] | ares-sql ... --ingest lines
-- The oracle (sqlite3): wordcount.oracle.sql.
CREATE STREAM lines (ts TIMESTAMP, line TEXT) WITH (timestamp = 'ts');
CREATE QUERY wordcount AS
SELECT word, COUNT(*) AS n, window_start
FROM lines CROSS JOIN UNNEST(split(line, ' ')) AS t(word)
WINDOW TUMBLING (SIZE 10 SECONDS)
GROUP BY word EMIT FINAL;
