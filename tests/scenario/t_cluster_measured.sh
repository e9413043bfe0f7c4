#!/bin/sh
# Measured costs on a live cluster (docs/nirvana.md, "The measured-cost
# model"): 4 ares-node processes in 2 domains run a windowed count whose
# two aggregate tasks get very different shares of the rows (nine rows in
# ten have key 1).  After the input is in:
#   1. EXPLAIN PLACEMENT says the game used measured inputs, and shows for
#      every task its measured load, rows in and CPU beside the seeds;
#   2. the aggregate task with more rows shows more measured CPU;
#   3. the nodes' capacities are the ones they reported (in SHOW NODES
#      too), and the distances come from measured round trips;
#   4. FORMAT JSON carries the same inputs.
# No assert depends on timing: the checks read cumulative counters, and
# wait (10 s at most) for the reports to have counted every row.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

# rack-b's nodes hold their frames to rack-a 15 ms: their round trips to it
# are measured at 15 ms or more, a distance above the cross-domain default
start_coordinator c0 rack-a
start_member n1 rack-a
start_member n2 rack-b "--link-delay-ms 15"
start_member n3 rack-b "--link-delay-ms 15"
wait_alive 4

ROWS=60000
# no live re-placement: a move redeploys the query, whose counters then start again
sqlc -e "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts'); SET parallelism = 2;
         SET rebalance_interval = 0;" || fail "CREATE STREAM"
sqlc -e "CREATE QUERY qm AS SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s
         WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;" || fail "CREATE QUERY"
awk -v n=$ROWS 'BEGIN { srand(7); for (i = 0; i < n; i++) {
    k = rand() < 0.9 ? 1 : 2 + int(rand() * 50); printf "%d,%d,%d\n", i * 3, k, int(rand() * 100) } }' >data.csv
sqlc --ingest s --end <data.csv || fail "ingest"

# the aggregate tasks' rows in, as EXPLAIN shows them: until they sum to ROWS
i=0
while :; do
    sqlc -e "EXPLAIN PLACEMENT qm;" >place.csv || fail "EXPLAIN PLACEMENT"
    got=$(awk -F, '$2 ~ /AGGREGATE/ && $3 == "task" { s += $18 } END { printf "%d", s }' place.csv)
    [ "$got" -ge $ROWS ] && break
    [ $i -ge 100 ] && { cat place.csv; fail "the aggregate tasks' measured rows in sum to $got, not $ROWS"; }
    sleep 0.1
    i=$((i + 1))
done

head -n 1 place.csv | grep -q "^player,operator,role,node,domain,processing,transfer,recovery,cost,note,inputs,load_seed,load_measured,traffic_seed,traffic_measured,recovery_seed,recovery_measured,rows_in,rows_in_per_s,cpu_ms$" ||
    { cat place.csv; fail "EXPLAIN PLACEMENT: not the inputs columns"; }
# 1. every task: measured inputs used, a measured load, its rows and CPU
# (columns: 11 inputs, 12 load_seed, 13 load_measured, 15 traffic_measured,
# 18 rows_in, 20 cpu_ms)
awk -F, '$3 == "task" && ($11 != "measured" || $13 == "" || $18 == "" || $20 == "" || $12 == "") { print; bad = 1 }
         END { exit bad }' place.csv || { cat place.csv; fail "a task without measured inputs"; }
grep -q '^"\?inputs: measured' place.csv || { cat place.csv; fail "the summary does not say the inputs were measured"; }
# the source's measured traffic, and every source row counted once
awk -F, -v n=$ROWS '$2 ~ /SOURCE/ && $3 == "task" { if ($15 == "" || $18 != n) bad = 1; seen = 1 }
         END { exit bad || !seen }' place.csv || { cat place.csv; fail "the source's measured rows or traffic"; }
# 2. the aggregate task with more rows costs more CPU, and more load (its
# rate: both decay alike once the input has stopped, so their order stays)
awk -F, '$2 ~ /AGGREGATE/ && $3 == "task" { r[++n] = $18; c[n] = $20; l[n] = $13 }
         END { if (n != 2) exit 1; hi = r[1] > r[2] ? 1 : 2; lo = 3 - hi
               if (r[hi] < 4 * r[lo]) exit 1; exit !(c[hi] > c[lo] && l[hi] > l[lo]) }' place.csv ||
    { cat place.csv; fail "the aggregate task with more rows does not show more measured CPU and load"; }
# 3. the capacities are reported ones
for x in c0 n1 n2 n3; do
    grep "^\"\?capacities:" place.csv | grep -q " $x [0-9.e+-]* CPUs (reported" ||
        { cat place.csv; fail "no reported capacity for $x"; }
done
grep -q '^"\?distances: domain defaults, raised by measured round trips' place.csv ||
    { cat place.csv; fail "the distances do not come from the measured round trips"; }
grep -q '^"\?restore rate: ' place.csv || { cat place.csv; fail "no restore rate"; }
sqlc -e "SHOW NODES;" >nodes.csv || fail "SHOW NODES"
head -n 1 nodes.csv | grep -q ",capacity,utilisation$" || { cat nodes.csv; fail "SHOW NODES: no capacity and utilisation"; }
awk -F, 'NR > 1 && ($9 == "" || $10 == "") { bad = 1 } END { exit bad || NR != 5 }' nodes.csv ||
    { cat nodes.csv; fail "SHOW NODES: a node without its reported capacity or utilisation"; }
# 4. the JSON form
sqlc -e "EXPLAIN PLACEMENT (FORMAT JSON) qm;" >place.json || fail "EXPLAIN PLACEMENT (FORMAT JSON)"
grep -q '"\?used"\?"*: "*measured' place.json || { cat place.json; fail "JSON: no measured inputs"; }
grep -q 'cpu_ms' place.json || { cat place.json; fail "JSON: no cpu_ms"; }
grep -q '"\?distances_measured"\?"*: true' place.json || { cat place.json; fail "JSON: distances not measured"; }

echo "cluster measured costs: ok"
