#!/bin/sh
# `make experiments`: the paper's experiments (issues 8 and 17) on the
# testbed (bench/testbed/lib.sh): for each placement strategy a fresh cluster
# of 9 ares-node processes on loopback, in 3 failure domains (c0 n1 n2 |
# n3 n4 n5 | n6 n7 n8), every node in a CPU cgroup of its own with a hard
# quota: EXP_NODE_CPUS each (default: the nine share EXP_TOTAL_CPUS = 1.0 of
# the machine's CPUs), n2, n5 and n8 at EXP_NODE_CPUS / EXP_SLOW_FACTOR
# (default 50, the paper's lambda).  No node sleeps: each tells placement
# the capacity its quota gives it.  Every node holds its frames to another
# domain (--link-delay-ms), and each domain is in a network namespace of
# its own where the machine allows (EXP_NETNS).  The stream has
# EXP_PARTITIONS (3) partitions, homed at n1, n4 and n7 (EXP_HOME), one in
# each domain: each keeps its partition's log and runs the query's source
# task for it.  The coordinator c0 runs the sink; each producer sends its
# input straight to its partition's home, which copies its log to another
# domain (EXP_SHADOW=log; with 'input', c0 forwards each chunk to the home
# and a shadow, as until session 11).  The generators, the
# producers (a generator and an `ares-sql --ingest 's#P' --end` per
# partition) and the subscriber run outside the quotas.  One standing query, placed by the strategy under
# test:
#
#   SELECT k, COUNT(*) AS n, MAX(ts) AS last_ts, CAST(window_end AS BIGINT) AS we
#   FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k       (SET parallelism = P)
#
# Input: bench/experiments/exp_tool gen, rows ts,k,v where ts is the
# wall-clock time (ms) at which the generator wrote the row (event time =
# ingest time); with --part P/N each of the N generators writes every N-th
# row of the same sequence, piped into `ares-sql --connect --ingest 's#P'`.  A subscriber
# (`ares-sql --connect -e 'SUBSCRIBE q;'`) feeds `exp_tool stamp`, which
# prefixes each result row with its arrival wall-clock time.
#
# The whole set of measurements runs EXP_RUNS times (3); every strategy is
# measured in each run, one after the other, so that the ratios of a run
# compare configurations measured minutes apart on the same machine.  The
# ratios printed last (nirvana_vs_rr_*, nirvana_vs_ra_*) are the medians of
# the runs' ratios.
#
# Measurements (one machine, one clock: CLOCK_REALTIME on both sides):
#   throughput  EXP_TUPLES rows with a synthetic event time (EXP_EVENT_RATE
#               rows per second of event time; exp_tool gen --rows) written as
#               fast as ares-sql --ingest takes them.  Ingest lands in the
#               stream's log at the home node, and the query reads it at its
#               own pace, so the figure is the processing rate, measured at the
#               subscriber: a result row's n counts the input rows it covers,
#               and the rows of the results that arrive in one wall-clock
#               second are one one-second sample.  Sustained throughput = the
#               mean of the last 10 samples (the paper's "last 10 one-second
#               samples"), up to the second by which 98 % of the rows were
#               in results (after it, the last windows only wait for the
#               stream's end), the first (start-up) second left out.  The run
#               stops when every row is in a result or after EXP_SECONDS.
#   latency     a run with the generator paced at EXP_RATE rows/s for
#               EXP_LAT_SECONDS.  Per result row, latency = arrival time at the
#               subscriber - we (the wall-clock time its window closed: no
#               row of the window can enter later).  It is the time the engine
#               adds after the window could close: watermark, exchange hops
#               (link delay), slowed nodes, queueing.  Histogram in 1 ms
#               buckets over every result row of the windows that closed
#               while input was flowing; p50/p99 and the CDF come from it.
#               A result row that never came (the strategy could not keep
#               up, and the drain gave up) counts as later than any that did:
#               every key has a row in every full window, so the full
#               windows' rows that did not come are known, and a percentile
#               that falls among them is "slow" (at least the drain's
#               horizon, the time from the input's end to the drain's).
#   latency at a high rate: the same at EXP_RATE_HIGH rows/s, the second
#               operating point (figures latency_high_*): at EXP_RATE every
#               strategy keeps up and the window's close dominates; at
#               EXP_RATE_HIGH, a quarter of the sustained throughput the
#               game's placement reaches here, a task on a slowed node
#               queues, as the paper's overloaded default scheduler did.
#               Per window also its first row's latency (what all its rows
#               share: the slice's cut, the watermark's way) and the spread
#               of its rows after it (what differs between the aggregates'
#               nodes and paths): latency_window_first_p50 and
#               latency_window_spread_p50, the medians over the windows.
#   join        the latency run again with an interval self-join ($QJ below,
#               EXP_JOIN=0 skips it): per result pair, arrival time - the later
#               of the two rows' ts (a pair exists once both rows are in).
#   recovery    (issues 7, 17) for each FT_MODES mode and each strategy: the
#               latency run's paced input for EXP_REC_SECONDS, a copy of it
#               kept; after about EXP_FAIL_AT s, EXP_KILL_LEAD_MS before a
#               window (a wall-clock second) closes, every node of domain
#               EXP_FAIL_DOMAIN gets SIGKILL at once (exp_tool killat); auto:
#               d1 or d2, whichever runs more of q's aggregates (then tasks),
#               never d0 (the coordinator's and the stream's home's: these
#               runs start no standby coordinator; bench-recovery measures
#               that case, REC_COORD).
#               Recovery time = from the kill until the output is back at its
#               pre-failure rate: the arrival of the last row of the first
#               window that closes after the kill, or of a later window if
#               that came late too (more than EXP_REC_LATE_MS later after its
#               close than the slowest window before the kill).  The output
#               must equal the embedded engine's on the same input, row for
#               row; a run whose output differs is reported FAILED (its logs
#               kept) and gives no figure.  Also per run: the tasks of q in
#               the failed domain, the replayed rows, and the throughput
#               around the failure (1 s samples counted from the kill).
#               Skipped when the cluster refuses no ft mode (a build without
#               fault tolerance) unless EXP_FORCE_RECOVERY=1.
#   workloads   (issue 17, section 4; EXP_WORKLOADS="wordcount tpch",
#               the default; empty: skipped) the paper's workloads of
#               bench/workloads/, their DDL and standing queries as the files
#               have them, each stream in EXP_PARTITIONS partitions at
#               EXP_HOME, on a fresh cluster per strategy and run, with
#               the aggregation's slots and parallelism:
#                 wordcount  wordcount.sql: lines split into words (CROSS JOIN
#                            UNNEST(split(line, ' '))), COUNT(*) per word in
#                            10 s tumbling windows; EXP_WC_LINES (800 k) lines
#                            of words_gen, 3-12 words each from EXP_WC_VOCAB
#                            (1000) words by a Zipf law of exponent EXP_WC_ZIPF
#                            (1.0: the commonest word is 13 % of all),
#                            EXP_WC_EVENT_RATE (3000) lines per second of event
#                            time (30 k lines a window)
#                 tpch       tpch_join.sql: lineitem JOIN orders on orderkey
#                            WITHIN 3 SECONDS, then per customer and 10 s window:
#                            EXP_TPCH_ORDERS (100 k) orders of tpch_gen, about
#                            4 lineitems each (500 k rows in all), custkey and
#                            partkey Zipf with exponent EXP_TPCH_SKEW (0:
#                            uniform, as dbgen), EXP_TPCH_EVENT_RATE (1000)
#                            orders per second of event time (50 k rows a window)
#               The input is made once (seeded: every strategy and run gets the
#               same rows) and so is the reference, the embedded engine's
#               output on it.  Each run feeds it unpaced, a generator
#               (--part P/N) and an `ares-sql --ingest 'STREAM#P' --end` per
#               partition of each stream, and subscribes to the query.
#               Throughput, measured at the output: a window is complete when
#               the subscriber has every reference row of it, and once it and
#               every earlier window are complete, every input row (of every
#               stream) with an event time before its end has been processed.
#               Sustained throughput = the input rows so accounted for between
#               the first such moment at least 1 s after the input started (the
#               start-up second left out) and the last one before the run ends
#               (all output in, or EXP_WL_SECONDS = 12 s), over the time between
#               them (input lines/s for the word count, orders + lineitems/s for
#               the join), when they are at least 2 s apart; else the rows
#               over the time from the input's start; with no moment, 0 (and, for a ratio against it, a
#               bound: below the first window's rows over the time waited, so
#               the ratio is given as >x).  SHOW QUERIES' rows_in (the sources'
#               reads of the logs) is printed beside it, not used: a source
#               reads ahead of the windows as far as the credits let it.
#               The output must be the reference's, row for row; cut off, it
#               must be part of it (no row wrong, none twice): else the run is
#               FAILED (logs kept, no figure, exit 1).  EXP_ONLY_WORKLOADS=1
#               runs these alone.
#
# Every node has EXP_SLOTS slots (6): 54 for q's 18 tasks and 6 replicas, 18
# in a domain, so that no strategy can put the whole query in the
# coordinator's domain (the default 16 a node let Nirvana and resource-aware
# pack the query next to its source and sink, which no domain failure but
# the coordinator's then touched), and so that once a domain is lost the
# four full-speed nodes left still have room for all 24 players (with 4
# slots, 8 of them had to go to the slowed nodes after every failure, under
# every strategy: a node at 1/50 of a quota cannot keep up even with its
# heartbeats, and its peers took it for dead).
# Every node runs with --dead-ms EXP_DEAD_MS (10000): a node at a small quota
# is runnable only a few milliseconds a period, and while work floods it,
# its loop goes seconds without polling its sockets.  Its peers would take it
# for dead (the recovery lines print the longest stall and such false
# deaths).  A SIGKILLed node is detected at once (its connections close),
# whatever --dead-ms says.
#
# Prints `figure: NAME = VALUE UNIT` lines and the ratios next to the paper's
# claims (the workloads': throughput_WL_STRATEGY_runK and the medians
# nirvana_vs_rr_WL_throughput, nirvana_vs_ra_WL_throughput, WL = wordcount,
# tpch); writes SVG plots (gnuplot; progress-WL.svg: the rows accounted for
# over time) and the figures to EXP_PLOTS (default docs/plots).
#
# Usage: run.sh [--build DIR]   (settings through the environment:)
#   EXP_RUNS=3 EXP_SECONDS=15 EXP_TUPLES=15000000 EXP_EVENT_RATE=100000 EXP_LAT_SECONDS=10 EXP_RATE=20000
#   EXP_RATE_HIGH=500000 (the second latency point; 0: not measured)
#   EXP_KEYS=1000 EXP_PARALLELISM=6 EXP_LINK_DELAY_MS=5
#   EXP_SLOW_FACTOR=50 EXP_TOTAL_CPUS=1.0 EXP_NODE_CPUS=(from EXP_TOTAL_CPUS)
#   EXP_STRATEGIES="nirvana nirvana-no-recovery round-robin resource-aware random"
#   EXP_SLOTS=6 EXP_DEAD_MS=10000
#   EXP_WARMUP_S=6 EXP_SETTLE_S=2 (before each measurement, the query runs on paced input for
#     EXP_WARMUP_S s, then ALTER QUERY q REBALANCE re-places it on what was measured (the game's
#     strategies; the baselines' placement is not the game and stays), then, after a move, until
#     the moved tasks have caught up with the output (30 s at most), and EXP_SETTLE_S s; 0: none)
#   EXP_REBALANCE=0 (rebalance_interval during the measurements; 0: only the warm-up's rebalance)
#   EXP_REBALANCE_THRESHOLD (unset: the engine's rebalance_threshold, 0.2; the game's hysteresis)
#   EXP_NETNS=1 (each domain in a network namespace where root can make one; 0: loopback)
#   EXP_PARTITIONS=3 (the stream's partitions, a generator and a producer each)
#   EXP_HOME=n1,n4,n7 (the partitions' homes: their logs and the query's source tasks)
#   EXP_SHADOW=log (SET shadow before the streams: 'log', each home copies its log to another domain and the
#     producers send straight to the homes; 'input', the coordinator forwards every chunk to a home and a shadow)
#   FT_MODES="replica checkpoint upstream" EXP_REC_SECONDS=15 EXP_FAIL_AT=8 EXP_FAIL_DOMAIN=auto
#   EXP_REC_WAIT_S=15 (how long the output may take to be complete after the input ends)
#   EXP_KILL_LEAD_MS=100 EXP_REC_LATE_MS=250
#   EXP_FORCE_RECOVERY=1 (run the recovery phase even when ft looks unsupported)
#   EXP_ONLY_RECOVERY=1 (only the recovery phase)
#   EXP_WORKLOADS="wordcount tpch" (default; empty skips them) EXP_WL_SECONDS=12 EXP_ONLY_WORKLOADS=1 (only the workloads)
#   EXP_WC_LINES=800000 EXP_WC_EVENT_RATE=3000 EXP_WC_VOCAB=1000 EXP_WC_ZIPF=1.0
#   EXP_TPCH_ORDERS=100000 EXP_TPCH_EVENT_RATE=1000 EXP_TPCH_SKEW=0
#   EXP_PLOTS=docs/plots  KEEP_SCRATCH=1 (keep the logs and raw data)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB_NAME=run.sh LIB_SCRATCH=ares-exp
. "$ROOT/bench/experiments/lib.sh"
. "$ROOT/bench/testbed/lib.sh"
EXP_RUNS=${EXP_RUNS:-3}
EXP_SECONDS=${EXP_SECONDS:-15}
EXP_TUPLES=${EXP_TUPLES:-15000000}
EXP_EVENT_RATE=${EXP_EVENT_RATE:-100000}
EXP_LAT_SECONDS=${EXP_LAT_SECONDS:-10}
EXP_RATE=${EXP_RATE:-20000}
EXP_RATE_HIGH=${EXP_RATE_HIGH:-500000}
EXP_KEYS=${EXP_KEYS:-1000}
EXP_PARALLELISM=${EXP_PARALLELISM:-6}
EXP_SLOW_FACTOR=${EXP_SLOW_FACTOR:-50}
EXP_TOTAL_CPUS=${EXP_TOTAL_CPUS:-1.0}
EXP_NODE_CPUS=${EXP_NODE_CPUS:-$(awk -v t="$EXP_TOTAL_CPUS" -v f="$EXP_SLOW_FACTOR" 'BEGIN { printf "%.4f", t / (6 + 3 / f) }')}
EXP_SLOW_CPUS=$(awk -v c="$EXP_NODE_CPUS" -v f="$EXP_SLOW_FACTOR" 'BEGIN { printf "%.5f", c / f }')
EXP_LINK_DELAY_MS=${EXP_LINK_DELAY_MS:-5}
EXP_STRATEGIES=${EXP_STRATEGIES:-nirvana nirvana-no-recovery round-robin resource-aware random}
EXP_JOIN=${EXP_JOIN:-1}
EXP_DEAD_MS=${EXP_DEAD_MS:-10000}
EXP_SLOTS=${EXP_SLOTS:-6}
EXP_REBALANCE=${EXP_REBALANCE:-0}
EXP_WARMUP_S=${EXP_WARMUP_S:-6}
EXP_SETTLE_S=${EXP_SETTLE_S:-2}
EXP_NETNS=${EXP_NETNS:-1}
EXP_PARTITIONS=${EXP_PARTITIONS:-3}
EXP_HOME=${EXP_HOME:-n1,n4,n7}
# since session 11 the producers send straight to the homes: through the
# coordinator, its node forwarded every chunk and capped every strategy
EXP_SHADOW=${EXP_SHADOW:-log}
FT_MODES=${FT_MODES-replica checkpoint upstream}
EXP_REC_SECONDS=${EXP_REC_SECONDS:-15}
EXP_FAIL_AT=${EXP_FAIL_AT:-8}
EXP_FAIL_DOMAIN=${EXP_FAIL_DOMAIN:-auto}
EXP_KILL_LEAD_MS=${EXP_KILL_LEAD_MS:-100}
EXP_REC_LATE_MS=${EXP_REC_LATE_MS:-250}
EXP_REC_WAIT_S=${EXP_REC_WAIT_S:-15}
# on by default since session 10: a stalled run (a link that waits on
# itself, docs/operations.md) gives no figure and no longer holds up the
# script; EXP_WORKLOADS= skips them
EXP_WORKLOADS=${EXP_WORKLOADS-wordcount tpch}
EXP_WL_SECONDS=${EXP_WL_SECONDS:-12}
EXP_WC_LINES=${EXP_WC_LINES:-800000}
EXP_WC_EVENT_RATE=${EXP_WC_EVENT_RATE:-3000}
EXP_WC_VOCAB=${EXP_WC_VOCAB:-1000}
EXP_WC_ZIPF=${EXP_WC_ZIPF:-1.0}
EXP_TPCH_ORDERS=${EXP_TPCH_ORDERS:-100000}
EXP_TPCH_EVENT_RATE=${EXP_TPCH_EVENT_RATE:-1000}
EXP_TPCH_SKEW=${EXP_TPCH_SKEW:-0}
EXP_PLOTS=${EXP_PLOTS:-$ROOT/docs/plots}
mkdir -p "$EXP_PLOTS"
EXP_PLOTS=$(cd "$EXP_PLOTS" && pwd)
T0=$(date +%s)
FIG="$W/figures.txt"
: >"$FIG"
say() { echo "experiments: $*" >&2; }
figure() { echo "figure: $1 = $2${3:+ $3}" | tee -a "$FIG"; }
tag() { echo "$1" | tr -d -; }
val() { eval "echo \${$1:-}"; }

Q="SELECT k, COUNT(*) AS n, MAX(ts) AS last_ts, CAST(window_end AS BIGINT) AS we FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
# the windowed join: an interval self-join, 10 % of the rows against 10 %
QJ="SELECT a.k, a.ts AS ats, b.ts AS bts FROM s a JOIN s b ON a.k = b.k WITHIN 100 MILLISECONDS WHERE a.v < 100 AND b.v >= 900"

# ---------------------------------------------------------------- the testbed
# one CPU cgroup per node; the slowed ones at 1/EXP_SLOW_FACTOR of the quota
for n in c0 n1 n2 n3 n4 n5 n6 n7 n8; do
    case $n in
    n2 | n5 | n8) tb_group "$n" "$EXP_SLOW_CPUS" ;;
    *) tb_group "$n" "$EXP_NODE_CPUS" ;;
    esac
done
SLOW_PERIOD_MS=$(($(tb_period "$EXP_SLOW_CPUS") / 1000))
# a network namespace per failure domain where the machine allows it
if [ "$EXP_NETNS" = 1 ]; then
    if tb_netns "10.214.$(($$ % 250))" d0 d1 d2; then
        say "each failure domain in a network namespace of its own ($TB_IP_d0, $TB_IP_d1, $TB_IP_d2), joined by a bridge"
    else
        say "no network namespaces here ($TB_WHY): the domains share loopback"
    fi
fi

# paper9 DIR: the paper's 9 workers, 3 domains, one slowed node per domain
paper9() {
    start9 "$1" "--slots $EXP_SLOTS --link-delay-ms $EXP_LINK_DELAY_MS --dead-ms $EXP_DEAD_MS"
}

# setup STRATEGY [FTMODE [QUERY]]: the stream and the query q on the current
# cluster (SETUP_DDL: other streams than s)
setup() {
    ftset=""
    [ -n "${2:-}" ] && ftset="SET ft = '$2'; SET replicas = 1;"
    sqlc -e "SET shadow = '$EXP_SHADOW'; ${SETUP_DDL:-CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts', partitions = $EXP_PARTITIONS, home = '$EXP_HOME');}
             SET parallelism = $EXP_PARALLELISM; SET placement = '$1'; $ftset
             SET rebalance_interval = '$EXP_REBALANCE'; ${EXP_REBALANCE_THRESHOLD:+SET rebalance_threshold = $EXP_REBALANCE_THRESHOLD;}" ||
        die "setup ($1)"
    sqlc -e "CREATE QUERY q AS ${3:-$Q};" || die "CREATE QUERY ($1)"
    sqlc -e "EXPLAIN PLACEMENT q;" >"$CD/placement.csv" || die "EXPLAIN PLACEMENT ($1)"
    grep -q "placement: $1;" "$CD/placement.csv" || { cat "$CD/placement.csv" >&2; die "q not placed by $1"; }
}

# drain: wait until the subscriber's output stops growing (1 s, at most 20 s), stop it
drain() {
    _last=-1 _i=0
    while [ $_i -lt 40 ]; do
        _now=$(wc -c <"$CD/sub.csv")
        [ "$_now" = "$_last" ] && [ $_i -ge 2 ] && break
        _last=$_now
        sleep 0.5
        _i=$((_i + 1))
    done
    kill "$SUBP" $INGP 2>/dev/null
    wait "$SUBP" $INGP 2>/dev/null
    wait "$STAMPP" 2>/dev/null
}

# feed GEN-OPTIONS...: the input into the cluster, a generator and a
# producer per partition of s (exp_tool gen --part P/N, see feed_stream),
# all at once; with FEED_COPY set, partition P's rows are kept in
# $FEED_COPY.P too.  Sets INGP (the producers).
feed() {
    INGP=""
    rm -f "$CD"/gen.err.*
    feed_stream s "$TOOL" gen "$@"
}

# feed_stream STREAM COMMAND...: a generator (COMMAND --part P/N) and a
# producer (ares-sql --ingest 'STREAM#P' --end: each ends its own
# partition) per partition of STREAM, in the background; the generator's
# stderr in $CD/gen.err.STREAM.P.  Adds the producers to INGP.
feed_stream() {
    _fs=$1
    shift
    _fp=0
    while [ $_fp -lt "$EXP_PARTITIONS" ]; do
        _copy=/dev/null
        [ -n "${FEED_COPY:-}" ] && _copy="$FEED_COPY.$_fp"
        "$@" --part "$_fp/$EXP_PARTITIONS" 2>"$CD/gen.err.$_fs.$_fp" | tee "$_copy" |
            "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest "$_fs#$_fp" ${FEED_OPEN:---end} \
                2>"$CD/ingest.err.$_fs.$_fp" &
        INGP="$INGP $!"
        _fp=$((_fp + 1))
    done
    PIDS="$PIDS $INGP"
}

# warm_up [COPY]: the same for every strategy before a measurement: the
# query runs on the measurement's kind of input (WARM_RATE rows/s over the
# partitions, which stay open: EXP_RATE before a paced run, 0 = as fast as
# it goes before the throughput run) for EXP_WARMUP_S s, so that every task and node reports what it
# costs; then ALTER QUERY q REBALANCE, on which the game's strategies
# re-place on the measured costs (a baseline answers that its placement is
# not the game, and stays); then, after a move, until the moved tasks have
# caught up with the output, and EXP_SETTLE_S s more.  Sets
# WARM_END (ms; 0 without a warm-up).  COPY: the warm-up's rows, merged in
# time order, into COPY.
warm_up() {
    WARM_END=0
    [ "$EXP_WARMUP_S" -gt 0 ] 2>/dev/null || return 0
    FEED_OPEN=-q FEED_COPY=${1:-} feed --seconds "$EXP_WARMUP_S" --rate "${WARM_RATE:-$EXP_RATE}" --keys "$EXP_KEYS"
    wait $INGP
    [ -n "${1:-}" ] && sort -t, -k1,1n -m "$1".* >"$1"
    "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -e "ALTER QUERY q REBALANCE;" >"$CD/warmup_rebalance.txt" 2>&1
    # a move hands its state over and the moved tasks catch up with the
    # output (EXPLAIN PLACEMENT: "catching up now"): the measurement starts
    # from the placement's steady state, whatever it moved (30 s at most)
    _cw=0
    while [ $_cw -lt 60 ] && sqlc -e "EXPLAIN PLACEMENT q;" 2>/dev/null | grep -q "catching up now"; do
        sleep 0.5
        _cw=$((_cw + 1))
    done
    [ $_cw -gt 0 ] && say "warm-up: the rebalance's moves caught up within $((_cw * 500)) ms"
    sleep "$EXP_SETTLE_S"
    WARM_END=$(date +%s%3N)
}

# fed: every generator has finished (or its producer has gone)
fed() {
    _fp=0
    while [ $_fp -lt "$EXP_PARTITIONS" ]; do
        [ -s "$CD/gen.err.s.$_fp" ] || { for _x in $INGP; do kill -0 "$_x" 2>/dev/null && return 1; done; }
        _fp=$((_fp + 1))
    done
    return 0
}

# ingest SECONDS RATE [COPY]: the generators into the cluster, RATE rows/s
# in all (and, merged in time order, into the file COPY); sets GEN_START
# GEN_END (ms), GEN_ROWS
ingest() {
    GEN_START=$(date +%s%3N)
    FEED_COPY=${3:-} feed --seconds "$1" --rate "$2" --keys "$EXP_KEYS"
    # the generators stop after SECONDS; ares-sql may wait longer (for the
    # stream's end to be processed): drain stops it
    while ! fed; do sleep 0.1; done
    GEN_END=$(date +%s%3N)
    GEN_ROWS=$(cat "$CD"/gen.err.s.* | sed -n 's/exp_tool gen: \([0-9]*\) rows.*/\1/p' | awk '{ t += $1 } END { print t + 0 }')
    [ -n "${3:-}" ] && sort -t, -k1,1n -m "$3".* >"$3"
    return 0
}

# slow_tasks: tasks of q (sources, sinks aside) on the slowed nodes / all of them
slow_tasks() {
    awk -F, '$3 == "task" && $2 !~ /SOURCE|SINK/ { all++; if ($4 == "n2" || $4 == "n5" || $4 == "n8") s++ }
             END { printf "%d/%d", s, all }' "${1:-$CD/placement.csv}"
}
domains_used() {
    awk -F, '$3 == "task" { d[$5] = 1 } END { n = 0; for (k in d) n++; print n }' "$CD/placement.csv"
}

# node_cpu: "NAME:CPU_MS:THROTTLED_PERIODS ..." of the current cluster's nodes
node_cpu() {
    for _n in c0 n1 n2 n3 n4 n5 n6 n7 n8; do
        # shellcheck disable=SC2046
        set -- $(tb_throttled "$_n")
        printf '%s:%s:%s ' "$_n" "$(tb_cpu_ms "$(eval echo "\$PID_$_n")")" "$2"
    done
}
# cpu_report LABEL BEFORE AFTER: each node's CPU use over the run, as a share
# of its quota, and how many periods it was throttled in
cpu_report() {
    echo "$2" "$3" | awk -v what="$1" -v ms="$4" '{
        n = NF / 2; out = ""
        for (i = 1; i <= n; i++) { split($i, a, ":"); split($(i + n), b, ":");
            out = out sprintf(" %s %.0f ms (%d throttled)", a[1], b[2] - a[2], b[3] - a[3]) }
        print "experiments: " what ": CPU per node over " ms " ms:" out }' >&2
}

# percentiles HIST CDF [MISSING]: p50 p99 (sets p50, p99) and the CDF of a
# histogram "ms count"; MISSING rows that never came count as later than
# every one that did (a percentile among them is "slow")
percentiles() {
    awk -v miss="${3:-0}" '{ t += $2; c[NR] = $2; v[NR] = $1 } END {
            t += miss
            if (!t) { print "- -"; exit }
            a = 0; p50 = p99 = "";
            for (i = 1; i <= NR; i++) { a += c[i]; if (p50 == "" && a >= 0.50 * t) p50 = v[i]; if (p99 == "" && a >= 0.99 * t) p99 = v[i] }
            print (p50 == "" ? "slow" : p50), (p99 == "" ? "slow" : p99) }' "$1" >"$1.pct"
    # (the 0 ms bucket, under 1 ms, is drawn at 0.5 ms on the log scale)
    awk -v miss="${3:-0}" '{ t += $2; c[NR] = $2; v[NR] = $1 } END { t += miss; a = 0; for (i = 1; i <= NR; i++) { a += c[i]; print (v[i] == 0 ? 0.5 : v[i]), a / t } }' "$1" >"$2"
    read -r p50 p99 <"$1.pct"
}

# ---------------------------------------------------------------- one run's measurements
# tp_run STRATEGY RUN: throughput, EXP_TUPLES rows ingested unpaced, measured at the output
tp_run() {
    st=$(tag "$1")
    paper9 "tp_${st}_$2"
    setup "$1"
    figure "tasks_on_slow_nodes_${st}_run$2" "$(slow_tasks)" "tasks"
    figure "domains_used_${st}_run$2" "$(domains_used)" "domains"
    cp "$CD/placement.csv" "$W/placement_$st.csv"
    WARM_RATE=0 warm_up
    subscribe
    say "$1 (run $2): throughput run, $EXP_TUPLES rows ($EXP_EVENT_RATE per second of event time), at most ${EXP_SECONDS} s"
    c0cpu=$(node_cpu)
    GEN_START=$(date +%s%3N)
    feed --rows "$EXP_TUPLES" --event-rate "$EXP_EVENT_RATE" --keys "$EXP_KEYS"
    # until every row is in a result, or EXP_SECONDS
    while :; do
        sleep 0.5
        el=$(($(date +%s%3N) - GEN_START))
        [ "$el" -ge $((EXP_SECONDS * 1000)) ] && { TP_END=cutoff; break; }
        got=$(awk -F, -v w="$WARM_END" 'NR > 1 && $3 ~ /^[0-9]+$/ && $5 > w { t += $3 } END { print t + 0 }' "$CD/sub.csv")
        [ "$got" -ge "$EXP_TUPLES" ] && { TP_END=done; break; }
    done
    _after=$(node_cpu) _ms=$(($(date +%s%3N) - GEN_START))
    cpu_report "$1 (run $2) throughput" "$c0cpu" "$_after" "$_ms"
    # the busiest full-speed node's CPU over the run, of its quota: a run in
    # which none was near its quota was held back by something else (the
    # machine's cores, shared with the generators and producers)
    _busy=$(echo "$c0cpu" "$_after" | awk -v ms="$_ms" -v q="$EXP_NODE_CPUS" '{
        n = NF / 2; m = 0; who = ""
        for (i = 1; i <= n; i++) { split($i, a, ":"); split($(i + n), b, ":")
            if (a[1] ~ /^(n2|n5|n8)$/) continue
            u = (b[2] - a[2]) / (ms * q); if (u > m) { m = u; who = a[1] } }
        printf "%s %.0f", who, 100 * m }')
    _all=$(echo "$c0cpu" "$_after" | awk -v ms="$_ms" '{ n = NF / 2; t = 0
        for (i = 1; i <= n; i++) { split($i, a, ":"); split($(i + n), b, ":"); t += b[2] - a[2] }
        printf "%.2f", t / ms }')
    figure "tp_busiest_node_${st}_run$2" "${_busy#* }" "% of its quota (${_busy% *})"
    [ "${_busy#* }" -lt 90 ] && say "$1 (run $2): no full-speed node was past 90 % of its quota (the busiest: ${_busy% *} at ${_busy#* } %): the nodes used $_all of the machine's $(nproc) cores; a task on a slowed node or the input, not the full-speed nodes, set this run's rate"
    # live re-placement during the run (the game's strategies only)
    sqlc -e "EXPLAIN PLACEMENT q;" >"$CD/placement_end.csv" 2>/dev/null
    mv=$(sed -n 's/.*rebalanced: \([0-9]*\) moves in \([0-9]*\) redeployments.*/\1 \2/p' "$CD/placement_end.csv")
    mvn=${mv%% *}
    figure "rebalance_moves_${st}_run$2" "${mvn:-0}" "moves"
    [ -n "$mv" ] && say "$1 (run $2): rebalanced ${mv%% *} players in ${mv##* } redeployments during the run;" \
        "tasks on the slowed nodes at its end: $(slow_tasks "$CD/placement_end.csv")"
    kill $INGP 2>/dev/null
    wait $INGP 2>/dev/null
    kill "$SUBP" 2>/dev/null
    wait "$SUBP" 2>/dev/null
    wait "$STAMPP" 2>/dev/null
    # one-second samples by arrival: rows of the results that reached the
    # subscriber in that second (a result row's n counts its input rows),
    # up to the second in which 98 % of the rows seen had arrived (after it
    # the last windows wait for the stream's end: a tail, not a rate)
    awk -F, -v s="$GEN_START" -v w="$WARM_END" 'NR > 1 && $3 ~ /^[0-9]+$/ && $5 > w { a[int(($1 - s) / 1000)] += $3; t += $3; if ($1 > m) m = $1 }
        END { last = int((m - s) / 1000); c = 0
              for (k = 0; k <= last; k++) { printf "%d %d\n", k, a[k] + 0; c += a[k]; if (c >= 0.98 * t) break } }' \
        "$CD/sub.csv" >"$W/tp_$st.dat"
    # the last 10 of those one-second samples (the first, a start-up second, left out)
    tp=$(awk 'NR > 1' "$W/tp_$st.dat" | tail -n 10 | awk '{ t += $2; n++ } END { if (n) printf "%.0f", t / n; else print 0 }')
    tot=$(awk -F, -v w="$WARM_END" 'NR > 1 && $3 ~ /^[0-9]+$/ && $5 > w { t += $3; if ($1 > m) m = $1 } END { printf "%d %.0f\n", t, m }' "$CD/sub.csv")
    avg=$(echo "$tot" | awk -v s="$GEN_START" '{ if ($2 > s) printf "%.0f", $1 / (($2 - s) / 1000); else print 0 }')
    say "$1 (run $2): ${tot% *} rows in results ($TP_END), whole-run average $avg rows/s"
    figure "throughput_${st}_run$2" "$tp" "tuples/s"
    figure "throughput_whole_run_${st}_run$2" "$avg" "tuples/s"
    [ "$(wc -l <"$W/tp_$st.dat")" -lt 11 ] &&
        say "$1 (run $2): fewer than 10 one-second samples: the figure is the mean of those there are"
    eval "TP_${st}_$2=$tp TPW_${st}_$2=$avg"
    [ -n "${KEEP_SCRATCH:-}" ] && cp "$CD/sub.csv" "$W/sub_tp_${st}_$2.csv"
}

# median_col K FILE: the median of column K of FILE's lines ("-" for none)
median_col() {
    awk -v k="$1" '{ print $k }' "$2" | sort -n | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'
}

# full_rows: the result rows so far of the full windows of the last ingest
# (1 s windows ending in [GEN_START + 1000, GEN_END])
full_rows() {
    awk -F, -v e="$GEN_END" -v s="$GEN_START" 'NR > 1 && $5 ~ /^[0-9]+$/ && $5 <= e && $5 >= s + 1000 { got++ } END { print got + 0 }' "$CD/sub.csv"
}

# lat_run STRATEGY RUN [RATE KIND]: latency, input paced at RATE rows/s
# (EXP_RATE); KIND "high": the figures latency_high_*, files hist_high_*
lat_run() {
    st=$(tag "$1")
    _rate=${3:-$EXP_RATE} _k=${4:+${4}_}
    _lk=$(echo "${4:-}" | cut -c1 | tr a-z A-Z) # P50_ or HP50_ ...
    paper9 "lat_${_k}${st}_$2"
    setup "$1"
    WARM_RATE=$_rate warm_up
    subscribe
    say "$1 (run $2): latency run, ${EXP_LAT_SECONDS} s at $_rate rows/s"
    c0cpu=$(node_cpu)
    ingest "$EXP_LAT_SECONDS" "$_rate"
    # until every full window's rows are in (a row per key and window), or
    # 20 s: a strategy that falls behind gets that long to deliver
    _want=$(awk -v e="$GEN_END" -v s="$GEN_START" -v keys="$EXP_KEYS" 'BEGIN { nw = int(e / 1000) - int((s + 999) / 1000); print (nw > 0 ? nw * keys : 0) }')
    _wi=0
    while [ $_wi -lt 40 ] && [ "$(full_rows)" -lt "$_want" ]; do
        sleep 0.5
        _wi=$((_wi + 1))
    done
    drain
    SUB_STOP=$(date +%s%3N)
    cpu_report "$1 (run $2) latency at $_rate rows/s" "$c0cpu" "$(node_cpu)" "$(($(date +%s%3N) - GEN_START))"
    # histogram in 1 ms buckets: every result row of a window that closed
    # while input flowed (the windows the end of the input closes are left out)
    awk -F, -v e="$GEN_END" -v s="$GEN_START" 'NR > 1 && $5 ~ /^[0-9]+$/ && $5 <= e && $5 > s { l = $1 - $5; if (l < 0) l = 0; h[l]++ }
        END { for (k in h) print k, h[k] }' "$CD/sub.csv" | sort -n >"$W/hist_${_k}$st.dat"
    # the rows that never came: every key has a row in every full window
    # (1 s windows ending in [s + 1000, e])
    miss=$(($_want - $(full_rows)))
    [ "$miss" -gt 0 ] || miss=0
    percentiles "$W/hist_${_k}$st.dat" "$W/cdf_${_k}$st.dat" "$miss"
    lrate=$(awk -F, -v s="$GEN_START" -v e="$GEN_END" 'NR > 1 && $5 ~ /^[0-9]+$/ && $5 <= e && $5 > s + 1000 { t += $3; w[$5] = 1 }
        END { n = 0; for (k in w) n++; if (n) printf "%.0f", t / n; else print 0 }' "$CD/sub.csv")
    figure "latency_${_k}p50_${st}_run$2" "$p50" "ms"
    figure "latency_${_k}p99_${st}_run$2" "$p99" "ms"
    [ "$miss" -gt 0 ] && say "$1 (run $2): $miss result rows of the full windows never came (counted as later than every one that did; the drain's horizon: $((SUB_STOP - GEN_END)) ms)"
    # where a window's latency goes: its first row (the part every row of it
    # shares: the slice's cut, the watermark's way to the aggregates) and the
    # spread of its rows after that (what differs between the aggregates'
    # nodes and paths); the medians over the windows
    awk -F, -v e="$GEN_END" -v s="$GEN_START" 'NR > 1 && $5 ~ /^[0-9]+$/ && $5 <= e && $5 > s {
            l = $1 - $5; if (!($5 in lo) || l < lo[$5]) lo[$5] = l; if (!($5 in hi) || l > hi[$5]) hi[$5] = l }
        END { for (w in lo) print lo[w], hi[w] - lo[w] }' "$CD/sub.csv" >"$W/wsplit_${_k}$st.dat"
    wsplit="$(median_col 1 "$W/wsplit_${_k}$st.dat") $(median_col 2 "$W/wsplit_${_k}$st.dat")"
    figure "latency_${_k}window_first_p50_${st}_run$2" "${wsplit% *}" "ms"
    figure "latency_${_k}window_spread_p50_${st}_run$2" "${wsplit#* }" "ms"
    figure "latency_${_k}run_throughput_${st}_run$2" "$lrate" "tuples/s"
    [ "$p50" = "-" ] && say "$1 (run $2): no window closed while the input flowed came out within the drain (it never caught up)"
    eval "${_lk}P50_${st}_$2=$p50 ${_lk}P99_${st}_$2=$p99 ${_lk}LB_${st}_$2=$((SUB_STOP - GEN_END))"
}

# join_run STRATEGY RUN: the windowed (interval) join, latency only, paced input
join_run() {
    st=$(tag "$1")
    paper9 "join_${st}_$2"
    setup "$1" "" "$QJ"
    warm_up
    subscribe
    say "$1 (run $2): join latency run, ${EXP_LAT_SECONDS} s at $EXP_RATE rows/s"
    ingest "$EXP_LAT_SECONDS" "$EXP_RATE"
    drain
    # a pair can exist once its later row has entered: latency = arrival - max(ats, bts)
    awk -F, -v e="$GEN_END" -v s="$GEN_START" 'NR > 1 && $3 ~ /^[0-9]+$/ && $3 >= s && $4 >= s { m = $3 > $4 ? $3 : $4; l = $1 - m; if (l < 0) l = 0; h[l]++ }
        END { for (k in h) print k, h[k] }' "$CD/sub.csv" | sort -n >"$W/jhist_$st.dat"
    percentiles "$W/jhist_$st.dat" "$W/jcdf_$st.dat"
    figure "join_latency_p50_${st}_run$2" "$p50" "ms"
    figure "join_latency_p99_${st}_run$2" "$p99" "ms"
    figure "join_pairs_${st}_run$2" "$(($(wc -l <"$CD/sub.csv") - 1))" "rows"
    eval "JP50_${st}_$2=$p50 JP99_${st}_$2=$p99"
}

# ---------------------------------------------------------------- the paper's workloads (issue 17, section 4)
# bench/workloads/: the windowed word count and the TPC-H-like windowed
# join, their DDL and standing queries as the files have them, the streams
# given EXP_PARTITIONS partitions at EXP_HOME.  Their input is made once
# (the generators are seeded: every strategy and run gets the same rows),
# and so is the reference: the embedded engine on that input.
WG="$B/bench/words_gen" TG="$B/bench/tpch_gen"
[ -z "$EXP_WORKLOADS" ] || { [ -x "$WG" ] && [ -x "$TG" ]; } || die "build the generators first: make workloads (or EXP_WORKLOADS=)"
WL_DIR="$ROOT/bench/workloads"
WL_WINDOW_MS=10000 # both queries' tumbling windows (checked below)
# wl_file WL: the workload's SQL file
wl_file() { case $1 in wordcount) echo "$WL_DIR/wordcount.sql" ;; *) echo "$WL_DIR/tpch_join.sql" ;; esac; }
# wl_ddl WL [WITH-EXTRA]: its CREATE STREAMs, each with WITH-EXTRA added
wl_ddl() { sed -n '/^CREATE QUERY/q; /^--/d; p' "$(wl_file "$1")" | sed "s|WITH (timestamp = 'ts')|WITH (timestamp = 'ts'${2:+, $2})|"; }
# wl_query WL: its standing query's SELECT
wl_query() { sed -n '/^CREATE QUERY/,$p' "$(wl_file "$1")" | sed '1s/^CREATE QUERY [a-z_]* AS//'; }
# wl_gen WL [OPTIONS...]: run the workload's generator(s) with the run's sizes
wl_words() { "$WG" --rows "$EXP_WC_LINES" --seed 1 --event-rate "$EXP_WC_EVENT_RATE" --vocab "$EXP_WC_VOCAB" --zipf "$EXP_WC_ZIPF" "$@"; }
wl_tpch() { "$TG" --rows "$EXP_TPCH_ORDERS" --seed 1 --event-rate "$EXP_TPCH_EVENT_RATE" --skew "$EXP_TPCH_SKEW" "$@"; }

# wl_prepare WL: the input ($W/wl/), the reference ($W/ref_WL.csv and
# .sorted) and per window ($W/wl_WL.windows: window_start,rows,covered):
# the reference's rows of that window and the input rows (of every stream)
# with an event time before the window's end
wl_prepare() {
    mkdir -p "$W/wl"
    grep -q "SIZE 10 SECONDS" "$(wl_file "$1")" || die "$(wl_file "$1"): the window is no longer 10 s (WL_WINDOW_MS)"
    case $1 in
    wordcount)
        wl_words >"$W/wl/lines.csv" || die "words_gen"
        "$B/ares-sql" --memory -q --format csv -e "$(wl_ddl wordcount) $(wl_query wordcount)" --ingest lines \
            <"$W/wl/lines.csv" >"$W/ref_$1.csv" || die "embedded word count"
        awk -F, 'FNR > 1 { print $1 }' "$W/wl/lines.csv" >"$W/wl/ts" ;;
    tpch)
        wl_tpch --out-dir "$W/wl" || die "tpch_gen"
        "$B/ares-sql" --memory -q --format csv -e "$(wl_ddl tpch "source = 'file://$W/wl/@.csv', format = 'csv'" |
            awk '/CREATE STREAM orders/ { o = 1 } /CREATE STREAM lineitem/ { o = 0 } { sub("@", o ? "orders" : "lineitem"); print }')
            $(wl_query tpch)" </dev/null >"$W/ref_$1.csv" || die "embedded TPC-H join"
        { awk -F, 'FNR > 1 { print $4 }' "$W/wl/orders.csv"; awk -F, 'FNR > 1 { print $7 }' "$W/wl/lineitem.csv"; } >"$W/wl/ts" ;;
    esac
    tail -n +2 "$W/ref_$1.csv" | sort >"$W/ref_$1.csv.sorted"
    [ "$(wc -l <"$W/ref_$1.csv.sorted")" -gt 10 ] || die "the embedded $1 gave almost no rows: the check would test nothing"
    # window_start is ISO 8601 UTC (2024-01-01T00:00:10.000Z): to epoch ms
    awk -F, -v size="$WL_WINDOW_MS" '
        function iso_ms(t,   y, m, d, era, yoe, doy) {
            y = substr(t, 1, 4) + 0; m = substr(t, 6, 2) + 0; d = substr(t, 9, 2) + 0
            y -= (m <= 2); era = int((y >= 0 ? y : y - 399) / 400); yoe = y - era * 400
            doy = int((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1
            return ((((era * 146097 + yoe * 365 + int(yoe / 4) - int(yoe / 100) + doy - 719468) * 24 + substr(t, 12, 2)) * 60 \
                    + substr(t, 15, 2)) * 60 + substr(t, 18, 2)) * 1000 + substr(t, 21, 3) }
        FNR == NR { h[int($1 / size)]++; next }
        FNR > 1 { n[$NF]++ }
        END { for (w in n) { e = int((iso_ms(w) + size) / size); c = 0; for (b in h) if (b + 0 < e) c += h[b]; printf "%s,%d,%d\n", w, n[w], c } }' \
        "$W/wl/ts" "$W/ref_$1.csv" | sort >"$W/wl_$1.windows"
    WL_ROWS=$(wc -l <"$W/wl/ts")
    eval "WL_ROWS_$1=$WL_ROWS"
    say "$1: $WL_ROWS input rows, $(wc -l <"$W/ref_$1.csv.sorted") result rows in $(wc -l <"$W/wl_$1.windows") windows (the embedded engine's)"
    rm -f "$W/wl/ts"
}

# wl_run WL STRATEGY RUN: the workload's throughput, its input unpaced (a
# generator and a producer per partition of each stream), measured at the
# output: a window is complete when the subscriber has all the reference's
# rows of it, and once it and every window before it are, every input row
# before its end has been processed.  Sustained throughput = the input rows
# so accounted for between the first such moment after the start-up second
# and the last one (at most EXP_WL_SECONDS after the input started), over
# the time between them.  Sets WL_<wl>_<strategy>_<run>; the output must be
# the reference's (all of it, or at the cutoff a part of it: no row wrong,
# none twice), else the run is FAILED.
wl_run() {
    st=$(tag "$2")
    paper9 "${1}_${st}_$3"
    SETUP_DDL=$(wl_ddl "$1" "partitions = $EXP_PARTITIONS, home = '$EXP_HOME'") setup "$2" "" "$(wl_query "$1")"
    say "$2 (run $3): $1 throughput run, $(val "WL_ROWS_$1") rows, at most ${EXP_WL_SECONDS} s;" \
        "tasks on the slowed nodes $(slow_tasks), domains used $(domains_used)"
    subscribe
    before=$(node_cpu)
    INGP=""
    rm -f "$CD"/gen.err.*
    GEN_START=$(date +%s%3N)
    case $1 in
    wordcount) feed_stream lines wl_words ;;
    tpch) feed_stream orders wl_tpch --table orders; feed_stream lineitem wl_tpch --table lineitem ;;
    esac
    want=$(wc -l <"$W/ref_$1.csv")
    while :; do
        sleep 0.5
        [ $(($(date +%s%3N) - GEN_START)) -ge $((EXP_WL_SECONDS * 1000)) ] && { WL_END=cutoff; break; }
        [ "$(wc -l <"$CD/sub.csv")" -ge "$want" ] && { WL_END=done; break; }
    done
    el=$(($(date +%s%3N) - GEN_START))
    cpu_report "$2 (run $3) $1" "$before" "$(node_cpu)" "$el"
    # the sources' own count, for comparison (rows read from the partitions' logs)
    rin=$(timeout 5 "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q -e "SHOW QUERIES;" 2>/dev/null | awk -F, '$1 == "q" { print $4 }')
    kill $INGP "$SUBP" 2>/dev/null
    wait $INGP "$SUBP" 2>/dev/null
    wait "$STAMPP" 2>/dev/null
    # the moments at which window after window was complete, in window order
    # (a window complete before an earlier one counts from when that one is)
    awk -F, -v s="$GEN_START" 'FNR == NR { want[$1] = $2; cov[$1] = $3; next }
        FNR > 1 { n[$NF]++; if ($1 > a[$NF]) a[$NF] = $1 }
        END { for (w in want) printf "%s,%d,%.0f,%d\n", w, (n[w] == want[w]), a[w], cov[w] }' \
        "$W/wl_$1.windows" "$CD/sub.csv" | sort |
        awk -F, -v s="$GEN_START" '!$2 { exit } { if ($3 > t) t = $3; printf "%.3f %d\n", (t - s) / 1000, $4 }' >"$W/wlp_${1}_$st.dat"
    # shellcheck disable=SC2046
    set -- "$1" "$2" "$3" $(awk '{ p[NR] = $1; c[NR] = $2 }
        END { f = 0; for (i = 1; i <= NR; i++) if (p[i] >= 1) { f = i; break }
              if (!NR) { print "0 0 none"; exit }
              if (f && p[NR] - p[f] >= 2) printf "%.0f %d sustained\n", (c[NR] - c[f]) / (p[NR] - p[f]), c[NR]
              else if (p[NR] > 0) printf "%.0f %d start-up\n", c[NR] / p[NR], c[NR]
              else print "0 " c[NR] " none" }' "$W/wlp_${1}_$st.dat")
    tp=$4
    case $6 in
    none)
        # below the first window's rows over the time waited: the bound a ratio against it gets
        eval "WLB_${1}_${st}_$3=$(awk -F, -v el="$el" 'NR == 1 { printf "%.0f", $3 * 1000 / el }' "$W/wl_$1.windows")"
        say "$2 (run $3): $1: no window complete within ${EXP_WL_SECONDS} s: throughput 0 (below $(val "WLB_${1}_${st}_$3") rows/s)" ;;
    start-up) say "$2 (run $3): $1: complete windows over less than 2 s after the start-up second: the figure is the rate from the input's start" ;;
    esac
    say "$2 (run $3): $1: $5 of $(val "WL_ROWS_$1") input rows accounted for in complete windows ($WL_END after $el ms);" \
        "the sources read ${rin:-?} rows (SHOW QUERIES rows_in)"
    # the output against the reference: all of it, or at the cutoff a part with no row wrong and none twice
    if same_output "$W/ref_$1.csv"; then
        [ "$WL_END" = done ] || say "$2 (run $3): $1: complete only at the cutoff"
    elif [ "$WL_END" = cutoff ] && [ "$(head -n 1 "$CD/out.csv")" = "$(head -n 1 "$W/ref_$1.csv")" ] &&
        [ -z "$(uniq -d "$CD/out.sorted")" ] && [ -z "$(comm -23 "$CD/out.sorted" "$W/ref_$1.csv.sorted")" ]; then
        say "$2 (run $3): $1: cut off with $(wc -l <"$CD/out.sorted") of $(wc -l <"$W/ref_$1.csv.sorted") result rows, every one right"
    else
        tail -n +2 "$CD/out.csv" | sort >"$CD/out.sorted"
        wl_failed "${1}_${st}_run$3" "$2 (run $3): the $1 output differs from the embedded engine's" \
            "($(($(wc -l <"$CD/out.csv") - 1)) rows, $(comm -23 "$CD/out.sorted" "$W/ref_$1.csv.sorted" | wc -l) not in it," \
            "$(uniq -d "$CD/out.sorted" | wc -l) repeated; want $(wc -l <"$W/ref_$1.csv.sorted"))"
        return
    fi
    figure "throughput_${1}_${st}_run$3" "$tp" "rows/s"
    eval "WL_${1}_${st}_$3=$tp"
}
# wl_failed WHICH MESSAGE...: a workload run whose output was wrong gives no figure
wl_failed() {
    _which=$1
    shift
    say "FAILED: $*; logs kept in $CD"
    figure "throughput_$_which" "FAILED" "($*)"
    REC_FAILED="$REC_FAILED${REC_FAILED:+; }$*"
    KEEP_SCRATCH=1
}

# ---------------------------------------------------------------- recovery (issues 7, 17)
# The phase runs when the cluster interprets SET ft (an unknown mode is
# refused); EXP_FORCE_RECOVERY=1 runs it on a build that does not.
ft_supported() {
    paper9 ftprobe
    sqlc -e "SET ft = 'replica';" 2>"$CD/ft.err" || { FT_WHY="SET ft = 'replica' fails: $(head -n 1 "$CD/ft.err")"; return 1; }
    if sqlc -e "SET ft = 'no-such-mode';" 2>/dev/null; then
        FT_WHY="SET ft accepts any value (stored, not interpreted)"
        return 1
    fi
    return 0
}

# recovery_run STRATEGY MODE RUN: paced input, domain EXP_FAIL_DOMAIN killed;
# sets REC_<mode>_<strategy>_<run> (ms) when the output is exact
recovery_run() {
    st=$(tag "$1")
    paper9 "rec_${2}_${st}_$3"
    setup "$1" "$2"
    # the subscriber from the start, the warm-up's rows kept: the reference is
    # the embedded engine on all of the input
    subscribe
    warm_up "$CD/warm.csv"
    # where q runs after the warm-up's rebalance
    sqlc -e "EXPLAIN PLACEMENT q;" >"$CD/placement.csv" 2>/dev/null || die "EXPLAIN PLACEMENT after the warm-up ($1)"
    fdom=$EXP_FAIL_DOMAIN
    # auto: d1 or d2, whichever runs more of q's aggregates, then of its tasks
    [ "$fdom" = auto ] && fdom=$(awk -F, '$3 == "task" && ($5 == "d1" || $5 == "d2") { c[$5] += ($1 ~ /AGGREGATE/) ? 100 : 1 }
        END { print (c["d2"] > c["d1"]) ? "d2" : "d1" }' "$CD/placement.csv")
    lost=$(awk -F, -v d="$fdom" '$3 == "task" && $5 == d { n++; if ($1 ~ /AGGREGATE/) a++ }
        END { printf "%d tasks (%d aggregates)", n, a }' "$CD/placement.csv")
    figure "rec_lost_tasks_${2}_${st}_run$3" "$(echo "$lost" | cut -d' ' -f1)" "tasks (in $fdom)"
    # just before a window (a wall-clock second) closes
    now=$(date +%s%3N)
    kill_domain_at $(((now + EXP_FAIL_AT * 1000) / 1000 * 1000 + 1000 - EXP_KILL_LEAD_MS)) "$fdom"
    say "$1, ft $2 (run $3): recovery run, ${EXP_REC_SECONDS} s at $EXP_RATE rows/s; domain $fdom" \
        "($(domain_nodes "$fdom"): $lost of q) killed after about ${EXP_FAIL_AT} s"
    ingest "$EXP_REC_SECONDS" "$EXP_RATE" "$CD/in.csv"
    [ -s "$CD/warm.csv" ] && { sort -t, -k1,1n -m "$CD/warm.csv" "$CD/in.csv" >"$CD/all.csv" && mv "$CD/all.csv" "$CD/in.csv"; }
    wait "$KILLP"
    kill_ms=$(cat "$CD/kill_ms")
    "$B/ares-sql" --memory -q -e "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts'); $Q;" \
        --ingest s <"$CD/in.csv" >"$CD/ref.csv" || die "embedded run ($1, ft $2)"
    tail -n +2 "$CD/ref.csv" | sort >"$CD/ref.csv.sorted"
    wait $INGP
    wait_output "$CD/ref.csv" $((EXP_REC_WAIT_S * 10))
    # throughput around the failure: rows in the results that arrived in
    # each second counted from the kill (an empty second as 0)
    awk -F, -v k="$kill_ms" 'NR > 1 && $3 ~ /^[0-9]+$/ { t = ($1 - k) / 1000; b = int(t); if (t < 0 && b != t) b--; a[b] += $3
            if (!n++ || b < lo) lo = b; if (b > hi) hi = b }
        END { for (s = lo; s <= hi; s++) print s, a[s] + 0 }' "$CD/sub.csv" >"$W/rec_${2}_$st.dat"
    recovery_log "$kill_ms" c0
    if ! grep -q "recovered as query" "$CD/c0.log" && [ "$(echo "$lost" | cut -d' ' -f1)" -gt 0 ]; then
        rec_failed "${2}_${st}_run$3" "$1, ft $2 (run $3): the coordinator did not recover q"
        return
    fi
    if ! same_output "$CD/ref.csv"; then
        if [ "$(wc -l <"$CD/out.csv")" -lt "$(wc -l <"$CD/ref.csv")" ] &&
            [ "$(comm -23 "$CD/out.sorted" "$CD/ref.csv.sorted" | wc -l)" = 0 ]; then
            # every row right, but the last ones still missing: it did not
            # catch up within EXP_REC_WAIT_S of the input's end (too slow, not wrong)
            say "$1, ft $2 (run $3): not caught up $EXP_REC_WAIT_S s after the input ended" \
                "($(wc -l <"$CD/out.csv") of $(wc -l <"$CD/ref.csv") lines, none wrong)"
            figure "recovery_${2}_${st}_run$3" "NOT-CAUGHT-UP" "(output incomplete after ${EXP_REC_WAIT_S} s, none wrong)"
            eval "REC_${2}_${st}_$3=slow"
            say "$1, ft $2 (run $3): logs kept in $CD (the last window per partition's sources: SHOW QUERIES there)"
            timeout 5 "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q -e "SHOW QUERIES; EXPLAIN PLACEMENT q;" \
                >"$CD/not_caught_up.txt" 2>&1
            KEEP_SCRATCH=1
            return
        fi
        rec_failed "${2}_${st}_run$3" "$1, ft $2 (run $3): the output after recovery differs from the embedded engine's" \
            "($(wc -l <"$CD/out.csv") lines, want $(wc -l <"$CD/ref.csv"))"
        return
    fi
    windows "$CD/sub.csv" 0 >"$W/rec_windows_${2}_$st"
    set -- "$1" "$2" "$3" $(recovery_of "$W/rec_windows_${2}_$st" "$kill_ms" 0 "$EXP_REC_LATE_MS")
    say "$1, ft $2 (run $3): from the kill: DEAD +$R_DEAD ms, redeployed +$R_REDEPLOY, replayed $R_ROWS rows in $R_MS ms," \
        "caught up +$R_CAUGHT; the first window after the kill arrived $6 ms after its close (before: at most $5 ms);" \
        "state taken over: $R_KEPT kept, $R_PROMOTED promoted; longest loop stall $R_STALL ms, live nodes taken for dead $R_SILENT times"
    figure "recovery_${2}_${st}_run$3" "$4" "ms"
    figure "recovery_replay_rows_${2}_${st}_run$3" "$R_ROWS" "rows"
    eval "REC_${2}_${st}_$3=$4"
    REC_RAN=1
}
# rec_failed MODE_STRATEGY MESSAGE...: a run whose recovery went wrong gives no figure
rec_failed() {
    _which=$1
    shift
    say "FAILED: $*; logs kept in $CD (longest loop stall $R_STALL ms, live nodes taken for dead $R_SILENT times)"
    figure "recovery_$_which" "FAILED" "($*)"
    REC_FAILED="$REC_FAILED${REC_FAILED:+; }$*"
    KEEP_SCRATCH=1
}

# ---------------------------------------------------------------- the runs
say "testbed: cgroup v$TB_VERSION; c0 n1 n3 n4 n6 n7 at $EXP_NODE_CPUS CPUs each, n2 n5 n8 at $EXP_SLOW_CPUS" \
    "(slow factor $EXP_SLOW_FACTOR; period ${SLOW_PERIOD_MS} ms for the slow ones: they may stall that long);" \
    "--link-delay-ms $EXP_LINK_DELAY_MS, parallelism $EXP_PARALLELISM, $EXP_KEYS keys; $(nproc) cores;" \
    "$EXP_RUNS runs of: $EXP_STRATEGIES"
figure testbed_node_cpus "$EXP_NODE_CPUS" "CPUs"
figure testbed_slow_node_cpus "$EXP_SLOW_CPUS" "CPUs"
REC_RAN="" REC_FAILED=""
if [ -z "${EXP_ONLY_RECOVERY:-}" ]; then
    for wl in $EXP_WORKLOADS; do
        case $wl in wordcount | tpch) wl_prepare "$wl" ;; *) die "EXP_WORKLOADS: no workload '$wl' (wordcount, tpch)" ;; esac
    done
fi
FT_OK=1
if [ -n "$FT_MODES" ] && ! ft_supported && [ -z "${EXP_FORCE_RECOVERY:-}" ]; then
    say "recovery phase SKIPPED: this cluster has no fault tolerance: $FT_WHY"
    figure recovery "not measured (ft not supported: $FT_WHY)"
    FT_OK=""
fi
r=1
while [ $r -le "$EXP_RUNS" ]; do
    for s in $EXP_STRATEGIES; do
        [ -n "${EXP_ONLY_RECOVERY:-}" ] && break
        if [ -z "${EXP_ONLY_WORKLOADS:-}" ]; then
            tp_run "$s" $r
            lat_run "$s" $r
            [ "$EXP_RATE_HIGH" -gt 0 ] 2>/dev/null && lat_run "$s" $r "$EXP_RATE_HIGH" high
            [ "$EXP_JOIN" = 1 ] && join_run "$s" $r
        fi
        for wl in $EXP_WORKLOADS; do wl_run "$wl" "$s" $r; done
    done
    if [ -n "$FT_OK" ] && [ -z "${EXP_ONLY_WORKLOADS:-}" ]; then
        for m in $FT_MODES; do
            for s in $EXP_STRATEGIES; do
                recovery_run "$s" "$m" $r
            done
        done
    fi
    r=$((r + 1))
done
stop_cluster

# ---------------------------------------------------------------- ratios
# per run: ratio (x) or change (%) of nirvana against a baseline; then the
# median over the runs.  A baseline that never caught up ("slow") or gave
# no latency ("-") has no ratio in that run.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a != "-" && a != "") printf "%.2f", a / b; else print "n/a" }'; }
change() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a != "-" && a != "" && a != "slow") printf "%+.1f", 100 * (a - b) / b; else print "n/a" }'; }
# lchange A B BOUND: change() of latencies, where B "slow" (the baseline's
# percentile never came, so it is at least BOUND ms) gives a bound "<x"
lchange() {
    if [ "$2" = slow ] && [ -n "$1" ] && [ "$1" != slow ] && [ "$1" != - ] && [ "${3:-0}" -gt 0 ]; then
        awk -v a="$1" -v b="$3" 'BEGIN { printf "<%+.1f", 100 * (a - b) / b }'
    else change "$1" "$2"; fi
}
median() { tr ' ' '\n' | grep -v '^n/a$' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (!NR) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
case " $EXP_STRATEGIES " in *" nirvana "*) HAVE_NV=1 ;; *) HAVE_NV="" ;; esac
echo "experiments: Nirvana against the baselines, run by run, then the medians (paper: 3.6x, -50.2 %, -52.5 %):" | tee -a "$FIG"
for b in roundrobin:rr resourceaware:ra nirvananorecovery:nr random:rnd; do
    bs=${b%:*} short=${b#*:}
    [ -n "$HAVE_NV" ] || continue
    case " $(echo "$EXP_STRATEGIES" | tr -d -) " in *" $bs "*) ;; *) continue ;; esac
    tps="" p50s="" p99s="" hp50s="" hp99s="" jps="" recs=""
    for wl in $EXP_WORKLOADS; do eval "wls_$wl=''"; done
    for m in $FT_MODES; do eval "recs_$m=''"; done
    r=1
    while [ $r -le "$EXP_RUNS" ]; do
        tps="$tps $(ratio "$(val "TP_nirvana_$r")" "$(val "TP_${bs}_$r")")"
        p50s="$p50s $(lchange "$(val "P50_nirvana_$r")" "$(val "P50_${bs}_$r")" "$(val "LB_${bs}_$r")")"
        p99s="$p99s $(lchange "$(val "P99_nirvana_$r")" "$(val "P99_${bs}_$r")" "$(val "LB_${bs}_$r")")"
        hp50s="$hp50s $(lchange "$(val "HP50_nirvana_$r")" "$(val "HP50_${bs}_$r")" "$(val "HLB_${bs}_$r")")"
        hp99s="$hp99s $(lchange "$(val "HP99_nirvana_$r")" "$(val "HP99_${bs}_$r")" "$(val "HLB_${bs}_$r")")"
        jps="$jps $(change "$(val "JP50_nirvana_$r")" "$(val "JP50_${bs}_$r")")"
        for wl in $EXP_WORKLOADS; do
            c=$(ratio "$(val "WL_${wl}_nirvana_$r")" "$(val "WL_${wl}_${bs}_$r")")
            # the baseline completed no window and nirvana did: at least nirvana / the baseline's bound
            nv=$(val "WL_${wl}_nirvana_$r") bb=$(val "WLB_${wl}_${bs}_$r")
            [ "$(val "WL_${wl}_${bs}_$r")" = 0 ] && [ -n "$bb" ] && [ "${nv:-0}" -gt 0 ] &&
                c=$(awk -v a="$nv" -v b="$bb" 'BEGIN { printf ">%.2f", a / b }')
            eval "wls_$wl=\"\$wls_$wl $c\""
        done
        for m in $FT_MODES; do
            nv=$(val "REC_${m}_nirvana_$r") bv=$(val "REC_${m}_${bs}_$r")
            c=$(change "$nv" "$bv")
            # the baseline never caught up and nirvana did: at least -(1 - nirvana/wait)
            [ "$bv" = slow ] && [ -n "$nv" ] && [ "$nv" != slow ] &&
                c=$(awk -v a="$nv" -v w="$((EXP_REC_WAIT_S * 1000))" 'BEGIN { printf "<%+.1f", 100 * (a - w) / w }')
            eval "recs_$m=\"\$recs_$m $c\""
        done
        r=$((r + 1))
    done
    echo "experiments: against $bs, per run: throughput x$tps; latency p50 %$p50s; p99 %$p99s; join p50 %$jps" | tee -a "$FIG"
    [ "$EXP_RATE_HIGH" -gt 0 ] 2>/dev/null && echo "experiments:   latency at $EXP_RATE_HIGH rows/s: p50 %$hp50s; p99 %$hp99s" | tee -a "$FIG"
    for m in $FT_MODES; do echo "experiments:   recovery (ft $m) %$(val "recs_$m")" | tee -a "$FIG"; done
    for wl in $EXP_WORKLOADS; do
        echo "experiments:   $wl throughput x$(val "wls_$wl")" | tee -a "$FIG"
        # a bound (>x) counts at x in the median
        eval "MED_WL_${wl}_$short=\$(echo \"\$wls_$wl\" | tr -d '>' | median)"
    done
    MED_TP=$(echo "$tps" | median) MED_P50=$(echo "$p50s" | tr -d '<' | median) MED_P99=$(echo "$p99s" | tr -d '<' | median)
    MED_JP=$(echo "$jps" | median)
    # a bound (<x) counts at x in the median
    MED_HP50=$(echo "$hp50s" | tr -d '<' | median) MED_HP99=$(echo "$hp99s" | tr -d '<' | median)
    eval "MED_TP_$short=\$MED_TP MED_P50_$short=\$MED_P50 MED_P99_$short=\$MED_P99 MED_JP_$short=\$MED_JP"
    eval "MED_HP50_$short=\$MED_HP50 MED_HP99_$short=\$MED_HP99"
    for m in $FT_MODES; do
        # a bound (<x) counts at x in the median
        eval "MED_REC_${m}_$short=\$(echo \"\$recs_$m\" | tr -d '<' | median)"
    done
done
for short in rr ra nr rnd; do
    [ -n "$(val "MED_TP_$short")" ] || continue
    figure "nirvana_vs_${short}_throughput" "$(val "MED_TP_$short")" "x (median of $EXP_RUNS runs)"
    figure "nirvana_vs_${short}_latency_p50_pct" "$(val "MED_P50_$short")" "% (median of $EXP_RUNS runs)"
    figure "nirvana_vs_${short}_latency_p99_pct" "$(val "MED_P99_$short")" "% (median of $EXP_RUNS runs)"
    if [ "$EXP_RATE_HIGH" -gt 0 ] 2>/dev/null; then
        figure "nirvana_vs_${short}_latency_high_p50_pct" "$(val "MED_HP50_$short")" "% (at $EXP_RATE_HIGH rows/s, median of $EXP_RUNS runs)"
        figure "nirvana_vs_${short}_latency_high_p99_pct" "$(val "MED_HP99_$short")" "% (at $EXP_RATE_HIGH rows/s, median of $EXP_RUNS runs)"
    fi
    [ "$EXP_JOIN" = 1 ] && figure "nirvana_vs_${short}_join_latency_p50_pct" "$(val "MED_JP_$short")" "% (median of $EXP_RUNS runs)"
    for wl in $EXP_WORKLOADS; do
        figure "nirvana_vs_${short}_${wl}_throughput" "$(val "MED_WL_${wl}_$short")" "x (median of $EXP_RUNS runs)"
    done
    for m in $FT_MODES; do
        figure "nirvana_vs_${short}_recovery_${m}_pct" "$(val "MED_REC_${m}_$short")" "% (median of $EXP_RUNS runs)"
    done
    # the headline recovery figure: ft = replica, the default
    case " $FT_MODES " in *" replica "*)
        figure "nirvana_vs_${short}_recovery_pct" "$(val "MED_REC_replica_$short")" "% (ft = replica, median of $EXP_RUNS runs)" ;;
    esac
done

# ---------------------------------------------------------------- plots
# the plots draw the last run
if command -v gnuplot >/dev/null; then
    # one colour per strategy in every plot, also when a line is missing
    plot_lines() { # OUT TITLE XLABEL YLABEL PREFIX [extra gnuplot]
        _pl="" _lt=0
        for s in $EXP_STRATEGIES; do
            st=$(tag "$s")
            _lt=$((_lt + 1))
            [ -s "$W/$5$st.dat" ] && _pl="$_pl${_pl:+, }'$W/$5$st.dat' using 1:2 with lines lt $_lt lw 2 title '$s'"
        done
        [ -n "$_pl" ] || return 0
        gnuplot <<EOF
set terminal svg size 800,450 dynamic font 'sans,12'
set output '$1'
set title '$2'
set xlabel '$3'
set ylabel '$4'
set key outside right
set grid
${6:-}
plot $_pl
EOF
    }
    plot_lines "$EXP_PLOTS/throughput.svg" "Throughput over time, unpaced input (9 capped nodes, 3 at 1/${EXP_SLOW_FACTOR}, ${EXP_LINK_DELAY_MS} ms cross-domain)" \
        "seconds since the input started" "input tuples/s in results (1 s samples)" tp_ "set yrange [0:*]; set format y '%.1s%c'"
    for wl in $EXP_WORKLOADS; do
        plot_lines "$EXP_PLOTS/progress-$wl.svg" "$wl: input rows accounted for by complete windows, unpaced input" \
            "seconds since the input started" "input rows (of every stream)" "wlp_${wl}_" "set yrange [0:*]; set format y '%.1s%c'"
    done
    plot_lines "$EXP_PLOTS/latency-cdf.svg" "Aggregation latency CDF at $EXP_RATE tuples/s (result arrival - window close)" \
        "latency (ms, log scale)" "fraction of result rows" cdf_ "set logscale x; set yrange [0:1]"
    [ "$EXP_RATE_HIGH" -gt 0 ] 2>/dev/null && plot_lines "$EXP_PLOTS/latency-high-cdf.svg" \
        "Aggregation latency CDF at $EXP_RATE_HIGH tuples/s (rows that never came: the curve stops short of 1)" \
        "latency (ms, log scale)" "fraction of result rows" cdf_high_ "set logscale x; set yrange [0:1]"
    [ "$EXP_JOIN" = 1 ] && plot_lines "$EXP_PLOTS/join-latency-cdf.svg" \
        "Join latency CDF at $EXP_RATE tuples/s (result arrival - ingest of the later input row)" \
        "latency (ms, log scale; under 1 ms drawn at 0.5)" "fraction of result rows" jcdf_ "set logscale x; set yrange [0:1]"
    if [ -n "$REC_RAN" ]; then
        for m in $FT_MODES; do
            plot_lines "$EXP_PLOTS/throughput-failure-$m.svg" "Throughput around the failure of a domain (ft = $m, $EXP_RATE tuples/s in)" \
                "seconds since the failure" "input tuples/s in results (1 s samples, by arrival)" "rec_${m}_" \
                "set xrange [-5:$((EXP_REC_SECONDS - EXP_FAIL_AT - 2))]; set yrange [0:*]; set arrow from 0, graph 0 to 0, graph 1 nohead lc rgb 'red' dt 2; set label 'failure' at 0.2, graph 0.95 tc rgb 'red'"
        done
        # one group of bars per mode, one bar per strategy (none for a run that failed)
        : >"$W/rec.dat"
        for m in $FT_MODES; do
            line="$m"
            for s in $EXP_STRATEGIES; do
                v=$(val "REC_${m}_$(tag "$s")_$EXP_RUNS")
                [ "$v" = slow ] && v=NaN
                line="$line ${v:-NaN}"
            done
            echo "$line" >>"$W/rec.dat"
        done
        cols=""
        i=2
        for s in $EXP_STRATEGIES; do
            if [ $i = 2 ]; then cols="'$W/rec.dat' using 2:xtic(1) title '$s'"; else cols="$cols, '' using $i title '$s'"; fi
            i=$((i + 1))
        done
        gnuplot <<EOF
set terminal svg size 700,420 dynamic font 'sans,12'
set output '$EXP_PLOTS/recovery.svg'
set title 'Recovery time after a domain failure (kill to output back at its rate)'
set ylabel 'ms'
set datafile missing 'NaN'
$([ -n "$REC_FAILED" ] && echo "set label 'no bar: a run whose output was wrong (FAILED), not measured' at screen 0.02, screen 0.03 font ',10'")
set style data histograms
set style fill solid 0.8 border -1
set grid y
set yrange [0:*]
plot $cols
EOF
    else
        rm -f "$EXP_PLOTS/recovery.svg" "$EXP_PLOTS"/throughput-failure-*.svg
    fi
    say "plots in $EXP_PLOTS"
else
    say "gnuplot not installed (make deps): no plots"
fi
cp "$FIG" "$EXP_PLOTS/figures.txt"
say "done in $(($(date +%s) - T0)) s"
if [ -n "$REC_FAILED" ]; then
    say "FAILED: $REC_FAILED"
    exit 1
fi
