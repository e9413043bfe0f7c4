#!/bin/sh
# A stream read from a socket survives the loss of its home's domain (issue
# 7): only the home reads a tcp:// source, so nothing but the home has the
# input; the home copies its log to a node of another domain (LOGSHIP), and
# its queries read only what the copy holds.  The home's domain is killed
# with SIGKILL after a first part of the input; the copy becomes the home,
# listens on the source's address, and the producer sends the rest there.
# The subscriber's output must equal the no-failure run, row for row.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

start_node c0 rack-a --coordinator --slots 1
CPORT=$(port_of c0)
CADDR="127.0.0.1:$CPORT"
for m in "n1 rack-a" "n2 rack-b" "n3 rack-b" "n4 rack-c" "n5 rack-c"; do
    set -- $m
    start_member "$1" "$2" "--slots 4"
done
wait_alive 6

awk 'BEGIN { srand(5); for (i = 0; i < 20000; i++) printf "%d,%d,%d\n", i * 5, int(rand() * 40), int(rand() * 1000) - 100 }' >data.csv
head -n 10000 data.csv >part1.csv
tail -n +10001 data.csv >part2.csv
echo "10000000,0,0" >>part2.csv # moves the watermark past every window (a socket never ends)
cat part1.csv part2.csv >all.csv
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k"
embedded "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');" "$Q;" s <all.csv >ref.all.csv ||
    fail "embedded run"
grep -v 'T02:46:40.000Z$' ref.all.csv >ref.csv # the closing row's own window stays open on a socket
P=$(free_port)
dom_of() { case "$1" in c0 | n1) echo rack-a ;; n2 | n3) echo rack-b ;; *) echo rack-c ;; esac; }
nodes_of() { case "$1" in rack-a) echo "c0 n1" ;; rack-b) echo "n2 n3" ;; *) echo "n4 n5" ;; esac; }
# homes go round-robin: make streams until s's home is outside the coordinator's domain
i=0
while :; do
    sqlc -e "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT)
             WITH (timestamp = 'ts', source = 'tcp://127.0.0.1:$P', format = 'csv');" || fail "CREATE STREAM"
    line=$(grep -o "stream s: home node [a-z0-9]* (it alone reads the stream's source), its log copied to [a-z0-9]*" c0.log | tail -n 1)
    home=$(echo "$line" | awk '{print $5}')
    copy=$(echo "$line" | awk '{print $NF}')
    [ -n "$home" ] && [ "$(dom_of "$home")" != rack-a ] && [ "$(dom_of "$copy")" != "$(dom_of "$home")" ] && break
    sqlc -e "DROP STREAM s; CREATE STREAM pad$i (a BIGINT);" || fail "DROP STREAM"
    i=$((i + 1))
    [ $i -lt 8 ] || fail "no home outside rack-a with its log copied to another domain"
done
wait_log "$home.log" "stream s: home here; its log is copied to $copy" || fail "$home does not copy s's log to $copy"
sqlc -e "SET parallelism = 2; SET replicas = 1; CREATE QUERY q AS $Q;" || fail "CREATE QUERY"
sqlc -e "SHOW STREAMS;" >streams.csv || fail "SHOW STREAMS"
grep -q "^s,$home,$copy,log," streams.csv || { cat streams.csv; fail "SHOW STREAMS does not show s's log copy"; }
# an INSERT into a stream whose log is copied is answered once the copy has
# it, whether its home is the coordinator or another node (homes go round-robin)
for i in 1 2 3 4; do
    timeout 10 "$A" --connect "$CADDR" --secret-file "$SECRET" -q \
        -e "SET shadow = 'log'; CREATE STREAM ins$i (ts BIGINT, k BIGINT) WITH (timestamp = 'ts'); INSERT INTO ins$i VALUES (1, $i);" \
        >ins.out 2>&1 || { cat ins.out; fail "an INSERT into a log-copied stream did not complete"; }
done
grep -o "stream ins[0-9]: home node [a-z0-9]*, its log copied to [a-z0-9]*" c0.log | sed 's/^/  /'
grep -q "stream ins[0-9]: home node c0," c0.log || fail "no INSERT went to a stream homed on the coordinator (4 live nodes, round-robin)"
echo "stream s: home $home ($(dom_of "$home")), its log copied to $copy ($(dom_of "$copy")), source port $P"

sqlc -e "SUBSCRIBE q;" >sub.csv 2>sub.err &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.3
wait_port "$P" || fail "nothing listens on the source port $P"
nc -N 127.0.0.1 "$P" <part1.csv || fail "sending the first part"
# every window of the first part but the last is out: the copy has it all
wait_rows() { [ "$(grep -c ',1970-01-01T00:00:4[0-8]' sub.csv)" -ge 1 ]; }
i=0
until wait_rows; do
    i=$((i + 1))
    [ $i -lt 100 ] || { cat sub.err; fail "the first part's windows did not come out"; }
    sleep 0.1
done
for v in $(nodes_of "$(dom_of "$home")"); do eval "kill -KILL \$PID_$v"; done
echo "killed $(dom_of "$home") ($(nodes_of "$(dom_of "$home")"))"
wait_log c0.log "stream s: home node $home lost; its shadow $copy is the home now" 1 50 ||
    fail "the copy on $copy did not take over"
wait_log c0.log "recovered as query" 1 50 || fail "q was not recovered"
wait_port "$P" || fail "the new home $copy does not listen on the source port $P"
nc -N 127.0.0.1 "$P" <part2.csv || fail "sending the second part"
want=$(wc -l <ref.csv)
sub_finish "$want"
same_rows sub.csv ref.csv
echo "ok: a socket-fed stream whose home's domain was killed: its log copy on $copy took over, read the rest from the socket, and the output equals the no-failure run ($((want - 1)) rows)"
