/*
 * engine.c: the engine object: open (with recovery) and close, and the
 * statements' dispatch (engine_exec) to the files that run them.
 *
 * Meta (LMDB `meta`):        epoch, next_query_id, catalog_entries,
 *                            stream/<name> -> stream progress (epoch.c, put_stream_meta)
 *                            query/<id>    -> offsets, counters, sink length
 *
 * Recovery: at open the catalog is replayed (catalog.c, eng_catalog_load):
 * streams are re-created with their progress (max event time, row count,
 * file position), standing queries are re-planned, their state loaded from
 * LMDB, and they catch up from their committed offsets to the end of their
 * streams' logs (epoch.c, eng_catch_up_committed: in steps, committing
 * epochs as they fall due, so that a long catch-up is bounded in memory
 * and one cut short resumes where its last epoch ended).
 *
 * The top of the engine's files: docs/architecture.md gives their layers,
 * each calling only those below it.  Everything runs on the caller's thread
 * (the shell's, or a node's event loop), except each file sink's writer
 * (sink.c) and the store's sync thread.
 */
#include "exec/internal.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const plan_stream *cat_find(void *ctx, const char *name)
{
    engine *e = ctx;
    int i = eng_stream_index(e, name);
    if (i >= 0 && e->pull_view && e->streams[i]->table) return e->streams[i]->table->rows_view;
    return i < 0 ? NULL : e->streams[i]->ps;
}

static void cat_each(void *ctx, void (*fn)(void *arg, const plan_stream *s), void *arg)
{
    engine *e = ctx;
    for (int i = 0; i < e->nstreams; i++) fn(arg, e->streams[i]->ps);
}

const char *engine_dir(const engine *e) { return e->dir; }

/* ------------------------------------------------------------------ statements */

int engine_exec(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    xerr_clear(err);
    switch (st->kind) {
    case ST_CREATE_STREAM:
    case ST_CREATE_TABLE: return eng_create_stream(e, st, out, err);
    case ST_CREATE_TABLE_AS: return eng_create_table_as(e, st, out, err);
    case ST_CREATE_QUERY: return eng_create_query(e, st, out, err);
    case ST_CREATE_STREAM_AS: return eng_create_stream_as(e, st, out, err);
    case ST_INSERT_SELECT: return eng_insert_select(e, st, out, err);
    case ST_SELECT: return eng_push_query(e, st, out, err);
    case ST_INSERT: return eng_insert_rows(e, st, out, err);
    case ST_DROP_STREAM: return eng_drop_stream(e, st, out, err);
    case ST_DROP_QUERY: return eng_drop_query(e, st, out, err);
    case ST_SHOW:
        if (st->show == SHOW_STREAMS) return eng_show_streams(e, out);
        if (st->show == SHOW_QUERIES) return eng_show_queries(e, out);
        if (st->show == SHOW_SETTINGS || st->show == SHOW_SETTING) return eng_show_settings(e, st, out, err);
        return eng_show_nodes(e, out);
    case ST_DESCRIBE: return eng_describe(e, st, out, err);
    case ST_EXPLAIN: return eng_explain(e, st, out, err);
    case ST_SET: return eng_set_stmt(e, st, out, err);
    case ST_ALTER_QUERY_REBALANCE:
        /* a cluster's coordinator answers it (cluster/coord.c); here every
         * task runs in this one process, so there is nowhere to move to */
        if (!eng_find_query(e, st->name)) return xerr_at(err, XE_NOTFOUND, st->line, st->col, "query '%s' does not exist", st->name);
        eng_notice(out, "ALTER QUERY: nothing to rebalance; an embedded engine runs every task of '%s' in this process "
               "(REBALANCE moves tasks between the nodes of a cluster)", st->name);
        return 0;
    case ST_SUBSCRIBE: {
        /* a table's changelog (its query, for CREATE TABLE AS, has its name) */
        int ti = eng_stream_index(e, st->name);
        if (ti >= 0 && e->streams[ti]->table) return eng_subscribe_table(e, st, out, err);
        query *q = eng_find_query(e, st->name);
        if (!q) return xerr_at(err, XE_NAME, st->line, st->col, "no query '%s'", st->name);
        struct lsub *v = realloc(e->lsubs, (size_t)(e->nlsubs + 1) * sizeof *v);
        if (!v) return xerr_set(err, XE_NOMEM, "out of memory");
        e->lsubs = v;
        e->lsubs[e->nlsubs].q = q;
        e->lsubs[e->nlsubs].out = out ? *out : (exec_out){0};
        e->nlsubs++;
        if (out && out->begin) out->begin(out->ctx, &q->out_schema, 1);
        return 0;
    }
    }
    return xerr_set(err, XE_PLAN, "unsupported statement");
}

int engine_exec_sql(engine *e, const char *sql, const exec_out *out, xerr *err)
{
    parse_result *r;
    int rc = parse_sql(sql, strlen(sql), &r);
    if (rc == XE_NOMEM) return xerr_set(err, rc, "out of memory");
    if (r->nerrors) {
        xerr_at(err, XE_SYNTAX, r->errors[0].line, r->errors[0].col, "%s", r->errors[0].msg);
        parse_result_free(r);
        return XE_SYNTAX;
    }
    rc = 0;
    for (int i = 0; i < r->nstmts && !rc; i++) rc = engine_exec(e, r->stmts[i], out, err);
    parse_result_free(r);
    return rc;
}

void engine_names(const engine *e, int kind, void (*fn)(void *ctx, const char *name), void *ctx)
{
    if (kind == 0)
        for (int i = 0; i < e->nstreams; i++) fn(ctx, e->streams[i]->ps->name);
    else if (kind == 1) {
        for (int i = 0; i < e->nqueries; i++)
            if (e->queries[i]->name) fn(ctx, e->queries[i]->name);
    } else
        for (int i = 0; i < e->nstreams; i++)
            for (int c = 0; c < e->streams[i]->ps->schema.ncols; c++) fn(ctx, e->streams[i]->ps->schema.cols[c].name);
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p);
}

int engine_open(const engine_opts *o, engine **out, xerr *err)
{
    *out = NULL;
    engine *e = calloc(1, sizeof *e);
    if (!e) return xerr_set(err, XE_NOMEM, "out of memory");
    e->parallelism = 1;
    snprintf(e->placement, sizeof e->placement, "nirvana");
    e->cat = (plan_catalog){e, cat_find, cat_each};
    sbuf_init(&e->tmp);
    int rc;
    if (o->memory) {
        char tmpl[] = "/tmp/ares-mem.XXXXXX";
        if (!mkdtemp(tmpl)) { free(e); return xerr_set(err, XE_IO, "cannot create a temporary directory: %s", strerror(errno)); }
        e->dir = strdup(tmpl);
        e->memory = 1;
    } else
        e->dir = strdup(o->data_dir ? o->data_dir : "ares-data");
    sbuf_init(&e->tmp2);
    if (!e->dir || batch_init(&e->scratch, 1, 4) || batch_init(&e->rbatch, 1, 4)) { free(e->dir); free(e); return xerr_set(err, XE_NOMEM, "out of memory"); }
    e->log = o->log;
    e->log_ctx = o->log_ctx;
    e->general_agg = o->general_agg;
    store_opts so = {0};
    so.map_size = o->map_size;
    so.warn = o->log;
    so.warn_ctx = o->log_ctx;
    if ((rc = store_open(e->dir, &so, &e->st, err))) goto fail;
    e->io_rows_cb = io_stream_rows; /* a socket source's rows and tick (ingest.c) */
    e->io_tick_cb = io_tick;
    e->derived_rows_cb = eng_derived_rows; /* stream.c */
    e->derived_wm_cb = eng_derived_wm;
    if ((rc = io_start(e, err))) goto fail;
    if ((rc = store_begin(e->st, 1, &e->txn, err))) goto fail;
    {
        sbuf tmp;
        sbuf_init(&tmp);
        uint64_t v;
        if (eng_get_u64s(e->txn, "epoch", &v, 1, &tmp, err) == 0) e->epoch = v;
        if (eng_get_u64s(e->txn, "next_query_id", &v, 1, &tmp, err) == 0) e->next_query_id = (uint32_t)v;
        sbuf_fini(&tmp);
        xerr_clear(err);
    }
    if (e->next_query_id == 0) e->next_query_id = 1;
    {
        /* a catalog that lost entries since the last commit is damaged */
        uint64_t want, have;
        sbuf tmp;
        sbuf_init(&tmp);
        int r2 = eng_get_u64s(e->txn, "catalog_entries", &want, 1, &tmp, err);
        sbuf_fini(&tmp);
        if (r2 == 0 && (rc = eng_catalog_count(e->txn, &have, err)) == 0 && have != want) {
            rc = xerr_set(err, XE_CORRUPT, "storage %s is damaged: its catalog holds %llu entries, %llu were committed",
                          e->dir, (unsigned long long)have, (unsigned long long)want);
            goto fail;
        }
        if (rc) goto fail;
        xerr_clear(err);
    }
    if ((rc = eng_catalog_load(e, err)) || (rc = eng_push_sweep(e, err))) goto fail;
    /* a query that writes a stream (CREATE STREAM AS) may catch up before
     * the queries reading that stream: held, they read what it appends
     * from their own offsets when their turn comes */
    for (int i = 0; i < e->nqueries; i++) e->queries[i]->hold = 1;
    for (int i = 0; i < e->nqueries; i++) {
        e->queries[i]->hold = 0;
        if ((rc = eng_catch_up_committed(e, e->queries[i], err))) goto fail;
    }
    if ((rc = engine_commit(e, err))) goto fail;
    for (int i = 0; i < e->nstreams; i++) {
        stream_rt *s = e->streams[i];
        if (s->source && (!strncmp(s->source, "tcp://", 6) || !strncmp(s->source, "unix://", 7))) {
            xerr e2;
            if (io_source_start(e, s->ps->name, s->source, &e2)) {
                if (e->log) e->log(e->log_ctx, e2.msg);
                else fprintf(stderr, "ares: %s\n", e2.msg);
            }
        }
    }
    *out = e;
    return 0;
fail:
    engine_close(e);
    return rc;
}

void engine_close(engine *e)
{
    if (!e) return;
    xerr err;
    /* a host's replication hook may open the next epoch: commit that too */
    for (int i = 0; e->txn && i < 4; i++)
        if (engine_commit(e, &err)) fprintf(stderr, "ares: committing the last epoch failed: %s\n", err.msg);
    engine_cancel_push(e);
    for (int i = 0; i < e->nqueries; i++) eng_detach_query_io(e, e->queries[i]);
    io_stop(e);
    /* stopping the sources may have handed over their last rows, and ending
     * the push queries may have written: that epoch too (t_sockets once
     * tripped store_close's assertion on an open transaction here) */
    for (int i = 0; e->txn && i < 4; i++)
        if (engine_commit(e, &err)) fprintf(stderr, "ares: committing the last epoch failed: %s\n", err.msg);
    if (e->txn) {
        store_abort(e->txn);
        e->txn = NULL;
    }
    free(e->lsubs);
    for (int i = 0; i < e->nqueries; i++) query_free(e->queries[i]);
    free(e->queries);
    for (int i = 0; i < e->nstreams; i++) eng_stream_free(e->streams[i]);
    free(e->streams);
    store_close(e->st);
    if (e->memory && e->dir) nftw(e->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
    free(e->dir);
    batch_fini(&e->scratch);
    batch_fini(&e->rbatch);
    sbuf_fini(&e->tmp);
    sbuf_fini(&e->tmp2);
    eng_meas_fini(e);
    free(e);
}
