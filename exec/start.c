/*
 * start.c: a query's start and its end in the engine.
 *
 * A query planned from its SELECT and WITH options (eng_query_new: the
 * plan, the sink's name, changelog = 'upsert', its offsets at the end of
 * its streams' logs), put among the engine's queries (eng_query_add) and
 * taken out with its sockets (eng_query_remove); where its sources start
 * reading when not at the end (eng_rewind_source, eng_tables_from_start);
 * the options' checks that every kind of query shares.  The statements
 * that start queries are above it: catalog.c (standing ones), push.c
 * (SELECT), deploy.c (a cluster's).  Runs on the engine's thread.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *known_query_options[] = {"parallelism", "sink", "format", "placement", "ft", "replicas",
                                            "checkpoint_interval", "offset", "changelog", NULL};

int eng_check_options(const ast_options *w, const char **known, const char *what, xerr *err)
{
    for (int i = 0; w && i < w->n; i++) {
        int ok = 0;
        for (int k = 0; known[k]; k++)
            if (!strcasecmp(known[k], w->v[i].key)) ok = 1;
        if (!ok) {
            char list[256] = "";
            for (int k = 0; known[k]; k++) {
                size_t l = strlen(list);
                snprintf(list + l, sizeof list - l, "%s%s", k ? ", " : "", known[k]);
            }
            return xerr_at(err, XE_INVAL, w->v[i].key_line, w->v[i].key_col, "unknown %s option '%s' (known: %s)", what,
                           w->v[i].key, list);
        }
    }
    return 0;
}

int eng_check_query_options(const ast_options *w, xerr *err)
{
    return eng_check_options(w, known_query_options, "query", err);
}

int eng_option_int(const ast_options *w, const char *key, int def, int lo, int hi, int *out, xerr *err)
{
    const ast_option *o = ast_option_get(w, key);
    if (!o) { *out = def; return 0; }
    char *end;
    long v = strtol(o->value, &end, 10);
    if (*end || v < lo || v > hi)
        return xerr_at(err, XE_INVAL, o->line, o->col, "option %s = '%s' must be an integer from %d to %d", key, o->value,
                       lo, hi);
    *out = (int)v;
    return 0;
}

/* WITH (changelog = 'full' | 'upsert') of a query with a sink over a
 * table's changelog: under 'upsert' its sink gets +I and +U rows, no -U,
 * and a -D row with only op and the key's columns (sink.c). */
static int changelog_opt(engine *e, query *q, const ast_options *w, xerr *err)
{
    const ast_option *o = ast_option_get(w, "changelog");
    if (!o) return 0;
    if (!strcasecmp(o->value, "full")) return 0;
    if (strcasecmp(o->value, "upsert"))
        return xerr_at(err, XE_INVAL, o->line, o->col, "changelog must be 'full' or 'upsert', not '%s'", o->value);
    if (!ast_option_get(w, "sink"))
        return xerr_at(err, XE_INVAL, o->line, o->col, "changelog = 'upsert' is a sink's: it needs WITH (sink = ...)");
    const table_rt *t = q->nsrc == 1 ? e->streams[q->src_stream[0]]->table : NULL;
    const fmt_schema *os = &q->out_schema;
    if (!t || !os->ncols || strcmp(os->names[0], "op"))
        return xerr_at(err, XE_INVAL, o->line, o->col,
                       "changelog = 'upsert' needs a query over one table's changelog, its op column first (SELECT * "
                       "FROM t)");
    if (!(q->upsert = calloc((size_t)os->ncols, 1)) || batch_init(&q->ups, os->ncols, 256))
        return xerr_set(err, XE_NOMEM, "out of memory");
    q->upsert[0] = 1;
    for (int k = 0; k < t->nkey; k++) {
        const char *kn = t->in->schema.cols[t->key[k]].name;
        int c = 1;
        while (c < os->ncols && strcasecmp(os->names[c], kn)) c++;
        if (c == os->ncols)
            return xerr_at(err, XE_INVAL, o->line, o->col,
                           "changelog = 'upsert' writes a delete as its key: the SELECT must select the key column '%s'",
                           kn);
        q->upsert[c] = 1;
    }
    return 0;
}

/* Plan and start a query.  sel is the SELECT, w its WITH options. */
int eng_query_new(engine *e, const ast_select *sel, const ast_options *w, const char *name, const char *sql,
                     uint32_t id, int table_agg, query **out, xerr *err)
{
    *out = NULL;
    plan_opts po = {e->parallelism};
    int rc;
    if ((rc = eng_option_int(w, "parallelism", e->parallelism, 1, 64, &po.parallelism, err))) return rc;
    /* CREATE TABLE AS: one task, so its groups' state never moves between
     * tasks when SET parallelism changes between runs */
    if (table_agg) po.parallelism = 1;
    plan_dag *d;
    if ((rc = plan_query(sel, &e->cat, &po, &d, err))) return rc;
    query *q = calloc(1, sizeof *q);
    if (!q) { plan_free(d); return xerr_set(err, XE_NOMEM, "out of memory"); }
    q->dag = d;
    q->id = id;
    q->name = name ? strdup(name) : NULL;
    q->sql = sql ? strdup(sql) : NULL;
    const ast_option *so = ast_option_get(w, "sink"), *fo = ast_option_get(w, "format");
    if ((so && !(q->sink_uri = strdup(so->value))) || (so && fo && !(q->sink_format = strdup(fo->value)))) {
        query_free(q);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    q->target = -1;
    q->table_agg = table_agg;
    if ((rc = query_start(e, q, err))) { query_free(q); return rc; }
    if ((rc = changelog_opt(e, q, w, err))) { query_free(q); return rc; }
    /* new queries read from the end of their streams' logs */
    for (int k = 0; k < q->nsrc; k++) {
        stream_rt *s = e->streams[q->src_stream[k]];
        int own = !e->txn;
        if (own && (rc = store_begin(e->st, 0, &e->txn, err))) { query_free(q); return rc; }
        rc = store_log_end(e->txn, s->ps->name, &q->offset[k], err);
        if (own) { store_abort(e->txn); e->txn = NULL; }
        if (rc) { query_free(q); return rc; }
    }
    *out = q;
    return 0;
}

int eng_query_add(engine *e, query *q, xerr *err)
{
    query **v = realloc(e->queries, (size_t)(e->nqueries + 1) * sizeof *v);
    if (!v) return xerr_set(err, XE_NOMEM, "out of memory");
    e->queries = v;
    e->queries[e->nqueries++] = q;
    return 0;
}

/* q's source k reads its log from its start: the first record retention
 * kept (out hears how many it dropped). */
int eng_rewind_source(engine *e, query *q, int k, const exec_out *out, xerr *err)
{
    stream_rt *s = e->streams[q->src_stream[k]];
    uint64_t begin, end;
    int rc = eng_txn(e, err);
    if (!rc) rc = store_log_begin(e->txn, s->ps->name, &begin, err);
    if (!rc) rc = store_log_end(e->txn, s->ps->name, &end, err);
    if (rc) return rc;
    if (begin > 0)
        eng_notice(out, "stream '%s': retention has dropped the %llu oldest of its %llu log records; "
                    "this query reads only the rows that came after them", s->ps->name,
               (unsigned long long)begin, (unsigned long long)end);
    q->offset[k] = begin;
    return 0;
}

/* Is q's source k the table side of a stream-table join? */
static int table_side(const query *q, int k)
{
    for (int i = 0; i < q->dag->nops; i++) {
        const plan_op *op = &q->dag->ops[i];
        if (op->kind == PO_JOIN && op->temporal && op->inputs[1] == q->src_op[k]) return 1;
    }
    return 0;
}

/* q's sources that read their table from its first change, so that they
 * see the rows it holds, not only its changes from now: every table of a
 * CREATE TABLE AS (all), the table side of a stream-table join.  A table
 * whose first changes retention dropped is refused (what: what would miss
 * them).  *n (if not NULL): how many sources were set back. */
int eng_tables_from_start(engine *e, query *q, int all, const char *what, int line, int col, int *n, xerr *err)
{
    int set = 0;
    for (int k = 0; k < q->nsrc; k++) {
        stream_rt *s = e->streams[q->src_stream[k]];
        uint64_t begin = 0;
        int rc;
        if (!s->table || (!all && !table_side(q, k))) continue;
        if ((rc = eng_txn(e, err)) || (rc = store_log_begin(e->txn, s->ps->name, &begin, err))) return rc;
        if (begin > 0)
            return xerr_at(err, XE_PLAN, line, col,
                           "table '%s' no longer holds its first changes in its log (retention dropped %llu records): %s "
                           "would miss their rows",
                           s->ps->name, (unsigned long long)begin, what);
        q->offset[k] = 0;
        set++;
    }
    if (n) *n = set;
    return 0;
}

/* The output columns of sel's GROUP BY columns into key[] (at most
 * TBL_MAX_KEY of them): NULL, or the first that the SELECT does not
 * select as a column. */
const ast_expr *eng_group_key_cols(const ast_select *sel, int *key)
{
    for (int g = 0; g < sel->group_by->n; g++) {
        const ast_expr *x = sel->group_by->v[g];
        key[g] = -1;
        for (int i = 0; x->kind == EX_COL && sel->items && i < sel->items->n; i++) {
            const ast_expr *it = sel->items->v[i].expr;
            if (it && it->kind == EX_COL && !strcmp(it->name, x->name)) key[g] = i;
        }
        if (key[g] < 0) return x;
    }
    return NULL;
}

void eng_detach_query_io(engine *e, query *q)
{
    if (q->outlet) io_outlet_close(e, q->outlet);
    while (q->nsubs) io_outlet_close(e, q->subs[0]);
    free(q->subs);
    q->subs = NULL;
    for (int i = 0; i < e->nlsubs; i++)
        if (e->lsubs[i].q == q) {
            if (e->lsubs[i].out.end) e->lsubs[i].out.end(e->lsubs[i].out.ctx);
            e->lsubs[i--] = e->lsubs[--e->nlsubs];
        }
}

void eng_query_remove(engine *e, query *q)
{
    eng_detach_query_io(e, q);
    for (int i = 0; i < e->nqueries; i++)
        if (e->queries[i] == q) {
            memmove(&e->queries[i], &e->queries[i + 1], (size_t)(e->nqueries - i - 1) * sizeof *e->queries);
            e->nqueries--;
            break;
        }
    query_free(q);
}
