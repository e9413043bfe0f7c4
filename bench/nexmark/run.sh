#!/bin/sh
# run.sh: NEXMark throughput of each query on a single node, in events/s per
# core, printed as `figure: nexmark_qN_single = N events/s`.
#
#   run.sh [--build DIR] [--events N] [--event-rate R] [--seed N] [--runs N]
#          [--queries "0 1 2 ..."] [--data FILE]
#
# nexmark_gen writes the events once (not timed), as one interleaved CSV file;
# each run is then one whole `ares-sql --memory -f stream.sql -f qN.sql
# --ingest nexmark < events.csv > /dev/null`, timed from start to exit (the
# engine's start-up, parsing, every window and the output included).
# events/s = all generated events (persons, auctions and bids, as Flink's
# nexmark counts its source) / wall time; the engine runs on one thread, so
# that is also events/s per core.  Each query runs --runs times (default 3)
# and the best run counts: other work on the machine only slows a run down.
# The CPU time (user + sys) of the best run is printed beside it, with
# events per cpu-second: more than the wall-clock figure when other work
# shares the cores, never much less (the engine keeps to one thread).
set -eu
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD="$ROOT/build"
EVENTS=2000000
EVENT_RATE=10000
SEED=1
RUNS=3
QUERIES="0 1 2 3 4 5 7 8"
DATA=""

usage() {
    sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || usage
    case "$1" in
    --build) BUILD=$(cd "$2" && pwd) ;;
    --events) EVENTS=$2 ;;
    --event-rate) EVENT_RATE=$2 ;;
    --seed) SEED=$2 ;;
    --runs) RUNS=$2 ;;
    --queries) QUERIES=$2 ;;
    --data) DATA=$2 ;;
    *) usage ;;
    esac
    shift 2
done

T=$(mktemp -d /tmp/ares-nexmark-run.XXXXXX)
trap 'rm -rf "$T"' EXIT INT TERM
# a private copy of the binary: a rebuild during the run must not change it
cp "$BUILD/ares-sql" "$T/ares-sql"
A="$T/ares-sql"
[ -n "$DATA" ] || DATA="$T/events.csv"
if [ ! -s "$DATA" ]; then
    "$BUILD/bench/nexmark_gen" --seed "$SEED" --events "$EVENTS" --event-rate "$EVENT_RATE" >"$DATA" 2>"$T/gen.log" ||
        { cat "$T/gen.log" >&2; exit 1; }
fi
EVENTS=$(($(wc -l <"$DATA") - 1))
echo "nexmark: $EVENTS events ($(($(wc -c <"$DATA") / 1048576)) MiB of CSV), best of $RUNS runs, $(nproc) cores," \
    "ares-sql $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"

# cpu_ms FILE: user + sys of the children, in ms, from the output of `times`
# (which must run in this shell, not in a subshell, to see them)
cpu_ms() { awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }' "$1"; }
now_ns() { date +%s%N; }

for q in $QUERIES; do
    best=""
    for r in $(seq "$RUNS"); do
        times >"$T/times0"
        t0=$(now_ns)
        if ! "$A" --memory -q --format csv -f "$HERE/stream.sql" -f "$HERE/q$q.sql" --ingest nexmark \
            <"$DATA" >/dev/null 2>"$T/err" || [ -s "$T/err" ]; then
            cat "$T/err" >&2
            echo "run.sh: q$q failed" >&2
            exit 1
        fi
        t1=$(now_ns)
        times >"$T/times1"
        ms=$(((t1 - t0) / 1000000))
        [ "$ms" -gt 0 ] || ms=1
        if [ -z "$best" ] || [ "$ms" -lt "$best" ]; then
            best=$ms
            cpu=$(($(cpu_ms "$T/times1") - $(cpu_ms "$T/times0")))
        fi
    done
    [ "$cpu" -gt 0 ] || cpu=1
    printf 'figure: nexmark_q%s_single = %d events/s  (%d.%03d s wall; %d.%03d s cpu: %d events per cpu-second)\n' \
        "$q" $((EVENTS * 1000 / best)) $((best / 1000)) $((best % 1000)) $((cpu / 1000)) $((cpu % 1000)) \
        $((EVENTS * 1000 / cpu))
done
