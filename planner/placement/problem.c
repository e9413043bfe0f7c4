/*
 * problem.c: building a placement problem, the configuration, and the player
 * view (nv_graph) every strategy works on.  Also the hard rules (nv_legal)
 * and the play order, so that the game, the baselines and the reference
 * scorer agree on them by construction.
 */
#include "planner/placement/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- scratch arena */

/* Under ASan, free arena space is poisoned and each allocation is followed by
 * a poisoned red zone, so overruns inside a block are still caught. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define NV_REDZONE 16
#else
#define ASAN_POISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#define NV_REDZONE 0
#endif

typedef struct nv_block {
    struct nv_block *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
} nv_block;

struct nv_scratch {
    nv_block *first, *cur;
};

nv_mark nv_mark_get(const nirvana_problem *p)
{
    nv_block *b = p->scratch->cur;
    return (nv_mark){b, b ? b->used : 0};
}

void nv_release(const nirvana_problem *p, nv_mark m)
{
    struct nv_scratch *s = p->scratch;
    nv_block *b = m.block ? m.block : s->first;
    if (!b) return;
    b->used = m.block ? m.used : 0;
    ASAN_POISON_MEMORY_REGION(b->data + b->used, b->cap - b->used);
    for (nv_block *q = b->next; q; q = q->next) {
        q->used = 0;
        ASAN_POISON_MEMORY_REGION(q->data, q->cap);
    }
    s->cur = b;
}

void *nv_alloc(const nirvana_problem *p, size_t size)
{
    struct nv_scratch *s = p->scratch;
    size_t want = size;
    size = (size + 15 + NV_REDZONE) & ~(size_t)15;
    nv_block *b = s->cur;
    while (b && b->cap - b->used < size) {
        b = b->next; /* later blocks are empty (used == 0) */
        if (b) s->cur = b;
    }
    if (!b) {
        size_t cap = size > ((size_t)1 << 20) ? size : (size_t)1 << 20;
        if (s->cur && s->cur->cap * 2 > cap) cap = s->cur->cap * 2;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = NULL;
        b->cap = cap;
        b->used = 0;
        ASAN_POISON_MEMORY_REGION(b->data, cap);
        if (s->cur) {
            nv_block *last = s->cur;
            while (last->next) last = last->next;
            last->next = b;
        } else {
            s->first = b;
        }
        s->cur = b;
    }
    void *q = b->data + b->used;
    b->used += size;
    ASAN_UNPOISON_MEMORY_REGION(q, want);
    return q;
}

void *nv_zalloc(const nirvana_problem *p, size_t size)
{
    void *q = nv_alloc(p, size);
    if (q) memset(q, 0, size);
    return q;
}

/* ---------------------------------------------------------------- problem */

nirvana_problem *nirvana_problem_new(void)
{
    nirvana_problem *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (!(p->scratch = calloc(1, sizeof *p->scratch))) {
        free(p);
        return NULL;
    }
    p->replicas = 1;
    p->d_intra = 0.2;
    p->d_inter = 1.0;
    return p;
}

void nirvana_problem_free(nirvana_problem *p)
{
    if (!p) return;
    free(p->nodes);
    free(p->tasks);
    free(p->edges);
    free(p->dist);
    free(p->pins);
    for (nv_block *b = p->scratch->first, *n; b; b = n) {
        n = b->next;
        ASAN_UNPOISON_MEMORY_REGION(b->data, b->cap);
        free(b);
    }
    free(p->scratch);
    free(p);
}

/* Grows *arr (of elem-sized items) so that one more fits. */
static int grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap) return 0;
    int nc = *cap ? *cap * 2 : 16;
    void *q = realloc(*arr, (size_t)nc * elem);
    if (!q) return XE_NOMEM;
    *arr = q;
    *cap = nc;
    return 0;
}

int nirvana_add_node(nirvana_problem *p, const char *name, int domain, int slots, double speed)
{
    if (domain < 0 || slots < 0 || !(speed > 0) || !isfinite(speed)) return XE_INVAL;
    if (p->dist) return XE_INVAL; /* the matrix would no longer fit */
    if (grow((void **)&p->nodes, &p->cap_nodes, p->nnodes, sizeof *p->nodes)) return XE_NOMEM;
    nirvana_node *n = &p->nodes[p->nnodes];
    memset(n, 0, sizeof *n);
    if (name) snprintf(n->name, sizeof n->name, "%s", name);
    else snprintf(n->name, sizeof n->name, "n%d", p->nnodes);
    n->domain = domain;
    n->slots = slots;
    n->speed = speed;
    n->alive = 1;
    if (domain + 1 > p->ndomains) p->ndomains = domain + 1;
    return p->nnodes++;
}

static int finite_nonneg(double x) { return isfinite(x) && x >= 0; }

int nirvana_add_task(nirvana_problem *p, const nirvana_task *t)
{
    if (!finite_nonneg(t->load) || !finite_nonneg(t->recovery_s) ||
        !finite_nonneg(t->replica_load) || !finite_nonneg(t->repl_traffic) ||
        !finite_nonneg(t->state_mb) || t->depth < 0)
        return XE_INVAL;
    if (grow((void **)&p->tasks, &p->cap_tasks, p->ntasks, sizeof *p->tasks)) return XE_NOMEM;
    nirvana_task *d = &p->tasks[p->ntasks];
    *d = *t;
    d->name[sizeof d->name - 1] = '\0';
    if (!d->name[0]) snprintf(d->name, sizeof d->name, "t%d", p->ntasks);
    if (d->parallelism < 1) d->parallelism = 1;
    d->stateful = d->stateful ? 1 : 0;
    return p->ntasks++;
}

int nirvana_add_edge(nirvana_problem *p, int from, int to, double traffic)
{
    if (from < 0 || to < 0 || from >= p->ntasks || to >= p->ntasks || from == to ||
        !finite_nonneg(traffic))
        return XE_INVAL;
    if (grow((void **)&p->edges, &p->cap_edges, p->nedges, sizeof *p->edges)) return XE_NOMEM;
    p->edges[p->nedges] = (nirvana_edge){from, to, traffic};
    return p->nedges++;
}

int nirvana_pin(nirvana_problem *p, int task, int replica, int node)
{
    if (task < 0 || task >= p->ntasks || replica < -1 || node < 0 || node >= p->nnodes) return XE_INVAL;
    for (int k = 0; k < p->npins; k++)
        if (p->pins[k].task == task && p->pins[k].replica == replica) {
            p->pins[k].node = node;
            return 0;
        }
    if (grow((void **)&p->pins, &p->cap_pins, p->npins, sizeof *p->pins)) return XE_NOMEM;
    p->pins[p->npins++] = (nirvana_pinning){task, replica, node};
    return 0;
}

/* The player id of (task, replica), or -1 when there is no such player. */
static int pin_player(const nirvana_problem *p, const int *rep_base, int task, int replica)
{
    if (task < 0 || task >= p->ntasks) return -1;
    if (replica < 0) return task;
    if (rep_base[task] < 0 || replica >= p->replicas) return -1;
    return rep_base[task] + replica;
}

int nirvana_player_pinned(const nirvana_problem *p, int player)
{
    int base = p->ntasks, R = p->replicas > 0 ? p->replicas : 0;
    for (int k = 0; k < p->npins; k++) {
        const nirvana_pinning *pn = &p->pins[k];
        if (pn->node >= p->nnodes || !p->nodes[pn->node].alive) continue;
        int id = -1;
        if (pn->replica < 0) id = pn->task;
        else if (pn->task < p->ntasks && p->tasks[pn->task].stateful && pn->replica < R) {
            int b = base;
            for (int t = 0; t < pn->task; t++) b += p->tasks[t].stateful ? R : 0;
            id = b + pn->replica;
        }
        if (id == player) return 1;
    }
    return 0;
}

int nv_apply_pins(const nirvana_problem *p, const nv_graph *g, int *assign, xerr *e)
{
    int *count = NV_ZALLOC(p, p->nnodes, int);
    if (!count) return xerr_set(e, XE_NOMEM, "placement: out of memory");
    for (int i = 0; i < g->P; i++)
        if (nv_pinned(g, i)) assign[i] = g->pin[i];
    for (int i = 0; i < g->P; i++)
        if (assign[i] >= 0) count[assign[i]]++;
    for (int i = 0; i < g->P; i++) {
        if (!nv_pinned(g, i)) continue;
        int n = g->pin[i];
        if (count[n] > p->nodes[n].slots || !nv_legal(p, g, assign, count, i, n))
            return xerr_set(e, XE_INVAL,
                            "placement: %s%s is pinned to node %s, which breaks a hard rule "
                            "(slots, or a replica in its primary's domain)",
                            nv_is_replica(g, i) ? "a replica of " : "", p->tasks[g->task[i]].name,
                            p->nodes[n].name);
    }
    return 0;
}

int nirvana_set_distance(nirvana_problem *p, double d_intra, double d_inter)
{
    if (!finite_nonneg(d_intra) || !finite_nonneg(d_inter)) return XE_INVAL;
    p->d_intra = d_intra;
    p->d_inter = d_inter;
    return 0;
}

int nirvana_set_distance_matrix(nirvana_problem *p, const double *m)
{
    free(p->dist);
    p->dist = NULL;
    if (!m) return 0;
    size_t n = (size_t)p->nnodes;
    for (size_t a = 0; a < n; a++)
        for (size_t b = 0; b < n; b++)
            if (!finite_nonneg(m[a * n + b]) || m[a * n + b] != m[b * n + a] ||
                (a == b && m[a * n + b] != 0))
                return XE_INVAL;
    p->dist = malloc(n * n * sizeof *p->dist + 1);
    if (!p->dist) return XE_NOMEM;
    memcpy(p->dist, m, n * n * sizeof *p->dist);
    return 0;
}

int nirvana_kill_domain(nirvana_problem *p, int domain)
{
    int k = 0;
    for (int i = 0; i < p->nnodes; i++)
        if (p->nodes[i].domain == domain && p->nodes[i].alive) {
            p->nodes[i].alive = 0;
            k++;
        }
    return k;
}

int nirvana_player_count(const nirvana_problem *p)
{
    int s = 0;
    for (int t = 0; t < p->ntasks; t++) s += p->tasks[t].stateful;
    return p->ntasks + s * p->replicas;
}

int nirvana_replica_player(const nirvana_problem *p, int t, int k)
{
    if (t < 0 || t >= p->ntasks || !p->tasks[t].stateful || k < 0 || k >= p->replicas) return -1;
    int before = 0;
    for (int u = 0; u < t; u++) before += p->tasks[u].stateful;
    return p->ntasks + before * p->replicas + k;
}

/* ---------------------------------------------------------------- configuration */

static const char *const strategy_names[NIRVANA_NSTRATEGIES] = {
    [NIRVANA_FULL] = "nirvana",
    [NIRVANA_NO_RECOVERY] = "nirvana-no-recovery",
    [NIRVANA_ROUND_ROBIN] = "round-robin",
    [NIRVANA_RESOURCE_AWARE] = "resource-aware",
    [NIRVANA_RANDOM] = "random",
};

const char *nirvana_strategy_name(nirvana_strategy s)
{
    return (unsigned)s < NIRVANA_NSTRATEGIES ? strategy_names[s] : "?";
}

int nirvana_strategy_parse(const char *name, nirvana_strategy *out)
{
    for (int s = 0; s < NIRVANA_NSTRATEGIES; s++)
        if (strcasecmp(name, strategy_names[s]) == 0) {
            *out = (nirvana_strategy)s;
            return 0;
        }
    return XE_INVAL;
}

void nirvana_config_init(nirvana_config *c)
{
    memset(c, 0, sizeof *c);
    c->strategy = NIRVANA_FULL;
    c->w_proc = 1.0;
    c->w_trans = 1.0;
    c->w_rec = 0.01;
    c->max_rounds = 100;
    c->exchanges = 1;
    c->repair_rounds = 2;
    c->seed = 1;
    c->eps = 1e-9;
}

double nv_wrec(const nirvana_config *c)
{
    return c->strategy == NIRVANA_NO_RECOVERY ? 0.0 : c->w_rec;
}

/* ---------------------------------------------------------------- player view */

/* The cascade weight of each edge u -> v: what putting both ends in one
 * domain adds to that domain's recovery.  Together they fail together, and v
 * restores only once u is back: sigma_u + sigma_v.  Apart, each domain's
 * failure costs one of them, at worst max(sigma_u, sigma_v).  The difference
 * is min(sigma_u, sigma_v): nothing when either end is stateless (a stateless
 * task restarts at once, and waits for its upstream wherever it sits), which
 * the first formula, (sigma_u + sigma_v) / 2, charged anyway and so pushed a
 * light stateless task out of its stateful upstream's domain, one more
 * cross-domain hop on every row's path (issue 17).  Divided by v's fan-in: v
 * waits for the slowest failed parent, not for all of them. */
double *nv_cascade_weights(const nirvana_problem *p)
{
    int *fanin = NV_ZALLOC(p, p->ntasks, int);
    double *w = NV_ALLOC(p, p->nedges, double);
    if (!fanin || !w) return NULL;
    for (int k = 0; k < p->nedges; k++) fanin[p->edges[k].to]++;
    for (int k = 0; k < p->nedges; k++) {
        const nirvana_edge *ed = &p->edges[k];
        double su = p->tasks[ed->from].recovery_s, sv = p->tasks[ed->to].recovery_s;
        w[k] = (su < sv ? su : sv) / fanin[ed->to];
    }
    return w;
}

static void put_adj(const nv_graph *g, int *fill, int a, int b, int flags, double traffic,
                    double cascade)
{
    g->adj[g->off[a] + fill[a]++] = (nv_adj){b, flags, traffic, cascade};
}

int nv_graph_build(nv_graph *g, const nirvana_problem *p, xerr *e)
{
    memset(g, 0, sizeof *g);
    if (p->replicas < 0) return xerr_set(e, XE_INVAL, "placement: replicas must be >= 0");
    g->T = p->ntasks;
    g->R = p->replicas;
    g->N = p->nnodes;
    g->D = p->ndomains;
    g->P = nirvana_player_count(p);
    int P = g->P, T = g->T, R = g->R;
    g->task = NV_ALLOC(p, P, int);
    g->rep = NV_ALLOC(p, P, int);
    g->rep_base = NV_ALLOC(p, T, int);
    g->load = NV_ALLOC(p, P, double);
    g->sigma = NV_ALLOC(p, P, double);
    g->depth = NV_ALLOC(p, P, int);
    g->par = NV_ALLOC(p, P, int);
    g->pin = NV_ALLOC(p, P, int);
    g->off = NV_ZALLOC(p, P + 1, int);
    int *fill = NV_ZALLOC(p, P, int);
    if (!g->task || !g->rep || !g->rep_base || !g->load || !g->sigma || !g->depth || !g->par ||
        !g->pin || !g->off || !fill)
        goto nomem;

    int next = T;
    for (int t = 0; t < T; t++) {
        const nirvana_task *tk = &p->tasks[t];
        g->rep_base[t] = tk->stateful && R > 0 ? next : -1;
        int n_own = 1 + (tk->stateful ? R : 0);
        for (int k = -1; k < n_own - 1; k++) {
            int i = k < 0 ? t : next++;
            g->task[i] = t;
            g->rep[i] = k;
            g->load[i] = k < 0 ? tk->load : tk->replica_load;
            g->sigma[i] = tk->recovery_s;
            g->depth[i] = tk->depth;
            g->par[i] = tk->parallelism;
        }
    }

    for (int i = 0; i < P; i++) g->pin[i] = -1;
    for (int k = 0; k < p->npins; k++) {
        const nirvana_pinning *pn = &p->pins[k];
        int i = pin_player(p, g->rep_base, pn->task, pn->replica);
        if (i >= 0 && pn->node < p->nnodes && p->nodes[pn->node].alive) g->pin[i] = pn->node;
    }

    /* Degrees: task edges both ways; primary<->replica; replica<->sibling. */
    for (int k = 0; k < p->nedges; k++) {
        g->off[p->edges[k].from + 1]++;
        g->off[p->edges[k].to + 1]++;
    }
    for (int t = 0; t < T; t++) {
        if (g->rep_base[t] < 0) continue;
        g->off[t + 1] += R;
        for (int k = 0; k < R; k++) g->off[g->rep_base[t] + k + 1] += R; /* primary + R-1 siblings */
    }
    for (int i = 0; i < P; i++) g->off[i + 1] += g->off[i];
    g->adj = NV_ALLOC(p, g->off[P], nv_adj);
    if (!g->adj) goto nomem;

    double *cas = nv_cascade_weights(p);
    if (!cas) goto nomem;
    for (int k = 0; k < p->nedges; k++) {
        const nirvana_edge *ed = &p->edges[k];
        put_adj(g, fill, ed->from, ed->to, 0, ed->traffic, cas[k]);
        put_adj(g, fill, ed->to, ed->from, 0, ed->traffic, cas[k]);
    }
    for (int t = 0; t < T; t++) {
        if (g->rep_base[t] < 0) continue;
        double tr = p->tasks[t].repl_traffic;
        for (int k = 0; k < R; k++) {
            int r = g->rep_base[t] + k;
            put_adj(g, fill, t, r, NV_FORBID_DOMAIN, tr, 0);
            put_adj(g, fill, r, t, NV_FORBID_DOMAIN, tr, 0);
            for (int m = 0; m < R; m++)
                if (m != k) put_adj(g, fill, r, g->rep_base[t] + m, NV_FORBID_NODE, 0, 0);
        }
    }
    return 0;
nomem:
    return xerr_set(e, XE_NOMEM, "placement: out of memory");
}

int nv_legal(const nirvana_problem *p, const nv_graph *g, const int *assign, const int *count,
             int i, int n)
{
    const nirvana_node *nd = &p->nodes[n];
    if (!nd->alive) return 0;
    if (assign[i] != n && count[n] >= nd->slots) return 0;
    for (int k = g->off[i]; k < g->off[i + 1]; k++) {
        const nv_adj *a = &g->adj[k];
        if (!a->flags) continue;
        int m = assign[a->nbr];
        if (m < 0) continue;
        if ((a->flags & NV_FORBID_NODE) && m == n) return 0;
        if ((a->flags & NV_FORBID_DOMAIN) && p->nodes[m].domain == nd->domain) return 0;
    }
    return 1;
}

typedef struct order_key {
    int depth, par, id;
} order_key;

static int order_cmp(const void *a, const void *b)
{
    const order_key *x = a, *y = b;
    if (x->depth != y->depth) return x->depth < y->depth ? -1 : 1;
    if (x->par != y->par) return x->par > y->par ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

int *nv_play_order(const nirvana_problem *p, const nv_graph *g)
{
    order_key *k = NV_ALLOC(p, g->P, order_key);
    int *o = NV_ALLOC(p, g->P, int);
    if (!k || !o) return NULL;
    for (int i = 0; i < g->P; i++) k[i] = (order_key){g->depth[i], g->par[i], i};
    qsort(k, (size_t)g->P, sizeof *k, order_cmp);
    for (int i = 0; i < g->P; i++) o[i] = k[i].id;
    return o;
}

int nv_promote_first(const nirvana_problem *p, const nv_graph *g, int *assign)
{
    int *count = NV_ZALLOC(p, g->N, int);
    if (!count) return XE_NOMEM;
    for (int i = 0; i < g->P; i++)
        if (assign[i] >= 0) count[assign[i]]++;
    int promoted = 0;
    for (int t = 0; t < g->T; t++) {
        if (assign[t] >= 0 || g->rep_base[t] < 0) continue;
        for (int k = 0; k < g->R; k++) {
            int r = g->rep_base[t] + k, m = assign[r];
            if (m < 0 || nv_pinned(g, r)) continue;
            assign[r] = -1; /* the replica leaves, its slot goes to the primary */
            count[m]--;
            if (nv_legal(p, g, assign, count, t, m)) {
                assign[t] = m;
                count[m]++;
                promoted++;
                break;
            }
            assign[r] = m;
            count[m]++;
        }
    }
    return promoted;
}
