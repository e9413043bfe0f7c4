-- A TPC-H-like windowed join (the paper's second workload): lineitem joined
-- with its order (bench/workloads/tpch_gen) when their event times are at
-- most 3 seconds apart (a lineitem arrives 0-4 s after its order, so about
-- a quarter miss the bound), then per customer and 10-second tumbling window
-- of the lineitem's time: joined lines, quantity and the highest price.
-- Input: tpch_gen --table orders | ares-sql ... --ingest orders, and
--        tpch_gen --table lineitem | ares-sql ... --ingest lineitem (same --rows, --seed).
-- The oracle (sqlite3): tpch_join.oracle.sql.
CREATE STREAM orders (orderkey BIGINT, custkey BIGINT, totalprice DOUBLE, ts TIMESTAMP, priority TEXT)
    WITH (timestamp = 'ts');
CREATE STREAM lineitem (orderkey BIGINT, linenumber INT, partkey BIGINT, quantity BIGINT,
                        extendedprice DOUBLE, discount DOUBLE, ts TIMESTAMP)
    WITH (timestamp = 'ts');
CREATE QUERY tpch_join AS
SELECT o.custkey AS custkey, COUNT(*) AS lines, SUM(l.quantity) AS quantity, MAX(l.extendedprice) AS top_price,
       window_start
FROM lineitem l WINDOW TUMBLING (SIZE 10 SECONDS)
JOIN orders o ON l.orderkey = o.orderkey WITHIN 3 SECONDS
GROUP BY o.custkey EMIT FINAL;
