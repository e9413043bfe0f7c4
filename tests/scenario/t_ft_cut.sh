#!/bin/sh
# A failure domain cut off the network (issue 7): the chaos workload of
# t_ft_chaos.sh (9 nodes, a windowed aggregation and a windowed join under
# steady input; ft_cluster in t_cluster_lib.inc) with each failure domain in
# its own network namespace, joined to the others by one veth link to a
# bridge in the root namespace, where the clients run.  rack-b's link goes
# down (its nodes keep running, their connections neither close nor answer:
# only the silence tells), and once that is recovered rack-c's too.  The
# output must equal the embedded run, row for row, and the coordinator must
# declare exactly the cut nodes dead, about --dead-ms after the cut.  Then
# both links come back: the cut nodes, still running, must join again.
# rack-a is cut by t_ft_coord_chaos.sh.  Needs root and `ip netns`;
# otherwise it skips.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"
export LC_ALL=C

if ! ft_netns "10.214.$(($$ % 250))"; then
    echo "SKIP: t_ft_cut $NS_WHY; not run"
    exit 0
fi
# the namespaces reach each other through the bridge (a refused connection
# proves the route: something answered)
ip netns exec "$NS_rack_a" python3 -c "
import socket, sys
s = socket.socket(); s.settimeout(3)
try: s.connect(('$IP_rack_c', 9))
except ConnectionRefusedError: sys.exit(0)
except OSError: sys.exit(1)" || fail "no route between the namespaces"

[ -n "${ARES_FT:-}" ] && FT_SET="SET ft = '$ARES_FT';"
ft_data 40000 500
echo "note: rack-a (c0, n1, n2) holds the coordinator and the streams' homes; t_ft_coord_chaos.sh cuts it" \
    "(with a standby coordinator in rack-b)"
ft_cluster cut
sqlc -e "SHOW NODES;" | grep -q "^n4,rack-b,$IP_rack_b:" || fail "n4 is not at its namespace's address"
DEAD=800 # the default --dead-ms
ft_feed
sleep 0.8
for d in rack-b rack-c; do
    [ $d = rack-b ] || sleep 0.5
    eval "ft_fail $d ft_cut_detect_ms ip link set \$VETH_$(echo $d | tr - _) down"
    [ "$FT_DETECT_MS" -ge $((DEAD - 150)) ] && [ "$FT_DETECT_MS" -le $((DEAD + 1500)) ] ||
        fail "$d was declared dead $FT_DETECT_MS ms after its link went down (--dead-ms $DEAD)"
done
ft_finish rack-b rack-c
ft_figures
echo "ok: the output after cutting rack-b and then rack-c off equals the no-failure run"

# the links come back: the cut nodes (alive all along) join again
ip link set "$VETH_rack_b" up && ip link set "$VETH_rack_c" up || fail "links up again"
wait_alive 9
echo "ok: the cut nodes joined again once their links came back"
