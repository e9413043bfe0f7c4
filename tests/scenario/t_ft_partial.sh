#!/bin/sh
# A partial partition (issue 7): the chaos workload of t_ft_chaos.sh (9 nodes
# in 3 domains, a windowed aggregation and a windowed join under steady
# input; ft_cluster in t_cluster_lib.inc), each domain in its own network
# namespace.  For PART_MS, rack-b and rack-c cannot reach each other (a
# blackhole route each way) while both still reach rack-a, where the
# coordinator is: nobody is dead, but the rows from one to the other are
# lost on the way.  The output must still equal the no-failure run, row for
# row, and no node may be declared dead.  Needs root and `ip netns`;
# otherwise it skips.
#
# KNOWN GAP (issue 7, left open): today this loses rows (4,330 of 9,824 qa
# rows came through in the run that found it).  A node that cannot reach a
# live peer drops the rows for it, the peer goes on with later rows, and its
# state (and the position it records) moves past the gap, so no recovery
# brings the dropped rows back.  The test runs only with ARES_KNOWN_GAPS=1,
# as the reproducer for that work.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"
export LC_ALL=C

if [ -z "${ARES_KNOWN_GAPS:-}" ]; then
    echo "SKIP: t_ft_partial reproduces a known gap (rows lost in a partial partition); ARES_KNOWN_GAPS=1 runs it"
    exit 0
fi

NET="10.216.$(($$ % 250))"
if ! netns_domains "$NET" rack-a rack-b rack-c; then
    echo "SKIP: t_ft_partial $NS_WHY; not run"
    exit 0
fi
for d in rack_a rack_b rack_c; do
    eval "FT_PREFIX_$d=\"ip netns exec \$NS_$d\" FT_HOST_$d=\$IP_$d"
done
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
ft_finish
grep -h "lost data for query\|restarts from its last epoch" ./*.log | head -n 5
echo "ok: a partial partition between rack-b and rack-c lost no row and killed no node"
