-- The oracle's views, for sqlite3.  check.sh first creates the table
-- `nexmark` from stream.sql (the same columns, BIGINT and TIMESTAMP as
-- INTEGER, times in epoch milliseconds) and imports the events into it;
-- these views give each kind the reference's columns.  The oracle queries
-- print times as ares-sql prints a TIMESTAMP (ISO 8601, UTC, milliseconds).
CREATE VIEW person AS
  SELECT id, name, emailaddress, creditcard, city, state, datetime, extra FROM nexmark WHERE kind = 'person';
CREATE VIEW auction AS
  SELECT id, itemname, description, initialbid, reserve, datetime, expires, seller, category, extra
  FROM nexmark WHERE kind = 'auction';
CREATE VIEW bid AS
  SELECT auction, bidder, price, channel, url, datetime, extra FROM nexmark WHERE kind = 'bid';
