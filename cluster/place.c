/*
 * place.c: the coordinator's side of placement.  It turns the live cluster
 * (nodes with their domain labels, slots and speeds) and every running query
 * (its operator DAG and where its tasks and replicas are) into one
 * nirvana_problem, and hands it to the placement library (planner/placement),
 * so that congestion and replicas of all queries count.
 *
 * Pinning.  The library's nirvana_pin holds a player on a node under every
 * strategy.  We pin:
 *   - every task with a home (a source task at the home node of the
 *     partition it reads, the sink at the coordinator, which delivers the
 *     results);
 *   - every task and replica of a `fixed` query where it runs now: a query
 *     that is already deployed does not move when another one arrives.
 * So placing a new query plays the new query's free tasks and replicas
 * against fixed loads, and EXPLAIN PLACEMENT's certificate is about the
 * query's own free players.
 *
 * Slots.  --slots counts the players placement chooses to put on a node;
 * the tasks pinned there by a query's shape (sources at their stream's
 * home, sinks here) come on top, since they could run nowhere else.
 *
 * Measured inputs (measure.c; docs/nirvana.md, "The measured-cost model").
 * A query whose place_query carries meas has its tasks' load, state,
 * recovery, replica costs and edge traffic replaced by the measured ones;
 * the planner's seeds are kept in the game (seed, seed_out) for EXPLAIN.
 * The measured loads and traffic are the rates the query runs at now; like
 * the seeds, they are then scaled to the peak (peak_scale), so that a
 * placement does not depend on the rate the query happened to run at.
 * A node's speed is what place_node says (the capacity it reported, when
 * it did).  Distances are the library's defaults by domain (0 on a node,
 * 0.2 within a domain, 1.0 across), raised by measured round trips where
 * the nodes reported them (meas_distance).
 *
 * Pure: no I/O; the problem and result live in a place_game the caller
 * finishes with place_game_fini.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"

void place_game_fini(place_game *g)
{
    if (!g) return;
    nirvana_result_free(g->r);
    nirvana_problem_free(g->p);
    free(g->first);
    free(g->seed);
    free(g->seed_out);
    free(g->used_out);
    free(g->measured);
    memset(g, 0, sizeof *g);
}

/* Each measured node's busy CPU that no running player accounts for: its
 * utilisation times its capacity, less the loads of the players that run
 * there now.  Tasks clock their operators' CPU; the rest (the syscalls that
 * send and receive their batches, their share of each epoch's commit, a
 * shadow home's decoding, the coordinator's forwarding) the game would
 * otherwise not see.  It is split in two (docs/nirvana.md, "Background
 * load"):
 *   - a fixed part every node pays whatever it hosts (heartbeats, ticks,
 *     reports), taken as the least unattributed CPU of any measured node,
 *     stays with the node as its background load;
 *   - the rest goes with the node's measured players, in proportion to the
 *     rows each takes in and gives out, into their loads: it moves when they
 *     move.  With no measured rows there, it stays with the node. */
/* The rows a task takes in and gives out a second (0 when unknown). */
static double row_rate(const place_meas *m)
{
    double r = m->rows_in_s + m->rows_out_s;
    return isfinite(r) && r > 0 ? r : 0;
}

static void base_loads(place_game *g, const place_node *nodes, int nn, const place_query *qs, int nq)
{
    nirvana_problem *p = g->p;
    int R = p->replicas, N = nn < p->nnodes ? nn : p->nnodes;
    double *extra = calloc((size_t)N + 1, sizeof *extra), *rows = calloc((size_t)N + 1, sizeof *rows), fixed = -1;
    if (!extra || !rows) goto out;
    for (int i = 0; i < N; i++) {
        extra[i] = -1;
        if (!nodes[i].measured || !(nodes[i].util > 0)) continue;
        double busy = nodes[i].util * p->nodes[i].speed, mine = 0;
        for (int q = 0; q < nq; q++) {
            if (!qs[q].running || !qs[q].node) continue;
            for (int t = 0, nt = plan_task_count(qs[q].d); t < nt; t++) {
                const nirvana_task *x = &p->tasks[g->first[q] + t];
                if (qs[q].node[t] == i) {
                    mine += x->load;
                    if (qs[q].meas) rows[i] += row_rate(&qs[q].meas[t]);
                }
                for (int r = 0; qs[q].rnode && x->stateful && r < R; r++)
                    if (qs[q].rnode[t * R + r] == i) mine += x->replica_load;
            }
        }
        extra[i] = busy > mine ? busy - mine : 0;
        if (fixed < 0 || extra[i] < fixed) fixed = extra[i];
    }
    for (int i = 0; i < N; i++) {
        if (extra[i] < 0) continue;
        double var = extra[i] - fixed;
        p->nodes[i].base_load = fixed + (rows[i] > 0 ? 0 : var);
        if (!(rows[i] > 0) || !(var > 0)) continue;
        for (int q = 0; q < nq; q++) {
            if (!qs[q].running || !qs[q].node || !qs[q].meas) continue;
            for (int t = 0, nt = plan_task_count(qs[q].d); t < nt; t++)
                if (qs[q].node[t] == i)
                    p->tasks[g->first[q] + t].load += var * row_rate(&qs[q].meas[t]) / rows[i];
        }
    }
out:
    free(extra);
    free(rows);
}

/* Keep the seeds; replace them by the measured inputs where a query has
 * them. */
static int use_measured(place_game *g, const place_query *qs, int nq)
{
    nirvana_problem *p = g->p;
    int T = p->ntasks;
    g->seed = malloc(((size_t)T + 1) * sizeof *g->seed);
    g->seed_out = calloc((size_t)T + 1, sizeof *g->seed_out);
    g->used_out = calloc((size_t)T + 1, sizeof *g->used_out);
    g->measured = calloc((size_t)T + 1, 1);
    if (!g->seed || !g->seed_out || !g->used_out || !g->measured) return XE_NOMEM;
    memcpy(g->seed, p->tasks, (size_t)T * sizeof *p->tasks);
    for (int e = 0; e < p->nedges; e++) g->seed_out[p->edges[e].from] += p->edges[e].traffic;
    /* task -> its query, and the first task of each op of that query */
    for (int q = 0; q < nq; q++) {
        if (!qs[q].meas) continue;
        int first = g->first[q], nt = 0;
        for (int o = 0; o < qs[q].d->nops; o++) nt += qs[q].d->ops[o].parallelism;
        for (int t = 0; t < nt; t++) {
            const place_meas *m = &qs[q].meas[t];
            nirvana_task *x = &p->tasks[first + t];
            x->load = m->load;
            if (x->stateful) {
                x->state_mb = m->state_mb;
                x->recovery_s = m->recovery_s;
                x->replica_load = m->replica_load;
                x->repl_traffic = m->repl_traffic;
            }
            g->measured[first + t] = 1;
            x->measured = 1;
        }
        for (int e = 0; e < p->nedges; e++) {
            nirvana_edge *ed = &p->edges[e];
            if (ed->from < first || ed->from >= first + nt) continue;
            /* the destination's index within its op: tasks of an op are contiguous */
            int to = ed->to, b = 0;
            while (to - b - 1 >= first && p->tasks[to - b - 1].op == p->tasks[to].op) b++;
            const place_meas *m = &qs[q].meas[ed->from - first];
            ed->traffic = b < m->ndest ? m->traffic[b] : 0;
        }
    }
    for (int e = 0; e < p->nedges; e++) g->used_out[p->edges[e].from] += p->edges[e].traffic;
    return 0;
}

/* The peak (docs/nirvana.md, "Placing for the peak").  A query is placed
 * for the rate the live nodes can carry, as its seeds are
 * (plan_placement_tasks): every measured player's load and replica load,
 * and every measured edge's traffic and replica deltas, grow by one factor,
 * so that the measured players would fill the live nodes' capacity less
 * their background loads.  Measured at a lower rate (a paced input, or a
 * placement held back by its bottleneck), processing costs, quadratic in
 * the rate, would otherwise shrink beside transfer, linear in it, and the
 * game would trade balance for locality at exactly the rate where balance
 * decides the throughput.  Never scaled down (a query measured past the
 * capacity runs at what it runs at), and at most MEAS_PEAK_MAX times (an
 * idle query's loads are noise). */
static void peak_scale(place_game *g)
{
    nirvana_problem *p = g->p;
    double room = 0, used = 0;
    for (int n = 0; n < p->nnodes; n++)
        if (p->nodes[n].alive) room += p->nodes[n].speed - p->nodes[n].base_load;
    for (int t = 0; t < p->ntasks; t++)
        if (g->measured[t]) used += p->tasks[t].load + (p->tasks[t].stateful ? p->replicas * p->tasks[t].replica_load : 0);
    g->peak = 1;
    if (!(used > 0) || !(room > used)) return;
    double k = room / used;
    if (k > MEAS_PEAK_MAX) k = MEAS_PEAK_MAX;
    g->peak = k;
    for (int t = 0; t < p->ntasks; t++) {
        if (!g->measured[t]) continue;
        nirvana_task *x = &p->tasks[t];
        x->load *= k;
        x->replica_load *= k;
        x->repl_traffic *= k;
        g->used_out[t] *= k;
    }
    for (int e = 0; e < p->nedges; e++)
        if (g->measured[p->edges[e].from]) p->edges[e].traffic *= k;
}

/* The distance matrix from the round trips the nodes reported, when any. */
static int use_distances(place_game *g, const place_node *nodes, int nn)
{
    int any = 0;
    for (int i = 0; i < nn; i++) any |= nodes[i].rtt_ms != NULL;
    if (!any) return 0;
    nirvana_problem *p = g->p;
    double *m = calloc((size_t)nn * (size_t)nn + 1, sizeof *m);
    if (!m) return XE_NOMEM;
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < nn; j++) {
            if (i == j) continue;
            double dflt = p->nodes[i].domain == p->nodes[j].domain ? p->d_intra : p->d_inter;
            double a = nodes[i].rtt_ms ? nodes[i].rtt_ms[j] : 0, b = nodes[j].rtt_ms ? nodes[j].rtt_ms[i] : 0;
            double rtt = a > 0 && b > 0 ? (a + b) / 2 : a > 0 ? a : b; /* symmetric */
            m[(size_t)i * nn + j] = meas_distance(dflt, rtt);
            if (m[(size_t)i * nn + j] > dflt) g->dist_measured = 1;
        }
    int rc = nirvana_set_distance_matrix(p, m);
    free(m);
    return rc < 0 ? rc : 0;
}

int place_build(place_game *g, const place_node *nodes, int nn, const place_query *qs, int nq, int replicas,
                nirvana_strategy s, xerr *err)
{
    memset(g, 0, sizeof *g);
    g->peak = 1;
    int rc = 0, nlive = 0;
    if (!(g->p = nirvana_problem_new()) || !(g->first = calloc((size_t)nq + 1, sizeof *g->first))) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto fail;
    }
    nirvana_config_init(&g->c);
    g->c.strategy = s;
    g->c.repair_rounds = 0; /* after a failure the survivors stay where they run */
    g->p->replicas = replicas;
    /* domains: numbered in the order their labels first appear */
    int ndom = 0;
    for (int i = 0; i < nn; i++) {
        int dom = -1;
        for (int j = 0; j < i && dom < 0; j++)
            if (!strcmp(nodes[j].domain, nodes[i].domain)) dom = g->p->nodes[j].domain;
        if (dom < 0) dom = ndom++;
        double speed = nodes[i].speed > 0 ? nodes[i].speed : 1.0;
        /* tasks pinned by the query's shape come on top of the slots */
        int extra = 0;
        for (int q = 0; q < nq; q++)
            for (int t = 0, nt = plan_task_count(qs[q].d); qs[q].home && t < nt; t++) extra += qs[q].home[t] == i;
        if ((rc = nirvana_add_node(g->p, nodes[i].name, dom, nodes[i].slots + extra, speed)) < 0) {
            rc = xerr_set(err, rc, "node %s: bad slots or speed", nodes[i].name);
            goto fail;
        }
        g->p->nodes[i].alive = nodes[i].alive;
        nlive += nodes[i].alive != 0;
    }
    if (!nlive) {
        rc = xerr_set(err, XE_FULL, "no node is alive to run the query");
        goto fail;
    }
    for (int q = 0; q < nq; q++)
        if ((rc = plan_placement_tasks(qs[q].d, q, qs[q].name, 0, g->p, &g->first[q], err))) goto fail;
    if ((rc = use_measured(g, qs, nq)) || (rc = use_distances(g, nodes, nn))) {
        rc = xerr_set(err, rc, "out of memory");
        goto fail;
    }
    base_loads(g, nodes, nn, qs, nq);
    peak_scale(g);
    for (int q = 0; q < nq; q++) {
        const place_query *pq = &qs[q];
        int t = g->first[q];
        for (int o = 0; o < pq->d->nops; o++)
            for (int k = 0; k < pq->d->ops[o].parallelism; k++, t++) {
                int at = pq->fixed && pq->node ? pq->node[t - g->first[q]] : -1;
                if (at < 0 && pq->home) at = pq->home[t - g->first[q]];
                if (at >= 0 && (rc = nirvana_pin(g->p, t, -1, at)) < 0) goto pin_fail;
                if (!pq->fixed || !pq->rnode) continue;
                for (int r = 0; r < replicas; r++) {
                    int rn = pq->rnode[(t - g->first[q]) * replicas + r];
                    if (rn >= 0 && (rc = nirvana_pin(g->p, t, r, rn)) < 0) goto pin_fail;
                }
            }
    }
    return 0;
pin_fail:
    rc = xerr_set(err, rc, "cannot pin the running tasks (%s)", xerr_name(rc));
fail:
    place_game_fini(g);
    return rc;
}

/* The result's nodes, into node[] and rnode[] of every query (or of the
 * queries that are not fixed). */
static void write_back(place_game *g, place_query *qs, int nq, int all)
{
    int R = g->p->replicas;
    for (int q = 0; q < nq; q++) {
        if (qs[q].fixed && !all) continue;
        int nt = plan_task_count(qs[q].d);
        for (int t = 0; t < nt; t++) {
            int pt = g->first[q] + t;
            qs[q].node[t] = g->r->players[pt].node;
            for (int r = 0; r < R && qs[q].rnode; r++) {
                int pl = nirvana_replica_player(g->p, pt, r);
                qs[q].rnode[t * R + r] = pl >= 0 ? g->r->players[pl].node : -1;
            }
        }
    }
}

/* The current node[]/rnode[] of every query as a player assignment. */
static int *assignment_of(place_game *g, const place_query *qs, int nq)
{
    int P = nirvana_player_count(g->p), R = g->p->replicas;
    int *as = malloc(((size_t)P + 1) * sizeof *as);
    if (!as) return NULL;
    for (int i = 0; i < P; i++) as[i] = -1;
    for (int q = 0; q < nq; q++) {
        int nt = plan_task_count(qs[q].d);
        for (int t = 0; t < nt; t++) {
            int pt = g->first[q] + t;
            as[pt] = qs[q].node ? qs[q].node[t] : -1;
            for (int r = 0; r < R && qs[q].rnode; r++) {
                int pl = nirvana_replica_player(g->p, pt, r);
                if (pl >= 0) as[pl] = qs[q].rnode[t * R + r];
            }
        }
    }
    return as;
}

int place_run(place_game *g, place_query *qs, int nq, xerr *err)
{
    int rc = nirvana_place(g->p, &g->c, &g->r, err);
    if (rc < 0) return rc;
    write_back(g, qs, nq, 0);
    return 0;
}

int place_again(place_game *g, place_query *qs, int nq, xerr *err)
{
    int *as = assignment_of(g, qs, nq);
    nirvana_result *prev = calloc(1, sizeof *prev);
    int P = nirvana_player_count(g->p), rc = 0;
    if (!as || !prev || !(prev->players = calloc((size_t)P + 1, sizeof *prev->players))) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    /* only the layout and the nodes of prev matter to nirvana_replace */
    prev->strategy = g->c.strategy;
    prev->ntasks = g->p->ntasks;
    prev->replicas = g->p->replicas;
    prev->nplayers = P;
    for (int t = 0; t < g->p->ntasks; t++) {
        prev->players[t] = (nirvana_player){.task = t, .replica = -1, .node = as[t]};
        for (int r = 0; r < g->p->replicas; r++) {
            int pl = nirvana_replica_player(g->p, t, r);
            if (pl >= 0) prev->players[pl] = (nirvana_player){.task = t, .replica = r, .node = as[pl]};
        }
    }
    if ((rc = nirvana_replace(g->p, &g->c, prev, &g->r, err)) < 0) goto out;
    write_back(g, qs, nq, 1);
out:
    nirvana_result_free(prev);
    free(as);
    return rc;
}

int place_score(place_game *g, const place_query *qs, int nq, xerr *err)
{
    int *as = assignment_of(g, qs, nq);
    if (!as) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc = nirvana_result_from_assignment(g->p, &g->c, as, &g->r, err);
    free(as);
    return rc < 0 ? rc : 0;
}

int place_rebalance(place_game *g, place_query *qs, int nq, double threshold, nirvana_rb_move *moves, int max,
                    int *nmoves, xerr *err)
{
    int P = nirvana_player_count(g->p), R = g->p->replicas, rc;
    int *as = assignment_of(g, qs, nq), N = g->p->nnodes;
    unsigned char *mode = calloc((size_t)P + 1, 1), *avoid = calloc((size_t)P * (size_t)N + 1, 1);
    if (!as || !mode || !avoid) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto out;
    }
    for (int q = 0; q < nq; q++) {
        if (qs[q].fixed) continue; /* pinned anyway */
        int nt = plan_task_count(qs[q].d);
        for (int t = 0; t < nt; t++) {
            int pt = g->first[q] + t;
            mode[pt] = qs[q].keep_state && R > 0 && g->p->tasks[pt].stateful ? NIRVANA_RB_WITH_STATE : NIRVANA_RB_FREE;
            for (int r = 0; r < R; r++) {
                int pl = nirvana_replica_player(g->p, pt, r);
                if (pl >= 0) mode[pl] = NIRVANA_RB_FREE;
            }
            /* with checkpoints only the first replica holds the state */
            for (int r = 1; qs[q].keep_state == 2 && r < R; r++) {
                int pl = nirvana_replica_player(g->p, pt, r);
                if (pl >= 0 && as[pl] >= 0) avoid[(size_t)pt * (size_t)N + (size_t)as[pl]] = 1;
            }
            for (int r = -1; qs[q].avoid && r < R; r++) {
                int pl = r < 0 ? pt : nirvana_replica_player(g->p, pt, r), at = qs[q].avoid[t * (1 + R) + r + 1];
                if (pl >= 0 && at >= 0 && at < N) avoid[(size_t)pl * (size_t)N + (size_t)at] = 1;
            }
        }
    }
    g->c.max_util = PLACE_MAX_UTIL;
    g->c.util_scale = g->peak; /* judged at the measured rate, not the peak's */
    if ((rc = nirvana_rebalance_avoiding(g->p, &g->c, as, mode, avoid, threshold, max, moves, nmoves, err)) < 0)
        goto out;
    nirvana_result_free(g->r);
    g->r = NULL;
    if ((rc = nirvana_result_from_assignment(g->p, &g->c, as, &g->r, err)) < 0) goto out;
    write_back(g, qs, nq, 1);
    rc = 0;
out:
    free(avoid);
    free(mode);
    free(as);
    return rc;
}

void place_player_inputs(const place_game *g, const place_query *qs, int q, int t, int replica, place_inputs *out)
{
    int id = g->first[q] + t;
    const nirvana_task *seed = &g->seed[id], *used = &g->p->tasks[id];
    const place_meas *m = qs[q].meas ? &qs[q].meas[t] : NULL;
    *out = (place_inputs){.measured = g->measured[id], .load_meas = NAN, .traffic_meas = NAN, .rec_meas = NAN,
                          .rows_in = NAN, .rows_in_s = NAN, .cpu_ms = NAN};
    if (replica < 0) {
        out->load_seed = seed->load;
        out->traffic_seed = g->seed_out[id];
        out->rec_seed = seed->stateful ? seed->recovery_s : 0;
        if (m) {
            out->load_meas = used->load / g->peak;
            out->traffic_meas = g->used_out[id] / g->peak;
            out->rec_meas = used->stateful ? used->recovery_s : 0;
        }
    } else {
        out->load_seed = seed->replica_load;
        out->traffic_seed = seed->repl_traffic;
        out->rec_seed = seed->recovery_s;
        if (m) {
            out->derived = !m->replica_measured;
            out->load_meas = used->replica_load / g->peak;
            out->traffic_meas = used->repl_traffic / g->peak;
            out->rec_meas = used->recovery_s;
        }
    }
    if (m) {
        out->rows_in = (double)m->rows_in;
        out->rows_in_s = m->rows_in_s;
        out->cpu_ms = (double)m->cpu_ns / 1e6;
    }
}
