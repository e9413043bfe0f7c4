#!/bin/sh
# Peak RSS of a standing query's catch-up with offset = 'earliest' (issue 19,
# section 3): the same tumbling-window query over a stream's log of 1M rows,
# then of 4M; bounded memory means about the same figure (the difference is
# the log pages LMDB maps in as it reads, file-backed).  Short (seconds).
# Usage: sh bench/offset_catchup.sh [BUILD_DIR]   (default: build)
set -eu
BUILD=$(cd "${1:-build}" && pwd)
T=$(mktemp -d /tmp/ares-offset-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts')"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k EMIT FINAL"
for x in 1 4; do
    awk -v n=$((x * 1000000)) -v st=$((4 / x)) 'BEGIN { for (i = 0; i < n; i++) print i * st "," i % 50 "," i % 13 }' >"$T/in.csv"
    "$BUILD/ares-sql" --data "$T/d$x" -q -e "$EV" --ingest ev <"$T/in.csv" >/dev/null
    /usr/bin/time -f "%M" -o "$T/rss$x" "$BUILD/ares-sql" --data "$T/d$x" \
        -e "CREATE QUERY q WITH (offset = 'earliest', sink = 'file://$T/out$x.csv', format = 'csv') AS $Q" >/dev/null 2>&1
    echo "figure: offset_earliest_catchup_rss_${x}x = $(($(tail -n 1 "$T/rss$x") / 1024)) MiB ($((x * 1000000)) rows, $(($(wc -l <"$T/out$x.csv") - 1)) windows)"
done
