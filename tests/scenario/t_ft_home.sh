#!/bin/sh
# Fault tolerance when the failure domain that dies holds the stream's home
# node (issue 7): the stream's shadow, in another domain, got the same input
# in the same order and holds the same log; it becomes the home, the query's
# source tasks move there, and the replay runs from its log.  The ingest that
# was running keeps going (the shadow answers it) and the subscriber's output
# equals the embedded (no-failure) run, row for row.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_node c0 rack-a --coordinator --slots 1
CPORT=$(port_of c0)
CADDR="127.0.0.1:$CPORT"
start_member n1 rack-a "--slots 3"
start_member n2 rack-a "--slots 3"
start_member n3 rack-b "--slots 3"
start_member n4 rack-b "--slots 3"
start_member n5 rack-b "--slots 3"
start_member n6 rack-c "--slots 3"
start_member n7 rack-c "--slots 3"
start_member n8 rack-c "--slots 3"
wait_alive 9

awk 'BEGIN { srand(11); for (i = 0; i < 40000; i++) printf "%d,%d,%d\n", i * 5, int(rand() * 50), int(rand() * 1000) - 100 }' >data.csv
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
COLS="(ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts')"
embedded "CREATE STREAM s $COLS;" "$Q;" s <data.csv >ref.csv || fail "embedded run"
# homes go round-robin: make streams until s's home is outside the coordinator's domain
i=0
while :; do
    sqlc -e "CREATE STREAM s $COLS;" || fail "CREATE STREAM"
    home=$(grep -o "stream s: home node [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
    case "$home" in n[3-8]) break ;; esac
    sqlc -e "DROP STREAM s; CREATE STREAM pad$i (a BIGINT);" || fail "DROP STREAM"
    i=$((i + 1))
    [ $i -lt 10 ] || fail "no home outside rack-a"
done
shadow=$(grep -o "stream s: home node [a-z0-9]*, shadow [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
[ -n "$shadow" ] || fail "stream s has no shadow"
case "$home" in n[345]) victim=rack-b; VN="n3 n4 n5" ;; *) victim=rack-c; VN="n6 n7 n8" ;; esac
echo "stream s: home $home, shadow $shadow; killing $victim ($VN)"
sqlc -e "SET parallelism = 3; SET replicas = 1; CREATE QUERY q AS $Q;" || fail "CREATE QUERY"

sqlc -e "SUBSCRIBE q;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.3
split -l 1000 -d -a 3 data.csv chunk.
(for f in chunk.*; do cat "$f"; sleep 0.05; done) | sqlc --ingest s >ingest.out 2>ingest.err &
ING=$!
sleep 1
for v in $VN; do eval "kill -KILL \$PID_$v"; done
wait $ING || { cat ingest.err; fail "the ingest failed when the home was lost"; }
grep -q "rows" ingest.out ingest.err 2>/dev/null || true
want=$(wc -l <ref.csv)
i=0
while [ "$(wc -l <sub.csv)" -lt "$want" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.3
kill "$SUB" 2>/dev/null
wait "$SUB" 2>/dev/null
grep -q "its shadow $shadow is the home now" c0.log || fail "the shadow did not take over"
grep -q "recovered as query" c0.log || fail "the coordinator did not recover q"
same_rows sub.csv ref.csv
rep=$(sed -n 's/.*replayed \([0-9]*\) logged rows from offset \([-0-9]*\).* in \([0-9.]*\) ms,.*/\1 rows from offset \2 in \3 ms/p' "$shadow.log" | head -n 1)
echo "figure: ft_home_replay ${rep:-?} (the new home $shadow)"
echo "ok: losing the home's domain $victim: the shadow $shadow took over; output equals the no-failure run ($(($(wc -l <ref.csv) - 1)) rows)"
