/*
 * rebalance.c: live re-placement with hysteresis (nirvana_rebalance).
 *
 * The cluster re-plays best responses for the queries that already run,
 * on costs that change under it (a node's capacity is cut, a node joins).
 * A move is not free: it redeploys the query, and a stateful task takes its
 * state along (docs/nirvana.md, "Live re-placement").  So a player moves only
 * when both hold:
 *   - its own cost falls by more than the threshold theta (SET
 *     rebalance_threshold) of what it is: after < (1 - theta) * before, so
 *     that noise in measured costs, smaller than theta, never moves
 *     anything; and by more than theta of the median player's cost (at the
 *     call's start), so that a player whose cost is a speck of the game's
 *     does not move to save a speck;
 *   - the potential falls (by more than eps);
 *   - the capacity rule (nirvana_config.max_util): a measured player does
 *     not move onto a node its load would fill past max_util of its speed.
 *     The rule only removes moves, so every move made still lowers the
 *     potential by the mover's gain, and nothing here can cycle.  The game is an exact
 *     potential game, so a unilateral move lowers the potential by exactly the
 *     mover's gain; a swap of a primary with its replica moves two players,
 *     and then the potential is what tells a real gain from a shuffle.
 * Every accepted move lowers the potential strictly, and the potential is a
 * function of the assignment alone: on fixed inputs no assignment comes back,
 * so the placement cannot flap; and within one call no player goes back to
 * a node it left (each move redeploys: a round trip would be two for nothing) (tests/unit/test_placement.c checks it, also
 * under noisy inputs).
 *
 * Which moves a player may make is the caller's (mode[]): a stateless task
 * or a replica moves anywhere legal; a stateful primary that must keep its
 * state (NIRVANA_RB_WITH_STATE) only moves onto the node of one of its
 * replicas that still sits where it sat when the call began (that node holds
 * its state: the move is a promotion), and that replica moves with it to
 * any legal node (its old primary's included), where it starts from a
 * snapshot; NIRVANA_RB_FIXED players stay.
 *
 * Pure: the costs come from the reference scorer (eval.c), from scratch for
 * every candidate, which is cheap at the coordinator's sizes (tens of players,
 * a handful of nodes) and keeps this file free of the game's bookkeeping.
 */
#include "planner/placement/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Cost of player i and the potential under `as`; legal = 0 breaks a rule. */
static int judge(const nirvana_problem *p, const nirvana_config *c, const nv_graph *g, const int *as, int i,
                 double *cost, double *phi, int *legal, xerr *e)
{
    nirvana_score sc;
    nv_mark m = nv_mark_get(p);
    int rc = nv_score(p, c, g, as, &sc, e);
    nv_release(p, m);
    if (rc < 0) return rc;
    *legal = sc.legal;
    *phi = sc.potential;
    if (!sc.legal) return 0;
    return nv_cost_at(p, c, g, as, i, cost, e);
}

/* Player i's load, when it is measured (the capacity rule's); else 0. */
static double measured_load(const nirvana_problem *p, const nv_graph *g, int i)
{
    int t = nv_is_replica(g, i) ? nv_primary_of(g, i) : i;
    const nirvana_task *x = &p->tasks[t];
    return x->measured ? (t == i ? x->load : x->replica_load) : 0;
}

/* The capacity rule (nirvana_config.max_util): 1 when measured player i may
 * sit on node n under `as` (which has it there): the node's base load and
 * its measured players' (at the rate measured: over util_scale) stay within
 * max_util of its speed. */
static int fits(const nirvana_problem *p, const nirvana_config *c, const nv_graph *g, const int *as, int i, int n)
{
    if (!(c->max_util > 0) || !(measured_load(p, g, i) > 0)) return 1;
    double L = 0, k = c->util_scale > 0 ? c->util_scale : 1;
    for (int j = 0; j < g->P; j++)
        if (as[j] == n) L += measured_load(p, g, j);
    return p->nodes[n].base_load + L / k <= c->max_util * p->nodes[n].speed * (1 + 1e-12);
}

/* 1 if node n held task t's state when the call began (its primary or a replica). */
static int holds_state(const nv_graph *g, const int *orig, int t, int n)
{
    if (orig[t] == n) return 1;
    for (int k = 0; g->rep_base[t] >= 0 && k < g->R; k++)
        if (orig[g->rep_base[t] + k] == n) return 1;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median cost share of the placed players (0 when none is placed). */
static int median_cost(const nirvana_problem *p, const nirvana_config *c, const nv_graph *g, const int *as, double *out,
                       xerr *e)
{
    nv_mark m = nv_mark_get(p);
    double *v = NV_ALLOC(p, g->P, double);
    int k = 0, rc = 0;
    if (!v) rc = xerr_set(e, XE_NOMEM, "placement: out of memory");
    for (int i = 0; !rc && i < g->P; i++)
        if (as[i] >= 0 && (rc = nv_cost_at(p, c, g, as, i, &v[k], e)) == 0) k++;
    if (!rc) {
        qsort(v, (size_t)k, sizeof *v, cmp_double);
        *out = k ? v[k / 2] : 0;
    }
    nv_release(p, m);
    return rc;
}

int nirvana_rebalance(const nirvana_problem *p, const nirvana_config *c, int *assign, const unsigned char *mode,
                      double threshold, int max_moves, nirvana_rb_move *moves, int *nmoves, xerr *e)
{
    return nirvana_rebalance_avoiding(p, c, assign, mode, NULL, threshold, max_moves, moves, nmoves, e);
}

int nirvana_rebalance_avoiding(const nirvana_problem *p, const nirvana_config *c, int *assign,
                               const unsigned char *mode, const unsigned char *avoid, double threshold, int max_moves,
                               nirvana_rb_move *moves, int *nmoves, xerr *e)
{
    *nmoves = 0;
    if (!(threshold >= 0 && threshold < 1)) return xerr_set(e, XE_INVAL, "rebalance: threshold %g not in [0, 1)", threshold);
    nv_mark m0 = nv_mark_get(p);
    nv_graph g;
    int rc = nv_graph_build(&g, p, e);
    if (rc < 0) goto out;
    int *order = nv_play_order(p, &g);
    int *orig = NV_ALLOC(p, g.P, int), *cand = NV_ALLOC(p, g.P, int), *best = NV_ALLOC(p, g.P, int);
    /* left[i * N + n]: player i left node n in this call; it does not go back */
    unsigned char *left = NV_ZALLOC(p, (size_t)g.P * (size_t)p->nnodes, unsigned char);
    if (!order || !orig || !cand || !best || !left) {
        rc = xerr_set(e, XE_NOMEM, "placement: out of memory");
        goto out;
    }
    if (avoid) memcpy(left, avoid, (size_t)g.P * (size_t)p->nnodes);
    memcpy(orig, assign, (size_t)g.P * sizeof *orig);
    double median = 0;
    if ((rc = median_cost(p, c, &g, assign, &median, e)) < 0) goto out;
    for (int moved = 1; moved && *nmoves < max_moves;) {
        moved = 0;
        for (int oi = 0; oi < g.P && *nmoves < max_moves; oi++) {
            int i = order[oi], from = assign[i];
            if (from < 0 || nv_pinned(&g, i) || !mode || mode[i] == NIRVANA_RB_FIXED) continue;
            double cur, phi0;
            int legal;
            if ((rc = judge(p, c, &g, assign, i, &cur, &phi0, &legal, e)) < 0) goto out;
            if (!legal) continue; /* the caller's placement breaks a rule: leave it to a re-placement */
            /* the gain must beat threshold both of its own cost and of the
             * median player's: a player whose cost is a speck of the
             * game's does not move to save a speck */
            double bar = (1.0 - threshold) * cur - c->eps * (1.0 + fabs(cur));
            if (cur - threshold * median < bar) bar = cur - threshold * median;
            double best_cost = HUGE_VAL, best_phi = 0;
            int best_to = -1, best_other = -1, best_other_to = -1;
            int swap_only = mode[i] == NIRVANA_RB_WITH_STATE && !nv_is_replica(&g, i);
            for (int n = 0; n < p->nnodes; n++) {
                if (n == from || !p->nodes[n].alive || left[(size_t)i * p->nnodes + n]) continue;
                /* a primary that keeps its state goes onto a replica that
                 * holds it; that replica then goes anywhere legal (from
                 * included) and starts there from a snapshot */
                int other = -1;
                for (int k = 0; swap_only && g.rep_base[i] >= 0 && k < g.R && other < 0; k++) {
                    int r = g.rep_base[i] + k;
                    if (assign[r] == n && holds_state(&g, orig, i, n) && !nv_pinned(&g, r)) other = r;
                }
                if (swap_only && other < 0) continue;
                for (int x = 0; x < (other >= 0 ? p->nnodes : 1); x++) {
                    if (other >= 0 && (x == n || !p->nodes[x].alive || left[(size_t)other * p->nnodes + x])) continue;
                    memcpy(cand, assign, (size_t)g.P * sizeof *cand);
                    cand[i] = n;
                    if (other >= 0) cand[other] = x;
                    /* the capacity rule: no move onto a node it would fill past max_util */
                    if (!fits(p, c, &g, cand, i, n) || (other >= 0 && !fits(p, c, &g, cand, other, x))) continue;
                    double cost, phi;
                    if ((rc = judge(p, c, &g, cand, i, &cost, &phi, &legal, e)) < 0) goto out;
                    if (!legal || cost >= bar || phi >= phi0 - c->eps * (1.0 + fabs(phi0))) continue;
                    /* the cheapest for the mover; among equals the lowest potential */
                    if (cost > best_cost || (cost == best_cost && phi >= best_phi)) continue;
                    best_cost = cost;
                    best_phi = phi;
                    best_to = n;
                    best_other = other;
                    best_other_to = other >= 0 ? x : -1;
                    memcpy(best, cand, (size_t)g.P * sizeof *best);
                }
            }
            if (best_to < 0) continue;
            left[(size_t)i * p->nnodes + from] = 1;
            if (best_other >= 0) left[(size_t)best_other * p->nnodes + best_to] = 1;
            memcpy(assign, best, (size_t)g.P * sizeof *assign);
            if (moves)
                moves[*nmoves] = (nirvana_rb_move){.player = i, .from = from, .to = best_to, .replica = best_other, .replica_to = best_other_to,
                                                   .cost_before = cur, .cost_after = best_cost,
                                                   .potential_before = phi0, .potential_after = best_phi};
            ++*nmoves;
            moved = 1;
        }
    }
    rc = 0;
out:
    nv_release(p, m0);
    return rc;
}
