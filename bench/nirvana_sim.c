/*
 * nirvana_sim: a placement simulator for Nirvana and its baselines.
 *
 * It builds a cluster (nodes with speeds, slots and failure domains) and a set
 * of continuous queries (word count, windowed aggregation, a two-stream join),
 * places them with every strategy of planner/placement, and scores every
 * placement under one analytic model, the same for all strategies:
 *
 *   throughput  the largest factor theta by which every source rate can grow
 *               before a node's CPU (sum of loads / speed), a node link (1 Gb/s
 *               each way) or a domain uplink (4:1 oversubscribed) saturates;
 *               reported as theta x the offered tuples/s.
 *   latency     at a common offered load (half the smallest throughput bound
 *               among the strategies, so that every placement is stable): per
 *               task an M/M/1 sojourn, service / (1 - node utilisation), with
 *               service = cost per tuple / speed; per hop a base latency (same
 *               node 0.02 ms, same domain 0.1 ms, across 0.5 ms) stretched by
 *               1 / (1 - utilisation of the busiest link it crosses); a query's
 *               latency is its critical path over operators (mean task sojourn,
 *               traffic-weighted mean hop).  Window waits are excluded.
 *   recovery    each domain fails in turn: detection (500 ms heartbeat
 *               timeout), then every stateful task on it is promoted at its
 *               first surviving replica, restoring its state there at 100 MB/s
 *               x speed, one task after another per node; stateless tasks
 *               restart in 50 ms; a task then replays one epoch (1 s) of input
 *               at the new node's speed, and starts only after every failed
 *               upstream task is back (cascade).  Recovery time = detection +
 *               the last task back; averaged over the domains that host tasks.
 *   degraded    throughput of each strategy's own re-placement after the
 *               failure (the game re-plays incrementally; baselines promote
 *               replicas then re-place displaced players by their own rule).
 *
 * Two setups: "paper" (9 nodes in 3 domains, one slowed node per domain, as
 * in the ICNP 2018 evaluation) and "scale" (1,000 nodes in 50 domains, 5 %
 * slowed, about 10,000 tasks).  Offered load is 40 % of the cluster's CPU.
 * Output: a table per setup and `figure: NAME = VALUE UNIT` lines.
 * Usage: nirvana_sim [paper|scale|sweep]... (default: all three).
 */
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "planner/placement/placement.h"

/* ---------------------------------------------------------------- the model's constants */

#define CORES 8.0          /* per node; a task's load is its share of one speed-1 node */
#define LINK_BPS 125e6     /* 1 Gb/s node link, each way */
#define OVERSUB 4.0        /* domain uplink = nodes x link / OVERSUB */
#define HOP_NODE_MS 0.02
#define HOP_INTRA_MS 0.1
#define HOP_INTER_MS 0.5
#define DETECT_MS 500.0
#define RESTART_MS 50.0
#define RESTORE_MBPS 100.0
#define EPOCH_MS 1000.0
#define OFFERED 0.40       /* offered load / aggregate CPU */
#define SLOW_SPEED 0.05

/* CPU time of this process, ms: the machine may be shared, so timings are
 * reported as CPU time next to wall time. */
static double cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---------------------------------------------------------------- workload */

enum { SHUFFLE, FORWARD };

typedef struct op_tmpl {
    const char *name;
    int par;        /* tasks, before the query's scale factor */
    double cost_us; /* CPU per input tuple at speed 1 (sources: per emitted tuple) */
    double sel;     /* output tuples per input tuple */
    double bytes;   /* bytes per output tuple */
    int stateful;
    double state_mb; /* per task */
    int grouping;    /* of its input */
    int parents[2], np;
    double src_rate; /* sources: tuples/s (relative; scaled to the offered load) */
} op_tmpl;

typedef struct query_tmpl {
    const char *name;
    int nops;
    op_tmpl ops[6];
} query_tmpl;

static const query_tmpl TEMPLATES[] = {
    {"wordcount", 4,
     {{"spout", 2, 2, 1, 100, 0, 0, SHUFFLE, {0}, 0, 1000},
      {"split", 4, 6, 8, 20, 0, 0, SHUFFLE, {0}, 1, 0},
      {"count", 4, 3, 0.2, 24, 1, 200, SHUFFLE, {1}, 1, 0},
      {"sink", 1, 1, 0, 0, 0, 0, SHUFFLE, {2}, 1, 0}}},
    {"window-agg", 4,
     {{"source", 2, 2, 1, 200, 0, 0, SHUFFLE, {0}, 0, 2000},
      {"parse", 4, 8, 1, 64, 0, 0, FORWARD, {0}, 1, 0},
      {"window", 4, 4, 0.05, 48, 1, 400, SHUFFLE, {1}, 1, 0},
      {"sink", 1, 1, 0, 0, 0, 0, SHUFFLE, {2}, 1, 0}}},
    {"join", 5,
     {{"lineitem", 2, 2, 1, 160, 0, 0, SHUFFLE, {0}, 0, 1500},
      {"orders", 2, 2, 1, 120, 0, 0, SHUFFLE, {0}, 0, 500},
      {"join", 4, 10, 0.5, 200, 1, 800, SHUFFLE, {0, 1}, 2, 0},
      {"agg", 2, 5, 0.1, 48, 1, 100, SHUFFLE, {2}, 1, 0},
      {"sink", 1, 1, 0, 0, 0, 0, SHUFFLE, {3}, 1, 0}}},
};

typedef struct simop {
    int query, par, first_task, depth, np, parents[2], sink;
    double cost_us, in_rate, out_rate, bytes, state_mb;
    int stateful, grouping;
} simop;

typedef struct sim {
    const char *name;
    nirvana_problem *p;
    int nops, cap_ops, nqueries;
    simop *ops;
    int *qfirst; /* first op of each query */
    int *task_op;
    double src_rate; /* offered tuples/s, all sources */
    double *uplink;  /* per domain, link units */
} sim;

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r) { return nirvana_splitmix64(&r->s); }
static double runi(rng *r) { return (double)(rnext(r) >> 11) / 9007199254740992.0; }

static void *xcalloc(size_t n, size_t sz)
{
    void *q = calloc(n ? n : 1, sz);
    if (!q) {
        fprintf(stderr, "nirvana_sim: out of memory\n");
        exit(1);
    }
    return q;
}

static void check(int rc, const char *what, const xerr *e)
{
    if (rc >= 0) return;
    fprintf(stderr, "nirvana_sim: %s: %s\n", what, e ? e->msg : xerr_name(rc));
    exit(1);
}

/* Appends one query from a template, task parallelism multiplied by scale,
 * stopping (truncating the query) if max_tasks would be exceeded. */
static int add_query(sim *s, const query_tmpl *q, int scale, double rate_mult, int max_tasks)
{
    nirvana_problem *p = s->p;
    int need = 0;
    for (int k = 0; k < q->nops; k++) need += q->ops[k].par * (q->ops[k].np ? scale : 1);
    if (p->ntasks + need > max_tasks) return 0;
    if (s->nops + q->nops > s->cap_ops) {
        s->cap_ops = (s->nops + q->nops) * 2;
        s->ops = realloc(s->ops, (size_t)s->cap_ops * sizeof *s->ops);
        s->qfirst = realloc(s->qfirst, (size_t)s->cap_ops * sizeof *s->qfirst);
        if (!s->ops || !s->qfirst) check(XE_NOMEM, "realloc", NULL);
    }
    int base = s->nops, qid = s->nqueries++;
    s->qfirst[qid] = base;
    for (int k = 0; k < q->nops; k++) {
        const op_tmpl *t = &q->ops[k];
        simop *o = &s->ops[s->nops++];
        memset(o, 0, sizeof *o);
        o->query = qid;
        o->par = t->par * (t->np ? scale : 1); /* sources keep their parallelism */
        o->cost_us = t->cost_us;
        o->bytes = t->bytes;
        o->stateful = t->stateful;
        o->state_mb = t->state_mb;
        o->grouping = t->grouping;
        o->np = t->np;
        o->sink = 1;
        for (int j = 0; j < t->np; j++) {
            o->parents[j] = base + t->parents[j];
            s->ops[o->parents[j]].sink = 0;
            simop *par = &s->ops[o->parents[j]];
            o->in_rate += par->out_rate;
            if (par->depth + 1 > o->depth) o->depth = par->depth + 1;
        }
        if (!t->np) {
            o->in_rate = t->src_rate * rate_mult;
            s->src_rate += o->in_rate;
        }
        o->out_rate = o->in_rate * (t->np ? t->sel : 1);
        o->first_task = p->ntasks;
        for (int i = 0; i < o->par; i++) {
            nirvana_task tk = {0};
            snprintf(tk.name, sizeof tk.name, "q%d.%s#%d", qid, t->name, i);
            tk.query = qid;
            tk.op = s->nops - 1;
            tk.depth = o->depth;
            tk.parallelism = o->par;
            double rate = o->in_rate / o->par;
            tk.load = rate * o->cost_us / (CORES * 1e6);
            tk.stateful = o->stateful;
            tk.state_mb = o->state_mb;
            tk.recovery_s = RESTART_MS / 1000 + o->state_mb / RESTORE_MBPS;
            tk.replica_load = o->stateful ? 0.1 * tk.load : 0;
            tk.repl_traffic = o->stateful ? rate * 16 / LINK_BPS : 0; /* 16-byte deltas */
            check(nirvana_add_task(p, &tk), "add_task", NULL);
        }
        for (int j = 0; j < o->np; j++) {
            const simop *par = &s->ops[o->parents[j]];
            int fwd = o->grouping == FORWARD && par->par == o->par;
            for (int a = 0; a < par->par; a++)
                for (int b = 0; b < o->par; b++) {
                    if (fwd && a != b) continue;
                    double r = par->out_rate / par->par / (fwd ? 1 : o->par);
                    check(nirvana_add_edge(p, par->first_task + a, o->first_task + b,
                                           r * par->bytes / LINK_BPS),
                          "add_edge", NULL);
                }
        }
    }
    return need;
}

/* Scales every rate so that the total load is OFFERED x the cluster's CPU. */
static void scale_load(sim *s)
{
    nirvana_problem *p = s->p;
    double cpu = 0, load = 0;
    for (int n = 0; n < p->nnodes; n++) cpu += p->nodes[n].speed;
    for (int t = 0; t < p->ntasks; t++) load += p->tasks[t].load;
    double f = OFFERED * cpu / load;
    for (int t = 0; t < p->ntasks; t++) {
        p->tasks[t].load *= f;
        p->tasks[t].replica_load *= f;
        p->tasks[t].repl_traffic *= f;
    }
    for (int k = 0; k < p->nedges; k++) p->edges[k].traffic *= f;
    for (int o = 0; o < s->nops; o++) {
        s->ops[o].in_rate *= f;
        s->ops[o].out_rate *= f;
    }
    s->src_rate *= f;
}

static void finish_sim(sim *s)
{
    nirvana_problem *p = s->p;
    s->task_op = xcalloc((size_t)p->ntasks, sizeof *s->task_op);
    for (int o = 0; o < s->nops; o++)
        for (int i = 0; i < s->ops[o].par; i++) s->task_op[s->ops[o].first_task + i] = o;
    s->uplink = xcalloc((size_t)p->ndomains, sizeof *s->uplink);
    for (int n = 0; n < p->nnodes; n++) s->uplink[p->nodes[n].domain] += 1.0 / OVERSUB;
    scale_load(s);
}

static void add_node(nirvana_problem *p, int id, int domain, int slots, double speed)
{
    char name[32];
    snprintf(name, sizeof name, "d%d-n%d", domain, id);
    check(nirvana_add_node(p, name, domain, slots, speed), "add_node", NULL);
}

/* 9 nodes in 3 domains, the last node of each domain slowed; one query of each kind. */
static void build_paper(sim *s)
{
    memset(s, 0, sizeof *s);
    s->name = "paper";
    s->p = nirvana_problem_new();
    for (int n = 0; n < 9; n++) add_node(s->p, n, n / 3, 8, n % 3 == 2 ? SLOW_SPEED : 1.0);
    for (size_t q = 0; q < sizeof TEMPLATES / sizeof TEMPLATES[0]; q++)
        add_query(s, &TEMPLATES[q], 1, 1.0, 1 << 30);
    finish_sim(s);
}

/* 1,000 nodes in 50 domains, 5 % slowed, queries until 10,000 tasks. */
static void build_scale(sim *s)
{
    memset(s, 0, sizeof *s);
    s->name = "scale";
    s->p = nirvana_problem_new();
    rng r = {2018};
    for (int n = 0; n < 1000; n++)
        add_node(s->p, n, n / 20, 16, runi(&r) < 0.05 ? SLOW_SPEED : 0.8 + 0.4 * runi(&r));
    const int ntmpl = (int)(sizeof TEMPLATES / sizeof TEMPLATES[0]);
    for (int q = 0; s->p->ntasks < 10000; q++) {
        int scale = 1 + (int)(rnext(&r) % 3);
        if (!add_query(s, &TEMPLATES[q % ntmpl], scale, 0.5 + runi(&r), 10000)) {
            /* fill the rest with the smallest query shape */
            if (!add_query(s, &TEMPLATES[0], 1, 1.0, 10000)) break;
        }
    }
    finish_sim(s);
}

static void free_sim(sim *s)
{
    nirvana_problem_free(s->p);
    free(s->ops);
    free(s->qfirst);
    free(s->task_op);
    free(s->uplink);
}

/* ---------------------------------------------------------------- evaluation */

typedef struct flows {
    double *L, *out, *in, *xout, *xin; /* per node: load, link out/in; per domain: uplink out/in */
} flows;

static void flows_init(flows *f, const nirvana_problem *p)
{
    f->L = xcalloc((size_t)p->nnodes, sizeof *f->L);
    f->out = xcalloc((size_t)p->nnodes, sizeof *f->out);
    f->in = xcalloc((size_t)p->nnodes, sizeof *f->in);
    f->xout = xcalloc((size_t)p->ndomains, sizeof *f->xout);
    f->xin = xcalloc((size_t)p->ndomains, sizeof *f->xin);
}

static void flows_free(flows *f)
{
    free(f->L);
    free(f->out);
    free(f->in);
    free(f->xout);
    free(f->xin);
}

static void flow(flows *f, const nirvana_problem *p, int a, int b, double traffic)
{
    if (a < 0 || b < 0 || a == b) return;
    f->out[a] += traffic;
    f->in[b] += traffic;
    int da = p->nodes[a].domain, db = p->nodes[b].domain;
    if (da != db) {
        f->xout[da] += traffic;
        f->xin[db] += traffic;
    }
}

static void compute_flows(flows *f, const sim *s, const nirvana_result *r)
{
    const nirvana_problem *p = s->p;
    for (int i = 0; i < r->nplayers; i++) {
        const nirvana_player *pl = &r->players[i];
        if (pl->node < 0) continue;
        const nirvana_task *t = &p->tasks[pl->task];
        f->L[pl->node] += pl->replica < 0 ? t->load : t->replica_load;
        if (pl->replica >= 0) flow(f, p, r->players[pl->task].node, pl->node, t->repl_traffic);
    }
    for (int k = 0; k < p->nedges; k++) {
        const nirvana_edge *e = &p->edges[k];
        flow(f, p, r->players[e->from].node, r->players[e->to].node, e->traffic);
    }
}

/* Throughput bound factor theta (see the file comment). */
static double theta_of(const sim *s, const flows *f)
{
    const nirvana_problem *p = s->p;
    double th = HUGE_VAL;
    for (int n = 0; n < p->nnodes; n++) {
        if (f->L[n] > 0) th = fmin(th, p->nodes[n].speed / f->L[n]);
        if (f->out[n] > 0) th = fmin(th, 1 / f->out[n]);
        if (f->in[n] > 0) th = fmin(th, 1 / f->in[n]);
    }
    double thc = th;
    for (int d = 0; d < p->ndomains; d++) {
        if (f->xout[d] > 0) th = fmin(th, s->uplink[d] / f->xout[d]);
        if (f->xin[d] > 0) th = fmin(th, s->uplink[d] / f->xin[d]);
    }
    if (getenv("SIM_DEBUG")) fprintf(stderr, "theta node/link %.3f uplink %.3f\n", thc, th);
    return th;
}

static double throughput(const sim *s, const nirvana_result *r)
{
    flows f;
    flows_init(&f, s->p);
    compute_flows(&f, s, r);
    double th = theta_of(s, &f);
    flows_free(&f);
    return th * s->src_rate;
}

static double hop_ms(const sim *s, const flows *f, double th, int a, int b)
{
    const nirvana_problem *p = s->p;
    if (a == b) return HOP_NODE_MS;
    double rho = th * fmax(f->out[a], f->in[b]);
    int da = p->nodes[a].domain, db = p->nodes[b].domain;
    if (da != db) rho = fmax(rho, th * fmax(f->xout[da] / s->uplink[da], f->xin[db] / s->uplink[db]));
    double base = da == db ? HOP_INTRA_MS : HOP_INTER_MS;
    return rho < 1 ? base / (1 - rho) : HUGE_VAL;
}

/* Mean critical-path latency over queries, at throughput factor th. */
static double latency_ms(const sim *s, const nirvana_result *r, double th)
{
    const nirvana_problem *p = s->p;
    flows f;
    flows_init(&f, p);
    compute_flows(&f, s, r);
    double *oplat = xcalloc((size_t)s->nops, sizeof *oplat);
    double *path = xcalloc((size_t)s->nops, sizeof *path);
    double *elat = xcalloc((size_t)s->nops * 2, sizeof *elat); /* per op and parent slot */
    double *ew = xcalloc((size_t)s->nops * 2, sizeof *ew);
    for (int o = 0; o < s->nops; o++) {
        const simop *op = &s->ops[o];
        double sum = 0;
        for (int i = 0; i < op->par; i++) {
            int n = r->players[op->first_task + i].node;
            double v = p->nodes[n].speed, rho = th * f.L[n] / v;
            sum += rho < 1 ? op->cost_us / v / (1 - rho) / 1000 : HUGE_VAL;
        }
        oplat[o] = sum / op->par;
    }
    for (int k = 0; k < p->nedges; k++) {
        const nirvana_edge *e = &p->edges[k];
        int o = s->task_op[e->to], u = s->task_op[e->from];
        int slot = s->ops[o].parents[0] == u ? 0 : 1;
        double h = hop_ms(s, &f, th, r->players[e->from].node, r->players[e->to].node);
        elat[2 * o + slot] += e->traffic * h;
        ew[2 * o + slot] += e->traffic;
    }
    double total = 0;
    int nq = 0;
    for (int o = 0; o < s->nops; o++) { /* ops are in topological order */
        const simop *op = &s->ops[o];
        double best = 0;
        for (int j = 0; j < op->np; j++) {
            double h = ew[2 * o + j] > 0 ? elat[2 * o + j] / ew[2 * o + j] : 0;
            best = fmax(best, path[op->parents[j]] + h);
        }
        path[o] = best + oplat[o];
    }
    for (int q = 0; q < s->nqueries; q++) {
        int end = q + 1 < s->nqueries ? s->qfirst[q + 1] : s->nops;
        double worst = 0;
        for (int o = s->qfirst[q]; o < end; o++)
            if (s->ops[o].sink) worst = fmax(worst, path[o]);
        total += worst;
        nq++;
    }
    free(oplat);
    free(path);
    free(elat);
    free(ew);
    flows_free(&f);
    return total / nq;
}

/* Mean recovery time over single-domain failures (see the file comment). */
static double recovery_ms(const sim *s, const nirvana_result *r, double *mean_task_ms)
{
    const nirvana_problem *p = s->p;
    double *busy = xcalloc((size_t)p->nnodes, sizeof *busy);
    double *ready = xcalloc((size_t)p->ntasks, sizeof *ready);
    double *replay = xcalloc((size_t)p->ntasks, sizeof *replay);
    double total = 0, task_total = 0;
    int domains = 0;
    long tasks = 0;
    for (int d = 0; d < p->ndomains; d++) {
        int hit = 0;
        for (int t = 0; t < p->ntasks; t++) {
            ready[t] = -1;
            int n = r->players[t].node;
            if (p->nodes[n].domain != d) continue;
            hit = 1;
            double own = RESTART_MS, speed = 1.0; /* stateless: restart on a normal node */
            for (int k = 0; p->tasks[t].stateful && k < p->replicas; k++) {
                int m = r->players[nirvana_replica_player(p, t, k)].node;
                if (m < 0 || p->nodes[m].domain == d) continue;
                speed = p->nodes[m].speed; /* promoted here: restores after the ones queued */
                busy[m] += RESTART_MS + p->tasks[t].state_mb / (RESTORE_MBPS * speed) * 1000;
                own = busy[m];
                break;
            }
            replay[t] = EPOCH_MS * p->tasks[t].load / speed; /* one epoch of input */
            ready[t] = own + replay[t];
        }
        if (!hit) continue;
        domains++;
        /* Cascade: a task replays only once its failed upstream tasks are back.
         * Edges were added parents first, so one pass is a longest path. */
        for (int k = 0; k < p->nedges; k++) {
            int u = p->edges[k].from, v = p->edges[k].to;
            if (ready[u] >= 0 && ready[v] >= 0) ready[v] = fmax(ready[v], ready[u] + replay[v]);
        }
        double worst = 0;
        for (int t = 0; t < p->ntasks; t++) {
            if (ready[t] < 0) continue;
            worst = fmax(worst, ready[t]);
            task_total += DETECT_MS + ready[t];
            tasks++;
        }
        total += DETECT_MS + worst;
        for (int n = 0; n < p->nnodes; n++) busy[n] = 0;
    }
    free(busy);
    free(ready);
    free(replay);
    *mean_task_ms = tasks ? task_total / (double)tasks : 0;
    return domains ? total / domains : 0;
}

/* ---------------------------------------------------------------- running the strategies */

typedef struct outcome {
    nirvana_strategy s;
    double tput, lat, rec, rec_task, degraded, place_ms, place_cpu, repl_ms, repl_cpu, repl_ms_max;
    double social, potential;
    int rounds, moves, exchanges, converged;
} outcome;

static const nirvana_strategy STRATS[] = {NIRVANA_FULL, NIRVANA_NO_RECOVERY, NIRVANA_ROUND_ROBIN,
                                          NIRVANA_RESOURCE_AWARE, NIRVANA_RANDOM};
#define NSTRATS ((int)(sizeof STRATS / sizeof STRATS[0]))

static void config_for(nirvana_config *c, nirvana_strategy s, double w_rec)
{
    nirvana_config_init(c);
    c->strategy = s;
    c->seed = 42;
    if (w_rec >= 0) c->w_rec = w_rec;
}

/* Places with every strategy; fills out[] (throughput, recovery, timings). */
static void run_strategies(sim *s, outcome *out, nirvana_result **res, double w_rec, int failures)
{
    nirvana_problem *p = s->p;
    xerr e;
    for (int k = 0; k < NSTRATS; k++) {
        nirvana_config c;
        config_for(&c, STRATS[k], w_rec);
        outcome *o = &out[k];
        memset(o, 0, sizeof *o);
        o->s = STRATS[k];
        uint64_t t0 = clock_mono_ns();
        double c0 = cpu_ms();
        check(nirvana_place(p, &c, &res[k], &e), nirvana_strategy_name(STRATS[k]), &e);
        o->place_ms = (double)(clock_mono_ns() - t0) / 1e6;
        o->place_cpu = cpu_ms() - c0;
        o->tput = throughput(s, res[k]);
        o->rec = recovery_ms(s, res[k], &o->rec_task);
        nirvana_config full;
        config_for(&full, NIRVANA_FULL, w_rec);
        nirvana_score sc;
        int *as = xcalloc((size_t)res[k]->nplayers, sizeof *as);
        for (int i = 0; i < res[k]->nplayers; i++) as[i] = res[k]->players[i].node;
        check(nirvana_score_assignment(p, &full, as, &sc, &e), "score", &e);
        free(as);
        o->social = sc.social;
        o->potential = sc.potential;
        o->rounds = res[k]->rounds;
        o->moves = res[k]->moves;
        o->exchanges = res[k]->exchanges;
        o->converged = res[k]->converged;
        if (!failures) continue;
        /* Each domain fails in turn: re-place, time it, measure degraded throughput. */
        int hit = 0;
        for (int d = 0; d < p->ndomains; d++) {
            if (nirvana_kill_domain(p, d) == 0) continue;
            nirvana_result *r2 = NULL;
            t0 = clock_mono_ns();
            c0 = cpu_ms();
            int rc = nirvana_replace(p, &c, res[k], &r2, &e);
            double ms = (double)(clock_mono_ns() - t0) / 1e6;
            o->repl_cpu += cpu_ms() - c0;
            for (int n = 0; n < p->nnodes; n++)
                if (p->nodes[n].domain == d) p->nodes[n].alive = 1;
            if (rc == XE_FULL) continue;
            check(rc, "replace", &e);
            hit++;
            o->repl_ms += ms;
            o->repl_ms_max = fmax(o->repl_ms_max, ms);
            o->degraded += throughput(s, r2);
            nirvana_result_free(r2);
        }
        if (hit) {
            o->repl_ms /= hit;
            o->repl_cpu /= hit;
            o->degraded /= hit;
        }
    }
    /* Latency at a common offered load every placement sustains. */
    double tmin = HUGE_VAL;
    for (int k = 0; k < NSTRATS; k++) tmin = fmin(tmin, out[k].tput);
    double th = 0.5 * tmin / s->src_rate;
    for (int k = 0; k < NSTRATS; k++) out[k].lat = latency_ms(s, res[k], th);
}

static void print_table(const sim *s, const outcome *o)
{
    printf("\n%s setup: %d nodes in %d domains, %d tasks, %d players, offered %.0f tuples/s\n",
           s->name, s->p->nnodes, s->p->ndomains, s->p->ntasks, nirvana_player_count(s->p),
           s->src_rate);
    printf("%-20s %12s %10s %12s %12s %12s %10s %9s %s\n", "strategy", "tput k/s", "lat ms",
           "recovery ms", "per-task ms", "degraded k/s", "place ms", "repl ms", "rounds/moves/exch");
    for (int k = 0; k < NSTRATS; k++)
        printf("%-20s %12.1f %10.3f %12.0f %12.0f %12.1f %10.1f %9.2f %d/%d/%d%s\n",
               nirvana_strategy_name(o[k].s), o[k].tput / 1e3, o[k].lat, o[k].rec, o[k].rec_task,
               o[k].degraded / 1e3, o[k].place_ms, o[k].repl_ms, o[k].rounds, o[k].moves,
               o[k].exchanges, o[k].converged ? "" : " (cap)");
}

/* Figure names use '_' where strategy names use '-'. */
static const char *fig_name(nirvana_strategy s, char *buf, size_t n)
{
    snprintf(buf, n, "%s", nirvana_strategy_name(s));
    for (char *c = buf; *c; c++)
        if (*c == '-') *c = '_';
    return buf;
}

static void print_figures(const sim *s, const outcome *o)
{
    char b[40];
    for (int k = 0; k < NSTRATS; k++) {
        const char *n = fig_name(o[k].s, b, sizeof b);
        printf("figure: %s_%s_throughput = %.1f ktuples/s\n", s->name, n, o[k].tput / 1e3);
        printf("figure: %s_%s_latency = %.3f ms\n", s->name, n, o[k].lat);
        printf("figure: %s_%s_recovery = %.0f ms\n", s->name, n, o[k].rec);
        printf("figure: %s_%s_recovery_per_task = %.0f ms\n", s->name, n, o[k].rec_task);
        printf("figure: %s_%s_degraded_throughput = %.1f ktuples/s\n", s->name, n,
               o[k].degraded / 1e3);
    }
    for (int k = 1; k < NSTRATS; k++) {
        const char *n = fig_name(o[k].s, b, sizeof b);
        printf("figure: %s_nirvana_vs_%s_throughput = %.2f x\n", s->name, n, o[0].tput / o[k].tput);
        printf("figure: %s_nirvana_vs_%s_latency = %.2f x\n", s->name, n, o[0].lat / o[k].lat);
        printf("figure: %s_nirvana_vs_%s_recovery = %.2f x\n", s->name, n, o[0].rec / o[k].rec);
    }
}

static void run_setup(sim *s)
{
    outcome o[NSTRATS];
    nirvana_result *res[NSTRATS];
    run_strategies(s, o, res, -1, 1);
    print_table(s, o);
    print_figures(s, o);
    if (strcmp(s->name, "scale") == 0) {
        /* The machine may be shared: the full placement is timed three times
         * (the best wall time is the figure), CPU time is printed alongside. */
        double best = o[0].place_ms, best_cpu = o[0].place_cpu;
        for (int rep = 0; rep < 2; rep++) {
            nirvana_config c;
            config_for(&c, NIRVANA_FULL, -1);
            nirvana_result *r = NULL;
            xerr e;
            uint64_t t0 = clock_mono_ns();
            double c0 = cpu_ms();
            check(nirvana_place(s->p, &c, &r, &e), "place", &e);
            best = fmin(best, (double)(clock_mono_ns() - t0) / 1e6);
            best_cpu = fmin(best_cpu, cpu_ms() - c0);
            nirvana_result_free(r);
        }
        printf("figure: nirvana_full_ms = %.1f ms\n", best);
        printf("figure: nirvana_full_cpu_ms = %.1f ms\n", best_cpu);
        printf("figure: nirvana_incremental_ms = %.2f ms\n", o[0].repl_ms);
        printf("figure: nirvana_incremental_cpu_ms = %.2f ms\n", o[0].repl_cpu);
        printf("figure: nirvana_incremental_max_ms = %.2f ms\n", o[0].repl_ms_max);
    }
    /* The equilibrium certificate, as EXPLAIN PLACEMENT would compute it. */
    nirvana_config c;
    config_for(&c, NIRVANA_FULL, -1);
    nirvana_certificate cert;
    xerr e;
    uint64_t t0 = clock_mono_ns();
    check(nirvana_check_equilibrium(s->p, &c, res[0], &cert, &e), "certificate", &e);
    printf("certificate: %s, %ld unilateral deviations checked\n",
           cert.is_equilibrium ? "Nash equilibrium" : "NOT an equilibrium", cert.checked);
    printf("figure: %s_nirvana_equilibrium = %d bool\n", s->name, cert.is_equilibrium);
    printf("figure: %s_nirvana_certificate_ms = %.0f ms\n", s->name,
           (double)(clock_mono_ns() - t0) / 1e6);
    for (int k = 0; k < NSTRATS; k++) nirvana_result_free(res[k]);
}

/* How w_rec trades steady-state performance for recovery.  Latency here is
 * at half of each placement's own throughput bound. */
static void run_sweep(sim *s)
{
    static const double W[] = {0, 0.002, 0.01, 0.05, 0.2, 1.0};
    printf("\nw_rec sweep, %s setup (nirvana only)\n%8s %12s %10s %12s %12s\n", s->name, "w_rec",
           "tput k/s", "lat ms", "recovery ms", "per-task ms");
    for (size_t k = 0; k < sizeof W / sizeof W[0]; k++) {
        nirvana_config c;
        config_for(&c, NIRVANA_FULL, W[k]);
        nirvana_result *r = NULL;
        xerr e;
        check(nirvana_place(s->p, &c, &r, &e), "sweep", &e);
        double per, rec = recovery_ms(s, r, &per), tp = throughput(s, r);
        double lat = latency_ms(s, r, 0.5 * tp / s->src_rate);
        printf("%8.3f %12.1f %10.3f %12.0f %12.0f\n", W[k], tp / 1e3, lat, rec, per);
        printf("figure: %s_sweep_wrec_%g_throughput = %.1f ktuples/s\n", s->name, W[k], tp / 1e3);
        printf("figure: %s_sweep_wrec_%g_recovery = %.0f ms\n", s->name, W[k], rec);
        nirvana_result_free(r);
    }
}

int main(int argc, char **argv)
{
    int paper = argc < 2, scale = argc < 2, sweep = argc < 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "paper")) paper = 1;
        else if (!strcmp(argv[i], "scale")) scale = 1;
        else if (!strcmp(argv[i], "sweep")) sweep = 1;
        else {
            fprintf(stderr, "usage: nirvana_sim [paper|scale|sweep]...\n");
            return 2;
        }
    }
    printf("model: %.0f cores/node, %.0f Mb/s links, uplinks %.0f:1, hops %.2f/%.1f/%.1f ms, "
           "detection %.0f ms, restore %.0f MB/s, epoch %.0f ms, offered load %.0f %% of CPU, "
           "slowed nodes at speed %.2f\n",
           CORES, LINK_BPS * 8 / 1e6, OVERSUB, HOP_NODE_MS, HOP_INTRA_MS, HOP_INTER_MS, DETECT_MS,
           RESTORE_MBPS, EPOCH_MS, OFFERED * 100, SLOW_SPEED);
    sim s;
    if (paper || sweep) {
        build_paper(&s);
        if (paper) run_setup(&s);
        if (sweep) run_sweep(&s);
        free_sim(&s);
    }
    if (scale || sweep) {
        build_scale(&s);
        if (scale) run_setup(&s);
        if (sweep) run_sweep(&s);
        free_sim(&s);
    }
    return 0;
}
