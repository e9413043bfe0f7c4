/*
 * show.c: the statements that answer about the engine: SHOW STREAMS,
 * QUERIES, NODES and SETTINGS, DESCRIBE, EXPLAIN, and SET with the table
 * of settings it takes.  Each builds a little result table (table_begin
 * ... table_end) for the client.  Only SET writes (a setting/<key> record,
 * committed at once).  Runs on the engine's thread.
 */
#include "exec/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ------------------------------------------------------------------ SHOW, DESCRIBE, EXPLAIN, SET */

/* A little result table built row by row. */
typedef struct table {
    int ncols;
    const char *names[16];
    sql_type types[16];
    batch b;
} table;

static int table_begin(table *t, int ncols, const char *const *names, const sql_type *types)
{
    t->ncols = ncols;
    for (int i = 0; i < ncols; i++) {
        t->names[i] = names[i];
        t->types[i] = types[i];
    }
    return batch_init(&t->b, ncols, 16);
}

static val *table_row(table *t) { return batch_add_row(&t->b); }
static void table_text(table *t, val *row, int c, const char *s)
{
    if (!s) { row[c] = val_null(); return; }
    batch_put_text(&t->b, &row[c], s, strlen(s));
}

static void table_end(table *t, const exec_out *out)
{
    fmt_schema fs = {t->ncols, t->names, t->types};
    if (out && out->begin) out->begin(out->ctx, &fs, 0);
    if (out && out->rows && t->b.nrows) out->rows(out->ctx, &t->b);
    if (out && out->end) out->end(out->ctx);
    batch_fini(&t->b);
}

static void wm_text(int64_t wm, char *buf)
{
    if (wm == WM_MIN) strcpy(buf, "-");
    else if (wm == WM_END) strcpy(buf, "end of input");
    else fmt_timestamp(wm, buf);
}

int eng_show_streams(engine *e, const exec_out *out)
{
    static const char *n[] = {"name", "columns", "timestamp", "watermark_delay_ms", "source", "rows", "rejected", "watermark", "log_bytes"};
    static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_BIGINT, TY_TEXT, TY_BIGINT, TY_BIGINT, TY_TEXT, TY_BIGINT};
    table tb;
    if (table_begin(&tb, 9, n, t)) return XE_NOMEM;
    for (int i = 0; i < e->nstreams; i++) {
        stream_rt *s = e->streams[i];
        val *r = table_row(&tb);
        if (!r) break;
        sbuf cols;
        sbuf_init(&cols);
        for (int c = 0; c < s->ps->schema.ncols; c++)
            sbuf_printf(&cols, "%s%s %s", c ? ", " : "", s->ps->schema.cols[c].name, sql_type_name(s->ps->schema.cols[c].type));
        char wm[64];
        wm_text(eng_stream_wm(s), wm);
        table_text(&tb, r, 0, s->ps->name);
        table_text(&tb, r, 1, cols.p ? cols.p : "");
        table_text(&tb, r, 2, s->ps->ts_col >= 0 ? s->ps->schema.cols[s->ps->ts_col].name : NULL);
        r[3] = s->ps->ts_col >= 0 ? val_int(TY_BIGINT, s->ps->watermark_ms) : val_null();
        table_text(&tb, r, 4, s->source);
        r[5] = val_int(TY_BIGINT, (int64_t)s->rows_total);
        r[6] = val_int(TY_BIGINT, s->rejected);
        table_text(&tb, r, 7, wm);
        r[8] = val_int(TY_BIGINT, (int64_t)s->log_bytes);
        sbuf_fini(&cols);
    }
    table_end(&tb, out);
    return 0;
}

static int64_t query_wm(const engine *e, const query *q)
{
    int64_t wm = WM_END;
    for (int k = 0; k < q->nsrc; k++) {
        int64_t w = eng_stream_wm(e->streams[q->src_stream[k]]);
        if (w < wm) wm = w;
    }
    return wm;
}

/* q's rows in and out per second, over the last RATE_WINDOW_NS (since its
 * start or restart when that is shorter): NULL until RATE_MIN_NS passed.
 * The base is the newest sample at least the window old, else the oldest. */
static void query_rates(query *q, uint64_t now, val *in, val *out)
{
    *in = *out = val_null();
    query_rate_sample(q, now, 0);
    const struct rate_sample *base = NULL;
    for (int k = 1; k <= q->rs_n; k++) {
        const struct rate_sample *r = &q->rs[(q->rs_at + RATE_SAMPLES - k) % RATE_SAMPLES];
        base = r;
        if (now - r->ns >= RATE_WINDOW_NS) break;
    }
    if (!base || now - base->ns < RATE_MIN_NS) return;
    double secs = (double)(now - base->ns) / 1e9;
    *in = val_double((double)(int64_t)((double)(q->rows_in - base->in) / secs * 10) / 10);
    *out = val_double((double)(int64_t)((double)(q->rows_out - base->out) / secs * 10) / 10);
}

int eng_show_queries(engine *e, const exec_out *out)
{
    static const char *n[] = {"name", "state", "sink", "rows_in", "rows_out", "in_per_s", "out_per_s", "late", "rejected", "watermark", "sql"};
    static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_BIGINT, TY_BIGINT, TY_DOUBLE, TY_DOUBLE, TY_BIGINT, TY_BIGINT, TY_TEXT, TY_TEXT};
    table tb;
    if (table_begin(&tb, 11, n, t)) return XE_NOMEM;
    for (int i = 0; i < e->nqueries; i++) {
        query *q = e->queries[i];
        if (q->transient) continue;
        val *r = table_row(&tb);
        if (!r) break;
        int64_t rej = 0;
        for (int k = 0; k < q->nsrc; k++) rej += e->streams[q->src_stream[k]]->rejected;
        char wm[64];
        wm_text(query_wm(e, q), wm);
        table_text(&tb, r, 0, q->name);
        table_text(&tb, r, 1, "RUNNING");
        /* a query writing a stream (CREATE STREAM AS, INSERT INTO) without a sink names it */
        char into[320];
        snprintf(into, sizeof into, "stream %s", q->target >= 0 ? e->streams[q->target]->ps->name : "");
        table_text(&tb, r, 2, q->sink_uri || q->target < 0 ? q->sink_uri : into);
        r[3] = val_int(TY_BIGINT, q->rows_in);
        r[4] = val_int(TY_BIGINT, q->rows_out);
        query_rates(q, clock_mono_ns(), &r[5], &r[6]);
        r[7] = val_int(TY_BIGINT, q->late);
        r[8] = val_int(TY_BIGINT, rej);
        table_text(&tb, r, 9, wm);
        table_text(&tb, r, 10, q->sql);
    }
    table_end(&tb, out);
    return 0;
}

int eng_show_nodes(engine *e, const exec_out *out)
{
    static const char *n[] = {"name", "domain", "address", "state", "slots", "load", "last_heartbeat"};
    static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_TEXT, TY_BIGINT, TY_BIGINT, TY_TEXT};
    table tb;
    if (table_begin(&tb, 7, n, t)) return XE_NOMEM;
    val *r = table_row(&tb);
    int64_t load = 0;
    for (int i = 0; i < e->nqueries; i++) load += plan_task_count(e->queries[i]->dag);
    if (r) {
        table_text(&tb, r, 0, "local");
        table_text(&tb, r, 1, "local");
        table_text(&tb, r, 2, "embedded");
        table_text(&tb, r, 3, "ALIVE");
        r[4] = val_int(TY_BIGINT, sysconf(_SC_NPROCESSORS_ONLN));
        r[5] = val_int(TY_BIGINT, load);
        table_text(&tb, r, 6, "-");
    }
    table_end(&tb, out);
    return 0;
}

static int text_table(const exec_out *out, const char *colname, const char *text)
{
    const char *n[] = {colname};
    sql_type t[] = {TY_TEXT};
    table tb;
    if (table_begin(&tb, 1, n, t)) return XE_NOMEM;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        val *r = table_row(&tb);
        if (!r) break;
        batch_put_text(&tb.b, &r[0], p, len);
        p += len + (nl ? 1 : 0);
    }
    table_end(&tb, out);
    return 0;
}

int eng_describe(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int si = eng_stream_index(e, st->name);
    if (si >= 0) {
        stream_rt *s = e->streams[si];
        static const char *n[] = {"column", "type", "note"};
        static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT};
        table tb;
        if (table_begin(&tb, 3, n, t)) return xerr_set(err, XE_NOMEM, "out of memory");
        for (int c = 0; c < s->ps->schema.ncols; c++) {
            val *r = table_row(&tb);
            if (!r) break;
            char note[96] = "";
            if (c == s->ps->ts_col) snprintf(note, sizeof note, "event time, watermark delay %lld ms", (long long)s->ps->watermark_ms);
            table_text(&tb, r, 0, s->ps->schema.cols[c].name);
            table_text(&tb, r, 1, sql_type_name(s->ps->schema.cols[c].type));
            table_text(&tb, r, 2, note); /* empty, not NULL, where there is nothing to note */
        }
        table_end(&tb, out);
        return 0;
    }
    query *q = eng_find_query(e, st->name);
    if (!q) {
        const char *best = NULL;
        int bestd = 3;
        for (int i = 0; i < e->nstreams; i++) {
            int d = str_distance(st->name, e->streams[i]->ps->name);
            if (d < bestd) { bestd = d; best = e->streams[i]->ps->name; }
        }
        for (int i = 0; i < e->nqueries; i++)
            if (e->queries[i]->name) {
                int d = str_distance(st->name, e->queries[i]->name);
                if (d < bestd) { bestd = d; best = e->queries[i]->name; }
            }
        if (best) return xerr_at(err, XE_NAME, st->line, st->col, "no stream or query '%s'; did you mean '%s'?", st->name, best);
        return xerr_at(err, XE_NAME, st->line, st->col, "no stream or query '%s'", st->name);
    }
    sbuf b;
    sbuf_init(&b);
    sbuf_printf(&b, "Query %s (id %u)\nSQL: %s\nColumns:\n", q->name, q->id, q->sql);
    for (int c = 0; c < q->out_schema.ncols; c++)
        sbuf_printf(&b, "  %s %s\n", q->out_schema.names[c], sql_type_name(q->out_schema.types[c]));
    char wm[64];
    wm_text(query_wm(e, q), wm);
    int64_t groups = 0, cold = 0;
    uint64_t bytes = 0;
    int aggs = 0;
    for (int i = 0; i < q->dag->nops; i++)
        for (int t = 0; q->ops[i].agg && t < q->ops[i].ntasks; t++) {
            aggs = 1;
            groups += agg_open_groups(q->ops[i].agg[t]);
            cold += agg_cold_groups(q->ops[i].agg[t]);
            bytes += agg_state_bytes(q->ops[i].agg[t]);
        }
    sbuf_printf(&b, "Rows in: %lld  rows out: %lld  late (dropped): %lld  open windows x groups: %lld  watermark: %s\n",
                (long long)q->rows_in, (long long)q->rows_out, (long long)q->late, (long long)groups, wm);
    if (aggs)
        sbuf_printf(&b, "Window state: %lld groups in memory (%llu bytes), %lld in LMDB only (past memory_budget)\n",
                    (long long)(groups - cold), (unsigned long long)bytes, (long long)cold);
    if (q->target >= 0) sbuf_printf(&b, "Writes: stream %s\n", q->eng->streams[q->target]->ps->name);
    if (q->sink_uri) {
        sbuf_printf(&b, "Sink: %s (%s", q->sink_uri, q->sink_format ? q->sink_format : "csv");
        size_t backlog;
        if (q->outlet) {
            const char *state = io_outlet_state(q->outlet, &backlog);
            sbuf_printf(&b, ", %s, %zu bytes waiting", state, backlog);
        } else if (q->sink)
            sbuf_printf(&b, ", %lld bytes written", (long long)q->sink->committed);
        sbuf_adds(&b, ")\n");
    }
    plan_explain_text(q->dag, &b);
    int rc = text_table(out, "description", b.p);
    sbuf_fini(&b);
    return rc;
}

int eng_explain(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    plan_dag *d = NULL;
    int rc;
    if (st->explain_placement)
        return xerr_at(err, XE_PLAN, st->line, st->col,
                       "EXPLAIN PLACEMENT needs a cluster: this engine is embedded (one node, every task local)");
    if (st->select) {
        plan_opts po = {e->parallelism};
        if ((rc = plan_query(st->select, &e->cat, &po, &d, err))) return rc;
    } else {
        query *q = eng_find_query(e, st->name);
        if (!q) return xerr_at(err, XE_NAME, st->line, st->col, "no query '%s'", st->name);
        d = q->dag;
    }
    sbuf b;
    sbuf_init(&b);
    if (st->explain_json) plan_explain_json(d, &b);
    else plan_explain_text(d, &b);
    if (st->select) plan_free(d);
    if (b.len && b.p[b.len - 1] == '\n') b.p[--b.len] = 0;
    rc = text_table(out, "QUERY PLAN", b.p ? b.p : "");
    sbuf_fini(&b);
    return rc;
}

/* Every setting SET takes (cluster/coord.c applies the cluster's), for SHOW
 * SETTINGS and SHOW <name>; the values are the catalog's setting/<name>. */
static const struct setting_def {
    const char *name, *def, *desc;
} settings[] = {
    {"parallelism", "1", "tasks per keyed operator of the queries created after it (1 to 64)"},
    {"placement", "nirvana",
     "how a cluster places a query's tasks: nirvana, nirvana-no-recovery, round-robin, resource-aware or random"},
    {"replicas", "1", "replicas per stateful task in a cluster, in other failure domains (0 to 8)"},
    {"ft", "replica", "fault tolerance in a cluster: replica, checkpoint, upstream or none"},
    {"checkpoint_interval", "10 seconds", "how often a snapshot is taken with ft = 'checkpoint'"},
    {"shadow", "input", "how a stream's shadow home keeps up in a cluster: input (sent every row too) or log (its log copied)"},
    {"rebalance_interval", "30 seconds",
     "how often a cluster re-plays Nirvana's best responses for the running queries and moves tasks that gain (0 = never)"},
    {"rebalance_threshold", "0.2",
     "a task moves only when its cost falls by more than this fraction and the game's potential falls (0 to 1)"},
    {"offset", "latest",
     "where the queries created after it start reading their streams' logs: latest (new rows) or earliest (the whole "
     "retained log)"},
    {"memory_budget", "0",
     "bytes of window state the aggregates keep in memory, such as '64 MB'; past it the least recently updated groups "
     "live in LMDB only (0 = no bound)"},
};
#define NSETTINGS (int)(sizeof settings / sizeof *settings)

static int setting_index(const char *name)
{
    for (int i = 0; i < NSETTINGS; i++)
        if (!strcmp(settings[i].name, name)) return i;
    return -1;
}

static int unknown_setting(const ast_stmt *st, const char *name, xerr *err)
{
    char list[256] = "";
    const char *best = NULL;
    int bestd = 3;
    for (int i = 0; i < NSETTINGS; i++) {
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", settings[i].name);
        int d = str_distance(name, settings[i].name);
        if (d < bestd) { bestd = d; best = settings[i].name; }
    }
    const char *lists = st->kind == ST_SHOW ? "; SHOW STREAMS, QUERIES, NODES or SETTINGS lists what there is" : "";
    int line = st->kind == ST_SET ? st->set_key_line : st->line, col = st->kind == ST_SET ? st->set_key_col : st->col;
    if (best)
        return xerr_at(err, XE_INVAL, line, col, "unknown setting '%s'; did you mean '%s'? (known: %s%s)", name, best,
                       list, lists);
    return xerr_at(err, XE_INVAL, line, col, "unknown setting '%s' (known: %s%s)", name, list, lists);
}

/* The value in force: what SET stored, else the default. */
static int setting_value(engine *e, int i, sbuf *v, xerr *err)
{
    char key[160];
    snprintf(key, sizeof key, "setting/%s", settings[i].name);
    int own = !e->txn, rc = 0;
    if (own && (rc = store_begin(e->st, 0, &e->txn, err))) return rc;
    rc = store_kv_get(e->txn, STORE_CATALOG, key, v, err);
    if (own) { store_abort(e->txn); e->txn = NULL; }
    if (rc == XE_NOTFOUND) {
        sbuf_reset(v);
        rc = sbuf_adds(v, settings[i].def) ? xerr_set(err, XE_NOMEM, "out of memory") : 0;
    }
    return rc;
}

int eng_show_settings(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int one = -1;
    if (st->show == SHOW_SETTING && (one = setting_index(st->name)) < 0) return unknown_setting(st, st->name, err);
    static const char *n[] = {"name", "value", "default", "description"};
    static const sql_type t[] = {TY_TEXT, TY_TEXT, TY_TEXT, TY_TEXT};
    const char *n1[] = {one >= 0 ? settings[one].name : ""};
    table tb;
    if (table_begin(&tb, one >= 0 ? 1 : 4, one >= 0 ? n1 : n, t)) return xerr_set(err, XE_NOMEM, "out of memory");
    sbuf v;
    sbuf_init(&v);
    int rc = 0;
    for (int i = 0; i < NSETTINGS && !rc; i++) {
        if (one >= 0 && i != one) continue;
        val *r = table_row(&tb);
        if (!r) break;
        if ((rc = setting_value(e, i, &v, err))) break;
        if (one >= 0) {
            table_text(&tb, r, 0, v.p ? v.p : "");
            continue;
        }
        table_text(&tb, r, 0, settings[i].name);
        table_text(&tb, r, 1, v.p ? v.p : "");
        table_text(&tb, r, 2, settings[i].def);
        table_text(&tb, r, 3, settings[i].desc);
    }
    sbuf_fini(&v);
    table_end(&tb, out);
    return rc;
}

int engine_rebalance_setting(const char *key, const ast_lit *v, double *out, xerr *err)
{
    double x;
    if (!strcmp(key, "rebalance_interval")) {
        int64_t ms = 0;
        xerr e2;
        if (v->type == TY_BIGINT && v->i == 0) ms = 0;
        else if (v->type != TY_TEXT || plan_parse_interval(v->s, &ms, &e2) || ms < 0)
            return xerr_set(err, XE_INVAL, "rebalance_interval must be an interval such as '30 seconds', or 0 to turn "
                            "rebalancing off");
        if (ms > 0 && ms < 100)
            return xerr_set(err, XE_INVAL, "rebalance_interval must be at least 100 ms (or 0 to turn rebalancing off)");
        x = (double)ms;
    } else {
        x = v->type == TY_DOUBLE ? v->d : v->type == TY_BIGINT ? (double)v->i : -1;
        if (!(x >= 0 && x < 1))
            return xerr_set(err, XE_INVAL, "rebalance_threshold must be a number from 0 to below 1, such as 0.2 (a task "
                            "moves when its cost falls by more than that fraction)");
    }
    if (out) *out = x;
    return 0;
}

int eng_set_stmt(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    char val_text[128];
    const ast_lit *l = &st->set_value;
    if (l->type == TY_TEXT) snprintf(val_text, sizeof val_text, "%s", l->s);
    else if (l->type == TY_DOUBLE) snprintf(val_text, sizeof val_text, "%g", l->d);
    else snprintf(val_text, sizeof val_text, "%lld", (long long)l->i);
    const char *k = st->set_key;
    if (!strcmp(k, "parallelism")) {
        if (l->type != TY_BIGINT || l->i < 1 || l->i > 64)
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "parallelism must be an integer from 1 to 64");
        e->parallelism = (int)l->i;
    } else if (!strcmp(k, "offset")) {
        if (l->type != TY_TEXT || eng_offset_parse(val_text, &e->offset_earliest))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "offset must be 'earliest' or 'latest', not '%s'",
                           val_text);
    } else if (!strcmp(k, "memory_budget")) {
        uint64_t b;
        if ((l->type != TY_TEXT && l->type != TY_BIGINT) || eng_bytes_parse(val_text, &b))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "memory_budget must be a size such as '64 MB', '512 KiB' or 0 (no bound), not '%s'",
                           val_text);
        e->mem_budget = b;
    } else if (!strcmp(k, "placement")) {
        nirvana_strategy ns;
        if (nirvana_strategy_parse(val_text, &ns))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "placement must be 'nirvana', 'nirvana-no-recovery', 'round-robin', 'resource-aware' or "
                           "'random'");
        snprintf(e->placement, sizeof e->placement, "%.31s", val_text);
    } else if (!strcmp(k, "ft")) {
        /* used by a cluster (cluster/coord.c); an embedded engine has no failures to survive */
        engine_ft ft;
        if (engine_ft_parse(val_text, &ft))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "ft must be 'replica', 'checkpoint', 'upstream' or 'none', not '%s'", val_text);
    } else if (!strcmp(k, "checkpoint_interval")) {
        int64_t ms;
        xerr e2;
        if (plan_parse_interval(val_text, &ms, &e2) || ms <= 0)
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col,
                           "checkpoint_interval must be a positive interval such as '5 seconds', not '%s'", val_text);
    } else if (!strcmp(k, "shadow")) {
        /* used by a cluster: how a stream's shadow home keeps up */
        if (strcmp(val_text, "input") && strcmp(val_text, "log"))
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "shadow must be 'input' or 'log', not '%s'", val_text);
    } else if (!strcmp(k, "replicas")) {
        if (l->type != TY_BIGINT || l->i < 0 || l->i > 8)
            return xerr_at(err, XE_INVAL, st->set_line, st->set_col, "replicas must be an integer from 0 to 8");
    } else if (!strcmp(k, "rebalance_interval") || !strcmp(k, "rebalance_threshold")) {
        /* used by a cluster (cluster/coord.c, cluster/rebalance.c) */
        if (engine_rebalance_setting(k, l, NULL, err)) {
            err->line = st->set_line;
            err->col = st->set_col;
            return err->code;
        }
    } else
        return unknown_setting(st, k, err);
    char key[160];
    snprintf(key, sizeof key, "setting/%s", k);
    int rc;
    if ((rc = eng_txn(e, err)) || (rc = store_kv_put(e->txn, STORE_CATALOG, key, val_text, strlen(val_text), err)) ||
        (rc = engine_commit(e, err)))
        return rc;
    eng_notice(out, "SET");
    return 0;
}
