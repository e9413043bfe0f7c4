#!/bin/sh
# A standing query and its open windows survive restarts of ares-sql (the
# binary-level twin of test_exec.c's test_restart_keeps_query_and_state;
# t_crash.sh does the same with kill -9 and file sources).
#  1. Scripts: each run adds rows with \copy (the stream stays open); the
#     windows that span runs count the rows of every run, and the file sink
#     ends up with exactly the rows of one uninterrupted --ingest.
#  2. --follow with a tcp:// source: SIGTERM, start again with the same
#     command; the source listens again, and a window opened before the
#     restart closes after it with the rows of both sides (watched live by
#     SUBSCRIBE from a second process, then in the file sink).
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"

EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts')"
AGG="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL"

# ---- 1. three runs of scripts, one standing query
# 300 rows, 1 s apart, keys 1..4; split in three parts at 95 s and 205 s, in
# the middle of windows, so that the windows [90 s, 100 s) and [200 s, 210 s)
# hold rows of two runs.
awk 'BEGIN { for (i = 0; i < 300; i++) print i * 1000 "," i % 4 + 1 "," i % 5 }' >all.csv
awk -F, '$1 < 95000' all.csv >part1.csv
awk -F, '$1 >= 95000 && $1 < 205000' all.csv >part2.csv
awk -F, '$1 >= 205000' all.csv >part3.csv

"$A" --data "$T/d1" -e "$EV; CREATE QUERY q WITH (sink = 'file://$T/sink.csv', format = 'csv') AS $AGG;" >out 2>err
expect_rc 0 $? "create the query"
"$A" --data "$T/d1" -e "\\copy ev FROM '$T/part1.csv'" >out 2>err
expect_rc 0 $? "run 1"
has err "COPY 95"
# the window [90 s, 100 s) is open: nothing of it in the sink yet
grep -q ',1970-01-01T00:01:30.000Z$' sink.csv && fail "a window closed before its end"
"$A" --data "$T/d1" -e "SHOW QUERIES;" >out 2>err
expect_rc 0 $? "SHOW QUERIES after a restart"
grep -q '^q,RUNNING,' out || { cat out; fail "the query is not running after a restart"; }
"$A" --data "$T/d1" -e "\\copy ev FROM '$T/part2.csv'" >out 2>err
expect_rc 0 $? "run 2"
"$A" --data "$T/d1" -e "\\copy ev FROM '$T/part3.csv'" >out 2>err
expect_rc 0 $? "run 3"
# the end of the stream closes the last windows (an empty --ingest)
"$A" --data "$T/d1" --ingest ev </dev/null >out 2>err
expect_rc 0 $? "end the stream"

"$A" --memory -q -e "$EV; $AGG;" --ingest ev <all.csv >want.out 2>err
expect_rc 0 $? "the uninterrupted run"
tail -n +2 want.out | sort >want.txt
[ "$(wc -l <want.txt)" -eq 120 ] || fail "the uninterrupted run has $(wc -l <want.txt) rows"
head -n 1 sink.csv | grep -qx "k,n,s,window_start" || fail "the sink's header"
tail -n +2 sink.csv | sort >got.txt
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "the sink after three restarts differs from one run"; }
# the windows that span two runs, in full
grep -qx '3,3,7,1970-01-01T00:01:30.000Z' got.txt || fail "window [90 s, 100 s) of key 3"
grep -qx '1,3,7,1970-01-01T00:03:20.000Z' got.txt || fail "window [200 s, 210 s) of key 1"

# ---- 2. --follow with a socket source, stopped and started again
PORT=$(free_port)
"$A" --data "$T/d2" -e "CREATE STREAM live (ts TIMESTAMP, k BIGINT) WITH (timestamp = 'ts', source = 'tcp://127.0.0.1:$PORT');
CREATE QUERY c WITH (sink = 'file://$T/live.csv', format = 'csv') AS
  SELECT k, COUNT(*) AS n FROM live WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;" >out 2>err
expect_rc 0 $? "create the live query"
run_follow() {
    "$A" --data "$T/d2" --follow >follow.out 2>>follow.err &
    FPID=$!
    PIDS="$PIDS $FPID"
    wait_until 5 listening "$PORT" || { cat follow.err; fail "the restarted engine does not listen"; }
}
stop_follow() {
    kill -TERM "$FPID"
    wait "$FPID"
    rc=$?
    [ "$rc" -eq 0 ] || { cat follow.err; fail "--follow stopped by SIGTERM: exit $rc, want 0"; }
}
run_follow
printf '1000,7\n2000,7\n3000,8\n' | nc -N 127.0.0.1 "$PORT"
sleep 0.5 # the engine's tick commits what came
stop_follow
grep -q "^[0-9]" live.csv 2>/dev/null && fail "a window closed before its end"
run_follow
# watch the query from a second process while the rows come
"$A" --data "$T/d2" -e "SUBSCRIBE c;" >sub.out 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
wait_until 5 lines_at_least sub.out '^k,n$' 1 || { cat sub.err; fail "SUBSCRIBE after the restart"; }
printf '4000,7\n15000,9\n' | nc -N 127.0.0.1 "$PORT"
wait_until 5 lines_at_least sub.out '^[0-9]' 2 || { cat sub.out follow.err; fail "the window did not close after the restart"; }
[ "$(grep "^[0-9]" sub.out | sort)" = "$(printf '7,3\n8,1')" ] || { cat sub.out; fail "the window spanning the restart"; }
stop_follow
# the file sink has the same rows (engine_close writes what it holds)
[ "$(grep "^[0-9]" live.csv | sort)" = "$(printf '7,3\n8,1')" ] || { cat live.csv; fail "the file sink after the restart"; }
wait_until 5 gone "$SUB" || fail "the subscriber outlived its engine"

echo "t_restart: all passed"
