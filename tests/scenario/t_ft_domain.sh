#!/bin/sh
# Fault tolerance: a whole failure domain killed with SIGKILL while a
# windowed aggregation runs under steady input (issue 7).  9 ares-node
# processes in 3 domains; the subscriber's output after the failure must
# equal the embedded (no-failure) run, row for row.  Prints the recovery
# time: detection, redeployment, replay.  FT picks the mode (default
# replica; t_ft_modes.sh runs checkpoint and upstream through this script).
# KILL=home kills the domain of the stream's home node instead (t_ft_home.sh):
# its shadow, in another domain, got the same input and takes over.
# SHADOW=log: the stream's home copies its log to the shadow instead
# (SET shadow = 'log'; t_ft_home_log.sh).
# KEYS sets the keys of the input (default 50), WINDOW the window's size
# (default 1 SECOND); BUDGET runs the query under
# SET memory_budget = '$BUDGET', and a node of the killed domain must have
# held window groups in LMDB only before the kill (t_ft_budget.sh): their
# replicas got the cold records too.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
FT=${FT:-replica}
KILL=${KILL:-other}
# (A redeployed query gets no watermark until its replay has run: one sent
# at deploy time made every replayed row late, which lost the windows between
# the kill and the end of the replay.)
. "$(dirname "$0")/t_cluster_lib.inc"

# one slot a node: the query's tasks must spread over the domains
start_node c0 rack-a --coordinator --slots 1
CPORT=$(port_of c0)
CADDR="127.0.0.1:$CPORT"
start_member n1 rack-a "--slots 3"
start_member n2 rack-a "--slots 3"
start_member n3 rack-b "--slots 3"
start_member n4 rack-b "--slots 3"
start_member n5 rack-b "--slots 3"
start_member n6 rack-c "--slots 3"
start_member n7 rack-c "--slots 3"
start_member n8 rack-c "--slots 3"
wait_alive 9

# strictly increasing event times: no row is ever late, whatever the chunking
awk 'BEGIN { srand(7); for (i = 0; i < 40000; i++) printf "%d,%d,%d\n", i * 5, int(rand() * '"${KEYS:-50}"'), int(rand() * 1000) - 100 }' >data.csv
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE ${WINDOW:-1 SECOND}) GROUP BY k"
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
embedded "$DDL" "$Q;" s <data.csv >ref.csv || fail "embedded run"
i=0
while :; do
    sqlc -e "${SHADOW:+SET shadow = '$SHADOW'; }$DDL" || fail "CREATE STREAM"
    home=$(grep -o "stream s: home node [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
    # homes go round-robin: with KILL=home, make streams until s's is outside the coordinator's domain
    case "$KILL $home" in other* | *" n"[3-8]) break ;; esac
    sqlc -e "DROP STREAM s; CREATE STREAM pad$i (a BIGINT);" || fail "DROP STREAM"
    i=$((i + 1))
    [ $i -lt 10 ] || fail "no home outside rack-a"
done
shadow=$(grep -o -E "stream s: home node [a-z0-9]*, (shadow|its log copied to) [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
sqlc -e "${BUDGET:+SET memory_budget = '$BUDGET'; }SET parallelism = 3; SET replicas = 1; SET ft = '$FT'; SET checkpoint_interval = '500 milliseconds';
         CREATE QUERY q AS $Q;" || fail "CREATE QUERY"
case "$KILL $home" in
"home n"[345] | "other n"[678]) victim=rack-b; VN="n3 n4 n5" ;;
*) victim=rack-c; VN="n6 n7 n8" ;;
esac
sqlc -e "EXPLAIN PLACEMENT q;" >place.csv || fail "EXPLAIN PLACEMENT"
lost=$(awk -F, -v d="$victim" '$3 == "task" && $5 == d' place.csv | wc -l)
[ "$lost" -gt 0 ] || { cat place.csv; fail "no task of q in $victim: nothing to recover"; }
echo "stream home $home (shadow ${shadow:-none}); killing $victim ($VN), which runs $lost tasks of q"

# steady input: 40 chunks of 1000 rows, 50 ms apart
sub_and_feed q s
if [ -n "${BUDGET:-}" ]; then
    # a node reports its tasks once a second: wait for a victim's report of cold groups
    j=0
    until cat $(for v in $VN; do echo "$v.log"; done) | grep -q "window groups in LMDB only (past memory_budget)"; do
        j=$((j + 1))
        [ $j -lt 30 ] || fail "no node of $victim held window groups in LMDB only under memory_budget = $BUDGET"
        sleep 0.1
    done
fi
for v in $VN; do eval "kill -KILL \$PID_$v"; done
KILL_NS=$(date +%s%N)
wait $ING || { cat ingest.err; fail "ingest failed"; }
want=$(wc -l <ref.csv)
sub_finish "$want"
grep -q "recovered as query" c0.log || fail "the coordinator did not recover q"
home_was=$home
if [ "$KILL" = home ]; then
    grep -q "its shadow $shadow is the home now" c0.log || fail "the shadow $shadow did not take over"
    home=$shadow
fi
same_rows sub.csv ref.csv
if [ "${SHADOW:-}" = log ]; then
    # the home copies its log: the client sent its input straight to the
    # home, not through the coordinator, and after the kill straight to the
    # copy that took over, resuming its session there
    grep -q "ingest into s goes straight to its home node $home_was" c0.log || fail "the ingest did not go straight to $home_was"
    grep -q "ingest into s comes straight from a client" "$home_was.log" || fail "$home_was did not get the input straight"
    if [ "$KILL" = home ]; then
        grep -q "ingest into s goes straight to its home node $shadow" c0.log || fail "the ingest did not go on straight to $shadow"
        grep -q "resumes here from the copied log" "$shadow.log" || fail "the session did not resume on $shadow"
    fi
fi

# figures from the logs
det=$(sed -n 's/.*failure event: .* dead (detected \([0-9.]*\) ms ago).*/\1/p' c0.log | head -n 1)
red=$(sed -n 's/.*redeployed \([0-9.]*\) ms after the failure was detected.*/\1/p' c0.log | head -n 1)
rep=$(cat "$home.log" | sed -n 's/.*replayed \([0-9]*\) logged rows from offset \([-0-9]*\).* in \([0-9.]*\) ms,.*/\1 rows from offset \2 in \3 ms/p' | head -n 1)
prom=$(cat *.log | grep -o "took over the state of [0-9]* tasks here ([0-9]* kept, [0-9]* promoted replicas)" | tr -d '(' | awk '{k += $9; p += $11} END {print k " kept, " p " promoted"}')
first=$(grep "is DEAD" c0.log | head -n 1)
echo "killed $VN at kill; coordinator: $first"
echo "figure: ft_detect_to_event_ms ${det:-?} (a SIGKILLed process's connections close at once; the event waits 150 ms for the rest of the domain)"
echo "figure: ft_redeploy_ms ${red:-?} (from the first death to the redeployment)"
echo "figure: ft_replay ${rep:-?} (home node $home)"
echo "figure: ft_state_taken_over ${prom:-?} (stateful tasks)"
case "$FT" in
replica | checkpoint) case "$prom" in *" 0 promoted"*) fail "ft = $FT: no replica was promoted ($prom)" ;; esac ;;
upstream) case "$prom" in *" 0 promoted"*) ;; *) fail "ft = upstream promoted a replica ($prom)" ;; esac ;;
esac
echo "ok: ft = $FT, kill $KILL: output after losing $victim equals the no-failure run ($(($(wc -l <ref.csv) - 1)) rows)"
