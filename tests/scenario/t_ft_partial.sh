#!/bin/sh
# A partial partition (issue 7): the chaos workload of t_ft_chaos.sh (9 nodes
# in 3 domains, a windowed aggregation and a windowed join under steady
# input; ft_cluster in t_cluster_lib.inc), each domain in its own network
# namespace.  For PART_MS, rack-b and rack-c cannot reach each other (a
# blackhole route each way) while both still reach rack-a, where the
# coordinator is: nobody is dead, but the rows from one to the other are
# dropped on the way.  No node may be declared dead.
#
# KNOWN GAP (issue 7, left open): those rows are lost.  The peer goes on
# with later rows, and its state (and the position it records) moves past
# the gap, so no recovery brings them back.  What this test holds the
# cluster to meanwhile: the loss is never silent.  A query whose output
# differs from the no-failure run must have told its subscriber so
# (`ares-sql: WARNING: ... rows were lost`, from the coordinator's LOSS
# judgement), and the coordinator must have logged it.  With
# ARES_KNOWN_GAPS=1 it demands the exact output instead (the reproducer for
# that work).  Needs root and `ip netns`; otherwise it skips.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"
export LC_ALL=C

if ! ft_netns "10.216.$(($$ % 250))"; then
    echo "SKIP: t_ft_partial $NS_WHY; not run"
    exit 0
fi
PART_MS=${PART_MS:-2500}

ft_data 40000 500
ft_cluster partial
ft_feed 0.08
sleep 1.5
echo "$(date -u +%T.%3N) rack-b and rack-c cannot reach each other for $PART_MS ms"
ip -n "$NS_rack_b" route add blackhole "$IP_rack_c/32" && ip -n "$NS_rack_c" route add blackhole "$IP_rack_b/32" ||
    fail "blackhole routes"
sleep "$(awk -v m="$PART_MS" 'BEGIN { print m / 1000 }')"
ip -n "$NS_rack_b" route del blackhole "$IP_rack_c/32" && ip -n "$NS_rack_c" route del blackhole "$IP_rack_b/32" ||
    fail "blackhole routes away"
echo "$(date -u +%T.%3N) the partition healed"
for _s in a b; do
    eval "wait \$FT_ING_$_s" || { cat "ingest_$_s.err"; fail "ingest of $_s failed"; }
done
for _q in qa qj; do wait_rows "sub_$_q.csv" "$(wc -l <"$FT_DATA/ref_$_q.csv")" 300; done
sleep 0.3
dead=$(sed -n 's/.* node \([a-z0-9]*\) is DEAD.*/\1/p' c0.log | sort -u | tr '\n' ' ')
[ -z "$dead" ] || fail "nodes declared dead in a partial partition: $dead"
for _q in qa qj; do
    cp "sub_$_q.csv" "got_$_q.csv"
    if (same_rows "got_$_q.csv" "$FT_DATA/ref_$_q.csv" >"cmp_$_q.txt"); then
        echo "$_q: output equal to the no-failure run"
        continue
    fi
    [ -z "${ARES_KNOWN_GAPS:-}" ] || { grep '^FAIL' "cmp_$_q.txt"; fail "$_q lost rows in the partial partition"; }
    grep -q "WARNING: query $_q: rows were lost" "sub_$_q.err" || {
        cat "sub_$_q.err"
        fail "$_q lost rows ($(wc -l <"got_$_q.csv") of $(wc -l <"$FT_DATA/ref_$_q.csv") lines) and its subscriber was not told"
    }
    grep -q "query $_q: rows were lost" c0.log || fail "$_q lost rows and the coordinator did not log it"
    echo "$_q: $(($(wc -l <"$FT_DATA/ref_$_q.csv") - $(wc -l <"got_$_q.csv"))) rows lost (known gap); the subscriber was told: $(grep -m 1 WARNING "sub_$_q.err" | cut -c1-160)"
done
echo "ok: a partial partition between rack-b and rack-c killed no node, and any row it lost was reported"
