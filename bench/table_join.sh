#!/bin/sh
# Stream-table joins (issue 19, section 2): ROWS stream rows (default 4M)
# joined with a table of KEYS keys (default 1M, loaded first with 2 changes
# a key), three ways side by side on the embedded engine:
#   baseline   the stream's rows through a standing query without a join
#   current    LEFT JOIN with a table without event time (its current row)
#   versioned  LEFT JOIN as of the row's time (both sides have event time)
# Each run has its own data directory: the table is loaded (--ingest; its
# last change, of a key the stream never has, is dated after every stream
# row, so the table's watermark lets the versioned join answer each row at
# once, as a table that goes on changing does), the query created, then the
# stream ingested from a file (--ingest) under
# /usr/bin/time; the figure is ROWS over that run's wall time.  The two
# joins' sinks must hold ROWS rows each, and the same rows (the table
# changes in time order, so as-of and current agree at the end).
# Usage: sh bench/table_join.sh [BUILD_DIR] [ROWS] [KEYS]   (default: build 4000000 1000000)
set -eu
BUILD=$(cd "${1:-build}" && pwd)
ROWS=${2:-4000000}
KEYS=${3:-1000000}
T=$(mktemp -d /tmp/ares-tjoin-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
A="$BUILD/ares-sql"
# the table: every key twice (the second change at a later time), times below the stream's
awk -v keys="$KEYS" 'BEGIN { for (r = 0; r < 2; r++) for (k = 0; k < keys; k++)
    printf "%d,%d,name%d_%d,%d\n", r * keys + k, k, k, r, (k * 7 + r) % 1000
    printf "%d,-1,last,0\n", 2 * keys + 2 * '"$ROWS"' }' >"$T/t.csv"
# the stream: times after the table's, keys uniform over KEYS and a tenth more (no row: NULLs)
awk -v n="$ROWS" -v keys="$KEYS" 'BEGIN { srand(17); for (i = 0; i < n; i++)
    printf "%d,%d,%d\n", 2 * keys + i, int(rand() * keys * 1.1), i }' >"$T/s.csv"

TV="CREATE TABLE t (ts BIGINT, k BIGINT, name TEXT, price BIGINT, PRIMARY KEY (k)) WITH (timestamp = 'ts')"
TC="CREATE TABLE t (ts BIGINT, k BIGINT, name TEXT, price BIGINT, PRIMARY KEY (k))"
SS="CREATE STREAM s (ts BIGINT, k BIGINT, q BIGINT) WITH (timestamp = 'ts')"
J="SELECT s.ts, s.k, s.q, t.name, t.price FROM s LEFT JOIN t ON s.k = t.k"
B="SELECT s.ts, s.k, s.q, s.q + 1 AS name, s.q - 1 AS price FROM s WHERE s.q >= 0"

# run NAME TABLE_DDL SELECT: secs (the stream's ingest)
run() {
    "$A" --data "$T/$1" -q -e "$2;" --ingest t <"$T/t.csv" >/dev/null
    "$A" --data "$T/$1" -q -e "$SS; CREATE QUERY q WITH (sink = 'file://$T/$1.csv', format = 'csv') AS $3;" >/dev/null
    /usr/bin/time -f "%e" -o "$T/$1.time" "$A" --data "$T/$1" -q --ingest s <"$T/s.csv" >/dev/null
    secs=$(tail -n 1 "$T/$1.time")
    n=$(($(wc -l <"$T/$1.csv") - 1))
    [ "$n" -eq "$ROWS" ] || { echo "$1: the sink holds $n rows, not $ROWS" >&2; exit 1; }
}
echo "stream rows: $ROWS; table keys: $KEYS ($((2 * KEYS)) changes)"
run baseline "$TC" "$B"
base=$secs
run current "$TC" "$J"
cur=$secs
run versioned "$TV" "$J"
ver=$secs
tail -n +2 "$T/current.csv" | sort >"$T/c.sorted"
tail -n +2 "$T/versioned.csv" | sort | cmp -s - "$T/c.sorted" || { echo "the two joins' rows differ" >&2; exit 1; }
nulls=$(grep -c ',,$' "$T/c.sorted" || true)
echo "rows without a table row (NULLs): $nulls"
awk -v n="$ROWS" -v b="$base" -v c="$cur" -v v="$ver" 'BEGIN {
    printf "figure: tjoin_baseline_rows_per_s = %.0f rows/s\n", n / b
    printf "figure: tjoin_current_rows_per_s = %.0f rows/s\n", n / c
    printf "figure: tjoin_versioned_rows_per_s = %.0f rows/s\n", n / v
    printf "figure: tjoin_current_vs_baseline = %.2f x\n", b / c
    printf "figure: tjoin_versioned_vs_baseline = %.2f x\n", b / v }'
