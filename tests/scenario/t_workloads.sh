#!/bin/sh
# t_workloads.sh: the paper's workloads (bench/workloads, issue 17 section 4)
# against sqlite3, embedded and on a cluster of 3 nodes in 3 domains.
#   1. words_gen and tpch_gen write seeded input (the same bytes twice over;
#      with --part I/3, three generators write the rows of one);
#   2. sqlite3 runs wordcount.oracle.sql and tpch_join.oracle.sql on it;
#   3. ares-sql --memory runs the SELECT of wordcount.sql (CROSS JOIN UNNEST)
#      as a push query over --ingest, and tpch_join.sql's over two file
#      sources: the same rows as sqlite3 (sorted; decimals as sqlite3 prints);
#   4. three ares-node processes: the DDL and the standing queries of both
#      files as they are (parallelism 3), a subscriber each, the three
#      streams fed by three clients at once (--end ends each stream with its
#      input): again sqlite3's rows.  EXPLAIN
#      PLACEMENT must show the UNNEST task placed;
#   5. the word count as a standing query over a file source, killed -9 at
#      random points and restarted until it finishes: its file sink holds
#      the rows of an uninterrupted run, none lost, none repeated (the rows
#      UNNEST makes keep their record's position, so a replay skips them).
# About 10 s on 2 cores.  Env: ARES_BUILD, ARES_TMP.
set -u
. "$(dirname "$0")/t_cluster_lib.inc"
export LC_ALL=C
ROOT=$(cd "$_LIBDIR/../.." && pwd)
W="$ROOT/bench/workloads"
command -v sqlite3 >/dev/null || fail "sqlite3 is not installed"
for g in words_gen tpch_gen; do
    if [ -x "$ARES_BUILD/bench/$g" ]; then
        eval "$g=\$ARES_BUILD/bench/$g"
    else # built by `make scenario`; by hand when the test runs alone
        ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -I"$ROOT" -o "$T/$g" "$W/$g.c" "$ROOT/base/base.c" -lm || fail "cc $g"
        eval "$g=\$T/$g"
    fi
done

# ---- 1. input
# 12,000 sentences over 40 s of event time (4 windows), 400 Zipf words;
# 4,000 orders over 20 s with skewed customers and parts (about 16,000 lineitems).
"$words_gen" --rows 12000 --seed 7 --event-rate 300 --vocab 400 --zipf 1.1 >words.csv || fail "words_gen"
"$tpch_gen" --rows 4000 --seed 9 --event-rate 200 --skew 0.8 --out-dir . || fail "tpch_gen --out-dir"
"$tpch_gen" --rows 4000 --seed 9 --event-rate 200 --skew 0.8 --table lineitem >li2.csv || fail "tpch_gen --table"
cmp -s lineitem.csv li2.csv || fail "tpch_gen --table lineitem differs from --out-dir's lineitem.csv"
[ "$("$words_gen" --rows 12000 --seed 7 --event-rate 300 --vocab 400 --zipf 1.1 | cksum)" = "$(cksum <words.csv)" ] ||
    fail "words_gen is not deterministic"
# --part I/3: three generators write the rows of one, each in time order
for p in 0 1 2; do
    "$words_gen" --rows 12000 --seed 7 --event-rate 300 --vocab 400 --zipf 1.1 --part $p/3 >"words.$p" || fail "words_gen --part"
    "$tpch_gen" --rows 4000 --seed 9 --event-rate 200 --skew 0.8 --table lineitem --part $p/3 >"li.$p" || fail "tpch_gen --part"
    for f in words:1 li:7; do # the file and its ts column
        awk -F, -v c="${f#*:}" 'NR > 2 && $c + 0 < last { exit 1 } { last = $c + 0 }' "${f%:*}.$p" ||
            fail "${f%:*}.$p is not in time order"
    done
done
[ "$(tail -q -n +2 words.0 words.1 words.2 | sort | cksum)" = "$(tail -n +2 words.csv | sort | cksum)" ] ||
    fail "words_gen --part 0/3, 1/3, 2/3 do not make the input of one"
[ "$(tail -q -n +2 li.0 li.1 li.2 | sort | cksum)" = "$(tail -n +2 lineitem.csv | sort | cksum)" ] ||
    fail "tpch_gen --part 0/3, 1/3, 2/3 do not make the lineitems of one"
"$tpch_gen" --rows 10 --table nothing 2>gen.err && fail "tpch_gen took --table nothing"
grep -q "bad value for --table" gen.err || fail "tpch_gen --table nothing: $(cat gen.err)"
echo "input: $(($(wc -l <words.csv) - 1)) sentences, $(($(wc -l <orders.csv) - 1)) orders," \
    "$(($(wc -l <lineitem.csv) - 1)) lineitems"

# ---- 2. the oracle
{
    cat "$W/schema.oracle.sql"
    for t in lines:words orders:orders lineitem:lineitem; do echo ".import --csv --skip 1 ${t#*:}.csv ${t%:*}"; done
} | sqlite3 -batch -bail oracle.db || fail "sqlite3 could not load the input"

# norm FILE: header, then the rows sorted, decimals printed as sqlite3 prints them
norm() {
    head -n 1 "$1"
    tail -n +2 "$1" | awk -F, -v OFS=, '{
        for (i = 1; i <= NF; i++) if ($i ~ /^-?[0-9]*\.[0-9]+$/) $i = sprintf("%.15g", $i)
        print
    }' | sort
}
for q in wordcount tpch_join; do
    printf '.headers on\n.mode list\n.separator ,\n' | cat - "$W/$q.oracle.sql" | sqlite3 -batch -bail oracle.db >"$q.want" ||
        fail "sqlite3: $q.oracle.sql"
    norm "$q.want" >"$q.want.n"
    [ "$(wc -l <"$q.want.n")" -gt 10 ] || fail "sqlite3 found almost no rows for $q: the check tests nothing"
done

# check LABEL Q GOT: GOT (ares-sql's CSV) has sqlite3's rows for workload Q
check() {
    norm "$3" >"$3.n"
    cmp -s "$2.want.n" "$3.n" || {
        diff "$2.want.n" "$3.n" | head -n 10
        fail "$1: $(($(wc -l <"$3.n") - 1)) rows, sqlite3 has $(($(wc -l <"$2.want.n") - 1))"
    }
    echo "ok   $1: $(($(wc -l <"$3.n") - 1)) rows, as sqlite3"
}

# ddl FILE / select FILE: the CREATE STREAMs of a workload, and its standing query's SELECT
ddl() { sed -n '/^CREATE QUERY/q; /^--/d; p' "$1"; }
select_of() { sed -n '/^CREATE QUERY/,$p' "$1" | sed '1s/^CREATE QUERY [a-z_]* AS//'; }

# ---- 3. embedded
"$A" --memory -q --format csv -e "$(ddl "$W/wordcount.sql") $(select_of "$W/wordcount.sql")" --ingest lines \
    <words.csv >wc.emb 2>wc.emb.err || { cat wc.emb.err; fail "embedded wordcount"; }
[ ! -s wc.emb.err ] || { cat wc.emb.err; fail "embedded wordcount wrote to stderr"; }
check "wordcount embedded" wordcount wc.emb
"$A" --memory -q --format csv -e "$(ddl "$W/tpch_join.sql" |
    sed "s|WITH (timestamp = 'ts')|WITH (timestamp = 'ts', source = 'file://$T/@.csv', format = 'csv')|" |
    awk '/CREATE STREAM orders/ { o = 1 } /CREATE STREAM lineitem/ { o = 0 } { sub("@", o ? "orders" : "lineitem"); print }')
    $(select_of "$W/tpch_join.sql")" </dev/null >tj.emb 2>tj.emb.err || { cat tj.emb.err; fail "embedded tpch_join"; }
[ ! -s tj.emb.err ] || { cat tj.emb.err; fail "embedded tpch_join wrote to stderr"; }
check "tpch_join embedded" tpch_join tj.emb

# ---- 4. three nodes in three domains
start_coordinator c0 rack-a
start_member n1 rack-b
start_member n2 rack-c
wait_alive 3
sqlc -e "SET parallelism = 3; $(grep -v '^--' "$W/wordcount.sql") $(grep -v '^--' "$W/tpch_join.sql")" 2>cq.err ||
    { cat cq.err; fail "the workloads' DDL and standing queries on the cluster"; }
for q in wordcount tpch_join; do
    sqlc -e "SUBSCRIBE $q;" >"sub_$q.csv" 2>"sub_$q.err" &
    PIDS="$PIDS $!"
done
sqlc -e "EXPLAIN PLACEMENT wordcount;" >place.csv || fail "EXPLAIN PLACEMENT wordcount"
grep -q 'UNNEST' place.csv || { cat place.csv; fail "no UNNEST task in wordcount's placement"; }
sleep 0.3
ING=""
for s in lines:words orders:orders lineitem:lineitem; do
    sqlc --ingest "${s%:*}" --end <"${s#*:}.csv" >"ing_${s%:*}.out" 2>"ing_${s%:*}.err" &
    ING="$ING $!"
done
for p in $ING; do wait "$p" || fail "an ingest failed: $(cat ing_*.err)"; done
wait_rows sub_wordcount.csv "$(wc -l <wordcount.want.n)" || true
wait_rows sub_tpch_join.csv "$(wc -l <tpch_join.want.n)" || true
sleep 0.3
check "wordcount on 3 nodes" wordcount sub_wordcount.csv
check "tpch_join on 3 nodes" tpch_join sub_tpch_join.csv
for n in c0 n1 n2; do grep -q "deployed: [1-9]" "$n.log" || fail "node $n ran no task"; done
echo "ok   both workloads on 3 nodes; wordcount's tasks per node:" \
    "$(awk -F, '$3 == "task" { n[$4]++ } END { for (k in n) printf "%s %d, ", k, n[k] }' place.csv)"

# ---- 5. kill -9 and restart, embedded
stop_cluster
"$words_gen" --rows 400000 --seed 8 --event-rate 2000 --vocab 2000 >big.csv || fail "words_gen big"
# crash_setup DIR: the word count reading big.csv, its sink in DIR (every run the same command)
crash_setup() {
    mkdir -p "$1"
    { ddl "$W/wordcount.sql" | sed "s|CREATE STREAM|CREATE STREAM IF NOT EXISTS|; s|WITH (timestamp = 'ts')|WITH (timestamp = 'ts', source = 'file://$T/big.csv', format = 'csv')|"
      sed -n '/^CREATE QUERY/,$p' "$W/wordcount.sql" |
          sed "1s|^CREATE QUERY \([a-z_]*\) AS|CREATE QUERY IF NOT EXISTS \1 WITH (sink = 'file://$1/wc.csv', format = 'csv') AS|"
    } >"$1/setup.sql"
}
crash_setup "$T/ref"
t0=$(date +%s%N)
"$A" --data "$T/ref/data" -q -f "$T/ref/setup.sql" </dev/null 2>ref.err || { cat ref.err; fail "uninterrupted run"; }
ref_ms=$((($(date +%s%N) - t0) / 1000000))
crash_setup "$T/crash"
kills=0 at="" seed=${CRASH_SEED:-$$}
for i in 1 2 3 4 5 6; do
    "$A" --data "$T/crash/data" -q -f "$T/crash/setup.sql" </dev/null >>crash.out 2>>crash.err &
    pid=$!
    PIDS="$PIDS $pid"
    delay_ms=$(awk -v s="$seed" -v i="$i" -v r="$ref_ms" 'BEGIN { srand(s + i); printf "%d", 20 + rand() * r * 0.4 }')
    sleep "$(awk -v d="$delay_ms" 'BEGIN { printf "%.3f", d / 1000 }')"
    if kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)) at="$at $delay_ms"; fi
    wait "$pid" 2>/dev/null
done
"$A" --data "$T/crash/data" -q -f "$T/crash/setup.sql" </dev/null >>crash.out 2>>crash.err || { cat crash.err; fail "the last run after the kills"; }
[ "$kills" -ge 3 ] || fail "only $kills of 6 runs were killed mid-way (the uninterrupted run took $ref_ms ms)"
same_rows "$T/crash/wc.csv" "$T/ref/wc.csv"
echo "ok   wordcount killed -9 $kills times (at$at ms into a run; CRASH_SEED=$seed; uninterrupted $ref_ms ms): the sink equals the uninterrupted run's"
