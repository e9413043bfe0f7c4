/*
 * eval.c: the reference scorer.  Everything here computes costs from scratch,
 * straight from the definitions in docs/nirvana.md, with no incremental
 * bookkeeping: the potential and social cost of an assignment, each player's
 * cost share, the exhaustive equilibrium check behind EXPLAIN PLACEMENT, and
 * the EXPLAIN text itself.  The game (game.c) keeps counters instead; the unit
 * tests hold the two against each other.
 */
#include "planner/placement/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-assignment context: node loads and the players on each node. */
typedef struct ectx {
    const nirvana_problem *p;
    const nv_graph *g;
    const int *as;
    double wp, wt, wr;
    double *L;
    int *count;
    int *noff, *nlist; /* players by node, CSR */
} ectx;

static int ectx_init(ectx *x, const nirvana_problem *p, const nirvana_config *c, const nv_graph *g,
                     const int *as, xerr *e)
{
    memset(x, 0, sizeof *x);
    x->p = p;
    x->g = g;
    x->as = as;
    x->wp = c->w_proc;
    x->wt = c->w_trans;
    x->wr = nv_wrec(c);
    int N = p->nnodes;
    x->L = NV_ZALLOC(p, N, double);
    x->count = NV_ZALLOC(p, N, int);
    x->noff = NV_ZALLOC(p, N + 1, int);
    x->nlist = NV_ALLOC(p, g->P, int);
    int *fill = NV_ZALLOC(p, N, int);
    if (!x->L || !x->count || !x->noff || !x->nlist || !fill)
        return xerr_set(e, XE_NOMEM, "placement: out of memory");
    for (int n = 0; n < N; n++) x->L[n] = p->nodes[n].base_load;
    for (int i = 0; i < g->P; i++) {
        int n = as[i];
        if (n < -1 || n >= N)
            return xerr_set(e, XE_INVAL, "placement: player %d on node %d of %d", i, n, N);
        if (n < 0) continue;
        x->L[n] += g->load[i];
        x->count[n]++;
        x->noff[n + 1]++;
    }
    for (int n = 0; n < N; n++) x->noff[n + 1] += x->noff[n];
    for (int i = 0; i < g->P; i++)
        if (as[i] >= 0) x->nlist[x->noff[as[i]] + fill[as[i]]++] = i;
    return 0;
}

static int dom_of(const ectx *x, int n) { return x->p->nodes[n].domain; }

/*
 * Serial-recovery pairs seen by replica r (of task a) if it sat on node n:
 * sum over other replicas on n whose primaries share a's primary's domain of
 * (sigma_a + sigma_b) / speed(n).  pdom is the domain a's primary is taken to
 * be in.  Players `skip` (r itself) are ignored.
 */
static double serial_at(const ectx *x, int r, int n, int pdom)
{
    const nv_graph *g = x->g;
    double s = 0;
    for (int k = x->noff[n]; k < x->noff[n + 1]; k++) {
        int j = x->nlist[k];
        if (j == r || !nv_is_replica(g, j) || g->task[j] == g->task[r]) continue;
        int pj = x->as[nv_primary_of(g, j)];
        if (pj < 0 || dom_of(x, pj) != pdom) continue;
        s += (g->sigma[r] + g->sigma[j]) / x->p->nodes[n].speed;
    }
    return s;
}

/* Player i's cost terms if it moved alone to node n (n = as[i]: where it is). */
static void share_at(const ectx *x, int i, int n, double *proc, double *trans, double *rec)
{
    const nirvana_problem *p = x->p;
    const nv_graph *g = x->g;
    double l = g->load[i], v = p->nodes[n].speed;
    double Ln = x->L[n] - (x->as[i] == n ? l : 0);
    *proc = x->wp * l * (Ln + l) / v;
    double tr = 0, rc = 0;
    for (int k = g->off[i]; k < g->off[i + 1]; k++) {
        const nv_adj *a = &g->adj[k];
        int m = x->as[a->nbr];
        if (m < 0) continue;
        tr += 0.5 * x->wt * a->traffic * nv_dist(p, n, m);
        if (a->cascade > 0 && dom_of(x, m) == dom_of(x, n)) rc += 0.5 * x->wr * a->cascade;
    }
    if (x->wr > 0) {
        if (nv_is_replica(g, i)) {
            rc += x->wr * g->sigma[i] / v;
            int pn = x->as[nv_primary_of(g, i)];
            if (pn >= 0) rc += 0.5 * x->wr * serial_at(x, i, n, dom_of(x, pn));
        } else if (g->rep_base[i] >= 0) {
            for (int k = 0; k < g->R; k++) {
                int r = g->rep_base[i] + k, m = x->as[r];
                if (m >= 0) rc += 0.5 * x->wr * serial_at(x, r, m, dom_of(x, n));
            }
        }
    }
    *trans = tr;
    *rec = rc;
}

static double share_cost(const ectx *x, int i, int n)
{
    double a, b, c;
    share_at(x, i, n, &a, &b, &c);
    return a + b + c;
}

int nv_cost_at(const nirvana_problem *p, const nirvana_config *c, const nv_graph *g, const int *assign, int i,
               double *cost, xerr *e)
{
    nv_mark m = nv_mark_get(p);
    ectx x;
    int rc = ectx_init(&x, p, c, g, assign, e);
    if (rc >= 0) *cost = assign[i] >= 0 ? share_cost(&x, i, assign[i]) : HUGE_VAL;
    nv_release(p, m);
    return rc < 0 ? rc : 0;
}

int nirvana_score_assignment(const nirvana_problem *p, const nirvana_config *c,
                             const int *assignment, nirvana_score *out, xerr *e)
{
    nv_mark m = nv_mark_get(p);
    nv_graph g;
    int rc = nv_graph_build(&g, p, e);
    if (rc >= 0) rc = nv_score(p, c, &g, assignment, out, e);
    nv_release(p, m);
    return rc;
}

int nv_score(const nirvana_problem *p, const nirvana_config *c, const nv_graph *gp,
             const int *assignment, nirvana_score *out, xerr *e)
{
    const nv_graph g = *gp;
    ectx x;
    int rc = ectx_init(&x, p, c, &g, assignment, e);
    if (rc < 0) return rc;
    memset(out, 0, sizeof *out);
    out->legal = 1;
    const int *as = assignment;

    /* Hard rules. */
    for (int n = 0; n < p->nnodes; n++)
        if (x.count[n] > (p->nodes[n].alive ? p->nodes[n].slots : 0)) out->legal = 0;
    for (int i = 0; i < g.P && out->legal; i++) {
        if (as[i] < 0 || !nv_is_replica(&g, i)) continue;
        int pn = as[nv_primary_of(&g, i)];
        if (pn >= 0 && dom_of(&x, pn) == dom_of(&x, as[i])) out->legal = 0;
        for (int k = 0; k < g.R; k++) {
            int s = g.rep_base[g.task[i]] + k;
            if (s != i && as[s] == as[i]) out->legal = 0;
        }
    }

    /* Processing: Phi = sum_n (L^2 + sum l^2) / 2v, social = sum_n L^2 / v. */
    double phi = 0, proc = 0, trans = 0, rec = 0;
    double *sq = NV_ZALLOC(p, p->nnodes, double);
    double *cas = nv_cascade_weights(p);
    if (!sq || !cas) return xerr_set(e, XE_NOMEM, "placement: out of memory");
    for (int i = 0; i < g.P; i++)
        if (as[i] >= 0) sq[as[i]] += g.load[i] * g.load[i];
    for (int n = 0; n < p->nnodes; n++) {
        double v = p->nodes[n].speed;
        proc += x.wp * x.L[n] * x.L[n] / v;
        phi += x.wp * (x.L[n] * x.L[n] + sq[n]) / (2 * v);
    }

    /* Pairwise terms, each interaction once in social and half in Phi. */
    for (int k = 0; k < p->nedges; k++) {
        const nirvana_edge *ed = &p->edges[k];
        int a = as[ed->from], b = as[ed->to];
        if (a < 0 || b < 0) continue;
        double f = x.wt * ed->traffic * nv_dist(p, a, b);
        trans += f;
        phi += f / 2;
        if (dom_of(&x, a) == dom_of(&x, b)) {
            f = x.wr * cas[k];
            rec += f;
            phi += f / 2;
        }
    }
    for (int t = 0; t < g.T; t++) {
        if (g.rep_base[t] < 0) continue;
        for (int k = 0; k < g.R; k++) {
            int r = g.rep_base[t] + k, a = as[t], b = as[r];
            if (b < 0) continue;
            double self = x.wr * p->tasks[t].recovery_s / p->nodes[b].speed;
            rec += self; /* a player-only term: fully in both */
            phi += self;
            if (a < 0) continue;
            double f = x.wt * p->tasks[t].repl_traffic * nv_dist(p, a, b);
            trans += f;
            phi += f / 2;
        }
    }
    /* Serial recovery: a 4-player term per pair of stacked replicas. */
    for (int n = 0; n < p->nnodes; n++)
        for (int u = x.noff[n]; u < x.noff[n + 1]; u++)
            for (int w = u + 1; w < x.noff[n + 1]; w++) {
                int i = x.nlist[u], j = x.nlist[w];
                if (!nv_is_replica(&g, i) || !nv_is_replica(&g, j) || g.task[i] == g.task[j])
                    continue;
                int pi = as[g.task[i]], pj = as[g.task[j]];
                if (pi < 0 || pj < 0 || dom_of(&x, pi) != dom_of(&x, pj)) continue;
                double f = x.wr * (g.sigma[i] + g.sigma[j]) / p->nodes[n].speed;
                rec += f;
                phi += f / 2;
            }

    if (out->legal) {
        out->potential = phi;
        out->proc = proc;
        out->trans = trans;
        out->rec = rec;
        out->social = proc + trans + rec;
    } else {
        out->potential = out->social = out->proc = out->trans = out->rec = HUGE_VAL;
    }
    return 0;
}

int nv_result_build(const nirvana_problem *p, const nirvana_config *c, const nv_graph *g,
                    const int *assign, nirvana_result **out, xerr *e)
{
    nirvana_score sc;
    int rc = nv_score(p, c, g, assign, &sc, e);
    if (rc < 0) return rc;
    ectx x;
    rc = ectx_init(&x, p, c, g, assign, e);
    if (rc < 0) return rc;
    nirvana_result *r = calloc(1, sizeof *r);
    if (r) r->players = calloc((size_t)g->P + 1, sizeof *r->players);
    if (!r || !r->players) {
        if (r) free(r);
        return xerr_set(e, XE_NOMEM, "placement: out of memory");
    }
    r->strategy = c->strategy;
    r->ntasks = g->T;
    r->replicas = g->R;
    r->nplayers = g->P;
    for (int i = 0; i < g->P; i++) {
        nirvana_player *pl = &r->players[i];
        pl->task = g->task[i];
        pl->replica = g->rep[i];
        pl->node = assign[i];
        if (assign[i] < 0) {
            r->unplaced++;
            continue;
        }
        share_at(&x, i, assign[i], &pl->proc, &pl->trans, &pl->rec);
        pl->cost = pl->proc + pl->trans + pl->rec;
    }
    r->social_cost = sc.social;
    r->proc_cost = sc.proc;
    r->trans_cost = sc.trans;
    r->rec_cost = sc.rec;
    r->potential = sc.potential;
    *out = r;
    return 0;
}

int nirvana_result_from_assignment(const nirvana_problem *p, const nirvana_config *c,
                                   const int *assignment, nirvana_result **out, xerr *e)
{
    nv_mark m = nv_mark_get(p);
    nv_graph g;
    int rc = nv_graph_build(&g, p, e);
    if (rc >= 0) rc = nv_result_build(p, c, &g, assignment, out, e);
    nv_release(p, m);
    return rc;
}

void nirvana_result_free(nirvana_result *r)
{
    if (!r) return;
    free(r->players);
    free(r);
}

/* The assignment a result describes (scratch memory). */
static int *result_assignment(const nirvana_problem *p, const nirvana_result *r)
{
    int *as = NV_ALLOC(p, r->nplayers, int);
    if (!as) return NULL;
    for (int i = 0; i < r->nplayers; i++) as[i] = r->players[i].node;
    return as;
}

int nirvana_check_equilibrium(const nirvana_problem *p, const nirvana_config *c,
                              const nirvana_result *r, nirvana_certificate *cert, xerr *e)
{
    nv_mark m = nv_mark_get(p);
    nv_graph g;
    ectx x;
    int *as = NULL;
    int rc = nv_graph_build(&g, p, e);
    if (rc < 0) goto out;
    if (g.P != r->nplayers) {
        rc = xerr_set(e, XE_INVAL, "placement: result has %d players, problem %d", r->nplayers,
                      g.P);
        goto out;
    }
    if (!(as = result_assignment(p, r))) {
        rc = xerr_set(e, XE_NOMEM, "placement: out of memory");
        goto out;
    }
    rc = ectx_init(&x, p, c, &g, as, e);
    if (rc < 0) goto out;

    memset(cert, 0, sizeof *cert);
    cert->is_equilibrium = 1;
    cert->player = cert->from = cert->to = -1;
    for (int i = 0; i < g.P; i++) {
        int s = as[i];
        if (nv_pinned(&g, i)) continue; /* held on its node: not a player that may deviate */
        double cur = s >= 0 ? share_cost(&x, i, s) : HUGE_VAL;
        double thr = s >= 0 ? c->eps * (1 + fabs(cur)) : 0;
        for (int n = 0; n < p->nnodes; n++) {
            if (n == s || !nv_legal(p, &g, as, x.count, i, n)) continue;
            cert->checked++;
            double gain = cur - share_cost(&x, i, n);
            if (gain > thr && (cert->player < 0 || gain > cert->gain)) {
                cert->is_equilibrium = 0;
                cert->player = i;
                cert->from = s;
                cert->to = n;
                cert->gain = gain;
            }
        }
    }
out:
    nv_release(p, m);
    return rc;
}

static const char *node_name(const nirvana_problem *p, int n)
{
    return n >= 0 ? p->nodes[n].name : "-";
}

static void player_label(const nirvana_problem *p, const nirvana_player *pl, char *buf,
                         size_t size)
{
    if (pl->replica < 0) snprintf(buf, size, "%s", p->tasks[pl->task].name);
    else snprintf(buf, size, "%s/r%d", p->tasks[pl->task].name, pl->replica);
}

int nirvana_explain(const nirvana_problem *p, const nirvana_config *c, const nirvana_result *r,
                    sbuf *out, xerr *e)
{
    nirvana_certificate cert;
    int rc = nirvana_check_equilibrium(p, c, r, &cert, e);
    if (rc < 0) return rc;
    int ok = 0;
    ok |= sbuf_printf(out, "placement: %s, %d players on %d nodes in %d domains\n",
                      nirvana_strategy_name(r->strategy), r->nplayers, p->nnodes, p->ndomains);
    ok |= sbuf_printf(out, "%-28s %-8s %-16s %6s %12s %12s %12s %12s\n", "player", "role", "node",
                      "domain", "processing", "transfer", "recovery", "cost");
    for (int i = 0; i < r->nplayers; i++) {
        const nirvana_player *pl = &r->players[i];
        char who[80];
        player_label(p, pl, who, sizeof who);
        const char *role = pl->replica < 0 ? "task" : "replica";
        int dom = pl->node >= 0 ? p->nodes[pl->node].domain : -1;
        ok |= sbuf_printf(out, "%-28s %-8s %-16s %6d %12.6g %12.6g %12.6g %12.6g\n", who, role,
                          node_name(p, pl->node), dom, pl->proc, pl->trans, pl->rec, pl->cost);
    }
    ok |= sbuf_printf(out,
                      "total cost %.6g (processing %.6g, transfer %.6g, recovery %.6g), "
                      "potential %.6g\n",
                      r->social_cost, r->proc_cost, r->trans_cost, r->rec_cost, r->potential);
    ok |= sbuf_printf(out, "rounds %d, moves %d, %s", r->rounds, r->moves,
                      r->converged ? "converged" : "stopped at the round cap");
    if (r->displaced || r->promoted || r->unplaced)
        ok |= sbuf_printf(out, ", displaced %d, promoted %d, unplaced %d", r->displaced,
                          r->promoted, r->unplaced);
    ok |= sbuf_addc(out, '\n');
    if (cert.is_equilibrium) {
        ok |= sbuf_printf(out,
                          "equilibrium: yes, no player can lower its cost by moving alone "
                          "(%ld deviations checked)\n",
                          cert.checked);
    } else {
        char who[80];
        player_label(p, &r->players[cert.player], who, sizeof who);
        ok |= sbuf_printf(out,
                          "equilibrium: no, %s would lower its cost by %.6g moving %s -> %s "
                          "(%ld deviations checked)\n",
                          who, cert.gain, node_name(p, cert.from), node_name(p, cert.to),
                          cert.checked);
    }
    return ok < 0 ? xerr_set(e, XE_NOMEM, "placement: out of memory") : 0;
}
