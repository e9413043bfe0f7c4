/*
 * Unit tests for exec/: the engine end to end through its API (statements,
 * ingest, windows, joins, late rows, restart from LMDB), with results
 * captured as CSV text.
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

#include "exec/exec.h"

/* ------------------------------------------------------------------ capture */

typedef struct cap {
    fmt_encoder *enc;
    sbuf text;     /* every row as CSV (no header) */
    sbuf notices;
    int begins, ends;
} cap;

static int cap_begin(void *ctx, const fmt_schema *cols, int stream)
{
    cap *c = ctx;
    (void)stream;
    fmt_encoder_free(c->enc);
    fmt_enc_opts o = {0};
    o.no_header = 1;
    c->begins++;
    return fmt_encoder_new(FMT_CSV, cols, &o, &c->enc);
}

static int cap_rows(void *ctx, const batch *b)
{
    cap *c = ctx;
    return fmt_encode(c->enc, b, &c->text);
}

static int cap_end(void *ctx)
{
    cap *c = ctx;
    c->ends++;
    return fmt_encode_finish(c->enc, &c->text);
}

static void cap_notice(void *ctx, const char *msg)
{
    cap *c = ctx;
    sbuf_printf(&c->notices, "%s\n", msg);
}

static exec_out cap_out(cap *c)
{
    memset(c, 0, sizeof *c);
    sbuf_init(&c->text);
    sbuf_init(&c->notices);
    return (exec_out){c, cap_begin, cap_rows, cap_end, cap_notice};
}

static void cap_fini(cap *c)
{
    fmt_encoder_free(c->enc);
    sbuf_fini(&c->text);
    sbuf_fini(&c->notices);
}

/* Sort the lines of s (row order across groups is not part of the contract). */
static char *sorted(const char *s)
{
    char *copy = strdup(s ? s : "");
    char *lines[4096];
    int n = 0;
    for (char *p = strtok(copy, "\n"); p && n < 4096; p = strtok(NULL, "\n")) lines[n++] = p;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
            char *t = lines[j]; lines[j] = lines[j - 1]; lines[j - 1] = t;
        }
    sbuf b;
    sbuf_init(&b);
    for (int i = 0; i < n; i++) sbuf_printf(&b, "%s\n", lines[i]);
    free(copy);
    return sbuf_steal(&b);
}

static engine *open_mem(void)
{
    engine_opts o = {0};
    o.memory = 1;
    engine *e;
    xerr err;
    int rc = engine_open(&o, &e, &err);
    if (rc) fail_msg("engine_open: %s", err.msg);
    return e;
}

static void run(engine *e, const exec_out *out, const char *sql)
{
    xerr err;
    int rc = engine_exec_sql(e, sql, out, &err);
    if (rc) fail_msg("%s: %s (line %d col %d)", sql, err.msg, err.line, err.col);
}

static void ingest(engine *e, const char *stream, const char *data, int end)
{
    exec_ingest *in;
    xerr err;
    exec_ingest_opts o = {0};
    assert_int_equal(exec_ingest_open(e, stream, &o, &in, &err), 0);
    assert_int_equal(exec_ingest_feed(in, data, strlen(data), &err), 0);
    int rc = exec_ingest_close(in, end, NULL, &err);
    if (rc) fail_msg("ingest: %s", err.msg);
}

/* The lines of file path, sorted (sorted()). */
static char *file_sorted(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[512] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return sorted(buf);
}

/* On data directory o: sql, rows in1 of stream s (which stays open), a
 * restart, rows in2 and the end of s.  Returns the reopened engine. */
static engine *restart_between(const engine_opts *o, const exec_out *out, const char *sql, const char *in1,
                               const char *in2)
{
    engine *e;
    xerr err;
    if (engine_open(o, &e, &err)) fail_msg("open: %s", err.msg);
    run(e, out, sql);
    ingest(e, "s", in1, 0);
    engine_close(e);
    if (engine_open(o, &e, &err)) fail_msg("reopen: %s", err.msg);
    ingest(e, "s", in2, 1);
    return e;
}

/* The whole of file path, appended to text. */
static void file_text(const char *path, sbuf *text)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sbuf_add(text, buf, n);
    fclose(f);
}

static void rm_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ------------------------------------------------------------------ tests */

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
static void test_task_measurements(void **state)
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
static void test_log_copy(void **state)
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



static void test_issue_example(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM ev (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp='ts');"
        "SELECT k, COUNT(*) AS n, SUM(v) AS s FROM ev WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k EMIT FINAL;");
    assert_int_equal(engine_push_active(e), 1);
    ingest(e, "ev", "ts,k,v\n1000,1,2.5\n1500,1,3.5\n12000,2,1\n", 1);
    assert_string_equal(c.text.p, "1,2,6\n2,1,1\n");
    assert_int_equal(engine_push_active(e), 0);
    assert_int_equal(c.ends, 1);
    engine_close(e);
    cap_fini(&c);
}

static void test_hopping_and_having(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM s (ts BIGINT, k TEXT, v BIGINT) WITH (timestamp='ts');"
        "SELECT k, COUNT(*) AS n, MIN(v), MAX(v), window_start FROM s "
        "WINDOW HOPPING (SIZE 10 SECONDS, ADVANCE BY 5 SECONDS) GROUP BY k HAVING COUNT(*) >= 2;");
    ingest(e, "s", "1000,a,5\n2000,a,7\n6000,b,1\n7000,a,1\n", 1);
    char *got = sorted(c.text.p);
    /* windows: [-5,5) a:1000,2000 ; [0,10) a:1000,2000,7000 b:6000 ; [5,15) a:7000 b:6000 */
    assert_string_equal(got, "a,2,5,7,1969-12-31T23:59:55.000Z\n"
                             "a,3,1,7,1970-01-01T00:00:00.000Z\n");
    free(got);
    engine_close(e);
    cap_fini(&c);
}

/* Many groups per window, rows out of order within the watermark, several
 * windows open at once (each with its own table, grown as groups come):
 * every (window, group) agrees with a plain computation in input order, for
 * tumbling and hopping windows. */
enum { MG_KEYS = 3000, MG_ROWS = 60000, MG_WINDOWS = 24 };
typedef struct mg_want {
    int64_t n, hi;
    double s, lo;
    int seen;
} mg_want;
static mg_want mg[MG_WINDOWS + 1][MG_KEYS];
static int64_t mg_rows, mg_bad;

static int mg_check(void *ctx, const batch *b)
{
    (void)ctx;
    for (int r = 0; r < b->nrows; r++) {
        const val *v = batch_row(b, r);
        int64_t w = v[5].i / 1000 + 1; /* window starts from -1 s */
        mg_rows++;
        if (w < 0 || w > MG_WINDOWS || v[0].i < 0 || v[0].i >= MG_KEYS) { mg_bad++; continue; }
        mg_want *m = &mg[w][v[0].i];
        if (m->seen++ || v[1].i != m->n || v[2].d != m->s || v[3].d != m->lo || v[4].i != m->hi) mg_bad++;
    }
    return 0;
}

static void test_windows_many_groups(void **state)
{
    (void)state;
    static const char *const windows[] = {"TUMBLING (SIZE 1 SECOND)", "HOPPING (SIZE 2 SECONDS, ADVANCE BY 1 SECOND)"};
    sbuf in;
    sbuf_init(&in);
    uint64_t x = 88172645463325252ull;
    int64_t *ts = malloc(MG_ROWS * sizeof *ts), *k = malloc(MG_ROWS * sizeof *k), *wv = malloc(MG_ROWS * sizeof *wv);
    double *v = malloc(MG_ROWS * sizeof *v);
    for (int i = 0; i < MG_ROWS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ts[i] = (int64_t)i * 20000 / MG_ROWS * 1 + 1000 - (int64_t)(x % 1500); /* up to 1.5 s back */
        if (ts[i] < 0) ts[i] = 0;
        k[i] = (int64_t)(x >> 20) % MG_KEYS;
        v[i] = (double)((int64_t)(x >> 40) % 200001 - 100000) / 100.0;
        wv[i] = (int64_t)(x >> 8) % 1000000 - 500000;
        sbuf_printf(&in, "%lld,%lld,%.2f,%lld\n", (long long)ts[i], (long long)k[i], v[i], (long long)wv[i]);
    }
    for (int q = 0; q < 2; q++) {
        memset(mg, 0, sizeof mg);
        mg_rows = mg_bad = 0;
        int64_t want_rows = 0;
        for (int i = 0; i < MG_ROWS; i++) {
            int64_t first = q ? ts[i] / 1000 - 1 : ts[i] / 1000; /* starts of the windows holding the row */
            for (int64_t st = first; st <= ts[i] / 1000; st++) {
                if (st + 1 < 0) continue;
                mg_want *m = &mg[st + 1][k[i]];
                if (!m->n) {
                    m->lo = v[i];
                    m->hi = wv[i];
                    want_rows++;
                }
                m->n++;
                m->s += v[i];
                if (v[i] < m->lo) m->lo = v[i];
                if (wv[i] > m->hi) m->hi = wv[i];
            }
        }
        engine *e = open_mem();
        exec_out out = {NULL, NULL, mg_check, NULL, NULL};
        char sql[512];
        snprintf(sql, sizeof sql,
                 "CREATE STREAM s (ts BIGINT, k BIGINT, v DOUBLE, w BIGINT) WITH (timestamp='ts', watermark='2 seconds');"
                 "SELECT k, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS lo, MAX(w) AS hi, window_start FROM s "
                 "WINDOW %s GROUP BY k EMIT FINAL;",
                 windows[q]);
        run(e, &out, sql);
        ingest(e, "s", in.p, 1);
        engine_close(e);
        assert_int_equal(mg_bad, 0);
        assert_int_equal(mg_rows, want_rows);
    }
    free(ts);
    free(k);
    free(v);
    free(wv);
    sbuf_fini(&in);
}

/* The aggregate's fast path (push_fixed1 in agg.c: one integer group
 * column, COUNT/SUM/AVG/MIN/MAX of a DOUBLE, one window per row) gives the
 * same rows, in the same order, as the general path: random input with rows
 * out of order, late rows, rows without event time, NULL keys and values,
 * negative and huge keys, sums that overflow to infinity and NaN; a restart
 * in the middle (state flushed and loaded) included. */
static void fast_run(int general, const char *sql_fmt, const char *in1, const char *in2, sbuf *text)
{
    char dir[] = "/tmp/ares-fast.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sink[256], sql[2048];
    snprintf(sink, sizeof sink, "%s/out.csv", dir);
    snprintf(sql, sizeof sql, sql_fmt, sink);
    engine_opts o = {0};
    o.data_dir = dir;
    o.general_agg = general;
    for (int part = 0; part < 2; part++) { /* the second part after a restart */
        engine *e;
        xerr err;
        if (engine_open(&o, &e, &err)) fail_msg("engine_open: %s", err.msg);
        cap c;
        exec_out out = cap_out(&c);
        if (part == 0) run(e, &out, sql);
        ingest(e, "s", part ? in2 : in1, part);
        engine_close(e);
        cap_fini(&c);
    }
    file_text(sink, text);
    rm_dir(dir);
}

static void test_fast_agg_same_as_general(void **state)
{
    (void)state;
    static const char *const shapes[] = {
        "WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k",
        "WINDOW HOPPING (SIZE 2 SECONDS, ADVANCE BY 2 SECONDS) GROUP BY k",
        "WINDOW TUMBLING (SIZE 500 MILLISECONDS, GRACE PERIOD 300 MILLISECONDS) GROUP BY k",
        "GROUP BY k",
    };
    static const char *const aggs[] = {
        "k, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS hi",
        "COUNT(*) AS n, MIN(v) AS lo, AVG(v) AS av, k, SUM(v) AS s, MAX(v) AS hi",
    };
    /* two inputs: rows far out of order (most batches span several windows:
     * the probe of mixed windows), and rows nearly in order, four a
     * millisecond (most batches in one window: the dense index, with keys
     * now and then outside it) */
    for (int ordered = 0; ordered < 2; ordered++) {
        sbuf in1, in2;
        sbuf_init(&in1);
        sbuf_init(&in2);
        uint64_t x = 0x2545f4914f6cdd1dull;
        for (int i = 0; i < 60000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            sbuf *in = i < 30000 ? &in1 : &in2;
            int64_t ts = ordered ? 1000 + i / 4 - (x % 50 == 0 ? (int64_t)(x % 700) : 0)
                                 : (int64_t)i * 3 + 1000 - (int64_t)(x % 1200);
            if (x % 997 == 0) ts -= 20000; /* late */
            int64_t k = (int64_t)(x >> 20) % 300 - 150;
            if (x % (ordered ? 20011 : 1009) == 0) k = INT64_MIN + (int64_t)(x >> 50);
            if (x % (ordered ? 20021 : 1013) == 0) k = INT64_MAX - (int64_t)(x >> 50);
            if (ordered && x % 7 == 0) k += 400; /* beyond the first chunk's range */
            double v = (double)((int64_t)(x >> 40) % 200001 - 100000) / 100.0;
            if (ts % 1019 == 0) sbuf_printf(in, ",%lld,%.2f\n", (long long)k, v);            /* no event time */
            else if (ts % 1021 == 0) sbuf_printf(in, "%lld,,%.2f\n", (long long)ts, v);      /* NULL key */
            else if (ts % 1031 == 0) sbuf_printf(in, "%lld,%lld,\n", (long long)ts, (long long)k); /* NULL value */
            else if (ts % 1033 == 0) sbuf_printf(in, "%lld,%lld,%s\n", (long long)ts, (long long)k, x & 1 ? "1e308" : "-1e308");
            else sbuf_printf(in, "%lld,%lld,%.2f\n", (long long)ts, (long long)k, v);
        }
        for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
            for (size_t ag = 0; ag < sizeof aggs / sizeof *aggs; ag++) {
                char sql[1024];
                snprintf(sql, sizeof sql,
                         "CREATE STREAM s (ts TIMESTAMP, k BIGINT, v DOUBLE) WITH (timestamp='ts', watermark='1 second');"
                         "CREATE QUERY q WITH (sink = 'file://%%s', format = 'csv') AS SELECT %s FROM s %s;",
                         aggs[ag], shapes[sh]);
                sbuf got[2];
                for (int general = 0; general < 2; general++) {
                    sbuf_init(&got[general]);
                    fast_run(general, sql, in1.p, in2.p, &got[general]);
                }
                if (got[0].len != got[1].len || memcmp(got[0].p, got[1].p, got[0].len))
                    fail_msg("%s %s%s: the fast path's output differs from the general path's", aggs[ag], shapes[sh],
                             ordered ? " (rows in order)" : "");
                assert_true(got[0].len > 1000);
                sbuf_fini(&got[0]);
                sbuf_fini(&got[1]);
            }
        sbuf_fini(&in1);
        sbuf_fini(&in2);
    }
}

/* SET memory_budget (exec/agg_evict.c): with a budget far below the working
 * set (most groups evicted to LMDB, read back when their rows come and
 * merged in when their window closes), every shape's output is the same,
 * byte for byte, as without one: fixed windows on the fast path, TEXT keys
 * and MIN of TEXT and COUNT(DISTINCT) (entries with extensions), hopping
 * windows, the global window, EMIT CHANGES; over 40 epochs (the delta
 * records of a long window compacted around its cold ones) and a restart
 * in the middle (cold records counted, older deltas of cold groups
 * skipped). */
static void budget_run(const char *budget, const char *select, char **chunks, int nchunks, sbuf *text, int *cold_seen)
{
    char dir[] = "/tmp/ares-budget.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sql[2048];
    snprintf(sql, sizeof sql,
             "SET memory_budget = '%s';"
             "CREATE STREAM s (ts TIMESTAMP, k BIGINT, t TEXT, v DOUBLE) WITH (timestamp='ts', watermark='1 second');"
             "CREATE QUERY q WITH (sink = 'file://%s/out.csv', format = 'csv') AS %s;",
             budget, dir, select);
    engine_opts o = {0};
    o.data_dir = dir;
    engine *e;
    xerr err;
    if (engine_open(&o, &e, &err)) fail_msg("engine_open: %s", err.msg);
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out, sql);
    *cold_seen = 0;
    for (int i = 0; i < nchunks; i++) {
        if (i == nchunks / 2) { /* a restart */
            engine_close(e);
            if (engine_open(&o, &e, &err)) fail_msg("reopen: %s", err.msg);
            sbuf_reset(&c.text);
            run(e, &out, "DESCRIBE q;");
            const char *w = strstr(c.text.p ? c.text.p : "", "Window state: ");
            if (!w) fail_msg("DESCRIBE says nothing of the window state: %s", c.text.p ? c.text.p : "");
            const char *l = strstr(w, "bytes), ");
            if (l && atoll(l + strlen("bytes), ")) > 0) *cold_seen = 1;
        }
        ingest(e, "s", chunks[i], i == nchunks - 1); /* each ingest commits an epoch */
    }
    engine_close(e);
    cap_fini(&c);
    char path[300];
    snprintf(path, sizeof path, "%s/out.csv", dir);
    file_text(path, text);
    rm_dir(dir);
}

static void test_memory_budget_same_output(void **state)
{
    (void)state;
    static const char *const selects[] = {
        "SELECT k, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS hi, window_start FROM s WINDOW TUMBLING (SIZE 2 SECONDS) GROUP BY k",
        "SELECT t, COUNT(*) AS n, MIN(t) AS lo, COUNT(DISTINCT k) AS d, window_start FROM s "
        "WINDOW HOPPING (SIZE 3 SECONDS, ADVANCE BY 1 SECOND) GROUP BY t",
        "SELECT k, t, SUM(v) AS s, AVG(v) AS a, MIN(v) AS lo FROM s GROUP BY k, t",
        "SELECT k, COUNT(*) AS n, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND, GRACE PERIOD 500 MILLISECONDS) "
        "GROUP BY k EMIT CHANGES",
        "SELECT k, COUNT(*) AS n, SUM(v) AS s FROM s WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY k",
    };
    enum { CHUNKS = 40, ROWS = 1500 };
    char *chunks[CHUNKS];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int c = 0; c < CHUNKS; c++) {
        sbuf b;
        sbuf_init(&b);
        for (int i = 0; i < ROWS; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int64_t row = (int64_t)c * ROWS + i, ts = 1000 + row * 2 - (int64_t)(x % 300);
            int64_t k = (int64_t)(x >> 24) % 3000;
            if (x % 5 == 0) k = (int64_t)(x >> 30) % 40; /* some hot keys */
            double v = (double)((int64_t)(x >> 40) % 20001 - 10000) / 100.0;
            sbuf_printf(&b, "%lld,%lld,g%lld%s,%.2f\n", (long long)ts, (long long)k, (long long)(k % 700),
                        k % 7 == 0 ? "-a-text-longer-than-a-pooled-entry-holds-inline-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                   : "", v);
        }
        chunks[c] = sbuf_steal(&b);
    }
    for (size_t q = 0; q < sizeof selects / sizeof *selects; q++) {
        sbuf got[2];
        int cold[2];
        sbuf_init(&got[0]);
        sbuf_init(&got[1]);
        budget_run("0", selects[q], chunks, CHUNKS, &got[0], &cold[0]);
        budget_run("16 KB", selects[q], chunks, CHUNKS, &got[1], &cold[1]);
        if (got[0].len != got[1].len || memcmp(got[0].p, got[1].p, got[0].len))
            fail_msg("%s: the output under a memory budget differs from the output without (%zu and %zu bytes)",
                     selects[q], got[0].len, got[1].len);
        assert_true(got[0].len > 1000);
        assert_false(cold[0]);
        if (!cold[1]) fail_msg("%s: no group was in LMDB only at the restart", selects[q]);
        sbuf_fini(&got[0]);
        sbuf_fini(&got[1]);
    }
    for (int c = 0; c < CHUNKS; c++) free(chunks[c]);
}

/* Many fixed windows open at once (60 one-second hops) with few groups:
 * each window's table starts small and grows with its window. */
static int64_t hop_rows, hop_count;
static int hop_check(void *ctx, const batch *b)
{
    (void)ctx;
    for (int r = 0; r < b->nrows; r++) {
        hop_rows++;
        hop_count += batch_row(b, r)[1].i;
    }
    return 0;
}

static void test_many_open_windows(void **state)
{
    (void)state;
    sbuf in;
    sbuf_init(&in);
    for (int i = 0; i < 2000; i++) sbuf_printf(&in, "%d,%d\n", i * 100, i % 3);
    engine *e = open_mem();
    exec_out out = {NULL, NULL, hop_check, NULL, NULL};
    run(e, &out,
        "CREATE STREAM s (ts BIGINT, k BIGINT) WITH (timestamp='ts');"
        "SELECT k, COUNT(*) AS n FROM s WINDOW HOPPING (SIZE 60 SECONDS, ADVANCE BY 1 SECOND) GROUP BY k EMIT FINAL;");
    ingest(e, "s", in.p, 1);
    engine_close(e);
    /* starts -59 s .. 199 s: 259 windows, each with the 3 keys; each row is in 60 windows */
    assert_int_equal(hop_rows, 259 * 3);
    assert_int_equal(hop_count, 2000 * 60);
    sbuf_fini(&in);
}

static void test_session_windows(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM s (ts BIGINT, k BIGINT) WITH (timestamp='ts');"
        "SELECT k, COUNT(*), window_start, window_end FROM s WINDOW SESSION (GAP 5 SECONDS) GROUP BY k;");
    /* key 1: 0, 3000, 7000 merge into one session [0, 12000); then 20000 alone.
     * 3000 arriving after 7000 bridges nothing new; 9000 for key 2 alone. */
    ingest(e, "s", "0,1\n7000,1\n3000,1\n9000,2\n20000,1\n", 1);
    char *got = sorted(c.text.p);
    assert_string_equal(got, "1,1,1970-01-01T00:00:20.000Z,1970-01-01T00:00:25.000Z\n"
                             "1,3,1970-01-01T00:00:00.000Z,1970-01-01T00:00:12.000Z\n"
                             "2,1,1970-01-01T00:00:09.000Z,1970-01-01T00:00:14.000Z\n");
    free(got);
    engine_close(e);
    cap_fini(&c);
}

/* EMIT CHANGES, against a plain model run in input order, for session,
 * tumbling and hopping windows: random rows out of order (within the
 * watermark, so none is late), sessions that merge (a row bridging two),
 * rows exactly GAP apart (which do not merge), many TEXT keys (short, longer
 * than an entry keeps inline, and longer than a pooled entry holds) and a
 * TEXT MIN and MAX, over several seeds.  Per key, the changes must be the
 * model's, in order; each names a key that had a row in its window; the
 * last change of each final (key, window) equals EMIT FINAL's row, and
 * EMIT FINAL has each such window once.  Changes once borrowed their TEXT
 * from the entry: a session merged later in the same batch freed it and
 * its memory came back as another key's, and a later row's MAX overwrote
 * an earlier change's. */
enum { SW_ROWS = 12000, SW_KEYS_MAX = 600, SW_VLEN = 24, SW_KLEN = 128 };
typedef struct sw_win { /* a session or fixed window of the model */
    int64_t ws, we, n, s;
    int hi, lo;         /* rows whose v is the MAX and the MIN */
    int key, parent;    /* parent: the window it merged into, itself while open */
    int next;           /* the key's previous window */
    int seen;           /* EMIT FINAL rows for it */
    int64_t ln, ls, lws, lwe; /* the last change of it that came out */
    char lhi[SW_VLEN], llo[SW_VLEN];
} sw_win;
typedef struct sw_chg { int64_t n, s, ws, we; int hi, lo, win, next; } sw_chg;
static struct {
    int nkeys, kind; /* kind: 0 session, 1 tumbling, 2 hopping */
    int64_t gap, size, adv;
    char kname[SW_KEYS_MAX][SW_KLEN];
    int64_t ts[SW_ROWS], x[SW_ROWS];
    int key[SW_ROWS], krow_next[SW_ROWS], krow_first[SW_KEYS_MAX];
    char v[SW_ROWS][SW_VLEN];
    sw_win *w;
    int nw, kwin[SW_KEYS_MAX];
    sw_chg *c;
    int nc, kfirst[SW_KEYS_MAX], klast[SW_KEYS_MAX], cur[SW_KEYS_MAX];
    int64_t bad, changes_seen, finals_seen;
    char first_bad[512];
} sw;

static int sw_root(int i)
{
    while (sw.w[i].parent != i) i = sw.w[i].parent;
    return i;
}

static void sw_row_into(sw_win *w, int r)
{
    w->n++;
    w->s += sw.x[r];
    if (w->hi < 0 || strcmp(sw.v[r], sw.v[w->hi]) > 0) w->hi = r;
    if (w->lo < 0 || strcmp(sw.v[r], sw.v[w->lo]) < 0) w->lo = r;
}

static int sw_new_win(int k, int64_t ws, int64_t we)
{
    int i = sw.nw++;
    sw.w[i] = (sw_win){ws, we, 0, 0, -1, -1, k, i, sw.kwin[k], 0, 0, 0, 0, 0, "", ""};
    sw.kwin[k] = i;
    return i;
}

static void sw_change(int k, int win)
{
    const sw_win *w = &sw.w[win];
    sw.c[sw.nc] = (sw_chg){w->n, w->s, w->ws, w->we, w->hi, w->lo, win, -1};
    if (sw.kfirst[k] < 0) sw.kfirst[k] = sw.nc;
    else sw.c[sw.klast[k]].next = sw.nc;
    sw.klast[k] = sw.nc++;
}

/* The model: every row in input order, its changes as EMIT CHANGES makes them. */
static void sw_model(void)
{
    sw.nw = sw.nc = 0;
    for (int k = 0; k < sw.nkeys; k++) sw.kwin[k] = sw.kfirst[k] = sw.klast[k] = -1;
    for (int r = 0; r < SW_ROWS; r++) {
        int k = sw.key[r];
        int64_t ts = sw.ts[r];
        if (sw.kind == 0) { /* the open sessions of k that [ts, ts + gap) overlaps merge, with the row */
            int t = -1;
            for (int i = sw.kwin[k]; i >= 0; i = sw.w[i].next) {
                sw_win *w = &sw.w[i];
                if (w->parent != i || !(w->ws < ts + sw.gap && ts < w->we)) continue;
                if (t < 0) { t = i; continue; }
                sw_win *tw = &sw.w[t];
                tw->n += w->n;
                tw->s += w->s;
                if (strcmp(sw.v[w->hi], sw.v[tw->hi]) > 0) tw->hi = w->hi;
                if (strcmp(sw.v[w->lo], sw.v[tw->lo]) < 0) tw->lo = w->lo;
                if (w->ws < tw->ws) tw->ws = w->ws;
                if (w->we > tw->we) tw->we = w->we;
                w->parent = t;
            }
            if (t < 0) t = sw_new_win(k, ts, ts + sw.gap);
            sw_win *tw = &sw.w[t];
            if (ts < tw->ws) tw->ws = ts;
            if (ts + sw.gap > tw->we) tw->we = ts + sw.gap;
            sw_row_into(tw, r);
            sw_change(k, t);
            continue;
        }
        int64_t adv = sw.kind == 1 ? sw.size : sw.adv;
        int64_t last = ts / adv * adv, first = (ts - sw.size) / adv * adv + adv; /* ts > size: no floor needed */
        for (int64_t st = first; st <= last; st += adv) {
            int t = -1;
            for (int i = sw.kwin[k]; i >= 0 && t < 0; i = sw.w[i].next)
                if (sw.w[i].ws == st) t = i;
            if (t < 0) t = sw_new_win(k, st, st + sw.size);
            sw_row_into(&sw.w[t], r);
            sw_change(k, t);
        }
    }
}

static void sw_fail(const char *fmt, ...)
{
    va_list ap;
    if (sw.bad++) return;
    va_start(ap, fmt);
    vsnprintf(sw.first_bad, sizeof sw.first_bad, fmt, ap);
    va_end(ap);
}

/* The key of an output row, or -1 (noted) when no key of the input is it. */
static int sw_key_of(const val *v)
{
    if (v->type == TY_TEXT) {
        const char *d = memchr(v->s, '-', v->len), *end = v->s + v->len; /* text is not NUL-terminated */
        int k = d && d + 1 < end && d[1] >= '0' && d[1] <= '9' ? 0 : -1;
        for (const char *p = d + 1; k >= 0 && p < end && *p >= '0' && *p <= '9' && k < SW_KEYS_MAX; p++) k = k * 10 + (*p - '0');
        if (k >= 0 && k < sw.nkeys && strlen(sw.kname[k]) == v->len && !memcmp(sw.kname[k], v->s, v->len)) return k;
    }
    sw_fail("a row names key '%.*s', which no input row had", v->type == TY_TEXT ? (int)v->len : 4,
            v->type == TY_TEXT ? v->s : "NULL");
    return -1;
}

static int sw_text_is(const val *v, const char *s)
{
    return v->type == TY_TEXT && strlen(s) == v->len && !memcmp(s, v->s, v->len);
}

/* Row v (k, n, s, hi, lo, window_start, window_end) equals window w's values. */
static int sw_row_is(const val *v, int64_t n, int64_t s, const char *hi, const char *lo, int64_t ws, int64_t we)
{
    return v[1].i == n && v[2].i == s && sw_text_is(&v[3], hi) && sw_text_is(&v[4], lo) && v[5].i == ws && v[6].i == we;
}

static int sw_changes(void *ctx, const batch *b)
{
    (void)ctx;
    for (int r = 0; r < b->nrows; r++) {
        const val *v = batch_row(b, r);
        int k = sw_key_of(&v[0]);
        sw.changes_seen++;
        if (k < 0) continue;
        /* a row of k in the window: at its start (a session), or in [start, end) */
        int had = 0;
        for (int i = sw.krow_first[k]; i >= 0 && !had; i = sw.krow_next[i])
            had = sw.kind == 0 ? sw.ts[i] == v[5].i : sw.ts[i] >= v[5].i && sw.ts[i] < v[6].i;
        if (!had) sw_fail("change %lld names key %s, which had no row at window_start %lld", (long long)sw.changes_seen,
                          sw.kname[k], (long long)v[5].i);
        int c = sw.cur[k];
        if (c < 0) {
            sw_fail("key %s: more changes than rows", sw.kname[k]);
            continue;
        }
        const sw_chg *e = &sw.c[c];
        sw.cur[k] = e->next;
        if (!sw_row_is(v, e->n, e->s, sw.v[e->hi], sw.v[e->lo], e->ws, e->we))
            sw_fail("key %s: change %lld is n=%lld s=%lld hi=%.*s [%lld, %lld), the model's n=%lld s=%lld hi=%s [%lld, %lld)",
                    sw.kname[k], (long long)sw.changes_seen, (long long)v[1].i, (long long)v[2].i,
                    v[3].type == TY_TEXT ? (int)v[3].len : 0, v[3].s, (long long)v[5].i, (long long)v[6].i,
                    (long long)e->n, (long long)e->s, sw.v[e->hi], (long long)e->ws, (long long)e->we);
        sw_win *w = &sw.w[sw_root(e->win)];
        w->ln = v[1].i;
        w->ls = v[2].i;
        w->lws = v[5].i;
        w->lwe = v[6].i;
        snprintf(w->lhi, sizeof w->lhi, "%.*s", v[3].type == TY_TEXT ? (int)v[3].len : 0, v[3].s);
        snprintf(w->llo, sizeof w->llo, "%.*s", v[4].type == TY_TEXT ? (int)v[4].len : 0, v[4].s);
    }
    return 0;
}

static int sw_finals(void *ctx, const batch *b)
{
    (void)ctx;
    for (int r = 0; r < b->nrows; r++) {
        const val *v = batch_row(b, r);
        int k = sw_key_of(&v[0]);
        sw.finals_seen++;
        if (k < 0) continue;
        int t = -1;
        for (int i = sw.kwin[k]; i >= 0 && t < 0; i = sw.w[i].next)
            if (sw.w[i].parent == i && sw.w[i].ws == v[5].i) t = i;
        if (t < 0) {
            sw_fail("EMIT FINAL: key %s has no window starting at %lld", sw.kname[k], (long long)v[5].i);
            continue;
        }
        sw_win *w = &sw.w[t];
        if (w->seen++) sw_fail("EMIT FINAL: key %s, window at %lld twice", sw.kname[k], (long long)w->ws);
        if (!sw_row_is(v, w->n, w->s, sw.v[w->hi], sw.v[w->lo], w->ws, w->we))
            sw_fail("EMIT FINAL: key %s, window at %lld differs from the model", sw.kname[k], (long long)w->ws);
        if (!sw_row_is(v, w->ln, w->ls, w->lhi, w->llo, w->lws, w->lwe))
            sw_fail("key %s, window at %lld: the last change (n=%lld [%lld, %lld)) is not EMIT FINAL's row (n=%lld [%lld, %lld))",
                    sw.kname[k], (long long)w->ws, (long long)w->ln, (long long)w->lws, (long long)w->lwe,
                    (long long)v[1].i, (long long)v[5].i, (long long)v[6].i);
    }
    return 0;
}

static void test_emit_changes_random(void **state)
{
    (void)state;
    static const char *const kinds[] = {"SESSION (GAP %lld MILLISECONDS)", "TUMBLING (SIZE %lld MILLISECONDS)",
                                        "HOPPING (SIZE %lld MILLISECONDS, ADVANCE BY %lld MILLISECONDS)"};
    static const int nkeys[] = {40, 250, 600};
    static const int64_t gaps[] = {300, 800, 2000};
    sw.w = malloc(3 * SW_ROWS * sizeof *sw.w);
    sw.c = malloc(3 * SW_ROWS * sizeof *sw.c);
    assert_true(sw.w && sw.c);
    sbuf in;
    sbuf_init(&in);
    for (int seed = 1; seed <= 6; seed++) {
        uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)seed;
        sw.nkeys = nkeys[seed % 3];
        for (int k = 0; k < sw.nkeys; k++) /* short, beyond an entry's KIN bytes, beyond a pooled entry */
            snprintf(sw.kname[k], SW_KLEN, k % 3 == 0 ? "k-%d" : k % 3 == 1 ? "group-%d-of-the-test" : "key-%d-%0100d", k, 0);
        for (int k = 0; k < sw.nkeys; k++) sw.krow_first[k] = -1;
        sbuf_reset(&in);
        sbuf_printf(&in, "ts,k,x,v\n");
        for (int r = SW_ROWS - 1; r >= 0; r--) sw.krow_next[r] = -1;
        for (int r = 0; r < SW_ROWS; r++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* 2 ms a row, up to 1.5 s back (the watermark is 2 s behind) */
            sw.ts[r] = 5000 + (int64_t)r * 2 - (int64_t)(x % 1500);
            sw.key[r] = (int)((x >> 16) % (uint64_t)(x & 0x10000 ? sw.nkeys : 8)); /* a few keys are hot */
            sw.x[r] = (int64_t)((x >> 24) % 1000) - 500;
            int len = 1 + (int)((x >> 40) % (SW_VLEN - 2));
            for (int i = 0; i < len; i++) sw.v[r][i] = (char)('a' + (x >> (i % 8 * 3 + 34)) % 26);
            sw.v[r][len] = '\0';
            sbuf_printf(&in, "%lld,%s,%lld,%s\n", (long long)sw.ts[r], sw.kname[sw.key[r]], (long long)sw.x[r], sw.v[r]);
        }
        for (int r = SW_ROWS - 1; r >= 0; r--) { /* each key's rows, as a list */
            sw.krow_next[r] = sw.krow_first[sw.key[r]];
            sw.krow_first[sw.key[r]] = r;
        }
        for (sw.kind = 0; sw.kind < 3; sw.kind++) {
            sw.gap = gaps[seed % 3];
            sw.size = sw.kind == 1 ? 700 : 900;
            sw.adv = 300;
            sw_model();
            char win[128], sql[1024];
            if (sw.kind == 0) snprintf(win, sizeof win, kinds[0], (long long)sw.gap);
            else snprintf(win, sizeof win, kinds[sw.kind], (long long)sw.size, (long long)sw.adv);
            sw.bad = sw.changes_seen = sw.finals_seen = 0;
            for (int k = 0; k < sw.nkeys; k++) sw.cur[k] = sw.kfirst[k];
            for (int final = 0; final < 2; final++) {
                engine *e = open_mem();
                exec_out out = {NULL, NULL, final ? sw_finals : sw_changes, NULL, NULL};
                snprintf(sql, sizeof sql,
                         "CREATE STREAM s (ts TIMESTAMP, k TEXT, x BIGINT, v TEXT) WITH (timestamp='ts', watermark='2 seconds');"
                         "SELECT k, COUNT(*) AS n, SUM(x) AS s, MAX(v) AS hi, MIN(v) AS lo, window_start, window_end "
                         "FROM s WINDOW %s GROUP BY k EMIT %s;",
                         win, final ? "FINAL" : "CHANGES");
                run(e, &out, sql);
                ingest(e, "s", in.p, 1);
                engine_close(e);
            }
            int64_t open = 0, merged = 0;
            for (int i = 0; i < sw.nw; i++) {
                if (sw.w[i].parent != i) { merged++; continue; }
                open++;
                if (!sw.w[i].seen) sw_fail("EMIT FINAL has no row for key %s, window at %lld", sw.kname[sw.w[i].key],
                                           (long long)sw.w[i].ws);
            }
            for (int k = 0; k < sw.nkeys; k++)
                if (sw.cur[k] >= 0) sw_fail("key %s: fewer changes than the model's", sw.kname[k]);
            if (sw.bad)
                fail_msg("seed %d, WINDOW %s: %lld wrong (%lld changes, %lld final rows); first: %s", seed, win,
                         (long long)sw.bad, (long long)sw.changes_seen, (long long)sw.finals_seen, sw.first_bad);
            assert_int_equal(sw.changes_seen, sw.nc);
            assert_int_equal(sw.finals_seen, open);
            if (sw.kind == 0) assert_true(merged > 0); /* the input does make sessions merge */
        }
    }
    sbuf_fini(&in);
    free(sw.w);
    free(sw.c);
}

static void test_late_rows_counted(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM s (ts BIGINT, v BIGINT) WITH (timestamp='ts', watermark='1 second');"
        "CREATE QUERY q AS SELECT COUNT(*) AS n, window_start FROM s WINDOW TUMBLING (SIZE 1 SECOND);");
    /* one slice per INSERT: the watermark advances between statements */
    run(e, &out, "INSERT INTO s VALUES (500, 1), (5000, 2);");
    run(e, &out, "INSERT INTO s VALUES (100, 3);"); /* window [0,1000) closed at wm 4000 */
    cap d;
    exec_out dout = cap_out(&d);
    run(e, &dout, "DESCRIBE q;");
    assert_non_null(strstr(d.text.p, "late (dropped): 1"));
    engine_close(e);
    cap_fini(&c);
    cap_fini(&d);
}

/* Rejections seen by an ingest's on_reject: "line: msg" lines. */
static void note_reject(void *ctx, int64_t line, const char *msg)
{
    sbuf_printf(ctx, "%lld|%s\n", (long long)line, msg);
}

/* A row without its event time (empty CSV field, JSON null or missing
 * member, INSERT of NULL) is bad input, reported with its line, never a
 * row counted as late (issue 16, item 5). */
static void test_no_event_time(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM s (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp='ts', watermark='0 seconds');"
        "CREATE QUERY q AS SELECT k, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k;");
    static const struct { fmt_kind k; const char *data; } in[] = {
        {FMT_CSV, "ts,k,v\n1000,1,1\n,1,1\n\"\",2,1\n2000,3,1\n"},
        {FMT_JSON, "{\"ts\":3000,\"k\":1}\n{\"k\":1}\n{\"ts\":null,\"k\":2}\n{\"ts\":4000,\"k\":3}\n"},
    };
    for (int i = 0; i < 2; i++) {
        sbuf rej;
        sbuf_init(&rej);
        exec_ingest *g;
        xerr err;
        exec_ingest_opts o = {0};
        o.format = in[i].k;
        o.format_set = 1;
        o.on_reject = note_reject;
        o.ctx = &rej;
        exec_ingest_stats st;
        assert_int_equal(exec_ingest_open(e, "s", &o, &g, &err), 0);
        assert_int_equal(exec_ingest_feed(g, in[i].data, strlen(in[i].data), &err), 0);
        assert_int_equal(exec_ingest_close(g, 0, &st, &err), 0);
        assert_int_equal(st.rows, 2);
        assert_int_equal(st.rejected, 2);
        const char *want = i == 0 ? "3|line 3: column 'ts': no event time (empty or null); every row of the stream needs one\n"
                                    "4|line 4: column 'ts': no event time (empty or null); every row of the stream needs one\n"
                                  : "2|line 2: column 'ts': no event time (empty or null); every row of the stream needs one\n"
                                    "3|line 3: column 'ts': no event time (empty or null); every row of the stream needs one\n";
        assert_string_equal(rej.p, want);
        sbuf_fini(&rej);
    }
    xerr err;
    assert_int_equal(engine_exec_sql(e, "INSERT INTO s VALUES (5000, 1, 1), (NULL, 2, 2);", &out, &err), XE_TYPE);
    assert_int_equal(err.col, 37);
    assert_non_null(strstr(err.msg, "row 2 has no event time: column 'ts' may not be NULL"));
    assert_int_equal(engine_exec_sql(e, "INSERT INTO s (k, v) VALUES (2, 2);", &out, &err), XE_TYPE);
    cap d;
    exec_out dout = cap_out(&d);
    run(e, &dout, "DESCRIBE q;");
    assert_non_null(strstr(d.text.p, "late (dropped): 0"));
    engine_close(e);
    cap_fini(&c);
    cap_fini(&d);
}

/* An input that pauses ends its slice (exec_ingest_idle): the windows its
 * rows closed come out at once, and a row after the cut is late against the
 * watermark it moved.  The cut is in the log: a SELECT started after the
 * stream ended reads the log again from its start (a bounded stream) and
 * answers the same, the same row late; so does a file source's stream read
 * a second time, in the same engine or after a restart (issue 16, items 1
 * and 4). */
static void test_idle_cut_and_rereads(void **state)
{
    (void)state;
    const char *ddl = "CREATE STREAM s (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp='ts', watermark='0 seconds');";
    const char *sel = "SELECT k, COUNT(*) AS n, SUM(v) AS sv, window_start FROM s WINDOW TUMBLING (SIZE 2 SECONDS) "
                      "GROUP BY k EMIT FINAL;";
    engine *e = open_mem();
    cap c1, c2, c3;
    exec_out o1 = cap_out(&c1), o2 = cap_out(&c2), o3 = cap_out(&c3);
    run(e, &o1, ddl);
    run(e, &o1, sel);
    exec_ingest *in;
    xerr err;
    exec_ingest_opts o = {0};
    assert_int_equal(exec_ingest_open(e, "s", &o, &in, &err), 0);
    static const char *pieces[] = {"0,1,1\n1000,1,2\n", "2500,2,1\n", "1500,1,5\n3000,1,1\n", "4100,2,1\n"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(exec_ingest_feed(in, pieces[i], strlen(pieces[i]), &err), 0);
        if (i == 1) assert_int_equal(c1.text.len, 0); /* fed, not cut: [0, 2 s) still open */
        assert_int_equal(exec_ingest_idle(in, &err), 0);
        assert_int_equal(exec_ingest_idle(in, &err), 0); /* nothing new: no second cut */
        if (i == 1) assert_string_equal(c1.text.p, "1,2,3,1970-01-01T00:00:00.000Z\n");
    }
    assert_int_equal(exec_ingest_close(in, 1, NULL, &err), 0);
    char *live = sorted(c1.text.p);
    /* 1500 came after the cut at 2500: late, not in [0, 2 s) */
    assert_string_equal(live, "1,1,1,1970-01-01T00:00:02.000Z\n1,2,3,1970-01-01T00:00:00.000Z\n"
                              "2,1,1,1970-01-01T00:00:02.000Z\n2,1,1,1970-01-01T00:00:04.000Z\n");
    assert_int_equal(c1.ends, 1);
    /* the stream has ended: a new SELECT reads its log again */
    run(e, &o2, sel);
    assert_int_equal(c2.ends, 1);
    char *again = sorted(c2.text.p);
    assert_string_equal(again, live);
    free(again);
    engine_close(e);

    /* a file source: the second SELECT, and one after a restart, read the log */
    char dir[] = "/tmp/test_exec_file.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], data[256], sql[512];
    snprintf(path, sizeof path, "%s/in.csv", dir);
    snprintf(data, sizeof data, "%s/data", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("ts,k,v\n0,1,1\n1000,1,2\n2500,2,1\n", f);
    fclose(f);
    engine_opts eo = {0};
    eo.data_dir = data;
    assert_int_equal(engine_open(&eo, &e, &err), 0);
    snprintf(sql, sizeof sql, "CREATE STREAM s (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp='ts', source='file://%s');", path);
    run(e, &o3, sql);
    for (int i = 0; i < 3; i++) {
        if (i == 2) {
            engine_close(e);
            assert_int_equal(engine_open(&eo, &e, &err), 0);
        }
        cap r;
        exec_out ro = cap_out(&r);
        run(e, &ro, sel);
        int64_t rows;
        assert_int_equal(engine_run_file_sources(e, &rows, &err), 0);
        assert_int_equal(rows, i == 0 ? 3 : 0);
        assert_int_equal(r.ends, 1);
        char *got = sorted(r.text.p);
        assert_string_equal(got, "1,2,3,1970-01-01T00:00:00.000Z\n2,1,1,1970-01-01T00:00:02.000Z\n");
        free(got);
        cap_fini(&r);
    }
    engine_close(e);
    unlink(path);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);

    /* retention dropped the oldest records: the re-read says so */
    e = open_mem();
    run(e, &o3, "CREATE STREAM s (ts TIMESTAMP, k BIGINT, v BIGINT) WITH (timestamp='ts', retention='10 bytes');");
    ingest(e, "s", "0,1,1\n", 0);
    ingest(e, "s", "5000,1,1\n", 1);
    assert_int_equal(engine_commit(e, &err), 0);
    cap t;
    exec_out to = cap_out(&t);
    run(e, &to, sel);
    assert_non_null(strstr(t.notices.p, "stream 's': retention has dropped the"));
    cap_fini(&t);
    engine_close(e);
    free(live);
    cap_fini(&c1);
    cap_fini(&c2);
    cap_fini(&c3);
}

static void test_global_and_where(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM s (ts BIGINT, k TEXT, v DOUBLE) WITH (timestamp='ts');"
        "SELECT COUNT(*) AS n, SUM(v) AS total, AVG(v), COUNT(DISTINCT k) FROM s WHERE v > 1 AND k <> 'x' EMIT FINAL;");
    ingest(e, "s", "1,a,1\n2,b,2\n3,a,3\n4,x,10\n5,c,\n", 1);
    assert_string_equal(c.text.p, "2,5,2.5,2\n");
    engine_close(e);
    cap_fini(&c);
}

/* A stream of 3 partitions, embedded: a source task per partition, each
 * partition with its own watermark (a window closes when every partition
 * has passed it), the stream's end ending every partition, and a
 * partition's own end ending it alone. */
static void test_partitions(void **state)
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

static void test_join_within(void **state)
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
static void test_unnest_flat_map(void **state)
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

static void test_errors(void **state)
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
static void test_offset_earliest(void **state)
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

static void test_restart_keeps_query_and_state(void **state)
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
static void test_derived_streams(void **state)
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
static engine *open_tmp(char *dir, char *data, size_t n, engine_opts *o);

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
static void test_table_log_copy(void **state)
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

static void test_derived_feed(void **state)
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

/* A data directory in a new temp dir (dir, a mkdtemp template; data gets its path), opened. */
static engine *open_tmp(char *dir, char *data, size_t n, engine_opts *o)
{
    assert_non_null(mkdtemp(dir));
    snprintf(data, n, "%s/data", dir);
    memset(o, 0, sizeof *o);
    o->data_dir = data;
    engine *e;
    xerr err;
    if (engine_open(o, &e, &err)) fail_msg("open: %s", err.msg);
    return e;
}

/* Close e, open o again, and SUBSCRIBE to name into a new capture s. */
static engine *reopen_subscribed(engine *e, const engine_opts *o, cap *s, exec_out *sub, const char *name)
{
    xerr err;
    char sql[300];
    engine_close(e);
    cap_fini(s);
    if (engine_open(o, &e, &err)) fail_msg("reopen: %s", err.msg);
    *sub = cap_out(s);
    snprintf(sql, sizeof sql, "SUBSCRIBE %s;", name);
    run(e, sub, sql);
    return e;
}

/* The stream-table join (exec/tjoin.c).  Versioned: a stream row waits
 * for the table's watermark to pass its time, across a restart, then meets
 * the newest change of its key at or before it; a delete (dated at the
 * latest table time seen) leaves NULLs in a LEFT JOIN.  Current: rows meet
 * the table as it is, a JOIN drops those without a row. */
static void test_stream_table_join(void **state)
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
static void test_table_changelog(void **state)
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
static void test_table_as_retracts(void **state)
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
static void test_table_as_having(void **state)
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
static void test_push_changes(void **state)
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
static void test_upsert_sink(void **state)
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

static void test_subquery_highest_bid(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM bid (auction BIGINT, price BIGINT, ts BIGINT) WITH (timestamp='ts');"
        "SELECT b.auction, b.price FROM bid b "
        "JOIN (SELECT MAX(price) AS maxprice, window_end AS wend FROM bid WINDOW TUMBLING (SIZE 10 SECONDS)) m "
        "ON b.price = m.maxprice WITHIN 10 SECONDS WHERE b.ts >= m.wend - 10000 AND b.ts < m.wend;");
    ingest(e, "bid", "1,5,1000\n2,9,2000\n3,7,3000\n4,3,11000\n5,8,12000\n6,8,19000\n7,1,25000\n", 1);
    char *got = sorted(c.text.p);
    assert_string_equal(got, "2,9\n5,8\n6,8\n7,1\n");
    free(got);
    /* a subquery needs an alias, and event time to be windowed or joined */
    xerr err;
    assert_int_equal(engine_exec_sql(e, "SELECT x FROM (SELECT price AS x FROM bid);", &out, &err), XE_SYNTAX);
    assert_non_null(strstr(err.msg, "expected one of: AS"));
    assert_true(engine_exec_sql(e, "SELECT COUNT(*) FROM (SELECT price FROM bid) p WINDOW TUMBLING (SIZE 1 SECOND);",
                                &out, &err) < 0);
    assert_non_null(strstr(err.msg, "no event-time column"));
    engine_close(e);
    cap_fini(&c);
}

/* Subqueries timed by window_start: the join must keep every window pair. */
static void test_window_start_time_join(void **state)
{
    (void)state;
    engine *e = open_mem();
    cap c;
    exec_out out = cap_out(&c);
    run(e, &out,
        "CREATE STREAM s (k BIGINT, ts TIMESTAMP) WITH (timestamp = 'ts');"
        "SELECT a.k, a.n, b.m, a.ws FROM "
        "(SELECT k, COUNT(*) AS n, window_start AS ws FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k) a JOIN "
        "(SELECT k, COUNT(*) AS m, window_start AS ws FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY k) b "
        "ON a.k = b.k AND a.ws = b.ws WITHIN 1 SECOND;");
    sbuf data;
    sbuf_init(&data);
    for (int i = 0; i <= 5000; i++) sbuf_printf(&data, "%d,%d\n", i % 3, i * 20);
    ingest(e, "s", data.p, 1);
    int rows = 0;
    for (const char *p = c.text.p; p && *p; p++) rows += *p == '\n';
    assert_int_equal(rows, 31); /* 10 full windows x 3 keys, and the last one with one key */
    engine_close(e);
    cap_fini(&c);
    sbuf_fini(&data);
}

static void test_log_retention(void **state)
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

/* The stream of the tests that split one query between engines. */
#define SPLIT_DDL "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp='ts');"

/* Two engines in one process, one query split between them: the hooks carry
 * rows and watermarks straight across.  The output must equal one engine's. */
static engine *peer_of[2];
static engine *E[2];

static int hook_batch(void *ctx, uint32_t qid, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p,
                      size_t n)
{
    engine *other = *(engine **)ctx;
    xerr err;
    int rc = engine_remote_batch(other, qid, op, task, side, tag, stamp, p, n, &err);
    if (rc) fprintf(stderr, "remote batch: %s\n", err.msg);
    return rc;
}

static int hook_wm(void *ctx, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag)
{
    engine *other = *(engine **)ctx;
    xerr err;
    int rc = engine_remote_watermark(other, qid, op, side, from_task, wm, tag, &err);
    if (rc) fprintf(stderr, "remote watermark: %s\n", err.msg);
    return rc;
}

static void test_distributed_hooks(void **state)
{
    (void)state;
    const char *ddl = SPLIT_DDL;
    const char *q = "CREATE QUERY q WITH (parallelism = 4) AS SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start "
                    "FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;";
    sbuf data;
    sbuf_init(&data);
    for (int i = 0; i < 5000; i++) sbuf_printf(&data, "%d,%d,%d\n", i * 3, (i * 7919) % 37, i % 11);
    /* reference: one engine */
    engine *ref = open_mem();
    cap rc_;
    exec_out rout = cap_out(&rc_);
    run(ref, &rout, ddl);
    char sel[512];
    snprintf(sel, sizeof sel, "%s", strstr(q, "SELECT"));
    run(ref, &rout, sel);
    ingest(ref, "s", data.p, 1);
    char *want = sorted(rc_.text.p);
    engine_close(ref);
    /* two engines: node 0 has the source and half the keyed tasks, node 1 the rest and the sink */
    cap c;
    exec_out out = cap_out(&c);
    E[0] = open_mem();
    E[1] = open_mem();
    peer_of[0] = E[1];
    peer_of[1] = E[0];
    run(E[0], &out, ddl);
    run(E[1], &out, ddl);
    plan_dag *d;
    xerr err;
    assert_int_equal(engine_plan(E[0], q, &d, &err), 0);
    int n = plan_task_count(d);
    unsigned char own0[64], own1[64];
    int g = 0;
    for (int i = 0; i < d->nops; i++)
        for (int t = 0; t < d->ops[i].parallelism; t++, g++) {
            int mine = d->ops[i].kind == PO_SOURCE || d->ops[i].kind == PO_FILTER ? 0
                       : d->ops[i].kind == PO_SINK                              ? 1
                                                                                : t % 2;
            own0[g] = mine == 0;
            own1[g] = mine == 1;
        }
    plan_free(d);
    engine_remote r0 = {&peer_of[0], hook_batch, hook_wm, NULL}, r1 = {&peer_of[1], hook_batch, hook_wm, NULL};
    if (engine_deploy(E[1], 7, q, own1, n, &r1, &out, NULL, &err)) fail_msg("deploy 1: %s", err.msg);
    if (engine_deploy(E[0], 7, q, own0, n, &r0, &out, NULL, &err)) fail_msg("deploy 0: %s", err.msg);
    int64_t t = 0;
    assert_int_equal(engine_deployed_sink_time(E[0], 7, &t, &err), XE_NOTFOUND); /* the sink runs on 1 */
    assert_int_equal(engine_deployed_sink_time(E[1], 7, &t, &err), 0);
    assert_true(t == INT64_MIN); /* no row yet */
    ingest(E[0], "s", data.p, 1);
    /* the rows' time reached the sink through the remote batches: the
     * projection keeps window_start, the last window starts at 14 s */
    assert_int_equal(engine_deployed_sink_time(E[1], 7, &t, &err), 0);
    assert_true(t == 14000);
    char *got = sorted(c.text.p);
    assert_true(strlen(want) > 100);
    assert_string_equal(got, want);
    free(got);
    free(want);
    assert_int_equal(engine_undeploy(E[0], 7, 0, &err), 0);
    engine_close(E[0]);
    engine_close(E[1]);
    cap_fini(&c);
    cap_fini(&rc_);
    sbuf_fini(&data);
}


/* Replica promotion inside one process: engine 1 runs one of the keyed
 * aggregate tasks and ships its state changes to engine 2; engine 1 is lost
 * half-way through; the query is redeployed with that task on engine 2
 * (promoted), engine 0 keeps its own, the log replays from where the
 * restored states stand.  Every window's row, before and after, must equal
 * one engine's (rows delivered twice are the sink host's to drop). */
static engine *FE[3];
static int f_base[16], f_owner[64], f_dead;
static int64_t f_deltas;

static int f_batch(void *ctx, uint32_t qid, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p,
                   size_t n)
{
    (void)ctx;
    int o = f_owner[f_base[op] + task];
    if (o == f_dead) return 0; /* lost in flight */
    xerr err;
    int rc = engine_remote_batch(FE[o], qid, op, task, side, tag, stamp, p, n, &err);
    if (rc) fprintf(stderr, "remote batch: %s\n", err.msg);
    return rc;
}

static int f_wm(void *ctx, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag)
{
    int self = *(int *)ctx;
    for (int i = 0; i < 3; i++) {
        if (i == self || i == f_dead) continue;
        xerr err;
        int rc = engine_remote_watermark(FE[i], qid, op, side, from_task, wm, tag, &err);
        if (rc && rc != XE_NOTFOUND) return rc;
    }
    return 0;
}

static int f_state(void *ctx, uint32_t qid, int task, uint32_t tid, uint64_t epoch, const void *p, size_t n)
{
    (void)qid;
    (void)task;
    if (*(int *)ctx == 2) return 0; /* no replica of its own */
    xerr err;
    f_deltas++;
    uint64_t pos[ENGINE_MAX_SRC];
    int npos = 0;
    int rc = engine_replica_apply(FE[2], tid, epoch, p, n, pos, &npos, &err);
    /* the source's home hears it (a lost deployment's late ones: not found) */
    if (!rc && engine_ft_acked(FE[0], qid, task, pos, npos, &err) && err.code != XE_NOTFOUND)
        fail_msg("ack of query %u task %d: %s", qid, task, err.msg);
    if (rc) fprintf(stderr, "replica: %s\n", err.msg);
    return rc;
}

/* The log bytes SHOW STREAMS reports for a stream (its last column). */
static long log_bytes(engine *e, const char *stream)
{
    cap c;
    exec_out o = cap_out(&c);
    run(e, &o, "SHOW STREAMS;");
    long v = -1;
    char *copy = strdup(c.text.p ? c.text.p : "");
    size_t n = strlen(stream);
    for (char *ln = strtok(copy, "\n"); ln; ln = strtok(NULL, "\n"))
        if (!strncmp(ln, stream, n) && ln[n] == ',') v = atol(strrchr(ln, ',') + 1);
    free(copy);
    cap_fini(&c);
    return v;
}

static void test_replica_promotion(void **state)
{
    (void)state;
    const char *ddl = SPLIT_DDL;
    const char *q = "CREATE QUERY q WITH (parallelism = 2) AS SELECT k, COUNT(*) AS n, SUM(v) AS s, window_start "
                    "FROM s WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY k;";
    sbuf a0, a, b;
    sbuf_init(&a0);
    sbuf_init(&a);
    sbuf_init(&b);
    for (int i = 0; i < 20000; i++)
        sbuf_printf(i < 5000 ? &a0 : i < 9000 ? &a : &b, "%d,%d,%d\n", i * 3, (i * 7919) % 37, i % 11);
    engine *ref = open_mem();
    cap rc_;
    exec_out rout = cap_out(&rc_);
    run(ref, &rout, ddl);
    char sel[512];
    snprintf(sel, sizeof sel, "%s", strstr(q, "SELECT"));
    run(ref, &rout, sel);
    ingest(ref, "s", a0.p, 0);
    ingest(ref, "s", a.p, 0);
    long whole = log_bytes(ref, "s");
    ingest(ref, "s", b.p, 1);
    char *want = sorted(rc_.text.p);
    engine_close(ref);

    cap c;
    exec_out out = cap_out(&c);
    int self[3] = {0, 1, 2};
    engine_remote r[3];
    /* a small retention: the log may only let go of what the replicas hold */
    const char *ddl_small = "CREATE STREAM s (ts BIGINT, k BIGINT, v BIGINT) WITH (timestamp='ts', retention='4 KB');";
    for (int i = 0; i < 3; i++) {
        FE[i] = open_mem();
        run(FE[i], &out, ddl_small);
        r[i] = (engine_remote){&self[i], f_batch, f_wm, f_state};
    }
    plan_dag *d;
    xerr err;
    assert_int_equal(engine_plan(FE[0], q, &d, &err), 0);
    int n = plan_task_count(d), g = 0;
    for (int i = 0; i < d->nops; i++) {
        f_base[i] = g;
        for (int t = 0; t < d->ops[i].parallelism; t++, g++)
            /* the keyed tasks #1 on engine 1, everything else on engine 0 */
            f_owner[g] = d->ops[i].parallelism > 1 && t == 1 ? 1 : 0;
    }
    plan_free(d);
    f_dead = -1;
    unsigned char own[3][64];
    for (int e = 0; e < 3; e++)
        for (int t = 0; t < n; t++) own[e][t] = f_owner[t] == e;
    engine_deploy_opts fo = {ENGINE_FT_REPLICA, 0, 0, INT64_MIN, 0};
    for (int e = 2; e >= 0; e--)
        if (engine_deploy(FE[e], 7, q, own[e], n, &r[e], e == 0 ? &out : NULL, &fo, &err)) fail_msg("deploy: %s", err.msg);
    ingest(FE[0], "s", a0.p, 0);
    assert_int_equal(engine_commit(FE[1], &err), 0);
    ingest(FE[0], "s", a.p, 0);
    assert_int_equal(engine_commit(FE[1], &err), 0);
    assert_true(f_deltas > 0);
    /* the log let go of what every replica holds: it is near its retention, not whole */
    long kept = log_bytes(FE[0], "s");
    assert_true(kept > 0 && kept < whole / 2);
    /* engine 1 is lost; its tasks go to engine 2, which holds their replica */
    f_dead = 1;
    engine_close(FE[1]);
    assert_int_equal(engine_undeploy(FE[0], 7, 1, &err), 0);
    assert_int_equal(engine_undeploy(FE[2], 7, 1, &err), 0);
    for (int t = 0; t < n; t++)
        if (f_owner[t] == 1) f_owner[t] = 2;
    for (int e = 0; e < 3; e++)
        for (int t = 0; t < n; t++) own[e][t] = f_owner[t] == e;
    fo.prev = 7;
    /* the sink's engine first: the promoted task emits its last results again at once */
    if (engine_deploy(FE[0], 8, q, own[0], n, &r[0], &out, &fo, &err)) fail_msg("redeploy 0: %s", err.msg);
    if (engine_deploy(FE[2], 8, q, own[2], n, &r[2], NULL, &fo, &err)) fail_msg("redeploy 2: %s", err.msg);
    uint64_t from[ENGINE_MAX_SRC], f2[ENGINE_MAX_SRC];
    int st[ENGINE_MAX_SRC], ns;
    assert_int_equal(engine_ft_resume(FE[0], 8, from, st, &ns, &err), 0);
    assert_int_equal(engine_ft_resume(FE[2], 8, f2, st, &ns, &err), 0);
    assert_int_equal(ns, 1);
    /* the sink's engine runs a stateless task (the sink): it asks for the
     * replay from the sink's watermark too (ENGINE_FT_POS_TIMED, which a
     * source's home turns into an offset) */
    assert_true(from[0] & ENGINE_FT_POS_TIMED);
    from[0] &= ENGINE_FT_POS_NONE;
    f2[0] &= ENGINE_FT_POS_NONE;
    if (f2[0] < from[0]) from[0] = f2[0];
    assert_true(from[0] > 0 && from[0] < ENGINE_FT_POS_NONE); /* not from the start: the states were restored */
    int64_t rows;
    assert_int_equal(engine_replay(FE[0], 8, from, 1, &rows, &err), 0);
    ingest(FE[0], "s", b.p, 1);
    /* the sink saw some windows twice (closed before and after the loss): one of each */
    char *got = sorted(c.text.p);
    sbuf u;
    sbuf_init(&u);
    const char *prev = "";
    for (char *ln = strtok(got, "\n"); ln; ln = strtok(NULL, "\n")) {
        if (strcmp(ln, prev)) sbuf_printf(&u, "%s\n", ln);
        prev = ln;
    }
    char *wu = sorted(want);
    sbuf w;
    sbuf_init(&w);
    prev = "";
    for (char *ln = strtok(wu, "\n"); ln; ln = strtok(NULL, "\n")) {
        if (strcmp(ln, prev)) sbuf_printf(&w, "%s\n", ln);
        prev = ln;
    }
    assert_true(w.len > 1000);
    assert_string_equal(u.p, w.p);
    engine_close(FE[0]);
    engine_close(FE[2]);
    free(got);
    free(wu);
    free(want);
    sbuf_fini(&u);
    sbuf_fini(&w);
    sbuf_fini(&a0);
    sbuf_fini(&a);
    sbuf_fini(&b);
    cap_fini(&c);
    cap_fini(&rc_);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_example),
        cmocka_unit_test(test_task_measurements),
        cmocka_unit_test(test_hopping_and_having),
        cmocka_unit_test(test_windows_many_groups),
        cmocka_unit_test(test_fast_agg_same_as_general),
        cmocka_unit_test(test_memory_budget_same_output),
        cmocka_unit_test(test_many_open_windows),
        cmocka_unit_test(test_session_windows),
        cmocka_unit_test(test_emit_changes_random),
        cmocka_unit_test(test_late_rows_counted),
        cmocka_unit_test(test_no_event_time),
        cmocka_unit_test(test_idle_cut_and_rereads),
        cmocka_unit_test(test_global_and_where),
        cmocka_unit_test(test_join_within),
        cmocka_unit_test(test_stream_table_join),
        cmocka_unit_test(test_partitions),
        cmocka_unit_test(test_unnest_flat_map),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_restart_keeps_query_and_state),
        cmocka_unit_test(test_derived_streams),
        cmocka_unit_test(test_derived_feed),
        cmocka_unit_test(test_table_log_copy),
        cmocka_unit_test(test_table_changelog),
        cmocka_unit_test(test_table_as_retracts),
        cmocka_unit_test(test_table_as_having),
        cmocka_unit_test(test_push_changes),
        cmocka_unit_test(test_upsert_sink),
        cmocka_unit_test(test_offset_earliest),
        cmocka_unit_test(test_distributed_hooks),
        cmocka_unit_test(test_subquery_highest_bid),
        cmocka_unit_test(test_log_retention),
        cmocka_unit_test(test_replica_promotion),
        cmocka_unit_test(test_log_copy),
        cmocka_unit_test(test_window_start_time_join),
    };
    return cmocka_run_group_tests_name("exec", tests, NULL, NULL);
}
