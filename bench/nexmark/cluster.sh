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
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD="$ROOT/build"
EVENTS=500000
SEED=1
# q4 is a pipeline of a derived stream and two tables (q4.sql), and a
# cluster refuses tables yet (docs/sql.md, CREATE TABLE)
QUERIES="0 1 2 3 5 7 8"
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
LIB_NAME=cluster.sh
LIB_SCRATCH=ares-nexmark-cluster
set -- --build "$BUILD"
. "$ROOT/bench/experiments/lib.sh" # B, W, the cluster helpers; everything started is killed at exit
T=$W
"$B/bench/nexmark_gen" --seed "$SEED" --events "$EVENTS" >"$T/events.csv" 2>"$T/gen.log" || { cat "$T/gen.log" >&2; exit 1; }
EVENTS=$(($(wc -l <"$T/events.csv") - 1))
echo "nexmark on 3 nodes: $EVENTS events, $(nproc) cores, ares $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"

# jiffies of user + sys of a process (fields 14 and 15 of /proc/PID/stat)
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

for q in $QUERIES; do
    new_cluster "q$q"
    "$B/ares-sql" --memory -q --format csv -f "$HERE/stream.sql" -f "$HERE/q$q.sql" --ingest nexmark \
        <"$T/events.csv" >"$CD/single.csv" || die "q$q failed on one node"
    start_node c0 d0 --coordinator
    start_node n1 d1
    start_node n2 d2
    wait_alive 3
    sqlc -f "$HERE/stream.sql" -e "SET parallelism = 3;" || die "CREATE STREAM"
    nodes=$CLUSTER_PIDS
    c0=0
    for p in $nodes; do c0=$((c0 + $(cpu_of "$p"))); done
    t0=$(date +%s%N)
    sqlc --format csv -f "$HERE/q$q.sql" --ingest nexmark --end <"$T/events.csv" >"$CD/cluster.csv" 2>"$CD/err" ||
        { cat "$CD/err" >&2; die "q$q failed on 3 nodes"; }
    t1=$(date +%s%N)
    c1=0
    for p in $nodes; do c1=$((c1 + $(cpu_of "$p"))); done
    stop_cluster
    sort "$CD/single.csv" >"$CD/a"
    sort "$CD/cluster.csv" >"$CD/b"
    cmp -s "$CD/a" "$CD/b" ||
        { diff "$CD/a" "$CD/b" | head -5 >&2; die "q$q on 3 nodes differs from one node ($(wc -l <"$CD/b") vs $(wc -l <"$CD/a") lines)"; }
    ms=$(((t1 - t0) / 1000000))
    [ "$ms" -gt 0 ] || ms=1
    hz=$(getconf CLK_TCK)
    cpu_ms=$(((c1 - c0) * 1000 / hz))
    [ "$cpu_ms" -gt 0 ] || cpu_ms=1
    printf 'figure: nexmark_q%s_3nodes = %d events/s  (%d.%03d s wall; the 3 nodes used %d.%03d s cpu: %d events per cpu-second; %d result rows equal to one node'"'"'s)\n' \
        "$q" $((EVENTS * 1000 / ms)) $((ms / 1000)) $((ms % 1000)) $((cpu_ms / 1000)) $((cpu_ms % 1000)) \
        $((EVENTS * 1000 / cpu_ms)) $(($(wc -l <"$CD/a") - 1))
done
