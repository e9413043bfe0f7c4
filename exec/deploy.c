/*
 * deploy.c: what a cluster's node asks of its engine.
 *
 * The queries a coordinator deploys here (engine_deploy: the plan of its
 * CREATE QUERY with the tasks this node owns, its remote hooks, the state
 * and counts taken over after a failure; engine_undeploy), the data and
 * watermarks that reach their tasks from peers (engine_remote_batch,
 * engine_remote_watermark), a deployed sink's rows and progress, a
 * statement planned for placement (engine_plan), and the host's own
 * records in the catalog (host/<key>).  Runs on the engine's thread.
 */
#include "exec/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ deployed queries (cluster) */

static query *find_query_id(const engine *e, uint32_t qid)
{
    for (int i = 0; i < e->nqueries; i++)
        if (!e->queries[i]->transient && e->queries[i]->id == qid && e->queries[i]->deployed) return e->queries[i];
    return NULL;
}

int engine_plan(engine *e, const char *sql, plan_dag **out, xerr *err)
{
    ast_stmt *st;
    *out = NULL;
    int rc = parse_one(sql, strlen(sql), &st, err);
    if (rc) return rc;
    if (!st->select) {
        ast_stmt_free(st);
        return xerr_set(err, XE_PLAN, "not a query");
    }
    plan_opts po = {e->parallelism};
    /* a cluster plans here first: the options are checked as a CREATE QUERY's are */
    if ((rc = eng_check_query_options(st->with, err)) == 0 &&
        (rc = eng_option_int(st->with, "parallelism", e->parallelism, 1, 64, &po.parallelism, err)) == 0)
        rc = plan_query(st->select, &e->cat, &po, out, err);
    ast_stmt_free(st);
    return rc;
}

/* A deployed query's counts survive its redeployment after a failure on
 * the nodes that ran it before: undeploy (keep_state) writes them as
 * "qcount/<qid>" (rows_in, rows_out, late, the next record of each local
 * source), the redeployment (prev) takes them. */
static int keep_counts(query *q, xerr *err)
{
    char key[32];
    snprintf(key, sizeof key, "qcount/%u", q->id);
    uint64_t v[3 + ENGINE_MAX_SRC] = {(uint64_t)q->rows_in, (uint64_t)q->rows_out, (uint64_t)q->late};
    for (int k = 0; k < 2 + eng_meta_extra(q); k++) v[3 + k] = q->offset[k] > q->counted[k] ? q->offset[k] : q->counted[k];
    return eng_put_u64s(q->eng->txn, key, v, 5 + eng_meta_extra(q), err);
}

static int take_counts(query *q, xerr *err)
{
    if (!q->ft.prev) return 0;
    char key[32];
    snprintf(key, sizeof key, "qcount/%u", q->ft.prev);
    uint64_t v[3 + ENGINE_MAX_SRC];
    sbuf tmp;
    sbuf_init(&tmp);
    int rc = eng_get_u64s(q->eng->txn, key, v, 5 + eng_meta_extra(q), &tmp, err);
    sbuf_fini(&tmp);
    if (rc == XE_NOTFOUND) return 0; /* it ran nothing here that counts, or this node is new to it */
    if (rc) return rc;
    q->rows_in = (int64_t)v[0];
    q->rows_out = (int64_t)v[1];
    q->late = (int64_t)v[2];
    for (int k = 0; k < 2 + eng_meta_extra(q); k++) q->counted[k] = v[3 + k];
    return store_kv_del(q->eng->txn, STORE_META, key, err);
}

int engine_deploy(engine *e, uint32_t qid, const char *create_sql, const unsigned char *own, int nown,
                  const engine_remote *remote, const exec_out *out, const engine_deploy_opts *fo, xerr *err)
{
    if (find_query_id(e, qid)) return xerr_set(err, XE_EXISTS, "query %u is already deployed here", qid);
    ast_stmt *st;
    int rc = parse_one(create_sql, strlen(create_sql), &st, err);
    if (rc) return rc;
    if (st->kind != ST_CREATE_QUERY) {
        ast_stmt_free(st);
        return xerr_set(err, XE_PLAN, "deploy needs a CREATE QUERY statement");
    }
    query *q;
    rc = eng_query_new(e, st->select, st->with, st->name, create_sql, qid, 0, &q, err);
    ast_stmt_free(st);
    if (rc) return rc;
    q->deployed = 1;
    if (own) {
        if (nown != plan_task_count(q->dag)) {
            query_free(q);
            return xerr_set(err, XE_PLAN, "placement has %d tasks, the plan %d", nown, plan_task_count(q->dag));
        }
        if (!(q->own = malloc((size_t)nown))) { query_free(q); return xerr_set(err, XE_NOMEM, "out of memory"); }
        memcpy(q->own, own, (size_t)nown);
    }
    if (remote) q->remote = *remote;
    if (out) q->out = *out;
    if (fo) q->ft = *fo;
    q->ckpt_ns = clock_mono_ns();
    if ((rc = eng_txn(e, err)) || (rc = ft_restore(q, e->txn, err)) || (rc = take_counts(q, err)) ||
        (rc = query_load_state(q, e->txn, err)) || (rc = eng_query_add(e, q, err))) {
        query_free(q);
        return rc;
    }
    /* offset = 'earliest': the sources start at their logs' first retained
     * record (every node's copy: a shadow records the same origin), and
     * the local ones wait for the host's engine_replay, which comes once
     * every node has deployed (their tasks would miss the rows) */
    for (int k = 0; fo && fo->earliest && !fo->prev && k < q->nsrc && !rc; k++) {
        const stream_rt *s = e->streams[q->src_stream[k]];
        if (fo->earliest == ENGINE_EARLIEST_BOUNDED && !s->ended && !(s->source && !strncmp(s->source, "file://", 7)))
            continue;
        rc = eng_rewind_source(e, q, k, NULL, err);
        if (!task_local(q, &q->ops[q->src_op[k]], q->src_task[k])) continue;
        q->hold = 1;
        if (!rc && q->offset[k] > 0 && e->log) {
            char msg[400];
            snprintf(msg, sizeof msg, "query %u: stream '%s': retention has dropped the %llu oldest records of its log; "
                     "offset = 'earliest' reads the rows after them", qid, e->streams[q->src_stream[k]]->ps->name,
                     (unsigned long long)q->offset[k]);
            e->log(e->log_ctx, msg);
        }
    }
    if (rc) {
        eng_query_remove(e, q);
        return rc;
    }
    /* a socket sink runs where the sink task does (the coordinator); a
     * file sink needs an engine of its own (the coordinator refuses it) */
    if (q->sink_uri && task_local(q, &q->ops[q->dag->sink], 0) &&
        (!strncmp(q->sink_uri, "tcp://", 6) || !strncmp(q->sink_uri, "unix://", 7)) &&
        (rc = io_sink_open(e, q, q->sink_uri, q->sink_format, err))) {
        eng_query_remove(e, q);
        return rc;
    }
    /* Results the tasks it took over emitted lately go again (the sink
     * drops what it has).  No watermark yet: the next slice brings one.  A
     * query redeployed after a failure replays its log first
     * (engine_replay), and a watermark sent now would make every replayed
     * row late. */
    if ((rc = ft_reemit(q, err))) return rc;
    return engine_commit(e, err);
}

int engine_undeploy(engine *e, uint32_t qid, int keep_state, xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    int rc = eng_txn(e, err);
    /* kept: as of now, with its positions, for the redeployment to take over */
    if (!rc && keep_state) rc = query_flush_state(q, e->txn, err);
    if (!rc && keep_state) rc = keep_counts(q, err);
    if (!rc && !keep_state) rc = query_drop_state(q, e->txn, err);
    if (!rc && !keep_state) rc = ft_drop_replicas(e, qid, err);
    sbuf_reset(&q->deltas);
    if (rc) return rc;
    eng_query_remove(e, q);
    return engine_commit(e, err);
}

int engine_remote_batch(engine *e, uint32_t qid, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p,
                        size_t n, xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    int rc = eng_txn(e, err);
    if (!rc) rc = query_remote_batch(q, op, task, side, tag, stamp, p, n, err);
    return rc ? rc : eng_maybe_commit(e, err);
}

int engine_remote_watermark(engine *e, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag,
                            xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q) return xerr_set(err, XE_NOTFOUND, "query %u is not deployed here", qid);
    int rc = eng_txn(e, err);
    if (!rc) rc = query_remote_watermark(q, op, side, from_task, wm, tag, err);
    return rc ? rc : eng_maybe_commit(e, err);
}

int engine_deployed_held(engine *e, uint32_t qid)
{
    query *q = find_query_id(e, qid);
    return q && q->hold;
}

int engine_deployed_sink_rows(engine *e, uint32_t qid, const batch *b, xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q || !q->outlet) return 0;
    return io_outlet_rows(q->outlet, b) ? xerr_set(err, XE_NOMEM, "out of memory") : 0;
}

/* Deployed query qid when its sink runs here, else NULL (err says so). */
static query *deployed_sink(engine *e, uint32_t qid, xerr *err)
{
    query *q = find_query_id(e, qid);
    if (!q || !task_local(q, &q->ops[q->dag->sink], 0)) {
        xerr_set(err, XE_NOTFOUND, "query %u has no sink here", qid);
        return NULL;
    }
    return q;
}

int engine_deployed_sink_wm(engine *e, uint32_t qid, int64_t *wm, xerr *err)
{
    query *q = deployed_sink(e, qid, err);
    if (!q) return XE_NOTFOUND;
    *wm = q->ops[q->dag->sink].wm[0];
    return 0;
}

int engine_deployed_sink_inputs(engine *e, uint32_t qid, const int64_t **wm, int *n, xerr *err)
{
    query *q = deployed_sink(e, qid, err);
    if (!q) return XE_NOTFOUND;
    *wm = q->ops[q->dag->sink].upwm[0];
    *n = q->ops[q->dag->sink].nup[0];
    return 0;
}

int engine_deployed_sink_time(engine *e, uint32_t qid, int64_t *t, xerr *err)
{
    query *q = deployed_sink(e, qid, err);
    if (!q) return XE_NOTFOUND;
    *t = q->sink_tmax;
    return 0;
}

/* ------------------------------------------------------------------ host records */

int engine_host_put(engine *e, const char *key, const void *v, size_t n, xerr *err)
{
    char k[512];
    if (snprintf(k, sizeof k, "host/%s", key) >= (int)sizeof k) return xerr_set(err, XE_INVAL, "host key too long");
    int rc = eng_txn(e, err);
    if (!rc) rc = store_kv_put(e->txn, STORE_CATALOG, k, v, n, err);
    return rc ? rc : engine_commit(e, err);
}

int engine_host_del(engine *e, const char *key, xerr *err)
{
    char k[512];
    if (snprintf(k, sizeof k, "host/%s", key) >= (int)sizeof k) return xerr_set(err, XE_INVAL, "host key too long");
    int rc = eng_txn(e, err);
    if (!rc) rc = store_kv_del(e->txn, STORE_CATALOG, k, err);
    return rc ? rc : engine_commit(e, err);
}

typedef struct host_scan {
    int (*fn)(void *ctx, const char *key, const void *v, size_t n);
    void *ctx;
} host_scan;

static int host_scan_one(void *ctx, const char *key, const void *v, size_t n)
{
    host_scan *h = ctx;
    return h->fn(h->ctx, key + 5, v, n);
}

int engine_host_scan(engine *e, const char *prefix,
                     int (*fn)(void *ctx, const char *key, const void *v, size_t n), void *ctx, xerr *err)
{
    char k[512];
    if (snprintf(k, sizeof k, "host/%s", prefix) >= (int)sizeof k) return xerr_set(err, XE_INVAL, "host key too long");
    host_scan h = {fn, ctx};
    int rc = eng_txn(e, err);
    return rc ? rc : store_kv_scan(e->txn, STORE_CATALOG, k, host_scan_one, &h, err);
}
