#!/bin/sh
# Exactly-once output when one input of the sink lags (the duplicated rows
# of docs/benchmarks.md: round-robin, ft = checkpoint, a slowed node).  n7,
# which runs PROJECT#1 (stateless, between AGGREGATE#1 and the sink), stops
# (SIGSTOP: a slow node at its extreme) for a few hundred ms, less than the
# silence that makes a node dead, so the sink's input 1 falls behind while
# AGGREGATE#0 and #2 deliver later windows.  rack-c, which runs AGGREGATE#2
# and PROJECT#2, is SIGKILLed meanwhile, and n7 goes on once the recovery is
# under way.  The sink's combined watermark (the minimum over its inputs) is
# input 1's: the recovery has caught up only when every input has passed what
# it had reached (cluster/catchup.c), not when the minimum passes the old
# minimum.  The output, against sqlite3 computing the same windows, must have
# every row once.  (The old rule failed only when a coordinator tick fell
# while the replay was between the two watermarks; a replay here takes a few
# ms, so the decision itself is pinned by tests/unit/test_cluster.c.)
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"
export LC_ALL=C
command -v sqlite3 >/dev/null || fail "sqlite3 is needed (make deps)"

# Round-robin places operator by operator over the nodes in join order
# (c0 has one slot): the windows on c0 n1 n2, the aggregates on n3 n4 n5,
# the projections after them on n6 n7 n8.  The stream's home c0 (and the
# sink) and its shadow n4 (the first node outside rack-a) stay; n7 holds no
# replica, so stopping it holds back no source.
start_node c0 rack-a --coordinator --slots 1
CPORT=$(port_of c0)
CADDR="127.0.0.1:$CPORT"
for x in n1:rack-a n2:rack-a n3:rack-a n4:rack-b n5:rack-c n6:rack-b n7:rack-b n8:rack-c; do
    start_member "${x%:*}" "${x#*:}" "--slots 2"
    wait_log c0.log "node ${x%:*} joined" || fail "${x%:*} did not join" # in this order
done
wait_alive 9

# strictly increasing event times (no row is late), 5 windows of 1 s a chunk
awk 'BEGIN { srand(11); for (i = 0; i < 40000; i++) printf "%d,%d,%d\n", i * 5, int(rand() * 12), int(rand() * 1000) - 100 }' >data.csv
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
sqlc -e "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');" || fail "CREATE STREAM"
home=$(grep -o "stream s: home node [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
shadow=$(grep -o "stream s: home node [a-z0-9]*, shadow [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
sqlc -e "SET parallelism = 3; SET replicas = 1; SET placement = 'round-robin'; SET ft = 'checkpoint';
         SET checkpoint_interval = '500 milliseconds'; CREATE QUERY q AS $Q;" || fail "CREATE QUERY"
sqlc -e "EXPLAIN PLACEMENT q;" >place.csv || fail "EXPLAIN PLACEMENT"
task_at() { awk -F, -v p="$1" '$1 == p && $3 == "task" { print $4 }' place.csv; }
layout="$(task_at PROJECT#1) $(task_at AGGREGATE#2) $(task_at PROJECT#2)"
[ "$layout" = "n7 n5 n8" ] && [ "$home" = c0 ] && [ "$shadow" = n4 ] && ! grep -q ",replica,n7," place.csv || {
    cat place.csv
    fail "placement not as this test needs: PROJECT#1, AGGREGATE#2, PROJECT#2 on $layout (want n7 n5 n8, no replica on n7); home $home, shadow $shadow (want c0, n4)"
}

# the oracle: the same windows in sqlite3
sqlite3 -batch -bail oracle.db "CREATE TABLE s (ts INTEGER, k INTEGER, v INTEGER);" || fail "sqlite3"
printf '.mode csv\n.import data.csv s\n' | sqlite3 -batch -bail oracle.db || fail "sqlite3 import"
sqlite3 -batch -bail -separator , oracle.db "SELECT k, COUNT(*), SUM(v),
    strftime('%Y-%m-%dT%H:%M:%S', ts / 1000, 'unixepoch') || '.000Z' FROM s GROUP BY ts / 1000, k;" >want.csv ||
    fail "sqlite3 query"

# steady input (40 chunks of 1000 rows, 50 ms apart); n7 stops, rack-c dies
sub_and_feed q s
kill -STOP "$PID_n7"
sleep 0.15
_ev=$(grep -c "recovered as query" c0.log)
for v in n5 n8; do eval "kill -KILL \$PID_$v"; done
echo "$(date -u +%T.%3N) n7 stopped; rack-c (n5 n8) killed"
wait_log c0.log "recovered as query" $((_ev + 1)) 3 || :
kill -CONT "$PID_n7"
wait_log c0.log "recovered as query" $((_ev + 1)) 50 || fail "q not recovered 5 s after losing rack-c"
wait $ING || { cat ingest.err; fail "ingest failed"; }
sub_finish "$(($(wc -l <want.csv) + 1))"
sed -n 's/.*its sink.s inputs had reached watermarks \([-0-9 ]*\) .*/figure: sink inputs at the failure: \1 (input 1 held back)/p' c0.log | head -n 1
grep -o "caught up with its output.*" c0.log

tail -n +2 sub.csv | sort >got.sorted
sort want.csv >want.sorted
dups=$(uniq -d got.sorted | wc -l)
[ "$dups" -eq 0 ] || { uniq -d got.sorted | head -n 5; fail "$dups rows delivered more than once"; }
cmp -s got.sorted want.sorted || {
    diff got.sorted want.sorted | head -n 10
    fail "the output differs from sqlite3's ($(wc -l <got.sorted) vs $(wc -l <want.sorted) rows)"
}
echo "ok: an input of the sink held back and rack-c killed: each of the $(wc -l <want.sorted) rows once, as sqlite3 computes them"
