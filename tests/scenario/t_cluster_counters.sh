#!/bin/sh
# What SHOW tells on a cluster (issue 16, item 12):
#   1. EXPLAIN PLACEMENT prints costs to 4 significant digits (not
#      0.029000000000000005); its JSON form keeps every digit;
#   2. SHOW STREAMS has the rows, rejected, watermark and log_bytes of each
#      stream, as embedded mode has them, from its home node, whichever
#      node that is;
#   3. a domain killed under steady input: both queries over the stream are
#      recovered (redeployed under new ids, the log replayed from their
#      state's positions), and SHOW QUERIES still says that each read every
#      row once (rows_in): the redeployment goes on with the counts of the
#      one before, and rows replayed from the log are not counted again;
#   4. late rows dropped by window tasks on several nodes: SHOW QUERIES
#      sums every node's counts.
# A coordinator (the stream's home) and nodes in two more domains.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_coordinator c0 rack-a
wait_alive 1
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
sqlc -e "$DDL" || fail "CREATE STREAM s"
start_member n1 rack-b
start_member n2 rack-c
wait_alive 3
sqlc -e "CREATE STREAM t (ts BIGINT, k BIGINT) WITH (timestamp = 'ts');" || fail "CREATE STREAM t"
grep -q "stream s: home node c0" c0.log || fail "s's home is not c0"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
sqlc -e "SET parallelism = 3; SET replicas = 1; SET placement = 'round-robin';
         CREATE QUERY q1 AS $Q; CREATE QUERY q2 AS SELECT k, MAX(v) AS top FROM s WINDOW TUMBLING (SIZE 500 MILLISECONDS) GROUP BY k;" ||
    fail "CREATE QUERY"

# ---- 1. EXPLAIN PLACEMENT: costs to 4 significant digits in the table, every digit in JSON
sqlc -e "EXPLAIN PLACEMENT q1;" >place.csv || fail "EXPLAIN PLACEMENT"
awk -F, 'NR > 1 && $3 ~ /^(task|replica)$/ { for (i = 6; i <= 9; i++) { d = $i; sub(/^0\.0*/, "", d); gsub(/[^0-9]/, "", d); if (length(d) > 4) bad = bad " " $i } }
         END { if (bad) { print "long costs:" bad; exit 1 } }' place.csv || { cat place.csv; fail "EXPLAIN PLACEMENT costs have more than 4 digits"; }
grep -q '^summary$' place.csv && grep -q '^"query cost [0-9.e-]*; cluster total cost' place.csv || { cat place.csv; fail "EXPLAIN PLACEMENT summary"; }
sqlc -e "EXPLAIN PLACEMENT (FORMAT JSON) q1;" >place.json || fail "EXPLAIN PLACEMENT (FORMAT JSON)"
grep -Eq 'processing"+: 0\.[0-9]{6,}' place.json || { head -c 600 place.json; fail "EXPLAIN PLACEMENT JSON lost the costs' digits"; }
awk -F, '$3 == "task" && $5 == "rack-b"' place.csv | grep -q . || { cat place.csv; fail "no task of q1 in rack-b"; }

# ---- 2. SHOW STREAMS: rows and watermark from the home (s: c0; t: another node)
awk 'BEGIN { srand(5); for (i = 0; i < 30000; i++) printf "%d,%d,%d\n", i * 5, int(rand() * 40), int(rand() * 100) }' >data.csv
printf 'ts,k\n1000,1\n2000,2\nbad,3\n' | sqlc --ingest t 2>t.err
sqlc -e "SHOW STREAMS;" >streams0.csv || fail "SHOW STREAMS"
head -n 1 streams0.csv | grep -qx 'name,home,shadow,copy,rows,rejected,watermark,log_bytes,sql' ||
    { cat streams0.csv; fail "SHOW STREAMS columns"; }
grep -q '^t,n[12],[a-z0-9]*,input,2,1,1970-01-01T00:00:02.000Z,[1-9][0-9]*,' streams0.csv ||
    { cat streams0.csv; fail "SHOW STREAMS: stream t (home on a node) has the wrong rows or watermark"; }
grep -q '^s,c0,[a-z0-9]*,[a-z]*,0,0,-,' streams0.csv || { cat streams0.csv; fail "SHOW STREAMS: stream s before any row"; }

# ---- 3. kill rack-b under steady input; both queries recover; rows_in counts each row once
split -l 1000 -d -a 3 data.csv chunk.
(for f in chunk.*; do cat "$f"; sleep 0.05; done) | sqlc --ingest s --end >ingest.out 2>ingest.err &
ING=$!
PIDS="$PIDS $ING"
sleep 0.8
signal_nodes KILL n1
wait_log c0.log "recovered as query" 2 150 || fail "q1 and q2 were not both recovered"
wait $ING || { cat ingest.err; fail "ingest failed"; }
sleep 0.5
sqlc -e "SHOW QUERIES;" >queries.csv || fail "SHOW QUERIES"
for q in q1 q2; do
    grep -q "^$q,RUNNING,,30000," queries.csv || { cat queries.csv; grep "replayed" c0.log; fail "$q: rows_in is not 30000 after the recovery"; }
done
sqlc -e "SHOW STREAMS;" >streams1.csv || fail "SHOW STREAMS"
grep -q '^s,c0,[a-z0-9]*,[a-z]*,30000,0,end of input,[1-9][0-9]*,' streams1.csv || { cat streams1.csv; fail "SHOW STREAMS: stream s after the ingest"; }
# ---- 4. late rows dropped by window tasks on every node: SHOW QUERIES sums them
awk 'BEGIN { print "ts,k,v"; for (k = 0; k < 40; k++) printf "%d,%d,1\n", 10, k }' | sqlc --ingest s --allow-late 2>late.err ||
    { cat late.err; fail "the late ingest"; }
# (the home counts the rows its own window tasks dropped; the others' are
# in SHOW QUERIES: "at least")
grep -q "^ares-sql: warning: at least [1-9][0-9]* rows of stream s were late and dropped" late.err || { cat late.err; fail "the late rows were not told"; }
sqlc -e "SHOW QUERIES;" >queries2.csv || fail "SHOW QUERIES"
for q in q1 q2; do
    grep -q "^$q,RUNNING,,30040,[0-9]*,[0-9.]*,[0-9.]*,40,0,end of input," queries2.csv ||
        { cat queries2.csv; fail "$q: SHOW QUERIES does not count the 40 late rows of every node"; }
done
echo "t_cluster_counters: ok ($(grep -o "replayed [0-9]* logged rows" c0.log | tr '\n' ' '))"
