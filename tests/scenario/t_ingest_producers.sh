#!/bin/sh
# Several producers, one after another, into one stream (issue 16, item 2),
# embedded and on a cluster; and late rows told to the client that sent them.
#   embedded: two ares-sql --ingest runs on one data directory: the second
#     run's windows come out (each run's end closes the windows it left open);
#     a third run's row for a window that has closed is reported: a warning
#     with the count, exit 4 (0 with --allow-late).
#   cluster: a coordinator and one node; a standing query with a subscriber;
#     two clients ingest one after the other: the end of the first one's
#     input does not end the stream, the second batch's windows come out as
#     event time passes them, nothing is late; a row behind the watermark is
#     reported to its sender (warning, exit 4); --end ends the stream (every
#     window closes), and a row after that is late too.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
Q="SELECT k, COUNT(*) AS n, window_start FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k"
B1='ts,k,v\n1000,1,1\n2000,1,1\n15000,2,1\n'
B2='ts,k,v\n25000,1,1\n27000,1,1\n40000,2,1\n'
ws() { printf '1970-01-01T00:00:%02d.000Z' "$1"; }

# ---- embedded: one data directory, one run after another
mkdir emb
printf "$B1" | "$A" --data emb/d -q -e "$DDL CREATE QUERY q WITH (sink = 'file://$T/emb/q.csv', format = 'csv') AS $Q;" \
    --ingest s 2>emb/1.err || { cat emb/1.err; fail "embedded: first ingest"; }
[ ! -s emb/1.err ] || { cat emb/1.err; fail "embedded: the first ingest printed to stderr"; }
printf "$B2" | "$A" --data emb/d -q --ingest s 2>emb/2.err || { cat emb/2.err; fail "embedded: second ingest"; }
[ ! -s emb/2.err ] || { cat emb/2.err; fail "embedded: the second ingest printed to stderr"; }
for w in "1,2,$(ws 0)" "2,1,$(ws 10)" "1,2,$(ws 20)" "2,1,$(ws 40)"; do
    grep -qx "$w" emb/q.csv || { cat emb/q.csv; fail "embedded: window $w missing"; }
done
# window [10 s, 20 s) has closed: a row for it is late, and its sender hears it
printf 'ts,k,v\n12000,3,1\n13000,3,1\n' | "$A" --data emb/d -q --ingest s 2>emb/3.err
rc=$?
[ $rc -eq 4 ] || { cat emb/3.err; fail "embedded: late rows gave exit $rc, expected 4"; }
grep -q "^ares-sql: warning: 2 rows of stream s were late and dropped" emb/3.err || { cat emb/3.err; fail "embedded: no warning for 2 late rows"; }
printf 'ts,k,v\n14000,3,1\n' | "$A" --data emb/d -q --ingest s --allow-late 2>emb/4.err ||
    { cat emb/4.err; fail "embedded: --allow-late did not exit 0"; }
grep -q "^ares-sql: warning: 1 row of stream s was late and dropped" emb/4.err || { cat emb/4.err; fail "embedded: no warning with --allow-late"; }
! grep -q ',3,' emb/q.csv || fail "embedded: a late row reached the output"
echo "embedded: both runs' windows came out; 2 late rows told to their sender (exit 4), 1 with --allow-late (exit 0)"

# ---- cluster: a coordinator and one node
start_coordinator c0 rack-a
start_member n1 rack-b
wait_alive 2
sqlc -e "$DDL CREATE QUERY q AS $Q;" || fail "CREATE QUERY"
sqlc -e "SUBSCRIBE q;" >sub.csv 2>sub.err &
PIDS="$PIDS $!"
sleep 0.5
printf "$B1" | sqlc --ingest s 2>in1.err || { cat in1.err; fail "cluster: first ingest"; }
wait_rows sub.csv 2 50 || { cat sub.csv; fail "cluster: window [0, 10 s) did not close"; }
printf "$B2" | sqlc --ingest s 2>in2.err || { cat in2.err; fail "cluster: second ingest (its rows were late?)"; }
[ ! -s in2.err ] || { cat in2.err; fail "cluster: the second ingest printed to stderr"; }
wait_rows sub.csv 4 50 || { cat sub.csv; fail "cluster: the second batch's windows did not come out"; }
for w in "1,2,$(ws 0)" "2,1,$(ws 10)" "1,2,$(ws 20)"; do
    grep -qx "$w" sub.csv || { cat sub.csv; fail "cluster: window $w missing"; }
done
sqlc -e "SHOW QUERIES;" >q1.csv || fail "SHOW QUERIES"
grep -q '^q,RUNNING,,6,3,[0-9.]*,[0-9.]*,0,0,1970-01-01T00:00:40.000Z,' q1.csv || { cat q1.csv; fail "cluster: SHOW QUERIES after two ingests"; }
# a row for a window that has closed: late, and its sender hears it
printf 'ts,k,v\n5000,3,1\n' | sqlc --ingest s 2>in3.err
rc=$?
[ $rc -eq 4 ] || { cat in3.err; fail "cluster: a late row gave exit $rc, expected 4"; }
grep -q "^ares-sql: warning: 1 row of stream s was late and dropped" in3.err || { cat in3.err; fail "cluster: no warning for the late row"; }
# --end: the stream ends with this input; every window closes
printf 'ts,k,v\n41000,2,1\n' | sqlc --ingest s --end 2>in4.err || { cat in4.err; fail "cluster: ingest --end"; }
wait_rows sub.csv 5 50 || { cat sub.csv; fail "cluster: --end did not close window [40 s, 50 s)"; }
grep -qx "2,2,$(ws 40)" sub.csv || { cat sub.csv; fail "cluster: window [40 s, 50 s) wrong"; }
sqlc -e "SHOW QUERIES;" >q2.csv || fail "SHOW QUERIES"
grep -q ',1,0,end of input,' q2.csv || { cat q2.csv; fail "cluster: SHOW QUERIES after --end"; }
printf 'ts,k,v\n60000,2,1\n' | sqlc --ingest s --allow-late 2>in5.err || { cat in5.err; fail "cluster: --allow-late did not exit 0"; }
grep -q "^ares-sql: warning: 1 row of stream s was late and dropped" in5.err || { cat in5.err; fail "cluster: a row after the end was not reported"; }
[ "$(wc -l <sub.csv)" -eq 5 ] || { cat sub.csv; fail "cluster: a late row reached the subscriber"; }
# a push query with --ingest and no --end: the stream stays open, and the
# client says so and goes on (until its end here); with --end it finishes
sqlc -e "CREATE STREAM s2 (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');" || fail "CREATE STREAM s2"
printf "$B1" | timeout 3 "$A" --connect "$CADDR" --secret-file "$SECRET" -e "$(echo "$Q" | sed 's/FROM s /FROM s2 /');" \
    --ingest s2 >push1.csv 2>push1.err
grep -q "^-- the input ended; stream s2 stays open for other producers, so the push query goes on until Ctrl-C (--end ends the stream with the input)" push1.err ||
    { cat push1.err; fail "cluster: no word that the push query goes on"; }
grep -qx "1,2,$(ws 0)" push1.csv || { cat push1.csv; fail "cluster: the push query's closed window is missing"; }
! grep -q "$(ws 10)" push1.csv || { cat push1.csv; fail "cluster: the open window came out without --end"; }
printf 'ts,k,v
21000,1,1
' | sqlc -e "$(echo "$Q" | sed 's/FROM s /FROM s2 /');" --ingest s2 --end >push2.csv 2>push2.err ||
    { cat push2.err; fail "cluster: a push query with --ingest --end did not finish"; }
grep -qx "1,1,$(ws 20)" push2.csv || { cat push2.csv; fail "cluster: --end did not close the push query's windows"; }
echo "cluster: the second producer's windows came out; late rows told to their senders; --end closed every window"
