#!/bin/sh
# ares-sql without a terminal: the command-line contract that scripts rely on.
# -e and -f in order, SQL on stdin, --ingest with bad lines, output formats,
# errors with the parser's caret and every exit code (0, 1, 2, 3, 130).
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
A="$ARES_BUILD/ares-sql"
T="$ARES_TMP"
cd "$T" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
# expect_rc WANT GOT WHAT
expect_rc() { [ "$2" -eq "$1" ] || { echo "--- stderr:"; cat "$T/err" 2>/dev/null; fail "$3: exit $2, want $1"; }; }
# has FILE TEXT: FILE contains the fixed string TEXT
has() { grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$1 lacks: $2"; }; }
hasnt() { ! grep -qF -- "$2" "$1" || { echo "--- $1:"; cat "$1"; fail "$1 has: $2"; }; }

EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp='ts');"
AGG="SELECT k, COUNT(*) AS n, SUM(v) AS s FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;"

# ---- 1. the example of the contract, exactly: header, then the rows in either order
printf 'ts,k,v\n1000,1,2.5\n1500,1,3.5\n12000,2,1\n' |
    "$A" --memory -e "$EV $AGG" --ingest ev --format csv >out 2>err
expect_rc 0 $? "contract example"
[ "$(head -n 1 out)" = "k,n,s" ] || fail "header row: $(head -n 1 out)"
[ "$(tail -n +2 out | sort)" = "$(printf '1,2,6\n2,1,1')" ] || { cat out; fail "contract example rows"; }
[ "$(wc -l <out)" -eq 3 ] || { cat out; fail "contract example: extra output"; }
has err "CREATE STREAM" # notices go to stderr, stdout stays data

# CSV is the default when stdout is not a terminal
printf 'ts,k,v\n1000,1,2.5\n1500,1,3.5\n12000,2,1\n' | "$A" --memory -q -e "$EV $AGG" --ingest ev >out2 2>err
expect_rc 0 $? "default format"
cmp -s out out2 || fail "default output is not the CSV of --format csv"
[ ! -s err ] || { cat err; fail "-q still printed notices"; }

# ---- 2. --format json; timestamps as ISO-8601 UTC; JSON input by field name
printf '{"ts":"2023-11-14T22:13:20Z","k":7,"v":0.1}\n{"v":2,"k":7,"ts":1700000001000}\n' |
    "$A" --memory -q -e "$EV SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 1 MINUTES) GROUP BY k EMIT FINAL;" \
        --ingest ev --input-format json --format json >out 2>err
expect_rc 0 $? "--format json"
[ "$(cat out)" = '{"k":7,"n":2,"s":2.1,"window_start":"2023-11-14T22:13:00.000Z"}' ] || { cat out; fail "json output"; }

# ---- 3. -f scripts and -e run in the order given; a data directory persists
cat >setup.sql <<'EOF'
-- a stream and a few rows
CREATE STREAM clicks (ts TIMESTAMP, user_id BIGINT, url TEXT)
    WITH (timestamp = 'ts');

SELECT url, COUNT(*) AS n
FROM clicks
WINDOW TUMBLING (SIZE 10 SECONDS)
GROUP BY url
EMIT FINAL;
EOF
cat >rows.sql <<'EOF'
INSERT INTO clicks VALUES (1000, 1, '/a'), (2000, 2, '/a'), (3000, 1, '/b');
INSERT INTO clicks VALUES (25000, 3, '/c');
EOF
"$A" --data "$T/data" -f setup.sql -f rows.sql -e "SHOW STREAMS;" >out 2>err
expect_rc 0 $? "-f scripts"
has out "url,n"
has out "/a,2"
has out "/b,1"
hasnt out "/c" # its window is still open
has out "clicks,"
# SHOW STREAMS ran after the rows (order kept): it counts 4 of them
grep -q '^clicks,.*,4,0,' out || { cat out; fail "SHOW STREAMS after the scripts"; }
"$A" --data "$T/data" -e "DESCRIBE clicks;" >out 2>err
expect_rc 0 $? "reopen the data directory"
has out "user_id,BIGINT"

# ---- 4. SQL on stdin (no -e, -f or --ingest; stdin not a terminal)
printf '%s\n%s\nINSERT INTO ev VALUES (1000, 1, 1.5),\n  (2000, 1, 1.5);\nINSERT INTO ev VALUES (60000, 2, 1);\n' "$EV" "$AGG" |
    "$A" --memory >out 2>err
expect_rc 0 $? "SQL on stdin"
[ "$(cat out)" = "$(printf 'k,n,s\n1,2,3')" ] || { cat out; fail "SQL on stdin output"; }
has err "INSERT 2"

# \q in a script ends it with success: nothing after it runs
"$A" --memory -e "SHOW STREAMS;" -e '\q' -e "SELECT k FORM ev;" >out 2>err
expect_rc 0 $? "\\q in a script"
hasnt err "error"

# ---- 5. SQL errors: exit 1, the parser's caret, the file name, nothing after runs
"$A" --memory -e "$EV SELECT k FORM ev;" >out 2>err
expect_rc 1 $? "syntax error"
has err "error: line 1, column"
has err "unexpected 'FORM', expected FROM"
grep -q '^ *\^$' err || { cat err; fail "no caret line"; }

printf 'CREATE STREAM s (a BIGINT);\n\nINSERT INTO s VALUES (1);\nSELECT a FROM s\n  WHERE b > 1;\nINSERT INTO s VALUES (2);\n' >bad.sql
"$A" --memory -f bad.sql >out 2>err
expect_rc 1 $? "unknown column in a -f script"
has err "error: bad.sql: line 5, column 9:"
has err "WHERE b > 1;"
[ "$(grep -c 'INSERT' err)" -eq 1 ] || { cat err; fail "a statement after the error ran"; }

"$A" --memory -e "SELECT * FROM nosuch;" >out 2>err
expect_rc 1 $? "unknown stream"
has err "error:"
has err "nosuch"

printf '1,2\n' | "$A" --memory -e "$EV" --ingest nosuch >out 2>err
expect_rc 1 $? "--ingest into an unknown stream"

# ---- 6. bad usage: exit 2
"$A" --bogus >out 2>err;                        expect_rc 2 $? "unknown option"
has err "unknown option --bogus"
"$A" -e >out 2>err;                             expect_rc 2 $? "-e without SQL"
"$A" --data d --memory -e "SHOW STREAMS;" >out 2>err; expect_rc 2 $? "--data with --memory"
"$A" --memory --format xml -e "SHOW STREAMS;" >out 2>err; expect_rc 2 $? "bad --format"
"$A" --memory --header -e "SHOW STREAMS;" >out 2>err; expect_rc 2 $? "--header without --ingest"
"$A" --memory --ingest ev --input-format xml >out 2>err </dev/null; expect_rc 2 $? "bad --input-format"
"$A" --memory -f "$T/missing.sql" >out 2>err;   expect_rc 2 $? "missing -f file"
"$A" --memory -e "SHOW STREAMS;" stray >out 2>err; expect_rc 2 $? "stray argument"
"$A" --help >out 2>err;                         expect_rc 0 $? "--help"
has out "Exit status"
"$A" --version >out 2>err;                      expect_rc 0 $? "--version"
has out "ares-sql "

# ---- 7. bad input lines: reported with their line numbers, good lines kept
{
    echo 'ts,k,v'
    echo '1000,1,1'
    echo '2000,one,1'      # line 3
    echo '3000,1'          # line 4
    echo '4000,1,2'
    i=0
    while [ $i -lt 15 ]; do echo "x$i,1,1"; i=$((i + 1)); done # lines 6..20
    echo '5000,2,4'
} >input.csv
"$A" --memory -q -e "$EV $AGG" --ingest ev <input.csv >out 2>err
expect_rc 0 $? "some bad lines"
has err "line 3: column 'k': 'one' is not a BIGINT"
has err "line 4:"
has err "line 13:"   # the 10th rejection is still in full
hasnt err "line 14:" # then only a count
has err "... and 7 more rejected lines"
has err "ev: 3 rows ingested, 17 lines rejected"
[ "$(tail -n +2 out | sort)" = "$(printf '1,2,3\n2,1,4')" ] || { cat out; fail "good lines were not kept"; }

# ---- 8. input rejected beyond the policy: exit 3
printf 'ts,k,v\nnope\nnope,nope\n' | "$A" --memory -q -e "$EV" --ingest ev >out 2>err
expect_rc 3 $? "every line rejected"
has err "every input line was rejected"
printf 'ts,k,v\n1000,1,1\nnope\n' | "$A" --memory -q -e "$EV" --ingest ev --strict >out 2>err
expect_rc 3 $? "--strict"
printf 'ts,k,v\n1000,1,1\n' | "$A" --memory -q -e "$EV" --ingest ev --strict >out 2>err
expect_rc 0 $? "--strict with clean input"
printf 'time,key\n1000,1\n' | "$A" --memory -q -e "$EV" --ingest ev --header >out 2>err
expect_rc 3 $? "--header with a bad header line"
printf '' | "$A" --memory -q -e "$EV $AGG" --ingest ev >out 2>err
expect_rc 0 $? "empty input"
[ "$(cat out)" = "k,n,s" ] || { cat out; fail "empty input: the header alone"; }

# ---- 9. --no-header and table output
printf '1000,1,2\n' | "$A" --memory -q -e "$EV SELECT k, v FROM ev;" --ingest ev --no-header --format table >out 2>err
expect_rc 0 $? "--no-header"
has out " k | v"
has out "(1 row)"

# ---- 10. meta-commands in a script: \i, \copy (the stream stays open), \format, \timing
printf 'ts,k,v\n1000,1,1\n2000,zz,1\n3000,1,2\n' >copy.csv
printf '%s\n' "$EV" >ev.sql
cat >meta.sql <<EOF
\\i ev.sql
SELECT k, COUNT(*) AS n FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;
\\copy ev FROM '$T/copy.csv' csv
INSERT INTO ev VALUES (11000, 9, 0);
\\format json
\\timing on
SHOW STREAMS;
EOF
"$A" --memory -f - <meta.sql >out 2>err
expect_rc 0 $? "meta-commands in a script"
[ "$(sed -n 1,2p out)" = "$(printf 'k,n\n1,2')" ] || { cat out; fail "\\copy did not feed the push query"; }
has out '{"name":"ev",'
has err "copy.csv: line 3: column 'k': 'zz' is not a BIGINT"
has err "COPY 2 (1 line rejected)"
has err "Time: "
printf '\\copy ev FROM '"'"'%s/none.csv'"'"'\n' "$T" | "$A" --memory -e "$EV" -f - >out 2>err
expect_rc 1 $? "\\copy of a missing file"
has err "cannot open"
printf '\\nosuch\n' | "$A" --memory >out 2>err
expect_rc 1 $? "unknown meta-command"

# ---- 11. signals: 130 for an interrupted run, 0 for a --follow run stopped
# (t_sockets.sh and t_subscribe.sh add runs kept alive by live sockets)
# wait_err TEXT: ./err shows TEXT within 20 s (a loaded machine can take
# seconds to start a process).  Each run below removes err first: the shell
# truncates it only once the child has forked, so a TEXT left by the run
# before could be read and the signal sent before the child is ready
wait_err() {
    i=0
    while [ $i -lt 200 ] && ! grep -qF -- "$1" err 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
    has err "$1"
}
mkfifo sqlin
rm -f err
"$A" --memory <sqlin >out 2>err &
pid=$!
exec 4>sqlin # SQL on stdin that has not ended
echo "$EV" >&4
wait_err "CREATE STREAM"
kill -INT $pid
wait $pid
expect_rc 130 $? "SIGINT while SQL on stdin is awaited"
exec 4>&-
rm -f err
"$A" --memory --follow -e "$EV" >out 2>err </dev/null &
pid=$!
wait_err "CREATE STREAM"
kill -TERM $pid
wait $pid
expect_rc 0 $? "--follow stopped by SIGTERM"

echo "t_cli_basic: all passed"
