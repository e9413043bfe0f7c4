/*
 * client.c: the client side of the cluster protocol, for ares-sql --connect
 * (cluster.h has the contract).
 *
 * The client owns a private libuv loop with one connection to the
 * coordinator.  Every call runs that loop until its answer is in, so callers
 * see a blocking API while heartbeats, results of earlier push queries and
 * backpressure keep working.  A request is a QUERY (or a run of INGEST
 * chunks) with a fresh request id; its answer is a sequence of RESULT parts
 * (node.h, enum res_part) ending with DONE, or an ERROR.  Results that
 * outlive their request (push queries, SUBSCRIBE) stay in `results` until
 * their END.
 *
 * Input for ingest is read only when the previous chunk went into the
 * connection's send queue (net_send did not say XE_BUSY), so a slow cluster
 * slows the reader and memory stays at one chunk plus the send queue.
 *
 * Failover (docs/architecture.md, "The coordinator").  With several
 * addresses, a lost connection is not the end: the client finds the
 * coordinator that serves now (the active one announces its term; a standby
 * refuses clients) and goes on.
 *   - An ingest is a session (a random id) of numbered chunks.  The client
 *     keeps every chunk until the coordinator says that the stream's home
 *     and its shadow both have it (RES_ACKED), and sends the kept ones again
 *     through the new coordinator; the home skips those it has, so no row is
 *     lost or doubled.  Unacknowledged chunks are bounded (UNACKED_MAX).
 *   - A subscription keeps the hash of every row it got in the last
 *     KEEP_MS and the sink watermark they came at (RES_WM), and attaches
 *     again (ATTACH) with them: the new coordinator drops the rows its
 *     redeployed query produces again.
 *   - A push query (SELECT ... EMIT) is kept by the coordinator (in the
 *     catalog; QUERY with WIRE_F_FAILOVER) under a name it sends
 *     (RES_NAME), and attaches again like a subscription.
 *   - A statement in flight fails ("may or may not have run"); the next one
 *     goes to the new coordinator.
 *
 * Ingest straight to the home (docs/architecture.md).  An ingest asks for it
 * (WIRE_F_DIRECT) when no result is open; where the stream's home copies its
 * log to a shadow, the coordinator answers with the home's address
 * (RES_HOME) and the client moves its connection there: every chunk not
 * acknowledged goes to the home, the coordinator forwards nothing.  When
 * the home is lost (or refuses: it is no longer the home) the client goes
 * back to the coordinator with the same session, which sends it to the new
 * home (the copy, promoted), and the home skips the chunks it has.  The next
 * request reconnects to the coordinator (`away`).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/node.h"

#define INGEST_CHUNK (64 * 1024)
#define UNACKED_MAX (64u * 1024 * 1024) /* ingest bytes sent but not yet in at the home and shadow */
/* An interrupted ingest waits this long for the home's last answer (its
 * counts).  Up to UNACKED_MAX bytes may be queued ahead of it at a home that
 * is behind, which can take minutes; the client then says what it knows and
 * ends instead of ignoring the signal. */
#define CUT_WAIT_MS 2000
/* Input read waits this long for more before it goes as a chunk (as Kafka's
 * producer linger.ms, 5 ms by default since Kafka 4.0): a producer that
 * writes a few rows a millisecond then sends a chunk every 5 ms, not one per
 * read, and the coordinator and the home handle a fifth of the frames. */
#define LINGER_MS 5
#define FAILOVER_MS 30000               /* how long to look for a serving coordinator */
#define KEEP_MS 60000                   /* a subscription's rows kept for attaching again */
#define FAILOVER_DEAD_MS 2000           /* silence of the coordinator that starts a failover */
#define FAILOVER_CONNECT_MS 1000        /* connect and handshake, per address, while failing over */
#define HOME_RETRY_MS 100               /* a home that could not be reached: ask the coordinator again after this */

typedef struct cres {
    uint64_t req;
    exec_out out;
    int ncols;
    char **names;
    sql_type *types;
    char *name;         /* a subscription's query (RES_NAME): it can attach again */
    int64_t wm;         /* the sink's watermark of its last rows (RES_WM) */
    rowtab rows;        /* the rows it got (by row_hash, count: how often), for attaching again */
    struct cres *next;
} cres;

/* An ingest chunk not yet acknowledged. */
typedef struct chunk {
    struct chunk *next;
    uint64_t seq, line0;
    int last, end;
    size_t len;
    unsigned char data[];
} chunk;

struct clu_client {
    uv_loop_t loop;
    int loop_ok;
    net_ctx *net;
    net_conn *c;
    auth_secret secret;
    int ready, closed, why;
    char close_msg[300];
    uint64_t next_req;
    /* the request in flight */
    uint64_t cur;
    int cur_done, cur_rc;
    char cur_msg[1024];
    exec_out cur_out;
    const clu_ingest_opts *ing;
    exec_ingest_stats ing_st;
    int writable;
    cres *results;
    batch rb;
    uv_timer_t timer;
    /* failover */
    char addrs[1024];
    unsigned timeout_ms;
    int (*interrupted)(void);
    int active;         /* the coordinator announced its term on this connection */
    int at;             /* the index in addrs of the address connected to */
    uint64_t term;
    int failovers;
    /* the ingest session in flight */
    const char *ing_stream;
    uint64_t session, next_seq, lines_sent;
    int resend;          /* RES_RESEND came: the stream's home moved (a copy of its log took over) */
    chunk *unacked, *unacked_tail;
    size_t unacked_bytes;
    /* an ingest straight to the stream's home */
    int may_direct;      /* this ingest asks for it (no result is open) */
    int go_home;         /* RES_HOME came: move to home_addr */
    char home_addr[128], home_name[WIRE_NAME_MAX + 1];
    int away;            /* the connection is to a home, not to the coordinator */
    uint64_t lost_at;    /* the home was lost at (mono ns), until a chunk is acknowledged again */
};

static void quiet_log(void *ud, int level, const char *who, const char *msg)
{
    (void)ud;
    (void)who;
    if (level >= NET_LOG_ERROR) fprintf(stderr, "ares-sql: %s\n", msg);
}

static void cres_free(cres *r)
{
    if (!r) return;
    for (int i = 0; i < r->ncols; i++) free(r->names[i]);
    free(r->names);
    free(r->types);
    free(r->name);
    rowtab_fini(&r->rows);
    free(r);
}

/* Count a row a subscription got; rows older than KEEP_MS go when the
 * table grows. */
static void hrow_add(cres *r, uint64_t h, int64_t now)
{
    if (r->rows.len * 2 >= r->rows.cap) {
        int64_t cut = now - KEEP_MS;
        size_t live = rowtab_count(&r->rows, rowtab_since, &cut), cap = 1024;
        while (cap < live * 4 + 4) cap *= 2;
        if (rowtab_rehash(&r->rows, cap, rowtab_since, &cut)) return;
    }
    rowtab_ent *x = rowtab_slot(&r->rows, h);
    if (!x->count) {
        x->h = h;
        r->rows.len++;
    }
    x->count++;
    x->at = now;
}

static cres *cres_find(clu_client *c, uint64_t req)
{
    for (cres *r = c->results; r; r = r->next)
        if (r->req == req) return r;
    return NULL;
}

static void cres_end(clu_client *c, cres *r)
{
    for (cres **pp = &c->results; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    if (r->out.end) r->out.end(r->out.ctx);
    cres_free(r);
}

static void on_begin(clu_client *c, uint64_t req, wire_rd *r)
{
    uint8_t stream;
    uint16_t ncols;
    wire_get_u8(r, &stream);
    wire_get_u16(r, &ncols);
    if (r->err || req != c->cur) return;
    cres *x = calloc(1, sizeof *x);
    if (!x) return;
    x->req = req;
    x->out = c->cur_out;
    x->wm = INT64_MIN;
    x->names = calloc((size_t)ncols + 1, sizeof *x->names);
    x->types = calloc((size_t)ncols + 1, sizeof *x->types);
    if (!x->names || !x->types) {
        cres_free(x);
        return;
    }
    for (int i = 0; i < ncols; i++) {
        wire_str s;
        uint8_t t;
        wire_get_str(r, &s);
        wire_get_u8(r, &t);
        if (r->err || !(x->names[i] = malloc(s.n + 1))) {
            cres_free(x);
            return;
        }
        memcpy(x->names[i], s.p, s.n);
        x->names[i][s.n] = 0;
        x->types[i] = (sql_type)t;
        x->ncols = i + 1;
    }
    /* a new result for the same request replaces an open one */
    cres *old = cres_find(c, req);
    if (old) cres_end(c, old);
    x->next = c->results;
    c->results = x;
    fmt_schema sc = {x->ncols, (const char *const *)x->names, x->types};
    if (x->out.begin) x->out.begin(x->out.ctx, &sc, stream);
}

static void on_result(clu_client *c, const wire_msg *m, uint16_t flags)
{
    uint64_t req = m->u.result.req_id;
    if (m->u.result.rows.n < 1) return;
    int part = (unsigned char)m->u.result.rows.p[0];
    wire_rd r;
    wire_rd_init(&r, m->u.result.rows.p + 1, m->u.result.rows.n - 1);
    switch (part) {
    case RES_BEGIN: on_begin(c, req, &r); break;
    case RES_ROWS: {
        cres *x = cres_find(c, req);
        if (!x) break;
        xerr err;
        batch_reset(&c->rb);
        if (batch_decode(r.p, r.len, &c->rb, &err) != 0) break;
        if (x->name) {
            int64_t now = clock_mono_ns() / 1000000;
            for (int i = 0; i < c->rb.nrows; i++) hrow_add(x, row_hash(batch_row(&c->rb, i), c->rb.ncols), now);
        }
        if (x->out.rows) x->out.rows(x->out.ctx, &c->rb);
        break;
    }
    case RES_WM: {
        cres *x = cres_find(c, req);
        if (x && r.len >= 8) x->wm = (int64_t)be64_get(r.p);
        break;
    }
    case RES_NAME: {
        cres *x = cres_find(c, req);
        if (x && !x->name && (x->name = malloc(r.len + 1))) {
            memcpy(x->name, r.p, r.len);
            x->name[r.len] = 0;
        }
        break;
    }
    case RES_WARN:
        /* shown even when quiet: rows were lost */
        fprintf(stderr, "ares-sql: WARNING: %.*s\n", (int)r.len, (const char *)r.p);
        break;
    case RES_RESEND:
        if (req == c->cur) c->resend = 1;
        break;
    case RES_HOME: {
        wire_str a, nm;
        wire_get_str(&r, &a);
        wire_get_str(&r, &nm);
        if (r.err || req != c->cur || !c->may_direct || a.n >= sizeof c->home_addr || nm.n > WIRE_NAME_MAX) break;
        memcpy(c->home_addr, a.p, a.n);
        c->home_addr[a.n] = 0;
        memcpy(c->home_name, nm.p, nm.n);
        c->home_name[nm.n] = 0;
        c->go_home = 1;
        break;
    }
    case RES_ACKED: {
        if (req != c->cur || r.len < 8) break;
        uint64_t seq = be64_get(r.p);
        c->lost_at = 0;
        while (c->unacked && c->unacked->seq <= seq && !c->unacked->last) {
            chunk *k = c->unacked;
            c->unacked = k->next;
            c->unacked_bytes -= k->len;
            free(k);
        }
        if (!c->unacked) c->unacked_tail = NULL;
        break;
    }
    case RES_END: {
        cres *x = cres_find(c, req);
        if (x) cres_end(c, x);
        break;
    }
    case RES_NOTICE: {
        if (req == c->cur && c->ing) { /* the ingest's home: a header column ignored */
            if (!c->ing->on_notice) break;
            char *s = malloc(r.len + 1);
            if (s) {
                memcpy(s, r.p, r.len);
                s[r.len] = 0;
                c->ing->on_notice(c->ing->ctx, 0, s);
                free(s);
            }
            break;
        }
        cres *x = cres_find(c, req);
        const exec_out *o = req == c->cur ? &c->cur_out : x ? &x->out : NULL;
        if (o && o->notice) {
            char *s = malloc(r.len + 1);
            if (s) {
                memcpy(s, r.p, r.len);
                s[r.len] = 0;
                o->notice(o->ctx, s);
                free(s);
            }
        }
        break;
    }
    case RES_REJECT: {
        int64_t line;
        wire_str msg;
        wire_get_i64(&r, &line);
        wire_get_blob(&r, &msg);
        if (r.err || req != c->cur || !c->ing || !c->ing->on_reject) break;
        char *s = malloc(msg.n + 1);
        if (s) {
            memcpy(s, msg.p, msg.n);
            s[msg.n] = 0;
            c->ing->on_reject(c->ing->ctx, line, s);
            free(s);
        }
        break;
    }
    case RES_DONE:
        if (req != c->cur) break;
        if (r.len >= 24) {
            c->ing_st.lines = (int64_t)be64_get(r.p);
            c->ing_st.rows = (int64_t)be64_get(r.p + 8);
            c->ing_st.rejected = (int64_t)be64_get(r.p + 16);
        }
        if (r.len >= 32) c->ing_st.late = (int64_t)be64_get(r.p + 24);
        if (r.len >= 40) c->ing_st.late_partial = be64_get(r.p + 32) != 0;
        c->cur_done = 1;
        break;
    default: break;
    }
    (void)flags;
}

static void cl_on_ready(net_conn *nc, void *ud)
{
    (void)nc;
    clu_client *c = ud;
    c->ready = 1;
}

static void cl_on_frame(net_conn *nc, const wire_frame *f, void *ud)
{
    clu_client *c = ud;
    wire_msg m;
    xerr err;
    if (wire_msg_get(f, &m, &err)) {
        net_abort(nc, NET_CLOSE_PROTO, "%s", err.msg);
        return;
    }
    if (m.type == WIRE_RESULT) on_result(c, &m, f->flags);
    else if (m.type == WIRE_TERM && m.u.term.kind == WIRE_TERM_ANNOUNCE) {
        c->active = 1;
        c->term = m.u.term.term;
    } else if (m.type == WIRE_ERROR) {
        uint64_t req = m.u.error.req_id;
        if (req && req == c->cur) {
            c->cur_rc = m.u.error.code < 0 ? m.u.error.code : XE_IO;
            snprintf(c->cur_msg, sizeof c->cur_msg, "%.*s", (int)m.u.error.msg.n, m.u.error.msg.p);
            c->cur_done = 1;
            cres *x = cres_find(c, req);
            if (x) cres_end(c, x);
        } else if (!req) {
            snprintf(c->close_msg, sizeof c->close_msg, "%.*s", (int)m.u.error.msg.n, m.u.error.msg.p);
            /* looking for the coordinator, this node says it is not it */
            if (!c->active && !c->away) net_close(nc, "not the coordinator");
        }
    }
}

static void cl_on_writable(net_conn *nc, void *ud)
{
    (void)nc;
    ((clu_client *)ud)->writable = 1;
}

static void cl_on_close(net_conn *nc, int why, const char *msg, void *ud)
{
    (void)nc;
    clu_client *c = ud;
    c->closed = 1;
    c->why = why;
    c->c = NULL;
    if (msg && !c->close_msg[0]) snprintf(c->close_msg, sizeof c->close_msg, "%s", msg);
    /* open results wait for a failover (fail_results ends them if none) */
}

static void fail_results(clu_client *c)
{
    while (c->results) cres_end(c, c->results);
}

static const net_handlers cl_handlers = {cl_on_ready, cl_on_frame, cl_on_writable, cl_on_close};

static void on_timer(uv_timer_t *t) { (void)t; }

/* Run the loop once, waking at least every ms. */
static void spin(clu_client *c, unsigned ms)
{
    uv_timer_start(&c->timer, on_timer, ms, 0);
    uv_run(&c->loop, UV_RUN_ONCE);
}

static int closed_err(clu_client *c, xerr *err)
{
    return xerr_set(err, c->why == NET_CLOSE_AUTH ? XE_AUTH : XE_IO, "the connection to the coordinator was lost: %s%s%s",
                    net_close_name(c->why), c->close_msg[0] ? ": " : "", c->close_msg);
}

static int send_wait(clu_client *c, uint8_t type, uint16_t flags, const void *p, size_t len, xerr *err);

/* Each address in turn, from the one at index `from` (wrapping around),
 * until one answers as the active coordinator. */
static int connect_any(clu_client *c, int from, xerr *err)
{
    char list[1024], *addr[64];
    snprintf(list, sizeof list, "%s", c->addrs);
    char *save = NULL, *tok;
    int n = 0;
    for (tok = strtok_r(list, ",", &save); tok && n < 64; tok = strtok_r(NULL, ",", &save)) addr[n++] = tok;
    int rc = xerr_set(err, XE_INVAL, "--connect needs HOST:PORT");
    for (int k = 0; k < n; k++) {
        int i = ((from % n) + n + k) % n;
        tok = addr[i];
        char *colon = strrchr(tok, ':');
        if (!colon) {
            rc = xerr_set(err, XE_INVAL, "--connect needs HOST:PORT, not '%s'", tok);
            continue;
        }
        *colon = 0;
        int port = atoi(colon + 1);
        c->closed = c->ready = c->active = 0;
        c->close_msg[0] = 0;
        if ((rc = net_connect(c->net, tok, port, c->timeout_ms, &cl_handlers, c, &c->c, err))) continue;
        uint64_t until = clock_mono_ns() + (uint64_t)c->timeout_ms * 1000000ull;
        while (!c->active && !c->closed && clock_mono_ns() < until) spin(c, 100);
        if (c->active && !c->closed) {
            c->at = i;
            return 0;
        }
        if (!c->closed) net_abort(c->c, NET_CLOSE_LOCAL, "no answer");
        while (!c->closed) spin(c, 10);
        if (c->why == NET_CLOSE_AUTH)
            rc = xerr_set(err, XE_AUTH,
                          "%s:%s refused our cluster secret (authentication failed): check --secret-file", tok,
                          colon + 1);
        else
            rc = xerr_set(err, XE_IO, "cannot connect to %s:%s: %s%s%s", tok, colon + 1, net_close_name(c->why),
                          c->close_msg[0] ? ": " : "", c->close_msg);
    }
    return rc;
}

/* The connection is lost: find the coordinator that serves now and attach
 * the subscriptions and push queries again.  XE_IO when none answers
 * within FAILOVER_MS (or only one address was given). */
static int failover(clu_client *c, xerr *err)
{
    if (!strchr(c->addrs, ',')) {
        fail_results(c);
        return closed_err(c, err);
    }
    char lost[300];
    snprintf(lost, sizeof lost, "%s", c->close_msg);
    uint64_t until = clock_mono_ns() + FAILOVER_MS * 1000000ull;
    int rc;
    /* the address just lost is the least likely to serve: it is tried last;
     * a serving coordinator answers within milliseconds, while one cut off
     * would hold each round for the whole connect timeout */
    int from = c->at + 1;
    unsigned timeout = c->timeout_ms;
    if (c->timeout_ms > FAILOVER_CONNECT_MS) c->timeout_ms = FAILOVER_CONNECT_MS;
    for (;;) {
        if ((rc = connect_any(c, from, err)) == 0) break;
        if (c->interrupted && c->interrupted()) {
            c->timeout_ms = timeout;
            fail_results(c);
            return xerr_set(err, XE_IO, "the connection to the coordinator was lost (%s); interrupted while looking "
                            "for another", lost);
        }
        if (rc == XE_AUTH || clock_mono_ns() >= until) {
            c->timeout_ms = timeout;
            fail_results(c);
            return xerr_set(err, rc, "the connection to the coordinator was lost (%s) and no coordinator answered "
                            "within %d s: %s", lost, FAILOVER_MS / 1000, err->msg);
        }
        uv_sleep(50);
    }
    c->timeout_ms = timeout;
    c->failovers++;
    fprintf(stderr, "ares-sql: the coordinator was lost (%s); reconnected to the coordinator of term %llu\n", lost,
            (unsigned long long)c->term);
    for (cres *r = c->results, *nx; r; r = nx) {
        nx = r->next;
        if (!r->name) {
            if (r->out.notice) r->out.notice(r->out.ctx, "the coordinator was lost: this push query ended");
            cres_end(c, r);
            continue;
        }
        /* what it has: (hash, times) of its recent rows */
        sbuf rows;
        sbuf_init(&rows);
        int64_t cut = clock_mono_ns() / 1000000 - KEEP_MS;
        for (size_t i = 0; i < r->rows.cap; i++) {
            if (!r->rows.v[i].count || r->rows.v[i].at < cut) continue;
            unsigned char e[12];
            be64_put(e, r->rows.v[i].h);
            be32_put(e + 8, r->rows.v[i].count);
            if (sbuf_add(&rows, e, sizeof e)) break;
        }
        r->req = c->next_req++;
        wire_msg m = {.type = WIRE_ATTACH};
        m.u.attach.req_id = r->req;
        m.u.attach.query = wire_str_of(r->name);
        m.u.attach.wm = r->wm;
        m.u.attach.rows = (wire_str){rows.p, (uint32_t)rows.len};
        sbuf b;
        sbuf_init(&b);
        rc = wire_msg_payload(&b, &m, err);
        if (!rc) rc = send_wait(c, WIRE_ATTACH, 0, b.p, b.len, err);
        sbuf_fini(&b);
        sbuf_fini(&rows);
    }
    return 0;
}

/* Close the connection (a home's, or a coordinator's to leave for a home). */
static void drop_conn(clu_client *c, const char *why)
{
    if (c->c && !c->closed) net_close(c->c, why);
    while (c->c && !c->closed) spin(c, 10);
}

/* After an ingest straight to a home, the next request goes to the
 * coordinator again: the one of the addresses that serves. */
static int back_to_coord(clu_client *c, xerr *err)
{
    if (!c->away) return 0;
    drop_conn(c, "bye");
    c->away = 0;
    uint64_t until = clock_mono_ns() + FAILOVER_MS * 1000000ull;
    for (;;) {
        int rc = connect_any(c, c->at, err);
        if (!rc) return 0;
        if (rc == XE_AUTH || clock_mono_ns() >= until) return rc;
        if (c->interrupted && c->interrupted())
            return xerr_set(err, XE_BUSY, "interrupted while connecting to the coordinator again: %s", err->msg);
        uv_sleep(50);
    }
}

/* Ready for a request: on the coordinator's connection (after an ingest
 * straight to a home), or failed over to the coordinator that serves now. */
static int ready_for_request(clu_client *c, xerr *err)
{
    if (c->away) return back_to_coord(c, err);
    return c->closed ? failover(c, err) : 0;
}

/* RES_HOME: the connection moves to the stream's home (its handshake only:
 * a home announces no term).  XE_IO when it cannot be reached. */
static int connect_home(clu_client *c, xerr *err)
{
    char host[sizeof c->home_addr];
    snprintf(host, sizeof host, "%s", c->home_addr);
    char *colon = strrchr(host, ':');
    if (!colon) return xerr_set(err, XE_PROTO, "the coordinator sent a bad address for the stream's home: '%s'", host);
    *colon = 0;
    drop_conn(c, "the ingest goes straight to the stream's home");
    c->away = 1;
    c->closed = c->ready = c->active = 0;
    c->close_msg[0] = 0;
    int rc = net_connect(c->net, host, atoi(colon + 1), c->timeout_ms, &cl_handlers, c, &c->c, err);
    if (rc) {
        c->closed = 1;
        return rc;
    }
    uint64_t until = clock_mono_ns() + (uint64_t)c->timeout_ms * 1000000ull;
    while (!c->ready && !c->closed && clock_mono_ns() < until) spin(c, 20);
    if (c->ready && !c->closed) return 0;
    drop_conn(c, "no answer");
    return xerr_set(err, XE_IO, "cannot connect to the stream's home %s at %s: %s%s%s", c->home_name, c->home_addr,
                    net_close_name(c->why), c->close_msg[0] ? ": " : "", c->close_msg);
}

int clu_client_open(const clu_client_opts *o, clu_client **out, xerr *err)
{
    *out = NULL;
    clu_client *c = calloc(1, sizeof *c);
    if (!c) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc;
    if (!o->secret_file) {
        free(c);
        return xerr_set(err, XE_INVAL, "--connect needs the cluster secret: --secret-file FILE");
    }
    if ((rc = auth_secret_load(o->secret_file, &c->secret, err))) {
        free(c);
        return rc;
    }
    if (uv_loop_init(&c->loop)) {
        auth_secret_fini(&c->secret);
        free(c);
        return xerr_set(err, XE_NOMEM, "cannot create an event loop");
    }
    c->loop_ok = 1;
    uv_timer_init(&c->loop, &c->timer);
    c->next_req = 1;
    batch_init(&c->rb, 1, 16);
    char name[WIRE_NAME_MAX + 1];
    snprintf(name, sizeof name, "%s-%d", o->name ? o->name : "ares-sql", (int)getpid());
    net_config nc;
    memset(&nc, 0, sizeof nc);
    nc.name = name;
    nc.role = WIRE_ROLE_CLIENT;
    nc.secret = &c->secret;
    nc.max_frame = 4u * 1024 * 1024;
    /* A slow write to our stdout does not count as silence (unread bytes
     * are not silence, net.c).  With somewhere to fail over to, a coordinator
     * cut off from us is given up after FAILOVER_DEAD_MS; with one address
     * there is nothing better to do than wait. */
    nc.dead_ms = o->addrs && strchr(o->addrs, ',') ? FAILOVER_DEAD_MS : 30000;
    nc.log = quiet_log;
    if ((rc = net_ctx_new(&c->loop, &nc, &c->net, err))) {
        clu_client_free(c);
        return rc;
    }
    snprintf(c->addrs, sizeof c->addrs, "%s", o->addrs ? o->addrs : "");
    c->timeout_ms = o->timeout_ms ? o->timeout_ms : 5000;
    c->interrupted = o->interrupted;
    if ((rc = connect_any(c, 0, err))) {
        clu_client_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void clu_client_free(clu_client *c)
{
    if (!c) return;
    if (c->net) {
        if (c->c) net_close(c->c, "bye");
        /* let BYE go out (bounded by the net layer's flush deadline) */
        for (int i = 0; i < 200 && c->c && !c->closed; i++) spin(c, 10);
        net_ctx_free(c->net);
        c->net = NULL;
    }
    while (c->results) cres_end(c, c->results);
    if (c->loop_ok) {
        uv_close((uv_handle_t *)&c->timer, NULL);
        uv_run(&c->loop, UV_RUN_DEFAULT);
        uv_loop_close(&c->loop);
    }
    batch_fini(&c->rb);
    auth_secret_fini(&c->secret);
    free(c);
}

/* Send a frame, waiting while the connection is over its high-water mark.
 * A coordinator that reads nothing (stopped, or its own sends backed up)
 * keeps it there: a signal ends the wait (XE_BUSY, "interrupted ..."), so
 * that an interrupted ingest or statement does not hang in it. */
static int send_wait(clu_client *c, uint8_t type, uint16_t flags, const void *p, size_t len, xerr *err)
{
    for (;;) {
        if (c->closed) return closed_err(c, err);
        c->writable = 0;
        int rc = net_send(c->c, type, flags, p, len);
        if (rc == 0) return 0;
        if (rc != XE_BUSY) return xerr_set(err, rc, "cannot send to the coordinator: %s", xerr_name(rc));
        while (!c->writable && !c->closed) {
            if (c->interrupted && c->interrupted())
                return xerr_set(err, XE_BUSY, "interrupted while the coordinator was not reading");
            spin(c, 100);
        }
    }
}

int clu_client_exec(clu_client *c, const char *sql, const exec_out *out, xerr *err)
{
    int rc;
    if ((rc = ready_for_request(c, err))) return rc;
    c->cur = c->next_req++;
    c->cur_done = 0;
    c->cur_rc = 0;
    c->cur_msg[0] = 0;
    c->cur_out = out ? *out : (exec_out){0};
    c->ing = NULL;
    wire_msg m = {.type = WIRE_QUERY};
    m.u.query.req_id = c->cur;
    m.u.query.sql = wire_str_of(sql);
    sbuf b;
    sbuf_init(&b);
    rc = wire_msg_payload(&b, &m, err);
    /* with somewhere to fail over to, a push query is kept for us to attach again */
    if (!rc) rc = send_wait(c, WIRE_QUERY, strchr(c->addrs, ',') ? WIRE_F_FAILOVER : 0, b.p, b.len, err);
    sbuf_fini(&b);
    if (rc) return rc;
    while (!c->cur_done && !c->closed) {
        /* Ctrl-C or SIGTERM ends the wait (a coordinator that never
         * answered held `timeout 5 ares-sql -e 'SHOW QUERIES;'` for good) */
        if (c->interrupted && c->interrupted())
            return xerr_set(err, XE_BUSY, "interrupted while waiting for the coordinator's answer; the statement "
                            "may or may not have run");
        spin(c, 100);
    }
    if (!c->cur_done) {
        rc = closed_err(c, err);
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        if (failover(c, err) == 0)
            return xerr_set(err, XE_IO, "%s; the statement may or may not have run (reconnected: run it again if it "
                            "did not)", why);
        return rc;
    }
    if (c->cur_rc) return wire_error_parse(err, c->cur_rc, c->cur_msg, strlen(c->cur_msg));
    return 0;
}

/* Send a kept chunk (again, after a failover) as part of request c->cur. */
static int send_kept(clu_client *c, const clu_ingest_opts *o, const chunk *k, xerr *err)
{
    wire_msg m = {.type = WIRE_INGEST, .flags = (k->last ? WIRE_F_LAST : 0) | (c->may_direct && !c->away ? WIRE_F_DIRECT : 0)};
    m.u.ingest.req_id = c->cur;
    m.u.ingest.stream = wire_str_of(c->ing_stream);
    m.u.ingest.format = o->format_set ? (uint8_t)o->format : WIRE_FMT_STREAM;
    m.u.ingest.header = (uint8_t)o->header;
    m.u.ingest.end = (uint8_t)k->end;
    m.u.ingest.session = c->session;
    m.u.ingest.seq = k->seq;
    m.u.ingest.line0 = k->line0;
    m.u.ingest.delim = (uint8_t)o->delim;
    m.u.ingest.has_null = o->null_string != NULL;
    m.u.ingest.null_string = wire_str_of(o->null_string ? o->null_string : "");
    m.u.ingest.data = (wire_str){(const char *)k->data, (uint32_t)k->len};
    sbuf b;
    sbuf_init(&b);
    int rc = wire_msg_payload(&b, &m, err);
    if (!rc) rc = send_wait(c, WIRE_INGEST, m.flags, b.p, b.len, err);
    sbuf_fini(&b);
    return rc;
}

/* A new chunk: kept until acknowledged, then sent. */
static int send_chunk(clu_client *c, const clu_ingest_opts *o, const void *p, size_t n, int last, xerr *err)
{
    chunk *k = malloc(sizeof *k + n);
    if (!k) return xerr_set(err, XE_NOMEM, "out of memory");
    k->next = NULL;
    k->seq = ++c->next_seq;
    k->line0 = c->lines_sent;
    k->last = last;
    k->end = last && o->end_of_stream;
    k->len = n;
    if (n) memcpy(k->data, p, n);
    for (size_t i = 0; i < n; i++) c->lines_sent += ((const unsigned char *)p)[i] == '\n';
    if (c->unacked_tail) c->unacked_tail->next = k;
    else c->unacked = k;
    c->unacked_tail = k;
    c->unacked_bytes += n;
    return c->closed ? 0 : send_kept(c, o, k, err); /* a lost connection: resend_all sends it */
}

/* After a failover (or, straight to a home, after moving to it or away
 * from it): the ingest goes on under a new request id with every chunk not
 * acknowledged yet (the home skips those it has). */
static int resend_all(clu_client *c, const clu_ingest_opts *o, xerr *err)
{
    int rc;
    if (c->go_home) { /* RES_HOME */
        c->go_home = 0;
        rc = connect_home(c, err);
        if (rc == XE_PROTO) return rc;
        if (rc && !c->lost_at) c->lost_at = clock_mono_ns();
    } else if (c->away) { /* the home was lost, or refused: ask the coordinator where it is now */
        if (!c->lost_at) c->lost_at = clock_mono_ns();
        else uv_sleep(HOME_RETRY_MS);
        if (clock_mono_ns() - c->lost_at > FAILOVER_MS * 1000000ull)
            return xerr_set(err, XE_IO, "the connection to stream %s's home %s was lost (%s) and no home took its "
                            "input within %d s", c->ing_stream, c->home_name, c->close_msg, FAILOVER_MS / 1000);
        if ((rc = back_to_coord(c, err))) return rc;
    } else if ((rc = failover(c, err)))
        return rc;
    if (c->closed) return 0; /* the home could not be reached: back to the coordinator next */
    c->cur = c->next_req++;
    rc = 0;
    for (chunk *k = c->unacked; k && !rc; k = k->next) rc = send_kept(c, o, k, err);
    return rc;
}

/* The stream's home moved within the same coordinator (RES_RESEND): the
 * chunks not acknowledged go again, in order, to the new home. */
static int resend_kept(clu_client *c, const clu_ingest_opts *o, xerr *err)
{
    c->resend = 0;
    int rc = 0;
    for (chunk *k = c->unacked; k && !rc; k = k->next) rc = send_kept(c, o, k, err);
    return rc;
}

static void drop_unacked(clu_client *c)
{
    while (c->unacked) {
        chunk *k = c->unacked;
        c->unacked = k->next;
        free(k);
    }
    c->unacked_tail = NULL;
    c->unacked_bytes = 0;
}

static uint64_t new_session(void)
{
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v) v = 0;
        close(fd);
    }
    if (!v) v = clock_mono_ns() ^ ((uint64_t)getpid() << 32);
    return v ? v : 1;
}

/* An interrupted ingest whose home has not answered within CUT_WAIT_MS: what
 * the client knows, through the ingest's notice callback.  The lines of the
 * chunks acknowledged are in the stream (at the home and its shadow); the
 * rest were sent, and whether they go in depends on how far they got (the
 * coordinator and the home append what reached them). */
static void cut_unanswered(clu_client *c, const clu_ingest_opts *o)
{
    int64_t acked = (int64_t)(c->unacked ? c->unacked->line0 : c->lines_sent);
    if (!o->on_notice) return;
    char msg[320];
    snprintf(msg, sizeof msg,
             "interrupted: %lld input lines sent to stream %s, %lld of them acknowledged by its home; the other %lld "
             "were on their way and may still be appended (the home did not answer within %d ms)",
             (long long)c->lines_sent, c->ing_stream ? c->ing_stream : "?", (long long)acked,
             (long long)(c->lines_sent - acked), CUT_WAIT_MS);
    o->on_notice(o->ctx, 0, msg);
}

int clu_client_ingest(clu_client *c, const char *stream, int fd, const clu_ingest_opts *o, exec_ingest_stats *st,
                      xerr *err)
{
    memset(st, 0, sizeof *st);
    int rc = 0, cut = 0;
    if ((rc = ready_for_request(c, err))) return rc;
    c->may_direct = !c->results; /* a home cannot carry open results */
    c->go_home = 0;
    c->lost_at = 0;
    c->cur = c->next_req++;
    c->cur_done = 0;
    c->cur_rc = 0;
    c->cur_msg[0] = 0;
    c->cur_out = (exec_out){0};
    c->ing = o;
    c->ing_stream = stream;
    c->session = new_session();
    c->resend = 0;
    c->next_seq = c->lines_sent = 0;
    memset(&c->ing_st, 0, sizeof c->ing_st);
    char *buf = malloc(INGEST_CHUNK);
    if (!buf) return xerr_set(err, XE_NOMEM, "out of memory");
    size_t fill = 0; /* input read, not sent yet: it waits up to LINGER_MS for more */
    uint64_t due = 0;
    for (int eof = 0; !eof;) {
        if (c->cur_done) break; /* an error came back: stop sending */
        if (o->stop && o->stop(o->ctx)) {
            cut = 1;
            break;
        }
        if ((c->closed || c->go_home) && (rc = resend_all(c, o, err))) break;
        if (c->resend && (rc = resend_kept(c, o, err))) break;
        if (c->unacked_bytes > UNACKED_MAX) { /* the home is behind: wait for it */
            spin(c, 20);
            continue;
        }
        int wait = 20;
        if (fill) {
            uint64_t now = clock_mono_ns();
            wait = now >= due ? 0 : (int)((due - now + 999999) / 1000000);
        }
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int pr = poll(&pf, 1, wait);
        uv_run(&c->loop, UV_RUN_NOWAIT);
        if (pr > 0) {
            ssize_t got = read(fd, buf + fill, INGEST_CHUNK - fill);
            if (got < 0 && errno != EINTR && errno != EAGAIN) {
                rc = xerr_set(err, XE_IO, "reading the input: %s", strerror(errno));
                break;
            }
            if (got == 0) eof = 1;
            if (got > 0) {
                if (!fill) due = clock_mono_ns() + LINGER_MS * 1000000ull;
                fill += (size_t)got;
            }
        }
        if (fill && (eof || fill == INGEST_CHUNK || clock_mono_ns() >= due)) {
            rc = send_chunk(c, o, buf, fill, 0, err);
            fill = 0;
            if (rc) {
                if (rc == XE_BUSY && o->stop && o->stop(o->ctx)) rc = 0, cut = 1; /* stopped in send_wait */
                break;
            }
        }
    }
    if (fill && !rc && !c->cur_done) { /* stopped with input read: it goes, as read input always did */
        rc = send_chunk(c, o, buf, fill, 0, err);
        if (rc == XE_BUSY) rc = 0;
    }
    free(buf);
    if (!rc && !c->cur_done) {
        /* the last chunk ends the stream when asked, unless the input was cut short */
        clu_ingest_opts o2 = *o;
        if (cut) o2.end_of_stream = 0;
        rc = send_chunk(c, &o2, NULL, 0, 1, err);
        int told = 0;
        if (rc == XE_BUSY && cut) { /* the coordinator reads nothing: the last chunk could not go */
            cut_unanswered(c, o);
            rc = 0;
            told = 1;
        }
        uint64_t give_up = cut ? clock_mono_ns() + CUT_WAIT_MS * 1000000ull : 0;
        while (!rc && !c->cur_done && !told) {
            /* a signal after the input's end (the last chunk sent, the home
             * behind): the same bounded wait as a cut (an experiment's
             * producers waited 13 minutes here for a stalled home) */
            if (!give_up && o->stop && o->stop(o->ctx)) {
                cut = 1;
                give_up = clock_mono_ns() + CUT_WAIT_MS * 1000000ull;
            }
            if (give_up && clock_mono_ns() >= give_up) {
                cut_unanswered(c, o);
                break;
            }
            if (c->closed || c->go_home) rc = resend_all(c, &o2, err);
            else if (c->resend) rc = resend_kept(c, &o2, err);
            else spin(c, give_up ? 20 : 100);
        }
    }
    drop_unacked(c);
    c->may_direct = c->go_home = 0;
    *st = c->ing_st;
    c->ing = NULL;
    c->ing_stream = NULL;
    if (rc) return rc;
    if (c->cur_rc) return wire_error_parse(err, c->cur_rc, c->cur_msg, strlen(c->cur_msg));
    return cut ? XE_BUSY : 0;
}

int clu_client_poll(clu_client *c, int timeout_ms, xerr *err)
{
    if (c->away) return back_to_coord(c, err);
    if (timeout_ms <= 0 && !c->closed) uv_run(&c->loop, UV_RUN_NOWAIT);
    uint64_t until = clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
    while (!c->closed) {
        uint64_t now = clock_mono_ns();
        if (now >= until) break;
        unsigned ms = (unsigned)((until - now) / 1000000ull);
        spin(c, ms ? ms : 1);
    }
    return c->closed ? failover(c, err) : 0;
}

int clu_client_open_results(const clu_client *c)
{
    int k = 0;
    for (cres *r = c->results; r; r = r->next) k++;
    return k;
}

int clu_client_cancel(clu_client *c, int timeout_ms, xerr *err)
{
    if (!c->results) return 0;
    int rc = 0;
    if (!c->closed) {
        wire_msg m = {.type = WIRE_CANCEL};
        m.u.cancel.req_id = 0;
        sbuf b;
        sbuf_init(&b);
        rc = wire_msg_payload(&b, &m, err);
        if (!rc) rc = send_wait(c, WIRE_CANCEL, 0, b.p, b.len, err);
        sbuf_fini(&b);
        uint64_t until = clock_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
        while (!rc && c->results && !c->closed && clock_mono_ns() < until) spin(c, 20);
    }
    /* the coordinator did not answer in time (or is gone): end them here */
    fail_results(c);
    return rc;
}

struct uv_loop_s *clu_client_loop(clu_client *c) { return &c->loop; }
