/*
 * io.c: the engine's sockets, on its libuv loop.
 *
 * Socket sources.  A stream declared WITH (source = 'tcp://HOST:PORT' or
 * 'unix:///path', format = 'csv' | 'json') listens there (HOST defaults to
 * 127.0.0.1) and accepts any number of producers at once.  Each producer has
 * its own decoder, so its line numbers, header and rejections are its own:
 * a bad line is reported (the first few in full, then a count when the
 * producer leaves) and counted in the stream's rejected rows, while its good
 * lines go on.  A producer leaving does not end the stream.
 *
 * Socket sinks.  A standing query WITH (sink = 'tcp://HOST:PORT' or
 * 'unix:///path') connects there and writes its rows as CSV or JSON lines,
 * reconnecting every second while the peer is away.  Rows wait in a buffer
 * bounded by IO_SINK_HIGH bytes; above it every socket source stops reading
 * (so TCP pushes back on producers), below half of it they resume.  Nothing
 * is dropped.
 *
 * Subscribers.  SUBSCRIBE from another process reaches the engine through
 * the control socket <data dir>/ares.sock: the client writes one line
 * "SUBSCRIBE <query> [csv|json]" and receives the query's rows as they are
 * produced, in that format, header first.  Slow subscribers are bounded the
 * same way as sinks.
 *
 * A repeating timer (IO_TICK_MS) ends partial slices of live streams, so
 * watermarks advance when traffic is light, and commits epochs.
 *
 * Below the operators (their output reaches the outlets here, sink.c): a
 * socket source's rows and the tick go up through the engine's io_rows_cb
 * and io_tick_cb (ingest.c's, set by engine_open), never by a call.
 */
#include "exec/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <uv.h>

#define IO_TICK_MS 100
#define IO_SINK_HIGH (16u << 20)
#define IO_READ_BUF 65536

/* ------------------------------------------------------------------ addresses */

typedef struct io_addr {
    int unix_path;           /* 1 for unix:// */
    char path[108];
    struct sockaddr_storage sa;
} io_addr;

static int parse_addr(const char *uri, io_addr *a, xerr *err)
{
    memset(a, 0, sizeof *a);
    if (!strncmp(uri, "unix://", 7)) {
        if (strlen(uri + 7) == 0 || strlen(uri + 7) >= sizeof a->path)
            return xerr_set(err, XE_INVAL, "'%s': a unix socket path must be 1 to %zu bytes", uri, sizeof a->path - 1);
        a->unix_path = 1;
        snprintf(a->path, sizeof a->path, "%s", uri + 7);
        return 0;
    }
    if (strncmp(uri, "tcp://", 6)) return xerr_set(err, XE_INVAL, "'%s' is not tcp://HOST:PORT or unix:///path", uri);
    const char *hp = uri + 6, *colon = strrchr(hp, ':');
    if (!colon) return xerr_set(err, XE_INVAL, "'%s' has no port (tcp://HOST:PORT)", uri);
    char host[64];
    size_t hl = (size_t)(colon - hp);
    if (hl >= sizeof host) return xerr_set(err, XE_INVAL, "'%s': host too long", uri);
    memcpy(host, hp, hl);
    host[hl] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) return xerr_set(err, XE_INVAL, "'%s': bad port", uri);
    if (!host[0] || !strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
    char *h = host;
    if (h[0] == '[') { /* [::1] */
        h++;
        h[strlen(h) - 1] = 0;
    }
    if (uv_ip4_addr(h, (int)port, (struct sockaddr_in *)&a->sa) &&
        uv_ip6_addr(h, (int)port, (struct sockaddr_in6 *)&a->sa))
        return xerr_set(err, XE_INVAL, "'%s': '%s' is not a numeric address", uri, h);
    return 0;
}

/* ------------------------------------------------------------------ sources */

struct io_source {
    engine *e;
    char *stream;             /* by name: stream indexes move on DROP */
    io_addr addr;
    union { uv_tcp_t tcp; uv_pipe_t pipe; uv_stream_t s; uv_handle_t h; } l;
    int listening;
    struct io_conn *conns;
    int nproducers;           /* ever accepted, for names */
    struct io_source *next;
};

typedef struct io_conn {
    union { uv_tcp_t tcp; uv_pipe_t pipe; uv_stream_t s; uv_handle_t h; } u;
    io_source *src;
    fmt_decoder *dec;
    batch b;
    char name[80];
    int paused;
    struct io_conn *next;
} io_conn;

static void elog(engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void elog(engine *e, const char *fmt, ...)
{
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (e->log) e->log(e->log_ctx, buf);
    else fprintf(stderr, "ares: %s\n", buf);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    (void)hint;
    static char slab[IO_READ_BUF]; /* one loop thread: one read at a time */
    *buf = uv_buf_init(slab, sizeof slab);
}

static void conn_closed(uv_handle_t *h)
{
    io_conn *c = h->data;
    fmt_decoder_free(c->dec);
    batch_fini(&c->b);
    free(c);
}

static void conn_unlink(io_conn *c)
{
    io_conn **pp = &c->src->conns;
    while (*pp && *pp != c) pp = &(*pp)->next;
    if (*pp) *pp = c->next;
}

static void conn_reject(void *ctx, int64_t line, const char *msg)
{
    io_conn *c = ctx;
    (void)line;
    fmt_dec_stats st = fmt_decoder_stats(c->dec);
    if (st.rejected < FMT_KEEP_REJECTS)
        elog(c->src->e, "stream %s, producer %s: %s", c->src->stream, c->name, msg);
}

static void conn_finish(io_conn *c, const char *why)
{
    engine *e = c->src->e;
    xerr err;
    int si = eng_stream_index(e, c->src->stream);
    if (si >= 0 && fmt_decode_finish(c->dec, &c->b, &err) == 0 && c->b.nrows) {
        if (e->io_rows_cb(e, si, &c->b, &err)) elog(e, "stream %s: %s", c->src->stream, err.msg);
    }
    batch_reset(&c->b);
    fmt_dec_stats st = fmt_decoder_stats(c->dec);
    if (si >= 0) e->streams[si]->rejected += st.rejected;
    if (st.rejected > FMT_KEEP_REJECTS)
        elog(e, "stream %s, producer %s: %lld lines rejected in all (first %d shown)", c->src->stream, c->name,
             (long long)st.rejected, FMT_KEEP_REJECTS);
    if (why) elog(e, "stream %s, producer %s: %s", c->src->stream, c->name, why);
    conn_unlink(c);
    uv_close(&c->u.h, conn_closed);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    io_conn *c = s->data;
    engine *e = c->src->e;
    if (n == 0) return;
    if (n < 0) {
        conn_finish(c, n == UV_EOF ? NULL : uv_strerror((int)n));
        return;
    }
    int si = eng_stream_index(e, c->src->stream);
    if (si < 0) {
        conn_finish(c, "the stream was dropped");
        return;
    }
    xerr err;
    if (fmt_decode(c->dec, buf->base, (size_t)n, &c->b, &err)) {
        conn_finish(c, err.msg);
        return;
    }
    if (c->b.nrows && e->io_rows_cb(e, si, &c->b, &err)) elog(e, "stream %s: %s", c->src->stream, err.msg);
    batch_reset(&c->b);
    e->io_dirty = 1;
}

static void on_connection(uv_stream_t *server, int status)
{
    io_source *src = server->data;
    engine *e = src->e;
    if (status < 0) {
        elog(e, "stream %s: accept: %s", src->stream, uv_strerror(status));
        return;
    }
    int si = eng_stream_index(e, src->stream);
    io_conn *c = calloc(1, sizeof *c);
    if (!c || si < 0) { free(c); return; }
    c->src = src;
    if (src->addr.unix_path) uv_pipe_init(e->loop, &c->u.pipe, 0);
    else uv_tcp_init(e->loop, &c->u.tcp);
    c->u.h.data = c;
    if (uv_accept(server, &c->u.s)) {
        uv_close(&c->u.h, (uv_close_cb)free);
        return;
    }
    src->nproducers++;
    if (!src->addr.unix_path) {
        struct sockaddr_storage ss;
        int len = sizeof ss;
        char ip[64] = "?";
        if (uv_tcp_getpeername(&c->u.tcp, (struct sockaddr *)&ss, &len) == 0) {
            if (ss.ss_family == AF_INET) uv_ip4_name((struct sockaddr_in *)&ss, ip, sizeof ip);
            else uv_ip6_name((struct sockaddr_in6 *)&ss, ip, sizeof ip);
            snprintf(c->name, sizeof c->name, "%s:%d", ip, ntohs(((struct sockaddr_in *)&ss)->sin_port));
        }
    } else
        snprintf(c->name, sizeof c->name, "#%d", src->nproducers);
    stream_rt *s = e->streams[si];
    fmt_dec_opts d;
    eng_dec_opts(s, &d);
    d.on_reject = conn_reject;
    d.ctx = c;
    if (fmt_decoder_new(s->kind, &s->fs, &d, &c->dec) || batch_init(&c->b, s->fs.ncols, 1024)) {
        uv_close(&c->u.h, conn_closed);
        return;
    }
    c->next = src->conns;
    src->conns = c;
    if (e->io_paused) c->paused = 1;
    else uv_read_start(&c->u.s, on_alloc, on_read);
}

int io_source_start(engine *e, const char *stream, const char *uri, xerr *err)
{
    io_source *src = calloc(1, sizeof *src);
    if (!src || !(src->stream = strdup(stream))) {
        free(src);
        return xerr_set(err, XE_NOMEM, "out of memory");
    }
    src->e = e;
    int rc = parse_addr(uri, &src->addr, err), r;
    if (rc) goto fail;
    if (src->addr.unix_path) {
        uv_pipe_init(e->loop, &src->l.pipe, 0);
        unlink(src->addr.path); /* a stale socket from a previous run */
        r = uv_pipe_bind(&src->l.pipe, src->addr.path);
    } else {
        uv_tcp_init(e->loop, &src->l.tcp);
        r = uv_tcp_bind(&src->l.tcp, (struct sockaddr *)&src->addr.sa, 0);
    }
    src->l.h.data = src;
    if (!r) r = uv_listen(&src->l.s, 128, on_connection);
    if (r) {
        rc = xerr_set(err, XE_IO, "stream %s: cannot listen on %s: %s", stream, uri, uv_strerror(r));
        uv_close(&src->l.h, (uv_close_cb)NULL);
        src->l.h.data = NULL;
        /* the handle is freed with the source once closed */
        src->next = e->io_dead;
        e->io_dead = src;
        return rc;
    }
    src->listening = 1;
    src->next = e->io_sources;
    e->io_sources = src;
    return 0;
fail:
    free(src->stream);
    free(src);
    return rc;
}

static void source_closed(uv_handle_t *h)
{
    io_source *src = h->data;
    if (src->addr.unix_path) unlink(src->addr.path);
    free(src->stream);
    free(src);
}

void io_source_stop(engine *e, const char *stream)
{
    for (io_source **pp = &e->io_sources; *pp;) {
        io_source *s = *pp;
        if (strcmp(s->stream, stream)) {
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        while (s->conns) conn_finish(s->conns, NULL);
        uv_close(&s->l.h, source_closed);
    }
}

/* Backpressure: stop or resume reading every producer. */
static void sources_pause(engine *e, int pause)
{
    if (e->io_paused == pause) return;
    e->io_paused = pause;
    for (io_source *s = e->io_sources; s; s = s->next)
        for (io_conn *c = s->conns; c; c = c->next) {
            if (pause && !c->paused) uv_read_stop(&c->u.s);
            if (!pause && c->paused) uv_read_start(&c->u.s, on_alloc, on_read);
            c->paused = pause;
        }
}

/* ------------------------------------------------------------------ outbound byte streams (sinks, subscribers) */

typedef struct out_write {
    uv_write_t req;
    io_outlet *o;
    size_t n;
    char data[];
} out_write;

typedef struct ctl_conn ctl_conn;

struct io_outlet {
    engine *e;
    query *q;
    io_addr addr;              /* sinks: where to connect */
    union { uv_tcp_t tcp; uv_pipe_t pipe; uv_stream_t s; uv_handle_t h; } u; /* sinks own a handle */
    uv_stream_t *stream;       /* where bytes go: &u.s, or a subscriber's control connection */
    ctl_conn *ctl;             /* subscribers */
    uv_connect_t creq;
    uv_timer_t retry;
    int connected, connecting, has_handle, closing, is_sink;
    fmt_encoder *enc;
    fmt_kind kind;
    sbuf pending;              /* encoded rows not yet handed to libuv */
    size_t queued;             /* bytes in flight in uv writes */
    char *uri;
    io_outlet *next;
};

struct ctl_conn {
    union { uv_pipe_t pipe; uv_stream_t s; uv_handle_t h; } u;
    engine *e;
    sbuf line;
    io_outlet *sub;            /* once it subscribed */
};

static size_t outlet_backlog(const io_outlet *o) { return o->pending.len + o->queued; }

static void update_backpressure(engine *e)
{
    size_t worst = 0;
    for (io_outlet *o = e->io_outlets; o; o = o->next)
        if (outlet_backlog(o) > worst) worst = outlet_backlog(o);
    if (worst > IO_SINK_HIGH || e->ext_pause > 0) sources_pause(e, 1);
    else if (worst < IO_SINK_HIGH / 2) sources_pause(e, 0);
}

static void outlet_free(io_outlet *o)
{
    fmt_encoder_free(o->enc);
    sbuf_fini(&o->pending);
    free(o->uri);
    free(o);
}

static void on_written(uv_write_t *req, int status)
{
    out_write *w = (out_write *)req;
    io_outlet *o = w->o;
    o->queued -= w->n;
    free(w);
    if (o->closing) {
        if (o->queued == 0 && o->closing == 1) outlet_free(o);
        return;
    }
    if (status < 0 && o->is_sink)
        elog(o->e, "query %s: sink %s: %s", o->q ? o->q->name : "?", o->uri, uv_strerror(status));
    update_backpressure(o->e);
}

static void outlet_flush(io_outlet *o)
{
    if (!o->connected || !o->pending.len || !o->stream) return;
    out_write *w = malloc(sizeof *w + o->pending.len);
    if (!w) return;
    w->o = o;
    w->n = o->pending.len;
    memcpy(w->data, o->pending.p, o->pending.len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)w->n);
    if (uv_write(&w->req, o->stream, &b, 1, on_written)) {
        free(w);
        return;
    }
    o->queued += w->n;
    sbuf_reset(&o->pending);
}

static void sink_connect(io_outlet *o);

static void on_retry(uv_timer_t *t)
{
    io_outlet *o = t->data;
    sink_connect(o);
}

static void sink_handle_closed(uv_handle_t *h)
{
    io_outlet *o = h->data;
    o->has_handle = 0;
    if (!o->closing) uv_timer_start(&o->retry, on_retry, 1000, 0);
}

static void on_sink_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    io_outlet *o = s->data;
    (void)buf;
    if (n < 0 && o->connected) {
        o->connected = 0;
        elog(o->e, "query %s: sink %s went away (%s); reconnecting", o->q ? o->q->name : "?", o->uri,
             n == UV_EOF ? "end of stream" : uv_strerror((int)n));
        uv_close(&o->u.h, sink_handle_closed);
    }
}

static void on_sink_connect(uv_connect_t *req, int status)
{
    io_outlet *o = req->data;
    o->connecting = 0;
    if (o->closing) return;
    if (status < 0) {
        uv_close(&o->u.h, sink_handle_closed);
        return;
    }
    o->connected = 1;
    uv_read_start(&o->u.s, on_alloc, on_sink_read); /* only to notice the peer leaving */
    outlet_flush(o);
}

static void sink_connect(io_outlet *o)
{
    if (o->closing || o->connected || o->connecting || o->has_handle) return;
    if (o->addr.unix_path) uv_pipe_init(o->e->loop, &o->u.pipe, 0);
    else uv_tcp_init(o->e->loop, &o->u.tcp);
    o->u.h.data = o;
    o->has_handle = 1;
    o->connecting = 1;
    o->creq.data = o;
    if (o->addr.unix_path) uv_pipe_connect(&o->creq, &o->u.pipe, o->addr.path, on_sink_connect);
    else if (uv_tcp_connect(&o->creq, &o->u.tcp, (struct sockaddr *)&o->addr.sa, on_sink_connect)) {
        o->connecting = 0;
        uv_close(&o->u.h, sink_handle_closed);
    }
}

int io_outlet_rows(io_outlet *o, const batch *b)
{
    if (fmt_encode(o->enc, b, &o->pending)) return XE_NOMEM;
    outlet_flush(o);
    update_backpressure(o->e);
    return 0;
}

const char *io_outlet_state(const io_outlet *o, size_t *backlog)
{
    *backlog = outlet_backlog(o);
    return o->connected ? "connected" : "connecting";
}

int io_sink_open(engine *e, query *q, const char *uri, const char *format, xerr *err)
{
    io_outlet *o = calloc(1, sizeof *o);
    if (!o) return xerr_set(err, XE_NOMEM, "out of memory");
    int rc = parse_addr(uri, &o->addr, err);
    o->kind = FMT_CSV;
    if (!rc && format && (fmt_kind_parse(format, &o->kind) || (o->kind != FMT_CSV && o->kind != FMT_JSON)))
        rc = xerr_set(err, XE_INVAL, "a sink's format is csv or json, not '%s'", format);
    fmt_enc_opts eo = {0};
    eo.no_header = 1;
    if (!rc && fmt_encoder_new(o->kind, &q->out_schema, &eo, &o->enc)) rc = xerr_set(err, XE_NOMEM, "out of memory");
    if (!rc && !(o->uri = strdup(uri))) rc = xerr_set(err, XE_NOMEM, "out of memory");
    if (rc) {
        outlet_free(o);
        return rc;
    }
    o->e = e;
    o->q = q;
    o->is_sink = 1;
    o->stream = &o->u.s;
    uv_timer_init(e->loop, &o->retry);
    o->retry.data = o;
    o->next = e->io_outlets;
    e->io_outlets = o;
    q->outlet = o;
    sink_connect(o);
    return 0;
}

static void ctl_closed(uv_handle_t *h);

static void sink_parts_closed(uv_handle_t *h)
{
    io_outlet *o = h->data;
    if (--o->closing > 1) return;
    if (o->queued == 0) outlet_free(o);
}

/* Detach an outlet from its query and close it; in-flight writes finish first. */
void io_outlet_close(engine *e, io_outlet *o)
{
    for (io_outlet **pp = &e->io_outlets; *pp; pp = &(*pp)->next)
        if (*pp == o) {
            *pp = o->next;
            break;
        }
    query *q = o->q;
    if (q && q->outlet == o) q->outlet = NULL;
    for (int i = 0; q && i < q->nsubs; i++)
        if (q->subs[i] == o) q->subs[i] = q->subs[--q->nsubs];
    o->q = NULL;
    if (o->is_sink) {
        /* closing = 1 + handles still to close */
        o->closing = 2 + (o->has_handle ? 1 : 0);
        uv_timer_stop(&o->retry);
        uv_close((uv_handle_t *)&o->retry, sink_parts_closed);
        if (o->has_handle && !uv_is_closing(&o->u.h)) {
            o->u.h.data = o;
            uv_close(&o->u.h, sink_parts_closed);
        } else if (o->has_handle)
            o->closing--;
    } else {
        /* a subscriber: its control connection owns the handle */
        o->closing = 1;
        if (o->ctl) {
            o->ctl->sub = NULL;
            if (!uv_is_closing(&o->ctl->u.h)) uv_close(&o->ctl->u.h, ctl_closed);
        }
        o->stream = NULL;
        if (o->queued == 0) outlet_free(o);
    }
    update_backpressure(e);
}

/* ------------------------------------------------------------------ control socket: SUBSCRIBE */

static void ctl_closed(uv_handle_t *h)
{
    ctl_conn *c = h->data;
    if (c->sub) {
        io_outlet *o = c->sub;
        c->sub = NULL;
        o->ctl = NULL;
        io_outlet_close(c->e, o);
    }
    sbuf_fini(&c->line);
    free(c);
}

static void ctl_reply_close(ctl_conn *c, const char *msg)
{
    uv_buf_t b = uv_buf_init((char *)msg, (unsigned)strlen(msg));
    uv_try_write(&c->u.s, &b, 1); /* one short line: the socket buffer takes it */
    uv_close(&c->u.h, ctl_closed);
}

static void on_ctl_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    ctl_conn *c = s->data;
    if (n == 0) return;
    if (n < 0) {
        uv_close(&c->u.h, ctl_closed); /* a subscriber that leaves ends its subscription */
        return;
    }
    if (c->sub) return; /* subscribers have nothing more to say */
    sbuf_add(&c->line, buf->base, (size_t)n);
    char *nl = memchr(c->line.p, '\n', c->line.len);
    if (!nl) {
        if (c->line.len > 4096) ctl_reply_close(c, "ERROR request line too long\n");
        return;
    }
    *nl = 0;
    char verb[32] = "", name[256] = "", fmt[16] = "csv";
    sscanf(c->line.p, "%31s %255s %15s", verb, name, fmt);
    if (strcasecmp(verb, "SUBSCRIBE")) {
        ctl_reply_close(c, "ERROR unknown request; expected: SUBSCRIBE <query> [csv|json]\n");
        return;
    }
    query *q = NULL;
    for (int i = 0; i < c->e->nqueries; i++)
        if (c->e->queries[i]->name && !strcmp(c->e->queries[i]->name, name)) q = c->e->queries[i];
    if (!q) {
        char msg[320];
        snprintf(msg, sizeof msg, "ERROR no query '%s'\n", name);
        ctl_reply_close(c, msg);
        return;
    }
    fmt_kind k;
    if (fmt_kind_parse(fmt, &k) || (k != FMT_CSV && k != FMT_JSON)) {
        ctl_reply_close(c, "ERROR format must be csv or json\n");
        return;
    }
    io_outlet *o = calloc(1, sizeof *o);
    io_outlet **subs = realloc(q->subs, (size_t)(q->nsubs + 1) * sizeof *subs);
    if (subs) q->subs = subs;
    if (!o || !subs || fmt_encoder_new(k, &q->out_schema, NULL, &o->enc)) {
        free(o);
        ctl_reply_close(c, "ERROR out of memory\n");
        return;
    }
    o->e = c->e;
    o->q = q;
    o->kind = k;
    o->ctl = c;
    o->stream = &c->u.s;
    o->connected = 1;
    c->sub = o;
    q->subs[q->nsubs++] = o;
    o->next = c->e->io_outlets;
    c->e->io_outlets = o;
    sbuf_adds(&o->pending, "OK\n");
    /* the header now, so a CSV subscriber sees the columns before any row */
    if (k == FMT_CSV)
        for (int i = 0; i < q->out_schema.ncols; i++)
            sbuf_printf(&o->pending, "%s%s", i ? "," : "", q->out_schema.names[i]);
    if (k == FMT_CSV) sbuf_addc(&o->pending, '\n');
    fmt_enc_opts eo = {0};
    eo.no_header = 1;
    fmt_encoder_free(o->enc);
    o->enc = NULL;
    if (fmt_encoder_new(k, &q->out_schema, &eo, &o->enc)) {
        io_outlet_close(c->e, o);
        return;
    }
    outlet_flush(o);
}

static void on_ctl_connection(uv_stream_t *server, int status)
{
    engine *e = server->data;
    if (status < 0) return;
    ctl_conn *c = calloc(1, sizeof *c);
    if (!c) return;
    c->e = e;
    uv_pipe_init(e->loop, &c->u.pipe, 0);
    c->u.h.data = c;
    if (uv_accept(server, &c->u.s)) {
        uv_close(&c->u.h, ctl_closed);
        return;
    }
    uv_read_start(&c->u.s, on_alloc, on_ctl_read);
}

/* ------------------------------------------------------------------ the loop */

static void on_tick(uv_timer_t *t)
{
    engine *e = t->data;
    /* new rows to end a slice for, or an open epoch waiting for its commit */
    if (!e->io_dirty && !e->txn) return;
    e->io_dirty = 0;
    xerr err;
    if (e->io_tick_cb(e, &err)) elog(e, "%s", err.msg);
}

int io_start(engine *e, xerr *err)
{
    e->loop = malloc(sizeof(uv_loop_t));
    if (!e->loop || uv_loop_init(e->loop)) {
        free(e->loop);
        e->loop = NULL;
        return xerr_set(err, XE_NOMEM, "cannot create the event loop");
    }
    uv_timer_init(e->loop, &e->poll_timer);
    uv_unref((uv_handle_t *)&e->poll_timer);
    uv_timer_init(e->loop, &e->tick);
    e->tick.data = e;
    uv_timer_start(&e->tick, on_tick, IO_TICK_MS, IO_TICK_MS);
    uv_unref((uv_handle_t *)&e->tick);
    if (!e->memory) {
        char path[4096];
        snprintf(path, sizeof path, "%s/ares.sock", e->dir);
        if (strlen(path) < 108) {
            uv_pipe_init(e->loop, &e->ctl, 0);
            e->ctl.data = e;
            unlink(path); /* the store lock says no other engine owns this directory */
            int r = uv_pipe_bind(&e->ctl, path);
            if (!r) r = uv_listen((uv_stream_t *)&e->ctl, 16, on_ctl_connection);
            if (r) elog(e, "control socket %s: %s (SUBSCRIBE from other processes is off)", path, uv_strerror(r));
            else e->ctl_on = 1;
        }
    }
    return 0;
}

static void walk_close(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

void io_stop(engine *e)
{
    if (!e->loop) return;
    while (e->io_sources) io_source_stop(e, e->io_sources->stream);
    while (e->io_outlets) io_outlet_close(e, e->io_outlets);
    /* give in-flight writes a moment to finish, then close what is left */
    for (int i = 0; i < 20 && uv_run(e->loop, UV_RUN_NOWAIT); i++) {}
    if (e->ctl_on) {
        char path[4096];
        snprintf(path, sizeof path, "%s/ares.sock", e->dir);
        unlink(path);
    }
    uv_walk(e->loop, walk_close, NULL);
    uv_run(e->loop, UV_RUN_DEFAULT);
    while (e->io_dead) {
        io_source *d = e->io_dead;
        e->io_dead = d->next;
        free(d->stream);
        free(d);
    }
    uv_loop_close(e->loop);
    free(e->loop);
    e->loop = NULL;
}

static void on_poll_timeout(uv_timer_t *t) { (void)t; }

int engine_poll(engine *e, int timeout_ms)
{
    if (!e->loop) return 0;
    if (timeout_ms <= 0) return uv_run(e->loop, UV_RUN_NOWAIT);
    uv_timer_start(&e->poll_timer, on_poll_timeout, (uint64_t)timeout_ms, 0);
    uv_run(e->loop, UV_RUN_ONCE);
    uv_timer_stop(&e->poll_timer);
    return 0;
}

struct uv_loop_s *engine_loop(engine *e) { return e->loop; }

void engine_pause_sources(engine *e, int pause)
{
    e->ext_pause += pause ? 1 : -1;
    if (e->ext_pause < 0) e->ext_pause = 0;
    update_backpressure(e);
}

int engine_has_live_sources(const engine *e) { return e->io_sources != NULL; }
