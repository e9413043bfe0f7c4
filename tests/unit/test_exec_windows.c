/*
 * test_exec: windows and aggregates: hopping, HAVING, many groups, the
 * fast path, memory_budget, sessions, EMIT CHANGES, late rows, idle cuts.
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

void test_issue_example(void **state)
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

void test_hopping_and_having(void **state)
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

void test_windows_many_groups(void **state)
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

void test_fast_agg_same_as_general(void **state)
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

void test_memory_budget_same_output(void **state)
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

void test_many_open_windows(void **state)
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

void test_session_windows(void **state)
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

void test_emit_changes_random(void **state)
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

void test_late_rows_counted(void **state)
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
void test_no_event_time(void **state)
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
void test_idle_cut_and_rereads(void **state)
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

void test_global_and_where(void **state)
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


void test_subquery_highest_bid(void **state)
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
void test_window_start_time_join(void **state)
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
