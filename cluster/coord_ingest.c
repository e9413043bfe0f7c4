/*
 * coord_ingest.c: a client's input into a stream.  An INGEST chunk goes to
 * the stream's home (which answers) and, for a stream fed through the
 * coordinator, to its shadow home in another domain (quietly), each here
 * or forwarded under our request id; TICKs cut both logs' slices at the
 * same point of the input.  An ingest session's chunks are acknowledged to
 * the client (RES_ACKED) once the home and the shadow both have them.  When
 * the home is lost the shadow answers from then on, or the session moves
 * to the stream's new home at the failure event (the client sends again
 * what it lacks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/coord.h"

/* An INSERT into a shadowed stream goes to the shadow too (first, after a
 * TICK: both see it at the same point of the input); nobody waits for it. */
void insert_to_shadow(node *n, cstream *c, const ast_stmt *st)
{
    tick_stream(n, c);
    c->dirty = 1;
    if (!strcmp(c->shadow, n->cfg.name)) {
        xerr err;
        exec_out none = {0};
        if (engine_exec(n->eng, st, &none, &err)) node_log(n, NET_LOG_WARN, "shadow insert into %s: %s", c->name, err.msg);
        return;
    }
    peer *x = node_peer(n, c->shadow, strlen(c->shadow));
    wire_msg m = {.type = WIRE_QUERY};
    m.u.query.req_id = 0;
    m.u.query.sql = wire_str_of(st->text);
    if (x && coord_alive(x)) cs_send_msg(x->link, &m);
}

/* TICK a shadowed stream at its home and its shadow, in order with its input. */
void tick_stream(node *n, cstream *c)
{
    wire_msg m = {.type = WIRE_TICK};
    m.u.tick.stream = wire_str_of(c->name);
    const char *who[2] = {c->home, c->shadow};
    for (int i = 0; i < 2; i++) {
        if (!who[i]) continue;
        if (!strcmp(who[i], n->cfg.name)) {
            node_tick(n, c->name, strlen(c->name));
            continue;
        }
        peer *x = node_peer(n, who[i], strlen(who[i]));
        if (x && coord_alive(x)) cs_send_msg(x->link, &m);
    }
    c->dirty = 0;
    c->tick_ms = clock_wall_ms();
}

/* One forward of an ingest request to node x (the home, or quiet: the shadow). */
static pend *fwd_open(node *n, cs *s, uint64_t req, peer *x, int quiet)
{
    pend *p = pend_new(n, PK_FWD_INGEST);
    if (!p) return NULL;
    p->client = s;
    p->creq = req;
    p->home = x;
    p->quiet = quiet;
    return p;
}

static int coord_ingest_redirect(node *n, cs *s, pend *swallow, const char *name, cstream *cst, peer *home);

/* A client's ingest (a session it can resend) whose home was lost, into a
 * stream whose log is copied elsewhere: it waits for the failure event,
 * which makes the copy the home (promote_shadows); then the client sends
 * the chunks the copy lacks again (RES_RESEND) and they go there. */
int coord_ingest_can_move(node *n, pend *p)
{
    cstream *c = p->stream ? stream_find(n->co, p->stream) : NULL;
    if (!c || !c->lshadow || !p->client || !p->client->sess || p->client->sess->ing_req != p->creq) return 0;
    p->moving = 1;
    p->home = NULL;
    return 1;
}

void move_ingests(node *n)
{
    for (pend *p = n->co->pends; p; p = p->next) {
        if (p->kind != PK_FWD_INGEST || !p->moving) continue;
        p->moving = 0;
        cstream *c = p->stream ? stream_find(n->co, p->stream) : NULL;
        peer *h = c ? node_peer(n, c->home, strlen(c->home)) : NULL;
        int here = c && !strcmp(c->home, n->cfg.name);
        if (!here && (!h || !coord_alive(h))) {
            p->failed = 1;
            if (p->client) cs_error(p->client, p->creq, XE_IO, "the stream's home and its copy were lost");
            continue;
        }
        if (here) p->failed = 1; /* the chunks are fed here from now on */
        else p->home = h;
        p->acked = 0;
        if (p->client && p->direct && !here && coord_ingest_redirect(n, p->client, p, p->stream, c, h)) continue;
        node_log(n, NET_LOG_WARN, "ingest into %s goes on at its new home %s: the client sends what it lacks again",
                 p->stream, c->home);
        if (p->client) cs_result(p->client, p->creq, 0, RES_RESEND, 0, NULL, 0);
    }
}

static void fwd_send(node *n, cs *s, pend *p, const wire_frame *f)
{
    unsigned char *copy = malloc(f->length);
    if (!copy) {
        p->failed = 1;
        return;
    }
    memcpy(copy, f->payload, f->length);
    be64_put(copy, p->id);
    cs *saved = n->cur_in;
    n->cur_in = s;
    cs_send(p->home->link, WIRE_INGEST, f->flags, copy, f->length);
    n->cur_in = saved;
    free(copy);
}

/* --end on a partitioned stream ends every partition: an empty last chunk
 * that ends the stream goes to each partition's home and shadow (a
 * partition also ends alone: ares-sql --ingest 'NAME#P' --end). */
static void end_partitions(node *n, const char *name)
{
    for (int p = 1; p < PLAN_MAX_PARTITIONS; p++) {
        cstream *c = partition_find(n->co, name, p);
        if (!c) break;
        const char *pn = c->name;
        if (c->shadow) tick_stream(n, c);
        const char *who[2] = {c->home, c->shadow};
        for (int i = 0; i < 2; i++) {
            if (!who[i]) continue;
            xerr err;
            if (!strcmp(who[i], n->cfg.name)) {
                if (engine_end_stream(n->eng, pn, &err)) node_log(n, NET_LOG_WARN, "end of %s: %s", pn, err.msg);
                continue;
            }
            peer *x = node_peer(n, who[i], strlen(who[i]));
            pend *fp = x && coord_alive(x) ? fwd_open(n, NULL, 0, x, 1) : NULL;
            if (!fp) continue;
            wire_msg m = {.type = WIRE_INGEST, .flags = WIRE_F_LAST};
            m.u.ingest.req_id = fp->id;
            m.u.ingest.stream = wire_str_of(pn);
            m.u.ingest.format = WIRE_FMT_STREAM;
            m.u.ingest.end = 1;
            cs_send_msg(x->link, &m);
        }
    }
}

/* The first chunk of a client's ingest that can go straight to the
 * stream's home (WIRE_F_DIRECT): a stream whose home copies its log to a
 * shadow (SET shadow = 'log') keeps no order between its input and anything
 * the coordinator sends, so the home can take its input from the client
 * itself and the coordinator forwards nothing.  The client hears where the
 * home is (RES_HOME) and sends every chunk there, this one too; the rest of
 * this request that reaches us is swallowed.  Not for a stream fed to a
 * shadow by us (both must get the input in order with the DEPLOYs and
 * TICKs), nor for a partitioned stream's own name (its end ends every
 * partition, end_partitions; "s#0" is partition 0 alone), nor when the
 * home is us.  1: redirected. */
static int coord_ingest_redirect(node *n, cs *s, pend *swallow, const char *name, cstream *cst, peer *home)
{
    if (!cst->lshadow || cst->shadow || !home || !home->addr[0] || !strcmp(cst->home, n->cfg.name) ||
        (!strcasecmp(name, cst->name) && partition_find(n->co, cst->name, 1)))
        return 0;
    sbuf b;
    sbuf_init(&b);
    wire_wr w;
    wire_wr_init(&w, &b);
    wire_put_str(&w, home->addr, strlen(home->addr));
    wire_put_str(&w, home->name, strlen(home->name));
    int rc = wire_wr_end(&w, NULL) ? XE_NOMEM : cs_result(s, swallow->creq, 0, RES_HOME, 0, b.p, b.len);
    sbuf_fini(&b);
    if (rc) return 0;
    swallow->failed = 1; /* the rest of the request that reaches us */
    swallow->home = NULL;
    node_log(n, NET_LOG_INFO, "ingest into %s goes straight to its home node %s at %s (its log copied to %s)",
             name, home->name, home->addr, cst->lshadow);
    return 1;
}

/* A client's INGEST chunk: to the stream's home (which answers) and to its
 * shadow (which does not), each here or forwarded under our request id. */
void coord_ingest_from_client(node *n, cs *s, const wire_msg *m, const wire_frame *f)
{
    uint64_t req = m->u.ingest.req_id;
    int last = (m->flags & WIRE_F_LAST) != 0, first = 1;
    char name[512];
    snprintf(name, sizeof name, "%.*s", (int)m->u.ingest.stream.n, m->u.ingest.stream.p);
    cstream *cst = stream_find(n->co, name);
    for (pend *p = n->co->pends; p; p = p->next)
        if (p->kind == PK_FWD_INGEST && p->client == s && p->creq == req) first = 0;
    for (ingsess *g = n->ings; g; g = g->next)
        if (g->from == s && g->req == req) first = 0;
    if (first) {
        char msg[700];
        peer *home = cst ? node_peer(n, cst->home, strlen(cst->home)) : NULL;
        if (cst && m->u.ingest.session && cst->lshadow && !last && strcmp(cst->home, n->cfg.name) &&
            (!home || !coord_alive(home))) {
            /* a session that comes back (from a lost home, straight to it)
             * before the failure event made the copy the home: it waits for
             * it (move_ingests), its chunks kept by the client */
            pend *p = fwd_open(n, s, req, NULL, 0);
            if (!p || !(p->stream = strdup(name))) {
                cs_error(s, req, XE_NOMEM, "out of memory");
                return;
            }
            p->moving = 1;
            p->direct = (m->flags & WIRE_F_DIRECT) != 0;
            node_log(n, NET_LOG_INFO, "ingest into %s waits for its home %s's failure to be handled", name, cst->home);
            return;
        }
        if (!cst) snprintf(msg, sizeof msg, "unknown stream '%s'", name);
        else if (strcmp(cst->home, n->cfg.name) && (!home || !coord_alive(home)))
            snprintf(msg, sizeof msg, "stream '%s' lives on node %s, which is not alive", name, cst->home);
        else
            msg[0] = 0;
        if (msg[0]) {
            cs_error(s, req, cst ? XE_IO : XE_NAME, msg);
            pend *p = last ? NULL : fwd_open(n, s, req, NULL, 0);
            if (p) p->failed = 1; /* swallow the rest */
            return;
        }
        if ((m->flags & WIRE_F_DIRECT) && !last) {
            pend *p = fwd_open(n, s, req, NULL, 0);
            if (!p) {
                cs_error(s, req, XE_NOMEM, "out of memory");
                return;
            }
            if (coord_ingest_redirect(n, s, p, name, cst, home)) return;
            pend_unlink(n, p);
            pend_free(p);
        }
        if (cst->shadow) tick_stream(n, cst); /* both cut records from the same point */
        const char *who[2] = {cst->home, cst->shadow};
        for (int i = 0; i < 2; i++) {
            if (!who[i] || !strcmp(who[i], n->cfg.name)) continue;
            peer *x = node_peer(n, who[i], strlen(who[i]));
            if (!x || !coord_alive(x)) continue;
            pend *p = fwd_open(n, s, req, x, i == 1);
            if (!p || !(p->stream = strdup(name))) {
                cs_error(s, req, XE_NOMEM, "out of memory");
                return;
            }
            p->direct = (m->flags & WIRE_F_DIRECT) != 0;
            if (i == 0) node_log(n, NET_LOG_INFO, "ingest into %s goes to its home node %s%s%s", name, x->name,
                                 cst->shadow ? " and its shadow " : "", cst->shadow ? cst->shadow : "");
        }
    }
    if (cst && cst->shadow) cst->dirty = 1;
    if (cst && last && m->u.ingest.end && !strcasecmp(cst->name, name)) end_partitions(n, cst->name);
    /* here: as the home, or quietly as the shadow */
    csess *ss = m->u.ingest.session ? s->sess : NULL;
    if (ss && ss->ing_req != req) {
        ss->ing_req = req;
        ss->ing_acked = ss->ing_local = 0;
        ss->ing_here = 0;
    }
    if (cst && (!strcmp(cst->home, n->cfg.name) || (cst->shadow && !strcmp(cst->shadow, n->cfg.name)))) {
        node_ingest(n, s, m, strcmp(cst->home, n->cfg.name) != 0);
        if (ss) {
            ss->ing_here = 1;
            ss->ing_local = node_ingest_safe(n, s, req, m->u.ingest.seq);
        }
    }
    if (s->sess && m->u.ingest.session && !last) coord_ingest_acked(n, s, req);
    for (pend *p = n->co->pends, *nx; p; p = nx) {
        nx = p->next;
        if (p->kind != PK_FWD_INGEST || p->client != s || p->creq != req) continue;
        if (!p->failed && p->home) fwd_send(n, s, p, f);
        /* one that waits for the failure event stays: the client sends the
         * whole rest again when it has heard where to (move_ingests) */
        if (last && (p->failed || (!p->home && !p->moving))) {
            pend_unlink(n, p);
            pend_free(p);
        }
    }
    /* a slice ends at most COORD_SLICE_MS after its rows came: a window
     * closes that soon after the input passes its end */
    if (cst && cst->shadow && cst->dirty && clock_wall_ms() - cst->tick_ms >= COORD_SLICE_MS) tick_stream(n, cst);
}

/* An ingest session's chunks that the home and the shadow both have. */
void coord_ingest_acked(node *n, cs *s, uint64_t req)
{
    uint64_t lo = UINT64_MAX;
    int any = 0;
    for (pend *p = n->co->pends; p; p = p->next)
        if (p->kind == PK_FWD_INGEST && p->client == s && p->creq == req && !p->failed && p->home) {
            if (p->acked < lo) lo = p->acked;
            any = 1;
        }
    csess *ss = s->sess;
    if (ss && ss->ing_here && ss->ing_req == req) {
        if (ss->ing_local < lo) lo = ss->ing_local;
        any = 1;
    }
    if (!any || !ss || ss->ing_req != req || lo <= ss->ing_acked) return;
    ss->ing_acked = lo;
    unsigned char v[8];
    be64_put(v, lo);
    cs_result(s, req, 0, RES_ACKED, 0, v, sizeof v);
}

void coord_ingest_safe(node *n, cs *s, uint64_t req, uint64_t safe)
{
    csess *ss = s->sess;
    if (!ss || ss->ing_req != req || !ss->ing_here) return;
    ss->ing_local = safe;
    coord_ingest_acked(n, s, req);
}

/* The home of a forwarded ingest is lost: its stream's shadow, which got
 * every chunk, answers the client from now on.  0 when there is none. */
int coord_shadow_takes_over(node *n, pend *p)
{
    for (pend *q = n->co->pends; q; q = q->next)
        if (q != p && q->kind == PK_FWD_INGEST && q->client == p->client && q->creq == p->creq && q->quiet &&
            !q->failed && q->home && coord_alive(q->home)) {
            q->quiet = 0;
            return 1;
        }
    return p->client && node_ingest_loud(n, p->client, p->creq);
}
