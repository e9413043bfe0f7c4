/*
 * net.c: listeners and connections on libuv with the authenticated handshake,
 * heartbeats and backpressure of net.h.  Runs on one uv loop, no locks.
 *
 * Each connection owns four handles (the TCP stream and three timers: `clock`
 * for the handshake deadline, then heartbeats, then the flush deadline;
 * `delay` for the artificial send delay; `kick` to deliver buffered input
 * after net_resume).  All four are closed together by conn_close_now; the
 * last close callback calls on_close and frees the connection.  That is the
 * only place a connection is freed.  A write request and its frame bytes are
 * one allocation, freed by the write callback (libuv calls it with
 * UV_ECANCELED for writes still pending when the stream closes, before the
 * stream's close callback).
 *
 * Failure detection: a peer is silent from the last byte we read from it,
 * unless bytes wait unread in its socket (FIONREAD): a heartbeat timer that
 * fires right after our own loop was blocked (or the process was stopped:
 * the first poll after SIGCONT is interrupted and reads nothing) must not
 * declare dead a peer whose heartbeats are sitting there.  The context owns
 * a check handle, which notes when the last poll returned (`looked_at`),
 * and a prepare handle, which measures from there how long the loop went
 * without polling and warns.  Both are unreferenced (they never keep the
 * loop alive) and are closed by net_ctx_free like the connections.
 *
 * Reading: invariant "reading => the read buffer is empty".  A read fills
 * rbuf, the decoder hands frames out (without copying when a frame lies
 * whole in rbuf), and if the owner pauses mid-buffer the rest waits in rbuf
 * until net_resume, which drains it from the `kick` timer (never
 * re-entrantly) before reading the socket again.
 */
#include "cluster/net.h"

#include <arpa/inet.h>
#include <sys/ioctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum conn_state {
    ST_CONNECTING, /* outgoing TCP connect in progress */
    ST_HANDSHAKE,  /* HELLO / AUTH exchange */
    ST_READY,      /* authenticated */
    ST_FLUSHING,   /* closing after the send queue drains */
    ST_CLOSING,    /* handles closing; waiting for the close callbacks */
};

/* Handshake progress bits. */
enum {
    HS_GOT_HELLO = 1,
    HS_GOT_CHALLENGE = 2,
    HS_SENT_RESPONSE = 4, /* initiator */
    HS_PEER_OK = 8,       /* initiator: acceptor's proof verified */
};

typedef struct wreq {
    uv_write_t req;
    struct wreq *next; /* in the delay queue */
    net_conn *c;
    uint64_t due;      /* uv_now() at which a delayed frame may be written */
    size_t len;
    unsigned char data[];
} wreq;

#define NET_HB_RING 8 /* heartbeats whose echo can still be timed */
#define NET_RTT_WIN 32 /* round trips net_rtt_min_us takes the least of */

struct net_ctx {
    uv_loop_t *loop;
    char name[WIRE_NAME_MAX + 1];
    uint8_t role;
    auth_secret secret;
    unsigned heartbeat_ms, dead_ms, client_dead_ms, handshake_ms, max_conns, send_delay_ms;
    int sock_buf;
    uv_prepare_t before_poll;
    uv_check_t after_poll;
    int loop_handles;     /* of before_poll and after_poll, not closed yet */
    uint64_t looked_at;   /* loop time the last poll of the sockets returned */
    uint64_t warned_at;   /* the last warning about a blocked loop (hrtime ms) */
    /* addresses whose last connection from us died of silence, until one
     * gets through again (a ring: the oldest goes when it is full) */
    char silent[NET_SILENT_ADDRS][64];
    unsigned nsilent;
    size_t hwm;
    uint32_t max_frame;
    net_log_fn log;
    void *log_ud;
    int log_level;
    net_conn *conns;
    net_listener *listeners;
    size_t nconns, nlisteners;
    int dying;
};

struct net_listener {
    net_ctx *ctx;
    uv_tcp_t tcp;
    net_listener *prev, *next;
    net_handlers h;
    void *ud;
    int port, closing;
    char addr[64];
};

struct net_conn {
    net_ctx *ctx;
    net_conn *prev, *next;
    uv_tcp_t tcp;
    uv_timer_t clock, delay, kick;
    uv_connect_t connect_req;
    uv_shutdown_t shutdown_req;
    int open_handles;
    int state, initiator, paused, busy, notify;
    int why;
    char why_msg[256];
    net_handlers h;
    void *ud;

    wire_dec dec;
    unsigned char *rbuf;
    size_t roff, rlen;
    uint64_t last_recv;
    unsigned dead_ms;    /* silence limit for this peer (its role's), once ready */
    uint64_t deadline;   /* loop time the connect + handshake must be done by */

    wreq *dhead, *dtail; /* frames held by the send delay */
    unsigned delay_ms;
    size_t queued, queued_max;

    unsigned hs;
    uint8_t version, peer_role;
    uint8_t my_role;     /* the role our HELLO said (net_ctx_set_role may change the context's meanwhile) */
    unsigned char my_nonce[WIRE_NONCE_SIZE], peer_nonce[WIRE_NONCE_SIZE];
    char peer_name[WIRE_NAME_MAX + 1];
    char addr[64];

    uint64_t frames_in, frames_out, bytes_in, bytes_out, hb_in, hb_out, hb_seq;
    /* round trips (net_rtt_us): our last heartbeats' numbers and send
     * times, the peer's last heartbeat and when it came */
    struct { uint64_t seq, at_us; } hb_sent[NET_HB_RING];
    uint64_t peer_hb_seq, peer_hb_at_us;
    uint32_t rtt_us;      /* smoothed; 0 = none measured yet */
    uint32_t rtt_win[NET_RTT_WIN]; /* the last round trips (net_rtt_min_us) */
    uint32_t rtt_n;                /* how many were timed, in all */
};

/* ------------------------------------------------------------------ logging */

void net_log_stderr(void *ud, int level, const char *peer, const char *msg)
{
    (void)ud;
    base_log_line("net", level, peer ? peer : "-", msg);
}

static void vlog(net_ctx *ctx, net_conn *c, int level, const char *fmt, va_list ap)
{
    if (level < ctx->log_level) return;
    char msg[512], peer[160];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (c) {
        if (c->peer_name[0])
            snprintf(peer, sizeof peer, "%s %s", c->addr, c->peer_name);
        else
            snprintf(peer, sizeof peer, "%s", c->addr);
    }
    ctx->log(ctx->log_ud, level, c ? peer : NULL, msg);
}

void net_log(net_ctx *ctx, net_conn *c, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(ctx, c, level, fmt, ap);
    va_end(ap);
}

const char *net_close_name(int why)
{
    switch (why) {
    case NET_CLOSE_LOCAL: return "closed locally";
    case NET_CLOSE_PEER: return "closed by peer";
    case NET_CLOSE_IO: return "I/O error";
    case NET_CLOSE_TIMEOUT: return "timeout";
    case NET_CLOSE_DEAD: return "peer dead";
    case NET_CLOSE_PROTO: return "protocol error";
    case NET_CLOSE_AUTH: return "authentication failed";
    case NET_CLOSE_VERSION: return "no common version";
    case NET_CLOSE_LIMIT: return "connection limit";
    }
    return "?";
}

/* A peer's text made safe for one log line: control bytes become '?'. */
static void printable(wire_str v, char *out, size_t n)
{
    size_t k = v.n < n - 1 ? v.n : n - 1;
    for (size_t i = 0; i < k; i++) {
        unsigned char ch = (unsigned char)v.p[i];
        out[i] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    out[k] = 0;
}

/* ------------------------------------------------------------------ closing */

static void ctx_maybe_free(net_ctx *ctx)
{
    if (!ctx->dying || ctx->nconns || ctx->nlisteners || ctx->loop_handles) return;
    auth_secret_fini(&ctx->secret);
    free(ctx);
}

/* The slot of addr among the addresses found silent, or -1. */
static int silent_find(const net_ctx *ctx, const char *addr)
{
    int n = ctx->nsilent < NET_SILENT_ADDRS ? (int)ctx->nsilent : NET_SILENT_ADDRS;
    for (int i = 0; i < n; i++)
        if (!strcmp(ctx->silent[i], addr)) return i;
    return -1;
}

/* Remember (or forget) that the address c connected to went silent. */
static void silent_mark(net_conn *c, int silent)
{
    net_ctx *ctx = c->ctx;
    int i = silent_find(ctx, c->addr);
    if (silent && i < 0)
        snprintf(ctx->silent[ctx->nsilent++ % NET_SILENT_ADDRS], sizeof ctx->silent[0], "%s", c->addr);
    else if (!silent && i >= 0)
        ctx->silent[i][0] = 0;
}

/* The last close callback of a connection: tell the owner, then free. */
static void conn_free(net_conn *c)
{
    net_ctx *ctx = c->ctx;
    if (c->initiator && (c->why == NET_CLOSE_DEAD || c->why == NET_CLOSE_TIMEOUT)) silent_mark(c, 1);
    if (c->notify && c->h.on_close) c->h.on_close(c, c->why, c->why_msg, c->ud);
    for (wreq *w = c->dhead, *nx; w; w = nx) {
        nx = w->next;
        free(w);
    }
    wire_dec_fini(&c->dec);
    free(c->rbuf);
    if (c->prev) c->prev->next = c->next;
    else ctx->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    ctx->nconns--;
    free(c);
    ctx_maybe_free(ctx);
}

static void on_handle_closed(uv_handle_t *h)
{
    net_conn *c = h->data;
    if (--c->open_handles == 0) conn_free(c);
}

static void close_handle(net_conn *c, uv_handle_t *h)
{
    if (!uv_is_closing(h)) uv_close(h, on_handle_closed);
    (void)c;
}

/* Record why the connection ends (the first reason wins). */
static void conn_set_why(net_conn *c, int why, const char *fmt, va_list ap)
{
    if (c->why_msg[0]) return;
    c->why = why;
    vsnprintf(c->why_msg, sizeof c->why_msg, fmt, ap);
}

/* The one abort path: close every handle now.  Pending writes get
 * UV_ECANCELED; the memory goes in the last close callback. */
static void conn_close_now(net_conn *c)
{
    if (c->state == ST_CLOSING) return;
    c->state = ST_CLOSING;
    close_handle(c, (uv_handle_t *)&c->tcp);
    close_handle(c, (uv_handle_t *)&c->clock);
    close_handle(c, (uv_handle_t *)&c->delay);
    close_handle(c, (uv_handle_t *)&c->kick);
}

static int conn_write_now(net_conn *c, wreq *w);

static void on_flush_deadline(uv_timer_t *t)
{
    net_conn *c = t->data;
    net_log(c->ctx, c, NET_LOG_DEBUG, "flush not done after %d ms; closing", NET_FLUSH_MS);
    conn_close_now(c);
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
    net_conn *c = req->data;
    (void)status; /* UV_ECANCELED when the stream closed first: nothing to do */
    conn_close_now(c);
}

/* Orderly end: stop reading, write what is queued (delayed frames at once),
 * shut down the write side, close.  Bounded by NET_FLUSH_MS. */
static void conn_flush_close(net_conn *c)
{
    if (c->state >= ST_FLUSHING) return;
    if (c->state == ST_CONNECTING) {
        conn_close_now(c);
        return;
    }
    c->state = ST_FLUSHING;
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_timer_stop(&c->kick);
    uv_timer_stop(&c->delay);
    while (c->dhead) {
        wreq *w = c->dhead;
        c->dhead = w->next;
        if (!c->dhead) c->dtail = NULL;
        if (conn_write_now(c, w) < 0) break;
    }
    if (c->state != ST_FLUSHING) return; /* a write failed and closed it */
    c->shutdown_req.data = c;
    if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        conn_close_now(c);
        return;
    }
    uv_timer_stop(&c->clock);
    uv_timer_start(&c->clock, on_flush_deadline, NET_FLUSH_MS, 0);
}

static int conn_send_internal(net_conn *c, uint8_t type, uint16_t flags, const void *p,
                              size_t len);
static int conn_send_msg_internal(net_conn *c, const wire_msg *m);

/* Fail a connection: log, tell the peer (err_code != 0 sends an ERROR frame
 * first and flushes it), close.  Safe from any callback; idempotent. */
static void conn_fail(net_conn *c, int why, int err_code, int level, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void conn_fail(net_conn *c, int why, int err_code, int level, const char *fmt, ...)
{
    if (c->state >= ST_FLUSHING) return;
    va_list ap;
    va_start(ap, fmt);
    conn_set_why(c, why, fmt, ap);
    va_end(ap);
    net_log(c->ctx, c, level, "closing (%s): %s", net_close_name(why), c->why_msg);
    if (err_code && c->state != ST_CONNECTING) {
        wire_msg m = {.type = WIRE_ERROR};
        m.u.error.code = err_code;
        /* An auth failure says no more than that to an unproven peer. */
        m.u.error.msg = wire_str_of(why == NET_CLOSE_AUTH ? "authentication failed" : c->why_msg);
        conn_send_msg_internal(c, &m);
        conn_flush_close(c);
    } else {
        conn_close_now(c);
    }
}

/* ------------------------------------------------------------------ writing */

static void on_write(uv_write_t *req, int status)
{
    wreq *w = req->data;
    net_conn *c = w->c;
    c->queued -= w->len;
    free(w);
    if (status < 0) {
        if (status != UV_ECANCELED)
            conn_fail(c, NET_CLOSE_IO, 0, NET_LOG_WARN, "write: %s", uv_strerror(status));
        return;
    }
    if (c->busy && c->state == ST_READY && c->queued <= c->ctx->hwm / 2) {
        c->busy = 0;
        if (c->h.on_writable) c->h.on_writable(c, c->ud);
    }
}

static int conn_write_now(net_conn *c, wreq *w)
{
    uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)w->len);
    w->req.data = w;
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rc < 0) {
        c->queued -= w->len;
        free(w);
        conn_fail(c, NET_CLOSE_IO, 0, NET_LOG_WARN, "write: %s", uv_strerror(rc));
        return XE_IO;
    }
    return 0;
}

static void on_delay(uv_timer_t *t)
{
    net_conn *c = t->data;
    uint64_t now = uv_now(c->ctx->loop);
    while (c->dhead && c->dhead->due <= now && c->state < ST_FLUSHING) {
        wreq *w = c->dhead;
        c->dhead = w->next;
        if (!c->dhead) c->dtail = NULL;
        if (conn_write_now(c, w) < 0) return;
    }
    if (c->dhead && c->state < ST_FLUSHING) uv_timer_start(&c->delay, on_delay, c->dhead->due - now, 0);
}

/* Frame and queue one frame, with no backpressure check (callers check). */
static int conn_send_internal(net_conn *c, uint8_t type, uint16_t flags, const void *p, size_t len)
{
    if (c->state >= ST_FLUSHING) return XE_IO;
    wreq *w = malloc(sizeof *w + WIRE_HDR_SIZE + len);
    if (!w) return XE_NOMEM;
    /* Before the handshake ends frames go out as the base version (the
     * HELLO/AUTH layouts never change); after it, as the negotiated one. */
    uint8_t v = c->state == ST_READY ? c->version : WIRE_VERSION_MIN;
    wire_header_put(w->data, v, type, flags, p, (uint32_t)len);
    if (len) memcpy(w->data + WIRE_HDR_SIZE, p, len);
    w->len = WIRE_HDR_SIZE + len;
    w->c = c;
    w->next = NULL;
    c->queued += w->len;
    if (c->queued > c->queued_max) c->queued_max = c->queued;
    c->frames_out++;
    c->bytes_out += w->len;
    if (c->delay_ms || c->dhead) {
        uv_update_time(c->ctx->loop); /* uv_now is cached per iteration */
        uint64_t now = uv_now(c->ctx->loop);
        w->due = now + c->delay_ms;
        if (c->dtail) c->dtail->next = w;
        else c->dhead = w;
        c->dtail = w;
        if (!uv_is_active((uv_handle_t *)&c->delay))
            uv_timer_start(&c->delay, on_delay, c->dhead->due > now ? c->dhead->due - now : 0, 0);
        return 0;
    }
    return conn_write_now(c, w);
}

typedef int (*send_fn)(net_conn *c, uint8_t type, uint16_t flags, const void *p, size_t len);

/* Encode m and hand it to one of the send functions. */
static int send_msg_via(net_conn *c, const wire_msg *m, send_fn send)
{
    sbuf b;
    sbuf_init(&b);
    int rc = wire_msg_payload(&b, m, NULL);
    if (rc == 0) rc = send(c, m->type, m->flags, b.p, b.len);
    sbuf_fini(&b);
    return rc;
}

static int conn_send_msg_internal(net_conn *c, const wire_msg *m)
{
    return send_msg_via(c, m, conn_send_internal);
}

static int send_check(net_conn *c, uint8_t type, size_t len)
{
    if (c->state >= ST_FLUSHING) return XE_IO;
    if (c->state != ST_READY) return XE_INVAL;
    if (type < WIRE_JOIN || type > WIRE_TYPE_MAX || type == WIRE_BYE) return XE_INVAL;
    if (len > c->ctx->max_frame) return XE_INVAL;
    return 0;
}

int net_send(net_conn *c, uint8_t type, uint16_t flags, const void *payload, size_t len)
{
    int rc = send_check(c, type, len);
    if (rc < 0) return rc;
    if (c->queued >= c->ctx->hwm) {
        c->busy = 1;
        return XE_BUSY;
    }
    return conn_send_internal(c, type, flags, payload, len);
}

int net_send_ctl(net_conn *c, uint8_t type, uint16_t flags, const void *payload, size_t len)
{
    int rc = send_check(c, type, len);
    if (rc < 0) return rc;
    if (len > NET_CTL_MAX) return XE_INVAL;
    if (c->queued >= c->ctx->hwm + NET_CTL_SLACK) {
        c->busy = 1;
        return XE_BUSY;
    }
    return conn_send_internal(c, type, flags, payload, len);
}

int net_send_msg(net_conn *c, const wire_msg *m) { return send_msg_via(c, m, net_send); }

size_t net_queued(const net_conn *c) { return c->queued; }

void net_set_send_delay_ms(net_conn *c, unsigned ms) { c->delay_ms = ms; }

/* ---------------------------------------------------------------- handshake */

static void on_clock_heartbeat(uv_timer_t *t);

static void conn_ready(net_conn *c)
{
    c->state = ST_READY;
    wire_dec_set_versions(&c->dec, c->version, c->version);
    wire_dec_set_max(&c->dec, c->ctx->max_frame);
    c->last_recv = uv_now(c->ctx->loop);
    c->dead_ms = c->peer_role == WIRE_ROLE_CLIENT ? c->ctx->client_dead_ms : c->ctx->dead_ms;
    if (c->initiator) silent_mark(c, 0);
    uv_timer_stop(&c->clock);
    uv_timer_start(&c->clock, on_clock_heartbeat, c->ctx->heartbeat_ms, c->ctx->heartbeat_ms);
    c->notify = 1;
    net_log(c->ctx, c, NET_LOG_INFO, "authenticated %s '%s', wire v%u",
            wire_role_name(c->peer_role), c->peer_name, c->version);
    if (c->h.on_ready) c->h.on_ready(c, c->ud);
}

static int send_hello_and_challenge(net_conn *c, uint8_t vmin, uint8_t vmax)
{
    wire_msg m = {.type = WIRE_HELLO};
    m.u.hello.vmin = vmin;
    m.u.hello.vmax = vmax;
    c->my_role = c->ctx->role;
    m.u.hello.role = c->my_role;
    m.u.hello.name = wire_str_of(c->ctx->name);
    int rc = conn_send_msg_internal(c, &m);
    if (rc < 0) return rc;
    wire_msg ch = {.type = WIRE_AUTH_CHALLENGE};
    memcpy(ch.u.challenge.nonce, c->my_nonce, WIRE_NONCE_SIZE);
    return conn_send_msg_internal(c, &ch);
}

/* Our proof, answering the peer's nonce. */
static int send_proof(net_conn *c)
{
    wire_msg m = {.type = WIRE_AUTH_RESPONSE};
    int rc = auth_mac(&c->ctx->secret, c->initiator ? AUTH_INITIATOR : AUTH_ACCEPTOR, c->version,
                      c->peer_nonce, c->my_nonce, c->ctx->name, strlen(c->ctx->name),
                      c->my_role, m.u.response.mac);
    if (rc == 0) rc = conn_send_msg_internal(c, &m);
    return rc;
}

static int check_proof(net_conn *c, const unsigned char *mac)
{
    return auth_verify(&c->ctx->secret, c->initiator ? AUTH_ACCEPTOR : AUTH_INITIATOR, c->version,
                       c->my_nonce, c->peer_nonce, c->peer_name, strlen(c->peer_name),
                       c->peer_role, mac);
}

static void hs_hello(net_conn *c, const wire_hello *h)
{
    if (!wire_name_ok(h->name.p, h->name.n)) {
        conn_fail(c, NET_CLOSE_PROTO, XE_PROTO, NET_LOG_WARN, "HELLO with an invalid name");
        return;
    }
    if (h->role < WIRE_ROLE_NODE || h->role > WIRE_ROLE_CLIENT) {
        conn_fail(c, NET_CLOSE_PROTO, XE_PROTO, NET_LOG_WARN, "HELLO with unknown role %u",
                  h->role);
        return;
    }
    memcpy(c->peer_name, h->name.p, h->name.n);
    c->peer_name[h->name.n] = 0;
    c->peer_role = h->role;
    uint8_t lo = h->vmin > WIRE_VERSION_MIN ? h->vmin : WIRE_VERSION_MIN;
    uint8_t hi = h->vmax < WIRE_VERSION_MAX ? h->vmax : WIRE_VERSION_MAX;
    if (c->initiator && h->vmin != h->vmax) hi = 0; /* the acceptor must choose one */
    if (lo > hi) {
        conn_fail(c, NET_CLOSE_VERSION, XE_VERSION, NET_LOG_WARN,
                  "no common wire version: peer offers %u..%u, we speak %u..%u", h->vmin,
                  h->vmax, WIRE_VERSION_MIN, WIRE_VERSION_MAX);
        return;
    }
    c->version = hi;
    c->hs |= HS_GOT_HELLO;
    if (!c->initiator && send_hello_and_challenge(c, hi, hi) < 0)
        conn_fail(c, NET_CLOSE_IO, 0, NET_LOG_WARN, "cannot send HELLO");
}

static void hs_frame(net_conn *c, const wire_frame *f)
{
    wire_msg m;
    xerr e;
    int t = f->type;
    if (t != WIRE_HELLO && t != WIRE_AUTH_CHALLENGE && t != WIRE_AUTH_RESPONSE &&
        t != WIRE_AUTH_OK && t != WIRE_ERROR && t != WIRE_BYE) {
        conn_fail(c, NET_CLOSE_PROTO, XE_PROTO, NET_LOG_WARN, "%s frame before authentication",
                  wire_type_name(t));
        return;
    }
    if (wire_msg_get(f, &m, &e) < 0) {
        conn_fail(c, NET_CLOSE_PROTO, XE_PROTO, NET_LOG_WARN, "bad handshake frame: %s", e.msg);
        return;
    }
    unsigned hs = c->hs;
    switch (t) {
    case WIRE_HELLO:
        if (hs & HS_GOT_HELLO) break;
        hs_hello(c, &m.u.hello);
        return;
    case WIRE_AUTH_CHALLENGE:
        if (!(hs & HS_GOT_HELLO) || (hs & HS_GOT_CHALLENGE)) break;
        memcpy(c->peer_nonce, m.u.challenge.nonce, WIRE_NONCE_SIZE);
        c->hs |= HS_GOT_CHALLENGE;
        if (c->initiator) { /* the initiator proves first */
            if (send_proof(c) < 0) {
                conn_fail(c, NET_CLOSE_IO, 0, NET_LOG_WARN, "cannot send AUTH_RESPONSE");
                return;
            }
            c->hs |= HS_SENT_RESPONSE;
        }
        return;
    case WIRE_AUTH_RESPONSE:
        if (c->initiator ? !(hs & HS_SENT_RESPONSE) || (hs & HS_PEER_OK)
                         : !(hs & HS_GOT_CHALLENGE))
            break;
        if (check_proof(c, m.u.response.mac) < 0) {
            conn_fail(c, NET_CLOSE_AUTH, XE_AUTH, NET_LOG_WARN,
                      "%s '%s' failed to prove the cluster secret (wrong secret?)",
                      wire_role_name(c->peer_role), c->peer_name);
            return;
        }
        if (c->initiator) {
            c->hs |= HS_PEER_OK;
            return;
        }
        if (send_proof(c) < 0 || conn_send_internal(c, WIRE_AUTH_OK, 0, NULL, 0) < 0) {
            conn_fail(c, NET_CLOSE_IO, 0, NET_LOG_WARN, "cannot send AUTH_OK");
            return;
        }
        conn_ready(c);
        return;
    case WIRE_AUTH_OK:
        if (!c->initiator || !(hs & HS_PEER_OK)) break;
        conn_ready(c);
        return;
    case WIRE_ERROR: {
        int code = m.u.error.code;
        int why = code == XE_AUTH ? NET_CLOSE_AUTH
                  : code == XE_VERSION ? NET_CLOSE_VERSION
                  : code == XE_BUSY ? NET_CLOSE_LIMIT : NET_CLOSE_PROTO;
        char text[200];
        printable(m.u.error.msg, text, sizeof text);
        conn_fail(c, why, 0, NET_LOG_WARN, "peer refused the handshake: %s", text);
        return;
    }
    case WIRE_BYE:
        conn_fail(c, NET_CLOSE_PEER, 0, NET_LOG_INFO, "peer said BYE during the handshake");
        return;
    }
    conn_fail(c, NET_CLOSE_PROTO, XE_PROTO, NET_LOG_WARN, "unexpected %s in the handshake",
              wire_type_name(t));
}

/* ------------------------------------------------------------------ reading */

static uint64_t mono_us(void) { return clock_mono_ns() / 1000; }

/* A heartbeat from the peer: remember it for our echo; time the round trip
 * of ours it echoes (now - sent - what the peer held it), smoothed as TCP's
 * SRTT is (RFC 6298: 7/8 old + 1/8 new). */
static void hb_heard(net_conn *c, const wire_msg *hm)
{
    const __typeof__(hm->u.heartbeat) *h = &hm->u.heartbeat;
    uint64_t now = mono_us();
    c->peer_hb_seq = h->seq;
    c->peer_hb_at_us = now;
    if (!h->echo || !h->echo_seq) return;
    for (int i = 0; i < NET_HB_RING; i++) {
        if (c->hb_sent[i].seq != h->echo_seq) continue;
        uint64_t span = now - c->hb_sent[i].at_us;
        uint64_t rtt = span > h->held_us ? span - h->held_us : 1;
        if (rtt > UINT32_MAX / 2) rtt = UINT32_MAX / 2;
        c->rtt_us = c->rtt_us ? (uint32_t)((7 * (uint64_t)c->rtt_us + rtt) / 8) : (uint32_t)(rtt ? rtt : 1);
        c->rtt_win[c->rtt_n++ % NET_RTT_WIN] = (uint32_t)(rtt ? rtt : 1);
        c->hb_sent[i].seq = 0;
        return;
    }
}

uint32_t net_rtt_us(const net_conn *c) { return c ? c->rtt_us : 0; }

uint32_t net_rtt_min_us(const net_conn *c)
{
    uint32_t m = 0;
    for (uint32_t i = 0; c && i < c->rtt_n && i < NET_RTT_WIN; i++)
        if (!m || c->rtt_win[i] < m) m = c->rtt_win[i];
    return m;
}

static void ready_frame(net_conn *c, const wire_frame *f)
{
    switch (f->type) {
    case WIRE_HEARTBEAT: {
        wire_msg m;
        xerr e;
        if (wire_msg_get(f, &m, &e) < 0) {
            conn_fail(c, NET_CLOSE_PROTO, XE_PROTO, NET_LOG_WARN, "%s", e.msg);
            return;
        }
        c->hb_in++;
        hb_heard(c, &m);
        return;
    }
    case WIRE_BYE: {
        wire_msg m;
        xerr e;
        char text[200];
        wire_msg_get(f, &m, &e);
        printable(m.u.bye.reason, text, sizeof text);
        c->why = NET_CLOSE_PEER;
        snprintf(c->why_msg, sizeof c->why_msg, "peer said BYE: %s", text);
        net_log(c->ctx, c, NET_LOG_INFO, "%s", c->why_msg);
        conn_flush_close(c);
        return;
    }
    case WIRE_HELLO:
    case WIRE_AUTH_CHALLENGE:
    case WIRE_AUTH_RESPONSE:
    case WIRE_AUTH_OK:
        conn_fail(c, NET_CLOSE_PROTO, XE_PROTO, NET_LOG_WARN, "%s after authentication",
                  wire_type_name(f->type));
        return;
    }
    if (c->h.on_frame) c->h.on_frame(c, f, c->ud);
}

static int on_frame_cb(void *ud, const wire_frame *f)
{
    net_conn *c = ud;
    c->frames_in++;
    if (c->state == ST_READY)
        ready_frame(c, f);
    else
        hs_frame(c, f);
    return (c->state >= ST_FLUSHING || c->paused) ? WIRE_STOP : 0;
}

/* Hand out the frames in rbuf until it is empty, the owner pauses, or the
 * connection closes. */
static void conn_drain(net_conn *c)
{
    while (c->roff < c->rlen && c->state < ST_FLUSHING && !c->paused) {
        size_t used = 0;
        xerr e;
        xerr_clear(&e);
        int rc = wire_dec_feed(&c->dec, c->rbuf + c->roff, c->rlen - c->roff, &used, on_frame_cb,
                               c, &e);
        c->roff += used;
        if (rc < 0) {
            int why = rc == XE_VERSION ? NET_CLOSE_VERSION
                      : rc == XE_NOMEM ? NET_CLOSE_IO : NET_CLOSE_PROTO;
            conn_fail(c, why, rc == XE_NOMEM ? 0 : rc, NET_LOG_WARN, "%s", e.msg);
            return;
        }
    }
    if (c->roff == c->rlen) c->roff = c->rlen = 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    net_conn *c = h->data;
    (void)suggested;
    if (!c->rbuf) c->rbuf = malloc(NET_READ_CHUNK);
    *buf = uv_buf_init((char *)c->rbuf, c->rbuf ? NET_READ_CHUNK : 0);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    net_conn *c = s->data;
    (void)buf;
    if (nread == 0 || c->state >= ST_FLUSHING) return; /* 0: "again", not an error */
    if (nread < 0) {
        if (nread == UV_EOF) {
            xerr e;
            xerr_clear(&e);
            if (wire_dec_finish(&c->dec, &e) < 0)
                conn_fail(c, NET_CLOSE_PROTO, 0, NET_LOG_WARN, "%s", e.msg);
            else
                conn_fail(c, NET_CLOSE_PEER, 0,
                          c->state == ST_READY ? NET_LOG_INFO : NET_LOG_WARN,
                          "peer closed the connection%s",
                          c->state == ST_READY ? "" : " during the handshake");
        } else {
            conn_fail(c, NET_CLOSE_IO, 0, NET_LOG_WARN, "read: %s", uv_strerror((int)nread));
        }
        return;
    }
    c->last_recv = uv_now(c->ctx->loop);
    c->bytes_in += (uint64_t)nread;
    c->roff = 0;
    c->rlen = (size_t)nread;
    conn_drain(c);
}

static void on_kick(uv_timer_t *t)
{
    net_conn *c = t->data;
    if (c->paused || c->state >= ST_FLUSHING) return;
    conn_drain(c);
    if (!c->paused && c->state < ST_FLUSHING && c->roff == c->rlen)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

void net_pause(net_conn *c)
{
    if (c->paused || c->state >= ST_FLUSHING) return;
    c->paused = 1;
    uv_timer_stop(&c->kick);
    if (c->state != ST_CONNECTING) uv_read_stop((uv_stream_t *)&c->tcp);
}

void net_resume(net_conn *c)
{
    if (!c->paused || c->state >= ST_FLUSHING) return;
    c->paused = 0;
    c->last_recv = uv_now(c->ctx->loop); /* the dead timer was suspended */
    if (c->state == ST_CONNECTING) return;
    if (c->roff < c->rlen)
        uv_timer_start(&c->kick, on_kick, 0, 0);
    else
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int net_paused(const net_conn *c) { return c->paused; }

/* Bytes the peer sent that we have not read yet. */
static int unread_bytes(const net_conn *c)
{
    uv_os_fd_t fd;
    int n = 0;
    if (c->roff < c->rlen) return 1;
    if (uv_fileno((const uv_handle_t *)&c->tcp, &fd) < 0 || ioctl(fd, FIONREAD, &n) < 0) return 0;
    return n;
}

uint64_t net_silent_ms(const net_conn *c)
{
    uint64_t now = uv_now(c->ctx->loop);
    if (c->paused || now <= c->last_recv || unread_bytes(c) > 0) return 0;
    return now - c->last_recv;
}

/* ------------------------------------------------------------------ timers */

static void on_clock_heartbeat(uv_timer_t *t)
{
    net_conn *c = t->data;
    if (c->state != ST_READY) return;
    uint64_t silent = net_silent_ms(c);
    if (silent >= c->dead_ms) {
        conn_fail(c, NET_CLOSE_DEAD, 0, NET_LOG_WARN, "nothing received for %llu ms (limit %u)",
                  (unsigned long long)silent, c->dead_ms);
        return;
    }
    /* Bytes already queued reach the peer first and prove we live. */
    if (c->queued == 0) {
        wire_msg m = {.type = WIRE_HEARTBEAT};
        m.u.heartbeat.seq = ++c->hb_seq;
        m.u.heartbeat.sent_ms = clock_wall_ms();
        uint64_t now = mono_us();
        if (c->peer_hb_seq) {
            uint64_t held = now - c->peer_hb_at_us;
            m.u.heartbeat.echo = 1;
            m.u.heartbeat.echo_seq = c->peer_hb_seq;
            m.u.heartbeat.held_us = held > UINT32_MAX ? UINT32_MAX : (uint32_t)held;
        }
        c->hb_sent[c->hb_seq % NET_HB_RING].seq = c->hb_seq;
        c->hb_sent[c->hb_seq % NET_HB_RING].at_us = now;
        if (conn_send_msg_internal(c, &m) == 0) c->hb_out++;
    }
}

static void on_clock_deadline(uv_timer_t *t)
{
    net_conn *c = t->data;
    if (c->state >= ST_READY) return;
    conn_fail(c, NET_CLOSE_TIMEOUT, 0, NET_LOG_WARN, "%s not finished in time",
              c->state == ST_CONNECTING ? "connect" : "handshake");
}

/* Our handshake with a peer we connected to.  The peer answers HELLO at
 * once, so a peer that accepted the TCP connection (its kernel did) and
 * then says nothing for dead_ms is silent like a dead one: a stopped
 * process must not hold a reconnect, and the frames waiting for it, for
 * the whole handshake limit. */
static void on_clock_handshake(uv_timer_t *t)
{
    net_conn *c = t->data;
    if (c->state >= ST_READY) return;
    uint64_t silent = net_silent_ms(c);
    if (silent >= c->ctx->dead_ms) {
        conn_fail(c, NET_CLOSE_DEAD, 0, NET_LOG_WARN, "no answer to the handshake for %llu ms (limit %u)",
                  (unsigned long long)silent, c->ctx->dead_ms);
        return;
    }
    if (uv_now(c->ctx->loop) >= c->deadline) on_clock_deadline(t);
}

/* ---------------------------------------------------------- connections */

static net_conn *conn_new(net_ctx *ctx, int initiator, const net_handlers *h, void *ud)
{
    net_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ctx = ctx;
    c->initiator = initiator;
    c->notify = initiator; /* accepted ones: only after on_ready */
    c->state = initiator ? ST_CONNECTING : ST_HANDSHAKE;
    if (h) c->h = *h;
    c->ud = ud;
    c->delay_ms = ctx->send_delay_ms;
    wire_dec_init(&c->dec, WIRE_MAX_PREAUTH);
    if (auth_nonce(c->my_nonce) < 0) {
        free(c);
        return NULL;
    }
    uv_tcp_init(ctx->loop, &c->tcp);
    uv_timer_init(ctx->loop, &c->clock);
    uv_timer_init(ctx->loop, &c->delay);
    uv_timer_init(ctx->loop, &c->kick);
    c->tcp.data = c->clock.data = c->delay.data = c->kick.data = c;
    c->connect_req.data = c;
    c->open_handles = 4;
    c->next = ctx->conns;
    if (ctx->conns) ctx->conns->prev = c;
    ctx->conns = c;
    ctx->nconns++;
    snprintf(c->addr, sizeof c->addr, "?");
    return c;
}

static void apply_sock_buf(net_conn *c)
{
    int v = c->ctx->sock_buf;
    if (v <= 0) return;
    uv_send_buffer_size((uv_handle_t *)&c->tcp, &v);
    v = c->ctx->sock_buf;
    uv_recv_buffer_size((uv_handle_t *)&c->tcp, &v);
}

static void format_addr(const struct sockaddr_storage *ss, char *out, size_t n)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        uv_ip4_name(a, ip, sizeof ip);
        port = ntohs(a->sin_port);
        snprintf(out, n, "%s:%d", ip, port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        uv_ip6_name(a, ip, sizeof ip);
        port = ntohs(a->sin6_port);
        snprintf(out, n, "[%s]:%d", ip, port);
    } else {
        snprintf(out, n, "?");
    }
}

static int parse_addr(const char *host, int port, struct sockaddr_storage *ss, xerr *e)
{
    memset(ss, 0, sizeof *ss);
    if (!host || !strcmp(host, "localhost")) host = "127.0.0.1";
    if (port < 0 || port > 65535) return xerr_set(e, XE_INVAL, "bad port %d", port);
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0) return 0;
    if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0) return 0;
    return xerr_set(e, XE_INVAL, "'%s' is not a numeric IPv4/IPv6 address", host);
}

static void on_connect(uv_connect_t *req, int status)
{
    net_conn *c = req->data;
    if (status == UV_ECANCELED || c->state != ST_CONNECTING) return;
    if (status < 0) {
        conn_fail(c, NET_CLOSE_IO, 0, NET_LOG_WARN, "connect: %s", uv_strerror(status));
        return;
    }
    c->state = ST_HANDSHAKE;
    uv_tcp_nodelay(&c->tcp, 1);
    c->last_recv = uv_now(c->ctx->loop);
    if (send_hello_and_challenge(c, WIRE_VERSION_MIN, WIRE_VERSION_MAX) < 0) {
        conn_fail(c, NET_CLOSE_IO, 0, NET_LOG_WARN, "cannot send HELLO");
        return;
    }
    if (!c->paused) uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    uv_timer_stop(&c->clock);
    uv_timer_start(&c->clock, on_clock_handshake, c->ctx->heartbeat_ms, c->ctx->heartbeat_ms);
}

int net_connect(net_ctx *ctx, const char *host, int port, unsigned timeout_ms,
                const net_handlers *h, void *ud, net_conn **out, xerr *e)
{
    struct sockaddr_storage ss;
    *out = NULL;
    int rc = parse_addr(host, port, &ss, e);
    if (rc < 0) return rc;
    if (ctx->dying) return xerr_set(e, XE_INVAL, "net context is shutting down");
    if (ctx->nconns >= ctx->max_conns)
        return xerr_set(e, XE_BUSY, "too many connections (%u)", ctx->max_conns);
    net_conn *c = conn_new(ctx, 1, h, ud);
    if (!c) return xerr_set(e, XE_NOMEM, "out of memory (or no random bytes) for a connection");
    format_addr(&ss, c->addr, sizeof c->addr);
    int urc = uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&ss, on_connect);
    if (urc < 0) {
        c->notify = 0; /* the caller gets an error, not a connection */
        conn_close_now(c);
        return xerr_set(e, XE_IO, "connect to %s: %s", c->addr, uv_strerror(urc));
    }
    apply_sock_buf(c);
    /* a peer just found silent gets dead_ms to answer, not the whole
     * handshake limit: the frames waiting for it should not wait long */
    if (!timeout_ms) timeout_ms = ctx->handshake_ms;
    if (silent_find(ctx, c->addr) >= 0 && ctx->dead_ms < timeout_ms) {
        timeout_ms = ctx->dead_ms;
        net_log(ctx, c, NET_LOG_DEBUG, "connecting again after its silence: %u ms to answer", timeout_ms);
    }
    c->deadline = uv_now(ctx->loop) + timeout_ms;
    uv_timer_start(&c->clock, on_clock_deadline, timeout_ms, 0);
    *out = c;
    return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
    net_listener *l = server->data;
    net_ctx *ctx = l->ctx;
    if (status < 0) {
        net_log(ctx, NULL, NET_LOG_WARN, "accept on %s: %s", l->addr, uv_strerror(status));
        return;
    }
    net_conn *c = conn_new(ctx, 0, &l->h, l->ud);
    if (!c) {
        net_log(ctx, NULL, NET_LOG_ERROR, "accept on %s: out of memory", l->addr);
        return;
    }
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
        conn_close_now(c);
        return;
    }
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0)
        format_addr(&ss, c->addr, sizeof c->addr);
    if (ctx->nconns > ctx->max_conns) {
        conn_fail(c, NET_CLOSE_LIMIT, XE_BUSY, NET_LOG_WARN,
                  "refused: %u connections already open", ctx->max_conns);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    apply_sock_buf(c);
    net_log(ctx, c, NET_LOG_DEBUG, "accepted on %s", l->addr);
    uv_timer_start(&c->clock, on_clock_deadline, ctx->handshake_ms, 0);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

void net_close(net_conn *c, const char *reason)
{
    if (c->state >= ST_FLUSHING) return;
    c->why = NET_CLOSE_LOCAL;
    snprintf(c->why_msg, sizeof c->why_msg, "closed: %s", reason ? reason : "bye");
    net_log(c->ctx, c, NET_LOG_INFO, "%s", c->why_msg);
    if (c->state == ST_CONNECTING) {
        conn_close_now(c);
        return;
    }
    wire_msg m = {.type = WIRE_BYE};
    m.u.bye.reason = wire_str_of(reason);
    conn_send_msg_internal(c, &m);
    conn_flush_close(c);
}

void net_abort(net_conn *c, int why, const char *fmt, ...)
{
    if (c->state == ST_CLOSING) return;
    va_list ap;
    va_start(ap, fmt);
    conn_set_why(c, why, fmt, ap);
    va_end(ap);
    net_log(c->ctx, c, NET_LOG_INFO, "aborting (%s): %s", net_close_name(why), c->why_msg);
    conn_close_now(c);
}

void net_set_handlers(net_conn *c, const net_handlers *h, void *ud)
{
    if (h) c->h = *h;
    else memset(&c->h, 0, sizeof c->h);
    c->ud = ud;
}

int net_is_ready(const net_conn *c) { return c->state == ST_READY; }
const char *net_peer_name(const net_conn *c) { return c->peer_name; }
int net_peer_role(const net_conn *c) { return c->peer_role; }
const char *net_peer_addr(const net_conn *c) { return c->addr; }
uint8_t net_version(const net_conn *c) { return c->state == ST_READY ? c->version : 0; }
int net_is_initiator(const net_conn *c) { return c->initiator; }

void net_get_stats(const net_conn *c, net_stats *s)
{
    s->frames_in = c->frames_in;
    s->frames_out = c->frames_out;
    s->bytes_in = c->bytes_in;
    s->bytes_out = c->bytes_out;
    s->heartbeats_in = c->hb_in;
    s->heartbeats_out = c->hb_out;
    s->queued = c->queued;
    s->queued_max = c->queued_max;
    s->mem = sizeof *c + wire_dec_mem(&c->dec) + (c->rbuf ? NET_READ_CHUNK : 0) + c->queued;
}

/* ---------------------------------------------------------------- listeners */

static void on_listener_closed(uv_handle_t *h)
{
    net_listener *l = h->data;
    net_ctx *ctx = l->ctx;
    if (l->prev) l->prev->next = l->next;
    else ctx->listeners = l->next;
    if (l->next) l->next->prev = l->prev;
    ctx->nlisteners--;
    free(l);
    ctx_maybe_free(ctx);
}

int net_listen(net_ctx *ctx, const char *host, int port, const net_handlers *h, void *ud,
               net_listener **out, xerr *e)
{
    struct sockaddr_storage ss;
    *out = NULL;
    int rc = parse_addr(host, port, &ss, e);
    if (rc < 0) return rc;
    if (ctx->dying) return xerr_set(e, XE_INVAL, "net context is shutting down");
    net_listener *l = calloc(1, sizeof *l);
    if (!l) return xerr_set(e, XE_NOMEM, "out of memory for a listener");
    l->ctx = ctx;
    if (h) l->h = *h;
    l->ud = ud;
    format_addr(&ss, l->addr, sizeof l->addr);
    uv_tcp_init(ctx->loop, &l->tcp);
    l->tcp.data = l;
    l->next = ctx->listeners;
    if (ctx->listeners) ctx->listeners->prev = l;
    ctx->listeners = l;
    ctx->nlisteners++;
    int urc = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&ss, 0);
    if (urc == 0) urc = uv_listen((uv_stream_t *)&l->tcp, 128, on_connection);
    if (urc < 0) {
        xerr_set(e, XE_IO, "listen on %s: %s", l->addr, uv_strerror(urc));
        net_listener_close(l);
        return XE_IO;
    }
    int len = sizeof ss;
    if (uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&ss, &len) == 0) {
        format_addr(&ss, l->addr, sizeof l->addr);
        l->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                : ((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    net_log(ctx, NULL, NET_LOG_INFO, "listening on %s", l->addr);
    *out = l;
    return 0;
}

int net_listener_port(const net_listener *l) { return l->port; }

void net_listener_close(net_listener *l)
{
    if (!l || l->closing) return;
    l->closing = 1;
    uv_close((uv_handle_t *)&l->tcp, on_listener_closed);
}

/* ------------------------------------------------------------------ context */

static void on_after_poll(uv_check_t *h)
{
    net_ctx *ctx = h->data;
    ctx->looked_at = uv_now(ctx->loop); /* cached: when the poll returned */
}

static void on_before_poll(uv_prepare_t *h)
{
    net_ctx *ctx = h->data;
    uint64_t now = uv_hrtime() / 1000000;
    uint64_t gap = now > ctx->looked_at ? now - ctx->looked_at : 0;
    if (gap < ctx->dead_ms / 2 || !ctx->nconns || now - ctx->warned_at < 1000) return;
    ctx->warned_at = now;
    net_log(ctx, NULL, NET_LOG_WARN,
            "the event loop went %llu ms without polling its sockets: heartbeats were late "
            "(peers declare a node dead after %u ms of silence)",
            (unsigned long long)gap, ctx->dead_ms);
}

static void on_loop_handle_closed(uv_handle_t *h)
{
    net_ctx *ctx = h->data;
    ctx->loop_handles--;
    ctx_maybe_free(ctx);
}

int net_ctx_new(uv_loop_t *loop, const net_config *cfg, net_ctx **out, xerr *e)
{
    *out = NULL;
    if (!cfg->name || !wire_name_ok(cfg->name, strlen(cfg->name)))
        return xerr_set(e, XE_INVAL, "node name '%s' is not 1..%d characters of [A-Za-z0-9._:-]",
                        cfg->name ? cfg->name : "", WIRE_NAME_MAX);
    if (cfg->role < WIRE_ROLE_NODE || cfg->role > WIRE_ROLE_CLIENT)
        return xerr_set(e, XE_INVAL, "unknown role %u", cfg->role);
    if (!cfg->secret || cfg->secret->len == 0)
        return xerr_set(e, XE_INVAL, "a cluster secret is required");
    if (cfg->max_frame > WIRE_MAX_PAYLOAD)
        return xerr_set(e, XE_INVAL, "max_frame %u is above the wire limit %u", cfg->max_frame,
                        WIRE_MAX_PAYLOAD);
    unsigned hb = cfg->heartbeat_ms ? cfg->heartbeat_ms : NET_DEFAULT_HEARTBEAT_MS;
    unsigned dead = cfg->dead_ms ? cfg->dead_ms : NET_DEFAULT_DEAD_MS;
    unsigned cdead = cfg->client_dead_ms ? cfg->client_dead_ms : NET_DEFAULT_CLIENT_DEAD_MS;
    if ((uint64_t)dead <= 2ull * hb || (uint64_t)cdead <= 2ull * hb)
        return xerr_set(e, XE_INVAL,
                        "the dead-peer limit (%u ms, %u ms for clients) must be more than twice "
                        "the heartbeat period (%u ms)",
                        dead, cdead, hb);
    net_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return xerr_set(e, XE_NOMEM, "out of memory");
    ctx->loop = loop;
    snprintf(ctx->name, sizeof ctx->name, "%s", cfg->name);
    ctx->role = cfg->role;
    ctx->secret = *cfg->secret;
    ctx->heartbeat_ms = hb;
    ctx->dead_ms = dead;
    ctx->client_dead_ms = cdead;
    ctx->handshake_ms = cfg->handshake_ms ? cfg->handshake_ms : NET_DEFAULT_HANDSHAKE_MS;
    ctx->hwm = cfg->send_hwm ? cfg->send_hwm : NET_DEFAULT_HWM;
    ctx->max_frame = cfg->max_frame ? cfg->max_frame : NET_DEFAULT_MAX_FRAME;
    ctx->max_conns = cfg->max_conns ? cfg->max_conns : NET_DEFAULT_MAX_CONNS;
    ctx->send_delay_ms = cfg->send_delay_ms;
    ctx->sock_buf = cfg->sock_buf;
    ctx->log = cfg->log ? cfg->log : net_log_stderr;
    ctx->log_ud = cfg->log_ud;
    ctx->log_level = cfg->log_level;
    ctx->looked_at = uv_now(loop);
    uv_prepare_init(loop, &ctx->before_poll);
    uv_check_init(loop, &ctx->after_poll);
    ctx->before_poll.data = ctx->after_poll.data = ctx;
    uv_prepare_start(&ctx->before_poll, on_before_poll);
    uv_check_start(&ctx->after_poll, on_after_poll);
    uv_unref((uv_handle_t *)&ctx->before_poll);
    uv_unref((uv_handle_t *)&ctx->after_poll);
    ctx->loop_handles = 2;
    *out = ctx;
    return 0;
}

void net_ctx_free(net_ctx *ctx)
{
    if (!ctx || ctx->dying) return;
    ctx->dying = 1;
    uv_close((uv_handle_t *)&ctx->before_poll, on_loop_handle_closed);
    uv_close((uv_handle_t *)&ctx->after_poll, on_loop_handle_closed);
    for (net_listener *l = ctx->listeners; l; l = l->next) net_listener_close(l);
    for (net_conn *c = ctx->conns; c; c = c->next) {
        if (c->state == ST_CLOSING) continue;
        if (!c->why_msg[0]) {
            c->why = NET_CLOSE_LOCAL;
            snprintf(c->why_msg, sizeof c->why_msg, "shutting down");
        }
        conn_close_now(c);
    }
    ctx_maybe_free(ctx);
}

size_t net_ctx_nconns(const net_ctx *ctx) { return ctx->nconns; }
unsigned net_ctx_heartbeat_ms(const net_ctx *ctx) { return ctx->heartbeat_ms; }
unsigned net_ctx_dead_ms(const net_ctx *ctx) { return ctx->dead_ms; }
void net_ctx_set_role(net_ctx *ctx, uint8_t role) { ctx->role = role; }
