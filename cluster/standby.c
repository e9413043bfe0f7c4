/*
 * standby.c: coordinator terms and the standby coordinator (docs/
 * architecture.md, "The coordinator").  Every node remembers the highest
 * term it heard and refuses a coordinator of an older one (TERM ANNOUNCE,
 * REFUSE: the fencing).  A standby (--coordinator --join) keeps a copy of
 * the active's catalog (CATALOG frames); when it loses the active it asks
 * the members for the next term (ASK), and a member that lost the active
 * too grants it (GRANT) and dials only it for a while.  Granted by a
 * majority, counting itself, the standby takes over (coord_takeover).  A
 * coordinator that hears of a newer term steps down and runs again as a
 * standby (node_run returns NODE_RUN_REJOIN).
 *
 * Its state is struct standby (node_int.h), n->sb; the term itself is
 * n->term, which coord.c reads and sets too.  Runs on the engine's loop,
 * like all of the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node_int.h"


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
