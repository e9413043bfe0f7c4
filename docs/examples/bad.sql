-- docs/guide.md, section 5: an SQL error with its line, column and caret
CREATE STREAM s (ts TIMESTAMP, amount BIGINT) WITH (timestamp = 'ts');
SELECT amount
  FROM s
    WHERE amout > 1;
