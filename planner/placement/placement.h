/*
 * placement: Nirvana, the fault-tolerant task and replica placement game, and
 * the baseline placements it is measured against.
 *
 * The module knows nothing of operators, plans or sockets.  Its input is a
 * `nirvana_problem`: nodes (domain, slots, speed, alive), tasks (load, state,
 * recovery time), task-to-task edges (traffic) and the number R of replicas
 * each stateful task keeps.  The planner fills the tasks and edges from its
 * operator DAG; the cluster coordinator fills the nodes from live membership.
 * Its output is a `nirvana_result`: a node for every player plus the cost
 * terms that `EXPLAIN PLACEMENT` prints.
 *
 * Players.  Every task is a player (its "primary"); every stateful task also
 * owns R replica players.  Player ids are laid out once per problem:
 * players 0..ntasks-1 are the primaries in task order, and the replicas of the
 * stateful tasks follow, task by task, R at a time (nirvana_replica_player()).
 * A strategy is a node.  A node hosts at most `slots` players (replicas take a
 * slot: they hold state and apply deltas).
 *
 * Hard rules (a placement breaking one is illegal, never merely expensive):
 *   - a replica never sits in its primary's failure domain;
 *   - two replicas of one task never share a node;
 *   - a node never hosts more players than its slots, and dead nodes host none.
 *
 * Cost of a player (all terms >= 0; see docs/nirvana.md for the proof that
 * the game is an exact potential game and for the units):
 *   proc   w_proc * l_i * L(node) / speed(node), L = total load on the node
 *   trans  half of w_trans * traffic * distance, over each incident edge
 *          (task edges, and primary->replica delta streams)
 *   rec    half of w_rec * c_uv for each task edge u->v whose two ends share a
 *          domain (cascade; c_uv = min(rec_u, rec_v) / fan-in of v, with
 *          rec = recovery_s: 0 when either end is stateless), half of w_rec * (sigma_a + sigma_b)/speed
 *          for each pair of replicas stacked on one node whose primaries share a
 *          domain (serial recovery; the four players involved each pay half),
 *          and, for a replica, w_rec * sigma_a / speed (its own restore time).
 * The social cost counts each interaction once; potential <= social <= 2 *
 * potential, so the potential minimiser is within a factor 2 of the optimum.
 *
 * Typical use (planner or coordinator):
 *   p = nirvana_problem_new(); nirvana_add_node(...) per node;
 *   nirvana_add_task(...) per task; nirvana_add_edge(...) per DAG edge;
 *   nirvana_config_init(&c); c.strategy = ...;  nirvana_place(p, &c, &r, &e);
 *   on failure: set nodes[n].alive = 0 (or nirvana_kill_domain), then
 *   nirvana_replace(p, &c, r, &r2, &e);  EXPLAIN: nirvana_explain(p, &c, r2, ...).
 *
 * Ownership: a problem owns copies of everything added to it, and working
 * memory that it reuses from call to call (so that a re-placement touches no
 * fresh pages).  A result owns its arrays and does not point into the
 * problem.  Nothing here keeps global state: distinct problems may be used
 * from distinct threads, but calls on one problem must not overlap.
 */
#ifndef PLACEMENT_H
#define PLACEMENT_H

#include <stdint.h>

#include "base/base.h"

/* ---------------------------------------------------------------- problem */

typedef struct nirvana_node {
    char name[64]; /* for EXPLAIN; copied */
    int domain;    /* failure domain, 0..ndomains-1 */
    int slots;     /* players it may host */
    double speed;  /* relative processing rate: 1.0 normal, 0.05 a slowed node */
    int alive;
    /* CPU the node is busy with outside every player (a stream's decoding
     * and log at its home or shadow, the coordinator's forwarding, epoch
     * commits), in the tasks' load units: the node's congestion starts from
     * it, for every strategy that weighs load.  0 unless measured. */
    double base_load;
} nirvana_node;

typedef struct nirvana_task {
    char name[48];       /* for EXPLAIN, e.g. "q1.count#3"; copied */
    int query;           /* caller's ids, echoed back */
    int op;
    int depth;           /* depth of the operator in its DAG (sources 0) */
    int parallelism;     /* tasks of its operator */
    double load;         /* CPU demand, in units of one speed-1.0 node */
    int stateful;        /* 1: has R replicas */
    double state_mb;     /* state size (informative; the simulator uses it) */
    double recovery_s;   /* seconds to bring it back after its node dies, at speed 1.0 */
    double replica_load; /* CPU demand of one replica applying deltas */
    double repl_traffic; /* delta stream to each replica, in link units */
    int measured;        /* load and replica_load are measured CPU, in the nodes' speed units (the
                            capacity rule, nirvana_config.max_util, weighs only such players) */
} nirvana_task;

typedef struct nirvana_edge {
    int from, to;   /* task indices */
    double traffic; /* in units of one node link's capacity */
} nirvana_edge;

/* A player held on one node (nirvana_pin). */
typedef struct nirvana_pin {
    int task;    /* task index */
    int replica; /* -1 for the task itself (its primary), else 0..R-1 */
    int node;
} nirvana_pinning;

typedef struct nirvana_problem {
    int nnodes, ndomains, ntasks, nedges;
    nirvana_node *nodes;
    nirvana_task *tasks;
    nirvana_edge *edges;
    int replicas;        /* R, replicas per stateful task (default 1) */
    double d_intra;      /* distance between two nodes of one domain (default 0.2) */
    double d_inter;      /* distance across domains (default 1.0); same node is 0 */
    double *dist;        /* optional measured nnodes x nnodes matrix, row major; owned */
    nirvana_pinning *pins;   /* nirvana_pin(); owned */
    int npins, cap_pins;
    int cap_nodes, cap_tasks, cap_edges;
    struct nv_scratch *scratch; /* internal: working memory reused from call to call */
} nirvana_problem;

nirvana_problem *nirvana_problem_new(void);
void nirvana_problem_free(nirvana_problem *p); /* NULL is a no-op */

/* Each add returns the new index (>= 0) or a negative XE_ code. */
int nirvana_add_node(nirvana_problem *p, const char *name, int domain, int slots, double speed);
int nirvana_add_task(nirvana_problem *p, const nirvana_task *t);
int nirvana_add_edge(nirvana_problem *p, int from, int to, double traffic);

int nirvana_set_distance(nirvana_problem *p, double d_intra, double d_inter);
/* Copies an nnodes x nnodes matrix (must be symmetric, zero diagonal);
 * NULL goes back to d_intra/d_inter.  Call after the last add_node. */
int nirvana_set_distance_matrix(nirvana_problem *p, const double *m);
/*
 * Pins a player to a node: replica -1 is task `task` itself, k >= 0 its
 * replica k (ignored while the task is stateless or k >= R).  A pinned player
 * starts on its node and never moves, under every strategy: no best
 * response, exchange, group move, promotion or repair round touches it, and
 * the equilibrium certificate does not try to move it (it is not playing).
 * Pinning a player again replaces its pin.  A pin on a dead node is void:
 * the player is displaced and plays like any other.  Pins must keep the hard
 * rules (slots, replica domains); nirvana_place and nirvana_replace return
 * XE_INVAL when they do not.  The coordinator pins a query's sources to
 * their stream's home node, its sink to itself, and the players of queries
 * already running to where they run.  Returns 0 or XE_INVAL.
 */
int nirvana_pin(nirvana_problem *p, int task, int replica, int node);
/* 1 if the player (as laid out in results) is pinned to a live node. */
int nirvana_player_pinned(const nirvana_problem *p, int player);

/* Marks every node of a domain dead (alive = 0); returns how many. */
int nirvana_kill_domain(nirvana_problem *p, int domain);

/* Players: primaries first, then R replicas per stateful task. */
int nirvana_player_count(const nirvana_problem *p);
/* Player id of replica k (0..R-1) of task t, or -1 if t is stateless. */
int nirvana_replica_player(const nirvana_problem *p, int t, int k);

/* ---------------------------------------------------------------- configuration */

typedef enum nirvana_strategy {
    NIRVANA_FULL = 0,       /* the game with every term */
    NIRVANA_NO_RECOVERY,    /* the game with w_rec = 0 (hard rules still hold) */
    NIRVANA_ROUND_ROBIN,    /* Storm's EvenScheduler */
    NIRVANA_RESOURCE_AWARE, /* R-Storm-like greedy */
    NIRVANA_RANDOM,         /* uniform over legal nodes, seeded */
    NIRVANA_NSTRATEGIES
} nirvana_strategy;

/* "nirvana", "nirvana-no-recovery", "round-robin", "resource-aware", "random". */
const char *nirvana_strategy_name(nirvana_strategy s);
int nirvana_strategy_parse(const char *name, nirvana_strategy *out); /* XE_INVAL if unknown */

enum nirvana_move_kind {
    NIRVANA_MOVE_BEST_RESPONSE, /* a placed player moved; potential fell by exactly its gain */
    NIRVANA_MOVE_EXCHANGE,      /* player took `other`'s node, other went to other_to */
    NIRVANA_MOVE_GROUP,         /* a stateful primary moved and its replicas re-placed */
    NIRVANA_MOVE_ENTER,         /* an unplaced (displaced or new) player took a node */
    NIRVANA_MOVE_PROMOTE,       /* a primary took over its replica's node; the replica left */
};

typedef struct nirvana_move {
    int kind;
    int player, from, to;  /* from = -1 when entering */
    int other, other_to;   /* EXCHANGE only (else -1): the player evicted from `to` */
    int round;             /* 0 for the re-placement phase */
    double cost_before;    /* mover's cost before (HUGE_VAL when entering) */
    double cost_after;
    double potential_delta; /* change of the potential: < 0 for BEST_RESPONSE, EXCHANGE, GROUP */
    const int *assignment; /* node of every player after the move; valid during the call */
    const int *before;     /* ... and before it, for EXCHANGE and GROUP (else NULL) */
} nirvana_move;

typedef void (*nirvana_move_fn)(void *arg, const nirvana_move *m);

typedef struct nirvana_config {
    nirvana_strategy strategy;
    double w_proc, w_trans, w_rec; /* defaults 1, 1, 0.01 */
    int max_rounds;    /* cap on full rounds of best responses (default 100) */
    int exchanges;     /* exchange passes once best responses stall (default 1; 0 = none;
                          problems of <= 64 players pass until no exchange helps) */
    int repair_rounds; /* full rounds after a re-placement (default 2) */
    uint64_t seed;     /* for NIRVANA_RANDOM */
    double eps;        /* a move must gain more than eps * (1 + |cost|) (default 1e-9) */
    /* The capacity rule of a rebalance (nirvana_rebalance): a measured player
     * may not move onto a node whose measured load (its base_load and its
     * measured players', the mover's included) would pass max_util * speed.
     * The processing term is linear in the load and blind to a node that
     * saturates; the rule keeps the game off such nodes while every move
     * still lowers the potential by the mover's gain (docs/nirvana.md,
     * "The capacity rule").  0 = off (the default). */
    double max_util;
    /* The measured players' loads are this many times the rate they were
     * measured at (a caller that plays them at a peak rate); the capacity
     * rule judges them at the measured rate, load / util_scale.  0 or 1: as
     * they are. */
    double util_scale;
    nirvana_move_fn on_move; /* optional trace of every move */
    void *on_move_arg;
} nirvana_config;

void nirvana_config_init(nirvana_config *c);

/* ---------------------------------------------------------------- result */

typedef struct nirvana_player {
    int task;    /* task index */
    int replica; /* -1 for the primary, else 0..R-1 */
    int node;    /* -1 if unplaced (only a replica with no legal node left) */
    double proc, trans, rec, cost; /* this player's weighted cost terms; cost = sum */
} nirvana_player;

typedef struct nirvana_result {
    nirvana_strategy strategy;
    int ntasks, replicas, nplayers;
    nirvana_player *players; /* nplayers entries, laid out as in the header comment */
    double social_cost;      /* proc_cost + trans_cost + rec_cost, each interaction once */
    double proc_cost, trans_cost, rec_cost;
    double potential;
    int rounds;    /* full rounds played (the last one moved nothing if converged) */
    int moves;     /* best-response moves */
    int exchanges; /* exchange and group moves (several players, potential strictly lower) */
    int converged; /* 1 if a round moved nothing before the cap */
    int unplaced;  /* replicas left without a node */
    int promoted;  /* primaries that took over a replica's node (re-placement) */
    int displaced; /* players that had to re-play (re-placement) */
    double elapsed_ms;
} nirvana_result;

void nirvana_result_free(nirvana_result *r); /* NULL is a no-op */

/*
 * Places every player with c->strategy.  On success *out is a new result the
 * caller frees.  XE_FULL if some task or replica has no legal node (too few
 * slots, or fewer than two live domains with R > 0), XE_INVAL on a bad problem.
 *
 * The game (NIRVANA_FULL, NIRVANA_NO_RECOVERY) starts from round-robin and
 * plays rounds of best responses in play order (DAG depth ascending,
 * parallelism descending, player id); a player moves only if that lowers its
 * cost by more than eps * (1 + |cost|), to its cheapest legal node (ties: the
 * lowest node id).  Once a round moves nothing, up to c->exchanges exchange
 * passes try two-player exchanges and group moves (a primary with its
 * replicas) that lower the potential; best-response rounds follow each pass.
 * Every move lowers the potential, so this ends; it ends in a Nash
 * equilibrium unless c->max_rounds cuts it short (converged = 0).
 */
int nirvana_place(const nirvana_problem *p, const nirvana_config *c, nirvana_result **out,
                  xerr *e);

/*
 * Incremental re-placement.  `prev` is a result for this problem before some
 * nodes died (p's alive flags say which) or before tasks were appended.
 * Survivors keep their nodes; only the displaced players re-play:
 *   1. a stateful primary on a dead node with a surviving replica is promoted
 *      to that replica's node, unless (Nirvana only) another node is cheaper
 *      even after paying w_rec * recovery_s for copying the state there;
 *   2. the other displaced primaries, then the displaced replicas (including
 *      those vacated by a promotion), take their best legal node;
 *   3. everyone then plays at most c->repair_rounds full rounds.
 * Baselines re-place displaced players with their own rule after promotion.
 * A replica with no legal node left stays unplaced (counted in `unplaced`).
 */
int nirvana_replace(const nirvana_problem *p, const nirvana_config *c,
                    const nirvana_result *prev, nirvana_result **out, xerr *e);

/* ---------------------------------------------------------------- live re-placement */

/* What a player may do in nirvana_rebalance. */
enum nirvana_rb_mode {
    NIRVANA_RB_FIXED = 0,      /* stays where it is */
    NIRVANA_RB_FREE = 1,       /* moves to any legal node (stateless, a replica, or state rebuilt by replay) */
    NIRVANA_RB_WITH_STATE = 2, /* a stateful primary: moves only onto a replica's node (which holds its state),
                                  and that replica moves on to another legal node */
};

typedef struct nirvana_rb_move {
    int player, from, to;
    int replica, replica_to;   /* a promotion: the replica player whose node `to` was, and where it went; else -1 */
    double cost_before, cost_after;           /* the mover's cost share */
    double potential_before, potential_after; /* the whole game's */
} nirvana_rb_move;

/*
 * Re-plays best responses from the placement in `assign` (a node per player,
 * laid out as in results; rewritten in place) with hysteresis: a player moves
 * only when its cost falls below (1 - threshold) times its cost now, by more
 * than threshold times the median player's cost, *and* the potential falls.  Pinned players and those whose mode[] is FIXED stay.
 * No player goes back to a node it left during the call.
 * Rounds in play order until one moves nothing or max_moves moves are made;
 * moves[] (max_moves entries, may be NULL) gets them in order, *nmoves their
 * count.  Pure.  XE_INVAL on a bad threshold (0 <= threshold < 1).
 */
int nirvana_rebalance(const nirvana_problem *p, const nirvana_config *c, int *assign, const unsigned char *mode,
                      double threshold, int max_moves, nirvana_rb_move *moves, int *nmoves, xerr *e);
/* The same, where avoid[i * nnodes + n] = 1 (avoid may be NULL) also keeps
 * player i off node n: the coordinator's memory of the nodes players left in
 * recent rebalances, so that nothing moves back and forth across calls as
 * the measured inputs follow the placement. */
int nirvana_rebalance_avoiding(const nirvana_problem *p, const nirvana_config *c, int *assign,
                               const unsigned char *mode, const unsigned char *avoid, double threshold, int max_moves,
                               nirvana_rb_move *moves, int *nmoves, xerr *e);

/* ---------------------------------------------------------------- evaluation */

typedef struct nirvana_score {
    int legal;                 /* 0 if a hard rule is broken (then costs are HUGE_VAL) */
    double potential, social;  /* social = proc + trans + rec */
    double proc, trans, rec;
} nirvana_score;

/*
 * Scores an assignment (node per player, -1 unplaced) from scratch, with the
 * weights of c (w_rec taken as 0 for NIRVANA_NO_RECOVERY).  This is the
 * reference implementation the game's incremental bookkeeping is tested against.
 */
int nirvana_score_assignment(const nirvana_problem *p, const nirvana_config *c,
                             const int *assignment, nirvana_score *out, xerr *e);

/* Builds a result (costs filled) from an assignment; for tools and tests. */
int nirvana_result_from_assignment(const nirvana_problem *p, const nirvana_config *c,
                                   const int *assignment, nirvana_result **out, xerr *e);

typedef struct nirvana_certificate {
    int is_equilibrium; /* 1 if no player can gain more than eps by moving alone */
    int player, from, to; /* the most profitable unilateral deviation (-1 if none) */
    double gain;          /* its cost decrease (<= eps-threshold at an equilibrium) */
    long checked;         /* legal (player, node) deviations examined */
} nirvana_certificate;

/*
 * Exhaustively tries every legal unilateral deviation of every player (every
 * live node with a free slot that keeps the hard rules) and reports the best
 * one.  Costs from the reference scorer, not from the game's bookkeeping.
 */
int nirvana_check_equilibrium(const nirvana_problem *p, const nirvana_config *c,
                              const nirvana_result *r, nirvana_certificate *cert, xerr *e);

/*
 * Appends the EXPLAIN PLACEMENT text: one line per player (node, domain, cost
 * terms), the totals, the potential, rounds, and the equilibrium certificate.
 */
int nirvana_explain(const nirvana_problem *p, const nirvana_config *c,
                    const nirvana_result *r, sbuf *out, xerr *e);

/* The seeded PRNG (splitmix64) behind NIRVANA_RANDOM, for tools and tests
 * that need reproducible instances. */
uint64_t nirvana_splitmix64(uint64_t *state);

#endif
