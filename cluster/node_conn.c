/*
 * node_conn.c: a node's connections.  The peers it knows (and the
 * coordinator's MEMBERSHIP that updates them), one cs per authenticated
 * connection, sending with the overflow queue and the pausing of the inputs
 * that fill it (node.h, "Backpressure"), RESULT and ERROR frames, dialling a
 * peer (node_link, node_dial) and the coordinator (the --join addresses, or
 * the one a takeover named), the cross-domain link delay of tests.  The
 * connection callbacks (ready, accepted, closed, and the frames that arrive,
 * cs_on_frame) are node.c's, above every part they tell: a dialled
 * connection gets them from n->cs_handlers; only the writable one is here.
 *
 * Runs on the engine's loop, like all of the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node_int.h"


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
void apply_link_delay(node *n, cs *s)
{
    if (!n->cfg.link_delay_ms || !s->ready || !s->peer || !s->peer->domain[0]) return;
    net_set_send_delay_ms(s->c, strcmp(s->peer->domain, n->cfg.domain) ? n->cfg.link_delay_ms : 0);
}

void node_membership(node *n, const wire_msg *m)
{
    wire_rd r;
    wire_rd_init(&r, m->u.membership.entries.p, m->u.membership.entries.n);
    n->sb->base_alive = 0;
    for (uint32_t i = 0; i < m->u.membership.count; i++) {
        wire_member mm;
        if (wire_get_member(&r, &mm)) break;
        if (mm.state == WIRE_MEMBER_UP || mm.state == WIRE_MEMBER_SUSPECT) n->sb->base_alive++;
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

/* ------------------------------------------------------------------ connections */

cs *cs_new(node *n, int kind)
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
void cs_update_pause(cs *s)
{
    if (!s->c || s->closing) return;
    if (s->blocked > 0 || s->held) net_pause(s->c);
    else net_resume(s->c);
}

#define NODE_STALL_MS 500

static void wait_on(cs *in, cs *d)
{
    if (d->no_wait) return;
    for (int i = 0; i < d->nwait; i++)
        if (d->waiters[i] == in) return;
    if (d->nwait == d->capwait) {
        int cap = d->capwait ? 2 * d->capwait : 8;
        cs **v = realloc(d->waiters, (size_t)cap * sizeof *v);
        if (!v) return; /* cannot track it: the input keeps flowing */
        d->waiters = v;
        d->capwait = cap;
    }
    if (!d->nwait) d->stuck_since = clock_wall_ms();
    d->waiters[d->nwait++] = in;
    in->blocked++;
    cs_update_pause(in);
}

void release_waiters(cs *d)
{
    int nw = d->nwait;
    d->nwait = 0;
    for (int i = 0; i < nw; i++) {
        cs *w = d->waiters[i];
        if (w->blocked > 0) w->blocked--;
        cs_update_pause(w);
    }
}

/* Nodes whose tasks send to each other can stop each other for good: each
 * pauses the input that made frames for the next, whose reading alone would
 * drain them, and the next does the same (two nodes, each paused on its own
 * overflow to the other: the word count's stall in session 10; or a ring of
 * three, in session 11's).  Not one byte moves.  An overflow that has not
 * moved for NODE_STALL_MS therefore lets its inputs read again, and pauses
 * none until it has drained: it may grow past the bound meanwhile
 * (docs/operations.md, "Memory").  A slow reader still moves it, and keeps
 * its producers paused. */
void conn_tick(node *n)
{
    int64_t now = clock_wall_ms();
    for (cs *d = n->conns; d; d = d->next) {
        if (!d->nwait || now - d->stuck_since < NODE_STALL_MS) continue;
        node_log(n, NET_LOG_INFO, "the overflow to %s (%zu bytes) has not moved for %lld ms: the %d inputs that wait on "
                 "it read again", d->peer ? d->peer->name : "a client", d->ovf_bytes, (long long)(now - d->stuck_since),
                 d->nwait);
        d->no_wait = 1;
        release_waiters(d);
    }
}

void ovf_drop(cs *d)
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
    if (d->n->on_drained) d->n->on_drained(d->n);
}

/* Move overflow into the connection's send queue while it takes it. */
void ovf_flush(cs *d)
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
        d->stuck_since = clock_wall_ms(); /* it moves */
        free(q);
    }
    if (d->src_paused) {
        d->src_paused = 0;
        engine_pause_sources(d->n->eng, 0);
    }
    d->no_wait = 0;
    release_waiters(d);
    if (d->n->on_drained) d->n->on_drained(d->n);
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

/* The end of an ingest: RES_DONE with st's counts (NULL: none). */
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
    if (base_parse_hostport(addr, host, sizeof host, &port)) {
        node_log(n, NET_LOG_ERROR, "bad node address '%s'", addr);
        return NULL;
    }
    cs *s = cs_new(n, CS_NODE);
    if (!s) return NULL;
    xerr err;
    if (net_connect(n->net, host, port, 0, n->cs_handlers, s, &s->c, &err)) {
        node_log(n, NET_LOG_ERROR, "cannot connect to %s: %s", addr, err.msg);
        n->conns = s->next;
        free(s);
        return NULL;
    }
    return s;
}

void send_join(node *n, cs *s)
{
    wire_msg m = {.type = WIRE_JOIN, .flags = n->sb->standby ? WIRE_F_STANDBY : 0};
    m.u.join.name = wire_str_of(n->cfg.name);
    m.u.join.domain = wire_str_of(n->cfg.domain);
    m.u.join.addr = wire_str_of(n->addr);
    m.u.join.slots = (uint32_t)n->cfg.slots;
    m.u.join.speed_milli = (uint32_t)(n->cfg.speed * 1000.0 + 0.5);
    cs_send_msg(s, &m);
}

/* The number of --join addresses and the i-th of them in out. */
int join_addr(const node *n, int i, char *out, size_t cap)
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
void node_connect_coordinator(node *n)
{
    char host[128];
    int port, count = join_addr(n, 0, n->coord_addr, sizeof n->coord_addr);
    if (n->sb->join_hint[0] && clock_wall_ms() >= n->sb->join_hint_until) n->sb->join_hint[0] = 0;
    if (n->sb->join_hint[0]) {
        /* the one we granted a term: it takes over in a moment, and waits
         * only --dead-ms for us (the old address may hang in a connect) */
        snprintf(n->coord_addr, sizeof n->coord_addr, "%s", n->sb->join_hint);
    } else if (count > 1) {
        join_addr(n, n->join_i % count, n->coord_addr, sizeof n->coord_addr);
        n->join_i++;
    }
    /* several addresses: a failover should not wait a whole second per address */
    int64_t retry = count > 1 ? NODE_RETRY_MS / 5 : NODE_RETRY_MS;
    if (base_parse_hostport(n->coord_addr, host, sizeof host, &port)) {
        n->coord_retry_at = clock_wall_ms() + retry;
        return;
    }
    cs *s = cs_new(n, CS_NODE);
    if (!s) return;
    xerr err;
    if (net_connect(n->net, host, port, 0, n->cs_handlers, s, &s->c, &err)) {
        node_log(n, NET_LOG_ERROR, "cannot connect to the coordinator at %s: %s", n->coord_addr, err.msg);
        n->conns = s->next;
        free(s);
        n->coord_retry_at = clock_wall_ms() + retry;
        return;
    }
    n->coord_link = s;
}

void cs_on_writable(net_conn *c, void *ud)
{
    (void)c;
    ovf_flush(ud);
}
