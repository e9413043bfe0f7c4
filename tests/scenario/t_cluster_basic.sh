#!/bin/sh
# A cluster of 6 ares-node processes in 3 failure domains on loopback, driven
# only through ares-sql --connect.  Checks, in order:
#   1. membership: SHOW NODES lists every node ALIVE with its domain;
#   2. a push query (SELECT + --ingest) gives row for row what the embedded
#      engine gives on the same data, with its tasks spread over every node;
#   3. a standing query (CREATE QUERY) with a subscriber: the subscriber gets
#      the embedded rows; the query keeps running after its creator left;
#   4. garbage bytes sent to two nodes' ports while a query runs do not
#      disturb it (same rows) and the nodes keep serving;
#   5. a wrong secret is refused: non-zero exit and a message saying so;
#   6. a node that joins late gets tasks of the next query, and the output
#      still matches;
#   7. DROP QUERY undeploys everywhere;
#   8. the coordinator restarts: its standing queries come back from its
#      catalog and run again on the same nodes;
#   9. a stream with a socket source: only its home node listens, and the
#      rows sent there reach a subscriber.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_coordinator c0 rack-a
start_member n1 rack-a
start_member n2 rack-b
start_member n3 rack-b
start_member n4 rack-c
start_member n5 rack-c
wait_alive 6

# ---- 1. membership
sqlc -e "SHOW NODES;" >nodes.csv || fail "SHOW NODES"
[ "$(head -n 1 nodes.csv)" = "name,domain,address,state,slots,load,last_heartbeat,role,capacity,utilisation" ] || fail "SHOW NODES header: $(head -n 1 nodes.csv)"
grep -q '^n3,rack-b,127.0.0.1:[0-9]*,ALIVE,16,0,' nodes.csv || { cat nodes.csv; fail "n3 is not listed right"; }
[ "$(cut -d, -f2 nodes.csv | tail -n +2 | sort -u | wc -l)" -eq 3 ] || fail "3 domains expected"

# ---- 2. a push query, row for row as embedded
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts', watermark = '50 ms');"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) WHERE v > 0 GROUP BY k;"
gen_data 40000 300 7 >data.csv
embedded "$DDL" "$Q" s <data.csv >ref.csv || fail "embedded run"
# round-robin: this test wants every node to run part of each query
sqlc -e "$DDL SET parallelism = 6; SET placement = 'round-robin';" || fail "CREATE STREAM on the cluster"
sqlc -e "$Q" --ingest s --end <data.csv >push.csv 2>push.err || { cat push.err; fail "push query on the cluster"; }
same_rows push.csv ref.csv
# every node ran part of it
for n in c0 n1 n2 n3 n4 n5; do
    grep -q "query 1 deployed: [1-9]" "$n.log" || fail "node $n ran no task of the push query"
done
grep -q "rows_out\|deployed" n3.log || fail "n3 log"

# ---- 3. a standing query and a subscriber
DDL2="CREATE STREAM t (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
Q2="SELECT k, COUNT(*) AS n, MIN(v) AS lo, window_end FROM t WINDOW HOPPING (SIZE 2 SECONDS, ADVANCE BY 1 SECOND) GROUP BY k HAVING COUNT(*) > 2"
gen_data 30000 50 11 >data2.csv
embedded "$DDL2" "$Q2;" t <data2.csv >ref2.csv || fail "embedded run 2"
sqlc -e "$DDL2 CREATE QUERY hot WITH (parallelism = 5) AS $Q2;" 2>cq.err || { cat cq.err; fail "CREATE QUERY"; }
sqlc -e "SUBSCRIBE hot;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.5
# INSERT INTO ... SELECT is embedded-only for now: refused with a clear
# error (CREATE STREAM AS runs on a cluster: t_cluster_derived.sh)
sqlc -e "INSERT INTO t SELECT * FROM t;" 2>ins.err && fail "INSERT INTO SELECT accepted on a cluster"
grep -q "INSERT INTO ... SELECT is not supported on a cluster yet" ins.err || { cat ins.err; fail "INSERT INTO SELECT refusal"; }
# an aggregate's table too (source tables run on a cluster: t_cluster_table.sh)
sqlc -e "CREATE TABLE tc AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;" 2>cta.err && fail "CREATE TABLE AS accepted on a cluster"
grep -q "CREATE TABLE ... AS SELECT is not supported on a cluster yet" cta.err || { cat cta.err; fail "CREATE TABLE AS refusal"; }
sqlc -e "EXPLAIN PLACEMENT hot;" >place.csv || fail "EXPLAIN PLACEMENT"
[ "$(cut -d, -f4 place.csv | tail -n +2 | sort -u | wc -l)" -ge 5 ] || { cat place.csv; fail "hot is not spread"; }
# ---- 4. garbage at two nodes' ports while the rows flow
(
    sleep 0.2
    head -c 4096 /dev/urandom | nc -q 1 127.0.0.1 "$(port_of n2)" >/dev/null 2>&1
    head -c 4096 /dev/urandom | nc -q 1 127.0.0.1 "$(port_of c0)" >/dev/null 2>&1
    printf 'ARES\001\012\000\000\377\377\377\377garbage' | nc -q 1 127.0.0.1 "$(port_of n4)" >/dev/null 2>&1
) &
GARB=$!
# feed slowly so the garbage lands mid-stream
(split -l 5000 data2.csv part.; for p in part.*; do cat "$p"; sleep 0.2; done) | sqlc --ingest t --end || fail "ingest into t"
wait $GARB
want=$(($(wc -l <ref2.csv)))
i=0
while [ "$(wc -l <sub.csv)" -lt "$want" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill $SUB 2>/dev/null
wait $SUB 2>/dev/null
same_rows sub.csv ref2.csv
for n in c0 n2 n4; do
    kill -0 "$(eval echo \$PID_$n)" 2>/dev/null || fail "node $n died from garbage"
done
grep -qi "magic\|protocol\|bad frame\|handshake" n2.log || fail "n2 did not log the garbage"
wait_alive 6

# ---- 5. the wrong secret
head -c 32 /dev/urandom | base64 >bad-secret
chmod 600 bad-secret
"$A" --connect "$CADDR" --secret-file bad-secret -e "SHOW NODES;" >bad.out 2>bad.err
rc=$?
[ $rc -ne 0 ] || fail "a wrong secret was accepted"
grep -q "authentication failed" bad.err || { cat bad.err; fail "no clear message for a wrong secret"; }
[ ! -s bad.out ] || fail "a refused client got output"
grep -q "failed to prove the cluster secret" c0.log || fail "the coordinator did not log the refusal"

# ---- 6. a node that joins late
start_member n6 rack-c
wait_alive 7
DDL3="CREATE STREAM u (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
Q3="SELECT k, SUM(v) AS total, COUNT(*) AS n FROM u WINDOW TUMBLING (SIZE 500 MILLISECONDS) GROUP BY k;"
gen_data 20000 1000 13 >data3.csv
embedded "$DDL3" "$Q3" u <data3.csv >ref3.csv || fail "embedded run 3"
sqlc -e "$DDL3 SET parallelism = 7;" || fail "CREATE STREAM u"
sqlc -e "$Q3" --ingest u --end <data3.csv >late.csv 2>late.err || { cat late.err; fail "query with the late node"; }
same_rows late.csv ref3.csv
grep -q "deployed: [1-9]" n6.log || fail "the late node ran no task"
sqlc -e "SHOW STREAMS;" >streams.csv || fail "SHOW STREAMS"
# where each stream lives: its home and, in another domain, its shadow
head -n 1 streams.csv | grep -q '^name,home,shadow,copy,rows,rejected,watermark,log_bytes,sql$' || { cat streams.csv; fail "SHOW STREAMS columns"; }
grep -q '^u,[a-z0-9]*,[a-z0-9]*,input,' streams.csv || { cat streams.csv; fail "stream u has no shadow home"; }

# ---- 7. DROP QUERY
sqlc -e "DROP QUERY hot;" || fail "DROP QUERY"
sleep 0.3
for n in c0 n1 n2 n3 n4 n5 n6; do grep -q "query 2 undeployed" "$n.log" || fail "$n did not undeploy query 2"; done
sqlc -e "SUBSCRIBE hot;" 2>drop.err && fail "SUBSCRIBE of a dropped query worked"
grep -q "no query 'hot'" drop.err || { cat drop.err; fail "SUBSCRIBE of a dropped query: message"; }
# ---- 8. the coordinator restarts: its standing queries come back, deployed again
DDL4="CREATE STREAM v (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
Q4="SELECT k, COUNT(*) AS n, MAX(v) AS top FROM v WINDOW TUMBLING (SIZE 2 SECONDS) GROUP BY k"
gen_data 10000 40 19 >data4.csv
embedded "$DDL4" "$Q4;" v <data4.csv >ref4.csv || fail "embedded run 4"
sqlc -e "$DDL4 CREATE QUERY cq WITH (parallelism = 4) AS $Q4;" || fail "CREATE QUERY cq"
kill -TERM "$PID_c0"
wait "$PID_c0" 2>/dev/null
"$N" --name c0 --domain rack-a --listen "127.0.0.1:$CPORT" --data "$T/data-c0" --secret-file "$SECRET" \
    --coordinator >/dev/null 2>>"$T/c0.log" &
PIDS="$PIDS $!"
wait_alive 7
grep -q "query 4 (cq) restored from the catalog" c0.log || fail "cq was not restored"
sqlc -e "SUBSCRIBE cq;" >sub4.csv 2>sub4.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.5
sqlc --ingest v --end <data4.csv || fail "ingest into v after the restart"
want=$(($(wc -l <ref4.csv)))
i=0
while [ "$(wc -l <sub4.csv)" -lt "$want" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill $SUB 2>/dev/null
same_rows sub4.csv ref4.csv
# ---- 9. a socket source: only the stream's home node listens on it
SP=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sqlc -e "CREATE STREAM live (ts BIGINT, k BIGINT) WITH (timestamp = 'ts', source = 'tcp://127.0.0.1:$SP', format = 'csv');
         CREATE QUERY lq AS SELECT k, COUNT(*) AS n FROM live WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;" || fail "socket source stream"
grep -q "stream live: home node .* alone reads" c0.log || fail "the socket source has no single home"
sqlc -e "SUBSCRIBE lq;" >sub5.csv 2>sub5.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.5
printf '100,1\n200,2\n1500,1\n2500,3\n5000,1\n' | nc -q 1 127.0.0.1 "$SP" || fail "cannot reach the socket source"
i=0
while [ "$(wc -l <sub5.csv)" -lt 5 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
kill $SUB 2>/dev/null
[ "$(tail -n +2 sub5.csv | sort | tr '\n' ' ')" = "1,1 1,1 2,1 3,1 " ] || { cat sub5.csv; fail "socket source rows"; }
# ---- 10. a file source is refused, with where and what to do instead (no
# node reads a client's file: the stream would stay empty and a SELECT wait)
printf 'ts,k\n1,1\n' >f.csv
sqlc -e "CREATE STREAM fsrc (ts BIGINT, k BIGINT) WITH (timestamp = 'ts', source = 'file://$PWD/f.csv');" 2>fsrc.err &&
    fail "a file source was accepted on a cluster"
grep -q "a cluster reads socket sources only" fsrc.err && grep -q -- "--ingest fsrc --end" fsrc.err &&
    grep -q "column" fsrc.err || { cat fsrc.err; fail "the refused file source's message"; }
# ---- 11. WITH (home = 'NODE') puts the stream's log where the user says; an
# unknown node is refused with its position and the nodes that could be
sqlc -e "CREATE STREAM hm (ts BIGINT, k BIGINT) WITH (timestamp = 'ts', home = 'n4');" || fail "CREATE STREAM with home"
sqlc -e "SHOW STREAMS;" | grep -q '^hm,n4,' || { sqlc -e "SHOW STREAMS;"; fail "hm's home is not n4"; }
printf 'ts,k\n1,1\n2,2\n' | sqlc --ingest hm --end || fail "ingest into hm"
sqlc -e "CREATE STREAM hx (ts BIGINT) WITH (timestamp = 'ts', home = 'n99');" 2>hx.err && fail "home n99 was accepted"
grep -q "home 'n99' is not a live node that runs tasks (those are: c0, " hx.err && grep -q "column" hx.err ||
    { cat hx.err; fail "the refused home's message"; }
echo "cluster basic: ok"
