#!/bin/sh
# The cluster with each failure domain in its own network namespace: three
# namespaces joined by veth pairs to a bridge in the root namespace (all
# created here and removed on exit, whatever happens), two nodes per
# domain listening on their namespace's address, 5 ms of added latency on
# every cross-domain link (--link-delay-ms), and the client in the root
# namespace.  The push query's output must match the embedded engine's.
# Needs root and `ip netns`; otherwise it skips, saying so.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null 2>&1; then
    echo "SKIP: t_cluster_netns needs root and iproute2 (ip netns); not run"
    exit 0
fi
. "$(dirname "$0")/t_cluster_lib.inc"

tag=$(($$ % 100000))
NET="10.213.$(($$ % 250))"
BR="arb$tag"
NSES=""
EXTRA_CLEANUP='for ns in $NSES; do ip netns del "$ns" 2>/dev/null; done; ip link del "$BR" 2>/dev/null'

if ! ip link add "$BR" type bridge 2>/dev/null; then
    echo "SKIP: cannot create a bridge here (no CAP_NET_ADMIN in this container?); not run"
    exit 0
fi
ip addr add "$NET.254/24" dev "$BR" && ip link set "$BR" up || fail "bridge setup"
i=1
for d in a b c; do
    ns="ares$d$tag"
    ip netns add "$ns" || fail "ip netns add $ns"
    NSES="$NSES $ns"
    ip link add "v$d$tag" type veth peer name "p$d$tag" || fail "veth for $ns"
    ip link set "p$d$tag" netns "$ns" || fail "veth into $ns"
    ip link set "v$d$tag" master "$BR" && ip link set "v$d$tag" up || fail "veth on the bridge"
    ip -n "$ns" addr add "$NET.$i/24" dev "p$d$tag" || fail "address in $ns"
    ip -n "$ns" link set "p$d$tag" up && ip -n "$ns" link set lo up || fail "links up in $ns"
    i=$((i + 1))
done
# the namespaces reach each other through the bridge
# (a refused connection proves the route: something answered)
ip netns exec "aresa$tag" python3 -c "
import socket, sys
s = socket.socket(); s.settimeout(3)
try: s.connect(('$NET.3', 9))
except ConnectionRefusedError: sys.exit(0)
except OSError: sys.exit(1)" || fail "no route between the namespaces"

PREFIX="ip netns exec aresa$tag" HOST="$NET.1"
start_coordinator c0 rack-a --link-delay-ms 5
start_member n1 rack-a --link-delay-ms=5
PREFIX="ip netns exec aresb$tag" HOST="$NET.2"
start_member n2 rack-b --link-delay-ms=5
start_member n3 rack-b --link-delay-ms=5
PREFIX="ip netns exec aresc$tag" HOST="$NET.3"
start_member n4 rack-c --link-delay-ms=5
start_member n5 rack-c --link-delay-ms=5
PREFIX="" HOST="$NET.1"
wait_alive 6
sqlc -e "SHOW NODES;" | grep -q "^n4,rack-c,$NET.3:" || fail "n4 is not at its namespace's address"

DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;"
gen_data 30000 200 17 >data.csv
embedded "$DDL" "$Q" s <data.csv >ref.csv || fail "embedded run"
sqlc -e "$DDL SET parallelism = 6; SET placement = 'round-robin';" || fail "CREATE STREAM"
sqlc -e "$Q" --ingest s --end <data.csv >out.csv 2>out.err || { cat out.err; fail "push query across namespaces"; }
same_rows out.csv ref.csv
# cross-domain traffic really crossed namespaces
grep -q "authenticated node 'n4'" n2.log n3.log c0.log n1.log || grep -q "authenticated node 'n2'" n4.log n5.log || fail "no cross-domain node link"
echo "cluster in network namespaces: ok"
