#!/bin/sh
# t_engine_errors.sh: the engine path's errors through ares-sql (issue 3,
# "Storage"): a data directory that is corrupt, truncated, from another
# format version, not Ares's, not a directory, or in use; a file source that
# does not exist; a sink that cannot be created.  Each must give a clear
# message on stderr and exit 1, never a crash (a signal) or a silent loss.
# Last, every page of a small data directory is overwritten in turn: each
# run must either fail cleanly or still see its stream and query.
#
# Every check runs even when one fails; the failures are listed at the end.
# Env: ARES_BUILD (dir with ares-sql), ARES_TMP (private temp dir).
set -u

A="$ARES_BUILD/ares-sql"
T="$ARES_TMP"
export LC_ALL=C
FAILED=""
pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill -9 "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
SECRET="$T/secret"

bad() {
    echo "FAIL $*" >&2
    FAILED="$FAILED
  $1"
}

# expect_err LABEL TEXT ARGS...: ares-sql ARGS exits 1 and stderr holds TEXT
expect_err() {
    label=$1 text=$2
    shift 2
    rc=0
    "$A" "$@" </dev/null >"$T/out" 2>"$T/err" || rc=$?
    if [ "$rc" -ne 1 ]; then
        sed 's/^/    /' "$T/err" >&2
        if [ "$rc" -ge 128 ]; then bad "$label" "crashed: signal $((rc - 128))"
        else bad "$label" "exit $rc, expected 1"; fi
    elif ! grep -qF -- "$text" "$T/err"; then
        sed 's/^/    /' "$T/err" >&2
        bad "$label" "stderr lacks '$text'"
    else
        echo "ok   $label: $(grep -m 1 -F -- "$text" "$T/err")"
    fi
}

STREAM="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts');"
QUERY="CREATE QUERY q WITH (sink = 'file://$T/q.csv', format = 'csv') AS
       SELECT k, COUNT(*) AS n FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k;"

# A small data directory with a stream, a query and some rows: the base of
# the corruption cases.
i=0
{
    echo "ts,k,v"
    while [ $i -lt 3000 ]; do echo "$((1700000000000 + i * 37)),$((i % 13)),$i.5"; i=$((i + 1)); done
} >"$T/rows.csv"
"$A" --data "$T/base" -q -e "$STREAM $QUERY" --ingest ev <"$T/rows.csv" >/dev/null 2>"$T/err" ||
    { cat "$T/err" >&2; echo "FAIL: could not build the base data directory" >&2; exit 1; }
fresh() { rm -rf "$T/c" && cp -r "$T/base" "$T/c"; }
CHECK="SHOW STREAMS; SHOW QUERIES;"

# ------------------------------------------------------------------ whole-file damage
fresh
yes garbage | head -c 65536 >"$T/c/data.mdb"
expect_err "garbage data.mdb" "not an LMDB environment or is corrupt" --data "$T/c" -e "$CHECK"

fresh
head -c 100 "$T/base/data.mdb" >"$T/c/data.mdb"
expect_err "data.mdb cut to 100 bytes" "storage $T/c" --data "$T/c" -e "$CHECK"

# A data.mdb cut after its meta pages would map pages past the end of the
# file (SIGBUS): storage checks the file covers its last page at open.
fresh
size=$(wc -c <"$T/base/data.mdb")
truncate -s $((size / 2)) "$T/c/data.mdb"
expect_err "data.mdb cut to half its size" "storage $T/c" --data "$T/c" -e "$CHECK"

# ------------------------------------------------------------------ not ours, not current, not a directory
fresh
mdb_dump -s meta "$T/c" | awk 'prev == " 73746f72652e76657273696f6e" { $0 = " 00000063" } { print; prev = $0 }' |
    mdb_load -s meta "$T/c" 2>/dev/null
expect_err "format version 99" "storage format version 99" --data "$T/c" -e "$CHECK"

mkdir -p "$T/other"
printf 'VERSION=3\nformat=bytevalue\ntype=btree\nHEADER=END\n 6b6579\n 76616c7565\nDATA=END\n' | mdb_load "$T/other"
expect_err "another program's LMDB environment" "not an Ares data directory" --data "$T/other" -e "$CHECK"

: >"$T/plainfile"
expect_err "--data names a file" "$T/plainfile" --data "$T/plainfile" -e "$CHECK"

# ------------------------------------------------------------------ a directory in use
fresh
"$A" --data "$T/c" -q --format csv -e "SHOW STREAMS;" --follow </dev/null >"$T/follow.out" 2>"$T/follow.err" &
pid=$!
n=0
while [ ! -s "$T/follow.out" ] && [ "$n" -lt 100 ]; do
    sleep 0.1
    n=$((n + 1))
done
n=0
while :; do
    rc=0
    "$A" --data "$T/c" -q -e "SHOW STREAMS;" </dev/null >"$T/out" 2>"$T/err" || rc=$?
    if [ "$rc" -ne 0 ] || [ "$n" -ge 50 ]; then break; fi
    n=$((n + 1))
    sleep 0.1
done
if [ "$rc" -eq 1 ] && grep -qF "in use" "$T/err"; then
    echo "ok   data directory in use: $(head -n 1 "$T/err")"
else
    sed 's/^/    /' "$T/err" >&2
    bad "data directory in use" "a second ares-sql exited $rc"
fi
kill -TERM "$pid" 2>/dev/null
rc=0
wait "$pid" || rc=$?
pid=""
if [ "$rc" -eq 0 ]; then echo "ok   --follow ends with 0 on SIGTERM"
else sed 's/^/    /' "$T/follow.err" >&2; bad "--follow on SIGTERM" "exit $rc, expected 0"; fi
expect_err "the directory is free again, the stream still there" "already exists" --data "$T/c" -e "$STREAM"

# ------------------------------------------------------------------ sources and sinks
expect_err "a file source that does not exist" "cannot open" --memory -e \
    "CREATE STREAM s (ts TIMESTAMP, k BIGINT) WITH (timestamp = 'ts', source = 'file://$T/nosuch.csv');"
expect_err "a source of an unknown kind" "kafka://x/y" --memory -e \
    "CREATE STREAM s (ts TIMESTAMP, k BIGINT) WITH (timestamp = 'ts', source = 'kafka://x/y');"
expect_err "a sink in a directory that does not exist" "cannot open sink file" --memory -e \
    "$STREAM CREATE QUERY q WITH (sink = 'file://$T/nosuch/q.csv', format = 'csv') AS SELECT k FROM ev;"
expect_err "an unknown sink format" "format" --memory -e \
    "$STREAM CREATE QUERY q WITH (sink = 'file://$T/q2.csv', format = 'parquet') AS SELECT k FROM ev;"
# the failed CREATE QUERY left nothing behind: the same name works afterwards
rc=0
"$A" --data "$T/sinkdir" -q -e "$STREAM" </dev/null >/dev/null 2>&1 || rc=$?
"$A" --data "$T/sinkdir" -q -e "CREATE QUERY q WITH (sink = 'file://$T/nosuch/q.csv') AS SELECT k FROM ev;" \
    </dev/null >/dev/null 2>&1
"$A" --data "$T/sinkdir" -q -e "CREATE QUERY q WITH (sink = 'file://$T/q3.csv') AS SELECT k FROM ev;" \
    </dev/null >"$T/out" 2>"$T/err" || rc=$?
if [ "$rc" -eq 0 ]; then echo "ok   a failed CREATE QUERY leaves no trace"
else sed 's/^/    /' "$T/err" >&2; bad "a failed CREATE QUERY leaves no trace" "exit $rc"; fi

# ------------------------------------------------------------------ file modes
# a new data directory is the owner's alone; an old one open to others is said
rc=0
(umask 022; "$A" --data "$T/modes/d" -q -e "$STREAM" </dev/null >/dev/null 2>"$T/err") || rc=$?
m=$(stat -c '%a' "$T/modes/d" "$T/modes/d/data.mdb" 2>/dev/null | tr '\n' ' ')
if [ "$rc" -eq 0 ] && [ "$m" = "700 600 " ] && [ ! -s "$T/err" ]; then echo "ok   a new data directory is 0700, data.mdb 0600"
else bad "a new data directory is 0700, data.mdb 0600" "exit $rc, modes '$m', stderr: $(cat "$T/err")"; fi
chmod 755 "$T/modes/d"
"$A" --data "$T/modes/d" -q -e "SHOW STREAMS;" </dev/null >/dev/null 2>"$T/err"
if grep -qF "ares: storage $T/modes/d: the data directory $T/modes/d has mode 0755, open to group or others, who can read the stream logs and the state; chmod 700 $T/modes/d" "$T/err"
then echo "ok   an open data directory is warned about"
else sed 's/^/    /' "$T/err" >&2; bad "an open data directory is warned about" "no warning"; fi
# a secret file others can read is refused, as ssh refuses such a key
head -c 32 /dev/urandom | base64 >"$T/loose-secret"
chmod 644 "$T/loose-secret"
expect_err "a secret file of mode 0644" \
    "secret file $T/loose-secret has mode 0644: it is open to group or others, so it is refused; chmod 600 $T/loose-secret" \
    --connect 127.0.0.1:1 --secret-file "$T/loose-secret" -e "SHOW NODES;"

# ------------------------------------------------------------------ where planner and engine errors point
# (issue 16, item 8) The column counts from the start of the input line, not
# of the statement, and the caret sits under the named token, for the 2nd
# and 3rd statements of a line and after a multi-line statement, in -e
# text, a -f file, piped stdin and, below, over --connect.

# caret_ok FILE TOKEN: the first caret in FILE points at TOKEN
caret_ok() {
    awk -v tok="$2" '/^error: / && !done { getline src; getline car; done = 1
        i = index(car, "^"); if (i > 0 && substr(src, i, length(tok)) == tok) ok = 1 }
        END { exit !ok }' "$1"
}
# expect_caret LABEL POSITION TOKEN ARGS...: exit 1, stderr says POSITION
# ("line L, column C: msg") and the caret points at TOKEN
expect_caret() {
    label=$1 pos=$2 tok=$3
    shift 3
    rc=0
    "$A" "$@" <"${STDIN:-/dev/null}" >"$T/out" 2>"$T/err" || rc=$?
    if [ "$rc" -ne 1 ]; then
        sed 's/^/    /' "$T/err" >&2
        bad "$label" "exit $rc, expected 1"
    elif ! grep -qF -- "$pos" "$T/err"; then
        sed 's/^/    /' "$T/err" >&2
        bad "$label" "stderr lacks '$pos'"
    elif ! caret_ok "$T/err" "$tok"; then
        sed 's/^/    /' "$T/err" >&2
        bad "$label" "the caret is not under '$tok'"
    else
        echo "ok   $label: $(grep -m 1 -F -- "$pos" "$T/err")"
    fi
}

BIDS="CREATE STREAM bids (auction BIGINT, price DOUBLE, ts TIMESTAMP) WITH (timestamp='ts');"
BIDS2="CREATE STREAM bids (auction BIGINT,
  price DOUBLE, ts TIMESTAMP) WITH (timestamp='ts');"
Q1="CREATE QUERY q1 AS SELECT auction FROM bids;"
# caret_cases RUN...: every case, through "RUN SQL" (a function that runs ares-sql)
caret_cases() {
    how=$1
    $how "$how: 2nd statement of a line" "line 1, column 119: unknown column 'xx'" "xx = 1" \
        "$BIDS SELECT auction FROM bids WHERE xx = 1;"
    $how "$how: 3rd statement of a line" "line 1, column 165: unknown column 'yy'" "yy)" \
        "$BIDS $Q1 CREATE QUERY q2 AS SELECT COUNT(yy) FROM bids;"
    $how "$how: after a multi-line statement, same line" "line 2, column 85: unknown column 'xx'" "xx = 1" \
        "$BIDS2 SELECT auction FROM bids WHERE xx = 1;"
    $how "$how: the line after a multi-line statement" "line 3, column 71: cannot compare" "auction = 'a'" \
        "$BIDS2
$Q1 SELECT 1 FROM bids WHERE auction = 'a';"
    $how "$how: a multi-line statement after another" "line 3, column 5: unknown column 'pricez'" "pricez" \
        "$BIDS SELECT auction,
  1 +
    pricez FROM bids;"
    $how "$how: an engine error, 2nd on a line" "line 1, column 133: query 'q1' already exists" "CREATE QUERY q1" \
        "$BIDS $Q1 $Q1"
}
by_e() { l=$1 p=$2 k=$3; shift 3; expect_caret "$l" "$p" "$k" --memory -e "$1"; }
by_f() { l=$1 p=$2 k=$3; printf '%s\n' "$4" >"$T/script.sql"; expect_caret "$l" "$T/script.sql: $p" "$k" --memory -f "$T/script.sql"; }
by_stdin() { l=$1 p=$2 k=$3; printf '%s\n' "$4" >"$T/script.sql"; STDIN="$T/script.sql" expect_caret "$l" "$p" "$k" --memory; }
caret_cases by_e
caret_cases by_f
caret_cases by_stdin

# --connect: the coordinator plans each statement from its own text; its
# positions come back and point into the client's input
rm -rf "$T/coord"
"$ARES_BUILD/ares-node" --name c1 --domain a --listen 127.0.0.1:0 --data "$T/coord" --coordinator \
    --secret-file "$SECRET" >/dev/null 2>"$T/c1.log" &
pid=$!
n=0 cport=""
while [ -z "$cport" ] && [ "$n" -lt 100 ]; do
    cport=$(sed -n 's/.* ares-node c1 (.* listening on [^ ]*:\([0-9]*\), data in.*/\1/p' "$T/c1.log" | head -n 1)
    [ -n "$cport" ] || sleep 0.05
    n=$((n + 1))
done
# each case on a fresh catalog: drop what the previous one made
by_connect() {
    "$A" --connect "127.0.0.1:$cport" --secret-file "$SECRET" -q \
        -e "DROP QUERY IF EXISTS q1; DROP QUERY IF EXISTS q2; DROP STREAM IF EXISTS bids;" </dev/null >/dev/null 2>&1
    l=$1 p=$2 k=$3
    shift 3
    expect_caret "$l" "$p" "$k" --connect "127.0.0.1:$cport" --secret-file "$SECRET" -e "$1"
}
# (items 9 and 10) what the message says, and where options' errors point
msg_cases() {
    how=$1
    $how "$how: an unknown aggregate" "line 1, column 104: unknown function 'stddev' (known: count, sum," "STDDEV(" \
        "$BIDS SELECT auction, STDDEV(price) FROM bids GROUP BY auction;"
    $how "$how: a select-list alias in the same list" \
        "line 1, column 109: unknown column 'a': a select-list alias cannot be referenced" "a + 1" \
        "$BIDS SELECT auction AS a, a + 1 FROM bids;"
    $how "$how: SET alone" "line 1, column 4: unexpected end of input, expected identifier (SET name = value; settings: parallelism," ";" \
        "SET;"
    $how "$how: a bad SET value" "line 2, column 17: placement must be" "'bogus'" \
        "SHOW STREAMS;
SET placement = 'bogus';"
    $how "$how: an unknown option" "line 1, column 110: unknown query option 'colour'" "colour" \
        "$BIDS CREATE QUERY q2 WITH (colour = 'red') AS SELECT auction FROM bids;"
}
msg_cases by_e
by_e "by_e: a source of an unknown kind" "line 3, column 14: source 'kafka://x/y' must be" "'kafka://x/y'" \
    "SHOW STREAMS;
  CREATE STREAM s (ts TIMESTAMP, k BIGINT) WITH (timestamp = 'ts',
    source = 'kafka://x/y');"
by_e "by_e: an input format" "line 1, column 118: format 'xml' is not an input format" "'xml'" \
    "SHOW STREAMS; CREATE STREAM s (ts TIMESTAMP, k BIGINT) WITH (timestamp = 'ts', source = 'file:///dev/null', format = 'xml');"
by_e "by_e: a sink that cannot be created" "line 1, column 116: cannot open sink file" "'file://$T/nosuch/q.csv'" \
    "$BIDS CREATE QUERY q WITH (sink = 'file://$T/nosuch/q.csv') AS SELECT auction FROM bids;"
by_e "by_e: a sink format" "line 1, column 145: unknown sink format 'parquet'" "'parquet'" \
    "$BIDS CREATE QUERY q WITH (sink = 'file:///dev/null', format = 'parquet') AS SELECT auction FROM bids;"
printf 'ts,k\n1000,1.0\n' | "$A" --memory -e "CREATE STREAM s (ts TIMESTAMP, k INT) WITH (timestamp = 'ts');" \
    --ingest s >/dev/null 2>"$T/err"
if grep -qF "line 2: column 'k': '1.0' is not an INT" "$T/err"; then echo "ok   a/an before a type name"
else sed 's/^/    /' "$T/err" >&2; bad "a/an before a type name" "stderr lacks \"is not an INT\""; fi
"$A" --memory --format table -e "$BIDS DESCRIBE bids;" </dev/null >"$T/out" 2>&1
if grep -q 'auction' "$T/out" && ! grep -q 'NULL' "$T/out"; then echo "ok   DESCRIBE leaves empty notes empty"
else sed 's/^/    /' "$T/out" >&2; bad "DESCRIBE leaves empty notes empty" "NULL in a note"; fi

# the settings a SET that does not parse lists are those SHOW SETTINGS shows
names=$("$A" --memory --format csv -e "SHOW SETTINGS;" </dev/null | tail -n +2 | cut -d, -f1 | paste -sd, - | sed 's/,/, /g')
"$A" --memory -e "SET;" </dev/null >/dev/null 2>"$T/err"
if [ -n "$names" ] && grep -qF "(SET name = value; settings: $names)" "$T/err"; then echo "ok   SET; lists the settings: $names"
else sed 's/^/    /' "$T/err" >&2; bad "SET; lists the settings" "not those of SHOW SETTINGS: $names"; fi

if [ -n "$cport" ]; then
    caret_cases by_connect # the bare SELECTs are push queries: planned with a prefix there
    msg_cases by_connect
    by_connect "by_connect: a file sink" "line 1, column 116: sink 'file:///tmp/x.csv': a cluster writes socket sinks only" \
        "'file:///tmp/x.csv'" "$BIDS CREATE QUERY q WITH (sink = 'file:///tmp/x.csv') AS SELECT auction FROM bids;"
    by_connect "by_connect: an ft option" "line 2, column 27: ft must be" "'sometimes'" "$BIDS
CREATE QUERY q WITH (ft = 'sometimes') AS SELECT auction FROM bids;"
else
    bad "--connect carets" "the coordinator did not start"
fi
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=""

# ------------------------------------------------------------------ every page damaged in turn
# LMDB keeps no page checksums: storage walks (and trial-writes) every page in
# a child process at open, and the engine checks the catalog's entry count,
# so a damaged page is a clean error, never a crash or a silently lost catalog.
pages=$(($(wc -c <"$T/base/data.mdb") / 4096))
yes garbage | head -c 4096 >"$T/page"
crashes="" lost="" errors=0
p=2
while [ "$p" -lt "$pages" ]; do
    fresh
    dd if="$T/page" of="$T/c/data.mdb" bs=4096 seek="$p" conv=notrunc 2>/dev/null
    rc=0
    "$A" --data "$T/c" -q --format csv -e "$CHECK" </dev/null >"$T/out" 2>"$T/err" || rc=$?
    if [ "$rc" -ge 128 ]; then crashes="$crashes $p"
    elif [ "$rc" -ne 0 ]; then errors=$((errors + 1))
    elif ! grep -q '^ev,' "$T/out" || ! grep -q '^q,' "$T/out"; then lost="$lost $p"
    fi
    p=$((p + 1))
done
echo "page sweep: $pages pages, $errors clean errors, crashes at [$crashes ], silent loss at [$lost ]"
[ -z "$crashes" ] || bad "damaged pages crash ares-sql (pages$crashes)"
[ -z "$lost" ] || bad "damaged pages lose the catalog silently (pages$lost)"

if [ -n "$FAILED" ]; then
    echo "t_engine_errors: failed:$FAILED" >&2
    exit 1
fi
echo "t_engine_errors: all clean errors"
