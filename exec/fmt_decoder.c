/*
 * fmt_decoder.c: a decoder's life (fmt_decoder_new, _free, its counters)
 * and its rejections: reject, which counts a rejected line, keeps the first
 * few and calls opts.on_reject, and the hints the CSV and JSON record layers
 * add to a message.  The record layers (fmt_csv.c, fmt_json.c) and the line
 * layer (fmt_decode.c) sit above it.
 */
#include "exec/fmt_int.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ decoders: state */

/* Room in map for n fields (a header may name more fields than columns). */
int map_room(fmt_decoder *d, int n)
{
    if (n <= d->mapcap) return 0;
    int *m = realloc(d->map, (size_t)n * sizeof *m);
    if (!m) return XE_NOMEM;
    d->map = m;
    d->mapcap = n;
    return 0;
}

void reject(fmt_decoder *d, int64_t line, const char *fmt, ...)
{
    char msg[FMT_REJECT_MSG];
    int k = snprintf(msg, sizeof msg, "line %lld: ", (long long)line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    va_end(ap);
    d->st.rejected++;
    d->rej.count++;
    if (d->rej.n < d->rej.keep) {
        fmt_reject *r = &d->rej.v[d->rej.n++];
        r->line = line;
        memcpy(r->msg, msg, sizeof msg);
    }
    if (d->o.on_reject) d->o.on_reject(d->o.ctx, line, msg);
}

int fmt_decoder_new(fmt_kind kind, const fmt_schema *schema, const fmt_dec_opts *opts, fmt_decoder **out)
{
    *out = NULL;
    if ((kind != FMT_CSV && kind != FMT_JSON) || schema->ncols < 0 || schema->ncols > 65535) return XE_INVAL;
    fmt_decoder *d = calloc(1, sizeof *d);
    if (!d) return XE_NOMEM;
    d->kind = kind;
    if (opts) d->o = *opts;
    d->delim = d->o.delim ? d->o.delim : ',';
    if (d->delim == '"' || d->delim == '\n' || d->delim == '\r') goto inval;
    if (d->o.time_col < 0 || d->o.time_col > schema->ncols) goto inval;
    if (d->o.max_line == 0) d->o.max_line = FMT_MAX_LINE;
    d->rej.keep = d->o.keep_rejects == 0 ? FMT_KEEP_REJECTS : d->o.keep_rejects < 0 ? 0 : d->o.keep_rejects;
    sbuf_init(&d->carry);
    sbuf_init(&d->fbuf);
    sbuf_init(&d->rec);
    if (d->o.null_string) {
        d->has_null = 1;
        d->null_n = strlen(d->o.null_string);
        if (!(d->null_s = strdup(d->o.null_string))) goto nomem;
    }
    d->o.null_string = NULL; /* the copies are the decoder's; kind_note stays borrowed */
    d->ncols = schema->ncols;
    size_t nc = (size_t)schema->ncols + 1;
    d->row = calloc(nc, sizeof *d->row);
    d->map = calloc(nc, sizeof *d->map);
    d->mapcap = (int)nc;
    d->rej.v = d->rej.keep ? calloc((size_t)d->rej.keep, sizeof *d->rej.v) : NULL;
    if (!d->row || !d->map || (d->rej.keep && !d->rej.v)) goto nomem;
    if (schema_copy(schema, &d->names, &d->types) < 0) goto nomem;
    *out = d;
    return 0;
nomem:
    fmt_decoder_free(d);
    return XE_NOMEM;
inval:
    free(d);
    return XE_INVAL;
}

void fmt_decoder_free(fmt_decoder *d)
{
    if (!d) return;
    schema_free(d->names, d->types, d->ncols);
    free(d->row);
    free(d->map);
    free(d->rej.v);
    free(d->fofs);
    free(d->flen);
    free(d->fquoted);
    free(d->null_s);
    sbuf_fini(&d->carry);
    sbuf_fini(&d->fbuf);
    sbuf_fini(&d->rec);
    free(d);
}

size_t fmt_decoder_pending(const fmt_decoder *d) { return d->carry.len + (d->open ? d->rec.len : 0); }

fmt_dec_stats fmt_decoder_stats(const fmt_decoder *d) { return d->st; }
const fmt_rejects *fmt_decoder_rejects(const fmt_decoder *d) { return &d->rej; }

void fmt_decoder_clear_rejects(fmt_decoder *d)
{
    d->rej.count = 0;
    d->rej.n = 0;
}

int fmt_rejects_print(const fmt_rejects *r, sbuf *out)
{
    int rc = 0;
    for (int i = 0; i < r->n && rc == 0; i++) rc = sbuf_printf(out, "%s\n", r->v[i].msg);
    if (rc == 0 && r->count > r->n)
        rc = sbuf_printf(out, "... and %lld more rejected line%s\n", (long long)(r->count - r->n),
                         r->count - r->n == 1 ? "" : "s");
    return rc;
}

/* A rejected line that looks like JSON to the CSV decoder, or like CSV to
 * the JSON one, says so (p: the line as it came). */
void kind_hint(const fmt_decoder *d, const char *p, size_t n, char *hint, size_t cap)
{
    hint[0] = '\0';
    size_t k = 0;
    while (k < n && is_space(p[k])) k++;
    int json = k < n && (p[k] == '{' || p[k] == '[');
    if (d->kind == FMT_CSV && json)
        snprintf(hint, cap, "; this looks like JSON; %s", d->o.kind_note ? d->o.kind_note : "the input is read as CSV");
    else if (d->kind == FMT_JSON && !json && k < n && memchr(p + k, ',', n - k))
        snprintf(hint, cap, "; this looks like CSV; %s", d->o.kind_note ? d->o.kind_note : "the input is read as JSON");
}
