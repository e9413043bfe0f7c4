#!/bin/sh
# Input the way a user writes it, embedded and on a cluster (a coordinator
# and one node).  Checks:
#   1. a stream declared format = 'json' is read as JSON by --ingest and
#      \copy without --input-format (it used to be read as CSV, every line
#      rejected), embedded and through --connect;
#   2. JSON fed to a CSV stream is rejected with a line that says it looks
#      like JSON and how to read it as JSON;
#   3. CSV with a reordered header that has an unknown extra column and
#      names after "; ": rows by name, one notice naming the column, embedded
#      and through --connect;
#   4. the stream's delimiter and null_string, and quoted fields spanning
#      lines: a rejection names the line its record started on; the same
#      through \copy's options on a stream without them, from a file
#      source, and from a unix socket (a record's lines in two writes);
#   5. bad options are refused with the position of the value;
#   6. \copy's delimiter and null_string through --connect.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

Q="SELECT k, COUNT(*) AS n, SUM(v) AS s, COUNT(note) AS notes FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;"
JDDL="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE, note TEXT) WITH (timestamp = 'ts', format = 'json');"
printf '{"ts":1000,"k":1,"v":2.5}\n{"ts":1500,"k":1,"v":3.5,"note":"x"}\n{"ts":12000,"k":2,"v":1}\n' >ev.json
printf 'k,n,s,notes\n1,2,6,1\n2,1,1,0\n' >want_json.csv

# ---- 1. a JSON stream, embedded: --ingest and \copy
"$A" --memory -q -e "$JDDL $Q" --ingest ev <ev.json >got.csv 2>got.err || { cat got.err; fail "--ingest of a json stream"; }
cmp -s got.csv want_json.csv || { cat got.csv got.err; fail "--ingest of a json stream: wrong rows"; }
[ -s got.err ] && { cat got.err; fail "--ingest of a json stream: messages"; }
printf '%s\nSELECT k, COUNT(*) AS n FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;\n\\copy ev FROM %s\n' \
    "$JDDL" "'$T/ev.json'" | "$A" --data "$T/emb" >copy.out 2>copy.err || { cat copy.err; fail "copy of a json stream"; }
grep -q '^COPY 3$' copy.err || { cat copy.out copy.err; fail "copy of a json stream: not COPY 3"; }

# ---- 2. JSON into a CSV stream: said so
CDDL="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE, note TEXT) WITH (timestamp = 'ts');"
"$A" --memory -q -e "$CDDL $Q" --ingest ev <ev.json >/dev/null 2>wrong.err
[ $? -eq 3 ] || fail "JSON into a CSV stream should exit 3"
grep -q "^line 1: .*this looks like JSON; the stream's format is csv: use --input-format json" wrong.err ||
    { cat wrong.err; fail "JSON into a CSV stream: no hint"; }

# ---- 3. a reordered header with an extra column, embedded
printf 'v, note , ts,extra, k\n2.5,,1000,a,1\n3.5,"x",1500,b,1\n1,,12000,c,2\n' >hdr.csv
"$A" --memory -q -e "$CDDL $Q" --ingest ev <hdr.csv >got3.csv 2>got3.err || { cat got3.err; fail "reordered header"; }
cmp -s got3.csv want_json.csv || { cat got3.csv got3.err; fail "reordered header: wrong rows"; }
[ "$(grep -c "line 1: header: 'extra' names no column of the stream; ignored" got3.err)" -eq 1 ] ||
    { cat got3.err; fail "reordered header: one notice naming 'extra' expected"; }

# ---- 4. delimiter, null_string, quoted fields over lines
SDDL="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE, note TEXT) WITH (timestamp = 'ts', delimiter = ';', null_string = 'NULL');"
printf 'v;note;ts;k\n2.5;"two\nlines";1000;1\n3.5;NULL;1500;1\nbad;"a\r\nb";1700;1\n1;x;12000;NULL\n' >semi.csv
printf 'k,n,s,notes\n1,2,6,1\n,1,1,1\n' >want_semi.csv
"$A" --memory -q -e "$SDDL $Q" --ingest ev <semi.csv >got4.csv 2>got4.err
cmp -s got4.csv want_semi.csv || { cat got4.csv got4.err; fail "delimiter/null_string/multi-line: wrong rows"; }
grep -q "^line 5: column 'v': 'bad' is not a DOUBLE$" got4.err || { cat got4.err; fail "the rejection names line 5"; }
# the same file through \copy's options into a stream without them
printf '%s\n%s\n\\copy ev FROM %s WITH (delimiter %s, null_string %s)\n' "$CDDL" \
    "SELECT k, COUNT(*) AS n, SUM(v) AS s, COUNT(note) AS notes FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;" \
    "'$T/semi.csv'" "';'" "'NULL'" | "$A" --memory -q >got4c.csv 2>got4c.err
grep -q "^$T/semi.csv: line 5: column 'v': 'bad' is not a DOUBLE$" got4c.err || { cat got4c.err; fail "copy (delimiter): line 5"; }
# ... and from a file source
FDDL="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE, note TEXT) WITH (timestamp = 'ts', delimiter = ';', null_string = 'NULL', source = 'file://$T/semi.csv');"
"$A" --memory -q -e "$FDDL $Q" >got4f.csv 2>got4f.err
cmp -s got4f.csv want_semi.csv || { cat got4f.csv got4f.err; fail "file source with ';' and multi-line fields: wrong rows"; }

# ... and from a unix socket, a record's lines in two writes
U="$T/csv.sock"
"$A" --memory -e "CREATE STREAM u (ts TIMESTAMP, note TEXT) WITH (timestamp = 'ts', delimiter = ';', source = 'unix://$U');
SELECT note FROM u LIMIT 2;" >sock.out 2>sock.err &
UPID=$!
PIDS="$PIDS $UPID"
_i=0
while [ ! -S "$U" ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
[ -S "$U" ] || { cat sock.err; fail "the unix source does not listen"; }
{ printf 'ts;note
1;"one
'; sleep 0.3; printf 'two"
{"ts":2,"note":"j"}
3;three
'; } | nc -N -U "$U"
_i=0
while kill -0 "$UPID" 2>/dev/null && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
[ "$(cat sock.out)" = "$(printf 'note
"one
two"
three')" ] || { cat sock.out sock.err; fail "socket: multi-line record"; }
grep -q "producer #1: line 4: .*this looks like JSON; the stream's format is csv (format = 'json' in its WITH" sock.err ||
    { cat sock.err; fail "socket: JSON hint on line 4"; }

# ---- 5. bad options: the value's position
"$A" --memory -q -e "CREATE STREAM x (ts TIMESTAMP) WITH (delimiter = ';;');" 2>opt.err && fail "delimiter ';;' accepted"
grep -q "line 1, column 50: delimiter ';;' must be a single byte" opt.err || { cat opt.err; fail "delimiter error"; }
"$A" --memory -q -e "CREATE STREAM x (ts TIMESTAMP) WITH (format = 'json', null_string = 'N');" 2>opt2.err &&
    fail "null_string on a json stream accepted"
grep -q "null_string are for CSV input, and the format is json" opt2.err || { cat opt2.err; fail "null_string on json"; }
printf '%s\n\\copy ev FROM %s (delim %s)\n' "$CDDL" "'$T/semi.csv'" "';'" | "$A" --memory -q 2>opt3.err &&
    fail "copy (delim) accepted"
grep -q "column [0-9]*: unknown \\\\copy option 'delim'" opt3.err || { cat opt3.err; fail "copy option error"; }

# ---- 1 and 3 on a cluster, through --connect
start_coordinator c0 rack-a
start_member n1 rack-b
wait_alive 2
sqlc -e "$JDDL" || fail "CREATE STREAM (json) on the cluster"
sqlc -e "$Q" --ingest ev --end <ev.json >cgot.csv 2>cgot.err || { cat cgot.err; fail "--connect --ingest of a json stream"; }
cmp -s cgot.csv want_json.csv || { cat cgot.csv cgot.err; fail "--connect --ingest of a json stream: wrong rows"; }
sqlc -e "CREATE STREAM ev2 (ts TIMESTAMP, k BIGINT, v DOUBLE, note TEXT) WITH (timestamp = 'ts');" || fail "CREATE STREAM ev2"
sqlc -e "$(echo "$Q" | sed 's/FROM ev /FROM ev2 /')" --ingest ev2 --end <hdr.csv >cgot3.csv 2>cgot3.err ||
    { cat cgot3.err; fail "--connect, reordered header"; }
cmp -s cgot3.csv want_json.csv || { cat cgot3.csv cgot3.err; fail "--connect, reordered header: wrong rows"; }
[ "$(grep -c "line 1: header: 'extra' names no column of the stream; ignored" cgot3.err)" -eq 1 ] ||
    { cat cgot3.err; fail "--connect, reordered header: one notice naming 'extra' expected"; }
sqlc -e "CREATE STREAM ev3 (ts TIMESTAMP, k BIGINT, v DOUBLE, note TEXT) WITH (timestamp = 'ts');" || fail "CREATE STREAM ev3"
sqlc -e "SELECT k FROM ev3;" --ingest ev3 --end <ev.json >/dev/null 2>cwrong.err
grep -q "this looks like JSON; the stream's format is csv" cwrong.err || { cat cwrong.err; fail "--connect: no JSON hint"; }
# \copy's CSV options through --connect reach the home node
sqlc -e "CREATE STREAM ev4 (ts TIMESTAMP, k BIGINT, v DOUBLE, note TEXT) WITH (timestamp = 'ts');" || fail "CREATE STREAM ev4"
printf '\\copy ev4 FROM %s WITH (delimiter %s, null_string %s)\n' "'$T/semi.csv'" "';'" "'NULL'" | sqlc >ccopy.out 2>ccopy.err
grep -q "line 5: column 'v': 'bad' is not a DOUBLE" ccopy.err || { cat ccopy.out ccopy.err; fail "--connect copy with options: line 5"; }
cat c0.log n1.log | grep -q "ingest of ev4 done: 3 rows, 1 rejected" || { cat ccopy.out ccopy.err; fail "--connect copy with options: 3 rows"; }
echo "ok: t_csv_input"
