#!/bin/sh
# Part of `make bench-smoke`: every placement strategy gives correct results
# on a small cluster.  6 ares-node processes on loopback in 3 failure domains
# (one node per domain declared slower with --speed, --link-delay-ms between domains);
# for each strategy a windowed aggregation and a windowed (interval) self-join,
# each over its own stream, placed WITH (placement = ...); the subscribers'
# rows must equal, row for row (any order), what the embedded engine gives
# for the same input.  Checks results, not timings.  Exits non-zero on a
# mismatch.
# Usage: smoke.sh [--build DIR]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LIB_NAME=smoke.sh LIB_SCRATCH=ares-exp-smoke
. "$ROOT/bench/experiments/lib.sh"
T0=$(date +%s)
STRATS="nirvana nirvana-no-recovery round-robin resource-aware random"
AGG="SELECT k, COUNT(*) AS n, SUM(v) AS sv, MAX(ts) AS last_ts, window_end FROM %s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
JOIN="SELECT a.k, a.v AS av, b.v AS bv, a.ts AS ats, b.ts AS bts FROM %s a JOIN %s b ON a.k = b.k WITHIN 100 MILLISECONDS WHERE a.v < 300 AND b.v >= 700"
DDL="(ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts')"

start_domains c 2 "--link-delay-ms 2 --slots 64" "--speed 0.5"

"$B/bench/exp_tool" gen --rows 20000 --event-rate 4000 --keys 100 --seed 7 2>/dev/null >"$W/data.csv"
sqlc -e "SET parallelism = 3; SET replicas = 1;" || die "SET"
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    for w in agg join; do
        if [ $w = agg ]; then
            # shellcheck disable=SC2059
            q=$(printf "$AGG" "s_${w}_$st")
        else
            # shellcheck disable=SC2059
            q=$(printf "$JOIN" "s_${w}_$st" "s_${w}_$st")
        fi
        sqlc -e "CREATE STREAM s_${w}_$st $DDL;" -e "CREATE QUERY q_${w}_$st WITH (placement = '$s') AS $q;" ||
            die "CREATE QUERY q_${w}_$st"
        sqlc -e "EXPLAIN PLACEMENT q_${w}_$st;" | grep -q "placement: $s;" || die "q_${w}_$st not placed by $s"
        "$B/ares-sql" --memory -q -e "CREATE STREAM s_${w}_$st $DDL;" -e "$q;" --ingest "s_${w}_$st" \
            <"$W/data.csv" >"$W/ref_${w}_$st.csv" || die "embedded run of q_${w}_$st"
        "$B/ares-sql" --connect "$CADDR" --secret-file "$W/secret" -q -e "SUBSCRIBE q_${w}_$st;" \
            >"$W/sub_${w}_$st.csv" 2>"$W/sub_${w}_$st.err" &
        PIDS="$PIDS $!"
        eval "SUB_${w}_$st=$!"
    done
done
sleep 0.5
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    for w in agg join; do
        sqlc --ingest "s_${w}_$st" --end <"$W/data.csv" || die "ingest into s_${w}_$st"
    done
done
bad=0
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    for w in agg join; do
        want=$(wc -l <"$W/ref_${w}_$st.csv")
        i=0
        while [ "$(wc -l <"$W/sub_${w}_$st.csv")" -lt "$want" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
        sleep 0.2
        eval "kill \$SUB_${w}_$st" 2>/dev/null
        tail -n +2 "$W/ref_${w}_$st.csv" | sort >"$W/a"
        tail -n +2 "$W/sub_${w}_$st.csv" | sort >"$W/b"
        if [ "$(head -n 1 "$W/ref_${w}_$st.csv")" = "$(head -n 1 "$W/sub_${w}_$st.csv")" ] && cmp -s "$W/a" "$W/b" &&
            [ "$want" -gt 1 ]; then
            echo "experiments smoke: $s $w: ok ($((want - 1)) rows)"
        else
            echo "experiments smoke: $s $w: FAIL: the cluster's rows differ from the embedded engine's" \
                "($(wc -l <"$W/sub_${w}_$st.csv") vs $want lines)"
            diff "$W/a" "$W/b" | head -n 6
            bad=1
        fi
    done
done
[ $bad = 0 ] || die "a placement strategy gave wrong results"
echo "experiments smoke: every strategy correct on 6 nodes in 3 domains ($(($(date +%s) - T0)) s)"
