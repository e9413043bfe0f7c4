/* Unit tests for cluster/: frames, the incremental decoder, payload codecs,
 * the secret file and HMAC proofs, and the libuv connection layer over real
 * loopback TCP (listener and clients in one loop, ephemeral ports). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"
#include "cluster/auth.h"
#include "cluster/catchup.h"
#include "cluster/net.h"
#include "cluster/wire.h"
#include "cluster/node.h" /* the measured-cost store (measure.c) */
#include <math.h>

/* ------------------------------------------------------------ wire helpers */

static const char big_rows[] = "rows-rows-rows-rows-rows-rows-rows-rows";

/* A message of each type with every field set to something recognisable. */
static void sample_msg(int type, wire_msg *m, sbuf *scratch)
{
    memset(m, 0, sizeof *m);
    m->type = (uint8_t)type;
    m->flags = (uint16_t)(type * 3);
    switch (type) {
    case WIRE_HELLO:
        m->u.hello.vmin = 1;
        m->u.hello.vmax = 3;
        m->u.hello.role = WIRE_ROLE_NODE;
        m->u.hello.caps = 0xdeadbeef;
        m->u.hello.name = wire_str_of("node-1");
        break;
    case WIRE_AUTH_CHALLENGE:
        for (int i = 0; i < WIRE_NONCE_SIZE; i++) m->u.challenge.nonce[i] = (unsigned char)i;
        break;
    case WIRE_AUTH_RESPONSE:
        for (int i = 0; i < WIRE_MAC_SIZE; i++) m->u.response.mac[i] = (unsigned char)(255 - i);
        break;
    case WIRE_AUTH_OK: break;
    case WIRE_HEARTBEAT:
        m->u.heartbeat.seq = 77;
        m->u.heartbeat.sent_ms = -5;
        break;
    case WIRE_JOIN:
        m->u.join.name = wire_str_of("n2");
        m->u.join.domain = wire_str_of("rack-a");
        m->u.join.addr = wire_str_of("127.0.0.1:7102");
        m->u.join.slots = 4;
        m->u.join.speed_milli = 1500;
        break;
    case WIRE_MEMBERSHIP: {
        wire_wr w;
        wire_wr_init(&w, scratch);
        for (int i = 0; i < 3; i++) {
            wire_member mm = {.name = wire_str_of(i ? "n2" : "n1"),
                              .domain = wire_str_of("rack-b"),
                              .addr = wire_str_of("127.0.0.1:1"),
                              .state = WIRE_MEMBER_UP,
                              .slots = (uint32_t)i,
                              .speed_milli = 1000,
                              .load_milli = 250,
                              .last_heartbeat_ms = 123456789};
            wire_put_member(&w, &mm);
        }
        m->u.membership.epoch = 9;
        m->u.membership.count = 3;
        m->u.membership.entries.p = scratch->p;
        m->u.membership.entries.n = (uint32_t)scratch->len;
        break;
    }
    case WIRE_DEPLOY:
        m->u.deploy.query_id = 1ull << 40;
        m->u.deploy.task_id = 7;
        m->u.deploy.epoch = 3;
        m->u.deploy.plan = wire_str_of("plan bytes");
        break;
    case WIRE_UNDEPLOY:
        m->u.undeploy.query_id = 5;
        m->u.undeploy.epoch = 6;
        break;
    case WIRE_BATCH:
        m->u.batch.query_id = 11;
        m->u.batch.channel = 12;
        m->u.batch.epoch = 13;
        m->u.batch.stamp = 14;
        m->u.batch.nrows = 15;
        m->u.batch.rows = wire_str_of(big_rows);
        break;
    case WIRE_ACK:
        m->u.ack.query_id = 21;
        m->u.ack.channel = 22;
        m->u.ack.epoch = 23;
        m->u.ack.seq = 24;
        break;
    case WIRE_CREDIT:
        m->u.credit.query_id = 31;
        m->u.credit.channel = 32;
        m->u.credit.batches = 33;
        break;
    case WIRE_STATE_DELTA:
    case WIRE_SNAPSHOT:
        m->u.state.query_id = 41;
        m->u.state.task_id = 42;
        m->u.state.epoch = 43;
        m->u.state.chunk = type == WIRE_SNAPSHOT ? 2 : 0;
        m->u.state.data = wire_str_of("state");
        break;
    case WIRE_QUERY:
        m->u.query.req_id = 51;
        m->u.query.sql = wire_str_of("SELECT count(*) FROM s GROUP BY TUMBLE(ts, 1s)");
        break;
    case WIRE_RESULT:
        m->u.result.req_id = 61;
        m->u.result.nrows = 2;
        m->u.result.rows = wire_str_of("a|b\n");
        break;
    case WIRE_ERROR:
        m->u.error.req_id = 71;
        m->u.error.code = XE_SYNTAX;
        m->u.error.msg = wire_str_of("syntax error at 1:8");
        break;
    case WIRE_BYE: m->u.bye.reason = wire_str_of("shutdown"); break;
    case WIRE_WATERMARK:
        m->u.watermark.query_id = 81;
        m->u.watermark.channel = 82;
        m->u.watermark.wm = -83;
        break;
    case WIRE_INGEST:
        m->u.ingest.req_id = 91;
        m->u.ingest.stream = wire_str_of("bids");
        m->u.ingest.format = 1;
        m->u.ingest.header = 2;
        m->u.ingest.end = 1;
        m->u.ingest.session = 92;
        m->u.ingest.seq = 93;
        m->u.ingest.line0 = 94;
        m->u.ingest.delim = (uint8_t)';';
        m->u.ingest.has_null = 1;
        m->u.ingest.null_string = wire_str_of("NULL");
        m->u.ingest.data = wire_str_of("1,2,3\n");
        break;
    case WIRE_CATALOG:
        m->u.catalog.term = 101;
        m->u.catalog.op = WIRE_CAT_PUT;
        m->u.catalog.key = wire_str_of("stream/s");
        m->u.catalog.value = wire_str_of("n1\tn4\nCREATE STREAM s (a BIGINT)");
        break;
    case WIRE_TERM:
        m->u.term.term = 111;
        m->u.term.kind = WIRE_TERM_ASK;
        m->u.term.name = wire_str_of("sb");
        m->u.term.addr = wire_str_of("127.0.0.1:7001");
        break;
    case WIRE_ATTACH:
        m->u.attach.req_id = 121;
        m->u.attach.query = wire_str_of("q");
        m->u.attach.wm = -122;
        m->u.attach.rows = wire_str_of("0123456789ab");
        break;
    case WIRE_CANCEL: m->u.cancel.req_id = 125; break;
    case WIRE_LOSS:
        m->u.loss.query = 123;
        m->u.loss.batches = 124;
        m->u.loss.peer = wire_str_of("n7");
        break;
    case WIRE_STATS: {
        wire_wr w;
        wire_wr_init(&w, scratch);
        for (int i = 0; i < 2; i++) {
            wire_stats_peer sp = {.name = wire_str_of(i ? "n3" : "n2"), .rtt_us = 250u + (uint32_t)i};
            wire_put_stats_peer(&w, &sp);
        }
        size_t at = scratch->len;
        static const uint64_t rows[3] = {10, 20, 30}, bytes[3] = {0, 640, 960};
        for (int i = 0; i < 2; i++) {
            wire_stats_task st = {.qid = 5, .task = (uint32_t)i, .cpu_ns = 1000000u * (uint64_t)(i + 1),
                                  .rows_in = 60, .rows_out = 60, .bytes_out = 1600, .state_bytes = 4096,
                                  .ndest = i ? 0 : 3, .dest_rows = rows, .dest_bytes = bytes};
            wire_put_stats_task(&w, &st);
        }
        m->u.stats.wall_ms = 1700000000123;
        m->u.stats.capacity_milli = 250;
        m->u.stats.util_milli = 800;
        m->u.stats.cpu_ns = 42;
        m->u.stats.applied_bytes = 43;
        m->u.stats.applied_ns = 44;
        m->u.stats.npeers = 2;
        m->u.stats.peers = (wire_str){scratch->p, (uint32_t)at};
        size_t at2 = scratch->len;
        wire_stats_replica sr = {.qid = 5, .task = 1, .cpu_ns = 777, .bytes = 888};
        wire_put_stats_replica(&w, &sr);
        m->u.stats.ntasks = 2;
        m->u.stats.tasks = (wire_str){scratch->p + at, (uint32_t)(at2 - at)};
        m->u.stats.nreplicas = 1;
        m->u.stats.replicas = (wire_str){scratch->p + at2, (uint32_t)(scratch->len - at2)};
        break;
    }
    }
}

typedef struct collected {
    int n;
    uint8_t types[4096];
    uint32_t lens[4096];
    uint32_t sums[4096];
    int stop_every; /* return WIRE_STOP on every k-th frame */
    int fail_at;    /* return an error on this frame (1-based), 0 never */
} collected;

static int collect_cb(void *ud, const wire_frame *f)
{
    collected *c = ud;
    assert_true(c->n < 4096);
    c->types[c->n] = f->type;
    c->lens[c->n] = f->length;
    c->sums[c->n] = crc32c(0, f->payload, f->length);
    c->n++;
    if (c->fail_at && c->n == c->fail_at) return XE_INVAL;
    if (c->stop_every && c->n % c->stop_every == 0) return WIRE_STOP;
    return 0;
}

/* Feed all of p to d in chunks of the sizes chunk() returns; fails the test on error. */
static void feed_all(wire_dec *d, const unsigned char *p, size_t n, size_t (*chunk)(void),
                     collected *col)
{
    size_t off = 0;
    xerr e;
    while (off < n) {
        size_t k = chunk();
        if (k > n - off) k = n - off;
        size_t pos = 0;
        while (pos < k) { /* WIRE_STOP returns early: feed the rest again */
            size_t used;
            int rc = wire_dec_feed(d, p + off + pos, k - pos, &used, collect_cb, col, &e);
            if (rc < 0) fail_msg("decode error: %s", e.msg);
            pos += used;
        }
        off += k;
    }
    assert_int_equal(wire_dec_finish(d, &e), 0);
}

static size_t chunk_one(void) { return 1; }
static size_t chunk_all(void) { return SIZE_MAX; }
static size_t chunk_random(void) { return 1 + (size_t)(rand() % 97) * (rand() % 3 ? 1 : 53); }

/* A stream of every type, plus one big frame, plus an empty-payload one. */
static void build_stream(sbuf *out, collected *expect)
{
    memset(expect, 0, sizeof *expect);
    for (int rep = 0; rep < 3; rep++) {
        for (int t = 1; t <= WIRE_TYPE_MAX; t++) {
            sbuf scratch, pay;
            wire_msg m;
            wire_wr w;
            sbuf_init(&scratch);
            sbuf_init(&pay);
            sample_msg(t, &m, &scratch);
            wire_wr_init(&w, &pay);
            wire_msg_put(&w, &m);
            assert_int_equal(wire_wr_end(&w, NULL), 0);
            assert_int_equal(wire_encode(out, 1, (uint8_t)t, m.flags, pay.p, pay.len), 0);
            expect->types[expect->n] = (uint8_t)t;
            expect->lens[expect->n] = (uint32_t)pay.len;
            expect->sums[expect->n] = crc32c(0, pay.p, pay.len);
            expect->n++;
            sbuf_fini(&scratch);
            sbuf_fini(&pay);
        }
        size_t big = 200000 + (size_t)rep;
        unsigned char *b = malloc(big);
        for (size_t i = 0; i < big; i++) b[i] = (unsigned char)(i * 7 + rep);
        assert_int_equal(wire_encode(out, 1, WIRE_BATCH, 0, b, big), 0);
        expect->types[expect->n] = WIRE_BATCH;
        expect->lens[expect->n] = (uint32_t)big;
        expect->sums[expect->n] = crc32c(0, b, big);
        expect->n++;
        free(b);
    }
}

static void check_same(const collected *a, const collected *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        assert_int_equal(a->types[i], b->types[i]);
        assert_int_equal(a->lens[i], b->lens[i]);
        assert_int_equal(a->sums[i], b->sums[i]);
    }
}

/* ------------------------------------------------------------ wire tests */

static int roundtrip_cb(void *ud, const wire_frame *f)
{
    sbuf *again = ud;
    wire_msg m;
    xerr e;
    if (wire_msg_get(f, &m, &e) < 0) fail_msg("decode %s: %s", wire_type_name(f->type), e.msg);
    assert_int_equal(m.type, f->type);
    assert_int_equal(m.flags, f->flags);
    assert_int_equal(wire_msg_encode(again, f->version, &m, &e), 0);
    return 0;
}

static void test_roundtrip_every_type(void **state)
{
    (void)state;
    for (int t = 1; t <= WIRE_TYPE_MAX; t++) {
        sbuf scratch, frame, again;
        wire_msg m;
        xerr e;
        sbuf_init(&scratch);
        sbuf_init(&frame);
        sbuf_init(&again);
        sample_msg(t, &m, &scratch);
        assert_int_equal(wire_msg_encode(&frame, 1, &m, &e), 0);
        assert_int_equal(be32_get((unsigned char *)frame.p), WIRE_MAGIC);
        assert_int_equal((unsigned char)frame.p[5], t);
        assert_int_equal(be32_get((unsigned char *)frame.p + 8), frame.len - WIRE_HDR_SIZE);
        wire_dec d;
        wire_dec_init(&d, 0);
        size_t used;
        assert_int_equal(wire_dec_feed(&d, frame.p, frame.len, &used, roundtrip_cb, &again, &e), 0);
        assert_int_equal(used, frame.len);
        assert_int_equal(d.frames, 1);
        /* decode + encode gives the same bytes back */
        assert_int_equal(again.len, frame.len);
        assert_memory_equal(again.p, frame.p, frame.len);
        wire_dec_fini(&d);
        sbuf_fini(&scratch);
        sbuf_fini(&frame);
        sbuf_fini(&again);
    }
    assert_string_equal(wire_type_name(WIRE_STATE_DELTA), "STATE_DELTA");
    assert_string_equal(wire_type_name(0), "?");
    assert_string_equal(wire_type_name(99), "?");
}

/* An ERROR frame's message carries a statement error's position, and only
 * a real position is taken off a message that starts with "line". */
static void test_error_position(void **state)
{
    (void)state;
    xerr e, back;
    char msg[600];
    xerr_at(&e, XE_NAME, 2, 17, "unknown column 'x'");
    wire_error_text(&e, XE_NAME, msg, sizeof msg);
    assert_string_equal(msg, "line 2, column 17: unknown column 'x'");
    assert_int_equal(wire_error_parse(&back, XE_NAME, msg, strlen(msg)), XE_NAME);
    assert_int_equal(back.line, 2);
    assert_int_equal(back.col, 17);
    assert_string_equal(back.msg, "unknown column 'x'");
    xerr_set(&e, XE_IO, "node n1: cannot open");
    wire_error_text(&e, XE_IO, msg, sizeof msg);
    assert_string_equal(msg, "node n1: cannot open");
    wire_error_parse(&back, XE_IO, msg, strlen(msg));
    assert_int_equal(back.line, 0);
    assert_string_equal(back.msg, "node n1: cannot open");
    const char *input = "line 17: column 'price': 'abc' is not a DOUBLE";
    wire_error_parse(&back, XE_INPUT, input, strlen(input));
    assert_int_equal(back.line, 0);
    assert_string_equal(back.msg, input);
    wire_error_parse(&back, XE_PLAN, "", 0);
    assert_string_equal(back.msg, xerr_name(XE_PLAN));
}

static void test_fields_survive(void **state)
{
    (void)state;
    sbuf scratch, frame;
    wire_msg m, out;
    xerr e;
    sbuf_init(&scratch);
    sbuf_init(&frame);
    sample_msg(WIRE_MEMBERSHIP, &m, &scratch);
    assert_int_equal(wire_msg_encode(&frame, 1, &m, &e), 0);
    wire_frame f = {.version = 1, .type = WIRE_MEMBERSHIP, .length = (uint32_t)frame.len - 16,
                    .payload = (unsigned char *)frame.p + 16};
    assert_int_equal(wire_msg_get(&f, &out, &e), 0);
    assert_int_equal(out.u.membership.epoch, 9);
    assert_int_equal(out.u.membership.count, 3);
    wire_rd r;
    wire_rd_init(&r, out.u.membership.entries.p, out.u.membership.entries.n);
    for (uint32_t i = 0; i < out.u.membership.count; i++) {
        wire_member mm;
        assert_int_equal(wire_get_member(&r, &mm), 0);
        assert_int_equal(mm.slots, i);
        assert_int_equal(mm.last_heartbeat_ms, 123456789);
        assert_int_equal(mm.domain.n, 6);
        assert_memory_equal(mm.domain.p, "rack-b", 6);
    }
    assert_int_equal(wire_rd_end(&r, 1, &e), 0);
    /* A count that claims more entries than there are is refused. */
    be32_put((unsigned char *)frame.p + 16 + 8, 4);
    assert_int_equal(wire_msg_get(&f, &out, &e), XE_PROTO);

    sbuf_reset(&frame);
    sample_msg(WIRE_ERROR, &m, &scratch);
    assert_int_equal(wire_msg_encode(&frame, 1, &m, &e), 0);
    f.type = WIRE_ERROR;
    f.length = (uint32_t)frame.len - 16;
    f.payload = (unsigned char *)frame.p + 16;
    assert_int_equal(wire_msg_get(&f, &out, &e), 0);
    assert_int_equal(out.u.error.code, XE_SYNTAX);
    assert_int_equal(out.u.error.req_id, 71);
    assert_int_equal(out.u.error.msg.n, strlen("syntax error at 1:8"));
    sbuf_fini(&scratch);
    sbuf_fini(&frame);
}

/* STATS keeps every field; a task's destinations read back; a count or a
 * destination list that overruns is refused.  A HEARTBEAT with an echo
 * round-trips as one, and one without stays without. */
static void test_stats_and_heartbeat_echo(void **state)
{
    (void)state;
    sbuf scratch, frame;
    wire_msg m, out;
    xerr e;
    sbuf_init(&scratch);
    sbuf_init(&frame);
    sample_msg(WIRE_STATS, &m, &scratch);
    assert_int_equal(wire_msg_encode(&frame, 1, &m, &e), 0);
    wire_frame f = {.version = 1, .type = WIRE_STATS, .length = (uint32_t)frame.len - 16,
                    .payload = (unsigned char *)frame.p + 16};
    assert_int_equal(wire_msg_get(&f, &out, &e), 0);
    assert_int_equal(out.u.stats.capacity_milli, 250);
    assert_int_equal(out.u.stats.util_milli, 800);
    assert_int_equal(out.u.stats.wall_ms, 1700000000123);
    assert_int_equal(out.u.stats.applied_bytes, 43);
    assert_int_equal(out.u.stats.applied_ns, 44);
    assert_int_equal(out.u.stats.npeers, 2);
    assert_int_equal(out.u.stats.ntasks, 2);
    wire_rd r;
    wire_stats_peer sp;
    wire_rd_init(&r, out.u.stats.peers.p, out.u.stats.peers.n);
    assert_int_equal(wire_get_stats_peer(&r, &sp), 0);
    assert_int_equal(sp.rtt_us, 250);
    assert_int_equal(wire_get_stats_peer(&r, &sp), 0);
    assert_int_equal(sp.name.n, 2);
    assert_memory_equal(sp.name.p, "n3", 2);
    wire_stats_task st;
    wire_rd_init(&r, out.u.stats.tasks.p, out.u.stats.tasks.n);
    assert_int_equal(wire_get_stats_task(&r, &st), 0);
    assert_int_equal(st.qid, 5);
    assert_int_equal(st.ndest, 3);
    assert_int_equal(st.state_bytes, 4096);
    uint64_t rows, bytes;
    wire_stats_dest(&st, 2, &rows, &bytes);
    assert_int_equal(rows, 30);
    assert_int_equal(bytes, 960);
    assert_int_equal(wire_get_stats_task(&r, &st), 0);
    assert_int_equal(st.cpu_ns, 2000000);
    assert_int_equal(st.ndest, 0);
    assert_int_equal(wire_rd_end(&r, 1, &e), 0);
    wire_stats_replica sr;
    assert_int_equal(out.u.stats.nreplicas, 1);
    wire_rd_init(&r, out.u.stats.replicas.p, out.u.stats.replicas.n);
    assert_int_equal(wire_get_stats_replica(&r, &sr), 0);
    assert_true(sr.qid == 5 && sr.task == 1 && sr.cpu_ns == 777 && sr.bytes == 888);
    /* a replica count that does not fit its bytes */
    be32_put((unsigned char *)frame.p + frame.len - 24 - 4 - 4, 2);
    assert_int_equal(wire_msg_get(&f, &out, &e), XE_PROTO);
    be32_put((unsigned char *)frame.p + frame.len - 24 - 4 - 4, 1);
    assert_int_equal(wire_msg_get(&f, &out, &e), 0);
    /* one task more than there is */
    size_t tcount = 16 + 8 + 4 + 4 + 8 + 8 + 8 + 4 + 4 + out.u.stats.peers.n;
    be32_put((unsigned char *)frame.p + tcount, 3);
    assert_int_equal(wire_msg_get(&f, &out, &e), XE_PROTO);

    sbuf_reset(&frame);
    sample_msg(WIRE_HEARTBEAT, &m, &scratch);
    assert_int_equal(wire_msg_encode(&frame, 1, &m, &e), 0);
    assert_int_equal(frame.len, 16 + 16);
    f = (wire_frame){.version = 1, .type = WIRE_HEARTBEAT, .length = 16, .payload = (unsigned char *)frame.p + 16};
    assert_int_equal(wire_msg_get(&f, &out, &e), 0);
    assert_int_equal(out.u.heartbeat.echo, 0);
    m.u.heartbeat.echo = 1;
    m.u.heartbeat.echo_seq = 76;
    m.u.heartbeat.held_us = 1234;
    sbuf_reset(&frame);
    assert_int_equal(wire_msg_encode(&frame, 1, &m, &e), 0);
    assert_int_equal(frame.len, 16 + 28);
    f.length = 28;
    f.payload = (unsigned char *)frame.p + 16;
    assert_int_equal(wire_msg_get(&f, &out, &e), 0);
    assert_int_equal(out.u.heartbeat.echo, 1);
    assert_int_equal(out.u.heartbeat.echo_seq, 76);
    assert_int_equal(out.u.heartbeat.held_us, 1234);
    f.length = 20; /* half an echo */
    assert_int_equal(wire_msg_get(&f, &out, &e), XE_PROTO);
    sbuf_fini(&scratch);
    sbuf_fini(&frame);
}

/* ------------------------------------------------------------ measured costs */

/* The moving average: the first sample as it is; after dt = tau it has
 * moved 1 - 1/e of the way; dt = 0 moves nothing; a step is approached
 * from below, never passed. */
static void test_meas_smoothing(void **state)
{
    (void)state;
    assert_true(meas_ewma(123, 7, 1, 1) == 7);
    assert_true(fabs(meas_ewma(0, 1, MEAS_TAU_S, 0) - (1 - exp(-1))) < 1e-12);
    assert_true(meas_ewma(3, 9, 0, 0) == 3);
    double a = 0, prev = 0;
    for (int i = 0; i < 60; i++) {
        a = meas_ewma(a, 10, 1.0, 0);
        assert_true(a > prev && a < 10);
        prev = a;
    }
    assert_true(a > 9.9);
    /* the same time in more, shorter steps gets to the same place */
    double b = 0, c = 0;
    b = meas_ewma(b, 10, 2.0, 0);
    c = meas_ewma(meas_ewma(c, 10, 1.0, 0), 10, 1.0, 0);
    assert_true(fabs(b - c) < 1e-9);
}

/* One STATS of node "a" at wall time at: the query 7 of SOURCE (task 0) ->
 * AGGREGATE x 2 (tasks 1, 2) -> SINK (task 3), its counters scaled by k. */
static void stats_msg(wire_msg *m, sbuf *b, int64_t at, uint64_t k, uint32_t rtt_us, uint32_t qid, int64_t since)
{
    sbuf_reset(b);
    wire_wr w;
    wire_wr_init(&w, b);
    wire_stats_peer sp = {.name = wire_str_of("b"), .rtt_us = rtt_us};
    wire_put_stats_peer(&w, &sp);
    size_t at_tasks = b->len;
    /* the source sent 900 rows a step to aggregate task 0 here, 100 to task 1
     * elsewhere (3,200 bytes: 32 a row); CPU 0.5 s, 0.2 s, 0.05 s, 0.01 s a step */
    uint64_t src_rows[2] = {900 * k, 100 * k}, src_bytes[2] = {0, 3200 * k};
    uint64_t agg_rows[1] = {10 * k}, agg_bytes[1] = {0};
    wire_stats_task t[4] = {
        {.qid = 7, .task = 0, .cpu_ns = 500000000 * k, .rows_in = 1000 * k, .rows_out = 1000 * k, .bytes_out = 3200 * k,
         .ndest = 2, .dest_rows = src_rows, .dest_bytes = src_bytes},
        {.qid = 7, .task = 1, .cpu_ns = 200000000 * k, .rows_in = 900 * k, .rows_out = 10 * k, .state_bytes = 2000000,
         .ndest = 1, .dest_rows = agg_rows, .dest_bytes = agg_bytes},
        {.qid = 7, .task = 2, .cpu_ns = 50000000 * k, .rows_in = 100 * k, .rows_out = 10 * k, .state_bytes = 0,
         .ndest = 1, .dest_rows = agg_rows, .dest_bytes = agg_bytes},
        {.qid = 7, .task = 3, .cpu_ns = 10000000 * k, .rows_in = 20 * k},
    };
    for (int i = 0; i < 4; i++) {
        t[i].qid = qid;
        t[i].since_ms = since;
        wire_put_stats_task(&w, &t[i]);
    }
    memset(m, 0, sizeof *m);
    m->type = WIRE_STATS;
    m->u.stats.wall_ms = at;
    m->u.stats.capacity_milli = 250;
    m->u.stats.util_milli = 600;
    m->u.stats.npeers = 1;
    m->u.stats.peers = (wire_str){b->p, (uint32_t)at_tasks};
    m->u.stats.ntasks = 4;
    m->u.stats.tasks = (wire_str){b->p + at_tasks, (uint32_t)(b->len - at_tasks)};
}

/* Counters -> rates -> the game's units: load in CPUs, traffic in links
 * (bytes a row from the batches that left the node), recovery from state
 * bytes and the restore rate; capacities and round trips per node; the
 * seeds stand until every task has two reports. */
static void test_meas_to_model(void **state)
{
    (void)state;
    plan_op ops[3];
    memset(ops, 0, sizeof ops);
    ops[0] = (plan_op){.id = 0, .kind = PO_SOURCE, .parallelism = 1};
    ops[1] = (plan_op){.id = 1, .kind = PO_AGGREGATE, .parallelism = 2, .ninputs = 1, .inputs = {0}, .in_edge = {EDGE_HASH}};
    ops[2] = (plan_op){.id = 2, .kind = PO_SINK, .parallelism = 1, .ninputs = 1, .inputs = {1}};
    plan_dag d = {.nops = 3, .ops = ops, .sink = 2, .stateful = 1};
    meas_store *ms = meas_store_new();
    assert_non_null(ms);
    sbuf b;
    sbuf_init(&b);
    wire_msg m;
    stats_msg(&m, &b, 1000, 1, 10000, 7, 0);
    assert_int_equal(meas_store_take(ms, "a", &m, 1000), 0);
    assert_null(meas_store_query(ms, 7, 0, &d)); /* one report, no start known: no rate yet, the seeds */
    stats_msg(&m, &b, 2000, 2, 10000, 7, 0);     /* one second later, every counter grew by one step */
    assert_int_equal(meas_store_take(ms, "a", &m, 2000), 0);
    const place_meas *pm = meas_store_query(ms, 7, 0, &d);
    assert_non_null(pm);
    assert_true(fabs(pm[0].load - 0.5) < 1e-9);
    assert_true(fabs(pm[1].load - 0.2) < 1e-9);
    assert_true(pm[1].load > pm[2].load); /* the task with more rows costs more */
    assert_true(fabs(pm[1].rows_in_s - 900) < 1e-9);
    assert_int_equal(pm[0].ndest, 2);
    assert_true(fabs(pm[0].traffic[0] - 900.0 * 32 / MEAS_LINK_BPS) < 1e-15);
    assert_true(fabs(pm[0].traffic[1] - 100.0 * 32 / MEAS_LINK_BPS) < 1e-15);
    assert_true(fabs(pm[1].recovery_s - (MEAS_RESTORE_FIXED_S + 2e6 / MEAS_RESTORE_BPS)) < 1e-12);
    assert_true(fabs(pm[1].state_mb - 2.0) < 1e-12);
    assert_true(pm[2].recovery_s == MEAS_RESTORE_FIXED_S); /* stateful, but empty */
    assert_true(pm[0].recovery_s == 0);                    /* stateless */
    /* a query under its old id stands in for its redeployment */
    assert_non_null(meas_store_query(ms, 8, 7, &d));
    assert_null(meas_store_query(ms, 8, 0, &d));
    pm = meas_store_query(ms, 7, 0, &d); /* each call converts again: the earlier answer is gone */
    assert_non_null(pm);
    /* nodes: the reported capacity replaces the JOIN's; round trips, both ways */
    place_node pl[2] = {{.name = "a", .domain = "x", .speed = 1.0, .alive = 1},
                        {.name = "b", .domain = "y", .speed = 1.0, .alive = 1}};
    meas_store_nodes(ms, pl, 2);
    assert_int_equal(pl[0].measured, 1);
    assert_true(pl[0].speed == 0.25 && pl[0].speed_join == 1.0);
    assert_int_equal(pl[1].measured, 0);
    assert_true(pl[1].speed == 1.0);
    assert_non_null(pl[0].rtt_ms);
    assert_true(fabs(pl[0].rtt_ms[1] - 10.0) < 1e-9 && fabs(pl[1].rtt_ms[0] - 10.0) < 1e-9);
    assert_true(meas_distance(1.0, 10.0) == 10.0 / MEAS_RTT_REF_MS);
    assert_true(meas_distance(0.2, 0.05) == 0.2); /* a round trip only raises the domain's distance */
    assert_true(meas_distance(0.2, 0) == 0.2);
    /* derived replica costs until a replica reports: then its own (c holds
     * the replica of task 1: 20 ms of CPU and 4 kB a second) */
    assert_false(pm[1].replica_measured);
    assert_true(fabs(pm[1].replica_load - (0.1 * 0.2 + 0.004)) < 1e-12);
    for (int k = 0; k < 2; k++) {
        sbuf rb;
        sbuf_init(&rb);
        wire_wr rw;
        wire_wr_init(&rw, &rb);
        wire_stats_replica sr = {.qid = 7, .task = 1, .cpu_ns = 20000000u * (uint64_t)(k + 1),
                                 .bytes = 4000u * (uint64_t)(k + 1)};
        wire_put_stats_replica(&rw, &sr);
        wire_msg mr = {.type = WIRE_STATS};
        mr.u.stats.wall_ms = 1000 + 1000 * k;
        mr.u.stats.capacity_milli = 1000;
        mr.u.stats.nreplicas = 1;
        mr.u.stats.replicas = (wire_str){rb.p, (uint32_t)rb.len};
        assert_int_equal(meas_store_take(ms, "c", &mr, 1000 + 1000 * k), 0);
        sbuf_fini(&rb);
    }
    pm = meas_store_query(ms, 7, 0, &d);
    assert_true(pm[1].replica_measured);
    assert_true(fabs(pm[1].replica_load - 0.02) < 1e-12);
    assert_true(fabs(pm[1].repl_traffic - 4000 / MEAS_LINK_BPS) < 1e-18);
    assert_false(pm[2].replica_measured);
    double cap, util;
    assert_int_equal(meas_store_node(ms, "a", &cap, &util), 1);
    assert_true(cap == 0.25 && fabs(util - 0.6) < 1e-12);
    assert_int_equal(meas_store_node(ms, "b", &cap, &util), 0);
    /* the restore rate: assumed until the replicas applied 1 MiB; then
     * theirs (b applied 4 MB in 20 ms: 200 MB/s), and recovery_s follows */
    int rm;
    assert_true(meas_store_restore_bps(ms, &rm) == MEAS_RESTORE_BPS && !rm);
    wire_msg mb = {.type = WIRE_STATS};
    mb.u.stats.capacity_milli = 1000;
    mb.u.stats.applied_bytes = 4000000;
    mb.u.stats.applied_ns = 20000000;
    assert_int_equal(meas_store_take(ms, "b", &mb, 2000), 0);
    assert_true(fabs(meas_store_restore_bps(ms, &rm) - 200e6) < 1 && rm);
    pm = meas_store_query(ms, 7, 0, &d);
    assert_true(fabs(pm[1].recovery_s - (MEAS_RESTORE_FIXED_S + 2e6 / 200e6)) < 1e-12);
    /* a task's first report with its start known is a rate already:
     * query 9 started at 500, one step by 1000 */
    stats_msg(&m, &b, 1000, 1, 10000, 9, 500);
    assert_int_equal(meas_store_take(ms, "a", &m, 1000), 0);
    const place_meas *p9 = meas_store_query(ms, 9, 0, &d);
    assert_non_null(p9);
    assert_true(fabs(p9[0].load - 1.0) < 1e-9 && fabs(p9[1].rows_in_s - 1800) < 1e-9);
    /* a second later nothing grew: the rates fall, smoothed */
    stats_msg(&m, &b, 3000, 2, 10000, 7, 0);
    assert_int_equal(meas_store_take(ms, "a", &m, 3000), 0);
    pm = meas_store_query(ms, 7, 0, &d);
    /* ... slowly: the load is the slower average's (tau MEAS_TAU_FALL_S),
     * EXPLAIN's rows per second the faster one's (MEAS_TAU_S) */
    assert_true(fabs(pm[0].load - 0.5 * exp(-1.0 / MEAS_TAU_FALL_S)) < 1e-9);
    assert_true(fabs(pm[1].rows_in_s - 900 * exp(-1.0 / MEAS_TAU_S)) < 1e-9);
    /* a step up a second later: the larger of the two averages counts */
    stats_msg(&m, &b, 4000, 3, 10000, 7, 0);
    assert_int_equal(meas_store_take(ms, "a", &m, 4000), 0);
    pm = meas_store_query(ms, 7, 0, &d);
    double fast = 0.5 * exp(-2.0 / MEAS_TAU_S) + 0.5 * (1 - exp(-1.0 / MEAS_TAU_S));
    double slow = 0.5 * exp(-2.0 / MEAS_TAU_FALL_S) + 0.5 * (1 - exp(-1.0 / MEAS_TAU_FALL_S));
    assert_true(fast < slow); /* the fast one has not caught up with the slow one yet */
    assert_true(fabs(pm[0].load - slow) < 1e-9);
    /* forgotten once nobody reports it */
    memset(&m.u.stats, 0, sizeof m.u.stats);
    m.u.stats.capacity_milli = 250;
    assert_int_equal(meas_store_take(ms, "a", &m, 4000 + MEAS_FORGET_MS + 1), 0);
    assert_null(meas_store_query(ms, 7, 0, &d));
    sbuf_fini(&b);
    meas_store_free(ms);
}

static void test_decoder_chunking(void **state)
{
    (void)state;
    sbuf s;
    collected want, got;
    sbuf_init(&s);
    build_stream(&s, &want);
    size_t (*chunkers[])(void) = {chunk_all, chunk_one, chunk_random};
    srand(42);
    for (size_t k = 0; k < 3; k++) {
        for (int stop = 0; stop <= 5; stop += 5) {
            wire_dec d;
            wire_dec_init(&d, 0);
            memset(&got, 0, sizeof got);
            got.stop_every = stop;
            feed_all(&d, (unsigned char *)s.p, s.len, chunkers[k], &got);
            check_same(&want, &got);
            assert_false(wire_dec_midframe(&d));
            /* a big split frame's buffer is not kept after delivery */
            assert_true(wire_dec_mem(&d) < sizeof d + 300 * 1024);
            wire_dec_fini(&d);
        }
    }
    /* many random chunkings */
    for (int round = 0; round < 20; round++) {
        wire_dec d;
        wire_dec_init(&d, 0);
        memset(&got, 0, sizeof got);
        feed_all(&d, (unsigned char *)s.p, s.len, chunk_random, &got);
        check_same(&want, &got);
        wire_dec_fini(&d);
    }
    sbuf_fini(&s);
}

/* Feed bytes whole; return the error and the precise reason. */
static int decode_err(const void *p, size_t n, uint32_t max, int *werr, size_t *used, char *msg)
{
    wire_dec d;
    collected col;
    xerr e;
    memset(&col, 0, sizeof col);
    xerr_clear(&e);
    wire_dec_init(&d, max);
    size_t u = 0;
    int rc = wire_dec_feed(&d, p, n, &u, collect_cb, &col, &e);
    if (rc == 0) rc = wire_dec_finish(&d, &e);
    *werr = d.err;
    if (used) *used = u;
    if (msg) snprintf(msg, 512, "%s", e.msg);
    /* sticky: feeding again reports the same failure */
    if (rc < 0) {
        size_t u2;
        assert_int_equal(wire_dec_feed(&d, p, n, &u2, collect_cb, &col, &e), rc);
        assert_int_equal(u2, 0);
    }
    wire_dec_fini(&d);
    return rc;
}

static void test_decoder_rejects(void **state)
{
    (void)state;
    sbuf f;
    int werr;
    size_t used;
    char msg[512];
    sbuf_init(&f);
    const char payload[] = "hello payload";
    assert_int_equal(wire_encode(&f, 1, WIRE_QUERY, 0, payload, sizeof payload), 0);
    unsigned char *b = (unsigned char *)f.p;

    /* a good frame first, to be sure the fixture is right */
    assert_int_equal(decode_err(b, f.len, 0, &werr, NULL, NULL), 0);

    /* bad magic: known after 4 bytes, whatever follows */
    assert_int_equal(decode_err("GET / HTTP/1.1\r\n\r\n", 18, 0, &werr, &used, msg), XE_PROTO);
    assert_int_equal(werr, WIRE_EMAGIC);
    assert_int_equal(used, 4);
    assert_non_null(strstr(msg, "bad magic"));
    assert_non_null(strstr(msg, "GET "));

    unsigned char c[64];
    memcpy(c, b, f.len);
    c[4] = 9; /* bad version */
    assert_int_equal(decode_err(c, f.len, 0, &werr, NULL, msg), XE_VERSION);
    assert_int_equal(werr, WIRE_EVERSION);
    assert_non_null(strstr(msg, "version 9"));

    memcpy(c, b, f.len);
    c[5] = 99; /* unknown type */
    assert_int_equal(decode_err(c, f.len, 0, &werr, NULL, msg), XE_PROTO);
    assert_int_equal(werr, WIRE_ETYPE);
    c[5] = 0;
    assert_int_equal(decode_err(c, f.len, 0, &werr, NULL, msg), XE_PROTO);
    assert_int_equal(werr, WIRE_ETYPE);

    /* oversized: refused from the header alone, before any payload arrives */
    memcpy(c, b, WIRE_HDR_SIZE);
    be32_put(c + 8, WIRE_MAX_PAYLOAD + 1);
    assert_int_equal(decode_err(c, WIRE_HDR_SIZE, 0, &werr, &used, msg), XE_PROTO);
    assert_int_equal(werr, WIRE_ETOOBIG);
    assert_int_equal(used, WIRE_HDR_SIZE);
    assert_non_null(strstr(msg, "exceeds the limit"));
    /* and against a lower per-decoder limit (the pre-auth one) */
    assert_int_equal(decode_err(b, f.len, 8, &werr, NULL, msg), XE_PROTO);
    assert_int_equal(werr, WIRE_ETOOBIG);

    /* bad CRC: one flipped payload bit, or a flipped header flag bit */
    memcpy(c, b, f.len);
    c[WIRE_HDR_SIZE + 3] ^= 1;
    assert_int_equal(decode_err(c, f.len, 0, &werr, NULL, msg), XE_CORRUPT);
    assert_int_equal(werr, WIRE_ECRC);
    assert_non_null(strstr(msg, "CRC mismatch"));
    memcpy(c, b, f.len);
    c[7] ^= 0x10;
    assert_int_equal(decode_err(c, f.len, 0, &werr, NULL, msg), XE_CORRUPT);

    /* truncated: input ends in the header, or in the payload */
    assert_int_equal(decode_err(b, 10, 0, &werr, NULL, msg), XE_PROTO);
    assert_int_equal(werr, WIRE_ETRUNC);
    assert_non_null(strstr(msg, "header (10 of 16"));
    assert_int_equal(decode_err(b, f.len - 1, 0, &werr, NULL, msg), XE_PROTO);
    assert_int_equal(werr, WIRE_ETRUNC);
    assert_non_null(strstr(msg, "QUERY frame"));

    /* truncated payload inside a well-formed frame: the payload reader refuses */
    sbuf t;
    sbuf_init(&t);
    unsigned char shortq[10] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0}; /* req_id, then 2 of 4 length bytes */
    assert_int_equal(wire_encode(&t, 1, WIRE_QUERY, 0, shortq, sizeof shortq), 0);
    wire_frame fr = {.version = 1, .type = WIRE_QUERY, .length = 10,
                     .payload = (unsigned char *)t.p + 16};
    wire_msg m;
    xerr e;
    assert_int_equal(wire_msg_get(&fr, &m, &e), XE_PROTO);
    assert_non_null(strstr(e.msg, "truncated"));
    /* trailing garbage is refused too */
    unsigned char hb[17] = {0};
    fr.type = WIRE_HEARTBEAT;
    fr.payload = hb;
    fr.length = 17;
    assert_int_equal(wire_msg_get(&fr, &m, &e), XE_PROTO);
    assert_non_null(strstr(e.msg, "trailing"));
    fr.length = 16;
    assert_int_equal(wire_msg_get(&fr, &m, &e), 0);

    /* a claimed length costs memory only as the bytes arrive */
    {
        wire_dec dd;
        collected cc;
        unsigned char part[WIRE_HDR_SIZE + 100] = {0};
        memcpy(part, b, WIRE_HDR_SIZE);
        be32_put(part + 8, 10u * 1024 * 1024);
        memset(&cc, 0, sizeof cc);
        wire_dec_init(&dd, 0);
        assert_int_equal(wire_dec_feed(&dd, part, sizeof part, &used, collect_cb, &cc, &e), 0);
        assert_int_equal(used, sizeof part);
        assert_true(wire_dec_midframe(&dd));
        assert_true(wire_dec_mem(&dd) < sizeof dd + 8192);
        assert_int_equal(wire_dec_finish(&dd, &e), XE_PROTO);
        wire_dec_fini(&dd);
    }

    /* a frame callback's error stops the decoder */
    sbuf two;
    sbuf_init(&two);
    wire_encode(&two, 1, WIRE_ACK, 0, NULL, 0);
    wire_encode(&two, 1, WIRE_ACK, 0, NULL, 0);
    wire_dec d;
    collected col;
    memset(&col, 0, sizeof col);
    col.fail_at = 1;
    wire_dec_init(&d, 0);
    assert_int_equal(wire_dec_feed(&d, two.p, two.len, &used, collect_cb, &col, &e), XE_INVAL);
    assert_int_equal(used, WIRE_HDR_SIZE);
    assert_int_equal(col.n, 1);
    wire_dec_fini(&d);

    sbuf_fini(&two);
    sbuf_fini(&t);
    sbuf_fini(&f);
}

static void test_reader_writer(void **state)
{
    (void)state;
    sbuf b;
    wire_wr w;
    xerr e;
    sbuf_init(&b);
    wire_wr_init(&w, &b);
    wire_put_u8(&w, 0xab);
    wire_put_u16(&w, 0x1234);
    wire_put_u32(&w, 0xdeadbeef);
    wire_put_u64(&w, 0x0102030405060708ull);
    wire_put_i64(&w, -2);
    wire_put_str(&w, "abc", 3);
    wire_put_blob(&w, "xyz!", 4);
    assert_int_equal(wire_wr_end(&w, &e), 0);
    assert_int_equal(b.len, 1 + 2 + 4 + 8 + 8 + 5 + 8);
    /* big-endian on the wire */
    assert_int_equal((unsigned char)b.p[1], 0x12);
    assert_int_equal((unsigned char)b.p[3], 0xde);

    /* every prefix of the buffer fails cleanly at the first missing field */
    for (size_t cut = 0; cut <= b.len; cut++) {
        wire_rd r;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        int64_t i64;
        wire_str s1, s2;
        wire_rd_init(&r, b.p, cut);
        wire_get_u8(&r, &u8);
        wire_get_u16(&r, &u16);
        wire_get_u32(&r, &u32);
        wire_get_u64(&r, &u64);
        wire_get_i64(&r, &i64);
        wire_get_str(&r, &s1);
        wire_get_blob(&r, &s2);
        int rc = wire_rd_end(&r, 1, &e);
        if (cut == b.len) {
            assert_int_equal(rc, 0);
            assert_int_equal(u8, 0xab);
            assert_int_equal(u16, 0x1234);
            assert_int_equal(u32, 0xdeadbeef);
            assert_int_equal(u64, 0x0102030405060708ull);
            assert_int_equal(i64, -2);
            assert_int_equal(s1.n, 3);
            assert_memory_equal(s1.p, "abc", 3);
            assert_int_equal(s2.n, 4);
        } else {
            assert_int_equal(rc, XE_PROTO);
            assert_non_null(strstr(e.msg, "truncated"));
            assert_int_equal(s2.n, 0); /* later gets zero their outputs */
            assert_int_equal(wire_rd_left(&r), 0);
        }
    }
    /* a string length that points past the end */
    unsigned char lie[4] = {0xff, 0xff, 'a', 'b'};
    wire_rd r;
    wire_str s;
    wire_rd_init(&r, lie, sizeof lie);
    assert_int_equal(wire_get_str(&r, &s), XE_PROTO);
    assert_int_equal(s.n, 0);
    /* an over-long string is refused by the writer */
    sbuf_reset(&b);
    wire_wr_init(&w, &b);
    char *huge = calloc(1, 70000);
    wire_put_str(&w, huge, 70000);
    assert_int_equal(wire_wr_end(&w, &e), XE_INVAL);
    free(huge);
    sbuf_fini(&b);

    assert_true(wire_name_ok("n1", 2));
    assert_true(wire_name_ok("rack-a.node_7:x", 15));
    assert_false(wire_name_ok("", 0));
    assert_false(wire_name_ok("a b", 3));
    assert_false(wire_name_ok("x\n", 2));
}

/* ------------------------------------------------------------ auth tests */

static void write_file(const char *path, const char *content, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

static void test_secret_file(void **state)
{
    (void)state;
    char path[] = "/tmp/ares-secret-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    auth_secret s;
    xerr e;

    write_file(path, "correct horse battery staple\r\n", 0600);
    assert_int_equal(auth_secret_load(path, &s, &e), 0);
    assert_int_equal(s.len, strlen("correct horse battery staple"));
    assert_memory_equal(s.key, "correct horse battery staple", s.len);
    assert_string_equal(s.warning, "");
    auth_secret_fini(&s);

    write_file(path, "correct horse battery staple\n", 0644);
    assert_int_equal(auth_secret_load(path, &s, &e), XE_INVAL); /* readable by others: refused, as ssh does */
    char want[200];
    snprintf(want, sizeof want, "secret file %s has mode 0644: it is open to group or others, so it is refused; "
             "chmod 600 %s", path, path);
    assert_string_equal(e.msg, want);
    write_file(path, "correct horse battery staple\n", 0640);
    assert_int_equal(auth_secret_load(path, &s, &e), XE_INVAL);
    assert_non_null(strstr(e.msg, "mode 0640"));

    write_file(path, "correct horse battery staple\n", 0622);
    assert_int_equal(auth_secret_load(path, &s, &e), XE_INVAL);
    assert_non_null(strstr(e.msg, "open to writes by group or others"));

    write_file(path, "\n\n", 0600);
    assert_int_equal(auth_secret_load(path, &s, &e), XE_INVAL);
    assert_non_null(strstr(e.msg, "empty"));
    write_file(path, "", 0600);
    assert_int_equal(auth_secret_load(path, &s, &e), XE_INVAL);

    write_file(path, "short", 0600);
    assert_int_equal(auth_secret_load(path, &s, &e), 0);
    assert_non_null(strstr(s.warning, "only 5 bytes"));

    char *big = malloc(AUTH_SECRET_MAX + 10);
    memset(big, 'k', AUTH_SECRET_MAX + 9);
    big[AUTH_SECRET_MAX + 9] = 0;
    write_file(path, big, 0600);
    assert_int_equal(auth_secret_load(path, &s, &e), XE_INVAL);
    free(big);

    unlink(path);
    assert_int_equal(auth_secret_load(path, &s, &e), XE_IO);
    assert_int_equal(auth_secret_load("/tmp", &s, &e), XE_INVAL);
}

static void test_hmac_proofs(void **state)
{
    (void)state;
    auth_secret s, other;
    xerr e;
    unsigned char n1[WIRE_NONCE_SIZE], n2[WIRE_NONCE_SIZE], mac[WIRE_MAC_SIZE];
    assert_int_equal(auth_secret_set(&s, "sekrit-sekrit-sekrit", 20, &e), 0);
    assert_int_equal(auth_secret_set(&other, "sekrit-sekrit-sekrix", 20, &e), 0);
    assert_int_equal(auth_secret_set(&other, "", 0, &e), XE_INVAL);
    assert_int_equal(auth_secret_set(&other, "sekrit-sekrit-sekrix", 20, &e), 0);
    assert_int_equal(auth_nonce(n1), 0);
    assert_int_equal(auth_nonce(n2), 0);
    assert_memory_not_equal(n1, n2, WIRE_NONCE_SIZE);
    assert_int_equal(auth_mac(&s, AUTH_INITIATOR, 1, n1, n2, "n1", 2, WIRE_ROLE_NODE, mac), 0);
    assert_int_equal(auth_verify(&s, AUTH_INITIATOR, 1, n1, n2, "n1", 2, WIRE_ROLE_NODE, mac), 0);
    /* wrong secret, reflected direction, other name, other role, other nonce, version */
    assert_int_equal(auth_verify(&other, AUTH_INITIATOR, 1, n1, n2, "n1", 2, 1, mac), XE_AUTH);
    assert_int_equal(auth_verify(&s, AUTH_ACCEPTOR, 1, n1, n2, "n1", 2, 1, mac), XE_AUTH);
    assert_int_equal(auth_verify(&s, AUTH_INITIATOR, 1, n1, n2, "n2", 2, 1, mac), XE_AUTH);
    assert_int_equal(auth_verify(&s, AUTH_INITIATOR, 1, n1, n2, "n1", 2, 3, mac), XE_AUTH);
    assert_int_equal(auth_verify(&s, AUTH_INITIATOR, 1, n2, n1, "n1", 2, 1, mac), XE_AUTH);
    assert_int_equal(auth_verify(&s, AUTH_INITIATOR, 2, n1, n2, "n1", 2, 1, mac), XE_AUTH);
    auth_secret_fini(&other);
    auth_secret_fini(&s);
}

/* ------------------------------------------------------------ net harness */

typedef struct tpeer {
    net_ctx *ctx;
    sbuf log;
    net_conn *conn; /* the most recent ready connection */
    int ready, closed, close_why, frames, batches, writable;
    char close_msg[256];
    int pause_on_ready, echo;
    uint64_t next_seq; /* BATCH seq expected next */
    int64_t ready_ms, closed_ms;
} tpeer;

static void cap_log(void *ud, int level, const char *p, const char *msg)
{
    tpeer *pe = ud;
    sbuf_printf(&pe->log, "%s [%s] %s\n", base_log_level_name(level), p ? p : "-", msg);
    if (getenv("NET_TEST_LOG")) net_log_stderr(NULL, level, p, msg);
}

static void h_ready(net_conn *c, void *ud)
{
    tpeer *pe = ud;
    pe->ready++;
    pe->conn = c;
    pe->ready_ms = (int64_t)(clock_mono_ns() / 1000000);
    if (pe->pause_on_ready) net_pause(c);
}

static void h_frame(net_conn *c, const wire_frame *f, void *ud)
{
    tpeer *pe = ud;
    pe->frames++;
    wire_msg m;
    xerr e;
    assert_int_equal(wire_msg_get(f, &m, &e), 0);
    if (f->type == WIRE_BATCH) {
        assert_int_equal(m.u.batch.stamp, pe->next_seq);
        pe->next_seq++;
        pe->batches++;
    }
    if (pe->echo && f->type == WIRE_QUERY) {
        wire_msg r = {.type = WIRE_RESULT, .flags = WIRE_F_LAST};
        r.u.result.req_id = m.u.query.req_id;
        r.u.result.nrows = 1;
        r.u.result.rows = m.u.query.sql;
        assert_int_equal(net_send_msg(c, &r), 0);
    }
}

static void h_writable(net_conn *c, void *ud)
{
    (void)c;
    ((tpeer *)ud)->writable++;
}

static void h_close(net_conn *c, int why, const char *msg, void *ud)
{
    tpeer *pe = ud;
    pe->closed++;
    pe->close_why = why;
    pe->closed_ms = (int64_t)(clock_mono_ns() / 1000000);
    snprintf(pe->close_msg, sizeof pe->close_msg, "%s", msg);
    if (pe->conn == c) pe->conn = NULL;
}

static const net_handlers handlers = {h_ready, h_frame, h_writable, h_close};

typedef struct netfix {
    uv_loop_t loop;
    uv_timer_t guard;
    auth_secret secret, wrong;
    tpeer srv, cli;
    net_listener *l;
    int port;
} netfix;

static void guard_cb(uv_timer_t *t) { (void)t; }

static void peer_init(netfix *fx, tpeer *pe, const char *name, int role, const auth_secret *s,
                      const net_config *base)
{
    memset(pe, 0, sizeof *pe);
    sbuf_init(&pe->log);
    net_config cfg = base ? *base : (net_config){0};
    cfg.name = name;
    cfg.role = (uint8_t)role;
    cfg.secret = s;
    cfg.log = cap_log;
    cfg.log_ud = pe;
    xerr e;
    if (net_ctx_new(&fx->loop, &cfg, &pe->ctx, &e) < 0) fail_msg("net_ctx_new: %s", e.msg);
}

static int setup_net(void **state)
{
    netfix *fx = calloc(1, sizeof *fx);
    xerr e;
    assert_int_equal(uv_loop_init(&fx->loop), 0);
    uv_timer_init(&fx->loop, &fx->guard);
    uv_timer_start(&fx->guard, guard_cb, 5, 5); /* wakes uv_run(ONCE) for the deadlines */
    auth_secret_set(&fx->secret, "the-cluster-secret-0123456789", 29, &e);
    auth_secret_set(&fx->wrong, "not-the-cluster-secret-012345", 29, &e);
    peer_init(fx, &fx->srv, "coord", WIRE_ROLE_COORDINATOR, &fx->secret, NULL);
    fx->srv.echo = 1;
    assert_int_equal(net_listen(fx->srv.ctx, NULL, 0, &handlers, &fx->srv, &fx->l, &e), 0);
    fx->port = net_listener_port(fx->l);
    assert_true(fx->port > 0);
    *state = fx;
    return 0;
}

static int teardown_net(void **state)
{
    netfix *fx = *state;
    if (fx->cli.ctx) net_ctx_free(fx->cli.ctx);
    net_ctx_free(fx->srv.ctx);
    uv_close((uv_handle_t *)&fx->guard, NULL);
    uv_run(&fx->loop, UV_RUN_DEFAULT); /* until every handle has closed */
    assert_int_equal(uv_loop_close(&fx->loop), 0);
    sbuf_fini(&fx->srv.log);
    sbuf_fini(&fx->cli.log);
    auth_secret_fini(&fx->secret);
    auth_secret_fini(&fx->wrong);
    free(fx);
    return 0;
}

/* Run the loop until *flag >= want or ms pass; returns 1 if reached. */
static int run_until(netfix *fx, const int *flag, int want, int ms)
{
    uint64_t end = clock_mono_ns() + (uint64_t)ms * 1000000;
    while (*flag < want && clock_mono_ns() < end) uv_run(&fx->loop, UV_RUN_ONCE);
    return *flag >= want;
}

static void run_for(netfix *fx, int ms)
{
    int never = 0;
    run_until(fx, &never, 1, ms);
}

static net_conn *connect_client(netfix *fx, tpeer *pe)
{
    net_conn *c;
    xerr e;
    if (net_connect(pe->ctx, "127.0.0.1", fx->port, 3000, &handlers, pe, &c, &e) < 0)
        fail_msg("net_connect: %s", e.msg);
    return c;
}

static int has_log(const tpeer *pe, const char *s) { return pe->log.p && strstr(pe->log.p, s); }

/* Replace the fixture's server with one configured by cfg. */
static void restart_server(netfix *fx, const net_config *cfg)
{
    xerr e;
    net_ctx_free(fx->srv.ctx);
    run_for(fx, 20);
    sbuf_fini(&fx->srv.log);
    peer_init(fx, &fx->srv, "coord", WIRE_ROLE_COORDINATOR, &fx->secret, cfg);
    fx->srv.echo = 1;
    assert_int_equal(net_listen(fx->srv.ctx, NULL, 0, &handlers, &fx->srv, &fx->l, &e), 0);
    fx->port = net_listener_port(fx->l);
}

/* ------------------------------------------------------------ net tests */

static void test_handshake_and_echo(void **state)
{
    netfix *fx = *state;
    tpeer *cli = &fx->cli;
    peer_init(fx, cli, "ares-sql", WIRE_ROLE_CLIENT, &fx->secret, NULL);
    net_conn *c = connect_client(fx, cli);
    assert_false(net_is_ready(c));
    /* nothing may be sent before the handshake completes */
    assert_int_equal(net_send(c, WIRE_QUERY, 0, "x", 1), XE_INVAL);
    assert_true(run_until(fx, &cli->ready, 1, 3000));
    assert_true(run_until(fx, &fx->srv.ready, 1, 3000));
    assert_string_equal(net_peer_name(c), "coord");
    assert_int_equal(net_peer_role(c), WIRE_ROLE_COORDINATOR);
    assert_int_equal(net_version(c), 1);
    assert_true(net_is_initiator(c));
    assert_string_equal(net_peer_name(fx->srv.conn), "ares-sql");
    assert_int_equal(net_peer_role(fx->srv.conn), WIRE_ROLE_CLIENT);
    assert_false(net_is_initiator(fx->srv.conn));
    assert_true(has_log(&fx->srv, "authenticated client 'ares-sql'"));
    /* handshake and heartbeat types are not the owner's to send */
    assert_int_equal(net_send(c, WIRE_HELLO, 0, NULL, 0), XE_INVAL);
    assert_int_equal(net_send(c, WIRE_HEARTBEAT, 0, NULL, 0), XE_INVAL);
    assert_int_equal(net_send(c, WIRE_BYE, 0, NULL, 0), XE_INVAL);

    wire_msg q = {.type = WIRE_QUERY};
    q.u.query.req_id = 1;
    q.u.query.sql = wire_str_of("SELECT 1");
    assert_int_equal(net_send_msg(c, &q), 0);
    assert_true(run_until(fx, &cli->frames, 1, 3000));
    assert_int_equal(fx->srv.frames, 1);

    /* the send delay holds frames back: modelled latency */
    net_set_send_delay_ms(c, 150);
    uint64_t t0 = clock_mono_ns();
    assert_int_equal(net_send_msg(c, &q), 0);
    assert_true(net_queued(c) > 0);
    assert_true(run_until(fx, &cli->frames, 2, 3000));
    assert_true(clock_mono_ns() - t0 >= 140ull * 1000000);
    net_set_send_delay_ms(c, 0);

    /* orderly close: the server sees BYE */
    net_close(c, "done");
    assert_int_equal(net_send_msg(c, &q), XE_IO);
    assert_true(run_until(fx, &fx->srv.closed, 1, 3000));
    assert_true(run_until(fx, &cli->closed, 1, 3000));
    assert_int_equal(fx->srv.close_why, NET_CLOSE_PEER);
    assert_non_null(strstr(fx->srv.close_msg, "BYE: done"));
    assert_int_equal(cli->close_why, NET_CLOSE_LOCAL);
    assert_int_equal(net_ctx_nconns(fx->srv.ctx), 0);
}

/* Round trips: the smoothed one takes in a transient hold of the
 * heartbeats (here the server's send delay of 40 ms for 300 ms; on a testbed, a
 * loop at its CPU quota); the least of the last 32, which the nodes report
 * for placement's distances, stays the path's own. */
static void test_rtt_min_ignores_held_heartbeats(void **state)
{
    netfix *fx = *state;
    tpeer *cli = &fx->cli;
    net_config cfg = {.heartbeat_ms = 10, .dead_ms = 2000};
    restart_server(fx, &cfg);
    peer_init(fx, cli, "n1", WIRE_ROLE_NODE, &fx->secret, &cfg);
    net_conn *c = connect_client(fx, cli);
    assert_true(run_until(fx, &cli->ready, 1, 3000));
    assert_true(run_until(fx, &fx->srv.ready, 1, 3000));
    assert_int_equal(net_rtt_min_us(c), 0);
    run_for(fx, 200); /* idle round trips */
    uint32_t idle = net_rtt_min_us(c);
    assert_true(idle > 0 && idle <= net_rtt_us(c) + 1);
    net_set_send_delay_ms(fx->srv.conn, 40); /* within the 8 heartbeats whose echo is timed */
    uint32_t most = 0; /* the smoothed one's peak */
    for (int i = 0; i < 80; i++) {
        run_for(fx, 5);
        if (i == 60) net_set_send_delay_ms(fx->srv.conn, 0);
        if (net_rtt_us(c) > most) most = net_rtt_us(c);
    }
    assert_true(most > 10000); /* smoothed: the holds are in it */
    /* the least: the path's, not the 40 ms holds. The window (32 round
     * trips) has slid past the idle ones by now, so the least is of later
     * trips, whose jitter (ASan, a shared machine) may put it above idle. */
    assert_true(net_rtt_min_us(c) < 20000);
}

/* A standby that takes over changes its context's role while members'
 * handshakes are in flight: a connection proves the role its HELLO said. */
static void test_role_change_mid_handshake(void **state)
{
    netfix *fx = *state;
    tpeer *cli = &fx->cli;
    peer_init(fx, cli, "n1", WIRE_ROLE_NODE, &fx->secret, NULL);
    net_conn *c = connect_client(fx, cli);
    /* until the server's HELLO is in (its proof may still be to come) */
    uint64_t end = clock_mono_ns() + 3000ull * 1000000;
    while (!net_peer_role(c) && clock_mono_ns() < end) uv_run(&fx->loop, UV_RUN_ONCE);
    assert_int_equal(net_peer_role(c), WIRE_ROLE_COORDINATOR);
    net_ctx_set_role(fx->srv.ctx, WIRE_ROLE_NODE);
    assert_true(run_until(fx, &cli->ready, 1, 3000));
    assert_true(run_until(fx, &fx->srv.ready, 1, 3000));
    assert_int_equal(net_peer_role(c), WIRE_ROLE_COORDINATOR);
    assert_false(has_log(cli, "authentication failed"));
    /* a new connection announces the new role */
    tpeer other;
    peer_init(fx, &other, "n2", WIRE_ROLE_NODE, &fx->secret, NULL);
    net_conn *c2 = connect_client(fx, &other);
    assert_true(run_until(fx, &other.ready, 1, 3000));
    assert_int_equal(net_peer_role(c2), WIRE_ROLE_NODE);
    net_ctx_free(other.ctx);
    run_for(fx, 20);
    sbuf_fini(&other.log);
}

static void test_wrong_secret_refused(void **state)
{
    netfix *fx = *state;
    tpeer *cli = &fx->cli;
    peer_init(fx, cli, "mallory", WIRE_ROLE_NODE, &fx->wrong, NULL);
    connect_client(fx, cli);
    assert_true(run_until(fx, &cli->closed, 1, 3000));
    assert_int_equal(cli->ready, 0);
    assert_int_equal(cli->close_why, NET_CLOSE_AUTH);
    assert_non_null(strstr(cli->close_msg, "authentication failed"));
    /* the server refused and logged it, and never told its owner */
    run_for(fx, 50);
    assert_true(has_log(&fx->srv, "node 'mallory' failed to prove the cluster secret"));
    assert_int_equal(fx->srv.ready, 0);
    assert_int_equal(fx->srv.closed, 0);
    assert_int_equal(net_ctx_nconns(fx->srv.ctx), 0);

    /* a good client right after is served */
    tpeer good;
    peer_init(fx, &good, "n2", WIRE_ROLE_NODE, &fx->secret, NULL);
    connect_client(fx, &good);
    assert_true(run_until(fx, &good.ready, 1, 3000));
    assert_true(run_until(fx, &fx->srv.ready, 1, 3000));
    net_ctx_free(good.ctx);
    run_until(fx, &good.closed, 1, 3000);
    sbuf_fini(&good.log);
}

/* A raw TCP client that writes bytes and reads until EOF. */
typedef struct rawcli {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    const char *bytes;
    size_t n;
    int eof, closed, shut;
    uv_shutdown_t sreq;
    sbuf got;
    char buf[4096];
} rawcli;

static void raw_closed(uv_handle_t *h) { ((rawcli *)h->data)->closed = 1; }
static void raw_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
    (void)s;
    rawcli *r = h->data;
    *b = uv_buf_init(r->buf, sizeof r->buf);
}
static void raw_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    rawcli *r = s->data;
    if (n > 0) sbuf_add(&r->got, b->base, (size_t)n);
    if (n < 0) {
        r->eof = 1;
        uv_close((uv_handle_t *)s, raw_closed);
    }
}
static void raw_written(uv_write_t *w, int st) { (void)w; (void)st; }
static void raw_shut(uv_shutdown_t *s, int st) { (void)s; (void)st; }
static void raw_connected(uv_connect_t *req, int st)
{
    rawcli *r = req->data;
    assert_int_equal(st, 0);
    uv_buf_t b = uv_buf_init((char *)r->bytes, (unsigned)r->n);
    if (r->n) uv_write(&r->wreq, (uv_stream_t *)&r->tcp, &b, 1, raw_written);
    if (r->shut) uv_shutdown(&r->sreq, (uv_stream_t *)&r->tcp, raw_shut);
    uv_read_start((uv_stream_t *)&r->tcp, raw_alloc, raw_read);
}

/* Send bytes raw to the server; expect to be closed, with `log` in its log. */
static void raw_expect_closed(netfix *fx, const void *bytes, size_t n, const char *log)
{
    rawcli r;
    memset(&r, 0, sizeof r);
    sbuf_init(&r.got);
    r.shut = n > 0; /* EOF after the bytes; n == 0: connect and say nothing */
    r.bytes = bytes;
    r.n = n;
    uv_tcp_init(&fx->loop, &r.tcp);
    r.tcp.data = r.creq.data = &r;
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", fx->port, &a);
    uv_tcp_connect(&r.creq, &r.tcp, (struct sockaddr *)&a, raw_connected);
    assert_true(run_until(fx, &r.closed, 1, 3000));
    assert_true(r.eof);
    if (!has_log(&fx->srv, log)) fail_msg("log lacks '%s':\n%s", log, fx->srv.log.p);
    assert_int_equal(fx->srv.ready, 0);
    /* the server sent an ERROR frame before closing */
    if (r.got.len >= WIRE_HDR_SIZE) assert_int_equal((unsigned char)r.got.p[5], WIRE_ERROR);
    sbuf_fini(&r.got);
}

static void test_garbage_then_good_client(void **state)
{
    netfix *fx = *state;
    const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    raw_expect_closed(fx, http, sizeof http - 1, "bad magic");

    /* a well-formed frame that is not allowed before authentication */
    sbuf f;
    sbuf_init(&f);
    wire_encode(&f, 1, WIRE_BATCH, 0, "rows", 4);
    raw_expect_closed(fx, f.p, f.len, "BATCH frame before authentication");
    /* a pre-auth frame over WIRE_MAX_PREAUTH is refused from its header */
    sbuf_reset(&f);
    char *big = calloc(1, WIRE_MAX_PREAUTH + 1);
    wire_encode(&f, 1, WIRE_HELLO, 0, big, WIRE_MAX_PREAUTH + 1);
    free(big);
    raw_expect_closed(fx, f.p, f.len, "exceeds the limit of 4096");
    /* a bad CRC */
    sbuf_reset(&f);
    wire_encode(&f, 1, WIRE_HELLO, 0, "abc", 3);
    f.p[17] ^= 1;
    raw_expect_closed(fx, f.p, f.len, "CRC mismatch");
    /* a truncated frame, then EOF */
    sbuf_reset(&f);
    wire_encode(&f, 1, WIRE_HELLO, 0, "abcdef", 6);
    raw_expect_closed(fx, f.p, f.len - 2, "input ended inside a HELLO frame");
    /* a HELLO offering only versions this build does not speak */
    sbuf_reset(&f);
    wire_msg h = {.type = WIRE_HELLO};
    xerr e;
    h.u.hello.vmin = WIRE_VERSION_MAX + 1;
    h.u.hello.vmax = WIRE_VERSION_MAX + 3;
    h.u.hello.role = WIRE_ROLE_NODE;
    h.u.hello.name = wire_str_of("future");
    assert_int_equal(wire_msg_encode(&f, WIRE_VERSION_MIN, &h, &e), 0);
    raw_expect_closed(fx, f.p, f.len, "no common wire version: peer offers 2..4");
    sbuf_fini(&f);
    run_for(fx, 20);
    assert_int_equal(net_ctx_nconns(fx->srv.ctx), 0);

    /* the listener still serves a good client */
    tpeer *cli = &fx->cli;
    peer_init(fx, cli, "n1", WIRE_ROLE_NODE, &fx->secret, NULL);
    net_conn *c = connect_client(fx, cli);
    assert_true(run_until(fx, &cli->ready, 1, 3000));
    wire_msg q = {.type = WIRE_QUERY};
    q.u.query.sql = wire_str_of("SELECT 2");
    assert_int_equal(net_send_msg(c, &q), 0);
    assert_true(run_until(fx, &cli->frames, 1, 3000));
}

static void test_handshake_timeout(void **state)
{
    netfix *fx = *state;
    xerr e;
    net_config cfg = {.handshake_ms = 150};
    restart_server(fx, &cfg);
    /* a client that connects and says nothing is dropped */
    raw_expect_closed(fx, "", 0, "handshake not finished in time");
    /* connecting to a closed port fails through on_close */
    tpeer *cli = &fx->cli;
    peer_init(fx, cli, "n1", WIRE_ROLE_NODE, &fx->secret, NULL);
    net_listener_close(fx->l);
    run_for(fx, 20);
    connect_client(fx, cli);
    assert_true(run_until(fx, &cli->closed, 1, 3000));
    assert_int_equal(cli->close_why, NET_CLOSE_IO);
    assert_true(has_log(cli, "connect"));
    /* bad addresses are refused up front */
    net_conn *c;
    assert_int_equal(net_connect(cli->ctx, "example.org", 1, 0, &handlers, cli, &c, &e), XE_INVAL);
    assert_null(c);
}

/* Backpressure: a small high-water mark toward a paused reader. */
#define BP_FRAME (16 * 1024)
#define BP_TOTAL 300

typedef struct pump {
    net_conn *c;
    unsigned char *payload;
    uint64_t sent;
    int busy;
    size_t max_queued;
} pump;

static void pump_run(pump *p)
{
    while (p->sent < BP_TOTAL) {
        wire_msg m = {.type = WIRE_BATCH};
        m.u.batch.stamp = p->sent;
        m.u.batch.nrows = 1;
        m.u.batch.rows.p = (const char *)p->payload;
        m.u.batch.rows.n = BP_FRAME;
        int rc = net_send_msg(p->c, &m);
        if (rc == XE_BUSY) {
            p->busy++;
            break;
        }
        assert_int_equal(rc, 0);
        p->sent++;
        if (net_queued(p->c) > p->max_queued) p->max_queued = net_queued(p->c);
    }
}

static pump *g_pump;
static void h_writable_pump(net_conn *c, void *ud)
{
    h_writable(c, ud);
    pump_run(g_pump);
}

static void test_backpressure(void **state)
{
    netfix *fx = *state;
    tpeer *cli = &fx->cli;
    const size_t hwm = 64 * 1024;
    /* small kernel buffers so the paused reader pushes back quickly */
    net_config scfg = {.sock_buf = 32 * 1024};
    restart_server(fx, &scfg);
    net_config cfg = {.send_hwm = hwm, .sock_buf = 32 * 1024};
    peer_init(fx, cli, "producer", WIRE_ROLE_NODE, &fx->secret, &cfg);
    fx->srv.pause_on_ready = 1;
    net_conn *c = connect_client(fx, cli);
    assert_true(run_until(fx, &cli->ready, 1, 3000));
    assert_true(run_until(fx, &fx->srv.ready, 1, 3000));
    assert_true(net_paused(fx->srv.conn));
    /* while data is refused, small control frames still pass (up to the slack) */

    net_handlers h = handlers;
    h.on_writable = h_writable_pump;
    net_set_handlers(c, &h, cli);
    pump p = {.c = c, .payload = malloc(BP_FRAME)};
    memset(p.payload, 'r', BP_FRAME);
    g_pump = &p;
    pump_run(&p);
    assert_true(p.busy >= 1); /* refused once the queue reached the mark */
    assert_true(p.sent < BP_TOTAL);
    unsigned char ack[28] = {0};
    assert_int_equal(net_send(c, WIRE_ACK, 0, ack, sizeof ack), XE_BUSY);
    assert_int_equal(net_send_ctl(c, WIRE_ACK, 0, ack, sizeof ack), 0);
    assert_int_equal(net_send_ctl(c, WIRE_BATCH, 0, p.payload, NET_CTL_MAX + 1), XE_INVAL);

    /* The reader stays paused: sending stalls (kernel buffers full), nothing
     * is delivered, and the queue stays under hwm + one frame. */
    uint64_t before;
    int stalled = 0;
    for (int i = 0; i < 40 && !stalled; i++) {
        before = p.sent;
        run_for(fx, 100);
        stalled = p.sent == before && p.sent < BP_TOTAL;
    }
    assert_true(stalled);
    assert_int_equal(fx->srv.frames, 0);
    assert_true(p.max_queued <= hwm + BP_FRAME + 64);
    assert_true(net_queued(c) <= hwm + BP_FRAME + 64);
    net_stats st;
    net_get_stats(c, &st);
    assert_true(st.queued_max <= hwm + BP_FRAME + 64);
    assert_true(st.mem < 2 * 1024 * 1024);
    /* the paused side's dead-peer timer is suspended; the connection lives */
    assert_int_equal(fx->srv.closed, 0);

    /* resume: everything arrives, in order, and the producer finishes */
    int writable_before = cli->writable;
    net_resume(fx->srv.conn);
    assert_true(run_until(fx, &fx->srv.batches, BP_TOTAL, 10000));
    assert_int_equal(fx->srv.next_seq, BP_TOTAL);
    assert_int_equal(p.sent, BP_TOTAL);
    assert_true(cli->writable > writable_before);
    assert_true(p.max_queued <= hwm + BP_FRAME + 64);

    /* pause/resume in the middle of a read buffer keeps order */
    fx->srv.batches = 0;
    fx->srv.next_seq = 0;
    p.sent = 0;
    net_pause(fx->srv.conn);
    pump_run(&p);
    run_for(fx, 50);
    for (int i = 0; i < 200 && fx->srv.batches < BP_TOTAL; i++) {
        net_resume(fx->srv.conn);
        run_for(fx, 2);
        net_pause(fx->srv.conn);
        run_for(fx, 1);
    }
    net_resume(fx->srv.conn);
    assert_true(run_until(fx, &fx->srv.batches, BP_TOTAL, 10000));
    assert_int_equal(fx->srv.next_seq, BP_TOTAL);
    free(p.payload);
    g_pump = NULL;
}

static void test_heartbeat_dead_peer(void **state)
{
    netfix *fx = *state;
    net_config cfg = {.heartbeat_ms = 40, .dead_ms = 250};
    restart_server(fx, &cfg);
    tpeer *cli = &fx->cli;
    peer_init(fx, cli, "n3", WIRE_ROLE_NODE, &fx->secret, &cfg);
    net_conn *c = connect_client(fx, cli);
    assert_true(run_until(fx, &cli->ready, 1, 3000));
    assert_true(run_until(fx, &fx->srv.ready, 1, 3000));

    /* an idle connection stays up on heartbeats alone */
    run_for(fx, 600);
    assert_int_equal(fx->srv.closed, 0);
    assert_int_equal(cli->closed, 0);
    net_stats st;
    net_get_stats(c, &st);
    assert_true(st.heartbeats_in >= 5);
    assert_true(st.heartbeats_out >= 5);

    /* the client goes silent (its frames are held for 10 s): the server
     * declares it dead within dead_ms + one heartbeat period */
    net_set_send_delay_ms(c, 10000);
    int64_t t0 = (int64_t)(clock_mono_ns() / 1000000);
    assert_true(run_until(fx, &fx->srv.closed, 1, 3000));
    int64_t took = fx->srv.closed_ms - t0;
    assert_int_equal(fx->srv.close_why, NET_CLOSE_DEAD);
    assert_true(took >= 200 && took < 1000);
    assert_true(has_log(&fx->srv, "nothing received for"));
    /* and the client learns the connection is gone */
    assert_true(run_until(fx, &cli->closed, 1, 3000));
}

static void test_connection_limit(void **state)
{
    netfix *fx = *state;
    net_config cfg = {.max_conns = 1};
    restart_server(fx, &cfg);
    tpeer *cli = &fx->cli;
    peer_init(fx, cli, "n1", WIRE_ROLE_NODE, &fx->secret, NULL);
    connect_client(fx, cli);
    assert_true(run_until(fx, &cli->ready, 1, 3000));
    tpeer second;
    peer_init(fx, &second, "n2", WIRE_ROLE_NODE, &fx->secret, NULL);
    connect_client(fx, &second);
    assert_true(run_until(fx, &second.closed, 1, 3000));
    assert_int_equal(second.ready, 0);
    assert_int_equal(second.close_why, NET_CLOSE_LIMIT);
    assert_true(has_log(&fx->srv, "refused: 1 connections already open"));
    assert_int_equal(cli->closed, 0); /* the first one is untouched */
    net_ctx_free(second.ctx);
    run_for(fx, 10);
    sbuf_fini(&second.log);
}

/* An owner may abort from inside on_frame; the connection is freed later. */
static void h_frame_abort(net_conn *c, const wire_frame *f, void *ud)
{
    h_frame(c, f, ud);
    net_abort(c, NET_CLOSE_PROTO, "owner rejects %s", wire_type_name(f->type));
    net_abort(c, NET_CLOSE_PROTO, "twice is harmless");
}

static void test_abort_inside_callback(void **state)
{
    netfix *fx = *state;
    tpeer *cli = &fx->cli;
    peer_init(fx, cli, "n4", WIRE_ROLE_NODE, &fx->secret, NULL);
    net_conn *c = connect_client(fx, cli);
    assert_true(run_until(fx, &fx->srv.ready, 1, 3000));
    assert_true(run_until(fx, &cli->ready, 1, 3000));
    net_handlers h = handlers;
    h.on_frame = h_frame_abort;
    net_set_handlers(fx->srv.conn, &h, &fx->srv);
    fx->srv.echo = 0;
    wire_msg m = {.type = WIRE_ACK};
    for (int i = 0; i < 5; i++) assert_int_equal(net_send_msg(c, &m), 0);
    assert_true(run_until(fx, &fx->srv.closed, 1, 3000));
    assert_int_equal(fx->srv.frames, 1); /* nothing delivered after the abort */
    assert_int_equal(fx->srv.close_why, NET_CLOSE_PROTO);
    assert_string_equal(fx->srv.close_msg, "owner rejects ACK");
    assert_true(run_until(fx, &cli->closed, 1, 3000));
    assert_true(cli->close_why == NET_CLOSE_PEER || cli->close_why == NET_CLOSE_IO);
}

/* ------------------------------------------------------------ catch-up after a recovery */

static int64_t min_of(const int64_t *v, int n)
{
    int64_t m = INT64_MAX;
    for (int i = 0; i < n; i++)
        if (v[i] < m) m = v[i];
    return m;
}

/* The case that delivered 815 rows twice: the old deployment's fast input
 * (task 0) had delivered windows up to 50 s while a throttled one (task 1)
 * held the sink's combined watermark at 20 s.  The new deployment's sink
 * passing 20 s on both inputs is not the end: task 0's windows up to 50 s
 * have not come again, and a table without them would let them through. */
static void test_catchup_per_input(void **state)
{
    (void)state;
    catchup c = {0};
    assert_false(catchup_done(&c, NULL, 0)); /* none on */
    const int64_t old[2] = {50000, 20000};
    assert_int_equal(catchup_begin(&c, old, 2, INT64_MIN), 0);
    assert_true(c.on);
    int64_t cur[2] = {INT64_MIN, INT64_MIN};
    assert_false(catchup_done(&c, cur, 2));
    cur[0] = 20000;
    cur[1] = 20000;
    /* the combined watermarks say "caught up" (the rule that failed) ... */
    assert_true(min_of(cur, 2) >= min_of(old, 2));
    /* ... but task 0 has not reproduced its windows up to 50 s */
    assert_false(catchup_done(&c, cur, 2));
    cur[1] = 90000;
    assert_false(catchup_done(&c, cur, 2));
    cur[0] = 49999;
    assert_false(catchup_done(&c, cur, 2));
    cur[0] = 50000;
    assert_true(catchup_done(&c, cur, 2));
    /* every input ended */
    const int64_t end[2] = {INT64_MAX, INT64_MAX};
    assert_true(catchup_done(&c, end, 2));
    catchup_fini(&c);
    assert_false(c.on);
}

/* A second failure during a catch-up waits for both; so does an earlier,
 * finished one (its targets are behind the new deployment anyway); a
 * re-planned query with another number of inputs waits for the largest. */
static void test_catchup_merge(void **state)
{
    (void)state;
    catchup c = {0};
    const int64_t first[3] = {30000, 10000, 20000};
    const int64_t second[3] = {15000, 40000, 15000};
    assert_int_equal(catchup_begin(&c, first, 3, INT64_MIN), 0);
    assert_int_equal(catchup_begin(&c, second, 3, INT64_MIN), 0);
    int64_t cur[3] = {30000, 40000, 19999};
    assert_false(catchup_done(&c, cur, 3));
    cur[2] = 20000;
    assert_true(catchup_done(&c, cur, 3));
    /* two inputs now: both past the largest target, 40 s */
    const int64_t two_lo[2] = {40000, 39999}, two_hi[2] = {40000, 41000};
    assert_false(catchup_done(&c, two_lo, 2));
    assert_true(catchup_done(&c, two_hi, 2));
    const int64_t other[2] = {45000, INT64_MIN};
    assert_int_equal(catchup_begin(&c, other, 2, INT64_MIN), 0);
    assert_int_equal(c.n, 1);
    const int64_t two[2] = {45000, 44999};
    assert_false(catchup_done(&c, two, 2));
    const int64_t one[1] = {45000};
    assert_true(catchup_done(&c, one, 1));
    catchup_fini(&c);
    /* no watermark heard before the failure: any will do */
    const int64_t none[2] = {INT64_MIN, INT64_MIN};
    assert_int_equal(catchup_begin(&c, none, 2, INT64_MIN), 0);
    const int64_t some[2] = {1, 1};
    assert_true(catchup_done(&c, some, 2));
    catchup_fini(&c);
    catchup_fini(&c); /* twice: a no-op */
}

/* The case that delivered 170 rows twice (round-robin, ft = upstream, a
 * second failure): the old deployment's tasks had sent the rows of the
 * window ending at 40 s, then the kill came before the watermarks that end
 * that step, so the sink had heard only 39 s from each.  Reaching 39 s is
 * not the end: the windows up to the delivered rows' time come first. */
static void test_catchup_rows_past_watermark(void **state)
{
    (void)state;
    catchup c = {0};
    const int64_t heard[3] = {39000, 39000, 38000};
    assert_int_equal(catchup_begin(&c, heard, 3, 40000), 0);
    int64_t cur[3] = {39000, 39000, 39000};
    assert_false(catchup_done(&c, cur, 3)); /* the rule that failed said done */
    cur[0] = cur[1] = 40000;
    assert_false(catchup_done(&c, cur, 3)); /* a task may have sent the rows: all must pass them */
    cur[2] = 40000;
    assert_true(catchup_done(&c, cur, 3));
    /* a watermark beyond the rows' time still counts */
    const int64_t later[3] = {45000, 39000, 39000};
    assert_int_equal(catchup_begin(&c, later, 3, 40000), 0);
    const int64_t at40[3] = {40000, 40000, 40000}, at45[3] = {45000, 40000, 40000};
    assert_false(catchup_done(&c, at40, 3));
    assert_true(catchup_done(&c, at45, 3));
    catchup_fini(&c);
    /* another number of tasks: the rows' time joins the largest target */
    const int64_t two[2] = {10000, 12000};
    assert_int_equal(catchup_begin(&c, two, 2, INT64_MIN), 0);
    const int64_t three[3] = {10000, 12000, 9000};
    assert_int_equal(catchup_begin(&c, three, 3, 20000), 0);
    const int64_t one_lo[1] = {19999}, one_hi[1] = {20000};
    assert_false(catchup_done(&c, one_lo, 1));
    assert_true(catchup_done(&c, one_hi, 1));
    catchup_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_type),
        cmocka_unit_test(test_catchup_per_input),
        cmocka_unit_test(test_catchup_rows_past_watermark),
        cmocka_unit_test(test_catchup_merge),
        cmocka_unit_test(test_fields_survive),
        cmocka_unit_test(test_stats_and_heartbeat_echo),
        cmocka_unit_test(test_meas_smoothing),
        cmocka_unit_test(test_meas_to_model),
        cmocka_unit_test(test_error_position),
        cmocka_unit_test(test_decoder_chunking),
        cmocka_unit_test(test_decoder_rejects),
        cmocka_unit_test(test_reader_writer),
        cmocka_unit_test(test_secret_file),
        cmocka_unit_test(test_hmac_proofs),
        cmocka_unit_test_setup_teardown(test_handshake_and_echo, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_rtt_min_ignores_held_heartbeats, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_role_change_mid_handshake, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_wrong_secret_refused, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_garbage_then_good_client, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_handshake_timeout, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_backpressure, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_heartbeat_dead_peer, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_connection_limit, setup_net, teardown_net),
        cmocka_unit_test_setup_teardown(test_abort_inside_callback, setup_net, teardown_net),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
