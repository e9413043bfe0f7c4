SELECT auction, price FROM (SELECT auction, MAX(price) AS price FROM bids WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY auction) AS m
