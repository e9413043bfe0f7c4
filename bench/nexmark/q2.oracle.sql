-- q2 as a batch over all events (sqlite3): bids on every 123rd auction.
SELECT auction, price FROM bid WHERE auction % 123 = 0;
