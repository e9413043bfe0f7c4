-- q8, monitor new users: people who registered and opened an auction in the
-- same 10 s tumbling window.  Both sides select window_end (their event
-- time), and equal windows have equal times: WITHIN 0 SECONDS.
SELECT p.id, p.name, p.starttime
FROM (SELECT id, name, window_start AS starttime, window_end AS endtime
      FROM nexmark WINDOW TUMBLING (SIZE 10 SECONDS)
      WHERE kind = 'person'
      GROUP BY id, name) p
JOIN (SELECT seller, window_start AS starttime, window_end AS endtime
      FROM nexmark WINDOW TUMBLING (SIZE 10 SECONDS)
      WHERE kind = 'auction'
      GROUP BY seller) a
  ON p.id = a.seller AND p.starttime = a.starttime AND p.endtime = a.endtime WITHIN 0 SECONDS;
