/*
 * game.c: Nirvana's best-response dynamics, full and incremental.
 *
 * The engine keeps, for the current assignment, everything a best response
 * needs so that it costs O(degree + R * domains + domains * front) rather
 * than O(players): per-node load and player count; per (node, domain) the
 * number and summed recovery time of the replicas on the node whose primary
 * lives in the domain (the serial-recovery counters); per domain the front of
 * its free nodes in (load/speed, 1/speed).  A best response folds the
 * player's neighbours into per-domain and per-node adjustments, scores the
 * nodes that host a neighbour exactly, and then, per domain, either skips it
 * (its front bounds every node's cost above the best found), scores only the
 * front's best node (when nothing else can beat it), or sweeps it.  Bounds
 * drop only terms that are >= 0 or were scored exactly, so the result is the
 * node an exhaustive search picks (lowest cost; on exact ties, lowest id).
 *
 * After best responses stall, exchange passes try two-player exchanges and
 * group moves (a primary with its replicas), priced exactly as sums of
 * leave/move/enter steps, each of which changes the potential by the mover's
 * cost.  All memory comes from the problem's scratch arena.
 *
 * Invariant: counters describe exactly the players whose node[] >= 0, and
 * those sit on live nodes.  Moves are detach + attach.
 */
#include "planner/placement/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FRONT_MAX 8   /* points kept per domain front */

typedef struct engine {
    const nirvana_problem *p;
    const nv_graph *g;
    const nirvana_config *c;
    double wp, wt, wr;
    int P, N, D, R;
    int matrix; /* measured distances: no domain bound, score every node */
    /* players, and the players on each node (intrusive doubly-linked lists) */
    int *node;
    int *nhead, *pnext, *pprev;
    /* nodes */
    int *cnt, *dom, *slots;
    char *alive;
    double *L, *invv;
    /* domains: live nodes (CSR), and their loads and 1/speed in that order,
     * so that a best response sweeps them sequentially */
    int *doff, *dnodes, *pos;
    int NA;         /* live nodes (positions 0..NA-1) */
    double *dL, *dinv;
    unsigned char *dflag; /* per position: 0 may take a player, 1 full, 2 excluded */
    /* Per domain, the nodes with a free slot on the lower-left front of
     * (load/speed, 1/speed): any player's processing cost, a*load/speed +
     * b/speed with a, b >= 0, is smallest among free nodes on one of them.
     * iord lists each domain's positions by ascending 1/speed; fronts are
     * rebuilt lazily when fdirty. */
    int *iord, *front, *nfront;
    unsigned char *fdirty;
    /* serial-recovery counters, [position of the replica's node][domain of
     * the primary] (see scol), NULL when w_rec = 0 or R = 0 */
    int *scnt;
    double *ssig;
    /* scratch for one best response */
    unsigned stamp;
    double base;
    double *dadj, *nadj;
    unsigned *dmark, *dforbid, *nmark, *nforbid;
    int *touched, ntouched;
    /* best capacity-blocked node of the last best response (-1 if none) */
    int blocked, want_blocked;
    double blocked_cost;
    /* bookkeeping */
    int round, moves, exchanges;
} engine;

typedef struct inv_key {
    double inv;
    int k;
} inv_key;

static int inv_cmp(const void *a, const void *b)
{
    const inv_key *x = a, *y = b;
    if (x->inv != y->inv) return x->inv < y->inv ? -1 : 1;
    return (x->k > y->k) - (x->k < y->k);
}

/* All engine memory comes from the problem's scratch arena. */
static int engine_init(engine *e, const nirvana_problem *p, const nv_graph *g,
                       const nirvana_config *c, xerr *err)
{
    memset(e, 0, sizeof *e);
    e->p = p;
    e->g = g;
    e->c = c;
    e->wp = c->w_proc;
    e->wt = c->w_trans;
    e->wr = nv_wrec(c);
    e->P = g->P;
    e->N = p->nnodes;
    e->D = p->ndomains;
    e->R = g->R;
    e->matrix = p->dist != NULL;
    int N = e->N, D = e->D, P = e->P;
    e->node = NV_ALLOC(p, P, int);
    e->nhead = NV_ALLOC(p, N, int);
    e->pnext = NV_ALLOC(p, P, int);
    e->pprev = NV_ALLOC(p, P, int);
    e->cnt = NV_ZALLOC(p, N, int);
    e->dom = NV_ALLOC(p, N, int);
    e->slots = NV_ALLOC(p, N, int);
    e->alive = NV_ALLOC(p, N, char);
    e->L = NV_ZALLOC(p, N, double);
    for (int n = 0; e->L && n < N; n++) e->L[n] = p->nodes[n].base_load; /* congestion starts from it */
    e->invv = NV_ALLOC(p, N, double);
    e->doff = NV_ZALLOC(p, D + 1, int);
    e->dnodes = NV_ALLOC(p, N, int);
    e->pos = NV_ALLOC(p, N, int);
    e->dL = NV_ZALLOC(p, N, double);
    e->dinv = NV_ALLOC(p, N, double);
    e->dflag = NV_ZALLOC(p, N, unsigned char);
    e->iord = NV_ALLOC(p, N, int);
    e->front = NV_ALLOC(p, N, int);
    e->nfront = NV_ZALLOC(p, D, int);
    e->fdirty = NV_ALLOC(p, D, unsigned char);
    e->dadj = NV_ALLOC(p, D, double);
    e->nadj = NV_ALLOC(p, N, double);
    e->dmark = NV_ZALLOC(p, D, unsigned);
    e->dforbid = NV_ZALLOC(p, D, unsigned);
    e->nmark = NV_ZALLOC(p, N, unsigned);
    e->nforbid = NV_ZALLOC(p, N, unsigned);
    e->touched = NV_ALLOC(p, N, int);
    int *fill = NV_ZALLOC(p, D, int);
    inv_key *keys = NV_ALLOC(p, N, inv_key);
    if (!e->node || !e->nhead || !e->pnext || !e->pprev || !e->cnt || !e->dom || !e->slots ||
        !e->alive || !e->L || !e->invv || !e->doff || !e->dnodes || !e->pos || !e->dL ||
        !e->dinv || !e->dflag || !e->iord || !e->front || !e->nfront || !e->fdirty || !e->dadj ||
        !e->nadj || !e->dmark || !e->dforbid || !e->nmark || !e->nforbid || !e->touched ||
        !fill || !keys)
        return xerr_set(err, XE_NOMEM, "placement: out of memory");
    for (int i = 0; i < P; i++) e->node[i] = -1;
    for (int n = 0; n < N; n++) {
        const nirvana_node *nd = &p->nodes[n];
        e->nhead[n] = -1;
        e->dom[n] = nd->domain;
        e->slots[n] = nd->slots;
        e->alive[n] = (char)(nd->alive != 0);
        e->invv[n] = 1.0 / nd->speed;
        if (nd->alive) e->doff[nd->domain + 1]++;
    }
    for (int d = 0; d < D; d++) e->doff[d + 1] += e->doff[d];
    for (int n = 0; n < N; n++)
        if (e->alive[n]) e->dnodes[e->doff[e->dom[n]] + fill[e->dom[n]]++] = n;
    e->NA = e->doff[D];
    for (int k = 0; k < e->NA; k++) {
        e->pos[e->dnodes[k]] = k;
        e->dinv[k] = e->invv[e->dnodes[k]];
        e->dflag[k] = e->slots[e->dnodes[k]] > 0 ? 0 : 1;
        keys[k] = (inv_key){e->dinv[k], k};
    }
    for (int d = 0; d < D; d++) {
        e->fdirty[d] = 1;
        qsort(keys + e->doff[d], (size_t)(e->doff[d + 1] - e->doff[d]), sizeof *keys, inv_cmp);
        for (int k = e->doff[d]; k < e->doff[d + 1]; k++) e->iord[k] = keys[k].k;
    }

    if (e->wr > 0 && e->R > 0) {
        size_t nd = (size_t)e->NA * (size_t)D;
        e->scnt = NV_ZALLOC(p, nd, int);
        e->ssig = NV_ZALLOC(p, nd, double);
        if (!e->scnt || !e->ssig) return xerr_set(err, XE_NOMEM, "placement: out of memory");
    }
    return 0;
}

/* ---------------------------------------------------------------- bookkeeping */

/* Node n's load or count changed: mirror it in the domain-ordered arrays. */
static void load_changed(engine *e, int n)
{
    e->dL[e->pos[n]] = e->L[n];
    e->dflag[e->pos[n]] = e->cnt[n] < e->slots[n] ? 0 : 1;
    e->fdirty[e->dom[n]] = 1;
}

/* Undoes a best response's temporary exclusion of node n. */
static void flag_sync(engine *e, int n)
{
    e->dflag[e->pos[n]] = e->cnt[n] < e->slots[n] ? 0 : 1;
}



/* Rebuilds domain d's front; nfront = -1 if it has more than FRONT_MAX points. */
static void front_build(engine *e, int d)
{
    double minx = HUGE_VAL;
    int n = 0, *f = &e->front[e->doff[d]];
    for (int q = e->doff[d]; q < e->doff[d + 1]; q++) {
        int k = e->iord[q], nd = e->dnodes[k];
        double x = e->dL[k] * e->dinv[k];
        if (x >= minx || e->cnt[nd] >= e->slots[nd]) continue;
        if (n == FRONT_MAX) {
            n = -1;
            break;
        }
        f[n++] = k;
        minx = x;
    }
    e->nfront[d] = n;
    e->fdirty[d] = 0;
}

/* The minimum of (pa * L + pb) / speed over domain d's nodes with a free
 * slot, and (*arg) the position where it is reached (HUGE_VAL and -1 if none);
 * -HUGE_VAL and -1 if the front is too large. */
static double front_min(engine *e, int d, double pa, double pb, int *arg)
{
    if (e->fdirty[d]) front_build(e, d);
    *arg = -1;
    if (e->nfront[d] < 0) return -HUGE_VAL;
    double m = HUGE_VAL;
    const int *f = &e->front[e->doff[d]];
    for (int q = 0; q < e->nfront[d]; q++) {
        double x = (pa * e->dL[f[q]] + pb) * e->dinv[f[q]];
        /* strict: the first of equal nodes, in 1/speed then id order */
        if (x < m) {
            m = x;
            *arg = f[q];
        }
    }
    return m;
}

/* Index of (primary's domain d, node n) in the serial counters: a node's
 * domains are contiguous, which is what a primary's prepare() reads. */
static size_t scol(const engine *e, int d, int n)
{
    return (size_t)e->pos[n] * (size_t)e->D + (size_t)d;
}

/* Adds (sign +1) or removes (-1) replica r's serial counter entry. */
static void serial_count(engine *e, int r, int sign)
{
    int m = e->node[r], pn = e->node[nv_primary_of(e->g, r)];
    if (m < 0 || pn < 0) return;
    size_t k = scol(e, e->dom[pn], m);
    e->scnt[k] += sign;
    e->ssig[k] += sign * e->g->sigma[r];
}

/* Counter entries that depend on player i's node: its own (a replica) or its
 * replicas' (a stateful primary). */
static void serial_all(engine *e, int i, int sign)
{
    if (!e->scnt) return;
    const nv_graph *g = e->g;
    if (nv_is_replica(g, i)) serial_count(e, i, sign);
    else if (g->rep_base[i] >= 0)
        for (int k = 0; k < g->R; k++) serial_count(e, g->rep_base[i] + k, sign);
}

static void list_add(engine *e, int i, int n)
{
    e->pprev[i] = -1;
    e->pnext[i] = e->nhead[n];
    if (e->nhead[n] >= 0) e->pprev[e->nhead[n]] = i;
    e->nhead[n] = i;
}

static void list_del(engine *e, int i, int n)
{
    if (e->pprev[i] >= 0) e->pnext[e->pprev[i]] = e->pnext[i];
    else e->nhead[n] = e->pnext[i];
    if (e->pnext[i] >= 0) e->pprev[e->pnext[i]] = e->pprev[i];
}

static void attach(engine *e, int i, int n)
{
    list_add(e, i, n);
    e->node[i] = n;
    e->cnt[n]++;
    e->L[n] += e->g->load[i];
    load_changed(e, n);
    serial_all(e, i, +1);
}

static void detach(engine *e, int i)
{
    int n = e->node[i];
    serial_all(e, i, -1);
    list_del(e, i, n);
    e->L[n] -= e->g->load[i];
    e->cnt[n]--;
    e->node[i] = -1;
    load_changed(e, n);
}

/* Attaches every player placed in `as`. */
static void attach_all(engine *e, const int *as)
{
    for (int i = 0; i < e->P; i++)
        if (as[i] >= 0) {
            list_add(e, i, as[i]);
            e->node[i] = as[i];
            e->cnt[as[i]]++;
            e->L[as[i]] += e->g->load[i];
        }
    if (e->scnt)
        for (int i = e->g->T; i < e->P; i++) serial_count(e, i, +1);
    for (int n = 0; n < e->N; n++)
        if (e->alive[n]) load_changed(e, n);
}

/* ---------------------------------------------------------------- one best response */

static void new_stamp(engine *e)
{
    if (++e->stamp == 0) {
        memset(e->dmark, 0, ((size_t)e->D + 1) * sizeof *e->dmark);
        memset(e->dforbid, 0, ((size_t)e->D + 1) * sizeof *e->dforbid);
        memset(e->nmark, 0, ((size_t)e->N + 1) * sizeof *e->nmark);
        memset(e->nforbid, 0, ((size_t)e->N + 1) * sizeof *e->nforbid);
        e->stamp = 1;
    }
    e->base = 0;
    e->ntouched = 0;
}

static void dadd(engine *e, int d, double x)
{
    if (e->dmark[d] != e->stamp) {
        e->dmark[d] = e->stamp;
        e->dadj[d] = 0;
    }
    e->dadj[d] += x;
}

static void nadd(engine *e, int n, double x)
{
    if (e->nmark[n] != e->stamp) {
        e->nmark[n] = e->stamp;
        e->nadj[n] = 0;
        e->touched[e->ntouched++] = n;
    }
    e->nadj[n] += x;
}

/*
 * Folds player i's neighbours into base + dadj[domain] + nadj[node], and
 * marks the domains and nodes its hard rules forbid.
 */
static void prepare(engine *e, int i)
{
    const nv_graph *g = e->g;
    const nirvana_problem *p = e->p;
    new_stamp(e);
    for (int k = g->off[i]; k < g->off[i + 1]; k++) {
        const nv_adj *a = &g->adj[k];
        int m = e->node[a->nbr];
        if (m < 0) continue;
        int d = e->dom[m];
        if (a->flags & NV_FORBID_DOMAIN) e->dforbid[d] = e->stamp;
        if (a->flags & NV_FORBID_NODE) e->nforbid[m] = e->stamp;
        if (a->traffic > 0 && !e->matrix) {
            double t = 0.5 * e->wt * a->traffic;
            e->base += t * p->d_inter;
            dadd(e, d, t * (p->d_intra - p->d_inter));
            nadd(e, m, -t * p->d_intra);
        }
        if (a->cascade > 0 && e->wr > 0) dadd(e, d, 0.5 * e->wr * a->cascade);
    }
    /* A stateful primary pays half the serial penalty of its replicas' nodes,
     * which depends on the domain it picks. */
    if (e->scnt && !nv_is_replica(g, i) && g->rep_base[i] >= 0) {
        int cur = e->node[i], selfd = cur >= 0 ? e->dom[cur] : -1;
        double sg = g->sigma[i];
        for (int k = 0; k < g->R; k++) {
            int m = e->node[g->rep_base[i] + k];
            if (m < 0) continue;
            double h = 0.5 * e->wr * e->invv[m];
            for (int d = 0; d < e->D; d++) {
                size_t col = scol(e, d, m);
                double c = e->scnt[col], s = e->ssig[col];
                if (d == selfd) { /* the replica itself is counted there */
                    c -= 1;
                    s -= sg;
                }
                if (c > 0) dadd(e, d, h * (c * sg + s));
            }
        }
    }
}

/* Player i's cost on node n, everyone else fixed (after prepare(e, i)). */
static double cost_at(const engine *e, int i, int n)
{
    const nv_graph *g = e->g;
    int cur = e->node[i], d = e->dom[n];
    double l = g->load[i];
    double Ln = e->L[n] - (n == cur ? l : 0);
    double c = e->base + e->wp * l * (Ln + l) * e->invv[n];
    if (e->dmark[d] == e->stamp) c += e->dadj[d];
    if (e->nmark[n] == e->stamp) c += e->nadj[n];
    if (nv_is_replica(g, i) && e->wr > 0) {
        double sg = g->sigma[i];
        c += e->wr * sg * e->invv[n];
        int pn = e->node[nv_primary_of(g, i)];
        if (e->scnt && pn >= 0) {
            size_t k = scol(e, e->dom[pn], n);
            double cn = e->scnt[k], s = e->ssig[k];
            if (n == cur) {
                cn -= 1;
                s -= sg;
            }
            c += 0.5 * e->wr * (cn * sg + s) * e->invv[n];
        }
    }
    if (e->matrix)
        for (int k = g->off[i]; k < g->off[i + 1]; k++) {
            const nv_adj *a = &g->adj[k];
            int m = e->node[a->nbr];
            if (m >= 0 && a->traffic > 0)
                c += 0.5 * e->wt * a->traffic * e->p->dist[(size_t)n * (size_t)e->N + (size_t)m];
        }
    return c;
}

/* Legal for i except, perhaps, for a free slot. */
static int rules_ok(const engine *e, int i, int n)
{
    return e->alive[n] && n != e->node[i] && e->dforbid[e->dom[n]] != e->stamp &&
           e->nforbid[n] != e->stamp;
}

static int candidate_ok(const engine *e, int i, int n)
{
    return rules_ok(e, i, n) && e->cnt[n] < e->slots[n];
}

typedef struct brbest {
    int node;
    double cost;
} brbest;

static void consider(engine *e, int i, int n, brbest *b)
{
    if (!rules_ok(e, i, n)) return;
    double x = cost_at(e, i, n);
    if (e->cnt[n] >= e->slots[n]) { /* full: remember it for an exchange */
        if (x < e->blocked_cost || (x == e->blocked_cost && n < e->blocked)) {
            e->blocked_cost = x;
            e->blocked = n;
        }
        return;
    }
    if (x < b->cost || (x == b->cost && n < b->node)) {
        b->cost = x;
        b->node = n;
    }
}

/*
 * Player i's best response.  Returns 1 and the target if it should move
 * (gain > eps * (1 + |cost|); an unplaced player moves to any legal node).
 */
static int best_response(engine *e, int i, int *to, double *cur_c, double *new_c)
{
    prepare(e, i);
    int cur = e->node[i];
    double cc = cur >= 0 ? cost_at(e, i, cur) : HUGE_VAL;
    if (nv_pinned(e->g, i)) { /* not playing: callers see "no legal node" */
        *to = -1;
        *cur_c = *new_c = cc;
        return 0;
    }
    double thr = cur >= 0 ? cc - e->c->eps * (1 + fabs(cc)) : HUGE_VAL;
    brbest b = {-1, HUGE_VAL};
    e->blocked = -1;
    e->blocked_cost = HUGE_VAL;
    for (int k = 0; k < e->ntouched; k++) consider(e, i, e->touched[k], &b);
    if (e->matrix) { /* measured distances: every node differs, score them all */
        for (int k = 0; k < e->NA; k++) consider(e, i, e->dnodes[k], &b);
        goto done;
    }

    /*
     * Apart from the nodes scored above (whose extra term is <= 0), a node's
     * cost is base + dadj[domain] + (pa * L + pb + serial) / speed.  One
     * sequential sweep finds, per domain, the node minimising the last part
     * among those that may take the player; only that node can be the
     * domain's best, so only it is scored exactly.  The player's own node and
     * the nodes its rules forbid are excluded from the sweep meanwhile.
     */
    const nv_graph *g = e->g;
    double l = g->load[i], sg = g->sigma[i];
    int rep = nv_is_replica(g, i), pn = rep ? e->node[nv_primary_of(g, i)] : -1;
    double pa = e->wp * l, pb = e->wp * l * l + (rep ? e->wr * sg : 0), hw = 0.5 * e->wr;
    /* a replica's serial counters: sc[k * D], ss[k * D] for position k */
    const int *sc = NULL;
    const double *ss = NULL;
    size_t D = (size_t)e->D;
    if (rep && e->scnt && pn >= 0) {
        sc = &e->scnt[e->dom[pn]];
        ss = &e->ssig[e->dom[pn]];
    }
    int track = e->want_blocked;
    if (cur >= 0) e->dflag[e->pos[cur]] = 2;
    for (int k = g->off[i]; k < g->off[i + 1]; k++)
        if ((g->adj[k].flags & NV_FORBID_NODE) && e->node[g->adj[k].nbr] >= 0)
            e->dflag[e->pos[e->node[g->adj[k].nbr]]] = 2;
    for (int d = 0; d < e->D; d++) {
        if (e->doff[d] == e->doff[d + 1] || e->dforbid[d] == e->stamp) continue;
        double dom = e->base + (e->dmark[d] == e->stamp ? e->dadj[d] : 0);
        double bound = b.cost < thr ? b.cost : thr;
        if (!track) {
            int fk;
            if (dom + front_min(e, d, pa, pb, &fk) > bound + 1e-12 * (1 + fabs(bound))) continue;
            /* The front's best node is the domain's best when it may take the
             * player and adds no serial term. */
            if (fk >= 0 && e->dflag[fk] == 0 && (!sc || sc[(size_t)fk * D] == 0)) {
                consider(e, i, e->dnodes[fk], &b);
                continue;
            }
        }
        double m = HUGE_VAL, bm = HUGE_VAL;
        int arg = -1, barg = -1;
        for (int k = e->doff[d]; k < e->doff[d + 1]; k++) {
            double x = pa * e->dL[k] + pb;
            if (sc) x += hw * (sc[(size_t)k * D] * sg + ss[(size_t)k * D]);
            x *= e->dinv[k];
            if (e->dflag[k] == 0) {
                if (x < m) {
                    m = x;
                    arg = k;
                }
            } else if (track && e->dflag[k] == 1 && x < bm) {
                bm = x;
                barg = k;
            }
        }
        bound = b.cost < thr ? b.cost : thr;
        if (arg >= 0 && dom + m <= bound + 1e-12 * (1 + fabs(bound)))
            consider(e, i, e->dnodes[arg], &b);
        if (barg >= 0 && dom + bm < e->blocked_cost) consider(e, i, e->dnodes[barg], &b);
    }
    for (int k = g->off[i]; k < g->off[i + 1]; k++)
        if ((g->adj[k].flags & NV_FORBID_NODE) && e->node[g->adj[k].nbr] >= 0)
            flag_sync(e, e->node[g->adj[k].nbr]);
    if (cur >= 0) flag_sync(e, cur);
done:
    *to = b.node;
    *cur_c = cc;
    *new_c = b.cost;
    return b.node >= 0 && b.cost < thr;
}

static void report(engine *e, int kind, int i, int from, int to, double before, double after)
{
    if (!e->c->on_move) return;
    nirvana_move m = {kind,  i,     from,          to,      -1,      -1,
                      e->round, before, after, after - before, e->node, NULL};
    e->c->on_move(e->c->on_move_arg, &m);
}

static void move_to(engine *e, int i, int n, double before, double after)
{
    int from = e->node[i];
    if (from >= 0) detach(e, i);
    attach(e, i, n);
    if (from >= 0) e->moves++;
    report(e, from >= 0 ? NIRVANA_MOVE_BEST_RESPONSE : NIRVANA_MOVE_ENTER, i, from, n, before,
           after);
}

/*
 * Full rounds in play order until one moves nothing (returns 1) or e->round
 * reaches `cap` (returns 0).  e->round counts rounds across calls.
 */
static int play_rounds(engine *e, const int *order, int cap)
{
    while (e->round < cap) {
        e->round++;
        int moved = 0;
        for (int k = 0; k < e->P; k++) {
            int i = order[k], to;
            double cc, nc;
            if (best_response(e, i, &to, &cc, &nc)) {
                move_to(e, i, to, cc, nc);
                moved++;
            }
        }
        if (!moved) return 1;
    }
    return 0;
}

/*
 * Exchange: i takes node b = node[j] and j then takes its best legal node
 * (i's old node among others).  The potential changes by the sum of the three
 * steps' exact cost changes: j leaving b, i moving to b, j entering.
 * Rolled back unless commit.  HUGE_VAL if i may not take b or j finds no node.
 */
static double try_exchange(engine *e, int i, int j, int commit, int *j_to, double *ci_after)
{
    int a = e->node[i], b = e->node[j], c;
    prepare(e, j);
    double cj_b = cost_at(e, j, b);
    detach(e, j);
    prepare(e, i);
    if (!candidate_ok(e, i, b)) {
        attach(e, j, b);
        return HUGE_VAL;
    }
    double ci_a = cost_at(e, i, a), ci_b = cost_at(e, i, b), unused, cj_c;
    detach(e, i);
    attach(e, i, b);
    best_response(e, j, &c, &unused, &cj_c);
    if (c < 0) {
        detach(e, i);
        attach(e, i, a);
        attach(e, j, b);
        return HUGE_VAL;
    }
    attach(e, j, c);
    *j_to = c;
    *ci_after = ci_b;
    if (!commit) {
        detach(e, j);
        detach(e, i);
        attach(e, i, a);
        attach(e, j, b);
    }
    return -cj_b + (ci_b - ci_a) + cj_c;
}

/* Puts the replicas of primary i (rnode[k], -1 = none) back where they were. */
static void restore_replicas(engine *e, int i, const int *rnode)
{
    const nv_graph *g = e->g;
    for (int k = 0; k < g->R; k++) {
        int r = g->rep_base[i] + k;
        if (e->node[r] >= 0) detach(e, r);
    }
    for (int k = 0; k < g->R; k++)
        if (rnode[k] >= 0) attach(e, g->rep_base[i] + k, rnode[k]);
}

/*
 * Group move: the replicas of stateful primary i leave, i takes its best
 * other node, and the replicas re-enter one by one at their best nodes.  The
 * potential changes by the sum of the steps' exact cost changes.  Rolled back
 * unless commit.  rnode (R entries) receives the replicas' old nodes.
 */
static double try_group(engine *e, int i, int commit, int *rnode, int *to, double *ci_after)
{
    const nv_graph *g = e->g;
    int a = e->node[i], b, c;
    double d = 0, cc, nc;
    for (int k = 0; k < g->R; k++) {
        int r = g->rep_base[i] + k;
        rnode[k] = e->node[r];
        if (rnode[k] < 0) continue;
        prepare(e, r);
        d -= cost_at(e, r, rnode[k]);
        detach(e, r);
    }
    best_response(e, i, &b, &cc, &nc);
    if (b < 0) {
        restore_replicas(e, i, rnode);
        return HUGE_VAL;
    }
    d += nc - cc;
    *ci_after = nc;
    detach(e, i);
    attach(e, i, b);
    for (int k = 0; k < g->R; k++) {
        int r = g->rep_base[i] + k;
        if (rnode[k] < 0) continue;
        best_response(e, r, &c, &cc, &nc);
        if (c < 0) {
            d = HUGE_VAL;
            break;
        }
        d += nc;
        attach(e, r, c);
    }
    *to = b;
    if (!commit || d == HUGE_VAL) {
        for (int k = 0; k < g->R; k++) {
            int r = g->rep_base[i] + k;
            if (e->node[r] >= 0) detach(e, r);
        }
        detach(e, i);
        attach(e, i, a);
        restore_replicas(e, i, rnode);
    }
    return d;
}

#define EVICT_MAX 4
#define EXHAUSTIVE_PAIRS 64

/* The EVICT_MAX lightest players on node n (ties: lower id), into out. */
static int lightest(const engine *e, int n, int *out)
{
    int k = 0;
    for (int j = e->nhead[n]; j >= 0; j = e->pnext[j]) {
        int q = k < EVICT_MAX ? k++ : EVICT_MAX;
        double l = e->g->load[j];
        while (q > 0 && (e->g->load[out[q - 1]] > l ||
                         (e->g->load[out[q - 1]] == l && out[q - 1] > j))) {
            if (q < EVICT_MAX) out[q] = out[q - 1];
            q--;
        }
        if (q < EVICT_MAX) out[q] = j;
    }
    return k;
}

/*
 * When best responses stall, capacity (or a replica in the way) can lock a
 * player out of a node it prefers.  For each player, in play order, try the
 * exchanges with the players on its best full node and with its own
 * primary/replicas; make the one that lowers the potential the most, if it
 * lowers it by more than eps.  Returns the number of exchanges made.
 */
static int exchange_pass(engine *e, const int *order, int *cand, int *snap)
{
    const nv_graph *g = e->g;
    int made = 0, rnode[64];
    e->round++;
    for (int k = 0; k < e->P; k++) {
        int i = order[k], to, nc = 0;
        double cc, newc;
        if (e->node[i] < 0 || nv_pinned(g, i)) continue;
        e->want_blocked = 1; /* this best response also finds the best full node */
        int moves = best_response(e, i, &to, &cc, &newc);
        e->want_blocked = 0;
        if (moves) {
            move_to(e, i, to, cc, newc);
            continue;
        }
        if (e->P <= EXHAUSTIVE_PAIRS) { /* small: every other player */
            for (int j = 0; j < e->P; j++) cand[nc++] = j;
            goto try;
        }
        /* A full node better than staying: its lightest players may make room. */
        if (e->blocked >= 0 && e->blocked_cost < cc) nc = lightest(e, e->blocked, cand);
        /* Its primary or replicas (they block each other's domains), and its
         * DAG neighbours in its domain (they may block each other by cascade). */
        for (int a = g->off[i]; a < g->off[i + 1]; a++) {
            const nv_adj *ad = &g->adj[a];
            int m = e->node[ad->nbr];
            if ((ad->flags & NV_FORBID_DOMAIN) ||
                (ad->cascade > 0 && e->wr > 0 && m >= 0 && e->dom[m] == e->dom[e->node[i]]))
                cand[nc++] = ad->nbr;
        }
    try:;
        int bestj = -1, jto, group = 0;
        double bestd = -e->c->eps * (1 + fabs(cc)), ci_after;
        for (int q = 0; q < nc; q++) {
            int j = cand[q];
            if (j == i || e->node[j] < 0 || nv_pinned(g, j)) continue;
            double d = try_exchange(e, i, j, 0, &jto, &ci_after);
            if (d < bestd) {
                bestd = d;
                bestj = j;
            }
        }
        int grouped = !nv_is_replica(g, i) && g->rep_base[i] >= 0 && g->R <= 64;
        if (grouped && try_group(e, i, 0, rnode, &jto, &ci_after) < bestd) group = 1;
        if (bestj < 0 && !group) continue;
        if (snap) memcpy(snap, e->node, (size_t)e->P * sizeof *snap);
        int from = e->node[i], b = group ? -1 : e->node[bestj];
        double d = group ? try_group(e, i, 1, rnode, &b, &ci_after)
                         : try_exchange(e, i, bestj, 1, &jto, &ci_after);
        e->exchanges++;
        made++;
        if (e->c->on_move) {
            nirvana_move m = {group ? NIRVANA_MOVE_GROUP : NIRVANA_MOVE_EXCHANGE,
                              i,
                              from,
                              b,
                              group ? -1 : bestj,
                              group ? -1 : jto,
                              e->round,
                              cc,
                              ci_after,
                              d,
                              e->node,
                              snap};
            e->c->on_move(e->c->on_move_arg, &m);
        }
    }
    return made;
}

/*
 * The dynamics: rounds of best responses until one is quiet, then an
 * exchange pass (at most `passes` of them); repeat while exchanges happen, up
 * to `cap` rounds in all.  Returns 1 if it ended with a quiet round of best
 * responses (a Nash equilibrium).
 */
static int play(engine *e, const int *order, int cap, int passes, xerr *err, int *rc)
{
    int *cand = NULL, *snap = NULL, quiet = 0;
    size_t n = (size_t)e->P + (size_t)e->g->off[e->P];
    *rc = 0;
    for (;;) {
        if (!play_rounds(e, order, cap)) break;
        if (passes <= 0 || e->round >= cap) {
            quiet = 1;
            break;
        }
        if (!cand && (!(cand = NV_ALLOC(e->p, n, int)) ||
                      (e->c->on_move && !(snap = NV_ALLOC(e->p, n, int))))) {
            *rc = xerr_set(err, XE_NOMEM, "placement: out of memory");
            break;
        }
        if (e->P > EXHAUSTIVE_PAIRS) passes--; /* small problems: until none helps */
        if (exchange_pass(e, order, cand, snap) == 0) {
            quiet = 1;
            break;
        }
    }
    return quiet;
}

/*
 * Phase 1 for a displaced stateful primary t: promote one of its surviving
 * replicas (the replica's node becomes t's node and the replica re-plays), or
 * take the best node elsewhere if that is cheaper even after paying w_rec *
 * recovery_s for copying the state.  Returns 1 if promoted, 0 if placed
 * elsewhere, XE_FULL if neither is possible.
 */
static int place_displaced_primary(engine *e, int t)
{
    const nv_graph *g = e->g;
    int prom = -1, pnode = -1;
    double pcost = HUGE_VAL;
    for (int k = 0; g->rep_base[t] >= 0 && k < g->R; k++) {
        int r = g->rep_base[t] + k, m = e->node[r];
        if (m < 0 || nv_pinned(g, r)) continue;
        detach(e, r);
        prepare(e, t);
        if (candidate_ok(e, t, m)) {
            double x = cost_at(e, t, m);
            if (x < pcost) {
                pcost = x;
                prom = r;
                pnode = m;
            }
        }
        attach(e, r, m);
    }
    int to;
    double cc, nc;
    best_response(e, t, &to, &cc, &nc);
    double copy = e->wr * e->p->tasks[t].recovery_s;
    if (prom >= 0 && (to < 0 || pcost <= nc + copy)) {
        detach(e, prom);
        report(e, NIRVANA_MOVE_PROMOTE, prom, pnode, -1, HUGE_VAL, HUGE_VAL);
        attach(e, t, pnode);
        report(e, NIRVANA_MOVE_PROMOTE, t, -1, pnode, HUGE_VAL, pcost);
        return 1;
    }
    if (to < 0) return XE_FULL;
    move_to(e, t, to, cc, nc);
    return 0;
}

/* Maps prev's players onto p's layout; dead or missing nodes become -1. */
static int carry_over(const nirvana_problem *p, const nv_graph *g, const nirvana_result *prev,
                      int *as, int *displaced, xerr *err)
{
    if (prev->ntasks > p->ntasks || prev->replicas != p->replicas)
        return xerr_set(err, XE_INVAL,
                        "placement: the previous result is not for this problem (%d tasks, R=%d "
                        "against %d tasks, R=%d)",
                        prev->ntasks, prev->replicas, p->ntasks, p->replicas);
    for (int i = 0; i < g->P; i++) as[i] = -1;
    for (int k = 0; k < prev->nplayers; k++) {
        const nirvana_player *pl = &prev->players[k];
        if (pl->task < 0 || pl->task >= g->T) continue;
        int i = pl->replica < 0 ? pl->task
                : g->rep_base[pl->task] >= 0 && pl->replica < g->R ? g->rep_base[pl->task] + pl->replica
                                                                   : -1;
        if (i < 0) continue;
        int n = pl->node;
        if (n >= 0 && n < p->nnodes && p->nodes[n].alive) as[i] = n;
    }
    *displaced = 0;
    for (int i = 0; i < g->P; i++) *displaced += as[i] < 0;
    return 0;
}

/* ---------------------------------------------------------------- public entry points */

/* What one call of nirvana_place or nirvana_replace sets up and tears down. */
typedef struct run {
    uint64_t t0;
    nv_mark mark;
    nv_graph g;
    int *as;    /* the assignment being built */
    int *order; /* play order (game only) */
    engine e;
    int engine_up;
    int converged;
} run;

static int is_game(const nirvana_config *c)
{
    return c->strategy == NIRVANA_FULL || c->strategy == NIRVANA_NO_RECOVERY;
}

/* Takes a scratch mark first: run_end releases everything the call used. */
static int run_begin(run *r, const nirvana_problem *p, xerr *err)
{
    memset(r, 0, sizeof *r);
    r->t0 = clock_mono_ns();
    r->mark = nv_mark_get(p);
    if (p->nnodes < 1) return xerr_set(err, XE_INVAL, "placement: no nodes");
    int rc = nv_graph_build(&r->g, p, err);
    if (rc < 0) return rc;
    if (!(r->as = NV_ALLOC(p, r->g.P, int))) return xerr_set(err, XE_NOMEM, "placement: out of memory");
    for (int i = 0; i < r->g.P; i++) r->as[i] = -1;
    return 0;
}

/* Starts the game's engine on r->as. */
static int run_engine(run *r, const nirvana_problem *p, const nirvana_config *c, xerr *err)
{
    int rc = engine_init(&r->e, p, &r->g, c, err);
    if (rc < 0) return rc;
    r->engine_up = 1;
    if (!(r->order = nv_play_order(p, &r->g)))
        return xerr_set(err, XE_NOMEM, "placement: out of memory");
    attach_all(&r->e, r->as);
    return 0;
}

static int run_finish(run *r, const nirvana_problem *p, const nirvana_config *c,
                      nirvana_result **out, xerr *err)
{
    if (r->engine_up) memcpy(r->as, r->e.node, (size_t)r->g.P * sizeof *r->as);
    int rc = nv_result_build(p, c, &r->g, r->as, out, err);
    if (rc < 0) return rc;
    if (r->engine_up) {
        (*out)->rounds = r->e.round;
        (*out)->moves = r->e.moves;
        (*out)->exchanges = r->e.exchanges;
    }
    (*out)->converged = r->converged;
    (*out)->elapsed_ms = (double)(clock_mono_ns() - r->t0) / 1e6;
    return 0;
}

int nirvana_place(const nirvana_problem *p, const nirvana_config *c, nirvana_result **out,
                  xerr *err)
{
    run r;
    int rc = run_begin(&r, p, err);
    if (rc < 0) return rc;
    if ((rc = nv_apply_pins(p, &r.g, r.as, err)) < 0) goto out;
    /* The game starts from round-robin, like the prototype. */
    rc = nv_baseline_assign(p, &r.g, is_game(c) ? NIRVANA_ROUND_ROBIN : c->strategy, c->seed, r.as,
                            0, err);
    if (rc < 0) goto out;
    r.converged = 1;
    if (is_game(c)) {
        if ((rc = run_engine(&r, p, c, err)) < 0) goto out;
        r.converged = play(&r.e, r.order, c->max_rounds, c->exchanges, err, &rc);
        if (rc < 0) goto out;
    }
    rc = run_finish(&r, p, c, out, err);
out:
    nv_release(p, r.mark);
    return rc;
}

int nirvana_replace(const nirvana_problem *p, const nirvana_config *c,
                    const nirvana_result *prev, nirvana_result **out, xerr *err)
{
    run r;
    int displaced = 0, promoted = 0;
    int rc = run_begin(&r, p, err);
    if (rc < 0) return rc;
    if ((rc = carry_over(p, &r.g, prev, r.as, &displaced, err)) < 0) goto out;
    if ((rc = nv_apply_pins(p, &r.g, r.as, err)) < 0) goto out;
    if (!is_game(c)) {
        if ((promoted = nv_promote_first(p, &r.g, r.as)) < 0) {
            rc = xerr_set(err, XE_NOMEM, "placement: out of memory");
            goto out;
        }
        if ((rc = nv_baseline_assign(p, &r.g, c->strategy, c->seed, r.as, 1, err)) < 0) goto out;
        r.converged = 1;
    } else {
        if ((rc = run_engine(&r, p, c, err)) < 0) goto out;
        engine *e = &r.e;
        /* Displaced primaries first (replicas' legal domains depend on them). */
        for (int k = 0; k < r.g.P; k++) {
            int i = r.order[k];
            if (nv_is_replica(&r.g, i) || e->node[i] >= 0) continue;
            if ((rc = place_displaced_primary(e, i)) < 0) {
                rc = xerr_set(err, XE_FULL, "placement: no live node with a free slot for task %s",
                              p->tasks[i].name);
                goto out;
            }
            promoted += rc;
        }
        for (int k = 0; k < r.g.P; k++) {
            int i = r.order[k], to;
            double cc, nc;
            if (!nv_is_replica(&r.g, i) || e->node[i] >= 0) continue;
            if (best_response(e, i, &to, &cc, &nc)) move_to(e, i, to, cc, nc);
        }
        r.converged = play_rounds(e, r.order, c->repair_rounds);
    }
    if ((rc = run_finish(&r, p, c, out, err)) < 0) goto out;
    (*out)->displaced = displaced;
    (*out)->promoted = promoted;
out:
    nv_release(p, r.mark);
    return rc;
}
