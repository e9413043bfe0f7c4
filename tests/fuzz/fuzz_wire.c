/*
 * libFuzzer target for the cluster wire protocol: the incremental frame
 * decoder, the payload readers and the typed message codec.
 *
 * Input: one control byte, then the bytes of a connection.
 *   bits 0-3  base chunk size (1..16): the input is fed in varying chunks, so
 *             frames get split at every offset;
 *   bit 4     fix CRCs: walk the input as frames and rewrite each header's
 *             CRC before feeding, so the fuzzer reaches the payload decoders
 *             (a random CRC would stop it at the checksum almost always);
 *   bit 5     small decoder limit (WIRE_MAX_PREAUTH), as before authentication;
 *   bit 6     stop (WIRE_STOP) after every other frame and feed the rest again.
 * Every decoded frame is run through wire_msg_get; when that accepts a
 * payload, re-encoding must give the same bytes back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "cluster/wire.h"

typedef struct fstate {
    int stop;
    uint64_t n;
} fstate;

static void check_payload(const wire_frame *f)
{
    wire_msg m;
    xerr e;
    if (wire_msg_get(f, &m, &e) < 0) return;
    if (m.type == WIRE_MEMBERSHIP) { /* wire_msg_get checked them; walk them again */
        wire_rd r;
        wire_member mm;
        wire_rd_init(&r, m.u.membership.entries.p, m.u.membership.entries.n);
        for (uint32_t i = 0; i < m.u.membership.count; i++)
            if (wire_get_member(&r, &mm) < 0) abort();
        if (wire_rd_end(&r, 1, &e) < 0) abort();
    }
    sbuf p;
    sbuf_init(&p);
    if (wire_msg_payload(&p, &m, &e) < 0) abort();
    if (p.len != f->length || (p.len && memcmp(p.p, f->payload, p.len) != 0)) abort();
    sbuf_fini(&p);

    /* The raw readers over the same bytes, in an arbitrary order. */
    wire_rd r;
    wire_str s;
    uint64_t u64;
    uint32_t u32;
    wire_rd_init(&r, f->payload, f->length);
    wire_get_str(&r, &s);
    wire_get_u64(&r, &u64);
    wire_get_blob(&r, &s);
    wire_get_u32(&r, &u32);
    wire_get_rest(&r, &s);
    wire_rd_end(&r, 1, &e);
}

static int on_frame(void *ud, const wire_frame *f)
{
    fstate *st = ud;
    if (f->type < 1 || f->type > WIRE_TYPE_MAX) abort();
    check_payload(f);
    st->n++;
    return (st->stop && st->n % 2 == 0) ? WIRE_STOP : 0;
}

/* Rewrite the CRC of each whole frame-shaped piece of buf in place. */
static void fix_crcs(unsigned char *buf, size_t n)
{
    size_t off = 0;
    while (n - off >= WIRE_HDR_SIZE) {
        unsigned char *h = buf + off;
        uint32_t len = be32_get(h + 8);
        if (len > n - off - WIRE_HDR_SIZE) break; /* the last one stays truncated */
        wire_header_put(h, h[4], h[5], be16_get(h + 6), h + WIRE_HDR_SIZE, len);
        off += WIRE_HDR_SIZE + len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t ctl = data[0];
    data++;
    size--;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    if (ctl & 0x10) fix_crcs(buf, size);

    wire_dec d;
    fstate st = {.stop = (ctl & 0x40) != 0};
    xerr e;
    wire_dec_init(&d, (ctl & 0x20) ? WIRE_MAX_PREAUTH : 0);
    size_t step = (ctl & 0x0f) + 1, off = 0;
    int rc = 0;
    while (off < size && rc == 0) {
        size_t k = step < size - off ? step : size - off;
        size_t used = 0;
        rc = wire_dec_feed(&d, buf + off, k, &used, on_frame, &st, &e);
        if (used > k) abort();
        off += used;
        step = (step * 7 + 3) % 61 + 1;
    }
    if (rc == 0) {
        rc = wire_dec_finish(&d, &e);
        if ((rc < 0) != (wire_dec_midframe(&d) != 0)) abort();
    } else {
        /* a failed decoder stays failed */
        size_t used;
        if (wire_dec_feed(&d, buf, size, &used, on_frame, &st, &e) != rc || used) abort();
    }
    if (wire_dec_mem(&d) > sizeof d + WIRE_MAX_PAYLOAD) abort();
    wire_dec_fini(&d);
    free(buf);
    return 0;
}
