SELECT * FROM bids AS b JOIN auctions AS a ON b.auction = a.id AND b.price > a.reserve WITHIN 1 HOUR EMIT CHANGES
