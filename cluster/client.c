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
 * An ingest's session (its chunks, kept until acknowledged, and sending
 * them again) is client_ingest.c, on top of this file (client_int.h).
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/client_int.h"


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
void cl_spin(clu_client *c, unsigned ms)
{
    uv_timer_start(&c->timer, on_timer, ms, 0);
    uv_run(&c->loop, UV_RUN_ONCE);
}

static int closed_err(clu_client *c, xerr *err)
{
    return xerr_set(err, c->why == NET_CLOSE_AUTH ? XE_AUTH : XE_IO, "the connection to the coordinator was lost: %s%s%s",
                    net_close_name(c->why), c->close_msg[0] ? ": " : "", c->close_msg);
}

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
        while (!c->active && !c->closed && clock_mono_ns() < until) cl_spin(c, 100);
        if (c->active && !c->closed) {
            c->at = i;
            return 0;
        }
        if (!c->closed) net_abort(c->c, NET_CLOSE_LOCAL, "no answer");
        while (!c->closed) cl_spin(c, 10);
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
int cl_failover(clu_client *c, xerr *err)
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
        if (!rc) rc = cl_send_wait(c, WIRE_ATTACH, 0, b.p, b.len, err);
        sbuf_fini(&b);
        sbuf_fini(&rows);
    }
    return 0;
}

/* Close the connection (a home's, or a coordinator's to leave for a home). */
static void drop_conn(clu_client *c, const char *why)
{
    if (c->c && !c->closed) net_close(c->c, why);
    while (c->c && !c->closed) cl_spin(c, 10);
}

/* After an ingest straight to a home, the next request goes to the
 * coordinator again: the one of the addresses that serves. */
int cl_back_to_coord(clu_client *c, xerr *err)
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
int cl_ready_for_request(clu_client *c, xerr *err)
{
    if (c->away) return cl_back_to_coord(c, err);
    return c->closed ? cl_failover(c, err) : 0;
}

/* RES_HOME: the connection moves to the stream's home (its handshake only:
 * a home announces no term).  XE_IO when it cannot be reached. */
int cl_connect_home(clu_client *c, xerr *err)
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
    while (!c->ready && !c->closed && clock_mono_ns() < until) cl_spin(c, 20);
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
        for (int i = 0; i < 200 && c->c && !c->closed; i++) cl_spin(c, 10);
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
int cl_send_wait(clu_client *c, uint8_t type, uint16_t flags, const void *p, size_t len, xerr *err)
{
    for (;;) {
        if (c->closed) return closed_err(c, err);
        c->writable = 0;
        int rc = net_send(c->c, type, flags, p, len);
        if (rc == 0) return 0;
        if (rc == XE_IO) {
            /* the connection is going down (a BYE, a write error): its close
             * comes within the net layer's flush deadline, and the caller
             * sees a lost connection it can fail over from */
            while (!c->closed) cl_spin(c, 10);
            return closed_err(c, err);
        }
        if (rc != XE_BUSY) return xerr_set(err, rc, "cannot send to the coordinator: %s", xerr_name(rc));
        while (!c->writable && !c->closed) {
            if (c->interrupted && c->interrupted())
                return xerr_set(err, XE_BUSY, "interrupted while the coordinator was not reading");
            cl_spin(c, 100);
        }
    }
}

int clu_client_exec(clu_client *c, const char *sql, const exec_out *out, xerr *err)
{
    int rc;
    if ((rc = cl_ready_for_request(c, err))) return rc;
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
    if (!rc) rc = cl_send_wait(c, WIRE_QUERY, strchr(c->addrs, ',') ? WIRE_F_FAILOVER : 0, b.p, b.len, err);
    sbuf_fini(&b);
    if (rc) return rc;
    while (!c->cur_done && !c->closed) {
        /* Ctrl-C or SIGTERM ends the wait (a coordinator that never
         * answered held `timeout 5 ares-sql -e 'SHOW QUERIES;'` for good) */
        if (c->interrupted && c->interrupted())
            return xerr_set(err, XE_BUSY, "interrupted while waiting for the coordinator's answer; the statement "
                            "may or may not have run");
        cl_spin(c, 100);
    }
    if (!c->cur_done) {
        rc = closed_err(c, err);
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        if (cl_failover(c, err) == 0)
            return xerr_set(err, XE_IO, "%s; the statement may or may not have run (reconnected: run it again if it "
                            "did not)", why);
        return rc;
    }
    if (c->cur_rc) return wire_error_parse(err, c->cur_rc, c->cur_msg, strlen(c->cur_msg));
    return 0;
}

int clu_client_poll(clu_client *c, int timeout_ms, xerr *err)
{
    if (c->away) return cl_back_to_coord(c, err);
    if (timeout_ms <= 0 && !c->closed) uv_run(&c->loop, UV_RUN_NOWAIT);
    uint64_t until = clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
    while (!c->closed) {
        uint64_t now = clock_mono_ns();
        if (now >= until) break;
        unsigned ms = (unsigned)((until - now) / 1000000ull);
        cl_spin(c, ms ? ms : 1);
    }
    return c->closed ? cl_failover(c, err) : 0;
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
        if (!rc) rc = cl_send_wait(c, WIRE_CANCEL, 0, b.p, b.len, err);
        sbuf_fini(&b);
        uint64_t until = clock_mono_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000ull;
        while (!rc && c->results && !c->closed && clock_mono_ns() < until) cl_spin(c, 20);
    }
    /* the coordinator did not answer in time (or is gone): end them here */
    fail_results(c);
    return rc;
}

struct uv_loop_s *clu_client_loop(clu_client *c) { return &c->loop; }
