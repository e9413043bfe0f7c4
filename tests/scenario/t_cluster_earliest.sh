#!/bin/sh
# Reading history on a cluster (issue 19 §3): offset = 'earliest' on six
# ares-node processes in three domains, over a stream of two partitions
# whose homes are n2 (rack-b) and n4 (rack-c).
#  1. half of the input is in the logs before any query: a push query after
#     SET offset = 'earliest' reads both logs from their start, at each
#     home in steps once every node has deployed, then goes on with new
#     rows; rack-b (a home and its neighbour) is SIGKILLed in the second
#     half: the output equals the embedded engine's over the whole input,
#     row for row, none lost or repeated;
#  2. CREATE QUERY ... WITH (offset = 'earliest') reads the logs from their
#     start too (each home's log says how many rows), and SET offset =
#     'latest' puts new queries back at the logs' end; a push query over an
#     ended stream still reads it from its start, as an embedded one does;
#  3. a bad offset is refused with its position.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"
export LC_ALL=C

start_cluster c0:rack-a n1:rack-a n2:rack-b n3:rack-b n4:rack-c n5:rack-c
EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp = 'ts', partitions = 2, home = 'n2,n4');"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_end FROM ev WINDOW TUMBLING (SIZE 5 SECONDS) GROUP BY k"
awk 'BEGIN { for (i = 0; i < 24000; i++) print i * 23 "," (i * 7919) % 13 "," (i * 31) % 97 - 20 }' >all.csv
"$A" --memory -q -e "CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp = 'ts'); $Q;" \
    --ingest ev <all.csv >ref.csv 2>ref.err || { cat ref.err; fail "embedded run"; }
# partition p gets the rows i with i mod 2 = p; three parts: before any
# query, before the failure, after it
part() { # FROM TO P
    awk -F, -v a="$1" -v b="$2" -v p="$3" 'NR > a && NR <= b && (NR - 1) % 2 == p' all.csv
}
feed() { # FROM TO [--end]
    part "$1" "$2" 0 | sqlc --ingest ev || fail "ingest of rows $1-$2 into partition 0"
    part "$1" "$2" 1 | sqlc --ingest 'ev#1' ${3:-} || fail "ingest of rows $1-$2 into partition 1"
}

sqlc -e "$EV" || fail "CREATE STREAM"
feed 0 12000

# ---- 1. a push query from the logs' start, across the loss of rack-b
sqlc -e "SET offset = 'earliest'; $Q;" >push.csv 2>push.err &
PUSH=$!
PIDS="$PIDS $PUSH"
wait_log "$T/n2.log" "offset = 'earliest'\): read 6000 logged rows from offset 0" || fail "n2 did not read its log from the start"
wait_log "$T/n4.log" "offset = 'earliest'\): read 6000 logged rows from offset 0" || fail "n4 did not read its log from the start"
grep -h "offset = 'earliest'): read" "$T/n2.log" "$T/n4.log"
feed 12000 18000
wait_rows push.csv 300 || true
signal_nodes KILL n2 n3
wait_log "$T/c0.log" "stream ev: home node n2 lost; its shadow [a-z0-9]* is the home now" || fail "partition 0 did not move to its shadow"
wait_log "$T/c0.log" "recovered as query" || fail "the push query was not recovered"
# the other partition ends last, so that the stream's end follows every row
part 18000 24000 0 | sqlc --ingest ev || fail "ingest of the last rows into partition 0"
part 18000 24000 1 | sqlc --ingest 'ev#1' || fail "ingest of the last rows into partition 1"
printf '' | sqlc --ingest ev --end || fail "the stream's end"
wait "$PUSH" || { cat push.err; fail "the push query failed"; }
same_rows push.csv ref.csv
echo "ok: an earliest push query's output, across the loss of rack-b, equals the embedded engine's ($(($(wc -l <ref.csv) - 1)) rows)"

# ---- 2. WITH (offset = 'earliest') on CREATE QUERY; SET offset = 'latest'
sqlc -e "CREATE STREAM ev2 (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp = 'ts', home = 'n4');" || fail "CREATE STREAM ev2"
head -n 5000 all.csv | sqlc --ingest ev2 || fail "ingest into ev2"
sqlc -e "SET offset = 'latest';
    CREATE QUERY qe WITH (offset = 'earliest') AS SELECT k, COUNT(*) AS n, window_end FROM ev2 WINDOW TUMBLING (SIZE 5 SECONDS) GROUP BY k;
    CREATE QUERY ql AS SELECT k, COUNT(*) AS n, window_end FROM ev2 WINDOW TUMBLING (SIZE 5 SECONDS) GROUP BY k;" ||
    fail "CREATE QUERY with offset = 'earliest'"
# (a rebalance may move qe first: its replay then starts where qe did)
wait_log "$T/n4.log" "(offset = 'earliest'\): read|replayed) 5000 logged rows from offset 0" ||
    fail "qe did not read ev2's log from the start"
ql=$(sed -n 's/.* query \([0-9]*\) (ql) placed by .*/\1/p' "$T/c0.log")
[ -n "$ql" ] || fail "ql was not placed"
grep -q "query $ql (offset = 'earliest')" "$T/n4.log" && fail "ql (offset = 'latest') read the log from its start"
sqlc -e "SHOW SETTINGS;" | grep -q "^offset,latest" || { sqlc -e "SHOW SETTINGS;"; fail "SHOW SETTINGS does not say offset latest"; }
echo "ok: WITH (offset = 'earliest') reads the log from its start; after SET offset = 'latest' a query does not"
# a push query reads an ended stream's log from its start (as embedded), whatever the offset
sqlc -e "$Q;" >again.csv || fail "a push query over the ended stream"
same_rows again.csv ref.csv
echo "ok: a push query over the ended stream answers as the first one did"

# ---- 3. a bad offset
sqlc -e "CREATE QUERY qb WITH (offset = 'oldest') AS SELECT * FROM ev2;" >bad.out 2>bad.err && fail "offset = 'oldest' was accepted"
grep -q "line 1, column [0-9]*: offset must be 'earliest' or 'latest', not 'oldest'" bad.err || { cat bad.err; fail "the bad offset's message"; }
sqlc -e "SET offset = 'oldest';" >bad.out 2>bad.err && fail "SET offset = 'oldest' was accepted"
grep -q "offset" bad.err || { cat bad.err; fail "the bad SET offset's message"; }
cat bad.err
echo "ok: a bad offset is refused with its position"
