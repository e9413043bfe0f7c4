#!/bin/sh
# `make experiments`: the paper's experiments (issue 8), as far as one
# machine allows.  For each placement strategy a fresh cluster of 9 ares-node
# processes on loopback, in 3 failure domains (c0 n1 n2 | n3 n4 n5 | n6 n7 n8),
# n2, n5 and n8 slowed (--speed), every node holding its frames to another
# domain (--link-delay-ms); the coordinator c0 is the stream's home (source)
# and runs the sink.  One standing query, placed by the strategy under test:
#
#   SELECT k, COUNT(*) AS n, MAX(ts) AS last_ts, CAST(window_end AS BIGINT) AS we
#   FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k       (SET parallelism = P)
#
# Input: bench/experiments/exp_tool gen, rows ts,k,v where ts is the
# wall-clock time (ms) at which the generator wrote the row (event time =
# ingest time), piped into `ares-sql --connect --ingest s`.  A subscriber
# (`ares-sql --connect -e 'SUBSCRIBE q;'`) feeds `exp_tool stamp`, which
# prefixes each result row with its arrival wall-clock time.
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
#   join        the latency run again with an interval self-join ($QJ below,
#               EXP_JOIN=0 skips it): per result pair, arrival time - the later
#               of the two rows' ts (a pair exists once both rows are in).
#   recovery    (issue 7) for each FT_MODES mode and each strategy: the
#               latency run's paced input for EXP_REC_SECONDS, a copy of it
#               kept; after about EXP_FAIL_AT s, EXP_KILL_LEAD_MS before a
#               window (a wall-clock second) closes, every node of domain
#               EXP_FAIL_DOMAIN gets SIGKILL at once (exp_tool killat); auto:
#               d1 or d2, whichever runs more of q's aggregates (then tasks),
#               never d0 (the coordinator's, with the stream's home: no
#               standby coordinator and no stream log replication yet).
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
#
# Every node has EXP_SLOTS slots (4): 36 for q's 18 tasks and 6 replicas, 12
# in a domain, so that no strategy can put the whole query in the
# coordinator's domain (9 machines' worth of slots, where the default 16 a
# node let Nirvana and resource-aware pack the query next to its source and
# sink, which no domain failure but the coordinator's then touched).
# Every node runs with --dead-ms EXP_DEAD_MS (10000): a slowed node sleeps on
# its event loop after each batch (docs/operations.md advises a --dead-ms of
# a few seconds for such a cluster), and while a replay floods it, its loop
# went up to 5.5 s without polling its sockets in our runs.  Its peers then
# took it for dead and dropped its rows, which no recovery replayed (wrong
# output; the recovery lines print the longest stall and such false deaths).
# A SIGKILLed node is detected at once (its connections close), whatever
# --dead-ms says.
#
# Prints `figure: NAME = VALUE UNIT` lines and the ratios next to the paper's
# claims; writes SVG plots (gnuplot) and the figures to EXP_PLOTS
# (default docs/plots).
#
# Usage: run.sh [--build DIR]   (settings through the environment:)
#   EXP_SECONDS=30 EXP_TUPLES=15000000 EXP_EVENT_RATE=100000 EXP_LAT_SECONDS=30 EXP_RATE=20000 EXP_KEYS=1000
#   EXP_PARALLELISM=6 EXP_SPEED=0.25 EXP_LINK_DELAY_MS=5
#   EXP_STRATEGIES="nirvana round-robin resource-aware"
#   EXP_SLOTS=4 EXP_DEAD_MS=10000
#   FT_MODES="replica checkpoint upstream" EXP_REC_SECONDS=25 EXP_FAIL_AT=15 EXP_FAIL_DOMAIN=auto
#   EXP_KILL_LEAD_MS=100 EXP_REC_LATE_MS=250
#   EXP_FORCE_RECOVERY=1 (run the recovery phase even when ft looks unsupported)
#   EXP_ONLY_RECOVERY=1 (only the recovery phase)
#   EXP_PLOTS=docs/plots  KEEP_SCRATCH=1 (keep the logs and raw data)
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB_NAME=run.sh LIB_SCRATCH=ares-exp
. "$ROOT/bench/experiments/lib.sh"
EXP_SECONDS=${EXP_SECONDS:-30}
EXP_TUPLES=${EXP_TUPLES:-15000000}
EXP_EVENT_RATE=${EXP_EVENT_RATE:-100000}
EXP_LAT_SECONDS=${EXP_LAT_SECONDS:-30}
EXP_RATE=${EXP_RATE:-20000}
EXP_KEYS=${EXP_KEYS:-1000}
EXP_PARALLELISM=${EXP_PARALLELISM:-6}
EXP_SPEED=${EXP_SPEED:-0.25}
EXP_LINK_DELAY_MS=${EXP_LINK_DELAY_MS:-5}
EXP_STRATEGIES=${EXP_STRATEGIES:-nirvana round-robin resource-aware}
EXP_JOIN=${EXP_JOIN:-1}
EXP_DEAD_MS=${EXP_DEAD_MS:-10000}
EXP_SLOTS=${EXP_SLOTS:-4}
FT_MODES=${FT_MODES-replica checkpoint upstream}
EXP_REC_SECONDS=${EXP_REC_SECONDS:-25}
EXP_FAIL_AT=${EXP_FAIL_AT:-15}
EXP_FAIL_DOMAIN=${EXP_FAIL_DOMAIN:-auto}
EXP_KILL_LEAD_MS=${EXP_KILL_LEAD_MS:-100}
EXP_REC_LATE_MS=${EXP_REC_LATE_MS:-250}
EXP_PLOTS=${EXP_PLOTS:-$ROOT/docs/plots}
mkdir -p "$EXP_PLOTS"
EXP_PLOTS=$(cd "$EXP_PLOTS" && pwd)
T0=$(date +%s)
FIG="$W/figures.txt"
: >"$FIG"
say() { echo "experiments: $*" >&2; }
figure() { echo "figure: $1 = $2${3:+ $3}" | tee -a "$FIG"; }
tag() { echo "$1" | tr -d -; }

Q="SELECT k, COUNT(*) AS n, MAX(ts) AS last_ts, CAST(window_end AS BIGINT) AS we FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
# the windowed join: an interval self-join, 10 % of the rows against 10 %
QJ="SELECT a.k, a.ts AS ats, b.ts AS bts FROM s a JOIN s b ON a.k = b.k WITHIN 100 MILLISECONDS WHERE a.v < 100 AND b.v >= 900"

# paper9 DIR: the paper's 9 workers, 3 domains, one slowed node per domain
paper9() {
    start9 "$1" "--slots $EXP_SLOTS --link-delay-ms $EXP_LINK_DELAY_MS --dead-ms $EXP_DEAD_MS" "--speed $EXP_SPEED"
}

# setup STRATEGY [FTMODE [QUERY]]: the stream and the query q on the current cluster
setup() {
    ftset=""
    [ -n "${2:-}" ] && ftset="SET ft = '$2'; SET replicas = 1;"
    sqlc -e "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');
             SET parallelism = $EXP_PARALLELISM; SET placement = '$1'; $ftset" || die "setup ($1)"
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
    kill "$SUBP" "$INGP" 2>/dev/null
    wait "$SUBP" "$INGP" 2>/dev/null
    wait "$STAMPP" 2>/dev/null
}

# ingest SECONDS RATE [COPY]: the generator into the cluster (and into the
# file COPY); sets GEN_START GEN_END (ms), GEN_ROWS
ingest() {
    GEN_START=$(date +%s%3N)
    "$TOOL" gen --seconds "$1" --rate "$2" --keys "$EXP_KEYS" 2>"$CD/gen.err" | tee "${3:-/dev/null}" |
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s --end 2>"$CD/ingest.err" &
    INGP=$!
    PIDS="$PIDS $INGP"
    # the generator stops after SECONDS; ares-sql may wait longer (for the
    # stream's end to be processed): drain stops it
    while [ ! -s "$CD/gen.err" ] && kill -0 "$INGP" 2>/dev/null; do sleep 0.1; done
    GEN_END=$(date +%s%3N)
    GEN_ROWS=$(sed -n 's/exp_tool gen: \([0-9]*\) rows.*/\1/p' "$CD/gen.err")
}

# slow_tasks: tasks of q (sources, sinks aside) on the slowed nodes / all of them
slow_tasks() {
    awk -F, '$3 == "task" && $2 !~ /SOURCE|SINK/ { all++; if ($4 == "n2" || $4 == "n5" || $4 == "n8") s++ }
             END { printf "%d/%d", s, all }' "$CD/placement.csv"
}
domains_used() {
    awk -F, '$3 == "task" { d[$5] = 1 } END { n = 0; for (k in d) n++; print n }' "$CD/placement.csv"
}

# percentiles HIST CDF: p50 p99 (sets p50, p99) and the CDF of a histogram "ms count"
percentiles() {
    awk '{ t += $2; c[NR] = $2; v[NR] = $1 } END {
            if (!t) { print "- -"; exit }
            a = 0; p50 = p99 = "";
            for (i = 1; i <= NR; i++) { a += c[i]; if (p50 == "" && a >= 0.50 * t) p50 = v[i]; if (p99 == "" && a >= 0.99 * t) p99 = v[i] }
            print p50, p99 }' "$1" >"$1.pct"
    # (the 0 ms bucket, under 1 ms, is drawn at 0.5 ms on the log scale)
    awk '{ t += $2; c[NR] = $2; v[NR] = $1 } END { a = 0; for (i = 1; i <= NR; i++) { a += c[i]; print (v[i] == 0 ? 0.5 : v[i]), a / t } }' "$1" >"$2"
    read -r p50 p99 <"$1.pct"
}

# ---------------------------------------------------------------- runs
echo "experiments: 9 nodes (3 domains, n2 n5 n8 at --speed $EXP_SPEED), --link-delay-ms $EXP_LINK_DELAY_MS," \
    "parallelism $EXP_PARALLELISM, $EXP_KEYS keys; $(nproc) cores shared by all nodes, the generator and the clients" >&2
for s in $EXP_STRATEGIES; do
    [ -n "${EXP_ONLY_RECOVERY:-}" ] && break
    st=$(tag "$s")
    # ---- throughput: EXP_TUPLES rows ingested unpaced, measured at the output
    paper9 "tp_$st"
    setup "$s"
    figure "tasks_on_slow_nodes_$st" "$(slow_tasks)" "tasks"
    figure "domains_used_$st" "$(domains_used)" "domains"
    cp "$CD/placement.csv" "$W/placement_$st.csv"
    subscribe
    say "$s: throughput run, $EXP_TUPLES rows ($EXP_EVENT_RATE per second of event time), at most ${EXP_SECONDS} s"
    GEN_START=$(date +%s%3N)
    "$TOOL" gen --rows "$EXP_TUPLES" --event-rate "$EXP_EVENT_RATE" --keys "$EXP_KEYS" 2>"$CD/gen.err" |
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s --end 2>"$CD/ingest.err" &
    INGP=$!
    PIDS="$PIDS $INGP"
    # until every row is in a result, or EXP_SECONDS
    while :; do
        sleep 0.5
        el=$(($(date +%s%3N) - GEN_START))
        [ "$el" -ge $((EXP_SECONDS * 1000)) ] && { TP_END=cutoff; break; }
        got=$(awk -F, 'NR > 1 && $3 ~ /^[0-9]+$/ { t += $3 } END { print t + 0 }' "$CD/sub.csv")
        [ "$got" -ge "$EXP_TUPLES" ] && { TP_END=done; break; }
    done
    kill "$INGP" 2>/dev/null
    wait "$INGP" 2>/dev/null
    kill "$SUBP" 2>/dev/null
    wait "$SUBP" 2>/dev/null
    wait "$STAMPP" 2>/dev/null
    # one-second samples by arrival: rows of the results that reached the
    # subscriber in that second (a result row's n counts its input rows),
    # up to the second in which 98 % of the rows seen had arrived (after it
    # the last windows wait for the stream's end: a tail, not a rate)
    awk -F, -v s="$GEN_START" 'NR > 1 && $3 ~ /^[0-9]+$/ { a[int(($1 - s) / 1000)] += $3; t += $3; if ($1 > m) m = $1 }
        END { last = int((m - s) / 1000); c = 0
              for (k = 0; k <= last; k++) { printf "%d %d\n", k, a[k] + 0; c += a[k]; if (c >= 0.98 * t) break } }' \
        "$CD/sub.csv" >"$W/tp_$st.dat"
    # the last 10 of those one-second samples (the first, a start-up second, left out)
    tp=$(awk 'NR > 1' "$W/tp_$st.dat" | tail -n 10 | awk '{ t += $2; n++ } END { if (n) printf "%.0f", t / n; else print 0 }')
    tot=$(awk -F, 'NR > 1 && $3 ~ /^[0-9]+$/ { t += $3; if ($1 > m) m = $1 } END { printf "%d %.0f\n", t, m }' "$CD/sub.csv")
    avg=$(echo "$tot" | awk -v s="$GEN_START" '{ printf "%.0f", $1 / (($2 - s) / 1000) }')
    say "$s: ${tot% *} rows in results ($TP_END), whole-run average $avg rows/s"
    figure "throughput_$st" "$tp" "tuples/s"
    figure "throughput_whole_run_$st" "$avg" "tuples/s"
    [ "$(wc -l <"$W/tp_$st.dat")" -lt 11 ] &&
        say "$s: WARNING: fewer than 10 one-second samples: raise EXP_TUPLES for a steady-state figure"
    eval "TP_$st=$tp TPW_$st=$avg"
    [ -n "${KEEP_SCRATCH:-}" ] && cp "$CD/sub.csv" "$W/sub_tp_$st.csv"

    # ---- latency: paced input
    paper9 "lat_$st"
    setup "$s"
    subscribe
    say "$s: latency run, ${EXP_LAT_SECONDS} s at $EXP_RATE rows/s"
    ingest "$EXP_LAT_SECONDS" "$EXP_RATE"
    drain
    # histogram in 1 ms buckets: every result row of a window that closed
    # while input flowed (the windows the end of the input closes are left out)
    awk -F, -v e="$GEN_END" 'NR > 1 && $5 ~ /^[0-9]+$/ && $5 <= e { l = $1 - $5; if (l < 0) l = 0; h[l]++ }
        END { for (k in h) print k, h[k] }' "$CD/sub.csv" | sort -n >"$W/hist_$st.dat"
    percentiles "$W/hist_$st.dat" "$W/cdf_$st.dat"
    lrate=$(awk -F, -v s="$GEN_START" -v e="$GEN_END" 'NR > 1 && $5 ~ /^[0-9]+$/ && $5 <= e && $5 > s + 1000 { t += $3; w[$5] = 1 }
        END { n = 0; for (k in w) n++; if (n) printf "%.0f", t / n; else print 0 }' "$CD/sub.csv")
    figure "latency_p50_$st" "$p50" "ms"
    figure "latency_p99_$st" "$p99" "ms"
    figure "latency_run_throughput_$st" "$lrate" "tuples/s"
    eval "P50_$st=$p50 P99_$st=$p99"

    # ---- the windowed (interval) join: latency only, paced input
    [ "$EXP_JOIN" = 1 ] || continue
    paper9 "join_$st"
    setup "$s" "" "$QJ"
    subscribe
    say "$s: join latency run, ${EXP_LAT_SECONDS} s at $EXP_RATE rows/s"
    ingest "$EXP_LAT_SECONDS" "$EXP_RATE"
    drain
    # a pair can exist once its later row has entered: latency = arrival - max(ats, bts)
    awk -F, -v e="$GEN_END" 'NR > 1 && $3 ~ /^[0-9]+$/ { m = $3 > $4 ? $3 : $4; l = $1 - m; if (l < 0) l = 0; h[l]++ }
        END { for (k in h) print k, h[k] }' "$CD/sub.csv" | sort -n >"$W/jhist_$st.dat"
    percentiles "$W/jhist_$st.dat" "$W/jcdf_$st.dat"
    figure "join_latency_p50_$st" "$p50" "ms"
    figure "join_latency_p99_$st" "$p99" "ms"
    figure "join_pairs_$st" "$(($(wc -l <"$CD/sub.csv") - 1))" "rows"
    eval "JP50_$st=$p50 JP99_$st=$p99"
done

# ---------------------------------------------------------------- recovery (issue 7)
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

# recovery_run STRATEGY MODE: paced input, domain EXP_FAIL_DOMAIN killed;
# sets REC_<mode>_<strategy> (ms) when the output is exact
recovery_run() {
    st=$(tag "$1")
    paper9 "rec_${2}_$st"
    setup "$1" "$2"
    fdom=$EXP_FAIL_DOMAIN
    # auto: d1 or d2, whichever runs more of q's aggregates, then of its tasks
    [ "$fdom" = auto ] && fdom=$(awk -F, '$3 == "task" && ($5 == "d1" || $5 == "d2") { c[$5] += ($1 ~ /AGGREGATE/) ? 100 : 1 }
        END { print (c["d2"] > c["d1"]) ? "d2" : "d1" }' "$CD/placement.csv")
    lost=$(awk -F, -v d="$fdom" '$3 == "task" && $5 == d { n++; if ($1 ~ /AGGREGATE/) a++ }
        END { printf "%d tasks (%d aggregates)", n, a }' "$CD/placement.csv")
    figure "rec_lost_tasks_${2}_$st" "$(echo "$lost" | cut -d' ' -f1)" "tasks (in $fdom)"
    subscribe
    # just before a window (a wall-clock second) closes
    now=$(date +%s%3N)
    kill_domain_at $(((now + EXP_FAIL_AT * 1000) / 1000 * 1000 + 1000 - EXP_KILL_LEAD_MS)) "$fdom"
    say "$1, ft $2: recovery run, ${EXP_REC_SECONDS} s at $EXP_RATE rows/s; domain $fdom" \
        "($(domain_nodes "$fdom"): $lost of q) killed after about ${EXP_FAIL_AT} s"
    ingest "$EXP_REC_SECONDS" "$EXP_RATE" "$CD/in.csv"
    wait "$KILLP"
    kill_ms=$(cat "$CD/kill_ms")
    "$B/ares-sql" --memory -q -e "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts'); $Q;" \
        --ingest s <"$CD/in.csv" >"$CD/ref.csv" || die "embedded run ($1, ft $2)"
    tail -n +2 "$CD/ref.csv" | sort >"$CD/ref.csv.sorted"
    wait "$INGP"
    wait_output "$CD/ref.csv" 200
    # throughput around the failure: rows in the results that arrived in
    # each second, seconds counted from the kill
    # each second counted from the kill (an empty second as 0)
    awk -F, -v k="$kill_ms" 'NR > 1 && $3 ~ /^[0-9]+$/ { t = ($1 - k) / 1000; b = int(t); if (t < 0 && b != t) b--; a[b] += $3
            if (!n++ || b < lo) lo = b; if (b > hi) hi = b }
        END { for (s = lo; s <= hi; s++) print s, a[s] + 0 }' "$CD/sub.csv" >"$W/rec_${2}_$st.dat"
    recovery_log "$kill_ms" c0
    if ! grep -q "recovered as query" "$CD/c0.log" && [ "$(echo "$lost" | cut -d' ' -f1)" -gt 0 ]; then
        rec_failed "${2}_$st" "$1, ft $2: the coordinator did not recover q"
        return
    fi
    if ! same_output "$CD/ref.csv"; then
        rec_failed "${2}_$st" "$1, ft $2: the output after recovery differs from the embedded engine's" \
            "($(wc -l <"$CD/out.csv") lines, want $(wc -l <"$CD/ref.csv"))"
        return
    fi
    windows "$CD/sub.csv" 0 >"$W/rec_windows_${2}_$st"
    set -- "$1" "$2" $(recovery_of "$W/rec_windows_${2}_$st" "$kill_ms" 0 "$EXP_REC_LATE_MS")
    say "$1, ft $2: from the kill: DEAD +$R_DEAD ms, redeployed +$R_REDEPLOY, replayed $R_ROWS rows in $R_MS ms," \
        "caught up +$R_CAUGHT; the first window after the kill arrived $5 ms after its close (before: at most $4 ms);" \
        "state taken over: $R_KEPT kept, $R_PROMOTED promoted; longest loop stall $R_STALL ms, live nodes taken for dead $R_SILENT times"
    figure "recovery_${2}_$st" "$3" "ms"
    figure "recovery_replay_rows_${2}_$st" "$R_ROWS" "rows"
    eval "REC_${2}_$st=$3"
    REC_RAN=1
}
# rec_failed MODE_STRATEGY MESSAGE...: a run whose recovery went wrong gives no figure
rec_failed() {
    _which=$1
    shift
    say "FAILED: $*; logs kept in $CD (longest loop stall $R_STALL ms, live nodes taken for dead $R_SILENT times)"
    rm -f "$W/rec_$_which.dat"
    figure "recovery_$_which" "FAILED" "($*)"
    REC_FAILED="$REC_FAILED${REC_FAILED:+; }$*"
    KEEP_SCRATCH=1
}

REC_RAN="" REC_FAILED=""
if ft_supported || [ -n "${EXP_FORCE_RECOVERY:-}" ]; then
    [ -n "${FT_WHY:-}" ] && say "recovery phase forced (EXP_FORCE_RECOVERY) although: $FT_WHY"
    for m in $FT_MODES; do
        for s in $EXP_STRATEGIES; do
            recovery_run "$s" "$m"
        done
    done
else
    say "recovery phase SKIPPED: this cluster has no fault tolerance: $FT_WHY"
    figure recovery "not measured (ft not supported: $FT_WHY)"
fi
stop_cluster

# ---------------------------------------------------------------- ratios
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a != "-") printf "%.2fx", a / b; else print "n/a" }'; }
change() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0 && a != "-") printf "%+.1f %%", 100 * (a - b) / b; else print "n/a" }'; }
val() { eval "echo \${$1:-}"; }
echo "experiments: Nirvana against the baselines, next to the paper's claims:" | tee -a "$FIG"
for b in roundrobin resourceaware; do
    case " $EXP_STRATEGIES " in *" nirvana "*) ;; *) continue ;; esac
    if [ -n "$(val "TP_$b")" ]; then
        figure "ratio_throughput_nirvana_vs_$b" "$(ratio "$TP_nirvana" "$(val "TP_$b")")" "(paper: 3.6x)"
        figure "ratio_throughput_whole_run_nirvana_vs_$b" "$(ratio "$TPW_nirvana" "$(val "TPW_$b")")" "(paper: 3.6x)"
        figure "change_latency_p50_nirvana_vs_$b" "$(change "$P50_nirvana" "$(val "P50_$b")")" "(paper: -50.2 %)"
        figure "change_latency_p99_nirvana_vs_$b" "$(change "$P99_nirvana" "$(val "P99_$b")")" "(paper: -50.2 %)"
    fi
    [ -n "$(val "JP50_$b")" ] && {
        figure "change_join_latency_p50_nirvana_vs_$b" "$(change "${JP50_nirvana:-}" "$(val "JP50_$b")")" "(paper: -50.2 %)"
        figure "change_join_latency_p99_nirvana_vs_$b" "$(change "${JP99_nirvana:-}" "$(val "JP99_$b")")" "(paper: -50.2 %)"
    }
    for m in $FT_MODES; do
        [ -n "$(val "REC_${m}_nirvana")" ] && [ -n "$(val "REC_${m}_$b")" ] &&
            figure "change_recovery_${m}_nirvana_vs_$b" "$(change "$(val "REC_${m}_nirvana")" "$(val "REC_${m}_$b")")" "(paper: -52.5 %)"
    done
    [ -n "$REC_RAN" ] || figure "change_recovery_nirvana_vs_$b" "not measured" "(paper: -52.5 %)"
done

# ---------------------------------------------------------------- plots
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
    plot_lines "$EXP_PLOTS/throughput.svg" "Throughput over time, unpaced input (9 nodes, 3 slowed, ${EXP_LINK_DELAY_MS} ms cross-domain)" \
        "seconds since the input started" "input tuples/s in results (1 s samples)" tp_ "set yrange [0:*]; set format y '%.1s%c'"
    plot_lines "$EXP_PLOTS/latency-cdf.svg" "Aggregation latency CDF at $EXP_RATE tuples/s (result arrival - window close)" \
        "latency (ms, log scale)" "fraction of result rows" cdf_ "set logscale x; set yrange [0:1]"
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
                v=$(val "REC_${m}_$(tag "$s")")
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
