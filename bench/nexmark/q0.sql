-- q0, pass-through: every bid.
SELECT auction, bidder, price, datetime, extra
FROM nexmark
WHERE kind = 'bid';
