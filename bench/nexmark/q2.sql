-- q2, selection: the bids on every 123rd auction.
SELECT auction, price
FROM nexmark
WHERE kind = 'bid' AND MOD(auction, 123) = 0;
