#!/bin/sh
# t_crash.sh: kill -9 the engine in the middle of a large input, restart it
# until it finishes, and check that every standing query's sink holds exactly
# the rows of an uninterrupted run: none lost, none duplicated (issue 3).
#
# Input: two file sources, ev (2M rows) and aa (5k rows), read by ares-sql
# itself (WITH source = 'file://...'), so a restart resumes each from its
# committed byte position.  Queries: a tumbling aggregate, a hopping one with
# COUNT(DISTINCT) and two tasks, a session window, and a windowed join; each
# writes a file sink (CSV, JSON lines for the hopping one), which a restart
# cuts back to its committed length.
#
# The setup script uses IF NOT EXISTS, so every run is the same command:
#   ares-sql --data DIR -f setup.sql </dev/null
# The first kill comes very early (while the data directory or the catalog
# is being created), the others at random points of a run, scaled to the
# time of the uninterrupted one.
# CRASH_SEED fixes the delays (printed) to reproduce a failure.
#
# Env: ARES_BUILD (dir with ares-sql and tests/gen_stream), ARES_TMP (private).
set -eu

. "$(dirname "$0")/t_gen.inc"

pid=""
cleanup() {
    if [ -n "$pid" ]; then
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

"$GEN" --seed 5 --rows 2000000 --step 1 --disorder 1000 --keys 100 --skeys 20 --null-pct 2 --header >"$T/ev.csv"
"$GEN" --seed 6 --rows 5000 --step 400 --disorder 1000 --keys 100 --skeys 20 --null-pct 2 --header >"$T/aa.csv"

SINKS="tumble hop sess join"

# setup DIR: the statements, with sinks in DIR
setup() {
    mkdir -p "$1"
    cat >"$1/setup.sql" <<EOF
CREATE STREAM IF NOT EXISTS aa (ts TIMESTAMP, k BIGINT, s TEXT, v BIGINT, d DOUBLE)
    WITH (timestamp = 'ts', watermark = '2 seconds', source = 'file://$T/aa.csv', format = 'csv');
CREATE STREAM IF NOT EXISTS ev (ts TIMESTAMP, k BIGINT, s TEXT, v BIGINT, d DOUBLE)
    WITH (timestamp = 'ts', watermark = '2 seconds', source = 'file://$T/ev.csv', format = 'csv');
CREATE QUERY IF NOT EXISTS tumble WITH (sink = 'file://$1/tumble.csv', format = 'csv') AS
    SELECT k, COUNT(*) AS n, SUM(v) AS sv, SUM(d) AS sd, MAX(d) AS mx, window_start, window_end
    FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;
CREATE QUERY IF NOT EXISTS hop WITH (sink = 'file://$1/hop.csv', format = 'json', parallelism = 2) AS
    SELECT s, COUNT(*) AS n, COUNT(DISTINCT k) AS dk, AVG(v) AS av, window_start
    FROM ev WINDOW HOPPING (SIZE 30 SECONDS, ADVANCE BY 10 SECONDS) GROUP BY s EMIT FINAL;
CREATE QUERY IF NOT EXISTS sess WITH (sink = 'file://$1/sess.csv', format = 'csv') AS
    SELECT k, s, COUNT(*) AS n, MIN(v) AS mn, window_start, window_end
    FROM ev WINDOW SESSION (GAP 2 SECONDS) WHERE k < 20 GROUP BY k, s EMIT FINAL;
CREATE QUERY IF NOT EXISTS j WITH (sink = 'file://$1/join.csv', format = 'csv') AS
    SELECT aa.k AS k, COUNT(*) AS n, SUM(ev.v) AS sv, window_start
    FROM aa WINDOW TUMBLING (SIZE 60 SECONDS) JOIN ev ON aa.k = ev.k WITHIN 1 SECOND GROUP BY aa.k EMIT FINAL;
EOF
}

# start DIR: ares-sql on DIR in the background (pid in $pid)
start() {
    "$A" --data "$1/data" -q -f "$1/setup.sql" </dev/null >>"$1/stdout" 2>>"$1/stderr" &
    pid=$!
}

sizes() {
    for s in $SINKS; do printf ' %s=%s' "$s" "$(wc -c <"$1/$s.csv" 2>/dev/null || echo -)"; done
}

# ------------------------------------------------------------------ the uninterrupted run
setup "$T/ref"
t0=$(date +%s%N)
"$A" --data "$T/ref/data" -q -f "$T/ref/setup.sql" </dev/null >"$T/ref/stdout" 2>"$T/ref/stderr" || {
    cat "$T/ref/stderr" >&2
    fail "the uninterrupted run failed"
}
ref_ms=$((($(date +%s%N) - t0) / 1000000))
echo "uninterrupted run: $ref_ms ms;$(sizes "$T/ref")"

# ------------------------------------------------------------------ kill -9, restart, ...
setup "$T/crash"
seed=${CRASH_SEED:-$$}
# fractions of the uninterrupted run's time: the first kill within its first
# 5 %, then three at 10-25 % more each, so all land before the end
delays=$(awk -v seed="$seed" -v t="$ref_ms" 'BEGIN { srand(seed); t /= 1000
    d = t * (0.01 + rand() * 0.04); printf "%.2f", d < 0.02 ? 0.02 : d
    for (i = 0; i < 3; i++) printf " %.2f", t * (0.10 + rand() * 0.15) }')
echo "CRASH_SEED=$seed: kill -9 after $delays s"
killed=0
for d in $delays; do
    start "$T/crash"
    sleep "$d"
    kill -9 "$pid" 2>/dev/null || true
    rc=0
    wait "$pid" || rc=$?
    pid=""
    if [ "$rc" -eq 137 ]; then
        killed=$((killed + 1))
        echo "killed after $d s;$(sizes "$T/crash")"
    elif [ "$rc" -eq 0 ]; then
        echo "the run finished before the kill at $d s"
        break
    else
        cat "$T/crash/stderr" >&2
        fail "ares-sql exited $rc before the kill at $d s"
    fi
done
[ "$killed" -ge 3 ] || fail "only $killed runs were killed mid-way: the input is too small for this machine"

# Restart until a run finishes (each one resumes where the last commit was).
n=0
while :; do
    n=$((n + 1))
    [ "$n" -le 5 ] || fail "no run finished after 5 restarts"
    rc=0
    "$A" --data "$T/crash/data" -q -f "$T/crash/setup.sql" </dev/null >>"$T/crash/stdout" 2>>"$T/crash/stderr" || rc=$?
    [ "$rc" -eq 0 ] && break
    cat "$T/crash/stderr" >&2
    fail "restart $n exited $rc"
done
echo "restarted and finished;$(sizes "$T/crash")"
if [ -s "$T/crash/stderr" ]; then
    cat "$T/crash/stderr" >&2
    fail "the runs wrote to stderr"
fi

# ------------------------------------------------------------------ same rows?
check() {
    bad=0
    for s in $SINKS; do
        sort "$T/ref/$s.csv" >"$T/ref/$s.sorted"
        sort "$T/crash/$s.csv" >"$T/crash/$s.sorted"
        nref=$(wc -l <"$T/ref/$s.sorted")
        [ "$nref" -gt 1 ] || fail "$s: the uninterrupted run wrote no rows"
        if cmp -s "$T/ref/$s.sorted" "$T/crash/$s.sorted"; then
            echo "ok   $s: $nref lines, identical $1"
        else
            bad=1
            echo "FAIL $s $1: $(wc -l <"$T/crash/$s.sorted") lines, uninterrupted $nref" >&2
            echo "  lost (only in the uninterrupted run):" >&2
            comm -23 "$T/ref/$s.sorted" "$T/crash/$s.sorted" | head -5 | sed 's/^/    /' >&2
            echo "  extra (only after the crashes):" >&2
            comm -13 "$T/ref/$s.sorted" "$T/crash/$s.sorted" | head -5 | sed 's/^/    /' >&2
            dups=$(uniq -d "$T/crash/$s.sorted" | wc -l)
            echo "  duplicated lines after the crashes: $dups" >&2
        fi
    done
    [ "$bad" -eq 0 ] || fail "sinks differ $1 (CRASH_SEED=$seed)"
}
check "after $killed kills"

# A run on the finished directory, with no statements, adds nothing.
"$A" --data "$T/crash/data" -q </dev/null >"$T/crash/stdout2" 2>"$T/crash/stderr2" || {
    cat "$T/crash/stderr2" >&2
    fail "a run on the finished data directory failed"
}
check "after one more run"
echo "t_crash: identical output after $killed kills"
