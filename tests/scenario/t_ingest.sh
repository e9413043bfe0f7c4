#!/bin/sh
# t_ingest.sh: what a user feeding data by hand meets (issue 16).
#   1. rows without an event time (an empty CSV field, a JSON null or a
#      missing member) are rejected with their input line, embedded and
#      through --connect (at the end), and are not counted as late;
#   2. a slow pipe: each window comes out as soon as the row that closes it
#      is read and the input pauses (the idle cut), not at the 1,024th row
#      or at end of input; the delay from that row's write to the window's
#      line is printed as a figure;
#   3. kill -9 during a paced ingest, in a pause: a restart that goes on
#      with the rest of the input writes the same sink as one run with the
#      same pauses, with the same rows dropped as late (those that came
#      after an idle cut had moved the watermark past their window);
#   4. a SELECT over a stream with a file source, run again (a new ares-sql
#      on the same data directory), answers as the first one did: it reads
#      the stream's log from its start; rows added to the file later come
#      on top.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
export LC_ALL=C
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

# now_ms: wall time in milliseconds
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# paced FILE SECONDS: FILE's lines, one every SECONDS
paced() {
    while IFS= read -r _l; do
        printf '%s\n' "$_l"
        sleep "$2"
    done <"$1"
}

# ------------------------------------------------------------------ 2. a slow pipe
# Rows 1 s apart in event time, 0.4 s apart in wall time; windows of 2 s
# with no watermark delay: the row at 2k s closes the window [2k-2, 2k).
# Each row's write time goes to written.txt, each output line's read time
# to seen.txt.
: >written.txt
(
    echo ts,k,v
    for i in 0 1 2 3 4 5 6 7; do
        echo "$((i * 1000)) $(now_ms)" >>written.txt
        echo "$((i * 1000)),1,1"
        sleep 0.4
    done
) | "$A" --memory --format csv -q -e "CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp = 'ts', watermark = '0 seconds');
SELECT COUNT(*) AS n, window_start FROM ev WINDOW TUMBLING (SIZE 2 SECONDS) EMIT FINAL;" --ingest ev 2>pipe.err |
    while IFS= read -r l; do echo "$(now_ms) $l"; done >seen.txt
[ "$(cut -d' ' -f2- seen.txt | tr '\n' ' ')" = "n,window_start 2,1970-01-01T00:00:00.000Z 2,1970-01-01T00:00:02.000Z 2,1970-01-01T00:00:04.000Z 2,1970-01-01T00:00:06.000Z " ] ||
    { cat seen.txt pipe.err; fail "a slow pipe: wrong output"; }
# the delay of each window that a row closed (the last one closes at the end)
worst=0
for w in 0 2 4; do
    closer=$(((w + 2) * 1000))
    t_row=$(awk -v ts="$closer" '$1 == ts { print $2 }' written.txt)
    t_out=$(awk -v ws="1970-01-01T00:00:0$w.000Z" '$2 == "2," ws { print $1 }' seen.txt)
    [ -n "$t_row" ] && [ -n "$t_out" ] || { cat written.txt seen.txt; fail "a slow pipe: no times for window $w s"; }
    d=$((t_out - t_row))
    [ "$d" -gt "$worst" ] && worst=$d
done
echo "figure: idle_cut_delay_ms = $worst ms (the slowest of 3 windows; the idle cut waits 50 ms; times taken by date(1))"
[ "$worst" -lt 1000 ] || fail "a slow pipe: a window came out $worst ms after the row that closed it"
echo "ok   a slow pipe: every window within $worst ms of the row that closed it"

# ------------------------------------------------------------------ 3. kill -9 in a pause
EV="CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp = 'ts', watermark = '0 seconds');"
qdef() {
    echo "CREATE QUERY q WITH (sink = 'file://$T/$1.csv', format = 'csv') AS
    SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM ev WINDOW TUMBLING (SIZE 2 SECONDS) GROUP BY k EMIT FINAL;"
}
# 1500 comes after the pause that cut at 2500 (window [0, 2) closed): late;
# 3900 after the cut at 4200, in the second part: late too.
printf '0,1,1\n1000,1,2\n2500,2,1\n1500,1,5\n3000,1,1\n4200,2,1\n' >part1.csv
printf '3900,2,7\n5000,1,1\n6100,1,1\n' >part2.csv
{ echo k,n,s,window_start; printf '1,2,3,1970-01-01T00:00:00.000Z\n1,1,1,1970-01-01T00:00:02.000Z\n2,1,1,1970-01-01T00:00:02.000Z\n1,1,1,1970-01-01T00:00:04.000Z\n2,1,1,1970-01-01T00:00:04.000Z\n1,1,1,1970-01-01T00:00:06.000Z\n' | sort; } >want.csv
late_of() {
    "$A" --data "$T/$1" --format vertical -e "DESCRIBE q;" </dev/null | sed -n 's/.*late (dropped): \([0-9]*\).*/\1/p'
}
sorted_sink() { head -n 1 "$1"; tail -n +2 "$1" | sort; }

"$A" --data "$T/ref" -q -e "$EV $(qdef ref)" </dev/null || fail "the reference query"
{ paced part1.csv 0.5; paced part2.csv 0.5; } | "$A" --data "$T/ref" -q --ingest ev --allow-late 2>ref.err || { cat ref.err; fail "the reference run"; }
grep -q "^ares-sql: warning: 2 rows of stream ev were late and dropped" ref.err || { cat ref.err; fail "the reference run: the 2 late rows were not told"; }
sorted_sink ref.csv >ref.sorted
cmp -s ref.sorted want.csv || { diff want.csv ref.sorted; fail "the reference run with pauses: wrong windows"; }
[ "$(late_of ref)" = 2 ] || fail "the reference run: $(late_of ref) late rows, want 2"

"$A" --data "$T/crash" -q -e "$EV $(qdef crash)" </dev/null || fail "the query before the crash"
mkfifo in.fifo
{ paced part1.csv 0.5; sleep 30; } >in.fifo &
FEED=$!
PIDS="$PIDS $FEED"
"$A" --data "$T/crash" -q --ingest ev <in.fifo 2>crash.err &
ING=$!
PIDS="$PIDS $ING"
# the pause after 4200 closes [2 s, 4 s): its rows in the sink mean the cut
# and its epoch happened; then kill -9 in the pause
i=0
until [ "$(grep -c ',1970-01-01T00:00:02.000Z$' crash.csv 2>/dev/null)" = 2 ]; do
    i=$((i + 1))
    [ $i -le 100 ] || { cat crash.csv crash.err 2>/dev/null; fail "the windows of the first part did not come out in 10 s"; }
    sleep 0.1
done
kill -9 "$ING"
wait "$ING" 2>/dev/null
kill "$FEED" 2>/dev/null
wait "$FEED" 2>/dev/null
paced part2.csv 0.5 | "$A" --data "$T/crash" -q --ingest ev --allow-late 2>>crash.err || { cat crash.err; fail "the restart"; }
sorted_sink crash.csv >crash.sorted
cmp -s ref.sorted crash.sorted || { diff ref.sorted crash.sorted; fail "kill -9 in a pause and a restart: the sink differs from one run"; }
[ "$(late_of crash)" = 2 ] || fail "kill -9 and a restart: $(late_of crash) late rows, want 2"
echo "ok   kill -9 in a paced ingest: the restart writes the same $(($(wc -l <crash.csv) - 1)) rows, 2 late as in one run"

# ------------------------------------------------------------------ 4. a file source read again
printf 'ts,k,v\n0,1,1\n1000,1,2\n2500,2,1\n1500,1,5\n' >file.csv
FS="CREATE STREAM fs (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp = 'ts', source = 'file://$T/file.csv');"
FQ="SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start FROM fs WINDOW TUMBLING (SIZE 2 SECONDS) GROUP BY k EMIT FINAL;"
"$A" --data "$T/fsd" -q -e "$FS" </dev/null || fail "CREATE STREAM fs"
for run in 1 2; do
    "$A" --data "$T/fsd" -e "$FQ" </dev/null >fs$run.out 2>fs$run.err || { cat fs$run.err; fail "SELECT over fs, run $run"; }
    sorted_sink fs$run.out >fs$run.sorted
done
{ echo k,n,s,window_start; printf '1,3,8,1970-01-01T00:00:00.000Z\n2,1,1,1970-01-01T00:00:02.000Z\n' | sort; } >fs.want
cmp -s fs1.sorted fs.want || { cat fs1.out fs1.err; fail "the first SELECT over a file source"; }
cmp -s fs2.sorted fs.want || { cat fs2.out fs2.err; fail "the second SELECT over a file source: not the first one's answer"; }
printf '3000,2,4\n' >>file.csv
"$A" --data "$T/fsd" -e "$FQ" </dev/null >fs3.out 2>fs3.err || { cat fs3.err; fail "SELECT over fs, run 3"; }
{ echo k,n,s,window_start; printf '1,3,8,1970-01-01T00:00:00.000Z\n2,2,5,1970-01-01T00:00:02.000Z\n' | sort; } >fs3.want
sorted_sink fs3.out >fs3.sorted
cmp -s fs3.sorted fs3.want || { cat fs3.out fs3.err; fail "a SELECT after rows were added to the file"; }
echo "ok   a SELECT over a file source, run again, gives the same rows (and the file's new rows after them)"

start_coordinator c0 rack-a
start_member n1 rack-a
wait_alive 2
sqlc -e "$DDL" || fail "CREATE STREAM on the cluster"
sqlc --format csv -e "$Q" --ingest s --end <nots.csv >nots4.out 2>nots4.err || { cat nots4.err; fail "--connect CSV ingest"; }
has nots4.err "line 3: $NOTS"
has nots4.err "line 4: $NOTS"
cmp -s nots1.out nots4.out || { cat nots4.out; fail "--connect CSV: wrong rows"; }
sqlc --ingest s --allow-late --input-format json <nots.json 2>nots5.err || { cat nots5.err; fail "--connect JSON ingest"; }
has nots5.err "line 2: $NOTS"
has nots5.err "line 3: $NOTS"
echo "ok   --connect: rows without an event time rejected with their line"

echo "t_ingest: ok"
