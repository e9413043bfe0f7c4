/*
 * node.c: the runtime every ares-node runs: its engine and its connections on
 * one libuv loop, the mesh of node-to-node links, the queries deployed here
 * (their remote hooks turn rows and watermarks bound for tasks elsewhere into
 * BATCH and WATERMARK frames, and frames that arrive go to the engine), and
 * ingest at a stream's home node.  The coordinator's own work is in coord.c;
 * it runs in the same process on top of this.
 *
 * Threading: the engine's loop runs everything; no locks.  A cs is freed only
 * in its connection's on_close, after it has been unlinked from every list
 * that could point at it (peers, waiters, ingest sessions, the coordinator's
 * requests).
 *
 * Frames for a query whose DEPLOY has not arrived yet (an upstream node may
 * get its DEPLOY first and start sending) are held: the connection pauses,
 * keeping that one frame, until the DEPLOY comes (qids only grow, and every
 * node sees every DEPLOY in qid order, so a qid at or below the highest one
 * seen that is not deployed here belongs to a dropped query: its frames are
 * dropped).  A frame held longer than NODE_HOLD_MS is dropped with a log line.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster/node.h"

/* ------------------------------------------------------------------ logging */

static void log_line(node *n, int level, const char *who, const char *msg)
{
    if (level < NET_LOG_INFO && !(n && n->cfg.verbose)) return;
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ldZ %s %s %s%s%s%s\n", when, ts.tv_nsec / 1000000L, n ? n->cfg.name : "ares-node",
            net_log_level_name(level), who ? "[" : "", who ? who : "", who ? "] " : "", msg);
}

static void node_net_log(void *ud, int level, const char *who, const char *msg) { log_line(ud, level, who, msg); }

void node_log(node *n, int level, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_line(n, level, NULL, msg);
}

static void engine_log_fn(void *ctx, const char *msg) { log_line(ctx, NET_LOG_WARN, "engine", msg); }

const char *node_state_name(int state)
{
    switch (state) {
    case WIRE_MEMBER_UP: return "ALIVE";
    case WIRE_MEMBER_SUSPECT: return "SUSPECT";
    case WIRE_MEMBER_DEAD: return "DEAD";
    case WIRE_MEMBER_LEFT: return "LEFT";
    }
    return "?";
}

/* ------------------------------------------------------------------ helpers */

static int parse_hostport(const char *s, char *host, size_t hn, int *port)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1]) return XE_INVAL;
    size_t len = (size_t)(colon - s);
    if (s[0] == '[' && colon[-1] == ']') { s++; len -= 2; } /* [::1]:7000 */
    if (len >= hn) return XE_INVAL;
    memcpy(host, s, len);
    host[len] = 0;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 0 || p > 65535) return XE_INVAL;
    *port = (int)p;
    return 0;
}

uint64_t row_hash(const val *row, int ncols)
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int c = 0; c < ncols; c++) h = val_hash(&row[c], h);
    return h ? h : 1;
}

int64_t batch_peek_rows(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t at = 2;
    if (n < 3 || b[0] != 0xAB) return -1;
    for (int k = 0; k < 2; k++) {
        uint64_t v = 0;
        int shift = 0;
        for (;;) {
            if (at >= n || shift > 63) return -1;
            unsigned char c = b[at++];
            v |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80)) break;
            shift += 7;
        }
        if (k == 1) return (int64_t)v;
    }
    return -1;
}

int res_begin_put(sbuf *b, const fmt_schema *s, int stream)
{
    wire_wr w;
    wire_wr_init(&w, b);
    wire_put_u8(&w, RES_BEGIN);
    wire_put_u8(&w, (uint8_t)(stream != 0));
    wire_put_u16(&w, (uint16_t)s->ncols);
    for (int i = 0; i < s->ncols; i++) {
        wire_put_str(&w, s->names[i], strlen(s->names[i]));
        wire_put_u8(&w, (uint8_t)s->types[i]);
    }
    return wire_wr_end(&w, NULL);
}

/* Sleep in proportion to the work just done, so that --throttle X < 1 makes
 * this node X times as fast as it would be.  A test knob only: a sleeping
 * node hands its CPU to the others, so it costs a shared machine nothing
 * (the testbed caps nodes with CPU quotas instead, bench/testbed/). */
static void slow_down(node *n, uint64_t t0)
{
    if (n->cfg.throttle >= 1.0 || n->cfg.throttle <= 0) return;
    uint64_t spent = clock_mono_ns() - t0;
    double extra = (double)spent * (1.0 / n->cfg.throttle - 1.0);
    if (extra > 1e9) extra = 1e9;
    struct timespec ts = {(time_t)(extra / 1e9), (long)((uint64_t)extra % 1000000000ull)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

/* ------------------------------------------------------------------ peers */

peer *node_peer(node *n, const char *name, size_t len)
{
    for (int i = 0; i < n->npeers; i++)
        if (strlen(n->peers[i]->name) == len && !memcmp(n->peers[i]->name, name, len)) return n->peers[i];
    return NULL;
}

peer *node_peer_add(node *n, const char *name, const char *domain, const char *addr)
{
    peer *p = node_peer(n, name, strlen(name));
    if (!p) {
        peer **v = realloc(n->peers, (size_t)(n->npeers + 1) * sizeof *v);
        if (!v) return NULL;
        n->peers = v;
        if (!(p = calloc(1, sizeof *p))) return NULL;
        snprintf(p->name, sizeof p->name, "%s", name);
        p->state = WIRE_MEMBER_UP;
        n->peers[n->npeers++] = p;
    }
    if (domain && domain[0]) snprintf(p->domain, sizeof p->domain, "%s", domain);
    if (addr && addr[0]) snprintf(p->addr, sizeof p->addr, "%s", addr);
    return p;
}

/* Cross-domain latency for tests: frames to nodes of other domains wait. */
static void apply_link_delay(node *n, cs *s)
{
    if (!n->cfg.link_delay_ms || !s->ready || !s->peer || !s->peer->domain[0]) return;
    net_set_send_delay_ms(s->c, strcmp(s->peer->domain, n->cfg.domain) ? n->cfg.link_delay_ms : 0);
}

/* ------------------------------------------------------------------ connections */

static void cs_on_ready(net_conn *c, void *ud);
static void cs_on_frame(net_conn *c, const wire_frame *f, void *ud);
static void cs_on_writable(net_conn *c, void *ud);
static void cs_on_close(net_conn *c, int why, const char *msg, void *ud);
static const net_handlers cs_handlers = {cs_on_ready, cs_on_frame, cs_on_writable, cs_on_close};

static cs *cs_new(node *n, int kind)
{
    cs *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    s->kind = kind;
    s->next = n->conns;
    n->conns = s;
    return s;
}

/* Paused while waiting on some destination or holding a frame. */
static void cs_update_pause(cs *s)
{
    if (!s->c || s->closing) return;
    if (s->blocked > 0 || s->held) net_pause(s->c);
    else net_resume(s->c);
}

static void wait_on(cs *in, cs *d)
{
    for (int i = 0; i < d->nwait; i++)
        if (d->waiters[i] == in) return;
    if (d->nwait == d->capwait) {
        int cap = d->capwait ? 2 * d->capwait : 8;
        cs **v = realloc(d->waiters, (size_t)cap * sizeof *v);
        if (!v) return; /* cannot track it: the input keeps flowing */
        d->waiters = v;
        d->capwait = cap;
    }
    d->waiters[d->nwait++] = in;
    in->blocked++;
    cs_update_pause(in);
}

static void release_waiters(cs *d)
{
    int nw = d->nwait;
    d->nwait = 0;
    for (int i = 0; i < nw; i++) {
        cs *w = d->waiters[i];
        if (w->blocked > 0) w->blocked--;
        cs_update_pause(w);
    }
}

static void report_loss(node *n, peer *to, uint32_t qid, uint64_t batches);

static void ovf_drop(cs *d)
{
    if (d->src_paused) {
        d->src_paused = 0;
        engine_pause_sources(d->n->eng, 0);
    }
    /* data frames among them go again on the next connection (channel.c) */
    if (d->ovf_frames)
        node_log(d->n, NET_LOG_INFO, "%zu frames (%zu bytes) for %s were not sent before its connection closed",
                 d->ovf_frames, d->ovf_bytes, d->peer ? d->peer->name : net_peer_addr(d->c));
    while (d->ovf) {
        qframe *q = d->ovf;
        d->ovf = q->next;
        free(q);
    }
    d->ovf_tail = NULL;
    d->ovf_bytes = d->ovf_frames = 0;
}

/* Move overflow into the connection's send queue while it takes it. */
static void ovf_flush(cs *d)
{
    if (!d->ready || d->closing) return;
    while (d->ovf) {
        qframe *q = d->ovf;
        int rc = net_send(d->c, q->type, q->flags, q->p, q->len);
        if (rc == XE_BUSY) return;
        if (rc < 0) node_log(d->n, NET_LOG_ERROR, "cannot send a %s frame of %zu bytes: %s", wire_type_name(q->type),
                             q->len, xerr_name(rc));
        d->ovf = q->next;
        if (!d->ovf) d->ovf_tail = NULL;
        d->ovf_bytes -= q->len;
        d->ovf_frames--;
        free(q);
    }
    if (d->src_paused) {
        d->src_paused = 0;
        engine_pause_sources(d->n->eng, 0);
    }
    release_waiters(d);
}

int cs_send(cs *d, uint8_t type, uint16_t flags, const void *p, size_t len)
{
    if (!d || d->closing) return XE_IO;
    if (d->ready && !d->ovf) {
        int rc = net_send(d->c, type, flags, p, len);
        if (rc != XE_BUSY) return rc;
    }
    qframe *q = malloc(sizeof *q + len);
    if (!q) return XE_NOMEM;
    q->next = NULL;
    q->type = type;
    q->flags = flags;
    q->len = len;
    if (len) memcpy(q->p, p, len);
    if (d->ovf_tail) d->ovf_tail->next = q;
    else d->ovf = q;
    d->ovf_tail = q;
    d->ovf_bytes += len;
    d->ovf_frames++;
    if (d->n->cur_in) wait_on(d->n->cur_in, d);
    else if (!d->src_paused) {
        /* rows from the engine itself (a socket source): pause its sources */
        d->src_paused = 1;
        engine_pause_sources(d->n->eng, 1);
    }
    return 0;
}

int cs_send_msg(cs *d, const wire_msg *m)
{
    sbuf b;
    sbuf_init(&b);
    int rc = wire_msg_payload(&b, m, NULL);
    if (!rc) rc = cs_send(d, m->type, m->flags, b.p, b.len);
    sbuf_fini(&b);
    return rc;
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

int cs_result(cs *d, uint64_t req, uint16_t flags, int part, uint32_t nrows, const void *p, size_t len)
{
    sbuf b;
    sbuf_init(&b);
    unsigned char h[13];
    be64_put(h, req);
    be32_put(h + 8, nrows);
    h[12] = (unsigned char)part;
    int rc = sbuf_add(&b, h, sizeof h);
    if (!rc && len) rc = sbuf_add(&b, p, len);
    if (!rc) rc = cs_send(d, WIRE_RESULT, flags, b.p, b.len);
    sbuf_fini(&b);
    return rc;
}

int cs_error(cs *d, uint64_t req, int code, const char *msg)
{
    wire_msg m = {.type = WIRE_ERROR};
    m.u.error.req_id = req;
    m.u.error.code = code;
    size_t len = strlen(msg);
    m.u.error.msg = (wire_str){msg, (uint32_t)(len > 4000 ? 4000 : len)};
    return cs_send_msg(d, &m);
}

cs *node_link(node *n, peer *p)
{
    if (p->link) return p->link;
    /* the coordinator's link is the one we joined on: not an old
     * coordinator's, whose frames would reach the new one */
    if (p->is_coord && n->coord_link) return n->coord_link->peer == p ? n->coord_link : NULL;
    /* A peer the coordinator declared dead, or whose connection just failed,
     * is not dialled again for every frame: each attempt would wait out a
     * connect while the input that produced the frame (and the coordinator's
     * link, which brings the recovery) stays paused.  Its frames are dropped
     * (the stream log keeps the input for the replay). */
    if (!p->is_coord && (p->state == WIRE_MEMBER_DEAD || clock_wall_ms() < p->retry_at)) return NULL;
    if (!p->addr[0]) {
        node_log(n, NET_LOG_ERROR, "no address for node %s", p->name);
        return NULL;
    }
    cs *s = node_dial(n, p->addr);
    if (!s) return NULL;
    s->peer = p;
    p->link = s;
    node_log(n, NET_LOG_DEBUG, "connecting to %s at %s", p->name, p->addr);
    return s;
}

cs *node_dial(node *n, const char *addr)
{
    char host[128];
    int port;
    if (parse_hostport(addr, host, sizeof host, &port)) {
        node_log(n, NET_LOG_ERROR, "bad node address '%s'", addr);
        return NULL;
    }
    cs *s = cs_new(n, CS_NODE);
    if (!s) return NULL;
    xerr err;
    if (net_connect(n->net, host, port, 0, &cs_handlers, s, &s->c, &err)) {
        node_log(n, NET_LOG_ERROR, "cannot connect to %s: %s", addr, err.msg);
        n->conns = s->next;
        free(s);
        return NULL;
    }
    return s;
}

static void send_join(node *n, cs *s)
{
    wire_msg m = {.type = WIRE_JOIN, .flags = n->standby ? WIRE_F_STANDBY : 0};
    m.u.join.name = wire_str_of(n->cfg.name);
    m.u.join.domain = wire_str_of(n->cfg.domain);
    m.u.join.addr = wire_str_of(n->addr);
    m.u.join.slots = (uint32_t)n->cfg.slots;
    m.u.join.speed_milli = (uint32_t)(n->cfg.speed * 1000.0 + 0.5);
    cs_send_msg(s, &m);
}

/* The number of --join addresses and the i-th of them in out. */
static int join_addr(const node *n, int i, char *out, size_t cap)
{
    int k = 0;
    for (const char *p = n->cfg.join; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len && k++ == i && len < cap) {
            memcpy(out, p, len);
            out[len] = 0;
        }
        p = e ? e + 1 : p + len;
    }
    return k;
}

/* Dial the coordinator: the address a takeover named, else the --join
 * addresses in turn (the active one answers as the coordinator; a standby
 * or a dead one does not, and the next is tried). */
static void connect_coordinator(node *n)
{
    char host[128];
    int port, count = join_addr(n, 0, n->coord_addr, sizeof n->coord_addr);
    if (n->join_hint[0] && clock_wall_ms() >= n->join_hint_until) n->join_hint[0] = 0;
    if (n->join_hint[0]) {
        /* the one we granted a term: it takes over in a moment, and waits
         * only --dead-ms for us (the old address may hang in a connect) */
        snprintf(n->coord_addr, sizeof n->coord_addr, "%s", n->join_hint);
    } else if (count > 1) {
        join_addr(n, n->join_i % count, n->coord_addr, sizeof n->coord_addr);
        n->join_i++;
    }
    /* several addresses: a failover should not wait a whole second per address */
    int64_t retry = count > 1 ? NODE_RETRY_MS / 5 : NODE_RETRY_MS;
    if (parse_hostport(n->coord_addr, host, sizeof host, &port)) {
        n->coord_retry_at = clock_wall_ms() + retry;
        return;
    }
    cs *s = cs_new(n, CS_NODE);
    if (!s) return;
    xerr err;
    if (net_connect(n->net, host, port, 0, &cs_handlers, s, &s->c, &err)) {
        node_log(n, NET_LOG_ERROR, "cannot connect to the coordinator at %s: %s", n->coord_addr, err.msg);
        n->conns = s->next;
        free(s);
        n->coord_retry_at = clock_wall_ms() + retry;
        return;
    }
    n->coord_link = s;
}

static void send_term(cs *to, uint64_t term, int kind, const char *name, const char *addr)
{
    wire_msg m = {.type = WIRE_TERM};
    m.u.term.term = term;
    m.u.term.kind = (uint8_t)kind;
    m.u.term.name = wire_str_of(name);
    m.u.term.addr = wire_str_of(addr);
    cs_send_msg(to, &m);
}

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
        n->join_hint[0] = 0;
        peer *p = node_peer_add(n, name, NULL, n->coord_addr);
        if (p) {
            p->is_coord = 1;
            p->link = s;
            s->peer = p;
        }
        node_log(n, NET_LOG_INFO, "connected to the coordinator %s at %s; joining as %s (domain %s)%s", name,
                 n->coord_addr, n->cfg.name, n->cfg.domain, n->standby ? " as its standby" : "");
        send_join(n, s);
    } else if (n->co && s->kind == CS_NODE)
        send_term(s, n->term, WIRE_TERM_ANNOUNCE, n->cfg.name, n->addr);
    apply_link_delay(n, s);
    ovf_flush(s);
}

/* An accepted connection finished its handshake. */
static void lis_on_ready(net_conn *c, void *ud)
{
    node *n = ud;
    int role = net_peer_role(c);
    if (role == WIRE_ROLE_CLIENT && (!n->co || !coord_serving(n))) {
        wire_msg em = {.type = WIRE_ERROR};
        em.u.error.code = XE_INVAL;
        em.u.error.msg = wire_str_of(n->co ? "this coordinator is taking over or lost the cluster's majority: try again"
                                   : n->standby ? "this node is a standby coordinator: connect to the active one"
                                                : "this node is not the coordinator: connect to the coordinator's address");
        sbuf b;
        sbuf_init(&b);
        if (!wire_msg_payload(&b, &em, NULL)) net_send_ctl(c, WIRE_ERROR, 0, b.p, b.len);
        sbuf_fini(&b);
        net_log(n->net, c, NET_LOG_WARN, "a client connected to a node that is not the coordinator");
        net_close(c, "this node is not the coordinator");
        return;
    }
    cs *s = cs_new(n, role == WIRE_ROLE_CLIENT ? CS_CLIENT : CS_NODE);
    if (!s) {
        net_abort(c, NET_CLOSE_LOCAL, "out of memory");
        return;
    }
    s->c = c;
    s->ready = 1;
    net_set_handlers(c, &cs_handlers, s);
    if (s->kind == CS_NODE) {
        const char *name = net_peer_name(c);
        peer *p = node_peer_add(n, name, NULL, NULL);
        s->peer = p;
        if (p && !p->link) p->link = s;
        apply_link_delay(n, s);
    }
    if (n->co) coord_ready(n, s);
}

static const net_handlers lis_handlers = {lis_on_ready, NULL, NULL, NULL};

static void cs_on_writable(net_conn *c, void *ud)
{
    (void)c;
    ovf_flush(ud);
}

static void ingsess_free(node *n, ingsess *g, int end);

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
    if (n->co) coord_closed(n, s);
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
        n->coord_lost_at = clock_wall_ms();
        n->coord_lost_why = why;
        if (n->standby && !n->co && s->ready && !n->stopping) node_tick_in(n, 1); /* standby_tick: ask now */
        /* the standby we granted a term takes over in a moment: ask it often */
        n->coord_retry_at = clock_wall_ms() + (n->join_hint[0]                ? NODE_RETRY_MS / 20
                                               : join_addr(n, 0, NULL, 0) > 1 ? NODE_RETRY_MS / 5
                                                                              : NODE_RETRY_MS);
    }
    if (n->cur_in == s) n->cur_in = NULL;
    shadow_conn_closed(n, s);
    chan_closed(n, s);
    for (cs *o = n->conns; o; o = o->next)
        for (int i = 0; i < o->nwait; i++)
            if (o->waiters[i] == s) o->waiters[i--] = o->waiters[--o->nwait];
    for (ingsess **pp = &n->ings; *pp;) {
        ingsess *g = *pp;
        if (g->from == s && g->session && !n->stopping) {
            /* a client's session outlives its forwarder: the client resumes
             * it through the next coordinator (NODE_ORPHAN_MS at most) */
            g->from = NULL;
            g->orphan_at = clock_wall_ms();
            pp = &g->next;
        } else if (g->from == s) {
            *pp = g->next;
            g->next = NULL;
            ingsess_free(n, g, 0);
        } else
            pp = &g->next;
    }
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
    if (!r.err && (ver < 1 || ver > 3 || nn == 0 || nn > 256)) return xerr_set(err, XE_PROTO, "bad deploy plan (version %u, %u nodes)", ver, nn);
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
    if (n->co) coord_loss(n, n->cfg.name, to->lost_qid, to->lost, to->name);
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

static int hook_batch(void *ctx, uint32_t qid, int op, int task, int side, uint64_t tag, const void *p, size_t len)
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
    be64_put(h + 20, ++n->out_batches);
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

static void release_held(node *n);

/* Where the sources of q start in the logs here (its first deployment). */
static struct ftorigin *origin_of(node *n, uint32_t origin)
{
    struct ftorigin *o = n->origins;
    while (o && o->origin != origin) o = o->next;
    return o;
}

/* At a source's home: every node running a task of the redeployed query has
 * said where its tasks need the replay to start (or time ran out: a silent
 * node's tasks get everything since the query's start).  Replay from the
 * minimum. */
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
    uint64_t t0 = clock_mono_ns();
    int64_t rows = 0;
    if (d->rs_got < d->rs_expect)
        node_log(n, NET_LOG_WARN, "query %u: %d of %d nodes said where to resume within %d ms; the others get the "
                 "whole log", d->qid, d->rs_got, d->rs_expect, NODE_RESUME_MS);
    /* the first source slot homed here, for the log line */
    int k0 = 0;
    while (k0 < nsrc - 1 && from[k0] == UINT64_MAX) k0++;
    if (engine_replay(n->eng, d->qid, from, nsrc, &rows, &err))
        node_log(n, NET_LOG_ERROR, "query %u: replay for recovery failed: %s", d->qid, err.msg);
    else
        node_log(n, NET_LOG_WARN,
                 "query %u (first deployed as %u): replayed %lld logged rows from offset %lld (query start %llu) in "
                 "%.1f ms, %.1f ms after the redeployment",
                 d->qid, d->origin, (long long)rows, from[k0] == UINT64_MAX ? -1ll : (long long)from[k0],
                 (unsigned long long)origin[k0], (double)(clock_mono_ns() - t0) / 1e6,
                 (double)(clock_mono_ns() - d->rs_t0) / 1e6);
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

/* After a deployment: a first one records where the sources start here; a
 * redeployment tells each source's home where its tasks need the replay. */
static void ft_after_deploy(node *n, dep *d)
{
    xerr err;
    xerr_clear(&err);
    uint64_t tmp[ENGINE_MAX_SRC];
    if (engine_ft_resume(n->eng, d->qid, tmp, d->src_task, &d->nsrc, &err)) d->nsrc = 0;
    if (!d->ft.prev) {
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
        return;
    }
    if (d->ft.ft == ENGINE_FT_NONE) return;
    uint64_t from[ENGINE_MAX_SRC];
    int nsrc = d->nsrc, *src_task = d->src_task;
    if (engine_ft_resume(n->eng, d->qid, from, src_task, &nsrc, &err)) return;
    int me = self_index(d);
    /* the homes: collect; then tell each home */
    for (int k = 0; k < nsrc; k++) {
        if (d->nodes[d->assign[src_task[k]]] || d->rs_on) continue;
        d->rs_on = 1;
        for (int j = 0; j < ENGINE_MAX_SRC; j++) d->rs_from[j] = UINT64_MAX;
        d->rs_deadline = clock_wall_ms() + NODE_RESUME_MS;
        d->rs_t0 = clock_mono_ns();
        for (int i = 0; i < d->nnodes; i++) d->rs_expect += runs_tasks(d, i);
    }
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
    d->ft = (engine_deploy_opts){(engine_ft)dp.ft, dp.checkpoint_ms, dp.prev, dp.prev ? dp.resume_wm : INT64_MIN};
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
static int data_frame(node *n, cs *s, const wire_msg *m)
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
                                 m->u.batch.rows.p, m->u.batch.rows.n, &err);
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
    slow_down(n, t0);
    return 0;
}

static void hold(cs *s, const wire_frame *f)
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
        if (wire_msg_get(&f, &m, NULL) == 0 && data_frame(n, s, &m) == 1) continue;
        s->held = NULL;
        free(q);
        cs_update_pause(s);
    }
}

static void held_timeouts(node *n)
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

/* ------------------------------------------------------------------ ingest at the home node */

static void ing_reject(void *ctx, int64_t line, const char *msg)
{
    ingsess *g = ctx;
    g->rejected++;
    if (g->shown >= FMT_KEEP_REJECTS || g->quiet) return;
    g->shown++;
    sbuf b;
    sbuf_init(&b);
    wire_wr w;
    wire_wr_init(&w, &b);
    wire_put_i64(&w, line);
    wire_put_blob(&w, msg, strlen(msg));
    if (!wire_wr_end(&w, NULL)) cs_result(g->from, g->req, 0, RES_REJECT, 0, b.p, b.len);
    sbuf_fini(&b);
}

static void ing_notice(void *ctx, int64_t line, const char *msg)
{
    ingsess *g = ctx;
    (void)line;
    if (!g->quiet && g->from) cs_result(g->from, g->req, 0, RES_NOTICE, 0, msg, strlen(msg));
}

/* The chunks of g's session fed so far (or, when its stream's log has a
 * copy, those the copy holds), to whoever forwards it (the coordinator tells
 * the client once the home and the shadow both have them). */
static void ing_ack(node *n, ingsess *g)
{
    if (!g->session || !g->from || g->from->kind != CS_NODE) return; /* here, the coordinator counts it */
    unsigned char b[8];
    be64_put(b, g->stream && shadow_guarded(n, g->stream) ? g->safe : g->seq);
    cs_result(g->from, g->req, 0, RES_ACKED, 0, b, sizeof b);
}

static void ingsess_free(node *n, ingsess *g, int end)
{
    if (g->in) {
        xerr err;
        exec_ingest_stats st;
        if (exec_ingest_close(g->in, end, &st, &err)) node_log(n, NET_LOG_WARN, "closing an ingest: %s", err.msg);
    }
    free(g->stream);
    free(g);
}

void node_ingest_acks(node *n, const char *stream)
{
    int guarded = shadow_guarded(n, stream);
    for (ingsess *g = n->ings; g; g = g->next) {
        if (!g->session || !g->from || !g->stream || strcmp(g->stream, stream)) continue;
        uint64_t seq = guarded ? g->safe : g->seq;
        if (g->from->kind == CS_CLIENT) {
            if (n->co) coord_ingest_safe(n, g->from, g->req, seq);
            continue;
        }
        unsigned char b[8];
        be64_put(b, seq);
        cs_result(g->from, g->req, 0, RES_ACKED, 0, b, sizeof b);
    }
}

uint64_t node_ingest_safe(node *n, cs *s, uint64_t req, uint64_t fed)
{
    for (ingsess *g = n->ings; g; g = g->next)
        if (g->from == s && g->req == req) return g->stream && shadow_guarded(n, g->stream) ? g->safe : fed;
    return fed;
}

void node_send_done(cs *to, uint64_t req, const exec_ingest_stats *st)
{
    exec_ingest_stats z = {0};
    if (!st) st = &z;
    unsigned char b[40];
    be64_put(b, (uint64_t)st->lines);
    be64_put(b + 8, (uint64_t)st->rows);
    be64_put(b + 16, (uint64_t)st->rejected);
    be64_put(b + 24, (uint64_t)st->late);
    be64_put(b + 32, (uint64_t)(st->late_partial != 0));
    cs_result(to, req, WIRE_F_LAST, RES_DONE, 0, b, sizeof b);
}

int node_ingest_loud(node *n, cs *from, uint64_t req)
{
    for (ingsess *g = n->ings; g; g = g->next)
        if (g->from == from && g->req == req) {
            g->quiet = 0;
            return 1;
        }
    return 0;
}

void node_tick(node *n, const char *stream, size_t len)
{
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)len, stream);
    xerr err;
    if (engine_stream_tick(n->eng, name, &err)) node_log(n, NET_LOG_WARN, "tick of %s: %s", name, err.msg);
}

void node_ingest(node *n, cs *from, const wire_msg *m, int quiet)
{
    const __typeof__(m->u.ingest) *in = &m->u.ingest;
    ingsess **pp = &n->ings;
    /* a client's session goes on where it was, whoever forwards it now (a
     * new coordinator after a failover): the same decoder, chunks it fed
     * already skipped */
    while (*pp && !(in->session ? (*pp)->session == in->session : (*pp)->from == from && (*pp)->req == in->req_id))
        pp = &(*pp)->next;
    ingsess *g = *pp;
    xerr err;
    xerr_clear(&err);
    int rc = 0;
    if (g && (g->from != from || g->req != in->req_id)) {
        node_log(n, NET_LOG_INFO, "ingest session %016llx resumes at chunk %llu (chunks up to %llu are in)",
                 (unsigned long long)in->session, (unsigned long long)in->seq, (unsigned long long)g->seq);
        g->from = from;
        g->req = in->req_id;
        g->quiet = quiet;
        g->orphan_at = 0;
    }
    if (!g) {
        if (!(g = calloc(1, sizeof *g))) {
            cs_error(from, in->req_id, XE_NOMEM, "out of memory");
            return;
        }
        g->from = from;
        g->req = in->req_id;
        g->quiet = quiet;
        g->session = in->session;
        g->next = n->ings;
        n->ings = g;
        pp = &n->ings;
        char stream[512];
        snprintf(stream, sizeof stream, "%.*s", (int)in->stream.n, in->stream.p);
        exec_ingest_opts o;
        memset(&o, 0, sizeof o);
        o.format = in->format == FMT_JSON ? FMT_JSON : FMT_CSV;
        o.format_set = in->format != WIRE_FMT_STREAM;
        o.delim = (char)in->delim;
        char null_s[1024];
        snprintf(null_s, sizeof null_s, "%.*s", (int)in->null_string.n, in->null_string.p);
        o.null_string = in->has_null ? null_s : NULL; /* the ingest copies it */
        o.header = in->header <= FMT_HEADER_NO ? (fmt_header)in->header : FMT_HEADER_AUTO;
        o.on_reject = ing_reject;
        o.on_notice = ing_notice;
        o.ctx = g;
        g->stream = strdup(stream);
        /* "s#0" (partition 0 alone: its end ends no other) is stream s */
        size_t sl = g->stream ? strlen(g->stream) : 0;
        if (sl > 2 && !strcmp(g->stream + sl - 2, "#0")) g->stream[sl - 2] = 0;
        if ((rc = exec_ingest_open(n->eng, stream, &o, &g->in, &err))) {
            g->failed = 1;
            if (!g->quiet) cs_error(from, in->req_id, rc, err.msg);
        } else if (in->session && (rc = shadow_session(n, g->stream ? g->stream : stream, in->session, g->in, &g->seq, &err)) != 0) {
            /* the home we copied was lost: its session goes on here */
            if (rc < 0) {
                g->failed = 1;
                if (!g->quiet) cs_error(from, in->req_id, rc, err.msg);
            } else {
                g->safe = g->seq;
                node_log(n, NET_LOG_WARN, "ingest session %016llx into %s resumes here from the copied log, "
                         "after chunk %llu", (unsigned long long)in->session, stream, (unsigned long long)g->seq);
            }
        } else
            node_log(n, NET_LOG_INFO, "ingest into %s started", stream);
    }
    int dup = in->session && in->seq && in->seq <= g->seq; /* resent after a failover: in already */
    if (in->session && in->seq > g->seq + 1) {
        /* a chunk sent before the client heard that the stream moved here
         * (RES_RESEND): it comes again, in order, after the ones before it */
        return;
    }
    if (!g->failed && in->data.n && !dup) {
        uint64_t t0 = clock_mono_ns();
        cs *saved = n->cur_in;
        n->cur_in = from;
        rc = exec_ingest_feed(g->in, in->data.p, in->data.n, &err);
        n->cur_in = saved;
        slow_down(n, t0);
        if (rc) {
            g->failed = 1;
            if (!g->quiet) cs_error(from, in->req_id, rc, err.msg);
            exec_ingest_close(g->in, 0, NULL, &err);
            g->in = NULL;
        }
    }
    if (in->session && in->seq > g->seq) g->seq = in->seq;
    if (!(m->flags & WIRE_F_LAST)) {
        if (!g->failed) ing_ack(n, g);
        if (g->stream && !dup) shadow_ship_soon(n, g->stream);
        return;
    }
    /* the last chunk: unlink, close, answer */
    for (pp = &n->ings; *pp && *pp != g; pp = &(*pp)->next) {}
    if (*pp) *pp = g->next;
    if (!g->failed) {
        exec_ingest_stats st;
        memset(&st, 0, sizeof st);
        cs *saved = n->cur_in;
        n->cur_in = from;
        rc = exec_ingest_close(g->in, in->end, &st, &err);
        n->cur_in = saved;
        g->in = NULL;
        if (rc) {
            if (!g->quiet) cs_error(from, in->req_id, rc, err.msg);
        } else {
            if (st.rejected < g->rejected) st.rejected = g->rejected;
            node_log(n, NET_LOG_INFO, "ingest of %.*s done: %lld rows, %lld rejected, %lld late%s", (int)in->stream.n,
                     in->stream.p, (long long)st.rows, (long long)st.rejected, (long long)st.late,
                     in->end ? ", stream ended" : "");
            if (!g->quiet && g->stream && shadow_guarded(n, g->stream))
                shadow_done_later(n, g->stream, from, in->req_id, &st);
            else if (!g->quiet)
                node_send_done(from, in->req_id, &st);
            if (g->stream) shadow_ship_soon(n, g->stream);
        }
    }
    ingsess_free(n, g, 0);
}

/* ------------------------------------------------------------------ statements from the coordinator */

static int fwd_begin(void *ctx, const fmt_schema *cols, int stream)
{
    node_fwd *f = ctx;
    sbuf_reset(&f->b);
    if (res_begin_put(&f->b, cols, stream)) return XE_NOMEM;
    return cs_result(f->to, f->req, 0, RES_BEGIN, 0, f->b.p + 1, f->b.len - 1);
}

static int fwd_rows(void *ctx, const batch *b)
{
    node_fwd *f = ctx;
    sbuf_reset(&f->b);
    if (batch_encode(b, &f->b)) return XE_NOMEM;
    return cs_result(f->to, f->req, 0, RES_ROWS, (uint32_t)b->nrows, f->b.p, f->b.len);
}

static int fwd_end(void *ctx)
{
    node_fwd *f = ctx;
    return cs_result(f->to, f->req, 0, RES_END, 0, NULL, 0);
}

static void fwd_notice(void *ctx, const char *msg)
{
    node_fwd *f = ctx;
    if (f->to) cs_result(f->to, f->req, 0, RES_NOTICE, 0, msg, strlen(msg));
}

exec_out node_fwd_out(node_fwd *f)
{
    return (exec_out){f, fwd_begin, fwd_rows, fwd_end, fwd_notice};
}

static void has_name(void *ctx, const char *name)
{
    const char **want = ctx;
    if (*want && !strcasecmp(*want, name)) *want = NULL;
}

void node_exec_from_coord(node *n, cs *from, const wire_msg *m)
{
    uint64_t req = m->u.query.req_id;
    parse_result *r = NULL;
    parse_sql(m->u.query.sql.p, m->u.query.sql.n, &r);
    if (!r || r->nerrors) {
        cs_error(from, req, XE_SYNTAX, r ? r->errors[0].msg : "out of memory");
        parse_result_free(r);
        return;
    }
    /* tables too: the coordinator gathers SHOW STREAMS from the homes */
    node_fwd f = {from, req, {0}};
    sbuf_init(&f.b);
    exec_out out = node_fwd_out(&f);
    xerr err;
    xerr_clear(&err);
    int rc = 0;
    const char *guarded = NULL; /* an INSERT into a stream whose log has a copy: answered once the copy has it */
    for (int i = 0; i < r->nstmts && !rc; i++) {
        ast_stmt *st = r->stmts[i];
        if (st->kind == ST_CREATE_STREAM) {
            /* the catalog replayed after a restart: a stream kept here is skipped */
            const char *want = st->name;
            engine_names(n->eng, 0, has_name, &want);
            if (!want) continue;
        }
        if (st->kind == ST_DROP_STREAM) {
            const char *want = st->name;
            engine_names(n->eng, 0, has_name, &want);
            if (want) continue;
        }
        cs *saved = n->cur_in;
        n->cur_in = from;
        rc = engine_exec(n->eng, st, &out, &err);
        n->cur_in = saved;
        if (!rc && st->kind == ST_INSERT && shadow_guarded(n, st->name)) guarded = st->name;
    }
    if (rc) cs_error(from, req, rc, err.msg[0] ? err.msg : xerr_name(rc));
    else if (guarded) {
        shadow_done_later(n, guarded, from, req, NULL);
        shadow_ship_soon(n, guarded);
    } else
        node_send_done(from, req, NULL);
    parse_result_free(r);
    sbuf_fini(&f.b);
}

/* ------------------------------------------------------------------ frames */

static void node_membership(node *n, const wire_msg *m)
{
    wire_rd r;
    wire_rd_init(&r, m->u.membership.entries.p, m->u.membership.entries.n);
    n->base_alive = 0;
    for (uint32_t i = 0; i < m->u.membership.count; i++) {
        wire_member mm;
        if (wire_get_member(&r, &mm)) break;
        if (mm.state == WIRE_MEMBER_UP || mm.state == WIRE_MEMBER_SUSPECT) n->base_alive++;
        char name[WIRE_NAME_MAX + 1], dom[WIRE_NAME_MAX + 1], addr[128];
        snprintf(name, sizeof name, "%.*s", (int)mm.name.n, mm.name.p);
        if (!strcmp(name, n->cfg.name)) continue;
        snprintf(dom, sizeof dom, "%.*s", (int)mm.domain.n, mm.domain.p);
        snprintf(addr, sizeof addr, "%.*s", (int)mm.addr.n, mm.addr.p);
        peer *p = node_peer_add(n, name, dom, addr);
        if (!p) continue;
        p->state = mm.state;
        p->slots = mm.slots;
        p->speed_milli = mm.speed_milli;
        if (p->link) apply_link_delay(n, p->link);
    }
}

/* ------------------------------------------------------------------ terms, the standby */

typedef struct keys {
    char **v;
    int n;
} keys;

static int collect_key(void *ctx, const char *key, const void *v, size_t len)
{
    (void)v;
    (void)len;
    keys *k = ctx;
    char **x = realloc(k->v, (size_t)(k->n + 1) * sizeof *x);
    if (!x) return XE_NOMEM;
    k->v = x;
    if (!(k->v[k->n] = strdup(key))) return XE_NOMEM;
    k->n++;
    return 0;
}

/* A standby's copy of the active coordinator's catalog. */
static void catalog_frame(node *n, const wire_msg *m)
{
    char key[512];
    snprintf(key, sizeof key, "%.*s", (int)m->u.catalog.key.n, m->u.catalog.key.p);
    xerr err;
    xerr_clear(&err);
    int rc = 0;
    switch (m->u.catalog.op) {
    case WIRE_CAT_BEGIN: {
        /* a whole dump follows: what we had goes */
        keys k = {NULL, 0};
        n->sb_synced = 0;
        rc = engine_host_scan(n->eng, "", collect_key, &k, &err);
        for (int i = 0; i < k.n; i++) {
            if (!rc) rc = engine_host_del(n->eng, k.v[i], &err);
            free(k.v[i]);
        }
        free(k.v);
        break;
    }
    case WIRE_CAT_PUT: rc = engine_host_put(n->eng, key, m->u.catalog.value.p, m->u.catalog.value.n, &err); break;
    case WIRE_CAT_DEL: rc = engine_host_del(n->eng, key, &err); break;
    case WIRE_CAT_END:
        if (!n->sb_synced) node_log(n, NET_LOG_INFO, "standby: holding the catalog of coordinator term %llu",
                                    (unsigned long long)m->u.catalog.term);
        n->sb_synced = 1;
        if (m->u.catalog.term > n->term) n->term = m->u.catalog.term;
        break;
    }
    if (rc) {
        node_log(n, NET_LOG_ERROR, "standby: cannot keep the catalog (%s): %s; it cannot take over", key, err.msg);
        n->sb_synced = 0;
    }
}

/* Take over as the coordinator of a new term: the active is lost and a
 * majority of the members granted it. */
static void standby_takes_over(node *n)
{
    uint64_t term = n->sb_ask;
    n->sb_ask = 0;
    xerr err;
    xerr_clear(&err);
    node_log(n, NET_LOG_WARN, "standby: taking over as the coordinator of term %llu (%lld ms after the active was lost)",
             (unsigned long long)term, (long long)(clock_wall_ms() - (n->coord_lost_at ? n->coord_lost_at : n->sb_lost_at)));
    if (n->coord_link) net_close(n->coord_link->c, "taking over");
    n->coord_link = NULL;
    if (coord_takeover(n, term, &err)) {
        node_log(n, NET_LOG_ERROR, "standby: the takeover failed: %s; staying a standby", err.msg);
        return;
    }
    n->standby = 0;
}

/* A standby without its active: ask every member for a new term; take over
 * once a majority (counting itself) granted it. */
static void standby_tick(node *n)
{
    int64_t now = clock_wall_ms();
    if (n->coord_link && n->coord_link->ready) {
        n->sb_lost_at = 0;
        n->sb_ask = 0;
        return;
    }
    if (!n->sb_lost_at) {
        /* a closed connection is a crash or a goodbye: ask at once; a
         * silent one may be a late heartbeat: two more heartbeats first */
        int closed = n->coord_lost_at && now - n->coord_lost_at < 1000 && n->coord_lost_why != NET_CLOSE_DEAD;
        n->sb_lost_at = closed ? n->coord_lost_at - 2 * (int64_t)net_ctx_heartbeat_ms(n->net) : now;
        if (!closed) return;
    }
    if (!n->sb_synced || now - n->sb_lost_at < 2 * (int64_t)net_ctx_heartbeat_ms(n->net)) return;
    int granted = 1;
    for (int i = 0; i < n->npeers; i++)
        if (n->sb_ask && n->peers[i]->granted == n->sb_ask) granted++;
    if (n->sb_ask && 2 * granted > n->base_alive) {
        standby_takes_over(n);
        return;
    }
    if (n->sb_ask && now - n->sb_ask_at < 100) return;
    if (!n->sb_ask) {
        n->sb_ask = n->term + 1;
        node_log(n, NET_LOG_WARN, "standby: the active coordinator is lost; asking the members for term %llu",
                 (unsigned long long)n->sb_ask);
    }
    n->sb_ask_at = now;
    for (int i = 0; i < n->npeers; i++) {
        peer *p = n->peers[i];
        if (p->is_coord || !p->slots || p->granted == n->sb_ask) continue;
        cs *l = node_link(n, p);
        if (l) send_term(l, n->sb_ask, WIRE_TERM_ASK, n->cfg.name, n->addr);
    }
}

/* A newer term is active elsewhere (we heard it from ADDR: the coordinator
 * that announced it, or a member that refused us): stop acting, and run
 * again as a standby of the active coordinator (node_run returns
 * NODE_RUN_REJOIN), so that the cluster has a standby again. */
static void step_down(node *n, uint64_t t, const char *addr)
{
    if (n->rejoin_to[0]) return;
    coord_deposed(n, t);
    n->term = t;
    const char *sb = coord_standby_addr(n);
    snprintf(n->rejoin_to, sizeof n->rejoin_to, "%s%s%s", addr, sb[0] && strcmp(sb, addr) ? "," : "",
             sb[0] && strcmp(sb, addr) ? sb : "");
    if (!n->rejoin_to[0] || !strcmp(n->rejoin_to, n->addr)) {
        n->rejoin_to[0] = 0;
        return; /* nowhere to go: deposed, it stays silent */
    }
    node_log(n, NET_LOG_WARN, "stepping down: joining %s as a standby coordinator", n->rejoin_to);
    uv_stop(n->loop);
}

static void term_frame(node *n, cs *s, const wire_msg *m)
{
    uint64_t t = m->u.term.term;
    char name[WIRE_NAME_MAX + 1], addr[128];
    snprintf(name, sizeof name, "%.*s", (int)m->u.term.name.n, m->u.term.name.p);
    snprintf(addr, sizeof addr, "%.*s", (int)m->u.term.addr.n, m->u.term.addr.p);
    switch (m->u.term.kind) {
    case WIRE_TERM_ANNOUNCE:
        if (net_peer_role(s->c) != WIRE_ROLE_COORDINATOR) return;
        if (t < n->term) {
            /* fencing: a coordinator of an old term acts no more */
            node_log(n, NET_LOG_WARN, "refusing coordinator %s of term %llu: term %llu is active", name,
                     (unsigned long long)t, (unsigned long long)n->term);
            send_term(s, n->term, WIRE_TERM_REFUSE, n->cfg.name, n->addr);
            net_close(s->c, "an old coordinator term");
            return;
        }
        if (t > n->term && n->co) {
            step_down(n, t, addr);
            return;
        }
        if (t > n->term && n->term)
            node_log(n, NET_LOG_INFO, "coordinator %s: term %llu", name, (unsigned long long)t);
        n->term = t;
        s->term = t;
        return;
    case WIRE_TERM_ASK: {
        int hears = n->coord_link && n->coord_link->ready && s != n->coord_link;
        /* the same standby asking again for the term we granted it (our
         * GRANT is late): grant it again, or it would ask for a newer one */
        int again = t == n->term && !strcmp(n->granted_to, name);
        if (!again && (n->co || hears || t <= n->term)) {
            node_log(n, NET_LOG_INFO, "refusing term %llu to %s: %s", (unsigned long long)t, name,
                     n->co ? "this is the coordinator" : hears ? "the coordinator is alive here" : "an old term");
            /* our own term: a standby that asked for a newer one keeps
             * asking for it (a refusal names a newer term only if we know one) */
            send_term(s, n->term, WIRE_TERM_REFUSE, n->cfg.name, n->addr);
            return;
        }
        node_log(n, NET_LOG_WARN, "the coordinator is lost here too: granting term %llu to %s at %s",
                 (unsigned long long)t, name, addr);
        n->term = t;
        n->sb_ask = 0;
        snprintf(n->granted_to, sizeof n->granted_to, "%s", name);
        snprintf(n->join_hint, sizeof n->join_hint, "%s", addr);
        n->join_hint_until = clock_wall_ms() + 4 * (int64_t)net_ctx_dead_ms(n->net);
        for (int i = 0; i < n->npeers; i++)
            if (n->peers[i]->is_coord) {
                n->peers[i]->is_coord = 0;
                n->peers[i]->state = WIRE_MEMBER_DEAD;
            }
        if (n->coord_link) net_close(n->coord_link->c, "a new coordinator term");
        n->coord_link = NULL;
        n->coord_retry_at = 0;
        send_term(s, t, WIRE_TERM_GRANT, n->cfg.name, n->addr);
        return;
    }
    case WIRE_TERM_GRANT:
        if (s->peer && t == n->sb_ask) {
            s->peer->granted = t;
            if (n->standby && !n->co) standby_tick(n); /* perhaps a majority now */
        }
        return;
    case WIRE_TERM_REFUSE:
        if (t > n->term && n->co) step_down(n, t, addr);
        else if (t > n->term) {
            n->term = t;
            n->sb_ask = 0;
        }
        return;
    }
}

static void cs_on_frame(net_conn *c, const wire_frame *f, void *ud)
{
    cs *s = ud;
    node *n = s->n;
    wire_msg m;
    xerr err;
    if (wire_msg_get(f, &m, &err)) {
        net_abort(c, NET_CLOSE_PROTO, "%s", err.msg);
        return;
    }
    /* frames that only the coordinator sends: from the active term only */
    int from_coord = s->kind == CS_NODE && net_peer_role(c) == WIRE_ROLE_COORDINATOR && s->term && s->term >= n->term;
    switch (m.type) {
    case WIRE_TERM:
        if (s->kind != CS_NODE) break;
        term_frame(n, s, &m);
        return;
    case WIRE_CATALOG:
        if (!from_coord || !n->standby) break;
        catalog_frame(n, &m);
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
        if (data_frame(n, s, &m) == 1) hold(s, f);
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

/* ------------------------------------------------------------------ timers, signals, the run */

static void on_tick(uv_timer_t *t)
{
    node *n = t->data;
    static int ticks;
    if (!n->co && !n->coord_link && clock_wall_ms() >= n->coord_retry_at) connect_coordinator(n);
    if (n->standby && !n->co) standby_tick(n);
    held_timeouts(n);
    /* client ingest sessions whose forwarder left and no other took them on */
    for (ingsess **pp = &n->ings; *pp;) {
        ingsess *g = *pp;
        if (!g->from && g->orphan_at && clock_wall_ms() - g->orphan_at > NODE_ORPHAN_MS) {
            node_log(n, NET_LOG_WARN, "ingest session %016llx: no coordinator resumed it in %d s; closed",
                     (unsigned long long)g->session, NODE_ORPHAN_MS / 1000);
            *pp = g->next;
            ingsess_free(n, g, 0);
        } else
            pp = &g->next;
    }
    for (dep *d = n->deps; d; d = d->next)
        if (d->rs_on && clock_wall_ms() >= d->rs_deadline) resume_replay(n, d);
    if (n->co) coord_tick(n);
    shadow_tick(n);
    chan_tick(n);
    meas_report(n);
    if (++ticks % 10 == 0) {
        xerr err;
        if (engine_commit(n->eng, &err)) node_log(n, NET_LOG_ERROR, "commit: %s", err.msg);
    }
}

void node_tick_in(node *n, unsigned ms)
{
    uv_timer_start(&n->tick, on_tick, ms, NODE_TICK_MS);
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
    memset(n, 0, sizeof *n);
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
    if (!n->cfg.listen || parse_hostport(n->cfg.listen, n->listen_host, sizeof n->listen_host, &n->listen_port))
        return xerr_set(err, XE_INVAL, "--listen needs HOST:PORT, not '%s'", n->cfg.listen ? n->cfg.listen : "");
    if (!n->cfg.coordinator && !n->cfg.join) return xerr_set(err, XE_INVAL, "a node that is not the coordinator needs --join HOST:PORT");
    n->standby = n->cfg.coordinator && n->cfg.join; /* a standby coordinator */
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
    nc.role = n->cfg.coordinator && !n->standby ? WIRE_ROLE_COORDINATOR : WIRE_ROLE_NODE;
    nc.secret = &n->secret;
    nc.max_frame = 4u * 1024 * 1024;
    nc.heartbeat_ms = n->cfg.heartbeat_ms;
    nc.dead_ms = n->cfg.dead_ms;
    nc.log = node_net_log;
    nc.log_ud = n;
    nc.log_level = n->cfg.verbose ? NET_LOG_DEBUG : NET_LOG_INFO;
    if ((rc = net_ctx_new(n->loop, &nc, &n->net, err))) goto out_engine;
    if ((rc = net_listen(n->net, n->listen_host, n->listen_port, &lis_handlers, n, &n->lis, err))) goto out_net;
    n->listen_port = net_listener_port(n->lis);
    snprintf(n->addr, sizeof n->addr, "%.63s:%d", n->listen_host, n->listen_port);
    if (n->cfg.coordinator && !n->standby && (rc = coord_start(n, err))) goto out_net;

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
             n->standby ? ", standby coordinator" : n->cfg.coordinator ? ", coordinator" : "");
    if (!n->co) connect_coordinator(n);

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
    while (n->ings) {
        ingsess *g = n->ings;
        n->ings = g->next;
        ingsess_free(n, g, 0);
    }
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
    shadow_free(n);
    meas_store_free(n->meas);
    engine_close(n->eng);
    for (int i = 0; i < n->npeers; i++) {
        chan_free(n->peers[i]);
        free(n->peers[i]);
    }
    free(n->peers);
    auth_secret_fini(&n->secret);
    if (n->rejoin_to[0] && rejoin) {
        node_log(n, NET_LOG_INFO, "stopped as the coordinator; starting again as a standby");
        snprintf(rejoin->listen, sizeof rejoin->listen, "%.127s", n->addr);
        snprintf(rejoin->join, sizeof rejoin->join, "%.511s", n->rejoin_to);
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
