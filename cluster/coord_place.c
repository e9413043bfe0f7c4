/*
 * coord_place.c: the coordinator's glue to the placement library (place.c,
 * planner/placement/): the live nodes as placement sees them (this node
 * first, with their measured capacities), a running query as a place_query
 * (where its tasks and replicas run, its pinned sources and sink), and the
 * request for a rebalance soon, which coord_rebalance.c carries out at its
 * tick.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

/* The nodes placement may use, this one first: the live ones, or (all = 1)
 * every joined node with the dead ones marked.  pn (may be NULL) gets what
 * the DEPLOY plan names.  At most 256 (the plan's limit). */
int cluster_nodes(node *n, int all, pnode *pn, place_node *pl)
{
    int nn = 1;
    if (pn) pn[0] = (pnode){n->cfg.name, n->addr, n->cfg.domain};
    pl[0] = (place_node){.name = n->cfg.name, .domain = n->cfg.domain, .slots = n->cfg.slots, .speed = n->cfg.speed, .alive = 1};
    for (int i = 0; i < n->npeers && nn < 256; i++) {
        peer *x = n->peers[i];
        int up = coord_alive(x);
        if (x->standby || !(up || (all && coord_joined(x)))) continue;
        if (pn) pn[nn] = (pnode){x->name, x->addr, x->domain};
        pl[nn++] = (place_node){.name = x->name, .domain = x->domain, .slots = (int)x->slots,
                                .speed = x->speed_milli / 1000.0, .alive = up};
    }
    meas_nodes(n, pl, nn); /* the capacities and round trips they reported */
    return nn;
}

int coord_node_index(const place_node *pl, int nn, const char *name)
{
    for (int i = 0; name && i < nn; i++)
        if (!strcmp(pl[i].name, name)) return i;
    return -1;
}

/* Per task of d, the node it must run on, or -1: a source task at the home
 * of the partition it reads (task p reads partition p), the sink here (node
 * 0).  strict: XE_FULL when a home is not among the nodes (else that task
 * is left free). */
int op_homes(node *n, const plan_dag *d, const place_node *pl, int nn, int *home, int strict, xerr *err)
{
    for (int o = 0, t = 0; o < d->nops; o++)
        for (int k = 0; k < d->ops[o].parallelism; k++, t++) {
            home[t] = -1;
            if (d->ops[o].kind == PO_SINK) home[t] = 0;
            if (d->ops[o].kind != PO_SOURCE) continue;
            cstream *cst = partition_find(n->co, d->ops[o].stream, k);
            const char *h = cst ? cst->home : n->cfg.name;
            int i = coord_node_index(pl, nn, h);
            if (i >= 0 && pl[i].alive) home[t] = i;
            else if (strict)
                return xerr_set(err, XE_FULL, "stream '%s' lives on node %s, which is not alive", cst ? cst->name : d->ops[o].stream, h);
        }
    return 0;
}

void pq_fini(place_query *pq)
{
    free((int *)pq->home);
    free(pq->node);
    free(pq->rnode);
    memset(pq, 0, sizeof *pq);
}

/* A place_query for q over pl with R replicas per task: where q runs now
 * (its first min(R, q->nrep) replicas; the others are free). */
int pq_of(node *n, cquery *q, const place_node *pl, int nn, int R, int fixed, place_query *pq, xerr *err)
{
    memset(pq, 0, sizeof *pq);
    int *home = calloc((size_t)q->ntasks + 1, sizeof *home);
    pq->node = calloc((size_t)q->ntasks + 1, sizeof *pq->node);
    pq->rnode = calloc((size_t)q->ntasks * (size_t)R + 1, sizeof *pq->rnode);
    pq->home = home;
    if (!home || !pq->node || !pq->rnode) {
        pq_fini(pq);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    op_homes(n, q->dag, pl, nn, home, 0, err);
    pq->d = q->dag;
    pq->name = q->name ? q->name : "push";
    pq->fixed = fixed;
    pq->running = 1;
    pq->meas = meas_query(n, q->qid, q->prev, q->dag); /* NULL until it has been measured */
    for (int t = 0; t < q->ntasks; t++) {
        pq->node[t] = coord_node_index(pl, nn, q->tnode ? q->tnode[t] : NULL);
        for (int k = 0; k < R; k++)
            pq->rnode[t * R + k] = k < q->nrep && q->rnode ? coord_node_index(pl, nn, q->rnode[t * q->nrep + k]) : -1;
    }
    return 0;
}

/* q's replica nodes from pq (R per task), as names. */
int cq_set_replicas(cquery *q, const place_query *pq, const place_node *pl, int R)
{
    for (int i = 0; q->rnode && i < q->ntasks * q->nrep; i++) free(q->rnode[i]);
    free(q->rnode);
    q->rnode = NULL;
    q->nrep = R;
    if (!R) return 0;
    if (!(q->rnode = calloc((size_t)q->ntasks * (size_t)R, sizeof *q->rnode))) return XE_NOMEM;
    for (int i = 0; i < q->ntasks * R; i++)
        if (pq->rnode[i] >= 0 && !(q->rnode[i] = strdup(pl[pq->rnode[i]].name))) return XE_NOMEM;
    return 0;
}

/* The queries placement holds fixed: every running one but `except`. */
int running_queries(coord *co, const cquery *except)
{
    int k = 0;
    for (cquery *q = co->queries; q; q = q->next) k += !q->ended && q != except && q->dag;
    return k;
}

/* Ask for a rebalance in delay_ms (the earliest request wins; why says what asked). */
void rebalance_soon(node *n, const char *why, int64_t delay_ms)
{
    coord *co = n->co;
    if (!co || !co->rb_ms) return; /* rebalance_interval = 0: no automatic rebalancing */
    int64_t at = (int64_t)(clock_mono_ns() / 1000000) + delay_ms;
    if (co->rb_soon && co->rb_soon <= at) return;
    co->rb_soon = at;
    snprintf(co->rb_why, sizeof co->rb_why, "%s", why);
}
