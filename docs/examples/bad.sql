-- docs/guide.md, section 5: an SQL error with its line, column and caret
CREATE STREAM s (ts TIMESTAMP, a BIGINT) WITH (timestamp = 'ts');
SELECT a
  FROM s
    WHERE b > 1;
