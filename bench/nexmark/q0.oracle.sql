-- q0 as a batch over all events (sqlite3): every bid.
SELECT auction, bidder, price,
       strftime('%Y-%m-%dT%H:%M:%S', datetime / 1000, 'unixepoch') || printf('.%03dZ', datetime % 1000) AS datetime,
       extra
FROM bid;
