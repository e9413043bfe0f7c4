/*
 * push.c: push queries (a SELECT) and pull queries.
 *
 * A SELECT of a table without EMIT CHANGES is a pull query: the table's
 * rows now, then the end (table_pull.c runs it).  Any other SELECT is a
 * push query: it reads its streams from the end of their logs (a bounded
 * stream, or SET offset = 'earliest', from their start) until the client
 * goes.  An aggregate without a window updates and retracts as CREATE
 * TABLE AS's does, printed as a changelog; its state is in LMDB under an
 * id of its own until it ends, and what a crash left goes at the next
 * open (eng_push_sweep).  SUBSCRIBE of a table is SELECT * FROM t EMIT
 * CHANGES.  Runs on the engine's thread.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A bounded stream (a file source, or an input that has ended) has in its
 * log all it will get, or will get the rest from where its source stopped:
 * a push query reads it from the start of the log, so that a SELECT run
 * again answers as the first one did (the file is not read twice; the
 * recorded watermark steps replay, so the same rows are late).  New rows
 * of an unbounded stream are what a push query waits for, as in ksqlDB,
 * unless SET offset = 'earliest' (all = 1) asks for its log too.
 * *rewound: some source was. */
static int rewind_bounded(engine *e, query *q, int all, const exec_out *out, int *rewound, xerr *err)
{
    *rewound = 0;
    for (int k = 0; k < q->nsrc; k++) {
        stream_rt *s = e->streams[q->src_stream[k]];
        int file = s->source && !strncmp(s->source, "file://", 7);
        if (s->guard || !(file || s->ended || all)) continue;
        int rc = eng_rewind_source(e, q, k, out, err);
        if (rc) return rc;
        *rewound = 1;
    }
    return 0;
}


/* A push query whose answer updates and retracts as CREATE TABLE AS's
 * does: an aggregate without a window (EMIT CHANGES) that selects its
 * GROUP BY columns, with no JOIN, UNNEST or LIMIT.  Its group columns'
 * output positions go into key[], their count is returned; else 0. */
static int updating_agg(const ast_select *sel, int *key)
{
    if (!sel->group_by || !sel->group_by->n || sel->group_by->n > TBL_MAX_KEY || sel->window.kind != WIN_NONE ||
        sel->emit == EMIT_FINAL || sel->join || sel->unnest || sel->limit >= 0)
        return 0;
    return eng_group_key_cols(sel, key) ? 0 : sel->group_by->n;
}

/* q's output as a changelog (sink.c's changes_of): op, then its columns,
 * keyed by its groups; its state under q's id, named in meta (push/<id>)
 * until the query ends, so that a crash's leftovers go at the next open. */
static int changes_open(engine *e, query *q, const int *key, int nkey, xerr *err)
{
    const plan_schema *os = &q->dag->ops[q->dag->sink].out;
    for (int c = 0; c < os->ncols; c++)
        if (!strcasecmp(os->cols[c].name, "op"))
            return xerr_set(err, XE_NAME,
                            "column %d is called 'op', the first column of the changelog an updating aggregate "
                            "prints: name it otherwise (AS ...)",
                            c + 1);
    plan_stream *ps = calloc(1, sizeof *ps);
    if (!ps || !(ps->name = strdup("push")) || plan_schema_copy(&ps->schema, os)) {
        plan_stream_free(ps);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    ps->ts_col = -1;
    int rc = tbl_new_keyed(ps, key, nkey, eng_table_tid(q->id), &q->changes, err);
    if (rc) {
        plan_stream_free(ps);
        return rc;
    }
    const plan_schema *cs = &q->changes->cl->schema;
    const char **nm = calloc((size_t)cs->ncols + 1, sizeof *nm);
    sql_type *ty = calloc((size_t)cs->ncols + 1, sizeof *ty);
    if (!nm || !ty) {
        free(nm);
        free(ty);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    for (int c = 0; c < cs->ncols; c++) {
        nm[c] = cs->cols[c].name;
        ty[c] = cs->cols[c].type;
    }
    free(q->out_names);
    free(q->out_types);
    q->out_names = nm;
    q->out_types = ty;
    q->out_schema = (fmt_schema){cs->ncols, nm, ty};
    char mk[32];
    snprintf(mk, sizeof mk, "push/%u", q->id);
    uint64_t nid = e->next_query_id + 1;
    if ((rc = eng_txn(e, err)) || (rc = store_kv_put(e->txn, STORE_META, mk, "", 0, err)) ||
        (rc = eng_put_u64s(e->txn, "next_query_id", &nid, 1, err)))
        return rc;
    e->next_query_id++;
    return 0;
}

static int drop_leftover(void *ctx, const char *key, const void *v, size_t n)
{
    (void)v;
    (void)n;
    uint32_t *ids = ctx;
    if (ids[0] < 63) ids[++ids[0]] = (uint32_t)strtoul(key + strlen("push/"), NULL, 10);
    return 0;
}

/* At open, after the catalog's load: the state of push queries that a
 * crash or a close left. */
int eng_push_sweep(engine *e, xerr *err)
{
    for (;;) {
        uint32_t ids[64] = {0};
        int rc = store_kv_scan(e->txn, STORE_META, "push/", drop_leftover, ids, err);
        if (rc || !ids[0]) return rc;
        for (uint32_t i = 1; i <= ids[0]; i++) {
            char mk[32];
            snprintf(mk, sizeof mk, "push/%u", ids[i]);
            for (uint32_t t = 0; t < 4096 && !rc; t++) rc = store_state_drop_task(e->txn, STORE_STATE, ids[i] * 4096u + t, err);
            if (rc || (rc = store_kv_del(e->txn, STORE_META, mk, err))) return rc;
        }
    }
}

const char *engine_pull_source(const ast_select *sel)
{
    if (!sel || !sel->from || !sel->from->stream || sel->join || sel->emit == EMIT_CHANGES || sel->window.kind != WIN_NONE)
        return NULL;
    return sel->from->stream;
}

/* A bare SELECT of one table, without EMIT CHANGES: the table index, else -1. */
static int pull_table(const engine *e, const ast_select *sel)
{
    const char *from = engine_pull_source(sel);
    int si = from ? eng_stream_index(e, from) : -1;
    return si >= 0 && e->streams[si]->table ? si : -1;
}

/* A pull query: the table's rows now, then the end (table_pull.c). */
static int pull_query(engine *e, const ast_stmt *st, int si, const exec_out *out, xerr *err)
{
    query *q;
    /* an aggregate answers once, over every row (an unwindowed one would
     * default to EMIT CHANGES): the statement's SELECT, planned so */
    ast_select *sel = st->select;
    ast_emit was = sel->emit;
    if (was == EMIT_DEFAULT) sel->emit = EMIT_FINAL;
    e->pull_view = 1;
    int rc = eng_query_new(e, sel, NULL, NULL, st->text, 0, 0, &q, err), point;
    e->pull_view = 0;
    sel->emit = was;
    if (rc) return rc;
    q->transient = 1;
    if (out) q->out = *out;
    if (q->out.begin) q->out.begin(q->out.ctx, &q->out_schema, 0);
    q->began = 1;
    rc = eng_pull_run(e, q, si, st->select, &point, err);
    if (!rc && q->out.end) rc = q->out.end(q->out.ctx);
    query_free(q);
    return rc;
}

int eng_push_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    query *q;
    int si = pull_table(e, st->select);
    if (si >= 0) return pull_query(e, st, si, out, err);
    int key[TBL_MAX_KEY], nkey = updating_agg(st->select, key);
    /* an updating aggregate runs as CREATE TABLE AS's (table_agg.c), under
     * an id of its own (its state is in LMDB until it ends) */
    int rc = eng_query_new(e, st->select, NULL, NULL, st->text, nkey ? e->next_query_id : 0, nkey > 0, &q, err);
    if (rc) return rc;
    q->transient = 1;
    if (nkey && (rc = changes_open(e, q, key, nkey, err))) {
        err->line = st->line;
        err->col = st->col;
        query_free(q);
        return rc;
    }
    if (out) q->out = *out;
    if ((rc = eng_query_add(e, q, err))) { query_free(q); return rc; }
    if (q->out.begin) q->out.begin(q->out.ctx, &q->out_schema, 1);
    q->began = 1;
    int rewound, tables;
    if ((rc = rewind_bounded(e, q, e->offset_earliest, out, &rewound, err))) return rc;
    /* an aggregate over a table counts every row it holds: its log's start */
    if ((rc = eng_tables_from_start(e, q, nkey > 0, nkey ? "an aggregate over it" : "a join with it", st->line, st->col,
                                &tables, err)))
        return rc;
    rewound |= tables > 0;
    if (rewound && (rc = eng_catch_up(e, q, err))) return rc;
    for (int k = 0; k < q->nsrc && !rewound; k++)
        if ((rc = query_watermark(q, k, eng_stream_wm(e->streams[q->src_stream[k]]), err))) return rc;
    eng_finish_ended_push(e);
    return 0;
}

/* SUBSCRIBE t of a table: its changelog from now on, as SELECT * FROM t
 * EMIT CHANGES (a push query; SET offset = 'earliest' gives what its log
 * holds; without EMIT CHANGES it would be a pull query), at SUBSCRIBE's
 * position.  A cluster's coordinator runs the same statement. */
int engine_subscribe_stmt(const ast_stmt *st, ast_stmt **out, xerr *err)
{
    sbuf q;
    sbuf_init(&q);
    sbuf_adds(&q, "SELECT * FROM ");
    ast_print_ident(st->name, &q);
    sbuf_adds(&q, " EMIT CHANGES");
    *out = NULL;
    int rc = q.p ? parse_one(q.p, q.len, out, err) : xerr_set(err, XE_NOMEM, "out of memory");
    if (!rc) {
        (*out)->line = st->line;
        (*out)->col = st->col;
    }
    sbuf_fini(&q);
    return rc;
}

int eng_subscribe_table(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    ast_stmt *sel = NULL;
    int rc = engine_subscribe_stmt(st, &sel, err);
    if (!rc) rc = eng_push_query(e, sel, out, err);
    ast_stmt_free(sel);
    return rc;
}
