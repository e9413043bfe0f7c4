#!/bin/sh
# Live re-placement when nodes join (issue 17, section 3), without cgroups:
# a windowed aggregation over a stream of 2 partitions runs on 3 nodes that
# say they are slow (--speed 0.05: what placement is told; --speed does not
# slow a node down); mid-stream 3 fast nodes join (--speed 1), and a second
# after a join (or at the next rebalance_interval, 1 s) the coordinator
# re-plays best responses and moves the
# players that gain more than rebalance_threshold onto them (a stateful
# task only onto its replica's node: a promotion).  The subscriber's rows must equal
# the embedded engine's over the same rows, none lost or repeated.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
FT=${FT:-replica} # the fault tolerance mode: replica, checkpoint or upstream
. "$(dirname "$0")/t_cluster_lib.inc"

start_node c0 rack-a --coordinator --slots 2 --speed 0.05
CPORT=$(port_of c0)
CADDR="127.0.0.1:$CPORT"
start_member n1 rack-a "--slots 6 --speed 0.05"
start_member n2 rack-b "--slots 6 --speed 0.05"
wait_alive 3

# one time-ordered input, dealt into the 2 partitions (each stays in time order)
awk 'BEGIN { srand(5); for (i = 0; i < 160000; i++) printf "%d,%d,%d\n", i, int(rand() * 30), int(rand() * 1000) - 100 }' >data.csv
awk '{ print > ("p" ((NR - 1) % 2) ".csv") }' data.csv
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
embedded "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');" "$Q;" s <data.csv >ref.csv ||
    fail "embedded run"
sqlc -e "SET parallelism = 3; SET replicas = 1; SET ft = '$FT'; SET checkpoint_interval = '500 milliseconds'; SET rebalance_interval = '1 second';
         CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts', partitions = 2, home = 'n1,n2');
         CREATE QUERY q AS $Q;" || fail "CREATE QUERY"
sqlc -e "SUBSCRIBE q;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.3
# 80000 rows a partition, 1000 every 0.1 s (20000 rows/s in all, about 8 s)
for p in 0 1; do
    split -l 1000 -d -a 3 "p$p.csv" "c$p."
    part=s
    [ $p = 0 ] || part="s#$p" # partition 0 is the stream itself
    (for f in c$p.*; do cat "$f"; sleep 0.1; done) | sqlc --ingest "$part" >"ingest$p.out" 2>"ingest$p.err" &
    eval "ING$p=$!"
    PIDS="$PIDS $!"
done
sleep 2
start_member n3 rack-b "--slots 6 --speed 1"
start_member n4 rack-c "--slots 6 --speed 1"
start_member n5 rack-c "--slots 6 --speed 1"
# (the rebalance a join asks for, or the periodic one, whichever comes first)
MOVE_RE="rebalance \(.*\): query [0-9]+ \(q\): .* moves [a-z0-9]+ -> n[345]"
wait_log c0.log "$MOVE_RE" 1 100 || fail "nothing moved onto the nodes that joined in 10 s"
wait $ING0 || { cat ingest0.err; fail "ingest of s failed"; }
wait $ING1 || { cat ingest1.err; fail "ingest of s#1 failed"; }
sqlc --ingest s --end </dev/null >end.out 2>end.err || { cat end.err; fail "ending s"; }
sub_finish "$(wc -l <ref.csv)"
grep -E "rebalance \(.*\): query [0-9]+ \(q\): " c0.log | sed 's/^[^ ]* c0 WARN //'
grep -q "redeployed as query" c0.log || fail "q was not redeployed for the moves"
sqlc -e "EXPLAIN PLACEMENT q;" >place.csv || fail "EXPLAIN PLACEMENT"
grep -q "rebalanced: [1-9][0-9]* moves" place.csv || { cat place.csv; fail "EXPLAIN PLACEMENT does not count the moves"; }
fast=$(awk -F, '$3 == "task" && $4 ~ /^n[345]$/' place.csv | wc -l)
echo "tasks of q on the fast nodes: $fast"
[ "$fast" -gt 0 ] || { cat place.csv; fail "no task of q on the nodes that joined"; }
# no row lost, none repeated, across the moves
same_rows sub.csv ref.csv
echo "ok: 3 fast nodes joined mid-stream; $fast tasks of q moved onto them; the output equals the embedded run ($(($(wc -l <ref.csv) - 1)) rows)"
