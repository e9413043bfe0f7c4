#!/bin/sh
# `make bench-recovery` (issue 7, "Figures"): recovery time after a whole
# failure domain dies, for ft = replica, checkpoint and upstream, under Nirvana
# and round-robin placement, and the throughput cost of replication (replica
# against none).  Every case runs on the same data, on a fresh cluster of 9
# ares-node processes on loopback in 3 failure domains:
#
#   d0: c0 (coordinator, the stream's home: source and sink) n1 n2
#   d1: n3 n4 n5          d2: n6 n7 n8          (--slots REC_SLOTS each)
#
# and one standing query, SET parallelism = REC_PARALLELISM:
#
#   SELECT k, COUNT(*) AS n, SUM(v) AS sv, CAST(window_end AS BIGINT) AS we
#   FROM s WINDOW TUMBLING (SIZE REC_WINDOW SECONDS) GROUP BY k
#
# Input: `exp_tool gen --base 0` (bench/experiments/exp_tool.c): rows ts,k,v,
# k uniform over REC_KEYS keys, ts = i * 1000 / REC_RATE ms, the same rows in
# every run (fixed seed).  A recovery run paces them at REC_RATE rows per
# second of wall time into `ares-sql --connect --ingest s` for REC_SECONDS s,
# so event time runs with the wall clock: the window ending at event time we
# closes at wall time start + we.  A subscriber (`SUBSCRIBE q` into
# `exp_tool stamp`) records the arrival time of every result row.
#
# The failure: REC_KILL_LEAD_MS before the window ending at REC_FAIL_AT s
# closes, every node of one domain gets SIGKILL at once (`exp_tool killat`).
# The domain is d1 or d2 (never the coordinator's and the stream home's), the
# one that runs more of the query's aggregate tasks.
#
# Recovery time = from the kill until the query's output is back at its
# pre-failure rate: the arrival of the last row of the first window that
# closes after the kill, or of a later window if that one too came late
# (later than the slowest pre-failure window by more than REC_LATE_MS).
# The output comes a window at a time, so the kill is placed just before a
# window closes; without the failure that window would have arrived
# REC_KILL_LEAD_MS + its usual delay after the kill, which is therefore the
# floor of the figure.  From the logs, on the same clock: detection (the
# coordinator marks the first victim DEAD), the failure event (the
# coordinator's 150 ms settle), redeployment, the replay on the home node
# (rows and ms), and the state taken over (kept, promoted replicas).
#
# Every run's output must equal the embedded engine's on the same rows, row
# for row; a run that differs, or whose query is not recovered, is reported
# as failed (its logs kept) and gives no figure; the script then exits 1.
#
# The coordinator's domain (REC_COORD=1, the default): one more run, ft =
# replica under Nirvana, with a standby coordinator sb in d1 (every node and
# client gets --join/--connect c0,sb, and the stream is created once all have
# joined, so that its home c0 has a shadow in another domain).  The victim is
# d0: the coordinator, the stream's home and two nodes.  The standby takes
# over, the shadow becomes the home, the clients fail over; the same figure
# is measured, as recovery_ms_replica_coord, and the takeover apart
# (recovery_takeover_ms_replica_coord: from the kill until the standby holds
# a majority's grants).
#
# Throughput: REC_TP_ROWS rows (REC_TP_EVENT_RATE per second of event time)
# ingested as fast as the cluster takes them, Nirvana placement, ft = none and
# ft = replica alternately (none first in odd pairs, replica first in even
# ones), REC_TP_RUNS times each.  Rate = rows / (arrival of
# the last result row - start of the ingest): the stream's end closes the last
# window, so the last row arrives once every row has been processed.
# replica_overhead_pct = 100 * (1 - the median of the runs' replica/none
# ratios): a ratio of two runs next to each other, since the machine's other
# jobs move single runs by tens of percent.  replica_cpu_overhead_pct: the
# CPU time (user + system) the 9 nodes used, replica against none, all runs.
#
# Prints `figure: NAME = VALUE UNIT` lines, among them recovery_ms_replica,
# recovery_ms_checkpoint, recovery_ms_upstream (Nirvana),
# recovery_ratio_replica_vs_checkpoint, replica_overhead_pct.
#
# Usage: run.sh [--build DIR]   (settings through the environment:)
#   REC_RATE=100000 REC_KEYS=10000 REC_WINDOW=5 REC_SECONDS=22 REC_FAIL_AT=15
#   REC_KILL_LEAD_MS=100 REC_LATE_MS=250 REC_PARALLELISM=3 REC_SLOTS=2 REC_DEAD_MS=3000
#   REC_MODES="replica checkpoint upstream" REC_PLACEMENTS="nirvana round-robin"
#   REC_TP_ROWS=5000000 REC_TP_EVENT_RATE=100000 REC_TP_RUNS=5 (0: no throughput runs)
#   REC_TP_LOG=1 (each throughput round also runs ft = replica with SET shadow = 'log': figure log_copy_overhead_pct)
#   REC_CHECKPOINT_INTERVAL='2 seconds' (default: the cluster's, 10 s)
#   REC_CHECK_ONLY=1 (bench-smoke: no target lines)
#   REC_TESTBED=1 REC_NODE_CPUS=0.15 (every node in its own CPU cgroup at that quota,
#   bench/testbed/lib.sh; REC_TESTBED=0: uncapped, the nodes share the machine)
#   KEEP_SCRATCH=1 (keep the logs and raw data in /tmp/ares-rec.*)
set -u
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB_NAME=recovery LIB_SCRATCH=ares-rec
. "$ROOT/bench/experiments/lib.sh"
. "$ROOT/bench/testbed/lib.sh"
REC_RATE=${REC_RATE:-100000}
REC_KEYS=${REC_KEYS:-10000}
REC_WINDOW=${REC_WINDOW:-5}
REC_SECONDS=${REC_SECONDS:-22}
REC_FAIL_AT=${REC_FAIL_AT:-15}
REC_KILL_LEAD_MS=${REC_KILL_LEAD_MS:-100}
REC_LATE_MS=${REC_LATE_MS:-250}
REC_PARALLELISM=${REC_PARALLELISM:-3}
REC_SLOTS=${REC_SLOTS:-2}
REC_DEAD_MS=${REC_DEAD_MS:-3000}
REC_MODES=${REC_MODES-replica checkpoint upstream}
REC_PLACEMENTS=${REC_PLACEMENTS-nirvana round-robin}
REC_TP_ROWS=${REC_TP_ROWS:-5000000}
REC_TP_EVENT_RATE=${REC_TP_EVENT_RATE:-100000}
REC_TP_RUNS=${REC_TP_RUNS:-5}
REC_TP_LOG=${REC_TP_LOG:-1}
REC_COORD=${REC_COORD:-1}
REC_TESTBED=${REC_TESTBED:-1}
REC_NODE_CPUS=${REC_NODE_CPUS:-0.15}
T0=$(date +%s)
# the testbed (bench/testbed/lib.sh): every node capped at REC_NODE_CPUS in
# a CPU cgroup of its own, so that ten nodes take at most 1.5 of the
# machine's CPUs and the generator and clients are not what limits them
if [ "$REC_TESTBED" = 1 ]; then
    for n in c0 sb n1 n2 n3 n4 n5 n6 n7 n8; do tb_group "$n" "$REC_NODE_CPUS"; done
fi
say() { echo "recovery: $*" >&2; }
figure() { echo "figure: $1 = $2${3:+ $3}"; }
tag() { echo "$1" | tr -d -; }
FAILED=""
# a case that went wrong: say so, keep the scratch directory, go on with the others
failed() {
    say "FAILED: $*; logs in $CD (longest loop stall ${R_STALL:-?} ms, live nodes taken for dead ${R_SILENT:-?} times)"
    FAILED="$FAILED${FAILED:+; }$*"
    KEEP_SCRATCH=1
}

DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS sv, CAST(window_end AS BIGINT) AS we FROM s WINDOW TUMBLING (SIZE $REC_WINDOW SECONDS) GROUP BY k"
ROWS=$((REC_RATE * REC_SECONDS))
NODE_OPTS="--slots $REC_SLOTS --dead-ms $REC_DEAD_MS"

# setup PLACEMENT FT [SHADOW]: the stream and the query q; the stream's home
# must be c0 (with a standby, it must have a shadow outside d0); SHADOW =
# log: the stream's home copies its log to its shadow (SET shadow)
setup() {
    sqlc -e "${3:+SET shadow = '$3'; }$DDL SET parallelism = $REC_PARALLELISM; SET placement = '$1'; SET ft = '$2';
             ${REC_CHECKPOINT_INTERVAL:+SET checkpoint_interval = '$REC_CHECKPOINT_INTERVAL';}" -e "CREATE QUERY q AS $Q;" ||
        die "CREATE QUERY ($1, ft $2)"
    sqlc -e "EXPLAIN PLACEMENT q;" >"$CD/placement.csv" || die "EXPLAIN PLACEMENT"
    grep -q "placement: $1;" "$CD/placement.csv" || die "q not placed by $1"
    grep -q "stream s: home node c0" "$CD/c0.log" || die "the stream's home is not c0: $(grep -o 'stream s: home node.*' "$CD/c0.log")"
    [ -z "${SB_ADDR:-}" ] || grep -q "stream s: home node c0, shadow n[3-8]" "$CD/c0.log" ||
        die "the stream has no shadow outside d0: $(grep -o 'stream s: home node.*' "$CD/c0.log")"
}

# the reference: the same rows through the embedded engine
say "generating $ROWS rows ($REC_RATE per second of event time, $REC_KEYS keys) and the embedded engine's answer"
"$TOOL" gen --rows "$ROWS" --event-rate "$REC_RATE" --keys "$REC_KEYS" --seed 1 --base 0 >"$W/data.csv" 2>/dev/null
"$B/ares-sql" --memory -q -e "$DDL $Q;" --ingest s <"$W/data.csv" >"$W/ref.csv" || die "embedded run"
tail -n +2 "$W/ref.csv" | sort >"$W/ref.csv.sorted"
say "reference: $(($(wc -l <"$W/ref.csv") - 1)) result rows"

# ---------------------------------------------------------------- recovery runs
# recovery_run PLACEMENT FT [coord]: one run; sets REC_<ft>_<placement> (ms)
# when it is exact; with "coord", the coordinator's domain d0 is the victim
# and a standby sb in d1 takes over (REC_<ft>_coord)
recovery_run() {
    pl=$1 ft=$2 pt=$(tag "$1") coord=${3:-}
    SB_ADDR="" CLOG=c0
    if [ -n "$coord" ]; then
        pt=coord
        new_cluster "rec_${ft}_coord"
        # shellcheck disable=SC2086
        start_node c0 d0 $NODE_OPTS --coordinator
        # shellcheck disable=SC2086
        start_node sb d1 $NODE_OPTS --coordinator
        SB_ADDR="127.0.0.1:$(port_of sb)"
        CADDR="$CADDR,$SB_ADDR"
        for _x in n1:d0 n2:d0 n3:d1 n4:d1 n5:d1 n6:d2 n7:d2 n8:d2; do
            # shellcheck disable=SC2086
            start_node "${_x%:*}" "${_x#*:}" $NODE_OPTS
        done
        wait_alive 10
    else
        start9 "rec_${ft}_$pt" "$NODE_OPTS"
    fi
    setup "$pl" "$ft"
    if [ -n "$coord" ]; then
        victim=d0 CLOG=sb
    else
        # the victim: d1 or d2, whichever runs more aggregate tasks of q
        victim=$(awk -F, '$3 == "task" && $1 ~ /^AGGREGATE/ && ($5 == "d1" || $5 == "d2") { c[$5]++ }
            END { if (c["d2"] > c["d1"]) print "d2"; else if (c["d1"] > 0) print "d1" }' "$CD/placement.csv")
        [ -n "$victim" ] || { cat "$CD/placement.csv" >&2; die "$pl: no aggregate task of q outside d0: nothing to recover"; }
    fi
    lost=$(awk -F, -v d="$victim" '$3 == "task" && $5 == d { printf "%s%s", s, $1; s = " " }' "$CD/placement.csv")
    reps=$(awk -F, -v d="$victim" '$3 == "replica" && $5 == d { n++ } END { print n + 0 }' "$CD/placement.csv")
    subscribe
    say "$pl, ft = $ft: ${REC_SECONDS} s at $REC_RATE rows/s; $victim ($(domain_nodes "$victim"): $lost; $reps replicas)" \
        "killed ${REC_KILL_LEAD_MS} ms before the window ending at ${REC_FAIL_AT} s closes"
    rm -f "$CD/start"
    "$TOOL" gen --rows "$ROWS" --event-rate "$REC_RATE" --keys "$REC_KEYS" --seed 1 --base 0 --pace \
        --start-file "$CD/start" 2>"$CD/gen.err" | tee "$CD/in.csv" |
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s --end >"$CD/ingest.out" 2>"$CD/ingest.err" &
    INGP=$!
    PIDS="$PIDS $INGP"
    _i=0
    while [ ! -s "$CD/start" ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
    START=$(cat "$CD/start")
    kill_domain_at $((START + REC_FAIL_AT * 1000 - REC_KILL_LEAD_MS)) "$victim"
    wait "$KILLP"
    KILL_MS=$(cat "$CD/kill_ms")
    wait "$INGP" || say "$pl, ft = $ft: the ingest client failed: $(tail -n 2 "$CD/ingest.err")"
    wait_output "$W/ref.csv"
    cmp -s "$CD/in.csv" "$W/data.csv" || die "the paced input differs from the reference's"
    cp "$CD/sub.csv" "$W/sub_${ft}_$pt.csv"
    home=c0
    [ -z "$coord" ] || home=$(sed -n 's/.*stream s: home node c0, shadow \([a-z0-9]*\).*/\1/p' "$CD/c0.log")
    recovery_log "$KILL_MS" "$home" "$CLOG"
    if ! grep -q "recovered as query" "$CD/$CLOG.log"; then
        grep -E "cannot recover|failed" "$CD/$CLOG.log" | head -n 3 >&2
        failed "$pl, ft = $ft: the coordinator did not recover q"
        return
    fi
    if ! same_output "$W/ref.csv"; then
        failed "$pl, ft = $ft: the output after recovery differs from the embedded engine's" \
            "($(wc -l <"$CD/out.csv") lines, want $(wc -l <"$W/ref.csv"))"
        diff "$CD/out.sorted" "$W/ref.csv.sorted" | head -n 6 >&2
        return
    fi
    windows "$CD/sub.csv" "$START" >"$W/windows_${ft}_$pt"
    set -- $(recovery_of "$W/windows_${ft}_$pt" "$KILL_MS" "$START" "$REC_LATE_MS")
    rt=$1 pre=$2 fd=$3
    figure "recovery_ms_${ft}_$pt" "$rt" "ms"
    figure "recovery_detect_ms_${ft}_$pt" "$R_DEAD" "ms"
    figure "recovery_redeploy_ms_${ft}_$pt" "$R_REDEPLOY" "ms"
    figure "recovery_replay_ms_${ft}_$pt" "$R_MS" "ms"
    figure "recovery_replay_rows_${ft}_$pt" "$R_ROWS" "rows"
    if [ -n "$coord" ]; then
        _tk=$(log_ms "$CD/sb.log" "taking over as the coordinator of term")
        figure "recovery_takeover_ms_${ft}_coord" "$((${_tk:-$KILL_MS} - KILL_MS))" "ms"
        grep -q "reconnected to the coordinator of term" "$CD/ingest.err" ||
            say "$pl, ft = $ft: the ingest client did not say it failed over: $(tail -n 2 "$CD/ingest.err")"
    fi
    say "$pl, ft = $ft: killed at $((KILL_MS - START)) ms of input; from the kill: DEAD +$R_DEAD ms," \
        "failure event +$R_EVENT, redeployed +$R_REDEPLOY, replay of $R_ROWS rows took $R_MS ms" \
        "(done $R_DONE ms after the redeployment), caught up +$R_CAUGHT, window after the kill in" \
        "+$rt ms ($fd ms after its close; before the failure at most $pre ms); state taken over:" \
        "$R_KEPT kept, $R_PROMOTED promoted; longest loop stall $R_STALL ms, live nodes taken for dead $R_SILENT times"
    eval "REC_${ft}_$pt=$rt"
}

for pl_ in $REC_PLACEMENTS; do
    for m_ in $REC_MODES; do
        recovery_run "$pl_" "$m_"
    done
done
[ "$REC_COORD" = 1 ] && recovery_run nirvana replica coord
SB_ADDR=""
# ---------------------------------------------------------------- throughput
# tp_run FT RUN [SHADOW]: REC_TP_ROWS rows as fast as the cluster takes them; sets TP (rows/s)
tp_run() {
    TP=""
    start9 "tp_$1${3:+_$3}_$2" "$NODE_OPTS"
    setup nirvana "$1" "${3:-}"
    [ -z "${3:-}" ] || grep -q "stream s: home node c0, its log copied to" "$CD/c0.log" || die "the stream's log is not copied"
    subscribe
    t0=$(date +%s%3N)
    "$TOOL" gen --rows "$REC_TP_ROWS" --event-rate "$REC_TP_EVENT_RATE" --keys "$REC_KEYS" --seed 2 --base 0 2>/dev/null |
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s --end >"$CD/ingest.out" 2>"$CD/ingest.err"
    t1=$(date +%s%3N)
    wait_output "$W/ref_tp.csv" 600
    if ! same_output "$W/ref_tp.csv"; then
        failed "throughput, ft = $1 (run $2): the output differs from the embedded engine's" \
            "($(wc -l <"$CD/out.csv") lines, want $(wc -l <"$W/ref_tp.csv"))"
        return
    fi
    last=$(awk -F, 'NR > 1 && $1 > m { m = $1 } END { printf "%.0f", m }' "$CD/sub.csv")
    TP=$(awk -v n="$REC_TP_ROWS" -v ms=$((last - t0)) 'BEGIN { printf "%.0f", n * 1000 / ms }')
    # CPU time of the 9 nodes (user + system, clock ticks), which other jobs move less than wall time
    CPU=0
    for n in c0 n1 n2 n3 n4 n5 n6 n7 n8; do
        CPU=$((CPU + $(awk '{ print $14 + $15 }' "/proc/$(eval echo "\$PID_$n")/stat")))
    done
    CPU=$((CPU * 1000 / $(getconf CLK_TCK)))
    say "throughput, ft = $1${3:+, shadow = $3} (run $2): $REC_TP_ROWS rows processed in $((last - t0)) ms ($TP rows/s;" \
        "the ingest client took $((t1 - t0)) ms); the nodes used $CPU ms of CPU"
}

if [ "$REC_TP_RUNS" -gt 0 ]; then
    say "throughput: $REC_TP_ROWS rows ($REC_TP_EVENT_RATE per second of event time) as fast as they go, ft = none and replica, $REC_TP_RUNS runs each"
    "$TOOL" gen --rows "$REC_TP_ROWS" --event-rate "$REC_TP_EVENT_RATE" --keys "$REC_KEYS" --seed 2 --base 0 2>/dev/null |
        "$B/ares-sql" --memory -q -e "$DDL $Q;" --ingest s >"$W/ref_tp.csv" || die "embedded run (throughput)"
    tail -n +2 "$W/ref_tp.csv" | sort >"$W/ref_tp.csv.sorted"
    : >"$W/tp_pairs"
    : >"$W/tp_log_pairs"
    r=1
    while [ $r -le "$REC_TP_RUNS" ]; do
        # the order alternates (none first, then replica first, ...), so that
        # what one run leaves behind (page cache, disk writes) weighs on both
        c=""
        if [ $((r % 2)) = 1 ]; then
            tp_run none $r
            a=$TP ac=$CPU
            tp_run replica $r
            b=$TP bc=$CPU
            [ "$REC_TP_LOG" = 1 ] && tp_run replica $r log && c=$TP
        else
            [ "$REC_TP_LOG" = 1 ] && tp_run replica $r log && c=$TP
            tp_run replica $r
            b=$TP bc=$CPU
            tp_run none $r
            a=$TP ac=$CPU
        fi
        [ -n "$a" ] && [ -n "$b" ] && echo "$a $b $ac $bc" >>"$W/tp_pairs"
        [ -n "$b" ] && [ -n "$c" ] && echo "$b $c" >>"$W/tp_log_pairs"
        r=$((r + 1))
    done
    if [ -s "$W/tp_pairs" ]; then
        # other jobs on the machine move single runs by tens of percent: the
        # figure is the median of the runs' replica / none ratios
        set -- $(awk '{ print $2 / $1, $1, $2 }' "$W/tp_pairs" | sort -n | awk '{ r[NR] = $1; a += $2; b += $3 }
            END { m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
                  printf "%.0f %.0f %.1f %.3f %.3f\n", a / NR, b / NR, 100 * (1 - m), r[1], r[NR] }')
        figure throughput_none "$1" "rows/s"
        figure throughput_replica "$2" "rows/s"
        figure replica_overhead_pct "$3" "%"
        say "throughput: replica / none per run from $4 to $5 (median $(awk -v o="$3" 'BEGIN { printf "%.3f", 1 - o / 100 }'))"
        TP_OVERHEAD=$3
        figure replica_cpu_overhead_pct "$(awk '{ a += $3; b += $4 } END { printf "%.1f", 100 * (b - a) / a }' "$W/tp_pairs")" "%"
    fi
    if [ -s "$W/tp_log_pairs" ]; then
        # the stream's shadow kept by a copy of its log (SET shadow = 'log')
        # against the second feed from the coordinator, both ft = replica
        set -- $(awk '{ print $2 / $1, $2 }' "$W/tp_log_pairs" | sort -n | awk '{ r[NR] = $1; c += $2 }
            END { m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
                  printf "%.0f %.1f %.3f %.3f\n", c / NR, 100 * (1 - m), r[1], r[NR] }')
        figure throughput_replica_log_copy "$1" "rows/s"
        figure log_copy_overhead_pct "$2" "%"
        say "throughput: shadow = log / input per run from $3 to $4"
    fi
fi
stop_cluster

# ---------------------------------------------------------------- summary
val() { eval "echo \${$1:-}"; }
for m in $REC_MODES; do
    v=$(val "REC_${m}_nirvana")
    figure "recovery_ms_$m" "${v:-not measured}" "${v:+ms}"
done
if [ "$REC_COORD" = 1 ]; then
    v=$(val REC_replica_coord)
    figure recovery_ms_replica_coord "${v:-not measured}" "${v:+ms}"
fi
if [ -n "$(val REC_replica_nirvana)" ] && [ -n "$(val REC_checkpoint_nirvana)" ]; then
    figure recovery_ratio_replica_vs_checkpoint \
        "$(awk -v a="$REC_checkpoint_nirvana" -v b="$REC_replica_nirvana" 'BEGIN { printf "%.2f", a / b }')" "x"
fi
for m in $REC_MODES; do
    a=$(val "REC_${m}_nirvana") b=$(val "REC_${m}_roundrobin")
    [ -n "$a" ] && [ -n "$b" ] &&
        figure "recovery_change_nirvana_vs_roundrobin_$m" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%+.1f", 100 * (a - b) / b }')" "%"
done
[ -n "${REC_CHECK_ONLY:-}" ] && [ -z "$FAILED" ] && say "every run's output equals the embedded engine's (REC_CHECK_ONLY: targets not checked)"
target() { awk -v v="$2" -v t="$4" -v op="$3" 'BEGIN { ok = (op == "<=") ? v <= t : v >= t; print ok ? "met" : "NOT met" }'; }
[ -z "${REC_CHECK_ONLY:-}" ] && [ -n "$(val REC_replica_nirvana)" ] && say "target recovery_ms_replica <= 1000 ms: $(target x "$REC_replica_nirvana" "<=" 1000)"
[ -z "${REC_CHECK_ONLY:-}" ] && [ -n "$(val REC_replica_nirvana)" ] && [ -n "$(val REC_checkpoint_nirvana)" ] &&
    say "target recovery_ratio_replica_vs_checkpoint >= 2: $(target x "$(awk -v a="$REC_checkpoint_nirvana" -v b="$REC_replica_nirvana" 'BEGIN { print a / b }')" ">=" 2)"
[ -z "${REC_CHECK_ONLY:-}" ] && [ -n "${TP_OVERHEAD:-}" ] && say "target replica_overhead_pct <= 20: $(target x "$TP_OVERHEAD" "<=" 20)"
say "done in $(($(date +%s) - T0)) s ($(nproc) cores, shared by the 9 nodes, the generator and the clients)"
if [ -n "$FAILED" ]; then
    say "FAILED: $FAILED"
    exit 1
fi
