/*
 * internal.h: what the placement module's files share and nobody else sees.
 *
 * nv_graph is the player view of a problem: the player layout (primaries,
 * then R replicas per stateful task) and one adjacency list per player in CSR
 * form.  An adjacency entry carries the traffic (task edges and delta
 * streams), the cascade weight (task edges only) and the hard rules between
 * two players (a primary and its replica: other domain; two replicas of one
 * task: other node).  It is built once per call and read-only afterwards.
 */
#ifndef PLACEMENT_INTERNAL_H
#define PLACEMENT_INTERNAL_H

#include "planner/placement/placement.h"

enum {
    NV_FORBID_DOMAIN = 1, /* the two players may not share a domain */
    NV_FORBID_NODE = 2,   /* the two players may not share a node */
};

typedef struct nv_adj {
    int nbr;
    int flags;
    double traffic; /* > 0 for task edges and delta streams */
    double cascade; /* task edges: nv_cascade_weights(), else 0 */
} nv_adj;

typedef struct nv_graph {
    int P, T, R, N, D;
    int *task;     /* per player: its task */
    int *rep;      /* per player: -1 primary, else replica index */
    int *rep_base; /* per task: first replica player, or -1 */
    double *load;  /* per player: CPU demand */
    double *sigma; /* per player: recovery_s of its task */
    int *depth, *par;
    int *pin;      /* per player: the live node it is pinned to, or -1 */
    int *off;      /* P + 1 offsets into adj */
    nv_adj *adj;
} nv_graph;

/*
 * Scratch memory: every temporary of a call comes from the problem's arena.
 * Each public entry point takes a mark first and releases it on the way out;
 * nested entry points nest.  Blocks stay allocated until the problem is
 * freed, so repeated calls reuse warm memory.  Allocations are 16-byte
 * aligned; nv_alloc returns NULL when out of memory.
 */
typedef struct nv_mark {
    void *block;
    size_t used;
} nv_mark;

nv_mark nv_mark_get(const nirvana_problem *p);
void nv_release(const nirvana_problem *p, nv_mark m);
void *nv_alloc(const nirvana_problem *p, size_t size);
void *nv_zalloc(const nirvana_problem *p, size_t size);
#define NV_ALLOC(p, n, T) ((T *)nv_alloc((p), ((size_t)(n) + 1) * sizeof(T)))
#define NV_ZALLOC(p, n, T) ((T *)nv_zalloc((p), ((size_t)(n) + 1) * sizeof(T)))

/* The graph lives in the scratch arena (released with the caller's mark). */
int nv_graph_build(nv_graph *g, const nirvana_problem *p, xerr *e);

/* Puts every pinned player on its node in `assign` (others untouched) and
 * checks that the pins keep the hard rules: XE_INVAL (err set) if not. */
int nv_apply_pins(const nirvana_problem *p, const nv_graph *g, int *assign, xerr *e);

static inline int nv_pinned(const nv_graph *g, int i) { return g->pin[i] >= 0; }

/*
 * Cascade weight of each task edge u->v: (recovery_s(u) + recovery_s(v)) / 2
 * divided by v's fan-in (a task waits for the slowest failed parent, not for
 * all of them).  In scratch memory; NULL when out of memory.
 */
double *nv_cascade_weights(const nirvana_problem *p);

static inline int nv_is_replica(const nv_graph *g, int i) { return g->rep[i] >= 0; }
static inline int nv_primary_of(const nv_graph *g, int i) { return g->task[i]; }

/* Distance between two nodes (0 on the same node). */
static inline double nv_dist(const nirvana_problem *p, int a, int b)
{
    if (a == b) return 0.0;
    if (p->dist) return p->dist[(size_t)a * (size_t)p->nnodes + (size_t)b];
    return p->nodes[a].domain == p->nodes[b].domain ? p->d_intra : p->d_inter;
}

/* The recovery weight the strategy plays with. */
double nv_wrec(const nirvana_config *c);

/*
 * 1 if player i may sit on node n given everyone else's nodes in `assign`
 * and the per-node player counts `count` (which include i at assign[i]).
 */
int nv_legal(const nirvana_problem *p, const nv_graph *g, const int *assign, const int *count,
             int i, int n);

/* Play order: DAG depth ascending, parallelism descending, id ascending
 * (scratch memory). */
int *nv_play_order(const nirvana_problem *p, const nv_graph *g);

/* Baselines (baselines.c).  assign[i] >= 0 is kept, -1 is placed by the rule.
 * Primaries are placed before replicas.  A replica with no legal node is an
 * error when allow_unplaced is 0, else it stays -1. */
int nv_baseline_assign(const nirvana_problem *p, const nv_graph *g, nirvana_strategy s,
                       uint64_t seed, int *assign, int allow_unplaced, xerr *e);

/* Promotes, for each primary on a dead node, its first surviving replica whose
 * node the primary may take; the replica becomes unplaced.  Returns how many. */
int nv_promote_first(const nirvana_problem *p, const nv_graph *g, int *assign);

/* Result assembly (eval.c): costs from the reference scorer. */
int nv_result_build(const nirvana_problem *p, const nirvana_config *c, const nv_graph *g,
                    const int *assign, nirvana_result **out, xerr *e);
/* The reference scorer on a graph already built. */
int nv_score(const nirvana_problem *p, const nirvana_config *c, const nv_graph *g,
             const int *assign, nirvana_score *out, xerr *e);

/* Player i's cost share where assign puts it (HUGE_VAL when unplaced). */
int nv_cost_at(const nirvana_problem *p, const nirvana_config *c, const nv_graph *g, const int *assign, int i,
               double *cost, xerr *e);

/* Seeded PRNG shared by the random baseline and nothing else. */
static inline uint64_t nv_splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#endif
