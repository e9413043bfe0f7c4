#!/bin/sh
# Source tables on a cluster (issue 19 §2, §3, §5): CREATE TABLE on six
# ares-node processes in three domains, its home in one domain and its
# shadow in another.
#  1. inserts, updates and deletes through --ingest and INSERT; SUBSCRIBE t
#     carries the changelog (op first); pull queries (every row, a point
#     lookup, an aggregate) answer from the home's rows;
#  2. the table's home domain is SIGKILLed between two halves of the input:
#     the shadow is the home now, the pull query's rows equal sqlite3's state
#     over the whole input, and the subscriber's changelog, across the
#     failure, consolidates to that state without repeating a change;
#  3. what a cluster does not run yet is refused with its position: an
#     aggregate over a table, CREATE TABLE AS; a row without its key is
#     refused at the home with its position in the client's SQL.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
TLIB="$(cd "$(dirname "$0")" && pwd)/t_table_lib.inc"
. "$(dirname "$0")/t_cluster_lib.inc"
. "$TLIB"
export LC_ALL=C

start_cluster c0:rack-a n1:rack-a n2:rack-b n3:rack-b n4:rack-c n5:rack-c
# distinct event times make every change distinct (the sink's dedup after a
# recovery compares whole rows: docs/architecture.md)
gen 6000 700 5 | awk -F, 'NR == 1 { print "ts," $0; next } { print NR "," $0 }' >all.csv
head -n 3001 all.csv >first.csv
{ head -n 1 all.csv; tail -n +3002 all.csv; } >second.csv
cut -d, -f2- all.csv >in.csv # k,v,w,op for the oracle
sqlc -e "CREATE TABLE t (ts BIGINT, k BIGINT, v BIGINT, w TEXT, op TEXT, PRIMARY KEY (k))
    WITH (op_column = 'op', timestamp = 'ts', home = 'n2');" || fail "CREATE TABLE"
sqlc -e "SHOW STREAMS;" >streams.csv || fail "SHOW STREAMS"
shadow=$(awk -F, '$1 == "t" { print $3 }' streams.csv)
case "$shadow" in n4|n5|c0|n1) ;; *) cat streams.csv; fail "t's shadow '$shadow' is not in another domain" ;; esac
sqlc -e "SUBSCRIBE t;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.5

# ---- 1. the first half, pull queries
sqlc --ingest t <first.csv || fail "ingest of the first half"
head -n 3001 in.csv >in1.csv
oracle in1.csv >want1.txt
sqlc -e "SELECT k, v, w FROM t;" | tail -n +2 | sort -t, -k1,1 >got1.txt
cmp -s want1.txt got1.txt || { diff want1.txt got1.txt | head; fail "SELECT * FROM t after the first half differs from sqlite3"; }
k=$(head -n 1 want1.txt | cut -d, -f1)
sqlc -e "SELECT v, w FROM t WHERE k = $k;" >pt.csv || fail "a point lookup"
[ "$(tail -n 1 pt.csv)" = "$(head -n 1 want1.txt | cut -d, -f2-)" ] || { cat pt.csv; fail "the point lookup of key $k"; }
sqlc -e "SELECT COUNT(*) AS n FROM t;" | tail -n 1 >n.txt
[ "$(cat n.txt)" = "$(wc -l <want1.txt | tr -d ' ')" ] || fail "COUNT(*) says $(cat n.txt), sqlite3 $(wc -l <want1.txt)"

# ---- 2. the home's domain dies, then the second half
wait_rows sub.csv 100 2>/dev/null || true
signal_nodes KILL n2 n3
wait_log "$T/c0.log" "stream t: home node n2 lost; its shadow $shadow is the home now" || fail "t's shadow did not take over"
wait_log "$T/c0.log" "recovered as query" || fail "the subscription's query was not recovered"
sqlc --ingest t <second.csv || fail "ingest of the second half"
sqlc -e "INSERT INTO t VALUES (99999, 100000, 7, 'last', 'I');" || fail "INSERT after the failure"
printf '%s\n' "100000,7,last,I" >>in.csv
sqlc -e "SHOW STREAMS;" >streams2.csv
home=$(awk -F, '$1 == "t" { print $2 }' streams2.csv)
[ "$home" = "$shadow" ] || { cat streams2.csv; fail "t's home is $home, not its shadow $shadow"; }
oracle in.csv >want.txt
sqlc -e "SELECT k, v, w FROM t;" | tail -n +2 | sort -t, -k1,1 >got.txt
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "SELECT * FROM t after the failure differs from sqlite3"; }
# the subscriber: the whole changelog, once
i=0
while [ "$(tail -n 1 sub.csv | cut -d, -f4)" != "100000" ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i + 1)); done
kill "$SUB" 2>/dev/null
head -n 1 sub.csv | grep -qx "op,ts,k,v,w" || fail "the changelog's header: $(head -n 1 sub.csv)"
# op,k,ts,v,w: the key second, as consolidate wants; then without ts
tail -n +2 sub.csv | awk -F, -v OFS=, '{ t = $2; $2 = $3; $3 = t; print }' >cl.txt
consolidate cl.txt >gotts.txt || { tail -3 gotts.txt; fail "the changelog across the failure is not consistent"; }
cut -d, -f1,3- gotts.txt >gotcl.txt
cmp -s want.txt gotcl.txt || { diff want.txt gotcl.txt | head; fail "the changelog across the failure consolidates to other rows"; }

# ---- 3. what a cluster refuses
sqlc -e "SELECT w, COUNT(*) AS n FROM t GROUP BY w EMIT CHANGES;" >r.out 2>r.err && fail "an aggregate over a table ran"
grep -q "line 1, column 1: an aggregate over table 't' is not supported on a cluster yet" r.err || { cat r.err; fail "the aggregate's refusal"; }
sqlc -e "CREATE TABLE c AS SELECT w, COUNT(*) AS n FROM t GROUP BY w;" >r.out 2>r.err && fail "CREATE TABLE AS ran"
grep -q "CREATE TABLE ... AS SELECT is not supported on a cluster yet" r.err || { cat r.err; fail "CREATE TABLE AS's refusal"; }
# a row without its key, refused at the home (not the coordinator): the
# position is the client's, as an embedded engine gives it
sqlc -e "SHOW STREAMS;
  INSERT INTO t (ts, v, w, op) VALUES (5, 1, 'x', 'I');" >r.out 2>r.err && fail "a row without its key was taken"
grep -q "line 2, column 40: row 1 has no key: column 'k' of the PRIMARY KEY may not be NULL" r.err ||
    { cat r.err; fail "the keyless row's refusal from the home"; }
echo "ok: a table on 6 nodes: $(wc -l <want.txt) rows as sqlite3 after its home's domain died; $(wc -l <cl.txt) changes, none repeated"
