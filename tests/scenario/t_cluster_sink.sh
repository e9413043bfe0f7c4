#!/bin/sh
# Sinks of standing queries on a cluster (a coordinator and one node in two
# domains): a tcp:// sink runs on the coordinator, where the sink task is,
# and gets every row once; SHOW QUERIES shows its address and DESCRIBE a
# Sink: line with its state.  A file:// sink, which needs an engine of its
# own, is refused with a message that says what to use instead.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_coordinator c0 rack-a
start_member n1 rack-b
wait_alive 2

P_SINK=$(free_port)
nc -l 127.0.0.1 "$P_SINK" >sink.out 2>/dev/null &
PIDS="$PIDS $!"
i=0
until ss -Htln "sport = :$P_SINK" | grep -q . || [ $i -ge 50 ]; do sleep 0.1; i=$((i + 1)); done
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
sqlc -e "$DDL CREATE QUERY q WITH (sink = 'tcp://127.0.0.1:$P_SINK', format = 'csv') AS SELECT k, v FROM s WHERE v > 1;" \
    2>cq.err || { cat cq.err; fail "CREATE QUERY with a tcp sink"; }
printf 'ts,k,v\n1,1,1\n2,2,5\n3,3,7\n' | sqlc --ingest s 2>ing.err || { cat ing.err; fail "ingest"; }
i=0
while [ "$(grep -c . sink.out)" -lt 2 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat sink.out)" = "$(printf "2,5\n3,7")" ] || { cat sink.out; sqlc -e "SHOW QUERIES; DESCRIBE q;"; fail "the tcp sink got other rows"; }

sqlc -e "SHOW QUERIES; DESCRIBE q;" >show.out 2>show.err || { cat show.err; fail "SHOW QUERIES"; }
grep -q "^q,RUNNING,tcp://127.0.0.1:$P_SINK," show.out || { cat show.out; fail "SHOW QUERIES does not show the tcp sink"; }
grep -q "Sink: tcp://127.0.0.1:$P_SINK (csv, connected, 0 bytes waiting)" show.out ||
    { cat show.out; fail "DESCRIBE has no Sink: line"; }

rc=0
sqlc -e "CREATE QUERY f WITH (sink = 'file://$T/f.csv') AS SELECT k FROM s;" >f.out 2>f.err || rc=$?
[ "$rc" -ne 0 ] || fail "a file sink on a cluster was accepted"
grep -q "sink 'file://$T/f.csv': a cluster writes socket sinks only" f.err || { cat f.err; fail "the file sink's message"; }
echo "t_cluster_sink: ok"
