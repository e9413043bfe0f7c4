#!/bin/sh
# Socket sources and sinks through the ares-sql binary.
#  1. A tcp:// source with 4 concurrent producers (nc), two of them sending
#     bad lines: each bad line is reported with its producer and its line
#     number, every good line counts, SHOW STREAMS has the totals, and the
#     windowed output (a push query, and a standing query's tcp sink read by
#     nc -l) equals the same rows piped through --ingest.  The statements
#     come through a FIFO, so ares-sql serves the sockets while it waits for
#     the next line of SQL; SIGINT ends it with exit 130.
#  2. A unix:// source feeding a push query with LIMIT: ares-sql keeps
#     running until the query has its rows, then exits 0 by itself.
#  3. A tcp sink whose peer comes late: the rows wait, then arrive.
# Ports are chosen free at run time; everything started is killed on exit.
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"

# ---- the data: 4 producers, 10 s windows, keys 1..3, event times 0..59 s
# Producer i sends rows i, i+4, i+8, ... of one sequence, so their rows
# interleave in event time.  The watermark waits an hour, so no row is late
# whatever the arrival order; a last row an hour later closes the windows.
awk 'BEGIN { for (i = 0; i < 240; i++) print i * 250 "," i % 3 + 1 "," i % 7 ".5" }' >all.csv
for p in 1 2 3 4; do
    awk -v p=$p 'NR % 4 == p % 4' all.csv >p$p.csv
done
# bad lines, each naming its producer, at known line numbers
sed -i '3s/.*/3000,p2bad,1/' p2.csv # producer 2, line 3
sed -i '7s/.*/p2late,1,1/' p2.csv   # producer 2, line 7
sed -i '5s/.*/4000,1/' p4.csv       # producer 4, line 5
cat p1.csv p2.csv p3.csv p4.csv >sent.csv
good=$(grep -cv -e p2bad -e p2late -e '^4000,1$' sent.csv)
[ "$good" -eq 237 ] || fail "test data: $good good lines"
CLOSE="3700000,9,0"

EV_COLS="ts TIMESTAMP, k BIGINT, v DOUBLE"
AGG="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL"

# ---- 1. four producers on a tcp:// source
P_SRC=$(free_port)
P_SINK=$(free_port)
nc -l 127.0.0.1 "$P_SINK" >sink.out 2>/dev/null &
PIDS="$PIDS $!"
NC_SINK=$!
mkfifo cmds
"$A" --data "$T/d1" --format csv <cmds >a.out 2>a.err &
APID=$!
PIDS="$PIDS $APID"
exec 3>cmds
cat >&3 <<EOF
CREATE STREAM ev ($EV_COLS)
  WITH (timestamp = 'ts', watermark = '1 hours', source = 'tcp://127.0.0.1:$P_SRC', format = 'csv');
CREATE QUERY agg WITH (sink = 'tcp://127.0.0.1:$P_SINK', format = 'csv') AS $AGG;
$AGG;
EOF
wait_until 5 listening "$P_SRC" || { cat a.err; fail "the tcp source does not listen"; }
for p in 1 2 3 4; do
    nc -N 127.0.0.1 "$P_SRC" <p$p.csv &
    eval "NC$p=\$!"
done
wait "$NC1" "$NC2" "$NC3" "$NC4"
echo "$CLOSE" | nc -N 127.0.0.1 "$P_SRC"
# 6 windows x 3 keys come out once the last row moves the watermark
wait_until 10 lines_at_least a.out '^[0-9]' 18 || { cat a.out a.err; fail "the push query printed no windows"; }
echo "SHOW STREAMS;" >&3
wait_until 5 lines_at_least a.out '^ev,' 1 || { cat a.out; fail "SHOW STREAMS did not run while the sockets were live"; }
# the stream's totals: 238 rows (the 237 good ones and the closing row), 3 rejected
grep -q '^ev,.*,tcp://127.0.0.1:'"$P_SRC"',238,3,' a.out || { cat a.out; fail "SHOW STREAMS totals"; }

# every bad line with its producer and line number, good lines kept
grep -q "^ares: stream ev, producer 127.0.0.1:[0-9]*: line 3: column 'k': 'p2bad' is not a BIGINT$" a.err ||
    { cat a.err; fail "producer 2, line 3 not reported"; }
grep -q "^ares: stream ev, producer 127.0.0.1:[0-9]*: line 7: column 'ts': 'p2late' is not a TIMESTAMP" a.err ||
    { cat a.err; fail "producer 2, line 7 not reported"; }
grep -q "^ares: stream ev, producer 127.0.0.1:[0-9]*: line 5: expected 3 columns, got 2$" a.err ||
    { cat a.err; fail "producer 4, line 5 not reported"; }
# the two bad lines of producer 2 name the same producer
p2a=$(sed -n "s/.*producer \([0-9.:]*\): line 3: .*p2bad.*/\1/p" a.err)
p2b=$(sed -n "s/.*producer \([0-9.:]*\): line 7: .*p2late.*/\1/p" a.err)
[ -n "$p2a" ] && [ "$p2a" = "$p2b" ] || fail "producer 2's lines name two producers: '$p2a' '$p2b'"
[ "$(grep -c 'producer' a.err)" -eq 3 ] || { cat a.err; fail "other lines were reported"; }

# the same data through --ingest: the same windows
{ cat sent.csv; echo "$CLOSE"; } |
    "$A" --memory -q -e "CREATE STREAM ev ($EV_COLS) WITH (timestamp = 'ts', watermark = '1 hours'); $AGG;" \
        --ingest ev --format csv >ingest.out 2>ingest.err
[ $? -eq 0 ] || { cat ingest.err; fail "--ingest run"; }
grep '^[0-9]' ingest.out | grep -v '^9,' | sort >want.txt
[ "$(wc -l <want.txt)" -eq 18 ] || { cat ingest.out; fail "--ingest printed $(wc -l <want.txt) windows"; }
grep '^[0-9]' a.out | sort >got.txt
cmp -s want.txt got.txt || { diff want.txt got.txt; fail "the push query's windows differ from --ingest's"; }
head -n 1 a.out | grep -qx 'k,n,s,window_start' || fail "the push query's header: $(head -n 1 a.out)"

# the standing query's tcp sink: the same rows, no header
wait_until 5 lines_at_least sink.out '^[0-9]' 18 || { cat sink.out; fail "the tcp sink received too little"; }
sort sink.out >sink.txt
cmp -s want.txt sink.txt || { diff want.txt sink.txt; fail "the tcp sink's rows differ"; }
# the sink shows: SHOW QUERIES has its address, DESCRIBE a Sink: line with its state
echo "SHOW QUERIES; DESCRIBE agg;" >&3
wait_until 5 lines_at_least a.out 'Sink: ' 1 || { cat a.out a.err; fail "DESCRIBE has no Sink: line for a tcp sink"; }
grep -q "^agg,RUNNING,tcp://127.0.0.1:$P_SINK," a.out || { cat a.out; fail "SHOW QUERIES does not show the tcp sink"; }
grep -q "Sink: tcp://127.0.0.1:$P_SINK (csv, connected, 0 bytes waiting)" a.out ||
    { grep Sink a.out; fail "DESCRIBE's Sink: line"; }

# SIGINT ends the run that waits on its push query: exit 130
exec 3>&-
sleep 0.3
alive "$APID" || fail "ares-sql ended although its push query reads a live socket"
kill -INT "$APID"
wait "$APID"
rc=$?
[ "$rc" -eq 130 ] || { cat a.err; fail "SIGINT: exit $rc, want 130"; }
listening "$P_SRC" && fail "the source still listens after exit"
kill "$NC_SINK" 2>/dev/null

# ---- 2. a unix:// source; a push query with LIMIT ends the run by itself (exit 0)
U="$T/u.sock"
"$A" --memory -e "CREATE STREAM u (ts TIMESTAMP, word TEXT) WITH (timestamp = 'ts', source = 'unix://$U', format = 'json');
SELECT word FROM u WHERE word <> 'skip' LIMIT 3;" --format csv >u.out 2>u.err &
UPID=$!
PIDS="$PIDS $UPID"
wait_until 5 test -S "$U" || { cat u.err; fail "the unix source does not listen"; }
printf '{"ts":1,"word":"alpha"}\n{"ts":2,"word":"skip"}\nnot json\n{"ts":3,"word":"beta"}\n' | nc -N -U "$U"
printf '{"ts":4,"word":"gamma"}\n{"ts":5,"word":"delta"}\n' | nc -N -U "$U"
wait_until 5 sh -c "! kill -0 $UPID 2>/dev/null" || { cat u.out u.err; fail "the LIMIT 3 push query did not end the run"; }
wait "$UPID"
rc=$?
[ "$rc" -eq 0 ] || { cat u.err; fail "LIMIT 3 over a unix source: exit $rc, want 0"; }
[ "$(cat u.out)" = "$(printf 'word\nalpha\nbeta\ngamma')" ] || { cat u.out; fail "unix source rows"; }
grep -q "^ares: stream u, producer #1: line 3: " u.err || { cat u.err; fail "the unix producer's bad line"; }
[ ! -e "$U" ] || fail "the unix socket was left behind"

# ---- 3. a tcp sink whose peer starts late gets the rows it missed
P_SRC=$(free_port)
P_SINK=$(free_port)
"$A" --memory --follow -e "CREATE STREAM ev ($EV_COLS) WITH (timestamp = 'ts', source = 'tcp://127.0.0.1:$P_SRC');
CREATE QUERY big WITH (sink = 'tcp://127.0.0.1:$P_SINK', format = 'json') AS SELECT k, v FROM ev WHERE v > 5;" \
    >f.out 2>f.err &
FPID=$!
PIDS="$PIDS $FPID"
wait_until 5 listening "$P_SRC" || { cat f.err; fail "the --follow run does not listen"; }
nc -N 127.0.0.1 "$P_SRC" <all.csv
sleep 0.5
nc -l 127.0.0.1 "$P_SINK" >late.out 2>/dev/null &
PIDS="$PIDS $!"
want=$(grep -c '6\.5$' all.csv)
wait_until 10 lines_at_least late.out '"v":6.5' "$want" || { cat late.out f.err; fail "the late sink peer got $(grep -c . late.out) rows"; }
has late.out '{"k":1,"v":6.5}'
"$A" --data "$T/d3" -q --format csv -e "CREATE STREAM ev ($EV_COLS) WITH (timestamp = 'ts');
CREATE QUERY u WITH (sink = 'unix://$T/nobody.sock', format = 'json') AS SELECT k FROM ev; SHOW QUERIES; DESCRIBE u;" \
    >u2.out 2>u2.err || { cat u2.err; fail "a query with a unix sink"; }
grep -q "^u,RUNNING,unix://$T/nobody.sock," u2.out || { cat u2.out; fail "SHOW QUERIES does not show the unix sink"; }
grep -q "Sink: unix://$T/nobody.sock (json, connecting, 0 bytes waiting)" u2.out || { cat u2.out; fail "DESCRIBE u: Sink:"; }
kill -TERM "$FPID"
wait "$FPID"
rc=$?
[ "$rc" -eq 0 ] || { cat f.err; fail "--follow ended by SIGTERM: exit $rc, want 0"; }

echo "t_sockets: all passed"
