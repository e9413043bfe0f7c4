CREATE STREAM s2 (a BIGINT) WITH (parallelism = 4, ft = replica, placement = nirvana)
