#!/bin/sh
# Window state under SET memory_budget (issue 19, section 2): one 1-hour
# tumbling window over ROWS rows (default 4M) with keys drawn from KEYS
# (default 2M: about 1.73M distinct), grouped by key (COUNT(*), SUM), run
# three ways on the embedded engine: no budget, a budget of half the
# working set (2x over) and of a tenth (10x over).  The working set is the
# window state the run without a budget holds in memory at the window's
# end: its groups times the bytes of one (DESCRIBE's "Window state").  Each
# run ingests the rows from a file (--ingest, which ends the stream, so the
# window closes and its rows are written to a file sink) under
# /usr/bin/time: peak RSS and rows per second; peak anonymous RSS is
# sampled besides (RSS counts the pages of LMDB's map the process has
# read, which are the kernel's page cache, not the heap).  The three sinks must be
# the same, byte for byte.  Takes a few minutes with the defaults.
# SKEW (default 1: uniform) draws keys as KEYS * u^SKEW (u uniform in [0, 1)):
# with SKEW > 1 the low keys are hot, as in most real inputs.
# Usage: sh bench/window_budget.sh [BUILD_DIR] [ROWS] [KEYS] [SKEW]   (default: build 4000000 2000000 1)
set -eu
BUILD=$(cd "${1:-build}" && pwd)
ROWS=${2:-4000000}
KEYS=${3:-2000000}
SKEW=${4:-1}
T=$(mktemp -d /tmp/ares-budget-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
A="$BUILD/ares-sql"
EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts')"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY k EMIT FINAL"
# ROWS rows over one hour (ts in ms), keys in [0, KEYS)
awk -v n="$ROWS" -v keys="$KEYS" -v skew="$SKEW" 'BEGIN { srand(19); for (i = 0; i < n; i++)
    print int(i * (3600000 / n)) "," int(rand() ^ skew * keys) "," i % 13 }' >"$T/in.csv"

# the bytes of one group: DESCRIBE of the same query over a few rows, its window open
head -n 1000 "$T/in.csv" >"$T/few.csv"
per=$("$A" --data "$T/few" -q -e "$EV; CREATE QUERY q AS $Q" -e "\\copy ev FROM '$T/few.csv'" -e "DESCRIBE q" |
    sed -n 's/.*Window state: \([0-9]*\) groups in memory (\([0-9]*\) bytes).*/\2 \1/p' | awk '{ print int($1 / $2) }')

# run NAME BUDGET: the rows into a fresh directory with memory_budget BUDGET
# (bytes): rss_kib (peak RSS), anon_kib (peak anonymous RSS: RSS less the
# LMDB map's file pages, sampled every 0.1 s), secs
run() {
    "$A" --data "$T/$1" -q -e "SET memory_budget = '$2'; $EV;
      CREATE QUERY q WITH (sink = 'file://$T/$1.csv', format = 'csv') AS $Q" >/dev/null
    /usr/bin/time -f "%M %e" -o "$T/$1.time" "$A" --data "$T/$1" -q --ingest ev <"$T/in.csv" >/dev/null &
    tp=$!
    anon_kib=0
    while kill -0 "$tp" 2>/dev/null; do
        for c in $(pgrep -P "$tp"); do
            a=$(awk '/^RssAnon:/ { print $2 }' /proc/$c/status 2>/dev/null || true)
            [ -n "$a" ] && [ "$a" -gt "$anon_kib" ] && anon_kib=$a
        done
        sleep 0.1
    done
    wait "$tp"
    set -- $(tail -n 1 "$T/$1.time")
    rss_kib=$1
    secs=$2
}
run nobudget 0
rss0=$rss_kib
anon0=$anon_kib
s0=$secs
groups=$(($(wc -l <"$T/nobudget.csv") - 1))
ws=$((groups * per))
echo "working set: $groups groups x $per bytes = $((ws / 1048576)) MiB; $ROWS rows, no budget: $rss0 KiB peak RSS, $s0 s"
run b2 $((ws / 2))
rss2=$rss_kib
anon2=$anon_kib
s2=$secs
run b10 $((ws / 10))
rss10=$rss_kib
anon10=$anon_kib
s10=$secs
cmp -s "$T/nobudget.csv" "$T/b2.csv" || { echo "the sink at 2x over budget differs from the one without" >&2; exit 1; }
cmp -s "$T/nobudget.csv" "$T/b10.csv" || { echo "the sink at 10x over budget differs from the one without" >&2; exit 1; }
rate() { awk -v n="$ROWS" -v s="$1" 'BEGIN { printf "%.0f", n / s }'; }
echo "figure: window_rss_mib_nobudget = $((rss0 / 1024)) MiB ($(rate "$s0") rows/s)"
echo "figure: window_rss_mib_2x = $((rss2 / 1024)) MiB (budget $((ws / 2 / 1048576)) MiB, $(rate "$s2") rows/s)"
echo "figure: window_rss_mib_10x = $((rss10 / 1024)) MiB (budget $((ws / 10 / 1048576)) MiB, $(rate "$s10") rows/s)"
echo "figure: window_anon_mib_nobudget = $((anon0 / 1024)) MiB (peak RSS less file pages, sampled)"
echo "figure: window_anon_mib_2x = $((anon2 / 1024)) MiB"
echo "figure: window_anon_mib_10x = $((anon10 / 1024)) MiB"
awk -v a="$s0" -v b="$s2" 'BEGIN { printf "figure: window_throughput_ratio_2x = %.2f x (against no budget)\n", a / b }'
awk -v a="$s0" -v b="$s10" 'BEGIN { printf "figure: window_throughput_ratio_10x = %.2f x (against no budget)\n", a / b }'
