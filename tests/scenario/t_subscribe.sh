#!/bin/sh
# SUBSCRIBE from a second ares-sql process.
# One ares-sql holds the data directory with --follow: a tcp:// source and a
# standing query.  Second processes on the same --data DIR find it in use
# and SUBSCRIBE through its control socket (DIR/ares.sock): their rows print
# live while data arrives (CSV, JSON and a table), the owner keeps running
# when a subscriber leaves, and a subscriber ends with exit 0 when the owner
# stops.  Anything but SUBSCRIBE on a directory in use fails with exit 1 and
# says why.  Once the owner is gone, SUBSCRIBE runs in-process on a reopened
# engine.  Ports are chosen free; everything started is killed on exit.
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"
send() { printf "$1" | nc -N 127.0.0.1 "$PORT"; }

D="$T/data"
PORT=$(free_port)
# ---- the owner: a standing query over a socket source, kept running by --follow
"$A" --data "$D" --follow -e "
CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts', source = 'tcp://127.0.0.1:$PORT');
CREATE QUERY q AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;" \
    >owner.out 2>owner.err &
OWNER=$!
PIDS="$PIDS $OWNER"
wait_until 5 listening "$PORT" || { cat owner.err; fail "the owner does not listen"; }
wait_until 5 test -S "$D/ares.sock" || fail "no control socket $D/ares.sock"

# ---- subscribers: CSV, JSON, table
"$A" --data "$D" -e "SUBSCRIBE q;" --format csv >csv.out 2>csv.err &
SUB_CSV=$!
"$A" --data "$D" -e "SUBSCRIBE q;" --format json >json.out 2>json.err &
SUB_JSON=$!
printf 'SUBSCRIBE q;\n' | "$A" --data "$D" --format table >table.out 2>table.err &
SUB_TABLE=$!
PIDS="$PIDS $SUB_CSV $SUB_JSON $SUB_TABLE"
# the CSV header comes at once, before any row
wait_until 5 lines_at_least csv.out '^k,n,s$' 1 || { cat csv.out csv.err; fail "the CSV subscriber got no header"; }
has csv.err "SUBSCRIBE q (through the process that holds $D)"

# rows print live, window by window, while the owner runs
send '1000,1,1.5\n2000,1,2\n3000,2,10\n'
sleep 0.3
[ "$(grep -c '^[0-9]' csv.out)" -eq 0 ] || { cat csv.out; fail "rows before their window closed"; }
send '12000,1,1\n'
wait_until 5 lines_at_least csv.out '^[0-9]' 2 || { cat csv.out csv.err; fail "no live rows after the first window closed"; }
[ "$(grep '^[0-9]' csv.out | sort)" = "$(printf '1,2,3.5\n2,1,10')" ] || { cat csv.out; fail "first window's rows"; }
wait_until 5 lines_at_least json.out '^{' 2 || { cat json.out json.err; fail "the JSON subscriber got no rows"; }
has json.out '{"k":1,"n":2,"s":3.5}'
has json.out '{"k":2,"n":1,"s":10}'
wait_until 5 lines_at_least table.out '|' 3 || { cat table.out table.err; fail "the table subscriber got no rows"; }
grep -q '^ k | n | *s$' table.out || { cat table.out; fail "table header"; }
grep -q '^ 2 | 1 | *10$' table.out || { cat table.out; fail "table row (numbers to the right)"; }

# a subscriber that leaves (Ctrl-C: 130) does not stop the owner or the others
kill -INT "$SUB_CSV"
wait "$SUB_CSV"
rc=$?
[ "$rc" -eq 130 ] || fail "a subscriber stopped by SIGINT: exit $rc, want 130"
send '25000,3,7\n'
wait_until 5 lines_at_least json.out '^{' 3 || { cat json.out; fail "no rows after a subscriber left"; }
has json.out '{"k":1,"n":1,"s":1}'
alive "$OWNER" || fail "the owner stopped"

# ---- on a directory in use, only SUBSCRIBE
"$A" --data "$D" -e "SHOW STREAMS;" >busy.out 2>busy.err
rc=$?
[ "$rc" -eq 1 ] || fail "SHOW STREAMS on a directory in use: exit $rc, want 1"
has busy.err "is in use by another process"
has busy.err "only SUBSCRIBE works here"
"$A" --data "$D" -e "SUBSCRIBE q; INSERT INTO ev VALUES (1, 1, 1);" >busy.out 2>busy.err
[ $? -eq 1 ] || fail "INSERT after SUBSCRIBE on a directory in use: not exit 1"
has busy.err "only SUBSCRIBE works here"
echo "1,1,1" | "$A" --data "$D" --ingest ev >busy.out 2>busy.err
[ $? -eq 1 ] || fail "--ingest on a directory in use: not exit 1"
has busy.err "is in use by another process"
"$A" --data "$D" -e "SUBSCRIBE nosuch;" >busy.out 2>busy.err
rc=$?
[ "$rc" -eq 1 ] || fail "SUBSCRIBE to an unknown query: exit $rc, want 1"
has busy.err "error: SUBSCRIBE nosuch: no query 'nosuch'"
"$A" --data "$D" -e "SUBSCRIBE q" -e "SELEC 1;" >busy.out 2>busy.err
[ $? -eq 1 ] || fail "a syntax error on a directory in use: not exit 1"
has busy.err "error: line 1, column 1:"

# ---- the owner stops (SIGTERM ends --follow with 0); its subscribers end with 0
kill -TERM "$OWNER"
wait "$OWNER"
rc=$?
[ "$rc" -eq 0 ] || { cat owner.err; fail "--follow stopped by SIGTERM: exit $rc, want 0"; }
wait_until 5 gone "$SUB_JSON" || fail "the JSON subscriber outlived the owner"
wait "$SUB_JSON"
rc=$?
[ "$rc" -eq 0 ] || { cat json.err; fail "a subscriber whose owner stopped: exit $rc, want 0"; }
wait_until 5 gone "$SUB_TABLE" || fail "the table subscriber outlived the owner"
wait "$SUB_TABLE"
[ $? -eq 0 ] || fail "the table subscriber's exit code"
has table.out "(3 rows)"
[ ! -e "$D/ares.sock" ] || fail "the control socket was left behind"

# ---- the directory is free: SUBSCRIBE runs in this process, on the reopened
# engine, whose source listens again; the query kept its open window (k 3 at 25 s)
"$A" --data "$D" -e "SUBSCRIBE q;" --format csv >local.out 2>local.err &
LOCAL=$!
PIDS="$PIDS $LOCAL"
wait_until 5 listening "$PORT" || { cat local.err; fail "the reopened engine does not listen"; }
send '26000,3,1\n41000,1,1\n'
wait_until 5 lines_at_least local.out '^3,' 1 || { cat local.out local.err; fail "in-process SUBSCRIBE printed nothing"; }
[ "$(grep '^[0-9]' local.out)" = "3,2,8" ] || { cat local.out; fail "in-process SUBSCRIBE rows (state across the restart)"; }
head -n 1 local.out | grep -qx 'k,n,s' || fail "in-process SUBSCRIBE header"
kill -INT "$LOCAL"
wait "$LOCAL"
rc=$?
[ "$rc" -eq 130 ] || { cat local.err; fail "in-process SUBSCRIBE stopped by SIGINT: exit $rc, want 130"; }

echo "t_subscribe: all passed"
