#!/bin/sh
# A full disk (issue 16, item 18), on a 6 MB tmpfs that this test mounts and
# unmounts (also on failure; it needs root, as CI has, and says SKIP without):
#  1. an ingest that fills the disk stops with "the disk is full" naming the
#     data directory, not "Input/output error"; exit 1;
#  2. a file sink on the full disk says the same for its file;
#  3. with room again, a restart finds every committed row and the query's
#     state intact: the rest of the input, ingested then, gives a sink equal
#     to one run over all of it; SHOW QUERIES right after the restart shows
#     no rate (empty), not rows over a few milliseconds;
#  4. rates are over a sensible window: none in the first second, then rows
#     per second over the time since the start.
# Run by tests/scenario/run.sh with ARES_BUILD and a private ARES_TMP.
set -u
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"

MNT="$T/small"
mkdir -p "$MNT"
unmount() { mountpoint -q "$MNT" 2>/dev/null && umount "$MNT"; return 0; }
trap 'cleanup; unmount' EXIT
if ! mount -t tmpfs -o size=6m tmpfs "$MNT" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs here (needs root)"
    exit 0
fi

awk 'BEGIN { print "ts,k,v,s"; for (i = 0; i < 400000; i++)
    printf "%d,%d,%d.5,some-text-to-fill-the-log-%d\n", i * 10, i * 7919 % 100, i % 77, i }' >all.csv
DDL="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE, s TEXT) WITH (timestamp = 'ts', watermark = '1 second');"
Q="SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(s) AS top, window_start FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL"

# ---- 1. the ingest fills the disk: a first part fits and commits, the rest does not
head -n 60001 all.csv >part1.csv
{ echo "ts,k,v,s"; tail -n +60002 all.csv; } >part2.csv
"$A" --data "$MNT/d" -q -e "$DDL CREATE QUERY q WITH (sink = 'file://$T/q.csv', format = 'csv') AS $Q;" \
    --ingest ev <part1.csv >part1.out 2>part1.err || { cat part1.err; fail "the first part did not fit"; }
rc=0
"$A" --data "$MNT/d" -q --ingest ev <part2.csv >full.out 2>full.err || rc=$?
[ "$rc" -eq 1 ] || { cat full.err; fail "an ingest onto a full disk: exit $rc, want 1"; }
has full.err "error: storage $MNT/d: commit failed: the disk is full ("
has full.err "KiB free on the file system of $MNT/d); what was committed before is intact"
[ "$(grep -c . full.err)" -eq 1 ] || { cat full.err; fail "more than the one error"; }
grep -q "Input/output error" full.err && fail "a full disk still reads as an I/O error"

# ---- 2. a file sink on the full disk
rc=0
printf 'ts,k,v,s\n1,1,1,a\n20000,1,1,b\n' |
    "$A" --memory -q -e "$DDL CREATE QUERY q WITH (sink = 'file://$MNT/q.csv') AS $Q;" --ingest ev >sink.out 2>sink.err || rc=$?
[ "$rc" -eq 1 ] || { cat sink.err; fail "a sink onto a full disk: exit $rc, want 1"; }
has sink.err "writing sink '$MNT/q.csv': the disk is full ("

# ---- 3. room again: the committed state is intact
mount -o remount,size=64m "$MNT" || fail "remount"
"$A" --data "$MNT/d" -q --format csv -e "SHOW STREAMS; SHOW QUERIES;" >after.out 2>after.err ||
    { cat after.err; fail "the restart after a full disk"; }
n=$(awk -F, '$1 == "ev" { print $(NF - 3) }' after.out)
[ -n "$n" ] && [ "$n" -ge 60000 ] && [ "$n" -lt 400000 ] || { cat after.out; fail "committed rows: '$n'"; }
# name,state,sink,rows_in,rows_out,in_per_s,out_per_s,...: no rate yet
awk -F, '$1 == "q" && $4 == '"$n"' && $6 == "" && $7 == "" { ok = 1 } END { exit !ok }' after.out ||
    { cat after.out; fail "SHOW QUERIES after the restart: want rows_in $n and empty rates"; }
{ echo "ts,k,v,s"; tail -n +$((n + 2)) all.csv; } |
    "$A" --data "$MNT/d" -q --ingest ev >rest.out 2>rest.err || { cat rest.err; fail "ingesting the rest"; }
"$A" --memory -q --format csv -e "$DDL $Q;" --ingest ev <all.csv >ref.csv 2>ref.err || { cat ref.err; fail "reference run"; }
tail -n +2 ref.csv | sort >want.txt
tail -n +2 q.csv | sort >got.txt
[ "$(wc -l <want.txt)" -gt 1000 ] || fail "the reference has $(wc -l <want.txt) rows"
cmp -s want.txt got.txt || { diff want.txt got.txt | head; fail "the sink after a full disk and a restart differs from one run"; }
[ "$(head -n 1 q.csv)" = "k,n,total,top,window_start" ] || fail "the sink's header: $(head -n 1 q.csv)"
unmount

# ---- 4. rates: none before a second has passed, then over the time since the start
{
    echo "$DDL CREATE QUERY r AS SELECT k FROM ev; SHOW QUERIES;"
    echo "INSERT INTO ev VALUES (1, 1, 1, 'a'), (2, 1, 1, 'a'), (3, 1, 1, 'a'), (4, 1, 1, 'a');"
    sleep 1.3
    echo "INSERT INTO ev VALUES (5, 1, 1, 'a'), (6, 1, 1, 'a'), (7, 1, 1, 'a'), (8, 1, 1, 'a');"
    sleep 1.3
    echo "SHOW QUERIES;"
} | "$A" --memory -q --format csv >rates.out 2>rates.err || { cat rates.err; fail "the rates run"; }
awk -F, '$1 == "r" && $4 == 0 && $6 == "" { ok = 1 } END { exit !ok }' rates.out || { cat rates.out; fail "a rate in the first second"; }
# 8 rows over about 2.6 s: about 3 a second
awk -F, '$1 == "r" && $4 == 8 && $6 >= 2 && $6 <= 6.2 { ok = 1 } END { exit !ok }' rates.out ||
    { cat rates.out; fail "in_per_s after 2.6 s"; }
echo "t_disk_full: all passed"
