/*
 * coord_takeover.c: the coordinator's own failover (docs/architecture.md,
 * "The coordinator").  A standby that takes over starts from the replicated
 * catalog under a new term and waits for the members to join it; who does
 * not join is dead.  A coordinator refused with a newer term is deposed; one
 * that had a standby and lost the majority of its members fences itself;
 * either stops acting and closes its clients.  node.c holds the node's side
 * (terms it grants, the standby's watch of the active coordinator).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/coord.h"

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
 * refuses us with) the newer term, and we step down (node.c, step_down). */
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
