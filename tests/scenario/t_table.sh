#!/bin/sh
# Tables and changelogs (issue 19, part 2), on the embedded engine:
#  1. a source table with an op_column (I, U, D) fed by --ingest: its
#     changelog (SUBSCRIBE) never repeats a change, and consolidates to the
#     state sqlite3 reaches over the same input (INSERT OR REPLACE, DELETE);
#  1b. a sink WITH (changelog = 'upsert'): no -U, a -D of the key only,
#     consolidating to sqlite3's state; its bad values;
#  2. an upsert table without op_column, fed by \copy in two runs with a
#     restart between: the state survives (the second run's -U rows carry
#     what the first wrote), against sqlite3;
#  2b. pull queries (SELECT without EMIT CHANGES): the rows now, the point
#     lookups of WHERE k = literal, an aggregate, against sqlite3;
#  3. bad input, each a clear error: a table without a key, a NULL key and
#     an op other than I/U/D (SQL: line and column; data: the input line),
#     INSERT INTO a table of another shape (the column named);
#  4. CREATE TABLE ... AS SELECT ... GROUP BY over the table (retracting:
#     rows change groups and are deleted) and over a stream: COUNT, SUM,
#     MIN, MAX against sqlite3's GROUP BY over the final rows; with HAVING
#     (groups deleted when they stop passing, back when they pass again)
#     against sqlite3's GROUP BY ... HAVING; a push query's aggregate
#     without a window prints the same changelogs;
#  5. kill -9 in the middle of a file source, restart until done: the
#     changelogs of the table and of an aggregate over it, written by
#     standing queries' sinks, equal an uninterrupted run's change for
#     change, and their states sqlite3's (a HAVING aggregate's too, and
#     its upsert sink's).
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
TLIB="$(cd "$(dirname "$0")" && pwd)/t_table_lib.inc"
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"
. "$TLIB"
export LC_ALL=C

# upsert_consolidate FILE: replay an upsert changelog (changelog = 'upsert':
# +I of a new key, +U of a held one, -D of a held one with only the key);
# fail on a -U, a repeat, or a change that does not follow; print the rows left
upsert_consolidate() {
    awk -F, 'function bad(why) { print "change " NR ": " why ": " $0; err = 1; exit 1 }
        { row = substr($0, length($1) + 2)
          if ($1 == "+I") { if ($2 in st) bad("+I of a key held"); st[$2] = row }
          else if ($1 == "+U") { if (!($2 in st)) bad("+U of a key not held"); if (st[$2] == row) bad("a repeat"); st[$2] = row }
          else if ($1 == "-D") { if (!($2 in st)) bad("-D of a key not held"); if (row !~ /^[^,]*,*$/) bad("a -D with more than its key"); delete st[$2] }
          else bad("op " $1) }
        END { if (err) exit 1; for (k in st) print st[k] }' "$1" | sort -t, -k1,1
}
# as_upsert FILE: a full changelog (key in its first column) as changelog = 'upsert' writes it
as_upsert() { awk -F, -v OFS=, '$1 == "-U" { next } $1 == "-D" { for (i = 3; i <= NF; i++) $i = "" } { print }' "$1"; }
check_state() { # check_state WHAT CHANGELOG INPUT [SELECT]
    consolidate "$2" >got.txt || { tail -3 got.txt; fail "$1: the changelog is not consistent"; }
    oracle "$3" "${4:-}" >want.txt
    [ "$(wc -l <want.txt)" -gt 100 ] || fail "$1: sqlite3 holds $(wc -l <want.txt) rows: the case tests little"
    cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "$1: the consolidated changelog differs from sqlite3"; }
}

TBL="CREATE TABLE t (k BIGINT, v BIGINT, w TEXT, op TEXT, PRIMARY KEY (k)) WITH (op_column = 'op')"

# ---- 1. a source table with I/U/D through --ingest
gen 20000 1500 11 >in.csv
"$A" --memory -q -e "$TBL; SUBSCRIBE t;" --ingest t <in.csv >out 2>err
expect_rc 0 $? "the table"
head -n 1 out | grep -qx "op,k,v,w" || fail "the changelog's header: $(head -n 1 out)"
tail -n +2 out >cl.txt
for op in +I -U +U -D; do grep -q "^$op," cl.txt || fail "the changelog has no $op"; done
check_state "--ingest" cl.txt in.csv
# SELECT * FROM t EMIT CHANGES and a derived stream (which needs an event
# time: the table's) carry the op column too
awk -F, 'NR == 1 { print "ts," $0; next } { print NR "," $0 }' in.csv >tin.csv
TT="CREATE TABLE t (ts BIGINT, k BIGINT, v BIGINT, w TEXT, op TEXT, PRIMARY KEY (k)) WITH (op_column = 'op', timestamp = 'ts')"
"$A" --memory -q -e "$TT; SUBSCRIBE t;" --ingest t <tin.csv >out 2>err
expect_rc 0 $? "SUBSCRIBE to a table with an event time"
tail -n +2 out >tcl.txt
[ "$(wc -l <tcl.txt)" -ge "$(wc -l <cl.txt)" ] || fail "the table with an event time has fewer changes"
"$A" --memory -q -e "$TT; SELECT * FROM t EMIT CHANGES;" --ingest t <tin.csv >out 2>err
expect_rc 0 $? "SELECT * FROM t EMIT CHANGES"
tail -n +2 out | cmp -s - tcl.txt || fail "SELECT * FROM t EMIT CHANGES is not the changelog"
"$A" --memory -q -e "$TT; CREATE STREAM d AS SELECT * FROM t; SELECT * FROM d;" --ingest t <tin.csv >out 2>err
expect_rc 0 $? "a derived stream of the table"
head -n 1 out | grep -qx "op,ts,k,v,w" || fail "the derived stream's header: $(head -n 1 out)"
tail -n +2 out | cmp -s - tcl.txt || fail "the derived stream's rows are not the table's changelog"

# a sink WITH (changelog = 'upsert'): the new row of a key, a -D of its key for a delete
"$A" --memory -q -e "$TBL; CREATE QUERY u WITH (sink = 'file://$T/ucl_t.csv', changelog = 'upsert') AS SELECT * FROM t;" \
    --ingest t <in.csv >out 2>err
expect_rc 0 $? "an upsert sink"
head -n 1 ucl_t.csv | grep -qx "op,k,v,w" || fail "the upsert sink's header: $(head -n 1 ucl_t.csv)"
tail -n +2 ucl_t.csv >ucl_t.txt
grep -q '^-D,[0-9]*,,$' ucl_t.txt || fail "the upsert sink wrote no -D of a key"
upsert_consolidate ucl_t.txt >got.txt || { tail -3 got.txt; fail "the upsert sink's changes are not consistent"; }
oracle in.csv >want.txt
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "the upsert sink consolidates to other rows than sqlite3"; }
as_upsert cl.txt | cmp -s - ucl_t.txt || fail "the upsert sink is not the changelog without -U (and -D as its key)"
for bad in "changelog = 'upserts'|changelog must be 'full' or 'upsert', not 'upserts'" \
    "changelog = 'upsert'|changelog = 'upsert' is a sink's: it needs WITH (sink = ...)"; do
    "$A" --memory -e "$TBL; CREATE QUERY u WITH (${bad%%|*}) AS SELECT * FROM t;" </dev/null >out 2>err &&
        fail "accepted: ${bad%%|*}"
    has err "line 1, column 129: ${bad#*|}"
done
"$A" --memory -e "$TBL; CREATE QUERY u WITH (sink = 'file://$T/x.csv', changelog = 'upsert') AS SELECT op, v FROM t;" \
    </dev/null >out 2>err && fail "an upsert sink without the key was accepted"
has err "the SELECT must select the key column 'k'"

# ---- 2. upserts without op_column, two runs with a restart between
awk -F, 'NR > 1 && $4 != "D" { print $1 "," $2 "," $3 }' in.csv >ups.csv
head -n 9000 ups.csv >ups1.csv
tail -n +9001 ups.csv >ups2.csv
"$A" --data "$T/u" -e "CREATE TABLE u (k BIGINT, v BIGINT, w TEXT, PRIMARY KEY (k));
CREATE QUERY ucl WITH (sink = 'file://$T/ucl.csv') AS SELECT * FROM u;" </dev/null >out 2>err
expect_rc 0 $? "create u"
"$A" --data "$T/u" -e "\\copy u FROM '$T/ups1.csv'" </dev/null >out 2>err
expect_rc 0 $? "run 1"
"$A" --data "$T/u" -e "\\copy u FROM '$T/ups2.csv'" </dev/null >out 2>err
expect_rc 0 $? "run 2"
tail -n +2 ucl.csv >ucl.txt
awk -F, '{ print $1 "," $2 "," $3 ",U" }' ups.csv | sed '1i k,v,w,op' >ups_ops.csv
check_state "upserts across a restart" ucl.txt ups_ops.csv

# ---- 2b. pull queries: the table's rows now
"$A" --data "$T/p" -q -e "$TBL;" --ingest t <in.csv >out 2>err
expect_rc 0 $? "load the table"
"$A" --data "$T/p" -q -e "SELECT * FROM t;" </dev/null >out 2>err
expect_rc 0 $? "SELECT * FROM t"
head -n 1 out | grep -qx "k,v,w" || fail "a pull query's header: $(head -n 1 out)"
tail -n +2 out | sort -t, -k1,1 >got.txt
oracle in.csv >want.txt
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "SELECT * FROM t differs from sqlite3"; }
# point lookups, held keys and absent ones, one statement each
awk 'BEGIN { for (k = 0; k < 1600; k += 7) printf "SELECT k, v, w FROM t WHERE k = %d;\n", k }' >points.sql
"$A" --data "$T/p" -q -f points.sql </dev/null 2>err | grep -v '^k,v,w$' >got.txt
sqlite3 -batch -csv o.db "SELECT k, v, w FROM t WHERE k % 7 = 0 AND k < 1600 ORDER BY k;" >want.txt
[ "$(wc -l <want.txt)" -gt 100 ] || fail "the point lookups find $(wc -l <want.txt) rows"
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "point lookups differ from sqlite3"; }
"$A" --data "$T/p" -q -e "SELECT COUNT(*) AS n, SUM(v) AS s, MIN(w) AS w FROM t WHERE v > 0;" </dev/null >out 2>err
expect_rc 0 $? "an aggregate pull query"
tail -n +2 out >got.txt
sqlite3 -batch -csv o.db "SELECT COUNT(*), SUM(v), MIN(w) FROM t WHERE v > 0;" >want.txt
cmp -s want.txt got.txt || { diff want.txt got.txt; fail "an aggregate pull query differs from sqlite3"; }

# ---- 3. bad input
"$A" --memory -e "CREATE TABLE x (k BIGINT, v TEXT);" </dev/null >out 2>err && fail "a table without a key was accepted"
has err "line 1, column 1: table 'x' has no PRIMARY KEY"
"$A" --memory -e "CREATE TABLE x (k BIGINT, PRIMARY KEY (z));" </dev/null >out 2>err && fail "a key of no column"
has err "PRIMARY KEY column 'z' is not a column of table 'x'"
"$A" --memory -e "$TBL;
INSERT INTO t VALUES (1, 2, 'a', 'I'), (NULL, 3, 'b', 'I');" </dev/null >out 2>err && fail "a NULL key was accepted"
has err "line 2, column 41: row 2 has no key: column 'k' of the PRIMARY KEY may not be NULL"
"$A" --memory -e "$TBL; INSERT INTO t VALUES (1, 2, 'a', 'X');" </dev/null >out 2>err && fail "op X was accepted"
has err "column 'op' (the op_column) must be 'I', 'U' or 'D', not 'X'"
"$A" --memory -e "$TBL; INSERT INTO t VALUES (1, 2, 'a');" </dev/null >out 2>err && fail "a short row was accepted"
has err "row 1 has 3 values, expected 4: no value for column 'op'"
"$A" --memory -e "$TBL; CREATE STREAM s (k BIGINT, v BIGINT); INSERT INTO t SELECT k, v FROM s;" </dev/null >out 2>err &&
    fail "INSERT INTO SELECT of another shape was accepted"
has err "table 't' has 4 columns, the SELECT gives 2 (the first missing: 'w')"
printf 'k,v,w,op\n1,5,a,I\n2,6,b,Q\n,7,c,I\n3,8,d,D\n4,9,e,U\n' >bad.csv
"$A" --memory -q -e "$TBL; SUBSCRIBE t;" --ingest t <bad.csv >out 2>err
has err "line 3: column 'op': op 'Q' is not I, U or D"
has err "line 4: column 'k': no key (empty or null); every row of a table needs its PRIMARY KEY"
has err "2 lines rejected"
[ "$(tail -n +2 out | tr '\n' ' ')" = "+I,1,5,a +I,4,9,e " ] || fail "the good rows around bad ones: $(cat out)"

# ---- 4. CREATE TABLE AS: an aggregate over the table, and over a stream
AGG="SELECT w, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi"
SQ="SELECT w, COUNT(*), SUM(v), MIN(v), MAX(v) FROM t GROUP BY w;"
"$A" --memory -q -e "$TBL; CREATE TABLE c AS $AGG FROM t GROUP BY w; SUBSCRIBE c;" --ingest t <in.csv >out 2>err
expect_rc 0 $? "CREATE TABLE AS over a table"
head -n 1 out | grep -qx "op,w,n,s,lo,hi" || fail "the aggregate's header: $(head -n 1 out)"
tail -n +2 out >agg.txt
grep -q '^-D,' agg.txt || fail "no group of the aggregate lost its last row"
check_state "CREATE TABLE AS over a table" agg.txt in.csv "$SQ"
# over a stream: every row counts (sqlite3 over all of them)
awk -F, 'NR > 1 { print $1 "," $2 "," $3 }' in.csv >rows.csv
"$A" --memory -q -e "CREATE STREAM s (k BIGINT, v BIGINT, w TEXT); CREATE TABLE c AS $AGG FROM s GROUP BY w; SUBSCRIBE c;" \
    --ingest s <rows.csv >out 2>err
expect_rc 0 $? "CREATE TABLE AS over a stream"
tail -n +2 out >sagg.txt
consolidate sagg.txt >got.txt || { tail -3 got.txt; fail "the stream's aggregate: the changelog is not consistent"; }
sqlite3 -batch -bail s.db "CREATE TABLE t (k INTEGER, v INTEGER, w TEXT);" ".mode csv" ".import rows.csv t" ||
    fail "sqlite3 cannot load rows.csv"
sqlite3 -batch -csv s.db "$SQ" | sort -t, -k1,1 >want.txt
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "the stream's aggregate differs from sqlite3"; }
refused() { # refused SQL TEXT: SQL fails, its error holds TEXT
    "$A" --memory -e "$1" </dev/null >out 2>err && fail "accepted: $1"
    has err "$2"
}
refused "$TBL; CREATE TABLE c AS SELECT w, COUNT(*) AS n FROM t;" "CREATE TABLE ... AS takes no a SELECT without GROUP BY"
refused "$TBL; CREATE TABLE c AS SELECT COUNT(*) AS n FROM t GROUP BY w;" \
    "GROUP BY of CREATE TABLE AS takes columns that the SELECT selects"
# HAVING: a group that stops passing is deleted, one that passes again comes back
HV="HAVING SUM(v) > 300 AND COUNT(*) >= 2"
"$A" --memory -q -e "$TBL; CREATE TABLE c AS $AGG FROM t GROUP BY w $HV; SUBSCRIBE c;" --ingest t <in.csv >out 2>err
expect_rc 0 $? "CREATE TABLE AS with HAVING"
tail -n +2 out >hagg.txt
grep -q '^-D,' hagg.txt || fail "no group of the HAVING aggregate was deleted"
awk -F, '$1 == "-D" { d[$2] = 1 } $1 == "+I" && d[$2] { back = 1 } END { exit !back }' hagg.txt ||
    fail "no group of the HAVING aggregate came back after its -D"
check_state "CREATE TABLE AS with HAVING" hagg.txt in.csv "${SQ%;} $HV;"
refused "$TBL; CREATE TABLE c AS SELECT w, COUNT(*) AS n FROM t GROUP BY w; INSERT INTO c VALUES ('a', 1);" \
    "table 'c' is made by CREATE TABLE AS: its rows come from its query"
# a push query's aggregate without a window prints the same changelog:
# over the table, with HAVING, and over a stream
"$A" --memory -q -e "$TBL; $AGG FROM t GROUP BY w EMIT CHANGES;" --ingest t <in.csv >out 2>err
expect_rc 0 $? "a push query's aggregate over a table"
head -n 1 out | grep -qx "op,w,n,s,lo,hi" || fail "the push aggregate's header: $(head -n 1 out)"
tail -n +2 out >pagg.txt
check_state "a push query's aggregate over a table" pagg.txt in.csv "$SQ"
cmp -s pagg.txt agg.txt || fail "the push query's changelog is not CREATE TABLE AS's"
"$A" --memory -q -e "$TBL; $AGG FROM t GROUP BY w $HV EMIT CHANGES;" --ingest t <in.csv >out 2>err
expect_rc 0 $? "a push query's aggregate with HAVING"
tail -n +2 out >phagg.txt
check_state "a push query's aggregate with HAVING" phagg.txt in.csv "${SQ%;} $HV;"
cmp -s phagg.txt hagg.txt || fail "the push query's HAVING changelog is not CREATE TABLE AS's"
"$A" --memory -q -e "CREATE STREAM s (k BIGINT, v BIGINT, w TEXT); $AGG FROM s GROUP BY w;" --ingest s <rows.csv >out 2>err
expect_rc 0 $? "a push query's aggregate over a stream"
tail -n +2 out | cmp -s - sagg.txt || fail "the push query's changelog over a stream is not CREATE TABLE AS's"

# ---- 5. kill -9 in the middle of a file source, restart until done
gen 400000 20000 5 >big.csv
BHV="HAVING COUNT(*) > 52"
setup() {
    mkdir -p "$1"
    cat >"$1/setup.sql" <<EOF
CREATE TABLE IF NOT EXISTS t (k BIGINT, v BIGINT, w TEXT, op TEXT, PRIMARY KEY (k))
    WITH (op_column = 'op', source = 'file://$T/big.csv', format = 'csv');
CREATE QUERY IF NOT EXISTS cl WITH (sink = 'file://$1/cl.csv') AS SELECT * FROM t;
CREATE TABLE IF NOT EXISTS c AS $AGG FROM t GROUP BY w;
CREATE QUERY IF NOT EXISTS ccl WITH (sink = 'file://$1/ccl.csv') AS SELECT * FROM c;
CREATE TABLE IF NOT EXISTS h AS $AGG FROM t GROUP BY w $BHV;
CREATE QUERY IF NOT EXISTS hcl WITH (sink = 'file://$1/hcl.csv') AS SELECT * FROM h;
CREATE QUERY IF NOT EXISTS hup WITH (sink = 'file://$1/hup.csv', changelog = 'upsert') AS SELECT * FROM h;
EOF
}
setup "$T/ref"
ref_run
tail -n +2 "$T/ref/cl.csv" >ref_cl.txt
check_state "a file source" ref_cl.txt big.csv
tail -n +2 "$T/ref/ccl.csv" >ref_ccl.txt
check_state "an aggregate over a file source" ref_ccl.txt big.csv "$SQ"
tail -n +2 "$T/ref/hcl.csv" >ref_hcl.txt
grep -q '^-D,' ref_hcl.txt || fail "no group of the HAVING aggregate over a file source was deleted"
check_state "a HAVING aggregate over a file source" ref_hcl.txt big.csv "${SQ%;} $BHV;"
tail -n +2 "$T/ref/hup.csv" >ref_hup.txt
as_upsert ref_hcl.txt | cmp -s - ref_hup.txt || fail "the HAVING table's upsert sink is not its changelog without -U"
upsert_consolidate ref_hup.txt >got.txt || { tail -3 got.txt; fail "the HAVING table's upsert sink is not consistent"; }
oracle big.csv "${SQ%;} $BHV;" | cmp -s - got.txt || fail "the HAVING table's upsert sink differs from sqlite3"
setup "$T/crash"
crash_show() { echo "$(wc -l <"$T/crash/cl.csv" 2>/dev/null) changes"; }
crash_runs "$ref_ms" crash_show
tail -n +2 "$T/crash/cl.csv" >crash_cl.txt
cmp -s ref_cl.txt crash_cl.txt || { diff ref_cl.txt crash_cl.txt | head; fail "the changelog after kill -9 differs"; }
check_state "after kill -9" crash_cl.txt big.csv
# the rows kept in LMDB, read back by a pull query
"$A" --data "$T/crash/data" -q -e "SELECT * FROM t;" </dev/null >out 2>err
expect_rc 0 $? "a pull query after kill -9"
tail -n +2 out | sort -t, -k1,1 | cmp -s - want.txt || fail "the table's rows after kill -9 differ from sqlite3"
tail -n +2 "$T/crash/ccl.csv" >crash_ccl.txt
cmp -s ref_ccl.txt crash_ccl.txt || { diff ref_ccl.txt crash_ccl.txt | head; fail "the aggregate's changelog after kill -9 differs"; }
tail -n +2 "$T/crash/hcl.csv" >crash_hcl.txt
cmp -s ref_hcl.txt crash_hcl.txt || { diff ref_hcl.txt crash_hcl.txt | head; fail "the HAVING aggregate's changelog after kill -9 differs"; }
tail -n +2 "$T/crash/hup.csv" | cmp -s ref_hup.txt - || fail "the upsert sink after kill -9 differs"
"$A" --data "$T/crash/data" -q -e "SELECT * FROM h;" </dev/null >out 2>err
expect_rc 0 $? "a pull query of the HAVING table after kill -9"
oracle big.csv "${SQ%;} $BHV;" >want.txt
tail -n +2 out | sort -t, -k1,1 | cmp -s - want.txt || fail "the HAVING table's rows after kill -9 differ from sqlite3"
echo "ok: $(wc -l <ref_cl.txt) changes, $(wc -l <want.txt) rows"
