/*
 * fmt_csv.c: the CSV record layer.  csv_line turns one line into a row (or
 * a rejection): csv_split (fmt_int.h, inline) cuts it into fields in the
 * decoder's field buffer, the first record decides about a header
 * (csv_header), and csv_record converts the fields into d->row.  A record
 * whose quoted field goes on past the line end stays open in `rec`, and
 * csv_more adds each next line to it and goes on splitting where it stopped,
 * so a record of k lines costs its bytes once, not k times.
 */
#include "exec/fmt_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int find_column(const fmt_decoder *d, const char *name, size_t n)
{
    for (int c = 0; c < d->ncols; c++)
        if (strlen(d->names[c]) == n && strncasecmp(d->names[c], name, n) == 0) return c;
    return -1;
}

/* ------------------------------------------------------------------ CSV */

int field_grow(fmt_decoder *d)
{
    int cap = d->fcap ? d->fcap * 2 : 16;
    size_t *o = realloc(d->fofs, (size_t)cap * sizeof *o);
    if (o) d->fofs = o;
    uint32_t *l = realloc(d->flen, (size_t)cap * sizeof *l);
    if (l) d->flen = l;
    unsigned char *q = realloc(d->fquoted, (size_t)cap);
    if (q) d->fquoted = q;
    if (!o || !l || !q) return XE_NOMEM;
    d->fcap = cap;
    return 0;
}

static const char *field(const fmt_decoder *d, int f) { return d->fbuf.p + d->fofs[f]; }

/* A header field's name, spaces around it dropped ("ts, k, v"). */
static int header_column(const fmt_decoder *d, int f, const char **name, size_t *n)
{
    *name = field(d, f);
    *n = d->flen[f];
    trim(name, n);
    return find_column(d, *name, *n);
}

/* The column nearest to name by edit distance, if near enough, and not one
 * the header names already (the first nmap of map); or -1. */
static int near_column(const fmt_decoder *d, const char *name, size_t n, int nmap)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%.*s", (int)(n < 255 ? n : 255), name);
    int best = -1, bestd = n < 3 ? (int)n : 3;
    for (int k = 0; k < d->ncols; k++) {
        int dist = str_distance(tmp, d->names[k]), named = 0;
        for (int f = 0; f < nmap; f++) named |= d->map[f] == k;
        if (dist < bestd && !named) bestd = dist, best = k;
    }
    return best;
}

/* The first record decides about a header.  Returns 1 when it was a header,
 * 0 when it is data, XE_INPUT (fatal, d->fatal set), XE_NOMEM. */
static int csv_header(fmt_decoder *d, int64_t line)
{
    if (d->o.header == FMT_HEADER_NO) goto data;
    int *seen = calloc((size_t)d->ncols + 1, sizeof *seen);
    if (!seen) return XE_NOMEM;
    int known = 0, unknown = 0, twice = -1;
    for (int f = 0; f < d->nfields; f++) {
        const char *name;
        size_t n;
        int c = header_column(d, f, &name, &n);
        if (c < 0) unknown++;
        else if (seen[c]++) twice = twice < 0 ? f : twice;
        else known++;
    }
    free(seen);
    int yes = d->o.header == FMT_HEADER_YES;
    if (!yes && (twice >= 0 || known <= unknown)) goto data;
    char q[200];
    const char *name;
    size_t n;
    if (twice >= 0) {
        header_column(d, twice, &name, &n);
        quote_for_msg(name, n, q, sizeof q);
        xerr_at(&d->fatal, XE_INPUT, (int)line, 0, "line %lld: header names column %s twice", (long long)line, q);
        goto fatal;
    }
    if (known == 0) {
        header_column(d, 0, &name, &n);
        quote_for_msg(name, n, q, sizeof q);
        int best = near_column(d, name, n, 0);
        if (best >= 0)
            xerr_at(&d->fatal, XE_INPUT, (int)line, 0, "line %lld: header: %s is not a column (did you mean '%s'?)",
                    (long long)line, q, d->names[best]);
        else
            xerr_at(&d->fatal, XE_INPUT, (int)line, 0, "line %lld: header names no column of the stream (%s is the "
                    "first)", (long long)line, q);
        goto fatal;
    }
    if (map_room(d, d->nfields)) return XE_NOMEM;
    for (int f = 0; f < d->nfields; f++) d->map[f] = header_column(d, f, &name, &n);
    d->nmap = d->nfields;
    if (d->o.time_col) {
        int found = 0;
        for (int f = 0; f < d->nfields; f++) found |= d->map[f] == d->o.time_col - 1;
        if (!found) {
            xerr_at(&d->fatal, XE_INPUT, (int)line, 0, "line %lld: header has no column '%s' (the stream's event time)",
                    (long long)line, d->names[d->o.time_col - 1]);
            goto fatal;
        }
    }
    if (unknown && d->o.on_notice) {
        /* one notice for the lot, each name with a suggestion when near one */
        char msg[FMT_REJECT_MSG];
        size_t o = (size_t)snprintf(msg, sizeof msg, "line %lld: header: ", (long long)line);
        int listed = 0;
        for (int f = 0; f < d->nfields && o < sizeof msg; f++) {
            if (d->map[f] >= 0) continue;
            header_column(d, f, &name, &n);
            quote_for_msg(name, n, q, sizeof q);
            int best = near_column(d, name, n, d->nmap);
            char hint[160] = "";
            if (best >= 0) snprintf(hint, sizeof hint, " (did you mean '%s'?)", d->names[best]);
            o += (size_t)snprintf(msg + o, sizeof msg - o, "%s%s%s", listed++ ? ", " : "", q, hint);
        }
        if (o < sizeof msg)
            snprintf(msg + o, sizeof msg - o, " %s no column of the stream; ignored", unknown == 1 ? "names" : "name");
        d->o.on_notice(d->o.ctx, line, msg);
    }
    return 1;
fatal:
    d->dead = 1;
    return XE_INPUT;
data:
    for (int c = 0; c < d->ncols; c++) d->map[c] = c;
    d->nmap = d->ncols;
    return 0;
}

/* A rejected first line that names some columns is probably a bad header. */
__attribute__((cold)) static void header_hint(fmt_decoder *d, char *hint, size_t cap)
{
    hint[0] = '\0';
    if (d->o.header != FMT_HEADER_AUTO) return;
    int named = 0, bad = -1;
    const char *name;
    size_t n;
    for (int f = 0; f < d->nfields; f++) {
        if (header_column(d, f, &name, &n) >= 0) named++;
        else if (bad < 0) bad = f;
    }
    if (named == 0 || bad < 0) return;
    char q[200];
    header_column(d, bad, &name, &n);
    quote_for_msg(name, n, q, sizeof q);
    snprintf(hint, cap, " (if this is a header, %s is not a column; --header reads it as one)", q);
}

/* An unquoted field that is the null string. */
static int is_null_text(const fmt_decoder *d, int f, sql_type t)
{
    const char *s = field(d, f);
    size_t n = d->flen[f];
    if (t != TY_TEXT) trim(&s, &n);
    return n == d->null_n && memcmp(s, d->null_s, n) == 0;
}

/* The fields of a whole record (csv_split's rc and why) into a row or a
 * rejection at line, the line it started on; raw is its first line.
 * Inlined into csv_line, the hot path; without a null string its loop
 * makes no per-field test for one. */
__attribute__((always_inline)) static inline int csv_record(fmt_decoder *d, int rc, const char *why0, const char *raw, size_t rawn, int64_t line,
                      batch *out)
{
    char why[256], kh[200];
    if (rc == XE_NOMEM) return rc;
    if (rc < 0) {
        kind_hint(d, raw, rawn, kh, sizeof kh);
        reject(d, line, "%s%s", why0, kh);
        return 0;
    }
    int first = !d->header_done;
    if (first) {
        d->header_done = 1;
        rc = csv_header(d, line);
        if (rc != 0) return rc == 1 ? 0 : rc;
    }
    char hint[300];
    if (d->nfields != d->nmap) {
        if (first) header_hint(d, hint, sizeof hint);
        else hint[0] = '\0';
        kind_hint(d, raw, rawn, kh, sizeof kh);
        reject(d, line, "expected %d column%s, got %d%s%s", d->nmap, d->nmap == 1 ? "" : "s", d->nfields, hint, kh);
        return 0;
    }
    for (int c = 0; c < d->ncols; c++) d->row[c] = val_null();
    int f = 0, c = 0;
    if (!d->has_null) {
        for (; f < d->nfields; f++) {
            if ((c = d->map[f]) < 0) continue;
            if (fmt_parse_value(d->types[c], field(d, f), d->flen[f], !d->fquoted[f], &d->row[c], why, sizeof why) < 0)
                goto bad;
        }
    } else {
        for (; f < d->nfields; f++) {
            if ((c = d->map[f]) < 0) continue;
            if (!d->fquoted[f] && is_null_text(d, f, d->types[c])) continue; /* row[c] is NULL */
            if (fmt_parse_value(d->types[c], field(d, f), d->flen[f], 0, &d->row[c], why, sizeof why) < 0) goto bad;
        }
    }
    return emit_row(d, line, out);
bad:
    if (first) header_hint(d, hint, sizeof hint);
    else hint[0] = '\0';
    kind_hint(d, raw, rawn, kh, sizeof kh);
    reject(d, line, "column '%s': %s%s%s", d->names[c], why, hint, kh);
    return 0;
}

/* One line; cr: it ended in CRLF (the CR is not in p[0..n)). */
int csv_line(fmt_decoder *d, const char *p, size_t n, int cr, int64_t line, batch *out)
{
    char why[256];
    int rc = csv_split(d, p, n, 0, why, sizeof why);
    if (rc != CSV_OPEN) return csv_record(d, rc, why, p, n, line, out);
    /* a quoted field goes on past the line end: keep the line, with its end */
    sbuf_reset(&d->rec);
    if (sbuf_add(&d->rec, p, n) < 0 || sbuf_add(&d->rec, cr ? "\r\n" : "\n", 1 + (size_t)cr) < 0) return XE_NOMEM;
    d->open = 1;
    d->rec_line = line;
    return 0;
}

/* The record is dropped unfinished: the quote that opened it never closed
 * within max_line bytes, or before the end of the input. */
void csv_give_up(fmt_decoder *d, const char *why)
{
    if (d->rec_line == d->line)
        reject(d, d->rec_line, "field %d: unterminated quoted field (not closed %s)", d->nfields, why);
    else
        reject(d, d->rec_line, "field %d: unterminated quoted field (not closed %s; lines %lld to %lld)", d->nfields,
               why, (long long)d->rec_line, (long long)d->line);
    d->open = 0;
    sbuf_reset(&d->rec);
}

/* The next line of an open record. */
int csv_more(fmt_decoder *d, const char *p, size_t n, int cr, batch *out)
{
    if (d->rec.len + n + 2 > d->o.max_line) {
        char why[64];
        snprintf(why, sizeof why, "within %zu bytes", d->o.max_line);
        csv_give_up(d, why);
        return 0;
    }
    if (sbuf_add(&d->rec, p, n) < 0) return XE_NOMEM;
    char why[256];
    int rc = csv_split(d, d->rec.p, d->rec.len, 1, why, sizeof why);
    if (rc == CSV_OPEN) return sbuf_add(&d->rec, cr ? "\r\n" : "\n", 1 + (size_t)cr) < 0 ? XE_NOMEM : 0;
    d->open = 0;
    rc = csv_record(d, rc, why, d->rec.p, d->rec.len, d->rec_line, out);
    sbuf_reset(&d->rec);
    return rc;
}
