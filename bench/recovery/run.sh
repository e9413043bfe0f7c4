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
# Throughput: REC_TP_ROWS rows (REC_TP_EVENT_RATE per second of event time)
# ingested as fast as the cluster takes them, Nirvana placement, ft = none and
# ft = replica alternately, REC_TP_RUNS times each.  Rate = rows / (arrival of
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
#   KEEP_SCRATCH=1 (keep the logs and raw data in /tmp/ares-rec.*)
set -u
export LC_ALL=C
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB_NAME=recovery LIB_SCRATCH=ares-rec
. "$ROOT/bench/experiments/lib.sh"
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
T0=$(date +%s)
say() { echo "recovery: $*" >&2; }
figure() { echo "figure: $1 = $2${3:+ $3}"; }
tag() { echo "$1" | tr -d -; }
FAILED=""
# a case that went wrong: say so, keep the scratch directory, go on with the others
failed() {
    say "FAILED: $*; logs in $CD"
    FAILED="$FAILED${FAILED:+; }$*"
    KEEP_SCRATCH=1
}

DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS sv, CAST(window_end AS BIGINT) AS we FROM s WINDOW TUMBLING (SIZE $REC_WINDOW SECONDS) GROUP BY k"
ROWS=$((REC_RATE * REC_SECONDS))

# start9 DIR: the 9 nodes, 3 domains
start9() {
    new_cluster "$1"
    i=0
    for n in c0 n1 n2 n3 n4 n5 n6 n7 n8; do
        # shellcheck disable=SC2046
        start_node "$n" "d$((i / 3))" --slots "$REC_SLOTS" --dead-ms "$REC_DEAD_MS" $([ "$n" = c0 ] && echo --coordinator)
        i=$((i + 1))
    done
    wait_alive 9
}

# setup PLACEMENT FT: the stream and the query q; the stream's home must be c0
setup() {
    sqlc -e "$DDL SET parallelism = $REC_PARALLELISM; SET placement = '$1'; SET ft = '$2';" -e "CREATE QUERY q AS $Q;" ||
        die "CREATE QUERY ($1, ft $2)"
    sqlc -e "EXPLAIN PLACEMENT q;" >"$CD/placement.csv" || die "EXPLAIN PLACEMENT"
    grep -q "placement: $1;" "$CD/placement.csv" || die "q not placed by $1"
    grep -q "stream s: home node c0" "$CD/c0.log" || die "the stream's home is not c0: $(grep -o 'stream s: home node.*' "$CD/c0.log")"
}

# same_output REF: the subscriber's rows (arrival stamps cut) equal REF's, any order
same_output() {
    cut -d, -f2- "$CD/sub.csv" >"$CD/out.csv"
    [ "$(head -n 1 "$CD/out.csv")" = "$(head -n 1 "$1")" ] || return 1
    tail -n +2 "$CD/out.csv" | sort >"$CD/out.sorted"
    cmp -s "$CD/out.sorted" "$1.sorted"
}

# wait_output REF [TENTHS]: until the subscriber has as many lines as REF (default 30 s)
wait_output() {
    _want=$(wc -l <"$1")
    _i=0
    while [ "$(wc -l <"$CD/sub.csv")" -lt "$_want" ] && [ $_i -lt "${2:-300}" ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    sleep 0.3
    kill "$SUBP" 2>/dev/null
    wait "$SUBP" 2>/dev/null
    wait "$STAMPP" 2>/dev/null
}

# log_ms FILE ERE: wall-clock ms of the first line of a node log matching ERE
log_ms() {
    _lt=$(grep -E -m 1 "$2" "$1" 2>/dev/null | cut -d' ' -f1 | sed 's/T/ /; s/Z$//')
    [ -n "$_lt" ] && date -u -d "$_lt" +%s%3N
}
since() { [ -n "$1" ] && echo $(($1 - KILL_MS)) || echo "?"; }

# the reference: the same rows through the embedded engine
say "generating $ROWS rows ($REC_RATE per second of event time, $REC_KEYS keys) and the embedded engine's answer"
"$TOOL" gen --rows "$ROWS" --event-rate "$REC_RATE" --keys "$REC_KEYS" --seed 1 --base 0 >"$W/data.csv" 2>/dev/null
"$B/ares-sql" --memory -q -e "$DDL $Q;" --ingest s <"$W/data.csv" >"$W/ref.csv" || die "embedded run"
tail -n +2 "$W/ref.csv" | sort >"$W/ref.csv.sorted"
say "reference: $(($(wc -l <"$W/ref.csv") - 1)) result rows"

# ---------------------------------------------------------------- recovery runs
# recovery_run PLACEMENT FT: one run; sets REC_<ft>_<placement> (ms) when it is exact
recovery_run() {
    pl=$1 ft=$2 pt=$(tag "$1")
    start9 "rec_${ft}_$pt"
    setup "$pl" "$ft"
    # the victim: d1 or d2, whichever runs more aggregate tasks of q
    victim=$(awk -F, '$3 == "task" && $1 ~ /^AGGREGATE/ && ($5 == "d1" || $5 == "d2") { c[$5]++ }
        END { if (c["d2"] > c["d1"]) print "d2"; else if (c["d1"] > 0) print "d1" }' "$CD/placement.csv")
    [ -n "$victim" ] || { cat "$CD/placement.csv" >&2; die "$pl: no aggregate task of q outside d0: nothing to recover"; }
    case $victim in d1) vn="n3 n4 n5" ;; *) vn="n6 n7 n8" ;; esac
    lost=$(awk -F, -v d="$victim" '$3 == "task" && $5 == d { printf "%s%s", s, $1; s = " " }' "$CD/placement.csv")
    reps=$(awk -F, -v d="$victim" '$3 == "replica" && $5 == d { n++ } END { print n + 0 }' "$CD/placement.csv")
    subscribe
    say "$pl, ft = $ft: ${REC_SECONDS} s at $REC_RATE rows/s; $victim ($vn: $lost; $reps replicas) killed" \
        "${REC_KILL_LEAD_MS} ms before the window ending at ${REC_FAIL_AT} s closes"
    rm -f "$CD/start"
    "$TOOL" gen --rows "$ROWS" --event-rate "$REC_RATE" --keys "$REC_KEYS" --seed 1 --base 0 --pace \
        --start-file "$CD/start" 2>"$CD/gen.err" | tee "$CD/in.csv" |
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s >"$CD/ingest.out" 2>"$CD/ingest.err" &
    INGP=$!
    PIDS="$PIDS $INGP"
    _i=0
    while [ ! -s "$CD/start" ] && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
    START=$(cat "$CD/start")
    pids=""
    for v in $vn; do pids="$pids $(eval echo "\$PID_$v")"; done
    # shellcheck disable=SC2086
    "$TOOL" killat $((START + REC_FAIL_AT * 1000 - REC_KILL_LEAD_MS)) $pids >"$CD/kill_ms"
    KILL_MS=$(cat "$CD/kill_ms")
    wait "$INGP" || say "$pl, ft = $ft: the ingest client failed: $(tail -n 2 "$CD/ingest.err")"
    wait_output "$W/ref.csv"
    cmp -s "$CD/in.csv" "$W/data.csv" || die "the paced input differs from the reference's"
    cp "$CD/sub.csv" "$W/sub_${ft}_$pt.csv"
    echo "$START $KILL_MS" >"$W/times_${ft}_$pt"
    if ! grep -q "recovered as query" "$CD/c0.log"; then
        grep -E "cannot recover|failed" "$CD/c0.log" | head -n 3 >&2
        failed "$pl, ft = $ft: the coordinator did not recover q"
        return
    fi
    if ! same_output "$W/ref.csv"; then
        failed "$pl, ft = $ft: the output after recovery differs from the embedded engine's" \
            "($(wc -l <"$CD/out.csv") lines, want $(wc -l <"$W/ref.csv"))"
        diff "$CD/out.sorted" "$W/ref.csv.sorted" | head -n 6 >&2
        return
    fi
    # per window: rows counted, arrival of its last row, delay after its close
    awk -F, -v s="$START" 'NR > 1 { n[$5] += $3; if ($1 > a[$5]) a[$5] = $1 }
        END { for (w in n) printf "%d %d %.0f %d\n", w, n[w], a[w], a[w] - (s + w) }' "$CD/sub.csv" | sort -n >"$CD/windows"
    cp "$CD/windows" "$W/windows_${ft}_$pt"
    # recovery (see the header); also the slowest pre-failure delay and the first window's delay
    set -- $(awk -v k="$KILL_MS" -v s="$START" -v late="$REC_LATE_MS" '
        s + $1 <= k { if ($4 > pre) pre = $4; next }
        !first { first = 1; end = $3; fd = $4; next }
        $4 > pre + late && $3 > end { end = $3 }
        END { printf "%.0f %d %d\n", end - k, pre + 0, fd }' "$CD/windows")
    rt=$1 pre=$2 fd=$3
    # the logs' view, on the same clock
    dead=$(log_ms "$CD/c0.log" "node n[0-9] is DEAD")
    event=$(log_ms "$CD/c0.log" "failure event:")
    redep=$(log_ms "$CD/c0.log" "recovered as query")
    caught=$(log_ms "$CD/c0.log" "caught up with its output before the failure")
    set -- $(sed -n 's/.*replayed \([0-9]*\) logged rows from offset [-0-9]* (query start [0-9]*) in \([0-9.]*\) ms, \([0-9.]*\) ms after the redeployment.*/\1 \2 \3/p' "$CD/c0.log" | head -n 1) ? ? ?
    rrows=$1 rms=$2 rafter=$3
    set -- $(cat "$CD"/*.log | grep -o "took over the state of [0-9]* tasks here ([0-9]* kept, [0-9]* promoted replicas)" |
        tr -d '(' | awk '{ k += $9; p += $11 } END { printf "%d %d\n", k, p }')
    kept=$1 promoted=$2
    figure "recovery_ms_${ft}_$pt" "$rt" "ms"
    figure "recovery_detect_ms_${ft}_$pt" "$(since "$dead")" "ms"
    figure "recovery_redeploy_ms_${ft}_$pt" "$(since "$redep")" "ms"
    figure "recovery_replay_ms_${ft}_$pt" "$rms" "ms"
    figure "recovery_replay_rows_${ft}_$pt" "$rrows" "rows"
    say "$pl, ft = $ft: killed at $((KILL_MS - START)) ms of input; from the kill: DEAD +$(since "$dead") ms," \
        "failure event +$(since "$event"), redeployed +$(since "$redep"), replay of $rrows rows took $rms ms" \
        "(done $rafter ms after the redeployment), caught up +$(since "$caught"), window after the kill in" \
        "+$rt ms ($fd ms after its close; before the failure at most $pre ms); state taken over: $kept kept, $promoted promoted"
    eval "REC_${ft}_$pt=$rt"
}

for pl_ in $REC_PLACEMENTS; do
    for m_ in $REC_MODES; do
        recovery_run "$pl_" "$m_"
    done
done
# ---------------------------------------------------------------- throughput
# tp_run FT RUN: REC_TP_ROWS rows as fast as the cluster takes them; sets TP (rows/s)
tp_run() {
    TP=""
    start9 "tp_$1_$2"
    setup nirvana "$1"
    subscribe
    t0=$(date +%s%3N)
    "$TOOL" gen --rows "$REC_TP_ROWS" --event-rate "$REC_TP_EVENT_RATE" --keys "$REC_KEYS" --seed 2 --base 0 2>/dev/null |
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s >"$CD/ingest.out" 2>"$CD/ingest.err"
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
    say "throughput, ft = $1 (run $2): $REC_TP_ROWS rows processed in $((last - t0)) ms ($TP rows/s;" \
        "the ingest client took $((t1 - t0)) ms); the nodes used $CPU ms of CPU"
}

if [ "$REC_TP_RUNS" -gt 0 ]; then
    say "throughput: $REC_TP_ROWS rows ($REC_TP_EVENT_RATE per second of event time) as fast as they go, ft = none and replica, $REC_TP_RUNS runs each"
    "$TOOL" gen --rows "$REC_TP_ROWS" --event-rate "$REC_TP_EVENT_RATE" --keys "$REC_KEYS" --seed 2 --base 0 2>/dev/null |
        "$B/ares-sql" --memory -q -e "$DDL $Q;" --ingest s >"$W/ref_tp.csv" || die "embedded run (throughput)"
    tail -n +2 "$W/ref_tp.csv" | sort >"$W/ref_tp.csv.sorted"
    : >"$W/tp_pairs"
    r=1
    while [ $r -le "$REC_TP_RUNS" ]; do
        tp_run none $r
        a=$TP ac=$CPU
        tp_run replica $r
        [ -n "$a" ] && [ -n "$TP" ] && echo "$a $TP $ac $CPU" >>"$W/tp_pairs"
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
fi
stop_cluster

# ---------------------------------------------------------------- summary
val() { eval "echo \${$1:-}"; }
for m in $REC_MODES; do
    v=$(val "REC_${m}_nirvana")
    figure "recovery_ms_$m" "${v:-not measured}" "${v:+ms}"
done
if [ -n "$(val REC_replica_nirvana)" ] && [ -n "$(val REC_checkpoint_nirvana)" ]; then
    figure recovery_ratio_replica_vs_checkpoint \
        "$(awk -v a="$REC_checkpoint_nirvana" -v b="$REC_replica_nirvana" 'BEGIN { printf "%.2f", a / b }')" "x"
fi
for m in $REC_MODES; do
    a=$(val "REC_${m}_nirvana") b=$(val "REC_${m}_roundrobin")
    [ -n "$a" ] && [ -n "$b" ] &&
        figure "recovery_change_nirvana_vs_roundrobin_$m" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%+.1f", 100 * (a - b) / b }')" "%"
done
target() { awk -v v="$2" -v t="$4" -v op="$3" 'BEGIN { ok = (op == "<=") ? v <= t : v >= t; print ok ? "met" : "NOT met" }'; }
[ -n "$(val REC_replica_nirvana)" ] && say "target recovery_ms_replica <= 1000 ms: $(target x "$REC_replica_nirvana" "<=" 1000)"
[ -n "$(val REC_replica_nirvana)" ] && [ -n "$(val REC_checkpoint_nirvana)" ] &&
    say "target recovery_ratio_replica_vs_checkpoint >= 2: $(target x "$(awk -v a="$REC_checkpoint_nirvana" -v b="$REC_replica_nirvana" 'BEGIN { print a / b }')" ">=" 2)"
[ -n "${TP_OVERHEAD:-}" ] && say "target replica_overhead_pct <= 20: $(target x "$TP_OVERHEAD" "<=" 20)"
say "done in $(($(date +%s) - T0)) s ($(nproc) cores, shared by the 9 nodes, the generator and the clients)"
if [ -n "$FAILED" ]; then
    say "FAILED: $FAILED"
    exit 1
fi
