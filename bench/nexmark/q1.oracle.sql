-- q1 as a batch over all events (sqlite3): every bid, price x 0.908.
SELECT auction, bidder, 0.908 * price AS price,
       strftime('%Y-%m-%dT%H:%M:%S', datetime / 1000, 'unixepoch') || printf('.%03dZ', datetime % 1000) AS datetime,
       extra
FROM bid;
