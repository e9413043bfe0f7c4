#!/bin/sh
# A partial partition (issue 7): the chaos workload of t_ft_chaos.sh (9 nodes
# in 3 domains, a windowed aggregation and a windowed join under steady
# input; ft_cluster in t_cluster_lib.inc), each domain in its own network
# namespace.  For PART_MS, rack-b and rack-c cannot reach each other (a
# blackhole route each way) while both still reach rack-a, where the
# coordinator is: nobody is dead, but the rows from one to the other are
# dropped on the way.  No node may be declared dead.
#
# The connections between them fall silent and close; the data frames
# each had for the other wait, numbered, until a connection stands again
# and go then (cluster/channel.c), so the output must equal the no-failure
# run, row for row, and no client may have been warned of a loss.  Needs
# root and `ip netns`; otherwise it skips.
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
    same_rows "sub_$_q.csv" "$FT_DATA/ref_$_q.csv"
    ! grep -q "WARNING" "sub_$_q.err" || { cat "sub_$_q.err"; fail "the subscriber of $_q was warned of a loss"; }
    echo "$_q: output equal to the no-failure run"
done
grep -q "closing (peer dead)" n3.log n4.log n5.log ||
    echo "note: no connection between rack-b and rack-c fell silent long enough to close"
echo "ok: a partial partition between rack-b and rack-c killed no node and lost no row"
