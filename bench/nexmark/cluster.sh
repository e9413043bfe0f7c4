#!/bin/sh
# cluster.sh: NEXMark on a cluster of 3 ares-node processes (3 failure
# domains, on this machine's loopback), each query with SET parallelism = 3,
# the events through `ares-sql --connect ... --ingest` as a user would send
# them.  Prints, per query,
#   figure: nexmark_qN_3nodes = N events/s   (wall clock, all events / time)
# with the CPU the three nodes used (user + sys from /proc) and events per
# cpu-second beside it: the per-core figure, since the three nodes and the
# client share this machine's cores.  Every query's rows must equal the
# single-node engine's on the same events (which check.sh holds to sqlite3).
#
#   cluster.sh [--build DIR] [--events N] [--seed N] [--queries "0 1 ..."]
set -eu
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD="$ROOT/build"
EVENTS=500000
SEED=1
QUERIES="0 1 2 3 4 5 7 8"
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
    case "$1" in
    --build) BUILD=$(cd "$2" && pwd) ;;
    --events) EVENTS=$2 ;;
    --seed) SEED=$2 ;;
    --queries) QUERIES=$2 ;;
    *) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
    shift 2
done
T=$(mktemp -d /tmp/ares-nexmark-cluster.XXXXXX)
PIDS=""
cleanup() {
    for p in $PIDS; do kill -TERM "$p" 2>/dev/null || true; done
    sleep 0.3
    for p in $PIDS; do kill -KILL "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cp "$BUILD/ares-sql" "$BUILD/ares-node" "$T/"
head -c 32 /dev/urandom | base64 >"$T/secret"
chmod 600 "$T/secret"
"$BUILD/bench/nexmark_gen" --seed "$SEED" --events "$EVENTS" >"$T/events.csv" 2>"$T/gen.log" || { cat "$T/gen.log" >&2; exit 1; }
EVENTS=$(($(wc -l <"$T/events.csv") - 1))
echo "nexmark on 3 nodes: $EVENTS events, $(nproc) cores, ares $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"

port_of() {
    i=0
    while [ $i -lt 200 ]; do
        p=$(sed -n "s/.* ares-node $1 (.* listening on [^ ]*:\([0-9]*\), data in.*/\1/p" "$2/$1.log" | head -n 1)
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.05
        i=$((i + 1))
    done
    echo "cluster.sh: node $1 did not start" >&2
    exit 1
}
# jiffies of user + sys of a process (fields 14 and 15 of /proc/PID/stat)
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

for q in $QUERIES; do
    W="$T/q$q"
    mkdir -p "$W"
    "$T/ares-sql" --memory -q --format csv -f "$HERE/stream.sql" -f "$HERE/q$q.sql" --ingest nexmark \
        <"$T/events.csv" >"$W/single.csv" || { echo "cluster.sh: q$q failed on one node" >&2; exit 1; }
    "$T/ares-node" --name c0 --domain d0 --listen 127.0.0.1:0 --data "$W/c0" --coordinator --secret-file "$T/secret" \
        >/dev/null 2>"$W/c0.log" &
    nodes="$!"
    c=$(port_of c0 "$W")
    for i in 1 2; do
        "$T/ares-node" --name "n$i" --domain "d$i" --listen 127.0.0.1:0 --data "$W/n$i" --join "127.0.0.1:$c" \
            --secret-file "$T/secret" >/dev/null 2>"$W/n$i.log" &
        nodes="$nodes $!"
        port_of "n$i" "$W" >/dev/null
    done
    PIDS="$PIDS $nodes"
    S="$T/ares-sql --connect 127.0.0.1:$c --secret-file $T/secret"
    i=0
    while [ "$($S -e 'SHOW NODES;' | grep -c ',ALIVE,')" -lt 3 ]; do
        sleep 0.1
        i=$((i + 1))
        [ $i -lt 100 ] || { echo "cluster.sh: nodes did not join" >&2; exit 1; }
    done
    $S -q -f "$HERE/stream.sql" -e "SET parallelism = 3;" || exit 1
    c0=0
    for p in $nodes; do c0=$((c0 + $(cpu_of "$p"))); done
    t0=$(date +%s%N)
    $S -q --format csv -f "$HERE/q$q.sql" --ingest nexmark <"$T/events.csv" >"$W/cluster.csv" 2>"$W/err" ||
        { cat "$W/err" >&2; echo "cluster.sh: q$q failed on 3 nodes" >&2; exit 1; }
    t1=$(date +%s%N)
    c1=0
    for p in $nodes; do c1=$((c1 + $(cpu_of "$p"))); done
    kill -TERM $nodes 2>/dev/null || true
    wait $nodes 2>/dev/null || true
    sort "$W/single.csv" >"$W/a"
    sort "$W/cluster.csv" >"$W/b"
    if ! cmp -s "$W/a" "$W/b"; then
        echo "cluster.sh: q$q on 3 nodes differs from one node ($(wc -l <"$W/b") vs $(wc -l <"$W/a") lines)" >&2
        diff "$W/a" "$W/b" | head -5 >&2
        exit 1
    fi
    ms=$(((t1 - t0) / 1000000))
    [ "$ms" -gt 0 ] || ms=1
    hz=$(getconf CLK_TCK)
    cpu_ms=$(((c1 - c0) * 1000 / hz))
    [ "$cpu_ms" -gt 0 ] || cpu_ms=1
    printf 'figure: nexmark_q%s_3nodes = %d events/s  (%d.%03d s wall; the 3 nodes used %d.%03d s cpu: %d events per cpu-second; %d result rows equal to one node'"'"'s)\n' \
        "$q" $((EVENTS * 1000 / ms)) $((ms / 1000)) $((ms % 1000)) $((cpu_ms / 1000)) $((cpu_ms % 1000)) \
        $((EVENTS * 1000 / cpu_ms)) $(($(wc -l <"$W/a") - 1))
done
