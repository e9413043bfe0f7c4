-- The NEXMark event stream, as bench/nexmark_gen prints it: every event in
-- event order, led by its kind; the columns of the other kinds are NULL.
-- Every qN.sql reads it:
--   nexmark_gen --events 1000000 | ares-sql --memory -f stream.sql -f qN.sql --ingest nexmark
CREATE STREAM nexmark (
  kind TEXT,
  id BIGINT, name TEXT, emailaddress TEXT, creditcard TEXT, city TEXT, state TEXT,
  itemname TEXT, description TEXT, initialbid BIGINT, reserve BIGINT, expires TIMESTAMP,
  seller BIGINT, category BIGINT,
  auction BIGINT, bidder BIGINT, price BIGINT, channel TEXT, url TEXT,
  datetime TIMESTAMP, extra TEXT
) WITH (timestamp = 'datetime', watermark = '4 seconds');
