#!/bin/sh
# Live re-placement (issue 17, section 3): a windowed aggregation runs on 6
# ares-node processes in 3 domains, each in a CPU cgroup of its own with a
# hard quota (bench/testbed/lib.sh).  Mid-stream, the quota of the node that
# runs the most WINDOW and AGGREGATE tasks is cut to a tenth.  The node reports its new
# capacity, the coordinator re-plays Nirvana's best responses (every
# rebalance_interval, here 1 s, and at once on the capacity change) and
# moves the tasks off it: the stateless ones just move, a stateful one onto
# the node of its replica, which holds its state (a promotion).  The output
# must equal sqlite3's computation of the same windows, row for row: no row
# lost, none repeated.
# Then, while the input still flows, ALTER QUERY q REBALANCE says what it
# did, and none of them goes back to the slowed node.  (Once the input ends
# the measured loads fade, and with them the processing terms: the game may
# then bring a task back towards the stream's home, which costs nothing.)
# Needs root (the cgroups); elsewhere it says so and skips.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"
ROOT=$(cd "$_LIBDIR/../.." && pwd)
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the testbed writes CPU cgroups under /sys/fs/cgroup and needs root"
    exit 0
fi
command -v sqlite3 >/dev/null || { echo "SKIP: no sqlite3 for the oracle"; exit 0; }
. "$ROOT/bench/testbed/lib.sh"
EXTRA_CLEANUP="tb_cleanup"

CAP=0.1
tb_group c0 0.5 # the coordinator: the stream's home, ingest, the sink
for x in n1 n2 n3 n4 n5; do tb_group $x $CAP; done
PREFIX="tb_run c0" start_node c0 rack-a --coordinator --slots 2
CPORT=$(port_of c0)
CADDR="127.0.0.1:$CPORT"
PREFIX="tb_run n1" start_member n1 rack-a "--slots 4"
PREFIX="tb_run n2" start_member n2 rack-b "--slots 4"
PREFIX="tb_run n3" start_member n3 rack-b "--slots 4"
PREFIX="tb_run n4" start_member n4 rack-c "--slots 4"
PREFIX="tb_run n5" start_member n5 rack-c "--slots 4"
wait_alive 6

# strictly increasing event times (no row is ever late): 280000 rows, 280 s of event time
awk 'BEGIN { srand(11); for (i = 0; i < 280000; i++) printf "%d,%d,%d\n", i, int(rand() * 40), int(rand() * 1000) - 100 }' >data.csv
sqlc -e "SET parallelism = 3; SET replicas = 1; SET ft = 'replica'; SET rebalance_interval = '1 second';
         SET rebalance_threshold = 0.2;
         CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts', home = 'c0');
         CREATE QUERY q AS SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s
           WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;" || fail "CREATE QUERY"
# steady input: 140 chunks of 2000 rows, 0.1 s apart (about 14 s at 20000 rows/s): enough work that a
# tenth of a node's CPU matters (the measured load of each task, not the planner's guess, is what the game weighs)
sqlc -e "SUBSCRIBE q;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.3
split -l 2000 -d -a 3 data.csv chunk.
(for f in chunk.*; do cat "$f"; sleep 0.1; done) | sqlc --ingest s --end >ingest.out 2>ingest.err &
ING=$!
PIDS="$PIDS $ING"
# the first measurements replace the planner's estimates, and the game may
# move a few players for them: the placement settles first
sleep 3
sqlc -e "EXPLAIN PLACEMENT q;" >place0.csv || fail "EXPLAIN PLACEMENT"
# The tasks that carry the load: every row passes a WINDOW task, and the
# AGGREGATE tasks hold the state.  A PROJECT task sees one row per window and
# key (40 a second here): the game weighs it at its measured load, and a
# tenth of a node still carries that, so it may stay (docs/nirvana.md).
# heavy_on NODE FILE: how many of them FILE (EXPLAIN PLACEMENT) puts on NODE
heavy_on() { awk -F, -v v="$1" '$3 == "task" && $4 == v && $1 ~ /^(WINDOW|AGGREGATE)#/' "$2" | wc -l; }
# the victim: the member (not the coordinator, which holds the pinned source and sink) with the most of them
victim=$(awk -F, '$3 == "task" && $4 != "c0" && $1 ~ /^(WINDOW|AGGREGATE)#/ { n[$4]++ }
                  END { for (x in n) if (n[x] > best) { best = n[x]; v = x } print v }' place0.csv)
[ -n "$victim" ] || { cat place0.csv; fail "no WINDOW or AGGREGATE task of q off the coordinator"; }
before=$(heavy_on "$victim" place0.csv)
echo "placed: $victim runs $before WINDOW and AGGREGATE tasks of q"

# cut the victim's quota to a tenth
MOVED_RE="rebalance \(.*\): query [0-9]+ \(q\): .* moves $victim -> "
moved0=$(grep -c -E "$MOVED_RE" c0.log)
tb_quota "$victim" "$(awk -v c=$CAP 'BEGIN { print c / 10 }')"
CUT_MS=$(now_ms)
echo "cut $victim's quota to a tenth"
wait_log c0.log "capacity of node $victim went" 1 100 || fail "the coordinator did not hear $victim's new capacity in 10 s"
wait_log c0.log "$MOVED_RE" $((moved0 + 1)) 100 || fail "nothing moved off $victim in 10 s"
MOVE_MS=$(grep -E "$MOVED_RE" c0.log | sed -n "$((moved0 + 1))p" | cut -d' ' -f1 | sed 's/T/ /; s/Z$//')
MOVE_MS=$(date -u -d "$MOVE_MS" +%s%3N)
echo "figure: rebalance_first_move_after_cut_ms $((MOVE_MS - CUT_MS))"
# within a few rebalance intervals (each move is followed by a quiet time while the new
# deployment is measured), none of them is left on the victim
tasks_on() { if sqlc -e "EXPLAIN PLACEMENT q;" >"$2"; then heavy_on "$1" "$2"; else echo 99; fi; }
i=0
while [ "$(tasks_on "$victim" place1.csv)" -gt 0 ] && [ $i -lt 40 ]; do sleep 0.25; i=$((i + 1)); done
OFF_MS=$(now_ms)
echo "figure: rebalance_all_off_after_cut_ms $((OFF_MS - CUT_MS))"
after=$(heavy_on "$victim" place1.csv)
echo "after: $victim runs $after WINDOW and AGGREGATE tasks of q (was $before)"
[ "$after" -eq 0 ] || { cat place1.csv; fail "$victim still runs $after WINDOW or AGGREGATE tasks of q"; }
# on demand, while the input still flows: ALTER QUERY q REBALANCE answers what it did, and
# none of them goes back to the victim
"$A" --connect "$CADDR" --secret-file "$SECRET" -e "ALTER QUERY q REBALANCE;" >alter.out 2>&1 || { cat alter.out; fail "ALTER QUERY q REBALANCE"; }
grep -q "ALTER QUERY: " alter.out || { cat alter.out; fail "ALTER QUERY q REBALANCE said nothing"; }
sed 's/^/alter: /' alter.out
[ "$(tasks_on "$victim" place2.csv)" -eq 0 ] || { cat place2.csv; fail "a task of q went back to $victim"; }
wait $ING || { cat ingest.err; fail "ingest failed"; }

# the oracle: sqlite3 over the same rows
iso() { echo "(strftime('%Y-%m-%dT%H:%M:%S', (($1) - ((($1) % 1000) + 1000) % 1000) / 1000, 'unixepoch') || printf('.%03dZ', ((($1) % 1000) + 1000) % 1000))"; }
{
    echo "CREATE TABLE s (ts INTEGER, k INTEGER, v INTEGER);"
    echo ".mode csv"
    echo ".import data.csv s"
    echo ".mode list"
    echo ".separator ,"
    echo "SELECT k, COUNT(*), SUM(v), $(iso "ts - ts % 1000") FROM s GROUP BY k, ts / 1000;"
} | sqlite3 -batch -bail >want.rows || fail "sqlite3"
{ echo "k,n,total,window_start"; cat want.rows; } >want.csv
want=$(wc -l <want.csv)
sub_finish "$want"

# the moves: logged with their costs, off the victim, counted by EXPLAIN PLACEMENT
grep -E "rebalance \(.*\): query [0-9]+ \(q\): " c0.log | sed 's/^[^ ]* c0 WARN //'
grep -q -E "moves $victim -> .*: cost [0-9.e+-]+ -> [0-9.e+-]+ \([0-9]+ % lower\), potential" c0.log ||
    fail "the log does not give a move's old and new cost"
grep -q "rebalanced: [1-9][0-9]* moves in [1-9][0-9]* redeployments" place2.csv || { cat place1.csv; fail "EXPLAIN PLACEMENT does not count the moves"; }
grep -o "caught up [0-9]* ms after it" place2.csv | sed 's/caught up \([0-9]*\) ms after it/figure: rebalance_catchup_ms \1/'

# no row lost, none repeated
same_rows sub.csv want.csv

echo "ok: $victim cut to a tenth of its CPU; its $before WINDOW and AGGREGATE tasks of q moved off it; the output equals sqlite3's ($((want - 1)) rows)"
