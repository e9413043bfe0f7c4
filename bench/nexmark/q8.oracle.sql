-- q8 as a batch over all events (sqlite3): people and sellers that share a
-- 10 s window.
SELECT p.id, p.name,
       strftime('%Y-%m-%dT%H:%M:%S', p.ws / 1000, 'unixepoch') || '.000Z' AS starttime
FROM (SELECT DISTINCT id, name, datetime - datetime % 10000 AS ws FROM person) p
JOIN (SELECT DISTINCT seller, datetime - datetime % 10000 AS ws FROM auction) a
  ON p.id = a.seller AND p.ws = a.ws;
