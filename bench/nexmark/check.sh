#!/bin/sh
# check.sh: every NEXMark query of bench/nexmark, run by ares-sql over seeded
# events, against sqlite3 computing the same query as a batch over the same
# events (bench/nexmark/qN.oracle.sql, the reference semantics).
#
#   check.sh [--build DIR] [--seed N] [--events N] [--event-rate R]
#            [--queries "0 1 2 ..."] [--keep DIR]
#
# 1. nexmark_gen writes the events (one interleaved CSV, as the queries read
#    it); awk checks what the oracle relies on: the 1 : 3 : 46 mix, and no
#    event more than 3 s behind an earlier one (less than the 4 s watermark
#    delay, so no event is late and the batch answer is the stream's answer).
# 2. sqlite3 imports the same bytes (a table from stream.sql, the views of
#    schema.oracle.sql) and runs qN.oracle.sql.
# 3. ares-sql runs stream.sql + qN.sql with --ingest nexmark; it must exit 0
#    and print nothing on stderr.
# 4. Both outputs, header first, rows sorted, decimals normalised to 15
#    significant digits (what sqlite3 prints), must be equal byte for byte.
#    q2 runs once more from JSON lines.
#
# Every query runs even when one fails; the exit status is 1 if any failed.
set -eu
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD="$ROOT/build"
SEED=1
EVENTS=200000
EVENT_RATE=2000
QUERIES="0 1 2 3 4 5 7 8"
KEEP=""

usage() {
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case "$1" in
    --build) BUILD=$(cd "$2" && pwd) ;;
    --seed) SEED=$2 ;;
    --events) EVENTS=$2 ;;
    --event-rate) EVENT_RATE=$2 ;;
    --queries) QUERIES=$2 ;;
    --keep) KEEP=$2 ;;
    *) usage ;;
    esac
    shift 2
done

A="$BUILD/ares-sql"
GEN="$BUILD/bench/nexmark_gen"
[ -x "$A" ] || { echo "check.sh: no $A (make build)" >&2; exit 2; }
[ -x "$GEN" ] || { echo "check.sh: no $GEN (make $BUILD/bench/nexmark_gen)" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "check.sh: sqlite3 is not installed" >&2; exit 2; }

if [ -n "$KEEP" ]; then
    mkdir -p "$KEEP"
    T=$(cd "$KEEP" && pwd)
else
    T=$(mktemp -d /tmp/ares-nexmark.XXXXXX)
    trap 'rm -rf "$T"' EXIT INT TERM
fi

now() { date +%s.%N | cut -c1-14; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

FAILED=""
failed() {
    echo "FAIL $1" >&2
    FAILED="$FAILED $1"
}

# A private copy of the binary: a rebuild during the run must not change it.
cp "$A" "$T/ares-sql"
A="$T/ares-sql"

# ------------------------------------------------------------------ events
echo "nexmark: seed $SEED, $EVENTS events, $EVENT_RATE events/s of event time"
if [ "$EVENT_RATE" -lt 500 ]; then
    echo "note: q3 and q4 bound their joins in event time for 500 events/s and more (README.md);" \
        "at $EVENT_RATE they can miss matches that sqlite3 finds" >&2
fi
GEN_ARGS="--seed $SEED --events $EVENTS --event-rate $EVENT_RATE"
# shellcheck disable=SC2086
"$GEN" $GEN_ARGS >"$T/events.csv" 2>"$T/gen.log" || { cat "$T/gen.log" >&2; exit 1; }
# shellcheck disable=SC2086
"$GEN" $GEN_ARGS --format json >"$T/events.json" 2>/dev/null

if awk -F, -v n="$EVENTS" '
    NR == 1 { next }
    {
        c[$1]++
        t = $(NF - 1)
        if (NR > 2 && mx - t > lag) lag = mx - t
        if (NR == 2 || t > mx) mx = t
    }
    END {
        want_p = int(n / 50) + (n % 50 > 0)
        want_a = int(n / 50) * 3 + (n % 50 > 3 ? 3 : (n % 50 > 1 ? n % 50 - 1 : 0))
        if (c["person"] != want_p || c["auction"] != want_a || c["person"] + c["auction"] + c["bid"] != n) {
            printf "mix: %d persons, %d auctions, %d bids; expected %d, %d, %d\n",
                c["person"], c["auction"], c["bid"], want_p, want_a, n - want_p - want_a
            exit 1
        }
        if (lag > 3000) { printf "an event is %d ms behind an earlier one (at most 3000)\n", lag; exit 1 }
        printf "ok   generator: %d persons, %d auctions, %d bids, at most %d ms out of order\n",
            c["person"], c["auction"], c["bid"], lag
    }' "$T/events.csv"; then :; else
    failed generator
fi

# ------------------------------------------------------------------ the oracle's database
# The table: stream.sql's declaration with sqlite3's types (and no WITH).
{
    grep -v '^--' "$HERE/stream.sql" |
        sed -e 's/CREATE STREAM/CREATE TABLE/' -e 's/BIGINT/INTEGER/g' -e 's/TIMESTAMP/INTEGER/g' \
            -e 's/^) WITH (.*$/);/'
    cat "$HERE/schema.oracle.sql"
    echo ".import --csv --skip 1 '$T/events.csv' nexmark"
} | sqlite3 -batch -bail "$T/oracle.db" || { echo "check.sh: sqlite3 could not load the events" >&2; exit 1; }

# norm FILE: header, then the rows sorted, decimals printed as sqlite3 prints them
norm() {
    head -n 1 "$1"
    tail -n +2 "$1" | awk -F, -v OFS=, '{
        for (i = 1; i <= NF; i++)
            if ($i ~ /^-?[0-9]*\.[0-9]+([eE][-+]?[0-9]+)?$/ || $i ~ /^-?[0-9]+[eE][-+]?[0-9]+$/)
                $i = sprintf("%.15g", $i)
        print
    }' | sort
}

# check LABEL Q ARES-ARGS...: run query Q both ways and compare
check() {
    label=$1 q=$2
    shift 2
    t0=$(now)
    printf '.headers on\n.mode list\n.separator ,\n.nullvalue ""\n' | cat - "$HERE/q$q.oracle.sql" |
        sqlite3 -batch -bail "$T/oracle.db" >"$T/$label.want" || { failed "$label (sqlite3)"; return 0; }
    t1=$(now)
    rc=0
    "$A" --memory -q --format csv -f "$HERE/stream.sql" -f "$HERE/q$q.sql" --ingest nexmark "$@" \
        >"$T/$label.got" 2>"$T/$label.err" || rc=$?
    t2=$(now)
    if [ "$rc" -ne 0 ] || [ -s "$T/$label.err" ]; then
        sed 's/^/    /' "$T/$label.err" >&2
        failed "$label (ares-sql exited $rc)"
        return 0
    fi
    norm "$T/$label.want" >"$T/$label.want.n"
    norm "$T/$label.got" >"$T/$label.got.n"
    nwant=$(($(wc -l <"$T/$label.want.n") - 1))
    ngot=$(($(wc -l <"$T/$label.got.n") - 1))
    if [ "$nwant" -le 0 ]; then
        failed "$label (sqlite3 found no rows: the check tests nothing)"
    elif cmp -s "$T/$label.want.n" "$T/$label.got.n"; then
        echo "ok   $label: $ngot rows (ares-sql $(secs "$t1" "$t2") s, sqlite3 $(secs "$t0" "$t1") s)"
    else
        echo "$label: ares-sql printed $ngot rows, sqlite3 $nwant; first differences (< sqlite3, > ares-sql):" >&2
        diff "$T/$label.want.n" "$T/$label.got.n" | grep '^[<>]' | head -n 10 | sed 's/^/    /' >&2
        failed "$label"
    fi
}

for q in $QUERIES; do
    [ -f "$HERE/q$q.sql" ] || { failed "q$q (no $HERE/q$q.sql)"; continue; }
    check "q$q" "$q" <"$T/events.csv"
done
case " $QUERIES " in
*" 2 "*) check "q2-json" 2 --input-format json <"$T/events.json" ;;
esac

if [ -n "$FAILED" ]; then
    echo "nexmark check: FAILED:$FAILED (seed $SEED, $EVENTS events, event rate $EVENT_RATE)" >&2
    [ -n "$KEEP" ] || echo "  rerun with --keep DIR to keep the events and both outputs" >&2
    exit 1
fi
echo "nexmark check: every query agrees with sqlite3"
