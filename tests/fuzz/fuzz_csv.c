/*
 * libFuzzer target for the CSV decoder (and, built from fuzz_json.c, the
 * JSON-lines decoder).  The first two bytes pick options (header mode,
 * delimiter ',' ';' or tab, a short max_line, null_string, a header that must
 * name the event time); the rest is the input.  It is decoded twice, in one
 * piece and in pseudo-random chunks (the second time saved and loaded into a
 * new decoder at a chunk boundary, as a shadow home takes an ingest over),
 * and both must give the same rows and counts.  The rows then go through
 * every encoder, and rows through the CSV or JSON encoder must decode back,
 * text with line ends too (quoted fields spanning lines).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "exec/batch.h"
#include "exec/format.h"

#ifndef FUZZ_KIND
#define FUZZ_KIND FMT_CSV
#endif

static const char *const names[] = {"id", "name", "price", "ok", "ts", "n"};
static const sql_type types[] = {TY_BIGINT, TY_TEXT, TY_DOUBLE, TY_BOOL, TY_TIMESTAMP, TY_INT};
static const fmt_schema schema = {6, names, types};

static void notice(void *ctx, int64_t line, const char *msg)
{
    (void)ctx;
    if (line < 1 || !msg[0]) abort();
}

/* save_at: after the chunk that passes this offset, the decoder's state
 * goes into a new one (0: never). */
static int decode(const uint8_t *p, size_t n, const fmt_dec_opts *o, uint32_t chunking, size_t save_at, batch *out,
                  fmt_dec_stats *st)
{
    fmt_decoder *d;
    if (fmt_decoder_new(FUZZ_KIND, &schema, o, &d) < 0) abort();
    xerr e;
    int rc = 0;
    size_t at = 0;
    while (at < n && rc == 0) {
        size_t k = chunking ? 1 + (chunking = chunking * 1103515245u + 12345u) % 17 : n;
        if (k > n - at) k = n - at;
        rc = fmt_decode(d, p + at, k, out, &e);
        if (fmt_decoder_pending(d) > at + k) abort();
        if (rc == 0 && save_at && at < save_at && at + k >= save_at) {
            sbuf s;
            sbuf_init(&s);
            fmt_decoder *d2;
            if (fmt_decoder_save(d, &s) < 0 || fmt_decoder_new(FUZZ_KIND, &schema, o, &d2) < 0) abort();
            if (fmt_decoder_load(d2, s.p, s.len, &e) < 0) abort();
            sbuf_fini(&s);
            fmt_decoder_free(d);
            d = d2;
        }
        at += k;
    }
    if (rc == 0) rc = fmt_decode_finish(d, out, &e);
    *st = fmt_decoder_stats(d);
    fmt_decoder_free(d);
    return rc;
}

static void same_rows(const batch *a, const batch *b)
{
    if (a->nrows != b->nrows) abort();
    for (int r = 0; r < a->nrows; r++)
        for (int c = 0; c < a->ncols; c++)
            if (!val_equal(&batch_row(a, r)[c], &batch_row(b, r)[c]) ||
                batch_row(a, r)[c].type != batch_row(b, r)[c].type)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    uint8_t opt = data[0], opt2 = data[1];
    fmt_dec_opts o = {0};
    o.header = (fmt_header)(opt % 3);
    o.delim = (opt & 0x04) ? ';' : (opt2 & 0x02) ? '\t' : 0;
    o.max_line = (opt & 0x08) ? 24 : 0;
    o.keep_rejects = (opt & 0x10) ? -1 : 3;
    o.null_string = (opt2 & 0x01) ? ((opt2 & 0x10) ? "" : "NULL") : NULL;
    o.time_col = (opt2 & 0x04) ? 5 : 0;
    o.on_notice = notice;
    o.kind_note = (opt2 & 0x20) ? "the stream's format is csv" : NULL;
    data += 2, size -= 2;

    batch a, b;
    if (batch_init(&a, 6, 4) < 0 || batch_init(&b, 6, 4) < 0) abort();
    fmt_dec_stats s1, s2;
    int rc1 = decode(data, size, &o, 0, 0, &a, &s1);
    int rc2 = decode(data, size, &o, (uint32_t)size | 1, (opt2 & 0x08) ? 1 + size / 2 : 0, &b, &s2);
    if (rc1 != rc2) abort();
    if (rc1 == 0 && (s1.rows != s2.rows || s1.rejected != s2.rejected || s1.lines != s2.lines)) abort();
    if (rc1 == 0) same_rows(&a, &b);

    /* Every encoder; then CSV/JSON text back through its decoder. */
    sbuf out;
    sbuf_init(&out);
    for (int k = FMT_CSV; k <= FMT_VERTICAL; k++) {
        fmt_encoder *e;
        fmt_enc_opts eo = {.stream = (opt >> 5) & 1, .delim = o.delim};
        if (fmt_encoder_new((fmt_kind)k, &schema, &eo, &e) < 0) abort();
        sbuf_reset(&out);
        if (fmt_encode(e, &a, &out) < 0 || fmt_encode_finish(e, &out) < 0) abort();
        fmt_encoder_free(e);
        if (k != FUZZ_KIND || rc1 != 0) continue;
        fmt_dec_opts back = {.header = FMT_HEADER_YES, .delim = o.delim, .max_line = 1 << 24};
        batch_reset(&b);
        if (decode((const uint8_t *)out.p, out.len, &back, 0, 0, &b, &s2) != 0) abort();
        if (s2.rejected || s2.rows != a.nrows) abort();
        /* JSON replaces invalid UTF-8 in strings, so only CSV comes back equal. */
        if (FUZZ_KIND == FMT_CSV) same_rows(&a, &b);
    }
    sbuf_fini(&out);
    batch_fini(&a);
    batch_fini(&b);
    return 0;
}
