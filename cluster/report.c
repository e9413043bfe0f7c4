/*
 * report.c: a node's side of the measured costs (measure.c has the
 * coordinator's store and docs/nirvana.md, "The measured-cost model", the
 * whole picture).  meas_report runs from the node's tick: at most once per
 * MEAS_REPORT_MS it reads the node's capacity (its cgroup quota, unless
 * --speed fixed it), its process CPU clock, the round trip of each peer's
 * connection, the counters of every local task of every deployed query and
 * what applying the state changes of the replicas held here cost,
 * and sends them to the coordinator as one STATS (the coordinator's own
 * node hands its report straight to its store).  The coordinator's side
 * keeps the store in node->meas, made on first use.
 *
 * Runs on the node's loop.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"

typedef struct rep {
    wire_wr w;
    uint32_t n;
    node *nd; /* the tasks' report: to log, once per query, that groups went cold */
} rep;

/* Once per deployed query: some task of it keeps window groups in LMDB
 * only, past SET memory_budget (the operator learns why its rate fell). */
static void note_cold(node *n, const engine_task_stats *s)
{
    for (dep *d = n->deps; d; d = d->next) {
        if (d->qid != s->qid || d->cold_logged) continue;
        d->cold_logged = 1;
        node_log(n, NET_LOG_INFO, "query %u: task %d holds %lld window groups in LMDB only (past memory_budget)",
                 s->qid, s->task, (long long)s->cold_groups);
    }
}

static void put_task(void *ctx, const engine_task_stats *s)
{
    rep *r = ctx;
    if (!s->deployed || s->ndest > WIRE_STATS_MAX_DEST) return;
    if (s->cold_groups > 0 && r->nd) note_cold(r->nd, s);
    wire_stats_task t = {.qid = s->qid, .task = (uint32_t)s->task, .since_ms = s->since_ms, .cpu_ns = s->cpu_ns,
                         .rows_in = s->rows_in, .rows_out = s->rows_out, .bytes_out = s->bytes_out,
                         .state_bytes = s->state_bytes, .ndest = (uint32_t)s->ndest, .dest_rows = s->dest_rows,
                         .dest_bytes = s->dest_bytes};
    wire_put_stats_task(&r->w, &t);
    r->n++;
}

void meas_replica_applied(dep *d, int task, uint64_t cpu_ns, size_t len)
{
    if (task < 0 || task >= d->ntasks) return;
    if (!d->rapply && !(d->rapply = calloc((size_t)d->ntasks * 2, sizeof *d->rapply))) return;
    d->rapply[task * 2] += cpu_ns;
    d->rapply[task * 2 + 1] += len;
}

void meas_report(node *n)
{
    int64_t now = clock_wall_ms();
    if (now - n->ms_report_at < MEAS_REPORT_MS) return;
    n->ms_report_at = now;
    uint64_t cpu = clock_process_ns(), wall = clock_mono_ns();
    double cap = n->cfg.speed;
    if (!n->speed_given) {
        char how[300];
        cap = base_cpu_capacity(how, sizeof how);
        if (cap < 0.001) cap = 0.001;
        if (fabs(cap - n->cfg.speed) > 0.0005)
            node_log(n, NET_LOG_INFO, "capacity now %.3g CPUs (was %.3g), from %s", cap, n->cfg.speed, how);
        n->cfg.speed = cap;
    }
    double util = 0;
    if (n->ms_wall_ns && wall > n->ms_wall_ns)
        util = (double)meas_grown(cpu, n->ms_cpu_ns) / (double)(wall - n->ms_wall_ns) / cap;
    n->ms_cpu_ns = cpu;
    n->ms_wall_ns = wall;
    sbuf peers, tasks, reps;
    sbuf_init(&peers);
    sbuf_init(&tasks);
    sbuf_init(&reps);
    rep pr = {.n = 0}, tr = {.n = 0, .nd = n}, rr = {.n = 0};
    wire_wr_init(&pr.w, &peers);
    for (int i = 0; i < n->npeers; i++) {
        peer *p = n->peers[i];
        cs *c = p->is_coord && n->coord_link ? n->coord_link : p->link;
        uint32_t rtt = c && c->c && c->ready ? net_rtt_min_us(c->c) : 0;
        if (!rtt) continue;
        wire_stats_peer sp = {.name = wire_str_of(p->name), .rtt_us = rtt};
        wire_put_stats_peer(&pr.w, &sp);
        pr.n++;
    }
    wire_wr_init(&tr.w, &tasks);
    engine_task_stats_each(n->eng, put_task, &tr);
    wire_wr_init(&rr.w, &reps);
    for (dep *d = n->deps; d; d = d->next)
        for (int t = 0; d->rapply && t < d->ntasks; t++) {
            if (!d->rapply[t * 2 + 1]) continue;
            wire_stats_replica x = {.qid = d->qid, .task = (uint32_t)t, .cpu_ns = d->rapply[t * 2],
                                    .bytes = d->rapply[t * 2 + 1]};
            wire_put_stats_replica(&rr.w, &x);
            rr.n++;
        }
    if (wire_wr_end(&pr.w, NULL) || wire_wr_end(&tr.w, NULL) || wire_wr_end(&rr.w, NULL)) goto out;
    wire_msg m = {.type = WIRE_STATS};
    m.u.stats.wall_ms = now;
    m.u.stats.capacity_milli = (uint32_t)(cap * 1000.0 + 0.5);
    m.u.stats.util_milli = (uint32_t)(util * 1000.0 + 0.5);
    m.u.stats.cpu_ns = cpu;
    m.u.stats.applied_bytes = n->in_state_bytes;
    m.u.stats.applied_ns = n->applied_ns;
    m.u.stats.npeers = pr.n;
    m.u.stats.peers = (wire_str){peers.p, (uint32_t)peers.len};
    m.u.stats.ntasks = tr.n;
    m.u.stats.tasks = (wire_str){tasks.p, (uint32_t)tasks.len};
    m.u.stats.nreplicas = rr.n;
    m.u.stats.replicas = (wire_str){reps.p, (uint32_t)reps.len};
    if (n->co) meas_take(n, n->cfg.name, &m);
    else if (n->coord_link && n->coord_link->ready) cs_send_msg(n->coord_link, &m);
out:
    sbuf_fini(&peers);
    sbuf_fini(&tasks);
    sbuf_fini(&reps);
}

void meas_take(node *n, const char *from, const wire_msg *m)
{
    if (!n->meas && !(n->meas = meas_store_new())) return;
    if (meas_store_take(n->meas, from, m, clock_wall_ms()) == XE_NOMEM)
        node_log(n, NET_LOG_WARN, "STATS from %s: out of memory", from);
}

void meas_nodes(node *n, place_node *pl, int nn)
{
    for (int i = 0; i < nn; i++) pl[i].speed_join = pl[i].speed;
    meas_store_nodes(n->meas, pl, nn);
}

const place_meas *meas_query(node *n, uint32_t qid, uint32_t prev, const plan_dag *d)
{
    return meas_store_query(n->meas, qid, prev, d);
}
