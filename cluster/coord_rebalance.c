/*
 * coord_rebalance.c: live re-placement.  The coordinator re-plays Nirvana's
 * best responses for the running queries (place_rebalance: a player moves
 * only when its cost falls by more than rebalance_threshold and the
 * potential falls) every rebalance_interval, soon after a node joins or
 * leaves or reports a new capacity (rebalance_soon, coord_place.c), and on
 * ALTER QUERY q REBALANCE.  The moves are carried out by the recovery path
 * (coord_fail.c): the moved tasks are marked as displaced and ft_recover
 * redeploys their query under a new id, every node keeping its tasks'
 * state; a moved stateful task lands only on its replica's node (a
 * promotion, with ft = replica or checkpoint) or, with ft = upstream,
 * restarts and is rebuilt from the stream's log; the sources replay from
 * where the states stand and the sink's dedup drops what was delivered
 * already (docs/nirvana.md, "Live re-placement", for the proof that no row
 * is lost or repeated).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

#define RB_MAX_MOVES 64  /* moves one rebalance makes at most */
#define RB_MEMORY_MS 10000 /* a player does not go back to a node it left for 5 rebalance intervals, or this if longer */

/* Why q cannot move now, or NULL when it can; asked: ALTER QUERY (no quiet time). */
static const char *rb_blocked(const coord *co, const cquery *q, int asked)
{
    if (!asked && q->rb_quiet_until > (int64_t)(clock_mono_ns() / 1000000))
        return "it moved a moment ago: its new deployment is measured first";
    if (q->strategy != NIRVANA_FULL && q->strategy != NIRVANA_NO_RECOVERY) return "its placement is not the game";
    if (q->cu.on) return "it is still catching up after its last move or recovery";
    if (q->ft == ENGINE_FT_NONE) return "ft = none: its state could not move";
    if (q->nrep != co->replicas) return "SET replicas changed since it was placed";
    for (int t = 0; t < q->ntasks; t++)
        if (q->lost[t]) return "it has displaced tasks";
    return NULL;
}

/* Player (t, r) of q (r = -1: the task itself) left node `from`: it stays
 * off it for 5 rebalance intervals (RB_MEMORY_MS at least). */
static void rb_remember(const coord *co, cquery *q, int t, int r, const char *from)
{
    int64_t now = (int64_t)(clock_mono_ns() / 1000000), keep = 5 * co->rb_ms > RB_MEMORY_MS ? 5 * co->rb_ms : RB_MEMORY_MS;
    int k = 0;
    for (int i = 0; i < q->rb_nleft; i++) /* drop the expired, and the old entry of this player */
        if (q->rb_left[i].until > now && !(q->rb_left[i].t == t && q->rb_left[i].r == r)) q->rb_left[k++] = q->rb_left[i];
    q->rb_nleft = k;
    struct rbleft *v = realloc(q->rb_left, (size_t)(k + 1) * sizeof *v);
    if (!v) return;
    q->rb_left = v;
    v[k] = (struct rbleft){.t = t, .r = r, .until = now + keep};
    snprintf(v[k].node, sizeof v[k].node, "%s", from);
    q->rb_nleft++;
}

/* q's place_query avoid[]: per task, (1 + R) node indexes of pl its
 * players left lately (-1: none).  NULL when out of memory. */
static int *rb_avoid(const cquery *q, const place_node *pl, int nn, int R)
{
    int *a = malloc(((size_t)q->ntasks * (size_t)(1 + R) + 1) * sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < q->ntasks * (1 + R); i++) a[i] = -1;
    int64_t now = (int64_t)(clock_mono_ns() / 1000000);
    for (int i = 0; i < q->rb_nleft; i++) {
        const struct rbleft *l = &q->rb_left[i];
        if (l->until <= now || l->t >= q->ntasks || l->r >= R) continue;
        a[l->t * (1 + R) + l->r + 1] = coord_node_index(pl, nn, l->node);
    }
    return a;
}

/* Re-place (every running query, or `only`), carry out the moves and say
 * what happened in say (may be NULL).  Returns the moves made, or < 0. */
static int rebalance(node *n, const char *why, cquery *only, sbuf *say)
{
    coord *co = n->co;
    if (co->recover_at || co->takeover_until || co->takeover_event || co->fenced || co->deposed || co->wait_majority) {
        if (say) sbuf_printf(say, "the cluster is recovering from a failure; nothing moved");
        return 0;
    }
    int nq = running_queries(co, NULL), R = co->replicas, rc = 0, nm = 0, eligible = 0;
    if (!nq) return 0;
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    place_query *pqs = calloc((size_t)nq, sizeof *pqs);
    cquery **qs = calloc((size_t)nq, sizeof *qs);
    nirvana_rb_move *mv = calloc(RB_MAX_MOVES, sizeof *mv);
    int **avoid = calloc((size_t)nq + 1, sizeof *avoid);
    place_game g = {0};
    xerr err;
    xerr_clear(&err);
    if (!pl || !pqs || !qs || !mv || !avoid) {
        rc = xerr_set(&err, XE_NOMEM, "out of memory");
        goto out;
    }
    int nn = cluster_nodes(n, 0, NULL, pl), k = 0;
    for (cquery *x = co->queries; x && !rc && k < nq; x = x->next) {
        if (x->ended || !x->dag) continue;
        int on = (!only || x == only) && !rb_blocked(co, x, only != NULL);
        qs[k] = x;
        rc = pq_of(n, x, pl, nn, R, !on, &pqs[k], &err);
        for (int t = 0; !rc && on && t < x->ntasks; t++)
            if (pqs[k].node[t] < 0) on = 0, pqs[k].fixed = 1; /* a task off the live nodes: recovery's business */
        pqs[k].keep_state = x->ft == ENGINE_FT_REPLICA ? 1 : x->ft == ENGINE_FT_CHECKPOINT ? 2 : 0;
        if (!rc && on && !(avoid[k] = rb_avoid(x, pl, nn, R))) rc = xerr_set(&err, XE_NOMEM, "out of memory");
        pqs[k].avoid = avoid[k];
        eligible += on;
        k++;
    }
    if (rc) goto out;
    if (!eligible) {
        node_log(n, NET_LOG_DEBUG, "rebalance (%s): no query can move", why);
        if (say) sbuf_printf(say, "nothing can move: %s", only ? rb_blocked(co, only, 1) ? rb_blocked(co, only, 1) : "a task is off the live nodes" : "no query can move");
        goto out;
    }
    nirvana_strategy s = co->placement == NIRVANA_NO_RECOVERY ? NIRVANA_NO_RECOVERY : NIRVANA_FULL;
    uint64_t t0 = clock_mono_ns();
    if ((rc = place_build(&g, pl, nn, pqs, nq, R, s, &err)) ||
        (rc = place_rebalance(&g, pqs, nq, co->rb_threshold, mv, RB_MAX_MOVES, &nm, &err)))
        goto out;
    double decide_ms = (double)(clock_mono_ns() - t0) / 1e6;
    co->rb_runs++;
    if (!nm) {
        node_log(n, NET_LOG_DEBUG, "rebalance (%s): nothing moves (%.1f ms)", why, decide_ms);
        if (say)
            sbuf_printf(say, "nothing moves: no task or replica lowers its cost by more than %.0f %% "
                        "(rebalance_threshold) while lowering the potential", co->rb_threshold * 100);
        goto out;
    }
    /* the moves, as the game made them, for the log and the answer */
    for (int i = 0; i < nm; i++) {
        const nirvana_player *p = &g.r->players[mv[i].player];
        int q = 0;
        while (q + 1 < nq && g.first[q + 1] <= p->task) q++;
        int t = p->task - g.first[q];
        cquery *x = qs[q];
        char who[96];
        snprintf(who, sizeof who, "%s#%d", x->tkind[t], x->tidx[t]);
        if (p->replica >= 0) snprintf(who + strlen(who), sizeof who - strlen(who), "/r%d", p->replica);
        double gain = mv[i].cost_before > 0 ? 100.0 * (1 - mv[i].cost_after / mv[i].cost_before) : 0;
        node_log(n, NET_LOG_WARN,
                 "rebalance (%s): query %u (%s): %s moves %s -> %s: cost %.4g -> %.4g (%.0f %% lower), potential "
                 "%.4g -> %.4g%s%s",
                 why, x->qid, x->name ? x->name : "push", who, pl[mv[i].from].name, pl[mv[i].to].name,
                 mv[i].cost_before, mv[i].cost_after, gain, mv[i].potential_before, mv[i].potential_after,
                 mv[i].replica >= 0 ? "; a promotion: its replica there holds the state, and a new replica starts on " : "",
                 mv[i].replica >= 0 ? pl[mv[i].replica_to].name : "");
        if (say)
            sbuf_printf(say, "%s%s %s -> %s (cost %.4g -> %.4g)", i ? ", " : "", who, pl[mv[i].from].name,
                        pl[mv[i].to].name, mv[i].cost_before, mv[i].cost_after);
        rb_remember(co, x, t, p->replica, pl[mv[i].from].name);
        if (mv[i].replica >= 0) rb_remember(co, x, t, g.r->players[mv[i].replica].replica, pl[mv[i].to].name);
        snprintf(x->rb_last, sizeof x->rb_last, "%s %s -> %s (cost %.4g -> %.4g, %s)", who, pl[mv[i].from].name,
                 pl[mv[i].to].name, mv[i].cost_before, mv[i].cost_after, why);
        x->rb_moves++;
    }
    /* carry them out: a query with a moved player is redeployed (ft_recover) */
    for (int q = 0; q < nq; q++) {
        cquery *x = qs[q];
        place_query *pq = &pqs[q];
        if (pq->fixed) continue;
        int changed = 0;
        for (int t = 0; t < x->ntasks; t++) {
            int moved = pq->node[t] >= 0 && strcmp(pl[pq->node[t]].name, x->tnode[t]);
            for (int r = 0; r < R; r++) {
                const char *was = x->rnode ? x->rnode[t * x->nrep + r] : NULL;
                int at = pq->rnode[t * R + r];
                moved |= (at >= 0) != (was != NULL) || (at >= 0 && strcmp(was, pl[at].name));
            }
            if (!moved) continue;
            if (pq->node[t] >= 0 && strcmp(pl[pq->node[t]].name, x->tnode[t])) {
                char *c = strdup(pl[pq->node[t]].name);
                if (!c) continue;
                free(x->tnode[t]);
                x->tnode[t] = c;
            }
            x->lost[t] = 1;
            changed++;
        }
        if (!changed) continue;
        if (cq_set_replicas(x, pq, pl, R)) node_log(n, NET_LOG_ERROR, "out of memory recording replicas");
        x->rb_count++;
        x->rb_t0 = clock_mono_ns();
        x->rb_quiet_until = (int64_t)(x->rb_t0 / 1000000) + (co->rb_ms > RB_QUIET_MS ? co->rb_ms : RB_QUIET_MS);
        x->rb_last_at = clock_wall_ms();
    }
    co->rb_moving = 1;
    ft_recover(n);
    co->rb_moving = 0;
    node_log(n, NET_LOG_INFO, "rebalance (%s): %d moves decided in %.1f ms, redeployed in %.1f ms", why, nm, decide_ms,
             (double)(clock_mono_ns() - t0) / 1e6 - decide_ms);
out:
    if (rc) {
        node_log(n, NET_LOG_ERROR, "rebalance (%s): %s", why, err.msg);
        if (say) sbuf_printf(say, "rebalance failed: %s", err.msg);
    }
    for (int i = 0; pqs && i < nq; i++) pq_fini(&pqs[i]);
    for (int i = 0; avoid && i < nq; i++) free(avoid[i]);
    free(avoid);
    free(pqs);
    free(qs);
    free(mv);
    place_game_fini(&g);
    free(pl);
    return rc ? rc : nm;
}

/* ALTER QUERY q REBALANCE: at once, q's players only; the answer says what moved. */
int alter_rebalance(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    cquery *q = query_find(n->co, st->name);
    if (!q) return xerr_at(err, XE_NOTFOUND, st->line, st->col, "query '%s' does not exist", st->name);
    sbuf say;
    sbuf_init(&say);
    char why[160];
    snprintf(why, sizeof why, "ALTER QUERY %s REBALANCE", q->name);
    int rc = rebalance(n, why, q, &say);
    if (rc >= 0) {
        char msg[1200];
        snprintf(msg, sizeof msg, "ALTER QUERY: %s%s%s", rc > 0 ? "moved " : "", say.p ? say.p : "",
                 rc > 0 ? "; redeployed, each moved task with its state" : "");
        coord_notice_to(s, req, msg);
        rc = 0;
    } else
        rc = xerr_set(err, rc, "%s", say.p ? say.p : "rebalance failed");
    sbuf_fini(&say);
    return rc;
}

/* A node's capacity, as placement sees it, changed by more than 10 %
 * since the last look: a rebalance soon. */
static void rebalance_capacities(node *n)
{
    coord *co = n->co;
    place_node *pl = calloc((size_t)n->npeers + 1, sizeof *pl);
    if (!pl) return;
    int nn = cluster_nodes(n, 0, NULL, pl);
    for (int i = 0; i < nn; i++) {
        int k = 0;
        while (k < co->rb_ncap && strcmp(co->rb_cap[k].name, pl[i].name)) k++;
        if (k == co->rb_ncap) {
            struct rbcap *v = realloc(co->rb_cap, (size_t)(k + 1) * sizeof *v);
            if (!v) break;
            co->rb_cap = v;
            snprintf(v[k].name, sizeof v[k].name, "%s", pl[i].name);
            v[k].speed = pl[i].speed;
            co->rb_ncap++;
            continue; /* a join asks by itself */
        }
        double was = co->rb_cap[k].speed, now = pl[i].speed;
        if (was > 0 && now > 0 && (now > was * 1.1 || now < was / 1.1)) {
            char why[200];
            snprintf(why, sizeof why, "the capacity of node %s went %.3g -> %.3g CPUs", pl[i].name, was, now);
            node_log(n, NET_LOG_INFO, "%s%s", why, co->rb_ms ? ": rebalancing soon" : " (rebalance_interval = 0)");
            rebalance_soon(n, why, RB_SOON_MS / 2);
            co->rb_cap[k].speed = now;
        }
    }
    free(pl);
}

/* Every tick: the periodic rebalance, one asked for, and the moves' timing. */
void rebalance_tick(node *n)
{
    coord *co = n->co;
    int64_t now = (int64_t)(clock_mono_ns() / 1000000);
    if (now - co->rb_cap_at >= 500) {
        co->rb_cap_at = now;
        rebalance_capacities(n);
    }
    for (cquery *q = co->queries; q; q = q->next)
        if (q->rb_t0 && !q->cu.on) {
            q->rb_last_ms = (double)(clock_mono_ns() - q->rb_t0) / 1e6;
            q->rb_ms_total += q->rb_last_ms;
            q->rb_t0 = 0;
            node_log(n, NET_LOG_INFO, "rebalance: query %u (%s) caught up with its output %.1f ms after the move",
                     q->qid, q->name ? q->name : "push", q->rb_last_ms);
        }
    if (!co->rb_ms) return;
    if (!co->rb_next) co->rb_next = now + co->rb_ms;
    if (co->rb_soon && now >= co->rb_soon) {
        co->rb_soon = 0;
        co->rb_next = now + co->rb_ms;
        rebalance(n, co->rb_why, NULL, NULL);
    } else if (now >= co->rb_next) {
        co->rb_next = now + co->rb_ms;
        rebalance(n, "every rebalance_interval", NULL, NULL);
    }
}

/* EXPLAIN PLACEMENT's line on q's moves. */
void rebalance_explain(const cquery *q, sbuf *text)
{
    if (!q->rb_moves) {
        sbuf_printf(text, "\nrebalanced: never (no move yet)");
        return;
    }
    int done = q->rb_count - (q->rb_t0 ? 1 : 0);
    sbuf_printf(text, "\nrebalanced: %d moves in %d redeployments; the last: %s", q->rb_moves, q->rb_count, q->rb_last);
    if (q->rb_t0) sbuf_printf(text, "; catching up now");
    else if (done > 0)
        sbuf_printf(text, "; caught up %.0f ms after it (mean %.0f ms)", q->rb_last_ms, q->rb_ms_total / done);
}
