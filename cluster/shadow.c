/*
 * shadow.c: a stream's log copied to a shadow home in another failure
 * domain (docs/architecture.md, "Shadow homes").
 *
 * The coordinator names the copy (LOGSHADOW, to the stream's home) for a
 * stream read from a socket, and for every stream whose home or shadow was
 * lost.  The home then ships its log as it grows (LOGSHIP: records at their
 * offsets, the stream's counters, where its queries started, and the state
 * of every client ingest session), and the shadow imports it and answers
 * with the end it holds (LOGACK).  Until then the home's queries do not see
 * those records (engine_log_guard), a client's ingest chunks are not
 * acknowledged to it, and an ingest's end is not answered.  So when the
 * home's domain fails, the shadow holds everything any query saw; a
 * client's ingest resumes there from the saved decoder state, with the
 * chunks the client still keeps.
 *
 * A shipment is built between two frames, so its session states match its
 * records exactly.  At most SHIP_INFLIGHT shipments are unacknowledged; a
 * new connection to the shadow (or a new shadow) starts again from what the
 * copy acknowledged (import skips records it holds).
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"

#define SHIP_INFLIGHT 4
/* log bytes per shipment (a frame holds 16 MiB): small enough that building
 * and sending one holds the event loop for a few ms (about 10 ms a MiB,
 * measured on a busy 2-core VM) */
#define SHIP_MAX (1u << 20)
#define SHIP_RETRY_MS 1000  /* no answer for this long: ship again from what the copy has */

/* A shipment waiting for its LOGACK. */
typedef struct lsent {
    uint64_t ship, end;
    int nsess;
    uint64_t *sess;       /* nsess x (session, seq) */
    int ndone;
    /* answered once the copy has what came before: to (RES_DONE) or fn */
    struct ldone {
        cs *to;
        uint64_t req;
        exec_ingest_stats st;
        exec_late *late; /* its late rows, counted when it fires (the queries had its records then) */
        void (*fn)(node *n, uint64_t req);
    } *done;
    struct lsent *next;
} lsent;

/* At a stream's home: its copy. */
struct lship {
    char *stream;
    char shadow[WIRE_NAME_MAX + 1];
    cs *link;             /* the connection shipments went on */
    uint64_t next;        /* the next record to ship */
    uint64_t acked;       /* the copy holds the log up to here */
    uint64_t ship;        /* the last shipment's number */
    lsent *sent, *sent_tail;
    int nsent;
    int dirty;            /* sessions moved, or the stream ended, since the last shipment */
    int64_t waiting;      /* wall ms of the last progress while shipments wait for answers */
    uint64_t catch_end;   /* a new copy catches up to here before the guard holds the queries back */
    int catching;
    int fed;              /* the shadow gets the input from the coordinator: only where the log begins goes */
    uint64_t sent_begin;  /* fed: the begin it was last told */
    /* ingest ends answered once the copy has them */
    int ndone, capdone;
    struct ldone *done;
    lship *next_ls;
};

/* At a shadow: the state of one of the home's client ingest sessions. */
struct shsess {
    char *stream;
    uint64_t session, seq;
    sbuf state;
    shsess *next;
};

static lship *find(node *n, const char *stream, size_t len)
{
    for (lship *l = n->lships; l; l = l->next_ls)
        if (strlen(l->stream) == len && !memcmp(l->stream, stream, len)) return l;
    return NULL;
}

static void sent_free(lsent *x)
{
    free(x->sess);
    free(x->done);
    free(x);
}

/* Fire after the records it waited for are released to the queries, so
 * that the rows they dropped as late are counted (engine_log_release). */
static void done_fire(node *n, struct ldone *d)
{
    if (d->late) {
        int partial = 0;
        int64_t late = exec_late_count(n->eng, d->late, &partial);
        if (late > d->st.late) d->st.late = late;
        d->st.late_partial |= partial;
        exec_late_free(d->late);
        d->late = NULL;
    }
    if (d->fn) d->fn(n, d->req);
    else if (d->to) node_send_done(d->to, d->req, &d->st);
}

static void done_add(lship *ls, struct ldone d)
{
    if (ls->ndone == ls->capdone) {
        int cap = ls->capdone ? 2 * ls->capdone : 4;
        struct ldone *v = realloc(ls->done, (size_t)cap * sizeof *v);
        if (!v) return; /* the client's ingest then ends without its counts (it fails over) */
        ls->done = v;
        ls->capdone = cap;
    }
    ls->done[ls->ndone++] = d;
}

/* Forget the shipments in flight (a new connection or a new shadow); the
 * ingest ends they carried wait for the next shipment. */
static void sent_drop(lship *ls)
{
    while (ls->sent) {
        lsent *x = ls->sent;
        ls->sent = x->next;
        for (int i = 0; i < x->ndone; i++) done_add(ls, x->done[i]);
        sent_free(x);
    }
    ls->sent_tail = NULL;
    ls->nsent = 0;
    ls->dirty = 1;
}

int shadow_guarded(node *n, const char *stream)
{
    lship *ls = find(n, stream, strlen(stream));
    return ls && ls->shadow[0] && !ls->fed;
}

/* A shadow fed the input hears where the home's log begins when that
 * moved, so that its retention follows the home's. */
static void ship_begin(node *n, lship *ls, cs *l)
{
    sbuf log;
    sbuf_init(&log);
    uint64_t nx;
    xerr err;
    if (!engine_log_export(n->eng, ls->stream, 0, 0, &log, &nx, &err) && log.len >= 68) {
        uint64_t begin = be64_get((const unsigned char *)log.p + 4 + 56);
        if (begin > ls->sent_begin) {
            wire_msg m = {.type = WIRE_LOGSHIP};
            m.u.logship.stream = wire_str_of(ls->stream);
            m.u.logship.ship = ++ls->ship;
            m.u.logship.log = (wire_str){log.p, log.len};
            if (!cs_send_msg(l, &m)) ls->sent_begin = begin;
        }
    } else if (err.code == XE_NAME)
        ls->shadow[0] = 0; /* dropped */
    sbuf_fini(&log);
}

void shadow_done_later(node *n, const char *stream, cs *to, uint64_t req, const exec_ingest_stats *st, exec_late *late)
{
    lship *ls = find(n, stream, strlen(stream));
    if (!ls) {
        exec_late_free(late);
        return;
    }
    exec_ingest_stats z = {0};
    done_add(ls, (struct ldone){to, req, st ? *st : z, late, NULL});
}

void shadow_call_later(node *n, const char *stream, void (*fn)(node *n, uint64_t req), uint64_t req)
{
    lship *ls = find(n, stream, strlen(stream));
    if (!ls) {
        fn(n, req);
        return;
    }
    done_add(ls, (struct ldone){NULL, req, {0}, NULL, fn});
    ls->dirty = 1;
    ls->dirty = 1;
}

static int put_u64(sbuf *b, uint64_t v)
{
    unsigned char x[8];
    be64_put(x, v);
    return sbuf_add(b, x, 8);
}

/* Where this node's queries started reading the stream (their first
 * deployment), for the shadow: a redeployment there replays from the same
 * points. */
static int origins_of(node *n, const char *stream, sbuf *out)
{
    int bad = 0;
    for (dep *d = n->deps; d; d = d->next) {
        const char *names[ENGINE_MAX_SRC] = {NULL};
        int nsrc = 0;
        xerr err;
        struct ftorigin *o;
        for (o = n->origins; o && o->origin != d->origin; o = o->next) {}
        if (!o || engine_source_streams(n->eng, d->qid, names, &nsrc, &err)) continue;
        for (int k = 0; k < nsrc && k < o->nsrc; k++) {
            if (strcmp(names[k], stream)) continue;
            unsigned char b[13];
            be32_put(b, d->origin);
            b[4] = (unsigned char)k;
            be64_put(b + 5, o->off[k]);
            bad |= sbuf_add(out, b, sizeof b);
        }
    }
    return bad;
}

/* Ship what the copy lacks, if the pipe has room. */
static void ship(node *n, lship *ls)
{
    if (!ls->shadow[0]) return;
    peer *p = node_peer(n, ls->shadow, strlen(ls->shadow));
    cs *l = p ? node_link(n, p) : NULL;
    if (!l || l->closing) return;
    if (l != ls->link) {
        ls->link = l;
        ls->next = ls->acked;
        ls->sent_begin = 0;
        sent_drop(ls);
    }
    if (ls->fed) {
        ship_begin(n, ls, l);
        return;
    }
    /* the history goes one shipment at a time: the live work (a recovery
     * that started the copy, above all) keeps the loop */
    if (ls->nsent >= (ls->catching ? 1 : SHIP_INFLIGHT)) return;
    sbuf log, org, ses;
    sbuf_init(&log);
    sbuf_init(&org);
    sbuf_init(&ses);
    uint64_t nx;
    xerr err;
    lsent *x = NULL;
    if (engine_log_export(n->eng, ls->stream, ls->next, SHIP_MAX, &log, &nx, &err)) {
        if (err.code == XE_NAME) ls->shadow[0] = 0; /* dropped */
        else node_log(n, NET_LOG_ERROR, "stream %s: reading its log for the shadow: %s", ls->stream, err.msg);
        goto out;
    }
    if (nx == ls->next && !ls->dirty) goto out; /* nothing new */
    if (!(x = calloc(1, sizeof *x))) goto out;
    /* the sessions' states, and the ingest ends, describe the whole log:
     * they go with the shipment that reaches its end */
    int whole = log.len >= 20 && nx == be64_get((const unsigned char *)log.p + 12);
    int ns = 0, bad = 0;
    for (ingsess *g = n->ings; g && whole; g = g->next)
        ns += g->session && g->in && g->stream && !strcmp(g->stream, ls->stream);
    if (ns && !(x->sess = calloc((size_t)ns * 2, sizeof *x->sess))) goto out;
    for (ingsess *g = n->ings; g && whole; g = g->next) {
        if (!g->session || !g->in || !g->stream || strcmp(g->stream, ls->stream)) continue;
        size_t at = ses.len;
        unsigned char len[4] = {0};
        bad |= put_u64(&ses, g->session) | put_u64(&ses, g->seq) | sbuf_add(&ses, len, 4);
        size_t st = ses.len;
        bad |= exec_ingest_save(g->in, &ses);
        if (bad) goto out;
        be32_put((unsigned char *)ses.p + at + 16, (uint32_t)(ses.len - st));
        x->sess[2 * x->nsess] = g->session;
        x->sess[2 * x->nsess + 1] = g->seq;
        x->nsess++;
    }
    if (origins_of(n, ls->stream, &org)) goto out;
    wire_msg m = {.type = WIRE_LOGSHIP};
    m.u.logship.stream = wire_str_of(ls->stream);
    m.u.logship.ship = ++ls->ship;
    m.u.logship.log = (wire_str){log.p, log.len};
    m.u.logship.origins = (wire_str){org.p, org.len};
    m.u.logship.sessions = (wire_str){ses.p, ses.len};
    if (cs_send_msg(l, &m)) goto out;
    x->ship = ls->ship;
    x->end = nx;
    if (whole) {
        x->done = ls->done;
        x->ndone = ls->ndone;
        ls->done = NULL;
        ls->ndone = ls->capdone = 0;
    }
    if (ls->sent_tail) ls->sent_tail->next = x;
    else {
        ls->sent = x;
        ls->waiting = clock_wall_ms();
    }
    ls->sent_tail = x;
    ls->nsent++;
    ls->next = nx;
    ls->dirty = !whole; /* the states still have to go */
    x = NULL;
out:
    if (x) sent_free(x);
    sbuf_fini(&log);
    sbuf_fini(&org);
    sbuf_fini(&ses);
}

void shadow_tick(node *n)
{
    for (lship *ls = n->lships; ls; ls = ls->next_ls) {
        if (ls->nsent && clock_wall_ms() - ls->waiting > SHIP_RETRY_MS) {
            /* lost on the way, or refused (the shadow had not created the
             * stream yet): again from what the copy has */
            node_log(n, NET_LOG_INFO, "stream %s: no answer from the copy on %s for %d ms; shipping again from %llu",
                     ls->stream, ls->shadow, SHIP_RETRY_MS, (unsigned long long)ls->acked);
            ls->next = ls->acked;
            sent_drop(ls);
        }
        ship(n, ls);
    }
}

void shadow_ship_soon(node *n, const char *stream)
{
    lship *ls = find(n, stream, strlen(stream));
    if (ls) {
        ls->dirty = 1;
        ship(n, ls);
    }
}

void node_logshadow(node *n, const char *stream, const char *shadow, const char *source, int fed)
{
    xerr err;
    lship *ls = find(n, stream, strlen(stream));
    if (source && source[0] && engine_stream_source(n->eng, stream, source, &err))
        node_log(n, NET_LOG_ERROR, "stream %s: cannot read its source %s here: %s", stream, source, err.msg);
    if (!shadow || !shadow[0]) {
        if (engine_log_guard(n->eng, stream, 0, &err))
            node_log(n, NET_LOG_ERROR, "stream %s: %s", stream, err.msg);
        if (ls) {
            ls->shadow[0] = 0;
            sent_drop(ls);
            for (int i = 0; i < ls->ndone; i++) done_fire(n, &ls->done[i]);
            ls->ndone = 0;
        }
        node_log(n, NET_LOG_WARN, "stream %s: home here, no shadow home (no other domain has a live node)", stream);
        node_ingest_acks(n, stream);
        return;
    }
    if (!ls) {
        if (!(ls = calloc(1, sizeof *ls)) || !(ls->stream = strdup(stream))) {
            free(ls);
            node_log(n, NET_LOG_ERROR, "stream %s: out of memory", stream);
            return;
        }
        ls->next_ls = n->lships;
        n->lships = ls;
    }
    if (fed) {
        /* no guard, no shipments: the coordinator feeds the shadow */
        snprintf(ls->shadow, sizeof ls->shadow, "%s", shadow);
        ls->fed = 1;
        ls->link = NULL;
        sent_drop(ls);
        ls->dirty = 0;
        return;
    }
    if (ls->fed) {
        ls->fed = 0;
        ls->shadow[0] = 0; /* a copy from scratch */
    }
    if (strcmp(ls->shadow, shadow)) {
        uint64_t from = 0, end = 0;
        if (engine_log_needed(n->eng, stream, &from, &end, &err))
            node_log(n, NET_LOG_ERROR, "stream %s: %s", stream, err.msg);
        snprintf(ls->shadow, sizeof ls->shadow, "%s", shadow);
        ls->link = NULL;
        ls->acked = from;
        sent_drop(ls);
        /* A new copy first gets the log's history.  Until it has it the
         * stream is not safe anyway (losing the home now loses it), so the
         * queries are not held back meanwhile: the guard holds from the
         * moment the copy has caught up with the log as it is now. */
        ls->catching = end > from;
        ls->catch_end = end;
        node_log(n, NET_LOG_INFO, "stream %s: home here; its log is copied to %s from offset %llu%s", stream, shadow,
                 (unsigned long long)from, ls->catching ? " (the queries wait for the copy once it has caught up)" : "");
    }
    if (engine_log_guard(n->eng, stream, !ls->catching, &err)) {
        node_log(n, NET_LOG_ERROR, "stream %s: %s", stream, err.msg);
        return;
    }
    /* the history goes from the next tick on: a failure event's recovery
     * comes first */
    if (!ls->catching) ship(n, ls);
}

/* The chunks of every ingest session of stream that are safe now, to
 * whoever forwards each (RES_ACKED; the coordinator's own clients through
 * n->co_ingest_safe). */
void node_ingest_acks(node *n, const char *stream)
{
    int guarded = shadow_guarded(n, stream);
    for (ingsess *g = n->ings; g; g = g->next) {
        if (!g->session || !g->from || !g->stream || strcmp(g->stream, stream)) continue;
        uint64_t seq = guarded ? g->safe : g->seq;
        if (g->from->kind == CS_CLIENT && !g->from->direct) {
            if (n->co) n->co_ingest_safe(n, g->from, g->req, seq);
            continue;
        }
        unsigned char b[8];
        be64_put(b, seq);
        cs_result(g->from, g->req, 0, RES_ACKED, 0, b, sizeof b);
    }
}

/* The copy holds shipment `ship`: what it carried is safe. */
static void logack(node *n, cs *s, const wire_msg *m)
{
    lship *ls = find(n, m->u.logack.stream.p, m->u.logack.stream.n);
    if (!ls || ls->link != s) return; /* an old connection, or an old shadow */
    int any = 0, nfire = 0;
    struct ldone *fire = NULL;
    ls->waiting = clock_wall_ms();
    while (ls->sent && ls->sent->ship <= m->u.logack.ship) {
        lsent *x = ls->sent;
        ls->sent = x->next;
        if (!ls->sent) ls->sent_tail = NULL;
        ls->nsent--;
        if (x->end > ls->acked) ls->acked = x->end;
        for (int i = 0; i < x->nsess; i++)
            for (ingsess *g = n->ings; g; g = g->next)
                if (g->session == x->sess[2 * i] && x->sess[2 * i + 1] > g->safe) {
                    g->safe = x->sess[2 * i + 1];
                    any = 1;
                }
        if (x->ndone) { /* fired below, once the queries have these records */
            struct ldone *v = realloc(fire, (size_t)(nfire + x->ndone) * sizeof *v);
            if (v) {
                fire = v;
                memcpy(fire + nfire, x->done, (size_t)x->ndone * sizeof *v);
                nfire += x->ndone;
            } else
                for (int i = 0; i < x->ndone; i++) done_fire(n, &x->done[i]);
        }
        sent_free(x);
    }
    xerr err;
    if (ls->catching && ls->acked >= ls->catch_end) {
        ls->catching = 0;
        if (engine_log_guard(n->eng, ls->stream, 1, &err)) node_log(n, NET_LOG_ERROR, "stream %s: %s", ls->stream, err.msg);
        node_log(n, NET_LOG_INFO, "stream %s: its copy on %s caught up (offset %llu)", ls->stream, ls->shadow,
                 (unsigned long long)ls->acked);
    }
    if (engine_log_release(n->eng, ls->stream, ls->acked, &err))
        node_log(n, NET_LOG_ERROR, "stream %s: %s", ls->stream, err.msg);
    for (int i = 0; i < nfire; i++) done_fire(n, &fire[i]);
    free(fire);
    if (any) node_ingest_acks(n, ls->stream);
    ship(n, ls);
}

static void logship(node *n, cs *s, const wire_msg *m)
{
    char stream[512];
    snprintf(stream, sizeof stream, "%.*s", (int)m->u.logship.stream.n, m->u.logship.stream.p);
    xerr err;
    uint64_t end;
    if (engine_log_import(n->eng, stream, m->u.logship.log.p, m->u.logship.log.n, &end, &err)) {
        node_log(n, NET_LOG_ERROR, "stream %s: the copy of its log from %s failed: %s", stream,
                 s->peer ? s->peer->name : "?", err.msg);
        return;
    }
    /* where the home's queries started */
    const unsigned char *o = (const unsigned char *)m->u.logship.origins.p;
    for (size_t at = 0; at + 13 <= m->u.logship.origins.n; at += 13) {
        uint32_t origin = be32_get(o + at);
        int k = o[at + 4];
        if (k >= ENGINE_MAX_SRC) continue;
        struct ftorigin *x;
        for (x = n->origins; x && x->origin != origin; x = x->next) {}
        if (!x && (x = calloc(1, sizeof *x))) {
            x->origin = origin;
            x->next = n->origins;
            n->origins = x;
        }
        if (!x) continue;
        x->off[k] = be64_get(o + at + 5);
        x->have |= 1 << k;
        if (x->nsrc < k + 1) x->nsrc = k + 1;
    }
    /* the home's ingest sessions: these, and no others, once we hold its
     * whole log (a shipment of the history carries none) */
    const unsigned char *lh = (const unsigned char *)m->u.logship.log.p;
    if (m->u.logship.log.n < 20 || end != be64_get(lh + 12)) goto ack;
    for (shsess **pp = &n->shsess; *pp;) {
        shsess *x = *pp;
        if (!strcmp(x->stream, stream)) {
            *pp = x->next;
            free(x->stream);
            sbuf_fini(&x->state);
            free(x);
        } else
            pp = &x->next;
    }
    const unsigned char *p = (const unsigned char *)m->u.logship.sessions.p;
    size_t len = m->u.logship.sessions.n;
    for (size_t at = 0; at + 20 <= len;) {
        uint32_t sl = be32_get(p + at + 16);
        if (len - at - 20 < sl) break;
        shsess *x = calloc(1, sizeof *x);
        if (!x || !(x->stream = strdup(stream))) {
            free(x);
            break;
        }
        x->session = be64_get(p + at);
        x->seq = be64_get(p + at + 8);
        sbuf_init(&x->state);
        if (sbuf_add(&x->state, p + at + 20, sl)) {
            free(x->stream);
            free(x);
            break;
        }
        x->next = n->shsess;
        n->shsess = x;
        at += 20 + sl;
    }
ack:;
    wire_msg a = {.type = WIRE_LOGACK};
    a.u.logack.stream = m->u.logship.stream;
    a.u.logack.ship = m->u.logship.ship;
    a.u.logack.end = end;
    cs_send_msg(s, &a);
}

void shadow_frame(node *n, cs *s, const wire_msg *m)
{
    if (m->type == WIRE_LOGSHIP) logship(n, s, m);
    else if (m->type == WIRE_LOGACK) logack(n, s, m);
}

int shadow_session(node *n, const char *stream, uint64_t session, exec_ingest *in, uint64_t *seq, xerr *err)
{
    for (shsess **pp = &n->shsess; *pp; pp = &(*pp)->next) {
        shsess *x = *pp;
        if (x->session != session || strcmp(x->stream, stream)) continue;
        int rc = exec_ingest_load(in, x->state.p, x->state.len, err);
        if (!rc) *seq = x->seq;
        *pp = x->next;
        free(x->stream);
        sbuf_fini(&x->state);
        free(x);
        return rc ? rc : 1;
    }
    return 0;
}

void shadow_conn_closed(node *n, cs *s)
{
    for (lship *ls = n->lships; ls; ls = ls->next_ls) {
        if (ls->link == s) ls->link = NULL;
        for (int i = 0; i < ls->ndone; i++)
            if (ls->done[i].to == s) ls->done[i].to = NULL;
        for (lsent *x = ls->sent; x; x = x->next)
            for (int i = 0; i < x->ndone; i++)
                if (x->done[i].to == s) x->done[i].to = NULL;
    }
}

void shadow_free(node *n)
{
    while (n->lships) {
        lship *ls = n->lships;
        n->lships = ls->next_ls;
        sent_drop(ls);
        for (int i = 0; i < ls->ndone; i++) exec_late_free(ls->done[i].late);
        free(ls->done);
        free(ls->stream);
        free(ls);
    }
    while (n->shsess) {
        shsess *x = n->shsess;
        n->shsess = x->next;
        free(x->stream);
        sbuf_fini(&x->state);
        free(x);
    }
}
