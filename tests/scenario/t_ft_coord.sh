#!/bin/sh
# Fault tolerance when the failure domain that dies holds the coordinator
# (issue 7): a standby coordinator in another domain holds a copy of the
# catalog (CATALOG frames); when rack-a (the coordinator and two nodes) is
# killed with SIGKILL, the members grant the standby a new term, it takes
# over, declares the members that did not join it dead and recovers every
# query (their sinks move to it).  The ingest client and the subscriber were
# connected to the old coordinator (`--connect c0,sb`): the ingest resumes
# its session through the standby (the home skips the chunks it has), the
# subscriber and a push query's client attach again with what they got.
# Their output must equal the no-failure run, row for row; then the old coordinator comes back
# with its old term and is refused (fencing).  PADS picks the stream's home
# (see below).
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_node c0 rack-a --coordinator --slots 1
C0="127.0.0.1:$(port_of c0)"
CADDR=$C0
start_node sb rack-b --coordinator --join "$C0" --slots 1
SB="127.0.0.1:$(port_of sb)"
JOIN="$C0,$SB"
for spec in n1:rack-a n2:rack-a n3:rack-b n4:rack-b n5:rack-b n6:rack-c n7:rack-c n8:rack-c; do
    start_node "${spec%%:*}" "${spec#*:}" --join "$JOIN" --slots 5
done
wait_alive 10
grep -q "standby coordinator sb joined" c0.log || fail "the standby did not join as a standby"
i=0
while ! grep -q "standby: holding the catalog" sb.log && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "standby: holding the catalog" sb.log || fail "the standby got no catalog"
CADDR=$JOIN # every client from now on may fail over

awk 'BEGIN { srand(11); for (i = 0; i < 40000; i++) printf "%d,%d,%d\n", i * 5, int(rand() * 50), int(rand() * 1000) - 100 }' >data.csv
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
DDL="CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
embedded "$DDL" "$Q;" s <data.csv >ref.csv || fail "embedded run"
# homes go round-robin from the coordinator: PADS streams first put s's home
# elsewhere (3: in rack-b, which survives; t_ft_coord_home.sh: 0, the
# coordinator itself, so its shadow takes over too)
i=0
while [ $i -lt "${PADS:-3}" ]; do
    sqlc -e "CREATE STREAM pad$i (a BIGINT);" || fail "CREATE STREAM pad$i"
    i=$((i + 1))
done
sqlc -e "$DDL" || fail "CREATE STREAM"
home=$(grep -o "stream s: home node [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
shadow=$(grep -o "stream s: home node [a-z0-9]*, shadow [a-z0-9]*" c0.log | tail -n 1 | awk '{print $NF}')
sqlc -e "SET parallelism = 3; SET replicas = 1; CREATE QUERY q AS $Q;" || fail "CREATE QUERY"
sqlc -e "EXPLAIN PLACEMENT q;" >place.csv || fail "EXPLAIN PLACEMENT"
grep -q ",sb," place.csv && { cat place.csv; fail "a task or replica was placed on the standby"; }
echo "stream home $home (shadow ${shadow:-none}); killing rack-a (c0 n1 n2)"

# a push query too (SELECT ... EMIT from a client): kept for its client to
# attach again
sqlc -e "$Q EMIT FINAL;" >push.csv 2>push.err &
PUSH=$!
PIDS="$PIDS $PUSH"
wait_log c0.log "query [0-9]* \(push#[0-9]*\) placed" 1 50 || fail "the push query was not placed"
# and a second subscriber of q: each attaches again with its own rows
sqlc -e "SUBSCRIBE q;" >sub2.csv 2>sub2.err &
SUB2=$!
PIDS="$PIDS $SUB2"
sub_and_feed q s
for v in c0 n1 n2; do eval "kill -KILL \$PID_$v"; done
wait $ING || { cat ingest.err; fail "ingest failed"; }
grep -q "reconnected to the coordinator of term 2" ingest.err || { cat ingest.err; fail "the ingest did not fail over"; }
want=$(wc -l <ref.csv)
i=0
while [ "$(wc -l <sub.csv)" -lt "$want" ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
# SUB is the subshell running sqlc: its ares-sql child goes first (never a
# pattern match: it would hit other tests' subscribers on the machine)
pkill -P "$SUB" 2>/dev/null
kill "$SUB" 2>/dev/null
wait "$SUB" 2>/dev/null
grep -q "reconnected to the coordinator of term 2" sub.err || { cat sub.err; fail "the subscriber did not fail over"; }
i=0
while kill -0 "$PUSH" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
wait "$PUSH" || { cat push.err; fail "the push query's client failed"; }
grep -q "reconnected to the coordinator of term 2" push.err || { cat push.err; fail "the push query did not fail over"; }
same_rows push.csv ref.csv
wait_rows sub2.csv "$want" 50
pkill -P "$SUB2" 2>/dev/null
kill "$SUB2" 2>/dev/null
grep -q "reconnected to the coordinator of term 2" sub2.err || { cat sub2.err; fail "the second subscriber did not fail over"; }
same_rows sub2.csv ref.csv
grep -q "taking over as the coordinator of term 2" sb.log || fail "the standby did not take over"
grep -q "recovered as query" sb.log || fail "the new coordinator did not recover q"
same_rows sub.csv ref.csv

# fencing: the old coordinator comes back with its old catalog (term 1);
# the members granted term 2 and never join it, so it never serves; it
# hears of term 2 from sb and steps down to be sb's standby
"$N" --name c0 --domain rack-a --listen "$C0" --data "$T/data-c0" --secret-file "$SECRET" --coordinator \
    >/dev/null 2>>c0.log &
PIDS="$PIDS $!"
wait_log c0.log "restarted with a standby known" 1 50 || fail "the old coordinator did not wait for its members"
wait_log c0.log "standby: holding the catalog of coordinator term 2" 1 50 ||
    fail "the old coordinator did not step down to be the new one's standby"
# it joins whoever told it of term 2 first (sb's announce, or a member's
# refusal: the member's address), then the standby it knew, sb
grep -q "stepping down: joining \([0-9.:]*,\)\{0,1\}$SB" c0.log || fail "the old coordinator did not say it joins sb"
"$A" --connect "$C0" --secret-file "$SECRET" -q -e "SHOW STREAMS;" >old.out 2>old.err &&
    fail "the old coordinator (term 1) served a client after the takeover"
grep -q "standby coordinator" old.err || { cat old.err; fail "the old coordinator's refusal does not say why"; }
sqlc -e "SHOW NODES;" >nodes.csv || fail "SHOW NODES"
grep -q "^c0,rack-a,.*,standby," nodes.csv || { cat nodes.csv; fail "c0 is not listed as the standby"; }
sqlc -e "SHOW STREAMS;" >streams.csv || fail "the client did not find the new coordinator (c0 listed first)"
grep -q "^s," streams.csv || { cat streams.csv; fail "SHOW STREAMS on the new coordinator lacks s"; }

take=$(sed -n 's/.*taking over as the coordinator of term 2 (\([0-9]*\) ms after the active was lost).*/\1/p' sb.log | head -n 1)
serve=$(sed -n 's/.*serving clients (\([0-9.]*\) ms after the takeover began).*/\1/p' sb.log | head -n 1)
echo "figure: coord_takeover_ms ${take:-?} (from the standby losing the active to holding a majority's grants)"
echo "figure: coord_serving_ms ${serve:-?} (from the takeover to serving clients, the recovery included)"
echo "ok: the coordinator's domain killed; the standby took over; output equals the no-failure run ($(($(wc -l <ref.csv) - 1)) rows)"
