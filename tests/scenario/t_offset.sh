#!/bin/sh
# Reading history (issue 19, section 3): SET offset and WITH (offset = ...).
#  1. The setting: its default (latest), bad values (the setting, the
#     allowed values, line and column), kept across restarts.
#  2. A standing query keeps reading only new rows by default; one created
#     WITH (offset = 'earliest') reads the whole log; both equal sqlite3.
#  3. A push SELECT after SET offset = 'earliest' reads an open stream's log.
#  4. kill -9 during an earliest query's catch-up over 4M rows: the restart
#     resumes from the committed offsets; the sink equals sqlite3's hopping
#     windows, no row repeated or lost (the sink is cut back to its
#     committed length, so a catch-up started again from the log's start
#     would repeat rows).
#  5. The catch-up's peak RSS over 4M rows is about that over 1M.
#  6. SET offset = 'earliest' applies to CREATE STREAM AS too, and to a
#     query over the derived stream.
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"

EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts')"
TUMBLE="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k EMIT FINAL"
HOP="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW HOPPING (SIZE 30 SECONDS, ADVANCE BY 1 SECOND) GROUP BY k EMIT FINAL"
ISO="strftime('%Y-%m-%dT%H:%M:%fZ', sec, 'unixepoch')"

# gen N STEP: N rows ts,k,v with ts = i * STEP ms
gen() { awk -v n="$1" -v st="$2" 'BEGIN { for (i = 0; i < n; i++) print i * st "," i % 50 "," i % 13 }'; }
# oracle CSV SIZE: sqlite3's windows of SIZE seconds advancing by 1 s over CSV, sorted
oracle() {
    sqlite3 -batch -bail -csv :memory: "CREATE TABLE t (ts INTEGER, k INTEGER, v INTEGER);" ".import $1 t" \
        "WITH RECURSIVE j(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM j WHERE x + 1 < $2),
              s AS (SELECT k, ts / 1000 AS sec, COUNT(*) AS n, SUM(v) AS sv FROM t GROUP BY k, sec),
              w AS (SELECT k, SUM(n) AS n, SUM(sv) AS sv, s.sec - x AS sec FROM s, j GROUP BY k, s.sec - x)
         SELECT k, n, sv, $ISO FROM w;" | sort >"$3" || fail "sqlite3 on $1"
}

# ---- 1. the setting
"$A" --data "$T/d1" -e "SHOW offset" >out 2>err
expect_rc 0 $? "SHOW offset"
grep -qx latest out || { cat out; fail "offset's default is not latest"; }
"$A" --data "$T/d1" -e "SET offset = 'first'" >out 2>err
expect_rc 1 $? "a bad SET offset"
has err "line 1, column 14: offset must be 'earliest' or 'latest', not 'first'"
"$A" --data "$T/d1" -e "$EV; CREATE QUERY bad WITH (offset = 'begin') AS SELECT * FROM ev" >out 2>err
expect_rc 1 $? "a bad WITH (offset)"
has err "column 110: offset must be 'earliest' or 'latest', not 'begin'"
"$A" --data "$T/d1" -e "SET offset = 'earliest'" >out 2>err
expect_rc 0 $? "SET offset"
"$A" --data "$T/d1" -e "SHOW offset" >out 2>err
grep -qx earliest out || { cat out; fail "SET offset is not kept across a restart"; }

# ---- 2. latest (the default) and earliest standing queries, the stream open
gen 20000 7 >all.csv
awk -F, '$1 < 70000' all.csv >part1.csv
awk -F, '$1 >= 70000' all.csv >part2.csv
"$A" --data "$T/d2" -e "$EV" -e "\\copy ev FROM '$T/part1.csv'" >out 2>err
expect_rc 0 $? "the first rows"
"$A" --data "$T/d2" -e "CREATE QUERY l WITH (sink = 'file://$T/l.csv', format = 'csv') AS $TUMBLE;
CREATE QUERY e WITH (offset = 'earliest', sink = 'file://$T/e.csv', format = 'csv') AS $TUMBLE" >out 2>err
expect_rc 0 $? "the two queries"
"$A" --data "$T/d2" --ingest ev <part2.csv >out 2>err
expect_rc 0 $? "the other rows, then the stream's end"
oracle all.csv 1 want_e.txt
oracle part2.csv 1 want_l.txt
sink_rows e.csv got_e.txt
sink_rows l.csv got_l.txt
cmp -s want_e.txt got_e.txt || { diff want_e.txt got_e.txt | head; fail "offset = 'earliest' differs from sqlite3"; }
cmp -s want_l.txt got_l.txt || { diff want_l.txt got_l.txt | head; fail "the default (latest) differs from sqlite3 over the new rows"; }

# ---- 3. a push SELECT after SET offset = 'earliest' reads an open stream's log
"$A" --data "$T/d3" -e "$EV" -e "\\copy ev FROM '$T/part1.csv'" >out 2>err
"$A" --data "$T/d3" -q -e "SET offset = 'earliest'; SELECT ts, k FROM ev WHERE k = 3 LIMIT 2" >out 2>err
expect_rc 0 $? "a push SELECT with earliest"
has out "1970-01-01T00:00:00.021Z,3"
has out "1970-01-01T00:00:00.371Z,3"

# ---- 4. kill -9 during the catch-up, then a restart
gen 4000000 1 >big.csv
"$A" --data "$T/d4" -q -e "$EV" --ingest ev <big.csv >out 2>err
expect_rc 0 $? "4M rows"
"$A" --data "$T/d4" -e "CREATE QUERY h WITH (offset = 'earliest', sink = 'file://$T/h.csv', format = 'csv') AS $HOP" >out 2>err &
P=$!
PIDS="$P"
wait_until 60 sh -c "[ \$(stat -c %s h.csv 2>/dev/null || echo 0) -gt 200000 ]" || fail "the catch-up wrote nothing"
alive "$P" || fail "the catch-up ended before the kill (make it longer)"
kill -9 "$P"
wait "$P" 2>/dev/null
PIDS=""
before=$(wc -l <h.csv)
# the restart catches up; then the stream's end closes the last windows
"$A" --data "$T/d4" --ingest ev </dev/null >out 2>err
expect_rc 0 $? "the restart"
"$A" --data "$T/d4" -e "SHOW QUERIES" >out 2>err
grep -q '^h,RUNNING,.*,4000000,' out || { cat out; fail "the query did not catch up at the restart"; }
oracle big.csv 30 want_h.txt
sink_rows h.csv got_h.txt
[ "$before" -lt "$(wc -l <want_h.txt)" ] || fail "the kill came after the catch-up"
cmp -s want_h.txt got_h.txt || { diff want_h.txt got_h.txt | head; fail "the catch-up across kill -9 differs from sqlite3"; }

# ---- 5. bounded memory: peak RSS over 4x the log
if [ -x /usr/bin/time ]; then
    gen 1000000 4 >one.csv
    "$A" --data "$T/r1" -q -e "$EV" --ingest ev <one.csv >out 2>err
    "$A" --data "$T/r4" -q -e "$EV" --ingest ev <big.csv >out 2>err
    for d in r1 r4; do
        /usr/bin/time -f "%M" -o "$d.rss" "$A" --data "$T/$d" \
            -e "CREATE QUERY q WITH (offset = 'earliest', sink = 'file://$T/$d.csv', format = 'csv') AS $TUMBLE" >out 2>err
        expect_rc 0 $? "the catch-up of $d"
    done
    r1=$(tail -n 1 r1.rss)
    r4=$(tail -n 1 r4.rss)
    echo "catch-up peak RSS: $r1 KiB over 1M rows, $r4 KiB over 4M rows"
    [ "$r4" -lt $((r1 * 3 / 2 + 8192)) ] || fail "the catch-up's memory grows with the log: $r1 KiB, then $r4 KiB"
fi
# ---- 6. a derived stream created with earliest, and a query over it
"$A" --data "$T/d6" -e "$EV" -e "\\copy ev FROM '$T/all.csv'" >out 2>err
expect_rc 0 $? "the rows of the derived case"
"$A" --data "$T/d6" -e "SET offset = 'earliest';
CREATE STREAM big AS SELECT ts, k, v FROM ev WHERE v >= 6;
CREATE QUERY d WITH (sink = 'file://$T/d.csv', format = 'csv') AS $(echo "$TUMBLE" | sed 's/FROM ev/FROM big/')" >out 2>err
expect_rc 0 $? "the derived stream and its query"
"$A" --data "$T/d6" --ingest ev </dev/null >out 2>err
expect_rc 0 $? "the end of the derived case's input"
awk -F, '$3 >= 6' all.csv >big6.csv
oracle big6.csv 1 want_d.txt
sink_rows d.csv got_d.txt
cmp -s want_d.txt got_d.txt || { diff want_d.txt got_d.txt | head; fail "a derived stream with offset = 'earliest' differs from sqlite3"; }
echo "ok"
