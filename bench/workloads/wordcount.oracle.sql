-- wordcount.sql as a batch over the table lines(ts INTEGER, line TEXT):
-- split(line, ' ') as a recursive CTE (every piece between spaces, empty
-- ones too; an empty line gives none), windows by integer arithmetic.
WITH RECURSIVE piece(ts, word, rest) AS (
    SELECT ts, NULL, line || ' ' FROM lines WHERE line IS NOT NULL AND line <> ''
    UNION ALL
    SELECT ts, substr(rest, 1, instr(rest, ' ') - 1), substr(rest, instr(rest, ' ') + 1)
    FROM piece WHERE rest <> ''
)
SELECT word, COUNT(*) AS n,
       strftime('%Y-%m-%dT%H:%M:%S', (ts - ts % 10000) / 1000, 'unixepoch') || '.000Z' AS window_start
FROM piece WHERE word IS NOT NULL
GROUP BY ts - ts % 10000, word;
