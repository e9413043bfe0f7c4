/*
 * test_exec: tables and changelogs: stream-table joins, CREATE TABLE AS,
 * push queries that retract, upsert sinks.
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

/* The stream-table join (exec/tjoin.c).  Versioned: a stream row waits
 * for the table's watermark to pass its time, across a restart, then meets
 * the newest change of its key at or before it; a delete (dated at the
 * latest table time seen) leaves NULLs in a LEFT JOIN.  Current: rows meet
 * the table as it is, a JOIN drops those without a row. */
void test_stream_table_join(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX", data[256], sql[1024], sink[300];
    engine_opts o;
    engine *e = open_tmp(dir, data, sizeof data, &o);
    snprintf(sink, sizeof sink, "%s/j.csv", dir);
    cap c;
    exec_out out = cap_out(&c);
    xerr err;
    snprintf(sql, sizeof sql,
             "CREATE TABLE t (ts BIGINT, k BIGINT, v TEXT, op TEXT, PRIMARY KEY (k)) "
             "WITH (op_column = 'op', timestamp = 'ts');"
             "CREATE STREAM s (ts BIGINT, k BIGINT, q BIGINT) WITH (timestamp = 'ts');"
             "CREATE QUERY j WITH (sink = 'file://%s') AS SELECT s.ts, s.k, q, v FROM s LEFT JOIN t ON s.k = t.k;",
             sink);
    run(e, &out, sql);
    ingest(e, "t", "0,1,a,I\n0,2,b,I\n100,1,A,U\n", 0);
    ingest(e, "s", "50,1,1\n60,2,2\n150,1,3\n", 0); /* 150: the table may still change before it */
    engine_close(e);
    if (engine_open(&o, &e, &err)) fail_msg("reopen: %s", err.msg);
    ingest(e, "t", "200,2,B,U\n300,1,x,D\n", 0);
    ingest(e, "s", "250,2,4\n310,1,5\n", 0);
    ingest(e, "t", "400,9,z,I\n", 0);
    engine_close(e);
    char *got = file_sorted(sink);
    assert_string_equal(got, "150,1,3,A\n250,2,4,B\n310,1,5,\n50,1,1,a\n60,2,2,b\nts,k,q,v\n");
    free(got);
    rm_dir(dir);

    e = open_mem();
    cap_fini(&c);
    out = cap_out(&c);
    run(e, &out,
        "CREATE TABLE d (k BIGINT, name TEXT, PRIMARY KEY (k));"
        "INSERT INTO d VALUES (1, 'one'), (2, 'two'), (1, 'uno');"
        "CREATE STREAM u (k BIGINT, q BIGINT);"
        "SELECT q, name FROM u JOIN d ON d.k = u.k;");
    ingest(e, "u", "1,10\n3,30\n2,20\n", 0);
    got = sorted(c.text.p);
    assert_string_equal(got, "10,uno\n20,two\n");
    free(got);
    engine_close(e);
    cap_fini(&c);
}

/* A source table (exec/table.c): upserts, op_column deletes, its changelog
 * (op first, no change repeated), its state after a restart, and the bad
 * input it refuses with where the error is. */
void test_table_changelog(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX", data[256];
    engine_opts o;
    engine *e = open_tmp(dir, data, sizeof data, &o);
    xerr err;
    cap c, s;
    exec_out out = cap_out(&c), sub = cap_out(&s);
    run(e, &out, "CREATE TABLE t (k BIGINT, v TEXT, op TEXT, PRIMARY KEY (k)) WITH (op_column = 'op');");
    run(e, &sub, "SUBSCRIBE t;");
    assert_int_equal(s.begins, 1);
    /* the same row again and the delete of an absent key change nothing */
    ingest(e, "t", "1,a,I\n2,b,I\n1,a,U\n1,c,U\n9,z,D\n2,b,D\n3,x,I\n", 0);
    assert_string_equal(s.text.p, "+I,1,a\n+I,2,b\n-U,1,a\n+U,1,c\n-D,2,b\n+I,3,x\n");
    /* reopened: the rows are kept (a change from the state read back) */
    e = reopen_subscribed(e, &o, &s, &sub, "t");
    run(e, &out, "INSERT INTO t VALUES (1, 'd', 'U'), (3, NULL, 'D'), (4, 'e', 'i');");
    assert_string_equal(s.text.p, "-U,1,c\n+U,1,d\n-D,3,x\n+I,4,e\n");
    /* bad input: at the value, or the line of the data */
    assert_int_equal(engine_exec_sql(e, "INSERT INTO t VALUES (NULL, 'a', 'I');", &out, &err), XE_TYPE);
    assert_string_equal(err.msg, "row 1 has no key: column 'k' of the PRIMARY KEY may not be NULL");
    assert_int_equal(err.col, 23);
    assert_int_equal(engine_exec_sql(e, "INSERT INTO t VALUES (5, 'a', 'X');", &out, &err), XE_TYPE);
    assert_string_equal(err.msg, "row 1: column 'op' (the op_column) must be 'I', 'U' or 'D', not 'X'");
    assert_int_equal(err.col, 31);
    assert_int_equal(engine_exec_sql(e, "INSERT INTO t VALUES (5, 'a');", &out, &err), XE_PLAN);
    assert_string_equal(err.msg, "row 1 has 2 values, expected 3: no value for column 'op'");
    assert_int_equal(engine_exec_sql(e, "CREATE TABLE u (k BIGINT);", &out, &err), XE_PLAN);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.col, 1);
    assert_string_equal(err.msg, "table 'u' has no PRIMARY KEY: write one after its columns, as in CREATE TABLE u "
                                 "(..., PRIMARY KEY (col))");
    exec_ingest *in;
    exec_ingest_opts io = {0};
    assert_int_equal(exec_ingest_open(e, "t", &io, &in, &err), 0);
    assert_int_equal(exec_ingest_feed(in, "6,f,I\n,g,I\n7,h,Q\n", 17, &err), 0);
    exec_ingest_stats st;
    assert_int_equal(exec_ingest_close(in, 0, &st, &err), 0);
    assert_int_equal(st.rejected, 2);
    assert_string_equal(s.text.p, "-U,1,c\n+U,1,d\n-D,3,x\n+I,4,e\n+I,6,f\n");
    /* pull queries: the rows now (key order), a point lookup, an aggregate */
    cap p;
    exec_out pull = cap_out(&p);
    run(e, &pull, "SELECT * FROM t; SELECT v FROM t WHERE k = 4; SELECT v FROM t WHERE 5 = k;"
                  "SELECT COUNT(*) AS n, MAX(v) FROM t WHERE k > 1;");
    assert_string_equal(p.text.p, "1,d\n4,e\n6,f\ne\n2,f\n");
    assert_int_equal(p.begins, 4);
    assert_int_equal(p.ends, 4);
    cap_fini(&p);
    engine_close(e);
    cap_fini(&c);
    cap_fini(&s);
    rm_dir(dir);
}

/* CREATE TABLE AS over a table (exec/table_agg.c): a row that changes its
 * group moves its count, a delete retracts it, MIN and MAX come back when
 * their value leaves, a group without rows is deleted; the state survives
 * a restart. */
void test_table_as_retracts(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX", data[256];
    engine_opts o;
    engine *e = open_tmp(dir, data, sizeof data, &o);
    xerr err;
    cap c, s;
    exec_out out = cap_out(&c), sub = cap_out(&s);
    run(e, &out, "CREATE TABLE t (k BIGINT, cat TEXT, v BIGINT, PRIMARY KEY (k));"
                 "CREATE TABLE c AS SELECT cat, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(v) AS hi FROM t GROUP BY cat;");
    run(e, &sub, "SUBSCRIBE c;");
    run(e, &out, "INSERT INTO t VALUES (1, 'a', 5), (2, 'a', 9), (3, 'b', 1);");
    assert_string_equal(s.text.p, "+I,a,2,14,5,9\n+I,b,1,1,1,1\n");
    e = reopen_subscribed(e, &o, &s, &sub, "c");
    /* row 2 moves from a to b: a's MAX falls back to 5 */
    run(e, &out, "INSERT INTO t VALUES (2, 'b', 9);");
    char *got = sorted(s.text.p);
    assert_string_equal(got, "+U,a,1,5,5,5\n+U,b,2,10,1,9\n-U,a,2,14,5,9\n-U,b,1,1,1,1\n");
    free(got);
    sbuf_reset(&s.text);
    assert_int_equal(engine_exec_sql(e, "INSERT INTO c VALUES ('x', 1, 1, 1, 1);", &out, &err), XE_PLAN);
    e = reopen_subscribed(e, &o, &s, &sub, "c");
    /* a's last row goes: a is deleted */
    run(e, &out, "INSERT INTO t VALUES (1, 'b', 0);");
    got = sorted(s.text.p);
    assert_string_equal(got, "+U,b,3,10,0,9\n-D,a,1,5,5,5\n-U,b,2,10,1,9\n");
    free(got);
    engine_close(e);
    cap_fini(&c);
    cap_fini(&s);
    rm_dir(dir);
}

/* CREATE TABLE AS with HAVING (exec/table_agg.c): a group whose row stops
 * passing is deleted (-D) and leaves the table, one that passes again comes
 * back (+I), one that never passed is silent; over a table too, where a row
 * that changes its group can push one below HAVING.  Across a restart. */
void test_table_as_having(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX", data[256];
    engine_opts o;
    engine *e = open_tmp(dir, data, sizeof data, &o);
    cap c, s, p;
    exec_out out = cap_out(&c), sub = cap_out(&s), pull = cap_out(&p);
    run(e, &out, "CREATE STREAM s (id BIGINT, v BIGINT);"
                 "CREATE TABLE h AS SELECT id, SUM(v) AS s, COUNT(*) AS n FROM s GROUP BY id "
                 "HAVING SUM(v) / COUNT(*) > 25;");
    run(e, &sub, "SUBSCRIBE h;");
    run(e, &out, "INSERT INTO s VALUES (0, 50); INSERT INTO s VALUES (0, 10); INSERT INTO s VALUES (0, 15);"
                 "INSERT INTO s VALUES (1, 5); INSERT INTO s VALUES (1, 7);");
    assert_string_equal(s.text.p, "+I,0,50,1\n-U,0,50,1\n+U,0,60,2\n-D,0,60,2\n");
    run(e, &pull, "SELECT * FROM h;");
    assert_string_equal(p.text.p ? p.text.p : "", "");
    e = reopen_subscribed(e, &o, &s, &sub, "h");
    run(e, &out, "INSERT INTO s VALUES (0, 500);");
    assert_string_equal(s.text.p, "+I,0,575,4\n");
    run(e, &pull, "SELECT * FROM h;");
    assert_string_equal(p.text.p, "0,575,4\n");
    /* over a table: row 2 moves from a to b, a falls below HAVING */
    run(e, &out, "CREATE TABLE t (k BIGINT, cat TEXT, v BIGINT, PRIMARY KEY (k));"
                 "CREATE TABLE c AS SELECT cat, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY cat HAVING SUM(v) > 10;");
    e = reopen_subscribed(e, &o, &s, &sub, "c");
    run(e, &out, "INSERT INTO t VALUES (1, 'a', 5), (2, 'a', 9), (3, 'b', 20), (4, 'z', 1);");
    char *got = sorted(s.text.p);
    assert_string_equal(got, "+I,a,2,14\n+I,b,1,20\n");
    free(got);
    sbuf_reset(&s.text);
    run(e, &out, "INSERT INTO t VALUES (2, 'b', 9);");
    got = sorted(s.text.p);
    assert_string_equal(got, "+U,b,2,29\n-D,a,2,14\n-U,b,1,20\n");
    free(got);
    sbuf_reset(&s.text);
    /* a's last row goes (a is not in the table: nothing), then a passes again */
    run(e, &out, "INSERT INTO t VALUES (1, 'b', 0); INSERT INTO t VALUES (5, 'a', 11);");
    assert_string_equal(s.text.p, "-U,b,2,29\n+U,b,3,29\n+I,a,1,11\n");
    engine_close(e);
    cap_fini(&c);
    cap_fini(&s);
    cap_fini(&p);
    rm_dir(dir);
}

/* A push query's aggregate without a window (issue 19): its output is a
 * changelog (op first) that retracts as a table's does: a group that
 * stops passing HAVING gets -D, and over a table a row that changes its
 * group moves its count (read from the table's start); one that does not
 * select its GROUP BY columns prints its rows as before; a column called
 * op is refused; after a restart the finished query's state is gone and a
 * new one starts from nothing. */
void test_push_changes(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX", data[256];
    engine_opts o;
    engine *e = open_tmp(dir, data, sizeof data, &o);
    xerr err;
    cap c, s, t, u;
    exec_out out = cap_out(&c), sub = cap_out(&s), sub2 = cap_out(&t), sub3 = cap_out(&u);
    run(e, &out, "CREATE STREAM s (id BIGINT, v BIGINT);");
    run(e, &sub, "SELECT id, SUM(v) AS s, COUNT(*) AS n FROM s GROUP BY id HAVING SUM(v) / COUNT(*) > 25 EMIT CHANGES;");
    run(e, &sub3, "SELECT COUNT(*) AS n FROM s GROUP BY id;");
    run(e, &out, "INSERT INTO s VALUES (0, 50); INSERT INTO s VALUES (0, 10); INSERT INTO s VALUES (0, 15);"
                 "INSERT INTO s VALUES (1, 5); INSERT INTO s VALUES (1, 7);");
    assert_string_equal(s.text.p, "+I,0,50,1\n-U,0,50,1\n+U,0,60,2\n-D,0,60,2\n");
    assert_string_equal(u.text.p, "1\n2\n3\n1\n2\n");
    run(e, &out, "CREATE TABLE t (k BIGINT, cat TEXT, v BIGINT, PRIMARY KEY (k));"
                 "INSERT INTO t VALUES (1, 'a', 5), (2, 'a', 9), (3, 'b', 20), (4, 'z', 1);");
    run(e, &sub2, "SELECT cat, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY cat HAVING SUM(v) > 10 EMIT CHANGES;");
    char *got = sorted(t.text.p);
    assert_string_equal(got, "+I,a,2,14\n+I,b,1,20\n");
    free(got);
    sbuf_reset(&t.text);
    run(e, &out, "INSERT INTO t VALUES (2, 'b', 9);");
    got = sorted(t.text.p);
    assert_string_equal(got, "+U,b,2,29\n-D,a,2,14\n-U,b,1,20\n");
    free(got);
    assert_int_equal(engine_exec_sql(e, "SELECT id AS op, COUNT(*) AS n FROM s GROUP BY id;", &out, &err), XE_NAME);
    assert_non_null(strstr(err.msg, "'op'"));
    assert_int_equal(err.line, 1);
    engine_close(e);
    if (engine_open(&o, &e, &err)) fail_msg("reopen: %s", err.msg);
    sbuf_reset(&s.text);
    run(e, &sub, "SELECT id, SUM(v) AS s, COUNT(*) AS n FROM s GROUP BY id EMIT CHANGES;");
    run(e, &out, "INSERT INTO s VALUES (0, 1);");
    assert_string_equal(s.text.p, "+I,0,1,1\n");
    engine_close(e);
    cap_fini(&c);
    cap_fini(&s);
    cap_fini(&t);
    cap_fini(&u);
    rm_dir(dir);
}

/* A sink WITH (changelog = 'upsert') (exec/sink.c): no -U rows, a -D with
 * only op and the key's columns; across a restart; its bad values. */
void test_upsert_sink(void **state)
{
    (void)state;
    char dir[] = "/tmp/ares-test-exec.XXXXXX", data[256], sql[1024], path[300];
    engine_opts o;
    engine *e = open_tmp(dir, data, sizeof data, &o);
    xerr err;
    cap c;
    exec_out out = cap_out(&c);
    snprintf(path, sizeof path, "%s/u.csv", dir);
    snprintf(sql, sizeof sql,
             "CREATE TABLE t (k BIGINT, v BIGINT, w TEXT, op TEXT, PRIMARY KEY (k)) WITH (op_column = 'op');"
             "CREATE QUERY u WITH (sink = 'file://%s', changelog = 'upsert') AS SELECT * FROM t;"
             "INSERT INTO t VALUES (1, 5, 'a', 'I'), (2, 6, 'b', 'I');"
             "INSERT INTO t VALUES (1, 7, 'c', 'U'), (2, 0, NULL, 'D');",
             path);
    run(e, &out, sql);
    engine_close(e);
    if (engine_open(&o, &e, &err)) fail_msg("reopen: %s", err.msg);
    run(e, &out, "INSERT INTO t VALUES (3, 1, 'x', 'I'), (3, 2, 'y', 'U'), (1, 0, NULL, 'D');");
    engine_close(e);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[512] = "";
    buf[fread(buf, 1, sizeof buf - 1, f)] = 0;
    fclose(f);
    assert_string_equal(buf, "op,k,v,w\n+I,1,5,a\n+I,2,6,b\n+U,1,7,c\n-D,2,,\n+I,3,1,x\n+U,3,2,y\n-D,1,,\n");
    if (engine_open(&o, &e, &err)) fail_msg("reopen: %s", err.msg);
    assert_int_equal(engine_exec_sql(e, "CREATE QUERY v WITH (sink = 'file:///dev/null', changelog = 'diff') AS "
                                        "SELECT * FROM t;", &out, &err), XE_INVAL);
    assert_string_equal(err.msg, "changelog must be 'full' or 'upsert', not 'diff'");
    assert_int_equal(err.col, 61);
    assert_int_equal(engine_exec_sql(e, "CREATE QUERY v WITH (changelog = 'upsert') AS SELECT * FROM t;", &out, &err),
                     XE_INVAL);
    assert_string_equal(err.msg, "changelog = 'upsert' is a sink's: it needs WITH (sink = ...)");
    assert_int_equal(engine_exec_sql(e, "CREATE QUERY v WITH (sink = 'file:///dev/null', changelog = 'upsert') AS "
                                        "SELECT op, w FROM t;", &out, &err), XE_INVAL);
    assert_string_equal(err.msg, "changelog = 'upsert' writes a delete as its key: the SELECT must select the key "
                                 "column 'k'");
    run(e, &out, "CREATE STREAM s (k BIGINT);");
    assert_int_equal(engine_exec_sql(e, "CREATE QUERY v WITH (sink = 'file:///dev/null', changelog = 'upsert') AS "
                                        "SELECT * FROM s;", &out, &err), XE_INVAL);
    assert_non_null(strstr(err.msg, "needs a query over one table's changelog"));
    engine_close(e);
    cap_fini(&c);
    rm_dir(dir);
}
