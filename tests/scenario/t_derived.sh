#!/bin/sh
# Queries that feed queries (issue 19, part 1), on the embedded engine:
#  1. a three-stage chain (a filter, CREATE STREAM ... AS a windowed
#     aggregate, a query over that) against sqlite3 over the same rows;
#     SUBSCRIBE to a derived stream, window_start as a derived event time;
#  2. INSERT INTO ... SELECT: two queries writing one derived stream;
#  3. the refusals: DROP of what a query reads, DROP QUERY of a derived
#     stream's own query, a cycle, a schema that does not fit (line:col);
#  4. the chain survives restarts of ares-sql (--data, \copy in parts),
#     and goes on after its input ended and ares-sql restarted;
#  5. kill -9 in the middle of a file source, restart until done: the sinks
#     of the derived stream's query and of the last stage equal an
#     uninterrupted run's (no row lost or repeated).
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"
export LC_ALL=C

EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp = 'ts')"
CHAIN="CREATE STREAM big AS SELECT ts, k, v FROM ev WHERE v >= 2;
CREATE STREAM agg WITH (timestamp = 'wend') AS
    SELECT k, COUNT(*) AS n, SUM(v) AS s, window_end AS wend
    FROM big WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL"
FIN="SELECT k, SUM(n) AS n, SUM(s) AS s, window_end FROM agg WINDOW TUMBLING (SIZE 60 SECONDS) GROUP BY k"

awk 'BEGIN { for (i = 0; i < 3000; i++) print i * 370 "," i % 7 + 1 "," (i * 13) % 11 }' >all.csv
sqlite3 -batch -bail ev.db "CREATE TABLE ev (ts INTEGER, k INTEGER, v INTEGER);" ".mode csv" ".import all.csv ev" ||
    fail "sqlite3 cannot load the input"
iso() { echo "strftime('%Y-%m-%dT%H:%M:%fZ', ($1) / 1000.0, 'unixepoch')"; }

# ---- 1. the chain against sqlite3
"$A" --memory -q -e "$EV; $CHAIN; $FIN;" --ingest ev <all.csv >out 2>err
expect_rc 0 $? "the chain"
tail -n +2 out | sort >got.txt
sqlite3 -batch -csv ev.db "WITH agg AS (SELECT k, COUNT(*) AS n, SUM(v) AS s, (ts / 10000) * 10000 + 10000 AS wend
    FROM ev WHERE v >= 2 GROUP BY k, ts / 10000)
    SELECT k, SUM(n), SUM(s), $(iso '(wend / 60000) * 60000 + 60000') FROM agg GROUP BY k, wend / 60000;" |
    sort >want.txt
[ "$(wc -l <want.txt)" -gt 100 ] || fail "sqlite3 found $(wc -l <want.txt) rows: the case tests little"
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "the chain differs from sqlite3"; }
head -n 1 out | grep -qx "k,n,s,window_end" || fail "the chain's header: $(head -n 1 out)"

# same_rows WHAT GOT WANT: the scripts GOT and WANT over all.csv print the
# same rows (more than 100), in any order
same_rows() {
    "$A" --memory -q -e "$EV; $2" --ingest ev <all.csv >out 2>err
    expect_rc 0 $? "$1"
    tail -n +2 out | sort >got.txt
    "$A" --memory -q -e "$EV; $3" --ingest ev <all.csv >out 2>err
    tail -n +2 out | sort >want.txt
    [ "$(wc -l <want.txt)" -gt 100 ] || fail "$1: the reference gave $(wc -l <want.txt) rows"
    cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "$1 differs"; }
}
# SUBSCRIBE to a derived stream: its query's rows, as a SELECT of the stream reads them
same_rows "SUBSCRIBE agg" "$CHAIN; SUBSCRIBE agg;" "$CHAIN; SELECT * FROM agg;"
# window_start as the event time (the planner holds the watermark back by a
# window): a derived stream answers as the same SELECT as a subquery
H="SELECT k, COUNT(*) AS n, window_start AS ws FROM ev WINDOW HOPPING (SIZE 20 SECONDS, ADVANCE BY 5 SECONDS) GROUP BY k"
O="SELECT k, SUM(n) AS n, window_end FROM"
same_rows "a chain on window_start" "CREATE STREAM hop AS $H; $O hop WINDOW TUMBLING (SIZE 60 SECONDS) GROUP BY k;" \
    "$O ($H) AS x WINDOW TUMBLING (SIZE 60 SECONDS) GROUP BY k;"

# the derived streams' schemas and event times
"$A" --memory -q -e "$EV; $CHAIN; SHOW STREAMS;" </dev/null >out 2>err
expect_rc 0 $? "SHOW STREAMS"
has out 'big,"ts TIMESTAMP, k BIGINT, v BIGINT",ts,'
has out 'agg,"k BIGINT, n BIGINT, s BIGINT, wend TIMESTAMP",wend,'

# ---- 2. INSERT INTO ... SELECT: the rows of k = 1 and of k = 2 in one stream
U="CREATE STREAM u AS SELECT ts, k, v FROM ev WHERE k = 1;
INSERT INTO u SELECT ts, k, v FROM ev WHERE k = 2;
SELECT k, COUNT(*) AS n, SUM(v) AS s, window_end FROM u WINDOW TUMBLING (SIZE 60 SECONDS) GROUP BY k"
"$A" --memory -q -e "$EV; $U;" --ingest ev <all.csv >out 2>err
expect_rc 0 $? "INSERT INTO SELECT"
tail -n +2 out | sort >got.txt
sqlite3 -batch -csv ev.db "SELECT k, COUNT(*), SUM(v), $(iso '(ts / 60000) * 60000 + 60000') FROM ev
    WHERE k IN (1, 2) GROUP BY k, ts / 60000;" | sort >want.txt
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "INSERT INTO SELECT differs from sqlite3"; }

# ---- 3. refusals, each with its line and column
"$A" --data "$T/r" -e "$EV; $CHAIN; CREATE STREAM a (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp = 'ts');
CREATE STREAM b AS SELECT * FROM a; CREATE STREAM c AS SELECT * FROM b;" </dev/null >out 2>err
expect_rc 0 $? "the catalog for the refusals"
refused() { # refused SQL TEXT...: SQL fails, its error holds each TEXT
    sql=$1
    shift
    "$A" --data "$T/r" -e "$sql" </dev/null >out 2>err
    [ $? -ne 0 ] || fail "accepted: $sql"
    for t in "$@"; do has err "$t"; done
}
refused "DROP STREAM big;" "line 1, column 1: query 'agg' reads stream 'big'; drop the query first"
refused "DROP STREAM ev;" "query 'big' reads stream 'ev'"
refused "DROP QUERY agg;" "query 'agg' makes derived stream 'agg'; DROP STREAM agg drops both"
refused "INSERT INTO a SELECT * FROM c;" \
    "a cycle of derived streams: this query reads c and would write a (a -> query 'b' -> b -> query 'c' -> c)"
refused "INSERT INTO a SELECT * FROM a;" "a cycle of derived streams: this query reads a and would write a"
refused "INSERT INTO a SELECT ts, k FROM ev;" "stream 'a' has 3 columns, the SELECT gives 2 (the first missing: 'v')"
refused "INSERT INTO a
    SELECT ts, k, 'x' AS v FROM ev;" "line 2, column 19: column 3 of the SELECT, 'v', is TEXT; column 'v' of stream 'a' is BIGINT"
refused "CREATE STREAM d AS SELECT k, COUNT(*) AS n FROM ev WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;" \
    "stream 'd' needs an event time column"
refused "CREATE STREAM d WITH (timestamp = 'k') AS SELECT ts, k FROM ev;" "timestamp 'k' is BIGINT, not TIMESTAMP"
refused "INSERT INTO nope SELECT * FROM ev;" "stream 'nope' does not exist"
refused "INSERT INTO big VALUES (1000, 1, 5);" \
    "line 1, column 1: stream 'big' is a derived stream (CREATE STREAM AS): its rows come from queries"
echo "1000,1,5" | "$A" --data "$T/r" --ingest big >out 2>err && fail "an ingest into a derived stream was accepted"
has err "stream 'big' is a derived stream"
# a derived stream's own query goes with it; a writer stays until dropped
"$A" --data "$T/r" -e "INSERT INTO c SELECT * FROM a;" </dev/null >out 2>err
expect_rc 0 $? "INSERT INTO a derived stream"
has err "INSERT INTO (query 'c_insert_5')"
refused "DROP STREAM c;" "query 'c_insert_5' writes stream 'c' (INSERT INTO); drop the query first"
"$A" --data "$T/r" -e "DROP QUERY c_insert_5; DROP STREAM c; DROP STREAM b; SHOW QUERIES;" </dev/null >out 2>err
expect_rc 0 $? "DROP in order"
grep -q '^[bc],' out && fail "a dropped derived stream's query is still there"

# WITH (offset = 'earliest'): a derived stream made after its input's rows has them
"$A" --data "$T/r" -e "CREATE STREAM hist WITH (offset = 'earliest') AS SELECT ts, k FROM a;
INSERT INTO a VALUES (5000, 7, 1);" </dev/null >out 2>err
expect_rc 0 $? "CREATE STREAM WITH (offset = 'earliest')"
"$A" --data "$T/r" -q -e "INSERT INTO a VALUES (6000, 8, 1); CREATE STREAM hist2 WITH (offset = 'earliest') AS SELECT ts, k FROM a;
SHOW STREAMS;" </dev/null >out 2>err
expect_rc 0 $? "a second derived stream from the start"
grep -q '^hist,"ts TIMESTAMP, k BIGINT",ts,0,,2,' out || { cat out; fail "hist lacks a's rows"; }
grep -q '^hist2,"ts TIMESTAMP, k BIGINT",ts,0,,2,' out || { cat out; fail "hist2 lacks a's history"; }

# ---- 4. the chain survives restarts
awk -F, '$1 < 400000' all.csv >part1.csv
awk -F, '$1 >= 400000' all.csv >part2.csv
"$A" --data "$T/d1" -e "$EV; $CHAIN; CREATE QUERY fin WITH (sink = 'file://$T/fin.csv') AS $FIN;" </dev/null >out 2>err
expect_rc 0 $? "create the chain"
"$A" --data "$T/d1" -e "\\copy ev FROM '$T/part1.csv'" </dev/null >out 2>err
expect_rc 0 $? "run 1"
"$A" --data "$T/d1" -e "SHOW QUERIES;" </dev/null >out 2>err
expect_rc 0 $? "SHOW QUERIES after a restart"
grep -q '^agg,RUNNING,stream agg,' out || { cat out; fail "the derived stream's query is not running after a restart"; }
"$A" --data "$T/d1" -e "\\copy ev FROM '$T/part2.csv'" </dev/null >out 2>err
expect_rc 0 $? "run 2"
"$A" --data "$T/d1" --ingest ev </dev/null >out 2>err
expect_rc 0 $? "end the stream"
"$A" --memory -q -e "$EV; $CHAIN; $FIN;" --ingest ev <all.csv >out 2>err
tail -n +2 out | sort >want.txt
tail -n +2 fin.csv | sort >got.txt
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "the chain after restarts differs from one run"; }
# an end is not kept: after a restart, new rows go down the chain again
awk 'BEGIN { for (i = 0; i < 300; i++) print 1200000 + i * 370 "," i % 7 + 1 "," (i * 13) % 11 }' >more.csv
"$A" --data "$T/d1" --ingest ev <more.csv >out 2>err
expect_rc 0 $? "rows after the end and a restart"
cat all.csv more.csv | "$A" --memory -q -e "$EV; $CHAIN; $FIN;" --ingest ev >out 2>err
tail -n +2 out | sort >want.txt
tail -n +2 fin.csv | sort >got.txt
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "rows after an end and a restart"; }

# ---- 5. kill -9 and restart
GEN="$ARES_BUILD/tests/gen_stream"
[ -x "$GEN" ] || { ${CC:-cc} -O2 -o "$T/gen_stream" "$_LIBDIR/../tools/gen_stream.c" && GEN="$T/gen_stream"; }
"$GEN" --seed 7 --rows 3000000 --step 1 --disorder 500 --keys 50 --skeys 10 --null-pct 0 --header >"$T/gen.csv"
setup() {
    mkdir -p "$1"
    cat >"$1/setup.sql" <<EOF
CREATE STREAM IF NOT EXISTS g (ts TIMESTAMP, k BIGINT, s TEXT, v BIGINT, d DOUBLE)
    WITH (timestamp = 'ts', watermark = '1 second', source = 'file://$T/gen.csv', format = 'csv');
CREATE STREAM IF NOT EXISTS odd AS SELECT ts, k, v FROM g WHERE v % 2 = 1;
CREATE STREAM IF NOT EXISTS per10 WITH (timestamp = 'wend', sink = 'file://$1/per10.csv') AS
    SELECT k, COUNT(*) AS n, SUM(v) AS sv, window_end AS wend FROM odd WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;
CREATE QUERY IF NOT EXISTS per60 WITH (sink = 'file://$1/per60.csv') AS
    SELECT k, SUM(n) AS n, SUM(sv) AS sv, window_end FROM per10 WINDOW TUMBLING (SIZE 60 SECONDS) GROUP BY k EMIT FINAL;
EOF
}
setup "$T/ref"
ref_run
[ "$(wc -l <"$T/ref/per60.csv")" -gt 100 ] || fail "the uninterrupted run wrote $(wc -l <"$T/ref/per60.csv") rows"
setup "$T/crash"
crash_show() { echo "per10 $(wc -l <"$T/crash/per10.csv" 2>/dev/null) lines, per60 $(wc -l <"$T/crash/per60.csv" 2>/dev/null)"; }
crash_runs "$ref_ms" crash_show
for s in per10 per60; do
    tail -n +2 "$T/ref/$s.csv" | sort >want.txt
    tail -n +2 "$T/crash/$s.csv" | sort >got.txt
    cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "$s after $killed kills differs from one run"; }
done
echo "ok: $killed kills, sinks equal"
