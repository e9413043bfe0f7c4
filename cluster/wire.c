/*
 * wire.c: frame encoding, the incremental frame decoder, payload readers and
 * writers, and the typed message codec, made from wire.def (but for the few
 * irregular layouts, written by hand here).  See wire.h and docs/protocol.md.
 *
 * Invariants of the decoder: it never buffers more than max_payload bytes;
 * it judges magic after 4 bytes and the rest of the header after 16, before
 * reading any payload; a complete frame that sits whole in the caller's chunk
 * is handed out without a copy.  Pure code: callable from any thread, but one
 * decoder belongs to one connection.
 */
#include "cluster/wire.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Free a reassembly buffer above this size once its frame is delivered, so
 * one big frame does not pin its memory for the connection's lifetime. */
#define WIRE_DEC_KEEP (256u * 1024)

const char *wire_role_name(int role)
{
    switch (role) {
    case WIRE_ROLE_NODE: return "node";
    case WIRE_ROLE_COORDINATOR: return "coordinator";
    case WIRE_ROLE_CLIENT: return "client";
    }
    return "?";
}

int wire_name_ok(const char *p, size_t n)
{
    if (n == 0 || n > WIRE_NAME_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (!isalnum(ch) && ch != '.' && ch != '_' && ch != '-' && ch != ':') return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ frames */

static uint32_t frame_crc(const unsigned char *hdr, const void *payload, size_t len)
{
    uint32_t c = crc32c(0, hdr, 12);
    return len ? crc32c(c, payload, len) : c;
}

void wire_header_put(unsigned char hdr[WIRE_HDR_SIZE], uint8_t version, uint8_t type,
                     uint16_t flags, const void *payload, uint32_t len)
{
    be32_put(hdr, WIRE_MAGIC);
    hdr[4] = version;
    hdr[5] = type;
    be16_put(hdr + 6, flags);
    be32_put(hdr + 8, len);
    be32_put(hdr + 12, frame_crc(hdr, payload, len));
}

int wire_encode(sbuf *out, uint8_t version, uint8_t type, uint16_t flags, const void *payload,
                size_t len)
{
    if (len > WIRE_MAX_PAYLOAD) return XE_INVAL;
    unsigned char hdr[WIRE_HDR_SIZE];
    wire_header_put(hdr, version, type, flags, payload, (uint32_t)len);
    if (sbuf_reserve(out, WIRE_HDR_SIZE + len)) return XE_NOMEM;
    sbuf_add(out, hdr, WIRE_HDR_SIZE);
    return sbuf_add(out, payload, len);
}

int wire_err_code(int err)
{
    switch (err) {
    case WIRE_OK: return 0;
    case WIRE_EVERSION: return XE_VERSION;
    case WIRE_ECRC: return XE_CORRUPT;
    }
    return XE_PROTO;
}

void wire_dec_init(wire_dec *d, uint32_t max_payload)
{
    memset(d, 0, sizeof *d);
    d->vmin = WIRE_VERSION_MIN;
    d->vmax = WIRE_VERSION_MAX;
    wire_dec_set_max(d, max_payload);
}

void wire_dec_fini(wire_dec *d)
{
    if (!d) return;
    free(d->buf);
    d->buf = NULL;
    d->buf_cap = d->buf_got = 0;
}

void wire_dec_set_versions(wire_dec *d, uint8_t vmin, uint8_t vmax)
{
    d->vmin = vmin;
    d->vmax = vmax;
}

void wire_dec_set_max(wire_dec *d, uint32_t max_payload)
{
    d->max_payload = (max_payload == 0 || max_payload > WIRE_MAX_PAYLOAD) ? WIRE_MAX_PAYLOAD
                                                                          : max_payload;
}

int wire_dec_midframe(const wire_dec *d) { return d->hdr_got > 0; }
size_t wire_dec_mem(const wire_dec *d) { return sizeof *d + d->buf_cap; }

static int dec_fail(wire_dec *d, int err, xerr *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int dec_fail(wire_dec *d, int err, xerr *e, const char *fmt, ...)
{
    d->err = err;
    va_list ap;
    va_start(ap, fmt);
    xerr_setv(e, wire_err_code(err), fmt, ap);
    va_end(ap);
    return wire_err_code(err);
}

/* Printable rendering of 4 bytes, for the bad-magic message. */
static void show4(const unsigned char *p, char out[5])
{
    for (int i = 0; i < 4; i++) out[i] = (p[i] >= 0x20 && p[i] < 0x7f) ? (char)p[i] : '.';
    out[4] = 0;
}

static int check_magic(wire_dec *d, xerr *e)
{
    uint32_t m = be32_get(d->hdr);
    if (m == WIRE_MAGIC) return 0;
    char s[5];
    show4(d->hdr, s);
    return dec_fail(d, WIRE_EMAGIC, e,
                    "bad magic 0x%08x (\"%s\") at frame %llu: not an Ares wire peer", m, s,
                    (unsigned long long)d->frames);
}

static int check_header(wire_dec *d, xerr *e)
{
    const unsigned char *h = d->hdr;
    if (h[4] < d->vmin || h[4] > d->vmax)
        return dec_fail(d, WIRE_EVERSION, e,
                        "unsupported wire version %u at frame %llu (accepting %u..%u)", h[4],
                        (unsigned long long)d->frames, d->vmin, d->vmax);
    if (h[5] < 1 || h[5] > WIRE_TYPE_MAX)
        return dec_fail(d, WIRE_ETYPE, e, "unknown frame type %u at frame %llu", h[5],
                        (unsigned long long)d->frames);
    d->length = be32_get(h + 8);
    if (d->length > d->max_payload)
        return dec_fail(d, WIRE_ETOOBIG, e,
                        "%s frame of %lu payload bytes exceeds the limit of %lu",
                        wire_type_name(h[5]), (unsigned long)d->length,
                        (unsigned long)d->max_payload);
    return 0;
}

int wire_dec_feed(wire_dec *d, const void *p, size_t n, size_t *used, wire_frame_cb cb,
                  void *ud, xerr *e)
{
    const unsigned char *in = p;
    size_t off = 0;
    int rc = 0;
    *used = 0;
    if (d->err)
        return xerr_set(e, wire_err_code(d->err), "decoder already failed (error %d)", d->err);
    while (off < n) {
        if (d->hdr_got < WIRE_HDR_SIZE) {
            /* Take the magic alone first, so garbage is refused after 4 bytes. */
            size_t k = (d->hdr_got < 4 ? 4 : WIRE_HDR_SIZE) - d->hdr_got;
            if (k > n - off) k = n - off;
            memcpy(d->hdr + d->hdr_got, in + off, k);
            d->hdr_got += k;
            off += k;
            if (d->hdr_got == 4 && (rc = check_magic(d, e)) < 0) goto out;
            if (d->hdr_got < WIRE_HDR_SIZE) continue;
            if ((rc = check_header(d, e)) < 0) goto out;
        }
        const unsigned char *payload;
        if (d->buf_got == 0 && n - off >= d->length) {
            payload = in + off; /* whole in this chunk: no copy */
            off += d->length;
        } else {
            size_t k = d->length - d->buf_got;
            if (k > n - off) k = n - off;
            if (k == 0) break; /* header ended the chunk: wait for payload */
            if (d->buf_cap < d->buf_got + k) {
                /* Grow with what has arrived (doubling, capped at the frame
                 * length), so a claimed length costs nothing until sent. */
                size_t cap = d->buf_cap ? d->buf_cap * 2 : 4096;
                if (cap < d->buf_got + k) cap = d->buf_got + k;
                if (cap > d->length) cap = d->length;
                unsigned char *nb = realloc(d->buf, cap);
                if (!nb) {
                    rc = xerr_set(e, XE_NOMEM, "no memory for a %lu-byte frame",
                                  (unsigned long)d->length);
                    d->err = WIRE_ECALLER;
                    goto out;
                }
                d->buf = nb;
                d->buf_cap = cap;
            }
            memcpy(d->buf + d->buf_got, in + off, k);
            d->buf_got += k;
            off += k;
            if (d->buf_got < d->length) break;
            payload = d->buf;
        }
        uint32_t want = be32_get(d->hdr + 12), got = frame_crc(d->hdr, payload, d->length);
        if (want != got) {
            rc = dec_fail(d, WIRE_ECRC, e,
                          "CRC mismatch on %s frame %llu (%lu bytes): header 0x%08x, computed "
                          "0x%08x",
                          wire_type_name(d->hdr[5]), (unsigned long long)d->frames,
                          (unsigned long)d->length, want, got);
            goto out;
        }
        wire_frame f = {.version = d->hdr[4],
                        .type = d->hdr[5],
                        .flags = be16_get(d->hdr + 6),
                        .length = d->length,
                        .payload = payload};
        d->hdr_got = 0;
        d->buf_got = 0;
        d->frames++;
        int cr = cb(ud, &f);
        if (d->buf_cap > WIRE_DEC_KEEP) {
            free(d->buf);
            d->buf = NULL;
            d->buf_cap = 0;
        }
        if (cr < 0) {
            d->err = WIRE_ECALLER;
            rc = cr;
            if (e && e->code != cr)
                xerr_set(e, cr, "%s frame refused by its receiver", wire_type_name(f.type));
            goto out;
        }
        if (cr == WIRE_STOP) break;
    }
out:
    *used = off;
    return rc;
}

int wire_dec_finish(wire_dec *d, xerr *e)
{
    if (d->err) return wire_err_code(d->err);
    if (!d->hdr_got) return 0;
    if (d->hdr_got < WIRE_HDR_SIZE)
        return dec_fail(d, WIRE_ETRUNC, e, "input ended inside a frame header (%lu of %d bytes)",
                        (unsigned long)d->hdr_got, WIRE_HDR_SIZE);
    return dec_fail(d, WIRE_ETRUNC, e, "input ended inside a %s frame (%lu of %lu payload bytes)",
                    wire_type_name(d->hdr[5]), (unsigned long)d->buf_got,
                    (unsigned long)d->length);
}

/* ------------------------------------------------------------ payload codec */

wire_str wire_str_of(const char *s)
{
    wire_str v = {s ? s : "", s ? (uint32_t)strlen(s) : 0};
    return v;
}

void wire_wr_init(wire_wr *w, sbuf *b)
{
    w->b = b;
    w->err = 0;
}

void wire_put_raw(wire_wr *w, const void *p, size_t n)
{
    if (!w->err && sbuf_add(w->b, p, n)) w->err = XE_NOMEM;
}

void wire_put_u8(wire_wr *w, uint8_t v) { wire_put_raw(w, &v, 1); }

void wire_put_u16(wire_wr *w, uint16_t v)
{
    unsigned char b[2];
    be16_put(b, v);
    wire_put_raw(w, b, 2);
}

void wire_put_u32(wire_wr *w, uint32_t v)
{
    unsigned char b[4];
    be32_put(b, v);
    wire_put_raw(w, b, 4);
}

void wire_put_u64(wire_wr *w, uint64_t v)
{
    unsigned char b[8];
    be64_put(b, v);
    wire_put_raw(w, b, 8);
}

void wire_put_i64(wire_wr *w, int64_t v) { wire_put_u64(w, (uint64_t)v); }

void wire_put_str(wire_wr *w, const char *p, size_t n)
{
    if (n > UINT16_MAX) {
        if (!w->err) w->err = XE_INVAL;
        return;
    }
    wire_put_u16(w, (uint16_t)n);
    wire_put_raw(w, p, n);
}

void wire_put_blob(wire_wr *w, const void *p, size_t n)
{
    if (n > WIRE_MAX_PAYLOAD) {
        if (!w->err) w->err = XE_INVAL;
        return;
    }
    wire_put_u32(w, (uint32_t)n);
    wire_put_raw(w, p, n);
}

int wire_wr_end(wire_wr *w, xerr *e)
{
    if (!w->err && w->b->len > WIRE_MAX_PAYLOAD) w->err = XE_INVAL;
    if (w->err == XE_NOMEM) return xerr_set(e, XE_NOMEM, "out of memory encoding a payload");
    if (w->err) return xerr_set(e, w->err, "payload field or payload too long");
    return 0;
}

void wire_rd_init(wire_rd *r, const void *p, size_t n)
{
    r->p = p;
    r->len = n;
    r->off = 0;
    r->err = 0;
    r->what = NULL;
}

size_t wire_rd_left(const wire_rd *r) { return r->err ? 0 : r->len - r->off; }

/* Take n bytes, or fail the reader for good. */
static const unsigned char *rd_take(wire_rd *r, size_t n, const char *what)
{
    if (r->err) return NULL;
    if (n > r->len - r->off) {
        r->err = XE_PROTO;
        r->what = what;
        return NULL;
    }
    const unsigned char *q = r->p + r->off;
    r->off += n;
    return q;
}

int wire_get_raw(wire_rd *r, void *dst, size_t n)
{
    const unsigned char *q = rd_take(r, n, "bytes");
    if (!q) {
        memset(dst, 0, n);
        return r->err;
    }
    memcpy(dst, q, n);
    return 0;
}

int wire_get_u8(wire_rd *r, uint8_t *v)
{
    const unsigned char *q = rd_take(r, 1, "u8");
    *v = q ? q[0] : 0;
    return r->err;
}

int wire_get_u16(wire_rd *r, uint16_t *v)
{
    const unsigned char *q = rd_take(r, 2, "u16");
    *v = q ? be16_get(q) : 0;
    return r->err;
}

int wire_get_u32(wire_rd *r, uint32_t *v)
{
    const unsigned char *q = rd_take(r, 4, "u32");
    *v = q ? be32_get(q) : 0;
    return r->err;
}

int wire_get_u64(wire_rd *r, uint64_t *v)
{
    const unsigned char *q = rd_take(r, 8, "u64");
    *v = q ? be64_get(q) : 0;
    return r->err;
}

int wire_get_i64(wire_rd *r, int64_t *v)
{
    uint64_t u;
    int rc = wire_get_u64(r, &u);
    *v = (int64_t)u;
    return rc;
}

int wire_get_str(wire_rd *r, wire_str *s)
{
    uint16_t n;
    wire_get_u16(r, &n);
    const unsigned char *q = rd_take(r, n, "string");
    s->p = q ? (const char *)q : "";
    s->n = q ? n : 0;
    return r->err;
}

int wire_get_blob(wire_rd *r, wire_str *s)
{
    uint32_t n;
    wire_get_u32(r, &n);
    const unsigned char *q = rd_take(r, n, "blob");
    s->p = q ? (const char *)q : "";
    s->n = q ? n : 0;
    return r->err;
}

int wire_get_rest(wire_rd *r, wire_str *s)
{
    size_t n = wire_rd_left(r);
    const unsigned char *q = rd_take(r, n, "rest");
    s->p = q ? (const char *)q : "";
    s->n = q ? (uint32_t)n : 0;
    return r->err;
}

int wire_rd_end(wire_rd *r, int strict, xerr *e)
{
    if (r->err)
        return xerr_set(e, r->err, "truncated payload: %s at offset %lu of %lu",
                        r->what ? r->what : "field", (unsigned long)r->off,
                        (unsigned long)r->len);
    if (strict && r->off != r->len)
        return xerr_set(e, XE_PROTO, "%lu unexpected trailing payload bytes",
                        (unsigned long)(r->len - r->off));
    return 0;
}

/* ------------------------------------------------------------ messages */

/* The codec comes from wire.def: each kind of field is written and read by
 * one of these, and each body of a TABLE or CHECK type gets a msg_put_<body>
 * and a msg_get_<body> made of its fields (a CHECK's get then calls its
 * msg_check_<body>); a HAND body's are written below.  msg_get_<body>
 * returns a negative code to refuse the payload with its own message, and
 * otherwise leaves the reader's error to wire_msg_get.  A record gets the
 * same, public: wire_put_<body> and wire_get_<body>. */
#define PUT_U8(w, v) wire_put_u8(w, v)
#define PUT_U16(w, v) wire_put_u16(w, v)
#define PUT_U32(w, v) wire_put_u32(w, v)
#define PUT_U64(w, v) wire_put_u64(w, v)
#define PUT_I64(w, v) wire_put_i64(w, v)
#define PUT_I32(w, v) wire_put_u32(w, (uint32_t)(v))
#define PUT_STR(w, v) wire_put_str(w, (v).p, (v).n)
#define PUT_BLOB(w, v) wire_put_blob(w, (v).p, (v).n)
#define PUT_REST(w, v) wire_put_raw(w, (v).p, (v).n)
#define PUT_BYTES(w, v, n) wire_put_raw(w, v, n)
#define GET_U8(r, v) wire_get_u8(r, &(v))
#define GET_U16(r, v) wire_get_u16(r, &(v))
#define GET_U32(r, v) wire_get_u32(r, &(v))
#define GET_U64(r, v) wire_get_u64(r, &(v))
#define GET_I64(r, v) wire_get_i64(r, &(v))
#define GET_I32(r, v)                                                                              \
    do {                                                                                           \
        uint32_t u_;                                                                               \
        wire_get_u32(r, &u_);                                                                      \
        (v) = (int32_t)u_;                                                                         \
    } while (0)
#define GET_STR(r, v) wire_get_str(r, &(v))
#define GET_BLOB(r, v) wire_get_blob(r, &(v))
#define GET_REST(r, v) wire_get_rest(r, &(v))
#define GET_BYTES(r, v, n) wire_get_raw(r, v, n)

#define MSG_PUT_TABLE(body, fields)                                                                \
    static void msg_put_##body(wire_wr *w, const wire_##body *b) { fields }
#define MSG_PUT_CHECK MSG_PUT_TABLE
#define MSG_PUT_HAND(body, fields)
#define WIRE_REC(body, fields)                                                                     \
    void wire_put_##body(wire_wr *w, const wire_##body *b) { fields }
#define WIRE_MSG(name, num, body, codec, dir, note, fields) MSG_PUT_##codec(body, fields)
#define WIRE_F(kind, name, doc) PUT_##kind(w, b->name);
#define WIRE_FA(kind, name, n, doc) PUT_##kind(w, b->name, n);
#include "cluster/wire.def"

/* ---- the CHECKs, after a decode that read every field */

/* Walk the entries now, so that a receiver may iterate without checks. */
static int msg_check_membership(const wire_membership *b, xerr *e)
{
    wire_rd er;
    wire_member mm;
    wire_rd_init(&er, b->entries.p, b->entries.n);
    for (uint32_t i = 0; i < b->count && !er.err; i++) wire_get_member(&er, &mm);
    return wire_rd_end(&er, 1, e);
}

static int msg_check_catalog(const wire_catalog *b, xerr *e)
{
    if (b->op < WIRE_CAT_PUT || b->op > WIRE_CAT_END)
        return xerr_set(e, XE_PROTO, "CATALOG: unknown op %u", b->op);
    return 0;
}

static int msg_check_term(const wire_term *b, xerr *e)
{
    if (b->kind < WIRE_TERM_ANNOUNCE || b->kind > WIRE_TERM_REFUSE)
        return xerr_set(e, XE_PROTO, "TERM: unknown kind %u", b->kind);
    return 0;
}

static int msg_check_attach(const wire_attach *b, xerr *e)
{
    if (b->rows.n % 12)
        return xerr_set(e, XE_PROTO, "ATTACH: row list of %u bytes is not a run of 12-byte entries",
                        b->rows.n);
    return 0;
}

/* The replicas' size, then every peer and task walked now, so that a
 * receiver may iterate without checks. */
static int msg_check_stats(const wire_stats *b, xerr *e)
{
    if ((uint64_t)b->nreplicas * 24 != b->replicas.n)
        return xerr_set(e, XE_PROTO, "STATS: %u replicas in %u bytes (24 each)", b->nreplicas, b->replicas.n);
    wire_rd er;
    wire_stats_peer sp;
    wire_stats_task st;
    wire_rd_init(&er, b->peers.p, b->peers.n);
    for (uint32_t i = 0; i < b->npeers && !er.err; i++) wire_get_stats_peer(&er, &sp);
    int rc = wire_rd_end(&er, 1, e);
    if (rc < 0) return rc;
    wire_rd_init(&er, b->tasks.p, b->tasks.n);
    for (uint32_t i = 0; i < b->ntasks && !er.err; i++) wire_get_stats_task(&er, &st);
    return wire_rd_end(&er, 1, e);
}

#define MSG_GET_TABLE(body, fields)                                                                \
    static int msg_get_##body(wire_rd *r, wire_##body *b, xerr *e)                                 \
    {                                                                                              \
        fields return 0;                                                                           \
    }
#define MSG_GET_CHECK(body, fields)                                                                \
    static int msg_get_##body(wire_rd *r, wire_##body *b, xerr *e)                                 \
    {                                                                                              \
        fields return r->err ? 0 : msg_check_##body(b, e);                                         \
    }
#define MSG_GET_HAND(body, fields)
#define WIRE_REC(body, fields)                                                                     \
    int wire_get_##body(wire_rd *r, wire_##body *b)                                                \
    {                                                                                              \
        fields return r->err;                                                                      \
    }
#define WIRE_MSG(name, num, body, codec, dir, note, fields) MSG_GET_##codec(body, fields)
#define WIRE_F(kind, name, doc) GET_##kind(r, b->name);
#define WIRE_FA(kind, name, n, doc) GET_##kind(r, b->name, n);
#include "cluster/wire.def"

/* ---- the HAND layouts */

/* HEARTBEAT: the echo only when there is one; a rest of exactly its 12
 * bytes is the echo, any other rest is trailing garbage. */
static void msg_put_heartbeat(wire_wr *w, const wire_heartbeat *b)
{
    wire_put_u64(w, b->seq);
    wire_put_i64(w, b->sent_ms);
    if (b->echo) {
        wire_put_u64(w, b->echo_seq);
        wire_put_u32(w, b->held_us);
    }
}

static int msg_get_heartbeat(wire_rd *r, wire_heartbeat *b, xerr *e)
{
    wire_get_u64(r, &b->seq);
    wire_get_i64(r, &b->sent_ms);
    if (!r->err && wire_rd_left(r) == 12) {
        b->echo = 1;
        wire_get_u64(r, &b->echo_seq);
        wire_get_u32(r, &b->held_us);
    }
    return 0;
}

/* RESUME: from[0] and from[1] always, then the slots past them. */
static void msg_put_resume(wire_wr *w, const wire_resume *b)
{
    wire_put_u64(w, b->query_id);
    wire_put_u8(w, b->nsrc);
    for (int k = 0; k < 2 || (k < b->nsrc && k < WIRE_MAX_SRC); k++) wire_put_u64(w, b->from[k]);
}

static int msg_get_resume(wire_rd *r, wire_resume *b, xerr *e)
{
    wire_get_u64(r, &b->query_id);
    wire_get_u8(r, &b->nsrc);
    if (!r->err && b->nsrc > WIRE_MAX_SRC) return xerr_set(e, XE_PROTO, "RESUME names %u sources", b->nsrc);
    for (int k = 0; k < 2 || k < b->nsrc; k++) wire_get_u64(r, &b->from[k]);
    return 0;
}

/* REPLICA_ACK: pos[0] and pos[1], then (past 2 slots only) u8 npos and
 * the slots past the first two. */
static void msg_put_replica_ack(wire_wr *w, const wire_replica_ack *b)
{
    wire_put_u64(w, b->query_id);
    wire_put_u32(w, b->task);
    wire_put_u64(w, b->pos[0]);
    wire_put_u64(w, b->pos[1]);
    if (b->npos > 2) {
        wire_put_u8(w, b->npos);
        for (int k = 2; k < b->npos && k < WIRE_MAX_SRC; k++) wire_put_u64(w, b->pos[k]);
    }
}

static int msg_get_replica_ack(wire_rd *r, wire_replica_ack *b, xerr *e)
{
    wire_get_u64(r, &b->query_id);
    wire_get_u32(r, &b->task);
    wire_get_u64(r, &b->pos[0]);
    wire_get_u64(r, &b->pos[1]);
    b->npos = 2;
    if (!r->err && r->off < r->len) {
        wire_get_u8(r, &b->npos);
        if (!r->err && (b->npos <= 2 || b->npos > WIRE_MAX_SRC))
            return xerr_set(e, XE_PROTO, "REPLICA_ACK names %u positions", b->npos);
        for (int k = 2; k < b->npos; k++) wire_get_u64(r, &b->pos[k]);
    }
    return 0;
}

/* ---- STATS tasks, by hand: their destinations vary in number */

void wire_put_stats_task(wire_wr *w, const wire_stats_task *t)
{
    wire_put_u32(w, t->qid);
    wire_put_u32(w, t->task);
    wire_put_i64(w, t->since_ms);
    wire_put_u64(w, t->cpu_ns);
    wire_put_u64(w, t->rows_in);
    wire_put_u64(w, t->rows_out);
    wire_put_u64(w, t->bytes_out);
    wire_put_u64(w, t->state_bytes);
    wire_put_u32(w, t->ndest);
    for (uint32_t i = 0; i < t->ndest; i++) {
        wire_put_u64(w, t->dest_rows ? t->dest_rows[i] : 0);
        wire_put_u64(w, t->dest_bytes ? t->dest_bytes[i] : 0);
    }
}

int wire_get_stats_task(wire_rd *r, wire_stats_task *t)
{
    memset(t, 0, sizeof *t);
    wire_get_u32(r, &t->qid);
    wire_get_u32(r, &t->task);
    wire_get_i64(r, &t->since_ms);
    wire_get_u64(r, &t->cpu_ns);
    wire_get_u64(r, &t->rows_in);
    wire_get_u64(r, &t->rows_out);
    wire_get_u64(r, &t->bytes_out);
    wire_get_u64(r, &t->state_bytes);
    if (wire_get_u32(r, &t->ndest) < 0) return r->err;
    if (t->ndest > WIRE_STATS_MAX_DEST) {
        r->err = XE_PROTO;
        r->what = "STATS task destinations";
        return r->err;
    }
    t->dest.n = t->ndest * 16u;
    const unsigned char *q = rd_take(r, t->dest.n, "STATS task destinations");
    t->dest.p = (const char *)q;
    if (!q) t->dest.n = t->ndest = 0;
    return r->err;
}

void wire_stats_dest(const wire_stats_task *t, uint32_t i, uint64_t *rows, uint64_t *bytes)
{
    const unsigned char *p = (const unsigned char *)t->dest.p + (size_t)i * 16;
    *rows = i < t->ndest ? be64_get(p) : 0;
    *bytes = i < t->ndest ? be64_get(p + 8) : 0;
}

/* ---- by type */

static const char *const type_names[] = {
#define WIRE_MSG(name, num, body, codec, dir, note, fields) [num] = #name,
#define WIRE_SAME(name, num, body, dir, note) [num] = #name,
#define WIRE_NONE(name, num, dir, note) [num] = #name,
#include "cluster/wire.def"
};

const char *wire_type_name(int type)
{
    if (type < 1 || type > WIRE_TYPE_MAX) return "?";
    return type_names[type];
}

void wire_msg_put(wire_wr *w, const wire_msg *m)
{
    switch (m->type) {
#define WIRE_MSG(name, num, body, codec, dir, note, fields)                                       \
    case WIRE_##name: msg_put_##body(w, &m->u.body); break;
#define WIRE_SAME(name, num, body, dir, note) WIRE_MSG(name, num, body, , dir, note, )
#define WIRE_NONE(name, num, dir, note)                                                            \
    case WIRE_##name: break;
#include "cluster/wire.def"
    default:
        if (!w->err) w->err = XE_INVAL;
    }
}

int wire_msg_get(const wire_frame *f, wire_msg *m, xerr *e)
{
    wire_rd r;
    int rc;
    wire_rd_init(&r, f->payload, f->length);
    memset(m, 0, sizeof *m);
    m->type = f->type;
    m->flags = f->flags;
    switch (f->type) {
#define WIRE_MSG(name, num, body, codec, dir, note, fields)                                       \
    case WIRE_##name:                                                                              \
        if ((rc = msg_get_##body(&r, &m->u.body, e)) < 0) return rc;                               \
        break;
#define WIRE_SAME(name, num, body, dir, note) WIRE_MSG(name, num, body, , dir, note, )
#define WIRE_NONE(name, num, dir, note)                                                            \
    case WIRE_##name: break;
#include "cluster/wire.def"
    default: return xerr_set(e, XE_PROTO, "unknown message type %u", f->type);
    }
    rc = wire_rd_end(&r, 1, e);
    if (rc < 0 && e) {
        char tmp[sizeof e->msg];
        memcpy(tmp, e->msg, sizeof tmp);
        xerr_set(e, rc, "%s: %s", wire_type_name(f->type), tmp);
    }
    return rc;
}

int wire_msg_payload(sbuf *out, const wire_msg *m, xerr *e)
{
    wire_wr w;
    wire_wr_init(&w, out);
    wire_msg_put(&w, m);
    return wire_wr_end(&w, e);
}

int wire_msg_encode(sbuf *out, uint8_t version, const wire_msg *m, xerr *e)
{
    sbuf p;
    sbuf_init(&p);
    int rc = wire_msg_payload(&p, m, e);
    if (rc == 0 && (rc = wire_encode(out, version, m->type, m->flags, p.p, p.len)) < 0)
        xerr_set(e, rc, "cannot encode a %s frame", wire_type_name(m->type));
    sbuf_fini(&p);
    return rc;
}

/* ------------------------------------------------------------------ positions in ERROR messages */

void wire_error_text(const xerr *e, int code, char *out, size_t n)
{
    const char *msg = e->msg[0] ? e->msg : xerr_name(code);
    if (e->line > 0) snprintf(out, n, "line %d, column %d: %s", e->line, e->col > 0 ? e->col : 1, msg);
    else snprintf(out, n, "%s", msg);
}

int wire_error_parse(xerr *e, int code, const char *msg, size_t n)
{
    char buf[sizeof e->msg];
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), msg);
    int line = 0, col = 0, at = 0;
    if (sscanf(buf, "line %d, column %d: %n", &line, &col, &at) == 2 && at > 0 && line > 0 && col > 0)
        return xerr_at(e, code, line, col, "%s", buf + at);
    return xerr_set(e, code, "%s", buf[0] ? buf : xerr_name(code));
}
