/*
 * measure.c: what tasks and nodes cost, measured, and how the coordinator
 * turns that into the placement game's inputs (docs/nirvana.md, "The
 * measured-cost model").
 *
 * Every node, about once a second (meas_report in report.c, from its tick), sends the
 * coordinator a STATS: its capacity (its cgroup quota, re-read each time so
 * that a quota cut while it runs shows up, unless --speed fixed it), its
 * utilisation (process CPU over wall time since the last report, over the
 * capacity), the round trip to each peer it has a connection to (the
 * least of the last 32 heartbeats', net_rtt_min_us), and the cumulative counters of every local
 * task of every deployed query (engine_task_stats_each).  The coordinator's
 * own node puts its report straight into the store.
 *
 * The store (meas_store_*, pure: no I/O, no clock of its own) keeps, per
 * task, the last counters and exponentially weighted moving averages of
 * their rates over the real time between reports (alpha = 1 - exp(-dt /
 * tau)), two of each, with time constants MEAS_TAU_S and MEAS_TAU_FALL_S:
 * the larger is used, so a rate rises fast and falls slowly; per node, its capacity as last
 * reported, its smoothed utilisation and round trips.  It converts them
 * into the game's units on demand: load in CPUs, traffic in 1 Gbit/s
 * links, recovery in seconds, distance from round trips.  A query's tasks
 * use measured inputs only once every one of them has been reported (a
 * task's first report is a rate over its counters since its deployment);
 * until then the planner's seeds stand.
 *
 * Runs on the node's loop; the store's results (place_meas arrays, round
 * trip rows) are borrowed until its next call.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"

/* A rate, smoothed two ways: the one the game uses is the larger, so a
 * rate rises within MEAS_TAU_S and falls over MEAS_TAU_FALL_S. */
typedef struct mrate {
    double fast, slow;
} mrate;

static void rate_take(mrate *r, double sample, double dt_s, int first)
{
    r->fast = meas_ewma(r->fast, sample, dt_s, first);
    r->slow = meas_ewma_tau(r->slow, sample, dt_s, MEAS_TAU_FALL_S, first);
}

static double rate_of(const mrate *r) { return r->fast > r->slow ? r->fast : r->slow; }

typedef struct mtask {
    int samples;
    int64_t at_ms;                       /* the node's clock at the last report */
    int64_t seen_ms;                     /* ours */
    uint64_t cpu_ns, rows_in, rows_out, bytes_out; /* the last counters */
    mrate cpu_s, in_s, out_s;            /* smoothed, per second */
    double state_b;                      /* smoothed bytes now */
    uint32_t ndest;
    uint64_t *dest_rows, *dest_bytes;    /* the last counters, per downstream task */
    mrate *dest_rows_s;                  /* smoothed */
} mtask;

/* A replica of one task on one node: what applying its state changes costs. */
typedef struct mrep {
    uint32_t task;
    char node[WIRE_NAME_MAX + 1];
    int samples;
    int64_t at_ms;
    uint64_t cpu_ns, bytes;   /* the last counters */
    mrate cpu_s, bytes_s;     /* smoothed, per second */
} mrep;

typedef struct mquery {
    uint32_t qid;
    int ntasks;
    mtask *t;
    mrep *reps;
    int nreps, capreps;
    int64_t seen_ms;
    place_meas *pm;                      /* meas_store_query's answer */
    double *traffic;
    struct mquery *next;
} mquery;

typedef struct mpeer {
    char name[WIRE_NAME_MAX + 1];
    double rtt_ms;
} mpeer;

typedef struct mnode {
    char name[WIRE_NAME_MAX + 1];
    int samples;
    int64_t seen_ms;
    double capacity;
    mrate util;
    uint64_t applied_bytes, applied_ns;
    int npeers;
    mpeer *peers;
} mnode;

struct meas_store {
    mquery *qs;
    mnode *nodes;
    int nnodes, capnodes;
    double *rtt;                         /* meas_store_nodes's rows */
    size_t rtt_cap;
};

meas_store *meas_store_new(void) { return calloc(1, sizeof(meas_store)); }

static void mtask_fini(mtask *t)
{
    free(t->dest_rows);
    free(t->dest_bytes);
    free(t->dest_rows_s);
    memset(t, 0, sizeof *t);
}

static void mquery_free(mquery *q)
{
    for (int i = 0; i < q->ntasks; i++) mtask_fini(&q->t[i]);
    free(q->t);
    free(q->reps);
    free(q->pm);
    free(q->traffic);
    free(q);
}

void meas_store_free(meas_store *ms)
{
    if (!ms) return;
    for (mquery *q = ms->qs, *nx; q; q = nx) {
        nx = q->next;
        mquery_free(q);
    }
    for (int i = 0; i < ms->nnodes; i++) free(ms->nodes[i].peers);
    free(ms->nodes);
    free(ms->rtt);
    free(ms);
}

double meas_ewma_tau(double avg, double sample, double dt_s, double tau_s, int first)
{
    if (first || !(dt_s > 0)) return first ? sample : avg;
    double a = 1.0 - exp(-dt_s / tau_s);
    return avg + a * (sample - avg);
}

double meas_ewma(double avg, double sample, double dt_s, int first)
{
    return meas_ewma_tau(avg, sample, dt_s, MEAS_TAU_S, first);
}

uint64_t meas_grown(uint64_t now, uint64_t before) { return now >= before ? now - before : now; }

static mnode *node_of(meas_store *ms, const char *name, int add)
{
    for (int i = 0; i < ms->nnodes; i++)
        if (!strcmp(ms->nodes[i].name, name)) return &ms->nodes[i];
    if (!add) return NULL;
    if (ms->nnodes == ms->capnodes) {
        int cap = ms->capnodes ? ms->capnodes * 2 : 16;
        mnode *v = realloc(ms->nodes, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        ms->nodes = v;
        ms->capnodes = cap;
    }
    mnode *x = &ms->nodes[ms->nnodes++];
    memset(x, 0, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    return x;
}

static mquery *query_of(meas_store *ms, uint32_t qid, int add)
{
    for (mquery *q = ms->qs; q; q = q->next)
        if (q->qid == qid) return q;
    if (!add) return NULL;
    mquery *q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->qid = qid;
    q->next = ms->qs;
    ms->qs = q;
    return q;
}

static mtask *task_of(mquery *q, uint32_t task)
{
    if (task >= 32768) return NULL; /* CHAN_TASK's range */
    if ((int)task >= q->ntasks) {
        int n = (int)task + 1;
        mtask *v = realloc(q->t, (size_t)n * sizeof *v);
        if (!v) return NULL;
        memset(v + q->ntasks, 0, (size_t)(n - q->ntasks) * sizeof *v);
        q->t = v;
        q->ntasks = n;
    }
    return &q->t[task];
}

/* One task's report: its rates since the last one, into the averages.  The
 * first report of a task is measured from its counters' start (since_ms:
 * they were 0 then), so a task has a rate from its first report on. */
static int take_task(mtask *t, const wire_stats_task *w, int64_t at_ms, int64_t now_ms)
{
    if (w->ndest != t->ndest || !t->dest_rows) {
        /* first report (or a new shape): start its destinations afresh */
        free(t->dest_rows);
        free(t->dest_bytes);
        free(t->dest_rows_s);
        memset(t, 0, sizeof *t);
        t->dest_rows = calloc((size_t)w->ndest + 1, sizeof *t->dest_rows);
        t->dest_bytes = calloc((size_t)w->ndest + 1, sizeof *t->dest_bytes);
        t->dest_rows_s = calloc((size_t)w->ndest + 1, sizeof *t->dest_rows_s);
        t->ndest = w->ndest;
        t->at_ms = w->since_ms > 0 && w->since_ms < at_ms ? w->since_ms : at_ms;
        if (!t->dest_rows || !t->dest_bytes || !t->dest_rows_s) {
            mtask_fini(t);
            return XE_NOMEM;
        }
    }
    double dt = (double)(at_ms - t->at_ms) / 1000.0;
    int rate = dt > 0, first = t->samples == 0;
    if (rate) {
        rate_take(&t->cpu_s, (double)meas_grown(w->cpu_ns, t->cpu_ns) * 1e-9 / dt, dt, first);
        rate_take(&t->in_s, (double)meas_grown(w->rows_in, t->rows_in) / dt, dt, first);
        rate_take(&t->out_s, (double)meas_grown(w->rows_out, t->rows_out) / dt, dt, first);
        t->state_b = meas_ewma(t->state_b, (double)w->state_bytes, dt, first);
    }
    for (uint32_t i = 0; i < w->ndest; i++) {
        uint64_t rows, bytes;
        wire_stats_dest(w, i, &rows, &bytes);
        if (rate) rate_take(&t->dest_rows_s[i], (double)meas_grown(rows, t->dest_rows[i]) / dt, dt, first);
        t->dest_rows[i] = rows;
        t->dest_bytes[i] = bytes;
    }
    if (!rate) { /* the same instant again (or no start known): a baseline only */
        if (!t->samples) {
            t->cpu_ns = w->cpu_ns;
            t->rows_in = w->rows_in;
            t->rows_out = w->rows_out;
            t->bytes_out = w->bytes_out;
            t->state_b = (double)w->state_bytes;
            t->at_ms = at_ms;
        }
        return 0;
    }
    t->samples++;
    t->cpu_ns = w->cpu_ns;
    t->rows_in = w->rows_in;
    t->rows_out = w->rows_out;
    t->bytes_out = w->bytes_out;
    t->at_ms = at_ms;
    t->seen_ms = now_ms;
    return 0;
}

/* A replica's report: its rates since the last one (the first is a
 * baseline: when the replica started is not known). */
static int take_replica(mquery *q, const char *from, const wire_stats_replica *w, int64_t at_ms)
{
    mrep *x = NULL;
    for (int i = 0; i < q->nreps && !x; i++)
        if (q->reps[i].task == w->task && !strcmp(q->reps[i].node, from)) x = &q->reps[i];
    if (!x) {
        if (q->nreps == q->capreps) {
            int cap = q->capreps ? q->capreps * 2 : 8;
            mrep *v = realloc(q->reps, (size_t)cap * sizeof *v);
            if (!v) return XE_NOMEM;
            q->reps = v;
            q->capreps = cap;
        }
        x = &q->reps[q->nreps++];
        memset(x, 0, sizeof *x);
        x->task = w->task;
        snprintf(x->node, sizeof x->node, "%s", from);
        x->at_ms = at_ms;
        x->cpu_ns = w->cpu_ns;
        x->bytes = w->bytes;
        return 0;
    }
    double dt = (double)(at_ms - x->at_ms) / 1000.0;
    if (!(dt > 0)) return 0;
    rate_take(&x->cpu_s, (double)meas_grown(w->cpu_ns, x->cpu_ns) * 1e-9 / dt, dt, x->samples == 0);
    rate_take(&x->bytes_s, (double)meas_grown(w->bytes, x->bytes) / dt, dt, x->samples == 0);
    x->samples++;
    x->at_ms = at_ms;
    x->cpu_ns = w->cpu_ns;
    x->bytes = w->bytes;
    return 0;
}

int meas_store_take(meas_store *ms, const char *from, const wire_msg *m, int64_t now_ms)
{
    if (!ms || m->type != WIRE_STATS) return XE_INVAL;
    mnode *x = node_of(ms, from, 1);
    if (!x) return XE_NOMEM;
    double dt = x->samples ? (double)(now_ms - x->seen_ms) / 1000.0 : 0;
    x->capacity = m->u.stats.capacity_milli / 1000.0;
    x->applied_bytes = m->u.stats.applied_bytes;
    x->applied_ns = m->u.stats.applied_ns;
    /* as the tasks' loads; a node's first report has no interval behind it */
    if (x->samples) rate_take(&x->util, m->u.stats.util_milli / 1000.0, dt, x->samples == 1);
    x->seen_ms = now_ms;
    x->samples++;
    /* round trips: the node smoothed them already */
    mpeer *pv = realloc(x->peers, ((size_t)m->u.stats.npeers + 1) * sizeof *pv);
    if (!pv) return XE_NOMEM;
    x->peers = pv;
    x->npeers = 0;
    wire_rd r;
    wire_rd_init(&r, m->u.stats.peers.p, m->u.stats.peers.n);
    for (uint32_t i = 0; i < m->u.stats.npeers; i++) {
        wire_stats_peer sp;
        if (wire_get_stats_peer(&r, &sp) < 0) break;
        if (!sp.rtt_us) continue;
        mpeer *p = &x->peers[x->npeers++];
        snprintf(p->name, sizeof p->name, "%.*s", (int)sp.name.n, sp.name.p);
        p->rtt_ms = sp.rtt_us / 1000.0;
    }
    wire_rd_init(&r, m->u.stats.tasks.p, m->u.stats.tasks.n);
    int rc = 0;
    for (uint32_t i = 0; i < m->u.stats.ntasks && !rc; i++) {
        wire_stats_task st;
        if (wire_get_stats_task(&r, &st) < 0) break;
        mquery *q = query_of(ms, st.qid, 1);
        mtask *t = q ? task_of(q, st.task) : NULL;
        if (!t) return XE_NOMEM;
        q->seen_ms = now_ms;
        rc = take_task(t, &st, m->u.stats.wall_ms, now_ms);
    }
    wire_rd_init(&r, m->u.stats.replicas.p, m->u.stats.replicas.n);
    for (uint32_t i = 0; i < m->u.stats.nreplicas && !rc; i++) {
        wire_stats_replica sr;
        if (wire_get_stats_replica(&r, &sr) < 0) break;
        mquery *q = query_of(ms, sr.qid, 1);
        if (!q) return XE_NOMEM;
        q->seen_ms = now_ms;
        rc = take_replica(q, from, &sr, m->u.stats.wall_ms);
    }
    /* queries no node reports any more (dropped, or redeployed long ago) */
    for (mquery **pp = &ms->qs; *pp;) {
        if (now_ms - (*pp)->seen_ms > MEAS_FORGET_MS) {
            mquery *q = *pp;
            *pp = q->next;
            mquery_free(q);
        } else
            pp = &(*pp)->next;
    }
    return rc;
}

int meas_store_node(const meas_store *ms, const char *name, double *capacity, double *util)
{
    for (int i = 0; ms && i < ms->nnodes; i++)
        if (!strcmp(ms->nodes[i].name, name) && ms->nodes[i].samples && ms->nodes[i].capacity > 0) {
            *capacity = ms->nodes[i].capacity;
            *util = rate_of(&ms->nodes[i].util);
            return 1;
        }
    return 0;
}

static double peer_rtt(const mnode *x, const char *name)
{
    for (int i = 0; x && i < x->npeers; i++)
        if (!strcmp(x->peers[i].name, name)) return x->peers[i].rtt_ms;
    return 0;
}

void meas_store_nodes(meas_store *ms, place_node *pl, int nn)
{
    if (!ms || nn <= 0) return;
    size_t need = (size_t)nn * (size_t)nn;
    if (need > ms->rtt_cap) {
        double *v = realloc(ms->rtt, need * sizeof *v);
        if (!v) return;
        ms->rtt = v;
        ms->rtt_cap = need;
    }
    for (int i = 0; i < nn; i++) {
        const mnode *x = node_of(ms, pl[i].name, 0);
        pl[i].speed_join = pl[i].speed;
        if (x && x->samples && x->capacity > 0) {
            pl[i].measured = 1;
            pl[i].speed = x->capacity;
            pl[i].util = rate_of(&x->util);
        }
    }
    /* a round trip as either end measured it (their mean when both did) */
    int any = 0;
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < nn; j++) {
            double a = i == j ? 0 : peer_rtt(node_of(ms, pl[i].name, 0), pl[j].name);
            double b = i == j ? 0 : peer_rtt(node_of(ms, pl[j].name, 0), pl[i].name);
            double v = a > 0 && b > 0 ? (a + b) / 2 : a > 0 ? a : b;
            ms->rtt[(size_t)i * nn + j] = v;
            any |= v > 0;
        }
    for (int i = 0; i < nn; i++) pl[i].rtt_ms = any ? &ms->rtt[(size_t)i * nn] : NULL;
}

double meas_distance(double dflt, double rtt_ms)
{
    double d = rtt_ms > 0 ? rtt_ms / MEAS_RTT_REF_MS : 0;
    return d > dflt ? d : dflt;
}

/* The op that reads op o's output (-1: none, o is the sink). */
static int down_of(const plan_dag *d, int o)
{
    for (int i = o + 1; i < d->nops; i++)
        for (int k = 0; k < d->ops[i].ninputs; k++)
            if (d->ops[i].inputs[k] == o) return i;
    return -1;
}

/* Bytes per row that left the node, over the tasks [a, b) of one op. */
static double row_bytes(const mquery *q, int a, int b)
{
    double rows = 0, bytes = 0;
    for (int t = a; t < b && t < q->ntasks; t++)
        for (uint32_t i = 0; i < q->t[t].ndest; i++)
            if (q->t[t].dest_bytes[i]) {
                rows += (double)q->t[t].dest_rows[i];
                bytes += (double)q->t[t].dest_bytes[i];
            }
    return rows > 0 ? bytes / rows : 0;
}

double meas_store_restore_bps(const meas_store *ms, int *measured)
{
    double bytes = 0, ns = 0;
    for (int i = 0; ms && i < ms->nnodes; i++) {
        bytes += (double)ms->nodes[i].applied_bytes;
        ns += (double)ms->nodes[i].applied_ns;
    }
    int ok = bytes >= MEAS_RESTORE_MIN_BYTES && ns > 0;
    if (measured) *measured = ok;
    return ok ? bytes / (ns * 1e-9) : MEAS_RESTORE_BPS;
}

static const place_meas *convert(mquery *q, const plan_dag *d, double restore_bps)
{
    int nt = 0, ndest = 0;
    for (int o = 0; o < d->nops; o++) nt += d->ops[o].parallelism;
    if (nt > q->ntasks) return NULL;
    for (int t = 0; t < nt; t++) {
        if (q->t[t].samples < 1) return NULL;
        ndest += (int)q->t[t].ndest;
    }
    free(q->pm);
    free(q->traffic);
    q->pm = calloc((size_t)nt + 1, sizeof *q->pm);
    q->traffic = calloc((size_t)ndest + 1, sizeof *q->traffic);
    if (!q->pm || !q->traffic) return NULL;
    int t = 0, at = 0;
    for (int o = 0; o < d->nops; o++) {
        const plan_op *op = &d->ops[o];
        int dn = down_of(d, o), stateful = op->kind == PO_AGGREGATE || op->kind == PO_JOIN;
        double op_bpr = row_bytes(q, t, t + op->parallelism);
        for (int k = 0; k < op->parallelism; k++, t++) {
            const mtask *x = &q->t[t];
            place_meas *pm = &q->pm[t];
            double bpr = row_bytes(q, t, t + 1);
            if (!(bpr > 0)) bpr = op_bpr > 0 ? op_bpr : MEAS_ROW_BYTES;
            double cpu = rate_of(&x->cpu_s), out = rate_of(&x->out_s);
            pm->load = cpu > 1e-6 ? cpu : 1e-6; /* never 0: congestion stays defined */
            pm->rows_in_s = x->in_s.fast;       /* EXPLAIN: what it does now */
            pm->rows_out_s = x->out_s.fast;
            pm->rows_in = x->rows_in;
            pm->cpu_ns = x->cpu_ns;
            if (stateful) {
                pm->state_mb = x->state_b / 1e6;
                pm->recovery_s = MEAS_RESTORE_FIXED_S + x->state_b / restore_bps;
                /* its replicas: what applying the deltas cost them (the mean
                 * over the replicas reported); until one is, derived: a tenth of
                 * the primary's work, as the seed model has it, and deltas about
                 * its output */
                double rl = 0, rb = 0;
                int nr = 0;
                for (int i = 0; i < q->nreps; i++)
                    if ((int)q->reps[i].task == t && q->reps[i].samples) {
                        rl += rate_of(&q->reps[i].cpu_s);
                        rb += rate_of(&q->reps[i].bytes_s);
                        nr++;
                    }
                pm->replica_measured = nr > 0;
                pm->replica_load = nr ? (rl / nr > 1e-6 ? rl / nr : 1e-6) : 0.1 * pm->load + 0.004;
                pm->repl_traffic = nr ? rb / nr / MEAS_LINK_BPS : out * bpr / MEAS_LINK_BPS;
            }
            pm->ndest = dn >= 0 && (int)x->ndest == d->ops[dn].parallelism ? (int)x->ndest : 0;
            pm->traffic = &q->traffic[at];
            for (int i = 0; i < pm->ndest; i++) q->traffic[at + i] = rate_of(&x->dest_rows_s[i]) * bpr / MEAS_LINK_BPS;
            at += (int)x->ndest;
        }
    }
    return q->pm;
}

const place_meas *meas_store_query(meas_store *ms, uint32_t qid, uint32_t prev, const plan_dag *d)
{
    if (!ms || !d) return NULL;
    mquery *q = query_of(ms, qid, 0);
    double bps = meas_store_restore_bps(ms, NULL);
    const place_meas *pm = q ? convert(q, d, bps) : NULL;
    if (!pm && prev && (q = query_of(ms, prev, 0))) pm = convert(q, d, bps);
    return pm;
}
