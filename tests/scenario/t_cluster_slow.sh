#!/bin/sh
# Backpressure end to end: a deliberately slow subscriber keeps every node's
# memory bounded, and nothing is dropped.
#
# 6 nodes in 3 domains.  A standing query passes every row of a wide stream
# (about 200 bytes a row) to its sink on the coordinator; a subscriber reads
# its output at about 1 MB/s while a second client ingests 24 MB as fast as
# it can (more than loopback TCP buffers hold: with 12 MB, the kernel's
# autotuned socket buffers took all of it in some runs, and only the DONE
# frame waiting behind the rows made the ingest slow).  The rows travel client -> coordinator -> the stream's home node
# -> coordinator -> subscriber, so every hop must slow down to the reader's
# pace, or the stream's log (on disk) takes the input in.  Checks: the ingest
# is throttled (it takes several seconds instead of well under one) or the
# reader is far behind when it ends, no node's anonymous resident memory (heap: LMDB's mapped
# pages are file-backed and not counted) goes over BOUND_KB, and the
# subscriber gets every row.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"

ROWS=120000
BOUND_KB=${BOUND_KB:-65536}

start_coordinator c0 rack-a
start_member n1 rack-a
start_member n2 rack-b
start_member n3 rack-b
start_member n4 rack-c
start_member n5 rack-c
wait_alive 6

# the first stream's home is the coordinator; w's is another node
sqlc -e "CREATE STREAM first (ts BIGINT) WITH (timestamp = 'ts');
         CREATE STREAM w (ts BIGINT, k BIGINT, pad TEXT) WITH (timestamp = 'ts');
         CREATE QUERY wide AS SELECT ts, k, pad FROM w WHERE k >= 0;" || fail "setup"
home=$(grep -o 'stream w: home node [a-z0-9]*' c0.log | awk '{print $NF}')
[ -n "$home" ] && [ "$home" != c0 ] || fail "w should live on a node other than the coordinator (home: $home)"

cat >reader.py <<'EOF'
import os, sys, time
rate, out = int(sys.argv[1]), sys.argv[2]
n = 0
while True:
    b = os.read(0, 16384)
    if not b:
        break
    n += b.count(b"\n")
    with open(out + ".tmp", "w") as o:
        o.write(str(n))
    os.rename(out + ".tmp", out)
    time.sleep(len(b) / rate)
EOF
echo 0 >got
sqlc -e "SUBSCRIBE wide;" 2>sub.err | python3 reader.py 1000000 got &
SUB=$!
PIDS="$PIDS $SUB"
sleep 0.5

awk -v n=$ROWS 'BEGIN { pad = sprintf("%0190d", 0); for (i = 0; i < n; i++) printf "%d,%d,%s\n", i, i % 97, pad }' >wide.csv

# sample every node's heap while the data flows
(
    while :; do
        for n in c0 n1 n2 n3 n4 n5; do
            echo "$n $(rss_anon "$(eval echo \$PID_$n)")"
        done
        sleep 0.2
    done
) >rss.txt &
SAMPLER=$!
PIDS="$PIDS $SAMPLER"

t0=$(date +%s%N)
sqlc --ingest w --end <wide.csv 2>ingest.err || { cat ingest.err; fail "ingest"; }
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
got_at_end=$(cat got)
echo "ingest of $(wc -c <wide.csv) bytes took $ms ms with a 1 MB/s subscriber ($got_at_end rows read by then)"
# Either the ingest was slowed down to the reader's pace (the source's tasks
# run where back pressure reaches the ingest's connection), or the stream's
# log took it in and the query reads the log at its reader's pace: then the
# reader cannot have had most of the rows yet, and the heap check below
# shows they did not wait in memory.  (Which one depends on where placement
# puts the tasks after the source.)
[ $ms -ge 4000 ] || [ "$got_at_end" -lt $((ROWS / 2)) ] ||
    fail "the ingest took $ms ms and the 1 MB/s reader already had $got_at_end rows: not paced"

want=$((ROWS + 1)) # the CSV header
i=0
while [ "$(cat got)" -lt $want ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill $SAMPLER 2>/dev/null
[ "$(cat got)" -eq $want ] || fail "the subscriber got $(cat got) lines, want $want"

max=$(awk '$2 > m { m = $2; w = $1 } END { print m " (" w ")" }' rss.txt)
echo "largest anonymous resident memory of a node: $max kB (bound $BOUND_KB kB)"
[ "${max%% *}" -lt $BOUND_KB ] || fail "a node used ${max%% *} kB > $BOUND_KB kB"
echo "cluster slow sink: ok"
