#!/bin/sh
# Placement on a live cluster: 9 ares-node processes in 3 failure domains,
# one node per domain slowed (--speed 0.2), driven through ares-sql --connect.
#   1. one standing query per strategy (WITH (placement = ...)), SET
#      replicas = 1: EXPLAIN PLACEMENT names the strategy, every replica sits
#      in a domain other than its primary's, the nirvana query's certificate
#      says equilibrium, and FORMAT JSON carries the same;
#   2. the subscribers get row for row what the embedded engine gives;
#   3. SET placement for the cluster reaches a push query (its log line);
#   4. a member dies: the coordinator re-places its players with
#      nirvana_replace and logs the displaced tasks (not redeployed: issue 7).
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_coordinator c0 rack-a
start_member n1 rack-a
start_member n2 rack-a "--speed 0.2"
start_member n3 rack-b
start_member n4 rack-b
start_member n5 rack-b "--speed 0.2"
start_member n6 rack-c
start_member n7 rack-c
start_member n8 rack-c "--speed 0.2"
wait_alive 9

# ---- 1. a standing query per strategy
STRATS="nirvana round-robin resource-aware random"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM %s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
gen_data 20000 200 23 >data.csv
DDL=""
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    DDL="$DDL CREATE STREAM s_$st (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
done
sqlc -e "$DDL SET parallelism = 3; SET replicas = 1;" || fail "CREATE STREAM"
sqlc -e "SET placement = 'best';" 2>bad.err && fail "a bad placement was accepted"
grep -q "placement must be" bad.err || fail "no clear message for a bad placement"
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    # shellcheck disable=SC2059
    sqlc -e "CREATE QUERY q_$st WITH (placement = '$s') AS $(printf "$Q" "s_$st");" 2>cq.err ||
        { cat cq.err; fail "CREATE QUERY with placement $s"; }
    # shellcheck disable=SC2059
    embedded "CREATE STREAM s_$st (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');" "$(printf "$Q" "s_$st");" \
        "s_$st" <data.csv >"ref_$st.csv" || fail "embedded run ($s)"
    # right after it was placed: later queries do not move running tasks, so
    # a query's equilibrium holds against the load it was placed under
    sqlc -e "EXPLAIN PLACEMENT q_$st;" >"place_$st.csv" || fail "EXPLAIN PLACEMENT q_$st"
    if [ "$s" = nirvana ]; then
        sqlc -e "EXPLAIN PLACEMENT (FORMAT JSON) q_nirvana;" >place.json || fail "EXPLAIN PLACEMENT (FORMAT JSON)"
        grep -q 'is_equilibrium"*: true' place.json || { cat place.json; fail "JSON: no equilibrium"; }
        grep -q 'strategy"*: "*nirvana' place.json || { cat place.json; fail "JSON: no strategy"; }
        [ "$(grep -c 'role"*: "*replica' place.json)" -ge 1 ] || { cat place.json; fail "JSON: no replicas"; }
    fi
    grep -q "^player,operator,role,node,domain,processing,transfer,recovery,cost,note" "place_$st.csv" ||
        { cat "place_$st.csv"; fail "EXPLAIN PLACEMENT q_$st: no player table"; }
    grep -q "^\"\\?placement: $s;" "place_$st.csv" || { cat "place_$st.csv"; fail "q_$st: not placed by $s"; }
    grep -q '^"\?equilibrium: \(yes\|no\)'  "place_$st.csv" || { cat "place_$st.csv"; fail "q_$st: no certificate"; }
    grep -q "^\"\?rounds [0-9]" "place_$st.csv" || { cat "place_$st.csv"; fail "q_$st: no rounds"; }
    grep -q "potential" "place_$st.csv" || { cat "place_$st.csv"; fail "q_$st: no potential"; }
    # every replica in a domain other than its primary's; at least one replica
    awk -F, -v q="q_$st" '
        $3 == "task" { dom[$1] = $5; node[$1] = $4 }
        $3 == "replica" { p = $1; sub(/\/r[0-9]+$/, "", p); rep[$1] = p; rdom[$1] = $5; n++ }
        END {
            if (n == 0) { print q ": no replica rows"; exit 1 }
            for (r in rep) if (rdom[r] == dom[rep[r]] || rdom[r] == "-") { print q ": " r " sits in " rdom[r] ", its primary in " dom[rep[r]]; exit 1 }
        }' "place_$st.csv" || { cat "place_$st.csv"; fail "a replica shares its primary's domain"; }
    # sources at their stream's home, the sink on the coordinator
    home=$(grep -o "stream s_$st: home node [a-z0-9]*" c0.log | awk '{print $NF}')
    awk -F, -v h="$home" '$2 ~ /source/ && $3 == "task" && $4 != h { exit 1 }' "place_$st.csv" ||
        { cat "place_$st.csv"; fail "q_$st: a source is not on its stream's home $home"; }
    awk -F, '$2 ~ /sink/ && $3 == "task" && $4 != "c0" { exit 1 }' "place_$st.csv" ||
        { cat "place_$st.csv"; fail "q_$st: the sink is not on the coordinator"; }
done

grep -q '^"\?equilibrium: yes' place_nirvana.csv || { cat place_nirvana.csv; fail "nirvana is not at an equilibrium"; }
# the slowed nodes (0.2 CPU against the others' CPUs) run none of the tasks
# that carry the stream under nirvana (a PROJECT after the aggregate takes
# about 1 % of the rows: the seed model may put it there, docs/nirvana.md)
slow=$(awk -F, '$3 == "task" && ($4 == "n2" || $4 == "n5" || $4 == "n8") && $2 ~ /WINDOW|AGGREGATE/' place_nirvana.csv | wc -l)
[ "$slow" = 0 ] || { cat place_nirvana.csv; fail "nirvana put $slow window or aggregate tasks on slowed nodes"; }

# ---- 2. the outputs equal the embedded engine's
SUBS=""
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    sqlc -e "SUBSCRIBE q_$st;" >"sub_$st.csv" 2>"sub_$st.err" &
    SUBS="$SUBS $!"
    PIDS="$PIDS $!"
done
sleep 0.5
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    sqlc --ingest "s_$st" --end <data.csv || fail "ingest into s_$st"
done
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    want=$(($(wc -l <"ref_$st.csv")))
    i=0
    while [ "$(wc -l <"sub_$st.csv")" -lt "$want" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
done
for p in $SUBS; do kill "$p" 2>/dev/null; done
wait $SUBS 2>/dev/null
for s in $STRATS; do
    st=$(echo "$s" | tr -d -)
    same_rows "sub_$st.csv" "ref_$st.csv"
done

# ---- 3. SET placement for the cluster
gen_data 3000 20 5 >small.csv
sqlc -e "CREATE STREAM p (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts'); SET placement = 'resource-aware';" ||
    fail "SET placement"
sqlc -e "SELECT k, COUNT(*) AS n FROM p WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;" --ingest p --end <small.csv >push.csv ||
    fail "push query"
grep -q "(push) placed by resource-aware" c0.log || fail "the push query was not placed by resource-aware"
sqlc -e "SET placement = 'nirvana';" || fail "SET placement back"

# ---- 4. a member dies: its players are re-placed and the loss is logged
victim=$(awk -F, '$3 == "task" && $4 ~ /^n[0-9]/ && $2 !~ /source|sink/ { print $4; exit }' place_nirvana.csv)
[ -n "$victim" ] || fail "nirvana's query runs nothing on a member"
kill -KILL "$(eval echo \$PID_$victim)"
i=0
while ! grep -q "node $victim died: nirvana re-placed" c0.log && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "node $victim died: nirvana re-placed [1-9][0-9]* displaced players" c0.log || fail "no re-placement after $victim died"
grep -q "query [0-9]* (q_nirvana) lost [1-9][0-9]* tasks on $victim: .*re-placed" c0.log ||
    fail "the lost tasks of q_nirvana are not logged"
sqlc -e "EXPLAIN PLACEMENT q_nirvana;" >after.csv || fail "EXPLAIN PLACEMENT after the failure"
grep -q ",$victim," after.csv && { cat after.csv; fail "$victim still hosts players after the re-placement"; }
# recovered (issue 7): redeployed where the re-placement put the displaced tasks
grep -q "(q_nirvana) recovered as query" c0.log || grep -q "displaced: its node died" after.csv ||
    { cat after.csv; fail "q_nirvana neither recovered nor marked displaced"; }
echo "cluster placement: ok"
