/*
 * channel.c: the data between two nodes (BATCH, WATERMARK, STATE_DELTA,
 * RESUME, REPLICA_ACK) arrives once and in order, across reconnections.
 *
 * A connection can fail while both ends live: a switch drops their traffic
 * for a while, or their silence limit passes (a partial partition: neither
 * is declared dead, since both still reach the coordinator).  The frames
 * the kernel had taken, and those sent while no connection stood, would be
 * lost, and the receiver would go on with later rows: its state and its
 * position would move past the gap.
 *
 * So the sender numbers its data frames to each peer (1, 2, ...) and keeps
 * them (peer->rtx) until the peer acknowledges them (CHACK, every tick and
 * every CHAN_ACK_EVERY frames).  A connection carries the numbered frames
 * after a CHANNEL frame that says the number of the first one; when a new
 * connection stands (or the old one came back), the sender sends CHANNEL
 * and every frame not acknowledged again.  The receiver counts the frames
 * from the CHANNEL of its current connection from that peer, skips numbers
 * it had and frames on any other connection.  A process that starts again
 * has a new incarnation (a random number in CHANNEL and CHACK), and its
 * peers start counting anew.
 *
 * The frames kept for one peer while no connection to it stands are
 * bounded (CHAN_RTX_MAX).  Beyond it, or when the coordinator declares the
 * peer dead, they are dropped: a dead peer's tasks are redeployed and
 * replayed from the stream log; a live one beyond the bound loses them, and
 * the node says so (LOSS).  While a connection stands they are kept
 * whatever their size: the receiver is only behind, and backpressure bounds
 * what the sender makes for it.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster/node.h"

#define CHAN_RTX_MAX (64u << 20)
#define CHAN_ACK_EVERY 128

int chan_data_type(int type)
{
    return type == WIRE_BATCH || type == WIRE_WATERMARK || type == WIRE_STATE_DELTA || type == WIRE_RESUME ||
           type == WIRE_REPLICA_ACK;
}

static void rtx_drop(peer *p)
{
    while (p->rtx) {
        qframe *q = p->rtx;
        p->rtx = q->next;
        free(q);
    }
    p->rtx_tail = NULL;
    p->rtx_bytes = 0;
    p->rtx_n = 0;
}

/* Send CHANNEL and every frame not acknowledged on l. */
static int resume(node *n, peer *p, cs *l)
{
    unsigned char b[16];
    be64_put(b, n->incarnation);
    be64_put(b + 8, p->rtx ? p->rtx->seq : p->tx_next + 1);
    int rc = cs_send(l, WIRE_CHANNEL, 0, b, sizeof b);
    for (qframe *q = p->rtx; q && !rc; q = q->next) rc = cs_send(l, q->type, q->flags, q->p, q->len);
    if (!rc) p->tx_cs = l;
    return rc;
}

int chan_send(node *n, peer *p, uint8_t type, const void *payload, size_t len)
{
    if (p->state == WIRE_MEMBER_DEAD || p->state == WIRE_MEMBER_LEFT) return XE_IO;
    cs *l = node_link(n, p);
    /* Over the bound with a connection standing, the frames are on their
     * way: the receiver is behind (its acknowledgements wait behind our
     * own data, or it reads slowly), and backpressure holds what we make
     * for it (node.h); dropping them lost a third of the word count's rows
     * in session 11.  Only with no connection, a peer we cannot reach, are
     * they dropped. */
    if (p->rtx_bytes + len > CHAN_RTX_MAX && (!l || l->closing || !l->ready)) {
        node_log(n, NET_LOG_ERROR, "node %s has not acknowledged %zu bytes of data: dropping them (its rows are lost "
                 "unless it is declared dead)", p->name, p->rtx_bytes);
        p->lost += p->rtx_n;
        rtx_drop(p);
        p->tx_cs = NULL; /* the next frame opens a new CHANNEL, past the gap */
    }
    qframe *q = malloc(sizeof *q + len);
    if (!q) return XE_NOMEM;
    q->next = NULL;
    q->type = type;
    q->flags = 0;
    q->len = len;
    q->seq = ++p->tx_next;
    if (len) memcpy(q->p, payload, len);
    if (p->rtx_tail) p->rtx_tail->next = q;
    else p->rtx = q;
    p->rtx_tail = q;
    p->rtx_bytes += len;
    p->rtx_n++;
    if (!l || l->closing) return 0; /* kept until a connection stands */
    if (l != p->tx_cs) return resume(n, p, l) == XE_NOMEM ? XE_NOMEM : 0;
    int rc = cs_send(l, type, 0, payload, len);
    return rc == XE_NOMEM ? rc : 0;
}

int chan_recv(node *n, cs *s, const wire_msg *m)
{
    peer *p = s->peer;
    if (m->type == WIRE_CHANNEL) {
        if (!p) return 1;
        uint64_t inc = m->u.channel.incarnation, start = m->u.channel.start;
        if (inc != p->rx_inc || start > p->rx_last + 1) {
            /* a new process, or frames the sender gave up on */
            if (inc == p->rx_inc)
                node_log(n, NET_LOG_WARN, "node %s dropped data frames %llu to %llu for us", p->name,
                         (unsigned long long)p->rx_last + 1, (unsigned long long)start - 1);
            p->rx_inc = inc;
            p->rx_last = start - 1;
            p->rx_acked = 0;
        }
        p->rx_cs = s;
        p->rx_cur = start;
        return 1;
    }
    if (m->type == WIRE_CHACK) {
        if (!p || m->u.channel.incarnation != n->incarnation) return 1;
        while (p->rtx && p->rtx->seq <= m->u.channel.start) {
            qframe *q = p->rtx;
            p->rtx = q->next;
            p->rtx_bytes -= q->len;
            p->rtx_n--;
            free(q);
        }
        if (!p->rtx) p->rtx_tail = NULL;
        if (n->on_drained) n->on_drained(n); /* a replay waiting on its frames in flight goes on */
        return 1;
    }
    if (!p || s != p->rx_cs) return 1; /* an old connection: what it carried comes again */
    uint64_t seq = p->rx_cur++;
    if (seq <= p->rx_last) return 1; /* had it */
    p->rx_last = seq;
    if (p->rx_last - p->rx_acked > CHAN_ACK_EVERY) chan_ack(n, p);
    return 0;
}

/* A frame held for its query's DEPLOY (node_task.c) is the last one counted on
 * its connection, and not in yet: it is not acknowledged, and if the
 * connection closes it comes again. */
static int held_data(const cs *s)
{
    return s->held && chan_data_type(s->held->type);
}

void chan_ack(node *n, peer *p)
{
    (void)n;
    if (!p->rx_cs || p->rx_cs->closing) return;
    uint64_t upto = p->rx_last - (uint64_t)held_data(p->rx_cs);
    if (upto <= p->rx_acked) return;
    unsigned char b[16];
    be64_put(b, p->rx_inc);
    be64_put(b + 8, upto);
    if (cs_send(p->rx_cs, WIRE_CHACK, 0, b, sizeof b) == 0) p->rx_acked = upto;
}

void chan_tick(node *n)
{
    for (int i = 0; i < n->npeers; i++) {
        peer *p = n->peers[i];
        chan_ack(n, p);
        if (p->state == WIRE_MEMBER_DEAD || p->state == WIRE_MEMBER_LEFT) {
            if (p->rtx) rtx_drop(p); /* its tasks are redeployed and replayed */
            p->tx_cs = NULL;
            continue;
        }
        if (!p->rtx || (p->tx_cs && !p->tx_cs->closing)) continue;
        cs *l = node_link(n, p);
        if (l && !l->closing) resume(n, p, l);
    }
}

void chan_closed(node *n, cs *s)
{
    for (int i = 0; i < n->npeers; i++) {
        peer *p = n->peers[i];
        if (p->tx_cs == s) p->tx_cs = NULL;
        if (p->rx_cs == s) {
            if (held_data(s)) p->rx_last--;
            p->rx_cs = NULL;
        }
    }
}

void chan_free(peer *p)
{
    rtx_drop(p);
}
