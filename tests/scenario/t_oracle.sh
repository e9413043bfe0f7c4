#!/bin/sh
# t_oracle.sh: window queries over seeded random streams, checked against
# sqlite3 computing the same windows as a batch (issue 3, "Tests").
#
# For each seed, gen_stream writes ~20k rows (ts, k, s, v, d): event times
# mostly increasing, disorder below the watermark delay (so no row is late),
# BIGINT and TEXT keys, NULLs, some timestamps in ISO form.  Each query runs
# as a push query through `ares-sql --ingest`; the rows it prints are compared,
# sorted, with what sqlite3 computes from the same rows: windows from
# integer arithmetic (floor division, so negative times work), hopping
# windows by joining a table of window offsets, sessions with LAG and a
# running SUM.  Numbers compare with a small tolerance (doubles summed in
# another order), everything else exactly, header included.
#
# Then, per seed: every query at once as standing queries with file sinks
# and parallelism 2 (same expected rows); a hopping query with EMIT CHANGES
# (its last row per window and key is the final one); and the first query
# again from JSON lines.  Then a windowed join of two streams (raw pairs, and a window
# over the join), fed once by file sources and once by interleaved INSERTs.
# Last, late rows: disorder beyond the watermark delay; awk replays the
# engine's watermark rule (per 1024-row slice) to find the rows it must drop.
#
# Every case runs even when one fails; the failures are listed at the end.
#
# Env: ARES_BUILD (dir with ares-sql and tests/gen_stream), ARES_TMP (private).
# A failure prints the query, the seed, and the first differing rows.
set -eu

. "$(dirname "$0")/t_gen.inc"
# ORACLE_PARTS picks parts when working on one: seeds, join, late.
PARTS=${ORACLE_PARTS:-seeds join late}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# ------------------------------------------------------------------ sqlite helpers
# floor(x / n) * n for any sign of x
fl() { echo "(($1) - ((($1) % $2) + $2) % $2)"; }
# epoch ms -> ISO-8601 UTC with milliseconds, as ares prints a TIMESTAMP
iso() { echo "(strftime('%Y-%m-%dT%H:%M:%S', (($1) - ((($1) % 1000) + 1000) % 1000) / 1000, 'unixepoch') || printf('.%03dZ', ((($1) % 1000) + 1000) % 1000))"; }

STREAM_COLS="ts TIMESTAMP, k BIGINT, s TEXT, v BIGINT, d DOUBLE"
WM="timestamp = 'ts', watermark = '2 seconds'"

# ------------------------------------------------------------------ the queries
# case_def NAME sets HDR (the header ares must print), QA (ares), QS (sqlite)
# and SORTK, sort(1) keys that order rows by window and group (the columns
# that print the same on both sides) before any double.
CASES="tumble hop hop_uneven session where having strings distinct global wcols_first expr"

# Most cases select window_start and window_end after the aggregates;
# wcols_first selects them first (the planner once numbered them before
# seeing the aggregates that follow).
case_def() {
    case "$1" in
    tumble)
        SORTK="-k12,13 -k1,1"
        HDR="k,n,sv,mn,mx,av,sd,ad,cv,mnd,mxd,window_start,window_end"
        QA="SELECT k, COUNT(*) AS n, SUM(v) AS sv, MIN(v) AS mn, MAX(v) AS mx, AVG(v) AS av, SUM(d) AS sd,
                   AVG(d) AS ad, COUNT(v) AS cv, MIN(d) AS mnd, MAX(d) AS mxd, window_start, window_end
            FROM ev WINDOW TUMBLING (SIZE 5 SECONDS) GROUP BY k"
        QS="SELECT k, COUNT(*), SUM(v), MIN(v), MAX(v), AVG(v), SUM(d), AVG(d), COUNT(v), MIN(d), MAX(d),
                   $(iso w), $(iso w+5000)
            FROM (SELECT *, $(fl ts 5000) AS w FROM ev) GROUP BY w, k" ;;
    hop)
        SORTK="-k5,6 -k1,1"
        HDR="k,n,sv,mxd,window_start,window_end"
        QA="SELECT k, COUNT(*) AS n, SUM(v) AS sv, MAX(d) AS mxd, window_start, window_end
            FROM ev WINDOW HOPPING (SIZE 10 SECONDS, ADVANCE BY 2 SECONDS) GROUP BY k"
        QS="WITH RECURSIVE j(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM j WHERE n < 5)
            SELECT k, COUNT(*), SUM(v), MAX(d), $(iso w), $(iso w+10000)
            FROM (SELECT ev.*, $(fl ts 2000) - n * 2000 AS w FROM ev, j) WHERE w + 10000 > ts GROUP BY w, k" ;;
    hop_uneven)
        SORTK="-k4,4 -k1,1"
        # the size is not a multiple of the advance: a row is in 2 or 3 windows
        HDR="k,n,mnv,window_start"
        QA="SELECT k, COUNT(*) AS n, MIN(v) AS mnv, window_start
            FROM ev WINDOW HOPPING (SIZE 5 SECONDS, ADVANCE BY 2 SECONDS) GROUP BY k"
        QS="WITH RECURSIVE j(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM j WHERE n < 3)
            SELECT k, COUNT(*), MIN(v), $(iso w)
            FROM (SELECT ev.*, $(fl ts 2000) - n * 2000 AS w FROM ev, j) WHERE w + 5000 > ts GROUP BY w, k" ;;
    session)
        SORTK="-k5,6 -k1,1"
        # a row opens [ts, ts + gap); sessions merge when those overlap, so a
        # new session starts where the gap to the previous row is >= GAP
        HDR="k,n,sv,mnd,window_start,window_end"
        QA="SELECT k, COUNT(*) AS n, SUM(v) AS sv, MIN(d) AS mnd, window_start, window_end
            FROM ev WINDOW SESSION (GAP 500 MILLISECONDS) GROUP BY k"
        QS="WITH o AS (SELECT *, CASE WHEN ts - LAG(ts) OVER (PARTITION BY k ORDER BY ts) < 500 THEN 0 ELSE 1 END AS nw
                       FROM ev),
                 p AS (SELECT *, SUM(nw) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid FROM o)
            SELECT k, COUNT(*), SUM(v), MIN(d), $(iso 'MIN(ts)'), $(iso 'MAX(ts) + 500') FROM p GROUP BY k, sid" ;;
    where)
        SORTK="-k5,5 -k1,1"
        HDR="k,n,sd,mxv,window_start"
        QA="SELECT k, COUNT(*) AS n, SUM(d) AS sd, MAX(v) AS mxv, window_start
            FROM ev WINDOW TUMBLING (SIZE 10 SECONDS)
            WHERE v > -300 AND s <> 'S0' AND d < 250.5 AND k % 3 <> 1 GROUP BY k"
        QS="SELECT k, COUNT(*), SUM(d), MAX(v), $(iso w)
            FROM (SELECT *, $(fl ts 10000) AS w FROM ev WHERE v > -300 AND s <> 'S0' AND d < 250.5 AND k % 3 <> 1)
            GROUP BY w, k" ;;
    having)
        SORTK="-k4,4 -k1,1"
        HDR="s,n,sv,window_start"
        QA="SELECT s, COUNT(*) AS n, SUM(v) AS sv, window_start
            FROM ev WINDOW TUMBLING (SIZE 5 SECONDS) GROUP BY s HAVING COUNT(*) > 10 AND SUM(v) > 0"
        QS="SELECT s, COUNT(*), SUM(v), $(iso w)
            FROM (SELECT *, $(fl ts 5000) AS w FROM ev) GROUP BY w, s HAVING COUNT(*) > 10 AND SUM(v) > 0" ;;
    strings)
        SORTK="-k7,7 -k1,2"
        HDR="s,k,n,mns,mxs,sv,window_start"
        QA="SELECT s, k, COUNT(*) AS n, MIN(s) AS mns, MAX(s) AS mxs, SUM(v) AS sv, window_start
            FROM ev WINDOW TUMBLING (SIZE 20 SECONDS) GROUP BY s, k"
        QS="SELECT s, k, COUNT(*), MIN(s), MAX(s), SUM(v), $(iso w)
            FROM (SELECT *, $(fl ts 20000) AS w FROM ev) GROUP BY w, s, k" ;;
    distinct)
        SORTK="-k6,6 -k1,1"
        HDR="k,n,ds,dv,dd,window_start"
        QA="SELECT k, COUNT(*) AS n, COUNT(DISTINCT s) AS ds, COUNT(DISTINCT v) AS dv, COUNT(DISTINCT d) AS dd,
                   window_start
            FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k"
        QS="SELECT k, COUNT(*), COUNT(DISTINCT s), COUNT(DISTINCT v), COUNT(DISTINCT d), $(iso w)
            FROM (SELECT *, $(fl ts 10000) AS w FROM ev) GROUP BY w, k" ;;
    global)
        SORTK="-k7,7"
        HDR="n,sv,ad,mns,mxs,dk,window_start,window_end"
        QA="SELECT COUNT(*) AS n, SUM(v) AS sv, AVG(d) AS ad, MIN(s) AS mns, MAX(s) AS mxs,
                   COUNT(DISTINCT k) AS dk, window_start, window_end
            FROM ev WINDOW TUMBLING (SIZE 2 SECONDS)"
        QS="SELECT COUNT(*), SUM(v), AVG(d), MIN(s), MAX(s), COUNT(DISTINCT k), $(iso w), $(iso w+2000)
            FROM (SELECT *, $(fl ts 2000) AS w FROM ev) GROUP BY w" ;;
    wcols_first)
        SORTK="-k1,3"
        HDR="window_start,window_end,k,n,sv"
        QA="SELECT window_start, window_end, k, COUNT(*) AS n, SUM(v) AS sv
            FROM ev WINDOW TUMBLING (SIZE 5 SECONDS) GROUP BY k HAVING MAX(d) > 0"
        QS="SELECT $(iso w), $(iso w+5000), k, COUNT(*), SUM(v)
            FROM (SELECT *, $(fl ts 5000) AS w FROM ev) GROUP BY w, k HAVING MAX(d) > 0" ;;
    expr)
        # computed group key, CASE, LIKE (case-sensitive), IN, BETWEEN, IS NULL,
        # COALESCE, ||, integer division, division by zero (NULL)
        SORTK="-k9,9 -k1,1"
        HDR="km,n,s2,ns,mq,sdiv,cc,mc,window_start"
        QA="SELECT k % 4 AS km, COUNT(*) AS n, SUM(v * 2 - 1) AS s2, SUM(CASE WHEN s LIKE 's%' THEN 1 ELSE 0 END) AS ns,
                   MAX(d / (v % 3)) AS mq, SUM(v / 7) AS sdiv, COUNT(COALESCE(s, 'none')) AS cc,
                   MIN(s || '-' || k) AS mc, window_start
            FROM ev WINDOW TUMBLING (SIZE 10 SECONDS)
            WHERE v BETWEEN -500 AND 800 AND (k IN (1, 2, 3, 5, 8, -1) OR s IS NULL) GROUP BY k % 4"
        QS="SELECT k % 4, COUNT(*), SUM(v * 2 - 1), SUM(CASE WHEN s LIKE 's%' THEN 1 ELSE 0 END), MAX(d / (v % 3)),
                   SUM(v / 7), COUNT(COALESCE(s, 'none')), MIN(s || '-' || k), $(iso w)
            FROM (SELECT *, $(fl ts 10000) AS w FROM ev
                  WHERE v BETWEEN -500 AND 800 AND (k IN (1, 2, 3, 5, 8, -1) OR s IS NULL))
            GROUP BY w, k % 4" ;;
    *) fail "no case $1" ;;
    esac
}

# ------------------------------------------------------------------ comparison

# expect DB SQL OUT: sqlite3's rows, comma-separated, NULL empty
expect() {
    printf 'PRAGMA case_sensitive_like = ON;\n.mode list\n.separator ,\n.nullvalue ""\n%s;\n' "$2" |
        sqlite3 -batch -bail "$1" >"$3" ||
        fail "sqlite3 failed on: $2"
}

# compare LABEL HDR SORTK GOT WANT: GOT is ares CSV with a header, WANT
# sqlite rows.  A difference is reported and remembered; the run goes on.
FAILED=""
compare() {
    label=$1 hdr=$2 sortk=$3 got=$4 want=$5
    first=$(head -n 1 "$got")
    if [ "$first" != "$hdr" ]; then
        echo "$label: header '$first', expected '$hdr'" >&2
        FAILED="$FAILED
  $label"
        return 0
    fi
    # shellcheck disable=SC2086
    tail -n +2 "$got" | sort -t, $sortk >"$got.sorted"
    # shellcheck disable=SC2086
    sort -t, $sortk "$want" >"$want.sorted"
    nwant=$(wc -l <"$want.sorted")
    [ "$nwant" -gt 0 ] || fail "$label: sqlite3 found no rows: the case tests nothing"
    if ! awk -v label="$label" '
        function isnum(x) { return x ~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
        function same(a, b,   d, m) {
            if (a == b) return 1
            if (!isnum(a) || !isnum(b)) return 0
            d = a - b; if (d < 0) d = -d
            m = (a < 0 ? -a : a); if ((b < 0 ? -b : b) > m) m = (b < 0 ? -b : b)
            return d <= 1e-6 + 1e-9 * m
        }
        NR == FNR { want[++nw] = $0; next }
        { got[++ng] = $0 }
        END {
            bad = 0
            n = nw > ng ? nw : ng
            for (i = 1; i <= n && bad < 8; i++) {
                if (i > ng || i > nw) { ok = 0 }
                else {
                    nf = split(got[i], g, ","); nf2 = split(want[i], w, ",")
                    ok = nf == nf2
                    for (f = 1; ok && f <= nf; f++) ok = same(g[f], w[f])
                }
                if (!ok) {
                    if (!bad) printf "%s: rows differ (ares %d rows, sqlite3 %d rows); first differences, sorted:\n", label, ng, nw
                    printf "  row %d\n    ares:    %s\n    sqlite3: %s\n", i, (i <= ng ? got[i] : "(none)"), (i <= nw ? want[i] : "(none)")
                    bad++
                }
            }
            exit bad ? 1 : 0
        }' "$want.sorted" "$got.sorted" >&2; then
        echo "FAIL $label" >&2
        FAILED="$FAILED
  $label"
        return 0
    fi
    echo "ok   $label ($nwant rows)"
}

# ares LABEL OUT ARGS... <input: one ares-sql run, stdout to OUT; it must
# exit 0 and print nothing on stderr (-q drops the notices).
ares() {
    label=$1 out=$2
    shift 2
    rc=0
    "$A" -q "$@" >"$out" 2>"$out.err" || rc=$?
    if [ "$rc" -ne 0 ] || [ -s "$out.err" ]; then
        cat "$out.err" >&2
        fail "$label: ares-sql exited $rc (stderr above)"
    fi
}

# ------------------------------------------------------------------ single-stream cases

# seed:first event time:keys:string keys:NULL percent:ISO-timestamp percent
SEEDS="1:1700000000000:20:12:5:10 2:-100000:7:30:15:0 3:1600000000007:50:5:2:30"

seed_part() {
    IFS=: read -r seed start keys skeys nulls isos <<EOF
$1
EOF
    D="$T/seed$seed"
    mkdir -p "$D"
    gen_args="--seed $seed --rows 20000 --start $start --step 10 --disorder 1500 --keys $keys --skeys $skeys
              --null-pct $nulls --iso-pct $isos --pause-pct 1 --pause 3000"
    # shellcheck disable=SC2086
    "$GEN" $gen_args --header --sql "$D/data.sql" >"$D/ev.csv"
    sqlite3 -batch -bail "$D/db" <"$D/data.sql" || fail "sqlite3 could not load seed $seed"
    SSQL="CREATE STREAM ev ($STREAM_COLS) WITH ($WM);"

    # Each query alone, as a push query printing to stdout.
    for c in $CASES; do
        case_def "$c"
        expect "$D/db" "$QS" "$D/$c.want"
        ares "$c seed=$seed" "$D/$c.got" --memory --format csv -e "$SSQL $QA EMIT FINAL;" --ingest ev <"$D/ev.csv"
        compare "$c seed=$seed" "$HDR" "$SORTK" "$D/$c.got" "$D/$c.want"
    done

    # EMIT CHANGES: one row per (input row, window) it updates; the last
    # row of each (window, key) is the EMIT FINAL row.
    case_def hop
    ares "hop changes seed=$seed" "$D/changes.got" --memory --format csv -e "$SSQL $QA EMIT CHANGES;" \
        --ingest ev <"$D/ev.csv"
    { head -n 1 "$D/changes.got"; awk -F, 'NR > 1 { last[$1 "," $5] = $0 } END { for (g in last) print last[g] }' \
        "$D/changes.got"; } >"$D/changes.last"
    compare "hop EMIT CHANGES, last per window seed=$seed" "$HDR" "$SORTK" "$D/changes.last" "$D/hop.want"
    nchanges=$(($(wc -l <"$D/changes.got") - 1))
    nupdates=$(awk -F, '{ n += $2 } END { print n }' "$D/hop.want")
    if [ "$nchanges" -ne "$nupdates" ]; then
        echo "FAIL hop EMIT CHANGES seed=$seed: $nchanges rows, expected one per row and window: $nupdates" >&2
        FAILED="$FAILED
  hop EMIT CHANGES row count seed=$seed"
    fi

    # The same rows as JSON lines.
    # shellcheck disable=SC2086
    "$GEN" $gen_args --json >"$D/ev.json"
    case_def tumble
    ares "tumble json seed=$seed" "$D/json.got" --memory --format csv -e "$SSQL $QA EMIT FINAL;" \
        --ingest ev --input-format json <"$D/ev.json"
    compare "tumble json seed=$seed" "$HDR" "$SORTK" "$D/json.got" "$D/tumble.want"

    # Every query at once, as standing queries with file sinks, two tasks each.
    script="$SSQL"
    for c in $CASES; do
        case_def "$c"
        script="$script
CREATE QUERY q_$c WITH (sink = 'file://$D/$c.sink', format = 'csv', parallelism = 2) AS $QA EMIT FINAL;"
    done
    ares "standing queries seed=$seed" "$D/sinks.out" --data "$D/data" -e "$script" --ingest ev <"$D/ev.csv"
    for c in $CASES; do
        case_def "$c"
        compare "$c sink parallelism=2 seed=$seed" "$HDR" "$SORTK" "$D/$c.sink" "$D/$c.want"
    done
}

# ------------------------------------------------------------------ the windowed join

join_part() {
    D="$T/join"
    mkdir -p "$D"
    for side in a:11 b:12; do
        "$GEN" --seed "${side#*:}" --rows 20000 --start 1700000000000 --step 10 --disorder 1500 --keys 50 --skeys 5 \
            --null-pct 3 --header --table "${side%:*}" --sql "$D/${side%:*}.sql" >"$D/${side%:*}.csv"
    done
    { cat "$D/a.sql" "$D/b.sql"; echo "CREATE INDEX bk ON b (k, ts);"; } | sqlite3 -batch -bail "$D/db" ||
        fail "sqlite3 could not load the join data"

    # NULL keys never match (a.k = b.k is not true for them).
    JRAW_HDR="ats,k,av,bts,bv,bs"
    JRAW_QA="SELECT a.ts AS ats, a.k AS k, a.v AS av, b.ts AS bts, b.v AS bv, b.s AS bs
             FROM a JOIN b ON a.k = b.k WITHIN 1 SECOND"
    JRAW_QS="SELECT $(iso a.ts), a.k, a.v, $(iso b.ts), b.v, b.s
             FROM a JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts - 1000 AND a.ts + 1000"
    # The window is on the left side's time.
    JAGG_HDR="k,n,sbv,mxd,window_start"
    JAGG_QA="SELECT a.k AS k, COUNT(*) AS n, SUM(b.v) AS sbv, MAX(a.d) AS mxd, window_start
             FROM a WINDOW TUMBLING (SIZE 10 SECONDS) JOIN b ON a.k = b.k WITHIN 1 SECOND GROUP BY a.k"
    JAGG_QS="SELECT a.k, COUNT(*), SUM(b.v), MAX(a.d), $(iso w)
             FROM (SELECT *, $(fl ts 10000) AS w FROM a) AS a
             JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts - 1000 AND a.ts + 1000 GROUP BY w, a.k"
    expect "$D/db" "$JRAW_QS" "$D/raw.want"
    expect "$D/db" "$JAGG_QS" "$D/agg.want"

    # 1. Both streams from file sources (read one after the other), push queries.
    FSQL="CREATE STREAM a ($STREAM_COLS) WITH ($WM, source = 'file://$D/a.csv', format = 'csv');
          CREATE STREAM b ($STREAM_COLS) WITH ($WM, source = 'file://$D/b.csv', format = 'csv');"
    ares "join file sources" "$D/raw.got" --memory --format csv -e "$FSQL $JRAW_QA;" </dev/null
    compare "join file sources" "$JRAW_HDR" "" "$D/raw.got" "$D/raw.want"
    ares "join+window file sources" "$D/agg.got" --memory --format csv -e "$FSQL $JAGG_QA EMIT FINAL;" </dev/null
    compare "join+window file sources" "$JAGG_HDR" "-k5,5 -k1,1" "$D/agg.got" "$D/agg.want"

    # 2. INSERTs of 500 rows, alternating a and b, so both watermarks advance
    # together and rows expire while the other side still arrives; empty
    # file sources end both streams afterwards.  Standing queries, sinks.
    : >"$D/empty.csv"
    awk -F, -v A="$D/a.csv" -v B="$D/b.csv" '
        function lit(f, i) {
            if (f == "") return "NULL"
            if (i == 3) return "\047" f "\047"
            return f
        }
        function row(line,   n, x, i, r) {
            n = split(line, x, ",")
            r = "("
            for (i = 1; i <= 5; i++) r = r (i > 1 ? ", " : "") lit(x[i], i)
            return r ")"
        }
        function chunk(name, file,   i, line, out) {
            out = ""
            for (i = 0; i < 500 && (getline line < file) > 0; i++) out = out (out == "" ? "" : ",\n") row(line)
            if (out != "") print "INSERT INTO " name " VALUES " out ";"
            return out != ""
        }
        BEGIN {
            getline hdr < A; getline hdr < B
            while (1) { x = chunk("a", A); y = chunk("b", B); if (!x && !y) break }
        }' >"$D/inserts.sql"
    cat >"$D/setup.sql" <<EOF
CREATE STREAM a ($STREAM_COLS) WITH ($WM, source = 'file://$D/empty.csv', format = 'csv');
CREATE STREAM b ($STREAM_COLS) WITH ($WM, source = 'file://$D/empty.csv', format = 'csv');
CREATE QUERY jraw WITH (sink = 'file://$D/raw.sink', format = 'csv') AS $JRAW_QA;
CREATE QUERY jagg WITH (sink = 'file://$D/agg.sink', format = 'csv', parallelism = 2) AS $JAGG_QA EMIT FINAL;
EOF
    ares "join by INSERTs" "$D/ins.out" --data "$D/data" -f "$D/setup.sql" -f "$D/inserts.sql" </dev/null
    compare "join interleaved inserts" "$JRAW_HDR" "" "$D/raw.sink" "$D/raw.want"
    compare "join+window interleaved inserts" "$JAGG_HDR" "-k5,5 -k1,1" "$D/agg.sink" "$D/agg.want"
}

# ------------------------------------------------------------------ late rows
# Disorder (5 s) beyond the watermark delay (1 s): some rows arrive after
# their window has closed.  The engine advances a stream's watermark at the
# end of each slice of 1024 rows to (largest time so far - delay), and a
# window closes when the watermark reaches its end + GRACE; awk replays that
# rule to find the late rows, sqlite3 aggregates the others, and DESCRIBE
# (in a second run, on the reopened data directory) counts exactly the late
# ones as dropped.
late_part() {
    D="$T/late"
    mkdir -p "$D"
    "$GEN" --seed 21 --rows 20000 --start 1700000000000 --step 10 --disorder 5000 --keys 10 --skeys 5 \
        --null-pct 5 --header --sql "$D/data.sql" >"$D/ev.csv"
    awk -F, -v slice=1024 -v delay=1000 -v size=5000 -v grace=1000 '
        NR == 1 { next }
        {
            i = NR - 2
            if (i > 0 && i % slice == 0) wm = maxts - delay
            ts = $1
            ws = ts - (ts % size)
            if (i >= slice && ws + size + grace <= wm) print "DELETE FROM ev WHERE rowid = " i + 1 ";"
            if (i == 0 || ts > maxts) maxts = ts
        }' "$D/ev.csv" >"$D/late.sql"
    nlate=$(wc -l <"$D/late.sql")
    [ "$nlate" -gt 100 ] || fail "late: only $nlate late rows; the case tests too little"
    cat "$D/data.sql" "$D/late.sql" | sqlite3 -batch -bail "$D/db" || fail "sqlite3 could not load the late data"
    expect "$D/db" "SELECT k, COUNT(*), SUM(v), MAX(d), $(iso w), $(iso w+5000)
                    FROM (SELECT *, $(fl ts 5000) AS w FROM ev) GROUP BY w, k" "$D/late.want"
    # the late rows are told to the sender: a warning with their count, exit 4
    rc=0
    "$A" -q --data "$D/data" -e "
        CREATE STREAM ev ($STREAM_COLS) WITH (timestamp = 'ts', watermark = '1 second');
        CREATE QUERY late WITH (sink = 'file://$D/late.sink', format = 'csv') AS
        SELECT k, COUNT(*) AS n, SUM(v) AS sv, MAX(d) AS mxd, window_start, window_end
        FROM ev WINDOW TUMBLING (SIZE 5 SECONDS, GRACE 1 SECOND) GROUP BY k EMIT FINAL;" --ingest ev <"$D/ev.csv" \
        >"$D/late.out" 2>"$D/late.err" || rc=$?
    told=$(sed -n 's/^ares-sql: warning: \([0-9]*\) rows of stream ev were late and dropped.*/\1/p' "$D/late.err")
    if [ "$rc" -eq 4 ] && [ "$told" = "$nlate" ] && [ "$(wc -l <"$D/late.err")" -eq 1 ]; then
        echo "ok   late rows told to the sender ($told, exit 4)"
    else
        cat "$D/late.err" >&2
        echo "FAIL the sender was told of '$told' late rows (exit $rc), expected $nlate (exit 4)" >&2
        FAILED="$FAILED
  late rows told to the sender"
    fi
    compare "late rows dropped ($nlate late)" "k,n,sv,mxd,window_start,window_end" "-k5,6 -k1,1" \
        "$D/late.sink" "$D/late.want"
    ares "describe" "$D/describe.out" --data "$D/data" --format csv -e "DESCRIBE late;" </dev/null
    dropped=$(sed -n 's/.*late (dropped): \([0-9]*\).*/\1/p' "$D/describe.out")
    if [ "$dropped" = "$nlate" ]; then
        echo "ok   late count in DESCRIBE ($dropped)"
    else
        cat "$D/describe.out" >&2
        echo "FAIL DESCRIBE counts '$dropped' late rows, expected $nlate" >&2
        FAILED="$FAILED
  late count in DESCRIBE"
    fi
}

# ------------------------------------------------------------------ main

if part seeds; then
    for spec in $SEEDS; do seed_part "$spec"; done
fi
if part join; then join_part; fi
if part late; then late_part; fi

if [ -n "$FAILED" ]; then
    echo "t_oracle: these cases disagree with sqlite3:$FAILED" >&2
    exit 1
fi
echo "t_oracle: all cases agree with sqlite3"
