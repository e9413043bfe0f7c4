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
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/node.h"

#define INGEST_CHUNK (64 * 1024)

typedef struct cres {
    uint64_t req;
    exec_out out;
    int ncols;
    char **names;
    sql_type *types;
    struct cres *next;
} cres;

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
    free(r);
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
        if (batch_decode(r.p, r.len, &c->rb, &err) == 0 && x->out.rows) x->out.rows(x->out.ctx, &c->rb);
        break;
    }
    case RES_END: {
        cres *x = cres_find(c, req);
        if (x) cres_end(c, x);
        break;
    }
    case RES_NOTICE: {
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
    else if (m.type == WIRE_ERROR) {
        uint64_t req = m.u.error.req_id;
        if (req && req == c->cur) {
            c->cur_rc = m.u.error.code < 0 ? m.u.error.code : XE_IO;
            snprintf(c->cur_msg, sizeof c->cur_msg, "%.*s", (int)m.u.error.msg.n, m.u.error.msg.p);
            c->cur_done = 1;
            cres *x = cres_find(c, req);
            if (x) cres_end(c, x);
        } else if (!req) {
            snprintf(c->close_msg, sizeof c->close_msg, "%.*s", (int)m.u.error.msg.n, m.u.error.msg.p);
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
    if ((rc = auth_secret_load(o->secret_file, &c->secret, 0, err))) {
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
    nc.dead_ms = 30000; /* a client may sit in a slow write to its stdout */
    nc.log = quiet_log;
    if ((rc = net_ctx_new(&c->loop, &nc, &c->net, err))) {
        clu_client_free(c);
        return rc;
    }
    /* each address in turn */
    char list[1024];
    snprintf(list, sizeof list, "%s", o->addrs ? o->addrs : "");
    char *save = NULL, *tok;
    rc = xerr_set(err, XE_INVAL, "--connect needs HOST:PORT");
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(tok, ':');
        if (!colon) {
            rc = xerr_set(err, XE_INVAL, "--connect needs HOST:PORT, not '%s'", tok);
            continue;
        }
        *colon = 0;
        int port = atoi(colon + 1);
        c->closed = c->ready = 0;
        c->close_msg[0] = 0;
        if ((rc = net_connect(c->net, tok, port, o->timeout_ms ? o->timeout_ms : 5000, &cl_handlers, c, &c->c, err)))
            continue;
        while (!c->ready && !c->closed) spin(c, 100);
        if (c->ready && !c->closed) {
            *out = c;
            return 0;
        }
        if (c->why == NET_CLOSE_AUTH)
            rc = xerr_set(err, XE_AUTH,
                          "%s:%s refused our cluster secret (authentication failed): check --secret-file", tok,
                          colon + 1);
        else
            rc = xerr_set(err, XE_IO, "cannot connect to %s:%s: %s%s%s", tok, colon + 1, net_close_name(c->why),
                          c->close_msg[0] ? ": " : "", c->close_msg);
    }
    clu_client_free(c);
    return rc;
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

/* Send a frame, waiting while the connection is over its high-water mark. */
static int send_wait(clu_client *c, uint8_t type, uint16_t flags, const void *p, size_t len, xerr *err)
{
    for (;;) {
        if (c->closed) return closed_err(c, err);
        c->writable = 0;
        int rc = net_send(c->c, type, flags, p, len);
        if (rc == 0) return 0;
        if (rc != XE_BUSY) return xerr_set(err, rc, "cannot send to the coordinator: %s", xerr_name(rc));
        while (!c->writable && !c->closed) spin(c, 100);
    }
}

int clu_client_exec(clu_client *c, const char *sql, const exec_out *out, xerr *err)
{
    if (c->closed) return closed_err(c, err);
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
    int rc = wire_msg_payload(&b, &m, err);
    if (!rc) rc = send_wait(c, WIRE_QUERY, 0, b.p, b.len, err);
    sbuf_fini(&b);
    if (rc) return rc;
    while (!c->cur_done && !c->closed) spin(c, 100);
    if (!c->cur_done) return closed_err(c, err);
    if (c->cur_rc) return xerr_set(err, c->cur_rc, "%s", c->cur_msg[0] ? c->cur_msg : xerr_name(c->cur_rc));
    return 0;
}

static int send_chunk(clu_client *c, const char *stream, const clu_ingest_opts *o, const void *p, size_t n, int last,
                      xerr *err)
{
    wire_msg m = {.type = WIRE_INGEST, .flags = last ? WIRE_F_LAST : 0};
    m.u.ingest.req_id = c->cur;
    m.u.ingest.stream = wire_str_of(stream);
    m.u.ingest.format = (uint8_t)o->format;
    m.u.ingest.header = (uint8_t)o->header;
    m.u.ingest.end = (uint8_t)(last && o->end_of_stream);
    m.u.ingest.data = (wire_str){p, (uint32_t)n};
    sbuf b;
    sbuf_init(&b);
    int rc = wire_msg_payload(&b, &m, err);
    if (!rc) rc = send_wait(c, WIRE_INGEST, m.flags, b.p, b.len, err);
    sbuf_fini(&b);
    return rc;
}

int clu_client_ingest(clu_client *c, const char *stream, int fd, const clu_ingest_opts *o, exec_ingest_stats *st,
                      xerr *err)
{
    memset(st, 0, sizeof *st);
    if (c->closed) return closed_err(c, err);
    c->cur = c->next_req++;
    c->cur_done = 0;
    c->cur_rc = 0;
    c->cur_msg[0] = 0;
    c->cur_out = (exec_out){0};
    c->ing = o;
    memset(&c->ing_st, 0, sizeof c->ing_st);
    char *buf = malloc(INGEST_CHUNK);
    if (!buf) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc = 0, cut = 0;
    for (;;) {
        if (c->cur_done) break; /* an error came back: stop sending */
        if (o->stop && o->stop(o->ctx)) {
            cut = 1;
            break;
        }
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int pr = poll(&pf, 1, 20);
        uv_run(&c->loop, UV_RUN_NOWAIT);
        if (c->closed) {
            rc = closed_err(c, err);
            break;
        }
        if (pr <= 0) continue;
        ssize_t got = read(fd, buf, INGEST_CHUNK);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            rc = xerr_set(err, XE_IO, "reading the input: %s", strerror(errno));
            break;
        }
        if (got == 0) break;
        if ((rc = send_chunk(c, stream, o, buf, (size_t)got, 0, err))) break;
    }
    free(buf);
    if (rc) return rc;
    if (!c->cur_done) {
        /* the last chunk ends the stream, unless the input was cut short */
        clu_ingest_opts o2 = *o;
        if (cut) o2.end_of_stream = 0;
        if ((rc = send_chunk(c, stream, &o2, NULL, 0, 1, err))) return rc;
    }
    while (!c->cur_done && !c->closed) spin(c, 100);
    *st = c->ing_st;
    c->ing = NULL;
    if (!c->cur_done) return closed_err(c, err);
    if (c->cur_rc) return xerr_set(err, c->cur_rc, "%s", c->cur_msg[0] ? c->cur_msg : xerr_name(c->cur_rc));
    return cut ? XE_BUSY : 0;
}

int clu_client_poll(clu_client *c, int timeout_ms, xerr *err)
{
    uint64_t until = clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
    while (!c->closed) {
        uint64_t now = clock_mono_ns();
        if (now >= until) break;
        unsigned ms = (unsigned)((until - now) / 1000000ull);
        spin(c, ms ? ms : 1);
    }
    return c->closed ? closed_err(c, err) : 0;
}

int clu_client_open_results(const clu_client *c)
{
    int k = 0;
    for (cres *r = c->results; r; r = r->next) k++;
    return k;
}

int clu_client_wait(clu_client *c, int (*stop)(void *ctx), void *ctx, xerr *err)
{
    while (c->results && !c->closed) {
        if (stop && stop(ctx)) return 0;
        spin(c, 100);
    }
    if (c->closed && c->results) return closed_err(c, err);
    return 0;
}
