/*
 * baselines.c: the placements Nirvana is measured against, behind the same
 * interface.  All of them keep the hard rules (slots, replica domains), place
 * primaries before replicas, and fill only the players whose assign[] is -1,
 * so the same code serves a full placement and a re-placement after failure.
 *
 *   round-robin     Storm's EvenScheduler: live nodes in id order, one player
 *                   per node in turn (a cursor that skips nodes that are full
 *                   or break a rule).
 *   resource-aware  R-Storm-like greedy: tasks in BFS order from the sources;
 *                   each goes to a node with enough spare CPU (speed - load)
 *                   that minimises traffic-weighted distance to its already
 *                   placed neighbours, then distance to the component's
 *                   reference node (most spare CPU when the BFS started), then
 *                   best fit.  Replicas go where the most CPU is spare.
 *   random          uniform over the legal nodes, from a seeded PRNG.
 */
#include "planner/placement/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct bstate {
    const nirvana_problem *p;
    const nv_graph *g;
    int *as;
    int *count;
    double *L;
    int allow_unplaced;
    xerr *e;
} bstate;

static void bplace(bstate *b, int i, int n)
{
    b->as[i] = n;
    b->count[n]++;
    b->L[n] += b->g->load[i];
}

/* Called when player i found no node. */
static int bnone(bstate *b, int i)
{
    if (nv_is_replica(b->g, i) && b->allow_unplaced) return 0;
    return xerr_set(b->e, XE_FULL, "placement: no legal node for %s %s%s",
                    nv_is_replica(b->g, i) ? "a replica of" : "task",
                    b->p->tasks[b->g->task[i]].name,
                    nv_is_replica(b->g, i) ? " (needs a free slot outside its primary's domain)"
                                           : " (no free slot on a live node)");
}

static int round_robin(bstate *b)
{
    int N = b->p->nnodes, cursor = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < b->g->P; i++) {
            if (b->as[i] >= 0 || nv_is_replica(b->g, i) != pass) continue;
            int placed = 0;
            for (int s = 0; s < N && !placed; s++) {
                int n = (cursor + s) % N;
                if (!nv_legal(b->p, b->g, b->as, b->count, i, n)) continue;
                bplace(b, i, n);
                cursor = n + 1;
                placed = 1;
            }
            int rc = placed ? 0 : bnone(b, i);
            if (rc < 0) return rc;
        }
    return 0;
}

static int random_place(bstate *b, uint64_t seed)
{
    int N = b->p->nnodes;
    uint64_t s = seed;
    int *cand = NV_ALLOC(b->p, N, int);
    if (!cand) return xerr_set(b->e, XE_NOMEM, "placement: out of memory");
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < b->g->P; i++) {
            if (b->as[i] >= 0 || nv_is_replica(b->g, i) != pass) continue;
            int k = 0;
            for (int n = 0; n < N; n++)
                if (nv_legal(b->p, b->g, b->as, b->count, i, n)) cand[k++] = n;
            if (k == 0) {
                int rc = bnone(b, i);
                if (rc < 0) return rc;
                continue;
            }
            bplace(b, i, cand[nv_splitmix(&s) % (uint64_t)k]);
        }
    return 0;
}

static double spare(const bstate *b, int n) { return b->p->nodes[n].speed - b->L[n]; }

/* Traffic-weighted distance from node n to the placed task neighbours of t. */
static double ra_traffic(const bstate *b, int t, int n)
{
    const nv_graph *g = b->g;
    double s = 0;
    for (int k = g->off[t]; k < g->off[t + 1]; k++) {
        const nv_adj *a = &g->adj[k];
        if (nv_is_replica(g, a->nbr) || b->as[a->nbr] < 0) continue;
        s += a->traffic * nv_dist(b->p, n, b->as[a->nbr]);
    }
    return s;
}

/* Lexicographic "a is better than b" over (fits desc, then keys asc). */
static int ra_better(int fa, const double *ka, int fb, const double *kb, int nk)
{
    if (fa != fb) return fa > fb;
    for (int k = 0; k < nk; k++)
        if (ka[k] != kb[k]) return ka[k] < kb[k];
    return 0;
}

static int ra_place_task(bstate *b, int t, int ref)
{
    const nirvana_problem *p = b->p;
    int best = -1, bfit = 0;
    double bk[3] = {0, 0, 0};
    double l = b->g->load[t];
    for (int n = 0; n < p->nnodes; n++) {
        if (!nv_legal(p, b->g, b->as, b->count, t, n)) continue;
        int fit = spare(b, n) >= l;
        double k[3] = {ra_traffic(b, t, n), ref >= 0 ? nv_dist(p, ref, n) : 0,
                       fit ? spare(b, n) - l : -spare(b, n)};
        if (best < 0 || ra_better(fit, k, bfit, bk, 3)) {
            best = n;
            bfit = fit;
            memcpy(bk, k, sizeof k);
        }
    }
    if (best < 0) return bnone(b, t);
    bplace(b, t, best);
    return 0;
}

/* The node with the most spare CPU that t may take (the R-Storm reference node). */
static int ra_ref(bstate *b, int t)
{
    if (b->as[t] >= 0) return b->as[t];
    int best = -1;
    for (int n = 0; n < b->p->nnodes; n++)
        if (nv_legal(b->p, b->g, b->as, b->count, t, n) && (best < 0 || spare(b, n) > spare(b, best)))
            best = n;
    return best;
}

static int resource_aware(bstate *b)
{
    const nirvana_problem *p = b->p;
    const nv_graph *g = b->g;
    int T = g->T, rc = 0;
    int *indeg = NV_ZALLOC(p, T, int);
    int *queue = NV_ALLOC(p, T, int);
    char *seen = NV_ZALLOC(p, T, char);
    if (!indeg || !queue || !seen) return xerr_set(b->e, XE_NOMEM, "placement: out of memory");
    for (int k = 0; k < p->nedges; k++) indeg[p->edges[k].to]++;
    /* Sources first (in task order), then whatever no source reaches. */
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0; s < T; s++) {
            if (seen[s] || (pass == 0 && indeg[s] > 0)) continue;
            int head = 0, tail = 0, ref = ra_ref(b, s);
            queue[tail++] = s;
            seen[s] = 1;
            while (head < tail) {
                int t = queue[head++];
                if (b->as[t] < 0 && (rc = ra_place_task(b, t, ref)) < 0) return rc;
                for (int k = g->off[t]; k < g->off[t + 1]; k++) {
                    int j = g->adj[k].nbr;
                    if (!nv_is_replica(g, j) && !seen[j]) {
                        seen[j] = 1;
                        queue[tail++] = j;
                    }
                }
            }
        }
    /* Replicas: legal node with the most spare CPU (fitting ones first). */
    for (int i = T; i < g->P; i++) {
        if (b->as[i] >= 0) continue;
        int best = -1, bfit = 0;
        double l = g->load[i];
        for (int n = 0; n < p->nnodes; n++) {
            if (!nv_legal(p, g, b->as, b->count, i, n)) continue;
            int fit = spare(b, n) >= l;
            if (best < 0 || fit > bfit || (fit == bfit && spare(b, n) > spare(b, best))) {
                best = n;
                bfit = fit;
            }
        }
        if (best >= 0) bplace(b, i, best);
        else if ((rc = bnone(b, i)) < 0) return rc;
    }
    return 0;
}

uint64_t nirvana_splitmix64(uint64_t *state) { return nv_splitmix(state); }

int nv_baseline_assign(const nirvana_problem *p, const nv_graph *g, nirvana_strategy s,
                       uint64_t seed, int *assign, int allow_unplaced, xerr *e)
{
    bstate b = {p, g, assign, NV_ZALLOC(p, p->nnodes, int), NV_ZALLOC(p, p->nnodes, double),
                allow_unplaced, e};
    if (!b.count || !b.L) return xerr_set(e, XE_NOMEM, "placement: out of memory");
    for (int n = 0; n < p->nnodes; n++) b.L[n] = p->nodes[n].base_load;
    for (int i = 0; i < g->P; i++)
        if (assign[i] >= 0) {
            b.count[assign[i]]++;
            b.L[assign[i]] += g->load[i];
        }
    int rc;
    switch (s) {
    case NIRVANA_RESOURCE_AWARE: rc = resource_aware(&b); break;
    case NIRVANA_RANDOM: rc = random_place(&b, seed); break;
    default: rc = round_robin(&b); break;
    }
    return rc;
}
