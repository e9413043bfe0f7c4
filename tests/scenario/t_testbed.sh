#!/bin/sh
# The testbed of the experiments (bench/testbed/lib.sh, issue 17): real CPU
# capacities from CPU cgroups with hard quotas.
#   1. a node started inside a group tells the coordinator the group's quota
#      as its capacity (SHOW NODES: capacity), and one outside it its CPUs;
#      --speed overrides what it tells and does not slow it; a quota cut
#      while it runs shows in SHOW NODES within seconds;
#   2. a CPU-bound process in a group at 0.1 CPU uses about 0.1 s of CPU a
#      second, where the same process uncapped uses about ten times as much;
#   3. a script that uses the testbed and then fails removes its groups on
#      the way out (the trap), and leaves no process in them.
# Needs root (writing /sys/fs/cgroup); elsewhere it says so and skips.
. "$(dirname "$0")/t_cluster_lib.inc"
ROOT=$(cd "$_LIBDIR/../.." && pwd)
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the testbed writes CPU cgroups under /sys/fs/cgroup and needs root"
    exit 0
fi
. "$ROOT/bench/testbed/lib.sh"
EXTRA_CLEANUP="tb_cleanup"

# ---- 1. capacity from the quota
tb_group c0 0.4
tb_group n1 0.1
PREFIX="tb_run c0" start_coordinator c0 rack-a
PREFIX="tb_run n1" start_member n1 rack-b
start_member n2 rack-c "--speed 0.25"
wait_alive 3
sqlc -e "SHOW NODES;" >nodes.csv || fail "SHOW NODES"
cap() { awk -F, -v n="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "capacity") c = i } $1 == n { print $c }' nodes.csv; }
[ "$(cap c0)" = 0.4 ] || fail "c0 in a group at 0.4 CPU says capacity $(cap c0): $(cat nodes.csv)"
[ "$(cap n1)" = 0.1 ] || fail "n1 in a group at 0.1 CPU says capacity $(cap n1)"
[ "$(cap n2)" = 0.25 ] || fail "n2 with --speed 0.25 says capacity $(cap n2)"
grep -q "capacity 0.1 CPUs from cgroup v$TB_VERSION .*/n1: quota" n1.log || fail "n1's log does not say where its capacity came from"
grep -q "capacity 0.25 CPUs from --speed" n2.log || fail "n2's log does not say --speed"
# a quota cut while the node runs: it reports the new capacity within a few
# seconds (it reads its quota again at every STATS, about once a second)
tb_quota n1 0.05
i=0
while sqlc -e "SHOW NODES;" >nodes.csv && [ "$(cap n1)" != 0.05 ]; do
    [ $i -ge 100 ] && fail "n1's quota was cut to 0.05 CPU, SHOW NODES still says $(cap n1)"
    sleep 0.1
    i=$((i + 1))
done
wait_log n1.log "capacity now 0.05 CPUs \(was 0.1\)" || fail "n1's log does not say its capacity changed"

# ---- 2. the quota holds a CPU-bound process to its share
"$ARES_BUILD/bench/exp_tool" gen --rows 2000000 --event-rate 100000 --keys 1000 2>/dev/null >in.csv ||
    fail "exp_tool gen"
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
Q="SELECT k, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;"
# cpu_in_2s [GROUP]: CPU ms the embedded engine uses in 2 s of wall time,
# fed without end (the file again and again through a FIFO: the rows after
# the first pass are late, and decoding and dropping them is CPU work too)
cpu_in_2s() {
    rm -f feed.fifo
    mkfifo feed.fifo
    (while :; do cat in.csv || exit; done >feed.fifo) 2>/dev/null &
    _f=$!
    if [ -n "${1:-}" ]; then
        (tb_run "$1" "$A" --memory -q --allow-late -e "$DDL $Q" --ingest s <feed.fifo >/dev/null 2>&1) &
    else
        "$A" --memory -q --allow-late -e "$DDL $Q" --ingest s <feed.fifo >/dev/null 2>&1 &
    fi
    _p=$!
    sleep 0.5
    _b=$(tb_cpu_ms $_p)
    sleep 2
    kill -0 $_p 2>/dev/null || { kill $_f 2>/dev/null; fail "the engine stopped before the measurement ended"; }
    _e=$(tb_cpu_ms $_p)
    kill -KILL $_p $_f 2>/dev/null
    wait $_p $_f 2>/dev/null
    echo $((_e - _b))
}
tb_group burn 0.1
capped=$(cpu_in_2s burn)
free=$(cpu_in_2s)
echo "CPU in 2 s: $capped ms at a 0.1 CPU quota, $free ms uncapped"
[ "$capped" -le 320 ] || fail "at 0.1 CPU the engine used $capped ms of CPU in 2 s (at most about 200 allowed)"
[ "$free" -ge $((capped * 3)) ] || fail "uncapped it used $free ms, not clearly more than capped ($capped ms): is it CPU-bound?"

# ---- 3. a failing script leaves no group behind
cat >failing.sh <<EOF
. "$ROOT/bench/testbed/lib.sh"
trap tb_cleanup EXIT
tb_group x 0.2
(tb_run x sleep 60) &
echo \$! >pid.txt
sleep 0.3
echo "\$TB_ROOT" >root.txt
exit 3
EOF
sh failing.sh
rc=$?
[ $rc = 3 ] || fail "the failing script exited $rc"
[ -s root.txt ] || fail "the failing script made no group"
[ ! -d "$(cat root.txt)" ] || fail "its group $(cat root.txt) is still there"
sleep 0.2
if kill -0 "$(cat pid.txt)" 2>/dev/null; then
    kill -KILL "$(cat pid.txt)"
    fail "the process in the failing script's group is still running"
fi
echo "ok: capacities from quotas, the quota holds, groups removed on failure"
