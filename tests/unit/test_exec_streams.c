/*
 * test_exec: streams and their logs: task measurements, log copies,
 * partitions, joins, UNNEST, errors, offset = 'earliest', restarts, derived
 * streams, retention.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/unit/test_exec.h"

/* What the tasks measured (engine_task_stats_each): per task, in plan order. */
typedef struct tstats {
    int n;
    engine_task_stats t[16];
    uint64_t dest_rows[16][4];
} tstats;

static void take_stats(void *ctx, const engine_task_stats *s)
{
    tstats *x = ctx;
    assert_true(x->n < 16 && s->ndest <= 4);
    x->t[x->n] = *s;
    for (int i = 0; i < s->ndest; i++) x->dest_rows[x->n][i] = s->dest_rows[i];
    x->n++;
}

/* The tasks' cost counters: every row counted once on each edge, the
 * exchange's split adds up, rows in equal the rows the upstream task sent,
 * the key that nine rows in ten carry makes its aggregate task the busy one,
 * open windows show as state, and the source is charged the decoding. */
void test_task_measurements(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c = {0};
    exec_out out = cap_out(&c);
    run(e, &out, "SET parallelism = 2; CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp = 'ts');"
                 "CREATE QUERY q AS SELECT k, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY k;");
    sbuf in;
    sbuf_init(&in);
    for (int i = 0; i < 20000; i++) sbuf_printf(&in, "%d,%d,%d\n", i, i % 10 ? 1 : 2 + i % 7, i);
    ingest(e, "s", in.p, 0); /* no end: the window stays open */
    tstats x = {0};
    int ntasks = engine_task_stats_each(e, take_stats, &x);
    assert_int_equal(ntasks, x.n);
    /* SOURCE, WINDOW x 2, AGGREGATE x 2, PROJECT x 2, SINK */
    assert_int_equal(x.n, 8);
    assert_int_equal(x.t[0].op, 0);
    assert_int_equal(x.t[0].rows_in, 20000);
    assert_int_equal(x.t[0].ndest, 2);
    assert_int_equal(x.dest_rows[0][0] + x.dest_rows[0][1], 20000);
    for (int t = 1; t <= 2; t++) assert_int_equal(x.t[t].rows_in, x.dest_rows[0][t - 1]);
    uint64_t agg_in = x.t[3].rows_in + x.t[4].rows_in;
    assert_int_equal(agg_in, 20000);
    int hi = x.t[3].rows_in > x.t[4].rows_in ? 3 : 4;
    assert_true(x.t[hi].rows_in >= 18000);
    assert_true(x.t[hi].cpu_ns > 0 && x.t[0].cpu_ns > 0);
    assert_true(x.t[hi].state_bytes > 0); /* its group of key 1 is open */
    for (int t = 0; t < x.n; t++) {
        assert_int_equal(x.t[t].bytes_out, 0); /* nothing left the engine */
        assert_true(x.t[t].since_ms > 0);
    }
    run(e, &out, "DROP QUERY q;");
    sbuf_fini(&in);
    cap_fini(&c);
    engine_close(e);
}

/* One row of stream ev at second i + 1, in an ingest of its own. */
static void ingest_second(engine *e, int i)
{
    char line[64];
    snprintf(line, sizeof line, "%d,1,1\n", 1000 * (i + 1));
    ingest(e, "ev", line, 0);
}

/* A stream's log copied to another engine (a cluster's shadow home): the
 * home's queries see nothing until the copy has it (the guard); the copy
 * goes on with a client's ingest from the home's saved decoder, and its
 * log ends up equal, byte for byte and counters included, to that of an
 * engine that got the whole input. */
void test_log_copy(void **state)
{
    (void)state;
    const char *ddl = "CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp='ts');";
    const char *q = "SELECT k, COUNT(*) AS n, SUM(v) AS s FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;";
    const char *part1 = "ts,k,v\n1000,1,2.5\n12000,2,1\n15", *part2 = "000,2,4\n25000,3,1\n";
    engine *h = open_mem(), *c = open_mem(), *r = open_mem();
    cap ch;
    exec_out oh = cap_out(&ch);
    run(h, &oh, ddl);
    run(h, &oh, q);
    run(c, NULL, ddl);
    run(r, NULL, ddl);
    xerr err;
    assert_int_equal(engine_log_guard(h, "ev", 1, &err), 0);
    exec_ingest *in, *ic, *ir;
    exec_ingest_opts o = {0};
    assert_int_equal(exec_ingest_open(h, "ev", &o, &in, &err), 0);
    assert_int_equal(exec_ingest_feed(in, part1, strlen(part1), &err), 0);
    assert_int_equal(ch.text.len, 0); /* 12000 closed [0, 10 s), but the copy has nothing yet */
    sbuf ship, st;
    sbuf_init(&ship);
    sbuf_init(&st);
    uint64_t next, end, hend;
    assert_int_equal(engine_log_export(h, "ev", 0, 1 << 20, &ship, &next, &err), 0);
    assert_int_equal(exec_ingest_save(in, &st), 0);
    assert_int_equal(engine_log_import(c, "ev", ship.p, ship.len, &end, &err), 0);
    assert_int_equal(end, next);
    /* the same shipment again (a resend) changes nothing */
    assert_int_equal(engine_log_import(c, "ev", ship.p, ship.len, &hend, &err), 0);
    assert_int_equal(hend, end);
    assert_int_equal(engine_log_release(h, "ev", end, &err), 0);
    assert_int_equal(ch.text.len, 0); /* the slice is not over: the watermark has not moved */
    /* the home is lost: the copy goes on with the client's next chunk */
    assert_int_equal(exec_ingest_open(c, "ev", &o, &ic, &err), 0);
    assert_int_equal(exec_ingest_load(ic, st.p, st.len, &err), 0);
    assert_int_equal(exec_ingest_feed(ic, part2, strlen(part2), &err), 0);
    assert_int_equal(exec_ingest_close(ic, 1, NULL, &err), 0);
    assert_int_equal(exec_ingest_open(r, "ev", &o, &ir, &err), 0);
    assert_int_equal(exec_ingest_feed(ir, part1, strlen(part1), &err), 0);
    assert_int_equal(exec_ingest_feed(ir, part2, strlen(part2), &err), 0);
    assert_int_equal(exec_ingest_close(ir, 1, NULL, &err), 0);
    sbuf lc, lr;
    sbuf_init(&lc);
    sbuf_init(&lr);
    assert_int_equal(engine_log_export(c, "ev", 0, 1 << 20, &lc, &next, &err), 0);
    assert_int_equal(engine_log_export(r, "ev", 0, 1 << 20, &lr, &next, &err), 0);
    assert_int_equal(lc.len, lr.len);
    assert_memory_equal(lc.p, lr.p, lr.len);
    /* the home's end waits for the copy too */
    assert_int_equal(exec_ingest_close(in, 1, NULL, &err), 0);
    assert_int_equal(ch.ends, 0);
    assert_int_equal(engine_log_guard(h, "ev", 0, &err), 0);
    char *rows = sorted(ch.text.p);
    assert_string_equal(rows, "1,1,2.5\n2,1,1\n");
    free(rows);
    assert_int_equal(ch.ends, 1);
    /* the home's retention trims its log: the copy follows at the next shipment */
    engine *h2 = open_mem(), *c2 = open_mem();
    run(h2, NULL, "CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp='ts', retention = '10 bytes');");
    run(c2, NULL, ddl);
    for (int i = 0; i < 4; i++) {
        ingest_second(h2, i);
        sbuf x;
        sbuf_init(&x);
        assert_int_equal(engine_log_export(h2, "ev", 0, 1 << 20, &x, &next, &err), 0);
        assert_int_equal(engine_log_import(c2, "ev", x.p, x.len, &end, &err), 0);
        sbuf_fini(&x);
    }
    assert_int_equal(engine_commit(h2, &err), 0);
    sbuf x2, y2;
    sbuf_init(&x2);
    sbuf_init(&y2);
    assert_int_equal(engine_log_export(h2, "ev", 0, 1 << 20, &x2, &next, &err), 0);
    assert_int_equal(engine_log_import(c2, "ev", x2.p, x2.len, &end, &err), 0);
    assert_int_equal(engine_log_export(c2, "ev", 0, 1 << 20, &y2, &next, &err), 0);
    assert_true(be64_get((unsigned char *)x2.p + 4) > 0); /* the home trimmed */
    assert_int_equal(x2.len, y2.len); /* the copy holds what the home holds, counters included */
    assert_memory_equal(x2.p, y2.p, x2.len);
    sbuf_fini(&y2);
    /* a shadow fed the same input hears only where the home's log begins
     * (export with max 0) and trims below it, never past its own end */
    engine *f2 = open_mem();
    run(f2, NULL, ddl);
    for (int i = 0; i < 4; i++) ingest_second(f2, i);
    sbuf t2;
    sbuf_init(&t2);
    assert_int_equal(engine_log_export(h2, "ev", 0, 0, &t2, &next, &err), 0);
    assert_int_equal(be32_get((unsigned char *)t2.p + 68), 0); /* no records */
    uint64_t fend;
    assert_int_equal(engine_log_import(f2, "ev", t2.p, t2.len, &fend, &err), 0);
    sbuf_reset(&t2);
    assert_int_equal(engine_log_export(f2, "ev", 0, 1 << 20, &t2, &next, &err), 0);
    assert_int_equal(be64_get((unsigned char *)t2.p + 4), be64_get((unsigned char *)x2.p + 4)); /* the same begin */
    assert_int_equal(fend, be64_get((unsigned char *)x2.p + 12));
    sbuf_fini(&t2);
    sbuf_fini(&x2);
    engine_close(f2);
    engine_close(h2);
    engine_close(c2);
    /* a shipment that is not one */
    assert_int_equal(engine_log_import(c, "ev", "junk", 4, &end, &err), XE_CORRUPT);
    assert_int_equal(engine_log_import(c, "nosuch", ship.p, ship.len, &end, &err), XE_NAME);
    sbuf_fini(&ship);
    sbuf_fini(&st);
    sbuf_fini(&lc);
    sbuf_fini(&lr);
    engine_close(h);
    engine_close(c);
    engine_close(r);
    cap_fini(&ch);
}




/* A stream of 3 partitions, embedded: a source task per partition, each
 * partition with its own watermark (a window closes when every partition
 * has passed it), the stream's end ending every partition, and a
 * partition's own end ending it alone. */
void test_partitions(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM s (ts BIGINT, k BIGINT) WITH (timestamp='ts', partitions = 3);"
        "SELECT k, COUNT(*) AS n, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;");
    ingest(e, "s#1", "100,1\n1500,1\n2500,2\n", 0);
    ingest(e, "s#2", "200,1\n2600,1\n", 0);
    /* partition 0 has said nothing yet: no window can close */
    assert_true(!c.text.p || !strstr(c.text.p, "00Z"));
    ingest(e, "s", "300,2\n1200,1\n", 0);
    /* every partition has passed 1 s now: the first window closes */
    char *got = sorted(c.text.p);
    assert_string_equal(got, "1,2,1970-01-01T00:00:00.000Z\n2,1,1970-01-01T00:00:00.000Z\n");
    free(got);
    ingest(e, "s", "", 1); /* the stream's end ends the partitions too */
    got = sorted(c.text.p);
    assert_string_equal(got, "1,1,1970-01-01T00:00:02.000Z\n1,2,1970-01-01T00:00:00.000Z\n1,2,1970-01-01T00:00:01.000Z\n"
                             "2,1,1970-01-01T00:00:00.000Z\n2,1,1970-01-01T00:00:02.000Z\n");
    free(got);
    engine_close(e);
    cap_fini(&c);
}

void test_join_within(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM a (ts BIGINT, id BIGINT, x TEXT) WITH (timestamp='ts');"
        "CREATE STREAM b (ts BIGINT, id BIGINT, y TEXT) WITH (timestamp='ts');"
        "SELECT a.id, x, y FROM a JOIN b ON a.id = b.id WITHIN 5 SECONDS;");
    ingest(e, "a", "1000,1,a1\n2000,2,a2\n", 0);
    ingest(e, "b", "3000,1,b1\n9000,2,b2\n", 0);
    char *got = sorted(c.text.p);
    assert_string_equal(got, "1,a1,b1\n"); /* 2000 and 9000 are 7 s apart */
    free(got);
    engine_close(e);
    cap_fini(&c);
}

/* The flat map of CROSS JOIN UNNEST(split(...)): one row per piece, empty
 * pieces kept, NULL and empty text make none, an empty separator keeps the
 * text whole, a computed text (its pieces copied out of the scratch arena),
 * a multi-byte separator, the input row's event time carried into the
 * window, and a batch of many lines expanding past the output's first size. */
void test_unnest_flat_map(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM l (ts BIGINT, line TEXT, sep TEXT) WITH (timestamp='ts');"
        "SELECT ts, w FROM l CROSS JOIN UNNEST(split(line, sep)) AS t(w);");
    ingest(e, "l", "1,a b,\" \"\n2,x,\n3,,\" \"\n4,a  b,\" \"\n5,p::q::,::\n6,solo,\"\"\n", 1);
    /* row 2: NULL separator; row 3: NULL (empty CSV field) text */
    assert_string_equal(c.text.p, "1,a\n1,b\n4,a\n4,\"\"\n4,b\n5,p\n5,q\n5,\"\"\n6,solo\n");
    cap_fini(&c);
    engine_close(e);

    e = open_mem();
    out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM l (ts BIGINT, line TEXT) WITH (timestamp='ts');"
        "SELECT w, COUNT(*) AS n, window_start FROM l CROSS JOIN UNNEST(split(upper(line), ' ')) AS t(w) "
        "WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY w EMIT FINAL;");
    sbuf in;
    sbuf_init(&in);
    /* 3000 lines of 3 words in the first window, one line in the second */
    for (int i = 0; i < 3000; i++) sbuf_printf(&in, "%d,a b%d a\n", i, i % 2);
    sbuf_adds(&in, "15000,a\n");
    ingest(e, "l", in.p, 1);
    sbuf_fini(&in);
    char *got = sorted(c.text.p);
    assert_string_equal(got, "A,1,1970-01-01T00:00:10.000Z\nA,6000,1970-01-01T00:00:00.000Z\n"
                             "B0,1500,1970-01-01T00:00:00.000Z\nB1,1500,1970-01-01T00:00:00.000Z\n");
    free(got);
    cap_fini(&c);
    engine_close(e);
}

void test_errors(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    xerr err;
    run(e, &out, "CREATE STREAM bids (ts TIMESTAMP, price DOUBLE, auction BIGINT) WITH (timestamp='ts');");
    assert_int_equal(engine_exec_sql(e, "SELECT prcie FROM bids;", &out, &err), XE_NAME);
    assert_non_null(strstr(err.msg, "did you mean 'price'"));
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 8);
    assert_int_equal(engine_exec_sql(e, "SELECT * FROM bidz;", &out, &err), XE_NAME);
    assert_non_null(strstr(err.msg, "did you mean 'bids'"));
    assert_true(engine_exec_sql(e, "SELECT auction FROM bids WHERE COUNT(*) > 1;", &out, &err) < 0);
    assert_non_null(strstr(err.msg, "WHERE"));
    assert_true(engine_exec_sql(e, "SELECT auction, COUNT(*) FROM bids GROUP BY price;", &out, &err) < 0);
    assert_non_null(strstr(err.msg, "GROUP BY"));
    assert_int_equal(engine_exec_sql(e, "SELECT price + 'a' FROM bids;", &out, &err), XE_TYPE);
    run(e, &out, "CREATE STREAM nots (a BIGINT);");
    assert_true(engine_exec_sql(e, "SELECT COUNT(*) FROM nots WINDOW TUMBLING (SIZE 1 SECOND);", &out, &err) < 0);
    assert_non_null(strstr(err.msg, "event-time"));
    assert_int_equal(engine_exec_sql(e, "CREATE STREAM bids (a BIGINT);", &out, &err), XE_EXISTS);
    engine_close(e);
    cap_fini(&c);
}

/* Issue 19, reading history: a push SELECT and a standing query read only
 * new rows by default; SET offset = 'earliest' and WITH (offset =
 * 'earliest') read the stream's log from its start (the standing query's
 * catch-up in several steps: 200 records of 1024 rows); bad values are
 * refused with their position. */
void test_offset_earliest(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c0, c1, c2, c3;
    exec_out o0 = cap_out(&c0), o1 = cap_out(&c1), o2 = cap_out(&c2), o3 = cap_out(&c3);
    run(e, &o0, "CREATE STREAM s (ts BIGINT, k BIGINT) WITH (timestamp = 'ts');");
    sbuf in;
    sbuf_init(&in);
    for (int i = 0; i < 204800; i++) sbuf_printf(&in, "%d,%d\n", i, i % 3);
    ingest(e, "s", in.p, 0);
    sbuf_fini(&in);
    run(e, &o1, "SELECT k FROM s WHERE ts < 3;");
    assert_true(!c1.text.p || !c1.text.p[0]); /* latest: nothing yet */
    run(e, &o0, "CREATE QUERY l AS SELECT k, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 1000 SECONDS) GROUP BY k;"
                "CREATE QUERY q WITH (offset = 'earliest') AS "
                "SELECT k, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 1000 SECONDS) GROUP BY k;"
                "SUBSCRIBE l;");
    run(e, &o3, "SUBSCRIBE q;");
    run(e, &o2, "SET offset = 'earliest'; SELECT k FROM s WHERE ts < 3;");
    assert_string_equal(c2.text.p, "0\n1\n2\n");
    ingest(e, "s", "204800,1\n", 1);
    char *got = sorted(c3.text.p);
    assert_string_equal(got, "0,68267\n1,68268\n2,68266\n");
    free(got);
    assert_string_equal(c0.text.p, "1,1\n"); /* latest: the row after it only */
    xerr err;
    assert_int_not_equal(engine_exec_sql(e, "SET offset = 'first';", &o0, &err), 0);
    assert_int_equal(err.col, 14);
    assert_non_null(strstr(err.msg, "offset must be 'earliest' or 'latest', not 'first'"));
    assert_int_not_equal(engine_exec_sql(e, "CREATE QUERY b WITH (offset = 2) AS SELECT k FROM s;", &o0, &err), 0);
    assert_int_equal(err.col, 31);
    assert_non_null(strstr(err.msg, "offset must be 'earliest' or 'latest', not '2'"));
    engine_close(e); /* first: it ends the push queries and SUBSCRIBEs */
    cap_fini(&c0);
    cap_fini(&c1);
    cap_fini(&c2);
    cap_fini(&c3);
}

void test_restart_keeps_query_and_state(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sink[256];
    snprintf(sink, sizeof sink, "%s/out.csv", dir);
    char data[256];
    snprintf(data, sizeof data, "%s/data", dir);
    engine_opts o = {0};
    o.data_dir = data;
    cap c;
    exec_out out = cap_out(&c);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "CREATE STREAM s (ts BIGINT, k BIGINT) WITH (timestamp='ts');"
             "CREATE QUERY q WITH (sink='file://%s', format='csv') AS "
             "SELECT k, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k;",
             sink);
    /* reopened: the query is back with its open window */
    engine *e = restart_between(&o, &out, sql, "1000,1\n2000,1\n3000,2\n", "4000,1\n15000,3\n");
    engine_close(e);
    char *got = file_sorted(sink);
    assert_string_equal(got, "1,3\n2,1\n3,1\nk,n\n");
    free(got);
    cap_fini(&c);
    rm_dir(dir);
}

/* CREATE STREAM AS and INSERT INTO SELECT (issue 19): a chain of derived
 * streams over a restart in the middle of a window, two writers of one
 * stream, and the refusals with their positions. */
void test_derived_streams(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sink[256], data[256], sql[1024];
    snprintf(sink, sizeof sink, "%s/out.csv", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    engine_opts o = {0};
    o.data_dir = data;
    engine *e;
    xerr err;
    cap c;
    exec_out out = cap_out(&c);
    snprintf(sql, sizeof sql,
             "CREATE STREAM s (ts BIGINT, k BIGINT) WITH (timestamp='ts');"
             "CREATE STREAM odd AS SELECT ts, k FROM s WHERE k %% 2 = 1;"
             "CREATE STREAM even AS SELECT ts, k FROM s WHERE k = 2;"
             "INSERT INTO odd SELECT ts, k FROM even;"
             "CREATE STREAM per10 AS SELECT k, COUNT(*) AS n, window_end FROM odd WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k;"
             "CREATE QUERY q WITH (sink='file://%s', format='csv') AS "
             "SELECT k, SUM(n) AS n FROM per10 WINDOW TUMBLING (SIZE 30 SECONDS) GROUP BY k;",
             sink);
    /* reopened: the chain is back, with its open windows and logs */
    e = restart_between(&o, &out, sql, "1000,1\n2000,2\n3000,3\n4000,4\n12000,1\n", "13000,2\n25000,1\n31000,3\n");
    char *got = file_sorted(sink);
    /* per10's rows carry their window_end: 10 s and 20 s fall in [0, 30 s),
     * 30 s and 40 s in [30 s, 60 s); k 2 comes through even */
    assert_string_equal(got, "1,1\n1,2\n2,2\n3,1\n3,1\nk,n\n");
    free(got);
    /* the refusals name the query or the column, at its position */
    assert_int_equal(engine_exec_sql(e, "DROP STREAM odd;", &out, &err), XE_PLAN);
    assert_string_equal(err.msg, "query 'per10' reads stream 'odd'; drop the query first");
    assert_int_equal(engine_exec_sql(e, "INSERT INTO even SELECT k FROM per10;", &out, &err), XE_TYPE);
    assert_string_equal(err.msg, "stream 'even' has 2 columns, the SELECT gives 1 (the first missing: 'k')");
    assert_int_equal(engine_exec_sql(e, "INSERT INTO even SELECT k, n FROM per10;", &out, &err), XE_PLAN);
    assert_string_equal(err.msg, "a cycle of derived streams: this query reads per10 and would write even "
                                 "(even -> query 'odd_insert_3' -> odd -> query 'per10' -> per10); "
                                 "a query's output cannot feed its own input");
    assert_int_equal(engine_exec_sql(e, "INSERT INTO s SELECT ts, 'x' FROM s;", &out, &err), XE_TYPE);
    assert_int_equal(err.col, 26);
    engine_close(e);
    cap_fini(&c);
    rm_dir(dir);
}

/* A cluster's derived stream at a node (engine_stream_feed): the CREATE
 * STREAM the coordinator's engine makes of a CREATE STREAM AS
 * (engine_writer_check), rows fed with the sink's watermark, a row at or
 * below the watermark dropped as one the log has (before and after a
 * restart, which keeps the stream derived and its watermark), a client's
 * rows refused, the writer's end the stream's end. */

static void feed(engine *e, const char *stream, const int64_t (*rows)[3], int n, int64_t wm, int64_t want_repeats)
{
    batch b;
    xerr err;
    int64_t again = -1;
    assert_int_equal(batch_init(&b, 3, 8), 0);
    for (int r = 0; r < n; r++) {
        val *v = batch_add_row(&b);
        v[0] = val_int(TY_BIGINT, rows[r][0]);
        v[1] = val_int(TY_BIGINT, rows[r][1]);
        v[2] = val_int(TY_TIMESTAMP, rows[r][2]);
    }
    if (engine_stream_feed(e, stream, n ? &b : NULL, wm, &again, &err)) fail_msg("feed: %s", err.msg);
    assert_int_equal(again, want_repeats);
    batch_fini(&b);
}

/* A copy of a table's log (a cluster's log shadow): the copy's rows follow
 * the changes it puts, once each, so a pull query there answers as the
 * home's; a copy that would begin past the changes it lacks is refused. */
void test_table_log_copy(void **state)
{
    (void)state;
    const char *ddl = "CREATE TABLE t (k BIGINT, v BIGINT, op TEXT, PRIMARY KEY (k)) WITH (op_column = 'op');";
    engine *h = open_mem(), *c = open_mem(), *late = open_mem();
    run(h, NULL, ddl);
    run(c, NULL, ddl);
    run(late, NULL, ddl);
    run(h, NULL, "INSERT INTO t VALUES (1, 10, 'I'), (2, 20, 'I'), (3, 30, 'I');");
    run(h, NULL, "INSERT INTO t VALUES (1, 11, 'U'), (2, 0, 'D'), (4, 40, 'I');");
    xerr err;
    assert_int_equal(engine_commit(h, &err), 0);
    sbuf ship;
    sbuf_init(&ship);
    uint64_t next, end;
    assert_int_equal(engine_log_export(h, "t", 0, 1 << 20, &ship, &next, &err), 0);
    assert_int_equal(engine_log_import(c, "t", ship.p, ship.len, &end, &err), 0);
    assert_int_equal(engine_log_import(c, "t", ship.p, ship.len, &end, &err), 0); /* a resend changes nothing */
    cap ch, cc;
    exec_out oh = cap_out(&ch), oc = cap_out(&cc);
    run(h, &oh, "SELECT k, v FROM t;");
    run(c, &oc, "SELECT k, v FROM t;");
    assert_string_equal(cc.text.p, "1,11\n3,30\n4,40\n");
    assert_string_equal(cc.text.p, ch.text.p);
    /* the copy goes on from where it is: only the new record's changes */
    run(h, NULL, "INSERT INTO t VALUES (3, 0, 'D'), (5, 50, 'I');");
    assert_int_equal(engine_commit(h, &err), 0);
    sbuf_reset(&ship);
    assert_int_equal(engine_log_export(h, "t", end, 1 << 20, &ship, &next, &err), 0);
    assert_int_equal(engine_log_import(c, "t", ship.p, ship.len, &end, &err), 0);
    cap_fini(&cc);
    oc = cap_out(&cc);
    run(c, &oc, "SELECT COUNT(*) AS n, SUM(v) AS s FROM t;");
    assert_string_equal(cc.text.p, "3,101\n");
    /* an empty copy offered only the last record: refused, nothing written */
    assert_int_equal(engine_log_import(late, "t", ship.p, ship.len, &end, &err), XE_INVAL);
    assert_non_null(strstr(err.msg, "a copy of a table needs every change since the table's start"));
    sbuf_fini(&ship);
    cap_fini(&ch);
    cap_fini(&cc);
    engine_close(h);
    engine_close(c);
    engine_close(late);
}

void test_derived_feed(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX", data[256], sink[300], sql[600];
    engine_opts o;
    engine *e = open_tmp(dir, data, sizeof data, &o);
    xerr err;
    cap c;
    exec_out out = cap_out(&c);
    snprintf(sink, sizeof sink, "%s/out.csv", dir);
    run(e, &out, "CREATE STREAM s (ts BIGINT, k BIGINT) WITH (timestamp = 'ts');");
    ast_stmt *st = NULL;
    const char *csa = "CREATE STREAM d WITH (timestamp = 'we') AS\n"
                      "  SELECT k, COUNT(*) AS n, window_end AS we FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k;";
    assert_int_equal(parse_one(csa, strlen(csa), &st, &err), 0);
    sbuf text;
    sbuf_init(&text);
    if (engine_writer_check(e, st, &text, &err)) fail_msg("check: %s", err.msg);
    ast_stmt_free(st);
    assert_string_equal(text.p, "CREATE STREAM d (k BIGINT, n BIGINT, we TIMESTAMP) WITH (timestamp = 'we', derived = 'true')");
    const char *bad = "INSERT INTO s SELECT k FROM s;";
    assert_int_equal(parse_one(bad, strlen(bad), &st, &err), 0);
    assert_int_equal(engine_writer_check(e, st, &text, &err), XE_TYPE);
    assert_string_equal(err.msg, "stream 's' has 2 columns, the SELECT gives 1 (the first missing: 'k')");
    ast_stmt_free(st);
    snprintf(sql, sizeof sql, "%s; CREATE QUERY q WITH (sink = 'file://%s', format = 'csv') AS "
             "SELECT k, SUM(n) AS n FROM d WINDOW TUMBLING (SIZE 20 SECONDS) GROUP BY k;", text.p, sink);
    sbuf_fini(&text);
    run(e, &out, sql);
    static const int64_t first[][3] = {{1, 2, 10000}, {2, 1, 10000}}, later[][3] = {{1, 2, 10000}, {1, 3, 20000}};
    feed(e, "d", first, 2, 10000, 0);
    feed(e, "d", first, 2, 10000, 2); /* sent again: the log has them */
    assert_int_equal(engine_exec_sql(e, "INSERT INTO d VALUES (1, 1, 1);", &out, &err), XE_PLAN);
    assert_non_null(strstr(err.msg, "is a derived stream"));
    engine_close(e);
    cap_fini(&c);
    if (engine_open(&o, &e, &err)) fail_msg("reopen: %s", err.msg);
    out = cap_out(&c);
    feed(e, "d", later, 2, 20000, 1); /* the watermark survived: the first row is a repeat */
    feed(e, "d", NULL, 0, INT64_MAX, 0);
    assert_int_equal(engine_commit(e, &err), 0); /* a node commits every few ticks */
    char *got = file_sorted(sink);
    assert_string_equal(got, "1,2\n1,3\n2,1\nk,n\n");
    free(got);
    engine_close(e);
    cap_fini(&c);
    rm_dir(dir);
}

void test_log_retention(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    xerr err;
    assert_int_equal(engine_exec_sql(e, "CREATE STREAM bad (a BIGINT) WITH (retention = 'lots');", &out, &err), XE_INVAL);
    run(e, &out,
        "CREATE STREAM s (ts BIGINT, v BIGINT) WITH (timestamp='ts', retention='64 KB');"
        "CREATE STREAM t (ts BIGINT, v BIGINT) WITH (timestamp='ts', retention='10 seconds');"
        "CREATE QUERY q AS SELECT COUNT(*) AS n FROM s;");
    sbuf data;
    sbuf_init(&data);
    for (int i = 0; i < 50000; i++) sbuf_printf(&data, "%d,%d\n", i, i);
    ingest(e, "s", data.p, 0);
    ingest(e, "t", data.p, 0);
    cap d;
    exec_out dout = cap_out(&d);
    run(e, &dout, "SHOW STREAMS;");
    /* rows: name,columns,...,log_bytes; the last field is the log size */
    long bytes[2] = {-1, -1};
    char *copy = strdup(d.text.p);
    for (char *ln = strtok(copy, "\n"); ln; ln = strtok(NULL, "\n")) {
        char *last = strrchr(ln, ',');
        if (ln[0] == 's' && ln[1] == ',') bytes[0] = atol(last + 1);
        if (ln[0] == 't' && ln[1] == ',') bytes[1] = atol(last + 1);
    }
    free(copy);
    assert_true(bytes[0] > 0 && bytes[0] <= 64 * 1024 + 32 * 1024); /* within a record of the limit */
    /* 50 s of events, 10 s kept: about a fifth of the log */
    assert_true(bytes[1] > 0 && bytes[1] < 60 * 1024);
    engine_close(e);
    cap_fini(&c);
    cap_fini(&d);
    sbuf_fini(&data);
}
