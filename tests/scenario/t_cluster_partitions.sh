#!/bin/sh
# A partitioned stream on a cluster (issue 17, "no single funnel"): 6 nodes
# in 3 domains, CREATE STREAM ... WITH (partitions = 3, home = 'n1,n3,n5'),
# so that each partition has its own log at its own home, in its own domain,
# and a query reads it with a source task per partition, each pinned to its
# partition's home.  Checks:
#   1. SHOW STREAMS lists the partitions at their homes, each with a shadow;
#      EXPLAIN PLACEMENT pins SOURCE#p to partition p's home;
#   2. three producers at once, one per partition (ares-sql --ingest 's#P'
#      --end, 's#0' for partition 0), each ending its own partition: a push
#      query's rows equal the embedded engine's over the same rows in one
#      stream, and each partition's home holds its partition's rows only;
#      (part 3 ends a stream's every partition with `--ingest r --end`)
#   3. a standing query with ft = replica and a subscriber, fed paced into
#      every partition of a stream homed at c0, n3 and n5; the domain of
#      partition 1's home (rack-b: n2, n3) is SIGKILLed mid-stream (its
#      source task must follow its own partition to its shadow, not the
#      stream's first partition); its shadow takes over, the replicas are
#      promoted and the partitions replayed from where each task's state
#      was: the subscriber's rows equal the embedded engine's, none lost or
#      repeated;
#   4. a partition name cannot be dropped alone, and a stream name cannot
#      hold '#'.
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

# one time-ordered input, dealt round-robin into 3 partitions (each stays in
# time order, so no row is late anywhere)
split3() {
    awk -v d="$1" '{ print > (d "/p" ((NR - 1) % 3) ".csv") }'
}

# ---- 1. the partitions and their homes
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts', watermark = '20 ms', partitions = 3, home = 'n1,n3,n5');"
sqlc -e "$DDL SET parallelism = 4;" >ddl.out 2>ddl.err || { cat ddl.err; fail "CREATE STREAM with partitions"; }
sqlc -e "SHOW STREAMS;" >streams.csv || fail "SHOW STREAMS"
grep -q '^s,n1,[a-z0-9]*,input,' streams.csv && grep -q '^s#1,n3,[a-z0-9]*,input,' streams.csv &&
    grep -q '^s#2,n5,[a-z0-9]*,input,' streams.csv || { cat streams.csv; fail "the partitions are not at their homes"; }
grep -q '(partition 2 of s)' streams.csv || { cat streams.csv; fail "SHOW STREAMS does not say what s#2 is"; }
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top, window_start FROM s WINDOW TUMBLING (SIZE 500 MILLISECONDS) GROUP BY k"
sqlc -e "CREATE QUERY qx AS $Q; EXPLAIN PLACEMENT qx;" >pl.csv || fail "EXPLAIN PLACEMENT"
sqlc -e "DROP QUERY qx;" || fail "DROP QUERY qx"
grep -q '^SOURCE#0,0 SOURCE,task,n1,' pl.csv && grep -q '^SOURCE#1,0 SOURCE,task,n3,' pl.csv &&
    grep -q '^SOURCE#2,0 SOURCE,task,n5,' pl.csv || { cat pl.csv; fail "the source tasks are not at their partitions' homes"; }

# ---- 2. a producer per partition, then the end of the stream
gen_data 30000 200 5 >data.csv
mkdir -p parts && split3 parts <data.csv
DDL1="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts', watermark = '20 ms');"
embedded "$DDL1" "$Q;" s <data.csv >ref.csv || fail "embedded run"
sqlc -e "$Q;" >push.csv 2>push.err &
QP=$!
PIDS="$PIDS $QP"
sleep 1
# each producer ends its own partition ('s#0' is partition 0 alone); the
# push query ends when all three have
sqlc --ingest 's#1' --end <parts/p1.csv 2>i1.err &
I1=$!
sqlc --ingest 's#2' --end <parts/p2.csv 2>i2.err &
I2=$!
sqlc --ingest 's#0' --end <parts/p0.csv 2>i0.err &
I0=$!
wait $I1 || { cat i1.err; fail "ingest into s#1"; }
wait $I2 || { cat i2.err; fail "ingest into s#2"; }
wait $I0 || { cat i0.err; fail "ingest into s#0"; }
wait $QP || { cat push.err; fail "the push query over the partitions"; }
same_rows push.csv ref.csv
sqlc -e "SHOW STREAMS;" >streams2.csv || fail "SHOW STREAMS"
for p in "s,n1" "s#1,n3" "s#2,n5"; do
    grep -q "^$p,[a-z0-9]*,input,10000,0," streams2.csv || { cat streams2.csv; fail "partition $p does not hold its 10000 rows"; }
done

# ---- 3. a standing query, one partition's domain SIGKILLed
sqlc -e "CREATE STREAM r (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts', partitions = 3, home = 'c0,n3,n5');
         SET ft = 'replica'; SET replicas = 1;
         CREATE QUERY qr AS SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM r WINDOW TUMBLING (SIZE 200 MILLISECONDS) GROUP BY k;" ||
    fail "the standing query"
DDLR="CREATE STREAM r (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
QR="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM r WINDOW TUMBLING (SIZE 200 MILLISECONDS) GROUP BY k;"
gen_data 24000 100 9 >rdata.csv
mkdir -p rparts && split3 rparts <rdata.csv
embedded "$DDLR" "$QR" r <rdata.csv | tail -n +2 | sort >rref.csv || fail "embedded run of qr"
sqlc -e "SUBSCRIBE qr;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.5
# paced: 8000 rows a partition over about 4 s
pace() { awk '{ print; fflush(); if (NR % 400 == 0) system("sleep 0.2") }' "$1"; }
pace rparts/p1.csv | sqlc --ingest 'r#1' 2>r1.err &
R1=$!
pace rparts/p2.csv | sqlc --ingest 'r#2' 2>r2.err &
R2=$!
pace rparts/p0.csv | sqlc --ingest r 2>r0.err &
R0=$!
PIDS="$PIDS $R0 $R1 $R2"
sleep 1.8
grep "stream r#1: home node n3, shadow " c0.log | grep -qv "shadow c0" || { grep "stream r" c0.log; fail "r#1's shadow is c0, the first partition's home"; }
# the partitions' shadows spread over the candidates
[ "$(grep -c "stream s#[12]: home node n[35], shadow n1" c0.log)" -lt 2 ] || { grep "stream s" c0.log; fail "both partitions' shadows on n1"; }
echo "$(date -u +%T.%3N) killing rack-b (n2, n3: the home of r#1)"
signal_nodes KILL n2 n3
wait $R1 || { cat r1.err; fail "ingest into r#1 across its home's death"; }
wait $R2 || { cat r2.err; fail "ingest into r#2"; }
wait $R0 || { cat r0.err; fail "ingest into r"; }
printf '' | sqlc --ingest r --end 2>re.err || { cat re.err; fail "the end of r"; }
sub_finish "$(($(wc -l <rref.csv) + 1))"
tail -n +2 sub.csv | sort >rgot.csv
if ! cmp -s rgot.csv rref.csv; then
    echo "lost: $(comm -13 rgot.csv rref.csv | wc -l), extra: $(comm -23 rgot.csv rref.csv | wc -l)"
    comm -3 rgot.csv rref.csv | head -5
    for f in c0 n1 n4 n5; do echo "--- $f"; grep -i "replay\|promot\|shadow\|took over" "$f.log" | tail -5; done
    fail "the subscriber's rows after the failure differ from the embedded engine's"
fi
grep -q "replayed" n1.log n4.log n5.log c0.log || fail "no replay after the failure"

# ---- 4. names
sqlc -e 'DROP STREAM "s#1";' 2>d.err && fail "a partition was dropped alone"
grep -q "is a partition of stream 's'" d.err || { cat d.err; fail "dropping a partition: the message"; }
sqlc -e 'CREATE STREAM "a#b" (x BIGINT);' 2>h.err && fail "a stream name with # was accepted"
grep -q "cannot hold '#'" h.err || { cat h.err; fail "a name with #: the message"; }
echo "cluster partitions: ok"
