/*
 * coord.c: the coordinator's entry points, called by node.c on the node's
 * loop: a frame from a client or a node (coord_frame, which dispatches it:
 * a client's QUERY, INGEST, ATTACH, CANCEL; a node's JOIN, LOSS, STATS and
 * answers), a connection that is ready or closed, and the tick, which
 * watches the members' liveness, runs a failure event once it has settled,
 * ends recoveries' catch-up, pushes queries to their end and asks for
 * rebalancing.  The rest of the coordinator is in coord_*.c (coord.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

static void handle_join(node *n, cs *s, const wire_msg *m)
{
    const wire_join *j = &m->u.join;
    const char *hello = net_peer_name(s->c);
    if (j->name.n != strlen(hello) || memcmp(j->name.p, hello, j->name.n) || !wire_name_ok(j->domain.p, j->domain.n) ||
        j->slots == 0 || j->addr.n == 0 || j->addr.n >= 128) {
        cs_error(s, 0, XE_PROTO, "JOIN: name must match HELLO, domain a valid name, slots > 0 and an address");
        net_close(s->c, "bad JOIN");
        return;
    }
    if (!strcmp(hello, n->cfg.name)) {
        cs_error(s, 0, XE_EXISTS, "a node with the coordinator's name cannot join");
        net_close(s->c, "name taken");
        return;
    }
    char dom[WIRE_NAME_MAX + 1], addr[128];
    snprintf(dom, sizeof dom, "%.*s", (int)j->domain.n, j->domain.p);
    snprintf(addr, sizeof addr, "%.*s", (int)j->addr.n, j->addr.p);
    peer *p = node_peer_add(n, hello, dom, addr);
    if (!p) return;
    int rejoin = p->slots > 0, was_dead = rejoin && p->state == WIRE_MEMBER_DEAD;
    p->slots = j->slots;
    p->speed_milli = j->speed_milli;
    p->state = WIRE_MEMBER_UP;
    p->last_hb = clock_wall_ms();
    p->link = s;
    p->rejoined = 1;
    p->is_coord = 0;
    p->standby = (m->flags & WIRE_F_STANDBY) != 0;
    s->peer = p;
    if (n->cfg.link_delay_ms && strcmp(dom, n->cfg.domain)) net_set_send_delay_ms(s->c, n->cfg.link_delay_ms);
    node_log(n, NET_LOG_INFO, "%s %s %s (domain %s, address %s, %u slots, speed %.3g)",
             p->standby ? "standby coordinator" : "node", hello, rejoin ? "rejoined" : "joined", dom, addr, j->slots,
             j->speed_milli / 1000.0);
    send_membership(n);
    if (p->standby) {
        xerr err;
        if (!n->co->had_standby && cat_put(n, "standby", "1", 1, &err))
            node_log(n, NET_LOG_ERROR, "recording the standby: %s", err.msg);
        n->co->had_standby = 1;
        if (strcmp(n->co->standby_addr, addr)) {
            snprintf(n->co->standby_addr, sizeof n->co->standby_addr, "%s", addr);
            if (cat_put(n, "standby_addr", addr, strlen(addr), &err))
                node_log(n, NET_LOG_ERROR, "recording the standby: %s", err.msg);
        }
        catalog_dump(n, s);
    }
    coord *co = n->co;
    if (was_dead) {
        /* it was declared dead (a cut that healed, a node we took over
         * without): what it still runs was recovered elsewhere under new ids */
        for (uint32_t qid = 1; qid < co->next_qid; qid++) {
            cquery *q = co->queries;
            while (q && q->qid != qid) q = q->next;
            if (q) continue;
            wire_msg u = {.type = WIRE_UNDEPLOY};
            u.u.undeploy.query_id = qid;
            cs_send_msg(s, &u);
        }
    }
    /* the catalog, so that it plans like everyone else, then the queries */
    for (int i = 0; i < co->nsets; i++) {
        wire_msg q = {.type = WIRE_QUERY};
        q.u.query.sql = wire_str_of(co->set_sql[i]);
        cs_send_msg(s, &q);
    }
    for (int i = 0; i < co->nstreams; i++) {
        if (co->streams[i].part) continue; /* the stream's CREATE makes its partitions */
        wire_msg q = {.type = WIRE_QUERY};
        q.u.query.sql = wire_str_of(stream_sql_for(&co->streams[i], hello));
        cs_send_msg(s, &q);
    }
    for (cquery *q = co->queries; q; q = q->next)
        if (!q->ended) send_deploy(n, s, NULL, q);
    if (!p->standby) {
        char why[160];
        snprintf(why, sizeof why, "node %s %s", hello, rejoin ? "rejoined" : "joined");
        rebalance_soon(n, why, RB_SOON_MS);
    }
}

static void pass_to_client(pend *p, const wire_frame *f)
{
    if (!p->client || p->quiet || f->length < 8) return;
    unsigned char *copy = malloc(f->length);
    if (!copy) return;
    memcpy(copy, f->payload, f->length);
    be64_put(copy, p->creq);
    cs_send(p->client, f->type, f->flags, copy, f->length);
    free(copy);
}

static void on_answer(node *n, cs *s, const wire_msg *m, const wire_frame *f)
{
    uint64_t id = m->type == WIRE_RESULT ? m->u.result.req_id : m->type == WIRE_ACK ? m->u.ack.epoch : m->u.error.req_id;
    if (m->type == WIRE_ERROR)
        node_log(n, id ? NET_LOG_INFO : NET_LOG_WARN, "error from %s: %.*s", s->peer ? s->peer->name : "?",
                 (int)m->u.error.msg.n, m->u.error.msg.p);
    if (!id) return;
    pend *p;
    for (p = n->co->pends; p && p->id != id; p = p->next) {}
    if (!p) return;
    int part = m->type == WIRE_RESULT && m->u.result.rows.n ? (unsigned char)m->u.result.rows.p[0] : 0;
    int last = m->type == WIRE_ACK || m->type == WIRE_ERROR || (f->flags & WIRE_F_LAST);
    switch (p->kind) {
    case PK_BROADCAST:
        if (m->type == WIRE_ERROR && !p->rc) {
            p->rc = m->u.error.code < 0 ? m->u.error.code : XE_IO;
            snprintf(p->msg, sizeof p->msg, "node %s: %.*s", s->peer ? s->peer->name : "?", (int)m->u.error.msg.n,
                     m->u.error.msg.p);
        }
        if (last && s->peer) pend_answered(n, p, s->peer);
        return;
    case PK_GATHER:
        if (part == RES_ROWS && s->peer) {
            batch b = {0};
            xerr e2;
            if (batch_decode(m->u.result.rows.p + 1, m->u.result.rows.n - 1, &b, &e2) == 0 && p->take)
                p->take(n, p, s->peer->name, &b);
            batch_fini(&b);
        }
        if (last && s->peer) pend_answered(n, p, s->peer);
        return;
    case PK_FWD_INSERT:
        if (m->type == WIRE_ERROR) {
            p->rc = m->u.error.code < 0 ? m->u.error.code : XE_IO;
            /* the home's position is in the statement's text: it becomes
             * one in the client's SQL, where that text begins */
            xerr e;
            xerr_clear(&e);
            wire_error_parse(&e, p->rc, m->u.error.msg.p, m->u.error.msg.n);
            if (e.line > 0 && p->line > 0) {
                if (e.line == 1) e.col += p->col - 1;
                e.line += p->line - 1;
            }
            wire_error_text(&e, p->rc, p->msg, sizeof p->msg);
        } else if (part != RES_DONE)
            pass_to_client(p, f); /* a notice, or a pull query's rows */
        if (last) pend_finish(n, p);
        return;
    case PK_FWD_INGEST:
        if (part == RES_ACKED) {
            if (m->u.result.rows.n >= 9) p->acked = be64_get((const unsigned char *)m->u.result.rows.p + 1);
            if (p->client) coord_ingest_acked(n, p->client, p->creq);
            return;
        }
        pass_to_client(p, f);
        if (m->type == WIRE_ERROR) p->failed = 1;
        else if (last) {
            pend_unlink(n, p);
            pend_free(p);
        }
        return;
    }
}

void coord_ready(node *n, cs *s)
{
    /* who coordinates, at which term: a node refuses an older one, a client
     * knows it found the active coordinator */
    wire_msg m = {.type = WIRE_TERM};
    m.u.term.term = n->term;
    m.u.term.kind = WIRE_TERM_ANNOUNCE;
    m.u.term.name = wire_str_of(n->cfg.name);
    m.u.term.addr = wire_str_of(n->addr);
    cs_send_msg(s, &m);
    if (s->kind != CS_CLIENT) return;
    s->sess = calloc(1, sizeof *s->sess);
    if (!s->sess) {
        net_abort(s->c, NET_CLOSE_LOCAL, "out of memory");
        return;
    }
    node_log(n, NET_LOG_INFO, "client %s connected from %s", net_peer_name(s->c), net_peer_addr(s->c));
}

void coord_closed(node *n, cs *s)
{
    coord *co = n->co;
    if (s == co->probe) co->probe = NULL;
    for (int i = 0; i < n->npeers; i++)
        if (n->peers[i]->probe == s) {
            n->peers[i]->probe = NULL;
            /* refused, or no route: nothing there */
            if (!s->ready && s->close_why == NET_CLOSE_IO) n->peers[i]->gone = 1;
        }
    if (s->kind == CS_CLIENT) {
        if (s->sess) {
            job_free(s->sess);
            free(s->sess);
            s->sess = NULL;
        }
        for (cquery *q = co->queries, *nx; q; q = nx) {
            nx = q->next;
            int had = 0; /* only its own client's leaving ends a push query */
            for (csub **pp = &q->subs; *pp;) {
                if ((*pp)->to == s) {
                    csub *x = *pp;
                    *pp = x->next;
                    csub_free(x);
                    had = 1;
                } else
                    pp = &(*pp)->next;
            }
            if (had && q->push && !q->subs && !q->ended) {
                if (q->keep && s->close_why != NET_CLOSE_PEER && s->close_why != NET_CLOSE_LOCAL) {
                    /* lost, not gone: it may come back (ATTACH) */
                    q->orphan_until = clock_wall_ms() + DD_KEEP_MS;
                    node_log(n, NET_LOG_INFO, "push query %u: its client was lost; kept %d s for it to attach again",
                             q->qid, DD_KEEP_MS / 1000);
                    continue;
                }
                node_log(n, NET_LOG_INFO, "push query %u ends: its client left", q->qid);
                cq_drop(n, q);
            }
        }
        for (pend *p = co->pends, *nx; p; p = nx) {
            nx = p->next;
            if (p->client != s) continue;
            p->client = NULL;
            if (p->kind == PK_FWD_INGEST) {
                /* close the home node's session without ending the stream */
                if (!p->failed && p->home && p->home->link) {
                    wire_msg m = {.type = WIRE_INGEST, .flags = WIRE_F_LAST};
                    m.u.ingest.req_id = p->id;
                    cs_send_msg(p->home->link, &m);
                }
                pend_unlink(n, p);
                pend_free(p);
            }
        }
        return;
    }
    peer *x = s->peer;
    if (!x || x->link != s || !coord_joined(x)) return;
    /* While a takeover waits, a member that has not joined this term yet is
     * judged by takeover_deaths: a connection of it that closes now is one
     * of the old term's (a dial to us it abandoned when it granted the
     * term, its handshake done just after we took over), not its death. */
    if (co->takeover_until && !x->rejoined) return;
    member_lost(n, x, s->close_why != NET_CLOSE_DEAD);
    for (pend *p = co->pends, *nx; p; p = nx) {
        nx = p->next;
        if (p->kind == PK_BROADCAST || p->kind == PK_GATHER) {
            for (int i = 0; i < p->nwait; i++)
                if (p->wait[i] == x) {
                    node_log(n, NET_LOG_WARN, "request %llu: node %s left before answering", (unsigned long long)p->id,
                             x->name);
                    pend_answered(n, p, x);
                    break;
                }
        } else if (p->home == x) {
            if (p->kind == PK_FWD_INGEST && (p->quiet || coord_shadow_takes_over(n, p))) {
                /* the shadow lost (nothing the client needs), or the shadow answers from now on */
                p->failed = 1;
                p->home = NULL;
                continue;
            }
            if (p->kind == PK_FWD_INGEST && coord_ingest_can_move(n, p)) continue;
            if (p->client) {
                char msg[200];
                snprintf(msg, sizeof msg, "node %s left", x->name);
                cs_error(p->client, p->creq, XE_IO, msg);
            }
            if (p->kind == PK_FWD_INSERT) {
                p->rc = XE_IO;
                snprintf(p->msg, sizeof p->msg, "node %s left", x->name);
                pend_finish(n, p);
            } else {
                p->failed = 1;
                p->home = NULL;
            }
        }
    }
}

void coord_frame(node *n, cs *s, const wire_msg *m, const wire_frame *f)
{
    if (s->kind == CS_CLIENT) {
        switch (m->type) {
        case WIRE_QUERY:
            if (f->flags & WIRE_F_FAILOVER) s->failover = 1;
            job_start(n, s, m);
            return;
        case WIRE_INGEST: coord_ingest_from_client(n, s, m, f); return;
        case WIRE_ATTACH: coord_attach(n, s, m); return;
        case WIRE_CANCEL: cancel_results(n, s, m->u.cancel.req_id); return;
        default: break;
        }
    } else {
        switch (m->type) {
        case WIRE_JOIN: handle_join(n, s, m); return;
        case WIRE_LOSS: {
            char to[WIRE_NAME_MAX + 1];
            snprintf(to, sizeof to, "%.*s", (int)m->u.loss.peer.n, m->u.loss.peer.p);
            coord_loss(n, s->peer ? s->peer->name : "?", (uint32_t)m->u.loss.query, m->u.loss.batches, to);
            return;
        }
        case WIRE_STATS:
            if (s->peer) meas_take(n, s->peer->name, m);
            return;
        case WIRE_RESULT:
        case WIRE_ACK:
        case WIRE_ERROR: on_answer(n, s, m, f); return;
        default: break;
        }
    }
    net_log(n->net, s->c, NET_LOG_WARN, "unexpected %s frame from a %s: closing", wire_type_name(m->type),
            s->kind == CS_CLIENT ? "client" : "node");
    cs_error(s, 0, XE_PROTO, "unexpected frame type");
    net_close(s->c, "protocol error");
}

void coord_tick(node *n)
{
    coord *co = n->co;
    int64_t now = clock_wall_ms();
    if (co->deposed) return;
    if (co->takeover_until && now >= co->takeover_until) takeover_deaths(n);
    else if (co->takeover_until) takeover_probe(n);
    if (co->wait_majority) {
        int up = 1;
        for (int i = 0; i < n->npeers; i++) up += coord_alive(n->peers[i]);
        if (2 * up <= co->wait_majority) {
            probe_standby(n, now);
            return;
        }
        node_log(n, NET_LOG_INFO, "restarted coordinator: %d of the %d members it knew joined it: serving clients", up,
                 co->wait_majority);
        co->wait_majority = 0;
    }
    if (!co->takeover_until && !co->takeover_event) check_quorum(n);
    if (co->nloss) judge_losses(n, now);
    if (co->fenced) {
        probe_standby(n, now);
        return;
    }
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!coord_joined(x) || !x->link || !x->link->ready) continue;
        net_stats st;
        net_get_stats(x->link->c, &st);
        uint64_t seen = st.frames_in + st.heartbeats_in;
        if (seen != x->seen || net_paused(x->link->c)) {
            x->seen = seen;
            x->last_hb = now;
            if (x->state != WIRE_MEMBER_UP) {
                x->state = WIRE_MEMBER_UP;
                co->members_dirty = 1;
            }
        } else if (x->state == WIRE_MEMBER_UP && net_silent_ms(x->link->c) > NODE_SUSPECT_MS(n)) {
            x->state = WIRE_MEMBER_SUSPECT;
            node_log(n, NET_LOG_WARN, "node %s is SUSPECT: silent for %lld ms", x->name, (long long)(now - x->last_hb));
            co->members_dirty = 1;
        }
    }
    if (co->members_dirty) send_membership(n);
    if (co->recover_at && (int64_t)(clock_mono_ns() / 1000000) >= co->recover_at) {
        co->recover_at = 0;
        node_log(n, NET_LOG_WARN, "failure event: %s dead (detected %.1f ms ago)", co->dead_names.p,
                 (double)(clock_mono_ns() - co->death_ns) / 1e6);
        promote_shadows(n);
        move_ingests(n);
        replace_after_death(n, co->dead_names.p);
        ft_recover(n);
        if (co->takeover_event) {
            co->takeover_event = 0;
            node_log(n, NET_LOG_WARN, "coordinator of term %llu: serving clients (%.1f ms after the takeover began)",
                     (unsigned long long)n->term, (double)(clock_mono_ns() - co->takeover_ns) / 1e6);
        }
    }
    /* shadowed streams: partial slices end at the same point at both homes
     * (while input flows, coord_ingest_from_client TICKs them; this ends
     * the slice of an input that paused) */
    for (int i = 0; i < co->nstreams; i++)
        if (co->streams[i].dirty && now - co->streams[i].tick_ms >= COORD_SLICE_MS) tick_stream(n, &co->streams[i]);
    /* exactly-once output: the end of a recovery's catch-up; old rows */
    static int64_t last_evict;
    int evict = now - last_evict >= 1000;
    if (evict) last_evict = now;
    for (cquery *q = co->queries; q; q = q->next) {
        int64_t wm;
        xerr err;
        if (q->target) derive_flush(n, q);
        int have_wm = engine_deployed_sink_wm(n->eng, q->qid, &wm, &err) == 0 && wm != INT64_MIN;
        const int64_t *in = NULL;
        int nin = 0;
        if (q->cu.on && have_wm && !engine_deployed_sink_inputs(n->eng, q->qid, &in, &nin, &err) &&
            catchup_done(&q->cu, in, nin)) {
            q->cu.on = 0;
            size_t before = q->dt.dd.len;
            if (!dd_rebuild(&q->dt, 1, 0))
                node_log(n, NET_LOG_INFO, "query %u caught up with its output before the failure: %zu of %zu "
                         "delivered rows came again", q->qid, q->dt.dd.len, before);
        } else if (evict && !q->cu.on && q->nrep > 0 && (q->ft == ENGINE_FT_REPLICA || q->ft == ENGINE_FT_CHECKPOINT))
            dd_rebuild(&q->dt, 0, DD_KEEP_MS > 3 * q->ckpt_ms ? DD_KEEP_MS : 3 * q->ckpt_ms);
        /* subscribers that attached again: caught up once the sink passed
         * the watermark they had */
        for (csub *x = q->subs; x; x = x->next)
            if (x->dt && have_wm && wm >= x->catchup_wm) {
                node_log(n, NET_LOG_INFO, "query %u: a subscriber that attached again caught up (%zu rows it had)",
                         q->qid, x->dt->dd.len);
                dd_fini(x->dt);
                free(x->dt);
                x->dt = NULL;
            }
        /* the rows kept since a takeover, once nobody may attach any more */
        if (q->orphan_until && clock_wall_ms() >= q->orphan_until && (q->subs || !q->push)) {
            q->orphan_until = 0;
            sbuf_fini(&q->backlog);
            sbuf_init(&q->backlog);
        }
    }
    /* push queries end when every input has ended (or at their LIMIT); a
     * kept one whose client is lost waits for it (ATTACH) for a while */
    for (cquery *q = co->queries, *nx; q; q = nx) {
        nx = q->next;
        if (!q->push || q->ended) continue;
        if (!q->subs && q->orphan_until) {
            if (now < q->orphan_until) continue;
            node_log(n, NET_LOG_INFO, "push query %u ends: its client did not come back in %d s", q->qid,
                     DD_KEEP_MS / 1000);
            cq_drop(n, q);
            continue;
        }
        int64_t wm = 0;
        xerr err;
        int done = (q->limit >= 0 && q->rows >= q->limit) ||
                   (engine_deployed_sink_wm(n->eng, q->qid, &wm, &err) == 0 && wm == INT64_MAX);
        if (done) {
            node_log(n, NET_LOG_INFO, "push query %u ended (%lld rows)", q->qid, (long long)q->rows);
            cq_drop(n, q);
        }
    }
    rebalance_tick(n);
}
