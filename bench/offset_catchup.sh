#!/bin/sh
# Peak RSS of a standing query's catch-up with offset = 'earliest' (issue 19,
# section 3): the same tumbling-window query over a stream's log of 1M rows,
# then of 4M, embedded, then on a cluster; bounded memory means about the
# same figure (the difference is
# the log pages LMDB maps in as it reads, file-backed).  Short (seconds).
# Usage: sh bench/offset_catchup.sh [BUILD_DIR]   (default: build)
set -eu
BUILD=$(cd "${1:-build}" && pwd)
T=$(mktemp -d /tmp/ares-offset-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts')"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k EMIT FINAL"
for x in ${OFFSET_SIZES:-1 4}; do
    awk -v n=$((x * 1000000)) -v x=$x 'BEGIN { for (i = 0; i < n; i++) print int(i * 4 / x) "," i % 50 "," i % 13 }' >"$T/in.csv"
    "$BUILD/ares-sql" --data "$T/d$x" -q -e "$EV" --ingest ev <"$T/in.csv" >/dev/null
    /usr/bin/time -f "%M" -o "$T/rss$x" "$BUILD/ares-sql" --data "$T/d$x" \
        -e "CREATE QUERY q WITH (offset = 'earliest', sink = 'file://$T/out$x.csv', format = 'csv') AS $Q" >/dev/null 2>&1
    echo "figure: offset_earliest_catchup_rss_${x}x = $(($(tail -n 1 "$T/rss$x") / 1024)) MiB ($((x * 1000000)) rows, $(($(wc -l <"$T/out$x.csv") - 1)) windows)"
done

# On a cluster: three ares-node processes in three domains, the stream's home
# on n1 and the query's windows on the others (round-robin, parallelism 2),
# so that the home's replay sends its rows over the network.  The home
# replays in steps that wait while a peer's overflow has not drained or too
# much is in flight to it (cluster/node_task.c): its anonymous memory during
# the catch-up (sampled every 10 ms; LMDB's map is file-backed) should not
# grow with the log.  Also the catch-up's rate, end to end: a push query with
# offset = 'earliest' over the ended stream, from its start until the client
# has every window.  OFFSET_SIZES sets the sizes (millions of rows; 1 4).
B=$BUILD
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
PIDS=""
trap 'for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT
port_of() {
    for _i in $(seq 100); do
        _p=$(sed -n "s/.* ares-node $1 (.* listening on [^ ]*:\([0-9]*\), data in.*/\1/p" "$2/$1.log" | head -n 1)
        [ -n "$_p" ] && { echo "$_p"; return 0; }
        sleep 0.05
    done
    echo "offset_catchup: node $1 did not start" >&2
    exit 1
}
for x in ${OFFSET_SIZES:-1 4}; do
    D="$T/c$x"
    mkdir -p "$D"
    "$B/ares-node" --name c0 --domain rack-a --listen 127.0.0.1:0 --data "$D/c0" --coordinator --secret-file "$T/secret" 2>"$D/c0.log" &
    PIDS="$PIDS $!"
    CA="127.0.0.1:$(port_of c0 "$D")"
    for m in n1:rack-b n2:rack-c; do
        "$B/ares-node" --name "${m%%:*}" --domain "${m#*:}" --listen 127.0.0.1:0 --data "$D/${m%%:*}" --join "$CA" \
            --secret-file "$T/secret" 2>"$D/${m%%:*}.log" &
        PIDS="$PIDS $!"
        eval "PID_${m%%:*}=$!"
        port_of "${m%%:*}" "$D" >/dev/null
    done
    sql() { "$B/ares-sql" --connect "$CA" --secret-file "$T/secret" -q "$@"; }
    for _i in $(seq 100); do [ "$(sql -e 'SHOW NODES;' 2>/dev/null | grep -c ',ALIVE,')" = 3 ] && break; sleep 0.1; done
    sql -e "CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts', home = 'n1');
            SET placement = 'round-robin'; SET parallelism = 2;" >/dev/null
    awk -v n=$((x * 1000000)) -v x=$x 'BEGIN { for (i = 0; i < n; i++) print int(i * 4 / x) "," i % 50 "," i % 13 }' |
        sql --ingest ev --end >/dev/null
    base=$(awk '/^RssAnon:/ { print $2 }' "/proc/$PID_n1/status")
    # the home's anonymous memory (heap, queues: not LMDB's file-backed map),
    # sampled every 10 ms during the catch-up
    (peak=0; while kill -0 "$PID_n1" 2>/dev/null && [ ! -e "$D/done" ]; do
        r=$(awk '/^RssAnon:/ { print $2 }' "/proc/$PID_n1/status"); [ "$r" -gt "$peak" ] && peak=$r
        echo "$peak" >"$D/peak"; sleep 0.01; done) &
    SAMPLER=$!
    t0=$(date +%s%N)
    sql -e "SET offset = 'earliest'; $Q;" >"$D/out.csv"
    t1=$(date +%s%N)
    touch "$D/done"
    wait "$SAMPLER"
    line=$(grep -m 1 "offset = 'earliest'): read" "$D/n1.log")
    rows=$(echo "$line" | sed -n 's/.* read \([0-9]*\) logged rows .* in \([0-9.]*\) ms,.*/\1/p')
    ms=$(echo "$line" | sed -n 's/.* read \([0-9]*\) logged rows .* in \([0-9.]*\) ms,.*/\2/p')
    echo "figure: offset_earliest_cluster_home_anon_${x}x = $(($(cat "$D/peak") / 1024)) MiB (peak during the catch-up; $((base / 1024)) MiB before it; the home read $rows rows in $ms ms)"
    echo "figure: offset_earliest_cluster_catchup_rate_${x}x = $(awk -v r=$((x * 1000000)) -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", r / (ns / 1e9) }') rows/s (a push query from the log's start to its end, $(($(wc -l <"$D/out.csv") - 1)) windows at the client)"
    for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
    wait 2>/dev/null
    PIDS=""
done
