/*
 * coord_query.c: standing and push queries.  CREATE QUERY (or a bare
 * SELECT, a push query) is planned, placed with every running query held
 * where it runs, recorded in the catalog ("q/<qid>": name, DEPLOY plan,
 * placement; read back by coord_start.c), deployed here and then on every
 * node in qid order.  DROP QUERY and CANCEL end one (cq_drop: undeploy
 * everywhere, end its results, forget it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

void cq_free(cquery *q)
{
    if (!q) return;
    for (int t = 0; t < q->ntasks; t++) free(q->tnode ? q->tnode[t] : NULL);
    free(q->tnode);
    for (int i = 0; q->rnode && i < q->ntasks * q->nrep; i++) free(q->rnode[i]);
    free(q->rnode);
    free(q->lost);
    free(q->rb_left);
    plan_free(q->dag);
    free(q->tkind);
    free(q->top);
    free(q->tidx);
    for (int i = 0; i < q->ncols; i++) free(q->names[i]);
    free(q->names);
    free(q->types);
    while (q->subs) {
        csub *x = q->subs;
        q->subs = x->next;
        csub_free(x);
    }
    sbuf_fini(&q->plan);
    sbuf_fini(&q->enc);
    dd_fini(&q->dt);
    catchup_fini(&q->cu);
    sbuf_fini(&q->backlog);
    derive_fini(q);
    free(q->name);
    free(q->sql);
    free(q);
}

/* Fill q's per-task tables and output schema from its plan. */
int cq_from_plan(cquery *q, const plan_dag *d, xerr *err)
{
    q->ntasks = plan_task_count(d);
    if (!(q->tnode = calloc((size_t)q->ntasks, sizeof *q->tnode)) ||
        !(q->tkind = calloc((size_t)q->ntasks, sizeof *q->tkind)) || !(q->top = calloc((size_t)q->ntasks, sizeof(int))) ||
        !(q->tidx = calloc((size_t)q->ntasks, sizeof(int))) || !(q->lost = calloc((size_t)q->ntasks + 1, 1)))
        return xerr_set(err, XE_NOMEM, "out of memory");
    int g = 0;
    for (int o = 0; o < d->nops; o++)
        for (int t = 0; t < d->ops[o].parallelism; t++, g++) {
            q->tkind[g] = plan_op_name(d->ops[o].kind);
            q->top[g] = o;
            q->tidx[g] = t;
        }
    const plan_schema *os = &d->ops[d->sink].out;
    q->ncols = os->ncols;
    if (!(q->names = calloc((size_t)os->ncols + 1, sizeof *q->names)) ||
        !(q->types = calloc((size_t)os->ncols + 1, sizeof *q->types)))
        return xerr_set(err, XE_NOMEM, "out of memory");
    for (int i = 0; i < os->ncols; i++) {
        if (!(q->names[i] = strdup(os->cols[i].name))) return xerr_set(err, XE_NOMEM, "out of memory");
        q->types[i] = os->cols[i].type;
    }
    q->limit = d->ops[d->sink].limit;
    q->out = (exec_out){q, NULL, cq_rows, NULL, NULL};
    return 0;
}

int coord_plan_blob(sbuf *b, const pnode *nodes, int nnodes, const int *assign, const cquery *q)
{
    const plan_dag *d = q->dag;
    wire_wr w;
    wire_wr_init(&w, b);
    wire_put_u8(&w, 4);
    wire_put_u16(&w, (uint16_t)nnodes);
    for (int i = 0; i < nnodes; i++) {
        wire_put_str(&w, nodes[i].name, strlen(nodes[i].name));
        wire_put_str(&w, nodes[i].addr, strlen(nodes[i].addr));
        wire_put_str(&w, nodes[i].domain, strlen(nodes[i].domain));
    }
    wire_put_u16(&w, (uint16_t)d->nops);
    for (int o = 0; o < d->nops; o++) wire_put_u16(&w, (uint16_t)d->ops[o].parallelism);
    int nt = plan_task_count(d);
    wire_put_u32(&w, (uint32_t)nt);
    for (int t = 0; t < nt; t++) wire_put_u16(&w, (uint16_t)assign[t]);
    wire_put_blob(&w, q->sql, strlen(q->sql));
    wire_put_u32(&w, q->origin);
    wire_put_u8(&w, (uint8_t)q->ft);
    wire_put_u32(&w, (uint32_t)q->ckpt_ms);
    wire_put_u32(&w, q->prev);
    wire_put_u16(&w, (uint16_t)q->nrep);
    for (int i = 0; i < nt * q->nrep; i++) {
        int at = 0xffff;
        for (int k = 0; q->rnode[i] && k < nnodes && at == 0xffff; k++)
            if (!strcmp(nodes[k].name, q->rnode[i])) at = k;
        wire_put_u16(&w, (uint16_t)at);
    }
    wire_put_i64(&w, q->prev ? q->resume_wm : INT64_MIN);
    wire_put_u8(&w, (uint8_t)q->earliest);
    return wire_wr_end(&w, NULL);
}

int persist_query(node *n, cquery *q, xerr *err)
{
    char key[64];
    snprintf(key, sizeof key, "q/%010u", q->qid);
    sbuf b;
    sbuf_init(&b);
    wire_wr w;
    wire_wr_init(&w, &b);
    wire_put_str(&w, q->name, strlen(q->name));
    wire_put_blob(&w, q->plan.p, q->plan.len);
    /* the placement record (absent in records of older coordinators) */
    const char *sn = nirvana_strategy_name(q->strategy);
    wire_put_str(&w, sn, strlen(sn));
    wire_put_u32(&w, (uint32_t)q->rounds);
    wire_put_u32(&w, (uint32_t)q->moves);
    wire_put_u8(&w, (uint8_t)q->converged);
    wire_put_u16(&w, (uint16_t)q->nrep);
    for (int i = 0; i < q->ntasks * q->nrep; i++) {
        const char *rn = q->rnode[i] ? q->rnode[i] : "";
        wire_put_str(&w, rn, strlen(rn));
    }
    wire_put_u8(&w, (uint8_t)q->keep); /* a kept push query (absent in older records) */
    if (q->target) wire_put_str(&w, q->target, strlen(q->target)); /* the derived stream it writes */
    int rc = wire_wr_end(&w, err);
    if (!rc) rc = cat_put(n, key, b.p, b.len, err);
    sbuf_fini(&b);
    return rc;
}

void cq_link(coord *co, cquery *q)
{
    cquery **pp = &co->queries;
    while (*pp && (*pp)->qid < q->qid) pp = &(*pp)->next;
    q->next = *pp;
    *pp = q;
}

/* Undeploy everywhere, end its results, forget it. */
void cq_drop(node *n, cquery *q)
{
    xerr err;
    q->ended = 1;
    for (pend *p = n->co->pends; p; p = p->next)
        if (p->q == q) p->q = NULL;
    for (csub *x = q->subs; x; x = x->next) cs_result(x->to, x->req, WIRE_F_LAST, RES_END, 0, NULL, 0);
    if (node_undeploy(n, q->qid, 0, &err)) node_log(n, NET_LOG_WARN, "undeploying query %u here: %s", q->qid, err.msg);
    send_undeploy(n, q, 0);
    if (!q->push || q->keep) {
        char key[64];
        snprintf(key, sizeof key, "q/%010u", q->qid);
        if (cat_del(n, key, &err)) node_log(n, NET_LOG_ERROR, "forgetting query %u: %s", q->qid, err.msg);
    }
    for (cquery **pp = &n->co->queries; *pp; pp = &(*pp)->next)
        if (*pp == q) {
            *pp = q->next;
            break;
        }
    cq_free(q);
}

static void deploy_done(node *n, pend *p)
{
    cquery *q = p->q;
    if (p->rc && q) {
        node_log(n, NET_LOG_ERROR, "query %u could not be deployed everywhere: %s", q->qid, p->msg);
        cq_drop(n, q);
    } else if (q && !q->push && !q->target && p->client) /* a derived stream's: CREATE STREAM said it */
        coord_notice_to(p->client, p->creq, "CREATE QUERY");
    n->co->job_step(n, p);
}

/* The strategy and R a CREATE QUERY asks for (its WITH, else the cluster's). */
static int query_placement_opts(coord *co, const ast_stmt *st, nirvana_strategy *s, int *R, xerr *err)
{
    *s = co->placement;
    *R = co->replicas;
    const ast_options *w = st->kind == ST_CREATE_QUERY ? st->with : NULL;
    const ast_option *po = ast_option_get(w, "placement"), *ro = ast_option_get(w, "replicas");
    if (po && nirvana_strategy_parse(po->value, s))
        return xerr_at(err, XE_INVAL, po->line, po->col, "placement must be 'nirvana', 'nirvana-no-recovery', "
                       "'round-robin', 'resource-aware' or 'random', not '%s'", po->value);
    if (ro) {
        char *end;
        long v = strtol(ro->value, &end, 10);
        if (*end || v < 0 || v > 8)
            return xerr_at(err, XE_INVAL, ro->line, ro->col, "replicas must be an integer from 0 to 8");
        *R = (int)v;
    }
    return 0;
}

/* The fault tolerance a CREATE QUERY asks for (its WITH, else the cluster's). */
static int query_ft_opts(coord *co, const ast_stmt *st, engine_ft *ft, int64_t *ckpt, xerr *err)
{
    *ft = co->ft;
    *ckpt = co->ckpt_ms;
    const ast_options *w = st->kind == ST_CREATE_QUERY ? st->with : NULL;
    const ast_option *fo = ast_option_get(w, "ft"), *co_ = ast_option_get(w, "checkpoint_interval");
    if (fo && engine_ft_parse(fo->value, ft))
        return xerr_at(err, XE_INVAL, fo->line, fo->col, "ft must be 'replica', 'checkpoint', 'upstream' or 'none', not '%s'",
                       fo->value);
    int rc = co_ ? coord_interval_ms(co_->value, ckpt, err) : 0;
    if (rc) {
        err->line = co_->line;
        err->col = co_->col;
    }
    return rc;
}

/* A cluster's tables feed stateless queries only, for now: an aggregate
 * over a table's changelog retracts (exec/table_agg.c) and a stream-table
 * join keeps the table's versions (exec/tjoin.c), which the nodes' tasks do
 * not do yet. */
static int table_check(coord *co, const ast_stmt *st, const plan_dag *d, xerr *err)
{
    const char *table = NULL;
    int agg = 0, join = 0;
    for (int o = 0; o < d->nops; o++) {
        const plan_op *op = &d->ops[o];
        cstream *c = op->kind == PO_SOURCE ? stream_find(co, op->stream) : NULL;
        if (c && c->table) table = c->name;
        agg |= op->kind == PO_AGGREGATE;
        join |= op->kind == PO_JOIN && op->temporal;
    }
    if (!table || (!agg && !join)) return 0;
    return xerr_at(err, XE_PLAN, st->line, st->col,
                   "%s table '%s' is not supported on a cluster yet (a cluster's queries over a table filter and project "
                   "its changes; an embedded engine runs %s)",
                   join ? "a join with" : "an aggregate over", table, join ? "stream-table joins" : "aggregates over tables");
}

/* CREATE QUERY, or a bare SELECT (push = 1): plan, place, persist, deploy.
 * Returns 1 while the nodes deploy, 0 when done at once, or an error. */
int coord_create_query(node *n, cs *s, uint64_t req, const ast_stmt *st, int push, const char *target, xerr *err)
{
    coord *co = n->co;
    if (!push && query_find(co, st->name)) {
        if (st->if_not_exists) {
            char msg[400];
            snprintf(msg, sizeof msg, "query '%s' already exists, skipping", st->name);
            coord_notice_to(s, req, msg);
            return 0;
        }
        return xerr_at(err, XE_EXISTS, st->line, st->col, "query '%s' already exists", st->name);
    }
    uint32_t qid = co->next_qid;
    sbuf sql;
    sbuf_init(&sql);
    if (push) sbuf_printf(&sql, "CREATE QUERY __push_%u AS ", qid);
    int pre = (int)sql.len; /* the planner's columns on line 1 count it */
    sbuf_adds(&sql, st->text);
    plan_dag *d = NULL;
    cquery *q = NULL;
    pnode *nodes = NULL;
    place_node *pl = NULL;
    place_query *pqs = NULL;
    place_game game = {0};
    int *assign = NULL, nq = 0, R = 1;
    nirvana_strategy strat;
    int rc;
    if (!sql.p) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    if ((rc = query_placement_opts(co, st, &strat, &R, err))) goto out;
    const ast_option *oo = st->kind == ST_CREATE_QUERY ? ast_option_get(st->with, "offset") : NULL;
    int earliest = co->offset_earliest;
    if (oo && strcmp(oo->value, "latest") && strcmp(oo->value, "earliest")) {
        rc = xerr_at(err, XE_INVAL, oo->line, oo->col, "offset must be 'earliest' or 'latest', not '%s'", oo->value);
        goto out;
    }
    if (oo) earliest = !strcmp(oo->value, "earliest");
    /* a push query reads a bounded stream's log from its start, as an
     * embedded engine's does: the homes know which streams ended */
    earliest = earliest ? ENGINE_EARLIEST_ALL : push ? ENGINE_EARLIEST_BOUNDED : 0;
    const ast_option *sink = st->kind == ST_CREATE_QUERY ? ast_option_get(st->with, "sink") : NULL;
    if (sink && strncmp(sink->value, "tcp://", 6) && strncmp(sink->value, "unix://", 7)) {
        rc = xerr_at(err, XE_INVAL, sink->line, sink->col, "sink '%s': a cluster writes socket sinks only (tcp://HOST:PORT or unix:///path, "
                                     "from the coordinator); use SUBSCRIBE, or an embedded engine for a file sink",
                      sink->value);
        goto out;
    }
    if ((rc = engine_plan(n->eng, sql.p, &d, err))) {
        if (err->line == 1 && err->col > pre) err->col -= pre;
        goto out;
    }
    if ((rc = table_check(co, st, d, err))) goto out;
    nodes = calloc((size_t)n->npeers + 1, sizeof *nodes);
    pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    nq = running_queries(co, NULL) + 1;
    pqs = calloc((size_t)nq, sizeof *pqs);
    if (!nodes || !pl || !pqs) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    /* the live nodes, this one first; the running queries stay where they
     * run; the new one plays */
    int nn = cluster_nodes(n, 0, nodes, pl), k = 0, two_domains = 0;
    for (int i = 1; i < nn; i++) two_domains |= strcmp(pl[i].domain, pl[0].domain) != 0;
    if (R > 0 && !two_domains) {
        /* a replica needs a live domain other than its primary's (the
         * running queries are placed again with the same R: none for them
         * either, or a stateless query after a stateful one failed here) */
        if (d->stateful)
            node_log(n, NET_LOG_WARN, "query %u: one live failure domain, so it gets no replicas (replicas = %d asked)",
                     qid, R);
        R = 0;
    }
    for (cquery *x = co->queries; x; x = x->next)
        if (!x->ended && x->dag && (rc = pq_of(n, x, pl, nn, R, 1, &pqs[k++], err))) goto out;
    place_query *me = &pqs[k];
    int nt = plan_task_count(d);
    int *home = calloc((size_t)nt + 1, sizeof *home);
    me->home = home;
    me->node = malloc(((size_t)nt + 1) * sizeof *me->node);
    me->rnode = malloc(((size_t)nt * (size_t)R + 1) * sizeof *me->rnode);
    if (!home || !me->node || !me->rnode) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    me->d = d;
    me->name = push ? "push" : st->name;
    if ((rc = op_homes(n, d, pl, nn, home, 1, err))) goto out;
    if ((rc = place_build(&game, pl, nn, pqs, nq, R, strat, err)) || (rc = place_run(&game, pqs, nq, err))) {
        if (rc == XE_FULL || rc == XE_INVAL) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            rc = xerr_set(err, rc, "cannot place the query with %s: %s (add nodes, raise --slots, lower replicas "
                                   "or drop a query)", nirvana_strategy_name(strat), why);
        }
        goto out;
    }
    assign = me->node;
    if (!(q = calloc(1, sizeof *q))) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    sbuf_init(&q->plan);
    sbuf_init(&q->enc);
    sbuf_init(&q->backlog);
    q->qid = qid;
    q->push = push;
    q->keep = push && s && s->failover;
    q->sql = sbuf_steal(&sql);
    q->co_node = n;
    if (q->keep) {
        char pname[32];
        snprintf(pname, sizeof pname, "push#%u", qid);
        q->name = strdup(pname);
    }
    if ((!push && !(q->name = strdup(st->name))) || (q->keep && !q->name) || (rc = cq_from_plan(q, d, err))) {
        if (!rc) rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    for (int t = 0; t < q->ntasks; t++)
        if (!(q->tnode[t] = strdup(nodes[assign[t]].name))) {
            rc = xerr_set(err, XE_NOMEM, "out of memory");
            goto out;
        }
    if (cq_set_replicas(q, me, pl, R)) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    q->strategy = strat;
    q->rounds = game.r->rounds;
    q->moves = game.r->moves;
    q->converged = game.r->converged;
    q->dag = d;
    d = NULL;
    q->origin = qid;
    if ((rc = query_ft_opts(co, st, &q->ft, &q->ckpt_ms, err))) goto out;
    if (target && (rc = derive_bind(n, q, target, err))) goto out;
    if ((rc = coord_plan_blob(&q->plan, nodes, nn, assign, q))) {
        rc = xerr_set(err, rc, "cannot encode the deployment");
        goto out;
    }
    co->next_qid++;
    if ((rc = persist_next_qid(n, err))) goto out;
    if ((!push || q->keep) && (rc = persist_query(n, q, err))) goto out;
    /* offset = 'earliest' is in the first DEPLOY's plan only: one sent
     * again (a node that joins, a restarted coordinator) starts where the
     * query is, as a first deployment with its state does not repeat */
    q->earliest = earliest;
    if (earliest) {
        sbuf_reset(&q->plan);
        if ((rc = coord_plan_blob(&q->plan, nodes, nn, assign, q))) {
            rc = xerr_set(err, rc, "cannot encode the deployment");
            goto out;
        }
    }
    if ((rc = node_deploy(n, qid, q->plan.p, q->plan.len, &q->out, err))) {
        if (!push || q->keep) {
            char key[64];
            xerr e2;
            snprintf(key, sizeof key, "q/%010u", qid);
            cat_del(n, key, &e2);
        }
        goto out;
    }
    if (push) {
        csub *x = calloc(1, sizeof *x);
        if (x) {
            x->to = s;
            x->req = req;
            q->subs = x;
        }
        cq_begin(q, s, req);
        /* its name, to attach again after a failover */
        if (q->keep) cs_result(s, req, 0, RES_NAME, 0, q->name, strlen(q->name));
    }
    cq_link(co, q);
    {
        sbuf line;
        sbuf_init(&line);
        for (int t = 0; t < q->ntasks; t++) sbuf_printf(&line, "%s%s", t ? " " : "", q->tnode[t]);
        for (int i = 0; i < q->ntasks * q->nrep; i++)
            if (q->rnode[i]) sbuf_printf(&line, " %s#%d/r%d@%s", q->tkind[i / q->nrep], q->tidx[i / q->nrep], i % q->nrep, q->rnode[i]);
        node_log(n, NET_LOG_INFO, "query %u (%s) placed by %s in %d rounds: %s", qid, q->name ? q->name : "push",
                 nirvana_strategy_name(q->strategy), q->rounds, line.p ? line.p : "");
        sbuf_fini(&line);
    }
    pend *p = pend_new(n, PK_BROADCAST);
    if (!p) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        cq_drop(n, q);
        q = NULL;
        goto out;
    }
    p->client = s;
    p->creq = req;
    p->q = q;
    cquery *dq = q;
    q = NULL; /* linked: the coordinator owns it now */
    /* with no other node the broadcast finishes p at once: the job then goes
     * on from our return value, not from p->done */
    int sent = send_deploy(n, NULL, p, dq);
    if (dq->earliest) {
        dq->earliest = 0;
        sbuf_reset(&dq->plan);
        if (coord_plan_blob(&dq->plan, nodes, nn, assign, dq))
            node_log(n, NET_LOG_ERROR, "query %u: cannot encode its deployment again", qid);
    }
    if (sent == 1) {
        p->done = deploy_done;
        rc = 1;
    } else {
        if (!push && !target) coord_notice_to(s, req, "CREATE QUERY");
        rc = 0;
    }
out:
    sbuf_fini(&sql);
    plan_free(d);
    free(nodes);
    free(pl);
    for (int i = 0; pqs && i < nq; i++) pq_fini(&pqs[i]);
    free(pqs);
    place_game_fini(&game);
    if (q) cq_free(q);
    return rc;
}

int coord_drop_query(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    cquery *q = query_find(n->co, st->name);
    if (!q) {
        if (st->if_exists) {
            char msg[400];
            snprintf(msg, sizeof msg, "query '%s' does not exist, skipping", st->name);
            coord_notice_to(s, req, msg);
            return 0;
        }
        return xerr_set(err, XE_NOTFOUND, "query '%s' does not exist", st->name);
    }
    if (q->target)
        return xerr_at(err, XE_PLAN, st->line, st->col, "query '%s' makes derived stream '%s'; DROP STREAM %s drops both",
                       q->name, q->target, q->target);
    uint32_t qid = q->qid;
    cq_drop(n, q);
    node_log(n, NET_LOG_INFO, "query %u (%s) dropped", qid, st->name);
    coord_notice_to(s, req, "DROP QUERY");
    return 0;
}

/* CANCEL: the client stops its push queries and subscriptions (Ctrl-C in
 * the shell).  Each ends for it (END after the rows already sent); a push
 * query left without its owner is dropped everywhere, a standing query
 * goes on for its other subscribers. */
void cancel_results(node *n, cs *s, uint64_t req)
{
    for (cquery *q = n->co->queries, *nx; q; q = nx) {
        nx = q->next;
        int had = 0;
        for (csub **pp = &q->subs; *pp;) {
            csub *x = *pp;
            if (x->to == s && (!req || x->req == req)) {
                *pp = x->next;
                cs_result(s, x->req, WIRE_F_LAST, RES_END, 0, NULL, 0);
                csub_free(x);
                had = 1;
            } else
                pp = &x->next;
        }
        if (had && q->push && !q->subs && !q->ended) {
            node_log(n, NET_LOG_INFO, "push query %u ends: its client stopped it", q->qid);
            cq_drop(n, q);
        }
    }
}
