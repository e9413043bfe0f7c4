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
#   recovery    (issue 7, fault tolerance; skipped until the cluster supports
#               it) for each FT_MODES mode: paced input, at EXP_FAIL_AT s every
#               node of domain EXP_FAIL_DOMAIN is killed (kill -9, together).
#               Recovery time = arrival time of the first complete window
#               (its n summed = the rows the generator wrote in that second)
#               that closed after the kill, minus the kill time.
#
# Prints `figure: NAME = VALUE UNIT` lines and the ratios next to the paper's
# claims; writes SVG plots (gnuplot) and the figures to EXP_PLOTS
# (default docs/plots).
#
# Usage: run.sh [--build DIR]   (settings through the environment:)
#   EXP_SECONDS=30 EXP_TUPLES=15000000 EXP_EVENT_RATE=100000 EXP_LAT_SECONDS=30 EXP_RATE=20000 EXP_KEYS=1000
#   EXP_PARALLELISM=6 EXP_SPEED=0.25 EXP_LINK_DELAY_MS=5
#   EXP_STRATEGIES="nirvana round-robin resource-aware"
#   FT_MODES="replica checkpoint upstream" EXP_REC_SECONDS=30 EXP_FAIL_AT=10 EXP_FAIL_DOMAIN=d1
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
# ---- HOOK (issue 7): the fault-tolerance modes the recovery phase runs
FT_MODES=${FT_MODES:-replica checkpoint upstream}
EXP_REC_SECONDS=${EXP_REC_SECONDS:-30}
EXP_FAIL_AT=${EXP_FAIL_AT:-10}
EXP_FAIL_DOMAIN=${EXP_FAIL_DOMAIN:-d1}
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

# start9: the paper's 9 workers, 3 domains, one slowed node per domain
start9() {
    new_cluster "$1"
    i=0
    for n in c0 n1 n2 n3 n4 n5 n6 n7 n8; do
        d=d$((i / 3))
        extra="--link-delay-ms $EXP_LINK_DELAY_MS"
        [ $((i % 3)) = 2 ] && extra="$extra --speed $EXP_SPEED"
        [ "$n" = c0 ] && extra="$extra --coordinator"
        # shellcheck disable=SC2086
        start_node "$n" "$d" $extra
        i=$((i + 1))
    done
    wait_alive 9
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

# ingest SECONDS RATE: the generator into the cluster; sets GEN_START GEN_END (ms), GEN_ROWS
ingest() {
    GEN_START=$(date +%s%3N)
    "$TOOL" gen --seconds "$1" --rate "$2" --keys "$EXP_KEYS" 2>"$CD/gen.err" |
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s 2>"$CD/ingest.err" &
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

# ---------------------------------------------------------------- FT support
# HOOK (issue 7): the recovery phase runs when the cluster takes SET ft and
# replicas really run.  Today SET ft is stored without effect and EXPLAIN
# PLACEMENT marks replicas "not running yet"; the phase is then skipped.
ft_supported() {
    start9 ftprobe
    sqlc -e "SET ft = 'replica';" 2>"$CD/ft.err" || { FT_WHY="SET ft = 'replica' fails: $(head -n 1 "$CD/ft.err")"; return 1; }
    if sqlc -e "SET ft = 'no-such-mode';" 2>/dev/null; then
        FT_WHY="SET ft accepts any value (stored, not interpreted)"
        return 1
    fi
    setup nirvana replica
    if grep -q "not running yet" "$CD/placement.csv"; then
        FT_WHY="EXPLAIN PLACEMENT says replicas are not running yet"
        return 1
    fi
    return 0
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
    start9 "tp_$st"
    setup "$s"
    figure "tasks_on_slow_nodes_$st" "$(slow_tasks)" "tasks"
    figure "domains_used_$st" "$(domains_used)" "domains"
    cp "$CD/placement.csv" "$W/placement_$st.csv"
    subscribe
    say "$s: throughput run, $EXP_TUPLES rows ($EXP_EVENT_RATE per second of event time), at most ${EXP_SECONDS} s"
    GEN_START=$(date +%s%3N)
    "$TOOL" gen --rows "$EXP_TUPLES" --event-rate "$EXP_EVENT_RATE" --keys "$EXP_KEYS" 2>"$CD/gen.err" |
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s 2>"$CD/ingest.err" &
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
    start9 "lat_$st"
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
    start9 "join_$st"
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
REC_RAN=""
if ft_supported || [ -n "${EXP_FORCE_RECOVERY:-}" ]; then
    [ -n "${FT_WHY:-}" ] && say "recovery phase forced (EXP_FORCE_RECOVERY) although: $FT_WHY"
    for m in $FT_MODES; do
        for s in $EXP_STRATEGIES; do
            st=$(tag "$s")
            start9 "rec_${m}_$st"
            setup "$s" "$m"
            subscribe
            say "$s, ft $m: recovery run, ${EXP_REC_SECONDS} s at $EXP_RATE rows/s, domain $EXP_FAIL_DOMAIN killed at ${EXP_FAIL_AT} s"
            case $EXP_FAIL_DOMAIN in d0) victims="c0 n1 n2" ;; d1) victims="n3 n4 n5" ;; *) victims="n6 n7 n8" ;; esac
            (
                sleep "$EXP_FAIL_AT"
                date +%s%3N >"$CD/kill_ms"
                for v in $victims; do eval "kill -KILL \$PID_$v" 2>/dev/null; done
            ) &
            KP=$!
            PIDS="$PIDS $KP"
            ingest "$EXP_REC_SECONDS" "$EXP_RATE"
            wait "$KP" 2>/dev/null
            drain
            kill_ms=$(cat "$CD/kill_ms")
            # throughput over time by arrival second (the dip and the catch-up)
            awk -F, -v s="$GEN_START" 'NR > 1 && $3 ~ /^[0-9]+$/ { a[int(($1 - s) / 1000)] += $3 }
                END { for (k in a) print k, a[k] }' "$CD/sub.csv" | sort -n >"$W/rec_${m}_$st.dat"
            echo "$(((kill_ms - GEN_START) / 1000))" >"$W/killat_${m}_$st"
            # recovery: first complete window closed after the kill
            rt=$(awk -F, -v k="$kill_ms" -v e="$GEN_END" -v r="$EXP_RATE" 'NR > 1 && $5 ~ /^[0-9]+$/ {
                    n[$5] += $3; if (!($5 in last) || $1 > last[$5]) last[$5] = $1 }
                END { best = -1; for (w in n) if (w + 0 > k + 1000 && w + 0 <= e + 0 && n[w] >= 0.99 * r && (best < 0 || last[w] < best)) best = last[w];
                      if (best < 0) print "none"; else print best - k }' "$CD/sub.csv")
            if [ "$rt" = none ]; then
                figure "recovery_${m}_$st" "not recovered within $(((GEN_END - kill_ms) / 1000))" "s"
            else
                figure "recovery_${m}_$st" "$rt" "ms"
                eval "REC_${m}_$st=$rt"
                REC_RAN=1
            fi
        done
    done
else
    say "recovery phase SKIPPED: fault tolerance (issue 7) is not in this cluster yet: $FT_WHY"
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
    plot_lines() { # OUT TITLE XLABEL YLABEL PREFIX [extra gnuplot]
        _pl=""
        for s in $EXP_STRATEGIES; do
            st=$(tag "$s")
            [ -s "$W/$5$st.dat" ] && _pl="$_pl${_pl:+, }'$W/$5$st.dat' using 1:2 with lines lw 2 title '$s'"
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
            ka=$(cat "$W/killat_${m}_nirvana" 2>/dev/null || echo "$EXP_FAIL_AT")
            plot_lines "$EXP_PLOTS/throughput-failure-$m.svg" "Throughput around the failure of domain $EXP_FAIL_DOMAIN (ft = $m)" \
                "seconds since the input started" "tuples/s in results (by arrival)" "rec_${m}_" \
                "set yrange [0:*]; set arrow from $ka, graph 0 to $ka, graph 1 nohead lc rgb 'red' dt 2; set label 'failure' at $ka, graph 0.95 tc rgb 'red'"
        done
        : >"$W/rec.dat"
        for m in $FT_MODES; do
            line="$m"
            for s in $EXP_STRATEGIES; do line="$line $(val "REC_${m}_$(tag "$s")")"; done
            echo "$line" | awk '{ for (i = 2; i <= NF + 0; i++) if ($i == "") $i = 0; print }' >>"$W/rec.dat"
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
set title 'Recovery time after the failure of domain $EXP_FAIL_DOMAIN'
set ylabel 'ms'
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
