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

NET="10.213.$(($$ % 250))"
netns_domains "$NET" a b c || { echo "SKIP: t_cluster_netns $NS_WHY; not run"; exit 0; }
# the namespaces reach each other through the bridge
# (a refused connection proves the route: something answered)
ip netns exec "$NS_a" python3 -c "
import socket, sys
s = socket.socket(); s.settimeout(3)
try: s.connect(('$NET.3', 9))
except ConnectionRefusedError: sys.exit(0)
except OSError: sys.exit(1)" || fail "no route between the namespaces"

PREFIX="ip netns exec $NS_a" HOST="$NET.1"
start_coordinator c0 rack-a --link-delay-ms 5
start_member n1 rack-a --link-delay-ms=5
PREFIX="ip netns exec $NS_b" HOST="$NET.2"
start_member n2 rack-b --link-delay-ms=5
start_member n3 rack-b --link-delay-ms=5
PREFIX="ip netns exec $NS_c" HOST="$NET.3"
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
