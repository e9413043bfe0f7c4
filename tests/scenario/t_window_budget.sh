#!/bin/sh
# SET memory_budget (issue 19, section 2): window state past the budget
# lives in LMDB only, and the results are those of sqlite3 all the same.
#  1. The setting: its default (0, no bound), a bad value (the setting,
#     what fits, line and column), kept across restarts.
#  2. A tumbling and a hopping window over 50,000 keys with a budget of
#     about a thousand groups (most groups evicted, read back when their
#     rows come, merged in when their window closes): the sinks equal
#     sqlite3's windows, and the same run without a budget, byte for byte.
#  3. DESCRIBE counts the groups in LMDB only while windows are open, and
#     a restart finds them there.
#  4. kill -9 in the middle of a file source of 800,000 rows, restarts until it
#     ends (crash_runs): the sinks equal sqlite3's and the uninterrupted
#     run's, byte for byte, no row lost or repeated.
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"

EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts', watermark = '1 second')"
TUMBLE="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL"
HOP="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW HOPPING (SIZE 3 SECONDS, ADVANCE BY 1 SECOND) GROUP BY k EMIT FINAL"
ISO="strftime('%Y-%m-%dT%H:%M:%fZ', sec, 'unixepoch')"

# gen N SEED: N rows ts,k,v, ts one a millisecond with up to 500 ms of
# disorder (within the watermark), k among 50,000 keys, v small integers
gen() {
    awk -v n="$1" -v seed="$2" 'BEGIN { srand(seed); for (i = 0; i < n; i++) {
        ts = i - int(rand() * 500); if (ts < 0) ts = 0
        print ts "," int(rand() * 50000) "," int(rand() * 100) } }'
}
# oracle CSV SIZE ADVANCE OUT: sqlite3's windows of SIZE seconds advancing
# by ADVANCE seconds over CSV, sorted
oracle() {
    sqlite3 -batch -bail -csv :memory: "CREATE TABLE t (ts INTEGER, k INTEGER, v INTEGER);" ".import $1 t" \
        "WITH RECURSIVE j(x) AS (SELECT 0 UNION ALL SELECT x + $3 FROM j WHERE x + $3 < $2),
              s AS (SELECT k, ts / 1000 AS sec, COUNT(*) AS n, SUM(v) AS sv FROM t GROUP BY k, sec),
              w AS (SELECT k, SUM(n) AS n, SUM(sv) AS sv, s.sec / $3 * $3 - x AS sec FROM s, j
                    WHERE s.sec / $3 * $3 - x > s.sec - $2 GROUP BY k, s.sec / $3 * $3 - x)
         SELECT k, n, sv, $ISO FROM w;" | sort >"$4" || fail "sqlite3 on $1"
}
same() { cmp -s "$1" "$2" || { diff "$1" "$2" | head; fail "$3"; }; }
# oracle_both CSV TUMBLE_SINK HOP_SINK WHEN: both sinks equal sqlite3's windows over CSV
oracle_both() {
    oracle "$1" 10 10 want_t.txt
    oracle "$1" 3 1 want_h.txt
    sink_rows "$2" got_t.txt
    sink_rows "$3" got_h.txt
    same want_t.txt got_t.txt "the tumbling window $4 differs from sqlite3"
    same want_h.txt got_h.txt "the hopping window $4 differs from sqlite3"
}

# ---- 1. the setting
"$A" --data "$T/d1" -e "SHOW memory_budget" >out 2>err
expect_rc 0 $? "SHOW memory_budget"
grep -qx 0 out || { cat out; fail "memory_budget's default is not 0"; }
"$A" --data "$T/d1" -e "SHOW memory_budget;
  SET memory_budget = '64 parsecs'" >out 2>err
expect_rc 1 $? "a bad SET memory_budget"
has err "line 2, column 23: memory_budget must be a size such as '64 MB', '512 KiB' or 0 (no bound), not '64 parsecs'"
"$A" --data "$T/d1" -e "SET memory_budget = -5" >out 2>err
expect_rc 1 $? "a negative memory_budget"
has err "column 21: memory_budget must be a size"
"$A" --data "$T/d1" -e "SET memory_budget = '2 MiB'" >out 2>err
expect_rc 0 $? "SET memory_budget"
"$A" --data "$T/d1" -e "SHOW memory_budget" >out 2>err
grep -qx "2 MiB" out || { cat out; fail "SET memory_budget is not kept across a restart"; }

# ---- 2. tumbling and hopping windows, many keys, a tiny budget
gen 300000 11 >in.csv
for b in 0 '200 KB'; do
    d=$(echo "$b" | tr -d ' ')
    "$A" --data "$T/b$d" -e "SET memory_budget = '$b'; $EV;
      CREATE QUERY t WITH (sink = 'file://$T/t$d.csv', format = 'csv') AS $TUMBLE;
      CREATE QUERY h WITH (sink = 'file://$T/h$d.csv', format = 'csv') AS $HOP" >out 2>err
    expect_rc 0 $? "the queries (budget $b)"
    "$A" --data "$T/b$d" -q --ingest ev <in.csv >out 2>err
    expect_rc 0 $? "the rows (budget $b)"
done
oracle_both in.csv t200KB.csv h200KB.csv "under a budget"
same t0.csv t200KB.csv "the tumbling window's sink under a budget differs from the one without"
same h0.csv h200KB.csv "the hopping window's sink under a budget differs from the one without"

# ---- 3. groups in LMDB only, counted, and found again after a restart
head -n 150000 in.csv >half.csv
"$A" --data "$T/d3" -e "SET memory_budget = '200 KB'; $EV;
  CREATE QUERY t WITH (sink = 'file://$T/t3.csv', format = 'csv') AS $TUMBLE" -e "\\copy ev FROM '$T/half.csv'" \
  -e "DESCRIBE t" >out 2>err
expect_rc 0 $? "half the rows"
cold=$(sed -n 's/.*Window state: .* bytes), \([0-9]*\) in LMDB only.*/\1/p' out)
[ "${cold:-0}" -gt 5000 ] || { cat out; fail "DESCRIBE shows no groups in LMDB only"; }
"$A" --data "$T/d3" -e "DESCRIBE t" >out 2>err
has out "bytes), $cold in LMDB only (past memory_budget)"

# ---- 4. kill -9 in the middle of a file source, restarts until it ends
gen 800000 12 >big.csv
setup() {
    mkdir -p "$1"
    cat >"$1/setup.sql" <<SQL
SET memory_budget = '300 KB';
CREATE STREAM IF NOT EXISTS ev (ts TIMESTAMP, k BIGINT, v DOUBLE)
    WITH (timestamp = 'ts', watermark = '1 second', source = 'file://$T/big.csv', format = 'csv');
CREATE QUERY IF NOT EXISTS t WITH (sink = 'file://$1/t.csv', format = 'csv') AS $TUMBLE;
CREATE QUERY IF NOT EXISTS h WITH (sink = 'file://$1/h.csv', format = 'csv') AS $HOP;
SQL
}
setup "$T/ref"
ref_run
oracle_both big.csv ref/t.csv ref/h.csv "with a budget, uninterrupted,"
setup "$T/crash"
crash_show() { echo "$(wc -l <"$T/crash/t.csv" 2>/dev/null) and $(wc -l <"$T/crash/h.csv" 2>/dev/null) rows"; }
crash_runs "$ref_ms" crash_show
oracle_both big.csv crash/t.csv crash/h.csv "across kill -9"
same ref/t.csv crash/t.csv "the tumbling window's sink across kill -9 differs from the uninterrupted run's"
same ref/h.csv crash/h.csv "the hopping window's sink across kill -9 differs from the uninterrupted run's"
echo "ok: $killed kills"
