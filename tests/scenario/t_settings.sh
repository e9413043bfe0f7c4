#!/bin/sh
# SHOW SETTINGS and SHOW <name> (issue 16, item 13), embedded and through
# ares-sql --connect: every setting with its value, its default and a
# description; SET changes the value (kept across a restart), and an unknown
# name is refused with "did you mean".
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

HDR="name,value,default,description"
# check_settings FILE PARALLELISM PLACEMENT: the table's header, its ten rows and two values
check_settings() {
    [ "$(head -n 1 "$1")" = "$HDR" ] || { cat "$1"; fail "$1: header"; }
    [ "$(tail -n +2 "$1" | cut -d, -f1 | tr '\n' ' ')" = "parallelism placement replicas ft checkpoint_interval shadow rebalance_interval rebalance_threshold offset memory_budget " ] ||
        { cat "$1"; fail "$1: the settings listed"; }
    grep -q "^parallelism,$2,1,tasks per keyed operator" "$1" || { cat "$1"; fail "$1: parallelism $2"; }
    grep -q "^placement,$3,nirvana,\"how a cluster places" "$1" || { cat "$1"; fail "$1: placement $3"; }
    grep -q "^checkpoint_interval,10 seconds,10 seconds,how often a snapshot" "$1" || { cat "$1"; fail "$1: checkpoint_interval"; }
    grep -q "^rebalance_threshold,0.2,0.2,a task moves only" "$1" || { cat "$1"; fail "$1: rebalance_threshold"; }
}

# ---- embedded: defaults, SET, SHOW name, a restart
"$A" --data "$T/d" -q -e "SHOW SETTINGS;" >e1.csv 2>e1.err || { cat e1.err; fail "SHOW SETTINGS"; }
check_settings e1.csv 1 nirvana
"$A" --data "$T/d" -q -e "SET parallelism = 3; SET placement = 'round-robin';" 2>e2.err || { cat e2.err; fail "SET"; }
"$A" --data "$T/d" -q -e "SHOW SETTINGS; SHOW parallelism; SHOW Placement;" >e3.csv 2>e3.err || { cat e3.err; fail "after a restart"; }
head -n 11 e3.csv >e3a.csv
check_settings e3a.csv 3 round-robin
[ "$(tail -n +12 e3.csv)" = "$(printf 'parallelism\n3\nplacement\nround-robin')" ] || { cat e3.csv; fail "SHOW name"; }
rc=0
"$A" --data "$T/d" -q -e "SHOW paralelism;" >e4.out 2>e4.err || rc=$?
[ "$rc" -eq 1 ] || fail "SHOW of an unknown setting: exit $rc"
grep -q "unknown setting 'paralelism'; did you mean 'parallelism'?" e4.err || { cat e4.err; fail "SHOW paralelism: message"; }
rc=0
"$A" --memory -q -e "SET debug = TRUE;" 2>e5.err || rc=$?
[ "$rc" -eq 1 ] && grep -q "unknown setting 'debug' (known: parallelism, placement, replicas, ft, checkpoint_interval, shadow, rebalance_interval, rebalance_threshold, offset, memory_budget)" e5.err ||
    { cat e5.err; fail "SET debug: exit $rc"; }

# ---- a cluster, through --connect: the coordinator's values
start_coordinator c0 rack-a
start_member n1 rack-b
wait_alive 2
sqlc -e "SHOW SETTINGS;" >c1.csv 2>c1.err || { cat c1.err; fail "SHOW SETTINGS --connect"; }
check_settings c1.csv 1 nirvana
sqlc -e "SET parallelism = 2; SET placement = 'resource-aware'; SET replicas = 0;" 2>c2.err || { cat c2.err; fail "SET --connect"; }
sqlc -e "SHOW SETTINGS;" >c3.csv 2>c3.err || { cat c3.err; fail "SHOW SETTINGS --connect after SET"; }
check_settings c3.csv 2 resource-aware
grep -q "^replicas,0,1," c3.csv || { cat c3.csv; fail "replicas 0 on the cluster"; }
[ "$(sqlc -e "SHOW replicas;" 2>&1)" = "$(printf 'replicas\n0')" ] || fail "SHOW replicas --connect: $(sqlc -e 'SHOW replicas;' 2>&1)"
# the rebalance settings: a cluster takes them, and refuses a bad one with its position
sqlc -e "SET rebalance_interval = '5 seconds'; SET rebalance_threshold = 0.3;" 2>c4.err || { cat c4.err; fail "SET rebalance_* --connect"; }
[ "$(sqlc -e "SHOW rebalance_interval; SHOW rebalance_threshold;" 2>&1)" = "$(printf 'rebalance_interval\n5 seconds\nrebalance_threshold\n0.3')" ] ||
    fail "SHOW rebalance_* --connect: $(sqlc -e 'SHOW rebalance_interval; SHOW rebalance_threshold;' 2>&1)"
rc=0
sqlc -e "SET rebalance_threshold = 2;" 2>c5.err || rc=$?
[ "$rc" -ne 0 ] && grep -q "column 27: rebalance_threshold must be a number from 0 to below 1" c5.err || { cat c5.err; fail "SET rebalance_threshold = 2"; }
rc=0
sqlc -e "ALTER QUERY nope REBALANCE;" 2>c6.err || rc=$?
[ "$rc" -ne 0 ] && grep -q "query 'nope' does not exist" c6.err || { cat c6.err; fail "ALTER QUERY of an unknown query"; }
# offset (t_offset.sh embedded, t_cluster_earliest.sh on a cluster): a
# cluster takes both values, SET and WITH, and SHOW says which holds
sqlc -e "SET offset = 'earliest';" 2>c7.err || { cat c7.err; fail "SET offset = 'earliest' --connect"; }
[ "$(sqlc -e "SHOW offset;" 2>&1)" = "$(printf 'offset\nearliest')" ] || fail "SHOW offset --connect: $(sqlc -e 'SHOW offset;' 2>&1)"
sqlc -e "SET offset = 'latest';" 2>c8.err || { cat c8.err; fail "SET offset = 'latest' --connect"; }
sqlc -e "CREATE STREAM os (ts BIGINT, k BIGINT) WITH (timestamp = 'ts');" 2>c9.err || { cat c9.err; fail "CREATE STREAM --connect"; }
sqlc -e "CREATE QUERY oq WITH (offset = 'earliest') AS SELECT k FROM os;" 2>c9.err || { cat c9.err; fail "WITH (offset) --connect"; }
rc=0
sqlc -e "CREATE QUERY ob WITH (offset = 'first') AS SELECT k FROM os;" 2>c10.err || rc=$?
[ "$rc" -ne 0 ] && grep -q "column 32: offset must be 'earliest' or 'latest', not 'first'" c10.err || { cat c10.err; fail "WITH (offset = 'first') --connect"; }
echo "t_settings: ok"
