-- q7 as a batch over all events (sqlite3): per 10 s window, the bids at
-- the window's highest price.
SELECT b.auction, b.price, b.bidder,
       strftime('%Y-%m-%dT%H:%M:%S', b.datetime / 1000, 'unixepoch') || printf('.%03dZ', b.datetime % 1000) AS datetime,
       b.extra
FROM bid b
JOIN (SELECT datetime - datetime % 10000 AS ws, MAX(price) AS maxprice FROM bid GROUP BY ws) m
  ON b.datetime - b.datetime % 10000 = m.ws AND b.price = m.maxprice;
