/*
 * coord_start.c: the coordinator starts (on --coordinator, or when a
 * standby takes over) from its catalog: settings, streams, the term, the
 * standby it had, and the queries, which are deployed here at once and on
 * the other nodes as they join.  coord_stop frees it all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

static char *xstrndup(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

typedef struct load_ctx {
    node *n;
    int rc;
    xerr *err;
} load_ctx;

static int load_stream(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    coord *co = l->n->co;
    const char *nl = memchr(v, '\n', len);
    if (!nl) return 0;
    cstream *x = realloc(co->streams, (size_t)(co->nstreams + 1) * sizeof *x);
    if (!x) return l->rc = XE_NOMEM;
    co->streams = x;
    cstream *c = &co->streams[co->nstreams++];
    c->name = strdup(key + strlen("stream/"));
    const char *tab = memchr(v, '\t', (size_t)(nl - (const char *)v));
    c->home = xstrndup(v, (size_t)((tab ? tab : nl) - (const char *)v));
    const char *tab2 = tab ? memchr(tab + 1, '\t', (size_t)(nl - tab - 1)) : NULL;
    c->shadow = tab && (tab2 ? tab2 : nl) > tab + 1 ? xstrndup(tab + 1, (size_t)((tab2 ? tab2 : nl) - tab - 1)) : NULL;
    c->lshadow = tab2 && nl > tab2 + 1 ? xstrndup(tab2 + 1, (size_t)(nl - tab2 - 1)) : NULL;
    c->dirty = 0;
    c->sql = xstrndup(nl + 1, len - (size_t)(nl + 1 - (const char *)v));
    const char *hash = c->name ? strrchr(c->name, '#') : NULL;
    c->part = hash ? atoi(hash + 1) : 0;
    c->lite = c->sql && !c->part ? strip_source(c->sql) : NULL;
    int kind = c->part ? 0 : stream_kind(c->sql);
    c->derived = kind == SK_DERIVED;
    c->table = kind == SK_TABLE;
    return 0;
}

static int load_set(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    coord *co = l->n->co;
    char **k = realloc(co->set_keys, (size_t)(co->nsets + 1) * sizeof *k);
    if (k) co->set_keys = k;
    char **s = realloc(co->set_sql, (size_t)(co->nsets + 1) * sizeof *s);
    if (s) co->set_sql = s;
    if (!k || !s) return l->rc = XE_NOMEM;
    co->set_keys[co->nsets] = strdup(key + 4);
    co->set_sql[co->nsets++] = xstrndup(v, len);
    ast_stmt *st = NULL;
    xerr err;
    if (co->set_sql[co->nsets - 1] && !parse_one(co->set_sql[co->nsets - 1], len, &st, &err) && st->kind == ST_SET)
        check_cluster_setting(co, st, 1, &err);
    ast_stmt_free(st);
    return 0;
}

/* Records are copied out of the scan first: deploying commits the engine's
 * transaction, which would end the scan's cursor. */
typedef struct qrec {
    char *key;
    sbuf val;
} qrec;

typedef struct qrecs {
    qrec *v;
    int n;
} qrecs;

static int collect_query(void *ctx, const char *key, const void *v, size_t len)
{
    qrecs *r = ctx;
    qrec *x = realloc(r->v, (size_t)(r->n + 1) * sizeof *x);
    if (!x) return XE_NOMEM;
    r->v = x;
    x = &r->v[r->n];
    sbuf_init(&x->val);
    if (!(x->key = strdup(key)) || sbuf_add(&x->val, v, len)) {
        free(x->key);
        sbuf_fini(&x->val);
        return XE_NOMEM;
    }
    r->n++;
    return 0;
}

static int load_query(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    node *n = l->n;
    wire_rd r;
    wire_str name, plan;
    wire_rd_init(&r, v, len);
    wire_get_str(&r, &name);
    wire_get_blob(&r, &plan);
    xerr err;
    wire_rd rest = r; /* the placement record, read once the plan is known */
    if (wire_rd_end(&r, 0, &err)) {
        node_log(n, NET_LOG_ERROR, "catalog record %s is malformed: skipped", key);
        return 0;
    }
    deploy_plan dp;
    if (deploy_plan_get(plan.p, plan.n, &dp, &err)) {
        node_log(n, NET_LOG_ERROR, "catalog record %s: %s: skipped", key, err.msg);
        return 0;
    }
    cquery *q = calloc(1, sizeof *q);
    plan_dag *d = NULL;
    int rc = XE_NOMEM;
    if (!q) goto fail;
    sbuf_init(&q->plan);
    sbuf_init(&q->enc);
    q->qid = (uint32_t)strtoul(key + 2, NULL, 10);
    q->origin = dp.origin ? dp.origin : q->qid;
    q->ft = (engine_ft)dp.ft;
    q->ckpt_ms = dp.checkpoint_ms ? dp.checkpoint_ms : n->co->ckpt_ms;
    q->name = xstrndup(name.p, name.n);
    q->sql = xstrndup(dp.sql.p, dp.sql.n);
    if (!q->name || !q->sql || sbuf_add(&q->plan, plan.p, plan.n)) goto fail;
    q->co_node = n;
    sbuf_init(&q->backlog);
    if ((rc = engine_plan(n->eng, q->sql, &d, &err)) || (rc = cq_from_plan(q, d, &err))) goto fail;
    rc = XE_CORRUPT;
    if (q->ntasks != dp.ntasks) goto fail;
    for (int t = 0; t < q->ntasks; t++)
        if (!(q->tnode[t] = xstrndup(dp.names[dp.assign[t]].p, dp.names[dp.assign[t]].n))) goto fail;
    q->strategy = NIRVANA_ROUND_ROBIN;
    if (wire_rd_left(&rest)) {
        wire_str sn, rn;
        uint32_t rounds = 0, moves = 0;
        uint8_t conv = 0;
        uint16_t R = 0;
        char sbuf_[64];
        wire_get_str(&rest, &sn);
        wire_get_u32(&rest, &rounds);
        wire_get_u32(&rest, &moves);
        wire_get_u8(&rest, &conv);
        wire_get_u16(&rest, &R);
        snprintf(sbuf_, sizeof sbuf_, "%.*s", (int)sn.n, sn.p);
        if (!rest.err) {
            nirvana_strategy_parse(sbuf_, &q->strategy);
            q->rounds = (int)rounds;
            q->moves = (int)moves;
            q->converged = conv;
            if (R && R <= 8 && (q->rnode = calloc((size_t)q->ntasks * R, sizeof *q->rnode))) {
                q->nrep = R;
                for (int i = 0; i < q->ntasks * R; i++)
                    if (!wire_get_str(&rest, &rn) && rn.n) q->rnode[i] = xstrndup(rn.p, rn.n);
            }
            uint8_t keep = 0;
            if (wire_rd_left(&rest) && !wire_get_u8(&rest, &keep) && keep) {
                /* a kept push query: its client may attach again */
                q->push = q->keep = 1;
                q->orphan_until = clock_wall_ms() + DD_KEEP_MS;
            }
            wire_str tg;
            if (wire_rd_left(&rest) && !wire_get_str(&rest, &tg) && tg.n) {
                char tname[300];
                snprintf(tname, sizeof tname, "%.*s", (int)tg.n, tg.p);
                if ((rc = derive_bind(n, q, tname, &err))) goto fail;
            }
        }
    }
    if ((rc = node_deploy(n, q->qid, q->plan.p, q->plan.len, &q->out, &err))) goto fail;
    q->dag = d;
    d = NULL;
    cq_link(n->co, q);
    node_log(n, NET_LOG_INFO, "query %u (%s) restored from the catalog%s%s", q->qid, q->name, q->target ? ", writing " : "", q->target ? q->target : "");
    plan_free(d);
    free(dp.assign);
    free(dp.rassign);
    return 0;
fail:
    node_log(n, NET_LOG_ERROR, "cannot restore %s: %s", key, err.msg[0] ? err.msg : xerr_name(rc));
    plan_free(d);
    free(dp.assign);
    free(dp.rassign);
    cq_free(q);
    return 0;
}

/* A catalog record holding a decimal number. */
static uint64_t rec_number(const void *v, size_t len)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < 31 ? len : 31), (const char *)v);
    return strtoull(buf, NULL, 10);
}

static int load_next_qid(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    (void)key;
    uint32_t q = (uint32_t)rec_number(v, len);
    if (q > l->n->co->next_qid) l->n->co->next_qid = q;
    return 0;
}

static int load_int(void *ctx, const char *key, const void *v, size_t len)
{
    (void)key;
    *(int *)ctx = (int)rec_number(v, len);
    return 0;
}

static int load_addr(void *ctx, const char *key, const void *v, size_t len)
{
    (void)key;
    snprintf(ctx, 128, "%.*s", (int)(len < 127 ? len : 127), (const char *)v);
    return 0;
}

static int load_flag(void *ctx, const char *key, const void *v, size_t len)
{
    (void)key;
    (void)v;
    (void)len;
    *(int *)ctx = 1;
    return 0;
}

static int load_term(void *ctx, const char *key, const void *v, size_t len)
{
    load_ctx *l = ctx;
    (void)key;
    uint64_t t = rec_number(v, len);
    if (t > l->n->term) l->n->term = t;
    return 0;
}

int coord_start(node *n, xerr *err)
{
    coord *co = calloc(1, sizeof *co);
    if (!co) return xerr_set(err, XE_NOMEM, "out of memory");
    n->co = co;
    n->co_loss = coord_loss;
    n->co_ingest_safe = coord_ingest_safe;
    co->job_step = job_step_done;
    co->next_req = 1;
    co->next_qid = 1;
    co->placement = NIRVANA_FULL;
    co->replicas = 1;
    co->ft = ENGINE_FT_REPLICA;
    co->ckpt_ms = 10000;
    co->rb_ms = ENGINE_REBALANCE_INTERVAL_MS;
    co->rb_threshold = ENGINE_REBALANCE_THRESHOLD;
    load_ctx l = {n, 0, err};
    int rc;
    if ((rc = engine_host_scan(n->eng, "next_qid", load_next_qid, &l, err)) ||
        (rc = engine_host_scan(n->eng, "set/", load_set, &l, err)) ||
        (rc = engine_host_scan(n->eng, "stream/", load_stream, &l, err)))
        return rc;
    if (l.rc) return xerr_set(err, l.rc, "loading the cluster catalog: out of memory");
    if ((rc = engine_host_scan(n->eng, "coord_term", load_term, &l, err))) return rc;
    if ((rc = engine_host_scan(n->eng, "standby_addr", load_addr, co->standby_addr, err)) ||
        (rc = engine_host_scan(n->eng, "standby", load_flag, &co->had_standby, err)) ||
        (rc = engine_host_scan(n->eng, "members", load_int, &co->members_kept, err)))
        return rc;
    /* a restart (not a takeover) of a coordinator that had a standby: the
     * standby may have taken over meanwhile, so the members decide (a node
     * that granted a newer term refuses our announcement and never joins) */
    if (co->had_standby && !n->taking_over && co->members_kept > 1) {
        co->wait_majority = co->members_kept;
        node_log(n, NET_LOG_WARN, "restarted with a standby known: serving once %d of the %d members have joined",
                 co->members_kept / 2 + 1, co->members_kept);
    }
    if (!n->term) {
        n->term = 1;
        if ((rc = persist_term(n, err))) return rc;
    }
    /* the streams' homes are in our own engine's catalog already; queries
     * deploy here now and on the other nodes as they join */
    qrecs qr = {NULL, 0};
    rc = engine_host_scan(n->eng, "q/", collect_query, &qr, err);
    for (int i = 0; i < qr.n; i++) {
        if (!rc) load_query(&l, qr.v[i].key, qr.v[i].val.p, qr.v[i].val.len);
        free(qr.v[i].key);
        sbuf_fini(&qr.v[i].val);
    }
    free(qr.v);
    if (rc) return rc;
    for (cquery *q = co->queries; q; q = q->next)
        if (q->qid >= co->next_qid) co->next_qid = q->qid + 1;
    n->max_qid = co->next_qid - 1;
    node_log(n, NET_LOG_INFO, "coordinator: %d streams, %d settings in the catalog", co->nstreams, co->nsets);
    return 0;
}

void coord_stop(node *n)
{
    coord *co = n->co;
    if (!co) return;
    while (co->queries) {
        cquery *q = co->queries;
        co->queries = q->next;
        xerr err;
        if (q->push) {
            for (csub *x = q->subs; x; x = x->next) cs_result(x->to, x->req, WIRE_F_LAST, RES_END, 0, NULL, 0);
            node_undeploy(n, q->qid, 0, &err);
        }
        cq_free(q);
    }
    while (co->pends) {
        pend *p = co->pends;
        co->pends = p->next;
        pend_free(p);
    }
    for (int i = 0; i < co->nstreams; i++) {
        free(co->streams[i].name);
        free(co->streams[i].home);
        free(co->streams[i].sql);
        free(co->streams[i].lite);
        free(co->streams[i].shadow);
        free(co->streams[i].lshadow);
    }
    free(co->streams);
    for (int i = 0; i < co->nsets; i++) {
        free(co->set_keys[i]);
        free(co->set_sql[i]);
    }
    free(co->set_keys);
    free(co->rb_cap);
    free(co->set_sql);
    sbuf_fini(&co->dead_names);
    free(co);
    n->co = NULL;
}
