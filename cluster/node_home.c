/*
 * node_home.c: what a node does as the home of streams.  Ingest sessions:
 * the INGEST chunks the coordinator forwards (or, for its own shadow
 * sessions, feeds quietly) go into the stream through a decoder that lives
 * as long as the session; a client's session outlives its forwarder, so
 * that it resumes through the next coordinator after a failover, chunks it
 * fed already skipped.  Acknowledgements say which chunks are in (and in
 * the stream's log copy, shadow.c), and the end of an ingest is answered
 * once the copy holds it.  Statements from the coordinator (QUERY: catalog
 * statements, INSERT, SHOW gathered from the homes) run here and their
 * output goes back as RESULT parts (node_fwd).
 *
 * Runs on the engine's loop, like all of the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/node_int.h"


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
    /* on the coordinator, for its own client, the coordinator counts it */
    if (!g->session || !g->from || (g->from->kind != CS_NODE && !g->from->direct)) return;
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

uint64_t node_ingest_safe(node *n, cs *s, uint64_t req, uint64_t fed)
{
    for (ingsess *g = n->ings; g; g = g->next)
        if (g->from == s && g->req == req) return g->stream && shadow_guarded(n, g->stream) ? g->safe : fed;
    return fed;
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

void node_derive(node *n, const char *stream, size_t len, int64_t wm, const void *rows, size_t nb)
{
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)len, stream);
    xerr err;
    xerr_clear(&err);
    batch b;
    int rc = batch_init(&b, 1, 16);
    if (!rc && nb) rc = batch_decode(rows, nb, &b, &err);
    int64_t again = 0;
    if (!rc) rc = engine_stream_feed(n->eng, name, b.nrows ? &b : NULL, wm, &again, &err);
    if (again)
        node_log(n, NET_LOG_INFO, "derived stream %s: dropped %lld rows it has (at or below its watermark: sent again "
                 "after a takeover)", name, (long long)again);
    if (rc) node_log(n, NET_LOG_ERROR, "rows of derived stream %s: %s", name, err.msg[0] ? err.msg : xerr_name(rc));
    else if (shadow_guarded(n, name))
        shadow_ship_soon(n, name); /* its readers get the rows, the steps and the end once the copy has them */
    batch_fini(&b);
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
        /* a slice ends at most NODE_SLICE_MS after its rows came (a stream
         * whose slices the coordinator cuts is left alone) */
        int64_t now = clock_wall_ms();
        if (!rc && now - g->cut_at >= NODE_SLICE_MS) {
            rc = exec_ingest_cut(g->in, &err);
            g->cut_at = now;
        }
        node_slow_down(n, t0);
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
        /* a stream whose queries read what its copy holds: its late rows are
         * counted when the copy has them (shadow_done_later) */
        int later = !g->quiet && g->stream && shadow_guarded(n, g->stream);
        exec_late *late = later ? exec_ingest_late_take(g->in) : NULL;
        rc = exec_ingest_close(g->in, in->end, &st, &err);
        n->cur_in = saved;
        g->in = NULL;
        if (rc) {
            exec_late_free(late);
            if (!g->quiet) cs_error(from, in->req_id, rc, err.msg);
        } else {
            if (st.rejected < g->rejected) st.rejected = g->rejected;
            node_log(n, NET_LOG_INFO, "ingest of %.*s done: %lld rows, %lld rejected, %lld late%s", (int)in->stream.n,
                     in->stream.p, (long long)st.rows, (long long)st.rejected, (long long)st.late,
                     in->end ? ", stream ended" : "");
            if (later)
                shadow_done_later(n, g->stream, from, in->req_id, &st, late);
            else if (!g->quiet)
                node_send_done(from, in->req_id, &st);
            if (g->stream) shadow_ship_soon(n, g->stream);
        }
    }
    ingsess_free(n, g, 0);
}

void node_direct_ingest(node *n, cs *from, const wire_msg *m)
{
    char stream[512];
    snprintf(stream, sizeof stream, "%.*s", (int)m->u.ingest.stream.n, m->u.ingest.stream.p);
    size_t sl = strlen(stream);
    if (sl > 2 && !strcmp(stream + sl - 2, "#0")) stream[sl - 2] = 0; /* partition 0 is the stream itself */
    int known = 0;
    for (ingsess *g = n->ings; g && !known; g = g->next)
        known = g->from == from && g->req == m->u.ingest.req_id;
    if (!known && !shadow_guarded(n, stream)) {
        /* the home moved (a failure made the copy the home), or never was
         * here: the client asks the coordinator where it is now */
        char msg[700];
        snprintf(msg, sizeof msg, "stream '%s' has no home here that takes its input straight from a client",
                 stream);
        node_log(n, NET_LOG_INFO, "%s: the client asks the coordinator again", msg);
        net_close(from->c, msg);
        return;
    }
    if (!known) node_log(n, NET_LOG_INFO, "ingest into %s comes straight from a client", stream);
    node_ingest(n, from, m, 0);
}

void node_ingest_conn_closed(node *n, cs *s)
{
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
}

void node_ingest_orphans(node *n)
{
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
}

void node_ingest_free(node *n)
{
    while (n->ings) {
        ingsess *g = n->ings;
        n->ings = g->next;
        ingsess_free(n, g, 0);
    }
}

/* ------------------------------------------------------------------ statements from the coordinator */

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
        if (st->kind == ST_CREATE_STREAM || st->kind == ST_CREATE_TABLE) {
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
    if (rc) { /* with its position in the statements' text */
        char msg[sizeof err.msg + 40];
        wire_error_text(&err, rc, msg, sizeof msg);
        cs_error(from, req, rc, msg);
    } else if (guarded) {
        shadow_done_later(n, guarded, from, req, NULL, NULL);
        shadow_ship_soon(n, guarded);
    } else
        node_send_done(from, req, NULL);
    parse_result_free(r);
    sbuf_fini(&f.b);
}
