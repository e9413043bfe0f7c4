-- q7, highest bid: in each 10 s tumbling window, the bids whose price is the
-- window's highest.  m's event time is its window_end, so a bid of the
-- window is at most 10 s before it.
SELECT b.auction, b.price, b.bidder, b.datetime, b.extra
FROM (SELECT auction, price, bidder, datetime, extra FROM nexmark WHERE kind = 'bid') b
JOIN (SELECT MAX(price) AS maxprice, window_end AS endtime
      FROM nexmark WINDOW TUMBLING (SIZE 10 SECONDS)
      WHERE kind = 'bid') m
  ON b.price = m.maxprice WITHIN 10 SECONDS
WHERE b.datetime >= m.endtime - 10 SECONDS AND b.datetime < m.endtime;
