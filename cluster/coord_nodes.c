/*
 * coord_nodes.c: what the coordinator sends the nodes and how it waits for
 * them.  A `pend` is a request that nodes (or one forwarded-to node) answer,
 * keyed by its request id; on_answer (coord.c) and the loss of a node
 * (coord_closed) finish it, so none waits forever.  Here: pends, broadcasts
 * to every live member, MEMBERSHIP, DEPLOY and UNDEPLOY, and the small
 * helpers that answer a client (a table, a notice, a statement run on this
 * node's own engine).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

void coord_send_table(cs *to, uint64_t req, int ncols, const char *const *names, const sql_type *types, const batch *b)
{
    fmt_schema sc = {ncols, names, types};
    sbuf p;
    sbuf_init(&p);
    if (!res_begin_put(&p, &sc, 0)) cs_result(to, req, 0, RES_BEGIN, 0, p.p + 1, p.len - 1);
    sbuf_reset(&p);
    if (b->nrows && !batch_encode(b, &p)) cs_result(to, req, 0, RES_ROWS, (uint32_t)b->nrows, p.p, p.len);
    cs_result(to, req, 0, RES_END, 0, NULL, 0);
    sbuf_fini(&p);
}

void coord_notice_to(cs *to, uint64_t req, const char *msg)
{
    if (to) cs_result(to, req, 0, RES_NOTICE, 0, msg, strlen(msg));
}

int coord_exec_local(node *n, cs *s, uint64_t req, const ast_stmt *st, xerr *err)
{
    node_fwd f = {s, req, {0}};
    sbuf_init(&f.b);
    exec_out out = node_fwd_out(&f);
    int rc = engine_exec(n->eng, st, &out, err);
    sbuf_fini(&f.b);
    return rc;
}

pend *pend_new(node *n, int kind)
{
    pend *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->id = n->co->next_req++;
    p->kind = kind;
    p->next = n->co->pends;
    n->co->pends = p;
    return p;
}

void pend_unlink(node *n, pend *p)
{
    for (pend **pp = &n->co->pends; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
}

void pend_free(pend *p)
{
    if (!p) return;
    free(p->stream);
    free(p->wait);
    batch_fini(&p->gb);
    free(p);
}

void pend_finish(node *n, pend *p)
{
    pend_unlink(n, p);
    if (p->done) p->done(n, p);
    pend_free(p);
}

int pend_wait_for(pend *p, peer *x)
{
    peer **v = realloc(p->wait, (size_t)(p->nwait + 1) * sizeof *v);
    if (!v) return XE_NOMEM;
    p->wait = v;
    p->wait[p->nwait++] = x;
    return 0;
}

void pend_answered(node *n, pend *p, peer *x)
{
    for (int i = 0; i < p->nwait; i++)
        if (p->wait[i] == x) {
            p->wait[i] = p->wait[--p->nwait];
            break;
        }
    if (p->nwait == 0) pend_finish(n, p);
}

/* Send a frame to every live node; p (if any) waits for all their answers.
 * Returns 1 when p waits, 0 when there was nobody to ask (p finished). */
static int broadcast_flags(node *n, pend *p, uint8_t type, uint16_t flags, const void *payload, size_t len)
{
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!coord_alive(x)) continue;
        if (cs_send(x->link, type, flags, payload, len) == 0 && p) pend_wait_for(p, x);
    }
    if (p && p->nwait == 0) {
        pend_finish(n, p);
        return 0;
    }
    return 1;
}

static int broadcast(node *n, pend *p, uint8_t type, const void *payload, size_t len)
{
    return broadcast_flags(n, p, type, 0, payload, len);
}

int coord_broadcast_sql(node *n, pend *p, const char *sql)
{
    wire_msg m = {.type = WIRE_QUERY};
    m.u.query.req_id = p ? p->id : 0;
    m.u.query.sql = wire_str_of(sql);
    sbuf b;
    sbuf_init(&b);
    int rc = wire_msg_payload(&b, &m, NULL);
    if (rc) {
        sbuf_fini(&b);
        if (p) {
            pend_unlink(n, p);
            pend_free(p);
        }
        return rc;
    }
    rc = broadcast(n, p, WIRE_QUERY, b.p, b.len);
    sbuf_fini(&b);
    return rc;
}

int64_t coord_node_load(node *n, const char *name)
{
    int64_t l = 0;
    for (cquery *q = n->co->queries; q; q = q->next)
        for (int t = 0; t < q->ntasks; t++)
            if (!strcmp(q->tnode[t], name)) l++;
    return l;
}

void send_membership(node *n)
{
    coord *co = n->co;
    co->epoch++;
    sbuf ent, b;
    sbuf_init(&ent);
    sbuf_init(&b);
    wire_wr w;
    wire_wr_init(&w, &ent);
    uint32_t count = 1;
    wire_member me = {wire_str_of(n->cfg.name), wire_str_of(n->cfg.domain), wire_str_of(n->addr), WIRE_MEMBER_UP,
                      (uint32_t)n->cfg.slots, (uint32_t)(n->cfg.speed * 1000 + 0.5),
                      (uint32_t)(coord_node_load(n, n->cfg.name) * 1000), clock_wall_ms()};
    wire_put_member(&w, &me);
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!coord_joined(x)) continue;
        wire_member m = {wire_str_of(x->name), wire_str_of(x->domain), wire_str_of(x->addr), (uint8_t)x->state,
                         x->slots, x->speed_milli, (uint32_t)(coord_node_load(n, x->name) * 1000), x->last_hb};
        wire_put_member(&w, &m);
        count++;
    }
    wire_msg mm = {.type = WIRE_MEMBERSHIP};
    mm.u.membership.epoch = co->epoch;
    mm.u.membership.count = count;
    mm.u.membership.entries = (wire_str){ent.p, (uint32_t)ent.len};
    if (!wire_wr_end(&w, NULL) && !wire_msg_payload(&b, &mm, NULL)) broadcast(n, NULL, WIRE_MEMBERSHIP, b.p, b.len);
    sbuf_fini(&ent);
    sbuf_fini(&b);
    co->members_dirty = 0;
    /* with a standby, a restart must learn whether it is still the active
     * coordinator: it serves once a majority of these members joined it */
    int up = 1;
    for (int i = 0; i < n->npeers; i++) up += coord_alive(n->peers[i]);
    if (co->had_standby && !co->wait_majority && up != co->members_kept) {
        char v[16];
        int len = snprintf(v, sizeof v, "%d", up);
        xerr err;
        if (!cat_put(n, "members", v, (size_t)len, &err)) co->members_kept = up;
    }
}

/* To one connection, or to every live node (then 1 while p waits). */
int send_deploy(node *n, cs *to, pend *p, cquery *q)
{
    int rc = 0;
    wire_msg m = {.type = WIRE_DEPLOY};
    m.u.deploy.query_id = q->qid;
    m.u.deploy.task_id = (uint32_t)q->ntasks;
    m.u.deploy.epoch = p ? p->id : 0;
    m.u.deploy.plan = (wire_str){q->plan.p, (uint32_t)q->plan.len};
    sbuf b;
    sbuf_init(&b);
    if (!wire_msg_payload(&b, &m, NULL)) {
        if (to) cs_send(to, WIRE_DEPLOY, 0, b.p, b.len);
        else rc = broadcast(n, p, WIRE_DEPLOY, b.p, b.len);
    }
    sbuf_fini(&b);
    return rc;
}

void send_undeploy(node *n, cquery *q, int keep_state)
{
    wire_msg m = {.type = WIRE_UNDEPLOY, .flags = keep_state ? WIRE_F_KEEP : 0};
    m.u.undeploy.query_id = q->qid;
    sbuf b;
    sbuf_init(&b);
    if (!wire_msg_payload(&b, &m, NULL)) broadcast_flags(n, NULL, WIRE_UNDEPLOY, m.flags, b.p, b.len);
    sbuf_fini(&b);
}
