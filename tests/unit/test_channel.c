/*
 * Unit tests for cluster/channel.c: numbered data frames between two nodes
 * across broken connections.  The node layer is stubbed: cs_send records
 * what goes on each fake connection, node_link returns the peer's link, and
 * the test carries frames from one node to the other by hand, so it decides
 * which frames a broken connection loses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/node.h"

/* ------------------------------------------------------------------ the stubbed node layer */

#define MAXF 256

typedef struct sent {
    cs *on;
    uint8_t type;
    unsigned char p[64];
    size_t len;
} sent;

static sent out[MAXF];
static int nout;

int cs_send(cs *d, uint8_t type, uint16_t flags, const void *p, size_t len)
{
    (void)flags;
    if (!d || d->closing) return XE_IO;
    assert_true(nout < MAXF);
    if (len > sizeof out[0].p) len = sizeof out[0].p; /* a big frame: its head */
    out[nout].on = d;
    out[nout].type = type;
    memcpy(out[nout].p, p, len);
    out[nout].len = len;
    nout++;
    return 0;
}

cs *node_link(node *n, peer *p)
{
    (void)n;
    return p->link;
}

void node_log(node *n, int level, const char *fmt, ...)
{
    (void)n;
    (void)level;
    (void)fmt;
}

/* ------------------------------------------------------------------ two nodes */

/* a and b; a's peer entry for b is pb, b's for a is pa; each direction of a
 * connection is one cs per end (a's end and b's end of the same link) */
typedef struct pair {
    node a, b;
    peer pa, pb;
    peer *pa_v[1], *pb_v[1];
    cs ca[4], cb[4]; /* ends of up to 4 successive connections */
    int conn;
    int delivered[64]; /* at b: the payload byte of each data frame handed on, in order */
    int ndel;
} pair;

static void pair_init(pair *x, uint64_t inc_a)
{
    memset(x, 0, sizeof *x);
    nout = 0;
    x->a.incarnation = inc_a;
    x->b.incarnation = 77;
    x->pa_v[0] = &x->pa;
    x->pb_v[0] = &x->pb;
    x->a.peers = x->pb_v;
    x->a.npeers = 1;
    x->b.peers = x->pa_v;
    x->b.npeers = 1;
    x->pb.state = x->pa.state = WIRE_MEMBER_UP;
    snprintf(x->pa.name, sizeof x->pa.name, "a");
    snprintf(x->pb.name, sizeof x->pb.name, "b");
}

/* a new connection: a's end is its link to b; b's end knows it comes from a */
static void connect_ab(pair *x)
{
    cs *ea = &x->ca[x->conn], *eb = &x->cb[x->conn];
    x->conn++;
    ea->n = &x->a;
    ea->peer = &x->pb;
    ea->kind = CS_NODE;
    eb->n = &x->b;
    eb->peer = &x->pa;
    eb->kind = CS_NODE;
    ea->ready = eb->ready = 1;
    x->pb.link = ea;
}

static void break_ab(pair *x, int k)
{
    x->ca[k].closing = x->cb[k].closing = 1;
    if (x->pb.link == &x->ca[k]) x->pb.link = NULL;
    chan_closed(&x->a, &x->ca[k]);
    chan_closed(&x->b, &x->cb[k]);
}

/* a data frame from a to b: a BATCH whose one payload byte says which */
static void send_data(pair *x, int id)
{
    unsigned char b = (unsigned char)id;
    assert_int_equal(chan_send(&x->a, &x->pb, WIRE_BATCH, &b, 1), 0);
}

/* frames a sent on connection k from index `from` reach b (the others are lost) */
static int carry(pair *x, int k, int from)
{
    int upto = nout;
    for (int i = from; i < upto; i++) {
        if (out[i].on != &x->ca[k]) continue;
        wire_msg m;
        memset(&m, 0, sizeof m);
        m.type = out[i].type;
        if (m.type == WIRE_CHANNEL) {
            m.u.channel.incarnation = be64_get(out[i].p);
            m.u.channel.start = be64_get(out[i].p + 8);
        }
        if (chan_recv(&x->b, &x->cb[k], &m) == 0) x->delivered[x->ndel++] = out[i].p[0];
    }
    return upto;
}

/* b's acknowledgements reach a */
static void ack_back(pair *x)
{
    int from = nout;
    chan_ack(&x->b, &x->pa);
    for (int i = from; i < nout; i++) {
        if (out[i].type != WIRE_CHACK) continue;
        wire_msg m = {.type = WIRE_CHACK};
        m.u.channel.incarnation = be64_get(out[i].p);
        m.u.channel.start = be64_get(out[i].p + 8);
        for (int k = 0; k < x->conn; k++)
            if (out[i].on == &x->cb[k]) chan_recv(&x->a, &x->ca[k], &m);
    }
}

static void expect_delivered(pair *x, const int *want, int n)
{
    assert_int_equal(x->ndel, n);
    for (int i = 0; i < n; i++) assert_int_equal(x->delivered[i], want[i]);
}

/* ------------------------------------------------------------------ tests */

static void test_in_order_once(void **state)
{
    (void)state;
    pair x;
    pair_init(&x, 5);
    connect_ab(&x);
    for (int i = 1; i <= 3; i++) send_data(&x, i);
    assert_int_equal(out[0].type, WIRE_CHANNEL); /* the numbering is announced first */
    assert_int_equal(be64_get(out[0].p + 8), 1);
    carry(&x, 0, 0);
    expect_delivered(&x, (int[]){1, 2, 3}, 3);
    assert_int_equal(x.pb.rtx_n, 3); /* kept until acknowledged */
    ack_back(&x);
    assert_int_equal(x.pb.rtx_n, 0);
    assert_null(x.pb.rtx);
    chan_free(&x.pb);
}

/* A connection breaks with frames in flight, more are sent while none
 * stands; the next connection carries everything not acknowledged, and b
 * hands each frame on once, in order. */
static void test_resend_after_break(void **state)
{
    (void)state;
    pair x;
    pair_init(&x, 5);
    connect_ab(&x);
    send_data(&x, 1);
    send_data(&x, 2);
    carry(&x, 0, 0);
    ack_back(&x); /* 1 and 2 acknowledged */
    int mark = nout;
    send_data(&x, 3);
    send_data(&x, 4);
    carry(&x, 0, mark); /* 3 and 4 arrive, but their acknowledgement never goes */
    mark = nout;
    send_data(&x, 5); /* lost with the connection */
    break_ab(&x, 0);
    send_data(&x, 6); /* no connection: kept */
    send_data(&x, 7);
    assert_int_equal(nout, mark + 1);
    connect_ab(&x);
    chan_tick(&x.a); /* the new connection: CHANNEL, then 3..7 again */
    assert_int_equal(out[mark + 1].type, WIRE_CHANNEL);
    assert_int_equal(be64_get(out[mark + 1].p + 8), 3);
    carry(&x, 1, mark + 1);
    expect_delivered(&x, (int[]){1, 2, 3, 4, 5, 6, 7}, 7);
    ack_back(&x);
    assert_int_equal(x.pb.rtx_n, 0);
    /* frames still arriving on the old connection are not taken */
    wire_msg m = {.type = WIRE_BATCH};
    assert_int_equal(chan_recv(&x.b, &x.cb[0], &m), 1);
    chan_free(&x.pb);
}

/* A frame held at b for its query's DEPLOY is not acknowledged, and when
 * the connection breaks it comes again. */
static void test_held_frame_comes_again(void **state)
{
    (void)state;
    pair x;
    pair_init(&x, 5);
    connect_ab(&x);
    send_data(&x, 1);
    send_data(&x, 2);
    carry(&x, 0, 0);
    qframe *q = calloc(1, sizeof *q + 1);
    assert_non_null(q);
    q->type = WIRE_BATCH;
    x.cb[0].held = q; /* the last one (2) waits for its DEPLOY */
    ack_back(&x);
    assert_int_equal(x.pb.rtx_n, 1); /* 1 acknowledged, 2 not */
    break_ab(&x, 0);
    free(q);
    x.cb[0].held = NULL;
    int mark = nout;
    connect_ab(&x);
    chan_tick(&x.a);
    carry(&x, 1, mark);
    expect_delivered(&x, (int[]){1, 2, 2}, 3); /* 2 is handed on again (the held copy was dropped) */
    chan_free(&x.pb);
}

/* A process that starts again numbers from 1 with a new incarnation: its
 * peer takes its frames. */
static void test_new_incarnation(void **state)
{
    (void)state;
    pair x;
    pair_init(&x, 5);
    connect_ab(&x);
    for (int i = 1; i <= 3; i++) send_data(&x, i);
    carry(&x, 0, 0);
    break_ab(&x, 0);
    chan_free(&x.pb);
    /* a again, as a new process */
    x.a.incarnation = 6;
    memset(&x.pb, 0, sizeof x.pb);
    x.pb.state = WIRE_MEMBER_UP;
    int mark = nout;
    connect_ab(&x);
    send_data(&x, 9);
    carry(&x, 1, mark);
    expect_delivered(&x, (int[]){1, 2, 3, 9}, 4);
    /* an acknowledgement for the old incarnation is ignored */
    wire_msg m = {.type = WIRE_CHACK};
    m.u.channel.incarnation = 5;
    m.u.channel.start = 100;
    chan_recv(&x.a, &x.ca[1], &m);
    assert_int_equal(x.pb.rtx_n, 1);
    chan_free(&x.pb);
}

/* A peer declared dead gets nothing more, and what was kept for it goes. */
static void test_dead_peer(void **state)
{
    (void)state;
    pair x;
    pair_init(&x, 5);
    send_data(&x, 1); /* no connection yet: kept */
    assert_int_equal(x.pb.rtx_n, 1);
    x.pb.state = WIRE_MEMBER_DEAD;
    unsigned char b = 2;
    assert_int_equal(chan_send(&x.a, &x.pb, WIRE_BATCH, &b, 1), XE_IO);
    chan_tick(&x.a);
    assert_int_equal(x.pb.rtx_n, 0);
    assert_int_equal(x.pb.rtx_bytes, 0);
    assert_true(chan_data_type(WIRE_BATCH) && chan_data_type(WIRE_REPLICA_ACK) && !chan_data_type(WIRE_LOGSHIP));
}

/* A receiver that is behind (its acknowledgements wait behind its own
 * data) is only late: past the 64 MiB bound the frames are kept while a
 * connection stands (dropping them lost a third of a word count's rows in
 * session 11); with no connection, the bound drops them as lost. */
static void test_bound_only_without_a_connection(void **state)
{
    (void)state;
    pair x;
    pair_init(&x, 5);
    connect_ab(&x);
    size_t big = 1u << 20;
    unsigned char *p = calloc(1, big);
    assert_non_null(p);
    for (int i = 0; i < 70; i++) {
        p[0] = (unsigned char)i;
        nout = 0; /* only the heads are recorded; they are not carried here */
        assert_int_equal(chan_send(&x.a, &x.pb, WIRE_BATCH, p, big), 0);
    }
    assert_int_equal(x.pb.rtx_n, 70);
    assert_int_equal(x.pb.lost, 0);
    /* no connection now: the next frame over the bound drops what is kept */
    break_ab(&x, 0);
    nout = 0;
    assert_int_equal(chan_send(&x.a, &x.pb, WIRE_BATCH, p, big), 0);
    assert_int_equal(x.pb.lost, 70);
    assert_int_equal(x.pb.rtx_n, 1);
    free(p);
    chan_free(&x.pb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_once),
        cmocka_unit_test(test_resend_after_break),
        cmocka_unit_test(test_held_frame_comes_again),
        cmocka_unit_test(test_new_incarnation),
        cmocka_unit_test(test_dead_peer),
        cmocka_unit_test(test_bound_only_without_a_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
