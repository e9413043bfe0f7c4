#!/bin/sh
# A second domain failure after recovery (issue 7): the domain of a stream's
# home is killed with SIGKILL while a client's ingest runs; its shadow takes
# over and, from then on, copies its log to a node of the last domain
# (LOGSHADOW, shadow.c).  Then the new home's domain is killed too, while
# the same ingest still runs: the copy takes over, the client's ingest
# resumes there from the copied decoder state, and the subscriber's output
# must equal the no-failure run, row for row.  9 nodes in 3 domains; the
# coordinator's domain (rack-a) survives.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_node c0 rack-a --coordinator --slots 1
CPORT=$(port_of c0)
CADDR="127.0.0.1:$CPORT"
for m in "n1 rack-a 6" "n2 rack-a 6" "n3 rack-b" "n4 rack-b" "n5 rack-b" "n6 rack-c" "n7 rack-c" "n8 rack-c"; do
    set -- $m
    start_member "$1" "$2" "--slots ${3:-3}"
done
wait_alive 9

awk 'BEGIN { srand(11); for (i = 0; i < 60000; i++) printf "%d,%d,%d\n", i * 5, int(rand() * 50), int(rand() * 1000) - 100 }' >data.csv
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
embedded "$DDL" "$Q;" s <data.csv >ref.csv || fail "embedded run"
dom_of() { case "$1" in c0 | n1 | n2) echo rack-a ;; n3 | n4 | n5) echo rack-b ;; *) echo rack-c ;; esac; }
nodes_of() { case "$1" in rack-a) echo "c0 n1 n2" ;; rack-b) echo "n3 n4 n5" ;; *) echo "n6 n7 n8" ;; esac; }
# homes and shadows go round-robin: make streams until s's home and shadow
# are both outside the coordinator's domain
i=0
while :; do
    sqlc -e "$DDL" || fail "CREATE STREAM"
    line=$(grep -o "stream s: home node [a-z0-9]*, shadow [a-z0-9]*" c0.log | tail -n 1)
    home=$(echo "$line" | awk '{print $5}' | tr -d ,)
    shadow=$(echo "$line" | awk '{print $NF}')
    [ -n "$home" ] && [ "$(dom_of "$home")" != rack-a ] && [ "$(dom_of "$shadow")" != rack-a ] && break
    sqlc -e "DROP STREAM s; CREATE STREAM pad$i (a BIGINT);" || fail "DROP STREAM"
    i=$((i + 1))
    [ $i -lt 12 ] || fail "no home and shadow outside rack-a"
done
sqlc -e "SET parallelism = 3; SET replicas = 1; CREATE QUERY q AS $Q;" || fail "CREATE QUERY"
d1=$(dom_of "$home")
d2=$(dom_of "$shadow")
echo "stream s: home $home ($d1), shadow $shadow ($d2); killing $d1, then $d2"

sqlc -e "SUBSCRIBE q;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.3
split -l 1000 -d -a 3 data.csv chunk.
(for f in chunk.*; do cat "$f"; sleep 0.06; done) | sqlc --ingest s --end >ingest.out 2>ingest.err &
ING=$!
PIDS="$PIDS $ING"
sleep 1
for v in $(nodes_of "$d1"); do eval "kill -KILL \$PID_$v"; done
echo "killed $d1"
wait_log c0.log "its shadow $shadow is the home now" 1 50 || fail "the shadow $shadow did not take over"
wait_log c0.log "its home $shadow copies its log to" 1 50 || fail "no new copy of s's log"
copy=$(grep -o "its home $shadow copies its log to [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
wait_log c0.log "recovered as query" 1 50 || fail "q was not recovered after the first failure"
# the copy catches up, and the input goes on for a while with the new copy
wait_log "$shadow.log" "its log is copied to $copy" 1 50 || fail "$shadow did not start copying to $copy"
wait_log "$shadow.log" "its copy on $copy caught up" 1 50 || fail "the copy on $copy did not catch up"
sleep 0.8
kill -0 $ING 2>/dev/null || fail "the ingest ended before the second failure: feed slower"
if [ "${SECOND:-1}" = 1 ]; then
    for v in $(nodes_of "$d2"); do eval "kill -KILL \$PID_$v"; done
    echo "killed $d2 (s's log copy is on $copy)"
    wait_log c0.log "home node $shadow lost; its shadow $copy is the home now" 1 50 ||
        fail "the copy on $copy did not take over"
fi
wait $ING || { cat ingest.err; fail "ingest failed"; }
grep -q "resumes here from the copied log" "$copy.log" || echo "note: the ingest session did not need the copied state"
want=$(wc -l <ref.csv)
sub_finish "$want"
[ "$(grep -c "recovered as query" c0.log)" -ge $((1 + ${SECOND:-1})) ] || fail "q was not recovered after the second failure"
sqlc -e "SHOW QUERIES;" >queries.csv 2>&1
same_rows sub.csv ref.csv
echo "ok: two domain failures in a row ($d1, then $d2, the new home's) while an ingest ran: the output equals the no-failure run ($((want - 1)) rows)"
