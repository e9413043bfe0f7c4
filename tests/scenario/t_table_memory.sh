#!/bin/sh
# t_table_memory.sh: a table bigger than the memory it may use (issue 19:
# tables in bounded memory).  A table's rows live in LMDB, not in the
# process: ares-sql loads 1,000,000 keys (an LMDB file of about 90 MB) and
# answers an aggregate over them inside a memory cgroup capped at 40 MB,
# page cache included, and the answer equals awk's over the same input;
# then table_bench (tests/tools/table_bench.c: the engine's ingest one line
# at a time, then point lookups that check every row) loads 2,000,000 keys
# and looks up 20,000 under the same cap.  Until session 16 LMDB read ahead
# on every page fault of its map, and a capped process re-read the same
# pages without end: table_bench's 2 M keys under 40 MB did not load within
# 60 s, its 10 M under 128 MB read 1 TB from disk in 10 minutes and did
# not finish; with MDB_NORDAHEAD (storage/env.c) the 2 M load at 250 k
# rows/s.
# Needs a writable memory cgroup (v1 memory.limit_in_bytes or v2
# memory.max), as root has on the CI machine; says so and skips otherwise.
# Run by tests/scenario/run.sh with ARES_BUILD and ARES_TMP.
set -u
export LC_ALL=C
. "$(cd "$(dirname "$0")" && pwd)/t_cli_lib.inc"
fail() { echo "FAIL: $*"; exit 1; }

CAP_MB=40
KEYS=1000000
G=""
if [ -w /sys/fs/cgroup/memory ] && [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
    G=/sys/fs/cgroup/memory/ares-t-table-mem-$$
    LIMIT_FILE=memory.limit_in_bytes
elif [ -w /sys/fs/cgroup ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    G=/sys/fs/cgroup/ares-t-table-mem-$$
    LIMIT_FILE=memory.max
fi
[ -n "$G" ] || { echo "skip: t_table_memory needs a writable memory cgroup (root, v1 memory or v2 memory.max)"; exit 0; }
mkdir "$G" || fail "cannot make the memory cgroup $G"
cleanup_cg() {
    cleanup
    # processes in the group have ended (each run below waits for its own)
    rmdir "$G" 2>/dev/null || { sleep 0.5; rmdir "$G" 2>/dev/null; }
}
trap cleanup_cg EXIT
echo $((CAP_MB * 1024 * 1024)) >"$G/$LIMIT_FILE" || fail "cannot cap $G at $CAP_MB MB"

# capped SECONDS CMD...: CMD inside the group, for at most SECONDS
capped() {
    _s=$1
    shift
    timeout "$_s" sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' capped "$G" "$@"
}

awk -v n=$KEYS 'BEGIN { for (k = 0; k < n; k++) printf "%d,%d,w%d\n", k, k * 7 % 1000, k % 300 }' >in.csv
want=$(awk -F, '{ n++; s += $2 } END { printf "%d,%d\n", n, s }' in.csv)

t0=$(date +%s%N)
capped 120 "$A" --data "$T/d" -q -e "CREATE TABLE t (k BIGINT, v BIGINT, w TEXT, PRIMARY KEY (k));" --ingest t \
    <in.csv >load.out 2>load.err
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 124 ] && fail "loading $KEYS keys under a $CAP_MB MB cap did not end within 120 s (LMDB re-reading its pages?)"
[ $rc = 0 ] || { cat load.err; fail "loading $KEYS keys under a $CAP_MB MB cap: exit $rc"; }
size=$(du -m "$T/d" | tail -1 | cut -f1)
echo "ok   $KEYS keys loaded under a $CAP_MB MB memory cap in $ms ms (the data directory: $size MB)"
echo "figure: table_capped_load_ms = $ms ms"
[ "$size" -gt $CAP_MB ] || fail "the data directory ($size MB) fits in the cap: the test shows nothing"

capped 120 "$A" --data "$T/d" -q --format csv -e "SELECT COUNT(*) AS n, SUM(v) AS s FROM t;" </dev/null >sum.out 2>sum.err ||
    { cat sum.err; fail "the aggregate under the cap"; }
got=$(grep -v '^n,s$' sum.out)
[ "$got" = "$want" ] || fail "COUNT and SUM over the table under the cap: $got, want $want"
echo "ok   the table's COUNT and SUM under the cap equal awk's ($got)"
capped 120 "$A" --data "$T/d" -q --format csv -e "SELECT * FROM t WHERE k = 777777;" </dev/null >pt.out 2>pt.err ||
    { cat pt.err; fail "a point lookup under the cap"; }
grep -qx "777777,$((777777 * 7 % 1000)),w$((777777 % 300))" pt.out || { cat pt.out; fail "the point lookup's row"; }
echo "ok   a point lookup under the cap"

TB="$ARES_BUILD/tests/table_bench"
[ -x "$TB" ] || fail "$TB is not built (make scenario builds it)"
capped 90 "$TB" --keys 2000000 --lookups 20000 >tb.out 2>tb.err
rc=$?
[ $rc = 124 ] && { cat tb.out; fail "table_bench: 2000000 keys under a $CAP_MB MB cap did not end within 90 s"; }
[ $rc = 0 ] || { cat tb.out tb.err; fail "table_bench under a $CAP_MB MB cap: exit $rc"; }
grep "^figure: table_load_rows_per_s\|^figure: table_rss_anon_mb" tb.out
echo "ok   table_bench: 2000000 keys loaded and 20000 lookups found their rows under the cap"
echo "t_table_memory: all passed"
