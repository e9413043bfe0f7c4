#!/bin/sh
# bench/testbed/calibrate.sh: does the testbed's CPU quota make a node as
# slow as its quota says, and what does a row cost each node?  Part of
# `make experiments`; alone: bench/testbed/calibrate.sh [--build DIR].
#
# 1. Quota linearity.  The embedded engine (ares-sql --memory) runs the
#    experiments' windowed aggregation over rows from a file (no generator in
#    the loop) inside a cgroup at a quota of 1 CPU, then at each of
#    CAL_QUOTAS, over N and 2N rows (N = CAL_ROWS_PER_CPU x the quota; the
#    difference cancels the start-up).  Its rate at quota q against its rate at 1 CPU,
#    divided by q, is testbed_quota_linearity_Q (1.0: the rate scales with
#    the quota exactly).  A CPU-bound process under a quota of q runs about
#    q times as fast: that is what the slowed nodes of the experiments rely on.
# 2. Cost per row.  9 uncapped nodes in 3 domains, round-robin placement
#    (every operator spread), CAL_CLUSTER_ROWS rows through the query; each
#    node's CPU time (/proc/PID/stat) over the run, per input row:
#    testbed_cpu_us_per_row_NODE, and the total.  The seed cost model of
#    planner/placement_bridge.c (docs/nirvana.md, "Seed costs") takes its
#    per-operator costs from this split.
#
#   CAL_ROWS_PER_CPU=8000000 CAL_QUOTAS="0.5 0.25 0.05" CAL_CLUSTER_ROWS=3000000
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB_NAME=calibrate.sh LIB_SCRATCH=ares-cal
. "$ROOT/bench/experiments/lib.sh"
. "$ROOT/bench/testbed/lib.sh"
CAL_ROWS_PER_CPU=${CAL_ROWS_PER_CPU:-8000000}
CAL_QUOTAS=${CAL_QUOTAS:-0.5 0.25 0.05}
CAL_CLUSTER_ROWS=${CAL_CLUSTER_ROWS:-3000000}
figure() { echo "figure: $1 = $2${3:+ $3}"; }
Q="SELECT k, COUNT(*) AS n, MAX(ts) AS last_ts, CAST(window_end AS BIGINT) AS we FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"

# Each quota runs the engine over N and over 2N rows (N = CAL_ROWS_PER_CPU x
# the quota, so every run takes about as long): rate = N / (time of 2N -
# time of N), which cancels what starting the process costs.
"$TOOL" gen --rows $((2 * CAL_ROWS_PER_CPU)) --event-rate 100000 --keys 1000 2>/dev/null >"$W/in.csv"
tb_group cal 1
# secs_under CPUS ROWS: seconds the embedded engine takes over the first ROWS
# rows inside the group at CPUS (called in $(...): a subshell, so the group
# is made above)
secs_under() {
    tb_quota cal "$1"
    head -n "$2" "$W/in.csv" >"$W/part.csv"
    _t0=$(date +%s%N)
    (tb_run cal "$B/ares-sql" --memory -q -e "$DDL $Q;" --ingest s <"$W/part.csv" >/dev/null) ||
        { echo "calibrate.sh: the embedded run failed" >&2; exit 1; }
    _t1=$(date +%s%N)
    awk -v ns="$((_t1 - _t0))" 'BEGIN { printf "%.4f", ns / 1e9 }'
}
# rate_under CPUS: rows/s at CPUS, start-up cancelled
rate_under() {
    _n=$(awk -v r="$CAL_ROWS_PER_CPU" -v q="$1" 'BEGIN { printf "%d", r * q }')
    _a=$(secs_under "$1" "$_n")
    _b=$(secs_under "$1" $((2 * _n)))
    awk -v n="$_n" -v a="$_a" -v b="$_b" 'BEGIN { if (b > a) printf "%.0f", n / (b - a); else print 0 }'
}
ref=$(rate_under 1)
figure testbed_rate_at_1cpu "$ref" "rows/s"
for q in $CAL_QUOTAS; do
    r=$(rate_under "$q")
    figure "testbed_rate_at_${q}cpu" "$r" "rows/s"
    figure "testbed_quota_linearity_$q" "$(awk -v r="$r" -v f="$ref" -v q="$q" 'BEGIN { printf "%.3f", r / f / q }')" \
        "(rate at $q CPU / rate at 1 CPU / $q; 1 = exact)"
done

start9 cal "--slots 6"
sqlc -e "$DDL SET parallelism = 6; SET placement = 'round-robin';" || die "setup"
sqlc -e "CREATE QUERY q AS $Q;" || die "CREATE QUERY"
sqlc -e "EXPLAIN PLACEMENT q;" | awk -F, '$3 == "task" { t[$4] = t[$4] " " $1 } END { for (n in t) print n ":" t[n] }' |
    sort >"$W/tasks"
sleep 1
for n in c0 n1 n2 n3 n4 n5 n6 n7 n8; do eval "B_$n=\$(tb_cpu_ms \$PID_$n)"; done
"$TOOL" gen --rows "$CAL_CLUSTER_ROWS" --event-rate 100000 --keys 1000 2>/dev/null |
    "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q --ingest s --end >/dev/null 2>&1
sleep 1
tot=0
for n in c0 n1 n2 n3 n4 n5 n6 n7 n8; do
    ms=$(($(tb_cpu_ms "$(eval echo "\$PID_$n")") - $(eval echo "\$B_$n")))
    tot=$((tot + ms))
    figure "testbed_cpu_us_per_row_$n" "$(awk -v m="$ms" -v r="$CAL_CLUSTER_ROWS" 'BEGIN { printf "%.3f", m * 1000 / r }')" \
        "us/row (tasks:$(sed -n "s/^$n://p" "$W/tasks"))"
done
figure testbed_cpu_us_per_row_cluster "$(awk -v m="$tot" -v r="$CAL_CLUSTER_ROWS" 'BEGIN { printf "%.3f", m * 1000 / r }')" "us/row"
