/*
 * Unit tests for cluster/node_conn.c's backpressure (node.h,
 * "Backpressure"): the overflow queue of a connection, the inputs it
 * pauses, and conn_tick's release of an overflow that does not move.  The
 * net layer below is replaced with -Wl,--wrap= (cluster/module.mk): net_send
 * takes a frame or says XE_BUSY as the test decides, and net_pause /
 * net_resume record whether a connection is being read.  The connections
 * are bare `cs` structs with a fake net_conn each.
 *   - a frame that does not fit waits in the overflow and pauses the input
 *     that made it, until the overflow drains;
 *   - two nodes whose inputs make frames for each other: each connection
 *     waits on its own overflow, which does not move; after NODE_STALL_MS
 *     conn_tick lets it read again, and it pauses on that overflow no more
 *     until it has drained (session 10's and 11's word-count stalls);
 *   - a slow reader moves its overflow: its producers stay paused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/node_int.h"

/* ------------------------------------------------------------ the wrapped net layer */

#define NC 4
static struct net_conn *fake[NC];
static int paused[NC], room[NC], taken[NC]; /* room: frames it takes before it says XE_BUSY (-1: any) */

static int idx(net_conn *c)
{
    for (int i = 0; i < NC; i++)
        if (fake[i] == c) return i;
    fail_msg("unknown connection");
    return -1;
}

int __wrap_net_send(net_conn *c, uint8_t type, uint16_t flags, const void *p, size_t len);
int __wrap_net_send(net_conn *c, uint8_t type, uint16_t flags, const void *p, size_t len)
{
    (void)type, (void)flags, (void)p, (void)len;
    int i = idx(c);
    if (!room[i]) return XE_BUSY;
    if (room[i] > 0) room[i]--;
    taken[i]++;
    return 0;
}

void __wrap_net_pause(net_conn *c);
void __wrap_net_pause(net_conn *c) { paused[idx(c)] = 1; }

void __wrap_net_resume(net_conn *c);
void __wrap_net_resume(net_conn *c) { paused[idx(c)] = 0; }

/* ------------------------------------------------------------ a node and its connections */

static node N;
static cs *conn[NC];

static int setup(void **state)
{
    (void)state;
    memset(&N, 0, sizeof N);
    N.cfg.name = "n1";
    memset(paused, 0, sizeof paused);
    for (int i = 0; i < NC; i++) room[i] = -1;
    memset(taken, 0, sizeof taken);
    for (int i = 0; i < NC; i++) {
        fake[i] = (struct net_conn *)(uintptr_t)(0x1000 + 16 * i); /* never dereferenced */
        conn[i] = cs_new(&N, CS_NODE);
        conn[i]->c = fake[i];
        conn[i]->ready = 1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < NC; i++) room[i] = -1;
    while (N.conns) {
        cs *s = N.conns;
        N.conns = s->next;
        ovf_flush(s);
        free(s->waiters);
        free(s);
    }
    return 0;
}

/* a frame to d made while reading `in` */
static void send_from(cs *in, cs *d)
{
    unsigned char b[32] = {0};
    N.cur_in = in;
    assert_int_equal(cs_send(d, WIRE_BATCH, 0, b, sizeof b), 0);
    N.cur_in = NULL;
}

/* A frame that does not fit pauses the input that made it, until the
 * overflow drains. */
static void test_overflow_pauses_its_input(void **state)
{
    (void)state;
    cs *in = conn[0], *d = conn[1];
    room[1] = 0;
    send_from(in, d);
    assert_int_equal(d->ovf_frames, 1);
    assert_int_equal(paused[0], 1);
    assert_int_equal(in->blocked, 1);
    room[1] = -1;
    ovf_flush(d);
    assert_int_equal(d->ovf_frames, 0);
    assert_int_equal(taken[1], 1);
    assert_int_equal(paused[0], 0);
    assert_int_equal(in->blocked, 0);
}

/* Two nodes whose inputs make frames for each other: here, the connection
 * from and to the peer waits on its own overflow, and the peer (whose
 * reading alone would drain it) does the same.  Nothing moves: after
 * NODE_STALL_MS the connection is read again, and it is not paused on that
 * overflow again until the overflow has drained. */
static void test_stalled_overflow_is_released(void **state)
{
    (void)state;
    cs *l = conn[2];
    room[2] = 0;
    send_from(l, l);
    assert_int_equal(paused[2], 1);
    conn_tick(&N); /* not yet: it only began */
    assert_int_equal(paused[2], 1);
    l->stuck_since -= 600; /* 600 ms without a frame moving */
    conn_tick(&N);
    assert_int_equal(paused[2], 0);
    assert_int_equal(l->blocked, 0);
    assert_int_equal(l->nwait, 0);
    /* read again: what it makes for the same overflow waits there, pausing no one */
    send_from(l, l);
    send_from(conn[0], l);
    assert_int_equal(l->ovf_frames, 3);
    assert_int_equal(paused[2], 0);
    assert_int_equal(paused[0], 0);
    /* drained: the bound holds again */
    room[2] = -1;
    ovf_flush(l);
    assert_int_equal(l->ovf_frames, 0);
    room[2] = 0;
    send_from(l, l);
    assert_int_equal(paused[2], 1);
}

/* A slow reader moves its overflow now and then: its producers stay
 * paused, however long it takes. */
static void test_slow_reader_keeps_its_producers_paused(void **state)
{
    (void)state;
    cs *in = conn[0], *d = conn[3];
    room[3] = 0;
    send_from(in, d);
    send_from(in, d);
    send_from(in, d);
    assert_int_equal(paused[0], 1);
    for (int k = 0; k < 2; k++) {
        d->stuck_since -= 400; /* 400 ms since it last moved, */
        room[3] = 1;           /* then the reader takes one frame */
        ovf_flush(d);
        assert_int_equal(d->ovf_frames, 2 - k);
        d->stuck_since -= 400; /* and 400 ms more: not 500 without a move */
        conn_tick(&N);
        assert_int_equal(paused[0], 1);
    }
    room[3] = -1;
    ovf_flush(d);
    assert_int_equal(paused[0], 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_overflow_pauses_its_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stalled_overflow_is_released, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_reader_keeps_its_producers_paused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
