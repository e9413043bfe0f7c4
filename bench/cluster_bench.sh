#!/bin/sh
# cluster_bench: the single-node engine's window query on an Ares cluster of
# 1 node and of 3 nodes (ares-node processes on loopback on this machine),
# driven end to end through ares-sql --connect: CSV over the wire to the
# coordinator, to the stream's home node, the exchange between nodes, the
# sink on the coordinator, the rows back to the client.  Prints
#   figure: cluster_rate_1node = N tuples/s
#   figure: cluster_rate_3nodes = N tuples/s
#   figure: cluster_ratio_3_to_1 = X
#   figure: bytes_per_tuple_network = X bytes   (BATCH frame bytes, header
#                                                 included, sent by all nodes / tuples, 3 nodes)
# Usage: bench/cluster_bench.sh BUILD_DIR [TUPLES] (default 2000000; 10000 keys)
set -u
B=$(cd "${1:-build}" && pwd)
TUPLES=${2:-2000000}
KEYS=10000
W=$(mktemp -d /tmp/ares-cbench.XXXXXX)
PIDS=""
cleanup() {
    for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
    sleep 0.3
    for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$W" || exit 1
head -c 32 /dev/urandom | base64 >secret
chmod 600 secret

echo "cluster_bench: generating $TUPLES tuples over $KEYS keys"
# as bench/engine_bench.c: 100000 tuples per second of event time, k uniform
# among 10000 keys, v a double with two decimals, a 1 s watermark delay
awk -v n="$TUPLES" -v keys="$KEYS" 'BEGIN { srand(42); for (i = 0; i < n; i++)
    printf "%.0f,%d,%.2f\n", 1700000000000 + int(i / 100), int(rand() * keys), (int(rand() * 200001) - 100000) / 100 }' >data.csv

DDL="CREATE STREAM s (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts', watermark = '1 second'); SET parallelism = 3; SET placement = 'round-robin';"
Q="SELECT k, COUNT(*), SUM(v), MAX(v) FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;"

port_of() {
    _pi=0
    while [ $_pi -lt 100 ]; do
        _pp=$(sed -n "s/.* ares-node $1 (.* listening on [^ ]*:\([0-9]*\), data in.*/\1/p" "$1.log" | head -n 1)
        [ -n "$_pp" ] && { echo "$_pp"; return 0; }
        sleep 0.05
        _pi=$((_pi + 1))
    done
    echo "cluster_bench: node $1 did not start" >&2
    exit 1
}

# run NNODES: sets RATE (tuples/s); leaves the nodes' logs in run$NNODES/
run() {
    mkdir -p "run$1" && cd "run$1" || exit 1
    "$B/ares-node" --name c0 --domain d0 --listen 127.0.0.1:0 --data c0 --coordinator --secret-file ../secret >/dev/null 2>c0.log &
    pids="$!"
    c=$(port_of c0)
    i=1
    while [ $i -lt "$1" ]; do
        "$B/ares-node" --name "n$i" --domain "d$i" --listen 127.0.0.1:0 --data "n$i" --join "127.0.0.1:$c" \
            --secret-file ../secret >/dev/null 2>"n$i.log" &
        pids="$pids $!"
        port_of "n$i" >/dev/null
        i=$((i + 1))
    done
    PIDS="$PIDS $pids"
    i=0
    while [ "$("$B/ares-sql" --connect "127.0.0.1:$c" --secret-file ../secret -e 'SHOW NODES;' | grep -c ',ALIVE,')" -lt "$1" ]; do
        sleep 0.1
        i=$((i + 1))
        [ $i -lt 100 ] || { echo "cluster_bench: nodes did not join" >&2; exit 1; }
    done
    "$B/ares-sql" --connect "127.0.0.1:$c" --secret-file ../secret -q -e "$DDL" || exit 1
    t0=$(date +%s%N)
    "$B/ares-sql" --connect "127.0.0.1:$c" --secret-file ../secret -q -e "$Q" --ingest s --end <../data.csv >out.csv || exit 1
    t1=$(date +%s%N)
    kill -TERM $pids 2>/dev/null
    wait $pids 2>/dev/null
    rows=$(($(wc -l <out.csv) - 1))
    echo "cluster_bench: $1 node(s): $TUPLES tuples in $(((t1 - t0) / 1000000)) ms, $rows result rows" >&2
    RATE=$(awk -v n="$TUPLES" -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f\n", n / (ns / 1e9) }')
    cd .. || exit 1
}

run 1
r1=$RATE
run 3
r3=$RATE
bytes=$(cat run3/*.log | sed -n 's/.*stats: .* batch_bytes_out=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
[ "$(tail -n +2 run1/out.csv | sort | md5sum)" = "$(tail -n +2 run3/out.csv | sort | md5sum)" ] ||
    echo "cluster_bench: WARNING: 1-node and 3-node outputs differ" >&2
echo "figure: cluster_rate_1node = $r1 tuples/s"
echo "figure: cluster_rate_3nodes = $r3 tuples/s"
awk -v a="$r3" -v b="$r1" 'BEGIN { printf "figure: cluster_ratio_3_to_1 = %.3f\n", a / b }'
awk -v b="$bytes" -v n="$TUPLES" 'BEGIN { printf "figure: bytes_per_tuple_network = %.2f bytes\n", b / n }'
echo "cluster_bench: $(nproc) cores; all nodes and the client share them"
