/*
 * fmt_decode.c: the top of the decoders: input options, a decoder's state
 * saved and loaded between two calls, and the line layer.  The rules users
 * see are in format.h; fmt_int.h lists the files below this one.
 *
 * Decoding runs in two layers.  The line layer (fmt_decode) cuts the input at
 * '\n', carrying a partial line over to the next chunk in `carry` and giving
 * up on (and skipping) a line as soon as it passes max_line, so memory stays
 * bounded whatever comes in.  The record layer (csv_line, json_line) turns one
 * line into a row in the reusable `row` array, whose TEXT values point into the
 * decoder's field buffer or the Jansson object, and only a row that converted
 * completely is copied into the caller's batch.  A CSV line that ends inside a
 * quoted field is kept in `rec` (`open`), and each next line is added to it
 * and the split goes on where it stopped (csv_split's resume), so a record of
 * k lines costs its bytes once, not k times; the common line never gets there.
 *
 * Not thread-safe: one decoder belongs to one caller at a time.
 */
#include "exec/fmt_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ input options */

int fmt_parse_delim(const char *text, char *out, char *why, size_t cap)
{
    if (!strcmp(text, "\\t") || !strcasecmp(text, "tab")) {
        *out = '\t';
        return 0;
    }
    char q[64];
    quote_for_msg(text, strlen(text), q, sizeof q);
    if (strlen(text) != 1) {
        snprintf(why, cap, "delimiter %s must be a single byte (or '\\t' for a tab)", q);
        return XE_INVAL;
    }
    if (*text == '"' || *text == '\n' || *text == '\r' || *text == ' ') {
        snprintf(why, cap, "delimiter %s cannot be a quote, a space or a line end", q);
        return XE_INVAL;
    }
    *out = *text;
    return 0;
}

int fmt_check_input_opts(fmt_kind kind, int csv_only_set, char delim, const char *null_string, char *why,
                         size_t cap)
{
    if (kind != FMT_CSV && csv_only_set) {
        snprintf(why, cap, "delimiter and null_string are for CSV input, and the format is %s", fmt_kind_name(kind));
        return XE_INVAL;
    }
    if (!null_string) return 0;
    char q[64];
    quote_for_msg(null_string, strlen(null_string), q, sizeof q);
    if (strchr(null_string, delim ? delim : ',')) {
        snprintf(why, cap, "null_string %s holds the delimiter", q);
        return XE_INVAL;
    }
    if (strpbrk(null_string, "\"\r\n")) {
        snprintf(why, cap, "null_string %s cannot hold a quote or a line end", q);
        return XE_INVAL;
    }
    return 0;
}

/* The state between two calls of fmt_decode, for fmt_decoder_load: where
 * the input is (lines, the start of an unfinished line) and what its header
 * said.  u32 version, then be64 fields, then the map, then (version 2, an
 * open record) be64 rec_line, be64 0, be64 length and the record's
 * lines so far, then the carry.  Version 1 (no open record) still loads. */
#define DEC_SAVE_VERSION 2
int fmt_decoder_save(const fmt_decoder *d, sbuf *out)
{
    unsigned char h[4 + 8 * 8];
    be32_put(h, DEC_SAVE_VERSION);
    uint64_t v[8] = {(uint64_t)d->kind, (uint64_t)d->line, (uint64_t)d->st.lines, (uint64_t)d->st.rows,
                     (uint64_t)d->st.rejected,
                     (uint64_t)d->header_done | (uint64_t)d->discarding << 1 | (uint64_t)d->open << 2,
                     (uint64_t)d->nmap, d->carry.len};
    for (int i = 0; i < 8; i++) be64_put(h + 4 + 8 * i, v[i]);
    if (sbuf_add(out, h, sizeof h)) return XE_NOMEM;
    for (int i = 0; i < d->nmap; i++) {
        unsigned char m[4];
        be32_put(m, (uint32_t)(d->map[i] + 1)); /* -1: a field no column takes */
        if (sbuf_add(out, m, 4)) return XE_NOMEM;
    }
    if (d->open) {
        unsigned char r[24];
        be64_put(r, (uint64_t)d->rec_line);
        be64_put(r + 8, 0); /* room for a flag */
        be64_put(r + 16, d->rec.len);
        if (sbuf_add(out, r, sizeof r) || sbuf_add(out, d->rec.p, d->rec.len)) return XE_NOMEM;
    }
    return sbuf_add(out, d->carry.p, d->carry.len) ? XE_NOMEM : 0;
}

int fmt_decoder_load(fmt_decoder *d, const void *p, size_t n, xerr *err)
{
    const unsigned char *b = p;
    uint32_t version = n >= 4 ? be32_get(b) : 0;
    if (n < 4 + 8 * 8 || version < 1 || version > DEC_SAVE_VERSION)
        return xerr_set(err, XE_CORRUPT, "a saved input decoder is truncated or of another version");
    uint64_t v[8];
    for (int i = 0; i < 8; i++) v[i] = be64_get(b + 4 + 8 * i);
    size_t at = 4 + 8 * 8;
    int open = (int)(v[5] >> 2 & 1);
    if (v[0] != (uint64_t)d->kind || v[6] > (n - at) / 4 ||
        (open && (d->kind != FMT_CSV || n - at - 4 * v[6] < 24)))
        return xerr_set(err, XE_CORRUPT, "a saved input decoder does not fit this stream");
    size_t map_end = at + 4 * (size_t)v[6], rec_at = map_end + (open ? 24 : 0);
    uint64_t rec_len = open ? be64_get(b + map_end + 16) : 0;
    if (rec_len > n - rec_at || n - rec_at - rec_len != v[7])
        return xerr_set(err, XE_CORRUPT, "a saved input decoder does not fit this stream");
    d->line = (int64_t)v[1];
    d->st.lines = (int64_t)v[2];
    d->st.rows = (int64_t)v[3];
    d->st.rejected = (int64_t)v[4];
    d->header_done = (int)(v[5] & 1);
    d->discarding = (int)(v[5] >> 1 & 1);
    if (map_room(d, (int)v[6])) return xerr_set(err, XE_NOMEM, "out of memory");
    d->nmap = (int)v[6];
    for (int i = 0; i < d->nmap; i++, at += 4) {
        int64_t c = (int64_t)be32_get(b + at) - 1;
        if (c >= d->ncols) return xerr_set(err, XE_CORRUPT, "a saved input decoder names column %lld", (long long)c);
        d->map[i] = (int)c;
    }
    sbuf_reset(&d->rec);
    d->open = 0;
    if (open) {
        /* the fields so far come back by splitting the record's lines again */
        char why[256];
        d->rec_line = (int64_t)be64_get(b + map_end);
        if (sbuf_add(&d->rec, b + rec_at, rec_len)) return xerr_set(err, XE_NOMEM, "out of memory");
        int rc = csv_split(d, d->rec.p, d->rec.len, 0, why, sizeof why);
        if (rc == XE_NOMEM) return xerr_set(err, XE_NOMEM, "out of memory");
        if (rc != CSV_OPEN) return xerr_set(err, XE_CORRUPT, "a saved input decoder's open record is not open");
        d->open = 1;
    }
    sbuf_reset(&d->carry);
    return sbuf_add(&d->carry, b + rec_at + rec_len, n - rec_at - rec_len) ? xerr_set(err, XE_NOMEM, "out of memory")
                                                                          : 0;
}

/* ------------------------------------------------------------------ the line layer */

static int do_line(fmt_decoder *d, const char *p, size_t n, batch *out)
{
    int64_t line = ++d->line;
    d->st.lines++;
    int cr = n && p[n - 1] == '\r';
    n -= (size_t)cr;
    if (d->open) return csv_more(d, p, n, cr, out); /* an empty line too: a line end in a quoted field */
    if (d->line == 1 && n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) p += 3, n -= 3;
    if (n == 0) return 0;
    return d->kind == FMT_CSV ? csv_line(d, p, n, cr, line, out) : json_line(d, p, n, line, out);
}

static void too_long(fmt_decoder *d)
{
    if (d->open) {
        char why[64];
        snprintf(why, sizeof why, "within %zu bytes", d->o.max_line);
        csv_give_up(d, why);
    }
    reject(d, d->line + 1, "longer than %zu bytes; skipped", d->o.max_line);
    d->discarding = 1;
    sbuf_reset(&d->carry);
}

static int dead(fmt_decoder *d, xerr *err)
{
    if (err) *err = d->fatal;
    return d->fatal.code;
}

int fmt_decode(fmt_decoder *d, const void *data, size_t n, batch *out, xerr *err)
{
    if (d->dead) return dead(d, err);
    if (out->ncols != d->ncols)
        return xerr_set(err, XE_INVAL, "decoding %d columns into a batch of %d", d->ncols, out->ncols);
    const char *p = data;
    while (n) {
        const char *nl = memchr(p, '\n', n);
        size_t seg = nl ? (size_t)(nl - p) : n;
        if (d->discarding) {
            if (nl) {
                d->discarding = 0;
                d->line++;
                d->st.lines++;
            }
        } else if (d->carry.len + seg > d->o.max_line) {
            too_long(d);
            if (nl) {
                d->discarding = 0;
                d->line++;
                d->st.lines++;
            }
        } else if (!nl) {
            if (sbuf_add(&d->carry, p, seg) < 0) return xerr_set(err, XE_NOMEM, "out of memory");
        } else {
            int rc;
            if (d->carry.len) {
                if (sbuf_add(&d->carry, p, seg) < 0) return xerr_set(err, XE_NOMEM, "out of memory");
                rc = do_line(d, d->carry.p, d->carry.len, out);
                sbuf_reset(&d->carry);
            } else {
                rc = do_line(d, p, seg, out);
            }
            if (rc == XE_NOMEM) return xerr_set(err, XE_NOMEM, "out of memory");
            if (rc < 0) return dead(d, err);
        }
        if (!nl) break;
        p = nl + 1;
        n -= seg + 1;
    }
    return 0;
}

int fmt_decode_finish(fmt_decoder *d, batch *out, xerr *err)
{
    if (d->dead) return dead(d, err);
    if (out->ncols != d->ncols)
        return xerr_set(err, XE_INVAL, "decoding %d columns into a batch of %d", d->ncols, out->ncols);
    int rc = 0;
    if (d->discarding) {
        d->line++;
        d->st.lines++;
    } else if (d->carry.len) {
        rc = do_line(d, d->carry.p, d->carry.len, out);
    }
    if (d->open) csv_give_up(d, "before the end of the input");
    sbuf_reset(&d->carry);
    d->discarding = 0;
    d->line = 0;
    d->header_done = 0;
    if (rc == XE_NOMEM) return xerr_set(err, XE_NOMEM, "out of memory");
    if (rc < 0) return dead(d, err);
    return 0;
}
