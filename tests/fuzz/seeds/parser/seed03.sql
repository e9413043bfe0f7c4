CREATE STREAM s5 (window_start TIMESTAMP, window_end TIMESTAMP, streams BIGINT, nodes BIGINT)
