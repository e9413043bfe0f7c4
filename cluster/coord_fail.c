/*
 * coord_fail.c: failure handling.  A member's death starts a failure event,
 * which the deaths of the next FT_SETTLE_MS join (a whole domain is one
 * event).  At the event (coord_tick): streams whose home died move to their
 * shadow (promote_shadows), the displaced players are re-placed
 * (replace_after_death: a stateful task goes to its replica's node when
 * one lives, a promotion, else the game chooses), and every query that lost
 * tasks is redeployed under a new id, taking over its state (ft_recover).
 * Also here: LOSS reports of rows nodes dropped for a peer, judged once the
 * peer's death would have been declared (a live peer: a partial partition).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

#define FT_SETTLE_MS 150 /* deaths this close together are one failure event */
/* ... when the first was a closed connection (a crashed process: the rest of
 * its domain's connections close within milliseconds, where silences end up
 * to a heartbeat apart) */
#define FT_SETTLE_CLOSED_MS 50

/* A node died: re-place the players it ran with nirvana_replace (the
 * cluster's strategy; only the displaced players play, the others stay),
 * and record the new nodes.  Nothing is redeployed: a displaced task's
 * state and its redeployment are issue 7, so the query runs without it
 * (its share of the output is missing) and we say so in the log.
 * Replicas are bookkeeping until then. */
/* A displaced stateful task's live replica that can take over (ft =
 * replica or checkpoint): its node index in pl, or -1. */
static int keep_on_replica(const cquery *q, int t, const place_node *pl, int nn)
{
    if ((q->ft != ENGINE_FT_REPLICA && q->ft != ENGINE_FT_CHECKPOINT) || !q->rnode ||
        (strcmp(q->tkind[t], "AGGREGATE") && strcmp(q->tkind[t], "JOIN")))
        return -1;
    int nr = q->ft == ENGINE_FT_CHECKPOINT ? 1 : q->nrep;
    for (int r = 0; r < nr; r++) {
        const char *rn = q->rnode[t * q->nrep + r];
        int i = rn ? coord_node_index(pl, nn, rn) : -1;
        if (i >= 0 && pl[i].alive) return i;
    }
    return -1;
}

void replace_after_death(node *n, const char *dead)
{
    coord *co = n->co;
    int nq = running_queries(co, NULL), R = co->replicas, rc = 0;
    if (!nq) return;
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    place_query *pqs = calloc((size_t)nq, sizeof *pqs);
    place_game g = {0};
    xerr err;
    xerr_clear(&err);
    if (!pl || !pqs) {
        rc = xerr_set(&err, XE_NOMEM, "out of memory");
        goto out;
    }
    int nn = cluster_nodes(n, 1, NULL, pl), k = 0;
    cquery **qs = calloc((size_t)nq, sizeof *qs);
    if (!qs) {
        rc = xerr_set(&err, XE_NOMEM, "out of memory");
        goto out;
    }
    for (cquery *x = co->queries; x && !rc; x = x->next)
        if (!x->ended && x->dag) {
            qs[k] = x;
            rc = pq_of(n, x, pl, nn, R, 0, &pqs[k++], &err);
        }
    uint64_t t0 = clock_mono_ns();
    if (!rc) rc = place_build(&g, pl, nn, pqs, nq, R, co->placement, &err);
    if (!rc) rc = place_again(&g, pqs, nq, &err);
    if (rc) {
        node_log(n, NET_LOG_ERROR, "node %s died: cannot re-place its tasks: %s", dead, err.msg);
        free(qs);
        goto out;
    }
    node_log(n, NET_LOG_WARN,
             "node %s died: %s re-placed %d displaced players (promoted %d, unplaced %d) in %.1f ms; the others stay",
             dead, nirvana_strategy_name(co->placement), g.r->displaced, g.r->promoted, g.r->unplaced,
             (double)(clock_mono_ns() - t0) / 1e6);
    for (int i = 0; i < nq; i++) {
        cquery *q = qs[i];
        place_query *pq = &pqs[i];
        sbuf lost, reps;
        sbuf_init(&lost);
        sbuf_init(&reps);
        int nlost = 0;
        for (int t = 0; t < q->ntasks; t++) {
            const char *now = pq->node[t] >= 0 ? pl[pq->node[t]].name : NULL;
            if (now && !strcmp(now, q->tnode[t])) continue;
            int ki = keep_on_replica(q, t, pl, nn);
            if (ki >= 0 && pq->node[t] != ki) {
                /* the state is there already: promote it, whatever the game preferred */
                node_log(n, NET_LOG_INFO, "query %u: %s#%d goes to its replica's node %s (placement preferred %s)",
                         q->qid, q->tkind[t], q->tidx[t], pl[ki].name, now ? now : "none");
                for (int r = 0; r < R; r++)
                    if (pq->rnode[t * R + r] == ki) pq->rnode[t * R + r] = pq->node[t] >= 0 && strcmp(pl[pq->node[t]].domain, pl[ki].domain) ? pq->node[t] : -1;
                pq->node[t] = ki;
                now = pl[ki].name;
            }
            sbuf_printf(&lost, "%s%s#%d (%s -> %s)", nlost++ ? ", " : "", q->tkind[t], q->tidx[t], q->tnode[t],
                        now ? now : "nowhere");
            q->lost[t] = 1;
            if (now) {
                char *c = strdup(now);
                if (c) {
                    free(q->tnode[t]);
                    q->tnode[t] = c;
                }
            }
        }
        for (int t = 0; t < q->ntasks; t++)
            for (int r = 0; r < R; r++) {
                const char *was = r < q->nrep && q->rnode ? q->rnode[t * q->nrep + r] : NULL;
                int at = pq->rnode[t * R + r];
                if (was && at >= 0 && strcmp(was, pl[at].name))
                    sbuf_printf(&reps, " %s#%d/r%d (%s -> %s)", q->tkind[t], q->tidx[t], r, was, pl[at].name);
            }
        if (cq_set_replicas(q, pq, pl, R)) node_log(n, NET_LOG_ERROR, "out of memory recording replicas");
        if (nlost)
            node_log(n, NET_LOG_WARN,
                     "query %u (%s) lost %d tasks on %s: %s; re-placed",
                     q->qid, q->name ? q->name : "push", nlost, dead, lost.p);
        if (reps.len)
            node_log(n, NET_LOG_INFO, "query %u (%s): replicas re-placed (new ones start from a snapshot):%s", q->qid,
                     q->name ? q->name : "push", reps.p);
        sbuf_fini(&lost);
        sbuf_fini(&reps);
    }
    free(qs);
out:
    for (int i = 0; pqs && i < nq; i++) pq_fini(&pqs[i]);
    free(pqs);
    place_game_fini(&g);
    free(pl);
    (void)rc;
}

/* Redeploy every query that lost tasks, under a new id, where the
 * re-placement put them: every node keeps its tasks' state (UNDEPLOY with
 * WIRE_F_KEEP) and the new deployment takes it over, or a replica's
 * (promotion); the streams' home nodes replay their logs from where those
 * states stand (node.c, exec/ft.c), and the sink drops what it had delivered
 * (dd_filter).  A query whose stream lost its home and its shadow cannot be
 * recovered and is left as is. */
void ft_recover(node *n)
{
    coord *co = n->co;
    int nq = running_queries(co, NULL);
    cquery **qs = calloc((size_t)nq + 1, sizeof *qs);
    pnode *pn = calloc((size_t)n->npeers + 1, sizeof *pn);
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    int *assign = NULL;
    xerr err;
    xerr_clear(&err);
    if (!qs || !pn || !pl) goto out;
    int k = 0;
    for (cquery *x = co->queries; x && k < nq; x = x->next)
        if (!x->ended && x->dag) qs[k++] = x;
    int nn = cluster_nodes(n, 0, pn, pl);
    for (int i = 0; i < k; i++) {
        cquery *q = qs[i];
        int nlost = 0, bad = -1;
        for (int t = 0; t < q->ntasks; t++) nlost += q->lost[t];
        if (!nlost) continue;
        free(assign);
        if (!(assign = calloc((size_t)q->ntasks, sizeof *assign))) goto out;
        for (int t = 0; t < q->ntasks && bad < 0; t++) {
            /* a source moves only with its stream's partition (to its
             * shadow, which has the same log): task p reads partition p */
            const cstream *sc =
                !strcmp(q->tkind[t], "SOURCE") ? partition_find(co, q->dag->ops[q->top[t]].stream, q->tidx[t]) : NULL;
            if ((assign[t] = q->tnode[t] ? coord_node_index(pl, nn, q->tnode[t]) : -1) < 0 ||
                (q->lost[t] && sc && strcmp(sc->home, q->tnode[t])))
                bad = t;
        }
        if (bad >= 0) {
            node_log(n, NET_LOG_ERROR, "query %u (%s): cannot recover: %s#%d has no live node (%s)", q->qid,
                     q->name ? q->name : "push", q->tkind[bad], q->tidx[bad],
                     !strcmp(q->tkind[bad], "SOURCE") ? "its stream's home and shadow are lost" : "unplaced");
            continue;
        }
        uint32_t old = q->qid;
        /* survivors keep their state for the redeployment to take over */
        int64_t swm = INT64_MIN;
        if (engine_deployed_sink_wm(n->eng, old, &swm, &err)) swm = INT64_MIN;
        /* what the sink had seen before the failure, per input: until the
         * new deployment passes it on every input, its rows may repeat
         * delivered ones (catchup.h: not the combined watermark, since a
         * fast input delivered beyond it) */
        const int64_t *in = NULL;
        int nin = 0;
        if (engine_deployed_sink_inputs(n->eng, old, &in, &nin, &err)) nin = 0;
        int64_t rows_t = INT64_MIN; /* and the rows it had got: a task sends them before its watermark */
        if (engine_deployed_sink_time(n->eng, old, &rows_t, &err)) rows_t = INT64_MIN;
        if (catchup_begin(&q->cu, in, nin, rows_t))
            node_log(n, NET_LOG_ERROR, "query %u: out of memory for its output's catch-up", old);
        sbuf ws;
        sbuf_init(&ws);
        for (int t = 0; t < nin; t++)
            sbuf_printf(&ws, "%s%lld", t ? " " : "", in[t] == INT64_MIN ? -1LL : (long long)in[t]);
        node_log(n, NET_LOG_INFO, "query %u: its sink's inputs had reached watermarks %s (-1: none), its rows time %lld",
                 old, ws.len ? ws.p : "-", rows_t == INT64_MIN ? -1LL : (long long)rows_t);
        sbuf_fini(&ws);
        if (node_undeploy(n, old, 1, &err)) node_log(n, NET_LOG_WARN, "undeploying query %u here: %s", old, err.msg);
        send_undeploy(n, q, 1);
        q->prev = old;
        q->resume_wm = swm;
        if (!q->push || q->keep) {
            char key[64];
            snprintf(key, sizeof key, "q/%010u", old);
            cat_del(n, key, &err);
        }
        for (cquery **pp = &co->queries; *pp; pp = &(*pp)->next)
            if (*pp == q) {
                *pp = q->next;
                break;
            }
        q->qid = co->next_qid++;
        cq_link(co, q);
        sbuf_reset(&q->plan);
        int rc = coord_plan_blob(&q->plan, pn, nn, assign, q);
        if (!rc) rc = persist_next_qid(n, &err);
        if (!rc && (!q->push || q->keep)) rc = persist_query(n, q, &err);
        for (size_t j = 0; j < q->dt.dd.cap; j++) q->dt.dd.v[j].seen = 0;
        /* the others first: our own deployment may replay the log at once,
         * and a node holds data for a query it has not seen deployed by
         * pausing the connection the DEPLOY would come on */
        if (!rc) send_deploy(n, NULL, NULL, q);
        if (!rc) rc = node_deploy(n, q->qid, q->plan.p, q->plan.len, &q->out, &err);
        if (rc) {
            node_log(n, NET_LOG_ERROR, "query %u: redeployment as %u failed: %s", old, q->qid, err.msg);
            continue;
        }
        memset(q->lost, 0, (size_t)q->ntasks);
        if (co->rb_moving)
            node_log(n, NET_LOG_WARN, "query %u (%s) redeployed as query %u (ft = %s): %d tasks moved or their replicas did",
                     old, q->name ? q->name : "push", q->qid, engine_ft_name(q->ft), nlost);
        else {
            node_log(n, NET_LOG_WARN,
                     "query %u (%s) recovered as query %u (ft = %s): %d displaced tasks redeployed; redeployed %.1f ms "
                     "after the failure was detected",
                     old, q->name ? q->name : "push", q->qid, engine_ft_name(q->ft), nlost,
                     (double)(clock_mono_ns() - co->death_ns) / 1e6);
            /* the failure event re-placed the displaced players by the
             * game already: moving the others a moment later would cost a
             * second redeployment and replay while this one settles, so
             * the automatic rebalance leaves the query alone for an
             * interval (ALTER QUERY ... REBALANCE still moves it) */
            q->rb_quiet_until = (int64_t)(clock_mono_ns() / 1000000) + (co->rb_ms > RB_QUIET_MS ? co->rb_ms : RB_QUIET_MS);
        }
    }
out:
    free(assign);
    free(qs);
    free(pn);
    free(pl);
}

/* The socket source of a stream's CREATE STREAM text ("" when none). */
static void source_of(const cstream *c, char *out, size_t cap)
{
    out[0] = 0;
    ast_stmt *st = NULL;
    xerr err;
    if (!c->lite || parse_one(c->sql, strlen(c->sql), &st, &err)) return;
    const ast_option *o = st->kind == ST_CREATE_STREAM ? ast_option_get(st->with, "source") : NULL;
    if (o) snprintf(out, cap, "%s", o->value);
    ast_stmt_free(st);
}

/* Tell a stream's home where its log's copy goes (LOGSHADOW), and with
 * source, that it reads the stream's socket from now on. */
void send_logshadow(node *n, cstream *c, const char *source)
{
    /* a shadow fed the input hears from the home only where its log begins */
    const char *sh = c->lshadow ? c->lshadow : c->shadow ? c->shadow : "";
    int fed = !c->lshadow && c->shadow;
    if (!strcmp(c->home, n->cfg.name)) {
        node_logshadow(n, c->name, sh, source, fed);
        return;
    }
    peer *h = node_peer(n, c->home, strlen(c->home));
    if (!h || !coord_alive(h)) return;
    wire_msg m = {.type = WIRE_LOGSHADOW};
    m.u.logshadow.stream = wire_str_of(c->name);
    m.u.logshadow.shadow = wire_str_of(sh);
    m.u.logshadow.source = wire_str_of(source ? source : "");
    m.u.logshadow.flags = fed ? WIRE_LOGSHADOW_FED : 0;
    cs_send_msg(h->link, &m);
}

static int lives(node *n, const char *name)
{
    if (!name) return 0;
    if (!strcmp(name, n->cfg.name)) return 1;
    peer *p = node_peer(n, name, strlen(name));
    return p && coord_alive(p);
}

/* At a failure event: a stream whose home died moves to its shadow, which
 * has the same log (the queries' source tasks follow it); a stream that
 * lost its shadow, or whose shadow is now its home, gets its log copied to
 * a live node in another domain, so that the next failure is survived too
 * (while there is another domain). */
void promote_shadows(node *n)
{
    coord *co = n->co;
    for (int i = 0; i < co->nstreams; i++) {
        cstream *c = &co->streams[i];
        int changed = 0;
        char source[1024] = "";
        if (!lives(n, c->home)) {
            char *to = lives(n, c->shadow) ? c->shadow : lives(n, c->lshadow) ? c->lshadow : NULL;
            if (!to) {
                if (c->shadow || c->lshadow)
                    node_log(n, NET_LOG_ERROR, "stream %s: its home %s and its shadow %s are both lost", c->name,
                             c->home, c->shadow ? c->shadow : c->lshadow);
                continue;
            }
            node_log(n, NET_LOG_WARN, "stream %s: home node %s lost; its shadow %s is the home now", c->name, c->home,
                     to);
            if (c->lite) source_of(c, source, sizeof source);
            free(c->home);
            c->home = strdup(to);
            free(c->shadow);
            free(c->lshadow);
            c->shadow = c->lshadow = NULL;
            c->dirty = 0; /* no TICK any more: the new home cuts its slices itself */
            changed = 1;
        }
        if (c->shadow && !lives(n, c->shadow)) {
            node_log(n, NET_LOG_WARN, "stream %s: its shadow %s is lost", c->name, c->shadow);
            free(c->shadow);
            c->shadow = NULL;
            c->dirty = 0;
            changed = 1;
        }
        if (c->lshadow && !lives(n, c->lshadow)) {
            node_log(n, NET_LOG_WARN, "stream %s: the copy of its log on %s is lost", c->name, c->lshadow);
            free(c->lshadow);
            c->lshadow = NULL;
            changed = 1;
        }
        if (!changed || !c->home) continue;
        if (!c->shadow) {
            const char *sh = pick_shadow(n, c->home, co->rr_home++, NULL, 0);
            if (sh) {
                c->lshadow = strdup(sh);
                node_log(n, NET_LOG_WARN, "stream %s: its home %s copies its log to %s from now on", c->name, c->home,
                         sh);
            } else
                node_log(n, NET_LOG_ERROR, "stream %s: no live node outside its home's domain: the next failure of "
                         "that domain loses it", c->name);
        }
        xerr err;
        if (persist_stream(n, c, &err)) node_log(n, NET_LOG_ERROR, "stream %s: %s", c->name, err.msg);
        if (!c->shadow) send_logshadow(n, c, source);
    }
}

/* x is dead (or left): one failure event for a whole domain, the deaths of
 * the next FT_SETTLE_MS (FT_SETTLE_CLOSED_MS when its connection closed
 * rather than fell silent) join it; the event runs at the end of that, not
 * at the next tick.  A standby's death is no failure event. */
void member_lost(node *n, peer *x, int closed)
{
    coord *co = n->co;
    int was_dead = x->state == WIRE_MEMBER_DEAD; /* a failed reconnect to a dead node */
    x->state = n->stopping ? WIRE_MEMBER_LEFT : WIRE_MEMBER_DEAD;
    co->last_death = clock_wall_ms();
    if (!n->stopping && !was_dead)
        node_log(n, NET_LOG_WARN, "%s %s is %s", x->standby ? "standby coordinator" : "node", x->name,
                 node_state_name(x->state));
    co->members_dirty = 1;
    if (!n->stopping && !was_dead && !x->standby) {
        if (!co->recover_at) {
            int settle = closed ? FT_SETTLE_CLOSED_MS : FT_SETTLE_MS;
            co->death_ns = clock_mono_ns();
            co->recover_at = (int64_t)(co->death_ns / 1000000) + settle;
            sbuf_reset(&co->dead_names);
            node_tick_in(n, (unsigned)settle + 1);
        }
        sbuf_printf(&co->dead_names, "%s%s", co->dead_names.len ? "," : "", x->name);
        char why[160];
        snprintf(why, sizeof why, "node %s left", x->name);
        rebalance_soon(n, why, RB_SOON_MS); /* after the failure event, which re-places its players first */
    }
}

void coord_loss(node *n, const char *from, uint32_t qid, uint64_t batches, const char *to)
{
    coord *co = n->co;
    if (!co || co->nloss >= (int)(sizeof co->loss / sizeof co->loss[0])) return;
    struct closs *l = &co->loss[co->nloss++];
    snprintf(l->from, sizeof l->from, "%s", from);
    snprintf(l->peer, sizeof l->peer, "%s", to);
    l->qid = qid;
    l->batches = batches;
    l->at = clock_wall_ms();
}

/* A LOSS old enough that the peer's death would have been declared: if it
 * is still alive, the rows are lost for good (nothing replays them: a known
 * gap), and the query's clients are told so rather than left to find out. */
void judge_losses(node *n, int64_t now)
{
    coord *co = n->co;
    int64_t wait = (int64_t)net_ctx_dead_ms(n->net) + FT_SETTLE_MS + 2 * NODE_TICK_MS;
    int k = 0;
    for (int i = 0; i < co->nloss; i++) {
        struct closs *l = &co->loss[i];
        if (now - l->at < wait) {
            co->loss[k++] = *l;
            continue;
        }
        peer *p = node_peer(n, l->peer, strlen(l->peer));
        if (!p || p->state != WIRE_MEMBER_UP || co->recover_at) continue; /* dead: the recovery replays them */
        for (cquery *q = co->queries; q; q = q->next) {
            int hit = l->qid ? q->qid == l->qid : 0;
            for (int t = 0; !l->qid && t < q->ntasks; t++) hit |= q->tnode[t] && !strcmp(q->tnode[t], l->peer);
            if (!hit || q->ended || now - q->loss_said < 5000) continue;
            q->loss_said = now;
            char msg[512];
            snprintf(msg, sizeof msg, "query %s: rows were lost: node %s could not reach node %s, which is alive (a "
                     "partial partition), and dropped %llu batches for it; this query's output misses rows from "
                     "about %lld ms ago, and nothing recovers them", q->name ? q->name : "push", l->from, l->peer,
                     (unsigned long long)l->batches, (long long)(now - l->at));
            node_log(n, NET_LOG_ERROR, "%s", msg);
            for (csub *x = q->subs; x; x = x->next) cs_result(x->to, x->req, 0, RES_WARN, 0, msg, strlen(msg));
        }
    }
    co->nloss = k;
}
