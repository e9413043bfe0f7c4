-- q1, currency conversion: every bid, its price (cents) times 0.908.
SELECT auction, bidder, 0.908 * price AS price, datetime, extra
FROM nexmark
WHERE kind = 'bid';
