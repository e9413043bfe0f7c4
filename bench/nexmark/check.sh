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
# 5. q2 runs once more from JSON lines; then every query at once, as
#    standing queries with file sinks and parallelism 3, in one ares-sql.
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

# oracle Q: sqlite3's answer to query Q, normalised, in $T/qQ.want.n
oracle() {
    printf '.headers on\n.mode list\n.separator ,\n.nullvalue ""\n' | cat - "$HERE/q$1.oracle.sql" |
        sqlite3 -batch -bail "$T/oracle.db" >"$T/q$1.want" || return 1
    norm "$T/q$1.want" >"$T/q$1.want.n"
}

# consolidate FILE: a changelog (op first: +I, -U, +U, -D, as a table's
# SUBSCRIBE or sink writes it) into the rows it leaves, header first: +I and
# +U add a row, -U and -D take the same row away.  Fails on a row taken away
# that was not there, on an unknown op, and on a change that repeats the row
# it replaces (-U r then +U r: a change that changes nothing).
consolidate() {
    awk 'BEGIN { FS = OFS = "," }
        NR == 1 { sub(/^op,/, ""); print; next }
        {
            op = $1
            row = substr($0, length(op) + 2)
            if (op == "+U" && prev == row) { printf "line %d: +U repeats the row it replaces: %s\n", NR, row; bad = 1 }
            prev = op == "-U" ? row : ""
            if (op == "+I" || op == "+U") n[row]++
            else if (op == "-U" || op == "-D") {
                if (--n[row] < 0) { printf "line %d: %s of a row not there: %s\n", NR, op, row; bad = 1 }
            } else { printf "line %d: op %s\n", NR, op; bad = 1 }
        }
        END { for (r in n) for (i = 0; i < n[r]; i++) print r; exit bad }' "$1"
}

# compare LABEL Q GOT SECONDS: ares-sql's output GOT against the oracle's for
# query Q (a changelog, whose header starts with op, consolidated first)
compare() {
    label=$1 want="$T/q$2.want.n"
    if head -n 1 "$3" | grep -q '^op,'; then
        consolidate "$3" >"$3.c" || {
            grep '^line ' "$3.c" | head -n 5 | sed 's/^/    /' >&2
            failed "$label (its changelog)"
            return
        }
        set -- "$1" "$2" "$3.c" "${4:-}"
    fi
    norm "$3" >"$3.n"
    nwant=$(($(wc -l <"$want") - 1))
    ngot=$(($(wc -l <"$3.n") - 1))
    if [ "$nwant" -le 0 ]; then
        failed "$label (sqlite3 found no rows: the check tests nothing)"
    elif cmp -s "$want" "$3.n"; then
        echo "ok   $label: $ngot rows${4:+ (ares-sql $4 s)}"
    else
        echo "$label: ares-sql printed $ngot rows, sqlite3 $nwant; first differences (< sqlite3, > ares-sql):" >&2
        diff "$want" "$3.n" | grep '^[<>]' | head -n 10 | sed 's/^/    /' >&2
        failed "$label"
    fi
}

# ares LABEL OUT ARGS... <input: one ares-sql run, which must exit 0 and
# print nothing on stderr; returns 1 (the failure noted) otherwise
ares() {
    label=$1 out=$2
    shift 2
    rc=0
    "$A" -q "$@" >"$out" 2>"$out.err" || rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$out.err" ]; then
        sed 's/^/    /' "$out.err" >&2
        failed "$label (ares-sql exited $rc)"
        return 1
    fi
}

# 1. Each query alone, as a push query printing CSV.
RUN_QUERIES=""
for q in $QUERIES; do
    [ -f "$HERE/q$q.sql" ] || { failed "q$q (no $HERE/q$q.sql)"; continue; }
    oracle "$q" || { failed "q$q (sqlite3)"; continue; }
    RUN_QUERIES="$RUN_QUERIES $q"
    t0=$(now)
    ares "q$q" "$T/q$q.got" --memory --format csv -f "$HERE/stream.sql" -f "$HERE/q$q.sql" \
        --ingest nexmark <"$T/events.csv" || continue
    compare "q$q" "$q" "$T/q$q.got" "$(secs "$t0" "$(now)")"
done

# 2. q2 again from JSON lines.
case " $RUN_QUERIES " in
*" 2 "*)
    ares "q2 json" "$T/q2-json.got" --memory --format csv -f "$HERE/stream.sql" -f "$HERE/q2.sql" \
        --ingest nexmark --input-format json <"$T/events.json" &&
        compare "q2 from JSON lines" 2 "$T/q2-json.got" ;;
esac

# 3. Every query at once, as standing queries with file sinks and three
# tasks per operator (exchanges between the tasks of joins and aggregates).
# A pipeline (q4: derived streams and tables, then SUBSCRIBE of the last)
# runs its statements as they are, and its last table goes to the file sink
# as a changelog (SELECT * FROM t EMIT CHANGES).
script="SET parallelism = 3;"
for q in $RUN_QUERIES; do
    if grep -q '^SUBSCRIBE ' "$HERE/q$q.sql"; then
        last=$(sed -n 's/^SUBSCRIBE \([a-z0-9_]*\);.*/\1/p' "$HERE/q$q.sql")
        script="$script
$(grep -v -e '^--' -e '^SUBSCRIBE ' "$HERE/q$q.sql")
CREATE QUERY q${q}_sink WITH (sink = 'file://$T/q$q.sink', format = 'csv') AS SELECT * FROM $last EMIT CHANGES;"
        continue
    fi
    script="$script
CREATE QUERY q$q WITH (sink = 'file://$T/q$q.sink', format = 'csv', parallelism = 3) AS
$(grep -v '^--' "$HERE/q$q.sql" | sed 's/;[[:space:]]*$//');"
done
if [ -n "$RUN_QUERIES" ] &&
    ares "standing queries" "$T/standing.out" --data "$T/data" -f "$HERE/stream.sql" -e "$script" \
        --ingest nexmark <"$T/events.csv"; then
    for q in $RUN_QUERIES; do compare "q$q standing, parallelism 3" "$q" "$T/q$q.sink"; done
fi

if [ -n "$FAILED" ]; then
    echo "nexmark check: FAILED:$FAILED (seed $SEED, $EVENTS events, event rate $EVENT_RATE)" >&2
    [ -n "$KEEP" ] || echo "  rerun with --keep DIR to keep the events and both outputs" >&2
    exit 1
fi
echo "nexmark check: every query agrees with sqlite3"
