#!/bin/sh
# t_ingest.sh: what a user feeding data by hand meets (issue 16).
#   1. rows without an event time (an empty CSV field, a JSON null or a
#      missing member) are rejected with their input line, embedded and
#      through --connect, and are not counted as late.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

# has FILE TEXT: FILE holds the line TEXT
has() {
    grep -qxF -- "$2" "$1" || { sed 's/^/    /' "$1"; fail "$1 lacks the line '$2'"; }
}

DDL="CREATE STREAM s (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp = 'ts', watermark = '0 seconds');"
Q="SELECT k, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k;"
NOTS="column 'ts': no event time (empty or null); every row of the stream needs one"

# ------------------------------------------------------------------ 1. no event time
printf 'ts,k,v\n1000,1,1\n,1,1\n"",2,1\n15000,2,1\n' >nots.csv
printf '{"ts":1000,"k":1}\n{"k":1}\n{"ts":null,"k":2}\n{"ts":15000,"k":2}\n' >nots.json
"$A" --memory --format csv -e "$DDL $Q" --ingest s <nots.csv >nots1.out 2>nots1.err || fail "embedded CSV ingest: exit $?"
has nots1.err "line 3: $NOTS"
has nots1.err "line 4: $NOTS"
has nots1.err "s: 2 rows ingested, 2 lines rejected"
printf 'k,n\n1,1\n2,1\n' | cmp -s - nots1.out || { cat nots1.out; fail "embedded CSV: wrong rows"; }
"$A" --memory --format csv -e "$DDL $Q" --ingest s --input-format json <nots.json >nots2.out 2>nots2.err ||
    fail "embedded JSON ingest: exit $?"
has nots2.err "line 2: $NOTS"
has nots2.err "line 3: $NOTS"
cmp -s nots1.out nots2.out || { cat nots2.out; fail "embedded JSON: wrong rows"; }
# a standing query counts no late row
"$A" --data "$T/nots-data" -q -e "$DDL CREATE QUERY q AS $Q" --ingest s <nots.csv 2>/dev/null || fail "standing query ingest"
"$A" --data "$T/nots-data" --format vertical -e "DESCRIBE q;" </dev/null >nots3.out || fail "DESCRIBE q"
grep -q "late (dropped): 0" nots3.out || { cat nots3.out; fail "rows without an event time counted as late"; }
echo "ok   embedded: rows without an event time rejected with their line"

start_coordinator c0 rack-a
start_member n1 rack-a
wait_alive 2
sqlc -e "$DDL" || fail "CREATE STREAM on the cluster"
sqlc --format csv -e "$Q" --ingest s <nots.csv >nots4.out 2>nots4.err || { cat nots4.err; fail "--connect CSV ingest"; }
has nots4.err "line 3: $NOTS"
has nots4.err "line 4: $NOTS"
cmp -s nots1.out nots4.out || { cat nots4.out; fail "--connect CSV: wrong rows"; }
sqlc --ingest s --input-format json <nots.json 2>nots5.err || { cat nots5.err; fail "--connect JSON ingest"; }
has nots5.err "line 2: $NOTS"
has nots5.err "line 3: $NOTS"
echo "ok   --connect: rows without an event time rejected with their line"

echo "t_ingest: ok"
