/* Unit tests for the wire schema (cluster/wire.def): every message type's
 * bytes against a golden encoding, and its decoder's answers to every
 * truncation and byte change against golden checksums.  The golden values
 * were made by the hand-written codec that wire.def replaced, so they prove
 * the table encodes and decodes exactly as it did.  A mismatch prints the
 * bytes and checksums the code makes now. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/wire.h"

/* ------------------------------------------------------------ one message of every type */

/* Sample i (0..NSAMPLES-1) of the golden set, every field set to something
 * recognisable; the layouts with variants (HEARTBEAT's echo, RESUME's and
 * REPLICA_ACK's slot counts) have one sample per variant. */
static void golden_msg(int i, wire_msg *m, sbuf *scratch)
{
    static const int types[] = {
        WIRE_HELLO,      WIRE_AUTH_CHALLENGE, WIRE_AUTH_RESPONSE, WIRE_AUTH_OK,  WIRE_HEARTBEAT,
        WIRE_HEARTBEAT,  WIRE_JOIN,           WIRE_MEMBERSHIP,    WIRE_DEPLOY,   WIRE_UNDEPLOY,
        WIRE_BATCH,      WIRE_ACK,            WIRE_CREDIT,        WIRE_STATE_DELTA, WIRE_SNAPSHOT,
        WIRE_QUERY,      WIRE_RESULT,         WIRE_ERROR,         WIRE_BYE,      WIRE_WATERMARK,
        WIRE_INGEST,     WIRE_RESUME,         WIRE_RESUME,        WIRE_REPLICA_ACK, WIRE_REPLICA_ACK,
        WIRE_TICK,       WIRE_CATALOG,        WIRE_TERM,          WIRE_ATTACH,   WIRE_LOSS,
        WIRE_LOGSHADOW,  WIRE_LOGSHIP,        WIRE_LOGACK,        WIRE_CHANNEL,  WIRE_CHACK,
        WIRE_CANCEL,     WIRE_STATS,
    };
    memset(m, 0, sizeof *m);
    m->type = (uint8_t)types[i];
    m->flags = (uint16_t)(0x0100 * i + 1);
    wire_wr w;
    wire_wr_init(&w, scratch);
    switch (i) {
    case 0:
        m->u.hello = (wire_hello){.vmin = 1, .vmax = 3, .role = WIRE_ROLE_COORDINATOR, .caps = 0xdeadbeef,
                                  .name = wire_str_of("node-1")};
        break;
    case 1:
        for (int k = 0; k < WIRE_NONCE_SIZE; k++) m->u.challenge.nonce[k] = (unsigned char)(k * 5 + 1);
        break;
    case 2:
        for (int k = 0; k < WIRE_MAC_SIZE; k++) m->u.response.mac[k] = (unsigned char)(255 - k * 3);
        break;
    case 3: break;
    case 4: m->u.heartbeat = (wire_heartbeat){.seq = 77, .sent_ms = -5}; break;
    case 5:
        m->u.heartbeat = (wire_heartbeat){.seq = 1ull << 50, .sent_ms = 1700000000123, .echo = 1,
                                          .echo_seq = 76, .held_us = 1234};
        break;
    case 6:
        m->u.join = (wire_join){.name = wire_str_of("n2"), .domain = wire_str_of("rack-a"),
                                .addr = wire_str_of("127.0.0.1:7102"), .slots = 4, .speed_milli = 1500};
        break;
    case 7:
        for (int k = 0; k < 2; k++) {
            wire_member mm = {.name = wire_str_of(k ? "n2" : "n1"), .domain = wire_str_of("rack-b"),
                              .addr = wire_str_of("127.0.0.1:1"), .state = (uint8_t)(WIRE_MEMBER_UP + k),
                              .slots = (uint32_t)k + 2, .speed_milli = 1000, .load_milli = 250,
                              .last_heartbeat_ms = -123456789 + k};
            wire_put_member(&w, &mm);
        }
        m->u.membership = (wire_membership){.epoch = 9, .count = 2,
                                            .entries = {scratch->p, (uint32_t)scratch->len}};
        break;
    case 8:
        m->u.deploy = (wire_deploy){.query_id = 1ull << 40, .task_id = 7, .epoch = 3,
                                    .plan = wire_str_of("plan bytes")};
        break;
    case 9: m->u.undeploy = (wire_undeploy){.query_id = 5, .epoch = 6}; break;
    case 10:
        m->u.batch = (wire_batch){.query_id = 11, .channel = 12, .epoch = 13, .stamp = -14, .nrows = 15,
                                  .rows = wire_str_of("rows-rows")};
        break;
    case 11: m->u.ack = (wire_ack){.query_id = 21, .channel = 22, .epoch = 23, .seq = 24}; break;
    case 12: m->u.credit = (wire_credit){.query_id = 31, .channel = 32, .batches = 33}; break;
    case 13:
    case 14:
        m->u.state = (wire_state){.query_id = 41, .task_id = 42, .epoch = 43, .chunk = (uint32_t)i,
                                  .data = wire_str_of("state")};
        break;
    case 15: m->u.query = (wire_query){.req_id = 51, .sql = wire_str_of("SELECT 1")}; break;
    case 16: m->u.result = (wire_result){.req_id = 61, .nrows = 2, .rows = wire_str_of("a|b\n")}; break;
    case 17: m->u.error = (wire_error){.req_id = 71, .code = XE_SYNTAX, .msg = wire_str_of("syntax error")}; break;
    case 18: m->u.bye.reason = wire_str_of("shutdown"); break;
    case 19: m->u.watermark = (wire_watermark){.query_id = 81, .channel = 82, .wm = -83, .tag = 84}; break;
    case 20:
        m->u.ingest = (wire_ingest){.req_id = 91, .stream = wire_str_of("bids"), .format = 1, .header = 2,
                                    .end = 1, .session = 92, .seq = 93, .line0 = 94, .delim = (uint8_t)';',
                                    .has_null = 1, .null_string = wire_str_of("NULL"),
                                    .data = wire_str_of("1,2\n")};
        break;
    case 21: m->u.resume = (wire_resume){.query_id = 101, .from = {102, UINT64_MAX}}; break;
    case 22: m->u.resume = (wire_resume){.query_id = 103, .nsrc = 5, .from = {104, 105, 106, 107, 108}}; break;
    case 23: m->u.replica_ack = (wire_replica_ack){.query_id = 111, .task = 112, .npos = 2, .pos = {113, 114}}; break;
    case 24:
        m->u.replica_ack = (wire_replica_ack){.query_id = 115, .task = 116, .npos = 4, .pos = {117, 118, 119, 120}};
        break;
    case 25: m->u.tick.stream = wire_str_of("s1"); break;
    case 26:
        m->u.catalog = (wire_catalog){.term = 121, .op = WIRE_CAT_DEL, .key = wire_str_of("stream/s"),
                                      .value = wire_str_of("v")};
        break;
    case 27:
        m->u.term = (wire_term){.term = 131, .kind = WIRE_TERM_GRANT, .name = wire_str_of("sb"),
                                .addr = wire_str_of("h:1")};
        break;
    case 28:
        m->u.attach = (wire_attach){.req_id = 141, .query = wire_str_of("q"), .wm = -142,
                                    .rows = wire_str_of("0123456789ab")};
        break;
    case 29: m->u.loss = (wire_loss){.query = 151, .batches = 152, .peer = wire_str_of("n7")}; break;
    case 30:
        m->u.logshadow = (wire_logshadow){.stream = wire_str_of("s"), .shadow = wire_str_of("n3"),
                                          .source = wire_str_of("h:2"), .flags = WIRE_LOGSHADOW_FED};
        break;
    case 31:
        m->u.logship = (wire_logship){.stream = wire_str_of("s"), .ship = 161, .log = wire_str_of("log"),
                                      .origins = wire_str_of("or"), .sessions = wire_str_of("ses")};
        break;
    case 32: m->u.logack = (wire_logack){.stream = wire_str_of("s"), .ship = 171, .end = 172}; break;
    case 33:
    case 34:
        m->u.channel = (wire_channel){.incarnation = 0x1122334455667788ull + (uint64_t)i, .start = 181};
        break;
    case 35: m->u.cancel.req_id = 191; break;
    case 36: {
        wire_stats_peer sp = {.name = wire_str_of("n2"), .rtt_us = 250};
        wire_put_stats_peer(&w, &sp);
        size_t at = scratch->len;
        static const uint64_t rows[2] = {10, 20}, bytes[2] = {640, 960};
        wire_stats_task st = {.qid = 5, .task = 1, .since_ms = -7, .cpu_ns = 1000000, .rows_in = 60,
                              .rows_out = 61, .bytes_out = 1600, .state_bytes = 4096, .ndest = 2,
                              .dest_rows = rows, .dest_bytes = bytes};
        wire_put_stats_task(&w, &st);
        size_t at2 = scratch->len;
        wire_stats_replica sr = {.qid = 5, .task = 1, .cpu_ns = 777, .bytes = 888};
        wire_put_stats_replica(&w, &sr);
        m->u.stats = (wire_stats){.wall_ms = 1700000000123, .capacity_milli = 250, .util_milli = 800,
                                  .cpu_ns = 42, .applied_bytes = 43, .applied_ns = 44,
                                  .npeers = 1, .peers = {scratch->p, (uint32_t)at},
                                  .ntasks = 1, .tasks = {scratch->p + at, (uint32_t)(at2 - at)},
                                  .nreplicas = 1, .replicas = {scratch->p + at2, (uint32_t)(scratch->len - at2)}};
        break;
    }
    }
    assert_int_equal(wire_wr_end(&w, NULL), 0);
}

#define NSAMPLES 37

/* ------------------------------------------------------------ the decoder's answers */

/* Fold one decode of payload p (n bytes) into crc: the return code, and the
 * error message or the payload encoded again from what was decoded. */
static uint32_t fold_decode(uint32_t crc, uint8_t type, uint16_t flags, const unsigned char *p, size_t n)
{
    wire_frame f = {.version = 1, .type = type, .flags = flags, .length = (uint32_t)n, .payload = p};
    wire_msg m;
    xerr e;
    xerr_clear(&e);
    int rc = wire_msg_get(&f, &m, &e);
    unsigned char b[4];
    be32_put(b, (uint32_t)rc);
    crc = crc32c(crc, b, 4);
    if (rc < 0) return crc32c(crc, e.msg, strlen(e.msg));
    sbuf again;
    sbuf_init(&again);
    rc = wire_msg_payload(&again, &m, &e);
    be32_put(b, (uint32_t)rc);
    crc = crc32c(crc, b, 4);
    crc = crc32c(crc, again.p, again.len);
    sbuf_fini(&again);
    return crc;
}

/* Every truncation of the payload, one trailing byte more, and each byte
 * set to 0x00, to 0xff and to 0x03 in turn. */
static uint32_t decode_answers(uint8_t type, uint16_t flags, const unsigned char *p, size_t n)
{
    uint32_t crc = 0;
    unsigned char *c = malloc(n + 1);
    assert_non_null(c);
    memcpy(c, p, n);
    for (size_t k = 0; k <= n; k++) crc = fold_decode(crc, type, flags, c, k);
    c[n] = 0x5a;
    crc = fold_decode(crc, type, flags, c, n + 1);
    static const unsigned char vals[3] = {0x00, 0xff, 0x03};
    for (size_t k = 0; k < n; k++) {
        for (int v = 0; v < 3; v++) {
            c[k] = vals[v];
            crc = fold_decode(crc, type, flags, c, n);
        }
        c[k] = p[k];
    }
    free(c);
    return crc;
}

/* ------------------------------------------------------------ golden values */

typedef struct golden {
    const char *hex; /* the whole frame, header and payload, version 1 */
    uint32_t answers; /* decode_answers over its payload */
} golden;

static const golden goldens[NSAMPLES] = {
    /* 0 HELLO */
    {"41524553010100010000000fe146aa4a010302deadbeef00066e6f64652d31",
     0xb3fe37fdu},
    /* 1 AUTH_CHALLENGE */
    {"4152455301020101000000208ae151e301060b10151a1f24292e33383d42474c51565b60656a6f74797e8388"
     "8d92979c",
     0x507a7fd5u},
    /* 2 AUTH_RESPONSE */
    {"415245530103020100000020b90a4debfffcf9f6f3f0edeae7e4e1dedbd8d5d2cfccc9c6c3c0bdbab7b4b1ae"
     "aba8a5a2",
     0x7047b1f1u},
    /* 3 AUTH_OK */
    {"415245530104030100000000f3a4a725",
     0xb5caaf65u},
    /* 4 HEARTBEAT */
    {"415245530105040100000010e93959fc000000000000004dfffffffffffffffb",
     0x44fed8c2u},
    /* 5 HEARTBEAT with echo */
    {"41524553010505010000001cc1827ed400040000000000000000018bcfe5687b000000000000004c000004d2",
     0x62819d1au},
    /* 6 JOIN */
    {"415245530106060100000024b8e2d87d00026e3200067261636b2d61000e3132372e302e302e313a37313032"
     "00000004000005dc",
     0x0bd5d7e5u},
    /* 7 MEMBERSHIP */
    {"415245530107070100000068d6c92dce00000000000000090000000200026e3100067261636b2d62000b3132"
     "372e302e302e313a310100000002000003e8000000fafffffffff8a432eb00026e3200067261636b2d62000b"
     "3132372e302e302e313a310200000003000003e8000000fafffffffff8a432ec",
     0x4ef5a2bfu},
    /* 8 DEPLOY */
    {"41524553010808010000001e7c24dae60000010000000000000000070000000000000003706c616e20627974"
     "6573",
     0x04824d65u},
    /* 9 UNDEPLOY */
    {"415245530109090100000010152d0d4900000000000000050000000000000006",
     0x47efad78u},
    /* 10 BATCH */
    {"41524553010a0a01000000296319d7f1000000000000000b0000000c000000000000000dfffffffffffffff2"
     "0000000f726f77732d726f7773",
     0x97164c80u},
    /* 11 ACK */
    {"41524553010b0b010000001cc97d017b00000000000000150000001600000000000000170000000000000018",
     0x27e0abb4u},
    /* 12 CREDIT */
    {"41524553010c0c010000001054c58dbe000000000000001f0000002000000021",
     0x08989fd2u},
    /* 13 STATE_DELTA */
    {"41524553010d0d010000001d3f89670b00000000000000290000002a000000000000002b0000000d73746174"
     "65",
     0xca73d439u},
    /* 14 SNAPSHOT */
    {"41524553010e0e010000001d3d2bda7000000000000000290000002a000000000000002b0000000e73746174"
     "65",
     0x08d19820u},
    /* 15 QUERY */
    {"41524553010f0f01000000145a78ce6400000000000000330000000853454c4543542031",
     0x0c138058u},
    /* 16 RESULT */
    {"4152455301101001000000100c93aaac000000000000003d00000002617c620a",
     0x1d9a7014u},
    /* 17 ERROR */
    {"41524553011111010000001af46ac5bd0000000000000047fffffffe000c73796e746178206572726f72",
     0x33b26ed8u},
    /* 18 BYE */
    {"41524553011212010000000a938f523a000873687574646f776e",
     0x973cf121u},
    /* 19 WATERMARK */
    {"41524553011313010000001cf8da895c000000000000005100000052ffffffffffffffad0000000000000054",
     0x2a0ad18cu},
    /* 20 INGEST */
    {"4152455301141401000000354a0c174c000000000000005b000462696473010201000000000000005c000000"
     "000000005d000000000000005e3b0100044e554c4c312c320a",
     0x264e7b49u},
    /* 21 RESUME, nsrc 0 */
    {"4152455301151501000000195fde898d0000000000000065000000000000000066ffffffffffffffff",
     0x3e686aeau},
    /* 22 RESUME, nsrc 5 */
    {"4152455301151601000000316907fa1f00000000000000670500000000000000680000000000000069000000"
     "000000006a000000000000006b000000000000006c",
     0x6abf0320u},
    /* 23 REPLICA_ACK, 2 slots */
    {"41524553011617010000001c6ce39a12000000000000006f0000007000000000000000710000000000000072",
     0xe8c5e1cbu},
    /* 24 REPLICA_ACK, 4 slots */
    {"41524553011618010000002ddb74353400000000000000730000007400000000000000750000000000000076"
     "0400000000000000770000000000000078",
     0x77add178u},
    /* 25 TICK */
    {"4152455301171901000000045297fdfc00027331",
     0xbfaf8c2du},
    /* 26 CATALOG */
    {"4152455301181a01000000187658ac7a000000000000007902000873747265616d2f730000000176",
     0x08f2bd8eu},
    /* 27 TERM */
    {"4152455301191b0100000012a2a7a5ce000000000000008303000273620003683a31",
     0x256a777fu},
    /* 28 ATTACH */
    {"41524553011a1c0100000023816438ab000000000000008d000171ffffffffffffff720000000c3031323334"
     "35363738396162",
     0x110b6962u},
    /* 29 LOSS */
    {"41524553011b1d01000000145ef6a6ee0000000000000097000000000000009800026e37",
     0x75dd8bd5u},
    /* 30 LOGSHADOW */
    {"41524553011c1e010000000d49e0f5dc00017300026e330003683a3201",
     0x78243725u},
    /* 31 LOGSHIP */
    {"41524553011d1f010000001fd5fda5ea00017300000000000000a1000000036c6f67000000026f7200000003"
     "736573",
     0x838d9720u},
    /* 32 LOGACK */
    {"41524553011e200100000013f10ac09600017300000000000000ab00000000000000ac",
     0x185c97fau},
    /* 33 CHANNEL */
    {"41524553011f2101000000106537c20b11223344556677a900000000000000b5",
     0x389e8f1au},
    /* 34 CHACK */
    {"415245530120220100000010b914848d11223344556677aa00000000000000b5",
     0x1c637450u},
    /* 35 CANCEL */
    {"41524553012123010000000857eaa57f00000000000000bf",
     0x864dd5c4u},
    /* 36 STATS */
    {"4152455301222401000000bc678729160000018bcfe5687b000000fa00000320000000000000002a00000000"
     "0000002b000000000000002c000000010000000800026e32000000fa000000010000005c0000000500000001"
     "fffffffffffffff900000000000f4240000000000000003c000000000000003d000000000000064000000000"
     "0000100000000002000000000000000a0000000000000280000000000000001400000000000003c000000001"
     "00000018000000050000000100000000000003090000000000000378",
     0x4b2c7e05u},
};

static void hex_of(sbuf *out, const unsigned char *p, size_t n)
{
    for (size_t k = 0; k < n; k++) sbuf_printf(out, "%02x", p[k]);
}

static void test_golden_encoding(void **state)
{
    (void)state;
    int bad = 0;
    for (int i = 0; i < NSAMPLES; i++) {
        sbuf scratch, frame, hex;
        wire_msg m;
        xerr e;
        sbuf_init(&scratch);
        sbuf_init(&frame);
        sbuf_init(&hex);
        golden_msg(i, &m, &scratch);
        assert_int_equal(wire_msg_encode(&frame, 1, &m, &e), 0);
        hex_of(&hex, (unsigned char *)frame.p, frame.len);
        uint32_t answers = decode_answers(m.type, m.flags, (unsigned char *)frame.p + WIRE_HDR_SIZE,
                                          frame.len - WIRE_HDR_SIZE);
        if (!goldens[i].hex || strcmp(hex.p, goldens[i].hex) != 0 || answers != goldens[i].answers) {
            fprintf(stderr, "sample %d (%s) differs; now:\n    {\"%s\", 0x%08xu},\n", i, wire_type_name(m.type),
                    hex.p, answers);
            bad++;
        }
        sbuf_fini(&scratch);
        sbuf_fini(&frame);
        sbuf_fini(&hex);
    }
    assert_int_equal(bad, 0);
}

/* ------------------------------------------------------------ the doc table */

/* wire.def as data: each field's kind and doc words, each record, each type. */
typedef struct fdoc {
    const char *kind;
    size_t n;
    const char *doc;
} fdoc;
typedef struct rdoc {
    const char *body;
    const fdoc *fields;
} rdoc;
typedef struct tdoc {
    int num;
    const char *name, *codec, *dir, *note;
    const fdoc *fields;
} tdoc;

#define WIRE_F(kind, name, doc) {#kind, 0, doc},
#define WIRE_FA(kind, name, n, doc) {#kind, n, doc},
#define WIRE_REC(body, fields) static const fdoc rec_##body[] = {fields {NULL, 0, NULL}};
#define WIRE_MSG(name, num, body, codec, dir, note, fields) static const fdoc body_##body[] = {fields {NULL, 0, NULL}};
#include "cluster/wire.def"

static const rdoc recs[] = {
#define WIRE_REC(body, fields) {#body, rec_##body},
#include "cluster/wire.def"
    {NULL, NULL},
};

static const tdoc types[] = {
#define WIRE_MSG(name, num, body, codec, dir, note, fields) {num, #name, #codec, dir, note, body_##body},
#define WIRE_SAME(name, num, body, dir, note) {num, #name, NULL, dir, note, body_##body},
#define WIRE_NONE(name, num, dir, note) {num, #name, "NONE", dir, note, NULL},
#include "cluster/wire.def"
};

static void doc_fields(sbuf *out, const fdoc *f);

/* A field's doc words, with "{record}" replaced by the record's fields. */
static void doc_words(sbuf *out, const char *s)
{
    const char *open;
    while ((open = strchr(s, '{')) != NULL) {
        const char *close = strchr(open, '}');
        assert_non_null(close);
        sbuf_add(out, s, (size_t)(open - s));
        const rdoc *r = recs;
        while (r->body && (strlen(r->body) != (size_t)(close - open - 1) ||
                           strncmp(r->body, open + 1, (size_t)(close - open - 1)) != 0))
            r++;
        if (!r->body) fail_msg("wire.def: no record %.*s", (int)(close - open - 1), open + 1);
        doc_fields(out, r->fields);
        s = close + 1;
    }
    sbuf_adds(out, s);
}

/* "kind doc" for each field, joined by ", ". */
static void doc_fields(sbuf *out, const fdoc *f)
{
    static const struct {
        const char *kind, *word;
    } words[] = {{"U8", "u8"},     {"U16", "u16"},   {"U32", "u32"},   {"U64", "u64"},
                 {"I64", "i64"},   {"I32", "i32"},   {"STR", "string"}, {"BLOB", "blob"},
                 {"REST", "rest:"}, {"U64S", "u64"}};
    for (int i = 0; f[i].kind; i++) {
        if (i) sbuf_adds(out, ", ");
        if (strcmp(f[i].kind, "BYTES") == 0) {
            sbuf_printf(out, "%zu-byte", f[i].n);
        } else {
            size_t k = 0;
            while (k < sizeof words / sizeof words[0] && strcmp(words[k].kind, f[i].kind) != 0) k++;
            if (k == sizeof words / sizeof words[0]) fail_msg("wire.def: unknown kind %s", f[i].kind);
            sbuf_adds(out, words[k].word);
        }
        sbuf_addc(out, ' ');
        doc_words(out, f[i].doc);
    }
}

/* docs/protocol.md's message table, as wire.def says it. */
static void doc_table(sbuf *out)
{
    sbuf_adds(out, "| # | type | direction | payload |\n|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const tdoc *t = &types[i];
        const char *codec = t->codec;
        for (size_t k = 0; !codec && k < i; k++) /* WIRE_SAME: its body's codec */
            if (types[k].fields == t->fields) codec = types[k].codec;
        assert_non_null(codec);
        sbuf_printf(out, "| %d | %s | %s | ", t->num, t->name, t->dir);
        if (strcmp(codec, "HAND") == 0) {
            doc_words(out, t->note);
        } else if (!t->fields) {
            doc_words(out, t->note[0] ? t->note : "empty");
        } else {
            doc_fields(out, t->fields);
            doc_words(out, t->note);
        }
        sbuf_adds(out, " |\n");
    }
}

#define DOC_BEGIN "<!-- wire.def: the table below is made by `build/tests/test_wire --doc`; do not edit it here -->\n"
#define DOC_END "<!-- wire.def: end -->\n"

/* The message table of docs/protocol.md is the one wire.def makes, and
 * every type from 1 to WIRE_TYPE_MAX has a name. */
static void test_doc_table(void **state)
{
    (void)state;
    for (int t = 1; t <= WIRE_TYPE_MAX; t++) {
        assert_non_null(wire_type_name(t));
        assert_string_not_equal(wire_type_name(t), "?");
    }
    assert_int_equal(sizeof types / sizeof types[0], WIRE_TYPE_MAX);
    FILE *f = fopen("../docs/protocol.md", "r"); /* make unit runs the tests in tests/ */
    if (!f) f = fopen("docs/protocol.md", "r");
    assert_non_null(f);
    sbuf doc, want;
    sbuf_init(&doc);
    sbuf_init(&want);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sbuf_add(&doc, buf, n);
    fclose(f);
    doc_table(&want);
    const char *a = doc.len ? strstr(doc.p, DOC_BEGIN) : NULL;
    const char *b = a ? strstr(a, DOC_END) : NULL;
    if (!a || !b) fail_msg("docs/protocol.md: no lines %s and %s around the message table", DOC_BEGIN, DOC_END);
    a += strlen(DOC_BEGIN);
    if ((size_t)(b - a) != want.len || memcmp(a, want.p, want.len) != 0) {
        fprintf(stderr, "docs/protocol.md's message table is not wire.def's; it should be:\n%s", want.p);
        fail_msg("docs/protocol.md and cluster/wire.def differ: `build/tests/test_wire --doc` prints the table");
    }
    sbuf_fini(&doc);
    sbuf_fini(&want);
}

/* `test_wire --doc` prints the table to paste into docs/protocol.md. */
int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--doc") == 0) {
        sbuf t;
        sbuf_init(&t);
        doc_table(&t);
        fputs(t.p, stdout);
        sbuf_fini(&t);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_encoding),
        cmocka_unit_test(test_doc_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
