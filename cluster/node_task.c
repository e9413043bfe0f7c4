/*
 * node_task.c: the queries deployed on a node.  A DEPLOY's plan blob says
 * which tasks run here; the engine runs them, and their remote hooks turn
 * rows, watermarks and state changes bound for other nodes into BATCH,
 * WATERMARK and STATE_DELTA frames on the numbered channel (channel.c).  The
 * frames that arrive go to the engine.  Fault tolerance's side of it: where
 * each query first read its sources here (its origin), the RESUMEs a
 * source's home gathers after a redeployment before it replays its log, and
 * the REPLICA_ACKs by which the replicas tell the homes what their logs may
 * let go of.  Rows for a peer that cannot be reached are dropped and told
 * to the coordinator (LOSS).
 *
 * Frames for a query whose DEPLOY has not arrived yet (an upstream node may
 * get its DEPLOY first and start sending) are held: the connection pauses,
 * keeping that one frame, until the DEPLOY comes (qids only grow, and every
 * node sees every DEPLOY in qid order, so a qid at or below the highest one
 * seen that is not deployed here belongs to a dropped query: its frames are
 * dropped).  A frame held longer than NODE_HOLD_MS is dropped with a log line.
 *
 * Runs on the engine's loop, like all of the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node_int.h"


/* ------------------------------------------------------------------ deployed queries */

int deploy_plan_get(const void *p, size_t n, deploy_plan *d, xerr *err)
{
    wire_rd r;
    wire_rd_init(&r, p, n);
    memset(d, 0, sizeof *d);
    uint8_t ver;
    uint16_t nn, no;
    uint32_t nt;
    wire_get_u8(&r, &ver);
    wire_get_u16(&r, &nn);
    if (!r.err && (ver < 1 || ver > 4 || nn == 0 || nn > 256)) return xerr_set(err, XE_PROTO, "bad deploy plan (version %u, %u nodes)", ver, nn);
    d->nnodes = nn;
    for (int i = 0; i < nn; i++) {
        wire_get_str(&r, &d->names[i]);
        wire_get_str(&r, &d->addrs[i]);
        wire_get_str(&r, &d->domains[i]);
    }
    wire_get_u16(&r, &no);
    if (!r.err && (no == 0 || no > 256)) return xerr_set(err, XE_PROTO, "bad deploy plan (%u operators)", no);
    d->nops = no;
    for (int i = 0; i < no; i++) {
        uint16_t v;
        wire_get_u16(&r, &v);
        d->par[i] = v;
    }
    wire_get_u32(&r, &nt);
    if (!r.err && (nt == 0 || nt > 65536)) return xerr_set(err, XE_PROTO, "bad deploy plan (%u tasks)", nt);
    d->ntasks = (int)nt;
    if (r.err) return wire_rd_end(&r, 1, err);
    if (!(d->assign = calloc(nt, sizeof *d->assign))) return xerr_set(err, XE_NOMEM, "out of memory");
    for (uint32_t i = 0; i < nt; i++) {
        wire_get_u16(&r, &d->assign[i]);
        if (!r.err && d->assign[i] >= nn) {
            unsigned bad = d->assign[i];
            free(d->assign);
            d->assign = NULL;
            return xerr_set(err, XE_PROTO, "bad deploy plan (task on node %u of %u)", bad, nn);
        }
    }
    wire_get_blob(&r, &d->sql);
    if (ver >= 2) wire_get_u32(&r, &d->origin);
    if (ver >= 3) {
        uint16_t R;
        wire_get_u8(&r, &d->ft);
        wire_get_u32(&r, &d->checkpoint_ms);
        wire_get_u32(&r, &d->prev);
        wire_get_u16(&r, &R);
        if (!r.err && (R > 8 || d->ft > ENGINE_FT_NONE)) {
            free(d->assign);
            d->assign = NULL;
            return xerr_set(err, XE_PROTO, "bad deploy plan (%u replicas, ft %u)", R, d->ft);
        }
        d->R = R;
        if (!r.err && R && !(d->rassign = calloc((size_t)nt * R, sizeof *d->rassign))) {
            free(d->assign);
            d->assign = NULL;
            return xerr_set(err, XE_NOMEM, "out of memory");
        }
        for (uint32_t i = 0; !r.err && i < nt * R; i++) {
            wire_get_u16(&r, &d->rassign[i]);
            if (!r.err && d->rassign[i] != 0xffff && d->rassign[i] >= nn) r.err = 1;
        }
        wire_get_i64(&r, &d->resume_wm);
    }
    if (ver >= 4) wire_get_u8(&r, &d->earliest);
    int rc = wire_rd_end(&r, 1, err);
    if (rc) {
        free(d->assign);
        free(d->rassign);
        d->assign = NULL;
        d->rassign = NULL;
    }
    return rc;
}

static dep *dep_find(node *n, uint32_t qid)
{
    for (dep *d = n->deps; d; d = d->next)
        if (d->qid == qid) return d;
    return NULL;
}

static void dep_free(dep *d)
{
    if (!d) return;
    free(d->par);
    free(d->base);
    free(d->assign);
    free(d->rassign);
    free(d->racked);
    free(d->rapply);
    free(d->rs_seen);
    free(d->nodes);
    free(d);
}


/* Rows for TO are lost (dropped, or with a connection that failed): the
 * coordinator hears of it (LOSS, at most once a second per peer).  If TO is
 * dead the recovery replays them; if it lives (a partial partition) nothing
 * does, and the coordinator says so to the query's clients. */
static void report_loss(node *n, peer *to, uint32_t qid, uint64_t batches)
{
    if (!to) return;
    to->lost += batches;
    if (qid) to->lost_qid = qid;
    int64_t now = clock_wall_ms();
    if (now - to->lost_said < 1000 && to->lost_qid == to->lost_qid_said) return; /* a new query is said at once */
    if (n->co) n->co_loss(n, n->cfg.name, to->lost_qid, to->lost, to->name);
    else if (n->coord_link && n->coord_link->ready) {
        wire_msg m = {.type = WIRE_LOSS};
        m.u.loss.query = to->lost_qid;
        m.u.loss.batches = to->lost;
        m.u.loss.peer = wire_str_of(to->name);
        cs_send_msg(n->coord_link, &m);
    } else
        return;
    to->lost_said = now;
    to->lost_qid_said = to->lost_qid;
    to->lost = 0;
}

/* Data for a task on a node that cannot be reached: dropped (see hook_batch);
 * said a few times, not for every batch. */
static int unreachable(node *n, peer *to, uint32_t qid)
{
    static uint64_t drops;
    if (drops++ % 10000 == 0)
        node_log(n, NET_LOG_WARN, "node %s cannot be reached: dropping its rows until the failure is handled "
                                  "(%llu batches so far; the stream log keeps them for the replay)",
                 to ? to->name : "?", (unsigned long long)drops);
    report_loss(n, to, qid, 1);
    return 0;
}

static int hook_batch(void *ctx, uint32_t qid, int op, int task, int side, uint64_t tag, int64_t stamp, const void *p,
                      size_t len)
{
    dep *d = ctx;
    node *n = d->n;
    if (op < 0 || op >= d->nops || task < 0 || task >= d->par[op]) return XE_INVAL;
    peer *to = d->nodes[d->assign[d->base[op] + task]];
    if (!to) return XE_INVAL;
    int64_t rows = batch_peek_rows(p, len);
    unsigned char h[36];
    be64_put(h, qid);
    be32_put(h + 8, CHAN(op, side, task));
    be64_put(h + 12, tag); /* the epoch field carries the source record's tag */
    be64_put(h + 20, (uint64_t)stamp);
    n->out_batches++;
    be32_put(h + 28, (uint32_t)(rows < 0 ? 0 : rows));
    sbuf b;
    sbuf_init(&b);
    int rc = sbuf_add(&b, h, 32);
    if (!rc) rc = sbuf_add(&b, p, len);
    /* kept until the peer has it (channel.c); a dead peer's tasks are
     * redeployed and the stream's home replays the log, so these rows are
     * not lost by dropping them; failing would stop the ingest */
    if (!rc) rc = chan_send(n, to, WIRE_BATCH, b.p, b.len);
    if (rc == XE_IO) rc = unreachable(n, to, qid);
    if (!rc) {
        n->out_rows += (uint64_t)(rows < 0 ? 0 : rows);
        n->out_batch_bytes += b.len + WIRE_HDR_SIZE;
    }
    sbuf_fini(&b);
    return rc;
}

/* An upstream task's watermark: every other node running a task of op hears it. */
static int hook_wm(void *ctx, uint32_t qid, int op, int side, int from_task, int64_t wm, uint64_t tag)
{
    dep *d = ctx;
    node *n = d->n;
    if (op < 0 || op >= d->nops) return XE_INVAL;
    unsigned char h[28];
    be64_put(h, qid);
    be32_put(h + 8, CHAN(op, side, from_task));
    be64_put(h + 12, (uint64_t)wm);
    be64_put(h + 20, tag);
    for (int t = 0; t < d->par[op]; t++) {
        int ni = d->assign[d->base[op] + t], seen = 0;
        for (int u = 0; u < t; u++)
            if (d->assign[d->base[op] + u] == ni) seen = 1;
        if (seen || !d->nodes[ni]) continue;
        int rc = chan_send(n, d->nodes[ni], WIRE_WATERMARK, h, sizeof h);
        if (rc == XE_IO) rc = unreachable(n, d->nodes[ni], qid);
        if (rc) return rc;
    }
    return 0;
}

/* A data frame to a peer, numbered (channel.c). */
static int chan_send_msg(node *n, peer *p, const wire_msg *m)
{
    sbuf b;
    sbuf_init(&b);
    int rc = wire_msg_payload(&b, m, NULL);
    if (!rc) rc = chan_send(n, p, m->type, b.p, b.len);
    sbuf_fini(&b);
    return rc;
}

static void release_held(node *n);

/* A task's state changes, after the epoch that made them committed here: to
 * its replicas (all of them with ft = replica, the first with checkpoint).
 * A replica that cannot be reached misses them; the next failure event
 * re-places it and it starts again from a snapshot. */
static int hook_state(void *ctx, uint32_t qid, int task, uint32_t tid, uint64_t epoch, const void *p, size_t len)
{
    dep *d = ctx;
    node *n = d->n;
    if (task < 0 || task >= d->ntasks) return XE_INVAL;
    int nr = d->ft.ft == ENGINE_FT_CHECKPOINT && d->R ? 1 : d->R;
    wire_msg m = {.type = WIRE_STATE_DELTA};
    m.u.state.query_id = qid;
    m.u.state.task_id = tid;
    m.u.state.epoch = epoch;
    m.u.state.chunk = (uint32_t)task;
    m.u.state.data = (wire_str){(const char *)p, len};
    for (int r = 0; r < nr; r++) {
        int ni = d->rassign[task * d->R + r];
        if (ni < 0 || !d->nodes[ni]) continue; /* none, or this node: useless */
        if (chan_send_msg(n, d->nodes[ni], &m) == 0) {
            n->out_state_bytes += len;
            n->out_state_msgs++;
        }
    }
    return 0;
}

/* Where the sources of q start in the logs here (its first deployment). */
static struct ftorigin *origin_of(node *n, uint32_t origin)
{
    struct ftorigin *o = n->origins;
    while (o && o->origin != origin) o = o->next;
    return o;
}

/* Records of each source a replay step reads (each up to a slice of rows). */
#define REPLAY_STEP 64

/* The frames in flight to one peer (sent, not acknowledged: channel.c
 * keeps them) past which a replay step waits. */
#define REPLAY_INFLIGHT (8u << 20)

/* 1 while a frame waits in the overflow of a connection to a peer, or a
 * peer has more than REPLAY_INFLIGHT in flight: a replay step waits until
 * it drains (n->on_drained: node_conn.c when an overflow drains, channel.c
 * when a peer acknowledges frames), so that a long log goes at the pace its
 * readers take it, not into memory.  (Without the second rule the kernel's
 * socket buffers take frames the receivers have not acknowledged, and the
 * copies kept for them grew with the log: 27 MB for 16M rows.)  An overflow
 * that stopped moving (no_wait, conn_tick) holds no replay back, as it holds
 * no input back. */
static int overflowing(const node *n)
{
    for (const cs *s = n->conns; s; s = s->next)
        if (s->peer && s->ovf && !s->no_wait) return 1;
    for (int i = 0; i < n->npeers; i++)
        if (n->peers[i]->rtx_bytes > REPLAY_INFLIGHT && n->peers[i]->link && !n->peers[i]->link->no_wait) return 1;
    return 0;
}

/* Replay steps of d while nothing overflows; the last one logs. */
static void replay_steps(node *n, dep *d)
{
    xerr err;
    xerr_clear(&err);
    while (d->cu_on && !overflowing(n)) {
        int more = 0;
        if (engine_replay_step(n->eng, d->qid, REPLAY_STEP, &more, &d->cu_rows, &err)) {
            d->cu_on = 0;
            node_log(n, NET_LOG_ERROR, "query %u: replay failed: %s", d->qid, err.msg);
            return;
        }
        if (more) continue;
        d->cu_on = 0;
        double ms = (double)(clock_mono_ns() - d->cu_t0) / 1e6, after = (double)(clock_mono_ns() - d->rs_t0) / 1e6;
        if (!d->ft.prev)
            node_log(n, NET_LOG_INFO, "query %u (offset = 'earliest'): read %lld logged rows from offset %lld in %.1f ms, "
                     "%.1f ms after its deployment", d->qid, (long long)d->cu_rows, (long long)d->cu_from, ms, after);
        else
            node_log(n, NET_LOG_WARN,
                     "query %u (first deployed as %u): replayed %lld logged rows from offset %lld (query start %llu) in "
                     "%.1f ms, %.1f ms after the redeployment",
                     d->qid, d->origin, (long long)d->cu_rows, (long long)d->cu_from, (unsigned long long)d->cu_origin,
                     ms, after);
    }
}

/* node_conn.c: the overflows have drained */
static void on_drained(node *n)
{
    for (dep *d = n->deps; d; d = d->next)
        if (d->cu_on) replay_steps(n, d);
}

/* At a source's home: every node running a task of the redeployed query has
 * said where its tasks need the replay to start (or time ran out: a silent
 * node's tasks get everything since the query's start).  Replay from the
 * minimum, in steps (replay_steps).  A first deployment with offset =
 * 'earliest' comes here too: its replay starts at the logs' first record. */
static void resume_replay(node *n, dep *d)
{
    xerr err;
    xerr_clear(&err);
    d->rs_on = 0;
    uint64_t from[ENGINE_MAX_SRC], origin[ENGINE_MAX_SRC] = {0};
    int nsrc = 0, src_task[ENGINE_MAX_SRC];
    if (engine_ft_resume(n->eng, d->qid, from, src_task, &nsrc, &err)) return;
    struct ftorigin *o = origin_of(n, d->origin);
    for (int k = 0; k < nsrc; k++) {
        if (d->nodes[d->assign[src_task[k]]]) {
            from[k] = UINT64_MAX; /* not a source here */
            continue;
        }
        from[k] = d->rs_got < d->rs_expect ? 0 : d->rs_from[k];
        uint64_t at;
        if (d->rs_time[k] && !engine_ft_time_offset(n->eng, d->qid, k, &at, &err) && at < from[k]) from[k] = at;
        origin[k] = o ? o->off[k] : 0;
        if (from[k] != UINT64_MAX && from[k] < origin[k]) from[k] = origin[k];
    }
    if (d->rs_got < d->rs_expect)
        node_log(n, NET_LOG_WARN, "query %u: %d of %d nodes said where to resume within %d ms; the others get the "
                 "whole log", d->qid, d->rs_got, d->rs_expect, NODE_RESUME_MS);
    /* the first source slot homed here, for the log line */
    int k0 = 0;
    while (k0 < nsrc - 1 && from[k0] == UINT64_MAX) k0++;
    if (engine_replay_from(n->eng, d->qid, from, nsrc, &err)) {
        node_log(n, NET_LOG_ERROR, "query %u: replay for recovery failed: %s", d->qid, err.msg);
        return;
    }
    uint64_t at[ENGINE_MAX_SRC];
    int ns;
    d->cu_from = from[k0] == UINT64_MAX ? -1 : (int64_t)from[k0];
    if (!d->ft.prev && !engine_source_offsets(n->eng, d->qid, at, &ns, &err) && k0 < ns) d->cu_from = (int64_t)at[k0];
    d->cu_origin = origin[k0];
    d->cu_rows = 0;
    d->cu_t0 = clock_mono_ns();
    d->cu_on = 1;
    n->on_drained = on_drained;
    replay_steps(n, d);
}

/* 1 if plan node ni runs a task of d. */
static int runs_tasks(const dep *d, int ni)
{
    for (int t = 0; t < d->ntasks; t++)
        if (d->assign[t] == ni) return 1;
    return 0;
}

/* A node's RESUME (node index ni of the plan) for d, at a source's home. */
static void resume_heard(node *n, dep *d, int ni, const uint64_t *from, int nsrc)
{
    if (!d->rs_on || ni < 0 || ni >= d->nnodes || d->rs_seen[ni] || !runs_tasks(d, ni)) return;
    d->rs_seen[ni] = 1;
    d->rs_got++;
    for (int k = 0; k < nsrc && k < ENGINE_MAX_SRC; k++) {
        uint64_t at = from[k] & ENGINE_FT_POS_NONE;
        if (from[k] & ENGINE_FT_POS_TIMED) d->rs_time[k] = 1;
        if (at != ENGINE_FT_POS_NONE && at < d->rs_from[k]) d->rs_from[k] = at;
    }
    if (d->rs_got >= d->rs_expect) resume_replay(n, d);
}

static void replica_acked(node *n, dep *d, int ni, int task, const uint64_t *pos, int npos);

/* 1 if source slot k of d is the first of the slots homed on its node
 * (each home hears a message once). */
static int first_at_home(const dep *d, int k)
{
    for (int j = 0; j < k; j++)
        if (d->assign[d->src_task[j]] == d->assign[d->src_task[k]]) return 0;
    return 1;
}

/* This node's index in d's plan. */
static int self_index(const dep *d)
{
    for (int i = 0; i < d->nnodes; i++)
        if (!d->nodes[i]) return i;
    return -1;
}

/* A replica applied a task's state: tell the homes of the query's sources
 * which positions it holds, so that their logs can let go of what is older. */
static void replica_ack(node *n, dep *d, int task, const uint64_t *pos, int npos)
{
    wire_msg m = {.type = WIRE_REPLICA_ACK};
    m.u.replica_ack.query_id = d->qid;
    m.u.replica_ack.task = (uint32_t)task;
    m.u.replica_ack.npos = (uint8_t)npos;
    memcpy(m.u.replica_ack.pos, pos, (size_t)npos * sizeof *pos);
    for (int k = 0; k < d->nsrc; k++) {
        if (!first_at_home(d, k)) continue;
        peer *home = d->nodes[d->assign[d->src_task[k]]];
        if (!home) {
            replica_acked(n, d, self_index(d), task, pos, npos);
            continue;
        }
        chan_send_msg(n, home, &m);
    }
}

/* At a source's home: replica (node index ni) of `task` holds pos.  The
 * engine hears the smallest position over the task's replicas once each has
 * answered. */
static void replica_acked(node *n, dep *d, int ni, int task, const uint64_t *pos, int npos)
{
    enum { W = ENGINE_MAX_SRC };
    if (task < 0 || task >= d->ntasks || ni < 0 || !d->R || npos < 1 || npos > W) return;
    if (!d->racked && !(d->racked = calloc((size_t)d->ntasks * (size_t)d->R * W, sizeof *d->racked))) return;
    int nr = d->ft.ft == ENGINE_FT_CHECKPOINT ? 1 : d->R, slot = -1;
    for (int r = 0; r < nr; r++)
        if (d->rassign[task * d->R + r] == ni) slot = r;
    if (slot < 0) return;
    uint64_t *a = &d->racked[((size_t)task * (size_t)d->R + (size_t)slot) * W];
    memcpy(a, pos, (size_t)npos * sizeof *pos);
    uint64_t lo[W];
    for (int k = 0; k < npos; k++) lo[k] = UINT64_MAX;
    for (int r = 0; r < nr; r++) {
        if (d->rassign[task * d->R + r] < 0) continue;
        const uint64_t *b = &d->racked[((size_t)task * (size_t)d->R + (size_t)r) * W];
        for (int k = 0; k < npos; k++)
            if (b[k] < lo[k]) lo[k] = b[k];
    }
    xerr err;
    if (lo[0] != UINT64_MAX) engine_ft_acked(n->eng, d->qid, task, lo, npos, &err);
}

/* A first deployment: where its sources start here. */
static void record_origin(node *n, dep *d)
{
    xerr err;
    struct ftorigin *o = origin_of(n, d->qid);
    uint64_t off[ENGINE_MAX_SRC];
    int nsrc;
    if ((o && o->have == 0) || engine_source_offsets(n->eng, d->qid, off, &nsrc, &err)) return;
    if (!o) {
        if (!(o = calloc(1, sizeof *o))) return;
        o->origin = d->qid;
        o->next = n->origins;
        n->origins = o;
    }
    /* a stream's home that copies its log to us said where it started
     * (o->have); the other sources start here */
    for (int k = 0; k < nsrc && k < ENGINE_MAX_SRC; k++)
        if (!(o->have & 1 << k)) o->off[k] = off[k];
    o->nsrc = nsrc;
}

/* After a deployment: a first one records where the sources start here
 * (and, with offset = 'earliest', goes on as a redeployment does); a
 * redeployment tells each source's home where its tasks need the replay. */
static void send_resumes(node *n, dep *d);

/* At a source's home of d: collect the RESUMEs of every node that runs its
 * tasks (resume_heard), from now on. */
static void collect_resumes(dep *d)
{
    for (int k = 0; k < d->nsrc; k++) {
        if (d->nodes[d->assign[d->src_task[k]]] || d->rs_on) continue;
        d->rs_on = 1;
        for (int j = 0; j < ENGINE_MAX_SRC; j++) d->rs_from[j] = UINT64_MAX;
        d->rs_deadline = clock_wall_ms() + NODE_RESUME_MS;
        d->rs_t0 = clock_mono_ns();
        for (int i = 0; i < d->nnodes; i++) d->rs_expect += runs_tasks(d, i);
    }
}

static void ft_after_deploy(node *n, dep *d)
{
    xerr err;
    xerr_clear(&err);
    uint64_t tmp[ENGINE_MAX_SRC];
    if (engine_ft_resume(n->eng, d->qid, tmp, d->src_task, &d->nsrc, &err)) d->nsrc = 0;
    if (!d->ft.prev) {
        record_origin(n, d);
        /* offset = 'earliest': the homes replay the logs from their start
         * once every node has deployed, as after a redeployment.  The
         * RESUMEs go at the next tick: the coordinator deploys here before
         * it sends the DEPLOYs, and a RESUME ahead of its DEPLOY on that
         * connection would hold it back (a redeployment sends the DEPLOYs
         * first) */
        if (d->ft.earliest) {
            /* a home replays only if it set a source back (a push query's
             * asks only for a bounded stream's); the others cannot tell,
             * and a home that does not replay ignores their RESUMEs */
            if (engine_deployed_held(n->eng, d->qid)) collect_resumes(d);
            d->rs_pending = 1;
            node_tick_in(n, 1);
        }
        return;
    }
    if (d->ft.ft == ENGINE_FT_NONE) return;
    collect_resumes(d);
    send_resumes(n, d);
}

/* Tell each source's home of d where this node's tasks need the replay. */
static void send_resumes(node *n, dep *d)
{
    xerr err;
    xerr_clear(&err);
    d->rs_pending = 0;
    uint64_t from[ENGINE_MAX_SRC];
    int nsrc = d->nsrc, *src_task = d->src_task;
    if (engine_ft_resume(n->eng, d->qid, from, src_task, &nsrc, &err)) return;
    int me = self_index(d);
    if (!runs_tasks(d, me)) return; /* nothing here needs a replay */
    for (int k = 0; k < nsrc; k++) {
        peer *home = d->nodes[d->assign[src_task[k]]];
        if (!first_at_home(d, k)) continue; /* told already */
        if (!home) {
            resume_heard(n, d, me, from, nsrc);
            continue;
        }
        wire_msg m = {.type = WIRE_RESUME};
        m.u.resume.query_id = d->qid;
        m.u.resume.nsrc = (uint8_t)nsrc;
        memcpy(m.u.resume.from, from, (size_t)(nsrc > 2 ? nsrc : 2) * sizeof *from);
        chan_send_msg(n, home, &m);
    }
}

int node_deploy(node *n, uint32_t qid, const void *plan, size_t len, const exec_out *out, xerr *err)
{
    if (dep_find(n, qid)) return 0; /* a DEPLOY repeated after a reconnect */
    deploy_plan dp;
    int rc = deploy_plan_get(plan, len, &dp, err);
    if (rc) return rc;
    dep *d = calloc(1, sizeof *d);
    unsigned char *own = calloc((size_t)dp.ntasks, 1);
    char *sql = malloc((size_t)dp.sql.n + 1);
    if (!d || !own || !sql || !(d->par = calloc((size_t)dp.nops, sizeof(int))) ||
        !(d->base = calloc((size_t)dp.nops, sizeof(int))) || !(d->assign = calloc((size_t)dp.ntasks, sizeof(int))) ||
        !(d->nodes = calloc((size_t)dp.nnodes, sizeof(peer *)))) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto fail;
    }
    d->n = n;
    d->qid = qid;
    d->origin = dp.origin ? dp.origin : qid;
    d->ft = (engine_deploy_opts){(engine_ft)dp.ft, dp.checkpoint_ms, dp.prev, dp.prev ? dp.resume_wm : INT64_MIN,
                                  !dp.prev && dp.earliest};
    d->R = dp.R;
    if (!(d->rs_seen = calloc((size_t)dp.nnodes, 1)) ||
        (dp.R && !(d->rassign = calloc((size_t)dp.ntasks * (size_t)dp.R, sizeof(int))))) {
        rc = xerr_set(err, XE_NOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < dp.ntasks * dp.R; i++) d->rassign[i] = dp.rassign[i] == 0xffff ? -1 : dp.rassign[i];
    d->nops = dp.nops;
    d->ntasks = dp.ntasks;
    d->nnodes = dp.nnodes;
    int g = 0;
    for (int i = 0; i < dp.nops; i++) {
        d->par[i] = dp.par[i];
        d->base[i] = g;
        g += dp.par[i];
    }
    if (g != dp.ntasks) {
        rc = xerr_set(err, XE_PROTO, "deploy plan: operators have %d tasks, the assignment %d", g, dp.ntasks);
        goto fail;
    }
    for (int i = 0; i < dp.nnodes; i++) {
        char name[WIRE_NAME_MAX + 1], addr[128], dom[WIRE_NAME_MAX + 1];
        snprintf(name, sizeof name, "%.*s", (int)dp.names[i].n, dp.names[i].p);
        snprintf(addr, sizeof addr, "%.*s", (int)dp.addrs[i].n, dp.addrs[i].p);
        snprintf(dom, sizeof dom, "%.*s", (int)dp.domains[i].n, dp.domains[i].p);
        if (!strcmp(name, n->cfg.name)) continue;
        if (!(d->nodes[i] = node_peer_add(n, name, dom, addr))) {
            rc = xerr_set(err, XE_NOMEM, "out of memory");
            goto fail;
        }
    }
    for (int t = 0; t < dp.ntasks; t++) {
        d->assign[t] = dp.assign[t];
        own[t] = d->nodes[dp.assign[t]] == NULL;
    }
    memcpy(sql, dp.sql.p, dp.sql.n);
    sql[dp.sql.n] = 0;
    d->hooks = (engine_remote){d, hook_batch, hook_wm, hook_state};
    if ((rc = engine_deploy(n->eng, qid, sql, own, dp.ntasks, &d->hooks, out, &d->ft, err))) goto fail;
    d->next = n->deps;
    n->deps = d;
    if (qid > n->max_qid) n->max_qid = qid;
    int mine = 0;
    for (int t = 0; t < dp.ntasks; t++) mine += own[t];
    node_log(n, NET_LOG_INFO, "query %u deployed: %d of its %d tasks run here", qid, mine, dp.ntasks);
    ft_after_deploy(n, d);
    free(own);
    free(sql);
    free(dp.assign);
    free(dp.rassign);
    release_held(n);
    return 0;
fail:
    dep_free(d);
    free(own);
    free(sql);
    free(dp.assign);
    free(dp.rassign);
    return rc;
}

int node_undeploy(node *n, uint32_t qid, int keep_state, xerr *err)
{
    if (qid > n->max_qid) n->max_qid = qid;
    dep **pp = &n->deps;
    while (*pp && (*pp)->qid != qid) pp = &(*pp)->next;
    if (!*pp) return 0;
    dep *d = *pp;
    int rc = engine_undeploy(n->eng, qid, keep_state, err);
    *pp = d->next;
    dep_free(d);
    node_log(n, NET_LOG_INFO, "query %u undeployed", qid);
    release_held(n);
    return rc;
}

/* ------------------------------------------------------------------ data frames */

/* Hand a BATCH or WATERMARK to the engine.  Returns 1 when it must wait for
 * its query's DEPLOY. */
int node_data_frame(node *n, cs *s, const wire_msg *m)
{
    uint32_t qid = (uint32_t)(m->type == WIRE_BATCH       ? m->u.batch.query_id
                              : m->type == WIRE_WATERMARK ? m->u.watermark.query_id
                              : m->type == WIRE_RESUME    ? m->u.resume.query_id
                              : m->type == WIRE_REPLICA_ACK ? m->u.replica_ack.query_id
                                                          : m->u.state.query_id);
    dep *d = dep_find(n, qid);
    if (!d) {
        if (qid > n->max_qid) return 1;
        node_log(n, NET_LOG_DEBUG, "a %s for query %u, which is no longer deployed here, is dropped",
                 wire_type_name(m->type), qid);
        return 0;
    }
    xerr err;
    xerr_clear(&err);
    uint64_t t0 = clock_mono_ns();
    cs *saved = n->cur_in;
    n->cur_in = s;
    int rc;
    if (m->type == WIRE_BATCH) {
        uint32_t ch = m->u.batch.channel;
        n->in_batches++;
        rc = engine_remote_batch(n->eng, qid, CHAN_OP(ch), CHAN_TASK(ch), CHAN_SIDE(ch), m->u.batch.epoch,
                                 m->u.batch.stamp, m->u.batch.rows.p, m->u.batch.rows.n, &err);
    } else if (m->type == WIRE_WATERMARK) {
        uint32_t ch = m->u.watermark.channel;
        rc = engine_remote_watermark(n->eng, qid, CHAN_OP(ch), CHAN_SIDE(ch), CHAN_TASK(ch), m->u.watermark.wm,
                                     m->u.watermark.tag, &err);
    } else if (m->type == WIRE_STATE_DELTA) {
        uint64_t pos[ENGINE_MAX_SRC];
        int npos = 0;
        n->in_state_bytes += m->u.state.data.n;
        uint64_t a0 = clock_mono_ns(), c0 = clock_thread_ns(); /* the restore rate, the replica's load (report.c) */
        rc = engine_replica_apply(n->eng, m->u.state.task_id, m->u.state.epoch, m->u.state.data.p, m->u.state.data.n,
                                  pos, &npos, &err);
        n->applied_ns += clock_mono_ns() - a0;
        meas_replica_applied(d, (int)m->u.state.chunk, clock_thread_ns() - c0, m->u.state.data.n);
        if (!rc) replica_ack(n, d, (int)m->u.state.chunk, pos, npos);
    } else if (m->type == WIRE_REPLICA_ACK) {
        int ni = -1;
        for (int i = 0; i < d->nnodes; i++)
            if (d->nodes[i] && d->nodes[i] == s->peer) ni = i;
        replica_acked(n, d, ni, (int)m->u.replica_ack.task, m->u.replica_ack.pos, m->u.replica_ack.npos);
        rc = 0;
    } else {
        int ni = -1;
        for (int i = 0; i < d->nnodes; i++)
            if (d->nodes[i] && d->nodes[i] == s->peer) ni = i;
        resume_heard(n, d, ni, m->u.resume.from, m->u.resume.nsrc);
        rc = 0;
    }
    n->cur_in = saved;
    if (rc) node_log(n, NET_LOG_ERROR, "query %u: %s from %s: %s", qid, wire_type_name(m->type),
                     s->peer ? s->peer->name : "?", err.msg[0] ? err.msg : xerr_name(rc));
    node_slow_down(n, t0);
    return 0;
}

void node_hold(cs *s, const wire_frame *f)
{
    qframe *q = malloc(sizeof *q + f->length);
    if (!q) {
        node_log(s->n, NET_LOG_ERROR, "out of memory holding a frame: dropped");
        return;
    }
    q->next = NULL;
    q->type = f->type;
    q->flags = f->flags;
    q->len = f->length;
    memcpy(q->p, f->payload, f->length);
    s->held = q;
    s->held_since = clock_wall_ms();
    cs_update_pause(s);
}

/* A DEPLOY or UNDEPLOY came: held frames may go on now. */
static void release_held(node *n)
{
    for (cs *s = n->conns; s; s = s->next) {
        if (!s->held || s->closing) continue;
        qframe *q = s->held;
        wire_frame f = {1, q->type, q->flags, (uint32_t)q->len, q->p};
        wire_msg m;
        if (wire_msg_get(&f, &m, NULL) == 0 && node_data_frame(n, s, &m) == 1) continue;
        s->held = NULL;
        free(q);
        cs_update_pause(s);
    }
}

void node_held_timeouts(node *n)
{
    int64_t now = clock_wall_ms();
    for (cs *s = n->conns; s; s = s->next)
        if (s->held && now - s->held_since > NODE_HOLD_MS) {
            node_log(n, NET_LOG_WARN, "a %s from %s waited %d ms for its query's deployment: dropped",
                     wire_type_name(s->held->type), s->peer ? s->peer->name : "?", NODE_HOLD_MS);
            free(s->held);
            s->held = NULL;
            cs_update_pause(s);
        }
}

void node_resume_timeouts(node *n)
{
    for (dep *d = n->deps; d; d = d->next)
        if (d->rs_pending) send_resumes(n, d);
        else if (d->rs_on && clock_wall_ms() >= d->rs_deadline) resume_replay(n, d);
        else if (d->cu_on) replay_steps(n, d);
}

void node_tasks_free(node *n)
{
    while (n->deps) {
        dep *d = n->deps;
        n->deps = d->next;
        dep_free(d);
    }
    while (n->origins) {
        struct ftorigin *o = n->origins;
        n->origins = o->next;
        free(o);
    }
}
