-- q5, hot items: in each 10 s window sliding by 2 s, the auctions whose bid
-- count equals the window's largest.  mb finds the largest count of each
-- window: its 2 s tumbling windows hold exactly one hopping window end each.
-- Both sides select window_end, which carries their event time (ab: the hop
-- end; mb: the hop end + 2 s), hence WITHIN 2 SECONDS.
SELECT ab.auction, ab.num, ab.starttime, ab.endtime
FROM (SELECT auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
      FROM nexmark WINDOW HOPPING (SIZE 10 SECONDS, ADVANCE BY 2 SECONDS)
      WHERE kind = 'bid'
      GROUP BY auction) ab
JOIN (SELECT MAX(num) AS maxn, window_start AS endtime, window_end AS mbend
      FROM (SELECT auction, COUNT(*) AS num, window_end AS endtime
            FROM nexmark WINDOW HOPPING (SIZE 10 SECONDS, ADVANCE BY 2 SECONDS)
            WHERE kind = 'bid'
            GROUP BY auction) cb
      WINDOW TUMBLING (SIZE 2 SECONDS)) mb
  ON ab.endtime = mb.endtime WITHIN 2 SECONDS
WHERE ab.num >= mb.maxn;
