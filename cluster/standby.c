/*
 * standby.c: coordinator terms, the standby coordinator and the
 * coordinator's own failover (docs/architecture.md, "The coordinator"), both
 * sides of it in one place.
 *
 * The node's side.  Every node remembers the highest term it heard and
 * refuses a coordinator of an older one (TERM ANNOUNCE, REFUSE: the
 * fencing).  A standby (--coordinator --join) keeps a copy of the active's
 * catalog (CATALOG frames); when it loses the active it asks the members for
 * the next term (ASK), and a member that lost the active too grants it
 * (GRANT) and dials only it for a while.  Granted by a majority, counting
 * itself, the standby takes over (coord_takeover).  A coordinator that hears
 * of a newer term steps down and runs again as a standby (node_run returns
 * NODE_RUN_REJOIN).
 *
 * The coordinator's side.  A standby that takes over starts from the
 * replicated catalog under the new term and waits for the members to join
 * it; who does not join is dead.  A coordinator refused with a newer term is
 * deposed; one that had a standby and lost the majority of its members
 * fences itself; either stops acting and closes its clients.  coord.c's tick
 * drives the waits (takeover_probe, takeover_deaths, check_quorum,
 * probe_standby; coord.h).
 *
 * The node's state is struct standby (node_int.h), n->sb; the term itself
 * is n->term, which the coordinator's files read and set too; the
 * coordinator's is in struct coord (coord.h).  Runs on the engine's loop,
 * like all of the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"
#include "cluster/node_int.h"

/* ------------------------------------------------------------------ the node's side */

void standby_send_term(cs *to, uint64_t term, int kind, const char *name, const char *addr)
{
    wire_msg m = {.type = WIRE_TERM};
    m.u.term.term = term;
    m.u.term.kind = (uint8_t)kind;
    m.u.term.name = wire_str_of(name);
    m.u.term.addr = wire_str_of(addr);
    cs_send_msg(to, &m);
}

typedef struct keys {
    char **v;
    int n;
} keys;

static int collect_key(void *ctx, const char *key, const void *v, size_t len)
{
    (void)v;
    (void)len;
    keys *k = ctx;
    char **x = realloc(k->v, (size_t)(k->n + 1) * sizeof *x);
    if (!x) return XE_NOMEM;
    k->v = x;
    if (!(k->v[k->n] = strdup(key))) return XE_NOMEM;
    k->n++;
    return 0;
}

/* A standby's copy of the active coordinator's catalog. */
void standby_catalog_frame(node *n, const wire_msg *m)
{
    char key[512];
    snprintf(key, sizeof key, "%.*s", (int)m->u.catalog.key.n, m->u.catalog.key.p);
    xerr err;
    xerr_clear(&err);
    int rc = 0;
    switch (m->u.catalog.op) {
    case WIRE_CAT_BEGIN: {
        /* a whole dump follows: what we had goes */
        keys k = {NULL, 0};
        n->sb->synced = 0;
        rc = engine_host_scan(n->eng, "", collect_key, &k, &err);
        for (int i = 0; i < k.n; i++) {
            if (!rc) rc = engine_host_del(n->eng, k.v[i], &err);
            free(k.v[i]);
        }
        free(k.v);
        break;
    }
    case WIRE_CAT_PUT: rc = engine_host_put(n->eng, key, m->u.catalog.value.p, m->u.catalog.value.n, &err); break;
    case WIRE_CAT_DEL: rc = engine_host_del(n->eng, key, &err); break;
    case WIRE_CAT_END:
        if (!n->sb->synced) node_log(n, NET_LOG_INFO, "standby: holding the catalog of coordinator term %llu",
                                    (unsigned long long)m->u.catalog.term);
        n->sb->synced = 1;
        if (m->u.catalog.term > n->term) n->term = m->u.catalog.term;
        break;
    }
    if (rc) {
        node_log(n, NET_LOG_ERROR, "standby: cannot keep the catalog (%s): %s; it cannot take over", key, err.msg);
        n->sb->synced = 0;
    }
}

/* Take over as the coordinator of a new term: the active is lost and a
 * majority of the members granted it. */
static void standby_takes_over(node *n)
{
    uint64_t term = n->sb->ask;
    n->sb->ask = 0;
    xerr err;
    xerr_clear(&err);
    node_log(n, NET_LOG_WARN, "standby: taking over as the coordinator of term %llu (%lld ms after the active was lost)",
             (unsigned long long)term, (long long)(clock_wall_ms() - (n->sb->coord_lost_at ? n->sb->coord_lost_at : n->sb->lost_at)));
    if (n->coord_link) net_close(n->coord_link->c, "taking over");
    n->coord_link = NULL;
    if (coord_takeover(n, term, &err)) {
        node_log(n, NET_LOG_ERROR, "standby: the takeover failed: %s; staying a standby", err.msg);
        return;
    }
    n->sb->standby = 0;
}

/* A standby without its active: ask every member for a new term; take over
 * once a majority (counting itself) granted it. */
void standby_tick(node *n)
{
    int64_t now = clock_wall_ms();
    if (n->coord_link && n->coord_link->ready) {
        n->sb->lost_at = 0;
        n->sb->ask = 0;
        return;
    }
    if (!n->sb->lost_at) {
        /* a closed connection is a crash or a goodbye: ask at once; a
         * silent one may be a late heartbeat: two more heartbeats first */
        int closed = n->sb->coord_lost_at && now - n->sb->coord_lost_at < 1000 && n->sb->coord_lost_why != NET_CLOSE_DEAD;
        n->sb->lost_at = closed ? n->sb->coord_lost_at - 2 * (int64_t)net_ctx_heartbeat_ms(n->net) : now;
        if (!closed) return;
    }
    if (!n->sb->synced || now - n->sb->lost_at < 2 * (int64_t)net_ctx_heartbeat_ms(n->net)) return;
    int granted = 1;
    for (int i = 0; i < n->npeers; i++)
        if (n->sb->ask && n->peers[i]->granted == n->sb->ask) granted++;
    if (n->sb->ask && 2 * granted > n->sb->base_alive) {
        standby_takes_over(n);
        return;
    }
    if (n->sb->ask && now - n->sb->ask_at < 100) return;
    if (!n->sb->ask) {
        n->sb->ask = n->term + 1;
        node_log(n, NET_LOG_WARN, "standby: the active coordinator is lost; asking the members for term %llu",
                 (unsigned long long)n->sb->ask);
    }
    n->sb->ask_at = now;
    for (int i = 0; i < n->npeers; i++) {
        peer *p = n->peers[i];
        if (p->is_coord || !p->slots || p->granted == n->sb->ask) continue;
        cs *l = node_link(n, p);
        if (l) standby_send_term(l, n->sb->ask, WIRE_TERM_ASK, n->cfg.name, n->addr);
    }
}

/* A newer term is active elsewhere (we heard it from ADDR: the coordinator
 * that announced it, or a member that refused us): stop acting, and run
 * again as a standby of the active coordinator (node_run returns
 * NODE_RUN_REJOIN), so that the cluster has a standby again. */
static void step_down(node *n, uint64_t t, const char *addr)
{
    if (n->sb->rejoin_to[0]) return;
    coord_deposed(n, t);
    n->term = t;
    const char *sb = coord_standby_addr(n);
    snprintf(n->sb->rejoin_to, sizeof n->sb->rejoin_to, "%s%s%s", addr, sb[0] && strcmp(sb, addr) ? "," : "",
             sb[0] && strcmp(sb, addr) ? sb : "");
    if (!n->sb->rejoin_to[0] || !strcmp(n->sb->rejoin_to, n->addr)) {
        n->sb->rejoin_to[0] = 0;
        return; /* nowhere to go: deposed, it stays silent */
    }
    node_log(n, NET_LOG_WARN, "stepping down: joining %s as a standby coordinator", n->sb->rejoin_to);
    uv_stop(n->loop);
}

void standby_term_frame(node *n, cs *s, const wire_msg *m)
{
    uint64_t t = m->u.term.term;
    char name[WIRE_NAME_MAX + 1], addr[128];
    snprintf(name, sizeof name, "%.*s", (int)m->u.term.name.n, m->u.term.name.p);
    snprintf(addr, sizeof addr, "%.*s", (int)m->u.term.addr.n, m->u.term.addr.p);
    switch (m->u.term.kind) {
    case WIRE_TERM_ANNOUNCE:
        if (net_peer_role(s->c) != WIRE_ROLE_COORDINATOR) return;
        if (t < n->term) {
            /* fencing: a coordinator of an old term acts no more */
            node_log(n, NET_LOG_WARN, "refusing coordinator %s of term %llu: term %llu is active", name,
                     (unsigned long long)t, (unsigned long long)n->term);
            standby_send_term(s, n->term, WIRE_TERM_REFUSE, n->cfg.name, n->addr);
            net_close(s->c, "an old coordinator term");
            return;
        }
        if (t > n->term && n->co) {
            step_down(n, t, addr);
            return;
        }
        if (t > n->term && n->term)
            node_log(n, NET_LOG_INFO, "coordinator %s: term %llu", name, (unsigned long long)t);
        n->term = t;
        s->term = t;
        return;
    case WIRE_TERM_ASK: {
        int hears = n->coord_link && n->coord_link->ready && s != n->coord_link;
        /* the same standby asking again for the term we granted it (our
         * GRANT is late): grant it again, or it would ask for a newer one */
        int again = t == n->term && !strcmp(n->sb->granted_to, name);
        if (!again && (n->co || hears || t <= n->term)) {
            node_log(n, NET_LOG_INFO, "refusing term %llu to %s: %s", (unsigned long long)t, name,
                     n->co ? "this is the coordinator" : hears ? "the coordinator is alive here" : "an old term");
            /* our own term: a standby that asked for a newer one keeps
             * asking for it (a refusal names a newer term only if we know one) */
            standby_send_term(s, n->term, WIRE_TERM_REFUSE, n->cfg.name, n->addr);
            return;
        }
        node_log(n, NET_LOG_WARN, "the coordinator is lost here too: granting term %llu to %s at %s",
                 (unsigned long long)t, name, addr);
        n->term = t;
        n->sb->ask = 0;
        snprintf(n->sb->granted_to, sizeof n->sb->granted_to, "%s", name);
        snprintf(n->sb->join_hint, sizeof n->sb->join_hint, "%s", addr);
        n->sb->join_hint_until = clock_wall_ms() + 4 * (int64_t)net_ctx_dead_ms(n->net);
        for (int i = 0; i < n->npeers; i++)
            if (n->peers[i]->is_coord) {
                n->peers[i]->is_coord = 0;
                n->peers[i]->state = WIRE_MEMBER_DEAD;
            }
        if (n->coord_link) net_close(n->coord_link->c, "a new coordinator term");
        n->coord_link = NULL;
        n->coord_retry_at = 0;
        standby_send_term(s, t, WIRE_TERM_GRANT, n->cfg.name, n->addr);
        return;
    }
    case WIRE_TERM_GRANT:
        if (s->peer && t == n->sb->ask) {
            s->peer->granted = t;
            if (n->sb->standby && !n->co) standby_tick(n); /* perhaps a majority now */
        }
        return;
    case WIRE_TERM_REFUSE:
        if (t > n->term && n->co) step_down(n, t, addr);
        else if (t > n->term) {
            n->term = t;
            n->sb->ask = 0;
        }
        return;
    }
}

/* ------------------------------------------------------------------ the coordinator's side */

/* Clients go (to find the active coordinator) when this one stops acting. */
static void close_clients(node *n, const char *why)
{
    for (cs *o = n->conns; o; o = o->next)
        if (o->kind == CS_CLIENT && o->c && !o->closing) {
            cs_error(o, 0, XE_IO, why);
            net_close(o->c, why);
        }
}

const char *coord_standby_addr(node *n)
{
    return n->co ? n->co->standby_addr : "";
}

/* Fenced, or restarted and waiting for a majority: the standby may have
 * taken over meanwhile.  Dial it now and then; if it did, it announces (or
 * refuses us with) the newer term, and we step down (step_down, above). */
void probe_standby(node *n, int64_t now)
{
    coord *co = n->co;
    if (!co->standby_addr[0] || !strcmp(co->standby_addr, n->addr) || now < co->probe_at) return;
    co->probe_at = now + 500;
    if (co->probe) {
        if (co->probe->c && !co->probe->closing) net_close(co->probe->c, "probe done");
        co->probe = NULL;
        return;
    }
    for (int i = 0; i < n->npeers; i++)
        if (!strcmp(n->peers[i]->addr, co->standby_addr) && n->peers[i]->link) return; /* we hear it anyway */
    co->probe = node_dial(n, co->standby_addr);
}

int coord_serving(node *n)
{
    coord *co = n->co;
    return co && !co->takeover_until && !co->takeover_event && !co->fenced && !co->deposed && !co->wait_majority;
}

void coord_deposed(node *n, uint64_t term)
{
    coord *co = n->co;
    if (!co || co->deposed) return;
    co->deposed = 1;
    node_log(n, NET_LOG_ERROR, "deposed: coordinator term %llu is active elsewhere; this node acts as the coordinator "
             "no more", (unsigned long long)term);
    close_clients(n, "this coordinator was deposed: connect to the active one");
}

int coord_takeover(node *n, uint64_t term, xerr *err)
{
    n->taking_over = 1;
    int rc = coord_start(n, err);
    n->taking_over = 0;
    if (rc) {
        coord_stop(n);
        return rc;
    }
    coord *co = n->co;
    co->had_standby = 0; /* none yet: nobody else can act, so no fencing without a majority */
    n->term = term;
    if ((rc = persist_term(n, err))) node_log(n, NET_LOG_ERROR, "recording term %llu: %s", (unsigned long long)term,
                                              err->msg);
    net_ctx_set_role(n->net, WIRE_ROLE_COORDINATOR);
    /* the members dial us as their coordinator now; our links as a node go */
    for (cs *o = n->conns; o; o = o->next)
        if (o->kind == CS_NODE && o->c && !o->closing) net_close(o->c, "taking over as the coordinator");
    int waiting = 0;
    for (int i = 0; i < n->npeers; i++) {
        peer *p = n->peers[i];
        p->link = NULL;
        p->rejoined = 0;
        p->granted = 0;
        p->probe = NULL;
        p->probe_tried = p->gone = 0;
        p->is_coord = 0; /* the old active: a member that will not join */
        p->standby = 0;
        if (p->state != WIRE_MEMBER_DEAD && p->slots) {
            p->state = WIRE_MEMBER_SUSPECT;
            waiting++;
        }
    }
    int64_t now = clock_wall_ms();
    co->takeover_until = now + net_ctx_dead_ms(n->net);
    co->takeover_event = 1;
    co->takeover_ns = clock_mono_ns();
    for (cquery *q = co->queries; q; q = q->next) q->orphan_until = now + DD_KEEP_MS;
    node_log(n, NET_LOG_WARN, "coordinator of term %llu: %d streams, %d queries; waiting %u ms for %d members to join",
             (unsigned long long)term, co->nstreams, running_queries(co, NULL), net_ctx_dead_ms(n->net), waiting);
    return 0;
}

/* After a takeover: who did not join is dead (the old active among them). */
void takeover_deaths(node *n)
{
    coord *co = n->co;
    co->takeover_until = 0;
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (x->probe && x->probe->c && !x->probe->closing) net_close(x->probe->c, "takeover done");
        x->probe = NULL;
        if (coord_joined(x) && !x->rejoined && x->state != WIRE_MEMBER_DEAD) member_lost(n, x, x->gone);
    }
    if (!co->recover_at) co->takeover_event = 0;
}

/* While a takeover waits for the members: one connection to each member
 * that has not joined yet.  A refused one means that no process listens at
 * its address (a crashed node on a live host): it is not waited for.  Once
 * every member has joined or is gone, the wait ends before --dead-ms.  A
 * member cut off (no answer at all) is still waited for. */
void takeover_probe(node *n)
{
    int waiting = 0;
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!coord_joined(x) || x->rejoined || x->state == WIRE_MEMBER_DEAD || x->gone) continue;
        waiting++;
        if (!x->probe_tried && x->addr[0]) {
            x->probe_tried = 1;
            x->probe = node_dial(n, x->addr);
        }
    }
    if (!waiting) {
        node_log(n, NET_LOG_INFO, "takeover: every member has joined or refused a connection (no process there): "
                 "not waiting for the rest of --dead-ms");
        takeover_deaths(n);
    }
}

/* Without a majority of the members, and without a standby to talk to, a
 * coordinator cannot tell its own isolation from their death: it stops
 * acting (the standby may be taking over) until they are back. */
void check_quorum(node *n)
{
    coord *co = n->co;
    int up = 1, sb = 0;
    for (int i = 0; i < n->npeers; i++) {
        peer *x = n->peers[i];
        if (!coord_alive(x)) continue;
        up++;
        sb |= x->standby;
    }
    if (co->had_standby && !sb && 2 * up <= co->base) {
        if (!co->fenced) {
            co->fenced = 1;
            node_log(n, NET_LOG_ERROR, "fenced: %d of %d members reachable and no standby: acting no more until a "
                     "majority is back", up, co->base);
            close_clients(n, "this coordinator lost the cluster's majority: connect to another");
        }
        return;
    }
    if (co->fenced) node_log(n, NET_LOG_WARN, "a majority is reachable again (%d of %d): acting again", up, co->base);
    co->fenced = 0;
    /* the base shrinks to a majority that lost members only once the
     * deaths have settled: the peers of a cut are found silent one by one,
     * and a base that followed each of them down would never fence */
    if (up > co->base || (2 * up > co->base && clock_wall_ms() - co->last_death > 2 * (int64_t)net_ctx_dead_ms(n->net)))
        co->base = up;
}
