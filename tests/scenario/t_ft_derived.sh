#!/bin/sh
# Derived streams on a cluster under a whole domain's SIGKILL (issue 19):
# a two-stage chain, CREATE STREAM big AS a filter of s and CREATE STREAM
# agg AS a windowed aggregate of big, then a standing query fin over agg,
# on 9 ares-node processes in 3 domains, under steady input.  KILL=other
# (default) kills the domain of a derived stream's home (not the
# coordinator's): its shadow, fed the same DERIVE frames, takes over, and
# the tasks there are recovered.  KILL=coord kills the coordinator's domain
# (rack-a): a standby in rack-b takes over, with no record of what the old
# one sent into big and agg; the homes drop what comes again
# (t_ft_derived_coord.sh).  SUBSCRIBE agg and SUBSCRIBE fin must equal the
# embedded (no-failure) run row for row, and so must each derived stream's
# row count: no row lost or repeated in their logs.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
KILL=${KILL:-other}
. "$(dirname "$0")/t_cluster_lib.inc"

start_node c0 rack-a --coordinator --slots 2
C0="127.0.0.1:$(port_of c0)"
CADDR=$C0
JOIN=$C0
if [ "$KILL" = coord ]; then
    start_node sb rack-b --coordinator --join "$C0" --slots 1
    JOIN="$C0,127.0.0.1:$(port_of sb)"
fi
for spec in n1:rack-a n2:rack-a n3:rack-b n4:rack-b n5:rack-b n6:rack-c n7:rack-c n8:rack-c; do
    start_node "${spec%%:*}" "${spec#*:}" --join "$JOIN" --slots 8
done
if [ "$KILL" = coord ]; then
    wait_alive 10
    i=0
    while ! grep -q "standby: holding the catalog" sb.log && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    grep -q "standby: holding the catalog" sb.log || fail "the standby got no catalog"
    CADDR=$JOIN
else
    wait_alive 9
fi

awk 'BEGIN { srand(5); for (i = 0; i < 40000; i++) printf "%d,%d,%d\n", i * 5, int(rand() * 40), int(rand() * 1000) - 100 }' >data.csv
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
CHAIN="CREATE STREAM big AS SELECT ts, k, v FROM s WHERE v >= 0;
CREATE STREAM agg WITH (timestamp = 'wend') AS
    SELECT k, COUNT(*) AS n, SUM(v) AS total, window_end AS wend FROM big WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;"
FIN="SELECT k, SUM(n) AS n, SUM(total) AS total, window_end FROM agg WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k"
"$A" --memory -q -e "$DDL $CHAIN $FIN;" --ingest s <data.csv >ref_fin.csv 2>ref.err || { cat ref.err; fail "embedded run"; }
"$A" --memory -q -e "$DDL $CHAIN SUBSCRIBE agg;" --ingest s <data.csv >ref_agg.csv 2>ref.err || { cat ref.err; fail "embedded run"; }
"$A" --memory -q -e "$DDL $CHAIN SELECT COUNT(*) AS n, window_end FROM big WINDOW TUMBLING (SIZE 1000 SECONDS);" \
    --ingest s <data.csv >ref_big.csv 2>ref.err || { cat ref.err; fail "embedded run"; }
BIG_ROWS=$(tail -n 1 ref_big.csv | cut -d, -f1)

# homes go round-robin from the coordinator (c0 n1 n2 n3 ...): with KILL=other
# two pads put s's home on n2 and big's and agg's on n3 and n4 (rack-b, killed);
# with KILL=coord none, so that big's and agg's homes die with the coordinator
pads=2
[ "$KILL" = coord ] && pads=0
i=0
while [ $i -lt $pads ]; do
    sqlc -e "CREATE STREAM pad$i (a BIGINT);" || fail "CREATE STREAM pad$i"
    i=$((i + 1))
done
sqlc -e "SET parallelism = 3; SET replicas = 1; SET checkpoint_interval = '500 milliseconds'; $DDL $CHAIN" ||
    fail "CREATE STREAM AS"
sqlc -e "CREATE QUERY fin AS $FIN;" || fail "CREATE QUERY fin"
home_of() { grep -o "stream $1: home node [a-z0-9]*, shadow [a-z0-9]*" c0.log | tail -n 1 | awk '{ sub(",", "", $5); print $5, $NF }'; }
set -- $(home_of big)
BIG_HOME=$1 BIG_SHADOW=${2:-}
set -- $(home_of agg)
AGG_HOME=$1 AGG_SHADOW=${2:-}
[ -n "$BIG_SHADOW" ] && [ -n "$AGG_SHADOW" ] || fail "a derived stream has no shadow (big: $BIG_HOME $BIG_SHADOW, agg: $AGG_HOME $AGG_SHADOW)"
dom_of() { case $1 in c0 | n1 | n2) echo rack-a ;; n[345] | sb) echo rack-b ;; *) echo rack-c ;; esac; }
if [ "$KILL" = coord ]; then
    victim=rack-a
else
    victim=$(dom_of "$AGG_HOME")
    [ "$victim" != rack-a ] || victim=$(dom_of "$BIG_HOME")
    [ "$victim" != rack-a ] || fail "both derived streams' homes are in the coordinator's domain ($BIG_HOME, $AGG_HOME)"
fi
case $victim in rack-a) VN="c0 n1 n2" ;; rack-b) VN="n3 n4 n5" ;; *) VN="n6 n7 n8" ;; esac
for q in big agg fin; do sqlc -e "EXPLAIN PLACEMENT $q;"; done >place.csv || fail "EXPLAIN PLACEMENT"
lost=$(awk -F, -v d="$victim" '$3 == "task" && $5 == d' place.csv | wc -l)
[ "$lost" -gt 0 ] || { cat place.csv; fail "no task in $victim: nothing to recover"; }
echo "big: home $BIG_HOME, shadow $BIG_SHADOW; agg: home $AGG_HOME, shadow $AGG_SHADOW; killing $victim ($VN): $lost tasks"

sqlc -e "SUBSCRIBE agg;" >sub_agg.csv 2>sub_agg.err &
SUBA=$!
PIDS="$PIDS $SUBA"
sub_and_feed fin s
for v in $VN; do eval "kill -KILL \$PID_$v"; done
wait $ING || { cat ingest.err; fail "ingest failed"; }
CLOG=c0.log
[ "$KILL" = coord ] && CLOG=sb.log
wait_log "$CLOG" "recovered as query" 1 100 || fail "no query was recovered"
sub_finish "$(wc -l <ref_fin.csv)"
wait_rows sub_agg.csv "$(wc -l <ref_agg.csv)" 100
sleep 0.3
pkill -P "$SUBA" 2>/dev/null
kill "$SUBA" 2>/dev/null
same_rows sub.csv ref_fin.csv
same_rows sub_agg.csv ref_agg.csv
# the derived streams' logs: as many rows as the no-failure run's
sqlc -e "SHOW STREAMS;" >streams.csv || fail "SHOW STREAMS"
got_big=$(awk -F, '$1 == "big" { print $5 }' streams.csv)
got_agg=$(awk -F, '$1 == "agg" { print $5 }' streams.csv)
[ "$got_big" = "$BIG_ROWS" ] || { cat streams.csv; fail "big holds $got_big rows, the no-failure run $BIG_ROWS"; }
[ "$got_agg" = "$(($(wc -l <ref_agg.csv) - 1))" ] || { cat streams.csv; fail "agg holds $got_agg rows, the no-failure run $(($(wc -l <ref_agg.csv) - 1))"; }
if [ "$KILL" = coord ]; then
    grep -q "taking over as the coordinator of term 2" sb.log || fail "the standby did not take over"
    grep -q "reconnected to the coordinator of term 2" sub.err || { cat sub.err; fail "the subscriber did not fail over"; }
else
    for h in "$BIG_HOME:$BIG_SHADOW:big" "$AGG_HOME:$AGG_SHADOW:agg"; do
        hn=${h%%:*} rest=${h#*:}
        case " $VN " in *" $hn "*) grep -q "stream ${rest#*:}: home node $hn lost; its shadow ${rest%%:*} is the home now" c0.log ||
            fail "the shadow of ${rest#*:} did not take over" ;; esac
    done
fi
rep=$(cat *.log | grep -c "rows of derived stream .*: " || true)
[ "$rep" -eq 0 ] || { grep -h "rows of derived stream" *.log | head; fail "a home refused a derived stream's rows"; }
drops=$(cat *.log | grep -o "derived stream [a-z]*: dropped [0-9]* rows it has" | sort | uniq -c | head -n 4 | tr "\n" ";")
echo "ok: kill $KILL ($victim): fin, agg and the derived streams' logs equal the no-failure run ($(($(wc -l <ref_fin.csv) - 1)) and $(($(wc -l <ref_agg.csv) - 1)) rows, big $BIG_ROWS) ${drops:+; homes: $drops}"
