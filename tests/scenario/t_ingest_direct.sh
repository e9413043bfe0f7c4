#!/bin/sh
# Ingest straight to the homes (issue 17: no single funnel).  With SET
# shadow = 'log' each stream's home copies its log to its shadow, so the
# coordinator forwards no input: it tells the producer where the home is
# (RES_HOME) and the producer sends there.  6 nodes in 3 domains, a stream
# of 3 partitions at homes n1, n3, n5, one producer a partition:
#   1. the coordinator sent each producer to its partition's home, each home
#      took its input straight from a client, and the subscriber's output
#      equals the embedded run, row for row;
#   2. a partitioned stream's own name (its --end ends every partition) and
#      a stream the coordinator feeds to two homes (shadow = 'input') still
#      go through the coordinator, and their windows come out;
#   3. a client that connects to a node that is not the coordinator hears so
#      at once, as before;
#   4. what the home tells a producer still reaches it: a rejected line (its
#      input line number) and a late row (warning, exit 4), though the
#      queries see the rows only once the copy has them.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_cluster c0:rack-a n1:rack-a n2:rack-b n3:rack-b n4:rack-c n5:rack-c

DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts', partitions = 3, home = 'n1,n3,n5');"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
sqlc -e "SET shadow = 'log'; $DDL SET parallelism = 3; CREATE QUERY q AS $Q;" || fail "CREATE STREAM, CREATE QUERY"

# ---- 1. three producers, each straight to its partition's home
gen_data 30000 40 11 >data.csv
embedded "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');" "$Q;" s <data.csv >ref.csv ||
    fail "embedded run"
# each partition in time order: rows dealt round-robin
for p in 0 1 2; do awk -F, -v p=$p 'NR % 3 == p' data.csv >part$p.csv; done
sqlc -e "SUBSCRIBE q;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.5
IP=""
for p in 0 1 2; do
    sqlc --ingest "s#$p" --end <part$p.csv >in$p.out 2>in$p.err &
    IP="$IP $!"
done
for x in $IP; do wait "$x" || { cat in*.err; fail "a producer failed"; }; done
sub_finish "$(wc -l <ref.csv)"
same_rows sub.csv ref.csv
for pn in "0 n1" "1 n3" "2 n5"; do
    set -- $pn
    grep -q "ingest into s#$1 goes straight to its home node $2 at " c0.log || fail "the coordinator did not send s#$1's producer to $2"
    part="s#$1"
    [ "$1" = 0 ] && part=s # partition 0 is the stream itself
    grep -q "ingest into $part comes straight from a client" "$2.log" || fail "$2 did not take $part's input straight"
done
grep -q "ingest into s[#0-9]* goes to its home node" c0.log && fail "the coordinator forwarded an ingest it could have sent straight"
echo "1. three producers straight to n1, n3, n5: the output equals the embedded run ($(($(wc -l <ref.csv) - 1)) rows)"

# ---- 2. what still goes through the coordinator
printf 'ts,k,v\n99000,1,1\n' | sqlc --ingest s --end 2>end.err || { cat end.err; fail "ingest into s --end"; }
grep -q "ingest into s goes to its home node n1" c0.log || fail "s (every partition's end) did not go through the coordinator"
sqlc -e "SET shadow = 'input'; CREATE STREAM u (ts BIGINT, k BIGINT) WITH (timestamp = 'ts', home = 'n5');" || fail "CREATE STREAM u"
sqlc -e "SELECT k, COUNT(*) AS n FROM u WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;" >u.csv 2>u.err &
UQ=$!
PIDS="$PIDS $UQ"
sleep 0.5
printf 'ts,k\n1000,1\n1500,1\n3000,2\n' | sqlc --ingest u --end 2>u_in.err || { cat u_in.err; fail "ingest into u"; }
wait $UQ || { cat u.err; fail "the push query over u"; }
grep -qx "1,2" u.csv || { cat u.csv; fail "u's window did not come out"; }
grep -q "ingest into u goes to its home node n5 and its shadow" c0.log || fail "u (a fed shadow) did not go through the coordinator"
echo "2. a partitioned stream's own name and a stream fed to a shadow went through the coordinator"

# ---- 3. a node is not the coordinator
P1=$(port_of n1)
t0=$(now_ms)
"$A" --connect "127.0.0.1:$P1" --secret-file "$SECRET" -q -e "SHOW NODES;" >node.out 2>node.err && fail "a node answered as the coordinator"
t1=$(now_ms)
grep -q "not the coordinator" node.err || { cat node.err; fail "no word that n1 is not the coordinator"; }
[ $((t1 - t0)) -lt 3000 ] || fail "the client waited $((t1 - t0)) ms to hear that n1 is not the coordinator"
echo "3. a client at n1's address heard at once that it is not the coordinator ($((t1 - t0)) ms)"
# ---- 4. rejects and late rows, told by the home to the producer.  Every
# task of the query at the home (the coordinator has one slot, for the sink;
# no replica), so that the home counts the drops before it answers
# (docs/operations.md: a window task fed from elsewhere counts them there)
stop_cluster
mkdir c2 && cd c2 || fail "mkdir"
T=$PWD
start_node c0 rack-a --coordinator --slots 1
CPORT=$(port_of c0)
CADDR="127.0.0.1:$CPORT"
start_member n1 rack-b
wait_alive 2
sqlc -e "SET shadow = 'log'; SET replicas = 0; CREATE STREAM t (ts BIGINT, k BIGINT) WITH (timestamp = 'ts', home = 'n1');" || fail "CREATE STREAM t"
sqlc -e "CREATE QUERY qt AS SELECT k, COUNT(*) AS n, window_start FROM t WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;" ||
    fail "CREATE QUERY qt"
printf 'ts,k\n1000,1\nabc,2\n5000,1\n' | sqlc --ingest t 2>rej.err || { cat rej.err; fail "ingest into t"; }
grep -q "^line 3: column 'ts': 'abc' is not a BIGINT" rej.err || { cat rej.err; fail "the rejected line's number did not reach the producer"; }
grep -q "2 rows ingested, 1 line rejected" rej.err || { cat rej.err; fail "the home's counts did not reach the producer"; }
printf 'ts,k\n100,7\n' | sqlc --ingest t 2>late.err
rc=$?
[ $rc -eq 4 ] || { cat late.err; sqlc -e "EXPLAIN PLACEMENT qt;" | head -7; fail "a late row gave exit $rc, expected 4"; }
grep -q "^ares-sql: warning: 1 row of stream t was late and dropped" late.err || { cat late.err; fail "no warning for the late row"; }
[ "$(grep -c "ingest into t goes straight to its home node n1" c0.log)" -eq 2 ] || fail "t's producers did not go straight to n1"
echo "4. straight to the home: the rejected line 3 and the late row (counted once the copy had it) were told to the producer"
echo "ingest direct: ok"
