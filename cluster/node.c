/*
 * node.c: the runtime every ares-node runs, its engine and its connections on
 * one libuv loop.  This file starts and stops it (node_run), runs its tick
 * and dispatches every frame that arrives on a connection (cs_on_frame) to
 * the part that handles it: the connections and the mesh of node-to-node
 * links (node_conn.c), the queries deployed here (node_task.c), ingest and
 * statements at a stream's home (node_home.c), coordinator terms and the
 * standby (standby.c), a stream's log copy (shadow.c), the numbered data
 * channel (channel.c).  The coordinator's own work is in coord.c; it runs in
 * the same process on top of this and gets the frames no part takes.  The
 * connection callbacks are here too (ready, accepted, closed): a closed
 * connection is unlinked from everything that may point at it, then freed.
 *
 * Threading: the engine's loop runs everything; no locks.  A cs is freed only
 * in its connection's on_close, after it has been unlinked from every list
 * that could point at it (peers, waiters, ingest sessions, the coordinator's
 * requests).
 *
 * What every part calls (the log lines, the tick's timer, row_hash) is
 * below them all, in node_base.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster/node_int.h"

/* ------------------------------------------------------------------ frames */

void cs_on_frame(net_conn *c, const wire_frame *f, void *ud)
{
    cs *s = ud;
    node *n = s->n;
    wire_msg m;
    xerr err;
    if (wire_msg_get(f, &m, &err)) {
        net_abort(c, NET_CLOSE_PROTO, "%s", err.msg);
        return;
    }
    if (s->direct) { /* a client here for an ingest straight to a home (lis_on_ready) */
        if (m.type == WIRE_INGEST) node_direct_ingest(n, s, &m);
        else if (m.type != WIRE_CANCEL) {
            cs_error(s, 0, XE_INVAL, "this node is not the coordinator: only an ingest into a stream whose home is here "
                     "can be sent here");
            net_close(c, "not the coordinator");
        }
        return;
    }
    /* frames that only the coordinator sends: from the active term only */
    int from_coord = s->kind == CS_NODE && net_peer_role(c) == WIRE_ROLE_COORDINATOR && s->term && s->term >= n->term;
    switch (m.type) {
    case WIRE_TERM:
        if (s->kind != CS_NODE) break;
        standby_term_frame(n, s, &m);
        return;
    case WIRE_CATALOG:
        if (!from_coord || !n->sb->standby) break;
        standby_catalog_frame(n, &m);
        return;
    case WIRE_LOGSHIP:
    case WIRE_LOGACK:
        if (s->kind != CS_NODE) break;
        shadow_frame(n, s, &m);
        return;
    case WIRE_LOGSHADOW:
        if (from_coord) {
            char st[512], sh[WIRE_NAME_MAX + 1], src[1024];
            snprintf(st, sizeof st, "%.*s", (int)m.u.logshadow.stream.n, m.u.logshadow.stream.p);
            snprintf(sh, sizeof sh, "%.*s", (int)m.u.logshadow.shadow.n, m.u.logshadow.shadow.p);
            snprintf(src, sizeof src, "%.*s", (int)m.u.logshadow.source.n, m.u.logshadow.source.p);
            node_logshadow(n, st, sh, src, m.u.logshadow.flags & WIRE_LOGSHADOW_FED);
            return;
        }
        break;
    case WIRE_CHANNEL:
    case WIRE_CHACK:
        if (s->kind != CS_NODE) break;
        chan_recv(n, s, &m);
        return;
    case WIRE_BATCH:
    case WIRE_WATERMARK:
    case WIRE_STATE_DELTA:
    case WIRE_RESUME:
    case WIRE_REPLICA_ACK:
        if (s->kind != CS_NODE) break;
        if (chan_recv(n, s, &m)) return; /* had it, or an old connection's */
        if (node_data_frame(n, s, &m) == 1) node_hold(s, f);
        return;
    case WIRE_MEMBERSHIP:
        if (!from_coord) break;
        node_membership(n, &m);
        return;
    case WIRE_DEPLOY:
    case WIRE_UNDEPLOY: {
        if (!from_coord) break;
        xerr_clear(&err);
        uint64_t req = m.type == WIRE_DEPLOY ? m.u.deploy.epoch : m.u.undeploy.epoch;
        uint32_t qid = (uint32_t)(m.type == WIRE_DEPLOY ? m.u.deploy.query_id : m.u.undeploy.query_id);
        int rc = m.type == WIRE_DEPLOY ? node_deploy(n, qid, m.u.deploy.plan.p, m.u.deploy.plan.n, NULL, &err)
                                       : node_undeploy(n, qid, (m.flags & WIRE_F_KEEP) != 0, &err);
        if (rc) {
            node_log(n, NET_LOG_ERROR, "%s of query %u: %s", wire_type_name(m.type), qid, err.msg);
            cs_error(s, req, rc, err.msg);
        } else {
            wire_msg a = {.type = WIRE_ACK};
            a.u.ack.query_id = qid;
            a.u.ack.epoch = req;
            cs_send_msg(s, &a);
        }
        return;
    }
    case WIRE_QUERY:
        if (from_coord) {
            node_exec_from_coord(n, s, &m);
            return;
        }
        break;
    case WIRE_INGEST:
        if (from_coord) {
            node_ingest(n, s, &m, 0);
            return;
        }
        break;
    case WIRE_TICK:
        if (from_coord) {
            node_tick(n, m.u.tick.stream.p, m.u.tick.stream.n);
            return;
        }
        break;
    case WIRE_DERIVE:
        if (from_coord) {
            node_derive(n, m.u.derive.stream.p, m.u.derive.stream.n, m.u.derive.wm, m.u.derive.rows.p, m.u.derive.rows.n);
            return;
        }
        break;
    case WIRE_ERROR:
        if (!n->co) {
            node_log(n, NET_LOG_WARN, "error from %s: %.*s", s->peer ? s->peer->name : "?", (int)m.u.error.msg.n,
                     m.u.error.msg.p);
            return;
        }
        break;
    default: break;
    }
    if (n->co) {
        coord_frame(n, s, &m, f);
        return;
    }
    net_log(n->net, c, NET_LOG_WARN, "unexpected %s frame: closing", wire_type_name(m.type));
    net_abort(c, NET_CLOSE_PROTO, "unexpected %s frame", wire_type_name(m.type));
}

/* ------------------------------------------------------------------ connection events */

/* The connection callbacks: the events of a connection go from here to
 * every part they concern (node_conn.c keeps the connections themselves). */

static void cs_on_ready(net_conn *c, void *ud);
static void cs_on_close(net_conn *c, int why, const char *msg, void *ud);
static const net_handlers cs_handlers = {cs_on_ready, cs_on_frame, cs_on_writable, cs_on_close};

static void cs_on_ready(net_conn *c, void *ud)
{
    cs *s = ud;
    node *n = s->n;
    s->ready = 1;
    if (s == n->coord_link) {
        const char *name = net_peer_name(c);
        if (net_peer_role(c) != WIRE_ROLE_COORDINATOR) {
            node_log(n, join_addr(n, 0, NULL, 0) > 1 ? NET_LOG_DEBUG : NET_LOG_ERROR,
                     "%s at %s is not the coordinator; retrying", name, n->coord_addr);
            net_close(c, "not a coordinator");
            return;
        }
        n->sb->join_hint[0] = 0;
        peer *p = node_peer_add(n, name, NULL, n->coord_addr);
        if (p) {
            p->is_coord = 1;
            p->link = s;
            s->peer = p;
        }
        node_log(n, NET_LOG_INFO, "connected to the coordinator %s at %s; joining as %s (domain %s)%s", name,
                 n->coord_addr, n->cfg.name, n->cfg.domain, n->sb->standby ? " as its standby" : "");
        send_join(n, s);
    } else if (n->co && s->kind == CS_NODE)
        standby_send_term(s, n->term, WIRE_TERM_ANNOUNCE, n->cfg.name, n->addr);
    apply_link_delay(n, s);
    ovf_flush(s);
}

/* An accepted connection finished its handshake. */
static void lis_on_ready(net_conn *c, void *ud)
{
    node *n = ud;
    int role = net_peer_role(c);
    /* A client on a node that does not serve as the coordinator: it may
     * only send an ingest straight to a stream's home here (RES_HOME).  A
     * client that looks for the coordinator hears at once that this is not
     * it (an ERROR for request 0) and goes on to the next address. */
    int direct = role == WIRE_ROLE_CLIENT && (!n->co || !coord_serving(n));
    if (direct) {
        wire_msg em = {.type = WIRE_ERROR};
        em.u.error.code = XE_INVAL;
        em.u.error.msg = wire_str_of(n->co ? "this coordinator is taking over or lost the cluster's majority: try again"
                                   : n->sb->standby ? "this node is a standby coordinator: connect to the active one"
                                                : "this node is not the coordinator: connect to the coordinator's address");
        sbuf b;
        sbuf_init(&b);
        if (!wire_msg_payload(&b, &em, NULL)) net_send_ctl(c, WIRE_ERROR, 0, b.p, b.len);
        sbuf_fini(&b);
    }
    cs *s = cs_new(n, role == WIRE_ROLE_CLIENT ? CS_CLIENT : CS_NODE);
    if (!s) {
        net_abort(c, NET_CLOSE_LOCAL, "out of memory");
        return;
    }
    s->c = c;
    s->ready = 1;
    s->direct = direct;
    net_set_handlers(c, &cs_handlers, s);
    if (s->kind == CS_NODE) {
        const char *name = net_peer_name(c);
        peer *p = node_peer_add(n, name, NULL, NULL);
        s->peer = p;
        if (p && !p->link) p->link = s;
        apply_link_delay(n, s);
    }
    if (n->co && !direct) coord_ready(n, s);
}

static const net_handlers node_lis_handlers = {lis_on_ready, NULL, NULL, NULL};

static void cs_on_close(net_conn *c, int why, const char *msg, void *ud)
{
    (void)c;
    cs *s = ud;
    node *n = s->n;
    s->closing = 1;
    s->close_why = why;
    if (!n->stopping)
        node_log(n, why == NET_CLOSE_LOCAL || why == NET_CLOSE_PEER ? NET_LOG_INFO : NET_LOG_WARN,
                 "connection to %s %s: %s", s->peer ? s->peer->name : s->kind == CS_CLIENT ? "a client" : "?",
                 net_close_name(why), msg ? msg : "");
    if (n->co && !s->direct) coord_closed(n, s); /* a direct client was never the coordinator's */
    /* unlink from everything that may point at s */
    for (int i = 0; i < n->npeers; i++)
        if (n->peers[i]->link == s) {
            n->peers[i]->link = NULL;
            /* a failed connection (not a goodbye) waits the silence limit */
            n->peers[i]->retry_at = clock_wall_ms() + (why == NET_CLOSE_LOCAL || why == NET_CLOSE_PEER
                                                           ? 0
                                                           : (int64_t)net_ctx_dead_ms(n->net));
        }
    if (n->coord_link == s) {
        n->coord_link = NULL;
        n->sb->coord_lost_at = clock_wall_ms();
        n->sb->coord_lost_why = why;
        if (n->sb->standby && !n->co && s->ready && !n->stopping) node_tick_in(n, 1); /* standby_tick: ask now */
        /* the standby we granted a term takes over in a moment: ask it often */
        n->coord_retry_at = clock_wall_ms() + (n->sb->join_hint[0]            ? NODE_RETRY_MS / 20
                                               : join_addr(n, 0, NULL, 0) > 1 ? NODE_RETRY_MS / 5
                                                                              : NODE_RETRY_MS);
    }
    if (n->cur_in == s) n->cur_in = NULL;
    shadow_conn_closed(n, s);
    chan_closed(n, s);
    for (cs *o = n->conns; o; o = o->next)
        for (int i = 0; i < o->nwait; i++)
            if (o->waiters[i] == s) o->waiters[i--] = o->waiters[--o->nwait];
    node_ingest_conn_closed(n, s);
    ovf_drop(s);
    release_waiters(s);
    free(s->waiters);
    free(s->held);
    for (cs **pp = &n->conns; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    free(s);
}

/* ------------------------------------------------------------------ timers, signals, the run */

static void on_tick(uv_timer_t *t)
{
    node *n = t->data;
    static int ticks;
    if (!n->co && !n->coord_link && clock_wall_ms() >= n->coord_retry_at) node_connect_coordinator(n);
    if (n->sb->standby && !n->co) standby_tick(n);
    node_held_timeouts(n);
    node_ingest_orphans(n);
    node_resume_timeouts(n);
    if (n->co) coord_tick(n);
    shadow_tick(n);
    chan_tick(n);
    conn_tick(n);
    meas_report(n);
    if (++ticks % 10 == 0) {
        xerr err;
        if (engine_commit(n->eng, &err)) node_log(n, NET_LOG_ERROR, "commit: %s", err.msg);
    }
}

static void on_signal(uv_signal_t *h, int signo)
{
    node *n = h->data;
    node_log(n, NET_LOG_INFO, "%s: stopping", signo == SIGINT ? "SIGINT" : "SIGTERM");
    n->stopping = 1;
    uv_stop(n->loop);
}

static int check_name(const char *what, const char *v, xerr *err)
{
    if (!v || !wire_name_ok(v, strlen(v)))
        return xerr_set(err, XE_INVAL, "%s '%s' must be 1-64 characters of A-Z a-z 0-9 . _ : -", what, v ? v : "");
    return 0;
}

int node_run(const node_config *cfg, node_rejoin *rejoin, xerr *err)
{
    node nn, *n = &nn;
    struct standby sb;
    memset(n, 0, sizeof *n);
    memset(&sb, 0, sizeof sb);
    n->sb = &sb;
    n->on_tick = on_tick;
    n->cs_handlers = &cs_handlers;
    n->cfg = *cfg;
    if (getrandom(&n->incarnation, sizeof n->incarnation, 0) != (ssize_t)sizeof n->incarnation || !n->incarnation)
        n->incarnation = clock_mono_ns() ^ ((uint64_t)getpid() << 32) ^ 1;
    if (n->cfg.slots <= 0) n->cfg.slots = NODE_DEFAULT_SLOTS;
    char cap_how[300];
    n->speed_given = n->cfg.speed > 0;
    if (n->cfg.speed > 0) snprintf(cap_how, sizeof cap_how, "--speed");
    else n->cfg.speed = base_cpu_capacity(cap_how, sizeof cap_how);
    if (n->cfg.speed < 0.001) n->cfg.speed = 0.001; /* JOIN carries thousandths */
    if (!n->cfg.domain) n->cfg.domain = "default";
    int rc;
    if ((rc = check_name("node name", n->cfg.name, err)) || (rc = check_name("domain", n->cfg.domain, err))) return rc;
    if (!n->cfg.listen || base_parse_hostport(n->cfg.listen, n->listen_host, sizeof n->listen_host, &n->listen_port))
        return xerr_set(err, XE_INVAL, "--listen needs HOST:PORT, not '%s'", n->cfg.listen ? n->cfg.listen : "");
    if (!n->cfg.coordinator && !n->cfg.join) return xerr_set(err, XE_INVAL, "a node that is not the coordinator needs --join HOST:PORT");
    n->sb->standby = n->cfg.coordinator && n->cfg.join; /* a standby coordinator */
    if (!n->cfg.secret_file) return xerr_set(err, XE_INVAL, "a cluster secret is required: --secret-file FILE");
    if ((rc = auth_secret_load(n->cfg.secret_file, &n->secret, err))) return rc;
    if (n->secret.warning[0]) node_log(n, NET_LOG_WARN, "%s", n->secret.warning);

    engine_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.data_dir = n->cfg.data_dir;
    eo.log = engine_log_fn;
    eo.log_ctx = n;
    if ((rc = engine_open(&eo, &n->eng, err))) goto out_secret;
    n->loop = engine_loop(n->eng);

    net_config nc;
    memset(&nc, 0, sizeof nc);
    nc.name = n->cfg.name;
    nc.role = n->cfg.coordinator && !n->sb->standby ? WIRE_ROLE_COORDINATOR : WIRE_ROLE_NODE;
    nc.secret = &n->secret;
    nc.max_frame = 4u * 1024 * 1024;
    nc.heartbeat_ms = n->cfg.heartbeat_ms;
    nc.dead_ms = n->cfg.dead_ms;
    nc.log = node_net_log;
    nc.log_ud = n;
    nc.log_level = n->cfg.verbose ? NET_LOG_DEBUG : NET_LOG_INFO;
    if ((rc = net_ctx_new(n->loop, &nc, &n->net, err))) goto out_engine;
    if ((rc = net_listen(n->net, n->listen_host, n->listen_port, &node_lis_handlers, n, &n->lis, err))) goto out_net;
    n->listen_port = net_listener_port(n->lis);
    snprintf(n->addr, sizeof n->addr, "%.63s:%d", n->listen_host, n->listen_port);
    if (n->cfg.coordinator && !n->sb->standby && (rc = coord_start(n, err))) goto out_net;

    uv_timer_init(n->loop, &n->tick);
    n->tick.data = n;
    uv_timer_start(&n->tick, on_tick, NODE_TICK_MS, NODE_TICK_MS);
    for (int i = 0; i < 2; i++) {
        uv_signal_init(n->loop, &n->sig[i]);
        n->sig[i].data = n;
        uv_signal_start(&n->sig[i], on_signal, i ? SIGTERM : SIGINT);
    }
    signal(SIGPIPE, SIG_IGN);
    node_log(n, NET_LOG_INFO, "ares-node %s (domain %s, %d slots, capacity %.3g CPUs from %s%s) listening on %s, data in %s%s",
             n->cfg.name, n->cfg.domain, n->cfg.slots, n->cfg.speed, cap_how,
             n->cfg.throttle > 0 && n->cfg.throttle < 1 ? ", throttled" : "", n->addr, engine_dir(n->eng),
             n->sb->standby ? ", standby coordinator" : n->cfg.coordinator ? ", coordinator" : "");
    if (!n->co) node_connect_coordinator(n);

    uv_run(n->loop, UV_RUN_DEFAULT);

    node_log(n, NET_LOG_INFO, "stats: batch_frames_out=%llu rows_out=%llu batch_bytes_out=%llu batch_frames_in=%llu",
             (unsigned long long)n->out_batches, (unsigned long long)n->out_rows,
             (unsigned long long)n->out_batch_bytes, (unsigned long long)n->in_batches);
    n->stopping = 1;
    if (n->co) coord_stop(n);
    uv_timer_stop(&n->tick);
    uv_close((uv_handle_t *)&n->tick, NULL);
    for (int i = 0; i < 2; i++) uv_close((uv_handle_t *)&n->sig[i], NULL);
    net_ctx_free(n->net);
    n->net = NULL;
    for (int i = 0; i < 50 && n->conns; i++) uv_run(n->loop, UV_RUN_NOWAIT);
    node_ingest_free(n);
    node_tasks_free(n);
    shadow_free(n);
    meas_store_free(n->meas);
    engine_close(n->eng);
    for (int i = 0; i < n->npeers; i++) {
        chan_free(n->peers[i]);
        free(n->peers[i]);
    }
    free(n->peers);
    auth_secret_fini(&n->secret);
    if (n->sb->rejoin_to[0] && rejoin) {
        node_log(n, NET_LOG_INFO, "stopped as the coordinator; starting again as a standby");
        snprintf(rejoin->listen, sizeof rejoin->listen, "%.127s", n->addr);
        snprintf(rejoin->join, sizeof rejoin->join, "%.511s", n->sb->rejoin_to);
        return NODE_RUN_REJOIN;
    }
    node_log(n, NET_LOG_INFO, "stopped");
    return 0;
out_net:
    net_ctx_free(n->net);
    for (int i = 0; i < 50; i++) uv_run(n->loop, UV_RUN_NOWAIT);
out_engine:
    engine_close(n->eng);
out_secret:
    auth_secret_fini(&n->secret);
    return rc;
}
