-- The workloads' streams as sqlite3 tables (for the *.oracle.sql queries).
CREATE TABLE lines (ts INTEGER, line TEXT);
CREATE TABLE orders (orderkey INTEGER, custkey INTEGER, totalprice REAL, ts INTEGER, priority TEXT);
CREATE TABLE lineitem (orderkey INTEGER, linenumber INTEGER, partkey INTEGER, quantity INTEGER,
                       extendedprice REAL, discount REAL, ts INTEGER);
CREATE INDEX orders_key ON orders (orderkey);
