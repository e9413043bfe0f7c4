#!/bin/sh
# t_engine_file_source.sh: file sources (WITH source = 'file://...') across
# runs of ares-sql on one data directory.
#   1. CSV and JSON-lines sources give the same windows; a last line without
#      a newline counts.
#   2. A run on a finished directory reads nothing and emits nothing.
#   3. A file that grows after its end was reached: the next run must not
#      emit a (window, key) a second time (EMIT FINAL: one row per window
#      and group).
# Every check runs; the failures are listed at the end.
# Env: ARES_BUILD (dir with ares-sql), ARES_TMP (private temp dir).
set -u

A="$ARES_BUILD/ares-sql"
T="$ARES_TMP"
export LC_ALL=C
FAILED=""

bad() {
    echo "FAIL $*" >&2
    FAILED="$FAILED
  $1"
}

# run LABEL DIR SQL: one ares-sql run that must exit 0 quietly
run() {
    rc=0
    "$A" --data "$2" -q -e "$3" </dev/null >"$T/out" 2>"$T/err" || rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$T/err" ]; then
        sed 's/^/    /' "$T/err" >&2
        bad "$1" "ares-sql exited $rc"
        return 1
    fi
    return 0
}

# setup NAME FORMAT: the stream over $T/NAME.FORMAT and a query into $T/NAME.out
setup() {
    echo "CREATE STREAM IF NOT EXISTS s (ts TIMESTAMP, k BIGINT, v DOUBLE)
              WITH (timestamp = 'ts', watermark = '1 second', source = 'file://$T/$1.$2', format = '$2');
          CREATE QUERY IF NOT EXISTS q WITH (sink = 'file://$T/$1.out', format = 'csv') AS
              SELECT k, COUNT(*) AS n, SUM(v) AS sv, window_start FROM s
              WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;"
}

# ------------------------------------------------------------------ 1. CSV and JSON
printf 'ts,k,v\n1000,1,0.5\n2000,2,1.5\n12000,1,2\n13000,1,-1\n25000,3,4' >"$T/a.csv"
printf '{"ts":1000,"k":1,"v":0.5}\n{"k":2,"ts":2000,"v":1.5}\n{"ts":"1970-01-01T00:00:12Z","k":1,"v":2}\n{"ts":13000,"k":1,"v":-1}\n{"ts":25000,"k":3,"v":4}' >"$T/a.json"
want=$(printf '1,1,0.5,1970-01-01T00:00:00.000Z\n1,2,1,1970-01-01T00:00:10.000Z\n2,1,1.5,1970-01-01T00:00:00.000Z\n3,1,4,1970-01-01T00:00:20.000Z')
for f in csv json; do
    if run "$f source" "$T/d_$f" "$(setup a "$f")"; then
        got=$(tail -n +2 "$T/a.out" | sort)
        if [ "$got" = "$want" ]; then echo "ok   $f source: every window, the last line without a newline too"
        else printf '%s\n' "$got" >&2; bad "$f source" "wrong rows (above)"; fi
        mv "$T/a.out" "$T/a.$f.out"
    fi
done

# ------------------------------------------------------------------ 2. a finished directory
cp "$T/a.csv.out" "$T/a.out"
if run "rerun" "$T/d_csv" "$(setup a csv)"; then
    if cmp -s "$T/a.out" "$T/a.csv.out"; then echo "ok   a run on a finished directory adds nothing"
    else diff "$T/a.csv.out" "$T/a.out" >&2; bad "rerun" "the sink changed"; fi
fi

# ------------------------------------------------------------------ 3. the file grows after its end
# How far windows are closed is kept per aggregate task, so rows appended to a
# file source after its end are late for windows already emitted (not emitted
# twice), and new windows still work.
printf 'ts,k,v\n1000,1,1\n2000,1,1\n3000,2,1\n' >"$T/g.csv"
if run "grow 1" "$T/d_grow" "$(setup g csv)"; then
    printf '4000,1,1\n15000,1,1\n' >>"$T/g.csv"
    if run "grow 2" "$T/d_grow" "$(setup g csv)"; then
        dups=$(tail -n +2 "$T/g.out" | awk -F, '{ print $1 "," $4 }' | sort | uniq -d)
        if [ -z "$dups" ]; then echo "ok   a grown file source emits no window twice"
        else
            sed 's/^/    /' "$T/g.out" >&2
            bad "a grown file source emits windows twice" "(k, window_start) twice: $dups"
        fi
    fi
fi

if [ -n "$FAILED" ]; then
    echo "t_engine_file_source: failed:$FAILED" >&2
    exit 1
fi
echo "t_engine_file_source: all passed"
