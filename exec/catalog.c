/*
 * catalog.c: the statements that change the catalog, and the catalog's
 * load at open.
 *
 * Catalog (LMDB `catalog`):  stream/<name> -> CREATE STREAM text
 *                            query/<name>  -> "<id> <CREATE QUERY text>"
 *                            setting/<key> -> value
 *                            host/<key>    -> a host's own records (deploy.c)
 * CREATE and DROP of streams, tables and standing queries, the derived
 * streams and tables that queries write (CREATE STREAM AS, INSERT INTO
 * SELECT with its cycle check, CREATE TABLE AS).  Each change commits at
 * once (engine_commit).  At open the catalog is replayed
 * (eng_catalog_load): streams are re-created with their progress,
 * standing queries re-planned and their state loaded.  A query's start
 * is start.c's; push queries are push.c's, a cluster's deployed queries
 * deploy.c's.  Runs on the engine's thread.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* home: a cluster's choice of the node that keeps the log (cluster/coord.c);
 * an embedded engine is its own home and ignores it; partitions: see
 * eng_streams_add (stream.c) */
static const char *known_stream_options[] = {"timestamp", "watermark", "source", "format", "retention",
                                             "delimiter", "null_string", "home", "partitions", "derived", NULL};
static const char *known_table_options[] = {"timestamp", "watermark", "source", "format", "retention",
                                            "delimiter", "null_string", "op_column", "home", NULL};


/* delimiter and null_string: their values, and that they fit the format. */
static int check_input_options(const ast_options *w, fmt_kind k, xerr *err)
{
    const ast_option *d = ast_option_get(w, "delimiter"), *n = ast_option_get(w, "null_string");
    char why[200], delim = 0;
    if (d && fmt_parse_delim(d->value, &delim, why, sizeof why)) return xerr_at(err, XE_INVAL, d->line, d->col, "%s", why);
    if (fmt_check_input_opts(k, d || n, delim, n ? n->value : NULL, why, sizeof why)) {
        const ast_option *at = k != FMT_CSV ? (d ? d : n) : n;
        return xerr_at(err, XE_INVAL, at->line, at->col, "%s", why);
    }
    return 0;
}

/* The stream st creates exists: 1 with IF NOT EXISTS (skipped, said so),
 * else an error; 0 when it does not. */
static int stream_taken(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    if (eng_stream_index(e, st->name) < 0) return 0;
    if (st->if_not_exists) {
        eng_notice(out, "stream '%s' already exists, skipping", st->name);
        return 1;
    }
    return xerr_at(err, XE_EXISTS, st->line, st->col, "stream '%s' already exists", st->name);
}

/* The table's id is id (CREATE TABLE AS: its query's), in the open epoch. */
static int table_id_put(engine *e, stream_rt *s, uint32_t id, xerr *err)
{
    uint64_t v = id;
    char key[300];
    snprintf(key, sizeof key, "table/%s", s->ps->name);
    int rc = eng_put_u64s(e->txn, key, &v, 1, err);
    if (!rc) s->table->tid = eng_table_tid(id);
    return rc;
}

/* A source table takes the next query id. */
static int table_id_new(engine *e, stream_rt *s, xerr *err)
{
    uint64_t nid = e->next_query_id + 1;
    int rc = table_id_put(e, s, e->next_query_id, err);
    if (!rc) rc = eng_put_u64s(e->txn, "next_query_id", &nid, 1, err);
    if (!rc) e->next_query_id++;
    return rc;
}

/* At open: the table's id, and how many rows it holds. */
static int table_id_load(engine *e, stream_rt *s, xerr *err)
{
    char key[300];
    snprintf(key, sizeof key, "table/%s", s->ps->name);
    uint64_t id;
    sbuf tmp;
    sbuf_init(&tmp);
    int rc = eng_get_u64s(e->txn, key, &id, 1, &tmp, err);
    sbuf_fini(&tmp);
    if (rc == XE_NOTFOUND) return xerr_set(err, XE_CORRUPT, "table '%s' has no id in the meta records", s->ps->name);
    if (rc) return rc;
    if (id >= e->next_query_id) e->next_query_id = (uint32_t)id + 1;
    s->table->tid = eng_table_tid((uint32_t)id);
    return tbl_load(s->table, e->txn, err);
}

int eng_create_stream(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int rc;
    if ((rc = stream_taken(e, st, out, err))) return rc > 0 ? 0 : rc;
    int table = st->kind == ST_CREATE_TABLE;
    if ((rc = eng_check_options(st->with, table ? known_table_options : known_stream_options, table ? "table" : "stream",
                            err)))
        return rc;
    const ast_option *o = ast_option_get(st->with, "source");
    int live = 0;
    if (o) {
        if (!strncmp(o->value, "tcp://", 6) || !strncmp(o->value, "unix://", 7)) live = 1;
        else if (strncmp(o->value, "file://", 7))
            return xerr_at(err, XE_INVAL, o->line, o->col, "source '%s' must be tcp://HOST:PORT, unix:///path or file:///path",
                           o->value);
    }
    o = ast_option_get(st->with, "format");
    fmt_kind k = FMT_CSV;
    if (o && (fmt_kind_parse(o->value, &k) || (k != FMT_CSV && k != FMT_JSON)))
        return xerr_at(err, XE_INVAL, o->line, o->col, "format '%s' is not an input format (csv or json)", o->value);
    if ((rc = check_input_options(st->with, k, err))) return rc;
    const ast_option *po = ast_option_get(st->with, "partitions"), *dv = ast_option_get(st->with, "derived");
    if (dv && (strcasecmp(dv->value, "true") || ast_option_get(st->with, "source") || (po && strcmp(po->value, "1"))))
        return xerr_at(err, XE_INVAL, dv->line, dv->col,
                       "derived = 'true' marks a cluster's derived stream (one partition, no source; its coordinator "
                       "writes it): write CREATE STREAM ... AS SELECT");
    if (po && strcmp(po->value, "1") && ast_option_get(st->with, "source"))
        return xerr_at(err, XE_INVAL, po->line, po->col,
                       "a stream read from a source has one partition (its home reads the source)");
    int first = e->nstreams;
    if ((rc = eng_streams_add(e, st, st->text ? st->text : "", err))) return rc;
    stream_rt *s = e->streams[first];
    if (live && (rc = io_source_start(e, s->ps->name, s->source, err))) {
        const ast_option *so = ast_option_get(st->with, "source");
        err->line = so->line;
        err->col = so->col;
        e->nstreams--;
        eng_stream_free(s);
        return rc;
    }
    char key[300];
    snprintf(key, sizeof key, "stream/%s", st->name);
    rc = eng_txn(e, err);
    for (int i = first; !rc && i < e->nstreams; i++) rc = store_log_create(e->txn, e->streams[i]->ps->name, err);
    if (!rc && table) rc = table_id_new(e, s, err);
    if (rc || (rc = store_kv_put(e->txn, STORE_CATALOG, key, s->sql, strlen(s->sql), err)) ||
        (rc = engine_commit(e, err))) {
        if (live) io_source_stop(e, s->ps->name);
        while (e->nstreams > first) eng_stream_free(e->streams[--e->nstreams]);
        return rc;
    }
    if (table) {
        if (live) eng_notice(out, "CREATE TABLE (listening on %s)", s->source);
        else eng_notice(out, "CREATE TABLE");
    } else if (live) eng_notice(out, "CREATE STREAM (listening on %s)", s->source);
    else if (e->nstreams - first > 1) eng_notice(out, "CREATE STREAM (%d partitions)", e->nstreams - first);
    else eng_notice(out, "CREATE STREAM");
    return 0;
}

/* ------------------------------------------------------------------ queries */

/* WITH (offset = ...) of a query, else SET offset: *earliest. */
static int offset_opt(const engine *e, const ast_options *w, int *earliest, xerr *err)
{
    const ast_option *o = ast_option_get(w, "offset");
    *earliest = e->offset_earliest;
    if (o && eng_offset_parse(o->value, earliest))
        return xerr_at(err, XE_INVAL, o->line, o->col, "offset must be 'earliest' or 'latest', not '%s'", o->value);
    return 0;
}

/* The options every standing query takes (ft, checkpoint_interval, the
 * sink's format, offset), checked; then the commit of what came before. */
static int standing_check(engine *e, const ast_stmt *st, xerr *err)
{
    const ast_option *fto = ast_option_get(st->with, "ft"), *cio = ast_option_get(st->with, "checkpoint_interval");
    engine_ft ft;
    int64_t ms;
    xerr e2;
    if (fto && engine_ft_parse(fto->value, &ft))
        return xerr_at(err, XE_INVAL, fto->line, fto->col,
                       "ft must be 'replica', 'checkpoint', 'upstream' or 'none', not '%s'", fto->value);
    if (cio && (plan_parse_interval(cio->value, &ms, &e2) || ms <= 0))
        return xerr_at(err, XE_INVAL, cio->line, cio->col,
                       "checkpoint_interval must be a positive interval such as '5 seconds', not '%s'", cio->value);
    const ast_option *fo = ast_option_get(st->with, "format");
    fmt_kind fk;
    if (fo && ast_option_get(st->with, "sink") && (fmt_kind_parse(fo->value, &fk) || (fk != FMT_CSV && fk != FMT_JSON)))
        return xerr_at(err, XE_INVAL, fo->line, fo->col, "unknown sink format '%s' (csv or json)", fo->value);
    int earliest, rc = offset_opt(e, st->with, &earliest, err);
    return rc ? rc : engine_commit(e, err);
}

/* Plan st's SELECT as the standing query qname, with its file or socket
 * sink, at the end of its streams' logs or, offset = 'earliest', at their
 * start (notices to `no`). */
static int standing_new(engine *e, const ast_stmt *st, const char *qname, const exec_out *no, query **out, xerr *err)
{
    int rc, earliest;
    query *q;
    *out = NULL;
    if ((rc = eng_query_new(e, st->select, st->with, qname, st->text ? st->text : "", e->next_query_id,
                         st->kind == ST_CREATE_TABLE_AS, &q, err)))
        return rc;
    const ast_option *so = ast_option_get(st->with, "sink"), *fo = ast_option_get(st->with, "format");
    if (so && (rc = eng_sink_open(q, so->value, fo ? fo->value : NULL, 0, err))) {
        err->line = so->line;
        err->col = so->col;
        query_free(q);
        return rc;
    }
    offset_opt(e, st->with, &earliest, err); /* standing_check took it */
    for (int k = 0; earliest && k < q->nsrc; k++)
        if ((rc = eng_rewind_source(e, q, k, no, err))) {
            query_free(q);
            return rc;
        }
    if ((rc = eng_tables_from_start(e, q, 0, "a join with it", st->line, st->col, NULL, err))) {
        query_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

/* Record q in the catalog (with `made`, the derived stream it makes, the
 * last of e->streams) and start it; on failure both are gone. */
static int standing_commit(engine *e, query *q, stream_rt *made, xerr *err)
{
    char key[300];
    snprintf(key, sizeof key, "query/%s", q->name);
    sbuf v;
    sbuf_init(&v);
    sbuf_printf(&v, "%u %s", q->id, q->sql);
    uint64_t nid = e->next_query_id + 1;
    int rc = eng_query_add(e, q, err);
    if (rc) {
        query_free(q);
        goto undo_stream;
    }
    if ((rc = eng_txn(e, err))) goto fail;
    if (made) {
        char sk[300];
        snprintf(sk, sizeof sk, "stream/%s", made->ps->name);
        if ((rc = store_log_create(e->txn, made->ps->name, err)) ||
            (rc = store_kv_put(e->txn, STORE_CATALOG, sk, made->sql, strlen(made->sql), err)) ||
            (made->table && (rc = table_id_put(e, made, q->id, err))))
            goto fail;
    }
    if ((rc = store_kv_put(e->txn, STORE_CATALOG, key, v.p, v.len, err)) ||
        (rc = eng_put_u64s(e->txn, "next_query_id", &nid, 1, err)) || (rc = engine_commit(e, err)))
        goto fail;
    sbuf_fini(&v);
    e->next_query_id++;
    /* the commit above recorded its offsets: a catch-up from the logs'
     * start (offset = 'earliest') commits as it goes and, cut short,
     * resumes at the next open; then a query over a stream that has
     * already ended sees the end at once */
    if ((rc = eng_catch_up_committed(e, q, err))) return rc;
    eng_finish_ended_push(e);
    return 0;
fail:
    e->nqueries--;
    query_free(q);
undo_stream:
    sbuf_fini(&v);
    if (made) eng_stream_free(e->streams[--e->nstreams]);
    return rc;
}

int eng_create_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int rc;
    if (eng_find_query(e, st->name)) {
        if (st->if_not_exists) {
            eng_notice(out, "query '%s' already exists, skipping", st->name);
            return 0;
        }
        return xerr_at(err, XE_EXISTS, st->line, st->col, "query '%s' already exists", st->name);
    }
    query *q;
    if ((rc = eng_check_query_options(st->with, err)) || (rc = standing_check(e, st, err)) ||
        (rc = standing_new(e, st, st->name, out, &q, err)) || (rc = standing_commit(e, q, NULL, err)))
        return rc;
    eng_notice(out, "CREATE QUERY");
    return 0;
}

/* ------------------------------------------------------------------ derived streams */

/* The position of output column c of sel, for an error about it: its
 * item's expression when the items map one to one, else the SELECT's. */
static void item_pos(const ast_stmt *st, int c, int *line, int *col)
{
    const ast_items *it = st->select->items;
    *line = st->line;
    *col = st->col;
    for (int i = 0; it && i < it->n; i++)
        if (it->v[i].star) return;
    if (it && c < it->n && it->v[c].expr) {
        *line = it->v[c].expr->line;
        *col = it->v[c].expr->col;
    }
}

/* s quoted as an SQL string literal. */
static void add_quoted(sbuf *b, const char *s)
{
    sbuf_addc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'') sbuf_addc(b, '\'');
        sbuf_addc(b, *s);
    }
    sbuf_addc(b, '\'');
}

/* The stream a CREATE STREAM AS makes, as the CREATE STREAM with columns
 * its catalog entry holds (so that it loads before any query, whatever
 * the order of the chain): the SELECT's columns, its event time (WITH
 * timestamp, else the plan's), no watermark delay (its writers' watermark
 * is its own). */
/* "CREATE <what> name (" into b, once every column of the SELECT has a type. */
static int implied_head(const ast_stmt *st, const plan_schema *os, const char *what, sbuf *b, xerr *err)
{
    int line, col;
    for (int c = 0; c < os->ncols; c++)
        if (os->cols[c].type == TY_NULL) {
            item_pos(st, c, &line, &col);
            return xerr_at(err, XE_TYPE, line, col, "column '%s' has no type (a NULL literal): CAST it", os->cols[c].name);
        }
    sbuf_reset(b);
    sbuf_printf(b, "CREATE %s ", what);
    ast_print_ident(st->name, b);
    sbuf_adds(b, " (");
    return 0;
}

static int derived_stream_sql(const ast_stmt *st, const plan_dag *d, sbuf *b, xerr *err)
{
    const plan_schema *os = &d->ops[d->sink].out;
    const ast_option *to = ast_option_get(st->with, "timestamp"), *ro = ast_option_get(st->with, "retention");
    /* the planner's event time, which the query's watermarks bound: the
     * input's time column, or window_end (else window_start) of an aggregate */
    int ts = d->ops[d->ops[d->sink].inputs[0]].ts_col, rc;
    if (to) {
        ts = -1;
        for (int c = 0; c < os->ncols; c++)
            if (!strcasecmp(os->cols[c].name, to->value)) ts = c;
        if (ts < 0) return xerr_at(err, XE_NAME, to->line, to->col, "timestamp '%s' is not a column of the SELECT", to->value);
        if (os->cols[ts].type != TY_TIMESTAMP)
            return xerr_at(err, XE_TYPE, to->line, to->col, "timestamp '%s' is %s, not TIMESTAMP", to->value,
                           sql_type_name(os->cols[ts].type));
    }
    if (ts < 0)
        return xerr_at(err, XE_PLAN, st->line, st->col,
                       "stream '%s' needs an event time column: select window_end (a windowed aggregate) or the input's "
                       "event time, or name a TIMESTAMP column with WITH (timestamp = 'col')", st->name);
    if ((rc = implied_head(st, os, "STREAM", b, err))) return rc;
    for (int c = 0; c < os->ncols; c++) {
        if (c) sbuf_adds(b, ", ");
        ast_print_ident(os->cols[c].name, b);
        sbuf_printf(b, " %s", sql_type_name(os->cols[c].type));
    }
    sbuf_adds(b, ") WITH (timestamp = ");
    add_quoted(b, os->cols[ts].name);
    if (ro) {
        sbuf_adds(b, ", retention = ");
        add_quoted(b, ro->value);
    }
    return sbuf_addc(b, ')') ? xerr_set(err, XE_NOMEM, "out of memory") : 0;
}

static int table_as_sql(const ast_stmt *st, const query *q, sbuf *b, xerr *err);

/* The stream (table = 0: CREATE STREAM AS) or table (CREATE TABLE AS)
 * that q writes, made from the statement its SELECT implies, then q
 * recorded and started (standing_commit); on failure both are gone. */
static int standing_make(engine *e, const ast_stmt *st, query *q, int table, xerr *err)
{
    sbuf text;
    sbuf_init(&text);
    ast_stmt *cs = NULL;
    int rc = table ? table_as_sql(st, q, &text, err) : derived_stream_sql(st, q->dag, &text, err);
    if (rc || (rc = parse_one(text.p, text.len, &cs, err)) || (rc = eng_streams_add(e, cs, text.p, err))) {
        ast_stmt_free(cs);
        sbuf_fini(&text);
        query_free(q);
        return rc;
    }
    ast_stmt_free(cs);
    sbuf_fini(&text);
    stream_rt *s = e->streams[e->nstreams - 1];
    if (table) s->table->from_query = 1;
    else s->derived = 1;
    q->target = e->nstreams - 1;
    return standing_commit(e, q, s, err);
}

int eng_create_stream_as(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    static const char *known[] = {"timestamp", "retention", "parallelism", "sink", "format", "offset", "changelog", NULL};
    int rc;
    if ((rc = stream_taken(e, st, out, err))) return rc > 0 ? 0 : rc;
    if (eng_find_query(e, st->name))
        return xerr_at(err, XE_EXISTS, st->line, st->col,
                       "a query is called '%s' (the query of a derived stream takes the stream's name)", st->name);
    query *q;
    if ((rc = eng_check_options(st->with, known, "derived stream", err)) || (rc = standing_check(e, st, err)) ||
        (rc = standing_new(e, st, st->name, out, &q, err)))
        return rc;
    if ((rc = standing_make(e, st, q, 0, err))) return rc;
    eng_notice(out, "CREATE STREAM");
    return 0;
}

/* Would a query reading `from` and writing stream `to` close a cycle?
 * Through the queries that write streams: to -> a reader's target -> ...
 * The queries of the chain go into chain[0 .. *n). */
static int feeds(const engine *e, int to, int from, int *chain, int *n)
{
    if (to == from) return 1;
    if (*n >= e->nqueries) return 0;
    for (int i = 0; i < e->nqueries; i++) {
        const query *w = e->queries[i];
        if (w->transient || w->target < 0) continue;
        for (int k = 0; k < w->nsrc; k++)
            if (w->src_stream[k] == to) {
                chain[(*n)++] = i;
                if (feeds(e, w->target, from, chain, n)) return 1;
                (*n)--;
                break;
            }
    }
    return 0;
}

/* INSERT INTO stream si SELECT ...: the SELECT's columns (plan d) must be
 * the stream's, in number and type. */
static int insert_fits(const engine *e, const ast_stmt *st, int si, const plan_dag *d, xerr *err)
{
    const plan_schema *os = &d->ops[d->sink].out, *ts = &eng_stream_input(e->streams[si])->schema;
    int line, col;
    int rc = 0;
    if (os->ncols != ts->ncols)
        rc = xerr_at(err, XE_TYPE, st->line, st->col,
                     "%s '%s' has %d columns, the SELECT gives %d%s%s%s", e->streams[si]->table ? "table" : "stream",
                     st->name, ts->ncols, os->ncols,
                     os->ncols < ts->ncols ? " (the first missing: '" : "",
                     os->ncols < ts->ncols ? ts->cols[os->ncols].name : "", os->ncols < ts->ncols ? "')" : "");
    for (int c = 0; !rc && c < os->ncols; c++)
        if (os->cols[c].type != ts->cols[c].type && os->cols[c].type != TY_NULL) {
            item_pos(st, c, &line, &col);
            rc = xerr_at(err, XE_TYPE, line, col, "column %d of the SELECT, '%s', is %s; column '%s' of %s '%s' is %s (CAST it)",
                         c + 1, os->cols[c].name, sql_type_name(os->cols[c].type), ts->cols[c].name,
                         e->streams[si]->table ? "table" : "stream", st->name,
                         sql_type_name(ts->cols[c].type));
        }
    return rc;
}

int eng_insert_select(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int si = eng_stream_index(e, st->name), rc;
    if (si < 0) return xerr_at(err, XE_NOTFOUND, st->line, st->col, "stream '%s' does not exist", st->name);
    if (e->streams[si]->ps->partitions > 1 || strchr(st->name, '#'))
        return xerr_at(err, XE_PLAN, st->line, st->col, "INSERT INTO ... SELECT into a partitioned stream is not supported yet");
    char qname[300];
    snprintf(qname, sizeof qname, "%s_insert_%u", st->name, e->next_query_id);
    query *q;
    if ((rc = standing_check(e, st, err)) || (rc = standing_new(e, st, qname, out, &q, err))) return rc;
    rc = insert_fits(e, st, si, q->dag, err);
    int *chain = calloc((size_t)e->nqueries + 1, sizeof *chain), n = 0;
    if (!rc && !chain) rc = xerr_set(err, XE_NOMEM, "out of memory");
    for (int k = 0; !rc && k < q->nsrc; k++)
        if (feeds(e, si, q->src_stream[k], chain, &n)) {
            sbuf path;
            sbuf_init(&path);
            sbuf_adds(&path, st->name);
            for (int i = 0; i < n; i++)
                sbuf_printf(&path, " -> query '%s' -> %s", e->queries[chain[i]]->name,
                            e->streams[e->queries[chain[i]]->target]->ps->name);
            rc = xerr_at(err, XE_PLAN, st->line, st->col,
                         "a cycle of derived streams: this query reads %s and would write %s (%s); a query's output "
                         "cannot feed its own input", e->streams[q->src_stream[k]]->ps->name, st->name,
                         path.p ? path.p : "");
            sbuf_fini(&path);
        }
    free(chain);
    if (rc) {
        query_free(q);
        return rc;
    }
    q->target = si;
    if ((rc = standing_commit(e, q, NULL, err))) return rc;
    eng_notice(out, "INSERT INTO (query '%s')", qname);
    return 0;
}

int engine_writer_check(engine *e, const ast_stmt *st, sbuf *target, xerr *err)
{
    static const char *csa[] = {"timestamp", "retention", "parallelism", "placement", "ft", "replicas",
                                "checkpoint_interval", NULL};
    int made = st->kind == ST_CREATE_STREAM_AS, si = -1, rc;
    if (!made && st->kind != ST_INSERT_SELECT) return xerr_set(err, XE_PLAN, "not CREATE STREAM AS or INSERT INTO ... SELECT");
    if ((rc = eng_check_options(st->with, made ? csa : csa + 2, made ? "derived stream" : "INSERT INTO ... SELECT", err)))
        return rc;
    if (made && eng_stream_index(e, st->name) >= 0)
        return xerr_at(err, XE_EXISTS, st->line, st->col, "stream '%s' already exists", st->name);
    if (!made) {
        if ((si = eng_stream_index(e, st->name)) < 0)
            return xerr_at(err, XE_NOTFOUND, st->line, st->col, "stream '%s' does not exist", st->name);
        if (e->streams[si]->ps->partitions > 1 || strchr(st->name, '#'))
            return xerr_at(err, XE_PLAN, st->line, st->col, "INSERT INTO ... SELECT into a partitioned stream is not supported yet");
    }
    plan_opts po = {e->parallelism};
    plan_dag *d = NULL;
    if ((rc = eng_option_int(st->with, "parallelism", e->parallelism, 1, 64, &po.parallelism, err)) ||
        (rc = plan_query(st->select, &e->cat, &po, &d, err)))
        return rc;
    if (made && !(rc = derived_stream_sql(st, d, target, err))) {
        target->len--; /* its ')' */
        if (sbuf_adds(target, ", derived = 'true')")) rc = xerr_set(err, XE_NOMEM, "out of memory");
    } else if (!made)
        rc = insert_fits(e, st, si, d, err);
    plan_free(d);
    return rc;
}

/* ------------------------------------------------------------------ drops */

/* Drop standing query q: its state, its catalog and meta records. */
static int forget_query(engine *e, query *q, xerr *err)
{
    char key[300];
    snprintf(key, sizeof key, "query/%s", q->name);
    char mkey[64];
    snprintf(mkey, sizeof mkey, "query/%u", q->id);
    int rc;
    if ((rc = eng_txn(e, err)) || (rc = query_drop_state(q, e->txn, err)) ||
        (rc = store_kv_del(e->txn, STORE_CATALOG, key, err)) || (rc = store_kv_del(e->txn, STORE_META, mkey, err)))
        return rc;
    eng_query_remove(e, q);
    return 0;
}

int eng_drop_query(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    query *q = eng_find_query(e, st->name);
    int rc;
    if (!q) {
        if (st->if_exists) {
            eng_notice(out, "query '%s' does not exist, skipping", st->name);
            return 0;
        }
        return xerr_at(err, XE_NOTFOUND, st->line, st->col, "query '%s' does not exist", st->name);
    }
    if (q->target >= 0 && eng_stream_made_by_query(e->streams[q->target]) && !strcmp(e->streams[q->target]->ps->name, q->name))
        return xerr_at(err, XE_PLAN, st->line, st->col, "query '%s' makes %s '%s'; DROP %s %s drops both", q->name,
                       e->streams[q->target]->table ? "table" : "derived stream", q->name,
                       e->streams[q->target]->table ? "TABLE" : "STREAM", q->name);
    if ((rc = forget_query(e, q, err)) || (rc = engine_commit(e, err))) return rc;
    eng_notice(out, "DROP QUERY");
    return 0;
}

/* Forget stream si: its log, its records, its place in the queries' slots. */
static int drop_one(engine *e, int si, xerr *err)
{
    const char *name = e->streams[si]->ps->name;
    char key[300];
    snprintf(key, sizeof key, "stream/%s", name);
    int rc;
    if ((rc = eng_txn(e, err)) || (rc = store_log_drop(e->txn, name, err)) ||
        (rc = store_kv_del(e->txn, STORE_CATALOG, key, err)) || (rc = store_kv_del(e->txn, STORE_META, key, err)))
        return rc;
    if (e->streams[si]->table) {
        snprintf(key, sizeof key, "table/%s", name);
        if ((rc = store_state_drop_task(e->txn, STORE_STATE, e->streams[si]->table->tid, err)) ||
            (rc = store_kv_del(e->txn, STORE_META, key, err)))
            return rc;
    }
    io_source_stop(e, name);
    eng_stream_free(e->streams[si]);
    memmove(&e->streams[si], &e->streams[si + 1], (size_t)(e->nstreams - si - 1) * sizeof *e->streams);
    e->nstreams--;
    for (int i = 0; i < e->nqueries; i++)
        for (int k = 0; k < e->queries[i]->nsrc; k++)
            if (e->queries[i]->src_stream[k] > si) e->queries[i]->src_stream[k]--;
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i]->target > si) e->queries[i]->target--;
    return 0;
}

int eng_drop_stream(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    int si = eng_stream_index(e, st->name), rc;
    if (si < 0) {
        if (st->if_exists) {
            eng_notice(out, "stream '%s' does not exist, skipping", st->name);
            return 0;
        }
        return xerr_at(err, XE_NOTFOUND, st->line, st->col, "stream '%s' does not exist", st->name);
    }
    const char *hash = strchr(st->name, '#');
    if (hash)
        return xerr_at(err, XE_PLAN, st->line, st->col, "'%s' is a partition of stream '%.*s'; drop that stream",
                       st->name, (int)(hash - st->name), st->name);
    int ix[PLAN_MAX_PARTITIONS], np = eng_stream_parts(e, si, ix);
    for (int i = 0; i < e->nqueries; i++)
        for (int k = 0; k < e->queries[i]->nsrc; k++)
            for (int p = 0; p < np; p++)
                if (e->queries[i]->src_stream[k] == ix[p]) {
                    if (e->queries[i]->transient) { e->queries[i]->finished = 1; continue; }
                    return xerr_at(err, XE_PLAN, st->line, st->col, "query '%s' reads stream '%s'; drop the query first",
                                   e->queries[i]->name, st->name);
                }
    /* its own query (CREATE STREAM AS) goes with it; another writer stays */
    query *own = NULL;
    for (int i = 0; i < e->nqueries; i++) {
        query *w = e->queries[i];
        if (w->target != si) continue;
        if (eng_stream_made_by_query(e->streams[si]) && !strcmp(w->name, st->name)) own = w;
        else
            return xerr_at(err, XE_PLAN, st->line, st->col, "query '%s' writes stream '%s' (INSERT INTO); drop the query first",
                           w->name, st->name);
    }
    if (own && (rc = forget_query(e, own, err))) return rc;
    eng_finish_ended_push(e);
    /* the partitions by name: each drop moves the indexes after it */
    char names[PLAN_MAX_PARTITIONS][300];
    for (int p = 0; p < np; p++) snprintf(names[p], sizeof names[p], "%s", e->streams[ix[p]]->ps->name);
    for (int p = np - 1; p >= 0; p--)
        if ((rc = drop_one(e, eng_stream_index(e, names[p]), err))) return rc;
    int table = e->streams[si]->table != NULL;
    if ((rc = engine_commit(e, err))) return rc;
    eng_notice(out, table ? "DROP TABLE" : "DROP STREAM");
    return 0;
}

/* ------------------------------------------------------------------ the catalog's load at open */

typedef struct load_ctx {
    engine *e;
    int kind; /* 0 streams, 1 queries, 2 settings */
    xerr *err;
    int rc;
} load_ctx;

static int parse_stored(const char *sql, size_t n, ast_stmt **st, xerr *err)
{
    int rc = parse_one(sql, n, st, err);
    if (rc) return xerr_set(err, XE_CORRUPT, "the catalog holds a statement that no longer parses: %.200s", sql);
    return 0;
}

static int load_catalog_entry(void *ctx, const char *key, const void *v, size_t n)
{
    load_ctx *c = ctx;
    engine *e = c->e;
    sbuf text;
    sbuf_init(&text);
    sbuf_add(&text, v, n);
    ast_stmt *st = NULL;
    const char *sql = text.p ? text.p : "";
    if (c->kind == 0) {
        if ((c->rc = parse_stored(sql, n, &st, c->err))) goto out;
        int first = e->nstreams;
        if ((c->rc = eng_streams_add(e, st, sql, c->err))) goto out;
        for (int i = first; i < e->nstreams && !c->rc; i++) {
            stream_rt *s = e->streams[i];
            uint64_t m[5];
            char mk[300];
            snprintf(mk, sizeof mk, "stream/%s", s->ps->name);
            sbuf tmp;
            sbuf_init(&tmp);
            int rc = eng_get_u64s(e->txn, mk, m, 5, &tmp, c->err);
            if (rc == 0 && tmp.len >= 48) s->wm = (int64_t)be64_get((unsigned char *)tmp.p + 40); /* a derived stream's */
            sbuf_fini(&tmp);
            if (rc == 0) {
                s->max_ts = (int64_t)m[0];
                s->rows_total = m[1];
                s->rejected = (int64_t)m[2];
                s->src_pos = m[3];
                s->log_bytes = m[4];
            } else if (rc != XE_NOTFOUND) c->rc = rc;
            if (!c->rc && s->table) c->rc = table_id_load(e, s, c->err);
        }
    } else if (c->kind == 1) {
        char *sp = strchr(sql, ' ');
        if (!sp) { c->rc = xerr_set(c->err, XE_CORRUPT, "catalog entry '%s' is malformed", key); goto out; }
        uint32_t id = (uint32_t)strtoul(sql, NULL, 10);
        if ((c->rc = parse_stored(sp + 1, strlen(sp + 1), &st, c->err))) goto out;
        if (st->kind != ST_CREATE_QUERY && st->kind != ST_CREATE_STREAM_AS && st->kind != ST_INSERT_SELECT &&
            st->kind != ST_CREATE_TABLE_AS) {
            c->rc = xerr_set(c->err, XE_CORRUPT, "catalog entry '%s' is not a query", key);
            goto out;
        }
        query *q;
        if ((c->rc = eng_query_new(e, st->select, st->with, key + strlen("query/"), sp + 1, id, st->kind == ST_CREATE_TABLE_AS, &q,
                               c->err))) goto out;
        if (st->kind != ST_CREATE_QUERY && (q->target = eng_stream_index(e, st->name)) < 0) {
            c->rc = xerr_set(c->err, XE_CORRUPT, "query '%s' writes stream '%s', which the catalog lacks", q->name, st->name);
            query_free(q);
            goto out;
        }
        if (st->kind == ST_CREATE_STREAM_AS) e->streams[q->target]->derived = 1;
        if (st->kind == ST_CREATE_TABLE_AS) {
            if (!e->streams[q->target]->table) {
                c->rc = xerr_set(c->err, XE_CORRUPT, "query '%s' writes '%s', which is not a table", q->name, st->name);
                query_free(q);
                goto out;
            }
            e->streams[q->target]->table->from_query = 1;
        }
        uint64_t m[6 + ENGINE_MAX_SRC];
        char mk[64];
        snprintf(mk, sizeof mk, "query/%u", id);
        sbuf tmp;
        sbuf_init(&tmp);
        int rc = eng_get_u64s(e->txn, mk, m, 6 + eng_meta_extra(q), &tmp, c->err);
        sbuf_fini(&tmp);
        if (rc == 0) {
            q->offset[0] = m[0];
            q->offset[1] = m[1];
            for (int k = 2; k < q->nsrc; k++) q->offset[k] = m[4 + k];
            q->rows_in = (int64_t)m[2];
            q->rows_out = (int64_t)m[3];
            q->late = (int64_t)m[4];
            query_rate_sample(q, clock_mono_ns(), 1); /* rates count from here */
        } else if (rc != XE_NOTFOUND) { c->rc = rc; query_free(q); goto out; }
        const ast_option *so = ast_option_get(st->with, "sink"), *fo = ast_option_get(st->with, "format");
        if (so && (c->rc = eng_sink_open(q, so->value, fo ? fo->value : NULL, rc == 0 ? (int64_t)m[5] : 0, c->err))) {
            query_free(q);
            goto out;
        }
        if ((c->rc = query_load_state(q, e->txn, c->err)) || (c->rc = eng_query_add(e, q, c->err))) { query_free(q); goto out; }
        if (id >= e->next_query_id) e->next_query_id = id + 1;
    } else {
        const char *k = key + strlen("setting/");
        if (!strcmp(k, "parallelism")) e->parallelism = atoi(sql) > 0 ? atoi(sql) : 1;
        else if (!strcmp(k, "offset")) eng_offset_parse(sql, &e->offset_earliest);
        else if (!strcmp(k, "memory_budget")) eng_bytes_parse(sql, &e->mem_budget);
        else if (!strcmp(k, "placement")) snprintf(e->placement, sizeof e->placement, "%.31s", sql);
    }
out:
    ast_stmt_free(st);
    sbuf_fini(&text);
    return c->rc;
}

/* The catalog, in the open epoch's transaction: settings, then streams with
 * their progress, then standing queries with their offsets and state. */
int eng_catalog_load(engine *e, xerr *err)
{
    int rc;
    load_ctx lc = {e, 2, err, 0};
    if ((rc = store_kv_scan(e->txn, STORE_CATALOG, "setting/", load_catalog_entry, &lc, err)) || lc.rc) goto fail_lc;
    lc.kind = 0;
    if ((rc = store_kv_scan(e->txn, STORE_CATALOG, "stream/", load_catalog_entry, &lc, err)) || lc.rc) goto fail_lc;
    lc.kind = 1;
    if ((rc = store_kv_scan(e->txn, STORE_CATALOG, "query/", load_catalog_entry, &lc, err)) || lc.rc) goto fail_lc;
    return 0;
fail_lc:
    if (!rc) rc = lc.rc;
    return rc;
}

/* The CREATE TABLE a CREATE TABLE AS implies: the SELECT's columns, its
 * GROUP BY columns (which it must select, as columns) the PRIMARY KEY. */
static int table_as_sql(const ast_stmt *st, const query *q, sbuf *b, xerr *err)
{
    const plan_schema *os = &q->dag->ops[q->dag->sink].out;
    const ast_select *sel = st->select;
    int key[TBL_MAX_KEY], line, col;
    if (sel->group_by->n > TBL_MAX_KEY)
        return xerr_at(err, XE_PLAN, st->line, st->col, "a table's PRIMARY KEY has at most %d columns", TBL_MAX_KEY);
    const ast_expr *x = eng_group_key_cols(sel, key);
    if (x)
        return xerr_at(err, XE_PLAN, x->line, x->col,
                       "GROUP BY of CREATE TABLE AS takes columns that the SELECT selects (they are the table's "
                       "PRIMARY KEY)");
    int rc = implied_head(st, os, "TABLE", b, err);
    if (rc) return rc;
    for (int c = 0; c < os->ncols; c++) {
        if (!strcmp(os->cols[c].name, "op")) {
            item_pos(st, c, &line, &col);
            return xerr_at(err, XE_NAME, line, col, "a table's column cannot be called 'op' (its changelog's first column)");
        }
        ast_print_ident(os->cols[c].name, b);
        sbuf_printf(b, " %s, ", sql_type_name(os->cols[c].type));
    }
    sbuf_adds(b, "PRIMARY KEY (");
    for (int g = 0; g < sel->group_by->n; g++) {
        if (g) sbuf_adds(b, ", ");
        ast_print_ident(os->cols[key[g]].name, b);
    }
    sbuf_adds(b, "))");
    const ast_option *ro = ast_option_get(st->with, "retention");
    if (ro) {
        sbuf_adds(b, " WITH (retention = ");
        add_quoted(b, ro->value);
        sbuf_addc(b, ')');
    }
    return b->p ? 0 : xerr_set(err, XE_NOMEM, "out of memory");
}

/* CREATE TABLE t AS SELECT k, COUNT(*), ... FROM s GROUP BY k: a query
 * whose aggregate updates (table_agg.c) into a table keyed by its groups. */
int eng_create_table_as(engine *e, const ast_stmt *st, const exec_out *out, xerr *err)
{
    static const char *known[] = {"retention", "offset", NULL};
    const ast_select *sel = st->select;
    int rc;
    if ((rc = stream_taken(e, st, out, err))) return rc > 0 ? 0 : rc;
    if (eng_find_query(e, st->name))
        return xerr_at(err, XE_EXISTS, st->line, st->col, "a query is called '%s' (a table's query takes its name)",
                       st->name);
    if ((rc = eng_check_options(st->with, known, "CREATE TABLE AS", err))) return rc;
    const char *no = !sel->group_by ? "a SELECT without GROUP BY (its groups are the table's rows)"
                     : sel->window.kind != WIN_NONE ? "a WINDOW (a table's aggregate covers all time; a windowed one is "
                                                      "CREATE STREAM AS)"
                     : sel->join ? "a JOIN (not yet)"
                     : sel->unnest ? "UNNEST (not yet)"
                     : sel->emit == EMIT_FINAL ? "EMIT FINAL (a table's rows update as its input changes)"
                     : sel->limit >= 0 ? "LIMIT" : NULL;
    if (no) return xerr_at(err, XE_PLAN, st->line, st->col, "CREATE TABLE ... AS takes no %s", no);
    query *q;
    if ((rc = standing_check(e, st, err)) || (rc = standing_new(e, st, st->name, out, &q, err))) return rc;
    /* over a table, every change from its first: its log's start */
    rc = eng_tables_from_start(e, q, 1, "an aggregate over it", st->line, st->col, NULL, err);
    if (rc) {
        query_free(q);
        return rc;
    }
    if ((rc = standing_make(e, st, q, 1, err))) return rc;
    eng_notice(out, "CREATE TABLE");
    return 0;
}
